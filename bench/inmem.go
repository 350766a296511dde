//go:build !dlmdb_standin

package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	dlmdb "github.com/dlmdb/dlmdb-go"
	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// inmem_bench: DLMDB's inmem_bench on this module. The same entries are
// written (one write txn including its commit) and read back into a
// fresh file-backed environment and into a fresh lmdb.InMemory one
// (MDB_INMEMORY), alternating round by round. A second table measures what
// arming a read for context cancellation costs on a full cursor scan.

func init() {
	Register(Suite{ID: "inmem", Command: "inmem_bench", Title: "In-memory environments: file-backed vs MDB_INMEMORY (ours only)", Order: 90, Run: runInmem})
	Register(Suite{ID: "inmemscan", Command: "inmem_bench", Title: "Interrupt check: full cursor scan, plain View vs context-armed (ours only)", Order: 91, Run: runInmemScan})
}

const (
	inmemKeyLen = 16
	inmemValLen = 64
	// inmemMapPerEntry is DLMDB's map size over its entry count
	// (76,800,000 bytes for 200,000 entries).
	inmemMapPerEntry = 384
	inmemSeed        = 0x1e3e
)

// inmemSizes are the documented sizes of cmd/inmem_bench.
type inmemSizes struct {
	N, Rounds, Passes int
	MapSize           int64
}

func inmemPreset(c *Config) inmemSizes {
	n := c.Size(200_000, 50_000, 100)
	return inmemSizes{
		N:       n,
		Rounds:  c.RoundsOr(9, 5),
		Passes:  5,
		MapSize: max(int64(n)*inmemMapPerEntry, 4<<20),
	}
}

// inmemData is the model: n keys (key i is i as a 16-byte big-endian
// integer, so key order is numeric order), their 64-byte values, the
// shuffled order in which they are written and read, and the checksums
// the reads must return.
type inmemData struct {
	n     int
	keys  []byte
	vals  Values
	order []int32
	// wantGets folds the values in read order, wantScan every key and
	// value in key order.
	wantGets, wantScan uint64
}

func newInmemData(n int) *inmemData {
	d := &inmemData{n: n, keys: make([]byte, n*inmemKeyLen), vals: MakeValues(n, inmemValLen), order: Perm(n, inmemSeed)}
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint64(d.key(i)[8:], uint64(i))
	}
	for _, i := range d.order {
		d.wantGets = inmemFold(d.wantGets, d.vals.At(int(i)))
	}
	for i := 0; i < n; i++ {
		d.wantScan = inmemFold(inmemFold(d.wantScan, d.key(i)), d.vals.At(i))
	}
	return d
}

func (d *inmemData) key(i int) []byte {
	return d.keys[i*inmemKeyLen : (i+1)*inmemKeyLen : (i+1)*inmemKeyLen]
}

// inmemFold mixes every byte of v (and its length) into h, 8 bytes a step,
// so that any changed, missing, extra or reordered value changes the sum.
func inmemFold(h uint64, v []byte) uint64 {
	h = (h ^ uint64(len(v))) * 0x100000001b3
	for len(v) >= 8 {
		h = (h ^ binary.LittleEndian.Uint64(v)) * 0x100000001b3
		v = v[8:]
	}
	for _, b := range v {
		h = (h ^ uint64(b)) * 0x100000001b3
	}
	return h
}

// inmemEnv is one fresh environment of a round.
type inmemEnv struct {
	env *ourslmdb.Env
	dir string // "" for an InMemory env
}

// openInmemEnv opens a fresh NOLOCK environment with default durability:
// in a new temporary directory, or in process memory (inMem).
func openInmemEnv(c *Config, inMem bool, mapSize int64, flags uint) (*inmemEnv, error) {
	e := &inmemEnv{}
	path := ""
	if inMem {
		flags |= ourslmdb.InMemory
	} else {
		dir, err := c.TempDir("inmem")
		if err != nil {
			return nil, err
		}
		e.dir, path = dir, dir
	}
	env, err := ourslmdb.NewEnv()
	if err != nil {
		e.close()
		return nil, err
	}
	e.env = env
	if err = env.SetMapSize(mapSize); err == nil {
		err = env.Open(path, flags|ourslmdb.NoLock, 0o644)
	}
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *inmemEnv) close() error {
	var err error
	if e.env != nil {
		err = e.env.Close()
		e.env = nil
	}
	if e.dir != "" {
		if rerr := os.RemoveAll(e.dir); err == nil {
			err = rerr
		}
	}
	return err
}

// checkKind verifies, outside the timers, that e is what its side claims:
// an InMemory env has no path and leaves no file, a file-backed one has
// its data file, holding at least the pages the entries need.
func (e *inmemEnv) checkKind(n int) error {
	path, err := e.env.Path()
	if err != nil {
		return err
	}
	if e.dir == "" {
		if path != "" {
			return fmt.Errorf("InMemory env has path %q: wrong kind of env", path)
		}
		return nil
	}
	if path != e.dir {
		return fmt.Errorf("file-backed env has path %q, want %q: wrong kind of env", path, e.dir)
	}
	st, err := os.Stat(filepath.Join(e.dir, "data.mdb"))
	if err != nil {
		return fmt.Errorf("file-backed env: %w", err)
	}
	if st.Size() < int64(n)*(inmemKeyLen+inmemValLen) {
		return fmt.Errorf("file-backed data file is %d bytes for %d entries: wrong kind of env", st.Size(), n)
	}
	return nil
}

// inmemWrite puts every entry, in d.order, into the main DB in one write
// txn and commits it; the returned time covers the puts and the commit.
func inmemWrite(env *ourslmdb.Env, d *inmemData) (time.Duration, ourslmdb.DBI, error) {
	var dbi ourslmdb.DBI
	t0 := time.Now()
	err := env.Update(func(txn *ourslmdb.Txn) error {
		var err error
		if dbi, err = txn.OpenRoot(0); err != nil {
			return err
		}
		for _, i := range d.order {
			if err := txn.Put(dbi, d.key(int(i)), d.vals.At(int(i)), 0); err != nil {
				return fmt.Errorf("put %d: %w", i, err)
			}
		}
		return nil
	})
	return time.Since(t0), dbi, err
}

// inmemRead gets every entry, in d.order, in one RawRead read txn and
// folds the values into a checksum; the time covers the txn and the gets.
func inmemRead(env *ourslmdb.Env, dbi ourslmdb.DBI, d *inmemData) (time.Duration, uint64, error) {
	var h uint64
	t0 := time.Now()
	err := env.View(func(txn *ourslmdb.Txn) error {
		txn.RawRead = true
		for _, i := range d.order {
			v, err := txn.Get(dbi, d.key(int(i)))
			if err != nil {
				return fmt.Errorf("get %d: %w", i, err)
			}
			h = inmemFold(h, v)
		}
		return nil
	})
	return time.Since(t0), h, err
}

// inmemEntries is the entry count of the main DB.
func inmemEntries(env *ourslmdb.Env, dbi ourslmdb.DBI) (uint64, error) {
	var n uint64
	err := env.View(func(txn *ourslmdb.Txn) error {
		st, err := txn.Stat(dbi)
		if err == nil {
			n = st.Entries
		}
		return err
	})
	return n, err
}

// inmemRound is one round of one side: a fresh env, the timed write, the
// entry count and kind checks, the timed read and its checksum against the
// model. Times are in ms.
func inmemRound(c *Config, sz inmemSizes, d *inmemData, inMem bool) (write, read float64, sum uint64, err error) {
	e, err := openInmemEnv(c, inMem, sz.MapSize, 0)
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		if cerr := e.close(); err == nil {
			err = cerr
		}
	}()
	wt, dbi, err := inmemWrite(e.env, d)
	if err != nil {
		return 0, 0, 0, err
	}
	n, err := inmemEntries(e.env, dbi)
	if err == nil && n != uint64(d.n) {
		err = fmt.Errorf("%d entries after the write, want %d: wrong contents", n, d.n)
	}
	if err == nil {
		err = e.checkKind(d.n)
	}
	if err != nil {
		return 0, 0, 0, err
	}
	rt, sum, err := inmemRead(e.env, dbi, d)
	if err != nil {
		return 0, 0, 0, err
	}
	if sum != d.wantGets {
		return 0, 0, sum, fmt.Errorf("read checksum %#x, want %#x: wrong values", sum, d.wantGets)
	}
	return ms(wt), ms(rt), sum, nil
}

func runInmem(c *Config) (*Table, error) {
	sz := inmemPreset(c)
	t := &Table{Sides: []string{"file-backed", "InMemory"}}
	const writeRow, readRow = "write incl. commit (1 txn)", "read every entry (gets, RawRead)"
	if !c.WantRow(writeRow) && !c.WantRow(readRow) {
		return t, nil
	}
	d := newInmemData(sz.N)
	reads := make([][]float64, 2)
	sums := make([][]uint64, 2)
	sides := make([]Side, 2)
	for s := range sides {
		s := s
		sides[s] = Side{Name: t.Sides[s], Measure: func(int) (float64, error) {
			w, r, sum, err := inmemRound(c, sz, d, s == 1)
			if err != nil {
				return 0, err
			}
			reads[s] = append(reads[s], r)
			sums[s] = append(sums[s], sum)
			c.Logf("    %s read: %s ms", t.Sides[s], FormatNum(r))
			return w, nil
		}}
	}
	c.Logf("inmem: %s entries, %d rounds", Comma(sz.N), sz.Rounds)
	writes, err := Alternate(sz.Rounds, sides, func(s string) { c.Logf("  %s (write, ms)", s) })
	if err != nil {
		return nil, err
	}
	// Both sides must have read the same data (each already matched the
	// model; this is the comparison DLMDB's harness prints).
	for r := range sums[0] {
		if sums[0][r] != sums[1][r] {
			return nil, fmt.Errorf("round %d: file-backed checksum %#x, InMemory %#x: wrong values", r+1, sums[0][r], sums[1][r])
		}
	}
	size := fmt.Sprintf("%s × (%d B key, %d B value)", Comma(sz.N), inmemKeyLen, inmemValLen)
	if c.WantRow(writeRow) {
		t.Add(writeRow, size, "ms", writes...)
	}
	if c.WantRow(readRow) {
		t.Add(readRow, size, "ms", Summarize(reads[0]), Summarize(reads[1]))
	}
	t.Notes = []string{
		fmt.Sprintf("Both columns run on this module: a fresh NOLOCK environment per round and side, %s-byte map (DLMDB's 384 bytes per entry), default durability: the file-backed side fsyncs at commit, the InMemory side (lmdb.InMemory, MDB_INMEMORY: no file, the map is process memory) has nothing to sync. "+
			"Keys are the entry number as a 16-byte big-endian integer; the %s entries are put in one shuffled order (fixed seed) in one write txn, and the timer covers the puts and the commit. "+
			"The read is one RawRead read txn getting every entry in the same shuffled order (as DLMDB's harness, which reads every entry back), folding all value bytes into a checksum. "+
			"%d alternating rounds (A B, B A, …; DLMDB ran 3), all kept; the ratio is file-backed / InMemory, so above 1x the in-memory env is faster.",
			Comma(int(sz.MapSize)), Comma(sz.N), sz.Rounds),
		fmt.Sprintf("Checksum %#016x on both sides in every round, equal to the model's. Outside the timers every round also checks the entry count and that each env is what its column says (data file present, or no path).", sums[0][0]),
		"DLMDB's reference (C, Apple M3 Pro, 16 KiB pages): write incl. commit 79.37 → 68.36 ms (1.16x); read 67.79 → 66.08 ms (1.03x); checksum equal.",
	}
	return t, nil
}

// inmemScan walks the main DB with First / Next in a RawRead txn, folding
// every key and value; it returns the checksum and the entry count.
func inmemScan(txn *ourslmdb.Txn, dbi ourslmdb.DBI) (uint64, int, error) {
	txn.RawRead = true
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return 0, 0, err
	}
	defer cur.Close()
	var h uint64
	n := 0
	k, v, err := cur.Get(nil, nil, ourslmdb.First)
	for err == nil {
		h = inmemFold(inmemFold(h, k), v)
		n++
		k, v, err = cur.Get(nil, nil, ourslmdb.Next)
	}
	if !ourslmdb.IsNotFound(err) {
		return h, n, err
	}
	return h, n, nil
}

// errFired is returned when the never-cancelled context's callback ran.
var errFired = errors.New("the armed context's callback ran, though the context was never cancelled: wrong arming")

// scanPasses times passes full scans, each in its own read txn: armed runs
// it through dlmdb.View under a live, cancellable (never cancelled)
// context, which arms the txn's interrupt (Txn.SetInterrupt) with
// context.AfterFunc and stops it afterwards; plain through env.View. It
// returns ms per scan after checking every pass.
func scanPasses(env *ourslmdb.Env, dbi ourslmdb.DBI, d *inmemData, passes int, armed bool) (float64, error) {
	sums := make([]uint64, passes)
	counts := make([]int, passes)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var el time.Duration
	for p := 0; p < passes; p++ {
		scan := func(txn *ourslmdb.Txn) error {
			var err error
			sums[p], counts[p], err = inmemScan(txn, dbi)
			return err
		}
		var err error
		t0 := time.Now()
		if armed {
			err = dlmdb.View(ctx, env, scan)
		} else {
			err = env.View(scan)
		}
		el += time.Since(t0)
		if err != nil {
			return 0, err
		}
	}
	for p := range sums {
		if counts[p] != d.n || sums[p] != d.wantScan {
			return 0, fmt.Errorf("scan pass %d: %d entries, checksum %#x; want %d, %#x: wrong contents", p+1, counts[p], sums[p], d.n, d.wantScan)
		}
	}
	return ms(el) / float64(passes), nil
}

func runInmemScan(c *Config) (*Table, error) {
	sz := inmemPreset(c)
	// Many short rounds: a scan is ~100x shorter than a write round, and
	// the median of many rounds resists the machine's other load.
	sz.Rounds *= 3
	t := &Table{Sides: []string{"context-armed", "plain View"}, Diff: true}
	d := newInmemData(sz.N)
	size := fmt.Sprintf("%s × (%d B key, %d B value), %d scans/round", Comma(sz.N), inmemKeyLen, inmemValLen, sz.Passes)
	var diffs []string
	for _, kind := range []struct {
		name, label string
		inMem       bool
	}{
		{"full cursor scan (First/Next, RawRead), file-backed env", "file-backed", false},
		{"full cursor scan (First/Next, RawRead), InMemory env", "InMemory", true},
	} {
		if !c.WantRow(kind.name) {
			continue
		}
		c.Logf("inmemscan: loading %s entries (%s)", Comma(sz.N), kind.name)
		e, err := openInmemEnv(c, kind.inMem, sz.MapSize, ourslmdb.NoSync|ourslmdb.NoMetaSync)
		if err != nil {
			return nil, err
		}
		st, err := func() ([]Stats, error) {
			_, dbi, err := inmemWrite(e.env, d)
			if err != nil {
				return nil, err
			}
			if err = e.checkKind(d.n); err != nil {
				return nil, err
			}
			sides := []Side{
				{Name: t.Sides[0], Measure: func(int) (float64, error) { return scanPasses(e.env, dbi, d, sz.Passes, true) }},
				{Name: t.Sides[1], Measure: func(int) (float64, error) { return scanPasses(e.env, dbi, d, sz.Passes, false) }},
			}
			return Alternate(sz.Rounds, sides, func(s string) { c.Logf("  %s", s) })
		}()
		if cerr := e.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kind.name, err)
		}
		t.Add(kind.name, size, "ms/scan", st...)
		diffs = append(diffs, fmt.Sprintf("%s %.2f %%", kind.label, (st[0].Median/st[1].Median-1)*100))
	}
	arm, err := armingCost(c.Size(1_000_000, 200_000, 1000))
	if err != nil {
		return nil, err
	}
	var scanMS float64
	if len(t.Rows) > 0 {
		scanMS = t.Rows[0].Stats[1].Median
	}
	t.Notes = []string{
		fmt.Sprintf("Both columns run on this module, on one environment per row loaded with the same %s entries as the table above (shuffled puts, one txn); a round is %d full scans, each its own env.View with a RawRead cursor walking First/Next and folding every key and value into a checksum, checked against the model (and the entry count) after the round; the cell is ms per scan. %d alternating rounds (3× the write table's: scans are short).",
			Comma(sz.N), sz.Passes, sz.Rounds),
		"\"context-armed\" runs each scan through dlmdb.View under a live, cancellable (never cancelled) context: context.AfterFunc arms the txn's interrupt (Txn.SetInterrupt) and is stopped after the scan; \"plain\" is env.View. " +
			"The engine's check itself (two relaxed atomic loads per page visit, mdb_env_set_interrupt / mdb_txn_set_interrupt) is always compiled in, so it is present on both sides and its cost is inside both columns.",
		fmt.Sprintf("The ratio is armed / plain (above 1x arming costs time); (armed − plain) / plain of the medians: %s (goal: under 2 %%). "+
			"Measured alone (same run, one loop of register + stop on a live context), arming costs %s ns per View, %.4f %% of the first row's plain scan; a larger difference between the columns is the machine's noise.",
			strings.Join(diffs, ", "), FormatNum(arm), arm/1e4/max(scanMS, 1e-9)),
	}
	return t, nil
}

// armingCost times n context.AfterFunc registrations on a live context,
// each stopped at once, and returns ns per pair (the Go-side cost a
// context-aware View adds, without the View).
func armingCost(n int) (float64, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var fired atomic.Bool
	onDone := func() { fired.Store(true) }
	stopped := 0
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if context.AfterFunc(ctx, onDone)() {
			stopped++
		}
	}
	el := time.Since(t0)
	if stopped != n || fired.Load() {
		return 0, errFired
	}
	return nsPer(el, n), nil
}
