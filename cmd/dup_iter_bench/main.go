// Command dup_iter_bench is DLMDB's dup_iter_bench on this module: a
// prefix-compressed DUPSORT DBI of 20,000 keys × 20 variable-width
// duplicates, read in 5 passes either with one Cursor.Get(NextDup) per value
// or with one Cursor.ListDupInto (mdb_cursor_list_dup) per key, RawRead,
// alternating rounds; ns per value. 512 MiB map.
//
//	go run ./cmd/dup_iter_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() { bench.Exit("dup_iter_bench", "dupiter") }
