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
//
// An entry costs one call of the loop body (the compiler does not inline
// the sequence into a range loop: with its calls to the scanner it is over
// the inlining budget), a few nanoseconds on top of Cursor.GetBatch; a
// loop that needs the last of them can call GetBatch itself. The sequence
// has no deferred cleanup: the scan's cursor is closed when the sequence
// ends or the loop breaks; should the loop body panic, the cursor is left
// to its finalizer (lmdb.Txn.OpenCursor).
func ScanBatch(txn *lmdb.Txn, dbi lmdb.DBI, r Range, batch int, reverse bool) (iter.Seq2[[]byte, []byte], func() error) {
	if batch < 1 {
		batch = DefaultBatch
	}
	var err error
	tmpl := &scanner{txn: txn, dbi: dbi, r: r, batch: batch, reverse: reverse, errp: &err}
	seq := func(yield func(key, val []byte) bool) {
		s := *tmpl
		for ks, vs := s.next(); len(ks) > 0; ks, vs = s.next() {
			for j, k := range ks {
				if !yield(k, vs[j]) {
					s.stop()
					return
				}
			}
		}
	}
	return seq, func() error { return err }
}

// scanner is the state of one pass of a ScanBatch sequence. Its methods
// stay out of line so that the sequence itself stays small.
type scanner struct {
	txn        *lmdb.Txn
	dbi        lmdb.DBI
	r          Range
	batch      int
	reverse    bool
	cur        *lmdb.Cursor
	keys, vals [][]byte
	end        []byte
	flags      uint
	skip       []byte // forward from an exclusive low end: skip that key
	started    bool
	last       bool   // the last batch was short: nothing follows
	errp       *error // the sequence's error, reset when a pass starts
}

// next returns the next batch of the pass, the first one on the first
// call (empty at the end of the range or on error, which then is in
// *s.errp).
//
//go:noinline
func (s *scanner) next() (keys, vals [][]byte) {
	if !s.started {
		s.started = true
		*s.errp = nil
		return s.start()
	}
	return s.more()
}

func (s *scanner) fail(err error) {
	*s.errp = err
	s.stop()
}

// start opens the cursor and returns the first batch.
func (s *scanner) start() (keys, vals [][]byte) {
	cur, err := s.txn.OpenCursor(s.dbi)
	if err != nil {
		*s.errp = err
		return nil, nil
	}
	s.cur = cur
	s.keys, s.vals = make([][]byte, 0, s.batch), make([][]byte, 0, s.batch)
	low, lowIncl := s.r.Low()
	high, highIncl := s.r.High()
	if !s.reverse {
		op, setkey := uint(lmdb.First), []byte(nil)
		s.end = high
		if low != nil {
			op, setkey = lmdb.SetRange, low
			if !lowIncl {
				s.skip = low
			}
		}
		if highIncl {
			s.flags |= lmdb.BatchEndIncl
		}
		return s.fetch(setkey, op)
	}
	ok, err := seekLast(s.txn, s.dbi, cur, high, highIncl)
	if err != nil || !ok {
		s.fail(err)
		return nil, nil
	}
	s.end, s.flags = low, lmdb.BatchBackward
	if lowIncl {
		s.flags |= lmdb.BatchEndIncl
	}
	return s.fetch(nil, lmdb.GetCurrent)
}

// more returns the batch after the last one.
func (s *scanner) more() (keys, vals [][]byte) {
	if s.last || s.cur == nil {
		s.stop()
		return nil, nil
	}
	op := uint(lmdb.Next)
	if s.reverse {
		op = lmdb.Prev
	}
	return s.fetch(nil, op)
}

// fetch reads one batch with op, dropping the excluded low key at the
// start of a forward scan; the cursor is closed once nothing can follow.
func (s *scanner) fetch(setkey []byte, op uint) (keys, vals [][]byte) {
	for {
		var err error
		s.keys, s.vals, err = s.cur.GetBatch(setkey, op, s.batch, s.end, s.flags, s.keys, s.vals)
		if err != nil {
			if lmdb.IsNotFound(err) {
				err = nil
			}
			s.fail(err)
			return nil, nil
		}
		s.last = len(s.keys) < s.batch
		i := 0
		for ; s.skip != nil && i < len(s.keys); i++ {
			c, err := s.txn.Cmp(s.dbi, s.keys[i], s.skip)
			if err != nil {
				s.fail(err)
				return nil, nil
			}
			if c != 0 {
				s.skip = nil
				break
			}
		}
		if i < len(s.keys) {
			n := len(s.keys)
			return s.keys[i:n], s.vals[i:n]
		}
		// the whole batch was the excluded key's duplicates
		if s.last {
			s.stop()
			return nil, nil
		}
		setkey, op = nil, lmdb.Next
	}
}

// stop closes the cursor (once).
func (s *scanner) stop() {
	if s.cur != nil {
		s.cur.Close()
		s.cur = nil
	}
}

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
