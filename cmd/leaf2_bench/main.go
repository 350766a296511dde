// Command leaf2_bench is DLMDB's leaf2_bench table on this module: 256 keys
// × 4,096 8-byte duplicates (1,048,576 values) in a
// DUPSORT|COUNTED|PREFIX_COMPRESSION DBI and in the same with DUPFIXED,
// 4 alternating rounds of the whole sequence on a fresh environment: append
// in 65,536-value txns, footprint, 100,000 GET_BOTH lookups, 3 passes of
// NEXT_DUP / ListDupInto / ListDupFixed / GET_MULTIPLE scans, interior
// inserts and their exact delete, and the MDB_MULTIPLE put ceiling. 1 GiB map.
//
//	go run ./cmd/leaf2_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() { bench.Exit("leaf2_bench", "leaf2") }
