// Package difftest holds the engine-level test suite of dlmdb-go: differential
// random-operation runs of our drop-in lmdb package against stock LMDB (through
// github.com/PowerDNS/lmdb-go), data-file compatibility in both directions,
// crash safety with killed child processes, bad-input handling and
// concurrency. Everything lives in _test.go files except demotehook.go, which
// wraps two test hooks of the C engine (cgo is not allowed in test files);
// this file only names the package.
package difftest
