package dlmdb

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// Tests of Footprint and Convert. Seeds and scale as in counted_test.go
// (DLMDB_TEST_SEED, DLMDB_TEST_SCALE).

// convModel is the content a test expects: pairs in database order
// (bytewise keys, bytewise values).
type convModel map[cpair]bool

func (m convModel) sorted() []cpair {
	all := make([]cpair, 0, len(m))
	for p := range m {
		all = append(all, p)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		return a.k < b.k || (a.k == b.k && a.v < b.v)
	})
	return all
}

// convCase is one kind of database Convert is tried on.
type convCase struct {
	name  string
	flags uint
}

var convCases = []convCase{
	{"plain", 0},
	{"dupsort", lmdb.DupSort},
	{"dupfixed", lmdb.DupSort | lmdb.DupFixed},
}

// convRuns are the encoding flags the round-trip and reader tests switch on
// and back off, each with the database kinds it is tried on.
var convRuns = []struct {
	sw    uint
	cases []convCase
}{
	{lmdb.Counted, convCases},
	{lmdb.PrefixCompression, convCases},
	{lmdb.Counted | lmdb.PrefixCompression, convCases},
}

// convSwitch is opts changed to switch the flags in bits on (or off).
func convSwitch(opts ConvertOptions, bits uint, on bool) ConvertOptions {
	c := ClearFlag
	if on {
		c = SetFlag
	}
	if bits&lmdb.Counted != 0 {
		opts.Counted = c
	}
	if bits&lmdb.PrefixCompression != 0 {
		opts.PrefixCompression = c
	}
	return opts
}

func convSwitchName(bits uint) string {
	switch bits {
	case lmdb.Counted:
		return "counted"
	case lmdb.PrefixCompression:
		return "prefix"
	case lmdb.Counted | lmdb.PrefixCompression:
		return "counted+prefix"
	}
	return fmt.Sprintf("%#x", bits)
}

// convValue draws a value for a database with flags (DupFixed: 12 bytes).
func convValue(rng *rand.Rand, flags uint) string {
	if flags&lmdb.DupFixed != 0 {
		return fmt.Sprintf("f%011d", rng.Intn(1e9))
	}
	n := 1 + rng.Intn(60)
	if flags&lmdb.DupSort == 0 && rng.Intn(200) == 0 {
		n = 2500 + rng.Intn(3000) // a big value: overflow pages
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + rng.Intn(26))
	}
	return string(b)
}

// convKey draws a key: shared prefixes, a few keys with many values.
func convKey(rng *rand.Rand, n int) string {
	if rng.Intn(12) == 0 {
		return "hot" + strconv.Itoa(rng.Intn(3))
	}
	return fmt.Sprintf("key/%05d/%s", rng.Intn(n), "suffix"[:rng.Intn(7)])
}

// convFill creates database name with flags holding n random pairs.
func convFill(t *testing.T, env *lmdb.Env, rng *rand.Rand, name string, flags uint, n int) convModel {
	t.Helper()
	m := convModel{}
	byKey := map[string]string{} // unique-key DBs: the value of each key
	err := env.Update(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(name, flags|lmdb.Create)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			k, v := convKey(rng, n), convValue(rng, flags)
			if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
				return err
			}
			if flags&lmdb.DupSort == 0 {
				if old, ok := byKey[k]; ok {
					delete(m, cpair{k, old})
				}
				byKey[k] = v
			}
			m[cpair{k, v}] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// convContent reads every pair of dbi in txn.
func convContent(txn *lmdb.Txn, dbi lmdb.DBI) ([]cpair, error) {
	c, err := txn.OpenCursor(dbi)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []cpair
	for op := uint(lmdb.First); ; op = lmdb.Next {
		k, v, err := c.Get(nil, nil, op)
		if lmdb.IsNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, cpair{string(k), string(v)})
	}
}

// convDiff describes how got differs from want ("" when equal).
func convDiff(got, want []cpair) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("pair %d is %q=%.20q, want %q=%.20q", i, got[i].k, got[i].v, want[i].k, want[i].v)
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d pairs, want %d", len(got), len(want))
	}
	return ""
}

// convExpect checks database name: exactly the pairs of want, Stat entries,
// flags, the counting API if and only if Counted, no temporary database left,
// and the whole environment passes the checker.
func convExpect(t *testing.T, env *lmdb.Env, name string, want []cpair, flags uint) {
	t.Helper()
	err := env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(name, 0)
		if err != nil {
			return err
		}
		got, err := convContent(txn, dbi)
		if err != nil {
			return err
		}
		if d := convDiff(got, want); d != "" {
			return errors.New(d)
		}
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		if st.Entries != uint64(len(want)) {
			return fmt.Errorf("Stat entries %d, want %d", st.Entries, len(want))
		}
		f, err := txn.Flags(dbi)
		if err != nil {
			return err
		}
		if f != flags {
			return fmt.Errorf("flags %#x, want %#x", f, flags)
		}
		n, err := txn.CountAll(dbi)
		if flags&lmdb.Counted != 0 {
			if err != nil || n != uint64(len(want)) {
				return fmt.Errorf("CountAll %d, %v; want %d", n, err, len(want))
			}
			if len(want) > 0 {
				r := len(want) / 2
				k, v, err := txn.GetRank(dbi, uint64(r))
				if err != nil || string(k) != want[r].k || string(v) != want[r].v {
					return fmt.Errorf("Rank(%d) = %q, %q, %v; want %q", r, k, v, err, want[r].k)
				}
			}
		} else if !errors.Is(err, lmdb.Incompatible) {
			return fmt.Errorf("CountAll on an uncounted DB: %d, %v; want Incompatible", n, err)
		}
		if _, err := txn.OpenDBI(ConvertTempPrefix+name, 0); !lmdb.IsNotFound(err) {
			return fmt.Errorf("temporary database after Convert: %v", err)
		}
		return txn.Check()
	})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func convEnv(t *testing.T) *lmdb.Env {
	t.Helper()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.SetMaxDBs(32) // each (run, kind) pair makes a DB and its temporary copy
	env.SetMapSize(256 << 20)
	// NoSync: the tests commit many small txns and need no durability
	if err := env.Open(t.TempDir(), lmdb.NoSync, 0o600); err != nil {
		env.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// Plain -> counted -> plain for unique, DupSort and DupFixed databases, in
// several batches; every step equals the source and has the asked flags.
func TestConvertRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	n := 3000 * countedScale(t)
	env := convEnv(t)
	for _, run := range convRuns {
		sw := run.sw
		for _, tc := range run.cases {
			t.Run(convSwitchName(sw)+"/"+tc.name, func(t *testing.T) {
				convRoundTrip(t, env, rng, tc, sw, n)
			})
		}
	}
}

func convRoundTrip(t *testing.T, env *lmdb.Env, rng *rand.Rand, tc convCase, sw uint, n int) {
	name := tc.name + "-" + convSwitchName(sw)
	want := convFill(t, env, rng, name, tc.flags, n).sorted()
	steps := []struct {
		opts  ConvertOptions
		flags uint
	}{
		{convSwitch(ConvertOptions{BatchEntries: 700}, sw, true), tc.flags | sw},
		{ConvertOptions{BatchEntries: 7}, tc.flags | sw},    // keep, many small txns
		{convSwitch(ConvertOptions{}, sw, false), tc.flags}, // one batch
		{convSwitch(ConvertOptions{BatchEntries: 999}, sw, false), tc.flags},
	}
	if testing.Short() {
		steps = append(steps[:1], steps[2])
	}
	for i, s := range steps {
		var calls int
		var last uint64
		s.opts.Progress = func(copied, total uint64) {
			calls++
			if copied < last {
				t.Errorf("step %d: progress went back from %d to %d", i, last, copied)
			}
			last = copied
		}
		if err := Convert(env, name, s.opts); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		batch := s.opts.BatchEntries
		if batch <= 0 {
			batch = DefaultConvertBatch
		}
		// a batch that copies its last pair also finds the end
		if wantCalls := max(1, (len(want)+batch-1)/batch); calls != wantCalls || last != uint64(len(want)) {
			t.Errorf("step %d: %d progress calls ending at %d, want %d ending at %d", i, calls, last, wantCalls, len(want))
		}
		convExpect(t, env, name, want, s.flags)
	}
}

func TestConvertRefusals(t *testing.T) {
	env := convEnv(t)
	if err := Convert(env, "", ConvertOptions{}); !errors.Is(err, ErrConvertMainDB) {
		t.Errorf("Convert of the main DB: %v, want ErrConvertMainDB", err)
	}
	if err := Convert(env, "absent", ConvertOptions{}); !lmdb.IsNotFound(err) {
		t.Errorf("Convert of a missing DB: %v, want NotFound", err)
	}
}

// A temporary database left by an earlier, interrupted run is dropped: the
// result holds the source's pairs only.
func TestConvertDropsLeftover(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := convEnv(t)
	want := convFill(t, env, rng, "db", lmdb.DupSort, 2000).sorted()
	convFill(t, env, rng, ConvertTempPrefix+"db", lmdb.DupSort|lmdb.Counted, 500)
	if err := Convert(env, "db", ConvertOptions{Counted: SetFlag, BatchEntries: 300}); err != nil {
		t.Fatal(err)
	}
	convExpect(t, env, "db", want, lmdb.DupSort|lmdb.Counted)
}

// Readers running during a conversion see the old database or the new one:
// each read txn finds exactly the source's pairs, with the old flags or the
// new ones.
func TestConvertReaders(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := convEnv(t)
	for _, run := range convRuns {
		sw := run.sw
		for _, tc := range run.cases {
			t.Run(convSwitchName(sw)+"/"+tc.name, func(t *testing.T) {
				convReaders(t, env, rng, tc, sw)
			})
		}
	}
}

func convReaders(t *testing.T, env *lmdb.Env, rng *rand.Rand, tc convCase, sw uint) {
	name := tc.name + "-" + convSwitchName(sw)
	want := convFill(t, env, rng, name, tc.flags, 2500*countedScale(t)).sorted()
	var stop, failed atomic.Bool
	var reads [2]atomic.Int64 // by flags seen: old, new
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				err := env.View(func(txn *lmdb.Txn) error {
					dbi, err := txn.OpenDBI(name, 0)
					if err != nil {
						return err
					}
					f, err := txn.Flags(dbi)
					if err != nil {
						return err
					}
					got, err := convContent(txn, dbi)
					if err != nil {
						return err
					}
					if d := convDiff(got, want); d != "" {
						return fmt.Errorf("reader with flags %#x: %s", f, d)
					}
					switch f {
					case tc.flags:
						reads[0].Add(1)
					case tc.flags | sw:
						reads[1].Add(1)
					default:
						return fmt.Errorf("reader sees flags %#x", f)
					}
					return nil
				})
				if err != nil {
					failed.Store(true)
					errs <- err
					return
				}
			}
		}()
	}
	// after every batch, let the readers finish a few reads: some
	// of them between batches, whatever the scheduling
	between := func(_, _ uint64) {
		target := reads[0].Load() + reads[1].Load() + 3
		for reads[0].Load()+reads[1].Load() < target && !failed.Load() {
			runtime.Gosched()
		}
	}
	err := Convert(env, name, convSwitch(ConvertOptions{BatchEntries: 200, Progress: between}, sw, true))
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if err != nil {
		t.Fatal(err)
	}
	convExpect(t, env, name, want, tc.flags|sw)
	// reads that ended between batches began before the swap
	if reads[0].Load() == 0 {
		t.Error("no reader saw the database before the swap")
	}
	// and back
	if err := Convert(env, name, convSwitch(ConvertOptions{BatchEntries: 200}, sw, false)); err != nil {
		t.Fatal(err)
	}
	convExpect(t, env, name, want, tc.flags)
}

// A writer changes the source between batches (inserts before and after the
// copy position, deletes and overwrites of copied pairs): the converted
// database equals the source as it was at the swap. A second writer runs
// concurrently all along; its writes after the swap land in the new database.
func TestConvertConcurrentWriter(t *testing.T) {
	seed := countedSeed(t)
	env := convEnv(t)
	for _, tc := range convCases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			model := convFill(t, env, rng, tc.name, tc.flags, 3000*countedScale(t))
			var mu sync.Mutex // guards model
			change := func(rng *rand.Rand) error {
				return env.Update(func(txn *lmdb.Txn) error {
					dbi, err := txn.OpenDBI(tc.name, 0)
					if err != nil {
						return err
					}
					mu.Lock()
					defer mu.Unlock()
					pending := convModel{}
					for p := range model {
						pending[p] = true
					}
					for i := 0; i < 40; i++ {
						if rng.Intn(3) == 0 && len(pending) > 0 {
							// delete a pair (any: copied or not yet)
							var victim cpair
							j := rng.Intn(len(pending))
							for p := range pending {
								if j == 0 {
									victim = p
									break
								}
								j--
							}
							var v []byte
							if tc.flags&lmdb.DupSort != 0 {
								v = []byte(victim.v)
							}
							if err := txn.Del(dbi, []byte(victim.k), v); err != nil {
								return fmt.Errorf("del %q: %w", victim.k, err)
							}
							delete(pending, victim)
							continue
						}
						k, v := convKey(rng, 3000), convValue(rng, tc.flags)
						if rng.Intn(4) == 0 {
							k = "aaa" + k // before everything copied
						}
						if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
							return err
						}
						if tc.flags&lmdb.DupSort == 0 {
							for p := range pending {
								if p.k == k {
									delete(pending, p)
								}
							}
						}
						pending[cpair{k, v}] = true
					}
					model = pending // committed below: model follows
					return nil
				})
			}
			done := make(chan struct{})
			werr := make(chan error, 1)
			go func() {
				wrng := rand.New(rand.NewSource(seed + 1))
				for {
					select {
					case <-done:
						werr <- nil
						return
					default:
					}
					if err := change(wrng); err != nil {
						werr <- err
						return
					}
				}
			}()
			var perr error
			opts := ConvertOptions{Counted: SetFlag, BatchEntries: 400, Progress: func(_, _ uint64) {
				if perr == nil {
					perr = change(rng)
				}
			}}
			err := Convert(env, tc.name, opts)
			close(done)
			if e := <-werr; e != nil {
				t.Fatalf("writer: %v", e)
			}
			if perr != nil {
				t.Fatalf("progress writer: %v", perr)
			}
			if err != nil {
				t.Fatal(err)
			}
			convExpect(t, env, tc.name, model.sorted(), tc.flags|lmdb.Counted)
		})
	}
}

// Crash: a child process converting a database is SIGKILLed from the
// progress callback after a few batches. The old database is intact and
// equal to the source, the checker passes, and Convert run again succeeds.
const convCrashEnv = "DLMDB_CONVERT_CRASH_DIR"

func TestConvertCrash(t *testing.T) {
	if dir := os.Getenv(convCrashEnv); dir != "" {
		convCrashChild(dir)
		return
	}
	seed := countedSeed(t)
	rng := rand.New(rand.NewSource(seed))
	type crashRun struct {
		sw uint
		tc convCase
	}
	var runs []crashRun
	for _, run := range convRuns {
		for _, tc := range run.cases {
			runs = append(runs, crashRun{run.sw, tc})
		}
	}
	rounds := len(runs) * countedScale(t)
	for round := 0; round < rounds; round++ {
		tc, sw := runs[round%len(runs)].tc, runs[round%len(runs)].sw
		dir := t.TempDir()
		env := convCrashOpen(t, dir)
		want := convFill(t, env, rng, "db", tc.flags, 4000).sorted()
		env.Close()
		kill := 1 + rng.Intn(4)
		cmd := exec.Command(os.Args[0], "-test.run=^TestConvertCrash$", "-test.count=1")
		cmd.Env = append(os.Environ(), convCrashEnv+"="+dir, "DLMDB_CONVERT_CRASH_KILL="+strconv.Itoa(kill),
			"DLMDB_CONVERT_CRASH_FLAGS="+strconv.Itoa(int(sw)))
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: child was not killed: %v\n%s", round, err, out)
		}
		env = convCrashOpen(t, dir)
		// the old database, as it was
		convExpectKeepTemp(t, env, "db", want, tc.flags)
		// the interrupted copy is there (killed after a committed batch)
		err = env.View(func(txn *lmdb.Txn) error {
			_, err := txn.OpenDBI(ConvertTempPrefix+"db", 0)
			return err
		})
		if err != nil {
			t.Errorf("round %d: no temporary database after the crash: %v", round, err)
		}
		if err := Convert(env, "db", convSwitch(ConvertOptions{BatchEntries: 500}, sw, true)); err != nil {
			t.Fatalf("round %d: rerun: %v", round, err)
		}
		convExpect(t, env, "db", want, tc.flags|sw)
		env.Close()
	}
}

func convCrashOpen(t *testing.T, dir string) *lmdb.Env {
	t.Helper()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.SetMaxDBs(4)
	env.SetMapSize(256 << 20)
	if err := env.Open(dir, 0, 0o600); err != nil {
		env.Close()
		t.Fatal(err)
	}
	return env
}

// convExpectKeepTemp is convExpect for a state in which the temporary
// database may exist.
func convExpectKeepTemp(t *testing.T, env *lmdb.Env, name string, want []cpair, flags uint) {
	t.Helper()
	err := env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(name, 0)
		if err != nil {
			return err
		}
		got, err := convContent(txn, dbi)
		if err != nil {
			return err
		}
		if d := convDiff(got, want); d != "" {
			return errors.New(d)
		}
		if f, err := txn.Flags(dbi); err != nil || f != flags {
			return fmt.Errorf("flags %#x, %v; want %#x", f, err, flags)
		}
		return txn.Check()
	})
	if err != nil {
		t.Fatalf("%s after the crash: %v", name, err)
	}
}

// convCrashChild converts "db" and kills itself after the batch named by
// DLMDB_CONVERT_CRASH_KILL.
func convCrashChild(dir string) {
	kill, _ := strconv.Atoi(os.Getenv("DLMDB_CONVERT_CRASH_KILL"))
	sw, _ := strconv.Atoi(os.Getenv("DLMDB_CONVERT_CRASH_FLAGS"))
	env, err := lmdb.NewEnv()
	if err == nil {
		env.SetMaxDBs(4)
		env.SetMapSize(256 << 20)
		err = env.Open(dir, 0, 0o600)
	}
	if err != nil {
		fmt.Println("child:", err)
		os.Exit(3)
	}
	batches := 0
	err = Convert(env, "db", convSwitch(ConvertOptions{BatchEntries: 600, Progress: func(_, _ uint64) {
		batches++
		if batches == kill {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // never returns
		}
	}}, uint(sw), true))
	fmt.Println("child: conversion ended without the kill:", err)
	os.Exit(4)
}

// Footprint of uncompressed databases: stored == decoded, the totals are
// those of the pairs written and of Stat, progress ends at the leaf count.
func TestFootprint(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := convEnv(t)
	for _, tc := range append(convCases, convCase{"counted", lmdb.Counted}) {
		t.Run(tc.name, func(t *testing.T) {
			want := convFill(t, env, rng, tc.name, tc.flags, 6000*countedScale(t)).sorted()
			var keys, kbytes, vbytes uint64
			for i, p := range want {
				if i == 0 || p.k != want[i-1].k {
					keys++
					kbytes += uint64(len(p.k))
				}
				vbytes += uint64(len(p.v))
			}
			err := env.View(func(txn *lmdb.Txn) error {
				dbi, err := txn.OpenDBI(tc.name, 0)
				if err != nil {
					return err
				}
				st, err := txn.Stat(dbi)
				if err != nil {
					return err
				}
				var calls int
				var lastDone, lastTotal uint64
				fs, err := Footprint(txn, dbi, func(done, total uint64) {
					calls++
					if done < lastDone {
						t.Errorf("progress went back from %d to %d", lastDone, done)
					}
					lastDone, lastTotal = done, total
				})
				if err != nil {
					return err
				}
				if calls == 0 || lastDone != st.LeafPages || lastTotal != st.LeafPages {
					t.Errorf("progress: %d calls ending at %d of %d, want the end at %d", calls, lastDone, lastTotal, st.LeafPages)
				}
				if fs.LeafPages != st.LeafPages || fs.BranchPages != st.BranchPages ||
					fs.OverflowPages != st.OverflowPages || fs.Entries != st.Entries {
					t.Errorf("pages/entries %+v, Stat %+v", fs.Footprint, st)
				}
				if fs.Keys != keys || fs.KeyBytesStored != kbytes || fs.KeyBytesDecoded != kbytes ||
					fs.ValueBytesStored != vbytes || fs.ValueBytesDecoded != vbytes || fs.AnchorBytes != 0 {
					t.Errorf("bytes %+v, want %d keys, %d key bytes, %d value bytes", fs.Footprint, keys, kbytes, vbytes)
				}
				if fs.StoredBytes() != kbytes+vbytes || fs.DecodedBytes() != kbytes+vbytes ||
					fs.Ratio() != 1 || fs.Savings() != 0 || fs.KeyRatio() != 1 || fs.ValueRatio() != 1 {
					t.Errorf("ratios %v %v %v %v", fs.Ratio(), fs.Savings(), fs.KeyRatio(), fs.ValueRatio())
				}
				if tc.flags&lmdb.DupSort != 0 && fs.SubPages == 0 {
					t.Errorf("DupSort DB without sub-pages: %+v", fs.Footprint)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Footprint of a prefix-compressed database: decoded sizes are exactly
// what was written, keys take fewer stored bytes (anchors included), every
// leaf is a compressed page, values are stored as they are.
func TestFootprintPrefix(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := convEnv(t)
	want := convFill(t, env, rng, "pfx", lmdb.PrefixCompression, 6000*countedScale(t)).sorted()
	var kbytes, vbytes uint64
	for _, p := range want {
		kbytes += uint64(len(p.k))
		vbytes += uint64(len(p.v))
	}
	err := env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI("pfx", 0)
		if err != nil {
			return err
		}
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		fs, err := Footprint(txn, dbi, nil)
		if err != nil {
			return err
		}
		if fs.Entries != uint64(len(want)) || fs.LeafPages != st.LeafPages || fs.PrefixPages != st.LeafPages {
			t.Errorf("%+v; Stat %+v", fs.Footprint, st)
		}
		if fs.KeyBytesDecoded != kbytes || fs.ValueBytesStored != vbytes || fs.ValueBytesDecoded != vbytes {
			t.Errorf("decoded %d key / %d value bytes, stored %d value bytes; want %d / %d / %d",
				fs.KeyBytesDecoded, fs.ValueBytesDecoded, fs.ValueBytesStored, kbytes, vbytes, vbytes)
		}
		if fs.AnchorBytes == 0 || fs.KeyRatio() >= 1 || fs.Ratio() >= 1 || fs.Savings() <= 0 {
			t.Errorf("no saving: key ratio %v, ratio %v, %+v", fs.KeyRatio(), fs.Ratio(), fs.Footprint)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The ratio helpers on numbers made up for them.
func TestFootprintRatios(t *testing.T) {
	var fs FootprintStats
	if fs.Ratio() != 1 || fs.Savings() != 0 {
		t.Errorf("empty: ratio %v savings %v", fs.Ratio(), fs.Savings())
	}
	fs.KeyBytesStored, fs.AnchorBytes, fs.KeyBytesDecoded = 30, 10, 100
	fs.ValueBytesStored, fs.ValueBytesDecoded = 60, 100
	if fs.StoredBytes() != 100 || fs.DecodedBytes() != 200 || fs.Ratio() != 0.5 || fs.Savings() != 0.5 ||
		fs.KeyRatio() != 0.4 || fs.ValueRatio() != 0.6 {
		t.Errorf("%v %v %v %v %v %v", fs.StoredBytes(), fs.DecodedBytes(), fs.Ratio(), fs.Savings(), fs.KeyRatio(), fs.ValueRatio())
	}
}

// A source dropped between batches fails the conversion with NotFound, and
// the failed Convert drops its half-built copy.
func TestConvertSourceDropped(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := convEnv(t)
	convFill(t, env, rng, "db", 0, 2000)
	calls := 0
	err := Convert(env, "db", ConvertOptions{Counted: SetFlag, BatchEntries: 300, Progress: func(_, _ uint64) {
		calls++
		if calls != 2 {
			return
		}
		if err := env.Update(func(txn *lmdb.Txn) error {
			dbi, err := txn.OpenDBI("db", 0)
			if err != nil {
				return err
			}
			return txn.Drop(dbi, true)
		}); err != nil {
			t.Error(err)
		}
	}})
	if !lmdb.IsNotFound(err) || calls != 2 {
		t.Fatalf("Convert of a dropped source: %v after %d batches, want NotFound after 2", err, calls)
	}
	err = env.View(func(txn *lmdb.Txn) error {
		if _, err := txn.OpenDBI(ConvertTempPrefix+"db", 0); !lmdb.IsNotFound(err) {
			return fmt.Errorf("temporary database after a failed Convert: %v", err)
		}
		return txn.Check()
	})
	if err != nil {
		t.Fatal(err)
	}
}
