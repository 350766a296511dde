package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#cgo noescape dlmdbgo_get
#cgo nocallback dlmdbgo_get
#cgo noescape dlmdbgo_put
#cgo nocallback dlmdbgo_put
#cgo noescape dlmdbgo_reserve
#cgo nocallback dlmdbgo_reserve
#cgo noescape dlmdbgo_del
#cgo nocallback dlmdbgo_del
#cgo noescape dlmdbgo_txn_check
#cgo nocallback dlmdbgo_txn_check
#include "dlmdbgo.h"
*/
import "C"

import (
	"log"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Flags for Txn.OpenDBI and Txn.OpenRoot. Create is needed the first time a
// named database is opened; the other flags are recorded when the database
// is created and apply on every later open.
//
// IntegerKey and IntegerDup make keys (values) compare as native unsigned
// integers of 4 or 8 bytes, in the machine's byte order. They exist for
// files shared with programs that use them; keys and values are still
// passed and returned as []byte.
//
// See mdb_dbi_open.
const (
	ReverseKey = 1 << 1  // keys compare from their last byte to their first
	DupSort    = 1 << 2  // a key may hold several values, kept sorted
	IntegerKey = 1 << 3  // keys are native unsigned integers
	DupFixed   = 1 << 4  // with DupSort: all values of a key have one size
	IntegerDup = 1 << 5  // with DupSort|DupFixed: values are native unsigned integers
	ReverseDup = 1 << 6  // with DupSort: values compare from their last byte
	Create     = 1 << 18 // create the named database if it does not exist
)

// Txn is a transaction: a read-only snapshot or the single writer of an
// environment.
//
// A write Txn is bound to the OS thread and goroutine that began it and is
// not safe for concurrent use. A read-only Txn may be shared between
// goroutines that synchronise their calls.
//
// See MDB_txn.
type Txn struct {
	// RawRead makes Get and Cursor.Get return slices that point into the
	// memory map instead of copies. Such slices must not be modified and
	// must not be used after the transaction ends (in a write transaction,
	// not after the next change either).
	RawRead bool

	// Pooled marks a Txn that is parked, reset, in a pool awaiting Renew;
	// the finalizer then aborts it silently instead of reporting a leak.
	Pooled bool

	// The flags sit next to the exported ones so that a Txn fits in 48
	// bytes (one is allocated per transaction).
	readonly bool
	// inFn is set while a managed function owns the Txn; ending it directly
	// then panics.
	inFn bool
	// idKnown: id holds the cached ID (it only changes on Renew/Reset).
	idKnown bool

	// state lets SetInterrupt run on any goroutine while the owner ends
	// the transaction: txnEnded once the C txn is (about to be) freed,
	// plus the number of SetInterrupt calls currently inside the engine.
	// It fits in the padding after the flags.
	state atomic.Int32

	handle *C.MDB_txn
	env    *Env
	id     uintptr

	// logf reports finalized transactions (log.Printf when nil).
	logf func(format string, args ...any)
}

// TxnOp is a function run inside a managed transaction. It must not call
// Commit, Abort, Reset or Renew on the Txn it receives, and a TxnOp given a
// write transaction (Env.Update, Txn.Sub) must not use the Txn from any
// other goroutine.
type TxnOp func(txn *Txn) error

// begin starts a transaction without touching thread locking or
// finalizers.
func (env *Env) begin(parent *Txn, flags uint) (*Txn, error) {
	if env.handle == nil {
		return nil, invalid("mdb_txn_begin")
	}
	var ph C.dlmdbgo_h
	if parent != nil {
		if parent.gone() {
			return nil, ended("mdb_txn_begin")
		}
		ph = parent.ch()
	}
	r := C.dlmdbgo_txn_begin(C.dlmdbgo_h(uintptr(unsafe.Pointer(env.handle))), ph, C.uint(flags))
	if r.rc != 0 {
		return nil, codeError("mdb_txn_begin", r.rc)
	}
	return &Txn{handle: r.txn, env: env, readonly: flags&Readonly != 0}, nil
}

// ch is the C handle as the integer the hot-path helpers take (no cgo
// pointer check: an MDB_txn is never Go memory).
func (txn *Txn) ch() C.dlmdbgo_h {
	return C.dlmdbgo_h(uintptr(unsafe.Pointer(txn.handle)))
}

// calls reads the engine's count of the calls that got into this write
// transaction (mdb_txn_calls: an unsigned int at offset 0 of the C txn,
// loaded here without a cgo call; read-only transactions keep 0).
func (txn *Txn) calls() uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(txn.handle)))
}

// copiedAlone runs after a result was copied out of engine memory by a call
// that began when calls() read s0. In a write transaction the count must
// have grown by that one call: more means another goroutine got into the
// transaction while this one was between its call and the end of its copy,
// so the copy may be torn. The transaction is then failed (it cannot
// commit) and the caller gets EBUSY, as when two calls overlap in the
// engine.
func (txn *Txn) copiedAlone(op string, s0 uint32) error {
	if txn.readonly {
		return nil
	}
	txn.copyFence()
	if txn.calls() == s0+1 {
		return nil
	}
	C.dlmdbgo_txn_fail_busy(txn.ch())
	return codeError(op, C.EBUSY)
}

// ID returns the transaction's id: for a reader, the id of the snapshot it
// sees (shared with other readers of that snapshot); for a writer, the id
// its commit will get. It is 0 after the transaction ended.
//
// See mdb_txn_id.
func (txn *Txn) ID() uintptr {
	if !txn.idKnown {
		if txn.gone() {
			return 0
		}
		txn.id = uintptr(C.dlmdbgo_txn_id(txn.ch()))
		txn.idKnown = true
	}
	return txn.id
}

// RunOp calls fn with txn, during which Commit, Abort, Reset and Renew on
// txn panic. With terminate false the transaction stays open and fn's
// result is returned as is; with terminate true txn is committed when fn
// returns nil and aborted otherwise, like in Env.RunTxn. RunOp lets other
// packages build their own managed transactions (pools, for instance).
func (txn *Txn) RunOp(fn TxnOp, terminate bool) error {
	switch {
	case terminate:
		return txn.runAndEnd(fn)
	case txn.inFn: // nested RunOp: the outer one releases txn
		return fn(txn)
	}
	txn.inFn = true
	defer func() { txn.inFn = false }()
	return fn(txn)
}

// runAndEnd gives txn to fn and then commits or aborts it; a panic in fn
// aborts it too.
func (txn *Txn) runAndEnd(fn TxnOp) error {
	txn.claim("RunOp")
	defer func() {
		txn.abort()
		txn.inFn = false // ended: Abort is a harmless no-op from now on
	}()
	if err := fn(txn); err != nil {
		return err
	}
	return txn.commit()
}

// Commit makes the transaction's changes durable and ends it; a Txn cannot
// be used after Commit, whether it succeeded or not. Commit panics on a Txn
// managed by View, Update, RunTxn or Sub.
//
// See mdb_txn_commit.
func (txn *Txn) Commit() error {
	txn.unmanagedOnly("Commit")
	runtime.SetFinalizer(txn, nil)
	return txn.commit()
}

// unmanagedOnly panics when a managed function currently owns txn: only
// View, Update, RunTxn, RunOp and Sub may end their transactions.
func (txn *Txn) unmanagedOnly(method string) {
	if txn.inFn {
		panic("lmdb: " + method + " called on a transaction owned by a managed function")
	}
}

// claim hands txn to a managed function.
func (txn *Txn) claim(method string) {
	txn.unmanagedOnly(method)
	txn.inFn = true
}

func (txn *Txn) commit() error {
	if txn.handle == nil {
		return invalid("mdb_txn_commit")
	}
	h := txn.ch()
	txn.forget()
	env := txn.env
	env.life.RLock()
	if env.handle == nil {
		env.life.RUnlock()
		return invalid("mdb_txn_commit")
	}
	r := C.dlmdbgo_txn_commit(h)
	env.life.RUnlock()
	if r.rc == 0 {
		return nil
	}
	err := &OpError{Op: "mdb_txn_commit", Errno: codeOf(r.rc)}
	if r.rc == C.MDB_BAD_TXN && r.cause != 0 {
		return withExtra(err, codeOf(r.cause), "") // what failed the txn earlier
	}
	return err
}

// gone reports whether the transaction can no longer be used: it ended, or
// its environment was closed under it.
func (txn *Txn) gone() bool {
	return txn.handle == nil || txn.env.handle == nil
}

// Abort throws the transaction's changes away and ends it. Aborting an
// ended transaction does nothing. Abort panics on a Txn managed by View,
// Update, RunTxn or Sub.
//
// See mdb_txn_abort.
func (txn *Txn) Abort() {
	txn.unmanagedOnly("Abort")
	runtime.SetFinalizer(txn, nil)
	txn.abort()
}

// abort ends the transaction unless it has ended already. After the
// environment was closed the engine may not be called any more, so the C
// object is left alone (its memory is not reclaimed: closing an Env under
// a live Txn is a caller bug that this only keeps from crashing).
func (txn *Txn) abort() {
	if txn.handle == nil {
		return
	}
	h := txn.ch()
	txn.forget()
	env := txn.env
	env.life.RLock()
	if env.handle != nil {
		C.dlmdbgo_txn_abort(h)
	}
	env.life.RUnlock()
}

// txnEnded is the bit of Txn.state set when the transaction ends; the bits
// below it count SetInterrupt calls in progress.
const txnEnded = 1 << 30

// forget drops the C handle before the engine frees it. Marking the Txn
// ended is one atomic add (forget runs once per Txn: commit and abort
// return early once the handle is gone); only when a SetInterrupt call is
// inside the engine at that moment does it wait for that call to leave, so
// the C txn is never flagged after it was freed (or reused: the engine
// keeps an ended txn's struct for the next one).
func (txn *Txn) forget() {
	if txn.state.Add(txnEnded)&^txnEnded != 0 {
		txn.waitInterrupters()
	}
	txn.handle = nil
	txn.idKnown = false
	txn.id = 0
}

// waitInterrupters waits until no SetInterrupt call is inside the engine.
// Those calls only store a flag, so the wait is short.
func (txn *Txn) waitInterrupters() {
	for txn.state.Load()&^txnEnded != 0 {
		runtime.Gosched()
	}
}

// SetInterrupt asks the engine to stop the transaction (on true), or stops
// asking (on false). While the flag is set, every operation of the
// transaction and of its nested transactions that reaches another page (a
// search step, a cursor move onto the next leaf, a page of a copy) fails
// with an error for which errors.Is(err, syscall.EINTR) holds, and the
// transaction is marked failed: later operations and Commit fail with
// BadTxn. A failed write transaction must be aborted, its changes are lost;
// a read-only one may be aborted, or Reset and renewed (Renew clears the
// flag). Other transactions of the environment are not affected; see
// Env.SetInterrupt for those.
//
// Unlike the other methods of Txn, SetInterrupt may be called from any
// goroutine at any time, also while the owner commits, aborts, resets or
// renews the transaction (or its finalizer runs): the end of the
// transaction waits for a call in progress. Once the transaction has ended
// SetInterrupt does nothing and returns nil, so a timer or a
// context.AfterFunc may fire late without harm (on a transaction left
// running when its Env was closed it returns EINVAL). On a nested transaction
// it flags the whole family (the top transaction and all nested ones).
//
// See mdb_txn_set_interrupt.
func (txn *Txn) SetInterrupt(on bool) error {
	if txn.state.Add(1)&txnEnded != 0 {
		txn.state.Add(-1)
		return nil
	}
	// Not ended, and the owner cannot free the C txn until the counter
	// drops: txn.handle is stable here.
	env := txn.env
	env.life.RLock()
	rc := C.int(C.EINVAL)
	if env.handle != nil {
		rc = C.mdb_txn_set_interrupt(txn.handle, cflag(on))
	}
	env.life.RUnlock()
	txn.state.Add(-1)
	runtime.KeepAlive(txn)
	return check("mdb_txn_set_interrupt", rc)
}

// cflag is a bool as the engine's int flag.
func cflag(on bool) C.int {
	if on {
		return 1
	}
	return 0
}

// CopyFD writes a copy of the snapshot this read-only transaction sees to
// the open file descriptor fd, as Env.CopyFDFlag does with a snapshot of its
// own; flags may be CopyCompact. The copy is an ordinary data file. It
// follows the transaction's interrupt (SetInterrupt), so a long copy can be
// stopped from another goroutine; the transaction is then failed.
//
// See mdb_txn_copyfd.
func (txn *Txn) CopyFD(fd uintptr, flags uint) error {
	if txn.gone() {
		return ended("mdb_txn_copyfd")
	}
	rc := C.mdb_txn_copyfd(txn.handle, C.mdb_filehandle_t(fd), C.uint(flags))
	return check("mdb_txn_copyfd", rc)
}

// Reset releases a read-only transaction's snapshot but keeps the Txn for
// a later Renew, which is cheaper than beginning a new one. A Txn that will
// not be renewed must still be aborted. Reset does nothing on a write
// transaction and panics on a managed Txn.
//
// See mdb_txn_reset.
func (txn *Txn) Reset() {
	txn.unmanagedOnly("Reset")
	if txn.gone() {
		return
	}
	C.dlmdbgo_txn_reset(txn.ch())
	txn.idKnown = false
}

// Renew gives a Txn that was Reset a fresh snapshot. It panics on a managed
// Txn.
//
// See mdb_txn_renew.
func (txn *Txn) Renew() error {
	txn.unmanagedOnly("Renew")
	if txn.gone() {
		return ended("mdb_txn_renew")
	}
	rc := C.dlmdbgo_txn_renew(txn.ch())
	txn.idKnown = false
	return check("mdb_txn_renew", rc)
}

// OpenDBI opens the named database, creating it when flags include Create
// (in a write transaction). Env.SetMaxDBs must have allowed named databases.
// Names are C strings: a name must not contain a NUL byte, and the empty
// name is refused. The DBI may be used by other transactions once this one
// has committed.
//
// OpenDBI answers from this transaction's view: its snapshot, plus, in a
// write transaction, what it and its parents changed. A database that view
// does not hold is NotFound (without Create), even while another
// transaction has it open, or created it and committed after this one
// began; a database it holds is found, and works here, even if a later
// transaction dropped it. So a reader that polls for a database another
// goroutine creates can begin a read transaction, treat NotFound as "not
// yet" and use the DBI once it is found. A DBI this transaction did not
// open itself works here when its database is in the view, and fails
// (EINVAL) when it is not.
//
// As in lmdb-go, a DBI first opened by a transaction that aborts (or a
// read-only one that is Reset) is closed again, unless another
// transaction opened it meanwhile; one opened in a read-only transaction
// that commits (Env.View when fn returns nil) stays open.
//
// See mdb_dbi_open.
func (txn *Txn) OpenDBI(name string, flags uint) (DBI, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return txn.openDB(cname, flags)
}

// CreateDBI is OpenDBI(name, Create).
//
// See mdb_dbi_open.
func (txn *Txn) CreateDBI(name string) (DBI, error) {
	return txn.OpenDBI(name, Create)
}

// OpenRoot opens the environment's unnamed root database. It needs no
// SetMaxDBs and works in a read-only transaction when flags are 0.
//
// See mdb_dbi_open.
func (txn *Txn) OpenRoot(flags uint) (DBI, error) {
	return txn.openDB(nil, flags)
}

func (txn *Txn) openDB(cname *C.char, flags uint) (DBI, error) {
	if txn.gone() {
		return 0, ended("mdb_dbi_open")
	}
	r := C.dlmdbgo_dbi_open(txn.ch(), cname, C.uint(flags))
	return DBI(r.dbi), check("mdb_dbi_open", r.rc)
}

// Flags returns the flags the database dbi was created with.
//
// See mdb_dbi_flags.
func (txn *Txn) Flags(dbi DBI) (uint, error) {
	if txn.gone() {
		return 0, ended("mdb_dbi_flags")
	}
	r := C.dlmdbgo_dbi_flags(txn.ch(), C.MDB_dbi(dbi))
	return uint(r.n), check("mdb_dbi_flags", r.rc)
}

// Stat describes the tree of database dbi as this transaction sees it.
//
// See mdb_stat.
func (txn *Txn) Stat(dbi DBI) (*Stat, error) {
	if txn.gone() {
		return nil, ended("mdb_stat")
	}
	var s C.MDB_stat
	if rc := C.mdb_stat(txn.handle, C.MDB_dbi(dbi), &s); rc != 0 {
		return nil, codeError("mdb_stat", rc)
	}
	return statFromC(&s), nil
}

// Drop removes every item of database dbi; with del set it also deletes the
// database itself and closes the handle. Transactions of earlier snapshots
// that have dbi open keep reading the database; the number is given to
// another database only once they have ended.
//
// See mdb_drop.
func (txn *Txn) Drop(dbi DBI, del bool) error {
	if txn.gone() {
		return ended("mdb_drop")
	}
	d := C.int(0)
	if del {
		d = 1
	}
	return check("mdb_drop", C.mdb_drop(txn.handle, C.MDB_dbi(dbi), d))
}

// Sub runs fn in a transaction nested in txn, which must be a write
// transaction: the nested changes become part of txn when fn returns nil and
// are rolled back otherwise, leaving txn usable either way. Sub assumes the
// goroutine is already locked to its thread. Commit, Abort, Reset and Renew
// panic on the nested Txn.
//
// See mdb_txn_begin.
func (txn *Txn) Sub(fn TxnOp) error {
	child, err := txn.env.begin(txn, 0)
	if err != nil {
		return err
	}
	return child.runAndEnd(fn)
}

// Get returns the value stored under key in database dbi; a missing key
// gives an error for which IsNotFound is true. With RawRead the result
// points into the map (see Txn.RawRead), otherwise it is a copy.
//
// See mdb_get.
func (txn *Txn) Get(dbi DBI, key []byte) ([]byte, error) {
	if txn.gone() {
		return nil, ended("mdb_get")
	}
	kp, kn := cbytes(key)
	s0 := txn.calls()
	r := C.dlmdbgo_get(txn.ch(), C.MDB_dbi(dbi), kp, kn)
	if r.rc != 0 {
		if r.rc == C.MDB_NOTFOUND {
			return nil, notFoundGet
		}
		return nil, codeError("mdb_get", r.rc)
	}
	if txn.RawRead {
		return mapView(r.data, r.len), nil
	}
	val := mapCopy(r.data, r.len)
	if err := txn.copiedAlone("mdb_get", s0); err != nil {
		return nil, err
	}
	return val, nil
}

// writeFlagMask removes the flags that only PutReserve and PutMulti may
// pass: with a plain value the engine would read or write memory that is
// not there.
const writeFlagMask = ^uint(C.MDB_RESERVE | C.MDB_MULTIPLE)

// Put stores val under key in database dbi. flags may combine NoOverwrite,
// NoDupData, Append and AppendDup.
//
// See mdb_put.
func (txn *Txn) Put(dbi DBI, key []byte, val []byte, flags uint) error {
	if txn.gone() {
		return ended("mdb_put")
	}
	kp, kn := cbytes(key)
	vp, vn := cbytes(val)
	rc := C.dlmdbgo_put(txn.ch(), C.MDB_dbi(dbi), kp, kn, vp, vn, C.uint(flags&writeFlagMask))
	if rc != 0 {
		return codeError("mdb_put", rc)
	}
	return nil
}

// PutReserve stores a value of n bytes under key and returns the space for
// the caller to fill, saving a copy. The slice is only valid until the next
// change in the transaction and must be filled before then.
//
// See mdb_put and MDB_RESERVE.
func (txn *Txn) PutReserve(dbi DBI, key []byte, n int, flags uint) ([]byte, error) {
	if txn.gone() {
		return nil, ended("mdb_put")
	}
	if n < 0 {
		return nil, invalid("mdb_put")
	}
	kp, kn := cbytes(key)
	r := C.dlmdbgo_reserve(txn.ch(), C.MDB_dbi(dbi), kp, kn, C.size_t(n), C.uint(flags&writeFlagMask))
	if r.rc != 0 {
		return nil, codeError("mdb_put", r.rc)
	}
	return mapView(r.data, r.len), nil
}

// Del deletes key from database dbi. In a DupSort database only the value
// val of key is deleted (use Cursor.Del with NoDupData to delete all values
// of a key); in other databases val is ignored. As in lmdb-go, a nil val is
// an empty value, not "every value": in a DupSort database Del(dbi, key,
// nil) looks for an empty duplicate: a key whose single value is empty
// loses it, a key with one non-empty value answers NotFound, and a key with
// several values answers BadValSize, even when one of them is empty (the
// duplicate search rejects an empty item), as in lmdb-go.
//
// See mdb_del.
func (txn *Txn) Del(dbi DBI, key, val []byte) error {
	if txn.gone() {
		return ended("mdb_del")
	}
	kp, kn := cbytes(key)
	vp, vn := cbytes(val)
	if rc := C.dlmdbgo_del(txn.ch(), C.MDB_dbi(dbi), kp, kn, vp, vn); rc != 0 {
		return codeError("mdb_del", rc)
	}
	return nil
}

// OpenCursor opens a cursor on database dbi. A cursor of a write
// transaction is closed by the engine when the transaction ends; a cursor of
// a read-only transaction lives until Close (or its finalizer) and can be
// moved to another read-only transaction with Cursor.Renew.
//
// See mdb_cursor_open.
func (txn *Txn) OpenCursor(dbi DBI) (*Cursor, error) {
	c, err := txn.openCursor(dbi)
	if err != nil {
		return nil, err
	}
	if txn.readonly {
		runtime.SetFinalizer(c, (*Cursor).release)
	}
	return c, nil
}

// Check walks every page visible to the transaction and verifies the
// structure of every tree: page kinds and bounds, key order, page ownership
// and free-list consistency. A problem is reported as an error for which
// errors.Is(err, Corrupted) holds and whose message gives the reason.
//
// See mdb_txn_check.
func (txn *Txn) Check() error {
	if txn.gone() {
		return ended("mdb_txn_check")
	}
	r := C.dlmdbgo_txn_check(txn.handle)
	if r.rc == 0 {
		return nil
	}
	op := codeError("mdb_txn_check", r.rc).(*OpError)
	why := C.GoString(&r.why[0])
	if why == "" {
		return op
	}
	return &checkError{op: op, why: why}
}

// checkError is an OpError with the checker's explanation attached.
type checkError struct {
	op  *OpError
	why string
}

func (e *checkError) Error() string { return e.op.Error() + ": " + e.why }
func (e *checkError) Unwrap() error { return e.op }

// finalize aborts a transaction nobody can reach any more.
func (txn *Txn) finalize() {
	if txn.handle == nil {
		return
	}
	if !txn.Pooled {
		report := txn.logf
		if report == nil {
			report = log.Printf
		}
		report("lmdb: aborting transaction %p that was never ended", txn)
	}
	txn.abort()
}
