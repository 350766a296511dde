// Command inmem_bench is DLMDB's inmem_bench on this module: 200,000
// entries (16-byte big-endian keys, 64-byte values) written in one write
// txn including its commit, then read back with one get per entry, into a
// fresh file-backed environment (fsync at commit) and a fresh
// lmdb.InMemory one (MDB_INMEMORY), NOLOCK, 76,800,000-byte map,
// alternating rounds; both sides must return the model's checksum. A second
// table times a full cursor scan in a plain env.View against the same View
// armed for context cancellation (context.AfterFunc registered and stopped).
//
//	go run ./cmd/inmem_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() { bench.Exit("inmem_bench", "inmem", "inmemscan") }
