package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#cgo noescape dlmdbgo_get_batch
#cgo nocallback dlmdbgo_get_batch
#cgo noescape dlmdbgo_get_many
#cgo nocallback dlmdbgo_get_many
#include "dlmdbgo.h"
*/
import "C"

import (
	"slices"
	"syscall"
	"unsafe"
)

// Flags of Cursor.GetBatch.
const (
	BatchBackward = C.MDB_BATCH_BACKWARD // step with Prev (implied by the ops Last and Prev)
	BatchEndIncl  = C.MDB_BATCH_END_INCL // a key equal to end is part of the batch
)

var notFoundGetBatch error = &OpError{Op: "mdb_cursor_get_batch", Errno: NotFound}

// GetBatch reads up to max items through the cursor in one call into the
// engine: the first with op (First, Last, Next, Prev, GetCurrent, or
// SetRange / SetKey with setkey), the rest with Next (Prev going backward:
// the ops Last and Prev, or the flag BatchBackward), every duplicate an
// item. With a non-nil end the batch stops before the first key past it
// (above it going forward, below it going backward; BatchEndIncl keeps a
// key equal to it). The items are appended to keys[:0] and vals[:0]; pass
// the previous results back to reuse their arrays.
//
// Fewer than max items mean that the data or end was reached; no item at
// all is an error for which IsNotFound is true. Afterwards the cursor stands
// on the last item returned (or, when end stopped the batch, on the first
// item past it), so the next batch starts with op Next (or Prev).
//
// With RawRead the items are views: into the map where it holds them
// whole, else into memory of the cursor, valid until its next GetBatch, its
// Close or Renew, the end of the transaction, and in a write transaction
// its next change. Without RawRead they are copies, all in one allocation.
// setkey and end may be such views from the cursor's previous batch.
//
// See mdb_cursor_get_batch.
func (c *Cursor) GetBatch(setkey []byte, op uint, max int, end []byte, flags uint,
	keys, vals [][]byte) ([][]byte, [][]byte, error) {
	keys, vals = keys[:0], vals[:0]
	if err := c.live("mdb_cursor_get_batch"); err != nil {
		return keys, vals, err
	}
	if max <= 0 {
		return keys, vals, &OpError{Op: "mdb_cursor_get_batch", Errno: syscall.EINVAL}
	}
	kp, kn := cbytes(setkey)
	ep, en := cbytes(end)
	s0 := c.txn.calls()
	r := C.dlmdbgo_get_batch(c.ch(), C.int(op), kp, kn, C.size_t(max), ep, en, boolInt(end != nil), C.uint(flags),
		boolInt(!c.txn.RawRead))
	if r.rc != 0 {
		if r.rc == C.MDB_NOTFOUND {
			return keys, vals, notFoundGetBatch
		}
		return keys, vals, codeError("mdb_cursor_get_batch", r.rc)
	}
	n := int(r.count)
	ks := unsafe.Slice(r.keys, n)
	vs := unsafe.Slice(r.vals, n)
	if c.txn.RawRead {
		// the views stored by index into slices of the right length (no
		// append's capacity test per item)
		keys, vals = slices.Grow(keys, n)[:n], slices.Grow(vals, n)[:n]
		vs, keys, vals = vs[:len(ks)], keys[:len(ks)], vals[:len(ks)]
		for i := range ks {
			keys[i] = mapView((*C.char)(ks[i].mv_data), ks[i].mv_size)
			vals[i] = mapView((*C.char)(vs[i].mv_data), vs[i].mv_size)
		}
		return c.batchRead(s0, keys, vals)
	}
	buf := make([]byte, int(r.total))
	off := 0
	keys, vals = slices.Grow(keys, n)[:n], slices.Grow(vals, n)[:n]
	vs, keys, vals = vs[:len(ks)], keys[:len(ks)], vals[:len(ks)]
	for i := range ks {
		m := copy(buf[off:], mapView((*C.char)(ks[i].mv_data), ks[i].mv_size))
		keys[i] = buf[off : off+m : off+m]
		off += m
		m = copy(buf[off:], mapView((*C.char)(vs[i].mv_data), vs[i].mv_size))
		vals[i] = buf[off : off+m : off+m]
		off += m
	}
	return c.batchRead(s0, keys, vals)
}

// batchRead ends GetBatch: the item descriptors (and without RawRead the
// items) were read after the call, so no other goroutine may have got into
// the transaction since (Txn.copiedAlone).
func (c *Cursor) batchRead(s0 uint32, keys, vals [][]byte) ([][]byte, [][]byte, error) {
	if err := c.txn.copiedAlone("mdb_cursor_get_batch", s0); err != nil {
		return keys[:0], vals[:0], err
	}
	return keys, vals, nil
}

// GetMany reads the values of keys through the cursor in one call into the
// engine, each as Get(key, nil, Set) would (a DupSort database's first
// value), appending them to vals[:0]: vals[i] is nil when keys[i] is absent
// (a present empty value is an empty, non-nil slice). found counts the keys
// present. Views and copies as for GetBatch (the views live until the
// cursor's next GetMany or GetBatch). The cursor ends on the last key found.
// An empty key fails the call with BadValSize.
//
// See mdb_cursor_get_many.
func (c *Cursor) GetMany(keys [][]byte, vals [][]byte) (_ [][]byte, found int, err error) {
	vals = vals[:0]
	if err := c.live("mdb_cursor_get_many"); err != nil {
		return vals, 0, err
	}
	c.flat = c.flat[:0]
	c.lens = c.lens[:0]
	for _, k := range keys {
		c.flat = append(c.flat, k...)
		c.lens = append(c.lens, C.size_t(len(k)))
	}
	var lp *C.size_t
	if len(c.lens) > 0 {
		lp = &c.lens[0]
	}
	fp, _ := cbytes(c.flat)
	s0 := c.txn.calls()
	r := C.dlmdbgo_get_many(c.ch(), fp, lp, C.size_t(len(keys)))
	if r.rc != 0 {
		return vals, 0, codeError("mdb_cursor_get_many", r.rc)
	}
	vs := unsafe.Slice(r.vals, len(keys))
	var buf []byte
	if !c.txn.RawRead {
		buf = make([]byte, 0, int(r.total))
	}
	for i := range vs {
		switch {
		case vs[i].mv_data == nil:
			vals = append(vals, nil)
		case c.txn.RawRead:
			vals = append(vals, mapView((*C.char)(vs[i].mv_data), vs[i].mv_size))
		default:
			off := len(buf)
			buf = append(buf, mapView((*C.char)(vs[i].mv_data), vs[i].mv_size)...)
			vals = append(vals, buf[off:len(buf):len(buf)])
		}
	}
	if err := c.txn.copiedAlone("mdb_cursor_get_many", s0); err != nil {
		return vals[:0], 0, err
	}
	return vals, int(r.count), nil
}
