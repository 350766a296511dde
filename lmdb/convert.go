package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#cgo noescape dlmdbgo_cmp
#cgo nocallback dlmdbgo_cmp
#include "dlmdbgo.h"

// a compared with b under dbi's key order (dup == 0) or duplicate order
typedef struct {
	int rc;
	int cmp;
} dlmdbgo_cmpres;

static inline dlmdbgo_cmpres dlmdbgo_cmp(dlmdbgo_h txn, MDB_dbi dbi, int dup,
	char *a, size_t an, char *b, size_t bn)
{
	dlmdbgo_cmpres r = {0, 0};
	MDB_val x = {an, dlmdbgo_bytes(a, an)}, y = {bn, dlmdbgo_bytes(b, bn)};
	unsigned flags;
	r.rc = mdb_dbi_flags(DLMDBGO_TXN(txn), dbi, &flags);
	if (r.rc == 0)
		r.cmp = dup ? mdb_dcmp(DLMDBGO_TXN(txn), dbi, &x, &y) : mdb_cmp(DLMDBGO_TXN(txn), dbi, &x, &y);
	return r;
}
*/
import "C"

// ReplaceDBI makes the named database dst hold the tree of the named
// database src, in one step of write transaction txn: dst's record (root,
// page counts, entries and flags, so Counted and PrefixCompression may
// change) becomes src's, dst's old pages are freed, and src's name is
// deleted and its handle closed, as Drop(src, true) would do except that
// the pages stay (they are dst's now). Transactions of older snapshots keep
// seeing the old dst. The two databases must have the same flags apart from
// Counted and PrefixCompression (else Incompatible), neither may have an
// open cursor in txn or an enclosing transaction (else EBUSY), and both
// must be named databases other than each other (else EINVAL).
//
// See mdb_dbi_replace.
func (txn *Txn) ReplaceDBI(dst, src DBI) error {
	if txn.gone() {
		return ended("mdb_dbi_replace")
	}
	return check("mdb_dbi_replace", C.mdb_dbi_replace(txn.handle, C.MDB_dbi(dst), C.MDB_dbi(src)))
}

// Footprint holds what a walk over one database found: pages by kind,
// entries, and the bytes its keys and values take as stored against their
// decoded size (on pages stored prefix-compressed, a key is stored as its
// suffix and decoded as the shared prefix plus the suffix; elsewhere the two
// sizes are equal). Key sizes count the keys of leaves, not the separators
// of branch pages; value sizes include every duplicate of a DupSort key.
//
// See MDB_footprint.
type Footprint struct {
	BranchPages       uint64 // branch pages of the database's tree
	LeafPages         uint64 // leaf pages of the database's tree
	OverflowPages     uint64 // pages of values too large for a leaf
	DupBranchPages    uint64 // branch pages of DupSort duplicate sub-trees
	DupLeafPages      uint64 // leaf pages of duplicate sub-trees
	SubPages          uint64 // inline duplicate sub-pages
	PrefixPages       uint64 // leaves and sub-pages stored prefix-compressed
	Keys              uint64 // distinct keys
	Entries           uint64 // key/value pairs, every duplicate counted
	KeyBytesStored    uint64
	KeyBytesDecoded   uint64
	ValueBytesStored  uint64
	ValueBytesDecoded uint64
	AnchorBytes       uint64 // bytes the anchor records of compressed pages take
}

// FootprintWalk is a walk over one database in steps, so that the caller
// can report progress on a big database. The zero value starts a walk.
// Every step must be made in the same transaction (or a reader of the same
// snapshot), with the database unchanged in between.
type FootprintWalk struct {
	fp C.MDB_footprint
}

// Step walks at most maxLeaves more leaf pages of dbi (with the duplicates
// and big values they hold) and reports whether the walk is complete.
//
// See mdb_footprint.
func (w *FootprintWalk) Step(txn *Txn, dbi DBI, maxLeaves uint64) (done bool, err error) {
	if txn.gone() {
		return false, ended("mdb_footprint")
	}
	if maxLeaves == 0 {
		return false, invalid("mdb_footprint")
	}
	rc := C.mdb_footprint(txn.handle, C.MDB_dbi(dbi), &w.fp, C.mdb_size_t(maxLeaves))
	if rc != 0 {
		return false, codeError("mdb_footprint", rc)
	}
	return w.fp.fp_done != 0, nil
}

// Progress is the number of leaf pages walked so far and the number of
// leaf pages the database's record counts (known after the first Step).
func (w *FootprintWalk) Progress() (done, total uint64) {
	return uint64(w.fp.fp_leaf_pages), uint64(w.fp.fp_leaf_total)
}

// Result is what the walk has found so far (everything once Step reported
// done).
func (w *FootprintWalk) Result() Footprint {
	f := &w.fp
	return Footprint{
		BranchPages:       uint64(f.fp_branch_pages),
		LeafPages:         uint64(f.fp_leaf_pages),
		OverflowPages:     uint64(f.fp_overflow_pages),
		DupBranchPages:    uint64(f.fp_dup_branch_pages),
		DupLeafPages:      uint64(f.fp_dup_leaf_pages),
		SubPages:          uint64(f.fp_subpages),
		PrefixPages:       uint64(f.fp_prefix_pages),
		Keys:              uint64(f.fp_keys),
		Entries:           uint64(f.fp_entries),
		KeyBytesStored:    uint64(f.fp_key_stored),
		KeyBytesDecoded:   uint64(f.fp_key_decoded),
		ValueBytesStored:  uint64(f.fp_val_stored),
		ValueBytesDecoded: uint64(f.fp_val_decoded),
		AnchorBytes:       uint64(f.fp_anchor_bytes),
	}
}

// cmp runs dlmdbgo_cmp.
func (txn *Txn) cmp(op string, dup C.int, dbi DBI, a, b []byte) (int, error) {
	if txn.gone() {
		return 0, ended(op)
	}
	ap, an := cbytes(a)
	bp, bn := cbytes(b)
	r := C.dlmdbgo_cmp(txn.ch(), C.MDB_dbi(dbi), dup, ap, an, bp, bn)
	if r.rc != 0 {
		return 0, codeError(op, r.rc)
	}
	return int(r.cmp), nil
}

// Cmp compares two keys in the key order of database dbi: negative when a
// sorts before b, zero when they are equal, positive after.
//
// See mdb_cmp.
func (txn *Txn) Cmp(dbi DBI, a, b []byte) (int, error) {
	return txn.cmp("mdb_cmp", 0, dbi, a, b)
}

// DCmp compares two values in the duplicate order of DupSort database dbi,
// as Cmp does for keys.
//
// See mdb_dcmp.
func (txn *Txn) DCmp(dbi DBI, a, b []byte) (int, error) {
	return txn.cmp("mdb_dcmp", 1, dbi, a, b)
}
