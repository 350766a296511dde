package lmdb

import (
	"bytes"
	"testing"
)

func TestMulti(t *testing.T) {
	page := []byte("aaabbbcccddd")
	m := WrapMulti(page, 3)
	if m.Len() != 4 || m.Stride() != 3 || m.Size() != 12 {
		t.Fatalf("Len/Stride/Size = %d/%d/%d", m.Len(), m.Stride(), m.Size())
	}
	want := []string{"aaa", "bbb", "ccc", "ddd"}
	for i, w := range want {
		if string(m.Val(i)) != w {
			t.Errorf("Val(%d) = %q", i, m.Val(i))
		}
	}
	vals := m.Vals()
	if len(vals) != 4 {
		t.Fatalf("Vals: %q", vals)
	}
	for i := range vals {
		if string(vals[i]) != want[i] {
			t.Errorf("Vals()[%d] = %q", i, vals[i])
		}
	}
	// Values share the page's memory but cannot grow into the neighbour.
	vals[1][0] = 'B'
	if page[3] != 'B' {
		t.Error("Vals do not alias the page")
	}
	if v := append(m.Val(0), 'x'); page[3] != 'B' || string(v) != "aaax" {
		t.Error("append to Val overwrote the next value")
	}
	if p := m.Page(); !bytes.Equal(p, page) || cap(p) != len(p) {
		t.Errorf("Page = %q cap %d", p, cap(p))
	}
	for _, bad := range []int{-1, 4} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Val(%d) did not panic", bad)
				}
			}()
			m.Val(bad)
		}()
	}
}

func TestWrapMultiPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("WrapMulti with 10 bytes / stride 3 did not panic")
		}
	}()
	WrapMulti(make([]byte, 10), 3)
}

func TestByteHelpers(t *testing.T) {
	if p, n := cbytes(nil); p != nil || n != 0 {
		t.Errorf("cbytes(nil) = %v, %d", p, n)
	}
	b := []byte("xyz")
	if p, n := cbytes(b); n != 3 || p == nil {
		t.Errorf("cbytes = %v, %d", p, n)
	}
	if got := cloneBytes(nil); got != nil {
		t.Errorf("cloneBytes(nil) = %q", got)
	}
	c := cloneBytes(b)
	c[0] = 'X'
	if string(b) != "xyz" || string(c) != "Xyz" {
		t.Errorf("cloneBytes shares memory: %q %q", b, c)
	}
	if e := cloneBytes([]byte{}); e == nil || len(e) != 0 {
		t.Errorf("cloneBytes(empty) = %#v", e)
	}
}
