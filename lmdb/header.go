package lmdb

/*
#cgo CFLAGS: -I${SRCDIR}/../cdlmdb
#include "dlmdbgo.h"
*/
import "C"

// headerAgreement proves at compile time that the Go constants, which are
// written out as numbers, equal the engine header's: each element indexes a
// one-element array with the difference of the two values, and any non-zero
// difference is an out-of-range constant index that stops the build.
var headerAgreement = [...]int{
	// Env.Open flags and copy flags.
	[1]int{}[FixedMap-C.MDB_FIXEDMAP], [1]int{}[NoSubdir-C.MDB_NOSUBDIR],
	[1]int{}[NoSync-C.MDB_NOSYNC], [1]int{}[Readonly-C.MDB_RDONLY],
	[1]int{}[NoMetaSync-C.MDB_NOMETASYNC], [1]int{}[WriteMap-C.MDB_WRITEMAP],
	[1]int{}[MapAsync-C.MDB_MAPASYNC], [1]int{}[NoTLS-C.MDB_NOTLS],
	[1]int{}[NoLock-C.MDB_NOLOCK], [1]int{}[NoReadahead-C.MDB_NORDAHEAD],
	[1]int{}[NoMemInit-C.MDB_NOMEMINIT], [1]int{}[CopyCompact-C.MDB_CP_COMPACT],
	[1]int{}[InMemory-C.MDB_INMEMORY],

	// Database flags.
	[1]int{}[ReverseKey-C.MDB_REVERSEKEY], [1]int{}[DupSort-C.MDB_DUPSORT],
	[1]int{}[IntegerKey-C.MDB_INTEGERKEY], [1]int{}[DupFixed-C.MDB_DUPFIXED],
	[1]int{}[IntegerDup-C.MDB_INTEGERDUP], [1]int{}[ReverseDup-C.MDB_REVERSEDUP],
	[1]int{}[Create-C.MDB_CREATE],

	// Write flags.
	[1]int{}[NoOverwrite-C.MDB_NOOVERWRITE], [1]int{}[NoDupData-C.MDB_NODUPDATA],
	[1]int{}[Current-C.MDB_CURRENT], [1]int{}[Append-C.MDB_APPEND],
	[1]int{}[AppendDup-C.MDB_APPENDDUP],

	// Cursor operations: the ends of the run pin the whole iota sequence.
	[1]int{}[First-C.MDB_FIRST], [1]int{}[GetMultiple-C.MDB_GET_MULTIPLE],
	[1]int{}[NextNoDup-C.MDB_NEXT_NODUP], [1]int{}[SetRange-C.MDB_SET_RANGE],
	[1]int{}[PrevMultiple-C.MDB_PREV_MULTIPLE],

	// Return codes, likewise.
	[1]int{}[KeyExist-C.MDB_KEYEXIST], [1]int{}[MapFull-C.MDB_MAP_FULL],
	[1]int{}[BadDBI-C.MDB_BAD_DBI],
}
