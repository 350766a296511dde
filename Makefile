# dlmdb-go: the two commands are `make test` and `make bench`.
GO       ?= go
# Extra flags for the Go test run, e.g. `make test GOTESTFLAGS=-v`.
GOTESTFLAGS ?=
# Scale of the randomised differential tests (1 = the default budget).
DLMDB_TEST_SCALE ?= 1
export DLMDB_TEST_SCALE

.PHONY: test test-c test-go test-upstream bench bench-quick

## test: everything — the C engine under ASan+UBSan, then the Go side under -race,
## then lmdb-go v1.9.3's own behavioural tests run against our lmdb package.
test: test-c test-go test-upstream

## test-c: C-level engine tests built with -fsanitize=address,undefined.
test-c:
	$(MAKE) -C cdlmdb/ctest run

## test-go: vet plus every Go test with the race detector on.
test-go:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 45m $(GOTESTFLAGS) ./...

## test-upstream: lmdb-go's own tests (from the module cache) against our lmdb/.
test-upstream:
	bash lmdb/testdata/run-lmdb-go-tests.sh -race -count=1

## bench: run every benchmark at the documented sizes and rewrite README tables.
bench:
	$(GO) run ./cmd/benchall -readme README.md

## bench-quick: reduced sizes (about two minutes on 2 cores), still rewrites README tables.
bench-quick:
	$(GO) run ./cmd/benchall -quick -readme README.md
