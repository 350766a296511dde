// Package lmdb is the DLMDB storage engine behind the API of
// github.com/PowerDNS/lmdb-go/lmdb (v1.9.3).
//
// Programs written for lmdb-go switch to this package by changing the import
// path only: the types, methods, constants and error values keep their names,
// signatures and meaning, and database files written by stock LMDB open here
// (and the other way round) as long as no DLMDB-only database flag is used.
// The engine is compiled from the C sources in ../cdlmdb; its link names are
// prefixed with dlmdb_, so both engines can live in one binary.
//
// # Objects
//
// An [Env] is one memory-mapped database file with its lock file. It holds
// the unnamed root database and, after [Env.SetMaxDBs], named databases,
// each addressed by a [DBI] handle obtained from [Txn.OpenDBI] or
// [Txn.OpenRoot]. Every read or write happens inside a [Txn]; a [Cursor]
// walks one database inside one transaction.
//
// Read-only transactions see the snapshot that was current when they began
// and never block. Write transactions are serialized: beginning one waits
// until the previous writer has finished. A write transaction can run nested
// transactions ([Txn.Sub]) that commit into or roll back from their parent.
//
// # Managed transactions
//
// [Env.View], [Env.Update], [Env.UpdateLocked], [Env.RunTxn] and [Txn.Sub]
// begin a transaction, call a function with it and end it: commit when the
// function returns nil, abort otherwise. Prefer them to [Env.BeginTxn], whose
// transactions must be ended explicitly:
//
//	txn, err := env.BeginTxn(nil, lmdb.Readonly)
//	if err != nil {
//		return err
//	}
//	defer txn.Abort() // harmless after Commit
//
// A Txn that becomes unreachable while still open is aborted by a finalizer
// (and reported through the standard logger unless [Txn.Pooled] is set), but
// a leaked reader pins old pages and makes the file grow until then.
// Readers left behind by crashed processes are released by
// [Env.ReaderCheck]; calling it when a program starts is a good habit.
//
// # Threads
//
// Every environment is opened with [NoTLS], so a read transaction may move
// between goroutines (with the usual synchronisation). A write transaction,
// however, is tied to the OS thread that began it: begin it on a goroutine
// locked with runtime.LockOSThread and use it only from that goroutine.
// [Env.Update] does the locking itself; [Env.UpdateLocked], [Env.RunTxn] and
// [Env.BeginTxn] expect the caller to have done it. A goroutine that does not
// know whether it is locked should hand its writes to one that does (see the
// examples).
//
// # Memory
//
// By default every []byte returned by a Get is a fresh Go copy. With
// [Txn.RawRead] set, Get returns slices that point straight into the memory
// map: no copy and no allocation, but the slices are read-only and only valid
// until the transaction ends (or, in a write transaction, until the next
// write).
//
// # Errors
//
// Errors from the engine are *[OpError] values naming the C function and
// carrying an [Errno] (an LMDB code such as [NotFound]) or a syscall.Errno.
// Test them with errors.Is (errors.Is(err, lmdb.NotFound),
// errors.Is(err, syscall.EINVAL), errors.Is(err, fs.ErrNotExist)) or with the
// helpers [IsNotFound], [IsMapFull], [IsErrno] and friends, which also look
// through wrapping. Using a transaction or cursor after it ended returns an
// error ([BadTxn] or EINVAL) instead of touching freed memory.
package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb -O2
#cgo noescape dlmdbgo_version
#cgo nocallback dlmdbgo_version
#include "dlmdbgo.h"
*/
import "C"

import (
	_ "github.com/dlmdb/dlmdb-go/cdlmdb" // compiles the engine once per binary
)

// Version reports the version of the C engine as numbers and as the
// engine's version string.
//
// See mdb_version.
func Version() (major, minor, patch int, s string) {
	v := C.dlmdbgo_version()
	return int(v.major), int(v.minor), int(v.patch), C.GoString(v.text)
}

// VersionString reports the engine's version string.
//
// See mdb_version.
func VersionString() string {
	_, _, _, s := Version()
	return s
}
