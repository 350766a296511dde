package lmdb

import "testing"

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

// NextDup on a cursor whose SetKey just failed must not succeed with a
// bogus value: the engine once returned success with a wild value pointer
// there (stock LMDB 0.9.33 crashes in the same spot), which crashed the
// copy in Cursor.Get.
func TestRegressNextDupAfterFailedSetKey(t *testing.T) {
	inChild(t, func(t *testing.T) {
		env := openEnv(t, 0)
		dbi := openDB(t, env, "d", DupSort)
		mustUpdate(t, env, func(txn *Txn) error {
			if err := txn.Put(dbi, []byte("ab"), []byte("b"), 0); err != nil {
				return err
			}
			return txn.Put(dbi, []byte("ab"), []byte("a"), 0)
		})
		mustView(t, env, func(txn *Txn) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			if _, _, err := cur.Get([]byte("aa"), nil, SetKey); !IsNotFound(err) {
				t.Errorf("SetKey on a missing key = %v", err)
			}
			for _, op := range []uint{NextDup, PrevDup, FirstDup, LastDup, GetCurrent} {
				k, v, err := cur.Get(nil, nil, op)
				if err == nil {
					t.Errorf("op %d on an unpositioned cursor succeeded: %q %q", op, k, v)
				}
			}
			return nil
		})
	})
}

// A cursor Put with Append|AppendDup that fails (key out of order) must
// leave the cursor somewhere sane: the cursor Del that follows has to
// delete exactly one item and keep the entry count exact.
func TestRegressFailedCursorAppendThenDel(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "d", DupSort)
	put := func(txn *Txn, k, v string) {
		t.Helper()
		if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
			t.Fatalf("put %s/%s: %v", k, v, err)
		}
	}
	mustUpdate(t, env, func(txn *Txn) error {
		put(txn, "a", "")
		put(txn, "ab", "")
		put(txn, "a", "a")
		put(txn, "c", "a")
		return nil
	})
	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		if _, _, err := cur.Get(nil, nil, Next); err != nil {
			return err
		}
		put(txn, "c", "c")
		if err := cur.Put([]byte("bab"), nil, Append|AppendDup); !IsErrno(err, KeyExist) {
			t.Errorf("out-of-order cursor Put(Append|AppendDup) = %v, want KeyExist", err)
		}
		err = cur.Del(0)
		t.Logf("cursor Del after the failed Put: %v", err)
		return nil
	})
	checkCounts(t, env, dbi)
}
