package dlmdb

import (
	"iter"
	"math/bits"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// Range is an interval of keys with each end inclusive, exclusive or open.
// The zero Range is All(): every key. Ranges are small values; the methods
// that adjust one return a modified copy.
//
// Keys are compared by the database's own key order (bytewise unless the
// database uses ReverseKey, IntegerKey or a custom comparator). A range whose
// low end sorts after its high end is empty, never an error. Because the
// engine never stores an empty key, an empty (or nil) bound means "open".
// A Range keeps the slices it is given rather than copies: do not change
// them while the Range is in use.
type Range struct {
	low, high []byte // nil or empty: open
	// Exclusion rather than inclusion flags, so that a bound is
	// inclusive unless a constructor or method says otherwise.
	lowExcl, highExcl bool
}

// All is the range of every key.
func All() Range { return Range{} }

// Between is the closed range [low, high]: both ends included. Use
// ExcludeLow or ExcludeHigh for half-open forms, such as
// Between(a, b).ExcludeHigh() for [a, b).
func Between(low, high []byte) Range { return Range{low: low, high: high} }

// AtLeast is [low, ∞): low and every key after it.
func AtLeast(low []byte) Range { return Range{low: low} }

// GreaterThan is (low, ∞): every key after low.
func GreaterThan(low []byte) Range { return Range{low: low, lowExcl: true} }

// AtMost is (-∞, high]: every key up to and including high.
func AtMost(high []byte) Range { return Range{high: high} }

// LessThan is (-∞, high): every key before high.
func LessThan(high []byte) Range { return Range{high: high, highExcl: true} }

// Prefix is the range of the keys that start with p: [p, q) where q is the
// shortest key after every such key, or [p, ∞) when there is none (p empty or
// all 0xff bytes). It assumes bytewise key order, so it does not suit
// ReverseKey, IntegerKey or custom comparators.
func Prefix(p []byte) Range {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			q := make([]byte, i+1)
			copy(q, p)
			q[i]++
			return Range{low: p, high: q, highExcl: true}
		}
	}
	return Range{low: p}
}

// ExcludeLow returns r with its low end excluded.
func (r Range) ExcludeLow() Range { r.lowExcl = true; return r }

// IncludeLow returns r with its low end included.
func (r Range) IncludeLow() Range { r.lowExcl = false; return r }

// ExcludeHigh returns r with its high end excluded.
func (r Range) ExcludeHigh() Range { r.highExcl = true; return r }

// IncludeHigh returns r with its high end included.
func (r Range) IncludeHigh() Range { r.highExcl = false; return r }

// Low returns the low end of r and whether it is included; key is nil when
// the range is open below.
func (r Range) Low() (key []byte, inclusive bool) {
	if len(r.low) == 0 {
		return nil, false
	}
	return r.low, !r.lowExcl
}

// High returns the high end of r and whether it is included; key is nil when
// the range is open above.
func (r Range) High() (key []byte, inclusive bool) {
	if len(r.high) == 0 {
		return nil, false
	}
	return r.high, !r.highExcl
}

// Flags returns the bound flags of lmdb.Txn.CountRange that describe r's
// ends (lmdb.CountLowerIncl and lmdb.CountUpperIncl).
func (r Range) Flags() uint {
	var f uint
	if !r.lowExcl {
		f |= lmdb.CountLowerIncl
	}
	if !r.highExcl {
		f |= lmdb.CountUpperIncl
	}
	return f
}

// String describes r in interval notation, keys quoted, e.g. ["a", "k").
func (r Range) String() string {
	s := "(-∞"
	if k, incl := r.Low(); k != nil {
		s = "(" + quote(k)
		if incl {
			s = "[" + quote(k)
		}
	}
	s += ", "
	if k, incl := r.High(); k != nil {
		if incl {
			return s + quote(k) + "]"
		}
		return s + quote(k) + ")"
	}
	return s + "∞)"
}

func quote(b []byte) string {
	const hex = "0123456789abcdef"
	out := []byte{'"'}
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c >= 0x20 && c < 0x7f:
			out = append(out, c)
		default:
			out = append(out, '\\', 'x', hex[c>>4], hex[c&15])
		}
	}
	return string(append(out, '"'))
}

// Count returns the number of entries of dbi whose key lies in r; in a
// DupSort database every value counts. The database must have been created
// with lmdb.Counted (otherwise errors.Is(err, lmdb.Incompatible)); the answer
// takes O(log n) page visits.
func Count(txn *lmdb.Txn, dbi lmdb.DBI, r Range) (uint64, error) {
	return txn.CountRange(dbi, r.low, r.high, r.Flags())
}

// CountKeys returns the number of distinct keys of dbi in r. It differs
// from Count only in DupSort databases.
func CountKeys(txn *lmdb.Txn, dbi lmdb.DBI, r Range) (uint64, error) {
	return txn.CountKeys(dbi, r.low, r.high, r.Flags())
}

// CountValues returns the number of values stored under the keys of dbi in
// r, duplicates included: the same number as Count.
func CountValues(txn *lmdb.Txn, dbi lmdb.DBI, r Range) (uint64, error) {
	return txn.CountValues(dbi, r.low, r.high, r.Flags())
}

// KeyRank returns the position (from 0) of key in dbi, in the database's
// order with duplicates counted (the inverse of GetRank). A nil val asks for
// the key alone (in a DupSort database: the position of its first value). A
// non-nil val, even an empty one (the empty value), asks for the pair (key,
// val): in a DupSort database that value among the key's; in any other the
// key, only if its value is val byte for byte. An absent key or pair gives
// an error for which lmdb.IsNotFound is true. Named as lmdb's Txn.KeyRank
// and Cursor.KeyRank and DLMDB's mdb_get_key_rank.
func KeyRank(txn *lmdb.Txn, dbi lmdb.DBI, key, val []byte) (uint64, error) {
	return txn.KeyRank(dbi, key, val)
}

// GetRank returns the entry at position rank of dbi (the inverse of
// KeyRank). A rank at or past the number of entries gives an error for
// which lmdb.IsNotFound is true. The results follow txn.RawRead: views into
// the map when it is set, copies otherwise. Named as lmdb's Txn.GetRank and
// Cursor.GetRank and DLMDB's mdb_get_rank.
func GetRank(txn *lmdb.Txn, dbi lmdb.DBI, rank uint64) (key, val []byte, err error) {
	return txn.GetRank(dbi, rank)
}

// Rank is KeyRank, the rank of a key.
//
// Deprecated: lmdb's Txn.Rank goes the other way (the entry at a rank); use
// KeyRank, or GetRank for the entry at a rank.
func Rank(txn *lmdb.Txn, dbi lmdb.DBI, key, val []byte) (uint64, error) {
	return KeyRank(txn, dbi, key, val)
}

// At is GetRank, the entry at a rank.
//
// Deprecated: use GetRank, named as in lmdb and the C API.
func At(txn *lmdb.Txn, dbi lmdb.DBI, rank uint64) (key, val []byte, err error) {
	return GetRank(txn, dbi, rank)
}

// Bounds returns the ranks of the entries of dbi in r as the half-open
// interval [first, end): first is the number of entries before the range
// (the rank of its first entry, if it has one) and end-first is
// Count(txn, dbi, r). An empty range gives first == end.
func Bounds(txn *lmdb.Txn, dbi lmdb.DBI, r Range) (first, end uint64, err error) {
	n, err := Count(txn, dbi, r)
	if err != nil {
		return 0, 0, err
	}
	if k, incl := r.Low(); k != nil {
		// The entries before r are those up to its low end, which is
		// itself before r exactly when r excludes it.
		var f uint
		if !incl {
			f = lmdb.CountUpperIncl
		}
		first, err = txn.CountRange(dbi, nil, k, f)
		if err != nil {
			return 0, 0, err
		}
	}
	return first, first + n, nil
}

// Sample returns up to n entries of dbi spread evenly over all of it, in
// order, and a function reporting the error that ended the sequence early
// (nil when it ran to the end or the loop stopped it). See SampleRange.
//
//	seq, errf := dlmdb.Sample(txn, dbi, 100)
//	for k, v := range seq {
//		...
//	}
//	if err := errf(); err != nil {
//		...
//	}
func Sample(txn *lmdb.Txn, dbi lmdb.DBI, n int) (iter.Seq2[[]byte, []byte], func() error) {
	return SampleRange(txn, dbi, All(), n)
}

// SampleRange returns up to n entries of dbi whose keys lie in r, spread
// evenly over the range: with c entries in r, the i-th entry yielded
// (i from 0) is the one at position i*c/n within the range, rounded down, so
// the first entry of the range is always included and positions ascend. When
// n >= c every entry of the range is yielded once. n <= 0 yields nothing.
//
// All entries are read through one cursor with lmdb.Cursor.GetRank, which
// continues from its previous position, so a sample costs little more than
// its size in page visits. The keys and values follow txn.RawRead: views into
// the map, valid while the transaction lasts and, in a write transaction,
// until its next change; copies otherwise.
//
// Errors are not yielded: the sequence stops at the first one, and the
// second result returns it (it is reset each time the sequence is ranged
// over). Typical errors are an uncounted database (lmdb.Incompatible) and a
// transaction that has ended (lmdb.BadTxn). The sequence may be ranged over
// several times, each time reading the transaction afresh. It must not be
// used concurrently with other uses of txn, and the loop body should not
// change dbi (the positions are chosen when the loop starts).
func SampleRange(txn *lmdb.Txn, dbi lmdb.DBI, r Range, n int) (iter.Seq2[[]byte, []byte], func() error) {
	var err error
	seq := func(yield func(key, val []byte) bool) {
		err = nil
		if n <= 0 {
			return
		}
		first, end, e := Bounds(txn, dbi, r)
		if e != nil {
			err = e
			return
		}
		total := end - first
		if total == 0 {
			return
		}
		cur, e := txn.OpenCursor(dbi)
		if e != nil {
			err = e
			return
		}
		defer cur.Close()
		want := uint64(n)
		if want > total {
			want = total
		}
		for i := uint64(0); i < want; i++ {
			k, v, e := cur.GetRank(first + spread(i, total, want))
			if e != nil {
				err = e
				return
			}
			if !yield(k, v) {
				return
			}
		}
	}
	return seq, func() error { return err }
}

// spread is i*total/n rounded down, without overflow (i < n <= total, so the
// quotient fits in 64 bits).
func spread(i, total, n uint64) uint64 {
	hi, lo := bits.Mul64(i, total)
	q, _ := bits.Div64(hi, lo, n)
	return q
}
