package lmdb

import (
	"syscall"
	"testing"
)

// ReplaceDBI: the error codes come through as the engine gives them, and a
// successful replace leaves dst with src's pairs and flags.
func TestReplaceDBI(t *testing.T) {
	env := openEnv(t, 0)
	a := openDB(t, env, "a", 0)
	b := openDB(t, env, "b", Counted)
	d := openDB(t, env, "d", DupSort)
	fill(t, env, b, 50)
	mustView(t, env, func(txn *Txn) error {
		wantErrno(t, "read txn", txn.ReplaceDBI(a, b), syscall.EACCES)
		return nil
	})
	mustUpdate(t, env, func(txn *Txn) error {
		wantErrno(t, "same DB", txn.ReplaceDBI(a, a), syscall.EINVAL)
		wantErrno(t, "other order flags", txn.ReplaceDBI(a, d), Incompatible)
		c, err := txn.OpenCursor(b)
		if err != nil {
			return err
		}
		wantErrno(t, "open cursor", txn.ReplaceDBI(a, b), syscall.EBUSY)
		c.Close()
		if err := txn.ReplaceDBI(a, b); err != nil {
			return err
		}
		if _, err := txn.Get(b, kv("key", 0)); err == nil {
			t.Error("the replaced-in DB's handle still works")
		}
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		f, err := txn.Flags(a)
		if err != nil || f != Counted {
			t.Errorf("flags %#x, %v; want Counted", f, err)
		}
		for i := 0; i < 50; i++ {
			v, err := txn.Get(a, kv("key", i))
			if err != nil || string(v) != string(kv("val", i)) {
				t.Fatalf("key %d: %q, %v", i, v, err)
			}
		}
		if _, err := txn.OpenDBI("b", 0); !IsNotFound(err) {
			t.Errorf("OpenDBI(b) after the replace: %v, want NotFound", err)
		}
		return txn.Check()
	})
}

// Cmp and DCmp answer in the database's orders.
func TestCmpDCmp(t *testing.T) {
	env := openEnv(t, 0)
	rev := openDB(t, env, "rev", ReverseKey|DupSort|ReverseDup)
	plain := openDB(t, env, "plain", DupSort)
	mustView(t, env, func(txn *Txn) error {
		for _, c := range []struct {
			dbi      DBI
			dup      bool
			a, b     string
			want     int
			describe string
		}{
			{plain, false, "ab", "ba", -1, "bytewise keys"},
			{rev, false, "ab", "ba", 1, "reverse keys"},
			{plain, true, "ab", "ba", -1, "bytewise values"},
			{rev, true, "ab", "ba", 1, "reverse values"},
			{plain, false, "x", "x", 0, "equal"},
			{plain, false, "", "x", -1, "empty first"},
		} {
			cmp := txn.Cmp
			if c.dup {
				cmp = txn.DCmp
			}
			got, err := cmp(c.dbi, []byte(c.a), []byte(c.b))
			if err != nil {
				return err
			}
			if (got < 0) != (c.want < 0) || (got > 0) != (c.want > 0) {
				t.Errorf("%s: cmp(%q, %q) = %d, want sign of %d", c.describe, c.a, c.b, got, c.want)
			}
		}
		if _, err := txn.Cmp(DBI(200), nil, nil); err == nil {
			t.Error("Cmp on a bad handle: no error")
		}
		return nil
	})
}

// A footprint walk in steps of one leaf: totals equal Stat's, progress
// climbs to the leaf count.
func TestFootprintWalk(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "fp", 0)
	fill(t, env, dbi, 2000)
	mustView(t, env, func(txn *Txn) error {
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		var w FootprintWalk
		steps := 0
		for {
			done, err := w.Step(txn, dbi, 1)
			if err != nil {
				return err
			}
			steps++
			if d, total := w.Progress(); d != uint64(steps) && !done || total != st.LeafPages {
				t.Fatalf("step %d: progress %d of %d, want %d of %d", steps, d, total, steps, st.LeafPages)
			}
			if done {
				break
			}
		}
		var kbytes, vbytes uint64
		for i := 0; i < 2000; i++ {
			kbytes += uint64(len(kv("key", i)))
			vbytes += uint64(len(kv("val", i)))
		}
		r := w.Result()
		if uint64(steps) != st.LeafPages || r.LeafPages != st.LeafPages || r.BranchPages != st.BranchPages ||
			r.Entries != 2000 || r.KeyBytesStored != kbytes || r.KeyBytesDecoded != kbytes ||
			r.ValueBytesStored != vbytes || r.ValueBytesDecoded != vbytes {
			t.Errorf("%d steps, %+v; Stat %+v", steps, r, st)
		}
		if _, err := w.Step(txn, dbi, 0); err == nil {
			t.Error("Step with 0 leaves: no error")
		}
		return nil
	})
}
