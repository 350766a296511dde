package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#cgo noescape dlmdbgo_count
#cgo nocallback dlmdbgo_count
#cgo noescape dlmdbgo_get_rank
#cgo nocallback dlmdbgo_get_rank
#cgo noescape dlmdbgo_key_rank
#cgo nocallback dlmdbgo_key_rank
#include "dlmdbgo.h"
*/
import "C"

// Order statistics. A database created with the Counted flag keeps, in every
// branch page, the number of entries below each child, so that counting the
// entries of a key range, finding the entry at a position and finding the
// position of an entry take O(log n) page visits instead of a scan.
//
// Entries are the key/value pairs in the database's order: in a DupSort
// database every value of a key is one entry. Ranks (positions) count from
// zero. On a database without Counted every method here fails with an error
// for which errors.Is(err, Incompatible) holds.

// Counted is the database flag that makes Txn.OpenDBI create a counted
// database (flags given when opening an existing database are ignored, as
// for every other database flag). The counting methods of Txn and Cursor need
// it; a database that uses it cannot be opened by stock LMDB.
//
// See mdb_dbi_open and MDB_COUNTED.
const Counted = 0x80

// Bound flags for Txn.CountRange, Txn.CountKeys and Txn.CountValues. A bound
// is exclusive unless its flag is given; a nil (or empty) bound is open and
// ignores its flag.
//
// See mdb_count_range.
const (
	CountLowerIncl = 0x02 // the low bound itself is in the range
	CountUpperIncl = 0x04 // the high bound itself is in the range
)

// The values above are spelled out for the documentation; these arrays have
// a negative length, and do not compile, unless they equal the engine's.
var (
	_ [Counted - C.MDB_COUNTED]struct{}
	_ [C.MDB_COUNTED - Counted]struct{}
	_ [CountLowerIncl - C.MDB_COUNT_LOWER_INCL]struct{}
	_ [C.MDB_COUNT_LOWER_INCL - CountLowerIncl]struct{}
	_ [CountUpperIncl - C.MDB_COUNT_UPPER_INCL]struct{}
	_ [C.MDB_COUNT_UPPER_INCL - CountUpperIncl]struct{}
)

// What dlmdbgo_count computes.
const (
	countRange  = 0
	countKeys   = 1
	countValues = 2
	countAll    = 3
)

// Not-found answers of the rank lookups are expected (a rank past the end,
// an absent key), so their errors are built once, like notFoundGet.
var (
	notFoundGetRank       error = &OpError{Op: "mdb_get_rank", Errno: NotFound}
	notFoundCursorGetRank error = &OpError{Op: "mdb_cursor_get_rank", Errno: NotFound}
	notFoundKeyRank       error = &OpError{Op: "mdb_get_key_rank", Errno: NotFound}
	notFoundCursorKeyRank error = &OpError{Op: "mdb_cursor_key_rank", Errno: NotFound}
)

// boolInt is 1 for true, the form in which the C helpers take flags.
func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// count runs one of the counting functions.
func (txn *Txn) count(op string, which C.int, dbi DBI, low, high []byte, flags uint) (uint64, error) {
	if txn.gone() {
		return 0, ended(op)
	}
	lp, ln := cbytes(low)
	hp, hn := cbytes(high)
	r := C.dlmdbgo_count(txn.ch(), C.MDB_dbi(dbi), which,
		lp, ln, boolInt(len(low) > 0), hp, hn, boolInt(len(high) > 0), C.uint(flags))
	if r.rc != 0 {
		return 0, codeError(op, r.rc)
	}
	return uint64(r.n), nil
}

// CountAll returns the number of entries in database dbi (every value of a
// DupSort key counts). It reads one number and does not walk the tree.
//
// See mdb_count_all.
func (txn *Txn) CountAll(dbi DBI) (uint64, error) {
	return txn.count("mdb_count_all", countAll, dbi, nil, nil, 0)
}

// CountRange returns the number of entries of database dbi whose key lies
// between low and high, duplicates included. flags combine CountLowerIncl
// and CountUpperIncl; without them both bounds are exclusive, and any other
// bit is an EINVAL error. A nil or empty bound is open on its side. A range
// in which low sorts after high is empty, not an error.
//
// See mdb_count_range.
func (txn *Txn) CountRange(dbi DBI, low, high []byte, flags uint) (uint64, error) {
	return txn.count("mdb_count_range", countRange, dbi, low, high, flags)
}

// CountKeys returns the number of distinct keys of database dbi between low
// and high; bounds and flags are as for CountRange. Outside DupSort databases
// it equals CountRange.
//
// See mdb_range_count_keys.
func (txn *Txn) CountKeys(dbi DBI, low, high []byte, flags uint) (uint64, error) {
	return txn.count("mdb_range_count_keys", countKeys, dbi, low, high, flags)
}

// CountValues returns the number of values (duplicates included) stored
// under the keys between low and high: the same number as CountRange, under
// the name DupSort code tends to look for.
//
// See mdb_range_count_values.
func (txn *Txn) CountValues(dbi DBI, low, high []byte, flags uint) (uint64, error) {
	return txn.count("mdb_range_count_values", countValues, dbi, low, high, flags)
}

// rankPair turns the result of dlmdbgo_get_rank (begun when calls() read
// s0) into Go slices: views into the map with RawRead, copies otherwise.
func (txn *Txn) rankPair(op string, r C.dlmdbgo_pair, s0 uint32) (key, val []byte, err error) {
	if txn.RawRead {
		return mapView(r.kdata, r.klen), mapView(r.vdata, r.vlen), nil
	}
	key, val = mapCopy(r.kdata, r.klen), mapCopy(r.vdata, r.vlen)
	if err := txn.copiedAlone(op, s0); err != nil {
		return nil, nil, err
	}
	return key, val, nil
}

// GetRank returns the entry at position rank (from 0) of database dbi, in
// the database's order with duplicates counted (the inverse of KeyRank). A
// rank at or past CountAll gives an error for which IsNotFound is true. With
// RawRead the results point into the map (see Txn.RawRead), otherwise they
// are copies.
//
// See mdb_get_rank.
func (txn *Txn) GetRank(dbi DBI, rank uint64) (key, val []byte, err error) {
	if txn.gone() {
		return nil, nil, ended("mdb_get_rank")
	}
	s0 := txn.calls()
	r := C.dlmdbgo_get_rank(txn.ch(), C.MDB_dbi(dbi), 0, C.ulonglong(rank))
	if r.rc != 0 {
		if r.rc == C.MDB_NOTFOUND {
			return nil, nil, notFoundGetRank
		}
		return nil, nil, codeError("mdb_get_rank", r.rc)
	}
	return txn.rankPair("mdb_get_rank", r, s0)
}

// Rank is GetRank, the entry at a rank.
//
// Deprecated: the name says neither direction; use GetRank (the entry at a
// rank) or KeyRank (the rank of a key), named as Cursor.GetRank and
// Cursor.KeyRank and the C functions mdb_get_rank and mdb_get_key_rank.
func (txn *Txn) Rank(dbi DBI, rank uint64) (key, val []byte, err error) {
	return txn.GetRank(dbi, rank)
}

// KeyRank returns the position of key in database dbi (the inverse of
// GetRank). A nil val asks for
// the key alone (in a DupSort database: the position of its first value). A
// non-nil val, even an empty one (the empty value), asks for the pair: in a
// DupSort database that value among the key's, in any other the key only if
// its value is val byte for byte. An absent key (or pair) gives an error for
// which IsNotFound is true.
//
// See mdb_get_key_rank.
func (txn *Txn) KeyRank(dbi DBI, key, val []byte) (uint64, error) {
	if txn.gone() {
		return 0, ended("mdb_get_key_rank")
	}
	kp, kn := cbytes(key)
	vp, vn := cbytes(val)
	r := C.dlmdbgo_key_rank(txn.ch(), C.MDB_dbi(dbi), 0, kp, kn, vp, vn, boolInt(val != nil))
	if r.rc != 0 {
		if r.rc == C.MDB_NOTFOUND {
			return 0, notFoundKeyRank
		}
		return 0, codeError("mdb_get_key_rank", r.rc)
	}
	return uint64(r.n), nil
}

// GetRank moves the cursor to the entry at position rank and returns it; in
// a DupSort database the cursor lands on that very value, so Get with Next,
// NextDup or GetCurrent continues from there. The cursor remembers where it
// is, which makes a series of ascending ranks (sampling, paging) cheaper
// than separate Txn.GetRank calls. A rank at or past the number of entries gives
// an error for which IsNotFound is true and leaves the cursor where it was.
// Results follow the transaction's RawRead setting.
//
// See mdb_cursor_get_rank.
func (c *Cursor) GetRank(rank uint64) (key, val []byte, err error) {
	if err := c.live("mdb_cursor_get_rank"); err != nil {
		return nil, nil, err
	}
	s0 := c.txn.calls()
	r := C.dlmdbgo_get_rank(0, 0, c.ch(), C.ulonglong(rank))
	if r.rc != 0 {
		if r.rc == C.MDB_NOTFOUND {
			return nil, nil, notFoundCursorGetRank
		}
		return nil, nil, codeError("mdb_cursor_get_rank", r.rc)
	}
	return c.txn.rankPair("mdb_cursor_get_rank", r, s0)
}

// KeyRank is Txn.KeyRank for the cursor's transaction and database. The
// cursor does not move.
//
// See mdb_cursor_key_rank.
func (c *Cursor) KeyRank(key, val []byte) (uint64, error) {
	if err := c.live("mdb_cursor_key_rank"); err != nil {
		return 0, err
	}
	kp, kn := cbytes(key)
	vp, vn := cbytes(val)
	r := C.dlmdbgo_key_rank(0, 0, c.ch(), kp, kn, vp, vn, boolInt(val != nil))
	if r.rc != 0 {
		if r.rc == C.MDB_NOTFOUND {
			return 0, notFoundCursorKeyRank
		}
		return 0, codeError("mdb_cursor_key_rank", r.rc)
	}
	return uint64(r.n), nil
}
