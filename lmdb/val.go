package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#include "dlmdbgo.h"
*/
import "C"

import "unsafe"

// Multi is a run of equally sized values stored back to back, the unit of
// DupFixed bulk transfer: Cursor.PutMulti stores one, and Cursor.Get with
// GetMultiple, NextMultiple or PrevMultiple returns the raw page that
// WrapMulti turns into one (a key with a single value gives a one-value
// page). It is only meaningful for databases opened with DupSort|DupFixed.
type Multi struct {
	buf  []byte
	size int
}

// WrapMulti views page as consecutive values of stride bytes each. It panics
// when len(page) is not a multiple of stride.
//
//	_, first, _ := cur.Get(nil, nil, lmdb.FirstDup)
//	_, page, _ := cur.Get(nil, nil, lmdb.GetMultiple)
//	vals := lmdb.WrapMulti(page, len(first)).Vals()
//
// See mdb_cursor_get and MDB_GET_MULTIPLE.
func WrapMulti(page []byte, stride int) *Multi {
	if rem := len(page) % stride; rem != 0 {
		panic("lmdb: page length is not a multiple of the stride")
	}
	return &Multi{size: stride, buf: page}
}

// Stride is the length of each value in m.
func (m *Multi) Stride() int {
	return m.size
}

// Val returns value number i (counting from 0); it panics when i is out of
// range. The result shares memory with the page.
func (m *Multi) Val(i int) []byte {
	if i < 0 || i >= m.Len() {
		panic("lmdb: Multi index out of range")
	}
	lo := i * m.size
	return m.buf[lo : lo+m.size : lo+m.size]
}

// Len is the number of values in m.
func (m *Multi) Len() int {
	return len(m.buf) / m.size
}

// Vals returns every value in m, in order, each sharing memory with the
// page.
func (m *Multi) Vals() [][]byte {
	out := make([][]byte, 0, m.Len())
	for rest := m.buf; len(rest) > 0; rest = rest[m.size:] {
		out = append(out, rest[:m.size:m.size])
	}
	return out
}

// Size is the total length of the values, m.Len()*m.Stride().
func (m *Multi) Size() int {
	return len(m.buf)
}

// Page returns the values as one slice of m.Size() bytes whose capacity is
// capped at its length.
func (m *Multi) Page() []byte {
	return m.buf[:len(m.buf):len(m.buf)]
}

// cbytes returns the (pointer, length) pair under which b is passed to the C
// helpers. A char pointer holds no Go pointers, so cgo has nothing to scan;
// the helpers substitute a static byte for empty strings.
func cbytes(b []byte) (*C.char, C.size_t) {
	return (*C.char)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b))
}

// mapView is a slice over n bytes of C memory at p (the map, in practice).
// It is only valid while the memory is.
func mapView(p *C.char, n C.size_t) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n))
}

// mapCopy copies n bytes at p into a new Go slice (empty, not nil, for n 0).
// The make+copy pair is written so the compiler fuses it into one
// allocation that is not zeroed first (runtime.makeslicecopy).
func mapCopy(p *C.char, n C.size_t) []byte {
	src := mapView(p, n)
	out := make([]byte, len(src))
	copy(out, src)
	return out
}

// cloneBytes copies a caller's slice, keeping nil as nil.
func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}
