// Package cgofloor measures what the Go binding costs per call: the same
// read workload through github.com/dlmdb/dlmdb-go/lmdb (one cgo call per
// operation) and as a plain C loop over the engine's mdb_get /
// mdb_cursor_get, entered once through cgo. Importing the package registers
// the "cgo" suite with the bench harness (cmd/cgo_bench, cmd/benchall).
package cgofloor
