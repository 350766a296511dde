//go:build dlmdb_faults

package lmdb

// Test-only access to the engine's fault injection (cdlmdb/fault.c),
// compiled in only with -tags dlmdb_faults; see fault_test.go.

/*
void dlmdb_fault_reset(void);
void dlmdb_fault_arm(int kind, unsigned long nth, int err, unsigned how);
void dlmdb_fault_arm_at(int kind, int site, int err, unsigned how);
unsigned long dlmdb_fault_calls(int kind);
*/
import "C"

import "syscall"

const (
	faultWrite = 0 // DL_FAULT_WRITE: pwrite and pwritev
	faultSync  = 1 // DL_FAULT_SYNC: fdatasync and msync
)

// faultReset disarms the hook and zeroes its call counts.
func faultReset() { C.dlmdb_fault_reset() }

// faultArm makes the nth call of kind (counted from the last reset) fail
// with err, once.
func faultArm(kind int, nth uint64, err syscall.Errno) {
	C.dlmdb_fault_arm(C.int(kind), C.ulong(nth), C.int(err), 0)
}

const (
	faultSiteMeta = 3   // DL_IO_META: the meta page write
	faultSticky   = 0x1 // DL_FAULT_STICKY: every later call of the kind fails too
	faultLeave    = 0x4 // DL_FAULT_LEAVE: the failed write still writes its bytes
)

// faultArmAt makes the first call of kind at site fail with err, with the
// DL_FAULT_* options how.
func faultArmAt(kind, site int, err syscall.Errno, how uint) {
	C.dlmdb_fault_arm_at(C.int(kind), C.int(site), C.int(err), C.uint(how))
}

// faultCalls is the number of calls of kind since the last reset.
func faultCalls(kind int) uint64 { return uint64(C.dlmdb_fault_calls(C.int(kind))) }
