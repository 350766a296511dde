//go:build dlmdb_faults

package cdlmdb

// Built with -tags dlmdb_faults (tests only), the engine routes the write
// and sync calls of a commit through fault.c, where a test can make them
// fail; package lmdb's fault hooks (faults.go there) arm it.  Without the
// tag the engine calls the system directly.

/*
#cgo CFLAGS: -DDLMDB_FAULTS
*/
import "C"
