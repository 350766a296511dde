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
package main

import (
	"github.com/dlmdb/dlmdb-go/bench"
	_ "github.com/dlmdb/dlmdb-go/bench/cgofloor" // registers the "cgo" suite
)

func main() { bench.Exit("benchall") }
