package lmdb

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Two goroutines writing through one write txn (cdlmdb/guard.c): a call
// that overlaps the other goroutine's call gets EBUSY and the txn can no
// longer commit. Every round therefore either commits both goroutines'
// writes in full or fails with an error and commits nothing, and the file
// always passes the checker.
func TestTwoGoroutinesOneWriteTxn(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "shared", Create)
	const perSide = 200
	rounds := 150
	if testing.Short() {
		rounds = 30
	}
	var overlapped, apart int
	for r := 0; r < rounds; r++ {
		err := env.Update(func(txn *Txn) error {
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for side := 0; side < 2; side++ {
				wg.Add(1)
				go func(side int) {
					defer wg.Done()
					for i := 0; i < perSide; i++ {
						k := []byte(fmt.Sprintf("r%04d-%d-%04d", r, side, i))
						if err := txn.Put(dbi, k, k, 0); err != nil && errs[side] == nil {
							errs[side] = err
						}
						if side == 1 && i%16 == 0 {
							// reads and cursors through the same txn
							if _, err := txn.Get(dbi, k); err != nil && !IsNotFound(err) && errs[side] == nil {
								errs[side] = err
							}
						}
					}
				}(side)
			}
			wg.Wait()
			return errors.Join(errs...)
		})
		got := countPrefix(t, env, dbi, fmt.Sprintf("r%04d-", r))
		switch {
		case err == nil:
			apart++
			if got != 2*perSide {
				t.Fatalf("round %d committed with %d of %d writes", r, got, 2*perSide)
			}
		default:
			overlapped++
			if !errors.Is(err, syscall.EBUSY) && !IsErrno(err, BadTxn) {
				t.Fatalf("round %d: unexpected error %v", r, err)
			}
			if got != 0 {
				t.Fatalf("round %d failed (%v) but %d writes are in the file", r, err, got)
			}
		}
	}
	t.Logf("%d rounds overlapped and failed, %d ran apart and committed", overlapped, apart)
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
	// the writer lock is free and the env writes on
	mustUpdate(t, env, func(txn *Txn) error { return txn.Put(dbi, []byte("after"), []byte("x"), 0) })
}

// A cursor of a write txn used by a second goroutine while the first is
// writing: the same rule (the cursor's calls are calls into its txn).
func TestTwoGoroutinesOneWriteCursor(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "cur", Create)
	fill(t, env, dbi, 500)
	want := 0
	for r := 0; r < 40; r++ {
		err := env.Update(func(txn *Txn) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			var wg sync.WaitGroup
			var walkErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				for pass := 0; pass < 3; pass++ {
					for _, _, err := cur.Get(nil, nil, First); err == nil; _, _, err = cur.Get(nil, nil, Next) {
					}
				}
				// the loop above ends on NotFound or on the refusal
				if _, _, err := cur.Get(nil, nil, First); err != nil {
					walkErr = err
				}
			}()
			var putErr error
			for i := 0; i < 200 && putErr == nil; i++ {
				putErr = txn.Put(dbi, kv("new", r*1000+i), []byte("v"), 0)
			}
			wg.Wait()
			return errors.Join(walkErr, putErr)
		})
		if err == nil {
			want += 200
		}
		if got := countPrefix(t, env, dbi, "new"); got != want {
			t.Fatalf("round %d (error %v): %d new entries, want %d", r, err, got, want)
		}
		if err != nil && !errors.Is(err, syscall.EBUSY) && !IsErrno(err, BadTxn) {
			t.Fatalf("round %d: unexpected error %v", r, err)
		}
	}
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
}

// The refusal names the misuse and keeps the code; the later commit
// reports BadTxn with EBUSY as its cause.
func TestSharedTxnErrors(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "e", Create)
	txn := beginWrite(t, env)
	defer txn.Abort()
	// Overlap for certain: keep putting from two goroutines until one
	// call is refused.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var wg sync.WaitGroup
	refused := make(chan error, 2)
	stop := make(chan struct{})
	for side := 0; side < 2; side++ {
		wg.Add(1)
		go func(side int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := txn.Put(dbi, kv(fmt.Sprint(side), i%5000), []byte("v"), 0); err != nil {
					refused <- err
					return
				}
			}
		}(side)
	}
	var first error
	select {
	case first = <-refused:
	case <-time.After(time.Minute):
		t.Fatal("two goroutines putting for a minute never overlapped")
	}
	close(stop)
	wg.Wait()
	if !errors.Is(first, syscall.EBUSY) && !IsErrno(first, BadTxn) {
		t.Fatalf("refusal: %v", first)
	}
	if err := txn.Put(dbi, []byte("late"), []byte("v"), 0); !IsErrno(err, BadTxn) {
		t.Fatalf("put after the refusal: %v, want BadTxn", err)
	}
	err := txn.Commit()
	if !IsErrno(err, BadTxn) || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("commit: %v, want BadTxn caused by EBUSY", err)
	}
	var op *OpError
	if errors.As(first, &op) && errors.Is(first, syscall.EBUSY) && !strings.Contains(first.Error(), "goroutine") {
		t.Fatalf("the refusal does not name the misuse: %v", first)
	}
	if n := countPrefix(t, env, dbi, ""); n != 0 {
		t.Fatalf("%d entries committed by a failed txn", n)
	}
}

func countPrefix(t *testing.T, env *Env, dbi DBI, prefix string) int {
	t.Helper()
	n := 0
	mustView(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		p := []byte(prefix)
		var k []byte
		if len(p) > 0 {
			k, _, err = cur.Get(p, nil, SetRange)
		} else {
			k, _, err = cur.Get(nil, nil, First)
		}
		for ; err == nil; k, _, err = cur.Get(nil, nil, Next) {
			if len(k) < len(p) || string(k[:len(p)]) != prefix {
				break
			}
			n++
		}
		if err != nil && !IsNotFound(err) {
			return err
		}
		return nil
	})
	return n
}

// Every call that copies out of a write txn after the engine returned
// counts as exactly one call into the txn (mdb_txn_calls): a call that
// counted twice would fail every such copy, one that counted zero times
// would miss an intruder. The count lives at offset 0, where calls() reads
// it without a cgo call.
func TestWriteTxnCallCount(t *testing.T) {
	env := openEnv(t, 0)
	plain := openDB(t, env, "plain", Create|Counted)
	dups := openDB(t, env, "dups", Create|DupSort)
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < 300; i++ {
			if err := txn.Put(plain, kv("k", i), kv("v", i), 0); err != nil {
				return err
			}
			if err := txn.Put(dups, kv("k", i%7), kv("v", i), 0); err != nil {
				return err
			}
		}
		return nil
	})
	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(plain)
		if err != nil {
			return err
		}
		defer cur.Close()
		dcur, err := txn.OpenCursor(dups)
		if err != nil {
			return err
		}
		defer dcur.Close()
		steps := []struct {
			name string
			call func() error
		}{
			{"Get", func() error { _, err := txn.Get(plain, kv("k", 5)); return err }},
			{"Put", func() error { return txn.Put(plain, kv("k", 500), []byte("x"), 0) }},
			{"Cursor.Get Set", func() error { _, _, err := cur.Get(kv("k", 9), nil, Set); return err }},
			{"Cursor.Get Next", func() error { _, _, err := cur.Get(nil, nil, Next); return err }},
			{"GetRank", func() error { _, _, err := txn.GetRank(plain, 17); return err }},
			{"Cursor.GetRank", func() error { _, _, err := cur.GetRank(18); return err }},
			{"GetBatch", func() error {
				_, _, err := cur.GetBatch(kv("k", 1), SetRange, 20, nil, 0, nil, nil)
				return err
			}},
			{"GetMany", func() error {
				_, _, err := cur.GetMany([][]byte{kv("k", 2), kv("k", 3)}, nil)
				return err
			}},
			{"ListDup", func() error {
				if _, _, err := dcur.Get(kv("k", 3), nil, Set); err != nil {
					return err
				}
				_, err := dcur.ListDupInto(nil)
				return err
			}},
		}
		for _, s := range steps {
			for _, raw := range []bool{false, true} {
				txn.RawRead = raw
				before := txn.calls()
				if err := s.call(); err != nil {
					t.Fatalf("%s (RawRead %v): %v", s.name, raw, err)
				}
				want := before + 1
				if s.name == "ListDup" {
					want++ // the positioning Get is a call of its own
					if !raw {
						// a cursor's first ListDupInto reads whether
						// its DBI is DupFixed (Txn.Flags), once
						want++
					}
				}
				if got := txn.calls(); got != want {
					t.Fatalf("%s (RawRead %v): count %d -> %d, want %d", s.name, raw, before, got, want)
				}
			}
		}
		txn.RawRead = false
		return nil
	})
}

// A goroutine that got into the txn while another was copying a result out
// (after the engine call, before the copy ended) fails the txn: the copier
// gets EBUSY instead of a possibly torn copy, and the commit reports BadTxn
// with cause EBUSY. The intrusion is staged through calls(): read the count,
// make the call, let another goroutine put, then end the copy.
func TestCopyOverlapFailsTxn(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "c", Create)
	mustUpdate(t, env, func(txn *Txn) error { return txn.Put(dbi, []byte("a"), []byte("old"), 0) })

	txn := beginWrite(t, env)
	s0 := txn.calls()
	if _, err := txn.Get(dbi, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := txn.copiedAlone("mdb_get", s0); err != nil {
		t.Fatalf("no intruder: %v", err)
	}
	s0 = txn.calls()
	if _, err := txn.Get(dbi, []byte("a")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- txn.Put(dbi, []byte("b"), []byte("new"), 0) }()
	if err := <-done; err != nil {
		t.Fatalf("the intruder's put (no overlap inside the engine): %v", err)
	}
	err := txn.copiedAlone("mdb_get", s0)
	if !errors.Is(err, syscall.EBUSY) || !strings.Contains(err.Error(), "goroutine") {
		t.Fatalf("copy overlapped by a put: %v, want EBUSY naming the misuse", err)
	}
	if _, err := txn.Get(dbi, []byte("a")); !IsErrno(err, BadTxn) {
		t.Fatalf("get after the overlap: %v, want BadTxn", err)
	}
	if err := txn.Commit(); !IsErrno(err, BadTxn) || !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("commit: %v, want BadTxn caused by EBUSY", err)
	}
	mustView(t, env, func(r *Txn) error {
		if _, err := r.Get(dbi, []byte("b")); !IsNotFound(err) {
			t.Fatalf("the failed txn's put is visible: %v", err)
		}
		return nil
	})
}

// One goroutine rewrites a large value with one byte value after another
// while a second one reads it back through copying Gets on the same write
// txn: every Get either fails (EBUSY, then BadTxn) or returns a value whose
// bytes all agree; a torn copy never comes back as a success.
func TestSharedTxnNoTornCopy(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "t", Create)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const size = 256 << 10
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	for r := 0; r < rounds; r++ {
		_ = env.Update(func(txn *Txn) error {
			if err := txn.Put(dbi, []byte("big"), bytes.Repeat([]byte{'a'}, size), 0); err != nil {
				return err
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := byte('b'); ; b = 'a' + (b-'a'+1)%26 {
					select {
					case <-stop:
						return
					default:
					}
					if txn.Put(dbi, []byte("big"), bytes.Repeat([]byte{b}, size), 0) != nil {
						return
					}
				}
			}()
			for i := 0; i < 200; i++ {
				v, err := txn.Get(dbi, []byte("big"))
				if err != nil {
					break
				}
				if len(v) != size || bytes.Count(v, v[:1]) != size {
					close(stop)
					wg.Wait()
					t.Fatalf("round %d: a successful Get returned a torn value", r)
				}
			}
			close(stop)
			wg.Wait()
			return errors.New("discard")
		})
	}
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
}
