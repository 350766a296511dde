package difftest

import (
	"bytes"
	"encoding/binary"
)

// The engines' key and duplicate orders, for the harness's own checks
// (the corrupt-file walks, the batch op's end bound); flags are a DB's.

// keyOrder compares a and b as the engine orders the keys of a DB with
// flags: native unsigned integers (INTEGERKEY; other sizes by size, then
// as little-endian numbers), bytes from the end (REVERSEKEY), or bytes.
func keyOrder(flags uint, a, b []byte) int {
	switch {
	case flags&fIntegerKey != 0:
		return nativeOrder(a, b)
	case flags&fReverseKey != 0:
		return backwardOrder(a, b)
	}
	return bytes.Compare(a, b)
}

// dupOrder is the same for the duplicates of a DUPSORT DB.
func dupOrder(flags uint, a, b []byte) int {
	switch {
	case flags&fIntegerDup != 0:
		return nativeOrder(a, b)
	case flags&fReverseDup != 0:
		return backwardOrder(a, b)
	}
	return bytes.Compare(a, b)
}

func nativeOrder(a, b []byte) int {
	switch {
	case len(a) == 8 && len(b) == 8:
		return cmpU64(binary.NativeEndian.Uint64(a), binary.NativeEndian.Uint64(b))
	case len(a) == 4 && len(b) == 4:
		return cmpU64(uint64(binary.NativeEndian.Uint32(a)), uint64(binary.NativeEndian.Uint32(b)))
	case len(a) != len(b):
		return cmpU64(uint64(len(a)), uint64(len(b)))
	}
	return backwardOrder(a, b)
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func backwardOrder(a, b []byte) int {
	for i, j := len(a)-1, len(b)-1; i >= 0 && j >= 0; i, j = i-1, j-1 {
		if a[i] != b[j] {
			return cmpU64(uint64(a[i]), uint64(b[j]))
		}
	}
	return cmpU64(uint64(len(a)), uint64(len(b)))
}
