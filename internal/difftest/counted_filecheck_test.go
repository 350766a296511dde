//go:build !dlmdb_stockonly

package difftest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	dl "github.com/dlmdb/dlmdb-go/lmdb"
)

// countedFileCheck is a second, independent reading of the counted-tree
// encoding (cdlmdb/FORMAT.md "Counted trees"), in Go and straight from the
// data file, next to the C checker (mdb_txn_check). From the newest meta it
// visits the main DB and every named DB; in each counted tree it recomputes,
// bottom-up, the entries (and for counted DUPSORT main trees the distinct
// keys) under every branch node and compares them with the stored counts, and
// the root total with the record's entries; it also requires the COUNTED /
// KEYCOUNT page flags exactly on the branch pages of counted trees and counted
// duplicate sub-trees exactly in counted DUPSORT DBs. Returns the problems
// found (empty if none) and the number of counted trees seen.

const (
	cfCounted  = 0x80 // DB flag MDB_COUNTED
	cfDupSort  = 0x04
	cfPCounted = 0x100
	cfPKeyCnt  = 0x200
)

type countWalker struct {
	b      []byte
	psize  int
	errs   []string
	trees  int
	branch int   // counted branch nodes compared
	offs   []int // file offsets of the stored entry counts compared
}

func (w *countWalker) failf(format string, a ...any) {
	if len(w.errs) < 10 {
		w.errs = append(w.errs, fmt.Sprintf(format, a...))
	}
}

func (w *countWalker) page(pg uint64) []byte {
	off := int(pg) * w.psize
	if pg > uint64(len(w.b)/w.psize) || off+w.psize > len(w.b) {
		return nil
	}
	return w.b[off : off+w.psize]
}

// tree walks the tree under pg; dbFlags are the flags of its record. Returns
// the entries and distinct keys under pg.
func (w *countWalker) tree(who string, pg uint64, dbFlags uint16, depth int) (ent, keys uint64, ok bool) {
	p := w.page(pg)
	if p == nil || depth > 40 {
		w.failf("%s: page %d unreadable (or tree too deep)", who, pg)
		return 0, 0, false
	}
	flags := binary.LittleEndian.Uint16(p[10:])
	lower := int(binary.LittleEndian.Uint16(p[12:]))
	if lower < wPageHdr || lower > w.psize {
		w.failf("%s: page %d bad lower %d", who, pg, lower)
		return 0, 0, false
	}
	n := (lower - wPageHdr) / 2
	counted := dbFlags&cfCounted != 0
	dupsort := dbFlags&cfDupSort != 0
	var wantFlags uint16
	if flags&wPBranch != 0 && counted {
		wantFlags = cfPCounted
		if dupsort {
			wantFlags |= cfPKeyCnt
		}
	}
	if got := flags & (cfPCounted | cfPKeyCnt); got != wantFlags {
		w.failf("%s: page %d (flags %#x) has count flags %#x, want %#x", who, pg, flags, got, wantFlags)
		return 0, 0, false
	}
	if flags&wPLeaf2 != 0 {
		return uint64(n), uint64(n), true
	}
	for i := 0; i < n; i++ {
		off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*i:]))
		if off+8 > w.psize {
			w.failf("%s: page %d node %d at bad offset %d", who, pg, i, off)
			return 0, 0, false
		}
		nd := p[off:]
		lo, hi := uint64(binary.LittleEndian.Uint16(nd[0:])), uint64(binary.LittleEndian.Uint16(nd[2:]))
		nfl := binary.LittleEndian.Uint16(nd[4:])
		ks := int(binary.LittleEndian.Uint16(nd[6:]))
		if flags&wPBranch != 0 {
			e, k, ok := w.tree(who, lo|hi<<16|uint64(nfl)<<32, dbFlags, depth+1)
			if !ok {
				return 0, 0, false
			}
			ent += e
			keys += k
			if counted {
				cnt := off + 8 + ks
				if cnt+8 > w.psize || (dupsort && cnt+16 > w.psize) {
					w.failf("%s: page %d node %d: counts run past the page", who, pg, i)
					return 0, 0, false
				}
				w.branch++
				w.offs = append(w.offs, int(pg)*w.psize+cnt)
				if se := binary.LittleEndian.Uint64(p[cnt:]); se != e {
					w.failf("%s: page %d node %d: stored entries %d, child subtree holds %d", who, pg, i, se, e)
				}
				if dupsort {
					if sk := binary.LittleEndian.Uint64(p[cnt+8:]); sk != k {
						w.failf("%s: page %d node %d: stored keys %d, child subtree holds %d", who, pg, i, sk, k)
					}
				}
			}
			continue
		}
		keys++
		if !dupsort || nfl&wFDupData == 0 {
			ent++
			continue
		}
		data := nd[8+ks:]
		if nfl&wFSubData != 0 {
			if len(data) < wDBSize {
				w.failf("%s: page %d node %d: short sub-tree record", who, pg, i)
				return 0, 0, false
			}
			sf := binary.LittleEndian.Uint16(data[4:])
			if (sf&cfCounted != 0) != counted {
				w.failf("%s: page %d node %d: duplicate sub-tree flags %#x in a DB with flags %#x", who, pg, i, sf, dbFlags)
			}
			se := binary.LittleEndian.Uint64(data[32:])
			e, _, ok := w.tree(who+" dups", binary.LittleEndian.Uint64(data[40:]), sf, depth+1)
			if !ok {
				return 0, 0, false
			}
			if e != se {
				w.failf("%s: page %d node %d: duplicate sub-tree record says %d entries, holds %d", who, pg, i, se, e)
			}
			ent += e
			continue
		}
		if len(data) < wPageHdr {
			w.failf("%s: page %d node %d: short sub-page", who, pg, i)
			return 0, 0, false
		}
		ent += uint64(binary.LittleEndian.Uint16(data[12:])-wPageHdr) / 2
	}
	return ent, keys, true
}

// db checks one DB record; named DBs are looked for in the main DB.
func (w *countWalker) db(who string, rec []byte, isMain bool) {
	flags := binary.LittleEndian.Uint16(rec[4:])
	root := binary.LittleEndian.Uint64(rec[40:])
	entries := binary.LittleEndian.Uint64(rec[32:])
	if flags&cfCounted != 0 {
		w.trees++
	}
	if root != wPInvalid {
		e, _, ok := w.tree(who, root, flags, 0)
		if ok && e != entries {
			w.failf("%s: record says %d entries, the tree holds %d", who, entries, e)
		}
	}
	if !isMain || flags&(cfDupSort|fIntegerKeyFlag) != 0 || root == wPInvalid {
		return
	}
	// named DBs: the main DB's leaf nodes with SUBDATA
	var leaves func(pg uint64, depth int)
	leaves = func(pg uint64, depth int) {
		p := w.page(pg)
		if p == nil || depth > 40 {
			return
		}
		pf := binary.LittleEndian.Uint16(p[10:])
		n := (int(binary.LittleEndian.Uint16(p[12:])) - wPageHdr) / 2
		for i := 0; i < n; i++ {
			off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*i:]))
			if off+8 > w.psize {
				return
			}
			nd := p[off:]
			nfl := binary.LittleEndian.Uint16(nd[4:])
			if pf&wPBranch != 0 {
				leaves(uint64(binary.LittleEndian.Uint16(nd[0:]))|uint64(binary.LittleEndian.Uint16(nd[2:]))<<16|uint64(nfl)<<32, depth+1)
				continue
			}
			ks := int(binary.LittleEndian.Uint16(nd[6:]))
			if nfl&wFSubData == 0 || nfl&wFBigData != 0 || off+8+ks+wDBSize > w.psize {
				continue
			}
			sub := nd[8+ks : 8+ks+wDBSize]
			// named DBs are SUBDATA nodes, extension or not (stock LMDB's
			// cursors crash on DUPDATA in a non-DUPSORT DB)
			if nfl&wFDupData != 0 {
				w.failf("main DB: named DB %q has node flags %#x", nd[8:8+ks], nfl)
			}
			w.db(fmt.Sprintf("db %q", nd[8:8+ks]), sub, false)
		}
	}
	leaves(root, 0)
}

const fIntegerKeyFlag = 0x08

func countedFileCheck(dir string) ([]string, int) {
	w := countedFileWalk(dir)
	return w.errs, w.trees
}

func countedFileWalk(dir string) *countWalker {
	const psize = 4096
	f, err := os.Open(filepath.Join(dir, "data.mdb"))
	if err != nil {
		return &countWalker{errs: []string{err.Error()}}
	}
	defer f.Close()
	b := make([]byte, 2*psize)
	if _, err := f.ReadAt(b, 0); err != nil {
		return &countWalker{errs: []string{"reading the meta pages: " + err.Error()}}
	}
	// read only the used part (a WriteMap env's file is as long as its map)
	meta := b[wPageHdr:]
	if t1 := binary.LittleEndian.Uint64(b[psize+wPageHdr+128:]); t1 > binary.LittleEndian.Uint64(b[wPageHdr+128:]) {
		meta = b[psize+wPageHdr:]
	}
	last := binary.LittleEndian.Uint64(meta[120:])
	if last >= 1<<30/psize {
		return &countWalker{errs: []string{fmt.Sprintf("last page %d: implausible", last)}}
	}
	full := make([]byte, int(last+1)*psize)
	n, _ := f.ReadAt(full, 0)
	w := &countWalker{b: full[:n], psize: psize}
	w.db("main DB", meta[24+wDBSize:24+2*wDBSize], true)
	// a file with counted trees must keep stock LMDB out: extended version
	if v := binary.LittleEndian.Uint32(meta[4:]); w.trees > 0 && v != 0x444c4301 {
		w.failf("meta version %#x with %d counted trees, want 0x444c4301", v, w.trees)
	}
	return w
}

// TestCountedFileCheckSelf: both checkers (the Go file walk above and the
// engine's Check) accept a fresh counted env and reject it once one stored
// count in the file is off by one.
func TestCountedFileCheckSelf(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dir := t.TempDir()
	open := func() *dl.Env {
		env, err := dl.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		env.SetMaxDBs(4)
		env.SetMapSize(64 << 20)
		if err := env.Open(dir, 0, 0o644); err != nil {
			t.Fatal(err)
		}
		return env
	}
	env := open()
	err := env.Update(func(txn *dl.Txn) error {
		a, err := txn.OpenDBI("a", dl.Create|dl.Counted)
		if err != nil {
			return err
		}
		d, err := txn.OpenDBI("d", dl.Create|dl.Counted|dl.DupSort)
		if err != nil {
			return err
		}
		for i := 0; i < 4000; i++ {
			k := []byte(fmt.Sprintf("k%05d", i))
			if err := txn.Put(a, k, k, 0); err != nil {
				return err
			}
			if err := txn.Put(d, k[:4], k, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	env.Close()
	w := countedFileWalk(dir)
	if len(w.errs) > 0 || w.trees != 2 || len(w.offs) < 10 {
		t.Fatalf("fresh env: problems %v, %d counted trees, %d counts compared", w.errs, w.trees, len(w.offs))
	}
	f, err := os.OpenFile(filepath.Join(dir, "data.mdb"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range []int{w.offs[0], w.offs[len(w.offs)/2], w.offs[len(w.offs)-1]} {
		var b [8]byte
		if _, err := f.ReadAt(b[:], int64(off)); err != nil {
			t.Fatal(err)
		}
		orig := binary.LittleEndian.Uint64(b[:])
		binary.LittleEndian.PutUint64(b[:], orig+1)
		f.WriteAt(b[:], int64(off))
		if probs, _ := countedFileCheck(dir); len(probs) == 0 {
			t.Errorf("count at file offset %d patched %d -> %d: the Go walk saw nothing", off, orig, orig+1)
		}
		env := open()
		if err := env.Check(); !errors.Is(err, dl.Corrupted) {
			t.Errorf("count at file offset %d patched: Env.Check = %v, want Corrupted", off, err)
		}
		env.Close()
		binary.LittleEndian.PutUint64(b[:], orig)
		f.WriteAt(b[:], int64(off))
		if probs, _ := countedFileCheck(dir); len(probs) > 0 {
			t.Errorf("patch undone, the Go walk still complains: %v", probs)
		}
		env = open()
		if err := env.Check(); err != nil {
			t.Errorf("patch undone, Env.Check: %v", err)
		}
		env.Close()
	}
}
