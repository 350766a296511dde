//go:build dlmdb_reuseswitch && !dlmdb_stockonly

package difftest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/cdlmdb"
	dl "github.com/dlmdb/dlmdb-go/lmdb"
)

// The cursor reuse sequences (reuse_diff_test.go) against our own engine
// with reuse turned off (cdlmdb.SetCursorReuse(false) around every op of
// that side, so each of its seeks and puts searches from the root): the
// two sides must give identical answers and build identical trees. After
// every sequence the Stat of every DB (depth, branch, leaf and overflow
// pages, entries), the main DB's Stat, the env's last page number, the
// checker of both envs and the page accounting of both files are compared
// or checked; Stat ops inside the sequences compare page counts too. The
// harness's stock step-arounds run on both sides alike; the shape ones
// (shapeFree, leafShapeFree) stay off: here the shapes must agree.
// Built only with -tags dlmdb_reuseswitch (make test-go runs it).

// reuseVsRootFirst runs ops on a (reuse) and b (root-first) and returns the
// first difference.
func reuseVsRootFirst(base string, eng engine, ops []op, flags uint) (mm *mismatch, fatal error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	defer func(p bool) { *flagPages = p }(*flagPages)
	*flagPages = true // Stat ops and compareContents compare page counts
	defer cdlmdb.SetCursorReuse(true)
	used := make([]bool, len(diffDBs))
	for _, o := range ops {
		used[o.db] = true
	}
	sa := &side{eng: eng, dir: filepath.Join(base, "reuse"), flags: flags, used: used}
	sb := &side{eng: eng, dir: filepath.Join(base, "rootfirst"), flags: flags, used: used}
	onB := func(f func()) {
		cdlmdb.SetCursorReuse(false)
		f()
		cdlmdb.SetCursorReuse(true)
	}
	for _, s := range []*side{sa, sb} {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return nil, err
		}
		var err error
		if s == sb {
			onB(func() { err = s.open() })
		} else {
			err = s.open()
		}
		if err != nil {
			return nil, err
		}
	}
	defer closeSides(sa, sb)
	for i, o := range ops {
		ra := sa.apply(o)
		var rb result
		onB(func() { rb = sb.apply(o) })
		if !ra.equal(rb) {
			return &mismatch{i, o.String(), fmt.Sprintf("reuse: %v | root-first: %v", ra, rb)}, nil
		}
		if sa.env == nil || sb.env == nil {
			return &mismatch{i, o.String(), "env could not be reopened: " + ra.note}, nil
		}
	}
	end := op{kind: opCommit}
	ra := sa.apply(end)
	var rb result
	onB(func() { rb = sb.apply(end) })
	if !ra.equal(rb) {
		return &mismatch{len(ops), "final commit", fmt.Sprintf("%v | %v", ra, rb)}, nil
	}
	if d := compareContents(sa, sb, nil); d != "" {
		return &mismatch{len(ops), "final contents and Stat of every DB", d}, nil
	}
	// compareContents compares Stat only where the scan agrees with it;
	// here every DB's Stat must be identical, field by field
	for i, d := range diffDBs {
		if !used[i] {
			continue
		}
		_, st1, err1 := dumpDB(sa.eng, sa.env, sa.dbis[i])
		_, st2, err2 := dumpDB(sb.eng, sb.env, sb.dbis[i])
		if err1 != nil || err2 != nil || st1 != st2 {
			return &mismatch{len(ops), "Stat of db " + d.name, fmt.Sprintf("reuse %v %v | root-first %v %v", st1, err1, st2, err2)}, nil
		}
	}
	st1, err1 := sa.env.stat()
	st2, err2 := sb.env.stat()
	if err1 != nil || err2 != nil || st1 != st2 {
		return &mismatch{len(ops), "env stat", fmt.Sprintf("reuse %v %v | root-first %v %v", st1, err1, st2, err2)}, nil
	}
	l1, err1 := sa.env.lastPgno()
	l2, err2 := sb.env.lastPgno()
	if err1 != nil || err2 != nil || l1 != l2 {
		return &mismatch{len(ops), "env info last page", fmt.Sprintf("reuse %d %v | root-first %d %v", l1, err1, l2, err2)}, nil
	}
	for _, s := range []*side{sa, sb} {
		if err := s.env.check(); err != nil {
			return &mismatch{len(ops), "Check", fmt.Sprintf("%s: %v", filepath.Base(s.dir), err)}, nil
		}
		if probs, _ := walkEnv(s.dir); len(probs) > 0 {
			return &mismatch{len(ops), "page accounting of the data file", fmt.Sprintf("%s: %v", filepath.Base(s.dir), probs)}, nil
		}
	}
	return nil, nil
}

// shrinkRootFirst: shrink's ddmin for reuseVsRootFirst.
func shrinkRootFirst(base string, eng engine, ops []op, flags uint, budget int) []op {
	cur := ops
	for chunk := len(cur) / 2; chunk >= 1 && budget > 0; {
		removed := false
		for start := 0; start < len(cur) && budget > 0; {
			end := min(start+chunk, len(cur))
			cand := append(append([]op(nil), cur[:start]...), cur[end:]...)
			budget--
			if mm, err := reuseVsRootFirst(base, eng, cand, flags); err == nil && mm != nil {
				cur = cand
				removed = true
				continue
			}
			start += chunk
		}
		if !removed {
			chunk /= 2
		}
	}
	return cur
}

func reuseAgainstRootFirst(t *testing.T, c reuseCase, budget int) {
	if !cdlmdb.ReuseSwitch {
		t.Fatal("built without the cursor reuse switch (cdlmdb.ReuseSwitch is false)")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	eng := c.ours()
	base := t.TempDir()
	// the same streams as the tests against stock
	seeds := c.seeds(t, 0x5e05e, budget)
	total := 0
	for i, seed := range seeds {
		ops := withBatches(c.gen(seed), seed)
		total += len(ops)
		flags := seqEnvFlags(seed)
		mm, err := reuseVsRootFirst(filepath.Join(base, fmt.Sprint(i)), eng, ops, flags)
		if err != nil {
			t.Fatalf("seed %d: setup: %v", seed, err)
		}
		if mm == nil {
			continue
		}
		start := ops[:min(mm.index+1, len(ops))]
		if m2, err := reuseVsRootFirst(filepath.Join(base, "shrink"), eng, start, flags); err != nil || m2 == nil {
			start = ops
		}
		small := shrinkRootFirst(filepath.Join(base, "shrink"), eng, start, flags, 400)
		mm2, _ := reuseVsRootFirst(filepath.Join(base, "shrink"), eng, small, flags)
		var sb strings.Builder
		for j, o := range small {
			fmt.Fprintf(&sb, "  %3d %v\n", j, o)
		}
		t.Fatalf("%s, reuse vs root-first: seed %d (env flags %#x): %v\nshrunk to %d ops (mismatch: %v):\n%s"+
			"reproduce: go test -tags dlmdb_reuseswitch ./internal/difftest -run '^%s$' -difftest.seed=%d -v",
			eng.name(), seed, flags, mm, len(small), mm2, sb.String(), t.Name(), seed)
	}
	t.Logf("%s, reuse vs root-first: %d sequences, %d operations", eng.name(), len(seeds), total)
	if total == 0 {
		t.Fatal("no operations generated")
	}
}

const rootFirstBudget = 40000

func TestCursorReuseRootFirst(t *testing.T) {
	reuseAgainstRootFirst(t, reuseCase{reusePlainDBs, 0}, rootFirstBudget)
}

func TestCursorReuseRootFirstCounted(t *testing.T) {
	reuseAgainstRootFirst(t, reuseCase{reusePlainDBs, uint(dl.Counted)}, rootFirstBudget)
}

func TestCursorReuseRootFirstPrefix(t *testing.T) {
	reuseAgainstRootFirst(t, reuseCase{reusePlainDBs, uint(dl.PrefixCompression)}, rootFirstBudget)
}

func TestCursorReuseRootFirstPrefixCounted(t *testing.T) {
	reuseAgainstRootFirst(t, reuseCase{reusePlainDBs, uint(dl.PrefixCompression | dl.Counted)}, rootFirstBudget)
}

func TestCursorReuseRootFirstDupSort(t *testing.T) {
	reuseAgainstRootFirst(t, reuseCase{reuseDupDBs, 0}, rootFirstBudget)
}

func TestCursorReuseRootFirstDupSortCounted(t *testing.T) {
	reuseAgainstRootFirst(t, reuseCase{reuseDupDBs, uint(dl.Counted)}, rootFirstBudget)
}

func TestCursorReuseRootFirstDupSortPrefix(t *testing.T) {
	reuseAgainstRootFirst(t, reuseCase{reuseDupDBs, uint(dl.PrefixCompression)}, rootFirstBudget)
}

func TestCursorReuseRootFirstDupSortPrefixCounted(t *testing.T) {
	reuseAgainstRootFirst(t, reuseCase{reuseDupDBs, uint(dl.PrefixCompression | dl.Counted)}, rootFirstBudget)
}
