//go:build !dlmdb_stockonly

package difftest

import (
	"path/filepath"
	"runtime"
	"testing"
)

// TestRefusedNextMultipleKeepsDelMark pins the harness side of stock bug 6
// (stockdup_test.go) on the sequence of seed 273577129282699721 (of
// TestDifferentialPrefixDupSort at scale 10), shrunk to: a cursor Del of
// one duplicate, a NextMultiple refused with Incompatible (not a DUPFIXED
// DB), FirstDup, NextDup. Stock answers the first duplicate again (its
// FirstDup kept the deleted mark); the step-around must still see the Del
// through the refused op, so that plain ours and stock agree.
func TestRefusedNextMultipleKeepsDelMark(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const seed = 273577129282699721
	ops := genDupOps(seed)
	if len(ops) < 464 || ops[463].kind != opCurNextDup {
		t.Fatalf("seed %d: op #463 is not the NextDup of the case (generator changed?)", seed)
	}
	flags := seqEnvFlags(seed)
	mm, err := runOps(filepath.Join(t.TempDir(), "a"), oursEngine{}, stockEngine{}, ops[:464], flags)
	if err != nil {
		t.Fatal(err)
	}
	if mm != nil {
		t.Fatalf("plain ours vs stock: %v", mm)
	}
}
