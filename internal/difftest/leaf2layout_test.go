package difftest

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
)

// TestLeaf2LayoutMatchesStock pins, against stock LMDB, where the pages of a
// DUPFIXED sub-tree end: GET_MULTIPLE/NEXT_MULTIPLE hand out one LEAF2 page
// per call, so the page boundaries are part of the API's answers. Each case
// builds a two-leaf sub-tree of 8-byte big-endian values (byte order =
// numeric order), does the step under test and then reads the whole key
// with NEXT_MULTIPLE on both engines. Found by TestDifferentialDupDemote:
//
//   - borrow: an underfull LEAF2 leaf takes one value from a neighbour that
//     is at least 25% full (stock's node move) instead of merging with it;
//   - reput / current: putting a value the sub-tree already has, found at
//     slot 0 of a leaf that is not the leftmost, rewrites the separator
//     above it to that value (stock's in-place write of a LEAF2 slot 0),
//     which decides where later values between the two leaves go;
//   - descending: a full LEAF2 leaf split while inserting in its left half
//     keeps (nkeys+1)/2 old values plus the new one on the left.
func TestLeaf2LayoutMatchesStock(t *testing.T) {
	key := []byte("k")
	val := func(i int) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint64(b, uint64(i))
		return b
	}
	put := func(i int) op { return op{kind: opPutNoDupData, db: 6, key: key, val: val(i)} }
	del := func(i int) op { return op{kind: opDelDup, db: 6, key: key, val: val(i)} }
	readAll := func() []op {
		ops := []op{{kind: opCurClose, db: 6, slot: 2}}
		for i := 0; i < 6; i++ {
			ops = append(ops, op{kind: opCurNextMultiple, db: 6, slot: 2})
		}
		return ops
	}
	// twoLeaves: values 0, 2, ..., 2*(n-1) put in ascending order: the
	// 511th splits the full leaf into 255 + 256 (the first right value is
	// 510), the rest go right
	twoLeaves := func(n int) []op {
		var ops []op
		for i := 0; i < n; i++ {
			ops = append(ops, put(2*i))
		}
		return append(ops, op{kind: opCommit})
	}
	cases := map[string]func() []op{
		"borrow": func() []op {
			ops := twoLeaves(600) // 255 | 345 values
			// the left leaf drops below 25% (127 values): the right one lends
			for i := 0; i < 128; i++ {
				ops = append(ops, del(2*i))
			}
			return append(ops, readAll()...)
		},
		"reput": func() []op {
			ops := twoLeaves(600)
			// the right leaf's first value goes; the next one is put again
			ops = append(ops, del(510), put(512), op{kind: opPut, db: 6, key: key, val: val(512)})
			// values between the leaves now go left on stock
			ops = append(ops, put(510), put(511), put(509))
			return append(ops, readAll()...)
		},
		"current": func() []op {
			ops := twoLeaves(600)
			ops = append(ops, del(510), op{kind: opCurGetBoth, db: 6, slot: 1, key: key, val: val(512)},
				op{kind: opCurPutCurrent, db: 6, slot: 1})
			ops = append(ops, put(510), put(511), put(509))
			return append(ops, readAll()...)
		},
		"descending": func() []op {
			var ops []op
			for i := 600; i > 0; i-- {
				ops = append(ops, put(2*i))
			}
			return append(append(ops, op{kind: opCommit}), readAll()...)
		},
	}
	for _, name := range []string{"borrow", "reput", "current", "descending"} {
		t.Run(name, func(t *testing.T) {
			// write txns must begin and end on one OS thread (subtests run
			// on goroutines of their own)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			ops := cases[name]()
			mm, err := runOps(t.TempDir(), subject, stockEngine{}, ops, fNoSync)
			if err != nil {
				t.Fatal(err)
			}
			if mm != nil {
				t.Errorf("%s vs stock: %v", subject.name(), mm)
			}
			// the reads must have seen two pages (else nothing was tested)
			used := make([]bool, len(diffDBs))
			used[6] = true
			s := &side{eng: subject, dir: t.TempDir(), flags: fNoSync, used: used}
			if err := s.open(); err != nil {
				t.Fatal(err)
			}
			defer func() { s.endAll(false); s.env.close() }()
			var pages []string
			for _, o := range ops {
				if r := s.apply(o); o.kind == opCurNextMultiple && r.code == 0 {
					pages = append(pages, fmt.Sprint(len(r.v)/8))
				}
			}
			if len(pages) < 2 {
				t.Errorf("NEXT_MULTIPLE saw %d page(s), want 2 or more", len(pages))
			}
			t.Logf("pages (values each): %v", pages)
		})
	}
}
