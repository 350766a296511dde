//go:build !dlmdb_standin

package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// The order-statistics suites (count, sample) exist only for our package:
// stock LMDB has no MDB_COUNTED, so both sides of every row run on
// github.com/dlmdb/dlmdb-go/lmdb — the side without counts is the naive
// cursor loop a program would write without them. With -tags dlmdb_standin
// (ours replaced by stock lmdb-go) these suites are not built.

func init() {
	Register(Suite{ID: "count", Command: "count_bench", Title: "Order statistics: MDB_COUNTED range count and rank (ours only)", Order: 50, Run: runCount})
}

// countSizes are the documented sizes of cmd/count_bench (DLMDB's
// count_bench parameters).
type countSizes struct {
	Keys, Queries, Span, Dups, DupKeys, NaiveRank, Rounds int
}

func countPreset(c *Config) countSizes {
	s := countSizes{
		Keys:      c.Size(100_000, 20_000, 100),
		Queries:   c.Size(200, 200, 10),
		Span:      c.Size(10_000, 2_000, 10),
		Dups:      20,
		DupKeys:   c.Size(100_000, 5_000, 50),
		NaiveRank: c.Size(128, 128, 4),
		Rounds:    c.RoundsOr(9, 5),
	}
	if s.Span >= s.Keys {
		s.Span = s.Keys - 1
	}
	if s.Span >= s.DupKeys {
		s.Span = s.DupKeys - 1
	}
	if s.NaiveRank > s.Queries {
		s.NaiveRank = s.Queries
	}
	return s
}

// decimal writes prefix followed by i in len(dst)-1 decimal digits, so that
// byte order of two such strings equals numeric order.
func decimal(dst []byte, prefix byte, i int) []byte {
	dst[0] = prefix
	for j := len(dst) - 1; j >= 1; j-- {
		dst[j] = '0' + byte(i%10)
		i /= 10
	}
	return dst
}

// decimalTable holds n strings made by decimal, back to back.
type decimalTable struct {
	buf   []byte
	width int
}

func makeDecimals(prefix byte, width, n int) decimalTable {
	t := decimalTable{buf: make([]byte, n*width), width: width}
	for i := 0; i < n; i++ {
		decimal(t.buf[i*width:(i+1)*width], prefix, i)
	}
	return t
}

func (t decimalTable) At(i int) []byte {
	return t.buf[i*t.width : (i+1)*t.width : (i+1)*t.width]
}

// decimalValue reads back a string written by decimal (-1 if malformed).
func decimalValue(b []byte, prefix byte) int {
	if len(b) < 2 || b[0] != prefix {
		return -1
	}
	v, err := strconv.Atoi(string(b[1:]))
	if err != nil {
		return -1
	}
	return v
}

// Key and value layout of count_bench: key i is "k" and 9 digits, its value
// in the unique database "v" and 9 digits; in the DUPSORT database key i
// holds the values "d0000000" .. "d" + (dups-1).
const (
	countKeyWidth = 10
	countDupWidth = 8
)

// countDB is one populated environment of count_bench.
type countDB struct {
	env     *ourslmdb.Env
	dbi     ourslmdb.DBI
	dir     string
	keys    int
	dups    int // 1 for the unique database
	counted bool
	extra   uint // further DBI flags of the layout (PrefixCompression)
}

func (d *countDB) close() error {
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

// countLoad creates an environment and inserts keys in the given (shuffled)
// order into one named database, all in one write transaction. The returned
// duration covers the puts and the commit only.
func countLoad(c *Config, counted bool, dups int, keys, vals, dupVals decimalTable, order []int32) (*countDB, time.Duration, error) {
	return countLoadAs(c, counted, 0, dups, keys, vals, dupVals, order)
}

// countLoadAs is countLoad with further DBI flags (extra) on the database.
func countLoadAs(c *Config, counted bool, extra uint, dups int, keys, vals, dupVals decimalTable, order []int32) (*countDB, time.Duration, error) {
	n := len(order)
	dir, err := c.TempDir("count")
	if err != nil {
		return nil, 0, err
	}
	d := &countDB{dir: dir, keys: n, dups: dups, counted: counted, extra: extra}
	fail := func(err error) (*countDB, time.Duration, error) {
		d.close()
		return nil, 0, err
	}
	env, err := ourslmdb.NewEnv()
	if err != nil {
		return fail(err)
	}
	d.env = env
	// Generous: the map is only address space.
	if err := env.SetMapSize(int64(n)*int64(dups)*256 + 64<<20); err != nil {
		return fail(err)
	}
	if err := env.SetMaxDBs(4); err != nil {
		return fail(err)
	}
	if err := env.Open(dir, ourslmdb.NoLock|ourslmdb.NoSync|ourslmdb.NoMetaSync, 0o644); err != nil {
		return fail(err)
	}
	txn, err := env.BeginTxn(nil, 0)
	if err != nil {
		return fail(err)
	}
	flags := uint(ourslmdb.Create) | extra
	if counted {
		flags |= ourslmdb.Counted
	}
	if dups > 1 {
		flags |= ourslmdb.DupSort
	}
	dbi, err := txn.OpenDBI("count", flags)
	if err != nil {
		txn.Abort()
		return fail(err)
	}
	d.dbi = dbi
	t0 := time.Now()
	for _, k := range order {
		key := keys.At(int(k))
		if dups == 1 {
			err = txn.Put(dbi, key, vals.At(int(k)), 0)
		} else {
			for j := 0; j < dups && err == nil; j++ {
				err = txn.Put(dbi, key, dupVals.At(j), 0)
			}
		}
		if err != nil {
			txn.Abort()
			return fail(fmt.Errorf("put key %d: %w", k, err))
		}
	}
	err = txn.Commit()
	el := time.Since(t0)
	if err != nil {
		return fail(err)
	}
	return d, el, nil
}

// verify checks what countLoad stored (outside every timer): the database
// really is (un)counted, holds keys×dups entries, sampled keys carry their
// values, and — when deep is set — the engine's own consistency check of
// every page (counts included) passes.
func (d *countDB) verify(keys, vals, dupVals decimalTable, deep bool) error {
	txn, err := d.env.BeginTxn(nil, ourslmdb.Readonly)
	if err != nil {
		return err
	}
	defer txn.Abort()
	fl, err := txn.Flags(d.dbi)
	if err != nil {
		return err
	}
	if (fl&ourslmdb.Counted != 0) != d.counted {
		return fmt.Errorf("database flags %#x: counted=%v expected", fl, d.counted)
	}
	if fl&ourslmdb.PrefixCompression != d.extra&ourslmdb.PrefixCompression {
		return fmt.Errorf("database flags %#x: prefix compression %#x expected", fl, d.extra&ourslmdb.PrefixCompression)
	}
	want := uint64(d.keys) * uint64(d.dups)
	st, err := txn.Stat(d.dbi)
	if err != nil {
		return err
	}
	if st.Entries != want {
		return fmt.Errorf("wrong entry count after load: %d, want %d", st.Entries, want)
	}
	if d.counted {
		all, err := txn.CountAll(d.dbi)
		if err != nil {
			return err
		}
		if all != want {
			return fmt.Errorf("wrong CountAll after load: %d, want %d", all, want)
		}
	}
	cur, err := txn.OpenCursor(d.dbi)
	if err != nil {
		return err
	}
	defer cur.Close()
	step := max(1, d.keys/97)
	for i := 0; i < d.keys; i += step {
		k, v, err := cur.Get(keys.At(i), nil, ourslmdb.Set)
		if err != nil {
			return fmt.Errorf("key %d after load: %w", i, err)
		}
		wantV := vals.At(i)
		if d.dups > 1 {
			wantV = dupVals.At(0)
			n, err := cur.Count()
			if err != nil {
				return err
			}
			if n != uint64(d.dups) {
				return fmt.Errorf("key %d holds %d values, want %d", i, n, d.dups)
			}
		}
		if !bytes.Equal(k, keys.At(i)) || !bytes.Equal(v, wantV) {
			return fmt.Errorf("key %d after load reads %q=%q: wrong", i, k, v)
		}
	}
	if deep {
		if err := txn.Check(); err != nil {
			return fmt.Errorf("engine check after load: %w", err)
		}
	}
	return nil
}

// countLayouts are the two layouts every row of count_bench runs on: plain
// DBIs, and DLMDB's (prefix compression on in both columns).
var countLayouts = []struct {
	suffix string
	flags  uint
}{
	{"", 0},
	{" — both prefix-compressed", ourslmdb.PrefixCompression},
}

// countRange is one inclusive key range [lo, hi] of the query set.
type countRange struct{ lo, hi int }

func runCount(c *Config) (*Table, error) {
	sz := countPreset(c)
	maxKeys := max(sz.Keys, sz.DupKeys)
	keys := makeDecimals('k', countKeyWidth, maxKeys)
	vals := makeDecimals('v', countKeyWidth, sz.Keys)
	dupVals := makeDecimals('d', countDupWidth, sz.Dups)
	order := Perm(sz.Keys, 0xc0de)
	dupOrder := Perm(sz.DupKeys, 0xd0d0)

	t := &Table{Sides: []string{"baseline", "counted"}}
	progress := func(s string) { c.Logf("  %s", s) }

	// --- the query set (the same for both layouts).
	rng := amRng{s: 0x5eed}
	ranges := make([]countRange, sz.Queries)
	for i := range ranges {
		lo := rng.intn(sz.Keys)
		ranges[i] = countRange{lo, min(lo+sz.Span, sz.Keys-1)}
	}
	dupRanges := make([]countRange, sz.Queries)
	for i := range dupRanges {
		lo := rng.intn(sz.DupKeys)
		dupRanges[i] = countRange{lo, min(lo+sz.Span, sz.DupKeys-1)}
	}
	ranks := make([]uint64, sz.Queries)
	for i := range ranks {
		ranks[i] = uint64(rng.intn(sz.Keys))
	}

	// Each layout runs every row: the plain one (DLMDB's rows without prefix
	// compression) and DLMDB's own layout, prefix compression on for both
	// columns.
	var insNames []string
	for _, lay := range countLayouts {
		// --- insert cost: the same shuffled load into an uncounted and a counted DBI.
		insertRow := func(name, size string, dups int, ord []int32) error {
			if !c.WantRow(name) {
				return nil
			}
			c.Logf("count: %s", name)
			side := func(counted bool) Side {
				label := "uncounted"
				if counted {
					label = "counted"
				}
				return Side{Name: label, Measure: func(r int) (float64, error) {
					d, el, err := countLoadAs(c, counted, lay.flags, dups, keys, vals, dupVals, ord)
					if err != nil {
						return 0, err
					}
					err = d.verify(keys, vals, dupVals, r == 0)
					if cerr := d.close(); err == nil {
						err = cerr
					}
					if err != nil {
						return 0, err
					}
					return float64(el.Nanoseconds()) / 1e6, nil
				}}
			}
			st, err := Alternate(sz.Rounds, []Side{side(false), side(true)}, progress)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			t.Add(name, size, "ms", st...)
			return nil
		}
		insUnique := "insert, unique keys (baseline: uncounted DBI)" + lay.suffix
		insDup := "insert, DUPSORT (baseline: uncounted DBI)" + lay.suffix
		insNames = append(insNames, insUnique, insDup)
		if err := insertRow(insUnique, fmt.Sprintf("%s keys, shuffled, 1 txn", Comma(sz.Keys)), 1, order); err != nil {
			return nil, err
		}
		if err := insertRow(insDup, fmt.Sprintf("%s keys × %d dups = %s values, shuffled, 1 txn",
			Comma(sz.DupKeys), sz.Dups, Comma(sz.DupKeys*sz.Dups)), sz.Dups, dupOrder); err != nil {
			return nil, err
		}

		// --- queries on one counted unique and one counted DUPSORT database.
		rangeName := "range count, unique (baseline: cursor walk, MDB_SET_RANGE + MDB_NEXT)" + lay.suffix
		rankNames := []string{
			"rank → entry (baseline: MDB_FIRST + r × MDB_NEXT; counted: Cursor.GetRank)" + lay.suffix,
			"rank → entry (baseline: MDB_FIRST + r × MDB_NEXT; counted: Txn.GetRank)" + lay.suffix,
			"key → rank (baseline: walk from MDB_FIRST to the key; counted: Txn.KeyRank)" + lay.suffix,
		}
		dupName := "range count, DUPSORT values (baseline: MDB_NEXT_NODUP + Cursor.Count per key)" + lay.suffix
		wantUnique := c.WantRow(rangeName)
		for _, n := range rankNames {
			wantUnique = wantUnique || c.WantRow(n)
		}
		if wantUnique {
			c.Logf("count: loading the counted unique database (%s keys%s)", Comma(sz.Keys), lay.suffix)
			d, _, err := countLoadAs(c, true, lay.flags, 1, keys, vals, dupVals, order)
			if err != nil {
				return nil, err
			}
			err = d.verify(keys, vals, dupVals, false)
			if err == nil {
				walk, counted := rangeSides(d, keys, ranges)
				err = countQueryRow(c, t, sz.Rounds, rangeName,
					fmt.Sprintf("%s keys, %s queries × %s keys", Comma(sz.Keys), Comma(len(ranges)), Comma(sz.Span+1)), walk, counted)
			}
			rs := rankSides(d, keys, vals, ranks, sz.NaiveRank)
			rankSize := fmt.Sprintf("%s keys, %s random ranks (baseline: first %s)", Comma(sz.Keys), Comma(len(ranks)), Comma(sz.NaiveRank))
			for i, pair := range [][2]Side{{rs.walk, rs.cursorRank}, {rs.walk, rs.txnRank}, {rs.keyWalk, rs.keyRank}} {
				if err == nil {
					err = countQueryRow(c, t, sz.Rounds, rankNames[i], rankSize, pair[0], pair[1])
				}
			}
			if cerr := d.close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
		}
		if c.WantRow(dupName) {
			c.Logf("count: loading the counted DUPSORT database (%s values%s)", Comma(sz.DupKeys*sz.Dups), lay.suffix)
			d, _, err := countLoadAs(c, true, lay.flags, sz.Dups, keys, vals, dupVals, dupOrder)
			if err != nil {
				return nil, err
			}
			err = d.verify(keys, vals, dupVals, false)
			if err == nil {
				walk, counted := dupSides(d, keys, dupRanges)
				err = countQueryRow(c, t, sz.Rounds, dupName, fmt.Sprintf("%s keys × %d dups, %s queries × %s keys",
					Comma(sz.DupKeys), d.dups, Comma(len(dupRanges)), Comma(sz.Span+1)), walk, counted)
			}
			if cerr := d.close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, err
			}
		}
	}

	t.Notes = countNotes(t, sz, insNames)
	return t, nil
}

// readTxn begins a RawRead read-only transaction with a cursor on d.
func (d *countDB) readTxn() (*ourslmdb.Txn, *ourslmdb.Cursor, error) {
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

func usPer(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / 1000 / float64(n) }

const inclusive = ourslmdb.CountLowerIncl | ourslmdb.CountUpperIncl

// rangeSides are the two sides of the unique range-count row: a cursor walk
// over every key of the range, and Txn.CountRange. Each round checks every
// answer against the number of keys in the range.
func rangeSides(d *countDB, keys decimalTable, ranges []countRange) (walk, counted Side) {
	got := make([]uint64, len(ranges))
	check := func(what string) error {
		for i, q := range ranges {
			if want := uint64(q.hi-q.lo+1) * uint64(d.dups); got[i] != want {
				return fmt.Errorf("%s: query %d [%d, %d] counted %d, want %d", what, i, q.lo, q.hi, got[i], want)
			}
		}
		return nil
	}
	walk = Side{Name: "cursor walk", Measure: func(int) (float64, error) {
		txn, cur, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(got)
		t0 := time.Now()
		for i, q := range ranges {
			hi := keys.At(q.hi)
			var n uint64
			k, _, err := cur.Get(keys.At(q.lo), nil, ourslmdb.SetRange)
			for err == nil && bytes.Compare(k, hi) <= 0 {
				n++
				k, _, err = cur.Get(nil, nil, ourslmdb.Next)
			}
			if err != nil && !ourslmdb.IsNotFound(err) {
				return 0, err
			}
			got[i] = n
		}
		el := time.Since(t0)
		return usPer(el, len(ranges)), check("cursor walk")
	}}
	counted = Side{Name: "CountRange", Measure: func(int) (float64, error) {
		txn, _, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(got)
		t0 := time.Now()
		for i, q := range ranges {
			n, err := txn.CountRange(d.dbi, keys.At(q.lo), keys.At(q.hi), inclusive)
			if err != nil {
				return 0, err
			}
			got[i] = n
		}
		el := time.Since(t0)
		return usPer(el, len(ranges)), check("CountRange")
	}}
	return walk, counted
}

// rankSideSet are the sides of the rank rows (unique database). The walks
// start at the first entry, so they only run the first naive queries
// (DLMDB samples 128); all times are per query.
type rankSideSet struct {
	walk, cursorRank, txnRank, keyWalk, keyRank Side
}

func rankSides(d *countDB, keys, vals decimalTable, ranks []uint64, naive int) rankSideSet {
	type hit struct{ k, v []byte }
	hits := make([]hit, len(ranks))
	checkHits := func(what string, n int) error {
		for i := 0; i < n; i++ {
			r := int(ranks[i])
			if !bytes.Equal(hits[i].k, keys.At(r)) || !bytes.Equal(hits[i].v, vals.At(r)) {
				return fmt.Errorf("%s: rank %d gave %q=%q: wrong entry", what, r, hits[i].k, hits[i].v)
			}
		}
		return nil
	}
	keep := newViewKeeper(d.extra&ourslmdb.PrefixCompression != 0, len(ranks))
	rankOf := make([]uint64, len(ranks))
	checkRanks := func(what string, n int) error {
		for i := 0; i < n; i++ {
			if rankOf[i] != ranks[i] {
				return fmt.Errorf("%s: key %d has rank %d: wrong rank", what, ranks[i], rankOf[i])
			}
		}
		return nil
	}
	var s rankSideSet
	s.walk = Side{Name: "walk", Measure: func(int) (float64, error) {
		txn, cur, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(hits)
		t0 := time.Now()
		for i := 0; i < naive; i++ {
			k, v, err := cur.Get(nil, nil, ourslmdb.First)
			for s := ranks[i]; s > 0 && err == nil; s-- {
				k, v, err = cur.Get(nil, nil, ourslmdb.Next)
			}
			if err != nil {
				return 0, fmt.Errorf("walk to rank %d: %w", ranks[i], err)
			}
			k, v = keep.pair(i, k, v)
			hits[i] = hit{k, v}
		}
		el := time.Since(t0)
		return usPer(el, naive), checkHits("walk", naive)
	}}
	s.cursorRank = Side{Name: "Cursor.GetRank", Measure: func(int) (float64, error) {
		txn, cur, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(hits)
		t0 := time.Now()
		for i, r := range ranks {
			k, v, err := cur.GetRank(r)
			if err != nil {
				return 0, fmt.Errorf("GetRank %d: %w", r, err)
			}
			k, v = keep.pair(i, k, v)
			hits[i] = hit{k, v}
		}
		el := time.Since(t0)
		return usPer(el, len(ranks)), checkHits("Cursor.GetRank", len(ranks))
	}}
	s.txnRank = Side{Name: "Txn.GetRank", Measure: func(int) (float64, error) {
		txn, _, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(hits)
		t0 := time.Now()
		for i, r := range ranks {
			k, v, err := txn.GetRank(d.dbi, r)
			if err != nil {
				return 0, fmt.Errorf("Rank %d: %w", r, err)
			}
			k, v = keep.pair(i, k, v)
			hits[i] = hit{k, v}
		}
		el := time.Since(t0)
		return usPer(el, len(ranks)), checkHits("Txn.GetRank", len(ranks))
	}}
	s.keyWalk = Side{Name: "walk", Measure: func(int) (float64, error) {
		txn, cur, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(rankOf)
		t0 := time.Now()
		for i := 0; i < naive; i++ {
			want := keys.At(int(ranks[i]))
			var r uint64
			k, _, err := cur.Get(nil, nil, ourslmdb.First)
			for err == nil && !bytes.Equal(k, want) {
				r++
				k, _, err = cur.Get(nil, nil, ourslmdb.Next)
			}
			if err != nil {
				return 0, fmt.Errorf("walk to key %d: %w", ranks[i], err)
			}
			rankOf[i] = r
		}
		el := time.Since(t0)
		return usPer(el, naive), checkRanks("walk", naive)
	}}
	s.keyRank = Side{Name: "Txn.KeyRank", Measure: func(int) (float64, error) {
		txn, _, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(rankOf)
		t0 := time.Now()
		for i, r := range ranks {
			n, err := txn.KeyRank(d.dbi, keys.At(int(r)), nil)
			if err != nil {
				return 0, fmt.Errorf("KeyRank of key %d: %w", r, err)
			}
			rankOf[i] = n
		}
		el := time.Since(t0)
		return usPer(el, len(ranks)), checkRanks("Txn.KeyRank", len(ranks))
	}}
	return s
}

// dupSides are the two sides of the DUPSORT range-count row: a walk over
// the keys of the range adding Cursor.Count (DLMDB's "cursor
// (mdb_cursor_count)"), and Txn.CountValues.
func dupSides(d *countDB, keys decimalTable, ranges []countRange) (walk, counted Side) {
	got := make([]uint64, len(ranges))
	check := func(what string) error {
		for i, q := range ranges {
			if want := uint64(q.hi-q.lo+1) * uint64(d.dups); got[i] != want {
				return fmt.Errorf("%s: query %d [%d, %d] counted %d values, want %d", what, i, q.lo, q.hi, got[i], want)
			}
		}
		return nil
	}
	walk = Side{Name: "Cursor.Count walk", Measure: func(int) (float64, error) {
		txn, cur, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(got)
		t0 := time.Now()
		for i, q := range ranges {
			hi := keys.At(q.hi)
			var total uint64
			k, _, err := cur.Get(keys.At(q.lo), nil, ourslmdb.SetRange)
			for err == nil && bytes.Compare(k, hi) <= 0 {
				var n uint64
				if n, err = cur.Count(); err != nil {
					return 0, err
				}
				total += n
				k, _, err = cur.Get(nil, nil, ourslmdb.NextNoDup)
			}
			if err != nil && !ourslmdb.IsNotFound(err) {
				return 0, err
			}
			got[i] = total
		}
		el := time.Since(t0)
		return usPer(el, len(ranges)), check("Cursor.Count walk")
	}}
	counted = Side{Name: "CountValues", Measure: func(int) (float64, error) {
		txn, _, err := d.readTxn()
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		clear(got)
		t0 := time.Now()
		for i, q := range ranges {
			n, err := txn.CountValues(d.dbi, keys.At(q.lo), keys.At(q.hi), inclusive)
			if err != nil {
				return 0, err
			}
			got[i] = n
		}
		el := time.Since(t0)
		return usPer(el, len(ranges)), check("CountValues")
	}}
	return walk, counted
}

// viewKeeper copies keys and values that a timed loop keeps for checking
// after the timer. Under RawRead a key decoded from a prefix-compressed page
// (and a Txn.GetRank result) lasts only until the next call, so on such layouts
// it must be copied at once; buffers are allocated up front, so the copy is
// a memmove in the timed loop. Off (plain layouts), pair returns its
// arguments: views into the map stay valid for the transaction.
type viewKeeper struct {
	on   bool
	bufs [][]byte
}

func newViewKeeper(on bool, n int) *viewKeeper {
	vk := &viewKeeper{on: on}
	if on {
		vk.bufs = make([][]byte, 2*n)
		for i := range vk.bufs {
			vk.bufs[i] = make([]byte, 0, 64)
		}
	}
	return vk
}

func (vk *viewKeeper) pair(i int, k, v []byte) ([]byte, []byte) {
	if !vk.on {
		return k, v
	}
	vk.bufs[2*i] = append(vk.bufs[2*i][:0], k...)
	vk.bufs[2*i+1] = append(vk.bufs[2*i+1][:0], v...)
	return vk.bufs[2*i], vk.bufs[2*i+1]
}

// countQueryRow runs one alternating comparison and adds it to t.
func countQueryRow(c *Config, t *Table, rounds int, name, size string, sides ...Side) error {
	if !c.WantRow(name) {
		return nil
	}
	c.Logf("count: %s", name)
	st, err := Alternate(rounds, sides, func(s string) { c.Logf("  %s", s) })
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	t.Add(name, size, "µs/query", st...)
	return nil
}

// countNotes: insNames are the insert rows' names, unique then DUPSORT, per
// layout (countLayouts order).
func countNotes(t *Table, sz countSizes, insNames []string) []string {
	overhead := ""
	for _, r := range t.Rows {
		for i, n := range insNames {
			if r.Name != n || r.Stats[0].Median <= 0 {
				continue
			}
			what := "unique"
			if i%2 == 1 {
				what = "DUPSORT"
			}
			if lay := countLayouts[i/2]; lay.flags != 0 {
				what += " (prefix-compressed)"
			}
			overhead += fmt.Sprintf(" %s %.3fx;", what, r.Stats[1].Median/r.Stats[0].Median)
		}
	}
	notes := []string{
		"Both columns run on this module (stock LMDB has no MDB_COUNTED). \"baseline\" is an uncounted DBI for the insert rows and, for the query rows, " +
			"the cursor loop a program needs without counts, run on the same counted database through the same Go API; the last column is the speedup of counted over baseline " +
			"(below 1x on insert rows = counting costs time).",
		fmt.Sprintf("Keys are \"k\" + 9 digits, inserted in a shuffled order in one write transaction (puts + commit timed; env NOLOCK|NOSYNC|NOMETASYNC, so no fsync is timed); "+
			"range queries are inclusive [lo, lo+%s] with random lo; %d alternating rounds per row; every round checks each count / entry / rank against the known answer.",
			Comma(sz.Span), sz.Rounds),
		"Each baseline step is one cgo call (Cursor.Get / Cursor.Count), so baseline times include the Go binding's per-call cost that DLMDB's C loop does not pay; ratios are therefore higher than a C-to-C comparison.",
		"Every row runs twice: on plain DBIs, then in DLMDB's layout (rows marked \"both prefix-compressed\": MDB_PREFIX_COMPRESSION on the DBIs of both columns, as in DLMDB's run; with prefix compression the rank rows copy each returned key and value inside the timer, since decoded views last only until the next call).",
		"DLMDB's reference (C, Apple M3 Pro, 16 KiB pages, prefix compression): insert +0.8 % unique / +1.5 % DUPSORT; range count 171.49 → 0.94 µs (182x); " +
			"rank 599.89 → 0.57 µs (1,051x); DUPSORT range count 536.04 → 1.52 µs (347x); direct mdb_get_rank 0.26 µs.",
	}
	if overhead != "" {
		notes = append(notes, "Insert time of the counted DBI relative to the uncounted one here (median / median; 1.010x = 1 % overhead):"+overhead[:len(overhead)-1]+".")
	}
	return notes
}
