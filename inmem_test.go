package dlmdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// ---- a model of one database ----

// imodel is what a database should hold: pairs in database order.
type imodel struct {
	m    map[string]string
	keys []string // sorted
}

func newIModel() *imodel { return &imodel{m: map[string]string{}} }

func (m *imodel) sort() {
	m.keys = m.keys[:0]
	for k := range m.m {
		m.keys = append(m.keys, k)
	}
	sort.Strings(m.keys)
}

// countIn is the model of Count over the key range [lo, hi).
func (m *imodel) countIn(lo, hi string) uint64 {
	a := sort.SearchStrings(m.keys, lo)
	b := sort.SearchStrings(m.keys, hi)
	if b < a {
		return 0
	}
	return uint64(b - a)
}

func ikey(i int) string { return fmt.Sprintf("key-%07d-with-a-longer-tail", i) }

// commitRandom applies a random batch of puts and deletes to dbi and, once
// committed, to the model.
func commitRandom(t *testing.T, env *lmdb.Env, dbi lmdb.DBI, m *imodel, rng *rand.Rand, n, space int) {
	t.Helper()
	next := map[string]string{}
	del := map[string]bool{}
	err := env.Update(func(txn *lmdb.Txn) error {
		for i := 0; i < n; i++ {
			k := ikey(rng.Intn(space))
			if rng.Intn(4) == 0 {
				err := txn.Del(dbi, []byte(k), nil)
				if err != nil && !lmdb.IsNotFound(err) {
					return err
				}
				delete(next, k)
				del[k] = true
				continue
			}
			v := fmt.Sprintf("val-%d-%x", i, rng.Int63())
			if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
				return err
			}
			next[k] = v
			delete(del, k)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("commitRandom: %v", err)
	}
	for k := range del {
		delete(m.m, k)
	}
	for k, v := range next {
		m.m[k] = v
	}
	m.sort()
}

// expectModel compares dbi with the model, pair by pair in order.
func expectModel(t *testing.T, env *lmdb.Env, name string, m *imodel) {
	t.Helper()
	err := env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(name, 0)
		if err != nil {
			return err
		}
		seq, errf := Scan(txn, dbi, All())
		i := 0
		for k, v := range seq {
			if i >= len(m.keys) || string(k) != m.keys[i] || string(v) != m.m[m.keys[i]] {
				return fmt.Errorf("pair %d: %q=%q does not match the model", i, k, v)
			}
			i++
		}
		if err := errf(); err != nil {
			return err
		}
		if i != len(m.keys) {
			return fmt.Errorf("%d pairs, model has %d", i, len(m.keys))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func wantEINTR(t *testing.T, what string, err error) {
	t.Helper()
	var op *lmdb.OpError
	if !errors.Is(err, syscall.EINTR) || !errors.As(err, &op) {
		t.Fatalf("%s: %v, want an *lmdb.OpError carrying EINTR", what, err)
	}
}

func wantBadTxn(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, lmdb.BadTxn) {
		t.Fatalf("%s: %v, want BadTxn", what, err)
	}
}

// memEnv opens an in-memory env closed at the end of the test.
func memEnv(t *testing.T, mapSize int64) *lmdb.Env {
	t.Helper()
	env, err := OpenInMemory(InMemoryOptions{MapSize: mapSize, MaxDBs: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// ---- interrupting long operations ----

// An interrupt case runs one kind of long operation in txn, over and over,
// until it fails, and returns that error; every result it gets before must
// match the model.
type icase struct {
	name  string
	write bool
	run   func(txn *lmdb.Txn, dbi lmdb.DBI, m *imodel, rng *rand.Rand) error
}

// countWriter counts what it is given.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var icases = []icase{
	{name: "walk", run: func(txn *lmdb.Txn, dbi lmdb.DBI, m *imodel, _ *rand.Rand) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		for {
			op := uint(lmdb.First) // each pass starts over (at the end Next stays there)
			for i := 0; ; i, op = i+1, lmdb.Next {
				k, v, err := cur.Get(nil, nil, op)
				if lmdb.IsNotFound(err) {
					if i != len(m.keys) {
						return fmt.Errorf("walk saw %d pairs, model has %d", i, len(m.keys))
					}
					break
				}
				if err != nil {
					return err
				}
				if string(k) != m.keys[i] || string(v) != m.m[m.keys[i]] {
					return fmt.Errorf("walk: pair %d is %q", i, k)
				}
			}
		}
	}},
	{name: "count", run: func(txn *lmdb.Txn, dbi lmdb.DBI, m *imodel, rng *rand.Rand) error {
		for {
			lo, hi := ikey(rng.Intn(40000)), ikey(rng.Intn(40000))
			n, err := Count(txn, dbi, Between([]byte(lo), []byte(hi)).ExcludeHigh())
			if err != nil {
				return err
			}
			if want := m.countIn(lo, hi); n != want {
				return fmt.Errorf("Count [%s, %s) = %d, model %d", lo, hi, n, want)
			}
		}
	}},
	{name: "sample", run: func(txn *lmdb.Txn, dbi lmdb.DBI, m *imodel, rng *rand.Rand) error {
		for {
			seq, errf := Sample(txn, dbi, 1+rng.Intn(500))
			for k, v := range seq {
				if want, ok := m.m[string(k)]; !ok || want != string(v) {
					return fmt.Errorf("Sample gave %q=%q, not in the model", k, v)
				}
			}
			if err := errf(); err != nil {
				return err
			}
		}
	}},
	{name: "copy", run: func(txn *lmdb.Txn, _ lmdb.DBI, _ *imodel, rng *rand.Rand) error {
		for {
			var w countWriter
			flags := uint(0)
			if rng.Intn(2) == 0 {
				flags = lmdb.CopyCompact
			}
			if err := copyThroughPipe(txn, &w, flags); err != nil {
				return err
			}
			if w.n == 0 {
				return errors.New("a complete copy wrote nothing")
			}
		}
	}},
	{name: "write", write: true, run: func(txn *lmdb.Txn, dbi lmdb.DBI, _ *imodel, rng *rand.Rand) error {
		val := bytes.Repeat([]byte("w"), 200)
		for i := 0; ; i++ {
			// new keys and overwrites of committed ones, none of it
			// may ever be seen
			k := ikey(rng.Intn(200000))
			if err := txn.Put(dbi, []byte(k), val, 0); err != nil {
				return err
			}
		}
	}},
}

// interruptFixture is a counted database with enough pages for every
// operation to take a while, in a file env or an in-memory one.
func interruptFixture(t *testing.T, rng *rand.Rand, inmem bool) (*lmdb.Env, lmdb.DBI, *imodel) {
	t.Helper()
	var env *lmdb.Env
	if inmem {
		env = memEnv(t, 256<<20)
	} else {
		env = countedEnv(t)
		if err := env.SetMapSize(256 << 20); err != nil {
			t.Fatal(err)
		}
	}
	var dbi lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.OpenDBI("c", lmdb.Create|lmdb.Counted)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	m := newIModel()
	commitRandom(t, env, dbi, m, rng, 30000, 40000)
	return env, dbi, m
}

// randomDelay is a random moment: often none at all, else up to 3ms.
func randomDelay(rng *rand.Rand) time.Duration {
	if rng.Intn(5) == 0 {
		return 0
	}
	return time.Duration(rng.Intn(3000)) * time.Microsecond
}

// TestInterruptRandomMoments stops each kind of long operation at random
// moments, through the env's flag, the txn's own flag (both set from
// another goroutine) and a context; each must end with EINTR, leave its txn
// failed, and leave the committed data and the structure intact.
func TestInterruptRandomMoments(t *testing.T) {
	seed := countedSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for _, inmem := range []bool{false, true} {
		env, dbi, m := interruptFixture(t, rng, inmem)
		for _, c := range icases {
			for _, mode := range []string{"env", "txn", "ctx"} {
				name := fmt.Sprintf("inmem=%v/%s/%s", inmem, c.name, mode)
				t.Run(name, func(t *testing.T) {
					for trial := 0; trial < 2; trial++ {
						interruptOnce(t, env, dbi, m, c, mode, rng)
						expectModel(t, env, "c", m)
						if err := env.Check(); err != nil {
							t.Fatalf("Check: %v", err)
						}
						commitRandom(t, env, dbi, m, rng, 300, 40000)
					}
				})
			}
		}
	}
}

// interruptOnce runs c until an interrupt armed after a random delay
// stops it.
func interruptOnce(t *testing.T, env *lmdb.Env, dbi lmdb.DBI, m *imodel, c icase, mode string, rng *rand.Rand) {
	t.Helper()
	delay := randomDelay(rng)
	opRng := rand.New(rand.NewSource(rng.Int63()))
	var flags uint = lmdb.Readonly
	if c.write {
		flags = 0
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	if mode == "ctx" {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var opErr error
		err := RunTxn(ctx, env, flags, func(txn *lmdb.Txn) error {
			// armed once the txn runs, so a zero delay still interrupts
			timer := time.AfterFunc(delay, cancel)
			defer timer.Stop()
			opErr = c.run(txn, dbi, m, opRng)
			if errors.Is(opErr, syscall.EINTR) {
				_, again := txn.Get(dbi, []byte(ikey(1)))
				wantBadTxn(t, "Get after EINTR", again)
			}
			return opErr
		})
		if ctx.Err() == nil {
			t.Fatalf("%s: stopped before the context was cancelled: %v", c.name, opErr)
		}
		wantEINTR(t, c.name, opErr)
		if !errors.Is(err, context.Canceled) || !errors.Is(err, syscall.EINTR) {
			t.Fatalf("RunTxn: %v, want context.Canceled and EINTR", err)
		}
		var ie *InterruptedError
		if !errors.As(err, &ie) || ie.Err != opErr {
			t.Fatalf("RunTxn: %v (%T), want an *InterruptedError holding %v", err, err, opErr)
		}
		return
	}

	txn, err := env.BeginTxn(nil, flags)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	armed := make(chan error, 1)
	go func() {
		time.Sleep(delay)
		if mode == "env" {
			armed <- env.SetInterrupt(true)
		} else {
			armed <- txn.SetInterrupt(true)
		}
	}()
	opErr := c.run(txn, dbi, m, opRng)
	if err := <-armed; err != nil {
		t.Fatalf("SetInterrupt: %v", err)
	}
	wantEINTR(t, c.name, opErr)
	_, again := txn.Get(dbi, []byte(ikey(1)))
	wantBadTxn(t, "Get after EINTR", again)
	if c.write {
		wantBadTxn(t, "Commit after EINTR", txn.Commit())
	}
	if mode == "env" {
		// still set: a new txn stops at once
		verr := env.View(func(t2 *lmdb.Txn) error { _, err := t2.Get(dbi, []byte(ikey(2))); return err })
		wantEINTR(t, "View with the env flag set", verr)
		if err := env.SetInterrupt(false); err != nil {
			t.Fatal(err)
		}
	}
	if !c.write {
		// a failed reader may be renewed; Renew clears its own flag
		txn.Reset()
		if err := txn.Renew(); err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if n, err := Count(txn, dbi, All()); err != nil || n != uint64(len(m.keys)) {
			t.Fatalf("Count after Renew = %d, %v; model %d", n, err, len(m.keys))
		}
	}
}

// TestInterruptSignal: a real signal (SIGUSR1) received through os/signal
// sets the env's flag, which stops a walk and a copy on other goroutines.
func TestInterruptSignal(t *testing.T) {
	seed := countedSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	env, dbi, m := interruptFixture(t, rng, true)
	sigs := make(chan os.Signal, 1)
	defer close(sigs) // after Stop: no more sends
	signal.Notify(sigs, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	handled := make(chan error, 1)
	go func() {
		for range sigs {
			handled <- env.SetInterrupt(true)
		}
	}()
	for round := 0; round < 4; round++ {
		c := icases[0] // walk
		if round%2 == 1 {
			c = icases[3] // copy
		}
		txn, err := env.BeginTxn(nil, lmdb.Readonly)
		if err != nil {
			t.Fatal(err)
		}
		delay := randomDelay(rng)
		killed := make(chan error, 1)
		go func() {
			time.Sleep(delay)
			killed <- syscall.Kill(os.Getpid(), syscall.SIGUSR1)
		}()
		opErr := c.run(txn, dbi, m, rng)
		// the signal is sent and handled before anything can fail (after
		// signal.Stop a SIGUSR1 would end the process)
		if err := <-killed; err != nil {
			t.Fatal(err)
		}
		if err := <-handled; err != nil {
			t.Fatal(err)
		}
		wantEINTR(t, c.name+" stopped by SIGUSR1", opErr)
		_, again := txn.Get(dbi, []byte(ikey(1)))
		wantBadTxn(t, "Get after EINTR", again)
		txn.Abort()
		if err := env.SetInterrupt(false); err != nil {
			t.Fatal(err)
		}
		expectModel(t, env, "c", m)
		if err := env.Check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCancelOneTxn: cancelling one transaction's context stops it alone;
// readers on other goroutines and a writer run on and get the right
// answers.
func TestCancelOneTxn(t *testing.T) {
	seed := countedSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	env, dbi, m := interruptFixture(t, rng, true)
	var wdbi lmdb.DBI
	if err := env.Update(func(txn *lmdb.Txn) (err error) {
		wdbi, err = txn.OpenDBI("w", lmdb.Create|lmdb.Counted)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// the goroutines end before the env closes, even when the test fails
	shutdown := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(shutdown)
	errs := make(chan error, 16)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rr := rand.New(rand.NewSource(seed))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := icases[i%2] // walk once through, or count
				err := View(context.Background(), env, func(txn *lmdb.Txn) error {
					if c.name == "walk" {
						seq, errf := Scan(txn, dbi, All())
						n := 0
						for k := range seq {
							if string(k) != m.keys[n] {
								return fmt.Errorf("reader: pair %d is %q", n, k)
							}
							n++
						}
						if n != len(m.keys) {
							return fmt.Errorf("reader saw %d pairs, want %d", n, len(m.keys))
						}
						return errf()
					}
					lo, hi := ikey(rr.Intn(40000)), ikey(rr.Intn(40000))
					n, err := Count(txn, dbi, Between([]byte(lo), []byte(hi)).ExcludeHigh())
					if err == nil && n != m.countIn(lo, hi) {
						err = fmt.Errorf("reader: Count = %d, want %d", n, m.countIn(lo, hi))
					}
					// the writer's DB: every committed snapshot holds 0..n-1
					if err == nil {
						var w uint64
						if w, err = Count(txn, wdbi, All()); err == nil && w > 0 {
							_, err = txn.Get(wdbi, []byte(fmt.Sprintf("w%06d", w-1)))
						}
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}(rng.Int63())
	}
	writes := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ; ; writes++ {
			select {
			case <-stop:
				return
			default:
			}
			err := Update(context.Background(), env, func(txn *lmdb.Txn) error {
				return txn.Put(wdbi, []byte(fmt.Sprintf("w%06d", writes)), []byte("x"), 0)
			})
			if err != nil {
				errs <- err
				return
			}
		}
	}()

	for round := 0; round < 6; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		delay := randomDelay(rng)
		err := View(ctx, env, func(txn *lmdb.Txn) error {
			time.AfterFunc(delay, cancel)
			return icases[0].run(txn, dbi, m, rng)
		})
		cancel()
		if !errors.Is(err, context.Canceled) || !errors.Is(err, syscall.EINTR) {
			t.Fatalf("cancelled View: %v", err)
		}
	}
	// a cancelled writer: nothing of it is committed (other writes wait
	// for it, then go on)
	ctx, cancel := context.WithCancel(context.Background())
	delay := randomDelay(rng)
	err := Update(ctx, env, func(txn *lmdb.Txn) error {
		time.AfterFunc(delay, cancel)
		return icases[4].run(txn, dbi, m, rng)
	})
	cancel()
	if !errors.Is(err, context.Canceled) || !errors.Is(err, syscall.EINTR) {
		t.Fatalf("cancelled Update: %v", err)
	}
	shutdown()
	close(errs)
	for err := range errs {
		t.Fatalf("a concurrent txn failed: %v", err)
	}
	expectModel(t, env, "c", m)
	wm := newIModel()
	for i := 0; i < writes; i++ {
		wm.m[fmt.Sprintf("w%06d", i)] = "x"
	}
	wm.sort()
	expectModel(t, env, "w", wm)
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestContextHelpers: the edges of View/Update/RunTxn/CopyContext.
func TestContextHelpers(t *testing.T) {
	env := memEnv(t, 64<<20)
	var dbi lmdb.DBI
	// a context that never ends: plain commits
	if err := Update(context.Background(), env, func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenDBI("a", lmdb.Create); err != nil {
			return err
		}
		return txn.Put(dbi, []byte("k"), []byte("v1"), 0)
	}); err != nil {
		t.Fatal(err)
	}
	// already done: no transaction at all, the context's cause comes back
	done, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("shutting down")
	cancel(cause)
	called := false
	err := View(done, env, func(*lmdb.Txn) error { called = true; return nil })
	if called || err != cause {
		t.Fatalf("View on a done context: called=%v err=%v, want %v", called, err, cause)
	}
	// cancelled while fn runs, fn returns nil: no commit, an InterruptedError
	ctx, cancel2 := context.WithCancel(context.Background())
	err = Update(ctx, env, func(txn *lmdb.Txn) error {
		if err := txn.Put(dbi, []byte("k"), []byte("v2"), 0); err != nil {
			return err
		}
		cancel2()
		return nil // the interrupt is armed, but no page was visited since
	})
	var ie *InterruptedError
	if !errors.As(err, &ie) || !errors.Is(err, context.Canceled) || ie.Err != nil {
		t.Fatalf("Update cancelled in fn: %v", err)
	}
	if errors.Is(err, syscall.EINTR) {
		t.Fatalf("Update cancelled after its last operation reports EINTR: %v", err)
	}
	// fn's own error without cancellation passes unchanged, and aborts
	mine := errors.New("mine")
	if err := Update(context.Background(), env, func(txn *lmdb.Txn) error {
		txn.Put(dbi, []byte("k"), []byte("v3"), 0)
		return mine
	}); err != mine {
		t.Fatalf("Update: %v, want %v", err, mine)
	}
	if err := View(context.Background(), env, func(txn *lmdb.Txn) error {
		v, err := txn.Get(dbi, []byte("k"))
		if err == nil && string(v) != "v1" {
			err = fmt.Errorf("k = %q, want v1 (no other write committed)", v)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// a deadline (longer ones when the machine is too slow to begin the
	// txn before the first one passes)
	ran := false
	for d := time.Millisecond; !ran; d *= 2 {
		dctx, dcancel := context.WithTimeout(context.Background(), d)
		err = View(dctx, env, func(txn *lmdb.Txn) error {
			ran = true
			<-dctx.Done()
			for { // until the AfterFunc has set the flag
				if _, err := txn.Get(dbi, []byte("k")); err != nil {
					return err
				}
			}
		})
		dcancel()
		if !ran && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("View not run: %v", err)
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, syscall.EINTR) {
		t.Fatalf("View past its deadline: %v", err)
	}
	// CopyContext to a file and to a writer give the same bytes
	f, err := os.Create(filepath.Join(t.TempDir(), "copy.mdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := CopyContext(context.Background(), env, f, lmdb.CopyCompact); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := CopyContext(context.Background(), env, &buf, lmdb.CopyCompact); err != nil {
		t.Fatal(err)
	}
	fromFile, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if len(fromFile) == 0 || !bytes.Equal(fromFile, buf.Bytes()) {
		t.Fatalf("CopyContext: %d bytes to a file, %d to a writer, not the same", len(fromFile), buf.Len())
	}
	// a failing writer stops the copy with its own error
	werr := errors.New("disk on fire")
	if err := CopyContext(context.Background(), env, failWriter{werr}, 0); err != werr {
		t.Fatalf("CopyContext to a failing writer: %v, want %v", err, werr)
	}
	// a cancelled copy
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if err := CopyContext(cctx, env, io.Discard, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("CopyContext on a cancelled context: %v", err)
	}
	// a cancelled Persist leaves nothing behind
	pdir := t.TempDir()
	if err := PersistContext(cctx, env, pdir, true); !errors.Is(err, context.Canceled) {
		t.Fatalf("PersistContext on a cancelled context: %v", err)
	}
	if names := dirNames(t, pdir); len(names) != 0 {
		t.Fatalf("a cancelled Persist left %v", names)
	}
	if err := Persist(env, filepath.Join(pdir, "missing"), true); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Persist into a missing directory: %v", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

// TestCopyContextInterrupted: a copy is stopped by its context with EINTR.
// The writer cancels the context well into the copy and then slows down, so
// that the context's AfterFunc gets to run before the copy is complete;
// should the copy still win the race, the result must say so (the context's
// error without EINTR) and the attempt is repeated.
func TestCopyContextInterrupted(t *testing.T) {
	seed := countedSeed(t)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	env, _, _ := interruptFixture(t, rng, true)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithCancel(context.Background())
		got := 0
		w := writerFunc(func(p []byte) (int, error) {
			got += len(p)
			if got > 64<<10 {
				cancel()
				time.Sleep(100 * time.Microsecond)
			}
			return len(p), nil
		})
		err := CopyContext(ctx, env, w, 0)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("CopyContext cancelled midway: %v", err)
		}
		if errors.Is(err, syscall.EINTR) {
			break
		}
		var ie *InterruptedError
		if !errors.As(err, &ie) || ie.Err != nil {
			t.Fatalf("CopyContext cancelled midway: %v", err)
		}
		if attempt == 20 {
			t.Fatalf("20 copies all completed after their context was cancelled")
		}
	}
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// ---- in-memory environments ----

// dirNames lists a directory.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// memKinds are the database kinds the persistence tests cover.
var memKinds = []struct {
	name  string
	flags uint
	dups  int // values per key
}{
	{"plain", 0, 1},
	{"counted-prefix", lmdb.Counted | lmdb.PrefixCompression, 1},
	{"dupsort", lmdb.DupSort, 300},
	{"dupsort-counted", lmdb.DupSort | lmdb.Counted | lmdb.PrefixCompression, 300},
}

type kvs []cpair

// fillKind stores n keys (dups values each) in a DB of that kind.
func fillKind(t *testing.T, env *lmdb.Env, name string, flags uint, n, dups int) kvs {
	t.Helper()
	var all kvs
	err := env.Update(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(name, lmdb.Create|flags)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			for d := 0; d < dups; d++ {
				k, v := fmt.Sprintf("%s/%06d", name, i), fmt.Sprintf("value-%04d-%d", d, i*31)
				if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
					return err
				}
				all = append(all, cpair{k, v})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("fill %s: %v", name, err)
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].k < all[j].k || (all[i].k == all[j].k && all[i].v < all[j].v)
	})
	return all
}

// readKind reads every pair of a DB, checks its flags and, when counted,
// its count.
func readKind(t *testing.T, env *lmdb.Env, name string, flags uint) kvs {
	t.Helper()
	var all kvs
	err := env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(name, 0)
		if err != nil {
			return err
		}
		if f, err := txn.Flags(dbi); err != nil || f&flags != flags {
			return fmt.Errorf("flags %#x, %v; want %#x", f, err, flags)
		}
		seq, errf := Scan(txn, dbi, All())
		for k, v := range seq {
			all = append(all, cpair{string(k), string(v)})
		}
		if err := errf(); err != nil {
			return err
		}
		if flags&lmdb.Counted != 0 {
			n, err := Count(txn, dbi, All())
			if err != nil || n != uint64(len(all)) {
				return fmt.Errorf("Count = %d, %v; scan found %d", n, err, len(all))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	return all
}

func sameKVs(t *testing.T, what string, got, want kvs) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d pairs, want %d", what, len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: pair %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

// TestInMemoryNoFiles: an in-memory env, used fully, creates nothing in the
// working directory nor in the temporary directory.
func TestInMemoryNoFiles(t *testing.T) {
	work, tmp := t.TempDir(), t.TempDir()
	t.Chdir(work)
	t.Setenv("TMPDIR", tmp)
	if os.TempDir() != tmp {
		t.Fatalf("TempDir %q, want %q", os.TempDir(), tmp)
	}
	env, err := OpenInMemory(InMemoryOptions{MapSize: 32 << 20, MaxDBs: 4})
	if err != nil {
		t.Fatal(err)
	}
	want := fillKind(t, env, "a", lmdb.Counted, 2000, 1)
	sameKVs(t, "in memory", readKind(t, env, "a", lmdb.Counted), want)
	if err := env.Sync(true); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if p, err := env.Path(); err != nil || p != "" {
		t.Fatalf("Path = %q, %v", p, err)
	}
	if _, err := env.FD(); err == nil {
		t.Fatal("FD of an in-memory env succeeded")
	}
	env.Close()
	for _, d := range []string{work, tmp} {
		if names := dirNames(t, d); len(names) != 0 {
			t.Fatalf("files appeared in %s: %v", d, names)
		}
	}
}

// TestPersistAndLoad: every DB kind survives in-memory -> Persist -> file
// env -> LoadInMemory, and the file is left as it was.
func TestPersistAndLoad(t *testing.T) {
	mem := memEnv(t, 128<<20)
	want := map[string]kvs{}
	for _, k := range memKinds {
		n := 3000
		if k.dups > 1 {
			n = 40
		}
		want[k.name] = fillKind(t, mem, k.name, k.flags, n, k.dups)
	}
	for _, compact := range []bool{false, true} {
		dir := t.TempDir()
		if err := Persist(mem, dir, compact); err != nil {
			t.Fatalf("Persist(compact=%v): %v", compact, err)
		}
		if names := dirNames(t, dir); len(names) != 1 || names[0] != DataFileName {
			t.Fatalf("Persist left %v, want only %s", names, DataFileName)
		}
		// never over an existing data file
		before, err := os.ReadFile(filepath.Join(dir, DataFileName))
		if err != nil {
			t.Fatal(err)
		}
		if err := Persist(mem, dir, compact); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("Persist over data.mdb: %v, want fs.ErrExist", err)
		}
		if names := dirNames(t, dir); len(names) != 1 {
			t.Fatalf("a refused Persist left %v", names)
		}

		fenv, err := lmdb.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		fenv.SetMaxDBs(8)
		if err := fenv.Open(dir, lmdb.Readonly, 0o644); err != nil {
			t.Fatalf("open the persisted env: %v", err)
		}
		for _, k := range memKinds {
			sameKVs(t, "persisted "+k.name, readKind(t, fenv, k.name, k.flags), want[k.name])
		}
		if err := fenv.Check(); err != nil {
			t.Fatal(err)
		}
		fenv.Close()

		// from the directory and from the file itself
		for _, path := range []string{dir, filepath.Join(dir, DataFileName)} {
			back, err := LoadInMemory(path, InMemoryOptions{MaxDBs: 8})
			if err != nil {
				t.Fatalf("LoadInMemory(%s): %v", path, err)
			}
			if f, _ := back.Flags(); f&lmdb.InMemory == 0 {
				t.Fatalf("LoadInMemory gave flags %#x", f)
			}
			for _, k := range memKinds {
				sameKVs(t, "loaded "+k.name, readKind(t, back, k.name, k.flags), want[k.name])
			}
			if err := back.Check(); err != nil {
				t.Fatal(err)
			}
			// changes stay in memory
			fillKind(t, back, "extra", 0, 10, 1)
			back.Close()
		}
		after, err := os.ReadFile(filepath.Join(dir, DataFileName))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Fatal("LoadInMemory modified the data file")
		}
	}
	// a file env persists too, and a loaded env is a clone, not a view
	src := countedEnv(t)
	w := fillKind(t, src, "f", lmdb.Counted, 500, 1)
	dir := t.TempDir()
	if err := Persist(src, dir, true); err != nil {
		t.Fatal(err)
	}
	back, err := LoadInMemory(dir, InMemoryOptions{MaxDBs: 4, MapSize: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	fillKind(t, src, "g", 0, 5, 1)
	sameKVs(t, "file env persisted and loaded", readKind(t, back, "f", lmdb.Counted), w)
	if err := back.View(func(txn *lmdb.Txn) error { _, err := txn.OpenDBI("g", 0); return err }); !lmdb.IsNotFound(err) {
		t.Fatalf("a DB created after the copy is in the loaded env: %v", err)
	}
	if _, err := LoadInMemory(filepath.Join(dir, "missing"), InMemoryOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadInMemory of a missing path: %v", err)
	}
}

// TestInMemoryGrowth: a full map is MapFull; SetMapSize grows the env in
// place, keeping its contents.
func TestInMemoryGrowth(t *testing.T) {
	env := memEnv(t, 1<<20)
	val := bytes.Repeat([]byte("g"), 500)
	put := func(from, to int) error {
		return env.Update(func(txn *lmdb.Txn) error {
			dbi, err := txn.OpenDBI("g", lmdb.Create|lmdb.Counted)
			if err != nil {
				return err
			}
			for i := from; i < to; i++ {
				if err := txn.Put(dbi, []byte(ikey(i)), val, 0); err != nil {
					return err
				}
			}
			return nil
		})
	}
	n := 0
	var err error
	for ; err == nil; n += 100 {
		err = put(n, n+100)
	}
	n -= 100 // the batch that failed is not committed
	if !lmdb.IsMapFull(err) {
		t.Fatalf("filling a 1 MiB map: %v, want MapFull", err)
	}
	if n == 0 {
		t.Fatal("nothing fit in 1 MiB")
	}
	if err := env.SetMapSize(64 << 20); err != nil {
		t.Fatalf("SetMapSize: %v", err)
	}
	if info, err := env.Info(); err != nil || info.MapSize != 64<<20 {
		t.Fatalf("Info after growth: %+v, %v", info, err)
	}
	if err := put(n, n+10000); err != nil {
		t.Fatalf("after growth: %v", err)
	}
	got := readKind(t, env, "g", lmdb.Counted)
	if len(got) != n+10000 {
		t.Fatalf("%d pairs after growth, want %d", len(got), n+10000)
	}
	for i, p := range got {
		if p.k != ikey(i) || p.v != string(val) {
			t.Fatalf("pair %d is %q", i, p.k)
		}
	}
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestInMemoryConcurrent: readers on several goroutines beside one writer
// always see whole snapshots (run with -race).
func TestInMemoryConcurrent(t *testing.T) {
	env := memEnv(t, 64<<20)
	var dbi lmdb.DBI
	if err := env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.OpenDBI("c", lmdb.Create|lmdb.Counted)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const rounds, per = 200, 50
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	finished := make(chan struct{})
	shutdown := sync.OnceFunc(func() { close(finished); wg.Wait() })
	t.Cleanup(shutdown) // before the env closes, even when the test fails
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-finished:
					return
				default:
				}
				err := env.View(func(txn *lmdb.Txn) error {
					// each commit adds per keys and sets "n" to the total
					n := 0
					if v, err := txn.Get(dbi, []byte("n")); err == nil {
						fmt.Sscan(string(v), &n)
					} else if !lmdb.IsNotFound(err) {
						return err
					}
					c, err := Count(txn, dbi, All())
					if err != nil {
						return err
					}
					want := uint64(n)
					if n > 0 {
						want++ // "n" itself
					}
					if c != want {
						return fmt.Errorf("snapshot with n=%d holds %d entries", n, c)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < rounds; i++ {
		err := env.Update(func(txn *lmdb.Txn) error {
			for j := 0; j < per; j++ {
				if err := txn.Put(dbi, []byte(ikey(i*per+j)), []byte("x"), 0); err != nil {
					return err
				}
			}
			return txn.Put(dbi, []byte("n"), []byte(fmt.Sprint((i+1)*per)), 0)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	shutdown()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
}
