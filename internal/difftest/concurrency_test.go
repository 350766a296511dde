package difftest

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Concurrency: readers must always see a consistent snapshot while writers
// (goroutines in this process, and another process) commit. The invariants:
// the balances in "acct" always sum to accounts*initial, and the counter
// "gen" in "meta" equals the number of entries in "log" (each committed write
// txn bumps both).

const (
	accounts       = 64
	initialBalance = 1000
)

func init() {
	childRoles["bank-writer"] = bankChild
}

func bankOpts() envOpts { return envOpts{mapSize: 64 << 20, maxDBs: 4} }

type bankDBIs struct{ acct, meta, log uint32 }

func bankOpen(txn tTxn, flags uint) (bankDBIs, error) {
	var d bankDBIs
	var err error
	if d.acct, err = txn.openDBI("acct", flags); err != nil {
		return d, err
	}
	if d.meta, err = txn.openDBI("meta", flags); err != nil {
		return d, err
	}
	d.log, err = txn.openDBI("log", flags)
	return d, err
}

func u64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func acctKey(i int) []byte { return []byte(fmt.Sprintf("acct%03d", i)) }

func bankInit(t *testing.T, dir string) {
	env, err := subject.openEnv(dir, bankOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	bankInitEnv(t, env)
}

// bankInitEnv creates the bank's DBs and accounts in env.
func bankInitEnv(t *testing.T, env tEnv) {
	runtime.LockOSThread() // the write txn must end on the thread that began it
	defer runtime.UnlockOSThread()
	txn, err := env.begin(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := bankOpen(txn, fCreate)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < accounts; i++ {
		if err := txn.put(d.acct, acctKey(i), u64(initialBalance), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.put(d.meta, []byte("gen"), u64(0), 0); err != nil {
		t.Fatal(err)
	}
	if err := txn.commit(); err != nil {
		t.Fatal(err)
	}
}

// bankTransfer moves a random amount between accounts inside txn.
func bankTransfer(txn tTxn, d bankDBIs, r *rand.Rand) error {
	a, b := r.Intn(accounts), r.Intn(accounts)
	va, err := txn.get(d.acct, acctKey(a))
	if err != nil {
		return err
	}
	ba := binary.LittleEndian.Uint64(va)
	amt := uint64(r.Intn(int(ba) + 1))
	if err := txn.put(d.acct, acctKey(a), u64(ba-amt), 0); err != nil {
		return err
	}
	vb, err := txn.get(d.acct, acctKey(b))
	if err != nil {
		return err
	}
	return txn.put(d.acct, acctKey(b), u64(binary.LittleEndian.Uint64(vb)+amt), 0)
}

// bankWrite runs one write txn: transfers, maybe a nested txn that is
// aborted, and the gen/log bump. With abort set the whole txn is abandoned.
// tag names the writer in the log value.
func bankWrite(env tEnv, d bankDBIs, r *rand.Rand, tag string, abort bool) error {
	txn, err := env.begin(nil, 0)
	if err != nil {
		return err
	}
	for i := 0; i < 1+r.Intn(5); i++ {
		if err := bankTransfer(txn, d, r); err != nil {
			txn.abort()
			return err
		}
	}
	if r.Intn(4) == 0 {
		child, err := env.begin(txn, 0)
		if err != nil {
			txn.abort()
			return err
		}
		// a child that breaks the invariant and is aborted
		if err := child.put(d.acct, acctKey(0), u64(1<<40), 0); err != nil {
			child.abort()
			txn.abort()
			return err
		}
		child.abort()
	}
	gv, err := txn.get(d.meta, []byte("gen"))
	if err != nil {
		txn.abort()
		return err
	}
	gen := binary.LittleEndian.Uint64(gv) + 1
	if err := txn.put(d.meta, []byte("gen"), u64(gen), 0); err != nil {
		txn.abort()
		return err
	}
	if err := txn.put(d.log, []byte(fmt.Sprintf("%010d", gen)), []byte(tag), fNoOverwrite); err != nil {
		txn.abort()
		return err
	}
	if abort {
		txn.abort()
		return nil
	}
	return txn.commit()
}

// bankCheck verifies the invariants in one read snapshot; returns gen.
func bankCheck(env tEnv, d bankDBIs) (uint64, error) { return bankCheckWith(subject, env, d) }

func bankCheckWith(eng engine, env tEnv, d bankDBIs) (uint64, error) {
	txn, err := env.begin(nil, fReadonly)
	if err != nil {
		return 0, err
	}
	defer txn.abort()
	return bankCheckTxn(eng, txn, d)
}

// bankCheckTxn verifies the invariants in the snapshot of txn; returns gen.
func bankCheckTxn(eng engine, txn tTxn, d bankDBIs) (uint64, error) {
	sum := func() (uint64, int, error) {
		c, err := txn.cursor(d.acct)
		if err != nil {
			return 0, 0, err
		}
		defer c.close()
		var s uint64
		n := 0
		for op := cFirst; ; op = cNext {
			_, v, err := c.get(nil, nil, op)
			if eng.code(err) == eNotFound {
				return s, n, nil
			}
			if err != nil {
				return 0, 0, err
			}
			s += binary.LittleEndian.Uint64(v)
			n++
		}
	}
	s1, n, err := sum()
	if err != nil {
		return 0, err
	}
	if s1 != accounts*initialBalance || n != accounts {
		return 0, fmt.Errorf("snapshot sees %d accounts summing to %d, want %d summing to %d",
			n, s1, accounts, accounts*initialBalance)
	}
	gv, err := txn.get(d.meta, []byte("gen"))
	if err != nil {
		return 0, err
	}
	gen := binary.LittleEndian.Uint64(gv)
	st, err := txn.stat(d.log)
	if err != nil {
		return 0, err
	}
	if st.items != gen {
		return 0, fmt.Errorf("snapshot sees gen %d but %d log entries", gen, st.items)
	}
	if s2, _, err := sum(); err != nil || s2 != s1 {
		return 0, fmt.Errorf("second scan in one snapshot: %d, %v", s2, err)
	}
	return gen, nil
}

func TestConcurrentReadersWriter(t *testing.T) {
	dir := t.TempDir()
	bankInit(t, dir)
	env, err := subject.openEnv(dir, bankOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	concurrentReadersWriter(t, subject, env)
}

// concurrentReadersWriter: one writer goroutine commits (and aborts) bank
// txns on env, initialised by bankInit, while reader goroutines check that
// every snapshot they see holds whole commits only: readers 0 and 3 begin
// a fresh read txn per check, reader 1 keeps one txn that it resets and
// renews between checks (a pooled reader), reader 2 holds each snapshot
// over many of the writer's commits and checks that it does not change.
func concurrentReadersWriter(t *testing.T, eng engine, env tEnv) {
	var d bankDBIs
	func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		txn, err := env.begin(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if d, err = bankOpen(txn, 0); err != nil {
			t.Fatal(err)
		}
		if err := txn.commit(); err != nil {
			t.Fatal(err)
		}
	}()
	// a snapshot held over the whole run: it must end as it began
	held, err := env.begin(nil, fReadonly)
	if err != nil {
		t.Fatal(err)
	}
	defer held.abort()
	gen0, err := bankCheckTxn(eng, held, d)
	if err != nil {
		t.Fatal(err)
	}
	seed := masterSeed(t)
	writes := 1500 * testScale(t)
	var done atomic.Bool
	var wg sync.WaitGroup
	var committed int
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < writes; i++ {
			abort := r.Intn(8) == 0
			if werr = bankWrite(env, d, r, "w", abort); werr != nil {
				return
			}
			if !abort {
				committed++
			}
		}
	}()
	const readers = 4
	checks := make([]int, readers)
	errs := make([]error, readers)
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var last uint64
			var pooled tTxn
			defer func() {
				if pooled != nil {
					pooled.abort()
				}
			}()
			for {
				finished := done.Load()
				var gen uint64
				var err error
				switch i {
				case 1:
					gen, pooled, err = pooledCheck(eng, env, pooled, d)
				case 2:
					gen, err = heldCheck(eng, env, d, &done)
				default:
					gen, err = bankCheckWith(eng, env, d)
				}
				if err != nil {
					errs[i] = err
					return
				}
				if gen < last {
					errs[i] = fmt.Errorf("gen went backwards: %d after %d", gen, last)
					return
				}
				last = gen
				checks[i]++
				if finished {
					return
				}
			}
		}(i)
	}
	wg.Wait()
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("reader %d: %v", i, err)
		}
	}
	gen, err := bankCheckWith(eng, env, d)
	if err != nil {
		t.Fatal(err)
	}
	if gen != uint64(committed) {
		t.Errorf("final gen %d, writer committed %d", gen, committed)
	}
	if g, err := bankCheckTxn(eng, held, d); err != nil || g != gen0 {
		t.Errorf("the snapshot held over the run: gen %d, %v; want gen %d as at its start", g, err, gen0)
	}
	for i := 0; i < accounts; i++ {
		if v, err := held.get(d.acct, acctKey(i)); err != nil || binary.LittleEndian.Uint64(v) != initialBalance {
			t.Fatalf("the snapshot held over the run: account %d = %x, %v; want %d", i, v, err, initialBalance)
		}
	}
	if err := env.check(); err != nil {
		t.Errorf("Check: %v", err)
	}
	t.Logf("%d write txns (%d committed), reader snapshots checked: %v", writes, committed, checks)
}

// pooledCheck checks the snapshot of a read txn kept between calls: reset
// after each check, renewed (a newer snapshot) for the next.
func pooledCheck(eng engine, env tEnv, txn tTxn, d bankDBIs) (uint64, tTxn, error) {
	if txn == nil {
		var err error
		if txn, err = env.begin(nil, fReadonly); err != nil {
			return 0, nil, err
		}
	} else if err := txn.renew(); err != nil {
		return 0, txn, fmt.Errorf("renew: %w", err)
	}
	gen, err := bankCheckTxn(eng, txn, d)
	txn.reset()
	return gen, txn, err
}

// heldCheck holds one snapshot while the writer goes on (until it has
// committed a few times more, or finished), checking it again and again:
// its gen and its balances must stay those of the first check.
func heldCheck(eng engine, env tEnv, d bankDBIs, done *atomic.Bool) (uint64, error) {
	txn, err := env.begin(nil, fReadonly)
	if err != nil {
		return 0, err
	}
	defer txn.abort()
	balances := func() ([]byte, error) {
		var all []byte
		for i := 0; i < accounts; i++ {
			v, err := txn.get(d.acct, acctKey(i))
			if err != nil {
				return nil, err
			}
			all = append(all, v...)
		}
		return all, nil
	}
	gen, err := bankCheckTxn(eng, txn, d)
	if err != nil {
		return 0, err
	}
	first, err := balances()
	if err != nil {
		return 0, err
	}
	for polls := 0; polls < 200 && !done.Load(); polls++ {
		newest, err := bankCheckWith(eng, env, d)
		if err != nil {
			return 0, err
		}
		g, err := bankCheckTxn(eng, txn, d)
		if err != nil {
			return 0, err
		}
		now, err := balances()
		if err != nil {
			return 0, err
		}
		if g != gen || string(now) != string(first) {
			return 0, fmt.Errorf("a held snapshot changed: gen %d, then %d (balances equal: %v)", gen, g, string(now) == string(first))
		}
		if newest >= gen+5 {
			break
		}
		runtime.Gosched()
	}
	return gen, nil
}

// bankChild is the second process: it commits DIFFTEST_WRITES write txns on
// the shared env, checking the invariants between them, and prints how many
// it committed.
func bankChild() error {
	eng := subject
	if os.Getenv("DIFFTEST_ENGINE") == "stock" {
		eng = stockEngine{}
	}
	env, err := eng.openEnv(os.Getenv("DIFFTEST_DIR"), bankOpts())
	if err != nil {
		fmt.Printf("OPEN-REFUSED %d %v\n", eng.code(err), err)
		return nil
	}
	defer env.close()
	txn, err := env.begin(nil, 0)
	if err != nil {
		return err
	}
	d, err := bankOpen(txn, 0)
	if err != nil {
		return err
	}
	if err := txn.commit(); err != nil {
		return err
	}
	n, _ := strconv.Atoi(os.Getenv("DIFFTEST_WRITES"))
	seed, _ := strconv.ParseInt(os.Getenv("DIFFTEST_SEED"), 10, 64)
	r := rand.New(rand.NewSource(seed))
	committed := 0
	for i := 0; i < n; i++ {
		abort := r.Intn(8) == 0
		if err := bankWrite(env, d, r, "child", abort); err != nil {
			return err
		}
		if !abort {
			committed++
		}
		if i%10 == 0 {
			if _, err := bankCheckWith(eng, env, d); err != nil {
				return fmt.Errorf("child reader: %w", err)
			}
		}
	}
	fmt.Printf("COMMITTED %d\n", committed)
	return nil
}

func TestTwoProcesses(t *testing.T) {
	twoProcesses(t, subject, subject)
}

// TestMixedEngineProcesses: one process on our engine, one on stock LMDB, on
// the same env at the same time. Either both refuse to share (a clear error
// from the open of whichever came second) or they really share it (one
// writer at a time, consistent snapshots); never lost updates.
func TestMixedEngineProcesses(t *testing.T) {
	if subject.name() == "stock" {
		t.Skip("stock-only harness check: nothing mixed to test")
	}
	t.Run("ours-parent-stock-child", func(t *testing.T) { twoProcesses(t, subject, stockEngine{}) })
	t.Run("stock-parent-ours-child", func(t *testing.T) { twoProcesses(t, stockEngine{}, subject) })
}

func twoProcesses(t *testing.T, parentEng, childEng engine) {
	dir := t.TempDir()
	bankInit(t, dir)
	seed := masterSeed(t)
	writes := 600 * testScale(t)
	childName := "ours"
	if childEng.name() == "stock" {
		childName = "stock"
	}

	var childOut childOutcome
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		childOut = execChild("bank-writer", "DIFFTEST_DIR="+dir, "DIFFTEST_ENGINE="+childName,
			"DIFFTEST_WRITES="+strconv.Itoa(writes), "DIFFTEST_SEED="+strconv.FormatInt(seed+1, 10))
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	committed, rchecks, parentRefused := 0, 0, false
	var rerr error
	env, err := parentEng.openEnv(dir, bankOpts())
	if err != nil {
		if parentEng.name() == childEng.name() || parentEng.code(err) == errNotErrno {
			wg.Wait()
			t.Fatalf("%s parent: open: %v", parentEng.name(), err)
		}
		parentRefused = true
		t.Logf("%s parent refused to open the env %s has open: %v", parentEng.name(), childEng.name(), err)
	} else {
		txn, err := env.begin(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := bankOpen(txn, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.commit(); err != nil {
			t.Fatal(err)
		}
		// a reader goroutine in this process while this goroutine writes
		var done atomic.Bool
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				finished := done.Load()
				if _, err := bankCheckWith(parentEng, env, d); err != nil {
					rerr = err
					return
				}
				rchecks++
				if finished {
					return
				}
			}
		}()
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < writes; i++ {
			abort := r.Intn(8) == 0
			if err := bankWrite(env, d, r, "parent", abort); err != nil {
				done.Store(true)
				wg.Wait()
				t.Fatalf("%s parent writer: %v", parentEng.name(), err)
			}
			if !abort {
				committed++
			}
		}
		done.Store(true)
	}
	wg.Wait()
	if env != nil {
		env.close()
	}
	if rerr != nil {
		t.Errorf("%s parent reader: %v", parentEng.name(), rerr)
	}
	if childOut.crashed || childOut.err != nil || !strings.Contains(childOut.out, "CHILD-OK") {
		t.Fatalf("%s child: crashed=%v err=%v\n%s", childEng.name(), childOut.crashed, childOut.err, headLines(childOut.out, 30))
	}
	var childCommitted int
	childRefused := false
	for _, l := range strings.Split(childOut.out, "\n") {
		if strings.HasPrefix(l, "COMMITTED ") {
			childCommitted, _ = strconv.Atoi(strings.TrimPrefix(l, "COMMITTED "))
		}
		if strings.HasPrefix(l, "OPEN-REFUSED ") {
			childRefused = true
			t.Logf("%s child refused to open the env: %s", childEng.name(), l)
		}
	}
	if childRefused && parentEng.name() == childEng.name() {
		t.Fatalf("child could not open the env: %s", childOut.out)
	}
	if parentRefused && childRefused {
		t.Fatal("neither process could open the env")
	}

	// verify afterwards, alone, with each engine in turn
	engines := []engine{parentEng}
	if childEng.name() != parentEng.name() {
		engines = append(engines, childEng)
	}
	for _, eng := range engines {
		env, err := eng.openEnv(dir, bankOpts())
		if err != nil {
			t.Fatalf("%s: reopen afterwards: %v", eng.name(), err)
		}
		txn, err := env.begin(nil, 0) // DBI handles outlive only a committed txn
		if err != nil {
			t.Fatal(err)
		}
		d, err := bankOpen(txn, 0)
		if err != nil {
			t.Fatal(err)
		}
		kvs, _, err := dumpTxnDB(eng, txn, d.log)
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.commit(); err != nil {
			t.Fatal(err)
		}
		gen, err := bankCheckWith(eng, env, d)
		if err != nil {
			t.Fatalf("%s afterwards: %v", eng.name(), err)
		}
		if gen != uint64(committed+childCommitted) {
			t.Errorf("%s afterwards: gen %d, but parent committed %d and child %d: lost or phantom updates",
				eng.name(), gen, committed, childCommitted)
		}
		tags := map[string]int{}
		switches := 0
		for i, kv := range kvs {
			tags[string(kv.v)]++
			if i > 0 && string(kv.v) != string(kvs[i-1].v) {
				switches++
			}
		}
		if tags["parent"] != committed || tags["child"] != childCommitted {
			t.Errorf("%s afterwards: log entries by writer %v, want parent=%d child=%d", eng.name(), tags, committed, childCommitted)
		}
		if err := env.check(); err != nil {
			t.Errorf("%s: Check: %v", eng.name(), err)
		}
		env.close()
		if eng == parentEng {
			t.Logf("%s parent committed %d, %s child committed %d, writer changed %d times in commit order, parent reader snapshots %d",
				parentEng.name(), committed, childEng.name(), childCommitted, switches, rchecks)
		}
	}
}
