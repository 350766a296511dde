package lmdb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// The Go face of in-memory environments and interruption: Env.Load,
// Txn.CopyFD, Env.SetInterrupt, Txn.SetInterrupt and Env.FD on an
// in-memory env. The root package (dlmdb) tests the heavier scenarios.

// openMem opens an in-memory environment closed at the end of the test.
func openMem(t testing.TB, mapSize int64, flags uint) *Env {
	t.Helper()
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.SetMaxDBs(8); err != nil {
		t.Fatal(err)
	}
	if err := env.SetMapSize(mapSize); err != nil {
		t.Fatal(err)
	}
	if err := env.Open("", InMemory|flags, 0o600); err != nil {
		env.Close()
		t.Fatalf("Open InMemory: %v", err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// pairsOf reads every pair of dbi.
func pairsOf(t testing.TB, env *Env, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	mustView(t, env, func(txn *Txn) error {
		dbi, err := txn.OpenDBI(name, 0)
		if err != nil {
			return err
		}
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		for {
			k, v, err := cur.Get(nil, nil, Next)
			if IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			out[string(k)] = string(v)
		}
	})
	return out
}

// fillNamed stores n pairs "k%06d" -> "v%06d-<pad>" in the named DB.
func fillNamed(t testing.TB, env *Env, name string, n int) map[string]string {
	t.Helper()
	want := map[string]string{}
	mustUpdate(t, env, func(txn *Txn) error {
		dbi, err := txn.OpenDBI(name, Create)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			k, v := fmt.Sprintf("k%06d", i), fmt.Sprintf("v%06d-%040d", i, i*7)
			if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
				return err
			}
			want[k] = v
		}
		return nil
	})
	return want
}

func sameMap(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d pairs, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: %q = %q, want %q", what, k, got[k], v)
		}
	}
}

func TestInMemoryPathAndFD(t *testing.T) {
	env := openMem(t, 8<<20, 0)
	p, err := env.Path()
	if err != nil || p != "" {
		t.Fatalf("Path = %q, %v; want \"\", nil", p, err)
	}
	_, err = env.FD()
	if err == nil {
		t.Fatal("FD of an in-memory env succeeded")
	}
	if errors.Is(err, errEnvNotOpen) || err != errNoFile {
		t.Fatalf("FD: %v, want %v", err, errNoFile)
	}
	// before Open FD still says "not open"
	fresh, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.FD(); err != errEnvNotOpen {
		t.Fatalf("FD before Open: %v, want %v", err, errEnvNotOpen)
	}
	// a file env has a descriptor
	fenv := openEnv(t, 0)
	if fd, err := fenv.FD(); err != nil || int(fd) < 0 {
		t.Fatalf("FD of a file env: %d, %v", fd, err)
	}
}

func TestLoadAndTxnCopyFD(t *testing.T) {
	src := openEnv(t, 0)
	want := fillNamed(t, src, "a", 3000)
	txn, err := src.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	// changes after the snapshot must not be in the copies
	mustUpdate(t, src, func(w *Txn) error {
		dbi, err := w.OpenDBI("a", 0)
		if err != nil {
			return err
		}
		return w.Put(dbi, []byte("later"), []byte("x"), 0)
	})

	mem, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if err := mem.SetMaxDBs(4); err != nil {
		t.Fatal(err)
	}
	if err := mem.Load(txn, 0); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if f, err := mem.Flags(); err != nil || f&InMemory == 0 {
		t.Fatalf("Flags after Load = %#x, %v; want InMemory", f, err)
	}
	sameMap(t, "loaded", pairsOf(t, mem, "a"), want)
	if err := mem.Check(); err != nil {
		t.Fatalf("Check of the loaded env: %v", err)
	}
	// a loaded env is an ordinary writable in-memory env
	mustUpdate(t, mem, func(w *Txn) error {
		dbi, err := w.OpenDBI("a", 0)
		if err != nil {
			return err
		}
		return w.Put(dbi, []byte("mem"), []byte("y"), 0)
	})
	if err := mem.Load(txn, 0); err == nil {
		t.Fatal("Load into an open env succeeded")
	}

	for _, flags := range []uint{0, CopyCompact} {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "data.mdb"))
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.CopyFD(f.Fd(), flags); err != nil {
			t.Fatalf("CopyFD(%#x): %v", flags, err)
		}
		f.Close()
		cp, err := NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		cp.SetMaxDBs(4)
		if err := cp.Open(dir, Readonly, 0o600); err != nil {
			t.Fatalf("open copy: %v", err)
		}
		sameMap(t, fmt.Sprintf("copy %#x", flags), pairsOf(t, cp, "a"), want)
		if err := cp.Check(); err != nil {
			t.Fatalf("Check of copy: %v", err)
		}
		cp.Close()
	}

	txn.Abort()
	if err := txn.CopyFD(1, 0); !errors.Is(err, BadTxn) {
		t.Fatalf("CopyFD after Abort: %v, want BadTxn", err)
	}
	other, _ := NewEnv()
	defer other.Close()
	if err := other.Load(txn, 0); !errors.Is(err, BadTxn) {
		t.Fatalf("Load from an ended txn: %v, want BadTxn", err)
	}
	if err := other.Load(nil, 0); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Load(nil): %v, want EINVAL", err)
	}
}

// wantEINTR fails unless err is the engine's EINTR as an *OpError.
func wantEINTR(t testing.TB, what string, err error) {
	t.Helper()
	var op *OpError
	if !errors.Is(err, syscall.EINTR) || !errors.As(err, &op) || op.Errno != syscall.EINTR {
		t.Fatalf("%s: %v (%T), want an OpError carrying EINTR", what, err, err)
	}
	if !IsErrnoSys(err, syscall.EINTR) {
		t.Fatalf("%s: IsErrnoSys(EINTR) false for %v", what, err)
	}
}

func TestEnvSetInterrupt(t *testing.T) {
	for _, mem := range []bool{false, true} {
		t.Run(fmt.Sprintf("inmem=%v", mem), func(t *testing.T) {
			var env *Env
			if mem {
				env = openMem(t, 64<<20, 0)
			} else {
				env = openEnv(t, 0)
			}
			want := fillNamed(t, env, "a", 5000)
			txn, err := env.BeginTxn(nil, Readonly)
			if err != nil {
				t.Fatal(err)
			}
			defer txn.Abort()
			dbi, err := txn.OpenDBI("a", 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := env.SetInterrupt(true); err != nil {
				t.Fatal(err)
			}
			_, err = txn.Get(dbi, []byte("k000100"))
			wantEINTR(t, "Get while interrupted", err)
			_, err = txn.Get(dbi, []byte("k000100"))
			wantErrno(t, "Get after EINTR", err, BadTxn)
			// a new txn is stopped too while the flag is set
			err = env.View(func(t2 *Txn) error {
				_, err := t2.Get(dbi, []byte("k000001"))
				return err
			})
			wantEINTR(t, "View while interrupted", err)
			if err := env.SetInterrupt(false); err != nil {
				t.Fatal(err)
			}
			txn.Reset()
			if err := txn.Renew(); err != nil {
				t.Fatalf("Renew after EINTR: %v", err)
			}
			v, err := txn.Get(dbi, []byte("k000100"))
			if err != nil || string(v) != want["k000100"] {
				t.Fatalf("Get after clearing: %q, %v", v, err)
			}
			sameMap(t, "after interrupt", pairsOf(t, env, "a"), want)
			if err := env.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
	closed, _ := NewEnv()
	closed.Close()
	if err := closed.SetInterrupt(true); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("SetInterrupt on a closed env: %v, want EINVAL", err)
	}
}

func TestTxnSetInterruptWrite(t *testing.T) {
	env := openMem(t, 64<<20, 0)
	want := fillNamed(t, env, "a", 2000)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	txn, err := env.BeginTxn(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	dbi, err := txn.OpenDBI("a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Put(dbi, []byte("k000001"), []byte("changed"), 0); err != nil {
		t.Fatal(err)
	}
	// another txn family is not affected
	other, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Abort()
	done := make(chan error)
	go func() { done <- txn.SetInterrupt(true) }() // from another goroutine
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var putErr error
	for i := 0; i < 100000 && putErr == nil; i++ {
		putErr = txn.Put(dbi, []byte(fmt.Sprintf("n%07d", i)), []byte("x"), 0)
	}
	wantEINTR(t, "Put while interrupted", putErr)
	if v, err := other.Get(dbi, []byte("k000002")); err != nil || string(v) != want["k000002"] {
		t.Fatalf("other txn: %q, %v", v, err)
	}
	wantErrno(t, "Commit of an interrupted txn", txn.Commit(), BadTxn)
	if err := txn.SetInterrupt(true); err != nil {
		t.Fatalf("SetInterrupt after the end: %v, want nil", err)
	}
	sameMap(t, "after interrupted write", pairsOf(t, env, "a"), want)
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestTxnSetInterruptRacesEnd: goroutines flag whatever transaction is
// current while the owner begins, uses, resets, renews, commits and aborts
// transactions. Under -race this shows SetInterrupt never touches a Txn
// being ended without synchronisation; every call must return nil and every
// operation must succeed or fail with EINTR or BadTxn.
func TestTxnSetInterruptRacesEnd(t *testing.T) {
	env := openMem(t, 64<<20, 0)
	fillNamed(t, env, "a", 2000)
	var cur atomic.Pointer[Txn]
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				if txn := cur.Load(); txn != nil {
					if err := txn.SetInterrupt((i+g)%5 != 0); err != nil {
						errs <- err
						return
					}
				}
				if i%16 == 0 {
					runtime.Gosched()
				}
			}
		}(g)
	}
	okErr := func(err error) bool {
		return err == nil || errors.Is(err, syscall.EINTR) || errors.Is(err, BadTxn) || IsNotFound(err)
	}
	var eintr, clean int
	runtime.LockOSThread()
	for round := 0; round < 400; round++ {
		write := round%4 == 3
		var flags uint = Readonly
		if write {
			flags = 0
		}
		txn, err := env.BeginTxn(nil, flags)
		if err != nil {
			t.Fatal(err)
		}
		cur.Store(txn)
		dbi, err := txn.OpenDBI("a", 0)
		if err == nil {
			_, err = txn.Get(dbi, []byte(fmt.Sprintf("k%06d", round*3%2000)))
		}
		if err == nil && round%3 == 0 { // a walk over many pages
			err = walkAll(txn, dbi)
		}
		if !okErr(err) {
			t.Fatalf("round %d: %v", round, err)
		}
		if errors.Is(err, syscall.EINTR) {
			eintr++
		} else if err == nil {
			clean++
		}
		switch {
		case write && round%8 == 3:
			if err == nil {
				err = txn.Put(dbi, []byte("w"), []byte(fmt.Sprint(round)), 0)
			}
			if !okErr(err) {
				t.Fatalf("Put: %v", err)
			}
			if cerr := txn.Commit(); !okErr(cerr) {
				t.Fatalf("Commit: %v", cerr)
			}
		case !write && round%2 == 0:
			txn.Reset()
			if err := txn.Renew(); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			if dbi == 0 { // OpenDBI was interrupted: open it again
				dbi, err = txn.OpenDBI("a", 0)
			}
			if err == nil {
				_, err = txn.Get(dbi, []byte("k000001"))
			}
			if !okErr(err) {
				t.Fatal(err)
			}
			txn.Abort()
		case !write && round%25 == 1:
			// dropped unended: its finalizer ends it, once no
			// interrupter holds it any more
			txn.Pooled = true
			cur.Store(nil)
			runtime.GC()
		default:
			txn.Abort()
		}
		// otherwise the Txn stays reachable through cur: late calls hit
		// an ended Txn
	}
	runtime.UnlockOSThread()
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("SetInterrupt: %v", err)
	}
	t.Logf("%d rounds stopped by EINTR, %d clean", eintr, clean)
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
}

// walkAll moves a cursor over every item of dbi.
func walkAll(txn *Txn, dbi DBI) error {
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return err
	}
	defer cur.Close()
	for {
		if _, _, err := cur.Get(nil, nil, Next); err != nil {
			if IsNotFound(err) {
				return nil
			}
			return err
		}
	}
}

// TestCopyFDInterrupted: a copy stopped by its txn's interrupt fails with
// EINTR and fails the txn; the env is unharmed.
func TestCopyFDInterrupted(t *testing.T) {
	env := openMem(t, 64<<20, 0)
	want := fillNamed(t, env, "a", 20000)
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	if err := txn.SetInterrupt(true); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(t.TempDir(), "copy")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	wantEINTR(t, "CopyFD", txn.CopyFD(f.Fd(), CopyCompact))
	wantErrno(t, "CopyFD after EINTR", txn.CopyFD(f.Fd(), 0), BadTxn)
	txn.Reset()
	if err := txn.Renew(); err != nil { // Renew clears the txn's flag
		t.Fatal(err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := txn.CopyFD(f.Fd(), CopyCompact); err != nil {
		t.Fatalf("CopyFD after Renew: %v", err)
	}
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		t.Fatalf("copy is empty: %v", err)
	}
	sameMap(t, "after interrupted copy", pairsOf(t, env, "a"), want)
}

// TestSetInterruptAfterEnvClose: a Txn left running when its Env was closed
// (a caller bug) is not touched: SetInterrupt answers EINVAL.
func TestSetInterruptAfterEnvClose(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Open("", InMemory, 0o600); err != nil {
		t.Fatal(err)
	}
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.SetInterrupt(true); err != nil {
		t.Fatalf("SetInterrupt on a live txn: %v", err)
	}
	env.Close()
	if err := txn.SetInterrupt(false); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("SetInterrupt after Env.Close: %v, want EINVAL", err)
	}
	txn.Abort()
	if err := txn.SetInterrupt(false); err != nil {
		t.Fatalf("SetInterrupt after Abort: %v, want nil", err)
	}
}
