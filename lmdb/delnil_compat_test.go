package lmdb_test

import (
	"runtime"
	"testing"

	stock "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// delNilOutcome is what Txn.Del(dbi, key, nil) answered (0, NotFound or
// BadValSize) and how many values the key held afterwards.
type delNilOutcome struct {
	code  int
	count uint64
}

// delNilOps are one engine's operations on its open DupSort database.
type delNilOps struct {
	put   func(k string, v []byte) error
	del   func(k string) (code int, err error) // code for NotFound/BadValSize
	count func(k string) uint64                // values of k, 0 if absent
}

var delNilKeys = []string{"one", "few", "many", "withempty", "onlyempty"}

// delNilScenario fills the database, then deletes every key with a nil value.
func delNilScenario(ops delNilOps) (map[string]delNilOutcome, error) {
	big := make([]byte, 400)
	puts := []struct {
		k string
		v []byte
	}{{"one", []byte("x")}, {"few", []byte("a")}, {"few", []byte("b")},
		{"withempty", []byte{}}, {"withempty", []byte("z")}, {"onlyempty", []byte{}}}
	for _, p := range puts {
		if err := ops.put(p.k, p.v); err != nil {
			return nil, err
		}
	}
	for i := 0; i < 20; i++ { // 20 × 400 B: a sub-tree
		big[0] = byte(i)
		if err := ops.put("many", big); err != nil {
			return nil, err
		}
	}
	got := map[string]delNilOutcome{}
	for _, k := range delNilKeys {
		code, err := ops.del(k)
		if err != nil {
			return nil, err
		}
		got[k] = delNilOutcome{code, ops.count(k)}
	}
	return got, nil
}

// Txn.Del(dbi, key, nil) on a DupSort database, ours and lmdb-go side by
// side: a lone empty value is deleted, a key with one non-empty value
// answers NotFound, a key with several values (inline or in a sub-tree)
// BadValSize, even when one of them is empty, and nothing else changes.
// The Txn.Del documentation states this.
func TestDelNilValueMatchesLmdbGo(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var oursGot, stockGot map[string]delNilOutcome

	oenv, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer oenv.Close()
	oenv.SetMaxDBs(2)
	if err := oenv.Open(t.TempDir(), 0, 0o644); err != nil {
		t.Fatal(err)
	}
	err = oenv.Update(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI("d", lmdb.Create|lmdb.DupSort)
		if err != nil {
			return err
		}
		oursGot, err = delNilScenario(delNilOps{
			put: func(k string, v []byte) error { return txn.Put(dbi, []byte(k), v, 0) },
			del: func(k string) (int, error) {
				err := txn.Del(dbi, []byte(k), nil)
				switch {
				case err == nil:
					return 0, nil
				case lmdb.IsNotFound(err):
					return int(lmdb.NotFound), nil
				case lmdb.IsErrno(err, lmdb.BadValSize):
					return int(lmdb.BadValSize), nil
				}
				return 0, err
			},
			count: func(k string) uint64 {
				cur, err := txn.OpenCursor(dbi)
				if err != nil {
					return 0
				}
				defer cur.Close()
				if _, _, err := cur.Get([]byte(k), nil, lmdb.SetKey); err != nil {
					return 0
				}
				n, _ := cur.Count()
				return n
			},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	senv, err := stock.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer senv.Close()
	senv.SetMaxDBs(2)
	if err := senv.Open(t.TempDir(), 0, 0o644); err != nil {
		t.Fatal(err)
	}
	err = senv.Update(func(txn *stock.Txn) error {
		dbi, err := txn.OpenDBI("d", stock.Create|stock.DupSort)
		if err != nil {
			return err
		}
		stockGot, err = delNilScenario(delNilOps{
			put: func(k string, v []byte) error { return txn.Put(dbi, []byte(k), v, 0) },
			del: func(k string) (int, error) {
				err := txn.Del(dbi, []byte(k), nil)
				switch {
				case err == nil:
					return 0, nil
				case stock.IsNotFound(err):
					return int(lmdb.NotFound), nil
				case stock.IsErrno(err, stock.BadValSize):
					return int(lmdb.BadValSize), nil
				}
				return 0, err
			},
			count: func(k string) uint64 {
				cur, err := txn.OpenCursor(dbi)
				if err != nil {
					return 0
				}
				defer cur.Close()
				if _, _, err := cur.Get([]byte(k), nil, stock.SetKey); err != nil {
					return 0
				}
				n, _ := cur.Count()
				return n
			},
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	want := map[string]delNilOutcome{
		"one":       {int(lmdb.NotFound), 1},
		"few":       {int(lmdb.BadValSize), 2},
		"many":      {int(lmdb.BadValSize), 20},
		"withempty": {int(lmdb.BadValSize), 2},
		"onlyempty": {0, 0},
	}
	for _, k := range delNilKeys {
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
