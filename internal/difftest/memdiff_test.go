//go:build !dlmdb_stockonly

package difftest

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	dl "github.com/dlmdb/dlmdb-go/lmdb"
)

// The in-memory half of the differential matrix (issue 15): the same
// workloads as TestDifferential, TestDifferentialDupSort, the counted and
// prefix ones, the WriteMap ones and the demotion one, with our side's envs
// opened InMemory (memSubject) while stock, the reference, runs on files.
// Each replays the first third of its file run's sequences (same master
// seed stream, a third of the operation budget), so a sequence failing
// here and passing there points at the in-memory mode.
//
// What differs for an in-memory side (diff_test.go): an opReopen cannot
// close it (its data would be gone), so it persists through a copy
// instead, checked against the live env (side.persistCheck); the final
// page walk and the counted file check read a page-exact copy; and the
// side's directory must be empty at the end (nothing written there but
// those copies, which are removed).
//
// Tests that close and reopen one path, inspect the data file an engine
// writes, kill a writer (crash tests) or open our file with stock have no
// in-memory form and stay file-only; TestInMemoryCopyCompat is the
// in-memory form of the persistence they check.

// memDiv: the in-memory runs take this fraction of their file run's budget.
const memDiv = 3

// memPart: the part of a workload with op kinds w that an in-memory run
// takes.
func memPart(w [numOpKinds]int) part { return part{div: memDiv, kinds: w} }

// memCovered fails t unless the run's statistics show every op kind that
// has a weight in w (the smaller budget must still try everything).
func memCovered(t *testing.T, st *opStats, w [numOpKinds]int) {
	t.Helper()
	if *flagSeed != 0 {
		return // one sequence need not have every kind
	}
	for k := opKind(0); k < numOpKinds; k++ {
		if w[k] == 0 {
			continue
		}
		n := 0
		for _, c := range st.codes[k] {
			n += c
		}
		if n == 0 {
			t.Errorf("op kind %s never ran in memory (%d sequences)", opNames[k], st.sequences)
		}
	}
	if w[opReopen] > 0 && st.codes[opReopen][0] == 0 {
		t.Errorf("no reopen (persisted through a copy) succeeded in memory")
	}
}

func memExt(add uint) extEngine { return extEngine{oursEngine: memSubject, add: add} }

func TestDifferentialInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	memCovered(t, differentialOf(t, memSubject, genOps, 400000, memPart(opWeights)), opWeights)
}

func TestDifferentialDupSortInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	memCovered(t, differentialOf(t, memSubject, genDupOps, 150000, memPart(dupWeights)), dupWeights)
}

func TestDifferentialCountedInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	memCovered(t, extDifferentialOf(t, memExt(uint(dl.Counted)), genOps, 150000, memPart(opWeights)), opWeights)
}

func TestDifferentialCountedDupSortInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	memCovered(t, extDifferentialOf(t, memExt(uint(dl.Counted)), genDupOps, 80000, memPart(dupWeights)), dupWeights)
}

func TestDifferentialPrefixInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	memCovered(t, extDifferentialOf(t, memExt(uint(dl.PrefixCompression)), genPrefixOps, 100000, memPart(opWeights)), opWeights)
}

func TestDifferentialPrefixCountedInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	st := extDifferentialOf(t, memExt(uint(dl.PrefixCompression|dl.Counted)), genPrefixOps, 60000, memPart(opWeights))
	memCovered(t, st, opWeights)
}

func TestDifferentialPrefixDupSortInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	st := extDifferentialOf(t, memExt(uint(dl.PrefixCompression)), genPrefixDupOps, 60000, memPart(dupWeights))
	memCovered(t, st, dupWeights)
}

func TestDifferentialPrefixCountedDupSortInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	st := extDifferentialOf(t, memExt(uint(dl.PrefixCompression|dl.Counted)), genPrefixDupOps, 40000, memPart(dupWeights))
	memCovered(t, st, dupWeights)
}

// TestDifferentialWriteMapInMemory: WriteMap on our in-memory side only
// (nested txns refused there as for files, so the workload has none).
func TestDifferentialWriteMapInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	w := withoutNested(opWeights)
	memCovered(t, differentialWriteMapOf(t, memSubject, genWriteMapOps, 30000, memPart(w), 0x77a9), w)
}

func TestDifferentialWriteMapDupSortInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	w := withoutNested(dupWeights)
	memCovered(t, differentialWriteMapOf(t, memSubject, genWriteMapDupOps, 15000, memPart(w), 0x77aa), w)
}

func TestDifferentialDupDemoteInMemory(t *testing.T) {
	if isolate(t) {
		return
	}
	memCovered(t, dupDemote(t, memSubject, memPart(demoteWeights)), demoteWeights)
}

// TestInMemoryCopyCompat is the in-memory form of the persistence checks
// of TestFileCompat: an in-memory env gets many txns (some aborted) over
// named DBs of every key kind with overflow values; its plain and
// compacting copies are then files both engines read completely and
// identically; the env goes on changing without touching the copies; a
// copy reopened as a file env takes writes by stock and by ours; and the
// env's own directory never holds anything but the copies put there.
func TestInMemoryCopyCompat(t *testing.T) {
	if isolate(t) {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewSource(masterSeed(t) ^ 0x3e3))
	stock := engine(stockEngine{})
	memDir := t.TempDir()
	env, err := memSubject.openEnv(memDir, envOpts{mapSize: 128 << 20, maxDBs: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	m := compatModel{}
	compatWriteEnv(t, memSubject, env, m, r, 20*testScale(t))
	if ents, err := os.ReadDir(memDir); err != nil || len(ents) != 0 {
		t.Fatalf("the in-memory env's directory: %v, %d entries; want none", err, len(ents))
	}
	copies := map[bool]string{}
	for _, compact := range []bool{false, true} {
		dst := filepath.Join(memDir, fmt.Sprint("copy-compact-", compact))
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := env.copyTo(dst, compact); err != nil {
			t.Fatalf("copy (compact=%v): %v", compact, err)
		}
		copies[compact] = dst
		what := fmt.Sprintf("in-memory env copied (compact=%v)", compact)
		compatVerify(t, stock, dst, m, what+", stock reads")
		compatVerify(t, subject, dst, m, what+", ours reads")
	}
	// later changes stay in memory: the copies keep the old state
	old := compatModel{}
	for db, kv := range m {
		old[db] = maps.Clone(kv)
	}
	compatWriteEnv(t, memSubject, env, m, r, 8)
	if compatEqual(old, m) {
		t.Fatal("the second round of writes changed nothing (the check below would be empty)")
	}
	compatVerify(t, subject, copies[false], old, "plain copy after the env changed")
	compatVerify(t, stock, copies[true], old, "copy (compact=true) after the env changed")
	// a copy is an ordinary env: stock and ours write into it in turn
	compatWrite(t, stock, copies[false], old, r, 6)
	compatVerify(t, subject, copies[false], old, "plain copy after stock wrote, ours reads")
	compatWrite(t, subject, copies[false], old, r, 6)
	compatVerify(t, stock, copies[false], old, "plain copy after ours wrote, stock reads")
	// and the env itself still holds its own state, copied once more
	dst := filepath.Join(memDir, "copy-last")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := env.copyTo(dst, false); err != nil {
		t.Fatal(err)
	}
	compatVerify(t, stock, dst, m, "in-memory env's second copy, stock reads")
	ents, err := os.ReadDir(memDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 3 {
		t.Fatalf("the in-memory env's directory holds %v; want only the three copies", names)
	}
}

// compatEqual reports whether two models hold the same DBs and pairs.
func compatEqual(a, b compatModel) bool {
	norm := func(m compatModel) map[string]map[string][]byte {
		out := map[string]map[string][]byte{}
		for db, kv := range m {
			if len(kv) > 0 {
				out[db] = kv
			}
		}
		return out
	}
	return maps.EqualFunc(norm(a), norm(b), func(x, y map[string][]byte) bool {
		return maps.EqualFunc(x, y, func(p, q []byte) bool { return string(p) == string(q) })
	})
}

// TestConcurrentReadersWriterInMemory: the bank test of concurrency_test.go
// on an in-memory env: one writer goroutine, reader goroutines with fresh,
// pooled (Reset/Renew) and long-held snapshots, one snapshot held over the
// whole run; every snapshot must hold whole commits only.
func TestConcurrentReadersWriterInMemory(t *testing.T) {
	dir := t.TempDir()
	env, err := memSubject.openEnv(dir, bankOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	bankInitEnv(t, env)
	concurrentReadersWriter(t, memSubject, env)
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("the in-memory env's directory: %v, %d entries; want none", err, len(ents))
	}
}

// TestDBIHandlePollingInMemory: goroutines polling for DBs that a writer
// creates, fills and drops (dbipoll_test.go), on an in-memory env.
func TestDBIHandlePollingInMemory(t *testing.T) { dbiPolling(t, memSubject) }

// The DBI handle tests against stock with our side in memory (every
// schedule: they are cheap): handle lifetimes over snapshots, nested txns
// and readers, slot reuse under a live reader, a slot bound by a reader.
func TestDBIHandleLifetimesDiffInMemory(t *testing.T) { dbiHandleLifetimes(t, memSubject, 1) }

func TestDBISlotReuseLiveReaderInMemory(t *testing.T) { dbiSlotReuse(t, memSubject, 1) }

func TestDBISlotBoundByReaderInMemory(t *testing.T) { dbiSlotBound(t, memSubject) }
