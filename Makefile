# dlmdb-go: the two commands are `make test` and `make bench`.
GO       ?= go
# Extra flags for the Go test run, e.g. `make test GOTESTFLAGS=-v`.
GOTESTFLAGS ?=
# Scale of the randomised differential tests (1 = the default budget).
DLMDB_TEST_SCALE ?= 1
export DLMDB_TEST_SCALE

.PHONY: test test-c test-go test-asan test-upstream test-arm64 bench bench-quick stress

## test: everything — the C engine under ASan+UBSan, the Go side under -race,
## the Go-driven engine tests under -asan, lmdb-go v1.9.3's own behavioural
## tests run against our lmdb package, then the linux/arm64 run (when the
## cross compiler and qemu-user are installed; .ci/run installs them).
test: test-c test-go test-asan test-upstream test-arm64

## test-c: C-level engine tests built with -fsanitize=address,undefined.
test-c:
	$(GO) mod download github.com/PowerDNS/lmdb-go
	$(MAKE) -C cdlmdb/ctest run

## test-go: vet plus every Go test with the race detector on; then the
## fault-injection test of package lmdb, which needs the engine built with
## its commit I/O hook (-tags dlmdb_faults, see cdlmdb/fault.c); then cursor
## reuse against the root-first search, which needs the run-time switch
## (-tags dlmdb_reuseswitch, see cdlmdb/reuse_switch.go), and the benchmark
## commands at tiny sizes in that build, which adds cmd/cursor_reuse_bench.
test-go:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 45m $(GOTESTFLAGS) ./...
	$(GO) vet -tags dlmdb_faults ./cdlmdb ./lmdb
	$(GO) test -race -count=1 -tags dlmdb_faults -run '^TestFault' $(GOTESTFLAGS) ./lmdb
	$(GO) vet -tags dlmdb_stockonly ./internal/difftest
	$(GO) vet -tags dlmdb_reuseswitch ./cdlmdb ./bench ./internal/difftest ./cmd/cursor_reuse_bench
	$(GO) test -race -count=1 -tags dlmdb_reuseswitch -run '^TestCursorReuse' $(GOTESTFLAGS) ./internal/difftest
	$(GO) test -race -count=1 -tags dlmdb_reuseswitch -run '^TestCommandsTinyAndReadme$$' $(GOTESTFLAGS) ./bench

## test-asan: the Go-driven engine tests again, with the C engine (ours and
## stock) built under AddressSanitizer, leak detection on. One lmdb test
## closes an Env under a live read txn and cursor on purpose: the binding
## makes both inert but cannot free their C memory any more, so that test
## runs on its own with leak detection off (so does TestSetInterruptAfterEnvClose).
ASAN_LEAKY = ^(TestEnvCloseUnderOpenTxn|TestSetInterruptAfterEnvClose)$$
test-asan:
	ASAN_OPTIONS=detect_leaks=1 $(GO) test -asan -count=1 -timeout 30m -skip '$(ASAN_LEAKY)' ./lmdb ./lmdbscan ./internal/difftest
	ASAN_OPTIONS=detect_leaks=0 $(GO) test -asan -count=1 -run '$(ASAN_LEAKY)' ./lmdb

## test-upstream: lmdb-go's own tests (from the module cache) against our lmdb/.
test-upstream:
	bash lmdb/testdata/run-lmdb-go-tests.sh -race -count=1

## test-arm64: C tests and the binding's core tests built for linux/arm64
## with aarch64-linux-gnu-gcc and run under qemu-aarch64 (internal/arm64).
test-arm64:
	GO=$(GO) bash internal/arm64/run.sh

## bench: run every benchmark at the documented sizes and rewrite README tables
## (the tag adds the cursor reuse switch that cmd/cursor_reuse_bench needs).
bench:
	$(GO) run -tags dlmdb_reuseswitch ./cmd/benchall -readme README.md

## bench-quick: reduced sizes (about two minutes on 2 cores), still rewrites README tables.
bench-quick:
	$(GO) run -tags dlmdb_reuseswitch ./cmd/benchall -quick -readme README.md

## stress: long randomised runs, not part of `make test` (about 20 minutes):
## the differential against stock over ~25M operations on fresh seeds
## (prefix and cursor reuse included), 200 ping-pong rounds, and each fuzz
## target for STRESS_FUZZTIME (2m); one summary line each.  STRESS_SCALE / STRESS_ROUNDS / STRESS_FUZZTIME resize it.
stress:
	GO=$(GO) bash internal/stress/run.sh
