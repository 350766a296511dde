// Command startup_bench times opening an existing environment (env_open +
// txn_begin + dbi_open, optionally + one get), with default locking and
// NOLOCK, for our package and stock lmdb-go v1.9.3 in the same run; then
// the same for our package on a plain, a counted (MDB_COUNTED), a
// prefix-compressed (MDB_PREFIX_COMPRESSION) and a counted prefix-compressed
// DBI.
//
//	go run ./cmd/startup_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() {
	ids := []string{"startup"}
	// the table of DLMDB's DBI variants exists only for our package (not in a
	// -tags dlmdb_standin build)
	if _, ok := bench.Lookup("startupvar"); ok {
		ids = append(ids, "startupvar")
	}
	bench.Exit("startup_bench", ids...)
}
