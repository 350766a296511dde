//go:build !dlmdb_stockonly

package difftest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	lmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// FuzzCorruptFile damages a small, varied data file written by our engine
// and then uses it with our engine: open, read every database with every
// kind of cursor movement and lookup, the counting calls, the checker, a
// write transaction, a copy, and a second open. The property is robustness
// only: no crash, no hang, no sanitizer report, every failure an lmdb error
// (an *lmdb.OpError carrying an lmdb.Errno or a syscall.Errno), and the env
// closes cleanly afterwards. Whether the data read back is right is not
// asserted: a flipped byte inside a value is invisible to any checker.
//
// One answer is asserted: the order of a walk. Every read-only walk (FIRST/
// NEXT, LAST/PREV, a key's duplicates both ways) must return its items in
// strictly increasing (decreasing) order under the DB's own key and
// duplicate orders, except for two items that are neighbours in one page of
// the file: the engine holds a leaf's edge keys against the separators it
// crosses and checks nothing per item, so disorder inside one leaf or
// sub-page is left to the checker (see walkOrder).
//
// The fuzz input is a list of edits (see decodeCorruptInput): each names a
// page (modulo the page count, meta pages included) and a place in it,
// either a raw offset or a structure found by parsing the page (a header
// field, a slot, a node header, a sub-page, a DB record, a meta field, a
// counted branch node's counts), and a new value: a byte xor, a bit flip, a
// small delta, or an "interesting" value such as 0, 0xffff, the page size
// or a page number past the file.

// corruptBase is the pristine file every fuzz input starts from, built once
// per process.
type corruptBase struct {
	file    []byte
	psize   int
	npages  int
	entries int // items over all databases (bounds the loops)
	kinds   map[string][]corruptSpot
	dbs     []corruptDB // its named databases (openAll, writeSome)
	err     error
}

// corruptSpot is a place in the pristine file a seed can aim at.
type corruptSpot struct {
	page int
	slot int // node index, when the spot is a node
}

// corruptDB is a named database of a pristine file and its flags.
type corruptDB struct {
	name  string
	flags uint
}

// The named databases of the pristine file and their flags.
var corruptDBs = []corruptDB{
	{"plain", 0},
	{"dups", lmdb.DupSort},
	{"fixed", lmdb.DupSort | lmdb.DupFixed},
	{"ints", lmdb.IntegerKey},
	{"counted", lmdb.Counted},
	{"cdups", lmdb.Counted | lmdb.DupSort},
	// prefix-compressed (cdlmdb/FORMAT.md "Prefix-compressed leaves"):
	// compressed leaves, sub-pages and duplicate sub-trees, LEAF2 sub-pages
	// and sub-trees of a compressed DB, with and without counts
	{"pfx", lmdb.PrefixCompression},
	{"pdups", lmdb.PrefixCompression | lmdb.DupSort},
	{"pfixed", lmdb.PrefixCompression | lmdb.DupSort | lmdb.DupFixed},
	{"pcdups", lmdb.PrefixCompression | lmdb.Counted | lmdb.DupSort},
}

// corruptPfx starts the keys (and DUPSORT values) of the compressed DBs of
// the pristine file, so that their nodes share many bytes with the anchors.
const corruptPfx = "urn:example:corrupt/shared/"

var (
	corruptOnce sync.Once
	corruptImg  *corruptBase
	corruptSeq  atomic.Int64
)

func corruptPristine() *corruptBase {
	corruptOnce.Do(func() {
		corruptImg = buildCorruptBase()
	})
	return corruptImg
}

func intKey(v uint64) []byte {
	b := make([]byte, 8)
	binary.NativeEndian.PutUint64(b, v)
	return b
}

func buildCorruptBase() *corruptBase {
	cb := &corruptBase{kinds: map[string][]corruptSpot{}, dbs: corruptDBs}
	dir, err := os.MkdirTemp("", "corruptfuzz-base-")
	if err != nil {
		cb.err = err
		return cb
	}
	defer os.RemoveAll(dir)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	env, err := lmdb.NewEnv()
	if err != nil {
		cb.err = err
		return cb
	}
	env.SetMapSize(8 << 20)
	env.SetMaxDBs(16)
	if err := env.Open(dir, lmdb.NoSync, 0o644); err != nil {
		env.Close()
		cb.err = err
		return cb
	}
	fill := func(txn *lmdb.Txn) error {
		root, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		for i := 0; i < 40; i++ {
			if err := txn.Put(root, []byte(fmt.Sprintf("main-%03d", i)), bytes.Repeat([]byte{'m'}, 20+i), 0); err != nil {
				return err
			}
		}
		dbis := map[string]lmdb.DBI{}
		for _, d := range corruptDBs {
			dbi, err := txn.OpenDBI(d.name, d.flags|lmdb.Create)
			if err != nil {
				return fmt.Errorf("create %s: %w", d.name, err)
			}
			dbis[d.name] = dbi
		}
		put := func(db string, k, v []byte) error {
			if err := txn.Put(dbis[db], k, v, 0); err != nil {
				return fmt.Errorf("put %s %q: %w", db, k, err)
			}
			return nil
		}
		for i := 0; i < 240; i++ { // keys of 4..7 bytes: odd and even lengths
			if err := put("plain", []byte(fmt.Sprintf("p%0*d", 3+i%4, i)), bytes.Repeat([]byte{byte(i)}, 10+i%90)); err != nil {
				return err
			}
		}
		for i, n := range []int{3000, 7000, 11000} { // overflow runs of 1, 2, 3 pages
			if err := put("plain", []byte(fmt.Sprintf("ov%d", i+1)), bytes.Repeat([]byte{byte('A' + i)}, n)); err != nil {
				return err
			}
		}
		for i := 0; i < 30; i++ {
			for j := 0; j <= i%6; j++ {
				if err := put("dups", []byte(fmt.Sprintf("d%02d", i)), []byte(fmt.Sprintf("v%03d-%s", j, strings.Repeat("x", i%7)))); err != nil {
					return err
				}
			}
		}
		for j := 0; j < 300; j++ { // a duplicate sub-tree of depth 2
			if err := put("dups", []byte("dbig"), []byte(fmt.Sprintf("big-value-%09d", j))); err != nil {
				return err
			}
		}
		for i := 0; i < 20; i++ {
			for j := 0; j <= i%8; j++ {
				if err := put("fixed", []byte(fmt.Sprintf("f%02d", i)), intKey(uint64(j*3+i))); err != nil {
					return err
				}
			}
		}
		for j := 0; j < 1200; j++ { // a LEAF2 sub-tree with a branch page
			if err := put("fixed", []byte("fbig"), []byte(fmt.Sprintf("%08d", j))); err != nil {
				return err
			}
		}
		for i := 0; i < 150; i++ {
			if err := put("ints", intKey(uint64(i*1000+7)), bytes.Repeat([]byte{byte(i)}, 16)); err != nil {
				return err
			}
		}
		for i := 0; i < 300; i++ {
			if err := put("counted", []byte(fmt.Sprintf("c%04d", i)), []byte(fmt.Sprintf("val-%07d", i))); err != nil {
				return err
			}
		}
		for i := 0; i < 40; i++ {
			for j := 0; j <= i%5; j++ {
				if err := put("cdups", []byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("w%02d", j))); err != nil {
					return err
				}
			}
		}
		for j := 0; j < 200; j++ { // a counted duplicate sub-tree
			if err := put("cdups", []byte("kbig"), []byte(fmt.Sprintf("cbig-%012d", j))); err != nil {
				return err
			}
		}
		// compressed DBs: keys of odd and even lengths under a long shared
		// prefix, some that share nothing, a 1-byte key, a 511-byte key,
		// keys that are prefixes of each other, an overflow value
		for i := 0; i < 200; i++ {
			k := fmt.Sprintf("%s%0*d", corruptPfx, 3+i%4, i)
			if i%17 == 0 {
				k = fmt.Sprintf("z%d", i) // shares nothing with the prefix
			}
			if err := put("pfx", []byte(k), bytes.Repeat([]byte{byte(i)}, 8+i%40)); err != nil {
				return err
			}
		}
		for _, k := range []string{"q", corruptPfx, corruptPfx[:10], strings.Repeat("L", 511), corruptPfx + "ov"} {
			v := []byte("short")
			if strings.HasSuffix(k, "ov") {
				v = bytes.Repeat([]byte{'O'}, 5000)
			}
			if err := put("pfx", []byte(k), v); err != nil {
				return err
			}
		}
		for i := 0; i < 24; i++ { // compressed sub-pages
			for j := 0; j <= i%6; j++ {
				if err := put("pdups", []byte(fmt.Sprintf("%sd%02d", corruptPfx, i)), []byte(fmt.Sprintf("%sv%03d-%s", corruptPfx, j, strings.Repeat("x", i%5)))); err != nil {
					return err
				}
			}
		}
		for j := 0; j < 150; j++ { // a compressed duplicate sub-tree
			if err := put("pdups", []byte(corruptPfx+"dbig"), []byte(fmt.Sprintf("%sbig-value-%06d", corruptPfx, j))); err != nil {
				return err
			}
		}
		for i := 0; i < 16; i++ { // LEAF2 sub-pages under compressed keys
			for j := 0; j <= i%6; j++ {
				if err := put("pfixed", []byte(fmt.Sprintf("%sf%02d", corruptPfx, i)), intKey(uint64(j*5+i))); err != nil {
					return err
				}
			}
		}
		for j := 0; j < 700; j++ { // a LEAF2 sub-tree with a branch page
			if err := put("pfixed", []byte(corruptPfx+"fbig"), []byte(fmt.Sprintf("%08d", j))); err != nil {
				return err
			}
		}
		for i := 0; i < 30; i++ {
			for j := 0; j <= i%4; j++ {
				if err := put("pcdups", []byte(fmt.Sprintf("%sk%03d", corruptPfx, i)), []byte(fmt.Sprintf("%sw%02d", corruptPfx, j))); err != nil {
					return err
				}
			}
		}
		for j := 0; j < 150; j++ { // a counted compressed duplicate sub-tree
			if err := put("pcdups", []byte(corruptPfx+"kbig"), []byte(fmt.Sprintf("%scbig-%08d", corruptPfx, j))); err != nil {
				return err
			}
		}
		return nil
	}
	// deletes in the last txn, so its freed pages stay in the free DB
	prune := func(txn *lmdb.Txn) error {
		del := func(db string, k, v []byte) error {
			dbi, err := txn.OpenDBI(db, 0)
			if err != nil {
				return err
			}
			if err := txn.Del(dbi, k, v); err != nil {
				return fmt.Errorf("del %s %q: %w", db, k, err)
			}
			return nil
		}
		for i := 0; i < 240; i += 5 {
			if err := del("plain", []byte(fmt.Sprintf("p%0*d", 3+i%4, i)), nil); err != nil {
				return err
			}
		}
		plain, err := txn.OpenDBI("plain", 0)
		if err != nil {
			return err
		}
		if err := txn.Put(plain, []byte("ov3"), bytes.Repeat([]byte{'Z'}, 9000), 0); err != nil {
			return err
		}
		for i := 0; i < 30; i += 4 {
			if err := del("dups", []byte(fmt.Sprintf("d%02d", i)), []byte(fmt.Sprintf("v000-%s", strings.Repeat("x", i%7)))); err != nil {
				return err
			}
		}
		for i := 0; i < 300; i += 10 {
			if err := del("counted", []byte(fmt.Sprintf("c%04d", i)), nil); err != nil {
				return err
			}
		}
		// deletes leave anchors that are no key of their page
		for i := 1; i < 200; i += 7 {
			if i%17 == 0 {
				continue
			}
			if err := del("pfx", []byte(fmt.Sprintf("%s%0*d", corruptPfx, 3+i%4, i)), nil); err != nil {
				return err
			}
		}
		return nil
	}
	if err := env.Update(fill); err != nil {
		env.Close()
		cb.err = err
		return cb
	}
	if err := env.Update(prune); err != nil {
		env.Close()
		cb.err = err
		return cb
	}
	if err := env.Check(); err != nil {
		env.Close()
		cb.err = fmt.Errorf("the pristine file fails Check: %w", err)
		return cb
	}
	total := 0
	err = env.View(func(txn *lmdb.Txn) error {
		for _, d := range corruptDBs {
			dbi, err := txn.OpenDBI(d.name, 0)
			if err != nil {
				return err
			}
			st, err := txn.Stat(dbi)
			if err != nil {
				return err
			}
			total += int(st.Entries)
		}
		return nil
	})
	if err != nil {
		env.Close()
		cb.err = err
		return cb
	}
	env.Close()
	cb.file, err = os.ReadFile(filepath.Join(dir, "data.mdb"))
	if err != nil {
		cb.err = err
		return cb
	}
	cb.psize = 4096
	cb.npages = len(cb.file) / cb.psize
	if cb.npages*cb.psize != len(cb.file) || cb.npages > 255 {
		cb.err = fmt.Errorf("pristine file of %d bytes: want whole 4096-byte pages, at most 255", len(cb.file))
		return cb
	}
	cb.err = cb.classify(corruptKinds)
	cb.entries += total
	return cb
}

// corruptKinds are the kinds of page and node classify finds; a pristine
// file must hold each kind it is asked for.
var corruptKinds = []string{"overflow", "free", "leaf2", "counted-branch", "branch", "leaf", "intleaf", "subtree-rec", "subpage", "dbrec", "bignode",
	"pfxleaf", "pfxsubpage", "pfxbranch", "pfxleaf2", "pfxsubleaf", "plainleaf"}

// classify finds the live pages of the pristine file by kind (for the seeds)
// and counts its items. Every kind in need must be present.
func (cb *corruptBase) classify(need []string) error {
	b := cb.file
	ps := cb.psize
	meta := b[wPageHdr:]
	if binary.LittleEndian.Uint64(b[ps+wPageHdr+128:]) > binary.LittleEndian.Uint64(b[wPageHdr+128:]) {
		meta = b[ps+wPageHdr:]
	}
	w := &fileWalker{b: b, psize: ps, last: binary.LittleEndian.Uint64(meta[120:]), owner: map[uint64]string{}, subFlags: map[uint16]int{}}
	freeRec, mainRec := meta[24:24+wDBSize], meta[24+wDBSize:24+2*wDBSize]
	freeRoot := binary.LittleEndian.Uint64(freeRec[40:])
	if freeRoot == wPInvalid {
		return errors.New("pristine file: the free DB is empty")
	}
	w.walkTree(freeRoot, "free DB", 0, func(uint16, []byte, []byte) {})
	w.walkDB(mainRec, "main DB", true)
	if len(w.errs) > 0 {
		return fmt.Errorf("pristine file: %v", w.errs)
	}
	cb.entries = int(binary.LittleEndian.Uint64(mainRec[32:]))
	add := func(kind string, pg, slot int) { cb.kinds[kind] = append(cb.kinds[kind], corruptSpot{pg, slot}) }
	pgs := make([]int, 0, len(w.owner))
	for pg := range w.owner {
		pgs = append(pgs, int(pg))
	}
	sort.Ints(pgs)
	for _, pg := range pgs {
		who := w.owner[uint64(pg)]
		p := b[pg*ps : (pg+1)*ps]
		fl := binary.LittleEndian.Uint16(p[10:])
		switch {
		case fl&wPOverflow != 0:
			add("overflow", pg, 0)
			continue
		case strings.HasSuffix(who, "(overflow)") || who == "free list":
			continue
		case who == "free DB":
			add("free", pg, 0)
			continue
		case fl&wPLeaf2 != 0:
			add("leaf2", pg, 0)
			if strings.HasPrefix(who, `db "pfixed"`) {
				add("pfxleaf2", pg, 0) // a LEAF2 page of a compressed DB
			}
			continue
		case fl&wPCounted != 0:
			add("counted-branch", pg, 0)
		case fl&wPBranch != 0:
			add("branch", pg, 0)
		case fl&wPLeaf != 0:
			add("leaf", pg, 0)
			if who == `db "ints"` {
				add("intleaf", pg, 0)
			}
			if who == `db "plain"` {
				add("plainleaf", pg, 0)
			}
			if fl&wPPrefix != 0 {
				add("pfxleaf", pg, 0)
				if strings.HasSuffix(who, " dups") {
					add("pfxsubleaf", pg, 0) // a leaf of a compressed duplicate sub-tree
				}
			}
		}
		if fl&wPBranch != 0 && strings.HasPrefix(who, `db "p`) && who != `db "plain"` {
			add("pfxbranch", pg, 0)
		}
		if fl&wPLeaf == 0 {
			continue
		}
		n := (int(binary.LittleEndian.Uint16(p[12:])) - wPageHdr) / 2
		for i := 0; i < n; i++ {
			off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*i:]))
			nfl := binary.LittleEndian.Uint16(p[off+4:])
			switch {
			case nfl&wFDupData != 0 && nfl&wFSubData != 0:
				add("subtree-rec", pg, i)
			case nfl&wFDupData != 0:
				add("subpage", pg, i)
				ks := int(binary.LittleEndian.Uint16(p[off+6:]))
				if sp := off + 8 + ks; sp+wPageHdr <= ps && binary.LittleEndian.Uint16(p[sp+10:])&wPPrefix != 0 {
					add("pfxsubpage", pg, i)
				}
			case nfl&wFSubData != 0:
				add("dbrec", pg, i)
			case nfl&wFBigData != 0:
				add("bignode", pg, i)
			}
		}
	}
	for _, k := range need {
		if len(cb.kinds[k]) == 0 {
			return fmt.Errorf("pristine file has no %s page or node", k)
		}
	}
	return nil
}

// ---- the fuzz input ------------------------------------------------------

// Option bits (first input byte).
const (
	coWriteMap = 1 << iota // open with WriteMap
	coNoWrite              // skip the write txn
	coDrop                 // the write txn empties one database
	coCopy                 // copy the env (plain and compacting)
	coAbort                // abort the write txn instead of committing it
)

// Edit kinds (edit byte 0 modulo ceKinds).
const (
	ceXor      = iota // xor one byte at a raw offset
	ceWide            // write a 1/2/4/8-byte value at a raw offset
	ceHeader          // page header field
	ceSlot            // one slot of the slot array
	ceNodeHdr         // one field of a node header
	ceNodeBody        // xor a byte of a node's key or data
	ceSubPage         // a sub-page's header, slot or node header
	ceDBRec           // a field of a DB record (meta or named/sub-tree record)
	ceMeta            // a meta page field
	ceCounts          // a counted branch node's counts
	ceAnchor          // a PREFIX page's anchor record: length, offset (pad) or a node's shared length
	ceKinds
)

const ceSize = 6 // bytes per edit: kind, page, a, b, c, v
const ceMax = 8  // edits per input

type corruptEdit struct{ kind, page, a, b, c, v byte }

func decodeCorruptInput(in []byte) (opts byte, edits []corruptEdit, rest []byte) {
	if len(in) == 0 {
		return 0, nil, nil
	}
	opts, in = in[0], in[1:]
	for len(in) >= ceSize && len(edits) < ceMax {
		edits = append(edits, corruptEdit{in[0], in[1], in[2], in[3], in[4], in[5]})
		in = in[ceSize:]
	}
	return opts, edits, in
}

func encodeCorruptInput(opts byte, edits ...corruptEdit) []byte {
	out := []byte{opts}
	for _, e := range edits {
		out = append(out, e.kind, e.page, e.a, e.b, e.c, e.v)
	}
	return out
}

// interesting is a value for a field of width bytes: v picks one of a list
// of boundary values, or (past the list) a small number.
func (cb *corruptBase) interesting(v byte, width int) uint64 {
	ps, np := uint64(cb.psize), uint64(cb.npages)
	table := []uint64{0, 1, 2, 3, 7, 8, 15, 16, 17, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xfffe, 0xffff,
		ps - 1, ps, ps + 1, ps / 2, ps - 16, ps - 8, np - 1, np, np + 1, np + 100, 0xffffffff, 1 << 32, 1 << 40,
		1<<47 + 3, 1<<48 - 1, 1 << 63, ^uint64(0), ^uint64(1), 2038, 2039, 511, 512, 48, 47, 49}
	var x uint64
	if int(v) < len(table) {
		x = table[v]
	} else {
		x = uint64(int(v) - len(table))
	}
	if width < 8 {
		x &= 1<<(8*width) - 1
	}
	return x
}

func getLE(b []byte, width int) uint64 {
	switch width {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	default:
		return binary.LittleEndian.Uint64(b)
	}
}

func putLE(b []byte, width int, x uint64) {
	switch width {
	case 1:
		b[0] = byte(x)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(x))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(x))
	default:
		binary.LittleEndian.PutUint64(b, x)
	}
}

// setField changes the width-byte field at p[off:] by mode: 0 an interesting
// value, 1 one bit flipped, 2 a small signed delta. Out-of-page fields are
// ignored.
func (cb *corruptBase) setField(p []byte, off, width int, mode, v byte) {
	if off < 0 || off+width > len(p) {
		return
	}
	switch mode % 3 {
	case 0:
		putLE(p[off:], width, cb.interesting(v, width))
	case 1:
		putLE(p[off:], width, getLE(p[off:], width)^1<<(uint(v)%uint(8*width)))
	case 2:
		putLE(p[off:], width, getLE(p[off:], width)+uint64(int64(int8(v))))
	}
}

// nodeAt is the offset of node a%nkeys of the page image p (the page may be
// damaged already: -1 when there is no usable node).
func nodeAt(p []byte, a byte) int {
	if len(p) < wPageHdr {
		return -1
	}
	lower := int(binary.LittleEndian.Uint16(p[12:]))
	n := (lower - wPageHdr) / 2
	if n <= 0 || wPageHdr+2*n > len(p) {
		return -1
	}
	off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*(int(a)%n):]))
	if off+8 > len(p) {
		return -1
	}
	return off
}

func (cb *corruptBase) applyEdit(img []byte, e corruptEdit) {
	pg := int(e.page) % cb.npages
	p := img[pg*cb.psize : (pg+1)*cb.psize]
	raw := (int(e.a) | int(e.b)<<8) % cb.psize
	switch int(e.kind) % ceKinds {
	case ceXor:
		x := e.v
		if x == 0 {
			x = 0xff
		}
		p[raw] ^= x
	case ceWide:
		width := []int{1, 2, 4, 8}[e.c&3]
		if raw+width > len(p) {
			raw = len(p) - width
		}
		cb.setField(p, raw, width, e.c>>2, e.v)
	case ceHeader:
		f := [][2]int{{0, 8}, {8, 2}, {10, 2}, {12, 2}, {14, 2}, {12, 4}}[int(e.a)%6]
		cb.setField(p, f[0], f[1], e.c, e.v)
	case ceSlot:
		lower := int(binary.LittleEndian.Uint16(p[12:]))
		n := max((lower-wPageHdr)/2, 1)
		cb.setField(p, wPageHdr+2*(int(e.a)%n), 2, e.c, e.v)
	case ceNodeHdr:
		if off := nodeAt(p, e.a); off >= 0 {
			cb.setField(p, off+2*(int(e.b)%4), 2, e.c, e.v)
		}
	case ceNodeBody:
		off := nodeAt(p, e.a)
		if off < 0 {
			return
		}
		ks := int(binary.LittleEndian.Uint16(p[off+6:]))
		ds := int(binary.LittleEndian.Uint16(p[off:]))
		span := min(ks+ds, len(p)-off-8)
		if span <= 0 {
			return
		}
		x := e.v
		if x == 0 {
			x = 0xff
		}
		p[off+8+int(e.b)%span] ^= x
	case ceSubPage:
		off := nodeAt(p, e.a)
		if off < 0 {
			return
		}
		ks := int(binary.LittleEndian.Uint16(p[off+6:]))
		ds := int(binary.LittleEndian.Uint16(p[off:]))
		sp := off + 8 + ks
		if sp+wPageHdr > len(p) {
			return
		}
		sub := p[sp:min(sp+ds, len(p))]
		if len(sub) < wPageHdr {
			return
		}
		switch e.c % 3 {
		case 0:
			f := [][2]int{{0, 8}, {8, 2}, {10, 2}, {12, 2}, {14, 2}}[int(e.b)%5]
			cb.setField(sub, f[0], f[1], e.c/3, e.v)
		case 1:
			lower := int(binary.LittleEndian.Uint16(sub[12:]))
			n := max((lower-wPageHdr)/2, 1)
			cb.setField(sub, wPageHdr+2*(int(e.b)%n), 2, e.c/3, e.v)
		case 2:
			if noff := nodeAt(sub, e.b); noff >= 0 {
				cb.setField(sub, noff+2*(int(e.b>>4)%4), 2, e.c/3, e.v)
			}
		}
	case ceDBRec:
		var rec int
		if pg < 2 {
			rec = wPageHdr + 24 + wDBSize*int(e.a&1)
		} else {
			off := nodeAt(p, e.a)
			if off < 0 {
				return
			}
			rec = off + 8 + int(binary.LittleEndian.Uint16(p[off+6:]))
		}
		f := [][2]int{{0, 4}, {4, 2}, {6, 2}, {8, 8}, {16, 8}, {24, 8}, {32, 8}, {40, 8}}[int(e.b)%8]
		cb.setField(p, rec+f[0], f[1], e.c, e.v)
	case ceMeta:
		p = img[(pg&1)*cb.psize : (pg&1+1)*cb.psize]
		f := [][2]int{{16, 4}, {20, 4}, {24, 8}, {32, 8}, {136, 8}, {144, 8}, {10, 2},
			{40 + 40, 8}, {88 + 40, 8}, {88 + 6, 2}, {88 + 4, 2}, {40 + 32, 8}, {88 + 32, 8}}[int(e.a)%13]
		cb.setField(p, f[0], f[1], e.c, e.v)
	case ceCounts:
		off := nodeAt(p, e.a)
		if off < 0 {
			return
		}
		ks := int(binary.LittleEndian.Uint16(p[off+6:]))
		cb.setField(p, off+8+ks+8*int(e.b&1), 8, e.c, e.v)
	case ceAnchor:
		// e.b&1: the page itself or the sub-page in its node e.a; e.b>>1%3:
		// the anchor's length, the page's pad (its offset), or the shared
		// length (flags bits 7-15) of node e.a (of the sub-page: node e.a>>4)
		if e.b&1 == 1 {
			off := nodeAt(p, e.a)
			if off < 0 {
				return
			}
			ks := int(binary.LittleEndian.Uint16(p[off+6:]))
			ds := int(binary.LittleEndian.Uint16(p[off:]))
			sp := off + 8 + ks
			if sp+wPageHdr > len(p) {
				return
			}
			p = p[sp:min(sp+ds, len(p))]
			e.a >>= 4
		}
		cb.damageAnchor(p, int(e.b>>1)%3, e)
	}
}

// damageAnchor changes one field of the prefix encoding of page (or
// sub-page) p: 0 the anchor record's length, 1 pad, 2 the shared length of
// node e.a. Mode e.c as setField (an interesting value: e.v indexes the
// list); shared lengths are set, flipped or moved within their 9 bits.
func (cb *corruptBase) damageAnchor(p []byte, field int, e corruptEdit) {
	if len(p) < wPageHdr {
		return
	}
	switch field {
	case 0:
		if a := int(binary.LittleEndian.Uint16(p[8:])); a > 0 {
			cb.setField(p, a, 2, e.c, e.v)
		}
	case 1:
		cb.setField(p, 8, 2, e.c, e.v)
	case 2:
		off := nodeAt(p, e.a)
		if off < 0 {
			return
		}
		fl := binary.LittleEndian.Uint16(p[off+4:])
		sh := uint64(fl >> 7)
		switch e.c % 3 {
		case 0:
			sh = cb.interesting(e.v, 2)
		case 1:
			sh ^= 1 << (uint(e.v) % 9)
		case 2:
			sh += uint64(int64(int8(e.v)))
		}
		binary.LittleEndian.PutUint16(p[off+4:], fl&0x7f|uint16(sh<<7))
	}
}

// ---- the fuzz target ---------------------------------------------------

func FuzzCorruptFile(f *testing.F) {
	cb := corruptPristine()
	if cb.err != nil {
		f.Fatalf("building the pristine file: %v", cb.err)
	}
	spot := func(kind string) corruptSpot { return cb.kinds[kind][len(cb.kinds[kind])/2] }
	pg := func(kind string) byte { return byte(spot(kind).page) }
	sl := func(kind string) byte { return byte(spot(kind).slot) }
	seeds := [][]byte{
		// meta 0: a huge txnid makes the older meta the newest
		encodeCorruptInput(0, corruptEdit{ceMeta, 0, 5, 0, 0, 29}),
		// meta 1: main DB root past the file
		encodeCorruptInput(0, corruptEdit{ceMeta, 1, 8, 0, 0, 26}),
		// meta 1: main DB depth 0xffff
		encodeCorruptInput(0, corruptEdit{ceMeta, 1, 9, 0, 0, 16}),
		// a branch page: a child pointer's high bits
		encodeCorruptInput(0, corruptEdit{ceNodeHdr, pg("branch"), 1, 2, 0, 12}),
		// a leaf page: a key size of 0xffff
		encodeCorruptInput(0, corruptEdit{ceNodeHdr, pg("leaf"), 2, 3, 0, 16}),
		// an overflow page: its page count set to 0
		encodeCorruptInput(0, corruptEdit{ceHeader, pg("overflow"), 5, 0, 0, 0}),
		// a sub-page inside a DUPSORT leaf: lower = 0xffff
		encodeCorruptInput(0, corruptEdit{ceSubPage, pg("subpage"), sl("subpage"), 3, 0, 16}),
		// a sub-page: a slot pointing into the header
		encodeCorruptInput(0, corruptEdit{ceSubPage, pg("subpage"), sl("subpage"), 0, 1, 3}),
		// a LEAF2 page: its value size set to 0
		encodeCorruptInput(0, corruptEdit{ceHeader, pg("leaf2"), 1, 0, 0, 0}),
		// the free DB: a record's page count made huge
		encodeCorruptInput(0, corruptEdit{ceNodeBody, pg("free"), 0, 14, 0, 0x40}),
		// a named DB's record: its root past the file
		encodeCorruptInput(0, corruptEdit{ceDBRec, pg("dbrec"), sl("dbrec"), 7, 0, 26}),
		// a duplicate sub-tree's record: depth 0
		encodeCorruptInput(0, corruptEdit{ceDBRec, pg("subtree-rec"), sl("subtree-rec"), 2, 0, 0}),
		// a counted branch node's entry count
		encodeCorruptInput(0, corruptEdit{ceCounts, pg("counted-branch"), 1, 0, 0, 33}),
		// a big-data node's overflow page number
		encodeCorruptInput(0, corruptEdit{ceNodeBody, pg("bignode"), sl("bignode"), 4, 0, 0x01}),
		// an INTEGERKEY leaf: a key size of 3
		encodeCorruptInput(0, corruptEdit{ceNodeHdr, pg("intleaf"), 5, 3, 0, 3}),
		// several edits at once, then WriteMap, a drop and a copy
		encodeCorruptInput(coWriteMap|coDrop|coCopy,
			corruptEdit{ceSlot, pg("leaf"), 7, 0, 2, 0x20},
			corruptEdit{ceHeader, pg("branch"), 4, 0, 1, 3},
			corruptEdit{ceXor, pg("leaf2"), 0x40, 0, 0, 0x11}),
	}
	// prefix-compressed pages (the same damage, aimed precisely, is
	// TestCorruptPrefixPages): ceAnchor's b picks the field (b>>1: 0 the
	// anchor length, 1 pad, 2 a node's shared length) and page or sub-page
	// (b&1); for a sub-page a's low bits pick the node holding it, a>>4 the
	// sub-page's node
	subA := func(kind string) byte { // a with a % nkeys == the slot and a>>4 == 1
		sp := spot(kind)
		p := cb.file[sp.page*cb.psize : (sp.page+1)*cb.psize]
		n := (int(binary.LittleEndian.Uint16(p[12:])) - wPageHdr) / 2
		for a := 16; a < 32; a++ {
			if a%n == sp.slot {
				return byte(a)
			}
		}
		return byte(sp.slot)
	}
	seeds = append(seeds,
		// a node's shared length set to 511, past its anchor
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxleaf"), 1, 4, 0, 37}),
		// bit 8 of a shared length flipped
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxleaf"), 2, 4, 1, 8}),
		// the anchor's length set to 511 (past the page end) and to 0xffff
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxleaf"), 0, 0, 0, 37}),
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxleaf"), 0, 0, 0, 16}),
		// pad (the anchor's offset) past the page, and into the slot array
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxleaf"), 0, 2, 0, 17}),
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxleaf"), 0, 2, 0, 7}),
		// a compressed sub-page: a shared length past its anchor; its pad
		// into its slot array
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxsubpage"), subA("pfxsubpage"), 5, 0, 37}),
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxsubpage"), subA("pfxsubpage"), 3, 0, 7}),
		// a leaf of a compressed duplicate sub-tree: a shared length + 1
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxsubleaf"), 3, 4, 2, 1}),
		// a suffix size of 511 (shared + ksize > 511), of 0 with shared 0
		encodeCorruptInput(0, corruptEdit{ceNodeHdr, pg("pfxleaf"), 1, 3, 0, 37}),
		encodeCorruptInput(0, corruptEdit{ceAnchor, pg("pfxleaf"), 2, 4, 0, 0},
			corruptEdit{ceNodeHdr, pg("pfxleaf"), 2, 3, 0, 0}),
		// P_PREFIX (0x400) set on a branch and a LEAF2 page of a compressed
		// DB and on a plain DB's leaf; cleared on a compressed leaf and
		// sub-page
		encodeCorruptInput(0, corruptEdit{ceHeader, pg("pfxbranch"), 2, 0, 1, 10}),
		encodeCorruptInput(0, corruptEdit{ceHeader, pg("pfxleaf2"), 2, 0, 1, 10}),
		encodeCorruptInput(0, corruptEdit{ceHeader, pg("plainleaf"), 2, 0, 1, 10}),
		encodeCorruptInput(0, corruptEdit{ceHeader, pg("pfxleaf"), 2, 0, 1, 10}),
		encodeCorruptInput(0, corruptEdit{ceSubPage, pg("pfxsubpage"), sl("pfxsubpage"), 2, 3, 10}),
		// a damaged compressed leaf, then writes, a drop and copies
		encodeCorruptInput(coDrop|coCopy, corruptEdit{ceAnchor, pg("pfxleaf"), 4, 4, 1, 2},
			corruptEdit{ceAnchor, pg("pfxsubpage"), subA("pfxsubpage"), 1, 2, 3}),
	)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(corruptFuzzBody("FuzzCorruptFile", cb))
}

// corruptFuzzBody is the function a corrupt-file fuzz target (named name)
// fuzzes: it runs each input on the pristine file cb.
func corruptFuzzBody(name string, cb *corruptBase) func(*testing.T, []byte) {
	fuzzing := false
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		fuzzing = true
	}
	return func(t *testing.T, in []byte) {
		if fuzzing {
			// a hang is a finding too: fail loudly with every stack
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case <-done:
				case <-time.After(2 * time.Minute):
					buf := make([]byte, 1<<20)
					n := runtime.Stack(buf, true)
					panic(fmt.Sprintf("%s: input %x still running after 2 minutes\n%s", name, in, buf[:n]))
				}
			}()
		}
		runCorruptInput(t, cb, in)
	}
}

// runCorruptInput applies the edits of in to a copy of the pristine file and
// exercises it.
func runCorruptInput(t *testing.T, cb *corruptBase, in []byte) {
	opts, edits, rest := decodeCorruptInput(in)
	img := append([]byte(nil), cb.file...)
	for _, e := range edits {
		cb.applyEdit(img, e)
	}
	dir := filepath.Join(t.TempDir(), fmt.Sprint("env", corruptSeq.Add(1)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data.mdb"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("FUZZ_CORRUPT_DUMP"); out != "" {
		// debugging aid: keep the damaged file for a C-level reproducer
		if err := os.WriteFile(out, img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := fnv.New64a()
	h.Write(in)
	h.Write(rest)
	x := &corruptRun{t: t, cb: cb, rng: rand.New(rand.NewSource(int64(h.Sum64()))), opts: opts}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x.session(dir, true)
	x.session(dir, false)
	t.Logf("%d pages, %d entries; %d steps; %d walk items out of order inside one page; errors %v",
		cb.npages, cb.entries, x.calls, x.disorder, x.errs)
	if out := os.Getenv("FUZZ_CORRUPT_STATS"); out != "" && x.disorder > 0 {
		// debugging aid: note inputs whose walks met disorder inside a page
		if fh, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(fh, "%x %d\n", in, x.disorder)
			fh.Close()
		}
	}
}

type corruptRun struct {
	t      *testing.T
	cb     *corruptBase
	rng    *rand.Rand
	opts   byte
	budget int // engine calls left in this pass
	calls  int // engine calls made (for the log)
	errs   map[string]int
	dir    string // the env's directory (the data file walkOrder reads)
	// walk items out of order whose two items are neighbours in one page
	// of the file (allowed, logged; any other disorder fails the input)
	disorder int
}

// lmdbErr fails the test unless err is nil or an lmdb error.
func (x *corruptRun) lmdbErr(what string, err error) {
	if err == nil {
		return
	}
	if x.errs == nil {
		x.errs = map[string]int{}
	}
	x.errs[what+": "+err.Error()]++
	cfNote(what, err)
	var oe *lmdb.OpError
	if !errors.As(err, &oe) {
		x.t.Fatalf("%s: %v (%T) is not an *lmdb.OpError", what, err, err)
	}
	var le lmdb.Errno
	var se syscall.Errno
	if !errors.As(oe.Errno, &le) && !errors.As(oe.Errno, &se) {
		x.t.Fatalf("%s: %v carries %T, neither lmdb.Errno nor syscall.Errno", what, err, oe.Errno)
	}
}

// ---- coverage feedback ----------------------------------------------------
//
// Go's fuzzer measures coverage of Go code only, not of the C engine. So
// that an input reaching a new kind of failure at a new place counts as
// "interesting", every (place, error class) pair gets a branch of its own
// below; cfSeen only keeps the compiler from merging the cases.

var cfSeen [64]int

// cfSite maps the operation names used with lmdbErr to 8 places.
func cfSite(what string) int {
	switch {
	case strings.HasPrefix(what, "open"), what == "flags", what == "cursor on main", what == "main walk":
		return 0
	case what == "forward", what == "backward", what == "stat", what == "cursor":
		return 1
	case strings.Contains(what, "dup"), what == "multiple", what == "count":
		return 2
	case strings.Contains(what, "seek"), what == "get", strings.Contains(what, "getboth"):
		return 3
	case strings.Contains(what, "rank"), strings.Contains(what, "count"):
		return 4
	case strings.Contains(what, "check"), what == "copy":
		return 5
	case what == "view", what == "update", what == "drop":
		return 6
	default: // the write txn's puts and deletes
		return 7
	}
}

// cfClass sorts an error into 8 classes.
func cfClass(err error) int {
	switch {
	case errors.Is(err, lmdb.Corrupted):
		return 0
	case errors.Is(err, lmdb.PageNotFound):
		return 1
	case errors.Is(err, lmdb.BadTxn):
		return 2
	case errors.Is(err, lmdb.Incompatible):
		return 3
	case errors.Is(err, lmdb.BadValSize):
		return 4
	case errors.Is(err, lmdb.CursorFull), errors.Is(err, lmdb.Panic):
		return 5
	case errors.Is(err, syscall.EINVAL):
		return 6
	default:
		return 7
	}
}

func cfNote(what string, err error) {
	switch cfSite(what)*8 + cfClass(err) {
	case 0:
		cfSeen[0]++
	case 1:
		cfSeen[1]++
	case 2:
		cfSeen[2]++
	case 3:
		cfSeen[3]++
	case 4:
		cfSeen[4]++
	case 5:
		cfSeen[5]++
	case 6:
		cfSeen[6]++
	case 7:
		cfSeen[7]++
	case 8:
		cfSeen[8]++
	case 9:
		cfSeen[9]++
	case 10:
		cfSeen[10]++
	case 11:
		cfSeen[11]++
	case 12:
		cfSeen[12]++
	case 13:
		cfSeen[13]++
	case 14:
		cfSeen[14]++
	case 15:
		cfSeen[15]++
	case 16:
		cfSeen[16]++
	case 17:
		cfSeen[17]++
	case 18:
		cfSeen[18]++
	case 19:
		cfSeen[19]++
	case 20:
		cfSeen[20]++
	case 21:
		cfSeen[21]++
	case 22:
		cfSeen[22]++
	case 23:
		cfSeen[23]++
	case 24:
		cfSeen[24]++
	case 25:
		cfSeen[25]++
	case 26:
		cfSeen[26]++
	case 27:
		cfSeen[27]++
	case 28:
		cfSeen[28]++
	case 29:
		cfSeen[29]++
	case 30:
		cfSeen[30]++
	case 31:
		cfSeen[31]++
	case 32:
		cfSeen[32]++
	case 33:
		cfSeen[33]++
	case 34:
		cfSeen[34]++
	case 35:
		cfSeen[35]++
	case 36:
		cfSeen[36]++
	case 37:
		cfSeen[37]++
	case 38:
		cfSeen[38]++
	case 39:
		cfSeen[39]++
	case 40:
		cfSeen[40]++
	case 41:
		cfSeen[41]++
	case 42:
		cfSeen[42]++
	case 43:
		cfSeen[43]++
	case 44:
		cfSeen[44]++
	case 45:
		cfSeen[45]++
	case 46:
		cfSeen[46]++
	case 47:
		cfSeen[47]++
	case 48:
		cfSeen[48]++
	case 49:
		cfSeen[49]++
	case 50:
		cfSeen[50]++
	case 51:
		cfSeen[51]++
	case 52:
		cfSeen[52]++
	case 53:
		cfSeen[53]++
	case 54:
		cfSeen[54]++
	case 55:
		cfSeen[55]++
	case 56:
		cfSeen[56]++
	case 57:
		cfSeen[57]++
	case 58:
		cfSeen[58]++
	case 59:
		cfSeen[59]++
	case 60:
		cfSeen[60]++
	case 61:
		cfSeen[61]++
	case 62:
		cfSeen[62]++
	case 63:
		cfSeen[63]++
	}
}

// step spends one unit of the budget; false once it is used up.
func (x *corruptRun) step() bool {
	x.calls++
	x.budget--
	return x.budget > 0
}

// session opens the env, reads everything, writes (first session only),
// copies, and closes.
func (x *corruptRun) session(dir string, first bool) {
	x.dir = dir
	env, err := lmdb.NewEnv()
	if err != nil {
		x.t.Fatal(err)
	}
	env.SetMapSize(4 << 20)
	env.SetMaxDBs(16)
	flags := uint(lmdb.NoSync)
	if x.opts&coWriteMap != 0 {
		flags |= lmdb.WriteMap
	}
	if err := env.Open(dir, flags, 0o644); err != nil {
		x.lmdbErr("open", err)
		if cerr := env.Close(); cerr != nil {
			x.t.Fatalf("close after a failed open: %v", cerr)
		}
		return
	}
	x.readAll(env)
	if first && x.opts&coNoWrite == 0 {
		x.writeSome(env)
		x.readAll(env)
	}
	if os.Getenv("FUZZ_DEBUG") != "" {
		b, _ := os.ReadFile(filepath.Join(dir, "data.mdb"))
		x.t.Logf("DEBUG size %d pages; meta0 last %d txn %d; meta1 last %d txn %d", len(b)/4096,
			binary.LittleEndian.Uint64(b[16+120:]), binary.LittleEndian.Uint64(b[16+128:]),
			binary.LittleEndian.Uint64(b[4096+16+120:]), binary.LittleEndian.Uint64(b[4096+16+128:]))
	}
	// A damaged meta may claim millions of pages, and with WriteMap the
	// engine then extends the file (sparsely) to match: a copy would write
	// all of it out. Correct, but gigabytes per input; copy small files only.
	if fi, err := os.Stat(filepath.Join(dir, "data.mdb")); first && x.opts&coCopy != 0 && err == nil && fi.Size() <= 64<<20 {
		for i, fl := range []uint{0, lmdb.CopyCompact} {
			cdir := filepath.Join(dir, fmt.Sprint("copy", i))
			os.MkdirAll(cdir, 0o755)
			x.lmdbErr("copy", env.CopyFlag(cdir, fl))
		}
	}
	x.lmdbErr("env check", env.Check())
	if err := env.Close(); err != nil {
		x.t.Fatalf("close: %v", err)
	}
}

// dbHandle is one database opened in a txn.
type dbHandle struct {
	name  string
	dbi   lmdb.DBI
	flags uint
}

// openAll opens the main DB, the known named DBs and (a few) other names
// found in the main DB.
func (x *corruptRun) openAll(txn *lmdb.Txn) []dbHandle {
	var out []dbHandle
	root, err := txn.OpenRoot(0)
	x.lmdbErr("open root", err)
	if err != nil {
		return nil
	}
	rfl, err := txn.Flags(root)
	x.lmdbErr("flags", err)
	out = append(out, dbHandle{"", root, rfl})
	known := map[string]bool{}
	for _, d := range x.cb.dbs {
		known[d.name] = true
		dbi, err := txn.OpenDBI(d.name, 0)
		x.lmdbErr("open "+d.name, err)
		if err == nil {
			fl, err := txn.Flags(dbi)
			x.lmdbErr("flags", err)
			out = append(out, dbHandle{d.name, dbi, fl})
		}
	}
	// names in the main DB that should not be there (damaged keys)
	cur, err := txn.OpenCursor(root)
	x.lmdbErr("cursor on main", err)
	if err != nil {
		return out
	}
	defer cur.Close()
	extra := 0
	for op := uint(lmdb.First); x.step() && extra < 3; op = lmdb.Next {
		k, _, err := cur.Get(nil, nil, op)
		if err != nil {
			if !lmdb.IsNotFound(err) {
				x.lmdbErr("main walk", err)
			}
			break
		}
		name := string(k)
		if known[name] || strings.HasPrefix(name, "main-") || strings.IndexByte(name, 0) >= 0 || len(name) == 0 {
			continue
		}
		extra++
		dbi, err := txn.OpenDBI(name, 0)
		x.lmdbErr("open extra", err)
		if err == nil {
			fl, _ := txn.Flags(dbi)
			out = append(out, dbHandle{name, dbi, fl})
		}
	}
	return out
}

// readAll reads every database. A failed operation (a damaged page) ends
// its read txn, so each database and each kind of reading gets a txn of its
// own: damage in one place does not hide the rest of the file.
func (x *corruptRun) readAll(env *lmdb.Env) {
	x.budget = 20*x.cb.entries + 20000
	var hs []dbHandle
	err := env.View(func(txn *lmdb.Txn) error {
		hs = x.openAll(txn)
		x.lmdbErr("txn check", txn.Check())
		return nil
	})
	x.lmdbErr("view", err)
	for _, h := range hs {
		var seen []cfPair
		for phase := 0; phase < 5; phase++ {
			err := env.View(func(txn *lmdb.Txn) error {
				cur, err := txn.OpenCursor(h.dbi)
				x.lmdbErr("cursor", err)
				if err != nil {
					return nil
				}
				defer cur.Close()
				seen = append(seen, x.readDB(txn, cur, h, phase, seen)...)
				return nil
			})
			x.lmdbErr("view", err)
		}
	}
}

type cfPair struct{ k, v []byte }

// walk moves cur with first/next until NotFound, an error or the budget
// runs out, returning up to 64 of the items seen. With h it also holds the
// items to the order of h (dir 1 increasing, -1 decreasing; walkOrder), or
// with vals just their values (the duplicates of one key: FIRST_DUP and
// LAST_DUP return no key).
func (x *corruptRun) walk(cur *lmdb.Cursor, first, next uint, what string, h *dbHandle, dir int, vals bool) []cfPair {
	var seen []cfPair
	var prev cfPair
	var img []byte // the data file, read at the first disorder
	n := 0
	for op := first; x.step(); op = next {
		k, v, err := cur.Get(nil, nil, op)
		if err != nil {
			if !lmdb.IsNotFound(err) {
				x.lmdbErr(what, err)
			}
			break
		}
		if h != nil && n > 0 {
			img = x.walkOrder(*h, what, dir, vals, prev, cfPair{k, v}, img)
		}
		prev = cfPair{k, v}
		n++
		if len(seen) < 64 || x.rng.Intn(n) < 8 {
			if len(seen) < 64 {
				seen = append(seen, cfPair{k, v})
			} else {
				seen[x.rng.Intn(64)] = cfPair{k, v}
			}
		}
	}
	return seen
}

// walkOrder checks that cur follows prev in a walk of h in direction dir.
// Items out of order pass only when they are neighbours (keys, or values of
// one key) in one page of the data file as it is now: a leaf, a LEAF2 page
// or a sub-page whose own order is damaged, which the engine leaves to the
// checker. Anything else -- a walk that crossed into a leaf or sub-tree
// page that does not fit there -- is a silent wrong answer and fails the
// input. img is the file image if already read; the (maybe new) one is
// returned. A file of more than 64 MiB (a damaged meta made WriteMap
// extend it, sparsely) is not read: its disorder passes, counted.
func (x *corruptRun) walkOrder(h dbHandle, what string, dir int, vals bool, prev, cur cfPair, img []byte) []byte {
	dup := h.flags&lmdb.DupSort != 0
	c := 0
	if !vals {
		c = keyOrder(h.flags, prev.k, cur.k)
	}
	if c == 0 && dup {
		c = dupOrder(h.flags, prev.v, cur.v)
	}
	if c*dir < 0 {
		return img
	}
	if img == nil {
		path := filepath.Join(x.dir, "data.mdb")
		if fi, err := os.Stat(path); err != nil {
			x.t.Fatal(err)
		} else if fi.Size() > 64<<20 {
			x.disorder++
			return img
		}
		var err error
		if img, err = os.ReadFile(path); err != nil {
			x.t.Fatal(err)
		}
	}
	lo, hi := prev, cur // lo comes first in the page
	if dir < 0 {
		lo, hi = cur, prev
	}
	if (!vals && adjacentInFile(img, x.cb.psize, lo.k, hi.k)) || (dup && adjacentInFile(img, x.cb.psize, lo.v, hi.v)) {
		x.disorder++
		return img
	}
	x.t.Fatalf("%s walk of db %q (flags %#x): item (%x, %x) then (%x, %x), out of order across pages and no error",
		what, h.name, h.flags, prev.k, prev.v, cur.k, cur.v)
	return img
}

// adjacentInFile says whether some page of the file image img holds a
// and b as neighbours, a first: keys of two consecutive nodes of a leaf,
// two consecutive values of a LEAF2 page, or of a sub-page in a leaf node.
func adjacentInFile(img []byte, psize int, a, b []byte) bool {
	for off := 0; off+psize <= len(img); off += psize {
		if adjacentInPage(img[off:off+psize], a, b, true) {
			return true
		}
	}
	return false
}

func adjacentInPage(p, a, b []byte, top bool) bool {
	if len(p) < wPageHdr {
		return false
	}
	fl := binary.LittleEndian.Uint16(p[10:])
	lower := int(binary.LittleEndian.Uint16(p[12:]))
	if lower < wPageHdr || lower > len(p) {
		return false
	}
	n := (lower - wPageHdr) / 2
	if fl&wPLeaf2 != 0 {
		pad := int(binary.LittleEndian.Uint16(p[8:]))
		for i := 0; pad > 0 && i+1 < n && wPageHdr+(i+2)*pad <= len(p); i++ {
			at := wPageHdr + i*pad
			if bytes.Equal(p[at:at+pad], a) && bytes.Equal(p[at+pad:at+2*pad], b) {
				return true
			}
		}
		return false
	}
	if fl&wPLeaf == 0 {
		return false
	}
	// a PREFIX page: keys are anchor[:shared] + the stored suffix
	var anchor []byte
	pfx := fl&wPPrefix != 0
	if at := int(binary.LittleEndian.Uint16(p[8:])); pfx && at > 0 && at+2 <= len(p) {
		if l := int(binary.LittleEndian.Uint16(p[at:])); at+2+l <= len(p) {
			anchor = p[at+2 : at+2+l]
		}
	}
	var prev []byte
	for i := 0; i < n; i++ {
		off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*i:]))
		if off+8 > len(p) {
			prev = nil
			continue
		}
		ks := int(binary.LittleEndian.Uint16(p[off+6:]))
		if off+8+ks > len(p) {
			prev = nil
			continue
		}
		k := p[off+8 : off+8+ks]
		if sh := int(binary.LittleEndian.Uint16(p[off+4:]) >> 7); pfx && sh > 0 {
			if sh > len(anchor) {
				prev = nil
				continue
			}
			k = append(append([]byte(nil), anchor[:sh]...), k...)
		}
		if prev != nil && bytes.Equal(prev, a) && bytes.Equal(k, b) {
			return true
		}
		prev = k
		nfl := binary.LittleEndian.Uint16(p[off+4:])
		if top && nfl&wFDupData != 0 && nfl&(wFSubData|wFBigData) == 0 {
			ds := int(binary.LittleEndian.Uint16(p[off:])) | int(binary.LittleEndian.Uint16(p[off+2:]))<<16
			if adjacentInPage(p[off+8+ks:min(off+8+ks+ds, len(p))], a, b, false) {
				return true
			}
		}
	}
	return false
}

func (x *corruptRun) probeKeys(seen []cfPair) [][]byte {
	var keys [][]byte
	for i := 0; i < 8 && len(seen) > 0; i++ {
		k := seen[x.rng.Intn(len(seen))].k
		keys = append(keys, k)
		if len(k) > 1 {
			keys = append(keys, k[:len(k)-1])
		}
		keys = append(keys, append(append([]byte(nil), k...), 0))
	}
	for i := 0; i < 6; i++ {
		k := make([]byte, 1+x.rng.Intn(9))
		x.rng.Read(k)
		keys = append(keys, k)
	}
	return keys
}

// readDB runs one phase of reading database h and returns items seen.
func (x *corruptRun) readDB(txn *lmdb.Txn, cur *lmdb.Cursor, h dbHandle, phase int, seen []cfPair) []cfPair {
	dup := h.flags&lmdb.DupSort != 0
	switch phase {
	case 0:
		_, err := txn.Stat(h.dbi)
		x.lmdbErr("stat", err)
		return x.walk(cur, lmdb.First, lmdb.Next, "forward", &h, 1, false)
	case 1:
		return x.walk(cur, lmdb.Last, lmdb.Prev, "backward", &h, -1, false)
	case 2:
		if dup {
			x.readDups(cur, h)
		}
	case 3:
		x.probe(txn, cur, h, seen)
	case 4:
		if h.flags&lmdb.Counted != 0 {
			x.readCounted(txn, cur, h, seen)
		}
	}
	return nil
}

func (x *corruptRun) readDups(cur *lmdb.Cursor, h dbHandle) {
	{
		// key by key, each key's values both ways
		for op := uint(lmdb.First); x.step(); op = lmdb.NextNoDup {
			if _, _, err := cur.Get(nil, nil, op); err != nil {
				if !lmdb.IsNotFound(err) {
					x.lmdbErr("nextnodup", err)
				}
				break
			}
			cnt, err := cur.Count()
			x.lmdbErr("count", err)
			// the bulk reads of the key's values: an error, or as many
			// values as the key counts
			vals, lerr := cur.ListDup()
			x.lmdbErr("listdup", lerr)
			if err == nil && lerr == nil && uint64(len(vals)) != cnt {
				x.t.Fatalf("ListDup: %d values, Count %d, no error", len(vals), cnt)
			}
			if h.flags&lmdb.DupFixed != 0 {
				flat, stride, ferr := cur.ListDupFixed(nil)
				x.lmdbErr("listdup", ferr)
				if err == nil && ferr == nil && ((stride > 0 && (len(flat)%stride != 0 || uint64(len(flat)/stride) != cnt)) ||
					(stride == 0 && len(flat) != 0)) {
					x.t.Fatalf("ListDupFixed: %d bytes of stride %d, Count %d, no error", len(flat), stride, cnt)
				}
				runs, rstride, rerr := cur.ListDupRuns(nil)
				x.lmdbErr("listdup", rerr)
				if ferr == nil && rerr == nil && (rstride != stride || !bytes.Equal(bytes.Join(runs, nil), flat)) {
					x.t.Fatalf("ListDupRuns: %d runs of stride %d, not ListDupFixed's %d bytes of stride %d",
						len(runs), rstride, len(flat), stride)
				}
			}
			x.walk(cur, lmdb.LastDup, lmdb.PrevDup, "prevdup", &h, -1, true)
			x.walk(cur, lmdb.FirstDup, lmdb.NextDup, "nextdup", &h, 1, true)
			if h.flags&lmdb.DupFixed != 0 {
				x.walk(cur, lmdb.GetMultiple, lmdb.NextMultiple, "multiple", nil, 0, false)
			}
		}
		for op := uint(lmdb.Last); x.step(); op = lmdb.PrevNoDup {
			if _, _, err := cur.Get(nil, nil, op); err != nil {
				if !lmdb.IsNotFound(err) {
					x.lmdbErr("prevnodup", err)
				}
				break
			}
		}
	}
}

func (x *corruptRun) probe(txn *lmdb.Txn, cur *lmdb.Cursor, h dbHandle, seen []cfPair) {
	dup := h.flags&lmdb.DupSort != 0
	for _, k := range x.probeKeys(seen) {
		if !x.step() {
			break
		}
		for _, op := range []uint{lmdb.Set, lmdb.SetKey, lmdb.SetRange} {
			_, _, err := cur.Get(k, nil, op)
			if err != nil && !lmdb.IsNotFound(err) {
				x.lmdbErr("seek", err)
			}
			if err == nil && x.rng.Intn(2) == 0 {
				_, _, err = cur.Get(nil, nil, lmdb.Next)
				if err != nil && !lmdb.IsNotFound(err) {
					x.lmdbErr("seek+next", err)
				}
			}
		}
		_, err := txn.Get(h.dbi, k)
		if err != nil && !lmdb.IsNotFound(err) {
			x.lmdbErr("get", err)
		}
	}
	if dup {
		for i := 0; i < 8 && len(seen) > 0 && x.step(); i++ {
			kv := seen[x.rng.Intn(len(seen))]
			for _, op := range []uint{lmdb.GetBoth, lmdb.GetBothRange} {
				if _, _, err := cur.Get(kv.k, kv.v, op); err != nil && !lmdb.IsNotFound(err) {
					x.lmdbErr("getboth", err)
				}
			}
			if _, _, err := cur.Get(kv.k, kv.v[:len(kv.v)/2], lmdb.GetBothRange); err != nil && !lmdb.IsNotFound(err) {
				x.lmdbErr("getbothrange", err)
			}
		}
	}
}

func (x *corruptRun) readCounted(txn *lmdb.Txn, cur *lmdb.Cursor, h dbHandle, seen []cfPair) {
	n, err := txn.CountAll(h.dbi)
	x.lmdbErr("countall", err)
	ranks := []uint64{0, 1, n / 3, n / 2, n - 1, n, n + 1, 1 << 40, ^uint64(0)}
	for _, r := range ranks {
		if !x.step() {
			return
		}
		if _, _, err := txn.GetRank(h.dbi, r); err != nil && !lmdb.IsNotFound(err) {
			x.lmdbErr("rank", err)
		}
		if _, _, err := cur.GetRank(r); err != nil && !lmdb.IsNotFound(err) {
			x.lmdbErr("cursor rank", err)
		} else if err == nil {
			_, _, err := cur.Get(nil, nil, lmdb.Next)
			if err != nil && !lmdb.IsNotFound(err) {
				x.lmdbErr("rank+next", err)
			}
		}
	}
	for i := 0; i < 8 && len(seen) > 0 && x.step(); i++ {
		a, b := seen[x.rng.Intn(len(seen))], seen[x.rng.Intn(len(seen))]
		if _, err := txn.KeyRank(h.dbi, a.k, nil); err != nil && !lmdb.IsNotFound(err) {
			x.lmdbErr("keyrank", err)
		}
		if _, err := cur.KeyRank(a.k, a.v); err != nil && !lmdb.IsNotFound(err) {
			x.lmdbErr("cursor keyrank", err)
		}
		fl := uint(x.rng.Intn(4)) << 1
		_, err := txn.CountRange(h.dbi, a.k, b.k, fl)
		x.lmdbErr("countrange", err)
		_, err = txn.CountKeys(h.dbi, a.k, nil, fl)
		x.lmdbErr("countkeys", err)
		_, err = txn.CountValues(h.dbi, nil, b.k, fl)
		x.lmdbErr("countvalues", err)
	}
}

// writeSome runs one write txn with a few changes to every database.
func (x *corruptRun) writeSome(env *lmdb.Env) {
	x.budget = 20*x.cb.entries + 20000
	errAbort := errors.New("abort on purpose")
	dropAt := 1 + x.rng.Intn(len(x.cb.dbs))
	// one txn per database, as for reading; the last one drops a database
	for i := 0; i <= len(x.cb.dbs)+1; i++ {
		err := env.Update(func(txn *lmdb.Txn) error {
			hs := x.openAll(txn)
			if i < len(hs) {
				x.writeDB(txn, hs[i])
			} else if x.opts&coDrop != 0 && dropAt < len(hs) {
				x.lmdbErr("drop", txn.Drop(hs[dropAt].dbi, x.rng.Intn(2) == 0))
			}
			if x.opts&coAbort != 0 && i%2 == 1 {
				return errAbort
			}
			return nil
		})
		if err != errAbort {
			x.lmdbErr("update", err)
		}
	}
}

func (x *corruptRun) writeDB(txn *lmdb.Txn, h dbHandle) {
	cur, err := txn.OpenCursor(h.dbi)
	x.lmdbErr("write cursor", err)
	if err != nil {
		return
	}
	defer cur.Close()
	// not held to an order: the txn's own page copies are not in the file
	seen := x.walk(cur, lmdb.First, lmdb.Next, "write walk", nil, 0, false)
	ok := func(what string, err error) {
		if err != nil && !lmdb.IsNotFound(err) && !lmdb.IsErrno(err, lmdb.KeyExist) {
			x.lmdbErr(what, err)
		}
	}
	mkKey := func() []byte {
		if h.flags&lmdb.IntegerKey != 0 {
			return intKey(uint64(x.rng.Intn(200000)))
		}
		k := make([]byte, 2+x.rng.Intn(8))
		x.rng.Read(k)
		return k
	}
	mkVal := func() []byte {
		if h.flags&lmdb.DupFixed != 0 {
			return intKey(uint64(x.rng.Int63()))
		}
		n := 1 + x.rng.Intn(40)
		if h.flags&lmdb.DupSort == 0 && x.rng.Intn(4) == 0 {
			n = 3000 + x.rng.Intn(9000) // an overflow value
		}
		v := make([]byte, n)
		x.rng.Read(v)
		return v
	}
	for i := 0; i < 4; i++ {
		ok("put new", txn.Put(h.dbi, mkKey(), mkVal(), 0))
	}
	for i := 0; i < 4 && len(seen) > 0; i++ {
		kv := seen[x.rng.Intn(len(seen))]
		if h.name == "" && !strings.HasPrefix(string(kv.k), "main-") {
			continue // a named DB's record: leave it to the engine's own checks
		}
		switch x.rng.Intn(4) {
		case 0:
			ok("overwrite", txn.Put(h.dbi, kv.k, mkVal(), 0))
		case 1:
			ok("del", txn.Del(h.dbi, kv.k, nil))
		case 2:
			if _, _, err := cur.Get(kv.k, nil, lmdb.Set); err == nil {
				ok("cursor del", cur.Del(0))
			} else {
				ok("cursor set", err)
			}
		case 3:
			if h.flags&lmdb.DupSort != 0 {
				ok("del pair", txn.Del(h.dbi, kv.k, kv.v))
			} else {
				ok("cursor put", cur.Put(kv.k, mkVal(), 0))
			}
		}
	}
	if h.flags&lmdb.DupSort != 0 && len(seen) > 0 {
		kv := seen[x.rng.Intn(len(seen))]
		for i := 0; i < 20; i++ {
			ok("put dup", txn.Put(h.dbi, kv.k, mkVal(), 0))
		}
		if h.flags&lmdb.DupFixed != 0 {
			page := make([]byte, 8*40)
			x.rng.Read(page)
			ok("put multi", cur.PutMulti(kv.k, page, 8, 0))
		}
		if _, _, err := cur.Get(kv.k, nil, lmdb.Set); err == nil {
			ok("del all dups", cur.Del(lmdb.NoDupData))
		}
	}
	if h.flags&lmdb.Counted != 0 {
		_, err := txn.CountAll(h.dbi)
		x.lmdbErr("countall in write", err)
		_, _, err = txn.GetRank(h.dbi, 3)
		ok("rank in write", err)
	}
}
