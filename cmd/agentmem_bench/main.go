// Command agentmem_bench runs the agent-memory workload (64 agents, 200-byte
// memories with metadata; insert, point read, newest-K per agent, overwrite,
// 90/10 mix; durable and fast modes; two base sizes) on our package and on
// stock lmdb-go v1.9.3, reporting p50 latencies.
//
//	go run ./cmd/agentmem_bench [-quick] [-scale f] [-rounds n] [-json] [-readme README.md]
package main

import "github.com/dlmdb/dlmdb-go/bench"

func main() { bench.Exit("agentmem_bench", "agentmem") }
