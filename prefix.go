package dlmdb

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// FootprintStats is what Footprint found in one database: the page and
// entry counts and the stored and decoded sizes of its keys and values
// (see lmdb.Footprint), with helpers for how much prefix compression saves.
type FootprintStats struct {
	lmdb.Footprint
}

// StoredBytes is the number of key, value and anchor bytes the database's
// pages hold.
func (s FootprintStats) StoredBytes() uint64 {
	return s.KeyBytesStored + s.ValueBytesStored + s.AnchorBytes
}

// DecodedBytes is the number of key and value bytes that reads return: what
// the same data takes uncompressed.
func (s FootprintStats) DecodedBytes() uint64 {
	return s.KeyBytesDecoded + s.ValueBytesDecoded
}

// Ratio is StoredBytes / DecodedBytes: 1 for a database stored without
// compression, below 1 for one that compression makes smaller (and 1 for an
// empty database).
func (s FootprintStats) Ratio() float64 { return ratio(s.StoredBytes(), s.DecodedBytes()) }

// KeyRatio is the stored against the decoded size of the keys alone, the
// anchors included.
func (s FootprintStats) KeyRatio() float64 {
	return ratio(s.KeyBytesStored+s.AnchorBytes, s.KeyBytesDecoded)
}

// ValueRatio is the stored against the decoded size of the values alone.
func (s FootprintStats) ValueRatio() float64 {
	return ratio(s.ValueBytesStored, s.ValueBytesDecoded)
}

// Savings is 1 - Ratio: the fraction of the decoded bytes that the stored
// form does not need (negative if it is bigger).
func (s FootprintStats) Savings() float64 { return 1 - s.Ratio() }

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// footprintChunk is how many leaf pages one engine call walks.
const footprintChunk = 256

// Footprint walks database dbi in txn (a read or write transaction) and
// returns its FootprintStats. progress, if not nil, is called after every
// few hundred leaf pages with the leaf pages walked so far and the number
// the database holds, and once at the end. A database under a write
// transaction must not change while Footprint runs.
func Footprint(txn *lmdb.Txn, dbi lmdb.DBI, progress func(done, total uint64)) (FootprintStats, error) {
	var w lmdb.FootprintWalk
	for {
		done, err := w.Step(txn, dbi, footprintChunk)
		if err != nil {
			return FootprintStats{}, err
		}
		if progress != nil {
			progress(w.Progress())
		}
		if done {
			return FootprintStats{w.Result()}, nil
		}
	}
}

// FlagChange says what Convert does with one database flag.
type FlagChange int

const (
	KeepFlag  FlagChange = iota // the converted database has the flag if the source has it
	SetFlag                     // the converted database has the flag
	ClearFlag                   // the converted database does not have the flag
)

func (c FlagChange) apply(flags, flag uint) uint {
	switch c {
	case SetFlag:
		return flags | flag
	case ClearFlag:
		return flags &^ flag
	}
	return flags
}

// ConvertOptions configure Convert.
type ConvertOptions struct {
	// Counted and PrefixCompression say whether the rebuilt database has
	// lmdb.Counted and lmdb.PrefixCompression; the zero value keeps the
	// source's setting.
	Counted           FlagChange
	PrefixCompression FlagChange

	// BatchEntries is how many entries one write transaction copies
	// (DefaultConvertBatch when 0 or less). Smaller batches hold the
	// writer lock for shorter spells; bigger ones finish sooner.
	BatchEntries int

	// Progress, if not nil, is called after every committed batch with
	// the entries copied so far and the entries the source held at that
	// point (the two need not meet: the source may change meanwhile).
	Progress func(copied, total uint64)
}

// DefaultConvertBatch is the batch size Convert uses unless told otherwise.
const DefaultConvertBatch = 50000

// ConvertTempPrefix starts the name of the database a conversion builds
// before it takes the source's place: converting "x" builds
// "dlmdb-convert.x". Such a database left behind by an interrupted run is
// dropped when Convert starts again.
const ConvertTempPrefix = "dlmdb-convert."

// ErrConvertMainDB is returned by Convert for the main (unnamed) database,
// which is not a record in another database and so cannot be swapped.
var ErrConvertMainDB = errors.New("dlmdb: the main (unnamed) database cannot be converted; copy its items into a named database instead")

// ErrConvertMismatch is returned when the copy, after being brought level
// with the source, still does not hold exactly the source's pairs. The
// source is left as it was.
var ErrConvertMismatch = errors.New("dlmdb: converted copy differs from the source")

// Convert rebuilds the named database name of env with lmdb.Counted and
// lmdb.PrefixCompression switched on, off or kept as opts say, keeping its
// other flags and every key/value pair.
//
// The pairs are copied in batches of opts.BatchEntries, each in its own
// write transaction, into the database ConvertTempPrefix+name, so other
// writers get their turn between batches. One last write transaction then
// brings the copy level with the source (which may have changed between
// batches), checks that the two hold exactly the same pairs, and puts the
// copy in the source's place (lmdb.Txn.ReplaceDBI). Readers therefore see
// either the old database or the new one, never a mix, and a crash at any
// point leaves the old database as it was (the half-built copy is dropped
// by the next Convert; a Convert that fails drops it itself). DBI handles
// of name stay valid and refer to the new database afterwards. The final
// transaction reads both databases twice (level, then verify), so it holds
// the writer lock for about two scans of the database.
//
// The environment needs two free named-database handles and map space for
// a second copy of the database. Run one Convert per database at a time.
// Databases ordered by custom comparators are not supported.
func Convert(env *lmdb.Env, name string, opts ConvertOptions) error {
	if name == "" {
		return ErrConvertMainDB
	}
	batch := opts.BatchEntries
	if batch <= 0 {
		batch = DefaultConvertBatch
	}
	tmpName := ConvertTempPrefix + name
	var want uint
	err := env.Update(func(txn *lmdb.Txn) error {
		src, err := txn.OpenDBI(name, 0)
		if err != nil {
			return err
		}
		flags, err := txn.Flags(src)
		if err != nil {
			return err
		}
		want = opts.PrefixCompression.apply(opts.Counted.apply(flags, lmdb.Counted), lmdb.PrefixCompression)
		if old, err := txn.OpenDBI(tmpName, 0); err == nil {
			if err := txn.Drop(old, true); err != nil {
				return err
			}
		} else if !lmdb.IsNotFound(err) {
			return err
		}
		_, err = txn.OpenDBI(tmpName, want|lmdb.Create)
		return err
	})
	if err != nil {
		return fmt.Errorf("dlmdb: converting %q: %w", name, err)
	}
	if err := convertCopy(env, name, tmpName, want, batch, opts.Progress); err != nil {
		// best effort: the next run would drop the half-built copy anyway
		env.Update(func(txn *lmdb.Txn) error {
			tmp, err := txn.OpenDBI(tmpName, 0)
			if err != nil {
				return err
			}
			return txn.Drop(tmp, true)
		})
		return fmt.Errorf("dlmdb: converting %q: %w", name, err)
	}
	return nil
}

// convertCopy is Convert after the temporary database tmpName exists: the
// batches, then the final transaction that levels, verifies and swaps.
func convertCopy(env *lmdb.Env, name, tmpName string, want uint, batch int, progress func(copied, total uint64)) error {
	var pos copyPos
	var copied uint64
	for !pos.done {
		var total uint64
		err := env.Update(func(txn *lmdb.Txn) error {
			src, tmp, err := openPair(txn, name, tmpName)
			if err != nil {
				return err
			}
			n, err := copyBatch(txn, src, tmp, &pos, batch)
			if err != nil {
				return err
			}
			copied += uint64(n)
			st, err := txn.Stat(src)
			if err != nil {
				return err
			}
			total = st.Entries
			return nil
		})
		if err != nil {
			return err
		}
		if progress != nil {
			progress(copied, total)
		}
	}

	return env.Update(func(txn *lmdb.Txn) error {
		src, tmp, err := openPair(txn, name, tmpName)
		if err != nil {
			return err
		}
		if err := levelCopy(txn, src, tmp); err != nil {
			return err
		}
		if err := sameContent(txn, src, tmp); err != nil {
			return err
		}
		if f, err := txn.Flags(tmp); err != nil {
			return err
		} else if f != want {
			return fmt.Errorf("dlmdb: copy has flags %#x, want %#x", f, want)
		}
		return txn.ReplaceDBI(src, tmp)
	})
}

func openPair(txn *lmdb.Txn, name, tmpName string) (src, tmp lmdb.DBI, err error) {
	if src, err = txn.OpenDBI(name, 0); err != nil {
		return 0, 0, err
	}
	if tmp, err = txn.OpenDBI(tmpName, 0); err != nil {
		return 0, 0, fmt.Errorf("database %q: %w", tmpName, err)
	}
	return src, tmp, nil
}

// copyPos is where the batches stand: the last pair copied.
type copyPos struct {
	started, done bool
	key, val      []byte
}

// seekAfter moves c to the first pair after the one at pos (the first pair
// of all before the first batch).
func seekAfter(c *lmdb.Cursor, pos *copyPos, dupsort bool) (k, v []byte, err error) {
	if !pos.started {
		return c.Get(nil, nil, lmdb.First)
	}
	if dupsort {
		k, v, err = c.Get(pos.key, pos.val, lmdb.GetBothRange)
		if err == nil {
			if bytes.Equal(v, pos.val) {
				return c.Get(nil, nil, lmdb.Next)
			}
			return k, v, nil
		}
		if !lmdb.IsNotFound(err) {
			return nil, nil, err
		}
		// the key is gone, or all its values sort before pos.val
	}
	k, v, err = c.Get(pos.key, nil, lmdb.SetRange)
	if err != nil || !bytes.Equal(k, pos.key) {
		return k, v, err
	}
	if dupsort {
		return c.Get(nil, nil, lmdb.NextNoDup)
	}
	return c.Get(nil, nil, lmdb.Next)
}

// copyBatch copies up to n pairs after pos from src to tmp.
func copyBatch(txn *lmdb.Txn, src, tmp lmdb.DBI, pos *copyPos, n int) (int, error) {
	flags, err := txn.Flags(src)
	if err != nil {
		return 0, err
	}
	dupsort := flags&lmdb.DupSort != 0
	sc, err := txn.OpenCursor(src)
	if err != nil {
		return 0, err
	}
	defer sc.Close()
	tc, err := txn.OpenCursor(tmp)
	if err != nil {
		return 0, err
	}
	defer tc.Close()
	txn.RawRead = true
	defer func() { txn.RawRead = false }()
	k, v, err := seekAfter(sc, pos, dupsort)
	done := 0
	for ; err == nil && done < n; k, v, err = sc.Get(nil, nil, lmdb.Next) {
		// the pairs come in the DB's order, after everything copied
		// before: appending is right unless the source changed order
		// under us (it cannot), so a refused append falls back to a put
		putFlags := uint(lmdb.Append)
		if dupsort && pos.started && bytes.Equal(k, pos.key) {
			putFlags = lmdb.AppendDup
		}
		perr := tc.Put(k, v, putFlags)
		if lmdb.IsErrno(perr, lmdb.KeyExist) {
			perr = tc.Put(k, v, 0)
		}
		if perr != nil {
			return done, perr
		}
		pos.started = true
		pos.key = append(pos.key[:0], k...)
		pos.val = append(pos.val[:0], v...)
		done++
	}
	if lmdb.IsNotFound(err) {
		pos.done = true
		return done, nil
	}
	return done, err
}

// pairOrder compares pair (ka, va) with (kb, vb) in the order of DB dbi.
func pairOrder(txn *lmdb.Txn, dbi lmdb.DBI, dupsort bool, ka, va, kb, vb []byte) (int, error) {
	c, err := txn.Cmp(dbi, ka, kb)
	if err != nil || c != 0 || !dupsort {
		return c, err
	}
	return txn.DCmp(dbi, va, vb)
}

// levelCopy makes tmp hold exactly the pairs of src: one merge walk over
// both, adding what tmp lacks and deleting what src no longer has.
func levelCopy(txn *lmdb.Txn, src, tmp lmdb.DBI) error {
	flags, err := txn.Flags(src)
	if err != nil {
		return err
	}
	dupsort := flags&lmdb.DupSort != 0
	sc, err := txn.OpenCursor(src)
	if err != nil {
		return err
	}
	defer sc.Close()
	tc, err := txn.OpenCursor(tmp)
	if err != nil {
		return err
	}
	defer tc.Close()
	// views, not copies: the two walks agree almost everywhere, and a
	// view is copied before any write that could outlive it
	txn.RawRead = true
	defer func() { txn.RawRead = false }()
	ks, vs, serr := sc.Get(nil, nil, lmdb.First)
	kt, vt, terr := tc.Get(nil, nil, lmdb.First)
	for {
		if serr != nil && !lmdb.IsNotFound(serr) {
			return serr
		}
		if terr != nil && !lmdb.IsNotFound(terr) {
			return terr
		}
		sEnd, tEnd := serr != nil, terr != nil
		if sEnd && tEnd {
			return nil
		}
		var c int
		switch {
		case sEnd:
			c = 1
		case tEnd:
			c = -1
		case bytes.Equal(ks, kt) && bytes.Equal(vs, vt):
			c = 0
		default:
			if c, err = pairOrder(txn, src, dupsort, ks, vs, kt, vt); err != nil {
				return err
			}
		}
		switch {
		case c == 0 && (dupsort || bytes.Equal(vs, vt)):
			ks, vs, serr = sc.Get(nil, nil, lmdb.Next)
			kt, vt, terr = tc.Get(nil, nil, lmdb.Next)
		case c <= 0:
			// tmp lacks the pair (or has another value for the key):
			// the put leaves tc on it, so Next comes back to kt
			if err := tc.Put(bytes.Clone(ks), bytes.Clone(vs), 0); err != nil {
				return err
			}
			ks, vs, serr = sc.Get(nil, nil, lmdb.Next)
			kt, vt, terr = tc.Get(nil, nil, lmdb.Next)
		default:
			// a pair the source no longer has; after the delete, Next
			// is the pair that followed it
			ks, vs = bytes.Clone(ks), bytes.Clone(vs)
			if err := tc.Del(0); err != nil {
				return err
			}
			kt, vt, terr = tc.Get(nil, nil, lmdb.Next)
		}
	}
}

// sameContent checks that a and b hold exactly the same pairs, in the same
// order, and that their records count the same number of entries.
func sameContent(txn *lmdb.Txn, a, b lmdb.DBI) error {
	sa, err := txn.Stat(a)
	if err != nil {
		return err
	}
	sb, err := txn.Stat(b)
	if err != nil {
		return err
	}
	if sa.Entries != sb.Entries {
		return fmt.Errorf("%w: %d entries against %d", ErrConvertMismatch, sb.Entries, sa.Entries)
	}
	ca, err := txn.OpenCursor(a)
	if err != nil {
		return err
	}
	defer ca.Close()
	cb, err := txn.OpenCursor(b)
	if err != nil {
		return err
	}
	defer cb.Close()
	txn.RawRead = true
	defer func() { txn.RawRead = false }()
	var n uint64
	for op := uint(lmdb.First); ; op = lmdb.Next {
		ka, va, ea := ca.Get(nil, nil, op)
		kb, vb, eb := cb.Get(nil, nil, op)
		if ea != nil || eb != nil {
			if lmdb.IsNotFound(ea) && lmdb.IsNotFound(eb) {
				if n != sa.Entries {
					return fmt.Errorf("%w: walked %d pairs, the record counts %d", ErrConvertMismatch, n, sa.Entries)
				}
				return nil
			}
			if ea != nil && !lmdb.IsNotFound(ea) {
				return ea
			}
			if eb != nil && !lmdb.IsNotFound(eb) {
				return eb
			}
			return fmt.Errorf("%w: one ends after %d pairs", ErrConvertMismatch, n)
		}
		if !bytes.Equal(ka, kb) || !bytes.Equal(va, vb) {
			return fmt.Errorf("%w: pair %d differs", ErrConvertMismatch, n)
		}
		n++
	}
}
