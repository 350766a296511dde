//go:build dlmdb_wip

package cgofloor

/*
#cgo CFLAGS: -I${SRCDIR}/../../cdlmdb -O2
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lmdb.h"

// Outcome of one C loop: rc is 0 or the first failing LMDB code, where says
// which step failed, ns is the loop time, sum an order-sensitive checksum of
// the values' first 8 bytes and count the number of entries read.
typedef struct {
	int rc;
	int where;
	uint64_t ns;
	uint64_t sum;
	uint64_t count;
} dlmdbFloorResult;

static uint64_t dlmdbFloorNow(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t dlmdbFloorTag(const MDB_val *v) {
	uint64_t t = 0;
	if (v->mv_size >= 8)
		memcpy(&t, v->mv_data, 8); // little endian hosts, as the Go side
	return t;
}

// dlmdbFloorRun opens the environment at path read-only (no TLS, as the Go
// binding does), starts a read txn on the main DB and then times either
// nops random gets of the keys selected by order (scan == 0) or scan full
// cursor passes over the database (scan > 0).
static dlmdbFloorResult dlmdbFloorRun(const char *path, size_t mapsize,
		const unsigned char *keys, size_t keysize,
		const int32_t *order, size_t nops, int scan) {
	dlmdbFloorResult res = {0, 0, 0, 0, 0};
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	MDB_dbi dbi;
	MDB_val k, v;
	uint64_t t0, sum = 0, count = 0;
	size_t i;
	int rc;

	if ((rc = mdb_env_create(&env)) != 0) { res.where = 1; goto done; }
	if ((rc = mdb_env_set_mapsize(env, mapsize)) != 0) { res.where = 2; goto done; }
	if ((rc = mdb_env_open(env, path, MDB_NOTLS | MDB_RDONLY, 0644)) != 0) { res.where = 3; goto done; }
	if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) != 0) { res.where = 4; goto done; }
	if ((rc = mdb_dbi_open(txn, NULL, 0, &dbi)) != 0) { res.where = 5; goto done; }
	if (scan) {
		if ((rc = mdb_cursor_open(txn, dbi, &cur)) != 0) { res.where = 6; goto done; }
		t0 = dlmdbFloorNow();
		for (; scan > 0 && rc == 0; scan--) {
			rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
			while (rc == 0) {
				sum = sum * 31 + dlmdbFloorTag(&v);
				count++;
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
			}
			if (rc == MDB_NOTFOUND)
				rc = 0;
		}
		res.ns = dlmdbFloorNow() - t0;
		if (rc != 0)
			res.where = 7;
	} else {
		t0 = dlmdbFloorNow();
		for (i = 0; i < nops; i++) {
			k.mv_size = keysize;
			k.mv_data = (void *)(keys + (size_t)order[i] * keysize);
			if ((rc = mdb_get(txn, dbi, &k, &v)) != 0) { res.where = 8; break; }
			sum = sum * 31 + dlmdbFloorTag(&v);
			count++;
		}
		res.ns = dlmdbFloorNow() - t0;
	}
done:
	res.rc = rc;
	res.sum = sum;
	res.count = count;
	if (cur) mdb_cursor_close(cur);
	if (txn) mdb_txn_abort(txn);
	if (env) mdb_env_close(env);
	return res;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"github.com/dlmdb/dlmdb-go/bench"
	_ "github.com/dlmdb/dlmdb-go/cdlmdb"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

// Available reports whether the suite is compiled in.
const Available = true

func init() {
	bench.Register(bench.Suite{ID: "cgo", Command: "cgo_bench", Title: "cgo floor: Go binding vs a C loop on our engine", Order: 30, Run: run})
}

// cRun calls the C loop once. keys and order stay reachable for the call.
func cRun(dir string, mapSize int64, keys []byte, order []int32, passes int) (C.dlmdbFloorResult, error) {
	cpath := C.CString(dir)
	defer C.free(unsafe.Pointer(cpath))
	sc := C.int(passes)
	var kp *C.uchar
	var op *C.int32_t
	if len(keys) > 0 {
		kp = (*C.uchar)(unsafe.Pointer(&keys[0]))
	}
	if len(order) > 0 {
		op = (*C.int32_t)(unsafe.Pointer(&order[0]))
	}
	res := C.dlmdbFloorRun(cpath, C.size_t(mapSize), kp, C.size_t(bench.KeySize), op, C.size_t(len(order)), sc)
	if res.rc != 0 {
		return res, fmt.Errorf("C loop failed at step %d: %s (%d)", int(res.where), C.GoString(C.mdb_strerror(res.rc)), int(res.rc))
	}
	return res, nil
}

func run(c *bench.Config) (*bench.Table, error) {
	// A cache-sized database keeps the engine's own cost per call small so
	// that the binding's share shows.
	n := c.Size(20_000, 10_000, 100)
	gets := c.Size(2_000_000, 1_000_000, 100)
	passes := max(1, c.Size(100, 50, 1))
	rounds := c.RoundsOr(9, 9)
	const valSize = 100
	mapSize := int64(n)*400 + 64<<20

	dir, err := c.TempDir("cgo")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	keys := bench.MakeKeys(n)
	keyBuf := make([]byte, 0, n*bench.KeySize)
	for i := 0; i < n; i++ {
		keyBuf = append(keyBuf, keys.At(i)...)
	}
	c.Logf("cgo: loading %s entries", bench.Comma(n))
	if err := load(dir, mapSize, n, valSize, keys); err != nil {
		return nil, err
	}
	order := bench.Perm(n, 5)
	getOrder := make([]int32, gets)
	var getSum, scanSum uint64
	for i := range getOrder {
		getOrder[i] = order[i%n]
		getSum = getSum*31 + bench.Tag(int(getOrder[i]))
	}
	for p := 0; p < passes; p++ {
		for i := 0; i < n; i++ {
			scanSum = scanSum*31 + bench.Tag(i)
		}
	}

	goGets := func(int) (float64, error) {
		return withTxn(dir, mapSize, func(txn *lmdb.Txn, dbi lmdb.DBI) (float64, error) {
			var sum uint64
			t0 := time.Now()
			for _, i := range getOrder {
				v, err := txn.Get(dbi, keys.At(int(i)))
				if err != nil {
					return 0, err
				}
				sum = sum*31 + bench.ValueTag(v)
			}
			el := time.Since(t0)
			if sum != getSum {
				return 0, fmt.Errorf("Go gets: checksum %x, want %x", sum, getSum)
			}
			return float64(el.Nanoseconds()) / float64(gets), nil
		})
	}
	cGets := func(int) (float64, error) {
		res, err := cRun(dir, mapSize, keyBuf, getOrder, 0)
		if err != nil {
			return 0, err
		}
		if uint64(res.sum) != getSum || int(res.count) != gets {
			return 0, fmt.Errorf("C gets: %d found, checksum %x; want %d, %x", uint64(res.count), uint64(res.sum), gets, getSum)
		}
		return float64(res.ns) / float64(gets), nil
	}
	goScan := func(int) (float64, error) {
		return withTxn(dir, mapSize, func(txn *lmdb.Txn, dbi lmdb.DBI) (float64, error) {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return 0, err
			}
			defer cur.Close()
			var sum uint64
			cnt := 0
			t0 := time.Now()
			for p := 0; p < passes; p++ {
				_, v, err := cur.Get(nil, nil, lmdb.First)
				for err == nil {
					sum = sum*31 + bench.ValueTag(v)
					cnt++
					_, v, err = cur.Get(nil, nil, lmdb.Next)
				}
				if !lmdb.IsNotFound(err) {
					return 0, err
				}
			}
			el := time.Since(t0)
			if cnt != n*passes || sum != scanSum {
				return 0, fmt.Errorf("Go scan: %d entries, checksum %x; want %d, %x", cnt, sum, n*passes, scanSum)
			}
			return float64(el.Nanoseconds()) / float64(cnt), nil
		})
	}
	cScan := func(int) (float64, error) {
		res, err := cRun(dir, mapSize, nil, nil, passes)
		if err != nil {
			return 0, err
		}
		if uint64(res.sum) != scanSum || int(res.count) != n*passes {
			return 0, fmt.Errorf("C scan: %d entries, checksum %x; want %d, %x", uint64(res.count), uint64(res.sum), n*passes, scanSum)
		}
		return float64(res.ns) / float64(res.count), nil
	}

	goSide, cSide := "Go → lmdb (RawRead)", "C loop → engine"
	t := &bench.Table{Sides: []string{goSide, cSide}, Diff: true}
	type row struct {
		name, size, unit string
		g, cl            func(int) (float64, error)
	}
	rows := []row{
		{"random get: Txn.Get vs mdb_get", fmt.Sprintf("%s gets of %s", bench.Comma(gets), bench.Comma(n)), "ns/get", goGets, cGets},
		{"full scans: Cursor.Get(Next) vs mdb_cursor_get(MDB_NEXT)", fmt.Sprintf("%d passes over %s × (16 B key, %d B value)", passes, bench.Comma(n), valSize), "ns/entry", goScan, cScan},
	}
	for _, r := range rows {
		if !c.WantRow(r.name) {
			continue
		}
		c.Logf("cgo: %s", r.name)
		st, err := bench.Alternate(rounds, []bench.Side{{Name: goSide, Measure: r.g}, {Name: cSide, Measure: r.cl}}, func(s string) { c.Logf("  %s", s) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		t.Add(r.name, r.size, r.unit, st...)
	}
	t.Notes = []string{
		fmt.Sprintf("Both sides read the same environment of our engine; the C side is one cgo call that loops in C and times itself with CLOCK_MONOTONIC. The difference column is the per-call cost of the Go binding (cgo transition, argument handling, slice construction). %d alternating rounds.", rounds),
	}
	return t, nil
}

// load writes n sequential entries with our package and verifies them.
func load(dir string, mapSize int64, n, valSize int, keys bench.Keys) error {
	env, err := lmdb.NewEnv()
	if err != nil {
		return err
	}
	defer env.Close()
	if err := env.SetMapSize(mapSize); err != nil {
		return err
	}
	if err := env.Open(dir, lmdb.NoSync|lmdb.NoMetaSync, 0o644); err != nil {
		return err
	}
	val := make([]byte, valSize)
	for lo := 0; lo < n; lo += 50_000 {
		err := env.Update(func(txn *lmdb.Txn) error {
			dbi, err := txn.OpenRoot(0)
			if err != nil {
				return err
			}
			for i := lo; i < min(lo+50_000, n); i++ {
				bench.FillValue(val, i)
				if err := txn.Put(dbi, keys.At(i), val, 0); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := env.Sync(true); err != nil {
		return err
	}
	return env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		if st.Entries != uint64(n) {
			return fmt.Errorf("cgo load: %d entries, want %d", st.Entries, n)
		}
		for i := 0; i < n; i += 101 {
			v, err := txn.Get(dbi, keys.At(i))
			if err != nil {
				return err
			}
			bench.FillValue(val, i)
			if string(v) != string(val) {
				return errors.New("cgo load: value read back differs")
			}
		}
		return nil
	})
}

// withTxn opens the environment (outside the caller's timer), runs fn in a
// RawRead read transaction on the main DB and closes everything.
func withTxn(dir string, mapSize int64, fn func(*lmdb.Txn, lmdb.DBI) (float64, error)) (float64, error) {
	env, err := lmdb.NewEnv()
	if err != nil {
		return 0, err
	}
	defer env.Close()
	if err := env.SetMapSize(mapSize); err != nil {
		return 0, err
	}
	if err := env.Open(dir, lmdb.Readonly, 0o644); err != nil {
		return 0, err
	}
	txn, err := env.BeginTxn(nil, lmdb.Readonly)
	if err != nil {
		return 0, err
	}
	defer txn.Abort()
	txn.RawRead = true
	dbi, err := txn.OpenRoot(0)
	if err != nil {
		return 0, err
	}
	return fn(txn, dbi)
}
