package lmdb_test

import (
	"runtime"
	"testing"

	stock "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// Txn.Del(dbi, key, nil) on a DupSort database, ours and lmdb-go side by
// side: a lone empty value is deleted, a key with one non-empty value
// answers NotFound, a key with several values (inline or in a sub-tree)
// BadValSize, even when one of them is empty, and nothing else changes.
// The Txn.Del documentation states this.
func TestDelNilValueMatchesLmdbGo(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	big := make([]byte, 400)
	type outcome struct {
		code  int // 0, NotFound or BadValSize
		count uint64
	}
	keys := []string{"one", "few", "many", "withempty", "onlyempty"}
	// ours
	oursGot := map[string]outcome{}
	{
		env, err := lmdb.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		env.SetMaxDBs(2)
		if err := env.Open(t.TempDir(), 0, 0o644); err != nil {
			t.Fatal(err)
		}
		err = env.Update(func(txn *lmdb.Txn) error {
			dbi, err := txn.OpenDBI("d", lmdb.Create|lmdb.DupSort)
			if err != nil {
				return err
			}
			put := func(k string, v []byte) {
				if err == nil {
					err = txn.Put(dbi, []byte(k), v, 0)
				}
			}
			put("one", []byte("x"))
			put("few", []byte("a"))
			put("few", []byte("b"))
			for i := 0; i < 20; i++ { // 20 × 400 B: a sub-tree
				big[0] = byte(i)
				put("many", big)
			}
			put("withempty", []byte{})
			put("withempty", []byte("z"))
			put("onlyempty", []byte{})
			if err != nil {
				return err
			}
			for _, k := range keys {
				var o outcome
				if derr := txn.Del(dbi, []byte(k), nil); derr != nil {
					if lmdb.IsNotFound(derr) {
						o.code = int(lmdb.NotFound)
					} else if lmdb.IsErrno(derr, lmdb.BadValSize) {
						o.code = int(lmdb.BadValSize)
					} else {
						return derr
					}
				}
				cur, err := txn.OpenCursor(dbi)
				if err != nil {
					return err
				}
				if _, _, err := cur.Get([]byte(k), nil, lmdb.SetKey); err == nil {
					o.count, _ = cur.Count()
				}
				cur.Close()
				oursGot[k] = o
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	stockGot := map[string]outcome{}
	{
		env, err := stock.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		defer env.Close()
		env.SetMaxDBs(2)
		if err := env.Open(t.TempDir(), 0, 0o644); err != nil {
			t.Fatal(err)
		}
		err = env.Update(func(txn *stock.Txn) error {
			dbi, err := txn.OpenDBI("d", stock.Create|stock.DupSort)
			if err != nil {
				return err
			}
			put := func(k string, v []byte) {
				if err == nil {
					err = txn.Put(dbi, []byte(k), v, 0)
				}
			}
			put("one", []byte("x"))
			put("few", []byte("a"))
			put("few", []byte("b"))
			for i := 0; i < 20; i++ {
				big[0] = byte(i)
				put("many", big)
			}
			put("withempty", []byte{})
			put("withempty", []byte("z"))
			put("onlyempty", []byte{})
			if err != nil {
				return err
			}
			for _, k := range keys {
				var o outcome
				if derr := txn.Del(dbi, []byte(k), nil); derr != nil {
					if stock.IsNotFound(derr) {
						o.code = int(lmdb.NotFound)
					} else if stock.IsErrno(derr, stock.BadValSize) {
						o.code = int(lmdb.BadValSize)
					} else {
						return derr
					}
				}
				cur, err := txn.OpenCursor(dbi)
				if err != nil {
					return err
				}
				if _, _, err := cur.Get([]byte(k), nil, stock.SetKey); err == nil {
					o.count, _ = cur.Count()
				}
				cur.Close()
				stockGot[k] = o
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]outcome{
		"one":       {int(lmdb.NotFound), 1},
		"few":       {int(lmdb.BadValSize), 2},
		"many":      {int(lmdb.BadValSize), 20},
		"withempty": {int(lmdb.BadValSize), 2},
		"onlyempty": {0, 0},
	}
	for _, k := range keys {
		// stock LMDB 0.9.33 loses an empty value stored for a new key when
		// a second value is added (a known stock bug our engine does not
		// share): its "withempty" holds 1 value before the Del, so there
		// only ours is compared, with the documented outcome
		if k != "withempty" && oursGot[k] != stockGot[k] {
			t.Errorf("%s: ours %+v, lmdb-go %+v", k, oursGot[k], stockGot[k])
		}
		if oursGot[k] != want[k] {
			t.Errorf("%s: ours %+v, documented %+v", k, oursGot[k], want[k])
		}
	}
}
