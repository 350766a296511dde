package difftest

import (
	"testing"
)

// The demotion workload: our engine moves a key's duplicates from a
// sub-tree back to an inline sub-page once deletes leave a one-leaf
// sub-tree whose values fit in half a node (FORMAT.md, "When duplicates
// move"); stock LMDB keeps the sub-tree. The generic DUPSORT workload
// rarely grows one key past the promotion point, so this one uses one to
// four keys per duplicate DB, small values and alternating phases of
// mostly puts and mostly deletes, so keys go inline -> sub-tree -> inline
// again, with every cursor op of the duplicate profile mixed in.

// genDemoteOps makes the op list of one demotion-workload sequence: one
// duplicate DB, one to three keys (in one sequence out of three 8 to 23
// keys, so that the main tree has several leaves whose boundaries move
// when nodes change size), phases of mostly puts followed by twice as
// long phases of mostly deletes.
func genDemoteOps(seed int64) []op {
	g := newGen(seed)
	g.dbs = []int{5 + g.r.Intn(4)}
	g.fewKeys = 1 + g.r.Intn(3)
	g.smallDups = true
	n := 3000 + g.r.Intn(5000)
	phase := 400 + g.r.Intn(800)
	if g.r.Intn(3) == 0 {
		g.fewKeys = 8 + g.r.Intn(16)
		n = 9000 + g.r.Intn(6000)
		phase = 1500 + g.r.Intn(1500)
	}
	ops := make([]op, n)
	for i := 0; i < n; i++ {
		w := dupWeights
		w[opDrop], w[opReopen] = 0, 0
		w[opAbort], w[opAbortNested] = 1, 3 // aborts undo the growth or the shrinking
		if i%(3*phase) < phase {
			w[opPut] *= 20
			w[opPutNoDupData] *= 40
			w[opCurPutMulti] *= 2
			w[opDelDup] /= 3
			w[opCurDelAll] = 0
		} else {
			for _, k := range []opKind{opPut, opPutNoOverwrite, opPutAppend, opAppendNext, opCurPut,
				opPutNoDupData, opCurPutMulti, opCurDelAll} {
				w[k] = min(w[k], 3)
			}
			w[opDelDup] *= 40
			w[opCurDel] *= 10
		}
		g.weights = w
		ops[i] = g.next()
		// a miss between keys more often than the generic generator makes
		if k := ops[i].kind; (k == opCurSet || k == opCurSetKey) && diffDBs[ops[i].db].kind == kBytes && g.r.Intn(3) == 0 {
			ops[i].key = append(append([]byte(nil), ops[i].key...), 'a'+byte(g.r.Intn(26)))
		}
		if k := ops[i].kind; (k == opCurSet || k == opCurSetKey) && i+1 < n && g.r.Intn(2) == 0 {
			// where a Set leaves the cursor (after a miss: the insertion
			// point, which depends on the leaf layout) is read right away
			i++
			next := []opKind{opCurNext, opCurPrev, opCurGetCurrent, opCurNextNoDup, opCurPrevNoDup}
			ops[i] = op{kind: next[g.r.Intn(len(next))], db: ops[i-1].db, slot: ops[i-1].slot}
		}
	}
	return ops
}

// TestDifferentialDupDemote: the differential test on the demotion workload.
// The run's summary line counts the demotions our engine did; the test
// fails if there were none (the workload would have missed its purpose).
func TestDifferentialDupDemote(t *testing.T) {
	if isolate(t) {
		return
	}
	dupDemote(t, subject, whole)
}

// demoteWeights: the op kinds of the demotion workload (its phases change
// the weights of dupWeights, not which kinds occur).
var demoteWeights = func() [numOpKinds]int {
	w := dupWeights
	w[opDrop], w[opReopen] = 0, 0
	return w
}()

// dupDemote runs the demotion workload with engine a on the part p of the
// seed stream.
func dupDemote(t *testing.T, a engine, p part) *opStats {
	st := differentialOf(t, a, genDemoteOps, 200000, p)
	if a.name() != "stock" && !*flagNoDemote && st.demotions == 0 && *flagSeed == 0 {
		t.Errorf("the demotion workload demoted nothing (%d sequences)", st.sequences)
	}
	return st
}
