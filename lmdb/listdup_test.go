package lmdb

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"syscall"
	"testing"
)

// listDupKinds are the layouts ListDup is checked on: every kind of
// duplicate storage, compressed and counted ones included.
var listDupKinds = []struct {
	name  string
	flags uint
	fixed int // value size of DupFixed kinds
}{
	{"dupsort", DupSort, 0},
	{"dupfixed", DupSort | DupFixed, 8},
	{"prefix", DupSort | PrefixCompression, 0},
	{"prefix-counted", DupSort | PrefixCompression | Counted, 0},
	{"dupfixed-prefix", DupSort | DupFixed | PrefixCompression, 8},
	{"reversedup", DupSort | ReverseDup, 0},
}

// TestCursorListDup: ListDup, ListDupInto, ListDupFixed and ListDupRuns against a model
// of every key (1 to 2,000 values: single values, sub-pages and sub-trees of
// several pages), with and without RawRead, from the first, a middle and the
// last value, with the cursor where it was afterwards; inside the write txn
// that made them and after commit.
func TestCursorListDup(t *testing.T) {
	for _, kind := range listDupKinds {
		t.Run(kind.name, func(t *testing.T) {
			seed := cntSubSeed(cntSeed(t), kind.name)
			r := rand.New(rand.NewSource(seed))
			env := openEnv(t, NoSync)
			dbi := openDB(t, env, "d", kind.flags)
			model := map[string][][]byte{}
			keys := []string{}
			val := func(i int) []byte {
				if kind.fixed > 0 {
					return []byte(fmt.Sprintf("%08d", i))
				}
				return []byte(fmt.Sprintf("shared/value/prefix/%06d%s", i, bytes.Repeat([]byte{'x'}, i%7)))
			}
			check := func(txn *Txn) {
				t.Helper()
				cur, err := txn.OpenCursor(dbi)
				if err != nil {
					t.Fatal(err)
				}
				defer cur.Close()
				var reuse, reuseRuns [][]byte
				var reuseFlat []byte
				for _, k := range keys {
					want := model[k]
					if kind.flags&ReverseDup != 0 {
						cmp := func(a, b []byte) int { c, _ := txn.DCmp(dbi, a, b); return c }
						slices.SortFunc(want, cmp)
					}
					for _, at := range []int{0, len(want) / 2, len(want) - 1} {
						if _, _, err := cur.Get([]byte(k), want[at], GetBoth); err != nil {
							t.Fatalf("GetBoth %s/%s: %v", k, want[at], err)
						}
						got, err := cur.ListDupInto(reuse)
						if err != nil {
							t.Fatalf("ListDup %s: %v", k, err)
						}
						if len(got) != len(want) {
							t.Fatalf("ListDup %s: %d values, want %d", k, len(got), len(want))
						}
						for i := range got {
							if !bytes.Equal(got[i], want[i]) {
								t.Fatalf("ListDup %s: value %d = %q, want %q", k, i, got[i], want[i])
							}
						}
						reuse = got
						// the cursor did not move
						ck, cv, err := cur.Get(nil, nil, GetCurrent)
						if err != nil || string(ck) != k || !bytes.Equal(cv, want[at]) {
							t.Fatalf("after ListDup on %s/%s: GetCurrent %q/%q, %v", k, want[at], ck, cv, err)
						}
						_, nv, err := cur.Get(nil, nil, NextDup)
						if at+1 < len(want) && (err != nil || !bytes.Equal(nv, want[at+1])) {
							t.Fatalf("NextDup after ListDup on %s/%s: %q, %v", k, want[at], nv, err)
						}
						if at+1 == len(want) && !IsNotFound(err) {
							t.Fatalf("NextDup after ListDup on the last value of %s: %v", k, err)
						}
					}
					if _, _, err := cur.Get([]byte(k), nil, Set); err != nil {
						t.Fatal(err)
					}
					width := len(want[0])
					for _, v := range want {
						if len(v) != width {
							width = -1
						}
					}
					flat, stride, err := cur.ListDupFixed(reuseFlat)
					switch {
					case width < 0:
						if !IsErrno(err, Incompatible) {
							t.Fatalf("ListDupFixed %s (values of several sizes): %d bytes, %v; want Incompatible",
								k, len(flat), err)
						}
					case err != nil || stride != width || len(flat) != stride*len(want) ||
						!bytes.Equal(flat, bytes.Join(want, nil)):
						t.Fatalf("ListDupFixed %s: %d bytes stride %d, %v; want %d x %d", k, len(flat),
							stride, err, len(want), width)
					case kind.fixed > 0 && stride != kind.fixed:
						t.Fatalf("ListDupFixed %s: stride %d, want %d", k, stride, kind.fixed)
					default:
						reuseFlat = flat
					}
					runs, rstride, err := cur.ListDupRuns(reuseRuns)
					switch {
					case width < 0:
						if !IsErrno(err, Incompatible) {
							t.Fatalf("ListDupRuns %s (values of several sizes): %d runs, %v; want Incompatible",
								k, len(runs), err)
						}
					case err != nil || rstride != width:
						t.Fatalf("ListDupRuns %s: %d runs, stride %d, %v; want stride %d", k, len(runs), rstride,
							err, width)
					default:
						for i, run := range runs {
							if len(run) == 0 || len(run)%width != 0 {
								t.Fatalf("ListDupRuns %s: run %d of %d bytes, stride %d", k, i, len(run), width)
							}
						}
						if j := bytes.Join(runs, nil); !bytes.Equal(j, bytes.Join(want, nil)) {
							t.Fatalf("ListDupRuns %s: %d runs of %d bytes, want the %d values (%d bytes)", k,
								len(runs), len(j), len(want), len(want)*width)
						}
						if kind.fixed > 0 && len(want) >= 2*4096/kind.fixed && len(runs) < 2 {
							t.Fatalf("ListDupRuns %s: %d values of a multi-page sub-tree in %d run", k, len(want),
								len(runs))
						}
						reuseRuns = runs
					}
				}
			}
			txn := beginWrite(t, env)
			for k := 0; k < 30; k++ {
				key := fmt.Sprintf("key%02d", k)
				keys = append(keys, key)
				n := 1 + r.Intn(1+k*k*3)
				seen := map[int]bool{}
				for len(model[key]) < n {
					i := r.Intn(100000)
					if seen[i] {
						continue
					}
					seen[i] = true
					v := val(i)
					if err := txn.Put(dbi, []byte(key), v, 0); err != nil {
						t.Fatal(err)
					}
					model[key] = append(model[key], v)
				}
				slices.SortFunc(model[key], bytes.Compare)
			}
			for _, raw := range []bool{false, true} {
				txn.RawRead = raw
				check(txn)
			}
			txn.RawRead = false
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			for _, raw := range []bool{false, true} {
				mustView(t, env, func(txn *Txn) error {
					txn.RawRead = raw
					check(txn)
					return nil
				})
			}
		})
	}
}

func TestCursorListDupErrors(t *testing.T) {
	env := openEnv(t, 0)
	plain := openDB(t, env, "plain", 0)
	dup := openDB(t, env, "dup", DupSort)
	mustUpdate(t, env, func(txn *Txn) error {
		if err := txn.Put(plain, []byte("k"), []byte("v"), 0); err != nil {
			return err
		}
		if err := txn.Put(dup, []byte("k"), []byte("v"), 0); err != nil {
			return err
		}
		c, err := txn.OpenCursor(plain)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, _, err := c.Get(nil, nil, First); err != nil {
			return err
		}
		_, err = c.ListDup()
		wantErrno(t, "ListDup on a plain DB", err, Incompatible)
		d, err := txn.OpenCursor(dup)
		if err != nil {
			return err
		}
		defer d.Close()
		_, err = d.ListDup()
		wantErrno(t, "ListDup unpositioned", err, syscall.EINVAL)
		if _, _, err := d.Get(nil, nil, First); err != nil {
			return err
		}
		vals, err := d.ListDup()
		if err != nil || len(vals) != 1 || string(vals[0]) != "v" {
			t.Errorf("ListDup of a single value: %q, %v", vals, err)
		}
		return nil
	})
}

// TestListDupFixedReuseView: with RawRead the result can be a view of a
// page; passing it back as dst for a key whose values span several pages
// must not copy into that page (a regression: the copy went into the view's
// memory, the read-only map, or under a write txn a dirty page).
func TestListDupFixedReuseView(t *testing.T) {
	env := openEnv(t, NoSync)
	dbi := openDB(t, env, "d", DupSort|DupFixed)
	val := func(k byte, i int) []byte { return []byte(fmt.Sprintf("%c%07d", k, i)) }
	// "a": 500 values, a sub-tree of one leaf (a 4 KiB LEAF2 page holds
	// 510), so a view of 4,000 bytes; "b": 600 values (two leaves), then
	// every third deleted: 400 values (3,200 bytes, fewer than a's) still
	// on two leaves, so a copy that fits in a's view
	var want = map[byte][][]byte{}
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < 500; i++ {
			want['a'] = append(want['a'], val('a', i))
		}
		for i := 0; i < 600; i++ {
			if i%3 != 2 {
				want['b'] = append(want['b'], val('b', i))
			}
		}
		for _, k := range []byte{'a', 'b'} {
			for i := 0; i < 600; i++ {
				v := val(k, i)
				if k == 'a' && i >= 500 {
					break
				}
				if err := txn.Put(dbi, []byte{k}, v, 0); err != nil {
					return err
				}
			}
		}
		for i := 2; i < 600; i += 3 {
			if err := txn.Del(dbi, []byte("b"), val('b', i)); err != nil {
				return err
			}
		}
		return nil
	})
	check := func(txn *Txn) error {
		txn.RawRead = true
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		var flat []byte
		for _, k := range []byte{'a', 'b', 'a', 'b'} {
			if _, _, err := cur.Get([]byte{k}, nil, Set); err != nil {
				return err
			}
			if flat, _, err = cur.ListDupFixed(flat); err != nil {
				return err
			}
			if !bytes.Equal(flat, bytes.Join(want[k], nil)) {
				t.Fatalf("key %c: %d bytes, want %d values", k, len(flat), len(want[k]))
			}
		}
		return nil
	}
	mustView(t, env, check)
	mustUpdate(t, env, func(txn *Txn) error {
		// dirty every page of both keys, then read as above
		if err := txn.Put(dbi, []byte("a"), val('a', 999), 0); err != nil {
			return err
		}
		if err := txn.Del(dbi, []byte("a"), val('a', 999)); err != nil {
			return err
		}
		if err := txn.Put(dbi, []byte("b"), val('b', 999), 0); err != nil {
			return err
		}
		if err := txn.Del(dbi, []byte("b"), val('b', 999)); err != nil {
			return err
		}
		return check(txn)
	})
	mustView(t, env, check)
	if err := env.Check(); err != nil {
		t.Fatalf("check: %v", err)
	}
}

// TestCursorListDupAllocs: with RawRead and the previous result passed back,
// a ListDup of a key with 500 values allocates nothing.
func TestCursorListDupAllocs(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "d", DupSort)
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < 500; i++ {
			if err := txn.Put(dbi, []byte("key"), []byte(fmt.Sprintf("value%04d", i)), 0); err != nil {
				return err
			}
		}
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		txn.RawRead = true
		c, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, _, err := c.Get([]byte("key"), nil, Set); err != nil {
			return err
		}
		vals, err := c.ListDupInto(nil)
		if err != nil || len(vals) != 500 {
			t.Fatalf("ListDup: %d values, %v", len(vals), err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			vals, err = c.ListDupInto(vals)
		})
		if err != nil || len(vals) != 500 || allocs != 0 {
			t.Errorf("ListDupInto with RawRead: %v allocations per call, %d values, %v", allocs, len(vals), err)
		}
		return nil
	})
	// ListDupRuns over a DupFixed sub-tree of several pages: views only
	fix := openDB(t, env, "f", DupSort|DupFixed)
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < 3000; i++ {
			if err := txn.Put(fix, []byte("key"), []byte(fmt.Sprintf("%08d", i)), 0); err != nil {
				return err
			}
		}
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		txn.RawRead = true
		c, err := txn.OpenCursor(fix)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, _, err := c.Get([]byte("key"), nil, Set); err != nil {
			return err
		}
		runs, _, err := c.ListDupRuns(nil)
		if err != nil || len(runs) < 2 {
			t.Fatalf("ListDupRuns: %d runs, %v; want several pages", len(runs), err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			runs, _, err = c.ListDupRuns(runs)
		})
		if n := len(bytes.Join(runs, nil)); err != nil || n != 3000*8 || allocs != 0 {
			t.Errorf("ListDupRuns with RawRead: %v allocations per call, %d bytes, %v", allocs, n, err)
		}
		return nil
	})
}
