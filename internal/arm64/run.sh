#!/usr/bin/env bash
# linux/arm64 run of the engine and the binding on an amd64 machine:
# Debian's cross compiler (gcc-aarch64-linux-gnu) builds the C tests and a
# cgo test binary of package lmdb, and qemu-user (qemu-aarch64) runs them.
# Without those tools it says so and does nothing (`make test` needs only
# Go, gcc and make); .ci/run installs them, so CI always runs this.
set -euo pipefail
cd "$(dirname "$0")/../.."
CC_ARM=${CC_ARM:-aarch64-linux-gnu-gcc}
QEMU=${QEMU:-qemu-aarch64}
if ! command -v "$CC_ARM" >/dev/null || ! command -v "$QEMU" >/dev/null; then
	echo "test-arm64: $CC_ARM or $QEMU not installed (apt-get install gcc-aarch64-linux-gnu qemu-user); not run"
	exit 0
fi
export QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}
B=cdlmdb/ctest/build-arm64
mkdir -p "$B"
# the engine as the C tests use it (fault hooks, debug checks), no sanitizers
CFLAGS="-O1 -g -Wall -Wno-unused-function -Wno-format-truncation -DDLMDB_DEBUG -DDLMDB_FAULTS -Icdlmdb"
objs=()
for f in cdlmdb/*.c; do
	o="$B/eng_$(basename "${f%.c}").o"
	"$CC_ARM" $CFLAGS -c "$f" -o "$o"
	objs+=("$o")
done
# C tests that need no stock LMDB; each runs at the default scale
TESTS=${ARM64_TESTS:-"api_test env_test nested_test cursem_test dupfix_test demote_test prefix_test count_test listdup_test inmem_test thread_test wrongthread_test guard_test crash_test order_test convert_test"}
pass=0
fail=0
for t in $TESTS; do
	"$CC_ARM" $CFLAGS -static "cdlmdb/ctest/$t.c" "${objs[@]}" -o "$B/$t" -lpthread
	if (cd cdlmdb/ctest && "$QEMU" "build-arm64/$t" >"build-arm64/$t.log" 2>&1); then
		pass=$((pass + 1))
		echo "arm64 $(tail -n 1 "$B/$t.log")"
	else
		fail=$((fail + 1))
		echo "arm64 FAILED: $t"
		tail -n 20 "$B/$t.log"
	fi
done
echo "arm64 C tests: $pass passed, $fail failed"
# the binding: a cgo test binary of package lmdb, run for its env, txn,
# cursor, counted, in-memory, interrupt and error tests (tests that re-execute
# the binary or run the go tool are left to the amd64 run)
GOARCH=arm64 CGO_ENABLED=1 CC="$CC_ARM" "${GO:-go}" test -c -o "$B/lmdb.test" ./lmdb
(cd lmdb && DLMDBGO_IN_PROCESS=1 "$QEMU" "../$B/lmdb.test" -test.count=1 -test.timeout=20m \
	-test.run '^Test(Env|Txn|Cursor|Put|Get|Del|Count|Rank|KeyRank|InMemory|Load|EnvSetInterrupt|TxnSetInterrupt|CommitReportsCause|ErrorsNameTheMisuse|Batch|ListDup|TwoGoroutines|SharedTxn|WriteTxnCallCount|CopyOverlap)' \
	-test.skip 'TestAPISurface|OtherProcess|AnotherThread|Finalizer')
test "$fail" -eq 0
