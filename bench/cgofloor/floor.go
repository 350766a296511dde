package cgofloor

/*
#cgo CFLAGS: -I${SRCDIR}/../../cdlmdb -O2
#include "lmdb.h"
#define FLOOR_RESULT dlmdbFloorOursResult
#define FLOOR_RUN dlmdbFloorOursRun
#define FLOOR_ERR dlmdbFloorOursErr
#include "floorloop.h"
*/
import "C"

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	dlmdb "github.com/dlmdb/dlmdb-go"
	"github.com/dlmdb/dlmdb-go/bench"
	_ "github.com/dlmdb/dlmdb-go/cdlmdb"
)

//go:generate sh gen_stock.sh

// batchSize is the GetBatch size of the batched scan row.
const batchSize = 256

func init() {
	bench.Register(bench.Suite{ID: "cgo", Command: "cgo_bench", Title: "cgo floor: Go binding vs a C loop on the same engine", Order: 30, Run: run})
}

// loopResult is what one timed loop saw, on either side.
type loopResult struct {
	sum, count uint64
	el         time.Duration
}

// cArgs converts the Go inputs of a C loop; keys and order stay reachable
// (and unmoved) for the duration of the call.
func cArgs(dir string, keys []byte, order []int32) (*C.char, *C.uchar, *C.int32_t) {
	var kp *C.uchar
	var op *C.int32_t
	if len(keys) > 0 {
		kp = (*C.uchar)(unsafe.Pointer(&keys[0]))
	}
	if len(order) > 0 {
		op = (*C.int32_t)(unsafe.Pointer(&order[0]))
	}
	return C.CString(dir), kp, op
}

// oursC runs the C loop on our engine: gets of order (passes == 0) or
// passes full scans.
func oursC(dir string, mapSize int64, keys []byte, order []int32, passes int) (loopResult, error) {
	cpath, kp, op := cArgs(dir, keys, order)
	defer C.free(unsafe.Pointer(cpath))
	res := C.dlmdbFloorOursRun(cpath, C.size_t(mapSize), kp, C.size_t(bench.KeySize), op, C.size_t(len(order)), C.int(passes))
	if res.rc != 0 {
		return loopResult{}, fmt.Errorf("C loop on our engine failed at step %d: %s (%d)", int(res.where), C.GoString(C.dlmdbFloorOursErr(res.rc)), int(res.rc))
	}
	return loopResult{sum: uint64(res.sum), count: uint64(res.count), el: time.Duration(res.ns)}, nil
}

// engineSide bundles one engine's Go and C loops.
type engineSide struct {
	name   string
	load   func(dir string, mapSize int64, n, valSize int, keys bench.Keys) error
	goGets func(dir string, mapSize int64, keys bench.Keys, order []int32) (loopResult, error)
	goScan func(dir string, mapSize int64, passes int) (loopResult, error)
	cLoop  func(dir string, mapSize int64, keys []byte, order []int32, passes int) (loopResult, error)
}

func run(c *bench.Config) (*bench.Table, error) {
	// A cache-sized database keeps the engine's own cost per call small so
	// that the binding's share shows.
	n := c.Size(20_000, 10_000, 100)
	gets := c.Size(2_000_000, 1_000_000, 100)
	passes := max(1, c.Size(100, 50, 1))
	rounds := c.RoundsOr(9, 9)
	const valSize = 100
	mapSize := int64(n)*2000 + 256<<20

	keys := bench.MakeKeys(n)
	keyBuf := make([]byte, 0, n*bench.KeySize)
	for i := 0; i < n; i++ {
		keyBuf = append(keyBuf, keys.At(i)...)
	}
	perm := bench.Perm(n, 5)
	getOrder := make([]int32, gets)
	var getSum, scanSum uint64
	for i := range getOrder {
		getOrder[i] = perm[i%n]
		getSum = getSum*31 + bench.Tag(int(getOrder[i]))
	}
	for p := 0; p < passes; p++ {
		for i := 0; i < n; i++ {
			scanSum = scanSum*31 + bench.Tag(i)
		}
	}
	check := func(what string, r loopResult, err error, count int, sum uint64) (float64, error) {
		if err != nil {
			return 0, err
		}
		if r.count != uint64(count) || r.sum != sum {
			return 0, fmt.Errorf("%s: %d entries, checksum %x; want %d, %x", what, r.count, r.sum, count, sum)
		}
		return float64(r.el.Nanoseconds()) / float64(count), nil
	}

	engines := []engineSide{
		{"ours", oursLoad, oursGets, oursScan, oursC},
		{"lmdb-go", stockLoad, stockGets, stockScan, stockC},
	}
	goSide, cSide := "Go binding (RawRead)", "C loop"
	t := &bench.Table{Sides: []string{goSide, cSide}, Diff: true}
	for _, e := range engines {
		dir, err := c.TempDir("cgo")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		c.Logf("cgo: loading %s entries (%s)", bench.Comma(n), e.name)
		if err := e.load(dir, mapSize, n, valSize, keys); err != nil {
			return nil, fmt.Errorf("%s: %w", e.name, err)
		}
		e := e
		type row struct {
			name, size, unit string
			g, cl            func(int) (float64, error)
		}
		rows := []row{
			{fmt.Sprintf("%s: random get, Txn.Get vs mdb_get", e.name), fmt.Sprintf("%s gets of %s", bench.Comma(gets), bench.Comma(n)), "ns/get",
				func(int) (float64, error) {
					r, err := e.goGets(dir, mapSize, keys, getOrder)
					return check("Go gets", r, err, gets, getSum)
				},
				func(int) (float64, error) {
					r, err := e.cLoop(dir, mapSize, keyBuf, getOrder, 0)
					return check("C gets", r, err, gets, getSum)
				}},
			{fmt.Sprintf("%s: full scans, Cursor.Get(Next) vs mdb_cursor_get(MDB_NEXT)", e.name), fmt.Sprintf("%d passes over %s × (16 B key, %d B value)", passes, bench.Comma(n), valSize), "ns/entry",
				func(int) (float64, error) {
					r, err := e.goScan(dir, mapSize, passes)
					return check("Go scan", r, err, n*passes, scanSum)
				},
				func(int) (float64, error) {
					r, err := e.cLoop(dir, mapSize, nil, nil, passes)
					return check("C scan", r, err, n*passes, scanSum)
				}},
		}
		if e.name == "ours" {
			// Batched Go scans against the same C loop (MDB_NEXT per entry).
			cScan := func(int) (float64, error) {
				r, err := e.cLoop(dir, mapSize, nil, nil, passes)
				return check("C scan", r, err, n*passes, scanSum)
			}
			scanSize := fmt.Sprintf("%d passes over %s × (16 B key, %d B value)", passes, bench.Comma(n), valSize)
			rows = append(rows,
				row{fmt.Sprintf("ours: full scans, Cursor.GetBatch(%d) vs mdb_cursor_get(MDB_NEXT)", batchSize), scanSize, "ns/entry",
					func(int) (float64, error) {
						r, err := oursBatchScan(dir, mapSize, passes, batchSize)
						return check("Go GetBatch scan", r, err, n*passes, scanSum)
					}, cScan},
				row{"ours: full scans, dlmdb.Scan iterator vs mdb_cursor_get(MDB_NEXT)", scanSize, "ns/entry",
					func(int) (float64, error) {
						r, err := oursIterScan(dir, mapSize, passes)
						return check("Go dlmdb.Scan", r, err, n*passes, scanSum)
					}, cScan},
				row{fmt.Sprintf("ours: random get, Cursor.GetMany(%d keys) vs mdb_get", batchSize),
					fmt.Sprintf("%s gets of %s", bench.Comma(gets), bench.Comma(n)), "ns/get",
					func(int) (float64, error) {
						r, err := oursManyGets(dir, mapSize, keys, getOrder, batchSize)
						return check("Go GetMany gets", r, err, gets, getSum)
					},
					func(int) (float64, error) {
						r, err := e.cLoop(dir, mapSize, keyBuf, getOrder, 0)
						return check("C gets", r, err, gets, getSum)
					}})
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
	}
	t.Notes = []string{
		fmt.Sprintf("Rows \"ours\" use github.com/dlmdb/dlmdb-go/lmdb and our engine; rows \"lmdb-go\" use stock lmdb-go v1.9.3 and its LMDB. The C side is one cgo call that loops over the engine's own mdb_get / mdb_cursor_get and times itself with CLOCK_MONOTONIC; the difference column is what the Go binding adds per call (cgo transition, argument handling, slice construction). %d alternating rounds.", rounds),
		fmt.Sprintf("The batched rows (ours only: stock lmdb-go has no mdb_cursor_get_batch) time the same full scans from Go through Cursor.GetBatch, %d entries a call with the result slices reused, and through the root package's iterator dlmdb.Scan (dlmdb.DefaultBatch = %d a call), against the same C loop of one mdb_cursor_get(MDB_NEXT) per entry; both check the same count and checksum. Goal (issue 14): a Go scan at most 1.5x the C loop per entry. The batched get row reads the same random keys as the get rows through Cursor.GetMany, %d keys a call (the key list built outside the timer), against the C loop of mdb_get; goal: within 1.15x.", batchSize, dlmdb.DefaultBatch, batchSize),
	}
	return t, nil
}
