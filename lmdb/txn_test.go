package lmdb

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestTxnCommitAndAbort(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)

	// An error from the function rolls everything back.
	boom := errors.New("boom")
	err := env.Update(func(txn *Txn) error {
		if err := txn.Put(dbi, []byte("a"), []byte("1"), 0); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("Update returned %v, want the function's error", err)
	}
	mustView(t, env, func(txn *Txn) error {
		if _, err := txn.Get(dbi, []byte("a")); !IsNotFound(err) {
			t.Errorf("aborted put is visible: %v", err)
		}
		return nil
	})

	// Unmanaged commit.
	txn := beginWrite(t, env)
	if err := txn.Put(dbi, []byte("b"), []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	txn.Abort() // after Commit: harmless
	if err := txn.Commit(); !IsErrnoSys(err, syscall.EINVAL) {
		t.Fatalf("second Commit = %v, want EINVAL", err)
	}
	mustView(t, env, func(txn *Txn) error {
		v, err := txn.Get(dbi, []byte("b"))
		if err != nil || string(v) != "2" {
			t.Errorf("committed value = %q, %v", v, err)
		}
		return nil
	})
}

func TestTxnPanicInUpdateAborts(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic did not propagate")
			}
		}()
		env.Update(func(txn *Txn) error {
			txn.Put(dbi, []byte("p"), []byte("v"), 0)
			panic("inside update")
		})
	}()
	// The writer lock must have been released: another update works and
	// does not see the put.
	mustUpdate(t, env, func(txn *Txn) error {
		if _, err := txn.Get(dbi, []byte("p")); !IsNotFound(err) {
			t.Errorf("put from panicking update survived: %v", err)
		}
		return nil
	})
}

func TestTxnManagedPanics(t *testing.T) {
	env := openEnv(t, 0)
	ops := map[string]func(*Txn){
		"Commit": func(txn *Txn) { txn.Commit() },
		"Abort":  func(txn *Txn) { txn.Abort() },
		"Reset":  func(txn *Txn) { txn.Reset() },
		"Renew":  func(txn *Txn) { txn.Renew() },
	}
	runners := map[string]func(TxnOp) error{
		"View":   env.View,
		"Update": env.Update,
		"RunTxn": func(fn TxnOp) error { return env.RunTxn(Readonly, fn) },
		"Sub": func(fn TxnOp) error {
			return env.Update(func(txn *Txn) error { return txn.Sub(fn) })
		},
	}
	for rname, run := range runners {
		for oname, op := range ops {
			panicked := false
			err := run(func(txn *Txn) error {
				defer func() { panicked = recover() != nil }()
				op(txn)
				return nil
			})
			if !panicked {
				t.Errorf("%s: %s on managed txn did not panic", rname, oname)
			}
			if err != nil {
				t.Errorf("%s/%s: %v", rname, oname, err)
			}
		}
	}
}

func TestTxnRunOp(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	txn := beginWrite(t, env)
	// Not terminating: txn stays usable and unmanaged afterwards.
	err := txn.RunOp(func(txn *Txn) error {
		defer func() {
			if recover() == nil {
				t.Error("Commit inside RunOp did not panic")
			}
		}()
		txn.Put(dbi, []byte("k"), []byte("v"), 0)
		return txn.Commit()
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Get(dbi, []byte("k")); err != nil {
		t.Fatalf("txn after RunOp: %v", err)
	}
	// Terminating: commits.
	if err := txn.RunOp(func(txn *Txn) error { return nil }, true); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Get(dbi, []byte("k")); !errors.Is(err, BadTxn) {
		t.Fatalf("Get after terminating RunOp = %v", err)
	}
	mustView(t, env, func(txn *Txn) error {
		_, err := txn.Get(dbi, []byte("k"))
		return err
	})
}

func TestTxnUseAfterEnd(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "d", 0)
	fill(t, env, dbi, 3)

	check := func(name string, txn *Txn) {
		t.Helper()
		calls := map[string]error{}
		_, calls["Get"] = txn.Get(dbi, []byte("key001"))
		calls["Put"] = txn.Put(dbi, []byte("x"), []byte("y"), 0)
		_, calls["PutReserve"] = txn.PutReserve(dbi, []byte("x"), 3, 0)
		calls["Del"] = txn.Del(dbi, []byte("key001"), nil)
		_, calls["OpenDBI"] = txn.OpenDBI("d", 0)
		_, calls["OpenRoot"] = txn.OpenRoot(0)
		_, calls["Flags"] = txn.Flags(dbi)
		_, calls["Stat"] = txn.Stat(dbi)
		calls["Drop"] = txn.Drop(dbi, false)
		_, calls["OpenCursor"] = txn.OpenCursor(dbi)
		calls["Sub"] = txn.Sub(func(*Txn) error { return nil })
		calls["Renew"] = txn.Renew()
		calls["Check"] = txn.Check()
		for op, err := range calls {
			if err == nil {
				t.Errorf("%s: %s after end: no error", name, op)
			}
		}
		if !errors.Is(calls["Get"], BadTxn) {
			t.Errorf("%s: Get after end = %v, want BadTxn", name, calls["Get"])
		}
		if id := txn.ID(); id != 0 {
			t.Errorf("%s: ID after end = %d", name, id)
		}
		txn.Reset() // no-ops
		txn.Abort()
	}

	ro, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	ro.Abort()
	check("aborted reader", ro)

	w := beginWrite(t, env)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	check("committed writer", w)

	var kept *Txn
	mustView(t, env, func(txn *Txn) error { kept = txn; return nil })
	check("leaked View txn", kept)
}

func TestTxnReadonlyWrite(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	err := env.View(func(txn *Txn) error {
		return txn.Put(dbi, []byte("k"), []byte("v"), 0)
	})
	if !IsErrnoSys(err, syscall.EACCES) {
		t.Fatalf("Put in View = %v, want EACCES", err)
	}
	err = env.View(func(txn *Txn) error {
		return txn.Sub(func(*Txn) error { return nil })
	})
	if err == nil {
		t.Fatal("Sub of a View: no error")
	}
}

func TestTxnGetPutDel(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "plain", 0)
	mustUpdate(t, env, func(txn *Txn) error {
		if err := txn.Put(dbi, []byte("k"), []byte("v1"), 0); err != nil {
			return err
		}
		// Overwrite by default.
		if err := txn.Put(dbi, []byte("k"), []byte("v2"), 0); err != nil {
			return err
		}
		err := txn.Put(dbi, []byte("k"), []byte("v3"), NoOverwrite)
		wantErrno(t, "NoOverwrite", err, KeyExist)
		v, err := txn.Get(dbi, []byte("k"))
		if err != nil || string(v) != "v2" {
			t.Errorf("Get = %q, %v; want v2", v, err)
		}
		// Empty keys are refused, empty values are fine.
		wantErrno(t, "Put empty key", txn.Put(dbi, nil, []byte("v"), 0), BadValSize)
		wantErrno(t, "Put empty key", txn.Put(dbi, []byte{}, []byte("v"), 0), BadValSize)
		_, err = txn.Get(dbi, nil)
		wantErrno(t, "Get empty key", err, BadValSize)
		if err := txn.Put(dbi, []byte("empty"), nil, 0); err != nil {
			return err
		}
		v, err = txn.Get(dbi, []byte("empty"))
		if err != nil || len(v) != 0 || v == nil {
			t.Errorf("empty value: %q (nil=%v), %v", v, v == nil, err)
		}
		// Del ignores val outside DupSort.
		if err := txn.Del(dbi, []byte("k"), []byte("whatever")); err != nil {
			return err
		}
		_, err = txn.Get(dbi, []byte("k"))
		wantErrno(t, "Get deleted", err, NotFound)
		wantErrno(t, "Del missing", txn.Del(dbi, []byte("k"), nil), NotFound)
		return nil
	})
}

func TestTxnGetCopiesUnlessRaw(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 1)
	mustView(t, env, func(txn *Txn) error {
		a, err := txn.Get(dbi, kv("key", 0))
		if err != nil {
			return err
		}
		b, _ := txn.Get(dbi, kv("key", 0))
		a[0] = 'X' // a private copy may be modified
		if string(b) != "val000" {
			t.Errorf("copies share memory: %q", b)
		}
		txn.RawRead = true
		r1, _ := txn.Get(dbi, kv("key", 0))
		r2, _ := txn.Get(dbi, kv("key", 0))
		if &r1[0] != &r2[0] {
			t.Error("RawRead results do not alias the map")
		}
		if string(r1) != "val000" || cap(r1) < len(r1) {
			t.Errorf("raw view %q", r1)
		}
		return nil
	})
}

func TestTxnAppend(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < 100; i++ {
			if err := txn.Put(dbi, kv("k", i), kv("v", i), Append); err != nil {
				return err
			}
		}
		wantErrno(t, "Append out of order", txn.Put(dbi, kv("k", 50), nil, Append), KeyExist)
		return nil
	})
}

func TestTxnDupSortDel(t *testing.T) {
	env := openEnv(t, 0)
	requireDupSort(t, env, 0)
	dbi := openDB(t, env, "dups", DupSort)
	mustUpdate(t, env, func(txn *Txn) error {
		for _, v := range []string{"c", "a", "b"} {
			if err := txn.Put(dbi, []byte("k"), []byte(v), 0); err != nil {
				return err
			}
		}
		wantErrno(t, "NoDupData", txn.Put(dbi, []byte("k"), []byte("a"), NoDupData), KeyExist)
		if err := txn.Del(dbi, []byte("k"), []byte("b")); err != nil {
			return err
		}
		wantErrno(t, "Del missing dup", txn.Del(dbi, []byte("k"), []byte("zz")), NotFound)
		v, err := txn.Get(dbi, []byte("k"))
		if err != nil || string(v) != "a" {
			t.Errorf("first dup = %q, %v", v, err)
		}
		st, err := txn.Stat(dbi)
		if err != nil || st.Entries != 2 {
			t.Errorf("Stat = %+v, %v; want 2 entries", st, err)
		}
		return nil
	})
}

func TestTxnPutReserve(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	mustUpdate(t, env, func(txn *Txn) error {
		buf, err := txn.PutReserve(dbi, []byte("r"), 5, 0)
		if err != nil {
			return err
		}
		if len(buf) != 5 {
			t.Fatalf("reserved %d bytes", len(buf))
		}
		copy(buf, "hello")
		if _, err := txn.PutReserve(dbi, []byte("r"), 1, NoOverwrite); !errors.Is(err, KeyExist) {
			t.Errorf("PutReserve NoOverwrite = %v", err)
		}
		if _, err := txn.PutReserve(dbi, []byte("neg"), -1, 0); err == nil {
			t.Error("PutReserve(-1): no error")
		}
		if _, err := txn.PutReserve(dbi, nil, 3, 0); !errors.Is(err, BadValSize) {
			t.Errorf("PutReserve nil key = %v", err)
		}
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		v, err := txn.Get(dbi, []byte("r"))
		if err != nil || string(v) != "hello" {
			t.Errorf("reserved value = %q, %v", v, err)
		}
		return nil
	})
}

func TestTxnOpenDBI(t *testing.T) {
	env := openEnv(t, 0)
	err := env.View(func(txn *Txn) error {
		_, err := txn.OpenDBI("nope", 0)
		return err
	})
	wantErrno(t, "open missing", err, NotFound)

	dbi := openDB(t, env, "made", ReverseKey)
	mustView(t, env, func(txn *Txn) error {
		db, err := txn.OpenDBI("made", 0)
		if err != nil {
			return err
		}
		if db != dbi {
			t.Errorf("reopened DBI %d != %d", db, dbi)
		}
		f, err := txn.Flags(db)
		if err != nil {
			return err
		}
		if f != ReverseKey {
			t.Errorf("Flags = %#x, want ReverseKey", f)
		}
		return nil
	})

	err = env.Update(func(txn *Txn) error {
		_, err := txn.CreateDBI("")
		return err
	})
	wantErrno(t, "empty name", err, BadValSize)

	// The root database holds one record per named database.
	mustView(t, env, func(txn *Txn) error {
		root, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		st, err := txn.Stat(root)
		if err != nil || st.Entries != 1 {
			t.Errorf("root Stat = %+v, %v", st, err)
		}
		return nil
	})
}

func TestTxnDBsFull(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	env.SetMaxDBs(2)
	if err := env.Open(t.TempDir(), 0, 0o600); err != nil {
		t.Fatal(err)
	}
	err = env.Update(func(txn *Txn) error {
		for i := 0; i < 3; i++ {
			if _, err := txn.CreateDBI(fmt.Sprint("db", i)); err != nil {
				return err
			}
		}
		return nil
	})
	wantErrno(t, "third named db", err, DBsFull)
}

func TestTxnDrop(t *testing.T) { inChild(t, testTxnDrop) }

func testTxnDrop(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "drop", 0)
	fill(t, env, dbi, 100)
	mustUpdate(t, env, func(txn *Txn) error { return txn.Drop(dbi, false) })
	mustView(t, env, func(txn *Txn) error {
		st, err := txn.Stat(dbi)
		if err != nil || st.Entries != 0 {
			t.Errorf("after Drop(false): %+v, %v", st, err)
		}
		return nil
	})
	mustUpdate(t, env, func(txn *Txn) error { return txn.Drop(dbi, true) })
	err := env.View(func(txn *Txn) error {
		_, err := txn.OpenDBI("drop", 0)
		return err
	})
	wantErrno(t, "open deleted db", err, NotFound)
}

func TestTxnSub(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	boom := errors.New("boom")
	mustUpdate(t, env, func(txn *Txn) error {
		if err := txn.Sub(func(sub *Txn) error {
			return sub.Put(dbi, []byte("kept"), []byte("1"), 0)
		}); err != nil {
			return err
		}
		err := txn.Sub(func(sub *Txn) error {
			if err := sub.Put(dbi, []byte("lost"), []byte("1"), 0); err != nil {
				return err
			}
			// Two levels deep.
			return sub.Sub(func(sub2 *Txn) error {
				if _, err := sub2.Get(dbi, []byte("lost")); err != nil {
					t.Errorf("child does not see parent's write: %v", err)
				}
				return sub2.Put(dbi, []byte("deep"), []byte("1"), 0)
			})
		})
		if err != nil {
			return err
		}
		err = txn.Sub(func(sub *Txn) error {
			sub.Del(dbi, []byte("deep"), nil)
			return boom
		})
		if err != boom {
			t.Errorf("Sub returned %v", err)
		}
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		for _, k := range []string{"kept", "lost", "deep"} {
			if _, err := txn.Get(dbi, []byte(k)); err != nil {
				t.Errorf("%s: %v", k, err)
			}
		}
		return nil
	})

	// A parent with an active child refuses work.
	mustUpdate(t, env, func(txn *Txn) error {
		return txn.Sub(func(sub *Txn) error {
			_, err := txn.Get(dbi, []byte("kept"))
			if err == nil {
				t.Error("parent usable while child active")
			}
			return nil
		})
	})
}

func TestTxnBeginNested(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	parent := beginWrite(t, env)
	child, err := env.BeginTxn(parent, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Put(dbi, []byte("c"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	child.Abort()
	if _, err := parent.Get(dbi, []byte("c")); !IsNotFound(err) {
		t.Fatalf("aborted child's write visible: %v", err)
	}
	child, err = env.BeginTxn(parent, 0)
	if err != nil {
		t.Fatal(err)
	}
	child.Put(dbi, []byte("c"), []byte("2"), 0)
	if err := child.Commit(); err != nil {
		t.Fatal(err)
	}
	if v, err := parent.Get(dbi, []byte("c")); err != nil || string(v) != "2" {
		t.Fatalf("committed child's write: %q, %v", v, err)
	}
	if err := parent.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := env.BeginTxn(parent, 0); !errors.Is(err, BadTxn) {
		t.Fatalf("BeginTxn with ended parent = %v", err)
	}
}

func TestTxnResetRenew(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 1)

	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	id0 := txn.ID()
	if err := txn.Renew(); !IsErrnoSys(err, syscall.EINVAL) {
		t.Fatalf("Renew without Reset = %v, want EINVAL", err)
	}
	txn.Reset()
	txn.Reset() // twice is fine
	if _, err := txn.Get(dbi, kv("key", 0)); err == nil {
		t.Fatal("Get on a reset txn: no error")
	}

	fill(t, env, dbi, 2) // a newer snapshot
	if err := txn.Renew(); err != nil {
		t.Fatal(err)
	}
	if id1 := txn.ID(); id1 != id0+1 {
		t.Fatalf("ID after Renew = %d, before %d", id1, id0)
	}
	if _, err := txn.Get(dbi, kv("key", 1)); err != nil {
		t.Fatalf("renewed txn misses newer data: %v", err)
	}

	// On a write transaction Reset does nothing and Renew fails.
	w := beginWrite(t, env)
	w.Put(dbi, []byte("w"), []byte("1"), 0)
	w.Reset()
	if err := w.Renew(); !IsErrnoSys(err, syscall.EINVAL) {
		t.Fatalf("Renew of a writer = %v", err)
	}
	if err := w.Commit(); err != nil {
		t.Fatalf("commit after Reset: %v", err)
	}
}

func TestTxnID(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	var readID, writeID uintptr
	mustView(t, env, func(txn *Txn) error { readID = txn.ID(); return nil })
	mustUpdate(t, env, func(txn *Txn) error {
		writeID = txn.ID()
		return txn.Put(dbi, []byte("k"), nil, 0)
	})
	if writeID != readID+1 {
		t.Fatalf("write id %d, read id %d", writeID, readID)
	}
	mustView(t, env, func(txn *Txn) error {
		if txn.ID() != writeID {
			t.Errorf("snapshot id %d, last write %d", txn.ID(), writeID)
		}
		return nil
	})
}

func TestTxnMapFull(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	env.SetMapSize(1 << 20)
	if err := env.Open(t.TempDir(), 0, 0o600); err != nil {
		t.Fatal(err)
	}
	dbi := openDB(t, env, "", 0)
	err = env.Update(func(txn *Txn) error {
		val := bytes.Repeat([]byte("x"), 1000)
		for i := 0; ; i++ {
			if err := txn.Put(dbi, kv("k", i), val, 0); err != nil {
				return fmt.Errorf("put %d: %w", i, err)
			}
		}
	})
	if !IsMapFull(err) || !errors.Is(err, MapFull) {
		t.Fatalf("filling a 1 MiB map: %v", err)
	}
	// Nothing of the failed transaction was committed; the env still works.
	mustView(t, env, func(txn *Txn) error {
		st, err := txn.Stat(dbi)
		if err != nil || st.Entries != 0 {
			t.Errorf("after failed fill: %+v, %v", st, err)
		}
		return nil
	})
}

func TestTxnFinalizer(t *testing.T) {
	env := openEnv(t, 0)
	var mu sync.Mutex
	var logged []string
	done := make(chan struct{}, 2)
	leak := func(pooled bool) {
		txn, err := env.BeginTxn(nil, Readonly)
		if err != nil {
			t.Fatal(err)
		}
		txn.Pooled = pooled
		txn.logf = func(format string, args ...any) {
			mu.Lock()
			logged = append(logged, fmt.Sprintf(format, args...))
			mu.Unlock()
		}
		runtime.AddCleanup(txn, func(ch chan struct{}) { ch <- struct{}{} }, done)
	}
	leak(false)
	leak(true)
	for seen, tries := 0, 0; seen < 2; tries++ {
		if tries == 10000 {
			t.Fatalf("only %d of 2 leaked transactions were collected", seen)
		}
		runtime.GC()
		select {
		case <-done:
			seen++
		default:
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || !strings.Contains(logged[0], "aborting") {
		t.Fatalf("finalizer logs: %q (want exactly one, for the unpooled txn)", logged)
	}
	// Both reader slots were released by the finalizer's abort.
	pid := itoa(os.Getpid())
	env.ReaderList(func(line string) error {
		if f := strings.Fields(line); len(f) > 0 && f[0] == pid {
			t.Errorf("reader still registered after finalization: %q", line)
		}
		return nil
	})
}

func TestConcurrentReaders(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 200)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for round := 0; round < 20; round++ {
				err := env.View(func(txn *Txn) error {
					txn.RawRead = g%2 == 0
					for i := 0; i < 200; i += 7 {
						v, err := txn.Get(dbi, kv("key", i))
						if err != nil {
							return err
						}
						if !bytes.Equal(v, kv("val", i)) {
							return fmt.Errorf("key %d: %q", i, v)
						}
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	// A writer runs meanwhile on its own locked goroutine.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 20; i++ {
			if err := env.Update(func(txn *Txn) error {
				return txn.Put(dbi, kv("extra", i), []byte("x"), 0)
			}); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Writers on several goroutines are serialized by the engine: every
// read-modify-write of a shared counter survives.
func TestConcurrentWriters(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	const writers, rounds = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				err := env.Update(func(txn *Txn) error {
					n := 0
					v, err := txn.Get(dbi, []byte("counter"))
					switch {
					case err == nil:
						n, err = strconv.Atoi(string(v))
						if err != nil {
							return err
						}
					case !IsNotFound(err):
						return err
					}
					return txn.Put(dbi, []byte("counter"), []byte(strconv.Itoa(n+1)), 0)
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mustView(t, env, func(txn *Txn) error {
		v, err := txn.Get(dbi, []byte("counter"))
		if err != nil || string(v) != strconv.Itoa(writers*rounds) {
			t.Errorf("counter = %q, %v; want %d", v, err, writers*rounds)
		}
		return nil
	})
}
