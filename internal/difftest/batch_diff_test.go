package difftest

import (
	"bytes"
	"encoding/binary"
	"errors"

	stock "github.com/PowerDNS/lmdb-go/lmdb"
)

// The batched read (opCurGetBatch) in the differential sequences
// (withBatches adds it to every driver's sequences): ours runs
// Cursor.GetBatch, stock has none, so its side runs what GetBatch is
// specified as (lmdb.h, mdb_cursor_get_batch): the first op, then Next
// (Prev backward) until max items, the end bound or the end of the data,
// through the same cursor. The items and the error are compared; a batch
// that filled up leaves its cursor on the last item, and the ops after it
// compare that position (on plain DBs; see batchKeep).

// GetBatch's flags (lmdb.h: MDB_BATCH_BACKWARD, MDB_BATCH_END_INCL; the
// harness also builds without our package, -tags dlmdb_stockonly).
const (
	batchBackward = 0x01
	batchEndIncl  = 0x02
)

// batchFirstOps: the ops a generated batch starts with. Next and Prev start
// from the cursor's position; on DUPSORT DBs only the ones that set the
// cursor up afresh, since stock's sub-cursor bugs after a Del (stockdup_test.go)
// are stepped around per single op and a batch's steps would meet them.
var batchFirstOps = []uint{cFirst, cLast, cSetRange, cNext, cPrev}

// batchSpec is a batch op's parameters, packed into op.flags (the set key
// is op.key, the end bound op.val: nil for none).
type batchSpec struct {
	first, max int
	flags      uint
}

func (b batchSpec) pack() uint { return uint(b.first) | uint(b.max)<<8 | b.flags<<24 }

func unpackBatch(f uint) batchSpec {
	return batchSpec{first: int(f & 0xff), max: int(f >> 8 & 0xffff), flags: f >> 24}
}

// batcher is implemented by cursors of engines with a native GetBatch
// (ours: adapter_ours_test.go).
type batcher interface {
	getBatch(setkey []byte, op uint, max int, end []byte, flags uint) (keys, vals [][]byte, err error)
}

var errBatchNotFound = errors.New("batch: no item")

// emulateBatch is GetBatch as single cursor ops (of stock's cursors), under the key order of
// DB db (keyOrder).
func emulateBatch(c tCursor, db int, setkey []byte, op uint, max int, end []byte, flags uint) (keys, vals [][]byte, err error) {
	back := op == cLast || op == cPrev || flags&batchBackward != 0
	step := cNext
	if back {
		step = cPrev
	}
	var k, v []byte
	if op == cSetRange || op == cSetKey {
		k, v, err = c.get(setkey, nil, op)
	} else {
		k, v, err = c.get(nil, nil, op)
	}
	if err != nil {
		return nil, nil, err
	}
	for {
		if end != nil {
			r := keyOrder(diffDBs[db].flags, k, end)
			if back {
				r = -r
			}
			if r > 0 || (r == 0 && flags&batchEndIncl == 0) {
				break
			}
		}
		keys = append(keys, bytes.Clone(k))
		vals = append(vals, bytes.Clone(v))
		if len(keys) == max {
			break
		}
		if k, v, err = c.get(nil, nil, step); err != nil {
			break
		}
	}
	if len(keys) == 0 {
		return nil, nil, errBatchNotFound
	}
	if err != nil && !stock.IsNotFound(err) {
		return nil, nil, err
	}
	return keys, vals, nil
}

// withBatches adds batch ops to a generated sequence, after about one op
// in 40, drawn from a generator of their own (seeded by the sequence's
// seed, keys from the ones the sequence uses), so the sequence's own ops
// stay exactly as generated: the pinned replays of seeds, which run the
// generators alone, still meet the ops they were shrunk from.
func withBatches(ops []op, seed int64) []op {
	g := newGen(seed ^ 0x6a7c4ba7)
	g.reuse = 80
	out := make([]op, 0, len(ops)+len(ops)/30)
	for _, o := range ops {
		out = append(out, o)
		if n := len(o.key); n > 0 && n <= 511 && len(g.pools[o.db]) < 2000 {
			g.pools[o.db] = append(g.pools[o.db], o.key)
		}
		if g.r.Intn(40) == 0 {
			out = append(out, g.genBatch(op{kind: opCurGetBatch, db: o.db, slot: g.r.Intn(cursorSlots)}))
		}
	}
	return out
}

// genBatch fills in a batch op: its first op, a set key for SetRange, 1..12
// items (now and then a few hundred), an end bound in half of them, and
// the direction and inclusive-end flags.
func (g *gen) genBatch(o op) op {
	firsts := batchFirstOps
	if isDup(o.db) {
		firsts = firsts[:3]
	}
	b := batchSpec{first: g.r.Intn(len(firsts)), max: 1 + g.r.Intn(12)}
	if g.r.Intn(10) == 0 {
		b.max = 100 + g.r.Intn(400)
	}
	if g.r.Intn(4) == 0 {
		b.flags |= batchBackward
	}
	if g.r.Intn(2) == 0 {
		b.flags |= batchEndIncl
	}
	if firsts[b.first] == cSetRange {
		for len(o.key) == 0 {
			o.key = g.key(o.db)
		}
	}
	if g.r.Intn(2) == 0 {
		for len(o.val) == 0 {
			o.val = g.key(o.db)
		}
	}
	o.flags = b.pack()
	return o
}

// curBatch runs a batch op on the side's cursor c. The result carries the
// items, length-prefixed, as k (keys) and v (values).
func (s *side) curBatch(o op, c tCursor) result {
	b := unpackBatch(o.flags)
	first := batchFirstOps[b.first]
	var keys, vals [][]byte
	var err error
	if bc, ok := c.(batcher); ok {
		keys, vals, err = bc.getBatch(o.key, first, b.max, o.val, b.flags)
	} else {
		keys, vals, err = emulateBatch(c, o.db, o.key, first, b.max, o.val, b.flags)
	}
	code := s.eng.code(err)
	if errors.Is(err, errBatchNotFound) {
		code = eNotFound
	}
	if err != nil || len(keys) < b.max || first == cLast || isDup(o.db) {
		// where the cursor stands after a batch the data ended, or one
		// that began with Last, is stock's end-of-data state, whose
		// step-arounds the harness keys on single ops; on DUPSORT DBs
		// the sub-cursor state likewise: both sides close the cursor
		s.dropCursor(o.db, o.slot)
	}
	r := result{code: code, kv: err == nil}
	for i := range keys {
		r.k = binary.AppendUvarint(r.k, uint64(len(keys[i])))
		r.k = append(r.k, keys[i]...)
		r.v = binary.AppendUvarint(r.v, uint64(len(vals[i])))
		r.v = append(r.v, vals[i]...)
	}
	return r
}
