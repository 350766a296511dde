//go:build !dlmdb_stockonly

package difftest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	lmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// TestCorruptPrefixPages damages the prefix encoding of the compressed DBs
// of FuzzCorruptFile's pristine file (cdlmdb/FORMAT.md "Prefix-compressed
// leaves") in each way that breaks one of its invariants, on several leaf
// pages, sub-pages and sub-tree leaves, and demands of our engine on each
// damaged file:
//   - the checker (Env.Check) reports it: MDB_CORRUPTED;
//   - every read of the damaged DB (a walk forwards and one backwards, each
//     in a txn of its own, and a Get of every key it held, in fresh txns
//     after an error) is either the pristine answer or MDB_CORRUPTED: never
//     another item, a missing key, a different error, or a crash.
// A read past a page shows up as a wrong answer here (and under -asan).
// The damages: a node's shared length past the anchor's length (by one,
// and 511); the anchor's length running past the page (by one, and
// 0xffff); pad (the anchor's offset) past the page, in the slot array, in
// the free space below upper; a suffix size making shared+ksize 512, or
// both 0; P_PREFIX set on a branch page, on a LEAF2 page, on a plain DB's
// leaf and sub-page, and cleared on a compressed leaf and sub-page; pad at
// upper (an anchor overlapping the lowest node: FORMAT.md puts the anchor at
// the page's top, and readers refuse it anywhere else).
// DLMDB_TEST_SCALE=k damages k times as many places per kind.

// pfxTarget is a page, or a sub-page inside one, that a damage applies to.
type pfxTarget struct {
	db    string // the DB whose tree holds it
	page  int
	node  int // the node holding the sub-page, or -1 for the page itself
	what  string
	isSub bool
}

// pfxArea is the byte range of t in img: the whole page or the sub-page.
func (cb *corruptBase) pfxArea(img []byte, t pfxTarget) []byte {
	p := img[t.page*cb.psize : (t.page+1)*cb.psize]
	if t.node < 0 {
		return p
	}
	off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*t.node:]))
	ks := int(binary.LittleEndian.Uint16(p[off+6:]))
	ds := int(binary.LittleEndian.Uint16(p[off:]))
	return p[off+8+ks : off+8+ks+ds]
}

// pfxDamage changes area (a PREFIX page or sub-page, or for the flag
// damages any page) in one way; false if it does not apply there.
type pfxDamage struct {
	name        string
	kinds       []string // the target kinds it applies to
	checkerOnly bool     // only the checker's verdict is held (see the damage)
	fn          func(a []byte) bool
}

// pfxNode is the offset of the first node of area with shared > 0 (or with
// any shared length when anyShared), -1 if none.
func pfxNode(a []byte, anyShared bool) int {
	n := (int(binary.LittleEndian.Uint16(a[12:])) - wPageHdr) / 2
	for i := 0; i < n; i++ {
		off := int(binary.LittleEndian.Uint16(a[wPageHdr+2*i:]))
		if anyShared || binary.LittleEndian.Uint16(a[off+4:])>>7 > 0 {
			return off
		}
	}
	return -1
}

func pfxAnchorLen(a []byte) int {
	if pad := int(binary.LittleEndian.Uint16(a[8:])); pad > 0 {
		return int(binary.LittleEndian.Uint16(a[pad:]))
	}
	return 0
}

func setShared(a []byte, off, sh int) {
	fl := binary.LittleEndian.Uint16(a[off+4:])
	binary.LittleEndian.PutUint16(a[off+4:], fl&0x7f|uint16(sh)<<7)
}

var pfxDamages = []pfxDamage{
	{"shared = anchor length + 1", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		off, l := pfxNode(a, true), pfxAnchorLen(a)
		if off < 0 || l >= 511 {
			return false
		}
		setShared(a, off, l+1)
		return true
	}},
	{"shared = 511 past a shorter anchor", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		off := pfxNode(a, false)
		if off < 0 || pfxAnchorLen(a) >= 511 {
			return false
		}
		setShared(a, off, 511)
		return true
	}},
	{"anchor length one past the end", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		pad := int(binary.LittleEndian.Uint16(a[8:]))
		if pad == 0 || len(a)-pad-1 > 511 {
			return false
		}
		binary.LittleEndian.PutUint16(a[pad:], uint16(len(a)-pad-1))
		return true
	}},
	{"anchor length 0xffff", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		pad := int(binary.LittleEndian.Uint16(a[8:]))
		if pad == 0 {
			return false
		}
		binary.LittleEndian.PutUint16(a[pad:], 0xffff)
		return true
	}},
	{"pad past the end", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		if binary.LittleEndian.Uint16(a[8:]) == 0 {
			return false
		}
		binary.LittleEndian.PutUint16(a[8:], uint16(len(a)-1))
		return true
	}},
	{"pad into the slot array", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		if binary.LittleEndian.Uint16(a[8:]) == 0 {
			return false
		}
		binary.LittleEndian.PutUint16(a[8:], binary.LittleEndian.Uint16(a[12:])-2)
		return true
	}},
	{"pad in the free space below upper", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		lower, upper := binary.LittleEndian.Uint16(a[12:]), binary.LittleEndian.Uint16(a[14:])
		if binary.LittleEndian.Uint16(a[8:]) == 0 || upper < lower+4 {
			return false
		}
		at := (upper - 2) &^ 1
		binary.LittleEndian.PutUint16(a[8:], at)
		binary.LittleEndian.PutUint16(a[at:], 1) // a 1-byte anchor: the byte at upper
		return true
	}},
	// FORMAT.md: the anchor record ends at the page's (sub-page's) end, so
	// one moved down onto a node is refused by every read
	{"pad at upper (the anchor overlaps the lowest node)", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		if binary.LittleEndian.Uint16(a[8:]) == 0 || pfxNode(a, false) < 0 {
			return false
		}
		binary.LittleEndian.PutUint16(a[8:], binary.LittleEndian.Uint16(a[14:]))
		return true
	}},
	{"shared + ksize = 512", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		off := pfxNode(a, false)
		if off < 0 {
			return false
		}
		sh := int(binary.LittleEndian.Uint16(a[off+4:]) >> 7)
		binary.LittleEndian.PutUint16(a[off+6:], uint16(512-sh))
		return true
	}},
	{"shared = ksize = 0", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		off := pfxNode(a, true)
		if off < 0 {
			return false
		}
		setShared(a, off, 0)
		binary.LittleEndian.PutUint16(a[off+6:], 0)
		return true
	}},
	{"P_PREFIX cleared", []string{"leaf", "sub", "subleaf"}, false, func(a []byte) bool {
		if pfxNode(a, false) < 0 {
			return false // nodes that share nothing read the same either way
		}
		binary.LittleEndian.PutUint16(a[10:], binary.LittleEndian.Uint16(a[10:])&^wPPrefix)
		return true
	}},
	{"P_PREFIX set", []string{"branch", "leaf2", "plainleaf", "plainsub"}, false, func(a []byte) bool {
		binary.LittleEndian.PutUint16(a[10:], binary.LittleEndian.Uint16(a[10:])|wPPrefix)
		return true
	}},
}

// pfxTargets lists the places of the pristine file by kind: "leaf" PREFIX
// leaves of the compressed DBs' main trees, "sub" their compressed
// sub-pages, "subleaf" leaves of compressed duplicate sub-trees, "branch"
// branch pages of compressed DBs, "leaf2" LEAF2 pages and sub-pages of the
// compressed DUPFIXED DB, "plainleaf"/"plainsub" leaves and sub-pages of
// uncompressed DBs.
func (cb *corruptBase) pfxTargets() map[string][]pfxTarget {
	b, ps := cb.file, cb.psize
	meta := b[wPageHdr:]
	if binary.LittleEndian.Uint64(b[ps+wPageHdr+128:]) > binary.LittleEndian.Uint64(b[wPageHdr+128:]) {
		meta = b[ps+wPageHdr:]
	}
	w := &fileWalker{b: b, psize: ps, last: binary.LittleEndian.Uint64(meta[120:]), owner: map[uint64]string{}, subFlags: map[uint16]int{}}
	w.walkDB(meta[24+wDBSize:24+2*wDBSize], "main DB", true)
	compressed := map[string]bool{}
	for _, d := range cb.dbs {
		compressed[d.name] = d.flags&lmdb.PrefixCompression != 0
	}
	out := map[string][]pfxTarget{}
	pgs := make([]int, 0, len(w.owner))
	for pg := range w.owner {
		pgs = append(pgs, int(pg))
	}
	sort.Ints(pgs)
	for _, pg := range pgs {
		who := w.owner[uint64(pg)]
		if !strings.HasPrefix(who, `db "`) || strings.HasSuffix(who, "(overflow)") {
			continue
		}
		db := strings.SplitN(who, `"`, 3)[1]
		sub := strings.HasSuffix(who, " dups")
		p := b[pg*ps : (pg+1)*ps]
		fl := binary.LittleEndian.Uint16(p[10:])
		add := func(kind string, node int) {
			out[kind] = append(out[kind], pfxTarget{db: db, page: pg, node: node, what: fmt.Sprintf("%s %s page %d node %d", kind, who, pg, node), isSub: node >= 0})
		}
		switch {
		case fl&wPBranch != 0 && compressed[db]:
			add("branch", -1)
		case fl&wPLeaf2 != 0 && compressed[db]:
			add("leaf2", -1)
		case fl&wPLeaf != 0 && fl&wPPrefix != 0 && sub:
			add("subleaf", -1)
		case fl&wPLeaf != 0 && fl&wPPrefix != 0:
			add("leaf", -1)
		case fl&wPLeaf != 0 && !compressed[db] && !sub:
			add("plainleaf", -1)
		}
		if fl&wPLeaf == 0 || fl&wPLeaf2 != 0 || sub {
			continue
		}
		n := (int(binary.LittleEndian.Uint16(p[12:])) - wPageHdr) / 2
		for i := 0; i < n; i++ {
			off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*i:]))
			nfl := binary.LittleEndian.Uint16(p[off+4:]) & 7
			if nfl != wFDupData {
				continue
			}
			sp := p[off+8+int(binary.LittleEndian.Uint16(p[off+6:])):]
			sfl := binary.LittleEndian.Uint16(sp[10:])
			switch {
			case sfl&wPPrefix != 0:
				add("sub", i)
			case sfl&wPLeaf2 != 0 && compressed[db]:
				add("leaf2", i)
			case !compressed[db]:
				add("plainsub", i)
			}
		}
	}
	return out
}

// pfxPristine reads every DB of the pristine file with our engine: its
// items in order.
func pfxPristine(t *testing.T, cb *corruptBase) map[string][]cfPair {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.mdb"), cb.file, 0o644); err != nil {
		t.Fatal(err)
	}
	env := pfxOpen(t, dir)
	defer env.Close()
	out := map[string][]cfPair{}
	err := env.View(func(txn *lmdb.Txn) error {
		for _, d := range cb.dbs {
			dbi, err := txn.OpenDBI(d.name, 0)
			if err != nil {
				return err
			}
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			for op := uint(lmdb.First); ; op = lmdb.Next {
				k, v, err := cur.Get(nil, nil, op)
				if lmdb.IsNotFound(err) {
					break
				}
				if err != nil {
					return err
				}
				out[d.name] = append(out[d.name], cfPair{append([]byte(nil), k...), append([]byte(nil), v...)})
			}
			cur.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the pristine file: %v", err)
	}
	return out
}

func pfxOpen(t *testing.T, dir string) *lmdb.Env {
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.SetMapSize(8 << 20)
	env.SetMaxDBs(16)
	if err := env.Open(dir, lmdb.NoSync|lmdb.Readonly, 0o644); err != nil {
		env.Close()
		t.Fatalf("open: %v", err)
	}
	return env
}

func TestCorruptPrefixPages(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cb := corruptPristine()
	if cb.err != nil {
		t.Fatalf("building the pristine file: %v", cb.err)
	}
	want := pfxPristine(t, cb)
	targets := cb.pfxTargets()
	for _, kind := range []string{"leaf", "sub", "subleaf", "branch", "leaf2", "plainleaf", "plainsub"} {
		if len(targets[kind]) == 0 {
			t.Fatalf("the pristine file has no %s target", kind)
		}
	}
	per := 3 * testScale(t)
	runs, applied := 0, map[string]int{}
	for _, dmg := range pfxDamages {
		for _, kind := range dmg.kinds {
			ts := targets[kind]
			step := max(1, len(ts)/per)
			for i := 0; i < len(ts); i += step {
				tg := ts[i]
				img := append([]byte(nil), cb.file...)
				area := cb.pfxArea(img, tg)
				if !dmg.fn(area) {
					continue
				}
				if bytes.Equal(img, cb.file) {
					t.Fatalf("%s on %s changed nothing", dmg.name, tg.what)
				}
				applied[dmg.name]++
				runs++
				wrong := pfxCheckDamaged(t, cb, img, want, dmg.name+" on "+tg.what, tg.db, !dmg.checkerOnly)
				if dmg.checkerOnly && wrong > 0 {
					t.Logf("%s on %s: %d wrong answers (allowed: the checker reports it)", dmg.name, tg.what, wrong)
				}
			}
		}
	}
	for _, dmg := range pfxDamages {
		if applied[dmg.name] == 0 {
			t.Errorf("damage %q applied nowhere: the pristine file lacks the shape it needs", dmg.name)
		}
	}
	t.Logf("%d damaged files: %v", runs, applied)
}

// pfxCheckDamaged runs the checker and every read of db on the damaged
// image img; with strict unset, wrong answers are only counted (returned).
// Errors must be MDB_CORRUPTED either way.
func pfxCheckDamaged(t *testing.T, cb *corruptBase, img []byte, want map[string][]cfPair, what, db string, strict bool) int {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "data.mdb"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	env := pfxOpen(t, dir)
	defer env.Close()
	if err := env.Check(); !lmdb.IsErrno(err, lmdb.Corrupted) {
		t.Errorf("%s: Check = %v, want MDB_CORRUPTED", what, err)
	}
	items := want[db]
	var dbi lmdb.DBI
	if err := env.View(func(txn *lmdb.Txn) (err error) { dbi, err = txn.OpenDBI(db, 0); return err }); err != nil {
		t.Fatalf("%s: open %s: %v", what, db, err)
	}
	nbad, nwrong := 0, 0
	// bad reports a wrong answer; with strict unset it only counts one
	// unless err (the error the engine gave, if any) is no lmdb error
	bad := func(err error, format string, a ...any) {
		var oe *lmdb.OpError
		if !strict && (err == nil || errors.As(err, &oe)) {
			nwrong++
			return
		}
		// a few per damaged file: one wrong page answers wrong for each of
		// its keys
		if nbad++; nbad <= 3 {
			t.Errorf("ENGINE: a wrong answer from a damaged file, no MDB_CORRUPTED: %s: db %s: %s", what, db, fmt.Sprintf(format, a...))
		}
	}
	defer func() {
		if nbad > 3 {
			t.Errorf("%s: %d more wrong answers", what, nbad-3)
		}
	}()
	// walks, forwards and backwards
	for _, dir := range []int{1, -1} {
		err := env.View(func(txn *lmdb.Txn) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			first, next, i := uint(lmdb.First), uint(lmdb.Next), 0
			if dir < 0 {
				first, next, i = lmdb.Last, lmdb.Prev, len(items)-1
			}
			for op := first; ; op = next {
				k, v, err := cur.Get(nil, nil, op)
				switch {
				case lmdb.IsNotFound(err) && (i == len(items) || i == -1):
					return nil
				case lmdb.IsNotFound(err):
					bad(nil, "walk (dir %d) ends after %d of %d items with no error", dir, min(i, len(items)-1-i), len(items))
					return nil
				case lmdb.IsErrno(err, lmdb.Corrupted):
					return nil
				case err != nil:
					bad(err, "walk (dir %d): %v, want MDB_CORRUPTED", dir, err)
					return nil
				case i < 0 || i >= len(items):
					bad(nil, "walk (dir %d) returns (%q, %q) past the %d items", dir, k, v, len(items))
					return nil
				case !bytes.Equal(k, items[i].k) || !bytes.Equal(v, items[i].v):
					bad(nil, "walk (dir %d) item %d is (%q, %q), want (%q, %q)", dir, i, k, v, items[i].k, items[i].v)
					return nil
				}
				i += dir
			}
		})
		if err != nil {
			bad(err, "walk txn: %v", err)
		}
	}
	// a Get of every key, its first value (a fresh txn after an error)
	for i := 0; i < len(items); {
		err := env.View(func(txn *lmdb.Txn) error {
			for ; i < len(items); i++ {
				if i > 0 && bytes.Equal(items[i].k, items[i-1].k) {
					continue
				}
				v, err := txn.Get(dbi, items[i].k)
				if err != nil {
					if !lmdb.IsErrno(err, lmdb.Corrupted) {
						bad(err, "Get(%q) = %v, want its value or MDB_CORRUPTED", items[i].k, err)
					}
					i++
					return nil
				}
				if !bytes.Equal(v, items[i].v) {
					bad(nil, "Get(%q) = %q, want %q", items[i].k, v, items[i].v)
				}
			}
			return nil
		})
		if err != nil {
			bad(err, "get txn: %v", err)
			return nwrong
		}
	}
	// DUPSORT: every key's values in one ListDup (a fresh txn after an
	// error), the key's items in order or MDB_CORRUPTED
	for i := 0; i < len(items); {
		err := env.View(func(txn *lmdb.Txn) error {
			if f, err := txn.Flags(dbi); err != nil || f&lmdb.DupSort == 0 {
				i = len(items)
				return err
			}
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			for i < len(items) {
				j := i + 1
				for j < len(items) && bytes.Equal(items[j].k, items[i].k) {
					j++
				}
				k, want := items[i].k, items[i:j]
				i = j
				_, _, err := cur.Get(k, nil, lmdb.SetKey)
				var vals [][]byte
				if err == nil {
					vals, err = cur.ListDup()
				}
				if err != nil {
					if !lmdb.IsErrno(err, lmdb.Corrupted) {
						bad(err, "SetKey+ListDup(%q) = %v, want its values or MDB_CORRUPTED", k, err)
					}
					return nil
				}
				if len(vals) != len(want) {
					bad(nil, "ListDup(%q): %d values, want %d", k, len(vals), len(want))
					continue
				}
				for n := range vals {
					if !bytes.Equal(vals[n], want[n].v) {
						bad(nil, "ListDup(%q) value %d = %q, want %q", k, n, vals[n], want[n].v)
						break
					}
				}
			}
			return nil
		})
		if err != nil {
			bad(err, "listdup txn: %v", err)
			return nwrong
		}
	}
	return nwrong
}
