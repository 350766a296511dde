// Command cursor_reuse_bench times puts through one retained cursor with the
// engine's root-first search against cursor reuse (cdlmdb/search.c) on
// DLMDB's cursor_reuse_bench workload: 300,000 entries of 256-byte keys and
// 64-byte values in ordinary counted, prefix counted and prefix counted
// DUPSORT trees; 200,000 puts per case, forward and backward with stride
// 257, random across the tree, and forward, backward and random over the
// first 8 keys; 5 alternating before/after pairs. Both paths are in one
// binary only when it is built with the run-time switch:
//
//	go run -tags dlmdb_reuseswitch ./cmd/cursor_reuse_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import (
	"fmt"
	"os"

	"github.com/dlmdb/dlmdb-go/bench"
	"github.com/dlmdb/dlmdb-go/cdlmdb"
)

func main() {
	if !cdlmdb.ReuseSwitch {
		fmt.Fprintln(os.Stderr, "cursor_reuse_bench: this binary has no cursor reuse switch, so it cannot time the root-first path;\n"+
			"build it with the tag: go run -tags dlmdb_reuseswitch ./cmd/cursor_reuse_bench")
		os.Exit(2)
	}
	bench.Exit("cursor_reuse_bench", "cursorreuse")
}
