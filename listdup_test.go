package dlmdb

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// TestGroups: the (key, values) groups of random ranges equal the model's,
// on a plain and on a prefix-compressed counted DupSort database, with and
// without RawRead; an early break stops cleanly.
func TestGroups(t *testing.T) {
	for _, extra := range []uint{0, lmdb.PrefixCompression | lmdb.Counted} {
		t.Run(fmt.Sprintf("flags%#x", extra), func(t *testing.T) {
			rng := rand.New(rand.NewSource(countedSeed(t)))
			env := countedEnv(t)
			dbi, all := fillDups(t, env, rng, 3000, extra)
			for round := 0; round < 200*countedScale(t); round++ {
				r := countedRange(rng, all)
				var want []cpair
				for _, p := range all {
					if countedIn(r, p.k) {
						want = append(want, p)
					}
				}
				raw := round%2 == 1
				err := env.View(func(txn *lmdb.Txn) error {
					txn.RawRead = raw
					seq, errf := Groups(txn, dbi, r)
					var got []cpair
					for k, vals := range seq {
						if len(vals) == 0 {
							t.Errorf("%v: key %q with no values", r, k)
						}
						for _, v := range vals {
							got = append(got, cpair{string(k), string(v)})
						}
					}
					if err := errf(); err != nil {
						return err
					}
					if !countedSame(got, want) {
						t.Fatalf("Groups %v (raw %v): %d pairs, want %d", r, raw, len(got), len(want))
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// break after the first group
			err := env.View(func(txn *lmdb.Txn) error {
				seq, errf := Groups(txn, dbi, All())
				n := 0
				for range seq {
					n++
					break
				}
				if n != 1 || errf() != nil {
					t.Errorf("break: %d groups, %v", n, errf())
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestListDupHelpers: ListDup and ListDupFixed against the model, absent
// keys NotFound.
func TestListDupHelpers(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := countedEnv(t)
	dbi, all := fillDups(t, env, rng, 2000, lmdb.PrefixCompression)
	byKey := map[string][]string{}
	for _, p := range all {
		byKey[p.k] = append(byKey[p.k], p.v)
	}
	var fixed lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		if fixed, err = txn.OpenDBI("fixed", lmdb.Create|lmdb.DupSort|lmdb.DupFixed); err != nil {
			return err
		}
		for i := 0; i < 3000; i++ {
			if err := txn.Put(fixed, []byte("k"), []byte(fmt.Sprintf("%08d", i)), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []bool{false, true} {
		err := env.View(func(txn *lmdb.Txn) error {
			txn.RawRead = raw
			for k, want := range byKey {
				got, err := ListDup(txn, dbi, []byte(k))
				if err != nil || len(got) != len(want) {
					t.Fatalf("ListDup %q: %d values, %v; want %d", k, len(got), err, len(want))
				}
				for i := range got {
					if string(got[i]) != want[i] {
						t.Fatalf("ListDup %q: value %d %q, want %q", k, i, got[i], want[i])
					}
				}
			}
			if _, err := ListDup(txn, dbi, []byte("absent")); !lmdb.IsNotFound(err) {
				t.Errorf("ListDup of an absent key: %v", err)
			}
			flat, stride, err := ListDupFixed(txn, fixed, []byte("k"))
			if err != nil || stride != 8 || len(flat) != 3000*8 {
				t.Fatalf("ListDupFixed: %d bytes stride %d, %v", len(flat), stride, err)
			}
			for i := 0; i < 3000; i++ {
				if !bytes.Equal(flat[i*8:(i+1)*8], []byte(fmt.Sprintf("%08d", i))) {
					t.Fatalf("ListDupFixed value %d: %q", i, flat[i*8:(i+1)*8])
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// fillDups is fillCounted with other flags: random pairs in a new DupSort
// database, returned in database order (values share a long prefix so
// compression has work to do).
func fillDups(t *testing.T, env *lmdb.Env, rng *rand.Rand, n int, flags uint) (lmdb.DBI, []cpair) {
	t.Helper()
	return fillCountedFlags(t, env, rng, n, lmdb.DupSort|flags, "dups", "", "shared/value/prefix/v")
}
