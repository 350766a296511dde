package cgofloor

/*
#include "stockapi.h"
#define FLOOR_RESULT dlmdbFloorStockResult
#define FLOOR_RUN dlmdbFloorStockRun
#define FLOOR_ERR dlmdbFloorStockErr
#include "floorloop.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	_ "github.com/PowerDNS/lmdb-go/lmdb" // provides the stock mdb_* symbols
	"github.com/dlmdb/dlmdb-go/bench"
)

// stockC runs the C loop on stock LMDB (the copy compiled into lmdb-go).
func stockC(dir string, mapSize int64, keys []byte, order []int32, passes int) (loopResult, error) {
	cpath, kp, op := cArgs(dir, keys, order)
	defer C.free(unsafe.Pointer(cpath))
	res := C.dlmdbFloorStockRun(cpath, C.size_t(mapSize), kp, C.size_t(bench.KeySize), op, C.size_t(len(order)), C.int(passes))
	if res.rc != 0 {
		return loopResult{}, fmt.Errorf("C loop on stock LMDB failed at step %d: %s (%d)", int(res.where), C.GoString(C.dlmdbFloorStockErr(res.rc)), int(res.rc))
	}
	return loopResult{sum: uint64(res.sum), count: uint64(res.count), el: time.Duration(res.ns)}, nil
}
