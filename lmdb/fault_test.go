//go:build dlmdb_faults

package lmdb

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
)

// Run with -tags dlmdb_faults (make test does): the engine's commit calls
// then go through its fault hook.  A failed data sync fails just that
// commit; a failed meta write or meta sync fails it and leaves the Env
// answering Panic to every txn begin until it is reopened; the reopened
// Env holds the last acknowledged commit.  The errors are the usual
// lmdb-go ones: the errno of the failed call, then lmdb.Panic.

func faultOpen(t *testing.T, dir string) *Env {
	t.Helper()
	env, err := NewEnv()
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	if err := env.Open(dir, 0, 0o600); err != nil {
		env.Close()
		t.Fatalf("Open: %v", err)
	}
	return env
}

func faultPut(env *Env, val string) error {
	return env.Update(func(txn *Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		return txn.Put(dbi, []byte("k"), []byte(val), 0)
	})
}

func faultGet(t *testing.T, env *Env) string {
	t.Helper()
	var got string
	err := env.View(func(txn *Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		v, err := txn.Get(dbi, []byte("k"))
		got = string(v)
		return err
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	return got
}

func TestFaultCommitErrors(t *testing.T) {
	defer faultReset()
	for _, tc := range []struct {
		name  string
		kind  int
		last  bool // the commit's last call of kind (the meta's) instead of its first
		errno syscall.Errno
		panic bool
	}{
		{"data sync EIO", faultSync, false, syscall.EIO, false},
		{"meta sync EIO", faultSync, true, syscall.EIO, true},
		{"meta sync ENOSPC", faultSync, true, syscall.ENOSPC, true},
		{"data write ENOSPC", faultWrite, false, syscall.ENOSPC, false},
		{"meta write EIO", faultWrite, true, syscall.EIO, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := faultOpen(t, dir)
			defer func() { env.Close() }()
			if err := faultPut(env, "v1"); err != nil {
				t.Fatalf("first commit: %v", err)
			}
			// one commit's calls of each kind, to aim at the first or last
			faultReset()
			if err := faultPut(env, "v2"); err != nil {
				t.Fatalf("second commit: %v", err)
			}
			n := faultCalls(tc.kind)
			if n == 0 {
				t.Fatalf("a commit made no call of kind %d", tc.kind)
			}
			faultReset()
			nth := uint64(1)
			if tc.last {
				nth = n
			}
			faultArm(tc.kind, nth, tc.errno)
			err := faultPut(env, "v3")
			faultReset()
			if !errors.Is(err, tc.errno) || !IsErrnoSys(err, tc.errno) {
				t.Fatalf("failed commit returned %v, want %v", err, tc.errno)
			}
			if errors.Is(err, Panic) {
				t.Fatalf("the failed commit itself returned %v, want the call's errno", err)
			}
			runtime.LockOSThread()
			txn, err := env.BeginTxn(nil, 0)
			if err == nil {
				txn.Abort()
			}
			runtime.UnlockOSThread()
			if tc.panic {
				if !errors.Is(err, Panic) || !IsErrno(err, Panic) {
					t.Fatalf("write txn after a failed meta: %v, want Panic", err)
				}
				rtxn, err := env.BeginTxn(nil, Readonly)
				if err == nil {
					rtxn.Abort()
				}
				if !errors.Is(err, Panic) {
					t.Fatalf("read txn after a failed meta: %v, want Panic", err)
				}
				if err := env.View(func(*Txn) error { return nil }); !errors.Is(err, Panic) {
					t.Fatalf("View after a failed meta: %v, want Panic", err)
				}
				env.Close()
				env = faultOpen(t, dir)
			} else if err != nil {
				t.Fatalf("write txn after a failed data step: %v", err)
			}
			if got := faultGet(t, env); got != "v2" {
				t.Fatalf("after the failed commit the value is %q, want the acknowledged %q", got, "v2")
			}
			if err := faultPut(env, "v4"); err != nil {
				t.Fatalf("commit after the failure (reopened: %v): %v", tc.panic, err)
			}
			if got := faultGet(t, env); got != "v4" {
				t.Fatalf("value %q, want v4", got)
			}
		})
	}
}

// The meta write fails after writing its bytes and writing the old meta
// back fails too, so the data file holds the failed commit's meta.  A
// second Env on the same path, and the path reopened after both closed,
// hold the last acknowledged commit and pass the checker; a commit there
// succeeds and survives another reopen.
func TestFaultFailedMetaRestore(t *testing.T) {
	defer faultReset()
	dir := t.TempDir()
	env := faultOpen(t, dir)
	defer func() {
		if env != nil {
			env.Close()
		}
	}()
	if err := faultPut(env, "v1"); err != nil {
		t.Fatalf("first commit: %v", err)
	}
	if err := faultPut(env, "v2"); err != nil {
		t.Fatalf("second commit: %v", err)
	}
	env2 := faultOpen(t, dir)
	defer func() {
		if env2 != nil {
			env2.Close()
		}
	}()
	faultReset()
	faultArmAt(faultWrite, faultSiteMeta, syscall.EIO, faultLeave|faultSticky)
	err := faultPut(env, "v3")
	faultReset()
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("failed commit returned %v, want EIO", err)
	}
	if err := env.View(func(*Txn) error { return nil }); !errors.Is(err, Panic) {
		t.Fatalf("View after the failed meta: %v, want Panic", err)
	}
	check := func(e *Env, who, want string) {
		t.Helper()
		if got := faultGet(t, e); got != want {
			t.Fatalf("%s: value %q, want %q", who, got, want)
		}
		// a write txn (aborted) builds on the same commit
		var inWrite string
		errDone := errors.New("done")
		err := e.Update(func(txn *Txn) error {
			dbi, err := txn.OpenRoot(0)
			if err != nil {
				return err
			}
			v, err := txn.Get(dbi, []byte("k"))
			if err != nil {
				return err
			}
			inWrite = string(v)
			return errDone
		})
		if err != errDone || inWrite != want {
			t.Fatalf("%s: write txn: value %q (%v), want %q", who, inWrite, err, want)
		}
		if err := e.Check(); err != nil {
			t.Fatalf("%s: check: %v", who, err)
		}
	}
	check(env2, "a second Env", "v2")
	env.Close()
	env = nil
	check(env2, "a second Env, the first closed", "v2")
	env2.Close()
	env2 = nil
	env = faultOpen(t, dir)
	check(env, "reopened", "v2")
	if err := faultPut(env, "v4"); err != nil {
		t.Fatalf("commit after the reopen: %v", err)
	}
	check(env, "after the next commit", "v4")
	env.Close()
	env = faultOpen(t, dir)
	check(env, "reopened after the next commit", "v4")
}
