package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#cgo noescape dlmdbgo_cursor_get
#cgo nocallback dlmdbgo_cursor_get
#cgo noescape dlmdbgo_cursor_put
#cgo nocallback dlmdbgo_cursor_put
#cgo noescape dlmdbgo_cursor_reserve
#cgo nocallback dlmdbgo_cursor_reserve
#cgo noescape dlmdbgo_cursor_put_multiple
#cgo nocallback dlmdbgo_cursor_put_multiple
#include "dlmdbgo.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// Operations for Cursor.Get, numbered as in the engine's MDB_cursor_op
// enumeration (the order is part of the C API).
//
// See MDB_cursor_op.
const (
	First        = iota // move to the first item
	FirstDup            // DupSort: move to the first value of the current key
	GetBoth             // DupSort: move to exactly this key and value
	GetBothRange        // DupSort: move to this key and its first value >= the given one
	GetCurrent          // return the item under the cursor
	GetMultiple         // DupFixed: return the page of values holding the current one (see Cursor.Get)
	Last                // move to the last item
	LastDup             // DupSort: move to the last value of the current key
	Next                // move to the next item (the first one on a fresh cursor)
	NextDup             // DupSort: move to the next value of the current key
	NextMultiple        // DupFixed: return the next page of values
	NextNoDup           // DupSort: move to the first value of the next key
	Prev                // move to the previous item (the last one on a fresh cursor)
	PrevDup             // DupSort: move to the previous value of the current key
	PrevNoDup           // DupSort: move to the last value of the previous key
	Set                 // move to exactly this key
	SetKey              // move to exactly this key and return the stored key too
	SetRange            // move to the first key >= the given one
	PrevMultiple        // DupFixed: return the page of values before the current page
)

// Flags for Txn.Put and Cursor.Put. Reserving space and storing several
// values at once have their own methods, PutReserve and PutMulti.
//
// See mdb_put and mdb_cursor_put.
const (
	NoOverwrite = 1 << 4  // fail with KeyExist if the key exists
	NoDupData   = 1 << 5  // DupSort: fail with KeyExist if the key already holds this value; Cursor.Del: delete all values
	Current     = 1 << 6  // Cursor.Put: replace the item under the cursor
	Append      = 1 << 17 // the key sorts after every stored key (fast bulk load)
	AppendDup   = 1 << 18 // DupSort: the value sorts after every stored value of the key
)

// Cursor is a position in one database within one transaction.
//
// See MDB_cursor.
type Cursor struct {
	handle *C.MDB_cursor
	txn    *Txn
	// GetMany's reused key buffer and lengths (no pointers: C may read them)
	flat []byte
	lens []C.size_t
	// the data address of ListDupFixed's last result when it was a view
	// (never to be appended to as dst), else 0
	fixView uintptr
	// whether the cursor's DBI is DupFixed (ListDupInto): 0 not known
	// yet, 1 yes, -1 no
	dupFixed int8
}

func (txn *Txn) openCursor(dbi DBI) (*Cursor, error) {
	if txn.gone() {
		return nil, ended("mdb_cursor_open")
	}
	r := C.dlmdbgo_cursor_open(txn.ch(), C.MDB_dbi(dbi))
	if r.rc != 0 {
		return nil, codeError("mdb_cursor_open", r.rc)
	}
	return &Cursor{handle: r.cur, txn: txn}, nil
}

// ch is the C handle as the integer the hot-path helpers take (no cgo
// pointer check: an MDB_cursor is never Go memory).
func (c *Cursor) ch() C.dlmdbgo_h {
	return C.dlmdbgo_h(uintptr(unsafe.Pointer(c.handle)))
}

// freed reports whether the engine has already released the C cursor: it
// does so when a write transaction ends.
func (c *Cursor) freed() bool {
	// readonly first: a read-only txn's cursor may be released by its
	// finalizer while the txn ends on its own goroutine, and must not read
	// the handle forget is clearing (the race detector caught it)
	return c.handle == nil || (!c.txn.readonly && c.txn.handle == nil)
}

// live returns an error unless the cursor and its transaction may be used.
func (c *Cursor) live(op string) error {
	if c.handle == nil {
		return invalid(op)
	}
	if c.txn.gone() {
		return ended(op)
	}
	return nil
}

// Renew binds a cursor of a read-only transaction to txn, another read-only
// transaction (often the same Txn after Reset and Renew), saving the cost of
// a new cursor.
//
// See mdb_cursor_renew.
func (c *Cursor) Renew(txn *Txn) error {
	if c.freed() {
		return invalid("mdb_cursor_renew")
	}
	if txn.gone() {
		return ended("mdb_cursor_renew")
	}
	if rc := C.dlmdbgo_cursor_renew(txn.ch(), c.ch()); rc != 0 {
		return codeError("mdb_cursor_renew", rc)
	}
	c.txn = txn
	c.dupFixed = 0
	return nil
}

// Close releases the cursor. A cursor of a write transaction is released by
// the transaction's end anyway; Close after that is harmless.
//
// See mdb_cursor_close.
func (c *Cursor) Close() {
	if c.release() {
		runtime.SetFinalizer(c, nil)
	}
}

// release frees the C cursor unless the engine already did, and reports
// whether the cursor was open.
func (c *Cursor) release() bool {
	if c.handle == nil {
		return false
	}
	if !c.freed() {
		env := c.txn.env
		env.life.RLock()
		if env.handle != nil {
			C.dlmdbgo_cursor_close(c.ch())
		}
		env.life.RUnlock()
	}
	c.handle = nil
	c.txn = nil
	return true
}

// Txn returns the transaction the cursor belongs to (nil once closed).
func (c *Cursor) Txn() *Txn {
	return c.txn
}

// DBI returns the database of the cursor, or the invalid handle ^DBI(0)
// once the cursor is closed.
//
// See mdb_cursor_dbi.
func (c *Cursor) DBI() DBI {
	if c.freed() {
		return ^DBI(0)
	}
	return DBI(C.mdb_cursor_dbi(c.handle))
}

// seeks reports whether op looks a key up, so that an empty key is an
// error rather than something to hand to the engine.
func seeks(op uint) bool {
	switch op {
	case Set, SetKey, SetRange, GetBoth, GetBothRange:
		return true
	}
	return false
}

// Get moves the cursor as op says and returns the key and value it lands
// on; IsNotFound is true for the error when there is no such item. setkey
// (and, for GetBoth and GetBothRange, setval) is the item to look up; both
// are ignored by the moving operations, and setval is ignored when setkey is
// empty. Looking up an empty key returns a BadValSize error.
//
// With RawRead the results point into the map (see Txn.RawRead), otherwise
// they are copies. When the engine answers with the caller's own key or
// value (Set returns setkey, GetBoth returns both), RawRead returns setkey
// and setval themselves and copying mode returns copies of them.
//
// In a DupSort|DupFixed database GetMultiple returns, while the cursor
// stands on a value, the page of the key's values holding it (a view into
// the map, to be cut with WrapMulti) and moves the cursor to that page's
// last value: the whole inline set, or one leaf page of a large set. A key
// with a single value is a one-value page, however it is stored. After
// NextDup ran off the end the cursor still stands on the key's last value,
// so GetMultiple returns the last page. NextMultiple moves one value on and
// returns the page it lands on (IsNotFound after the key's last page; on an
// unpositioned cursor the first key's first page); PrevMultiple returns the
// page before the current one (IsNotFound before the first; on an
// unpositioned cursor the last key's last page). Where the cursor stands on
// no value GetMultiple fails as GetCurrent does. Stock LMDB instead answers
// success with no data on a single value stored as a plain node, after a
// run off the end and on some other positions; code written for it works
// unchanged here, it just never meets the empty page.
//
// See mdb_cursor_get.
func (c *Cursor) Get(setkey, setval []byte, op uint) (key, val []byte, err error) {
	if err := c.live("mdb_cursor_get"); err != nil {
		return nil, nil, err
	}
	if len(setkey) == 0 {
		if seeks(op) {
			return nil, nil, &OpError{Op: "mdb_cursor_get", Errno: BadValSize}
		}
		setval = nil
	}
	kp, kn := cbytes(setkey)
	vp, vn := cbytes(setval)
	s0 := c.txn.calls()
	r := C.dlmdbgo_cursor_get(c.ch(), kp, kn, vp, vn, C.int(op))
	if r.rc != 0 {
		if r.rc == C.MDB_NOTFOUND {
			return nil, nil, notFoundCursorGet
		}
		return nil, nil, codeError("mdb_cursor_get", r.rc)
	}
	if r.same == 0 { // the usual case: both results are in engine memory
		if c.txn.RawRead {
			return mapView(r.kdata, r.klen), mapView(r.vdata, r.vlen), nil
		}
		key, val = mapCopy(r.kdata, r.klen), mapCopy(r.vdata, r.vlen)
	} else {
		key, val = c.echoed(&r, setkey, setval)
	}
	if err := c.txn.copiedAlone("mdb_cursor_get", s0); err != nil {
		return nil, nil, err
	}
	return key, val, nil
}

// echoed builds Get's results when the engine handed back (at least) one of
// the caller's own arguments rather than engine memory.
func (c *Cursor) echoed(r *C.dlmdbgo_pair, setkey, setval []byte) (key, val []byte) {
	raw := c.txn.RawRead
	switch {
	case r.same&C.DLMDBGO_SAME_KEY != 0 && raw:
		key = setkey
	case r.same&C.DLMDBGO_SAME_KEY != 0:
		key = cloneBytes(setkey)
	case raw:
		key = mapView(r.kdata, r.klen)
	default:
		key = mapCopy(r.kdata, r.klen)
	}
	switch {
	case r.same&C.DLMDBGO_SAME_VAL != 0 && raw:
		val = setval
	case r.same&C.DLMDBGO_SAME_VAL != 0:
		val = cloneBytes(setval)
	case raw:
		val = mapView(r.vdata, r.vlen)
	default:
		val = mapCopy(r.vdata, r.vlen)
	}
	return key, val
}

// Put stores val under key and leaves the cursor on the new item. flags may
// combine Current, NoOverwrite, NoDupData, Append and AppendDup.
//
// See mdb_cursor_put.
func (c *Cursor) Put(key, val []byte, flags uint) error {
	if err := c.live("mdb_cursor_put"); err != nil {
		return err
	}
	kp, kn := cbytes(key)
	vp, vn := cbytes(val)
	if rc := C.dlmdbgo_cursor_put(c.ch(), kp, kn, vp, vn, C.uint(flags&writeFlagMask)); rc != 0 {
		return codeError("mdb_cursor_put", rc)
	}
	return nil
}

// PutReserve stores a value of n bytes under key and returns the space for
// the caller to fill, saving a copy. The slice is only valid until the next
// change in the transaction and must be filled before then.
//
// See mdb_cursor_put and MDB_RESERVE.
func (c *Cursor) PutReserve(key []byte, n int, flags uint) ([]byte, error) {
	if err := c.live("mdb_cursor_put"); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, invalid("mdb_cursor_put")
	}
	kp, kn := cbytes(key)
	r := C.dlmdbgo_cursor_reserve(c.ch(), kp, kn, C.size_t(n), C.uint(flags&writeFlagMask))
	if r.rc != 0 {
		return nil, codeError("mdb_cursor_put", r.rc)
	}
	return mapView(r.data, r.len), nil
}

// PutMulti stores the values packed in page, each stride bytes long, under
// key in one call. The database must be DupSort|DupFixed. PutMulti panics
// when len(page) is not a multiple of stride; an empty page or a stride
// below 1 is an EINVAL error.
//
// See mdb_cursor_put and MDB_MULTIPLE.
func (c *Cursor) PutMulti(key []byte, page []byte, stride int, flags uint) error {
	if err := c.live("mdb_cursor_put"); err != nil {
		return err
	}
	if stride < 1 || len(page) == 0 {
		return invalid("mdb_cursor_put")
	}
	count := WrapMulti(page, stride).Len()
	kp, kn := cbytes(key)
	pp, _ := cbytes(page)
	r := C.dlmdbgo_cursor_put_multiple(c.ch(), kp, kn, pp, C.size_t(count), C.size_t(stride),
		C.uint(flags&writeFlagMask))
	return check("mdb_cursor_put", r.rc)
}

// Del deletes the item under the cursor; with NoDupData (DupSort) it
// deletes every value of the current key.
//
// See mdb_cursor_del.
func (c *Cursor) Del(flags uint) error {
	if err := c.live("mdb_cursor_del"); err != nil {
		return err
	}
	return check("mdb_cursor_del", C.dlmdbgo_cursor_del(c.ch(), C.uint(flags)))
}

// Count returns how many values the current key holds (DupSort only).
//
// See mdb_cursor_count.
func (c *Cursor) Count() (uint64, error) {
	if err := c.live("mdb_cursor_count"); err != nil {
		return 0, err
	}
	r := C.dlmdbgo_cursor_count(c.ch())
	if r.rc != 0 {
		return 0, codeError("mdb_cursor_count", r.rc)
	}
	return uint64(r.n), nil
}
