package difftest

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// walkFile is an independent page-accounting check of an LMDB 0.9 (64-bit)
// data file, written here from the format description (cdlmdb/FORMAT.md and
// lmdb.h), used on files written by either engine. From the newest meta page
// it walks the free DB, the main DB, every named DB and every duplicate
// sub-database, and checks that each page number from 2 to the meta's last
// page is used exactly once: by a tree, by an overflow run, or as a free
// page listed in the free DB. A page listed free that is also in use, or
// listed twice, is what makes LMDB hand out a live page again.

const (
	wPageHdr   = 16
	wPBranch   = 0x01
	wPLeaf     = 0x02
	wPOverflow = 0x04
	wPLeaf2    = 0x20
	wPCounted  = 0x100 // branch pages of MDB_COUNTED trees (FORMAT.md "Counted trees")
	wPKeyCount = 0x200 // ... of counted DUPSORT main trees
	wPPrefix   = 0x400 // leaves of MDB_PREFIX_COMPRESSION trees (FORMAT.md "Prefix-compressed leaves")
	wFBigData  = 0x01
	wFSubData  = 0x02
	wFDupData  = 0x04
	wDBSize    = 48
	wPInvalid  = ^uint64(0)
)

type fileWalker struct {
	b        []byte
	psize    int
	last     uint64
	owner    map[uint64]string
	errs     []string
	nfree    int
	ntrees   int
	subFlags map[uint16]int
}

func (w *fileWalker) failf(format string, a ...any) {
	if len(w.errs) < 10 {
		w.errs = append(w.errs, fmt.Sprintf(format, a...))
	}
}

func (w *fileWalker) claim(pg uint64, who string) bool {
	if pg < 2 || pg > w.last {
		w.failf("%s refers to page %d outside 2..%d", who, pg, w.last)
		return false
	}
	if prev, ok := w.owner[pg]; ok {
		w.failf("page %d used twice: by %s and by %s", pg, prev, who)
		return false
	}
	w.owner[pg] = who
	return true
}

func (w *fileWalker) page(pg uint64) []byte {
	off := int(pg) * w.psize
	if off+w.psize > len(w.b) {
		return nil
	}
	return w.b[off : off+w.psize]
}

// walkTree claims every page of the tree rooted at root. leafFn sees each
// leaf node (flags, key, data) of a non-LEAF2 leaf.
func (w *fileWalker) walkTree(root uint64, who string, depth int, leafFn func(fl uint16, key, data []byte)) {
	if root == wPInvalid {
		return
	}
	if depth > 64 {
		w.failf("%s: tree deeper than 64", who)
		return
	}
	if !w.claim(root, who) {
		return
	}
	p := w.page(root)
	if p == nil {
		w.failf("%s: page %d beyond the file", who, root)
		return
	}
	flags := binary.LittleEndian.Uint16(p[10:])
	known := uint16(wPBranch | wPLeaf | wPLeaf2)
	if flags&wPBranch != 0 {
		known |= wPCounted | wPKeyCount
	} else if flags&wPLeaf2 == 0 {
		known |= wPPrefix
	}
	// a compressed leaf: the anchor record at offset pad (length, bytes)
	var anchor []byte
	if flags&wPPrefix != 0 {
		if a := int(binary.LittleEndian.Uint16(p[8:])); a != 0 {
			if a+2 > w.psize || a+2+int(binary.LittleEndian.Uint16(p[a:])) > w.psize {
				w.failf("%s: page %d anchor at %d overruns the page", who, root, a)
				return
			}
			anchor = p[a+2 : a+2+int(binary.LittleEndian.Uint16(p[a:]))]
		}
	}
	if flags&^known != 0 {
		// P_DIRTY, P_SUBP, P_LOOSE, P_KEEP... are in-memory states; on disk
		// a tree page is a branch, a leaf or a LEAF2 leaf
		w.failf("%s: page %d stored with flags %#x", who, root, flags)
	}
	lower := int(binary.LittleEndian.Uint16(p[12:]))
	if lower < wPageHdr || lower > w.psize {
		w.failf("%s: page %d bad lower %d", who, root, lower)
		return
	}
	n := (lower - wPageHdr) / 2
	if flags&wPLeaf2 != 0 {
		return
	}
	for i := 0; i < n; i++ {
		off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*i:]))
		if off+8 > w.psize {
			w.failf("%s: page %d node %d at bad offset %d", who, root, i, off)
			return
		}
		nd := p[off:]
		lo, hi := uint64(binary.LittleEndian.Uint16(nd[0:])), uint64(binary.LittleEndian.Uint16(nd[2:]))
		nfl := binary.LittleEndian.Uint16(nd[4:])
		ks := int(binary.LittleEndian.Uint16(nd[6:]))
		switch {
		case flags&wPBranch != 0:
			w.walkTree(lo|hi<<16|uint64(nfl)<<32, who, depth+1, leafFn)
		case flags&wPLeaf != 0:
			if off+8+ks > w.psize {
				w.failf("%s: page %d node %d key overruns the page", who, root, i)
				return
			}
			key := nd[8 : 8+ks]
			if flags&wPPrefix != 0 {
				// shared length in the flags' high bits, then the suffix
				sh := int(nfl >> 7)
				if sh > len(anchor) {
					w.failf("%s: page %d node %d shares %d bytes of a %d-byte anchor", who, root, i, sh, len(anchor))
					return
				}
				key = append(append([]byte(nil), anchor[:sh]...), key...)
				nfl &= 7
			}
			dsize := int(lo | hi<<16)
			var data []byte
			if nfl&wFBigData != 0 {
				data = nd[8+ks : 8+ks+8]
			} else if off+8+ks+dsize <= w.psize {
				data = nd[8+ks : 8+ks+dsize]
			} else {
				w.failf("%s: page %d node %d data overruns the page", who, root, i)
				return
			}
			leafFn(nfl, key, data)
		default:
			w.failf("%s: page %d has flags %#x, neither branch nor leaf", who, root, flags)
			return
		}
	}
}

// overflow claims the overflow run starting at the page stored in data.
func (w *fileWalker) overflow(data []byte, who string) []byte {
	pg := binary.LittleEndian.Uint64(data)
	p := w.page(pg)
	if p == nil || binary.LittleEndian.Uint16(p[10:])&wPOverflow == 0 {
		w.failf("%s: overflow page %d missing or not an overflow page", who, pg)
		return nil
	}
	pages := uint64(binary.LittleEndian.Uint32(p[12:]))
	for i := uint64(0); i < pages; i++ {
		w.claim(pg+i, who+" (overflow)")
	}
	end := min(int(pg+pages)*w.psize, len(w.b))
	return w.b[int(pg)*w.psize : end]
}

// walkDB walks a user DB whose record (MDB_db) is rec.
func (w *fileWalker) walkDB(rec []byte, who string, isMain bool) {
	w.ntrees++
	root := binary.LittleEndian.Uint64(rec[40:])
	w.walkTree(root, who, 0, func(fl uint16, key, data []byte) {
		switch {
		case fl&wFBigData != 0:
			w.overflow(data, who)
		case fl&wFSubData != 0 && fl&wFDupData != 0:
			if len(data) < wDBSize {
				w.failf("%s: short sub-database record", who)
				return
			}
			w.ntrees++
			w.walkTree(binary.LittleEndian.Uint64(data[40:]), who+" dups", 0, func(uint16, []byte, []byte) {})
		case fl&wFDupData != 0:
			// an inline sub-page of duplicates: P_LEAF|P_SUBP (+P_LEAF2)
			if len(data) < wPageHdr {
				w.failf("%s: key %q: sub-page shorter than a page header", who, key)
				return
			}
			// Stock LMDB stores sub-pages with P_DIRTY set and relies on it:
			// it copies-on-write a sub-page that lacks P_DIRTY as if it were
			// a real page (and asserts in mdb_page_dirty when writing to such
			// a file). So: P_LEAF|P_SUBP|P_DIRTY, plus P_LEAF2 for DUPFIXED.
			if sf := binary.LittleEndian.Uint16(data[10:]); sf&^wPLeaf2 != wPLeaf|0x40|0x10 {
				w.failf("%s: key %q: sub-page flags %#x, want %#x (P_LEAF|P_SUBP|P_DIRTY[|P_LEAF2]) as stock LMDB writes them",
					who, key, sf, wPLeaf|0x40|0x10|sf&wPLeaf2)
			}
			w.subFlags[binary.LittleEndian.Uint16(data[10:])]++
		case fl&wFSubData != 0 && isMain:
			if len(data) < wDBSize {
				w.failf("%s: short DB record for %q", who, key)
				return
			}
			w.walkDB(data, fmt.Sprintf("db %q", key), false)
		}
	})
}

// walkFile checks the data file at path; returns a list of problems.
func walkFile(path string) ([]string, string) {
	const psize = 4096
	// read only the used part: a WriteMap env's file is as long as the map
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}, ""
	}
	defer f.Close()
	b := make([]byte, 2*psize)
	if _, err := f.ReadAt(b, 0); err != nil {
		return []string{"reading the meta pages: " + err.Error()}, ""
	}
	last := max(binary.LittleEndian.Uint64(b[wPageHdr+120:]), binary.LittleEndian.Uint64(b[psize+wPageHdr+120:]))
	if last < 1<<30 {
		full := make([]byte, int(last+1)*psize)
		n, _ := f.ReadAt(full, 0)
		b = full[:n]
	}
	// the newest meta page
	meta := b[wPageHdr:]
	if t1 := binary.LittleEndian.Uint64(b[psize+wPageHdr+128:]); t1 > binary.LittleEndian.Uint64(b[wPageHdr+128:]) {
		meta = b[psize+wPageHdr:]
	}
	w := &fileWalker{b: b, psize: psize, last: binary.LittleEndian.Uint64(meta[120:]), owner: map[uint64]string{}, subFlags: map[uint16]int{}}
	// (the file may end before the last page: pages freed before they were
	// ever written need not exist on disk; tree pages must)
	freeRec, mainRec := meta[24:24+wDBSize], meta[24+wDBSize:24+2*wDBSize]
	// the free DB: its own pages, and the pages its records list
	w.walkTree(binary.LittleEndian.Uint64(freeRec[40:]), "free DB", 0, func(fl uint16, key, data []byte) {
		if fl&wFBigData != 0 {
			data = w.overflow(data, "free DB")
			if data == nil {
				return
			}
			data = data[wPageHdr:]
		}
		if len(data) < 8 {
			w.failf("free DB record too short")
			return
		}
		n := binary.LittleEndian.Uint64(data)
		if int(8+8*n) > len(data) {
			w.failf("free DB record %x: %d page numbers do not fit in %d bytes", key, n, len(data))
			return
		}
		prev := wPInvalid
		for i := uint64(0); i < n; i++ {
			pg := binary.LittleEndian.Uint64(data[8+8*i:])
			// LMDB keeps these lists sorted in descending order and merges
			// them assuming it
			if pg >= prev {
				w.failf("free DB record %x: page list not strictly descending (%d after %d)", key, pg, prev)
			}
			prev = pg
			if w.claim(pg, "free list") {
				w.nfree++
			}
		}
	})
	w.walkDB(mainRec, "main DB", true)
	for pg := uint64(2); pg <= w.last; pg++ {
		if _, ok := w.owner[pg]; !ok {
			w.failf("page %d is neither in use nor free (leaked)", pg)
		}
	}
	return w.errs, fmt.Sprintf("%d pages, %d free, %d trees, sub-page flags %v", w.last+1, w.nfree, w.ntrees, w.subFlags)
}

// walkEnv runs walkFile on an env directory's data file.
func walkEnv(dir string) ([]string, string) { return walkFile(filepath.Join(dir, "data.mdb")) }
