// Command count_bench measures the order-statistics API of MDB_COUNTED
// databases against what a program does without counts: the insert cost of
// counting (uncounted vs counted DBI, unique and DUPSORT), range counts
// (cursor walk vs Txn.CountRange / Txn.CountValues) and rank lookups (walk
// from the first entry vs Cursor.GetRank, Txn.GetRank, Txn.KeyRank). Sizes are
// DLMDB's count_bench parameters: 100,000 keys, 200 queries, span 10,000
// keys, 20 duplicates per key, shuffled inserts. Every row runs on plain DBIs
// and again in DLMDB's layout, prefix compression on in both columns.
//
//	go run ./cmd/count_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() { bench.Exit("count_bench", "count") }
