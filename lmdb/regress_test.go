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

// TestDelEmptyValueIntegerDup pins what Txn.Del(dbi, key, nil) does in an
// IntegerDup database: like lmdb-go, a nil value is handed to the engine as
// an empty data item, i.e. "delete the duplicate equal to the empty value".
// No integer duplicate is empty, so nothing is deleted: NotFound for a key
// holding one value, BadValSize for a fixed-size duplicate set. (Stock LMDB's integer comparator reads past the empty item here,
// so its answer depends on memory contents; the differential test steps
// around exactly this case.)
func TestDelEmptyValueIntegerDup(t *testing.T) {
	env := openEnv(t, 0)
	requireDupSort(t, env, DupFixed|IntegerDup)
	err := env.Update(func(txn *Txn) error {
		dbi, err := txn.OpenDBI("intdup", Create|DupSort|DupFixed|IntegerDup)
		if err != nil {
			return err
		}
		zero, one := []byte{0, 0, 0, 0}, []byte{1, 0, 0, 0}
		for _, v := range [][]byte{zero, one} {
			if err := txn.Put(dbi, []byte("k"), v, 0); err != nil {
				return err
			}
		}
		// A lone value is a plain node: the empty item simply matches nothing.
		if err := txn.Put(dbi, []byte("lone"), one, 0); err != nil {
			return err
		}
		// With several duplicates the fixed-size set rejects an item of
		// the wrong size outright, as stock does.
		for _, v := range [][]byte{nil, {}} {
			if err := txn.Del(dbi, []byte("lone"), v); !IsNotFound(err) {
				t.Errorf("Del(lone, %#v) = %v, want NotFound", v, err)
			}
			if err := txn.Del(dbi, []byte("k"), v); !IsErrno(err, BadValSize) {
				t.Errorf("Del(k, %#v) = %v, want BadValSize", v, err)
			}
		}
		if _, err := txn.Get(dbi, []byte("lone")); err != nil {
			t.Errorf("lone value gone after refused deletes: %v", err)
		}
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		if _, _, err := cur.Get([]byte("k"), nil, SetKey); err != nil {
			return err
		}
		if n, err := cur.Count(); err != nil || n != 2 {
			t.Errorf("after refused deletes: Count = %d, %v; want 2", n, err)
		}
		if err := txn.Del(dbi, []byte("k"), zero); err != nil {
			t.Errorf("Del(k, 0) = %v, want success", err)
		}
		v, err := txn.Get(dbi, []byte("k"))
		if err != nil || string(v) != string(one) {
			t.Errorf("after deleting 0: Get = %v, %v; want the value 1", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
