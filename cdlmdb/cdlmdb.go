// Package cdlmdb builds the DLMDB C engine that lives in this directory.
//
// It has no Go API of its own. The drop-in package
// github.com/dlmdb/dlmdb-go/lmdb imports it for its side effect: cgo compiles
// every .c file here exactly once per binary, and lmdb/ calls the engine
// through the declarations in lmdb.h. Every symbol the engine exports is
// named dlmdb_*, so a binary may also link github.com/PowerDNS/lmdb-go.
package cdlmdb

/*
#cgo CFLAGS: -O2 -Wall -Wno-unused-function -Wno-format-truncation
#cgo linux LDFLAGS: -lpthread
*/
import "C"
