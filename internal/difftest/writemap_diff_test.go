package difftest

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	lmdb "github.com/PowerDNS/lmdb-go/lmdb"
)

// MDB_WRITEMAP on our side only: our engine then builds its pages in the
// shared map and flushes it at commit, while stock LMDB (the reference)
// keeps its default malloc'd pages and pwrite. Every answer and the final
// contents must still agree, and stock must read the files we wrote that
// way. (diff_test.go already runs some sequences with WriteMap on both
// sides; here the two engines write differently on purpose.)

// writemapEngine is an engine whose every env is opened with WriteMap.
type writemapEngine struct{ engine }

func (w writemapEngine) name() string { return w.engine.name() + "+writemap" }

func (w writemapEngine) openEnv(path string, o envOpts) (tEnv, error) {
	o.flags |= uint(lmdb.WriteMap)
	return w.engine.openEnv(path, o)
}

// withoutNested: a workload's weights without nested txns, which WriteMap
// does not allow (MDB_BAD_TXN on our side, fine on stock's).
func withoutNested(w [numOpKinds]int) [numOpKinds]int {
	w[opBeginNested], w[opCommitNested], w[opAbortNested] = 0, 0, 0
	return w
}

func genWriteMapOps(seed int64) []op {
	return genOpsFor(seed, []int{0, 1, 2, 3, 4}, withoutNested(opWeights))
}

func genWriteMapDupOps(seed int64) []op {
	return genOpsFor(seed, []int{5, 6, 7, 8}, withoutNested(dupWeights))
}

func TestDifferentialWriteMap(t *testing.T) {
	if isolate(t) {
		return
	}
	differentialWriteMap(t, genWriteMapOps, 30000, 0x77a9)
}

// TestDifferentialWriteMapDupSort: the same with the sorted-duplicate DBs.
func TestDifferentialWriteMapDupSort(t *testing.T) {
	if isolate(t) {
		return
	}
	differentialWriteMap(t, genWriteMapDupOps, 15000, 0x77aa)
}

func differentialWriteMap(t *testing.T, gen func(int64) []op, perScale int, salt int64) {
	differentialWriteMapOf(t, subject, gen, perScale, whole, salt)
}

// differentialWriteMapOf: the WriteMap differential with sub (in memory or
// not) under WriteMap, on the part p of the seed stream as differentialOf.
func differentialWriteMapOf(t *testing.T, sub engine, gen func(int64) []op, perScale int, p part, salt int64) *opStats {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, b := engine(writemapEngine{sub}), engine(stockEngine{})
	base := t.TempDir()
	var seeds []int64
	if *flagSeed != 0 {
		seeds = []int64{*flagSeed}
	} else {
		seeds = pickSeeds(rand.New(rand.NewSource(masterSeed(t)^salt)), gen, perScale*testScale(t), p)
	}
	stats := &opStats{codes: map[opKind]map[int]int{}}
	total := 0
	for i, seed := range seeds {
		ops := withBatches(gen(seed), seed)
		for _, o := range ops {
			if o.kind == opBeginNested {
				t.Fatalf("seed %d: the WriteMap workload generated a nested txn", seed)
			}
		}
		total += len(ops)
		mm, err := runOpsStats(filepath.Join(base, fmt.Sprint(i)), a, b, ops, fNoSync, stats)
		if err != nil {
			t.Fatalf("seed %d: setup: %v", seed, err)
		}
		if mm == nil {
			continue
		}
		small := shrink(filepath.Join(base, "shrink"), a, b, ops[:min(mm.index+1, len(ops))], fNoSync, 400)
		var sb strings.Builder
		for j, o := range small {
			fmt.Fprintf(&sb, "  %3d %v\n", j, o)
		}
		t.Fatalf("%s vs %s: seed %d: %v\nshrunk to %d ops:\n%s\nreproduce: go test ./internal/difftest -run '^%s$' -difftest.seed=%d -v",
			a.name(), b.name(), seed, mm, len(small), sb.String(), t.Name(), seed)
	}
	stats.sequences = len(seeds)
	t.Logf("%s vs %s: %d sequences, %d operations:\n%v", a.name(), b.name(), len(seeds), total, stats)
	if total == 0 || stats.codes[opCommit][0] == 0 {
		t.Fatal("the WriteMap workload committed nothing")
	}
	return stats
}

// TestWriteMapFileStockReads: a file our engine wrote with WriteMap (many
// txns, some aborted, named DBs of every key kind, overflow values) is read
// completely and identically by stock LMDB and by ours without WriteMap;
// then stock writes into it and our WriteMap env reads and extends it.
func TestWriteMapFileStockReads(t *testing.T) {
	if isolate(t) {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewSource(masterSeed(t) ^ 0x3a7))
	wm, stock := engine(writemapEngine{subject}), engine(stockEngine{})
	dir := t.TempDir()
	m := compatModel{}
	compatWrite(t, wm, dir, m, r, 20*testScale(t))
	compatVerify(t, stock, dir, m, "ours+writemap file, stock reads")
	compatVerify(t, subject, dir, m, "ours+writemap file, ours reads")
	compatWrite(t, stock, dir, m, r, 8)
	compatVerify(t, wm, dir, m, "stock wrote into it, ours+writemap reads")
	compatWrite(t, wm, dir, m, r, 8)
	compatVerify(t, stock, dir, m, "ours+writemap wrote again, stock reads")
}
