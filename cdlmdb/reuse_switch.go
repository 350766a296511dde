//go:build dlmdb_reuseswitch

package cdlmdb

/*
#cgo CFLAGS: -DDLMDB_REUSE_SWITCH
extern int dlmdb_reuse_off;
static void dlmdbgo_set_reuse_off(int off) { __atomic_store_n(&dlmdb_reuse_off, off, __ATOMIC_RELAXED); }
*/
import "C"

// ReuseSwitch reports whether this build carries the run-time switch for
// cursor reuse (build tag dlmdb_reuseswitch, used by cmd/cursor_reuse_bench
// and the tests that compare both search paths). Ordinary builds have no
// switch: cursor reuse is always on there.
const ReuseSwitch = true

// SetCursorReuse turns cursor reuse (cdlmdb/search.c, dlmdb_search_key) on
// or off for the whole process: off, every cursor seek and put searches
// from the root. Only for timing and comparing the two paths; do not
// change it while another goroutine runs a transaction.
func SetCursorReuse(on bool) {
	off := C.int(1)
	if on {
		off = 0
	}
	C.dlmdbgo_set_reuse_off(off)
}
