package lmdb

import (
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
