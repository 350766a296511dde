package lmdb

import (
	"testing"
)

// The hot paths must not allocate: one cgo call with (pointer, length)
// arguments, results returned by value, zero-copy views with RawRead.
// Copying reads allocate exactly the returned copies.

func TestAllocsTxn(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 100)
	key := kv("key", 42)
	missing := []byte("absent")
	val := []byte("some value of moderate length")

	mustUpdate(t, env, func(txn *Txn) error {
		var err error
		if n := testing.AllocsPerRun(200, func() {
			err = txn.Put(dbi, key, val, 0)
		}); n != 0 || err != nil {
			t.Errorf("Txn.Put: %v allocs/op, err %v", n, err)
		}
		txn.RawRead = true
		var got []byte
		if n := testing.AllocsPerRun(200, func() {
			got, err = txn.Get(dbi, key)
		}); n != 0 || err != nil || string(got) != string(val) {
			t.Errorf("Txn.Get raw (write txn): %v allocs/op, %q, %v", n, got, err)
		}
		return nil
	})

	mustView(t, env, func(txn *Txn) error {
		var got []byte
		var err error
		txn.RawRead = true
		if n := testing.AllocsPerRun(200, func() {
			got, err = txn.Get(dbi, key)
		}); n != 0 || err != nil || string(got) != string(val) {
			t.Errorf("Txn.Get raw: %v allocs/op, %q, %v", n, got, err)
		}
		if n := testing.AllocsPerRun(200, func() {
			_, err = txn.Get(dbi, missing)
		}); n != 0 || !IsNotFound(err) {
			t.Errorf("Txn.Get not found: %v allocs/op, %v", n, err)
		}
		txn.RawRead = false
		if n := testing.AllocsPerRun(200, func() {
			got, err = txn.Get(dbi, key)
		}); n != 1 || err != nil || string(got) != string(val) {
			t.Errorf("Txn.Get copy: %v allocs/op (want 1, the copy), %q, %v", n, got, err)
		}
		return nil
	})
}

func TestAllocsCursor(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 100)
	key := kv("key", 17)
	newKey := []byte("key017x")
	val := []byte("v")

	mustView(t, env, func(txn *Txn) error {
		txn.RawRead = true
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		var k, v []byte
		if n := testing.AllocsPerRun(200, func() {
			k, v, err = cur.Get(key, nil, SetKey)
		}); n != 0 || err != nil || string(k) != string(key) || string(v) != "val017" {
			t.Errorf("Cursor.Get SetKey raw: %v allocs/op, %q %q %v", n, k, v, err)
		}
		if n := testing.AllocsPerRun(200, func() {
			k, v, err = cur.Get(key, nil, Set)
		}); n != 0 || err != nil {
			t.Errorf("Cursor.Get Set raw: %v allocs/op, %v", n, err)
		}
		cur.Get(nil, nil, First)
		if n := testing.AllocsPerRun(50, func() {
			k, v, err = cur.Get(nil, nil, Next)
		}); n != 0 || err != nil {
			t.Errorf("Cursor.Get Next raw: %v allocs/op, %v", n, err)
		}
		if n := testing.AllocsPerRun(200, func() {
			k, v, err = cur.Get(nil, nil, GetCurrent)
		}); n != 0 || err != nil {
			t.Errorf("Cursor.Get GetCurrent raw: %v allocs/op, %v", n, err)
		}
		cur.Get(nil, nil, Last)
		if n := testing.AllocsPerRun(200, func() {
			_, _, err = cur.Get(nil, nil, Next)
		}); n != 0 || !IsNotFound(err) {
			t.Errorf("Cursor.Get at end: %v allocs/op, %v", n, err)
		}
		txn.RawRead = false
		if n := testing.AllocsPerRun(200, func() {
			k, v, err = cur.Get(key, nil, SetKey)
		}); n != 2 || err != nil || string(v) != "val017" {
			t.Errorf("Cursor.Get SetKey copy: %v allocs/op (want 2, the copies), %v", n, err)
		}
		return nil
	})

	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		if n := testing.AllocsPerRun(200, func() {
			err = cur.Put(newKey, val, 0)
		}); n != 0 || err != nil {
			t.Errorf("Cursor.Put: %v allocs/op, %v", n, err)
		}
		return nil
	})
}
