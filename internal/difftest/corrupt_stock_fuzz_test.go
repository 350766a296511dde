//go:build !dlmdb_stockonly

package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	stock "github.com/PowerDNS/lmdb-go/lmdb"
	lmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// FuzzCorruptStockFile is FuzzCorruptFile on a data file written by stock
// LMDB (0.9.33, through lmdb-go v1.9.3, linked into this binary) instead of
// by our engine. The edits, the runs (open, every kind of read, the
// checker, a write txn, a drop, copies, a second open) and the assertions
// (no crash or hang, only lmdb errors, walks in order except inside one
// page) are FuzzCorruptFile's: see corrupt_fuzz_test.go.
//
// Why a second file: stock LMDB lays out the same format differently. It
// splits pages at other points, grows inline sub-pages (and DUPFIXED ones)
// with its own slack, converts sub-pages to sub-trees at its own size,
// writes free-DB records of its own shape (here several, as a reader held
// the older ones), and leaves pages it freed unwritten at the end of the
// file. Damaged copies of such a file reach shapes of our reader that a
// file of our own making does not have. Stock cannot write counted
// databases, so the file has none.

// The named databases of the stock pristine file.
var stockCorruptDBs = []corruptDB{
	{"plain", 0},
	{"dups", lmdb.DupSort},
	{"fixed", lmdb.DupSort | lmdb.DupFixed},
	{"ints", lmdb.IntegerKey},
	{"fixed13", lmdb.DupSort | lmdb.DupFixed},
}

// The kinds of page and node the stock pristine file must hold (no
// counted branch pages: stock cannot write them).
var stockCorruptKinds = []string{"overflow", "free", "leaf2", "branch", "leaf", "intleaf", "subtree-rec", "subpage", "dbrec", "bignode"}

var (
	stockCorruptOnce sync.Once
	stockCorruptImg  *corruptBase
)

func stockCorruptPristine() *corruptBase {
	stockCorruptOnce.Do(func() {
		stockCorruptImg = buildStockCorruptBase()
	})
	return stockCorruptImg
}

// stockFill is the first txn of the stock pristine file: every database
// and most of its contents.
func stockFill(txn *stock.Txn) error {
	root, err := txn.OpenRoot(0)
	if err != nil {
		return err
	}
	for i := 0; i < 36; i++ {
		if err := txn.Put(root, []byte(fmt.Sprintf("main-%03d", i)), bytes.Repeat([]byte{'s'}, 12+2*i), 0); err != nil {
			return err
		}
	}
	dbis := map[string]stock.DBI{}
	for _, d := range stockCorruptDBs {
		dbi, err := txn.OpenDBI(d.name, d.flags|stock.Create)
		if err != nil {
			return fmt.Errorf("stock: create %s: %w", d.name, err)
		}
		dbis[d.name] = dbi
	}
	put := func(db string, k, v []byte) error {
		if err := txn.Put(dbis[db], k, v, 0); err != nil {
			return fmt.Errorf("stock: put %s %q: %w", db, k, err)
		}
		return nil
	}
	for i := 0; i < 260; i++ { // keys of 3..7 bytes: odd and even lengths
		if err := put("plain", []byte(fmt.Sprintf("q%0*d", 2+i%5, i)), bytes.Repeat([]byte{byte(i * 7)}, 6+i%85)); err != nil {
			return err
		}
	}
	// overflow runs of 1, 2 and 3 pages, and values either side of the
	// size where a value leaves the page
	for i, n := range []int{2500, 6500, 12000, 1900, 2030, 2100} {
		if err := put("plain", []byte(fmt.Sprintf("big%d", i)), bytes.Repeat([]byte{byte('a' + i)}, n)); err != nil {
			return err
		}
	}
	for i := 0; i < 36; i++ { // inline sub-pages of 1..7 duplicates
		for j := 0; j <= i%7; j++ {
			if err := put("dups", []byte(fmt.Sprintf("e%02d", i)), []byte(fmt.Sprintf("u%02d%s", j, strings.Repeat("y", (i+j)%9)))); err != nil {
				return err
			}
		}
	}
	for j := 0; j < 110; j++ { // a sub-page grown into a one-leaf sub-tree
		if err := put("dups", []byte("emid"), []byte(fmt.Sprintf("mid-%016d", j*3))); err != nil {
			return err
		}
	}
	for j := 0; j < 320; j++ { // a sub-tree of depth 2
		if err := put("dups", []byte("ebig"), []byte(fmt.Sprintf("large-%011d", j*5))); err != nil {
			return err
		}
	}
	for i := 0; i < 24; i++ { // inline LEAF2 sub-pages
		for j := 0; j <= i%9; j++ {
			if err := put("fixed", []byte(fmt.Sprintf("g%02d", i)), intKey(uint64(j*5+i))); err != nil {
				return err
			}
		}
	}
	for j := 0; j < 1300; j++ { // a LEAF2 sub-tree with a branch page
		if err := put("fixed", []byte("gbig"), []byte(fmt.Sprintf("%08d", j*2))); err != nil {
			return err
		}
	}
	for i := 0; i < 170; i++ {
		if err := put("ints", intKey(uint64(i*977+3)), bytes.Repeat([]byte{byte(i)}, 12+i%9)); err != nil {
			return err
		}
	}
	for i := 0; i < 30; i++ { // LEAF2 sub-pages of an odd width, grown by stock 4 slots at a time
		for j := 0; j <= i%11; j++ {
			if err := put("fixed13", []byte(fmt.Sprintf("%0*d", 1+i%6, i)), fixed13Val(i, j)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fixed13Val is value j of key i of the stock pristine file's fixed13 DB.
func fixed13Val(i, j int) []byte { return []byte(fmt.Sprintf("v%03d-%08d", i, j*7)) }

// stockPrune is the second and third txn (step 0 and 1): deletes and
// rewrites, so that pages are freed and the free DB gets records.
func stockPrune(step int) func(txn *stock.Txn) error {
	return func(txn *stock.Txn) error {
		dbi := func(name string) (stock.DBI, error) { return txn.OpenDBI(name, 0) }
		plain, err := dbi("plain")
		if err != nil {
			return err
		}
		dups, err := dbi("dups")
		if err != nil {
			return err
		}
		fixed, err := dbi("fixed")
		if err != nil {
			return err
		}
		ints, err := dbi("ints")
		if err != nil {
			return err
		}
		fixed13, err := dbi("fixed13")
		if err != nil {
			return err
		}
		// LEAF2 sub-pages of width 13 shrunk (stock moves its slack out
		// when the size stays even) and grown again, by both steps
		for i := step; i < 30; i += 2 {
			k := []byte(fmt.Sprintf("%0*d", 1+i%6, i))
			for j := 1 + step; j <= i%11; j += 3 {
				if err := txn.Del(fixed13, k, fixed13Val(i, j)); err != nil {
					return fmt.Errorf("stock: del fixed13 %q: %w", k, err)
				}
			}
			if i%4 == step {
				if err := txn.Put(fixed13, k, fixed13Val(i, 20+step), 0); err != nil {
					return fmt.Errorf("stock: put fixed13 %q: %w", k, err)
				}
			}
		}
		del := func(d stock.DBI, k, v []byte) error {
			if err := txn.Del(d, k, v); err != nil {
				return fmt.Errorf("stock: del %q %q: %w", k, v, err)
			}
			return nil
		}
		if step == 0 {
			for i := 0; i < 260; i += 6 {
				if err := del(plain, []byte(fmt.Sprintf("q%0*d", 2+i%5, i)), nil); err != nil {
					return err
				}
			}
			// a 3-page run rewritten as a 2-page one, a 1-page run dropped
			if err := txn.Put(plain, []byte("big2"), bytes.Repeat([]byte{'Z'}, 7000), 0); err != nil {
				return err
			}
			if err := del(plain, []byte("big0"), nil); err != nil {
				return err
			}
			for i := 0; i < 36; i += 5 {
				if err := del(dups, []byte(fmt.Sprintf("e%02d", i)), []byte(fmt.Sprintf("u00%s", strings.Repeat("y", i%9)))); err != nil {
					return err
				}
			}
			for j := 0; j < 320; j += 9 {
				if err := del(dups, []byte("ebig"), []byte(fmt.Sprintf("large-%011d", j*5))); err != nil {
					return err
				}
			}
			return nil
		}
		for i := 0; i < 170; i += 4 {
			if err := del(ints, intKey(uint64(i*977+3)), nil); err != nil {
				return err
			}
		}
		for j := 0; j < 1300; j += 7 {
			if err := del(fixed, []byte("gbig"), []byte(fmt.Sprintf("%08d", j*2))); err != nil {
				return err
			}
		}
		for i := 0; i < 40; i++ {
			if err := txn.Put(plain, []byte(fmt.Sprintf("r%03d", i)), bytes.Repeat([]byte{'r'}, 30+i), 0); err != nil {
				return err
			}
		}
		return nil
	}
}

// buildStockCorruptBase writes the stock pristine file: one txn that
// fills every database, then (while a reader holds the first snapshot, so
// that stock cannot reuse what they free) two txns of deletes, whose
// freed pages stay in the free DB as two records. Our engine then checks
// the file and counts its items.
func buildStockCorruptBase() *corruptBase {
	cb := &corruptBase{kinds: map[string][]corruptSpot{}, dbs: stockCorruptDBs}
	dir, err := os.MkdirTemp("", "corruptfuzz-stockbase-")
	if err != nil {
		cb.err = err
		return cb
	}
	defer os.RemoveAll(dir)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cb.err = writeStockCorruptFile(dir); cb.err != nil {
		return cb
	}
	// our engine reads the file through a lock file of its own
	if err := os.Remove(filepath.Join(dir, "lock.mdb")); err != nil {
		cb.err = err
		return cb
	}
	env, err := lmdb.NewEnv()
	if err != nil {
		cb.err = err
		return cb
	}
	env.SetMaxDBs(16)
	if err := env.Open(dir, lmdb.Readonly, 0o644); err != nil {
		env.Close()
		cb.err = fmt.Errorf("our engine opening the stock pristine file: %w", err)
		return cb
	}
	if err := env.Check(); err != nil {
		env.Close()
		cb.err = fmt.Errorf("the stock pristine file fails our Check: %w", err)
		return cb
	}
	total := 0
	err = env.View(func(txn *lmdb.Txn) error {
		for _, d := range cb.dbs {
			dbi, err := txn.OpenDBI(d.name, 0)
			if err != nil {
				return err
			}
			if fl, err := txn.Flags(dbi); err != nil || fl != d.flags {
				return fmt.Errorf("db %s: flags %#x (%v), want %#x", d.name, fl, err, d.flags)
			}
			st, err := txn.Stat(dbi)
			if err != nil {
				return err
			}
			total += int(st.Entries)
		}
		return nil
	})
	env.Close()
	if err != nil {
		cb.err = fmt.Errorf("our engine reading the stock pristine file: %w", err)
		return cb
	}
	if errs, _ := walkEnv(dir); len(errs) > 0 {
		cb.err = fmt.Errorf("the stock pristine file fails walkFile: %v", errs)
		return cb
	}
	cb.file, err = os.ReadFile(filepath.Join(dir, "data.mdb"))
	if err != nil {
		cb.err = err
		return cb
	}
	cb.psize = 4096
	cb.npages = len(cb.file) / cb.psize
	if cb.npages*cb.psize != len(cb.file) || cb.npages < 3 || cb.npages > 255 {
		cb.err = fmt.Errorf("stock pristine file of %d bytes: want whole 4096-byte pages, 3 to 255", len(cb.file))
		return cb
	}
	if ps := int(cb.file[wPageHdr+24]) | int(cb.file[wPageHdr+25])<<8 | int(cb.file[wPageHdr+26])<<16; ps != cb.psize {
		cb.err = fmt.Errorf("stock pristine file has %d-byte pages, want %d", ps, cb.psize)
		return cb
	}
	cb.err = cb.classify(stockCorruptKinds)
	cb.entries += total
	return cb
}

// writeStockCorruptFile writes the stock pristine file into dir with
// stock LMDB (the caller holds its OS thread).
func writeStockCorruptFile(dir string) error {
	env, err := stock.NewEnv()
	if err != nil {
		return err
	}
	defer env.Close()
	if err := env.SetMapSize(8 << 20); err != nil {
		return err
	}
	if err := env.SetMaxDBs(16); err != nil {
		return err
	}
	if err := env.Open(dir, stock.NoSync, 0o644); err != nil {
		return fmt.Errorf("stock open: %w", err)
	}
	if err := env.Update(stockFill); err != nil {
		return err
	}
	reader, err := env.BeginTxn(nil, stock.Readonly)
	if err != nil {
		return fmt.Errorf("stock reader: %w", err)
	}
	defer reader.Abort()
	for step := 0; step < 2; step++ {
		if err := env.Update(stockPrune(step)); err != nil {
			return err
		}
	}
	return nil
}

// stockSubpageSpot is a node of the pristine file holding an inline
// sub-page that is (leaf2) or is not a LEAF2 page.
func stockSubpageSpot(cb *corruptBase, leaf2 bool) (corruptSpot, bool) {
	return stockSubpageWhere(cb, func(flags, pad, lower, upper int) bool { return (flags&wPLeaf2 != 0) == leaf2 })
}

// stockSubpageWhere is a node of the pristine file holding an inline
// sub-page whose header passes ok (the middle one of those that do).
func stockSubpageWhere(cb *corruptBase, ok func(flags, pad, lower, upper int) bool) (corruptSpot, bool) {
	var match []corruptSpot
	for _, s := range cb.kinds["subpage"] {
		p := cb.file[s.page*cb.psize : (s.page+1)*cb.psize]
		off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*s.slot:]))
		sub := off + 8 + int(binary.LittleEndian.Uint16(p[off+6:]))
		u16 := func(at int) int { return int(binary.LittleEndian.Uint16(p[sub+at:])) }
		if ok(u16(10), u16(8), u16(12), u16(14)) {
			match = append(match, s)
		}
	}
	if len(match) == 0 {
		return corruptSpot{}, false
	}
	return match[len(match)/2], true
}

func FuzzCorruptStockFile(f *testing.F) {
	cb := stockCorruptPristine()
	if cb.err != nil {
		f.Fatalf("building the stock pristine file: %v", cb.err)
	}
	spot := func(kind string) corruptSpot { return cb.kinds[kind][len(cb.kinds[kind])/2] }
	pg := func(kind string) byte { return byte(spot(kind).page) }
	sl := func(kind string) byte { return byte(spot(kind).slot) }
	firstPg := func(kind string) byte { return byte(cb.kinds[kind][0].page) }
	dupSub, ok1 := stockSubpageSpot(cb, false)
	fixedSub, ok2 := stockSubpageSpot(cb, true)
	if !ok1 || !ok2 {
		f.Fatalf("the stock pristine file lacks an inline sub-page (plain %v, LEAF2 %v)", ok1, ok2)
	}
	// a LEAF2 sub-page of 13-byte values with slack (stock's growth step
	// or a shrink it did not move out)
	slack13, ok3 := stockSubpageWhere(cb, func(flags, pad, lower, upper int) bool {
		return flags&wPLeaf2 != 0 && pad == 13 && upper > lower
	})
	if !ok3 {
		f.Fatalf("the stock pristine file lacks a LEAF2 sub-page of 13-byte values with slack")
	}
	// the newest meta (page 1: three txns) with its free DB's root moved to
	// a leaf of the INTEGERKEY DB, whose 8-byte keys pass for txnids
	freeToInts := corruptEdit{ceMeta, 1, 7, 0, 1, 0} // fallback: flip bit 0
	if d := int(pg("intleaf")) - int(binary.LittleEndian.Uint64(cb.file[cb.psize+wPageHdr+24+40:])); d >= -128 && d < 128 {
		freeToInts = corruptEdit{ceMeta, 1, 7, 0, 2, byte(int8(d))}
	}
	seeds := [][]byte{
		// meta 1: the free DB's root is a leaf of the INTEGERKEY DB
		encodeCorruptInput(0, freeToInts),
		// both metas: the last page lowered by 3 (live pages past it)
		encodeCorruptInput(coNoWrite|coCopy,
			corruptEdit{ceMeta, 0, 4, 0, 2, 0xfd},
			corruptEdit{ceMeta, 1, 4, 0, 2, 0xfd}),
		// a branch page: a child pointer's high bits
		encodeCorruptInput(0, corruptEdit{ceNodeHdr, pg("branch"), 1, 2, 0, 12}),
		// a branch page: a slot moved 2 bytes down, into another node
		encodeCorruptInput(0, corruptEdit{ceSlot, pg("branch"), 1, 0, 2, 0xfe}),
		// a leaf page: a key size of 0xffff
		encodeCorruptInput(0, corruptEdit{ceNodeHdr, pg("leaf"), 2, 3, 0, 16}),
		// an inline sub-page of the DUPSORT DB: lower = 0xffff
		encodeCorruptInput(0, corruptEdit{ceSubPage, byte(dupSub.page), byte(dupSub.slot), 3, 0, 16}),
		// ... the key size (the value's length) of its node 1 set to 22:
		// the value then runs over its neighbour node inside the sub-page
		// (Check's exact-extent overlap rule reports it)
		encodeCorruptInput(0, corruptEdit{ceSubPage, byte(dupSub.page), byte(dupSub.slot), 0x31, 2, 0x40}),
		// an inline LEAF2 sub-page of the DUPFIXED DB: its value size 3
		encodeCorruptInput(0, corruptEdit{ceSubPage, byte(fixedSub.page), byte(fixedSub.slot), 1, 0, 3}),
		// a 13-byte LEAF2 sub-page with slack: its value size 12, then 14
		// (header field 1, c = 6: add int8(v))
		encodeCorruptInput(0, corruptEdit{ceSubPage, byte(slack13.page), byte(slack13.slot), 1, 6, 0xff}),
		encodeCorruptInput(coCopy, corruptEdit{ceSubPage, byte(slack13.page), byte(slack13.slot), 1, 6, 1}),
		// ... its lower raised by 2 (one value more than it holds, into the slack)
		encodeCorruptInput(0, corruptEdit{ceSubPage, byte(slack13.page), byte(slack13.slot), 3, 6, 2}),
		// a LEAF2 page: its value size set to 0
		encodeCorruptInput(0, corruptEdit{ceHeader, pg("leaf2"), 1, 0, 0, 0}),
		// an overflow page: its page count set to 0
		encodeCorruptInput(0, corruptEdit{ceHeader, pg("overflow"), 5, 0, 0, 0}),
		// a big-data node's overflow page number
		encodeCorruptInput(0, corruptEdit{ceNodeBody, pg("bignode"), sl("bignode"), 4, 0, 0x01}),
		// a free-DB record: its page count made huge
		encodeCorruptInput(0, corruptEdit{ceNodeBody, firstPg("free"), 0, 14, 0, 0x40}),
		// a free-DB record: a listed page number changed (maybe a live
		// page, which the write txn then reuses), then written under WriteMap
		encodeCorruptInput(coWriteMap, corruptEdit{ceNodeBody, firstPg("free"), 1, 16, 0, 0x03}),
		// a named DB's record: its root past the file
		encodeCorruptInput(0, corruptEdit{ceDBRec, pg("dbrec"), sl("dbrec"), 7, 0, 26}),
		// a duplicate sub-tree's record: depth 0
		encodeCorruptInput(0, corruptEdit{ceDBRec, pg("subtree-rec"), sl("subtree-rec"), 2, 0, 0}),
		// an INTEGERKEY leaf: a key size of 3, then a drop and copies
		encodeCorruptInput(coDrop|coCopy|coAbort, corruptEdit{ceNodeHdr, pg("intleaf"), 5, 3, 0, 3}),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(corruptFuzzBody("FuzzCorruptStockFile", cb))
}
