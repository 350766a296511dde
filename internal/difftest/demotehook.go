package difftest

// Test hooks of the C engine (cdlmdb/dupsort.c; not part of lmdb.h): how
// many times duplicates moved from a sub-tree back to an inline sub-page,
// and a switch for A/B runs with that move turned off. cgo is not allowed
// in _test.go files, so these two wrappers live here.

/*
unsigned long long dlmdb_debug_demotions(void);
void dlmdb_debug_demote_enable(int on);
void dlmdb_debug_leaf2_exact(int on);
*/
import "C"

import _ "github.com/dlmdb/dlmdb-go/cdlmdb" // the engine the hooks live in

// engineDemotions: demotions done by this process's engine so far.
func engineDemotions() uint64 { return uint64(C.dlmdb_debug_demotions()) }

// setEngineDemotion turns demotion on (the default) or off.
func setEngineDemotion(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.dlmdb_debug_demote_enable(v)
}

// setLeaf2Exact makes our engine write LEAF2 sub-pages at their exact
// size even when it is odd (as releases before the even rule did, see
// FORMAT.md), or (false, the default) at an even size.
func setLeaf2Exact(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.dlmdb_debug_leaf2_exact(v)
}
