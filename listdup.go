package dlmdb

import (
	"iter"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// Duplicates of a key in one call (DLMDB's mdb_cursor_list_dup). The views
// these return follow txn.RawRead: views into the map (or, for values of
// prefix-compressed pages, into engine memory of the cursor that read them)
// valid while the transaction lasts and, in a write transaction, until its
// next change; copies otherwise.

// ListDup returns every value of key in the DupSort database dbi, in the
// duplicate order, or an error for which lmdb.IsNotFound holds when the key
// is absent.
func ListDup(txn *lmdb.Txn, dbi lmdb.DBI, key []byte) ([][]byte, error) {
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return nil, err
	}
	defer cur.Close()
	if _, _, err := cur.Get(key, nil, lmdb.Set); err != nil {
		return nil, err
	}
	vals, err := cur.ListDup()
	if err != nil {
		return nil, err
	}
	if txn.RawRead {
		// the cursor closes: decoded values must not stay in its memory
		vals = detachDecoded(vals)
	}
	return vals, nil
}

// ListDupFixed returns the values of key in the DupFixed database dbi as one
// flat slice (value i at vals[i*stride:(i+1)*stride]); see
// lmdb.Cursor.ListDupFixed.
func ListDupFixed(txn *lmdb.Txn, dbi lmdb.DBI, key []byte) (vals []byte, stride int, err error) {
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return nil, 0, err
	}
	defer cur.Close()
	if _, _, err := cur.Get(key, nil, lmdb.Set); err != nil {
		return nil, 0, err
	}
	// (DupFixed values are never prefix-compressed: views are map views)
	return cur.ListDupFixed(nil)
}

// detachDecoded copies the values whose memory belongs to a cursor about to
// close; map views are kept. Values are decoded only in prefix-compressed
// databases, and the engine cannot tell them apart cheaply from Go, so with
// RawRead the one-shot helpers copy everything once: callers who want zero
// copies use a cursor of their own (lmdb.Cursor.ListDupInto).
func detachDecoded(vals [][]byte) [][]byte {
	total := 0
	for _, v := range vals {
		total += len(v)
	}
	buf := make([]byte, 0, total)
	for i, v := range vals {
		buf = append(buf, v...)
		vals[i] = buf[len(buf)-len(v) : len(buf) : len(buf)]
	}
	return vals
}

// Groups iterates over the keys of the DupSort database dbi that lie in r,
// in order, yielding each key with all of its values (one engine call per
// key). The values slice is reused for the next key: copy it (not the values,
// which follow txn.RawRead as above) to keep it past one step. With RawRead,
// a key of a prefix-compressed database is a view into the iterator's
// cursor, valid during its step only. The second
// result returns the error that ended the sequence early (nil when it ran to
// the end or the loop stopped it); it is reset each time the sequence is
// ranged over. The sequence must not be used concurrently with other uses of
// txn.
func Groups(txn *lmdb.Txn, dbi lmdb.DBI, r Range) (iter.Seq2[[]byte, [][]byte], func() error) {
	var err error
	seq := func(yield func(key []byte, vals [][]byte) bool) {
		err = nil
		cur, e := txn.OpenCursor(dbi)
		if e != nil {
			err = e
			return
		}
		defer cur.Close()
		var k []byte
		low, lowIncl := r.Low()
		if low == nil {
			k, _, e = cur.Get(nil, nil, lmdb.First)
		} else {
			k, _, e = cur.Get(low, nil, lmdb.SetRange)
			if e == nil && !lowIncl {
				var c int
				if c, e = txn.Cmp(dbi, k, low); e == nil && c == 0 {
					k, _, e = cur.Get(nil, nil, lmdb.NextNoDup)
				}
			}
		}
		high, highIncl := r.High()
		var vals [][]byte
		for e == nil {
			if high != nil {
				c, ce := txn.Cmp(dbi, k, high)
				if ce != nil {
					e = ce
					break
				}
				if c > 0 || (c == 0 && !highIncl) {
					return
				}
			}
			if vals, e = cur.ListDupInto(vals); e != nil {
				break
			}
			if !yield(k, vals) {
				return
			}
			k, _, e = cur.Get(nil, nil, lmdb.NextNoDup)
		}
		if !lmdb.IsNotFound(e) {
			err = e
		}
	}
	return seq, func() error { return err }
}
