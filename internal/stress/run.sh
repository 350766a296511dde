#!/usr/bin/env bash
# make stress: long randomised runs that `make test` keeps short.  Not part of
# `make test`.  Every part draws fresh seeds (DLMDB_TEST_SEED=random), runs
# without the race detector so the budget goes into operations, and prints one
# summary line; a failing part prints its log (with the seed that reproduces
# it) and the script exits non-zero after running the rest.
#
#   STRESS_SCALE     multiplier of the differential budgets (default 20:
#                    about 25 million operations against stock LMDB)
#   STRESS_ROUNDS    ping-pong rounds (default 200)
#   STRESS_FUZZTIME  time per fuzz target (default 2m)
set -uo pipefail
cd "$(dirname "$0")/../.."
GO=${GO:-go}
scale=${STRESS_SCALE:-20}
rounds=${STRESS_ROUNDS:-200}
fuzztime=${STRESS_FUZZTIME:-2m}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
failed=0

# part NAME PKG -- test args...: runs one go test, prints a line.
part() {
	local name=$1 pkg=$2
	shift 2
	local out="$log/$name.txt" t0=$SECONDS rc
	DLMDB_TEST_SEED=random "$GO" test -count=1 -timeout 0 "$@" "$pkg" >"$out" 2>&1
	rc=$?
	# a pattern that matched nothing is a broken stress run, not a pass
	if grep -q 'no tests to run\|no fuzz tests to fuzz' "$out"; then rc=1; fi
	local secs=$((SECONDS - t0)) what
	what=$(summary "$name" "$out")
	if [ $rc -eq 0 ]; then
		printf 'stress %-22s PASS  %5ds  %s\n' "$name" "$secs" "$what"
	else
		printf 'stress %-22s FAIL  %5ds  %s\n' "$name" "$secs" "$what"
		sed 's/^/    /' "$out" | tail -n 80
		failed=1
	fi
}

# summary NAME FILE: the figures worth one line, taken from the test's log.
summary() {
	local f=$2
	case $1 in
	differential*)
		# "ours vs stock: N sequences, M operations" per test, plus the seeds
		awk '/ours.* vs stock.*: [0-9]+ sequences, [0-9]+ operations/ {
			for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^sequences/) s += $i; if ($(i+1) ~ /^operations/) o += $i }
		}
		END { printf "%d operations in %d sequences", o, s }' "$f"
		;;
	pingpong)
		grep -Eo '[0-9]+ rounds[^"]*' "$f" | tail -n 1 | tr -d '\n'
		;;
	fuzz*)
		grep -Eo 'elapsed: [^,]+, execs: [0-9]+' "$f" | tail -n 1 | sed 's/^/fuzzing /' | tr -d '\n'
		;;
	esac
	local seeds
	seeds=$(grep -Eo 'seed [0-9]+' "$f" | awk '!seen[$2]++ { printf " %s", $2 }')
	[ -z "$seeds" ] || printf '; seeds%s' "$seeds"
}

export DLMDB_TEST_SCALE=$scale
part differential ./internal/difftest -v -run '^(TestDifferential|TestDifferentialDupSort)$'
part differential-counted ./internal/difftest -v -run '^TestDifferentialCounted(DupSort)?$'
part differential-writemap ./internal/difftest -v -run '^TestDifferentialWriteMap(DupSort)?$'
part differential-prefix ./internal/difftest -v -run '^TestDifferentialPrefix(Counted)?(DupSort)?$'
# cursor reuse: against stock, and (the tag's switch) against our root-first search
part differential-reuse ./internal/difftest -v -tags dlmdb_reuseswitch \
	-run '^(TestDifferentialCursorReuse|TestCursorReuseRootFirst)'
export DLMDB_TEST_SCALE=1
DLMDB_PINGPONG_ROUNDS=$rounds part pingpong ./internal/difftest -v -run '^TestPingPong'

for target in internal/difftest:FuzzCorruptFile internal/difftest:FuzzCorruptStockFile \
	lmdb:FuzzPutGet lmdb:FuzzCursorOps lmdb:FuzzCounted; do
	pkg=./${target%%:*} fn=${target##*:}
	part "fuzz-$fn" "$pkg" -run '^$' -fuzz "^$fn\$" -fuzztime "$fuzztime"
done
exit $failed
