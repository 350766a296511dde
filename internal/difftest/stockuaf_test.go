package difftest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// A stock LMDB 0.9.33 use-after-free, found by TestDifferential under -asan
// (seed 1877669999438715938, shrunk from ~2000 ops to 13; the hand-made
// sequence below crashes stock the same way). The harness steps around it
// with unplacedStep (diff_test.go); these tests pin what ours does there,
// run only against ours.
//
// The sequence: a committed DB of one leaf; in the next txn a cursor is
// opened on it by an op that does not position it (GetCurrent, cursor Del,
// MDB_CURRENT put: all EINVAL). Because it is the txn's first touch of the
// named DB, stock's cursor setup reads the DB record and leaves the root
// page in the cursor, unpositioned. More puts split that root; stock's
// split fix-up skips unpositioned cursors, so this one keeps the old root,
// which is now the left leaf. A nested txn changes the left leaf (stock
// copies the page for the child; its touch fix-up only updates cursors as
// deep as the touching one, and ours has depth one) and commits: merging
// the child's pages frees the parent's copy. The parent cursor's next
// First, Last, Next or Prev (the latter two start with First/Last on an
// unpositioned cursor) then reads the freed page (ASan: heap-use-after-free
// in mdb_page_search, freed by _mdb_txn_commit); SetKey/SetRange drop the
// kept pointer first and are safe on stock.
//
// Ours must simply treat the kept cursor as unpositioned: every positioning
// op answers from the committed child's data.

func uafKey(i int) []byte { return []byte(fmt.Sprintf("uaf%03d", i)) }

func uafVal(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 600) }

// uafOps builds the sequence in DB db: keys 0,10,20,30 committed, open
// leaves cursor 1 unpositioned, keys 40..70 split the root, the child runs
// child and commits, then the final ops on cursor 1. It returns the ops and
// the contents the DB must have at the end.
func uafOps(db int, open op, child []op, final ...op) ([]op, map[string][]byte) {
	model := map[string][]byte{}
	var ops []op
	put := func(i int) {
		model[string(uafKey(i))] = uafVal(i)
		ops = append(ops, op{kind: opPut, db: db, key: uafKey(i), val: uafVal(i)})
	}
	for i := 0; i < 40; i += 10 {
		put(i)
	}
	ops = append(ops, op{kind: opCommit})
	open.db, open.slot = db, 1
	ops = append(ops, open)
	for i := 40; i < 80; i += 10 {
		put(i)
	}
	ops = append(ops, op{kind: opBeginNested})
	for _, c := range child {
		c.db = db
		switch c.kind {
		case opDel:
			delete(model, string(c.key))
		case opPut:
			model[string(c.key)] = c.val
		}
		ops = append(ops, c)
	}
	ops = append(ops, op{kind: opCommitNested})
	for _, f := range final {
		f.db, f.slot = db, 1
		ops = append(ops, f)
	}
	return ops, model
}

func TestUnpositionedParentCursorAfterNestedCommit(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	opens := map[string]op{
		"GetCurrent":    {kind: opCurGetCurrent},
		"CurDel":        {kind: opCurDel},
		"CurPutCurrent": {kind: opCurPutCurrent, val: []byte("x")},
	}
	children := map[string][]op{
		"del first":     {{kind: opDel, key: uafKey(0)}},
		"put into left": {{kind: opPut, key: uafKey(5), val: []byte("five")}},
		"overwrite":     {{kind: opPut, key: uafKey(10), val: []byte("ten")}},
	}
	// the final op on cursor 1, whether it walks forward afterwards, and the
	// key it must land on (index into the final sorted keys; -1: the last)
	finals := []struct {
		name    string
		o       op
		forward bool
		want    func(keys []string) int
	}{
		{"First", op{kind: opCurFirst}, true, func([]string) int { return 0 }},
		{"Next", op{kind: opCurNext}, true, func([]string) int { return 0 }},
		{"Last", op{kind: opCurLast}, false, func(ks []string) int { return len(ks) - 1 }},
		{"Prev", op{kind: opCurPrev}, false, func(ks []string) int { return len(ks) - 1 }},
		{"SetRange", op{kind: opCurSetRange, key: uafKey(1)}, true, func(ks []string) int {
			i, _ := slices.BinarySearch(ks, string(uafKey(1)))
			return i
		}},
		{"SetKey", op{kind: opCurSetKey, key: uafKey(30)}, true, func(ks []string) int {
			i, _ := slices.BinarySearch(ks, string(uafKey(30)))
			return i
		}},
	}
	dir := t.TempDir()
	n := 0
	for oname, open := range opens {
		for cname, child := range children {
			for _, f := range finals {
				name := fmt.Sprintf("%s/%s/%s", oname, cname, f.name)
				// one step past the end of the walk: the walk itself is
				// cut off by NotFound, and Check runs on the parent txn
				walk := op{kind: opCurNext}
				if !f.forward {
					walk = op{kind: opCurPrev}
				}
				final := []op{f.o}
				for i := 0; i < 12; i++ {
					final = append(final, walk)
				}
				final = append(final, op{kind: opCheck})
				ops, model := uafOps(0, open, child, final...)
				n++
				res, st := q2StepSides(t, filepath.Join(dir, fmt.Sprint(n)), 0, ops, subject)
				rs := res[0]
				if st[0].depth < 2 {
					t.Fatalf("%s: the root did not split (Stat %v): the scenario is not reached", name, st[0])
				}
				if st[0].items != uint64(len(model)) {
					t.Errorf("%s: Stat says %d entries, want %d", name, st[0].items, len(model))
				}
				keys := sortedKeys(model)
				iOpen := 5 // 4 puts and the commit come first
				if rs[iOpen].code == 0 {
					t.Errorf("%s: %v on a fresh cursor succeeded: %v", name, open, rs[iOpen])
				}
				iFinal := len(ops) - len(final)
				// the expected walk: from the landing key on, in the walk's
				// direction, then NotFound
				var want []string
				at := f.want(keys)
				if f.forward {
					want = keys[at:]
				} else {
					for i := at; i >= 0; i-- {
						want = append(want, keys[i])
					}
				}
				for j := 0; j < len(final)-1; j++ {
					r := rs[iFinal+j]
					if j >= len(want) {
						if r.code != eNotFound {
							t.Errorf("%s: step %d (%v) past the end: %v, want NotFound", name, j, ops[iFinal+j], r)
						}
						continue
					}
					k := want[j]
					if r.code != 0 || string(r.k) != k || !bytes.Equal(r.v, model[k]) {
						t.Errorf("%s: step %d (%v): %v, want key %q with its %d-byte value", name, j,
							ops[iFinal+j], r, k, len(model[k]))
					}
				}
				if r := rs[len(rs)-1]; r.code != 0 {
					t.Errorf("%s: Check of the parent txn: %v", name, r)
				}
			}
		}
	}
}

// TestUnplacedStepClosesOnlyUnpositioned checks the harness step-around
// itself, on ours: after a nested commit the parent's cursor that never got
// to a search is closed (its slot reopens fresh), a positioned one is kept,
// and after a nested abort both are kept (an abort frees none of the
// parent's pages).
func TestUnplacedStepClosesOnlyUnpositioned(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, end := range []opKind{opCommitNested, opAbortNested} {
		used := make([]bool, len(diffDBs))
		used[0] = true
		s := &side{eng: subject, dir: filepath.Join(t.TempDir(), "s"), flags: fNoSync, used: used}
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := s.open(); err != nil {
			t.Fatal(err)
		}
		ops, _ := uafOps(0, op{kind: opCurGetCurrent}, []op{{kind: opDel, key: uafKey(0)}})
		ops[len(ops)-1].kind = end
		// cursor 2 is positioned before the child starts
		ops = slices.Insert(ops, len(ops)-3, op{kind: opCurSet, db: 0, slot: 2, key: uafKey(20)})
		var unplaced, placed tCursor
		for i, o := range ops {
			r := s.apply(o)
			if o.kind == opCurGetCurrent && r.code == 0 {
				t.Fatalf("op %d %v: GetCurrent on a fresh cursor succeeded", i, o)
			}
			if o.kind == opBeginNested {
				unplaced, placed = s.curs[0][1], s.curs[0][2]
			}
		}
		if unplaced == nil || placed == nil {
			t.Fatalf("%s: the parent's cursors were not open when the child began (%v, %v)", opNames[end], unplaced, placed)
		}
		if len(s.curs) != 1 {
			t.Fatalf("%s: %d txn levels left, want 1", opNames[end], len(s.curs))
		}
		got1, got2 := s.curs[0][1], s.curs[0][2]
		if got2 != placed {
			t.Errorf("%s: the positioned parent cursor was not kept", opNames[end])
		}
		if end == opCommitNested && got1 != nil {
			t.Errorf("CommitNested: the unpositioned parent cursor was kept")
		}
		if end == opAbortNested && got1 != unplaced {
			t.Errorf("AbortNested: the unpositioned parent cursor was not kept")
		}
		// the slot still works: a fresh or kept cursor lands on the first key
		r := s.apply(op{kind: opCurFirst, db: 0, slot: 1})
		wantFirst := uafKey(0)
		if end == opCommitNested {
			wantFirst = uafKey(10)
		}
		if r.code != 0 || !bytes.Equal(r.k, wantFirst) {
			t.Errorf("%s: First on slot 1: %v, want %q", opNames[end], r, wantFirst)
		}
		s.endAll(false)
		s.env.close()
	}
}
