package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#include "dlmdbgo.h"
*/
import "C"

import (
	"errors"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"unsafe"
	"weak"
)

// Errno is a return code of the engine's own range (MDB_KEYEXIST through
// MDB_LAST_ERRCODE). Codes outside that range, such as EINVAL or ENOENT, are
// reported as syscall.Errno instead.
//
// Errors usually arrive wrapped in an *OpError; compare them with
// errors.Is(err, lmdb.NotFound) or the Is* helpers rather than with ==.
type Errno C.int

// The engine's return codes, numbered consecutively from MDB_KEYEXIST
// (-30799) as in LMDB's lmdb.h.
const (
	KeyExist        Errno = iota - 30799 // key (or key and value) already stored
	NotFound                             // no such key, or the cursor ran off the end
	PageNotFound                         // a page number points outside the file
	Corrupted                            // a page has the wrong type, or the checker found a fault
	Panic                                // fatal error: the environment must be closed
	VersionMismatch                      // file written by an incompatible version
	Invalid                              // the file is not a database
	MapFull                              // the map size is exhausted
	DBsFull                              // no room for another named database
	ReadersFull                          // the reader table is full
	TLSFull                              // too many thread-local keys
	TxnFull                              // the transaction has too many dirty pages
	CursorFull                           // the tree is too deep for a cursor
	PageFull                             // internal: a page has no room left
	MapResized                           // another process grew the map beyond ours
	Incompatible                         // operation or flags do not fit the database
	BadRSlot                             // reader slot used wrongly
	BadTxn                               // transaction ended, failed, or has an active child
	BadValSize                           // key, value or name has a size that is not allowed
	BadDBI                               // the DBI handle is unknown or was changed
)

// The engine's own codes span this range; anything else is an errno.
const (
	firstEngineCode = C.MDB_KEYEXIST
	lastEngineCode  = C.MDB_LAST_ERRCODE
)

// Error returns the engine's description of the code.
//
// See mdb_strerror.
func (e Errno) Error() string {
	return C.GoString(C.mdb_strerror(C.int(e)))
}

// OpError is the error returned when a C call fails. Op names the C function
// and Errno holds either an Errno or a syscall.Errno. The fields are
// lmdb-go's, exactly; see Cause for the earlier error of a failed
// transaction.
type OpError struct {
	Op    string
	Errno error
}

// opExtra is what some errors carry beyond lmdb-go's two fields: the earlier
// error that failed the txn (Cause) and the misuse in words. It lives in a
// side table so that OpError keeps lmdb-go's layout (programs build it with
// unkeyed literals); only the rare errors that have one are in it, each
// until it is garbage.
type opExtra struct {
	of    weak.Pointer[OpError] // guards against a reused address
	cause error
	hint  string
}

var opExtras sync.Map // uintptr(*OpError) -> opExtra

func withExtra(e *OpError, cause error, hint string) *OpError {
	if cause == nil && hint == "" {
		return e
	}
	key := uintptr(unsafe.Pointer(e))
	opExtras.Store(key, opExtra{weak.Make(e), cause, hint})
	runtime.AddCleanup(e, func(k uintptr) { opExtras.Delete(k) }, key)
	return e
}

func (e *OpError) extra() opExtra {
	if v, ok := opExtras.Load(uintptr(unsafe.Pointer(e))); ok {
		if x := v.(opExtra); x.of.Value() == e {
			return x
		}
	}
	return opExtra{}
}

// Cause (an extension of lmdb-go's type) is the earlier error that failed
// the transaction when the call failed only because of it: Errno is then
// BadTxn (as lmdb-go reports it) and Cause the earlier code, say MapFull or
// syscall.EINTR; nil otherwise. errors.Is matches both, so IsMapFull is true
// for a Commit refused after a Put hit a full map.
func (e *OpError) Cause() error { return e.extra().cause }

// Error formats the failed operation, its code, what went wrong in the
// caller's terms when that is known, and the earlier cause.
func (e *OpError) Error() string {
	s := e.Op + ": " + e.Errno.Error()
	x := e.extra()
	if x.hint != "" {
		s += " (" + x.hint + ")"
	}
	if x.cause != nil {
		s += "; the transaction had failed earlier: " + x.cause.Error()
	}
	return s
}

// Unwrap exposes the code, so errors.Is(err, lmdb.NotFound) and
// errors.Is(err, syscall.ENOENT) see through the OpError.
func (e *OpError) Unwrap() error {
	return e.Errno
}

// Is reports whether target is an *OpError with the same code and, when
// target names one, the same operation.
func (e *OpError) Is(target error) bool {
	if c := e.Cause(); c != nil && errors.Is(c, target) {
		return true
	}
	t, ok := target.(*OpError)
	if !ok || t == nil {
		return false
	}
	return t.Errno == e.Errno && (t.Op == "" || t.Op == e.Op)
}

// codeOf is the error value of engine or system code rc.
func codeOf(rc C.int) error {
	if rc >= firstEngineCode && rc <= lastEngineCode {
		return Errno(rc)
	}
	return syscall.Errno(rc)
}

// codeError turns a non-zero return code of the C function op into an error.
func codeError(op string, rc C.int) error {
	return withExtra(&OpError{Op: op, Errno: codeOf(rc)}, nil, misuse(op, rc))
}

// writeOps are the calls that change a database; in a read-only txn the
// engine answers them EACCES.
var writeOps = map[string]bool{
	"mdb_put": true, "mdb_del": true, "mdb_cursor_put": true, "mdb_cursor_del": true,
	"mdb_drop": true, "mdb_dbi_replace": true,
}

// countedOps need a database created with Counted (MDB_INCOMPATIBLE else).
var countedOps = map[string]bool{
	"mdb_count_all": true, "mdb_count_range": true, "mdb_range_count_keys": true,
	"mdb_range_count_values": true, "mdb_get_rank": true, "mdb_cursor_get_rank": true,
	"mdb_get_key_rank": true, "mdb_cursor_key_rank": true,
}

// misuse says in words what a caller did for the common mistakes behind
// code rc of op ("" when the code says it all); the code stays lmdb-go's.
func misuse(op string, rc C.int) string {
	switch {
	case rc == C.EACCES && writeOps[op]:
		return "a write in a read-only transaction"
	case rc == C.EACCES && op == "mdb_txn_begin":
		return "a write transaction on an environment opened Readonly"
	case rc == C.EINVAL && op == "mdb_env_set_mapsize":
		return "the map size of an open environment can change only while this process has no transaction running"
	case rc == C.EBUSY && !strings.HasPrefix(op, "mdb_env_"):
		return "another goroutine was inside the same write transaction at that moment; the transaction can no longer commit"
	case rc == C.MDB_INCOMPATIBLE && countedOps[op]:
		return "the database was not created with lmdb.Counted; rebuild it with dlmdb.Convert or cmd/lmdb_convert -counted on"
	}
	return ""
}

// check is codeError for calls that may have succeeded.
func check(op string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return codeError(op, rc)
}

// Not-found results are frequent and expected on lookups, so the errors for
// them are built once. They must be treated as read-only by callers, like
// any error value.
var (
	notFoundGet       error = &OpError{Op: "mdb_get", Errno: NotFound}
	notFoundCursorGet error = &OpError{Op: "mdb_cursor_get", Errno: NotFound}
)

// ended is the error for a call on a transaction that is over.
func ended(op string) error {
	return &OpError{Op: op, Errno: BadTxn}
}

// invalid is the error for a call with an unusable argument or handle.
func invalid(op string) error {
	return &OpError{Op: op, Errno: syscall.EINVAL}
}

// IsErrnoFn applies fn to the code inside err: the Errno field of the first
// *OpError in err's chain of wrapped errors, or err itself when there is
// none. It is false for a nil err.
func IsErrnoFn(err error, fn func(error) bool) bool {
	var op *OpError
	switch {
	case err == nil:
		return false
	case errors.As(err, &op) && op != nil:
		return fn(op.Errno)
	default:
		return fn(err)
	}
}

// IsErrno reports whether err carries the engine code errno, looking
// through OpError and any other wrapping (as errors.Is does).
func IsErrno(err error, errno Errno) bool {
	return errors.Is(err, errno)
}

// IsErrnoSys reports whether err carries the system code errno, looking
// through OpError and any other wrapping (as errors.Is does).
func IsErrnoSys(err error, errno syscall.Errno) bool {
	return errors.Is(err, errno)
}

// IsNotFound reports whether err means that a key was not found or that a
// cursor moved past the first or last item.
//
// It is asked after almost every cursor step, so the two common answers
// (no error; an OpError carrying NotFound) are decided without errors.Is.
func IsNotFound(err error) bool {
	if err == nil {
		return false
	}
	if op, ok := err.(*OpError); ok && op != nil {
		if code, ok := op.Errno.(Errno); ok && code == NotFound {
			return true
		}
	}
	return errors.Is(err, NotFound)
}

// IsMapFull reports whether err means that the map size is exhausted.
func IsMapFull(err error) bool { return errors.Is(err, MapFull) }

// IsMapResized reports whether err means that another process grew the map
// beyond the size this process has mapped; calling Env.SetMapSize(0) with no
// transaction open adopts the new size.
func IsMapResized(err error) bool { return errors.Is(err, MapResized) }

// IsNotExist reports whether err means that a file or directory (for
// example the path given to Env.Open) does not exist.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Errors of the Go layer that have no engine code.
var (
	errEnvNotOpen = errors.New("lmdb: environment is not open")
	errEnvClosed  = errors.New("lmdb: environment is already closed")
	errNegative   = errors.New("lmdb: size must not be negative")
	errNoFile     = errors.New("lmdb: an in-memory environment has no data file")
)
