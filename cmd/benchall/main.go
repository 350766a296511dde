// Command benchall runs every benchmark of dlmdb-go in one process and
// prints their tables; with -readme it rewrites the generated tables in
// README.md between <!-- bench:ID --> and <!-- /bench:ID --> markers.
//
//	make bench        # go run ./cmd/benchall -readme README.md
//	make bench-quick  # the same with -quick (about two minutes on 2 cores)
//
// Flags: -quick, -scale f, -rounds n, -json, -readme path, -only id,id,
// -tmpdir dir. A failed verification in any benchmark exits non-zero and
// leaves README.md untouched.
//
// The cursor reuse benchmark (cmd/cursor_reuse_bench, README marker
// cursorreuse) times the engine's root-first search against cursor reuse,
// which needs the run-time switch of the build tag dlmdb_reuseswitch: the
// make targets pass it (go run -tags dlmdb_reuseswitch ./cmd/benchall);
// built without it, benchall runs the other benchmarks and says so.
package main

import (
	"fmt"
	"os"

	"github.com/dlmdb/dlmdb-go/bench"
	_ "github.com/dlmdb/dlmdb-go/bench/cgofloor" // registers the "cgo" suite
	"github.com/dlmdb/dlmdb-go/cdlmdb"
)

func main() {
	if !cdlmdb.ReuseSwitch {
		fmt.Fprintln(os.Stderr, "benchall: built without -tags dlmdb_reuseswitch, so the cursor reuse benchmark "+
			"(cmd/cursor_reuse_bench) is left out; make bench and make bench-quick pass the tag")
	}
	bench.Exit("benchall")
}
