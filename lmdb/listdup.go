package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#cgo noescape dlmdbgo_list_dup_fixed
#cgo nocallback dlmdbgo_list_dup_fixed
#cgo noescape dlmdbgo_list_dup
#cgo nocallback dlmdbgo_list_dup
#include "dlmdbgo.h"
*/
import "C"

import (
	"slices"
	"unsafe"
)

var notFoundListDup error = &OpError{Op: "mdb_cursor_list_dup", Errno: NotFound}

// ListDup returns every value of the key under the cursor, in the database's
// duplicate order, from one call into the engine (a DupSort database; a key
// with a single value gives one). The cursor does not move: its duplicate
// position stays where it was. See ListDupInto to reuse the result's slice.
//
// With RawRead the values are views: into the map where it holds a value
// whole, else (values of prefix-compressed pages) into memory of the cursor.
// They are valid until the cursor's next ListDup, its Close or Renew, the
// end of the transaction, and in a write transaction its next change.
// Without RawRead they are copies, all in one allocation.
//
// Errors: Incompatible for a database without DupSort, NotFound when the
// cursor stands past the last item, EINVAL when it is not positioned.
//
// See mdb_cursor_list_dup.
func (c *Cursor) ListDup() ([][]byte, error) {
	return c.ListDupInto(nil)
}

// ListDupInto is ListDup that appends the values to dst[:0], so that a loop
// over many keys that passes the previous result back in allocates nothing
// per value (with RawRead nothing at all once dst is large enough).
func (c *Cursor) ListDupInto(dst [][]byte) ([][]byte, error) {
	if err := c.live("mdb_cursor_list_dup"); err != nil {
		return dst[:0], err
	}
	if c.dupFixed == 0 {
		c.dupFixed = -1
		if f, err := c.txn.Flags(c.DBI()); err == nil && f&DupFixed != 0 {
			c.dupFixed = 1
		}
	}
	if c.dupFixed > 0 {
		if out, ok, err := c.listFixedValues(dst); ok {
			return out, err
		}
	}
	s0 := c.txn.calls()
	r := C.dlmdbgo_list_dup(c.ch())
	if r.rc != 0 {
		if r.rc == C.MDB_NOTFOUND {
			return dst[:0], notFoundListDup
		}
		return dst[:0], codeError("mdb_cursor_list_dup", r.rc)
	}
	return c.listRead(s0, c.descSlices(unsafe.Slice(r.vals, int(r.count)), int(r.total), dst[:0]))
}

// descSlices appends the engine's descriptors (total bytes together) to
// out: with RawRead as views, otherwise as slices of one new copy.
func (c *Cursor) descSlices(descs []C.MDB_val, total int, out [][]byte) [][]byte {
	if c.txn.RawRead {
		for i := range descs {
			out = append(out, mapView((*C.char)(descs[i].mv_data), descs[i].mv_size))
		}
		return out
	}
	buf := make([]byte, total)
	off := 0
	for i := range descs {
		n := int(descs[i].mv_size)
		copy(buf[off:off+n], mapView((*C.char)(descs[i].mv_data), descs[i].mv_size))
		out = append(out, buf[off:off+n:off+n])
		off += n
	}
	return out
}

// fixedRunsError is the error of a failed mdb_cursor_list_dup_fixed.
func fixedRunsError(rc C.int) error {
	if rc == C.MDB_NOTFOUND {
		return notFoundListDup
	}
	return codeError("mdb_cursor_list_dup", rc)
}

// listFixedValues is ListDupInto on a DupFixed database: the engine hands
// over runs of values of one width (mdb_cursor_list_dup_fixed), cut into
// values here, with no descriptor per value. ok is false when the values
// have no width to cut by (values of no bytes), for the general path.
func (c *Cursor) listFixedValues(dst [][]byte) (out [][]byte, ok bool, err error) {
	s0 := c.txn.calls()
	r := C.dlmdbgo_list_dup_fixed(c.ch())
	if r.rc == C.MDB_INCOMPATIBLE || (r.rc == 0 && r.width == 0) {
		return dst[:0], false, nil
	}
	if r.rc != 0 {
		return dst[:0], true, fixedRunsError(r.rc)
	}
	runs := unsafe.Slice(r.vals, int(r.count))
	w := int(r.width)
	out = slices.Grow(dst[:0], int(r.nvals))
	var buf []byte
	if !c.txn.RawRead {
		buf = make([]byte, 0, int(r.total))
	}
	for i := range runs {
		run := mapView((*C.char)(runs[i].mv_data), runs[i].mv_size)
		if buf != nil {
			off := len(buf)
			buf = append(buf, run...)
			run = buf[off:]
		}
		for o := 0; o+w <= len(run); o += w {
			out = append(out, run[o:o+w:o+w])
		}
	}
	out, err = c.listRead(s0, out)
	return out, true, err
}

// ListDupRuns returns the values of the key under the cursor of a
// DupFixed database as runs: each run holds back-to-back values of stride
// bytes, in order, and together they are the key's values (what
// ListDupFixed joins into one slice). With RawRead nothing is copied: a run
// is a view of a page of the map (a LEAF2 page of a sub-tree, or an inline
// sub-page), or of the cursor's decode storage for values of a
// prefix-compressed database, valid as for ListDup and until the cursor's
// next call. Without RawRead the runs share one new copy of the values,
// which the caller owns. The run headers are appended to dst[:0]. A key
// with a single value gives one run, stride its length. Values of
// different sizes (a database without DupFixed) give Incompatible.
//
// Use it to read large DupFixed sets without copying them: one engine call
// per key, then a loop over each run.
//
// See mdb_cursor_list_dup.
func (c *Cursor) ListDupRuns(dst [][]byte) (runs [][]byte, stride int, err error) {
	cr, stride, total, s0, err := c.fixedRuns()
	if err != nil {
		return dst[:0], 0, err
	}
	runs, err = c.listRead(s0, c.descSlices(cr, total, slices.Grow(dst[:0], len(cr))))
	return runs, stride, err
}

// fixedRuns asks the engine for the runs of the cursor's values
// (mdb_cursor_list_dup_fixed): the cursor-owned descriptors, the values'
// width, their total bytes and the txn's call count before the call.
func (c *Cursor) fixedRuns() (runs []C.MDB_val, width, total int, s0 uint32, err error) {
	if err := c.live("mdb_cursor_list_dup"); err != nil {
		return nil, 0, 0, 0, err
	}
	s0 = c.txn.calls()
	r := C.dlmdbgo_list_dup_fixed(c.ch())
	if r.rc != 0 {
		return nil, 0, 0, s0, fixedRunsError(r.rc)
	}
	return unsafe.Slice(r.vals, int(r.count)), int(r.width), int(r.total), s0, nil
}

// listRead ends ListDup: the descriptors (and without RawRead the values)
// were read after the call, so no other goroutine may have got into the
// transaction since (Txn.copiedAlone).
func (c *Cursor) listRead(s0 uint32, out [][]byte) ([][]byte, error) {
	if err := c.txn.copiedAlone("mdb_cursor_list_dup", s0); err != nil {
		return out[:0], err
	}
	return out, nil
}

// ListDupFixed returns the values of the key under the cursor of a
// DupFixed database as one flat slice: value i is vals[i*stride :
// (i+1)*stride]. The engine hands over whole pages of values, not one
// descriptor per value (mdb_cursor_list_dup_fixed). With RawRead, when the
// values lie back to back in one page (an inline sub-page, or a sub-tree
// of one leaf), vals is a view of the map (valid as for ListDup); otherwise
// they are copied, appended to dst[:0] (pass the previous result back to
// reuse its memory: when that was a view, it is not written to, and the
// copy gets memory of its own). Any other dst must be memory of the
// caller's, never a view handed out by another call. A key with a single
// value gives that value, stride its length. Values of different sizes (a
// database without DupFixed) give Incompatible.
//
// See mdb_cursor_list_dup.
func (c *Cursor) ListDupFixed(dst []byte) (vals []byte, stride int, err error) {
	runs, stride, total, s0, err := c.fixedRuns()
	if err != nil {
		return dst[:0], 0, err
	}
	if c.fixView != 0 && cap(dst) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(dst))) == c.fixView {
		dst = nil // the last result was a view of a page: not ours to write
	}
	c.fixView = 0
	if c.txn.RawRead && len(runs) == 1 {
		vals = mapView((*C.char)(runs[0].mv_data), runs[0].mv_size)
		c.fixView = uintptr(runs[0].mv_data)
	} else {
		vals = slices.Grow(dst[:0], total)
		for i := range runs {
			vals = append(vals, mapView((*C.char)(runs[i].mv_data), runs[i].mv_size)...)
		}
	}
	if err := c.txn.copiedAlone("mdb_cursor_list_dup", s0); err != nil {
		return dst[:0], 0, err
	}
	return vals, stride, nil
}
