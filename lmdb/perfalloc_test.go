package lmdb

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// Allocation counts of the paths trimmed for speed: the pooled read
// transaction (Reset/Renew), cursor renewal, error classification, and keys
// that live on the caller's stack (the C helpers must not make them escape).

func TestAllocsResetRenew(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 50)
	key := kv("key", 7)

	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	txn.RawRead = true
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()

	var got []byte
	if n := testing.AllocsPerRun(200, func() {
		txn.Reset()
		if err = txn.Renew(); err == nil {
			got, err = txn.Get(dbi, key)
		}
	}); n != 0 || err != nil || string(got) != "val007" {
		t.Errorf("Reset+Renew+Get raw: %v allocs/op, %q, %v", n, got, err)
	}
	if n := testing.AllocsPerRun(200, func() {
		txn.Reset()
		if err = txn.Renew(); err == nil {
			if err = cur.Renew(txn); err == nil {
				_, got, err = cur.Get(key, nil, Set)
			}
		}
	}); n != 0 || err != nil || string(got) != "val007" {
		t.Errorf("Reset+Renew+Cursor.Renew+Get: %v allocs/op, %q, %v", n, got, err)
	}
	if n := testing.AllocsPerRun(200, func() {
		_ = txn.ID()
	}); n != 0 {
		t.Errorf("Txn.ID: %v allocs/op", n)
	}
}

func TestAllocsStackKeys(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 50)

	mustUpdate(t, env, func(txn *Txn) error {
		var err error
		if n := testing.AllocsPerRun(200, func() {
			var buf [16]byte
			copy(buf[:], "stackkeystackval")
			err = txn.Put(dbi, buf[:8], buf[8:], 0)
		}); n != stackArrayAllocs || err != nil {
			t.Errorf("Txn.Put with stack key/value: %v allocs/op, %v", n, err)
		}
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		txn.RawRead = true
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		var got []byte
		if n := testing.AllocsPerRun(200, func() {
			var k [8]byte
			copy(k[:], "stackkey")
			got, err = txn.Get(dbi, k[:])
		}); n != stackArrayAllocs || err != nil || string(got) != "stackval" {
			t.Errorf("Txn.Get with stack key: %v allocs/op, %q, %v", n, got, err)
		}
		if n := testing.AllocsPerRun(200, func() {
			var k [6]byte
			copy(k[:], "key012")
			_, got, err = cur.Get(k[:], nil, SetRange)
		}); n != stackArrayAllocs || err != nil || string(got) != "val012" {
			t.Errorf("Cursor.Get SetRange with stack key: %v allocs/op, %q, %v", n, got, err)
		}
		return nil
	})
}

func TestIsNotFoundForms(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{NotFound, true},
		{KeyExist, false},
		{&OpError{Op: "mdb_get", Errno: NotFound}, true},
		{&OpError{Op: "custom", Errno: NotFound}, true},
		{&OpError{Op: "mdb_get", Errno: KeyExist}, false},
		{&OpError{Op: "mdb_get", Errno: syscall.ENOENT}, false},
		{fmt.Errorf("wrapped: %w", &OpError{Op: "mdb_cursor_get", Errno: NotFound}), true},
		{fmt.Errorf("wrapped: %w", NotFound), true},
		{&OpError{Op: "outer", Errno: &OpError{Op: "inner", Errno: NotFound}}, true},
		{errors.New("mdb_get: MDB_NOTFOUND"), false},
		{syscall.ENOENT, false},
	}
	for i, c := range cases {
		if got := IsNotFound(c.err); got != c.want {
			t.Errorf("case %d: IsNotFound(%v) = %v, want %v", i, c.err, got, c.want)
		}
		if got := IsNotFound(c.err); got != errors.Is(c.err, NotFound) {
			t.Errorf("case %d: IsNotFound(%v) = %v disagrees with errors.Is", i, c.err, got)
		}
	}

	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 3)
	mustView(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		_, err = txn.Get(dbi, []byte("absent"))
		if !IsNotFound(err) {
			t.Errorf("Txn.Get of a missing key: %v, IsNotFound false", err)
		}
		cur.Get(nil, nil, Last)
		var found bool
		if n := testing.AllocsPerRun(100, func() {
			_, _, err = cur.Get(nil, nil, Next)
			found = IsNotFound(err)
		}); n != 0 || !found {
			t.Errorf("Next past the end: %v allocs/op, IsNotFound(%v) = %v", n, err, found)
		}
		if n := testing.AllocsPerRun(100, func() {
			found = IsNotFound(nil)
		}); n != 0 || found {
			t.Errorf("IsNotFound(nil): %v allocs/op, %v", n, found)
		}
		return nil
	})
}
