package lmdb

import (
	"syscall"
	"testing"
)

// Sequences found by TestRandomCursorPrograms / FuzzCursorOps, minimised,
// kept as plain regression tests. Each ends with the structural checker
// and a count of the items against Stat.

// checkCounts verifies the tree and that a full scan finds Stat's count.
func checkCounts(t *testing.T, env *Env, dbi DBI) {
	t.Helper()
	mustView(t, env, func(txn *Txn) error {
		if err := txn.Check(); err != nil {
			t.Fatalf("Check: %v", err)
		}
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		var n uint64
		for _, _, err := cur.Get(nil, nil, First); err == nil; _, _, err = cur.Get(nil, nil, Next) {
			n++
		}
		if n != st.Entries {
			t.Fatalf("scan found %d items, Stat says %d", n, st.Entries)
		}
		return nil
	})
}

// A failed Append (key out of order) in a DupSort database, followed by a
// cursor Del, must leave the entry count exact.
func TestRegressFailedAppendThenDel(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "d", DupSort)
	mustUpdate(t, env, func(txn *Txn) error {
		for _, kv := range [][2]string{{"ab", ""}, {"a", "a"}} {
			if err := txn.Sub(func(sub *Txn) error { return sub.Put(dbi, []byte(kv[0]), []byte(kv[1]), 0) }); err != nil {
				return err
			}
		}
		return nil
	})
	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		if err := cur.Put([]byte("ca"), []byte("ccc"), NoOverwrite|Append); err != nil {
			return err
		}
		// "a" sorts before the last key "ca": LMDB refuses the Append.
		if err := txn.Put(dbi, []byte("a"), []byte("cb"), Append); !IsErrno(err, KeyExist) {
			t.Errorf("out-of-order Append = %v, want KeyExist", err)
		}
		return txn.Sub(func(sub *Txn) error { return sub.Put(dbi, []byte("ca"), []byte("b"), 0) })
	})
	checkCounts(t, env, dbi)
	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		if _, _, err := cur.Get(nil, nil, Next); err != nil {
			return err
		}
		wantErrno(t, "Del missing", txn.Del(dbi, []byte("cbc"), nil), NotFound)
		err = cur.Put([]byte("bab"), nil, Append|AppendDup)
		t.Logf("out-of-order cursor Put(Append|AppendDup) = %v", err)
		err = cur.Del(0)
		t.Logf("cursor Del after it = %v", err)
		return nil
	})
	checkCounts(t, env, dbi)
}

// A txn Put with the cursor-only Current flag, then a failed SetKey, then
// NextDup on that cursor: the engine once answered NextDup with a bogus
// value pointer (a crash when copying it).
func TestRegressNextDupAfterFailedSetKey(t *testing.T) {
	inChild(t, func(t *testing.T) {
		env := openEnv(t, 0)
		dbi := openDB(t, env, "d", DupSort)
		mustUpdate(t, env, func(txn *Txn) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			if err := cur.Put([]byte("ab"), []byte("b"), NoOverwrite|NoDupData); err != nil {
				return err
			}
			return txn.Put(dbi, []byte("ab"), []byte("a"), 0)
		})
		mustUpdate(t, env, func(txn *Txn) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			// Current belongs to Cursor.Put; LMDB's mdb_put refuses it.
			if err := txn.Put(dbi, []byte("bac"), []byte("bca"), NoOverwrite|Current|AppendDup); !IsErrnoSys(err, syscall.EINVAL) {
				t.Errorf("txn.Put with Current = %v, want EINVAL", err)
			}
			if _, _, err := cur.Get([]byte("aa"), []byte("cb"), SetKey); !IsNotFound(err) {
				t.Errorf("SetKey on a missing key = %v", err)
			}
			k, v, err := cur.Get(nil, nil, NextDup)
			t.Logf("NextDup after the failed SetKey: %q %q %v", k, v, err)
			return nil
		})
		checkCounts(t, env, dbi)
	})
}
