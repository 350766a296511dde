// Command compress_bench compares a plain DBI with a prefix-compressed one
// (lmdb.PrefixCompression, DLMDB's MDB_PREFIX_COMPRESSION) on DLMDB's
// compress_bench workload, for unique keys and for a DUPSORT DBI with 20
// duplicates per key: shuffled insert, random updates, shuffled deletes and
// their reinsert, random reads and range scans cold (reopened env) and warm,
// and the data file sizes. Both layouts run alternately in one process.
// Sizes are DLMDB's: 1,000,000 entries (50,000 keys × 20 for DUPSORT),
// 500,000 updates / deletes / reads, 1,000 scans of up to 256 entries,
// 64-byte values, NOLOCK, 4 GiB map.
//
//	go run ./cmd/compress_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() { bench.Exit("compress_bench", "compress") }
