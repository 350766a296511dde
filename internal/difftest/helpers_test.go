package difftest

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	lmdb "github.com/PowerDNS/lmdb-go/lmdb"
)

// Numeric LMDB constants shared by both packages (the values are LMDB's
// public ABI; our package must use the same ones).
const (
	fCreate      = uint(lmdb.Create)
	fIntegerKey  = uint(lmdb.IntegerKey)
	fReverseKey  = uint(lmdb.ReverseKey)
	fNoOverwrite = uint(lmdb.NoOverwrite)
	fAppend      = uint(lmdb.Append)
	fCurrent     = uint(lmdb.Current)
	fReadonly    = uint(lmdb.Readonly)
	fNoSync      = uint(lmdb.NoSync)
	fNoSubdir    = uint(lmdb.NoSubdir)

	fDupSort    = uint(lmdb.DupSort)
	fDupFixed   = uint(lmdb.DupFixed)
	fIntegerDup = uint(lmdb.IntegerDup)
	fReverseDup = uint(lmdb.ReverseDup)
	fNoDupData  = uint(lmdb.NoDupData)

	cFirstDup     = uint(lmdb.FirstDup)
	cLastDup      = uint(lmdb.LastDup)
	cNextDup      = uint(lmdb.NextDup)
	cPrevDup      = uint(lmdb.PrevDup)
	cNextNoDup    = uint(lmdb.NextNoDup)
	cPrevNoDup    = uint(lmdb.PrevNoDup)
	cGetBoth      = uint(lmdb.GetBoth)
	cGetBothRange = uint(lmdb.GetBothRange)
	cGetMultiple  = uint(lmdb.GetMultiple)
	cNextMultiple = uint(lmdb.NextMultiple)

	cFirst      = uint(lmdb.First)
	cLast       = uint(lmdb.Last)
	cNext       = uint(lmdb.Next)
	cPrev       = uint(lmdb.Prev)
	cSet        = uint(lmdb.Set)
	cSetKey     = uint(lmdb.SetKey)
	cSetRange   = uint(lmdb.SetRange)
	cGetCurrent = uint(lmdb.GetCurrent)

	eKeyExist     = int(lmdb.KeyExist)
	eNotFound     = int(lmdb.NotFound)
	ePageNotFound = int(lmdb.PageNotFound)
	eCorrupted    = int(lmdb.Corrupted)
	eInvalid      = int(lmdb.Invalid)
	eMapFull      = int(lmdb.MapFull)
	eBadValSize   = int(lmdb.BadValSize)
	eIncompatible = int(lmdb.Incompatible)
	eBadTxn       = int(lmdb.BadTxn)
	eVersion      = int(lmdb.VersionMismatch)
	ePanic        = int(lmdb.Panic)
)

var (
	flagSeed = flag.Int64("difftest.seed", 0,
		"run only the differential sequence with this seed (as printed by a failure)")
	flagKeepGoing = flag.Int("difftest.keepgoing", 1,
		"differential sequences allowed to fail (each is shrunk and reported) before the test stops")
	flagTolerate = flag.String("difftest.tolerate", "",
		"exploration only: comma-separated known difference classes to step around so that other "+
			"differences can be found (keysize: lookups with keys over 511 bytes; failedpos: cursor "+
			"position after a failed Set*/put; afterdel: cursor position after a cursor Del; fixup: other cursors of a DB after it is "+
			"modified; nestedbig: values over 2000 bytes inside nested txns; dupappend: MDB_APPEND in DUPSORT DBs; dupkey: the key returned by FirstDup/LastDup/GetMultiple). "+
			"Never set by default.")
	flagDBs = flag.String("difftest.dbs", "",
		"exploration only: comma-separated DB names the differential generators may use (default: all of the profile)")
	flagPages = flag.Bool("difftest.pages", false,
		"also require identical Stat page counts and depth (ours vs stock split policy)")
	flagMaster = flag.Int64("difftest.master", 0,
		"master seed for the randomised tests (0 = derived from the clock and printed)")
	flagNoDemote = flag.Bool("difftest.nodemote", false,
		"A/B runs only: turn off our engine's move of duplicates from a sub-tree back to a sub-page "+
			"(the default runs keep it on)")
)

// testScale is DLMDB_TEST_SCALE (default 1): a multiplier for randomised
// test budgets.
func testScale(t testing.TB) int {
	s := os.Getenv("DLMDB_TEST_SCALE")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("DLMDB_TEST_SCALE=%q: want a positive integer", s)
	}
	return n
}

// masterSeed returns the seed for a randomised test and logs how to repeat it.
// defaultMasterSeed is the master seed `make test` uses unless told otherwise.
const defaultMasterSeed = 20261129

func masterSeed(t testing.TB) int64 {
	// The default master seed is fixed so that `make test` replays the same
	// (randomly generated) sequences every run; DLMDB_TEST_SEED=random draws a
	// fresh one for exploration, DLMDB_TEST_SEED=N picks N.
	seed := *flagMaster
	if seed == 0 {
		seed = defaultMasterSeed
		switch s := os.Getenv("DLMDB_TEST_SEED"); s {
		case "":
		case "random":
			seed = time.Now().UnixNano() & 0x7fffffffffff
			t.Logf("%s: master seed %d", t.Name(), seed)
		default:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatalf("DLMDB_TEST_SEED=%q: want an integer or \"random\"", s)
			}
			seed = n
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s: master seed %d; repeat with: go test ./internal/difftest -run '^%s$' -difftest.master=%d -v",
				t.Name(), seed, t.Name(), seed)
		}
	})
	return seed
}

func errName(code int) string {
	switch code {
	case 0:
		return "ok"
	case errNotErrno:
		return "non-errno-error"
	}
	names := map[int]string{eKeyExist: "KeyExist", eNotFound: "NotFound", ePageNotFound: "PageNotFound",
		eCorrupted: "Corrupted", eInvalid: "Invalid", eMapFull: "MapFull", eBadValSize: "BadValSize",
		eBadTxn: "BadTxn", eVersion: "VersionMismatch", ePanic: "Panic", 22: "EINVAL", 13: "EACCES",
		2: "ENOENT", 12: "ENOMEM"}
	if n, ok := names[code]; ok {
		return n
	}
	if code < 0 {
		return fmt.Sprintf("%v(%d)", lmdb.Errno(code), code)
	}
	return fmt.Sprintf("errno %d", code)
}

func tolerated(class string) bool {
	for _, c := range strings.Split(*flagTolerate, ",") {
		if c == class {
			return true
		}
	}
	return false
}
