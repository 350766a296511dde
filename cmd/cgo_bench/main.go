// Command cgo_bench reports what a Go call into our engine costs: random
// gets and a full cursor scan through github.com/dlmdb/dlmdb-go/lmdb against
// the same loops written in C and entered once through cgo.
//
//	go run ./cmd/cgo_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import (
	"fmt"
	"os"

	"github.com/dlmdb/dlmdb-go/bench"
	"github.com/dlmdb/dlmdb-go/bench/cgofloor"
)

func main() {
	if !cgofloor.Available {
		fmt.Fprintln(os.Stderr, "cgo_bench: not compiled in: build with -tags dlmdb_wip while our binding is in progress")
		os.Exit(1)
	}
	bench.Exit("cgo_bench", "cgo")
}
