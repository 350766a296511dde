#!/usr/bin/env bash
# Runs lmdb-go v1.9.3's own behavioural tests (its lmdb/*_test.go, package
# lmdb) against this package, in a scratch copy of the module: nothing is
# copied into the repository.
#
# Those test files are white-box tests: besides the public API they use a
# few unexported names of lmdb-go. The scratch copy gets a small file that
# maps them onto ours (operrno, _operrno, getID, errf, errNotOpen, errLogf);
# tests that inspect lmdb-go's private C buffers or helpers
# (TestTxn_Reset_readonly_C_free, val_test.go, msgfunc_test.go,
# bench_test.go) have no counterpart here and are left out.
#
# Usage: lmdb/testdata/run-lmdb-go-tests.sh [go test flags, e.g. -race -v]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
up=$(cd "$root" && go list -m -f '{{.Dir}}' github.com/PowerDNS/lmdb-go)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cp "$root/go.mod" "$root/go.sum" "$tmp/"
mkdir -p "$tmp/lmdb" "$tmp/cdlmdb"
cp "$root"/cdlmdb/*.c "$root"/cdlmdb/*.h "$root"/cdlmdb/*.go "$tmp/cdlmdb/"
for f in "$root"/lmdb/*.go "$root"/lmdb/*.h; do
	case "$f" in *_test.go) ;; *) cp "$f" "$tmp/lmdb/" ;; esac
done
for f in cursor env error lmdb txn; do
	cp "$up/lmdb/${f}_test.go" "$tmp/lmdb/upstream_${f}_test.go"
	chmod u+w "$tmp/lmdb/upstream_${f}_test.go"
done

# Their logger field is our logf; drop the test of their C scratch buffers.
sed -i 's/\berrLogf\b/logf/g' "$tmp/lmdb/upstream_txn_test.go"
python3 - "$tmp/lmdb/upstream_txn_test.go" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
i = s.index("func TestTxn_Reset_readonly_C_free")
j = s.index("\nfunc ", i + 10)
open(p, "w").write(s[:i] + s[j:])
PY

cat > "$tmp/lmdb/upstream_hooks.go" <<'GO'
package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#include "dlmdbgo.h"
*/
import "C"

import "log"

func operrno(op string, rc C.int) error  { return check(op, rc) }
func _operrno(op string, rc int) error   { return check(op, C.int(rc)) }
func (txn *Txn) errf(f string, a ...any) { log.Printf(f, a...) }

// getID asks the engine, bypassing the cached id.
func (txn *Txn) getID() uintptr {
	if txn.gone() {
		return 0
	}
	return uintptr(C.mdb_txn_id(txn.handle))
}

var errNotOpen = errEnvNotOpen
GO

cd "$tmp"
go test -count=1 "$@" ./lmdb
