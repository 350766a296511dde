package lmdb

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// The writer lock belongs to the process (cdlmdb/lock.c), so a write txn
// may end on any OS thread. These tests end write txns on threads other
// than BeginTxn's, and through the finalizer, and then write from this and
// from another process: no writer may hang, nothing committed may be lost,
// nothing aborted may appear, and the checker must pass.

const anyThreadKey = "DLMDBGO_ANYTHREAD_ENV"

// childWrite is the other process: when the test binary is re-executed by
// otherProcessPut, the test it names only writes one key into the env the
// environment variable names, and returns true.
func childWrite(t *testing.T) bool {
	dir := os.Getenv(anyThreadKey)
	if dir == "" {
		return false
	}
	env := openAt(t, dir)
	defer env.Close()
	if err := putOne(env, os.Getenv(anyThreadKey+"_K"), "from-another-process"); err != nil {
		t.Fatal(err)
	}
	return true
}

func openAt(t *testing.T, dir string) *Env {
	t.Helper()
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.SetMapSize(64 << 20); err != nil {
		t.Fatal(err)
	}
	if err := env.Open(dir, NoSync, 0o600); err != nil {
		t.Fatal(err)
	}
	return env
}

func putOne(env *Env, k, v string) error {
	return env.Update(func(txn *Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		return txn.Put(dbi, []byte(k), []byte(v), 0)
	})
}

// otherProcessPut runs the helper test above in a child process, with a
// deadline: a writer lock left held would make it hang.
func otherProcessPut(t *testing.T, dir, k string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), anyThreadKey+"="+dir, anyThreadKey+"_K="+k)
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("other process: %v\n%s", err, out)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the other process's writer hung: the writer lock was not released")
	}
}

// withDeadline runs fn and fails the test if it does not return in time.
func withDeadline(t *testing.T, what string, fn func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s hung: the writer lock was not released", what)
	}
}

func expectKeys(t *testing.T, env *Env, want map[string]string, absent []string) {
	t.Helper()
	err := env.View(func(txn *Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		for k, v := range want {
			got, err := txn.Get(dbi, []byte(k))
			if err != nil || string(got) != v {
				return fmt.Errorf("key %q: %q %v, want %q", k, got, err, v)
			}
		}
		for _, k := range absent {
			if _, err := txn.Get(dbi, []byte(k)); !IsNotFound(err) {
				return fmt.Errorf("aborted key %q is there (%v)", k, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Check(); err != nil {
		t.Fatalf("checker: %v", err)
	}
}

func TestWriteTxnEndsOnAnotherThread(t *testing.T) {
	if childWrite(t) {
		return
	}
	dir := t.TempDir()
	env := openAt(t, dir)
	defer env.Close()
	want := map[string]string{}
	var absent []string
	for round := 0; round < 12; round++ {
		commit := round%2 == 0
		k := fmt.Sprintf("round-%02d", round)
		// begin on one locked goroutine (OS thread), end on another
		txns := make(chan *Txn)
		began := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			txn, err := env.BeginTxn(nil, 0)
			if err == nil {
				var dbi DBI
				if dbi, err = txn.OpenRoot(0); err == nil {
					err = txn.Put(dbi, []byte(k), []byte("v"), 0)
				}
			}
			began <- err
			txns <- txn
			// keep this thread busy and alive while the other ends the txn
			time.Sleep(time.Millisecond)
		}()
		if err := <-began; err != nil {
			t.Fatal(err)
		}
		txn := <-txns
		ended := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if commit {
				ended <- txn.Commit()
			} else {
				txn.Abort()
				ended <- nil
			}
		}()
		if err := <-ended; err != nil {
			t.Fatalf("round %d: ending on another thread: %v", round, err)
		}
		if commit {
			want[k] = "v"
		} else {
			absent = append(absent, k)
		}
		// writers on this goroutine's thread, on a fresh goroutine, and in
		// another process go on at once
		k2 := k + "-after"
		withDeadline(t, "the next writer", func() error { return putOne(env, k2, "next") })
		want[k2] = "next"
		if round%4 == 0 {
			k3 := k + "-process"
			otherProcessPut(t, dir, k3)
			want[k3] = "from-another-process"
		}
	}
	expectKeys(t, env, want, absent)
}

func TestFinalizerAbortReleasesWriter(t *testing.T) {
	if childWrite(t) {
		return
	}
	dir := t.TempDir()
	env := openAt(t, dir)
	defer env.Close()
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		txn, err := env.BeginTxn(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		txn.Pooled = true // the leak is deliberate: no log line
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.Put(dbi, []byte("leaked"), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		// txn becomes unreachable here; only its finalizer can end it,
		// on the finalizer goroutine's thread
	}()
	done := make(chan error, 1)
	go func() { done <- putOne(env, "after-finalizer", "v") }()
	deadline := time.After(60 * time.Second)
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			waiting = false
		case <-deadline:
			t.Fatal("the writer never got the lock the leaked txn held")
		case <-time.After(10 * time.Millisecond):
			runtime.GC()
		}
	}
	otherProcessPut(t, dir, "after-finalizer-process")
	expectKeys(t, env, map[string]string{"after-finalizer": "v",
		"after-finalizer-process": "from-another-process"}, []string{"leaked"})
}
