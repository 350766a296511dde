package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#cgo noescape dlmdbgo_env_create
#cgo nocallback dlmdbgo_env_create
#cgo noescape dlmdbgo_env_fd
#cgo nocallback dlmdbgo_env_fd
#cgo noescape dlmdbgo_env_flags
#cgo nocallback dlmdbgo_env_flags
#cgo noescape dlmdbgo_env_maxreaders
#cgo nocallback dlmdbgo_env_maxreaders
#cgo noescape dlmdbgo_reader_check
#cgo nocallback dlmdbgo_reader_check
#cgo noescape dlmdbgo_env_path
#cgo nocallback dlmdbgo_env_path
#cgo noescape dlmdbgo_reader_list
#cgo nocallback dlmdbgo_reader_list
#include "dlmdbgo.h"
*/
import "C"

import (
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// Flags for Env.Open. NoSync, NoMetaSync, MapAsync and NoMemInit can also
// be switched later with Env.SetFlags and Env.UnsetFlags; the others are
// fixed once the environment is open.
//
// See mdb_env_open.
const (
	FixedMap    = 1 << 0  // map at the address recorded in the file (use with care)
	NoSubdir    = 1 << 14 // the path names the data file, not a directory
	NoSync      = 1 << 16 // skip every fsync at commit
	Readonly    = 1 << 17 // read-only environment; also the read-only Txn flag
	NoMetaSync  = 1 << 18 // skip the fsync of the meta page at commit
	WriteMap    = 1 << 19 // write through a writable map instead of write(2)
	MapAsync    = 1 << 20 // with WriteMap, flush the map asynchronously
	NoTLS       = 1 << 21 // reader slots belong to transactions (always set by Open)
	NoLock      = 1 << 22 // no locking at all: the caller serializes (use with care)
	NoReadahead = 1 << 23 // ask the OS not to read ahead in the map
	NoMemInit   = 1 << 24 // do not zero unused parts of pages before writing them

	// InMemory (a DLMDB extension) opens an environment that lives in
	// this process's memory only: Open takes an empty path, creates no
	// file, and the data is gone when the Env is closed. The map size
	// bounds the memory it may take. Copy, CopyFlag and CopyFD write an
	// ordinary data file from it. Not combinable with Readonly or
	// FixedMap.
	InMemory = 1 << 26
)

// CopyCompact is the flag for Env.CopyFlag and Env.CopyFDFlag that writes
// only live pages, renumbered, leaving out free space.
//
// See mdb_env_copy2.
const CopyCompact = 1 << 0

// DBI identifies a database of an environment. A DBI obtained in a
// transaction that commits stays valid in every later transaction.
//
// See MDB_dbi.
type DBI C.MDB_dbi

// Env is an open (or not yet opened) database environment: one data file,
// its lock file and the memory map over them. Its methods are safe for
// concurrent use; Close must not race with transactions still running.
//
// See MDB_env.
type Env struct {
	handle *C.MDB_env
	opened bool // Open succeeded

	// life is held for reading while a transaction or cursor frees its C
	// object, and for writing while the environment closes, so a finalizer
	// never touches a closed environment.
	life sync.RWMutex
}

// Stat describes the shape of one B+tree (a database, or the root database
// of an environment).
//
// See MDB_stat.
type Stat struct {
	PSize         uint   // page size in bytes, the same for every database
	Depth         uint   // height of the tree
	BranchPages   uint64 // interior pages
	LeafPages     uint64 // leaf pages
	OverflowPages uint64 // pages holding values too large for a leaf
	Entries       uint64 // number of items
}

// statFromC converts the engine's statistics record.
func statFromC(s *C.MDB_stat) *Stat {
	out := new(Stat)
	out.PSize, out.Depth = uint(s.ms_psize), uint(s.ms_depth)
	out.BranchPages, out.LeafPages = uint64(s.ms_branch_pages), uint64(s.ms_leaf_pages)
	out.OverflowPages, out.Entries = uint64(s.ms_overflow_pages), uint64(s.ms_entries)
	return out
}

// EnvInfo holds environment-wide figures.
//
// See MDB_envinfo.
type EnvInfo struct {
	MapSize    int64 // size of the memory map in bytes
	LastPNO    int64 // highest page number in use
	LastTxnID  int64 // id of the last committed write transaction
	MaxReaders uint  // capacity of the reader table
	NumReaders uint  // reader slots used so far
}

// NewEnv creates an environment handle that still has to be configured and
// opened. A finalizer closes it if it becomes unreachable.
//
// See mdb_env_create.
func NewEnv() (*Env, error) {
	r := C.dlmdbgo_env_create()
	if r.rc != 0 {
		return nil, codeError("mdb_env_create", r.rc)
	}
	env := &Env{handle: r.env}
	runtime.SetFinalizer(env, (*Env).Close)
	return env, nil
}

// Open opens the environment at path, creating its files with mode when
// needed. NoTLS is always added to flags. With InMemory, path must be
// empty. When Open fails the Env cannot be opened again; Close it.
//
// See mdb_env_open.
func (env *Env) Open(path string, flags uint, mode os.FileMode) error {
	if env.handle == nil {
		return invalid("mdb_env_open")
	}
	var cpath *C.char // an in-memory env has no path
	if flags&InMemory == 0 || path != "" {
		cpath = C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
	}
	rc := C.mdb_env_open(env.handle, cpath, C.uint(flags|NoTLS), C.mdb_mode_t(mode))
	env.opened = rc == 0
	return check("mdb_env_open", rc)
}

// Load opens env, created by NewEnv and not opened yet, as an InMemory
// environment that holds a compacted copy of the snapshot src sees. src must
// be a live read-only transaction; its environment may be a file env (a
// file loaded into memory) or another in-memory one (a clone). flags are
// Open flags (InMemory and NoTLS are added; Readonly and FixedMap are
// refused). The settings made before Load (SetMaxDBs, SetMaxReaders,
// SetMapSize) apply; the map is at least as large as that of src's
// environment. src is left as it was and must still be ended by its owner.
// The copy follows src's interrupt (Txn.SetInterrupt). When Load fails the
// Env cannot be opened again; Close it.
//
// See mdb_env_load.
func (env *Env) Load(src *Txn, flags uint) error {
	if env.handle == nil || env.opened || src == nil {
		return invalid("mdb_env_load")
	}
	if src.gone() {
		return ended("mdb_env_load")
	}
	src.env.life.RLock()
	defer src.env.life.RUnlock()
	if src.env.handle == nil {
		return ended("mdb_env_load")
	}
	rc := C.mdb_env_load(env.handle, src.handle, C.uint(flags|InMemory|NoTLS), 0o644)
	env.opened = rc == 0
	return check("mdb_env_load", rc)
}

// SetInterrupt asks the engine to stop every transaction of the
// environment (on true), or stops asking (on false). While the flag is set,
// each operation that reaches another page fails with an error for which
// errors.Is(err, syscall.EINTR) holds and marks its transaction failed (see
// Txn.SetInterrupt for what that means); transactions begun while it is set
// fail at their first page too, so clear it before starting new work.
// Committed data is never damaged: a write transaction stopped this way is
// simply aborted.
//
// SetInterrupt may be called from any goroutine, for instance one that
// receives os/signal notifications. The engine's flag is a single atomic
// store, safe even in a C signal handler.
//
// See mdb_env_set_interrupt.
func (env *Env) SetInterrupt(on bool) error {
	env.life.RLock()
	defer env.life.RUnlock()
	if env.handle == nil {
		return invalid("mdb_env_set_interrupt")
	}
	return check("mdb_env_set_interrupt", C.mdb_env_set_interrupt(env.handle, cflag(on)))
}

// SetMapSize sets the size of the memory map, which bounds the size of the
// database. On an open environment it may only be called while this process
// has no transaction running; a size of 0 keeps the current size (useful
// after another process grew the map, see IsMapResized).
//
// See mdb_env_set_mapsize.
func (env *Env) SetMapSize(size int64) error {
	if size < 0 {
		return errNegative
	}
	if env.handle == nil {
		return invalid("mdb_env_set_mapsize")
	}
	return check("mdb_env_set_mapsize", C.mdb_env_set_mapsize(env.handle, C.mdb_size_t(size)))
}

// SetMaxDBs sets how many named databases the environment may hold; before
// Open only.
//
// See mdb_env_set_maxdbs.
func (env *Env) SetMaxDBs(size int) error {
	if size < 0 {
		return errNegative
	}
	if env.handle == nil {
		return invalid("mdb_env_set_maxdbs")
	}
	return check("mdb_env_set_maxdbs", C.mdb_env_set_maxdbs(env.handle, C.MDB_dbi(size)))
}

// SetMaxReaders sets the capacity of the reader table; before Open only.
//
// See mdb_env_set_maxreaders.
func (env *Env) SetMaxReaders(size int) error {
	if size < 0 {
		return errNegative
	}
	if env.handle == nil {
		return invalid("mdb_env_set_maxreaders")
	}
	return check("mdb_env_set_maxreaders", C.mdb_env_set_maxreaders(env.handle, C.uint(size)))
}

// MaxReaders returns the capacity of the reader table.
//
// See mdb_env_get_maxreaders.
func (env *Env) MaxReaders() (int, error) {
	if env.handle == nil {
		return 0, invalid("mdb_env_get_maxreaders")
	}
	r := C.dlmdbgo_env_maxreaders(env.handle)
	return int(r.n), check("mdb_env_get_maxreaders", r.rc)
}

// MaxKeySize returns the largest key length the engine accepts (also the
// largest value length in DupSort databases). It may be called on a nil
// *Env.
//
// See mdb_env_get_maxkeysize.
func (env *Env) MaxKeySize() int {
	var h *C.MDB_env
	if env != nil {
		h = env.handle
	}
	return int(C.mdb_env_get_maxkeysize(h))
}

// Close closes the environment and releases the map. Every transaction must
// have ended first. Closing twice returns an error.
//
// See mdb_env_close.
func (env *Env) Close() error {
	env.life.Lock()
	h := env.handle
	env.handle = nil
	if h != nil {
		C.mdb_env_close(h)
	}
	env.life.Unlock()
	if h == nil {
		return errEnvClosed
	}
	runtime.SetFinalizer(env, nil)
	return nil
}

// View runs fn in a read-only transaction and ends the transaction when fn
// returns, passing on fn's error. fn may share the Txn with goroutines it
// starts, provided they synchronise their use of it. Commit, Abort, Reset
// and Renew panic on the managed Txn.
//
// See mdb_txn_begin.
func (env *Env) View(fn TxnOp) error {
	return env.managed(Readonly, fn)
}

// Update runs fn in a write transaction, committing it when fn returns nil
// and aborting it otherwise. As in lmdb-go the goroutine is locked to its
// OS thread for the duration (use UpdateLocked on a goroutine that is
// already locked, so the lock is not released early), although this engine
// does not need it (see BeginTxn). fn must not hand the Txn to other
// goroutines. Commit, Abort, Reset and Renew panic on the managed Txn.
//
// See mdb_txn_begin.
func (env *Env) Update(fn TxnOp) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return env.managed(0, fn)
}

// UpdateLocked is Update for a goroutine that has already called
// runtime.LockOSThread: it does not lock or unlock the thread itself.
//
// A goroutine that cannot tell whether it is locked should call neither;
// it should pass its writes to a goroutine in a known state.
//
// See mdb_txn_begin.
func (env *Env) UpdateLocked(fn TxnOp) error {
	return env.managed(0, fn)
}

// RunTxn runs fn in a transaction begun with flags, committing it when fn
// returns nil and aborting it otherwise. It does not lock the OS thread, so
// without Readonly the caller must be locked already. Neither the Txn nor
// data read through it may be used after RunTxn returns.
//
// See mdb_txn_begin.
func (env *Env) RunTxn(flags uint, fn TxnOp) error {
	return env.managed(flags, fn)
}

// managed runs fn in a transaction that ends before it returns; thread
// locking is the caller's business.
func (env *Env) managed(flags uint, fn TxnOp) error {
	txn, err := env.begin(nil, flags)
	if err == nil {
		err = txn.runAndEnd(fn)
	}
	return err
}

// BeginTxn starts a transaction that the caller must end with Commit or
// Abort (deferring Abort is safe even after Commit). A non-nil parent
// starts a nested write transaction; Readonly in flags starts a reader.
//
// BeginTxn does not lock the OS thread, and unlike stock LMDB (and
// lmdb-go) this engine does not need it to: the writer lock belongs to the
// process, so a write transaction may be committed or aborted on any OS
// thread (a goroutine that moved, a finalizer), and the next writer of this
// or another process goes on. A Txn must still be used by one goroutine at
// a time. Env.View and Env.Update are usually the better choice.
//
// An unterminated Txn that becomes unreachable is aborted by a finalizer,
// which reports it through the standard logger unless Pooled is set: the
// leak is a bug to fix, because an open reader keeps old pages alive.
//
// See mdb_txn_begin.
func (env *Env) BeginTxn(parent *Txn, flags uint) (*Txn, error) {
	txn, err := env.begin(parent, flags)
	if err != nil {
		return nil, err
	}
	runtime.SetFinalizer(txn, (*Txn).finalize)
	return txn, nil
}

// Info returns the environment's map size, last page, last transaction id
// and reader table figures.
//
// See mdb_env_info.
func (env *Env) Info() (*EnvInfo, error) {
	if env.handle == nil {
		return nil, invalid("mdb_env_info")
	}
	var in C.MDB_envinfo
	if err := check("mdb_env_info", C.mdb_env_info(env.handle, &in)); err != nil {
		return nil, err
	}
	out := new(EnvInfo)
	out.MapSize, out.LastPNO, out.LastTxnID = int64(in.me_mapsize), int64(in.me_last_pgno), int64(in.me_last_txnid)
	out.MaxReaders, out.NumReaders = uint(in.me_maxreaders), uint(in.me_numreaders)
	return out, nil
}

// Stat describes the root database of the environment.
//
// See mdb_env_stat.
func (env *Env) Stat() (*Stat, error) {
	if env.handle == nil {
		return nil, invalid("mdb_env_stat")
	}
	var s C.MDB_stat
	if err := check("mdb_env_stat", C.mdb_env_stat(env.handle, &s)); err != nil {
		return nil, err
	}
	return statFromC(&s), nil
}

// Flags returns the environment's current flags.
//
// See mdb_env_get_flags.
func (env *Env) Flags() (uint, error) {
	if env.handle == nil {
		return 0, invalid("mdb_env_get_flags")
	}
	r := C.dlmdbgo_env_flags(env.handle)
	if r.rc != 0 {
		return 0, codeError("mdb_env_get_flags", r.rc)
	}
	return uint(r.n), nil
}

// SetFlags switches the given environment flags on.
//
// See mdb_env_set_flags.
func (env *Env) SetFlags(flags uint) error {
	return env.switchFlags(flags, 1)
}

// UnsetFlags switches the given environment flags off.
//
// See mdb_env_set_flags.
func (env *Env) UnsetFlags(flags uint) error {
	return env.switchFlags(flags, 0)
}

func (env *Env) switchFlags(flags uint, on C.int) error {
	if env.handle == nil {
		return invalid("mdb_env_set_flags")
	}
	return check("mdb_env_set_flags", C.mdb_env_set_flags(env.handle, C.uint(flags), on))
}

// Path returns the path given to Open ("" for an InMemory env), or an
// error when the environment has not been opened.
//
// See mdb_env_get_path.
func (env *Env) Path() (string, error) {
	if env.handle == nil || !env.opened {
		return "", errEnvNotOpen
	}
	switch r := C.dlmdbgo_env_path(env.handle); {
	case r.rc != 0:
		return "", codeError("mdb_env_get_path", r.rc)
	case r.path == nil:
		return "", nil // an in-memory env (InMemory)
	default:
		return C.GoString(r.path), nil
	}
}

// FD returns the file descriptor of the data file, or an error when the
// environment is not open. An InMemory environment has no file: FD returns
// an error saying so (use Copy, CopyFD or Txn.CopyFD to write its contents
// to a file).
//
// See mdb_env_get_fd.
func (env *Env) FD() (uintptr, error) {
	if env.handle == nil || !env.opened {
		return 0, errEnvNotOpen
	}
	switch r := C.dlmdbgo_env_fd(env.handle); {
	case r.rc != 0:
		return 0, codeError("mdb_env_get_fd", r.rc)
	case int64(r.n) < 0: // -1: before Open, or an in-memory env
		if f := C.dlmdbgo_env_flags(env.handle); f.rc == 0 && f.n&InMemory != 0 {
			return 0, errNoFile
		}
		return 0, errEnvNotOpen
	default:
		return uintptr(r.n), nil
	}
}

// Sync writes buffered data to disk. With force set it also does so for
// environments opened with NoSync or MapAsync.
//
// See mdb_env_sync.
func (env *Env) Sync(force bool) error {
	if env.handle == nil {
		return invalid("mdb_env_sync")
	}
	f := C.int(0)
	if force {
		f = 1
	}
	return check("mdb_env_sync", C.mdb_env_sync(env.handle, f))
}

// CopyFlag is Copy with copy flags such as CopyCompact.
//
// See mdb_env_copy2.
func (env *Env) CopyFlag(path string, flags uint) error {
	if env.handle == nil {
		return invalid("mdb_env_copy2")
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return check("mdb_env_copy2", C.mdb_env_copy2(env.handle, cpath, C.uint(flags)))
}

// Copy writes a consistent copy of the environment into the directory path,
// which must exist and be empty.
//
// See mdb_env_copy.
func (env *Env) Copy(path string) error {
	if env.handle == nil {
		return invalid("mdb_env_copy")
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	return check("mdb_env_copy", C.mdb_env_copy(env.handle, cpath))
}

// CopyFDFlag is CopyFD with copy flags such as CopyCompact.
//
// See mdb_env_copyfd2.
func (env *Env) CopyFDFlag(fd uintptr, flags uint) error {
	if env.handle == nil {
		return invalid("mdb_env_copyfd2")
	}
	rc := C.mdb_env_copyfd2(env.handle, C.mdb_filehandle_t(fd), C.uint(flags))
	return check("mdb_env_copyfd2", rc)
}

// CopyFD writes a consistent copy of the data file to the open file
// descriptor fd.
//
// See mdb_env_copyfd.
func (env *Env) CopyFD(fd uintptr) error {
	if env.handle == nil {
		return invalid("mdb_env_copyfd")
	}
	return check("mdb_env_copyfd", C.mdb_env_copyfd(env.handle, C.mdb_filehandle_t(fd)))
}

// ReaderCheck frees reader slots held by processes that no longer exist and
// returns how many it freed.
//
// See mdb_reader_check.
func (env *Env) ReaderCheck() (int, error) {
	if env.handle == nil {
		return 0, invalid("mdb_reader_check")
	}
	r := C.dlmdbgo_reader_check(env.handle)
	return int(r.n), check("mdb_reader_check", r.rc)
}

// ReaderList passes the reader lock table to fn as text, one line per call:
// first a header naming the columns, then one line per active reader (or a
// single line saying there are none). Listing stops at the first error fn
// returns, and that error is returned.
//
// See mdb_reader_list.
func (env *Env) ReaderList(fn func(string) error) error {
	if fn == nil || env.handle == nil {
		return invalid("mdb_reader_list")
	}
	r := C.dlmdbgo_reader_list(env.handle)
	defer C.free(unsafe.Pointer(r.buf))
	if r.rc != 0 {
		return codeError("mdb_reader_list", r.rc)
	}
	text := mapView(r.buf, r.len)
	for len(text) > 0 {
		end := 0
		for end < len(text) && text[end] != 0 {
			end++
		}
		if err := fn(string(text[:end])); err != nil {
			return err
		}
		if end < len(text) {
			end++
		}
		text = text[end:]
	}
	return nil
}

// CloseDBI releases a database handle. This is rarely needed, and the caller
// must make sure no transaction uses db at the same time.
//
// See mdb_dbi_close.
func (env *Env) CloseDBI(db DBI) {
	if env.handle == nil {
		return
	}
	C.mdb_dbi_close(env.handle, C.MDB_dbi(db))
}

// Check verifies the structure of the whole environment in a fresh
// read-only transaction (see Txn.Check). errors.Is(err, Corrupted) holds
// when a problem is found.
//
// See mdb_txn_check.
func (env *Env) Check() error {
	return env.View(func(txn *Txn) error { return txn.Check() })
}
