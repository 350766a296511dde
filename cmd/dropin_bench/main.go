// Command dropin_bench compares our drop-in package with stock lmdb-go v1.9.3
// on plain databases in one process: sequential and random puts, random
// gets, full and short range scans, durable single-put commits.
//
//	go run ./cmd/dropin_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() { bench.Exit("dropin_bench", "dropin") }
