//go:build !dlmdb_standin

package bench

import (
	"fmt"
	"os"
	"strings"
	"time"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

func init() {
	Register(Suite{ID: "sample", Command: "sample_bench", Title: "Sampling a counted database: Cursor.GetRank vs stride scan (ours only)", Order: 60, Run: runSample})
}

// sampleSizes are the documented sizes of cmd/sample_bench (DLMDB's
// sample_bench parameters).
type sampleSizes struct {
	Entries, Samples, Stride, Batch, Dups, Rounds int
	MapSize                                       int64
}

func samplePreset(c *Config) sampleSizes {
	s := sampleSizes{
		Entries: c.Size(10_000_000, 200_000, 1_000),
		Samples: c.Size(1_000, 1_000, 10),
		Batch:   250_000,
		Dups:    8,
		Rounds:  c.RoundsOr(9, 5),
		MapSize: 16 << 30,
	}
	if s.Samples > s.Entries {
		s.Samples = s.Entries
	}
	s.Stride = max(1, s.Entries/s.Samples)
	return s
}

// Layout of sample_bench: the entry of rank r has the value "v" + r in 15
// digits; its key is "k" + r in 15 digits in the unique database and
// "k" + r/dups in the DUPSORT one (dups values per key, in rank order).
const sampleWidth = 16

// sampleDB is a populated counted environment of sample_bench.
type sampleDB struct {
	env   *ourslmdb.Env
	dbi   ourslmdb.DBI
	dir   string
	n     int
	dups  int
	extra uint // further DBI flags of the layout (PrefixCompression)
}

func (d *sampleDB) close() error {
	var err error
	if d.env != nil {
		err = d.env.Close()
		d.env = nil
	}
	if rerr := os.RemoveAll(d.dir); err == nil {
		err = rerr
	}
	return err
}

// keyIndex is the key number of the entry of rank r.
func (d *sampleDB) keyIndex(r int) int { return r / d.dups }

// samplePopulate creates the counted database and inserts n entries in
// batches, returning the time of the puts and commits.
func samplePopulate(c *Config, sz sampleSizes, dups int) (*sampleDB, time.Duration, error) {
	return samplePopulateAs(c, sz, dups, 0)
}

// samplePopulateAs is samplePopulate with further DBI flags (extra).
func samplePopulateAs(c *Config, sz sampleSizes, dups int, extra uint) (*sampleDB, time.Duration, error) {
	dir, err := c.TempDir("sample")
	if err != nil {
		return nil, 0, err
	}
	d := &sampleDB{dir: dir, n: sz.Entries, dups: dups, extra: extra}
	fail := func(err error) (*sampleDB, time.Duration, error) {
		d.close()
		return nil, 0, err
	}
	env, err := ourslmdb.NewEnv()
	if err != nil {
		return fail(err)
	}
	d.env = env
	if err := env.SetMapSize(sz.MapSize); err != nil {
		return fail(err)
	}
	if err := env.SetMaxDBs(4); err != nil {
		return fail(err)
	}
	if err := env.Open(dir, ourslmdb.NoSync|ourslmdb.NoMetaSync|ourslmdb.NoLock, 0o644); err != nil {
		return fail(err)
	}
	flags := uint(ourslmdb.Create|ourslmdb.Counted) | extra
	putFlags := uint(ourslmdb.Append)
	if dups > 1 {
		flags |= ourslmdb.DupSort
		putFlags = 0
	}
	err = env.Update(func(txn *ourslmdb.Txn) error {
		d.dbi, err = txn.OpenDBI("sample", flags)
		return err
	})
	if err != nil {
		return fail(err)
	}
	key := make([]byte, sampleWidth)
	val := make([]byte, sampleWidth)
	t0 := time.Now()
	for lo := 0; lo < d.n; lo += sz.Batch {
		hi := min(lo+sz.Batch, d.n)
		txn, err := env.BeginTxn(nil, 0)
		if err != nil {
			return fail(err)
		}
		for r := lo; r < hi; r++ {
			decimal(key, 'k', d.keyIndex(r))
			decimal(val, 'v', r)
			if err := txn.Put(d.dbi, key, val, putFlags); err != nil {
				txn.Abort()
				return fail(fmt.Errorf("populate entry %d: %w", r, err))
			}
		}
		if err := txn.Commit(); err != nil {
			return fail(err)
		}
	}
	el := time.Since(t0)
	if err := d.verify(); err != nil {
		return fail(err)
	}
	return d, el, nil
}

// checkEntry reports whether k, v is the entry of rank r.
func (d *sampleDB) checkEntry(what string, r int, k, v []byte) error {
	if decimalValue(k, 'k') != d.keyIndex(r) || decimalValue(v, 'v') != r {
		return fmt.Errorf("%s: entry of rank %d reads %q=%q: wrong", what, r, k, v)
	}
	return nil
}

// verify checks the populated database outside every timer: it is counted,
// holds n entries, the first and last ranks are right and the rank past the
// end is not found.
func (d *sampleDB) verify() error {
	txn, err := d.env.BeginTxn(nil, ourslmdb.Readonly)
	if err != nil {
		return err
	}
	defer txn.Abort()
	fl, err := txn.Flags(d.dbi)
	if err != nil {
		return err
	}
	if fl&ourslmdb.Counted == 0 {
		return fmt.Errorf("sample database is not counted (flags %#x)", fl)
	}
	if fl&ourslmdb.PrefixCompression != d.extra&ourslmdb.PrefixCompression {
		return fmt.Errorf("sample database flags %#x: prefix compression %#x expected", fl, d.extra&ourslmdb.PrefixCompression)
	}
	st, err := txn.Stat(d.dbi)
	if err != nil {
		return err
	}
	all, err := txn.CountAll(d.dbi)
	if err != nil {
		return err
	}
	if st.Entries != uint64(d.n) || all != uint64(d.n) {
		return fmt.Errorf("wrong entry count after populate: stat %d, CountAll %d, want %d", st.Entries, all, d.n)
	}
	for _, r := range []int{0, d.n / 2, d.n - 1} {
		k, v, err := txn.GetRank(d.dbi, uint64(r))
		if err != nil {
			return fmt.Errorf("rank %d after populate: %w", r, err)
		}
		if err := d.checkEntry("populate", r, k, v); err != nil {
			return err
		}
	}
	if _, _, err := txn.GetRank(d.dbi, uint64(d.n)); !ourslmdb.IsNotFound(err) {
		return fmt.Errorf("rank %d past the end: err=%v, want not found", d.n, err)
	}
	return nil
}

func runSample(c *Config) (*Table, error) {
	sz := samplePreset(c)
	t := &Table{Sides: []string{"stride scan", "Cursor.GetRank"}}
	progress := func(s string) { c.Logf("  %s", s) }
	var pops []string
	for _, lay := range countLayouts {
		for _, dups := range []int{1, sz.Dups} {
			layout := "unique keys"
			if dups > 1 {
				layout = fmt.Sprintf("%d dups/key", dups)
			}
			name := fmt.Sprintf("%s samples, %s (stride scan with MDB_NEXT vs warm Cursor.GetRank)%s", Comma(sz.Samples), layout, lay.suffix)
			if !c.WantRow(name) {
				continue
			}
			if lay.flags != 0 {
				layout += ", prefix-compressed"
			}
			c.Logf("sample: populating %s entries, %s", Comma(sz.Entries), layout)
			d, pop, err := samplePopulateAs(c, sz, dups, lay.flags)
			if err != nil {
				return nil, fmt.Errorf("populate %s: %w", layout, err)
			}
			pops = append(pops, fmt.Sprintf("%s %s ms", layout, FormatNum(float64(pop.Nanoseconds())/1e6)))
			c.Logf("sample: %s", name)
			err = sampleRow(c, t, d, sz, name, progress)
			if cerr := d.close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
		}
	}
	t.Notes = []string{
		fmt.Sprintf("Counted database (MDB_COUNTED) of %s entries, populated in batches of %s per write txn (unique keys with MDB_APPEND); env NOSYNC|NOMETASYNC|NOLOCK, %d GiB map. "+
			"A round reads the entries of rank 0, stride, 2×stride, … (%s samples, stride %s) in one read txn: "+
			"\"stride scan\" seeds at MDB_FIRST and steps MDB_NEXT over every skipped entry, \"Cursor.GetRank\" asks one warm cursor for each rank in ascending order. "+
			"Times are per whole pass (ms); %d alternating rounds; every round checks each sampled key and value against the known entry of that rank.",
			Comma(sz.Entries), Comma(sz.Batch), sz.MapSize>>30, Comma(sz.Samples), Comma(sz.Stride), sz.Rounds),
		"Each MDB_NEXT is one cgo call from Go, so the stride scan pays the binding's per-call cost once per skipped entry and the ratio is higher than DLMDB's C-to-C one.",
		"Each row runs on a plain counted DBI and again in DLMDB's layout (rows marked \"both prefix-compressed\": MDB_PREFIX_COMPRESSION on as well; there both sides copy each sampled key and value inside the timer, since decoded views last only until the next cursor call).",
		"DLMDB's reference (C, Apple M3 Pro, 16 KiB pages): unique 103.40 → 1.81 ms (57x); 8 dups/key 162.35 → 1.61 ms (101x); population 1,910 / 4,681 ms.",
	}
	if len(pops) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("Population here (one measurement each, not alternated): %s.", strings.Join(pops, "; ")))
	}
	return t, nil
}

type sampleHit struct{ k, v []byte }

func sampleRow(c *Config, t *Table, d *sampleDB, sz sampleSizes, name string, progress func(string)) error {
	scan, ranked := sampleSides(d, sz)
	st, err := Alternate(sz.Rounds, []Side{scan, ranked}, progress)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	size := fmt.Sprintf("%s entries", Comma(d.n))
	if d.dups > 1 {
		size = fmt.Sprintf("%s entries (%s keys × %d)", Comma(d.n), Comma((d.n+d.dups-1)/d.dups), d.dups)
	}
	t.Add(name, size+fmt.Sprintf(", stride %s", Comma(sz.Stride)), "ms", st...)
	return nil
}

// sampleSides are the two ways to read the entries of rank 0, stride,
// 2×stride, …: a stride scan and ascending Cursor.GetRank calls. Each round
// checks every sampled entry against the one that has that rank.
func sampleSides(d *sampleDB, sz sampleSizes) (scan, ranked Side) {
	n := sz.Samples
	if (n-1)*sz.Stride >= d.n {
		n = (d.n-1)/sz.Stride + 1
	}
	hits := make([]sampleHit, n)
	keep := newViewKeeper(d.extra&ourslmdb.PrefixCompression != 0, n)
	check := func(what string) error {
		for j, h := range hits {
			if err := d.checkEntry(what, j*sz.Stride, h.k, h.v); err != nil {
				return err
			}
		}
		return nil
	}
	begin := func() (*ourslmdb.Txn, *ourslmdb.Cursor, error) {
		txn, err := d.env.BeginTxn(nil, ourslmdb.Readonly)
		if err != nil {
			return nil, nil, err
		}
		txn.RawRead = true
		cur, err := txn.OpenCursor(d.dbi)
		if err != nil {
			txn.Abort()
			return nil, nil, err
		}
		return txn, cur, nil
	}
	scan = Side{Name: "stride scan", Measure: func(int) (float64, error) {
		txn, cur, err := begin()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(hits)
		t0 := time.Now()
		k, v, err := cur.Get(nil, nil, ourslmdb.First)
		if err != nil {
			return 0, err
		}
		k, v = keep.pair(0, k, v)
		hits[0] = sampleHit{k, v}
		for j := 1; j < n; j++ {
			for s := 0; s < sz.Stride && err == nil; s++ {
				k, v, err = cur.Get(nil, nil, ourslmdb.Next)
			}
			if err != nil {
				return 0, fmt.Errorf("stride scan to sample %d: %w", j, err)
			}
			k, v = keep.pair(j, k, v)
			hits[j] = sampleHit{k, v}
		}
		el := time.Since(t0)
		return float64(el.Nanoseconds()) / 1e6, check("stride scan")
	}}
	ranked = Side{Name: "Cursor.GetRank", Measure: func(int) (float64, error) {
		txn, cur, err := begin()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(hits)
		t0 := time.Now()
		for j := 0; j < n; j++ {
			k, v, err := cur.GetRank(uint64(j * sz.Stride))
			if err != nil {
				return 0, fmt.Errorf("GetRank %d: %w", j*sz.Stride, err)
			}
			k, v = keep.pair(j, k, v)
			hits[j] = sampleHit{k, v}
		}
		el := time.Since(t0)
		return float64(el.Nanoseconds()) / 1e6, check("Cursor.GetRank")
	}}
	return scan, ranked
}
