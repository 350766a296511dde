// Command sample_bench measures sampling every stride-th entry of a large
// MDB_COUNTED database: sequential Cursor.GetRank through one warm cursor
// against a stride scan (MDB_NEXT over every skipped entry), for unique keys
// and for 8 duplicates per key. Sizes are DLMDB's sample_bench parameters:
// 10,000,000 entries, 1,000 samples (stride 10,000), batches of 250,000 per
// write transaction, NOSYNC|NOMETASYNC|NOLOCK, 16 GiB map. Both rows run on
// a plain counted DBI and again with prefix compression (DLMDB's layout).
//
//	go run ./cmd/sample_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() { bench.Exit("sample_bench", "sample") }
