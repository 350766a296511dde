//go:build !dlmdb_standin

package bench

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"time"

	dlmdb "github.com/dlmdb/dlmdb-go"
	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// leaf2_bench: DLMDB's leaf2_bench table on this module. The same 8-byte
// duplicates are stored in a DUPSORT|COUNTED|PREFIX_COMPRESSION DBI and in
// the same with DUPFIXED (LEAF2 sub-pages and sub-trees), and each layout
// runs the whole sequence on a fresh environment per round: append, the
// footprint, GET_BOTH lookups, scans (NEXT_DUP, ListDupInto, ListDupFixed,
// and GET_MULTIPLE on the DUPFIXED layout), interior inserts, their exact
// delete, and (DUPFIXED only) the MDB_MULTIPLE put ceiling.

func init() {
	Register(Suite{ID: "leaf2", Command: "leaf2_bench", Title: "DUPFIXED (LEAF2) vs prefix-compressed DUPSORT duplicates (ours only)", Order: 81, Run: runLeaf2})
}

// leaf2Sizes are the documented sizes of cmd/leaf2_bench.
type leaf2Sizes struct {
	Keys, Dups, Lookups, Inserts, TxnVals, Passes, Rounds int
	MapSize                                               int64
}

func leaf2Preset(c *Config) leaf2Sizes {
	return leaf2Sizes{
		Keys:    c.Size(256, 64, 4),
		Dups:    4096,
		Lookups: c.Size(100_000, 50_000, 100),
		Inserts: c.Size(65_536, 16_384, 64),
		TxnVals: 65_536,
		Passes:  3,
		Rounds:  c.RoundsOr(4, 3),
		MapSize: 1 << 30,
	}
}

const (
	leaf2KeyLen  = 16
	leaf2BaseDBI = "leaf2"
	leaf2MultDBI = "multi"
)

// The metrics of one round, in row order; leaf2Only marks the rows that
// need DUPFIXED (the other layout reports no value there).
var leaf2Metrics = []struct {
	name, unit string
	leaf2Only  bool
	per        int // what the size column adds: leaf2Per*
}{
	{"append (cursor puts, MDB_APPENDDUP), 65,536-value txns", "ns/value", false, 0},
	{"interior insert (cursor puts, random, between existing values), 1 txn", "ns/value", false, leaf2PerInsert},
	{"exact delete of the inserted (key, value), 1 txn", "ns/value", false, leaf2PerInsert},
	{"scalar scan: First/NextNoDup + NEXT_DUP per value", "ns/value", false, leaf2PerPass},
	{"list_dup scan: ListDupInto per key", "ns/value", false, leaf2PerPass},
	{"list_dup scan: ListDupFixed per key", "ns/value", false, leaf2PerPass},
	{"list_dup scan: ListDupRuns per key", "ns/value", false, leaf2PerPass},
	{"GET_BOTH lookup (7 of 8 present)", "ns/lookup", false, leaf2PerLookup},
	{"footprint: the DBI's pages × page size / values", "bytes/value", false, 0},
	{"footprint after append: environment high-water mark (DLMDB's measure)", "bytes/value", false, 0},
	{"GET_MULTIPLE/NEXT_MULTIPLE scan of all values", "ms/scan", true, leaf2PerPass},
	{"MDB_MULTIPLE put (PutMulti per key), 65,536-value txns", "M values/s", true, 0},
}

// What a leaf2 row's size names besides the data.
const (
	leaf2PerInsert = 1 + iota
	leaf2PerPass
	leaf2PerLookup
)

// leaf2Key is key k: "leaf2/key/" and k in 6 lowercase hex digits.
func leaf2Key(dst []byte, k int) []byte {
	const hex = "0123456789abcdef"
	b := append(dst[:0], "leaf2/key/"...)
	for s := 20; s >= 0; s -= 4 {
		b = append(b, hex[(k>>s)&15])
	}
	return b
}

// leaf2Val is the 8-byte value (k << 32 | x) big-endian: the base data has
// x = 2i for i < dups, the interior inserts odd x between them.
func leaf2Val(dst []byte, k, x int) []byte {
	binary.BigEndian.PutUint64(dst[:8], uint64(k)<<32|uint64(uint32(x)))
	return dst[:8]
}

// leaf2Fold mixes one value into a lookup's checksum: a rotate and an xor
// (order- and value-sensitive). An other size than 8 bytes mixes in its
// length instead.
func leaf2Fold(h uint64, v []byte) uint64 {
	return bits.RotateLeft64(h, 7) ^ leaf2Word(v)
}

// leaf2Word is what a value contributes to a checksum: its 8 bytes, or its
// length when it has another size.
func leaf2Word(v []byte) uint64 {
	if len(v) == 8 {
		return binary.LittleEndian.Uint64(v)
	}
	return uint64(len(v)) << 60
}

// leaf2Sum is a scan's checksum of one key's duplicates: the key's value j
// goes into lane j mod 4 with a rotate and an xor. Each lane is order- and
// value-sensitive, and a loop over a flat run of values keeps four
// independent chains, so the scan rows time the reads rather than the check
// (one chain costs about as much per value as a LEAF2 read).
type leaf2Sum struct {
	l [4]uint64
	n int
}

func (s *leaf2Sum) add(v []byte) {
	j := s.n & 3
	s.l[j] = bits.RotateLeft64(s.l[j], 7) ^ leaf2Word(v)
	s.n++
}

// addFlat adds the back-to-back 8-byte values of b (len a multiple of 8).
func (s *leaf2Sum) addFlat(b []byte) {
	for len(b) >= 8 && s.n&3 != 0 {
		s.add(b[:8])
		b = b[8:]
	}
	l0, l1, l2, l3 := s.l[0], s.l[1], s.l[2], s.l[3]
	n := 0
	for ; len(b) >= 32; b = b[32:] {
		l0 = bits.RotateLeft64(l0, 7) ^ binary.LittleEndian.Uint64(b[0:8])
		l1 = bits.RotateLeft64(l1, 7) ^ binary.LittleEndian.Uint64(b[8:16])
		l2 = bits.RotateLeft64(l2, 7) ^ binary.LittleEndian.Uint64(b[16:24])
		l3 = bits.RotateLeft64(l3, 7) ^ binary.LittleEndian.Uint64(b[24:32])
		n += 4
	}
	s.l = [4]uint64{l0, l1, l2, l3}
	s.n += n
	for len(b) >= 8 {
		s.add(b[:8])
		b = b[8:]
	}
}

// fold mixes the finished key's sum (its lanes and value count) into h and
// clears s for the next key.
func (s *leaf2Sum) fold(h uint64) uint64 {
	for _, l := range s.l {
		h = (h ^ l) * 0x9e3779b97f4a7c15
	}
	h = (h ^ uint64(s.n)) * 0x9e3779b97f4a7c15
	*s = leaf2Sum{}
	return h
}

// leaf2DB is one layout's environment during a round.
type leaf2DB struct {
	env   *ourslmdb.Env
	dbi   ourslmdb.DBI
	dir   string
	flags uint
	sz    leaf2Sizes
	keys  []byte
	want  uint64 // checksum of one scan of the base data
}

func (d *leaf2DB) key(k int) []byte {
	return d.keys[k*leaf2KeyLen : (k+1)*leaf2KeyLen : (k+1)*leaf2KeyLen]
}

func (d *leaf2DB) fixed() bool { return d.flags&ourslmdb.DupFixed != 0 }

func newLeaf2DB(c *Config, sz leaf2Sizes, flags uint) (*leaf2DB, error) {
	dir, err := c.TempDir("leaf2")
	if err != nil {
		return nil, err
	}
	d := &leaf2DB{dir: dir, flags: flags, sz: sz, keys: make([]byte, 0, sz.Keys*leaf2KeyLen)}
	for k := 0; k < sz.Keys; k++ {
		d.keys = append(d.keys, leaf2Key(nil, k)...)
	}
	var vb [8]byte
	var sum leaf2Sum
	for k := 0; k < sz.Keys; k++ {
		d.want = foldKey(d.want, d.key(k))
		for i := 0; i < sz.Dups; i++ {
			sum.add(leaf2Val(vb[:], k, 2*i))
		}
		d.want = sum.fold(d.want)
	}
	env, err := ourslmdb.NewEnv()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	d.env = env
	if err = env.SetMapSize(sz.MapSize); err == nil {
		err = env.SetMaxDBs(2)
	}
	if err == nil {
		err = env.Open(dir, ourslmdb.NoSync|ourslmdb.NoMetaSync|ourslmdb.NoLock, 0o644)
	}
	if err == nil {
		err = env.Update(func(txn *ourslmdb.Txn) (err error) {
			d.dbi, err = txn.OpenDBI(leaf2BaseDBI, flags|ourslmdb.Create)
			return err
		})
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

func (d *leaf2DB) close() error {
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

// write runs one write txn with a cursor on the base DBI; the returned
// time covers body (the operations), not the cursor's opening or the
// commit.
func (d *leaf2DB) write(body func(txn *ourslmdb.Txn, cur *ourslmdb.Cursor) error) (time.Duration, error) {
	txn, err := d.env.BeginTxn(nil, 0)
	if err != nil {
		return 0, err
	}
	cur, err := txn.OpenCursor(d.dbi)
	if err != nil {
		txn.Abort()
		return 0, err
	}
	t0 := time.Now()
	err = body(txn, cur)
	el := time.Since(t0)
	cur.Close()
	if err != nil {
		txn.Abort()
		return 0, err
	}
	return el, txn.Commit()
}

// view runs fn in a RawRead read txn with a cursor on dbi.
func (d *leaf2DB) view(dbi ourslmdb.DBI, fn func(txn *ourslmdb.Txn, cur *ourslmdb.Cursor) error) error {
	txn, err := d.env.BeginTxn(nil, ourslmdb.Readonly)
	if err != nil {
		return err
	}
	defer txn.Abort()
	txn.RawRead = true
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return err
	}
	defer cur.Close()
	return fn(txn, cur)
}

// checkEntries compares dbi's value count with want.
func (d *leaf2DB) checkEntries(dbi ourslmdb.DBI, want int, after string) error {
	return d.env.View(func(txn *ourslmdb.Txn) error {
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		if st.Entries != uint64(want) {
			return fmt.Errorf("after %s: %d values, want %d: wrong count", after, st.Entries, want)
		}
		return nil
	})
}

// appendAll puts the base data in ascending order, TxnVals values a txn,
// through one cursor a txn with MDB_APPENDDUP (DLMDB's "scalar append
// cursor puts").
func (d *leaf2DB) appendAll() (time.Duration, error) {
	var total time.Duration
	var vb [8]byte
	n := d.sz.Keys * d.sz.Dups
	for lo := 0; lo < n; lo += d.sz.TxnVals {
		el, err := d.write(func(txn *ourslmdb.Txn, cur *ourslmdb.Cursor) error {
			for idx := lo; idx < min(n, lo+d.sz.TxnVals); idx++ {
				k, i := idx/d.sz.Dups, idx%d.sz.Dups
				if err := cur.Put(d.key(k), leaf2Val(vb[:], k, 2*i), ourslmdb.AppendDup); err != nil {
					return fmt.Errorf("append key %d value %d: %w", k, i, err)
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		total += el
	}
	return total, d.checkEntries(d.dbi, n, "append")
}

// footprint is the bytes of every page of the DBI (its duplicate sub-trees
// included) per value.
func (d *leaf2DB) footprint() (float64, error) {
	var out float64
	err := d.view(d.dbi, func(txn *ourslmdb.Txn, _ *ourslmdb.Cursor) error {
		fp, err := dlmdb.Footprint(txn, d.dbi, nil)
		if err != nil {
			return err
		}
		st, err := txn.Stat(d.dbi)
		if err != nil {
			return err
		}
		n := uint64(d.sz.Keys * d.sz.Dups)
		if fp.Entries != n || fp.Keys != uint64(d.sz.Keys) {
			return fmt.Errorf("footprint: %d keys, %d values; want %d, %d: wrong count", fp.Keys, fp.Entries, d.sz.Keys, n)
		}
		pages := fp.BranchPages + fp.LeafPages + fp.OverflowPages + fp.DupBranchPages + fp.DupLeafPages
		if pages == 0 {
			return fmt.Errorf("footprint: no pages: wrong walk")
		}
		out = float64(pages) * float64(st.PSize) / float64(n)
		return nil
	})
	return out, err
}

// highWater is the environment's page high-water mark (its last page in
// use, plus one, × page size) per value: DLMDB's footprint, which counts
// the meta pages, the main DB and the pages freed by earlier txns too.
func (d *leaf2DB) highWater() (float64, error) {
	info, err := d.env.Info()
	if err != nil {
		return 0, err
	}
	st, err := d.env.Stat()
	if err != nil {
		return 0, err
	}
	if info.LastPNO <= 0 {
		return 0, fmt.Errorf("high-water mark: last page %d: wrong info", info.LastPNO)
	}
	return float64(info.LastPNO+1) * float64(st.PSize) / float64(d.sz.Keys*d.sz.Dups), nil
}

// lookups runs GET_BOTH of the planned pairs; every eighth is absent (an
// odd x). Found and missing counts are checked against the plan.
func (d *leaf2DB) lookups(plan []int32) (time.Duration, error) {
	vals := make([]byte, 8*len(plan))
	wantFound := 0
	for j, idx := range plan {
		k, i := int(idx)/d.sz.Dups, int(idx)%d.sz.Dups
		x := 2 * i
		if j%8 == 7 {
			x++
		} else {
			wantFound++
		}
		leaf2Val(vals[8*j:], k, x)
	}
	var el time.Duration
	err := d.view(d.dbi, func(_ *ourslmdb.Txn, cur *ourslmdb.Cursor) error {
		found := 0
		var h, wantH uint64
		t0 := time.Now()
		for j, idx := range plan {
			_, v, err := cur.Get(d.key(int(idx)/d.sz.Dups), vals[8*j:8*j+8], ourslmdb.GetBoth)
			if err == nil {
				found++
				h = leaf2Fold(h, v)
			} else if !ourslmdb.IsNotFound(err) {
				return err
			}
		}
		el = time.Since(t0)
		for j := range plan {
			if j%8 != 7 {
				wantH = leaf2Fold(wantH, vals[8*j:8*j+8])
			}
		}
		if found != wantFound || h != wantH {
			return fmt.Errorf("GET_BOTH found %d pairs (checksum %#x), want %d (%#x): wrong answers", found, h, wantFound, wantH)
		}
		return nil
	})
	return el, err
}

// scan modes.
const (
	leaf2ScanNextDup = iota
	leaf2ScanListDup
	leaf2ScanListFixed
	leaf2ScanListRuns
	leaf2ScanMultiple
)

// scanPass reads every value of dbi once in the given mode and returns the
// checksum (keys and values) and the value count.
func (d *leaf2DB) scanPass(cur *ourslmdb.Cursor, mode int, vals [][]byte, flat []byte) (h uint64, n int, _ [][]byte, _ []byte, err error) {
	var sum leaf2Sum
	k, v, err := cur.Get(nil, nil, ourslmdb.First)
	for err == nil {
		h = foldKey(h, k)
		switch mode {
		case leaf2ScanNextDup:
			for err == nil {
				sum.add(v)
				n++
				_, v, err = cur.Get(nil, nil, ourslmdb.NextDup)
			}
		case leaf2ScanListDup:
			vals, err = cur.ListDupInto(vals)
			for _, v := range vals {
				sum.add(v)
			}
			n += len(vals)
		case leaf2ScanListFixed:
			var stride int
			flat, stride, err = cur.ListDupFixed(flat)
			if err == nil && (stride != 8 || len(flat)%8 != 0) {
				return h, n, vals, flat, fmt.Errorf("ListDupFixed: %d bytes, stride %d: want 8-byte values", len(flat), stride)
			}
			sum.addFlat(flat)
			n += len(flat) / 8
		case leaf2ScanListRuns:
			var stride int
			vals, stride, err = cur.ListDupRuns(vals) // vals holds the runs here
			if err == nil && stride != 8 {
				return h, n, vals, flat, fmt.Errorf("ListDupRuns: stride %d: want 8-byte values", stride)
			}
			for _, run := range vals {
				if len(run)%8 != 0 {
					return h, n, vals, flat, fmt.Errorf("ListDupRuns: a run of %d bytes: want 8-byte values", len(run))
				}
				sum.addFlat(run)
				n += len(run) / 8
			}
		case leaf2ScanMultiple:
			_, v, err = cur.Get(nil, nil, ourslmdb.GetMultiple)
			for err == nil {
				if len(v) == 0 || len(v)%8 != 0 {
					return h, n, vals, flat, fmt.Errorf("GET_MULTIPLE returned %d bytes: want a multiple of 8", len(v))
				}
				sum.addFlat(v)
				n += len(v) / 8
				_, v, err = cur.Get(nil, nil, ourslmdb.NextMultiple)
			}
		}
		if err != nil && !ourslmdb.IsNotFound(err) {
			return h, n, vals, flat, err
		}
		h = sum.fold(h)
		k, v, err = cur.Get(nil, nil, ourslmdb.NextNoDup)
	}
	if !ourslmdb.IsNotFound(err) {
		return h, n, vals, flat, err
	}
	return h, n, vals, flat, nil
}

// scans times Passes scans of dbi in mode and checks each against the base
// data; it returns the time of all passes.
func (d *leaf2DB) scans(dbi ourslmdb.DBI, mode int) (time.Duration, error) {
	var el time.Duration
	err := d.view(dbi, func(_ *ourslmdb.Txn, cur *ourslmdb.Cursor) error {
		sums := make([]uint64, d.sz.Passes)
		counts := make([]int, d.sz.Passes)
		var vals [][]byte
		var flat []byte
		var err error
		t0 := time.Now()
		for p := range sums {
			sums[p], counts[p], vals, flat, err = d.scanPass(cur, mode, vals, flat)
			if err != nil {
				return err
			}
		}
		el = time.Since(t0)
		for p := range sums {
			if counts[p] != d.sz.Keys*d.sz.Dups || sums[p] != d.want {
				return fmt.Errorf("scan mode %d pass %d: %d values, checksum %#x; want %d, %#x: wrong values", mode, p+1, counts[p], sums[p], d.sz.Keys*d.sz.Dups, d.want)
			}
		}
		return nil
	})
	return el, err
}

// interior puts the planned odd values (between the base ones) in one txn.
func (d *leaf2DB) interior(plan []int32) (time.Duration, error) {
	var vb [8]byte
	el, err := d.write(func(_ *ourslmdb.Txn, cur *ourslmdb.Cursor) error {
		for _, idx := range plan {
			k, i := int(idx)/d.sz.Dups, int(idx)%d.sz.Dups
			if err := cur.Put(d.key(k), leaf2Val(vb[:], k, 2*i+1), ourslmdb.NoDupData); err != nil {
				return fmt.Errorf("interior insert key %d after value %d: %w", k, i, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := d.checkEntries(d.dbi, d.sz.Keys*d.sz.Dups+len(plan), "interior insert"); err != nil {
		return 0, err
	}
	// Every inserted value sits right after its base neighbour.
	err = d.view(d.dbi, func(_ *ourslmdb.Txn, cur *ourslmdb.Cursor) error {
		var b0 [8]byte
		for _, idx := range plan[:min(len(plan), 64)] {
			k, i := int(idx)/d.sz.Dups, int(idx)%d.sz.Dups
			if _, _, err := cur.Get(d.key(k), leaf2Val(b0[:], k, 2*i), ourslmdb.GetBoth); err != nil {
				return fmt.Errorf("interior insert: base value %d of key %d: %w", i, k, err)
			}
			_, v, err := cur.Get(nil, nil, ourslmdb.NextDup)
			if err != nil || len(v) != 8 || binary.BigEndian.Uint64(v) != uint64(k)<<32|uint64(2*i+1) {
				return fmt.Errorf("interior insert: after value %d of key %d read %x (%v): wrong order", i, k, v, err)
			}
		}
		return nil
	})
	return el, err
}

// exactDelete deletes the planned odd values again, last inserted first.
func (d *leaf2DB) exactDelete(plan []int32) (time.Duration, error) {
	var vb [8]byte
	el, err := d.write(func(txn *ourslmdb.Txn, _ *ourslmdb.Cursor) error {
		for j := len(plan) - 1; j >= 0; j-- {
			k, i := int(plan[j])/d.sz.Dups, int(plan[j])%d.sz.Dups
			if err := txn.Del(d.dbi, d.key(k), leaf2Val(vb[:], k, 2*i+1)); err != nil {
				return fmt.Errorf("exact delete key %d value %d: %w", k, 2*i+1, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if err := d.checkEntries(d.dbi, d.sz.Keys*d.sz.Dups, "exact delete"); err != nil {
		return 0, err
	}
	_, err = d.scans(d.dbi, leaf2ScanNextDup) // the base data again, nothing else
	return el, err
}

// multiPut stores the base data again in a second DBI of the same flags
// with one PutMulti per key, TxnVals values a txn, and checks it.
func (d *leaf2DB) multiPut() (time.Duration, error) {
	var mdbi ourslmdb.DBI
	if err := d.env.Update(func(txn *ourslmdb.Txn) (err error) {
		mdbi, err = txn.OpenDBI(leaf2MultDBI, d.flags|ourslmdb.Create)
		return err
	}); err != nil {
		return 0, err
	}
	page := make([]byte, 8*d.sz.Dups)
	perTxn := max(1, d.sz.TxnVals/d.sz.Dups)
	var total time.Duration
	for lo := 0; lo < d.sz.Keys; lo += perTxn {
		txn, err := d.env.BeginTxn(nil, 0)
		if err != nil {
			return 0, err
		}
		cur, err := txn.OpenCursor(mdbi)
		if err != nil {
			txn.Abort()
			return 0, err
		}
		var el time.Duration
		for k := lo; k < min(d.sz.Keys, lo+perTxn); k++ {
			for i := 0; i < d.sz.Dups; i++ {
				leaf2Val(page[8*i:], k, 2*i)
			}
			t0 := time.Now()
			err = cur.PutMulti(d.key(k), page, 8, 0)
			el += time.Since(t0)
			if err != nil {
				break
			}
		}
		cur.Close()
		if err != nil {
			txn.Abort()
			return 0, fmt.Errorf("PutMulti: %w", err)
		}
		if err := txn.Commit(); err != nil {
			return 0, err
		}
		total += el
	}
	if err := d.checkEntries(mdbi, d.sz.Keys*d.sz.Dups, "MDB_MULTIPLE put"); err != nil {
		return 0, err
	}
	_, err := d.scans(mdbi, leaf2ScanMultiple)
	return total, err
}

// leaf2Plans are the random choices every round of both layouts shares:
// GET_BOTH pairs and the interior inserts (distinct base positions).
type leaf2Plans struct {
	lookups, inserts []int32
}

func makeLeaf2Plans(sz leaf2Sizes, seed uint64) leaf2Plans {
	n := sz.Keys * sz.Dups
	rng := &amRng{s: seed}
	p := leaf2Plans{lookups: make([]int32, sz.Lookups)}
	for j := range p.lookups {
		p.lookups[j] = int32(rng.intn(n))
	}
	p.inserts = Perm(n, seed^0x1eaf)[:min(n, sz.Inserts)]
	return p
}

// leaf2Round runs the whole sequence once on a fresh environment and returns
// the metrics in leaf2Metrics order (0 for the rows its layout lacks).
func leaf2Round(c *Config, sz leaf2Sizes, flags uint, p leaf2Plans) ([]float64, error) {
	d, err := newLeaf2DB(c, sz, flags)
	if err != nil {
		return nil, err
	}
	out, err := d.run(p)
	if cerr := d.close(); err == nil {
		err = cerr
	}
	return out, err
}

func (d *leaf2DB) run(p leaf2Plans) ([]float64, error) {
	n := d.sz.Keys * d.sz.Dups
	scanned := d.sz.Passes * n
	out := make([]float64, len(leaf2Metrics))
	el, err := d.appendAll()
	if err != nil {
		return nil, err
	}
	out[0] = nsPer(el, n)
	if out[8], err = d.footprint(); err != nil {
		return nil, err
	}
	if out[9], err = d.highWater(); err != nil {
		return nil, err
	}
	if el, err = d.lookups(p.lookups); err != nil {
		return nil, err
	}
	out[7] = nsPer(el, len(p.lookups))
	for _, mm := range [][2]int{{3, leaf2ScanNextDup}, {4, leaf2ScanListDup}, {5, leaf2ScanListFixed},
		{6, leaf2ScanListRuns}} {
		m, mode := mm[0], mm[1]
		if el, err = d.scans(d.dbi, mode); err != nil {
			return nil, fmt.Errorf("%s: %w", leaf2Metrics[m].name, err)
		}
		out[m] = nsPer(el, scanned)
	}
	if d.fixed() {
		if el, err = d.scans(d.dbi, leaf2ScanMultiple); err != nil {
			return nil, err
		}
		out[10] = ms(el) / float64(d.sz.Passes)
	}
	if el, err = d.interior(p.inserts); err != nil {
		return nil, err
	}
	out[1] = nsPer(el, len(p.inserts))
	if el, err = d.exactDelete(p.inserts); err != nil {
		return nil, err
	}
	out[2] = nsPer(el, len(p.inserts))
	if d.fixed() {
		if el, err = d.multiPut(); err != nil {
			return nil, err
		}
		out[11] = float64(n) / el.Seconds() / 1e6
	}
	return out, nil
}

func runLeaf2(c *Config) (*Table, error) {
	sz := leaf2Preset(c)
	t := &Table{Sides: []string{"DUPSORT+COUNTED+PREFIX", "+DUPFIXED (LEAF2)"}}
	want := false
	for _, m := range leaf2Metrics {
		want = want || c.WantRow(m.name)
	}
	if !want {
		return t, nil
	}
	const base = ourslmdb.DupSort | ourslmdb.Counted | ourslmdb.PrefixCompression
	flags := []uint{base, base | ourslmdb.DupFixed}
	plan := makeLeaf2Plans(sz, 0x1eaf2)
	n := sz.Keys * sz.Dups
	c.Logf("leaf2: %s keys × %s 8-byte values, %d alternating rounds", Comma(sz.Keys), Comma(sz.Dups), sz.Rounds)
	st, err := alternateRounds(sz.Rounds, t.Sides, func(side, r int) ([]float64, error) {
		v, err := leaf2Round(c, sz, flags[side], plan)
		if err == nil {
			c.Logf("  round %d/%d %s: append %s ns/value, list_dup %s ns/value, %s bytes/value",
				r+1, sz.Rounds, t.Sides[side], FormatNum(v[0]), FormatNum(v[4]), FormatNum(v[8]))
		}
		return v, err
	}, nil)
	if err != nil {
		return nil, err
	}
	size := fmt.Sprintf("%s keys × %s = %s values", Comma(sz.Keys), Comma(sz.Dups), Comma(n))
	for m, mt := range leaf2Metrics {
		if !c.WantRow(mt.name) {
			continue
		}
		rsize := size
		switch mt.per {
		case leaf2PerInsert:
			rsize += fmt.Sprintf(", %s values", Comma(len(plan.inserts)))
		case leaf2PerPass:
			rsize += fmt.Sprintf(", %d passes", sz.Passes)
		case leaf2PerLookup:
			rsize += fmt.Sprintf(", %s lookups", Comma(len(plan.lookups)))
		}
		if mt.leaf2Only {
			t.Add(mt.name, rsize, mt.unit, Stats{}, st[m][1])
		} else {
			t.Add(mt.name, rsize, mt.unit, st[m]...)
		}
	}
	t.Notes = []string{
		"Both columns run on this module: the left one a DUPSORT|MDB_COUNTED|MDB_PREFIX_COMPRESSION DBI, the right one the same with DUPFIXED (LEAF2 pages for the duplicates). The ratio is left / right, so above 1x the DUPFIXED layout is faster (or, for the footprint, smaller); the two DUPFIXED-only rows have no left value.",
		fmt.Sprintf("DLMDB's leaf2_bench workload: 16-byte keys, %s 8-byte values per key (k << 32 | 2i, big-endian), %d GiB map, NOSYNC|NOMETASYNC|NOLOCK. "+
			"One round of one layout is the whole sequence on a fresh environment (DLMDB gives the write phases fresh databases of their own): ascending cursor puts with MDB_APPENDDUP in %s-value txns, as DLMDB's append; two footprints after it: dlmdb.Footprint (the DBI's pages, duplicate sub-trees included, × page size / values) and DLMDB's measure, the environment's page high-water mark (last page + 1, × page size / values, which also counts the pages earlier txns freed); %s MDB_GET_BOTH lookups of random pairs (every eighth an absent odd value); %d scan passes each of First/NextNoDup with NEXT_DUP per value, of one ListDupInto per key, of one ListDupFixed per key (a flat copy unless the values fill one page), of one ListDupRuns per key (runs left in the map, or in the cursor's decode storage for prefix-compressed values) and (DUPFIXED) of GET_MULTIPLE/NEXT_MULTIPLE; "+
			"%s random interior inserts of odd values between existing ones through one cursor (Cursor.Put, NoDupData) in one txn, then their exact delete (Txn.Del of key and value) in one txn; (DUPFIXED) the same data again into a second DBI with one MDB_MULTIPLE put (Cursor.PutMulti) per key, in %s-value txns. Write timers cover the operations, not the commits. %d alternating rounds (A B, B A, …), all kept.",
			Comma(sz.Dups), sz.MapSize>>30, Comma(sz.TxnVals), Comma(len(plan.lookups)), sz.Passes, Comma(len(plan.inserts)), Comma(sz.TxnVals), sz.Rounds),
		"Every round verifies outside the timers: value counts after each write phase, the checksum (a rotate and an xor per value into one of four lanes per key, folded inside the scan loops) and count of every scan pass against the model, GET_BOTH found/absent counts, the order around inserted values, a full scan after the deletes, the MDB_MULTIPLE DBI's count and a GET_MULTIPLE scan of it.",
		"DLMDB's reference (C, Apple M3 Pro, 16 KiB pages; prefix DUPSORT time / DUPFIXED time): append 2.03x, interior insert 1.67x, exact delete 4.27x, scalar scan 1.72x, list_dup 17.6x, GET_BOTH 2.99x; high-water footprint after append 20.23 (prefix DUPSORT) against 16.23 bytes/value (DUPFIXED), 1.25x in this table's terms; GET_MULTIPLE scan of all values 0.434 ms; MDB_MULTIPLE put of 256 × 4,096 values 344.6 M values/s.",
	}
	return t, nil
}
