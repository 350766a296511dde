// Command cgo_bench reports what a Go call into our engine costs: random
// gets and full cursor scans through github.com/dlmdb/dlmdb-go/lmdb against
// the same loops written in C and entered once through cgo.
//
//	go run ./cmd/cgo_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import (
	"github.com/dlmdb/dlmdb-go/bench"
	_ "github.com/dlmdb/dlmdb-go/bench/cgofloor" // registers the "cgo" suite
)

func main() { bench.Exit("cgo_bench", "cgo") }
