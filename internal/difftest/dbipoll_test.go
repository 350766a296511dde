//go:build !dlmdb_stockonly

package difftest

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Our engine only: stock LMDB's handle table is not safe for readers that
// register handles (opening a DB of an old snapshot that a writer dropped)
// while a writer closes and reuses slots; with stock as the subject this
// test sees EINVAL from handles it has just opened.

// TestDBIHandlePolling is the client of issue 12: goroutines poll for a DB
// that another goroutine creates (open a read txn, OpenDBI, not-found means
// "not yet", then read it), while the writer also creates, fills and drops
// other DBs.  No answer may be MDB_BAD_DBI or a wrong value: a reader that
// finds the DB sees every key the creating commit wrote.  Pooled readers
// are reset and renewed across the commits.
func TestDBIHandlePolling(t *testing.T) { dbiPolling(t, subject) }

// dbiPolling is TestDBIHandlePolling with the engine given (an in-memory one
// in TestDBIHandlePollingInMemory).
func dbiPolling(t *testing.T, eng engine) {
	rounds := 40 * testScale(t)
	// slots: a reader that commits keeps a handle it registered (as in
	// stock), also one of a DB dropped before it opened it, which then
	// holds its slot for good: room for one such per round
	env, err := eng.openEnv(t.TempDir(), envOpts{mapSize: 32 << 20, maxDBs: 32 + 2*rounds})
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	var round atomic.Int64
	round.Store(-1)
	var wg sync.WaitGroup
	var failed atomic.Bool
	var found atomic.Int64
	errc := make(chan string, 16)
	report := func(format string, args ...any) {
		if failed.CompareAndSwap(false, true) {
			errc <- fmt.Sprintf(format, args...)
		}
	}
	// check: the DB of round r in txn holds keys 0..9 with value r
	check := func(txn tTxn, name string, r int64) bool {
		d, err := txn.openDBI(name, 0)
		if code := eng.code(err); code == eNotFound {
			return false
		} else if err != nil {
			report("open %s: %v", name, err)
			return false
		}
		for k := 0; k < 10; k++ {
			v, err := txn.get(d, []byte{byte('0' + k)})
			if err != nil || string(v) != fmt.Sprint(r) {
				report("round %d: get %s/%d: %q %v", r, name, k, v, err)
				return false
			}
		}
		st, err := txn.stat(d)
		if err != nil || st.items != 10 {
			report("round %d: stat %s: %v %v", r, name, st, err)
		}
		return true
	}
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var pooled tTxn // reset between polls, renewed for the next
			for !failed.Load() {
				r := round.Load()
				if r >= int64(rounds) {
					break
				}
				if r < 0 {
					runtime.Gosched()
					continue
				}
				var txn tTxn
				var err error
				if g == 0 && pooled != nil {
					if err := pooled.renew(); err != nil {
						report("renew: %v", err)
						return
					}
					txn = pooled
				} else if txn, err = env.begin(nil, fReadonly); err != nil {
					report("begin: %v", err)
					return
				}
				// the round's DB, and the previous one (dropped meanwhile, or not)
				if check(txn, fmt.Sprintf("poll%d", r), r) {
					found.Add(1)
				}
				// the previous one, dropped meanwhile or not (not by the
				// reader that commits, which would keep its slot)
				if r > 0 && g != 1 {
					check(txn, fmt.Sprintf("poll%d", r-1), r-1)
				}
				if g == 0 {
					txn.reset()
					pooled = txn
				} else if g == 1 {
					txn.commit() // keeps the handles it opened, as stock
				} else {
					txn.abort()
				}
			}
			if pooled != nil {
				pooled.abort()
			}
		}(g)
	}
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for r := 0; r < rounds && !failed.Load(); r++ {
			round.Store(int64(r))
			txn, err := env.begin(nil, 0)
			if err != nil {
				report("begin write: %v", err)
				break
			}
			name := fmt.Sprintf("poll%d", r)
			d, err := txn.openDBI(name, fCreate)
			for k := 0; err == nil && k < 10; k++ {
				err = txn.put(d, []byte{byte('0' + k)}, []byte(fmt.Sprint(r)), 0)
			}
			if r >= 2 && err == nil { // drop the DB of two rounds ago, if it was made
				od, oerr := txn.openDBI(fmt.Sprintf("poll%d", r-2), 0)
				if oerr == nil {
					err = txn.drop(od, true)
				} else if eng.code(oerr) != eNotFound {
					err = oerr
				}
			}
			if err == nil && r%5 == 4 { // an aborted create, nobody may see it
				txn.abort()
				continue
			}
			if err == nil {
				err = txn.commit()
			} else {
				txn.abort()
			}
			if err != nil {
				report("round %d: %v", r, err)
			}
			for i := 0; i < 200 && !failed.Load(); i++ {
				runtime.Gosched() // let the pollers see this round
			}
		}
		round.Store(int64(rounds))
	}()
	wg.Wait()
	close(errc)
	for msg := range errc {
		t.Fatal(msg)
	}
	if found.Load() == 0 {
		t.Fatal("the pollers never found a DB")
	}
	t.Logf("%d rounds, %d polls found the round's DB", rounds, found.Load())
}
