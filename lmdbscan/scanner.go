// Package lmdbscan walks an lmdb database with a cursor in the style of
// bufio.Scanner: call Scan until it returns false, read Key and Val after
// each successful call, then check Err.
//
//	s := lmdbscan.New(txn, dbi)
//	defer s.Close()
//	for s.Scan() {
//		use(s.Key(), s.Val())
//	}
//	if err := s.Err(); err != nil {
//		return err
//	}
//
// It is the API of github.com/PowerDNS/lmdb-go/lmdbscan on top of
// github.com/dlmdb/dlmdb-go/lmdb.
package lmdbscan

import (
	"errors"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// errClosed reports use of a Scanner after Close.
var errClosed = errors.New("lmdbscan: scanner is closed")

// Scanner iterates over one database inside one transaction. It is not safe
// for concurrent use.
type Scanner struct {
	cur *lmdb.Cursor

	// move is the cursor operation of every Scan (Next unless SetNext
	// chose another).
	move uint
	// parked is set after Set: the cursor already sits on the item the
	// next Scan must report.
	parked bool

	key, val []byte
	err      error
}

// New opens a cursor on dbi in txn and returns a Scanner over it, starting
// before the first item. A failure to open the cursor is reported by Err
// (and the first Scan returns false). Close the Scanner when done.
func New(txn *lmdb.Txn, dbi lmdb.DBI) *Scanner {
	cur, err := txn.OpenCursor(dbi)
	return &Scanner{cur: cur, err: err, move: lmdb.Next}
}

// Cursor returns the cursor the Scanner moves, or nil once it is closed.
func (s *Scanner) Cursor() *lmdb.Cursor {
	return s.cur
}

// usable records errClosed (unless an earlier error is pending) and reports
// false when the Scanner has no cursor.
func (s *Scanner) usable() bool {
	closed := s.cur == nil
	if closed && s.err == nil {
		s.err = errClosed
	}
	return !closed
}

// Scan moves to the next item and reports whether there is one. After Set
// or SetNext the first Scan reports the item they found without moving.
func (s *Scanner) Scan() bool {
	switch {
	case !s.usable():
		return false
	case s.parked:
		s.parked = false
	default:
		s.key, s.val, s.err = s.cur.Get(nil, nil, s.move)
	}
	return s.err == nil
}

// Set positions the cursor with Cursor().Get(k, v, opset), records the
// resulting key, value and error, and reports success. The next Scan
// returns this position instead of moving.
func (s *Scanner) Set(k, v []byte, opset uint) bool {
	if s.usable() {
		s.key, s.val, s.err = s.cur.Get(k, v, opset)
		s.parked = true
		return s.err == nil
	}
	return false
}

// SetNext is Set followed by a change of the operation that later Scans use
// to move (for example NextDup to stay within one key, or NextMultiple to
// page through DupFixed values).
func (s *Scanner) SetNext(k, v []byte, opset, opnext uint) bool {
	found := s.Set(k, v, opset)
	if s.cur != nil {
		s.move = opnext
	}
	return found
}

// Key returns the key of the current item.
func (s *Scanner) Key() []byte {
	return s.key
}

// Val returns the value of the current item.
func (s *Scanner) Val() []byte {
	return s.val
}

// Err returns the error that stopped the Scanner, or nil when it simply ran
// out of items (lmdb.NotFound is not an error here).
func (s *Scanner) Err() error {
	if s.err == nil || lmdb.IsNotFound(s.err) {
		return nil
	}
	return s.err
}

// Del deletes the current item.
//
// Deprecated: call s.Cursor().Del(flags).
func (s *Scanner) Del(flags uint) error {
	if s.cur == nil {
		return errClosed
	}
	return s.cur.Del(flags)
}

// Close releases the cursor; the transaction is left alone. Later Scans
// return false with an error.
func (s *Scanner) Close() {
	if c := s.cur; c != nil {
		s.cur = nil
		c.Close()
	}
}
