package dlmdb

import (
	"iter"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// DefaultBatch is the number of items Scan reads per call into the engine.
const DefaultBatch = 256

// Scan iterates over the entries of dbi whose keys lie in r, in order (every
// duplicate an entry), reading them in batches (lmdb.Cursor.GetBatch), so a
// Go loop over a range costs about what the engine's own loop does. See
// ScanBatch.
func Scan(txn *lmdb.Txn, dbi lmdb.DBI, r Range) (iter.Seq2[[]byte, []byte], func() error) {
	return ScanBatch(txn, dbi, r, DefaultBatch, false)
}

// ScanReverse is Scan from the end of r to its start.
func ScanReverse(txn *lmdb.Txn, dbi lmdb.DBI, r Range) (iter.Seq2[[]byte, []byte], func() error) {
	return ScanBatch(txn, dbi, r, DefaultBatch, true)
}

// ScanBatch is Scan (reverse: backward) reading up to batch entries per call
// into the engine (batch < 1 means DefaultBatch).
//
// The keys and values follow txn.RawRead: views into the map (or, for items
// of prefix-compressed pages, into memory of the scan's cursor, valid
// during their step only) valid while the transaction lasts and, in a write
// transaction, until its next change; copies otherwise, one allocation per
// batch. The loop body must not write to txn (the scan reads ahead). The
// second result returns the error that ended the sequence early (nil when
// it ran to the end or the loop stopped it); it is reset each time the
// sequence is ranged over.
func ScanBatch(txn *lmdb.Txn, dbi lmdb.DBI, r Range, batch int, reverse bool) (iter.Seq2[[]byte, []byte], func() error) {
	if batch < 1 {
		batch = DefaultBatch
	}
	var err error
	seq := func(yield func(key, val []byte) bool) {
		err = nil
		cur, e := txn.OpenCursor(dbi)
		if e != nil {
			err = e
			return
		}
		defer cur.Close()
		var (
			keys, vals [][]byte
			setkey     []byte
			op         uint
			end        []byte
			flags      uint
			skip       []byte // forward from an exclusive low end: skip that key
		)
		keys, vals = make([][]byte, 0, batch), make([][]byte, 0, batch)
		low, lowIncl := r.Low()
		high, highIncl := r.High()
		if !reverse {
			op, end = lmdb.First, high
			if low != nil {
				op, setkey = lmdb.SetRange, low
				if !lowIncl {
					skip = low
				}
			}
			if highIncl {
				flags |= lmdb.BatchEndIncl
			}
		} else {
			ok, e := seekLast(txn, dbi, cur, high, highIncl)
			if e != nil || !ok {
				err = e
				return
			}
			op, end, flags = lmdb.GetCurrent, low, lmdb.BatchBackward
			if lowIncl {
				flags |= lmdb.BatchEndIncl
			}
		}
		for {
			keys, vals, e = cur.GetBatch(setkey, op, batch, end, flags, keys, vals)
			if e != nil {
				if !lmdb.IsNotFound(e) {
					err = e
				}
				return
			}
			i := 0
			for ; skip != nil && i < len(keys); i++ {
				c, ce := txn.Cmp(dbi, keys[i], skip)
				if ce != nil {
					err = ce
					return
				}
				if c != 0 {
					skip = nil
					break
				}
			}
			// (the common loop: no test per entry but the yield)
			ks, vs := keys[i:], vals[i:len(keys)]
			for j, k := range ks {
				if !yield(k, vs[j]) {
					return
				}
			}
			if len(keys) < batch {
				return
			}
			op, setkey = lmdb.Next, nil
			if reverse {
				op = lmdb.Prev
			}
		}
	}
	return seq, func() error { return err }
}

// seekLast puts cur on the last entry whose key is at most high (below high
// when !incl; the last entry of dbi when high is nil). ok is false when
// there is none.
func seekLast(txn *lmdb.Txn, dbi lmdb.DBI, cur *lmdb.Cursor, high []byte, incl bool) (ok bool, err error) {
	if high == nil {
		_, _, err = cur.Get(nil, nil, lmdb.Last)
		return done(err)
	}
	k, _, err := cur.Get(high, nil, lmdb.SetRange)
	if lmdb.IsNotFound(err) {
		_, _, err = cur.Get(nil, nil, lmdb.Last)
		return done(err)
	}
	if err != nil {
		return false, err
	}
	c, err := txn.Cmp(dbi, k, high)
	if err != nil {
		return false, err
	}
	if c > 0 || !incl {
		// the entry before the first one at or above high
		_, _, err = cur.Get(nil, nil, lmdb.Prev)
		return done(err)
	}
	// high itself, with all its duplicates: its last one
	flags, err := txn.Flags(dbi)
	if err != nil {
		return false, err
	}
	if flags&lmdb.DupSort != 0 {
		_, _, err = cur.Get(nil, nil, lmdb.LastDup)
	}
	return done(err)
}

func done(err error) (bool, error) {
	if lmdb.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// GetMany returns the values of keys in dbi (a DupSort database's first
// value of each key) from one call into the engine: vals[i] is nil when
// keys[i] is absent. The values follow txn.RawRead as Scan's do.
func GetMany(txn *lmdb.Txn, dbi lmdb.DBI, keys [][]byte) ([][]byte, error) {
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return nil, err
	}
	defer cur.Close()
	vals, _, err := cur.GetMany(keys, nil)
	if err != nil {
		return nil, err
	}
	if txn.RawRead {
		// the cursor closes: values decoded into it must not stay there
		for i, v := range vals {
			if v != nil {
				vals[i] = append(make([]byte, 0, len(v)), v...)
			}
		}
	}
	return vals, nil
}
