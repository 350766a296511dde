package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	lmdb "github.com/PowerDNS/lmdb-go/lmdb"
)

// Differential random-operation test: the same generated operation list is
// applied to the engine under test and to stock LMDB; every return value and
// errno is compared, then the full contents, per-DB Stat and (on ours) the
// structural checker.
//
// Operations are plain data (key and value bytes are inside the op), and the
// executor interprets each op against whatever state the sides are in, so any
// sub-list of a failing list is runnable: that is what the shrinker uses.
//
// Flags (go test ./internal/difftest -args ... or directly after the package):
//   -difftest.seed=N        run only the sequence with seed N (printed on failure)
//   -difftest.master=N      master seed for all randomised tests (printed on failure)
//   -difftest.keepgoing=N   report (and shrink) up to N failing sequences
//   -difftest.pages         also require identical Stat page counts and depth
//   -difftest.tolerate=...  exploration only: step around known difference classes
//   -difftest.dbs=a,b       exploration only: restrict the generator to these DBs
// DLMDB_TEST_SCALE multiplies the operation budgets.

type keyKind int

const (
	kBytes keyKind = iota
	kInt8
	kInt4
	kReverse
)

type dbSpec struct {
	name  string
	flags uint
	kind  keyKind
}

// diffDBs: the first plainDBs are plain (TestDifferential), the rest sorted
// duplicates (TestDifferentialDupSort). Every env has all of them.
var diffDBs = []dbSpec{
	{"alpha", 0, kBytes},
	{"beta", 0, kBytes},
	{"int8", fIntegerKey, kInt8},
	{"int4", fIntegerKey, kInt4},
	{"rev", fReverseKey, kReverse},
	{"dups", fDupSort, kBytes},
	{"dupfix", fDupSort | fDupFixed, kBytes},
	{"dupint", fDupSort | fDupFixed | fIntegerDup, kBytes},
	{"duprev", fDupSort | fReverseDup, kReverse},
}

const plainDBs = 5

func isDup(db int) bool      { return diffDBs[db].flags&fDupSort != 0 }
func isDupFixed(db int) bool { return diffDBs[db].flags&fDupFixed != 0 }

// dupStride: the data size of a DUPFIXED DB (unsigned int for INTEGERDUP).
func dupStride(db int) int {
	if diffDBs[db].flags&fIntegerDup != 0 {
		return 4
	}
	return 8
}

const cursorSlots = 3

type opKind uint8

const (
	opPut opKind = iota
	opPutNoOverwrite
	opPutAppend  // Append with the op's own key (often out of order)
	opAppendNext // Append with a key just above the current last key
	opPutReserve
	opGet
	opDel
	opCurFirst
	opCurLast
	opCurNext
	opCurPrev
	opCurSet
	opCurSetKey
	opCurSetRange
	opCurGetCurrent
	opCurPut        // flags in op.flags
	opCurPutReserve // flags in op.flags
	opCurPutCurrent // MDB_CURRENT with the cursor's own key
	opCurDel
	opCurClose
	opBeginNested
	opCommitNested
	opAbortNested
	opCommit
	opAbort
	opReopen
	opReadView
	opStat
	opDrop
	opCheck // the structural checker on the current write txn (ours); stock has none
	// duplicate-only kinds (weight 0 in plain runs)
	opDelDup // txn Del of one key/value pair
	opPutNoDupData
	opCurGetBoth
	opCurGetBothRange
	opCurFirstDup
	opCurLastDup
	opCurNextDup
	opCurPrevDup
	opCurNextNoDup
	opCurPrevNoDup
	opCurCount
	opCurDelAll // cursor Del with MDB_NODUPDATA
	opCurGetMultiple
	opCurNextMultiple
	opCurPutMulti
	opCurGetBatch // GetBatch (batch_diff_test.go); parameters packed in flags
	numOpKinds
)

var opNames = [...]string{"Put", "PutNoOverwrite", "PutAppend", "AppendNext", "PutReserve", "Get", "Del",
	"CurFirst", "CurLast", "CurNext", "CurPrev", "CurSet", "CurSetKey", "CurSetRange", "CurGetCurrent",
	"CurPut", "CurPutReserve", "CurPutCurrent", "CurDel", "CurClose", "BeginNested", "CommitNested",
	"AbortNested", "Commit", "Abort", "Reopen", "ReadView", "Stat", "Drop", "Check",
	"DelDup", "PutNoDupData", "CurGetBoth", "CurGetBothRange", "CurFirstDup", "CurLastDup", "CurNextDup",
	"CurPrevDup", "CurNextNoDup", "CurPrevNoDup", "CurCount", "CurDelAll", "CurGetMultiple",
	"CurNextMultiple", "CurPutMulti", "CurGetBatch"}

// opWeights: relative frequency of each kind in generated sequences.
var opWeights = [numOpKinds]int{
	opPut: 180, opPutNoOverwrite: 40, opPutAppend: 15, opAppendNext: 40, opPutReserve: 30,
	opGet: 120, opDel: 80, opCurFirst: 25, opCurLast: 25, opCurNext: 80, opCurPrev: 50,
	opCurSet: 30, opCurSetKey: 30, opCurSetRange: 50, opCurGetCurrent: 30, opCurPut: 30,
	opCurPutReserve: 8, opCurPutCurrent: 30, opCurDel: 40, opCurClose: 10, opBeginNested: 15,
	opCommitNested: 10, opAbortNested: 7, opCommit: 15, opAbort: 5, opReopen: 1, opReadView: 5,
	opStat: 5, opDrop: 1, opCheck: 3,
}

// dupWeights: plain kinds plus the duplicate ones.
var dupWeights = func() [numOpKinds]int {
	w := opWeights
	w[opPutReserve], w[opCurPutReserve] = 0, 0 // MDB_RESERVE is not allowed with DUPSORT
	w[opDelDup], w[opPutNoDupData] = 60, 20
	w[opDel] = 20 // lmdb-go cannot pass a NULL data item, so this mostly compares errors
	w[opCurGetBoth], w[opCurGetBothRange] = 30, 30
	w[opCurFirstDup], w[opCurLastDup], w[opCurNextDup], w[opCurPrevDup] = 15, 15, 50, 30
	w[opCurNextNoDup], w[opCurPrevNoDup], w[opCurCount], w[opCurDelAll] = 40, 25, 20, 10
	w[opCurGetMultiple], w[opCurNextMultiple], w[opCurPutMulti] = 10, 15, 15
	return w
}()

type op struct {
	kind  opKind
	db    int
	slot  int
	key   []byte
	val   []byte
	flags uint
}

func showBytes(b []byte) string {
	if b == nil {
		return "nil"
	}
	if len(b) <= 12 {
		return fmt.Sprintf("%q", b)
	}
	return fmt.Sprintf("%q...(%d bytes, fnv %08x)", b[:12], len(b), fnv32(b))
}

func fnv32(b []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range b {
		h ^= uint32(c)
		h *= 16777619
	}
	return h
}

func (o op) String() string {
	return fmt.Sprintf("%s db=%s slot=%d key=%s val=%s flags=%#x", opNames[o.kind], diffDBs[o.db].name,
		o.slot, showBytes(o.key), showBytes(o.val), o.flags)
}

// ---------------------------------------------------------------- generator

type gen struct {
	r       *rand.Rand
	pools   [][][]byte
	weights [numOpKinds]int
	small   bool // small values only (bulk-growth phases)
	focus   int  // >=0: most ops go to this DB with mostly fresh, longer keys
	reuse   int  // percentage of keys taken from the pool
	dbs     []int
	vpool   [][]byte // data items seen in duplicate DBs
	pairs   map[int][][2][]byte
	// the demotion workload (demote_diff_test.go): few keys per duplicate
	// DB, each collecting many small values
	fewKeys   int
	keySet    map[int][][]byte
	smallDups bool
	// prefix-compression shapes (genPrefixOps): fresh byte keys and
	// duplicate values are often one of a few long shared prefixes plus a
	// short tail (empty: a key that is a prefix of others; one byte: keys
	// that share all but their last)
	prefixes [][]byte
}

func newGen(seed int64) *gen {
	return &gen{r: rand.New(rand.NewSource(seed)), pools: make([][][]byte, len(diffDBs)), weights: opWeights,
		focus: -1, reuse: 60, dbs: []int{0, 1, 2, 3, 4}}
}

func (g *gen) fill(n int) []byte {
	b := make([]byte, n)
	x := g.r.Uint64() | 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

func (g *gen) value() []byte {
	var n int
	p := g.r.Intn(100)
	if g.small {
		p = p * 70 / 100
	}
	switch {
	case p < 8:
		n = 0
	case p < 45:
		n = 1 + g.r.Intn(16)
	case p < 70:
		n = 17 + g.r.Intn(200)
	case p < 84:
		n = 217 + g.r.Intn(1800)
	case p < 94:
		n = 2000 + g.r.Intn(2400) // around the overflow threshold
	default:
		n = 4400 + g.r.Intn(16000) // several overflow pages
	}
	return g.fill(n)
}

func (g *gen) freshKey(kind keyKind) []byte {
	switch kind {
	case kInt8:
		b := make([]byte, 8)
		v := uint64(g.r.Intn(4000))
		if g.r.Intn(10) == 0 {
			v = g.r.Uint64()
		}
		binary.NativeEndian.PutUint64(b, v)
		return b
	case kInt4:
		b := make([]byte, 4)
		v := uint32(g.r.Intn(4000))
		if g.r.Intn(10) == 0 {
			v = g.r.Uint32()
		}
		binary.NativeEndian.PutUint32(b, v)
		return b
	}
	if b := g.shapedTail(511, 'a'); b != nil {
		return b
	}
	var n int
	switch p := g.r.Intn(1000); {
	case p < 5:
		n = 512 // one over the limit: BadValSize on both
	case p < 30:
		n = 511
	case p < 90:
		n = 100 + g.r.Intn(411)
	case p < 250:
		n = 17 + g.r.Intn(83)
	default:
		n = 1 + g.r.Intn(1+g.r.Intn(16))
	}
	if g.focus >= 0 && n < 40 && g.r.Intn(2) == 0 {
		n = 40 + g.r.Intn(200)
	}
	b := make([]byte, n)
	alpha := 4 + g.r.Intn(20) // small alphabets give shared prefixes/suffixes
	for i := range b {
		b[i] = 'a' + byte(g.r.Intn(alpha))
	}
	if g.r.Intn(20) == 0 && n > 0 {
		b[g.r.Intn(n)] = byte(g.r.Intn(256))
	}
	return b
}

// key returns a key for db: usually one seen before, sometimes a fresh one.
func (g *gen) key(db int) []byte {
	if g.fewKeys > 0 && isDup(db) && g.r.Intn(100) < 98 {
		if g.keySet == nil {
			g.keySet = map[int][][]byte{}
		}
		if len(g.keySet[db]) < g.fewKeys {
			k := g.freshKey(diffDBs[db].kind)
			for len(k) == 0 || len(k) > 64 {
				k = g.freshKey(diffDBs[db].kind)
			}
			g.keySet[db] = append(g.keySet[db], k)
			return k
		}
		k := g.keySet[db][g.r.Intn(len(g.keySet[db]))]
		if diffDBs[db].kind == kBytes && len(k) > 1 && g.r.Intn(16) == 0 {
			// a near miss: lookups that fail between keys
			if g.r.Intn(2) == 0 {
				return append([]byte(nil), k[:len(k)-1]...)
			}
			return append(append([]byte(nil), k...), 'a'+byte(g.r.Intn(26)))
		}
		return k
	}
	pool := g.pools[db]
	reuse := g.reuse
	if isDup(db) {
		reuse = 85 // few keys, many duplicates each
	}
	if len(pool) > 0 && g.r.Intn(100) < reuse {
		k := pool[g.r.Intn(len(pool))]
		if diffDBs[db].kind != kInt8 && diffDBs[db].kind != kInt4 && g.r.Intn(15) == 0 && len(k) > 1 {
			// a near miss: a prefix or an extension of an existing key
			if g.r.Intn(2) == 0 {
				return append([]byte(nil), k[:len(k)-1]...)
			}
			return append(append([]byte(nil), k...), 'a'+byte(g.r.Intn(26)))
		}
		return k
	}
	k := g.freshKey(diffDBs[db].kind)
	if len(k) <= 511 {
		if len(pool) < 2000 {
			g.pools[db] = append(pool, k)
		} else {
			pool[g.r.Intn(len(pool))] = k
		}
	}
	return k
}

func (g *gen) pick() opKind {
	total := 0
	for _, w := range g.weights {
		total += w
	}
	x := g.r.Intn(total)
	for k, w := range g.weights {
		if x < w {
			return opKind(k)
		}
		x -= w
	}
	panic("unreachable")
}

func (g *gen) next() op {
	o := op{kind: g.pick(), db: g.dbs[g.r.Intn(len(g.dbs))], slot: g.r.Intn(cursorSlots)}
	if g.focus >= 0 && g.r.Intn(100) < 75 {
		o.db = g.focus
	}
	if isDup(o.db) {
		return g.nextDup(o)
	}
	switch o.kind {
	case opPut, opPutNoOverwrite, opPutAppend, opAppendNext, opPutReserve, opCurPut, opCurPutReserve:
		o.key = g.key(o.db)
		o.val = g.value()
		if g.r.Intn(200) == 0 {
			o.key = []byte{} // empty key: BadValSize on both
		}
		if o.kind == opCurPut || o.kind == opCurPutReserve {
			o.flags = []uint{0, 0, fNoOverwrite, fAppend}[g.r.Intn(4)]
		}
		if o.kind == opAppendNext {
			o.flags = uint(g.r.Intn(1000))
		}
	case opCurPutCurrent:
		o.val = g.value()
		o.flags = uint(g.r.Intn(2)) // 1: through PutReserve
	case opGet, opDel:
		o.key = g.key(o.db)
		if g.r.Intn(300) == 0 {
			o.key = []byte{}
		}
	case opCurSet, opCurSetKey, opCurSetRange, opReadView:
		// never an empty key: lmdb-go crashes on Set* with an empty key
		for len(o.key) == 0 {
			o.key = g.key(o.db)
		}
		if diffDBs[o.db].kind == kBytes && g.r.Intn(10) == 0 {
			k := g.freshKey(kBytes)
			if len(k) > 0 {
				o.key = k
			}
		}
	case opReopen, opCommit:
		o.flags = uint(g.r.Intn(2))
	case opCurGetBatch:
		return g.genBatch(o)
	}
	return o
}

// genOps makes the op list for one seed. One sequence in four is a
// grow-then-shrink run (bulk small puts, then mostly deletes) so that trees
// get deep and splits, merges and rebalancing happen often.
// dupValue: a data item for a duplicate DB (at most 511 bytes; fixed 8 or 4
// bytes in DUPFIXED ones).
func (g *gen) dupValue(db int) []byte {
	if len(g.vpool) > 0 && g.r.Intn(100) < 40 {
		if v := g.vpool[g.r.Intn(len(g.vpool))]; !isDupFixed(db) || len(v) == dupStride(db) {
			return v
		}
	}
	v := g.freshDupValue(db)
	if len(g.vpool) < 500 {
		g.vpool = append(g.vpool, v)
	} else {
		g.vpool[g.r.Intn(len(g.vpool))] = v
	}
	return v
}

func (g *gen) freshDupValue(db int) []byte {
	if isDupFixed(db) {
		n := dupStride(db)
		b := make([]byte, n)
		v := uint64(g.r.Intn(300))
		if g.smallDups {
			v = uint64(g.r.Intn(1500)) // enough distinct values for a sub-tree
		}
		if g.r.Intn(8) == 0 {
			v = g.r.Uint64()
		}
		if n == 8 {
			binary.NativeEndian.PutUint64(b, v)
		} else {
			binary.NativeEndian.PutUint32(b, uint32(v))
		}
		return b
	}
	if b := g.shapedTail(300, 'A'); b != nil {
		return b
	}
	var n int
	switch p := g.r.Intn(100); {
	case g.smallDups && p >= 3:
		n = 1 + g.r.Intn(12)
	case p < 1:
		n = 512 // too big for a duplicate: BadValSize
	case p < 50:
		n = 1 + g.r.Intn(8)
	case p < 90:
		n = 9 + g.r.Intn(92)
	default:
		n = 100 + g.r.Intn(412)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = 'A' + byte(g.r.Intn(6))
	}
	return b
}

func (g *gen) nextDup(o op) op {
	switch o.kind {
	case opPutReserve:
		o.kind = opPut
	case opCurPutReserve:
		o.kind = opCurPut
	}
	switch o.kind {
	case opPut, opPutNoOverwrite, opPutAppend, opAppendNext, opCurPut, opPutNoDupData, opDelDup,
		opCurGetBoth, opCurGetBothRange:
		o.key = g.key(o.db)
		o.val = g.dupValue(o.db)
		if o.kind == opCurPut {
			o.flags = []uint{0, 0, fNoOverwrite, fNoDupData, fAppend}[g.r.Intn(5)]
		}
		if o.kind == opAppendNext {
			o.flags = uint(g.r.Intn(1000))
		}
		if g.pairs == nil {
			g.pairs = map[int][][2][]byte{}
		}
		pp := g.pairs[o.db]
		limit := 1000
		if g.fewKeys > 0 {
			limit = 8000
		}
		switch o.kind {
		case opDelDup, opCurGetBoth, opCurGetBothRange:
			if len(pp) > 0 && g.r.Intn(100) < 70 {
				i := g.r.Intn(len(pp))
				p := pp[i]
				o.key, o.val = p[0], p[1]
				if g.fewKeys > 0 && o.kind == opDelDup {
					// the demotion workload: a pair is deleted once
					pp[i] = pp[len(pp)-1]
					g.pairs[o.db] = pp[:len(pp)-1]
				}
			}
		default:
			if len(pp) < limit {
				g.pairs[o.db] = append(pp, [2][]byte{o.key, o.val})
			} else {
				pp[g.r.Intn(len(pp))] = [2][]byte{o.key, o.val}
			}
		}
	case opCurPutCurrent:
		o.flags = 0 // re-put of the current value: MDB_CURRENT may not move a duplicate
	case opCurPutMulti:
		o.key = g.key(o.db)
		n := 1 + g.r.Intn(40)
		if g.r.Intn(10) == 0 {
			n = 200 + g.r.Intn(800) // more than one page of duplicates
		}
		for i := 0; i < n; i++ {
			v := g.dupValue(o.db)
			o.val = append(o.val, v...)
			if g.fewKeys > 0 && isDupFixed(o.db) && len(v) == dupStride(o.db) && len(g.pairs[o.db]) < 8000 {
				if g.pairs == nil {
					g.pairs = map[int][][2][]byte{}
				}
				g.pairs[o.db] = append(g.pairs[o.db], [2][]byte{o.key, v})
			}
		}
	case opGet, opDel, opCurSet, opCurSetKey, opCurSetRange, opReadView:
		for len(o.key) == 0 {
			o.key = g.key(o.db)
		}
	case opReopen, opCommit:
		o.flags = uint(g.r.Intn(2))
	case opCurGetBatch:
		return g.genBatch(o)
	}
	if (o.kind == opCurGetMultiple || o.kind == opCurNextMultiple || o.kind == opCurPutMulti) && !isDupFixed(o.db) &&
		g.r.Intn(5) != 0 {
		o.db = 6 // mostly on the DUPFIXED DB; sometimes elsewhere to compare the error
		if o.kind == opCurPutMulti {
			return g.nextDup(op{kind: opCurPutMulti, db: 6, slot: o.slot})
		}
	}
	if o.kind == opCurPutMulti && !isDupFixed(o.db) {
		o.val = []byte("xxxxxxxxyyyyyyyy") // a whole number of strides: the error must be Incompatible
	}
	return o
}

func genOps(seed int64) []op {
	return genOpsFor(seed, []int{0, 1, 2, 3, 4}, opWeights)
}

func genDupOps(seed int64) []op {
	return genOpsFor(seed, []int{5, 6, 7, 8}, dupWeights)
}

// genPrefixOps and genPrefixDupOps are genOps and genDupOps whose fresh
// keys and duplicate values (in half of the sequences) come from a few long
// shared prefixes with short tails, the shapes prefix compression meets.
func genPrefixOps(seed int64) []op {
	return genOpsWith(seed, []int{0, 1, 2, 3, 4}, opWeights, prefixShapes)
}

func genPrefixDupOps(seed int64) []op {
	return genOpsWith(seed, []int{5, 6, 7, 8}, dupWeights, prefixShapes)
}

func prefixShapes(g *gen) {
	if g.r.Intn(2) == 0 {
		return
	}
	for i := 0; i < 1+g.r.Intn(3); i++ {
		p := make([]byte, 16+g.r.Intn(300))
		for j := range p {
			p[j] = 'a' + byte(g.r.Intn(3))
		}
		g.prefixes = append(g.prefixes, p)
	}
}

// shapedTail is one of g's shared prefixes (cut to at most max bytes) with
// a tail of 0..8 bytes, or nil when g has none or the draw says no.
func (g *gen) shapedTail(max int, letter byte) []byte {
	if len(g.prefixes) == 0 || g.r.Intn(2) == 0 {
		return nil
	}
	p := g.prefixes[g.r.Intn(len(g.prefixes))]
	if len(p) > max-8 {
		p = p[:max-8]
	}
	b := append([]byte(nil), p...)
	switch t := g.r.Intn(10); {
	case t == 0 && len(b) > 1:
		b = b[:1+g.r.Intn(len(b)-1)] // a prefix of the others
	case t < 4:
		b = append(b, letter+byte(g.r.Intn(26))) // all but the last byte shared
	default:
		for n := g.r.Intn(9); n > 0; n-- {
			b = append(b, letter+byte(g.r.Intn(26)))
		}
	}
	return b
}

func genOpsFor(seed int64, dbs []int, weights [numOpKinds]int) []op {
	return genOpsWith(seed, dbs, weights, nil)
}

func genOpsWith(seed int64, dbs []int, weights [numOpKinds]int, setup func(*gen)) []op {
	if *flagDBs != "" {
		// exploration: only the named DBs
		dbs = nil
		for i, d := range diffDBs {
			if strings.Contains(","+*flagDBs+",", ","+d.name+",") {
				dbs = append(dbs, i)
			}
		}
		if !slices.ContainsFunc(dbs, isDupFixed) {
			weights[opCurGetMultiple], weights[opCurNextMultiple], weights[opCurPutMulti] = 0, 0, 0
		}
	}
	g := newGen(seed)
	g.dbs, g.weights = dbs, weights
	if setup != nil {
		setup(g)
	}
	opWeights := weights
	n := 500 + g.r.Intn(2500)
	bulk := g.r.Intn(4) == 0
	if bulk {
		n = 3000 + g.r.Intn(6000)
		g.focus = dbs[g.r.Intn(len(dbs))]
		g.reuse = 25
	} else if g.r.Intn(3) != 0 {
		g.weights[opDrop] = 0 // dropping empties a DB: only in a third of the runs
	}
	ops := make([]op, n)
	for i := range ops {
		if bulk {
			g.weights = opWeights
			g.small = i < n*2/3
			if g.small {
				g.weights[opPut] *= 8
				g.weights[opAppendNext] *= 4
				g.weights[opDel], g.weights[opCurDel] = 0, 0
				g.weights[opAbort], g.weights[opAbortNested], g.weights[opDrop] = 0, 0, 0
				g.weights[opReopen] = 0
			} else {
				g.weights[opDel] *= 6
				g.weights[opCurDel] *= 6
				g.weights[opCurNext] *= 2
				g.weights[opDrop] = 0
			}
		}
		ops[i] = g.next()
	}
	return ops
}

// ---------------------------------------------------------------- executor

type result struct {
	code int
	k, v []byte
	kv   bool
	note string
}

func (r result) String() string {
	s := errName(r.code)
	if r.kv {
		s += fmt.Sprintf(" k=%s v=%s", showBytes(r.k), showBytes(r.v))
	}
	if r.note != "" {
		s += " [" + r.note + "]"
	}
	return s
}

func (r result) equal(o result) bool {
	return r.code == o.code && r.kv == o.kv && bytes.Equal(r.k, o.k) && bytes.Equal(r.v, o.v) && r.note == o.note
}

type side struct {
	used  []bool // DBs the op list refers to (only those are opened)
	flags uint   // env flags
	eng   engine
	dir   string
	env   tEnv
	dbis  []uint32
	txns  []tTxn
	curs  [][]tCursor // per txn level: len(diffDBs)*cursorSlots
	// stock sub-cursor bug step-arounds (stockdup_test.go)
	marks       map[tCursor]uint8
	lastKey     map[tCursor][]byte
	freshCursor bool
	pendingNote string
	pastEnd     map[tCursor]bool
	doomed      map[tCursor]bool
	placed      map[tCursor]bool   // see unplacedStep
	eofMaybe    map[tCursor]bool   // see eofDelStep
	eofKey      map[tCursor][]byte // ... and the key each cursor stands on
	// shapeFree: the two engines' trees may differ in shape (a counted
	// engine against stock; see pastEndStep)
	shapeFree bool
	// leafShapeFree: their leaves may end in different places too (a
	// prefix-compressed engine; see leafShapeStep)
	leafShapeFree bool
	eofShape      map[tCursor]bool
}

// leafShapeStep: with a prefix-compressed engine against stock's plain DBs
// the two sides' leaves end in different places (compressed leaves hold
// more items). A cursor left with stock's end-of-data mark -- by Last, by
// an op that answered NotFound, by an APPEND put through it -- continues
// after a later write to its DB according to where its leaf ends: its Next
// finds items written after it when they landed on its leaf and answers
// NotFound when a split put them on another (seed 3888304956318942508 of
// TestDifferentialPrefix at scale 10: plain ours and stock NotFound after a
// split, ours-prefix, without one, the new item). That is the end-of-page
// behaviour plain ours reproduces from stock and shares nothing with the
// compression, so such cursors are closed on both sides before the next
// write to their DB (a cursor's own write closes it after the write; a
// parent txn's cursor when its child ends).
func (s *side) leafShapeStep(o op, r *result) {
	if !s.leafShapeFree || len(s.curs) == 0 {
		return
	}
	if s.eofShape == nil {
		s.eofShape = map[tCursor]bool{}
	}
	if s.doomed == nil {
		s.doomed = map[tCursor]bool{}
	}
	top := s.curs[len(s.curs)-1]
	switch o.kind {
	case opPut, opPutNoOverwrite, opPutAppend, opAppendNext, opPutReserve, opDel, opDelDup, opPutNoDupData,
		opCurPut, opCurPutReserve, opCurPutCurrent, opCurDel, opCurDelAll, opCurPutMulti, opDrop:
		n := 0
		for lv, lvl := range s.curs {
			for slot := 0; slot < cursorSlots; slot++ {
				c := lvl[o.db*cursorSlots+slot]
				if c == nil || !s.eofShape[c] {
					continue
				}
				n++
				delete(s.eofShape, c)
				if lv == len(s.curs)-1 {
					c.close()
					lvl[o.db*cursorSlots+slot] = nil
				} else {
					s.doomed[c] = true
				}
			}
		}
		if n > 0 {
			r.note = joinNote(r.note, fmt.Sprintf("%d cursor(s) at the end closed (position depends on leaf ends)", n))
		}
	}
	if !isCursorOp(o.kind) {
		return
	}
	mine := top[o.db*cursorSlots+o.slot]
	if mine == nil {
		return
	}
	// (GetMultiple/NextMultiple always: stock's empty success there is
	// accepted where ours answers NotFound, so the codes may differ)
	if o.kind == opCurLast || r.code == eNotFound || o.kind == opCurGetMultiple || o.kind == opCurNextMultiple ||
		((o.kind == opCurPut || o.kind == opCurPutReserve) && o.flags&fAppend != 0) {
		s.eofShape[mine] = true
	} else if o.kind != opCurGetCurrent && o.kind != opCurCount {
		delete(s.eofShape, mine)
	}
}

// pastEndStep steps around a stock LMDB 0.9.33 memory-safety bug: a failed
// MDB_SET/MDB_SET_KEY leaves a cursor one past the end of its leaf; when a
// rebalance then moves that leaf's last node to the right neighbour
// (mdb_node_move), stock fixes up only cursors on the moved index, and the
// stale cursor's next Prev reads the slot beyond the page's slot array
// (garbage values or a crash; ours stands before the moved item).  After a
// failed Set the harness probes GetCurrent on both sides (NotFound = past
// the end; the probe's result is compared) and marks the cursor; a later
// successful delete in that DB closes marked cursors (those of enclosing
// txns when their child ends).  quirks2_test.go pins ours' behaviour.
func (s *side) pastEndStep(o op, self tCursor, r *result) {
	if isDup(o.db) || len(s.curs) == 0 {
		return
	}
	if s.pastEnd == nil {
		s.pastEnd, s.doomed = map[tCursor]bool{}, map[tCursor]bool{}
	}
	top := s.curs[len(s.curs)-1]
	switch o.kind {
	case opCommitNested, opAbortNested:
		for i, c := range top {
			if c != nil && s.doomed[c] {
				delete(s.doomed, c)
				delete(s.pastEnd, c)
				c.close()
				top[i] = nil
			}
		}
		return
	case opCurGetCurrent:
		return
	case opCurDel:
		if r.code != 0 {
			return
		}
	}
	mine := top[o.db*cursorSlots+o.slot]
	// an op refused before it touched the cursor leaves it where it was:
	// a bad key size or EINVAL, or a PutCurrent whose GetCurrent already
	// said NotFound (past the end; master seed 73866129795224 of
	// TestDifferentialWriteMap, seed 2559539385961565190, lost the mark
	// that way)
	untouched := r.code == eBadValSize || r.code == 22 /* EINVAL */ || (o.kind == opCurPutCurrent && r.note == "getcurrent")
	switch o.kind {
	case opCurFirst, opCurLast, opCurNext, opCurPrev, opCurSet, opCurSetKey, opCurSetRange, opCurPut,
		opCurPutReserve, opCurPutCurrent, opCurDel:
		if untouched {
			break
		}
		if self != nil {
			delete(s.pastEnd, self)
		}
		if mine != nil {
			delete(s.pastEnd, mine)
		}
	}
	if (o.kind == opCurSet || o.kind == opCurSetKey) && r.code == eNotFound && mine != nil && s.shapeFree {
		// A failed SET leaves the cursor at the insertion point in the leaf
		// the search reached: past that leaf's end when the key falls after
		// its last item, else on the successor. Which one depends on where
		// the leaf boundaries lie, and a counted tree's shape differs from
		// stock's plain one (counted branch nodes split differently; seed
		// 4273453413055001311 of TestDifferentialCounted: GetCurrent ok on
		// ours-counted, NotFound on stock, while plain ours, same shape as
		// stock there, says NotFound too). The position is not comparable:
		// both sides close the cursor.
		mine.close()
		top[o.db*cursorSlots+o.slot] = nil
		r.note += " closed (position depends on tree shape)"
		return
	}
	if (o.kind == opCurSet || o.kind == opCurSetKey) && r.code == eNotFound && mine != nil {
		_, _, err := mine.get(nil, nil, cGetCurrent)
		code := s.eng.code(err)
		r.note += " probe " + errName(code)
		if code == eNotFound {
			s.pastEnd[mine] = true
		}
		return
	}
	if (o.kind == opDel || o.kind == opCurDel) && r.code == 0 {
		for lv, lvl := range s.curs {
			for slot := 0; slot < cursorSlots; slot++ {
				c := lvl[o.db*cursorSlots+slot]
				if c == nil || !s.pastEnd[c] || (o.kind == opCurDel && c == mine) {
					continue
				}
				if lv == len(s.curs)-1 {
					delete(s.pastEnd, c)
					c.close()
					lvl[o.db*cursorSlots+slot] = nil
				} else {
					s.doomed[c] = true
				}
			}
		}
	}
}

// unplacedStep steps around a stock LMDB 0.9.33 use-after-free (ASan:
// heap-use-after-free in mdb_page_search; seed 1877669999438715938). A
// cursor opened on a named DB that this txn has not read yet gets a root
// page pointer (mc_pg[0]) from mdb_cursor_init without being positioned.
// Stock's fix-ups skip such a cursor: a root split keeps it on the old
// root (now a leaf under the new root), and a later page touch only fixes
// cursors at least as deep as the touching one. When a nested txn then
// copies that page and commits, the merge frees the parent's copy, and the
// parent cursor's next First/Last (also Next/Prev, which start with them on
// an unpositioned cursor; Set* reset the pointer) reads the freed page. The
// harness notes, per cursor, whether a cursor op on it ever got as far as
// a search (ok, NotFound or KeyExist; EINVAL or BadValSize stop before
// one), and when a nested txn commits it closes the parent's cursors that
// never did, on both sides alike. An unpositioned cursor acts like a fresh
// one, which the next op on the slot opens, so nothing compared is lost;
// stockuaf_test.go pins ours' behaviour on the kept cursor.
func (s *side) unplacedStep(o op, r result) {
	if s.placed == nil {
		s.placed = map[tCursor]bool{}
	}
	if isCursorOp(o.kind) && (r.code == 0 || r.code == eNotFound || r.code == eKeyExist) {
		if c := s.topCursor(o.db, o.slot); c != nil {
			s.placed[c] = true
		}
	}
	if o.kind != opCommitNested || r.note == "noop" || len(s.curs) == 0 {
		return
	}
	top := s.curs[len(s.curs)-1]
	for i, c := range top {
		if c != nil && !s.placed[c] {
			c.close()
			top[i] = nil
		}
	}
}

// seqEnvFlags picks the env flags of a sequence from its seed: most runs use
// a plain NoSync env, some WriteMap, some NoMetaSync.
func seqEnvFlags(seed int64) uint {
	switch rand.New(rand.NewSource(seed ^ 0x5eed)).Intn(6) {
	case 0:
		return fNoSync | uint(lmdb.WriteMap)
	case 1:
		return uint(lmdb.NoMetaSync) | uint(lmdb.NoSync)
	}
	return fNoSync
}

func (s *side) open() error {
	env, err := s.eng.openEnv(s.dir, envOpts{mapSize: 256 << 20, maxDBs: 16, flags: s.flags})
	if err != nil {
		return fmt.Errorf("%s: open %s: %w", s.eng.name(), s.dir, err)
	}
	s.env = env
	txn, err := env.begin(nil, 0)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", s.eng.name(), err)
	}
	s.dbis = make([]uint32, len(diffDBs))
	for i, d := range diffDBs {
		if !s.used[i] {
			continue
		}
		dbi, err := txn.openDBI(d.name, d.flags|fCreate)
		if err != nil {
			txn.abort()
			return fmt.Errorf("%s: open dbi %s: %w", s.eng.name(), d.name, err)
		}
		s.dbis[i] = dbi
	}
	if err := txn.commit(); err != nil {
		return fmt.Errorf("%s: commit dbis: %w", s.eng.name(), err)
	}
	return nil
}

func (s *side) res(err error) result { return result{code: s.eng.code(err)} }

// persistCheck copies an in-memory side's committed state to a data file,
// opens that file as a file env and compares it with the live env: every
// used DB with the same flags and contents, and a sound page accounting.
func (s *side) persistCheck() error {
	m := s.env.(memEnv)
	snap, err := m.snapshotFile("reopen")
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer os.RemoveAll(snap)
	if probs, _ := walkEnv(snap); len(probs) > 0 {
		return fmt.Errorf("page accounting of the copy: %v", probs)
	}
	fe, err := m.openSnapshot(snap)
	if err != nil {
		return fmt.Errorf("open the copy: %w", err)
	}
	defer fe.close()
	ft, err := fe.begin(nil, fReadonly)
	if err != nil {
		return err
	}
	defer ft.abort()
	for i, d := range diffDBs {
		if !s.used[i] {
			continue
		}
		fdbi, err := ft.openDBI(d.name, 0)
		if err != nil {
			return fmt.Errorf("the copy has no DB %s: %w", d.name, err)
		}
		const ext = 0x80 | 0x100 // Counted, PrefixCompression: ours only
		if fl, err := ft.dbFlags(fdbi); err != nil || fl&^uint(ext) != d.flags {
			return fmt.Errorf("DB %s in the copy: flags %#x, %v; want %#x", d.name, fl, err, d.flags)
		}
		live, _, err := dumpDB(s.eng, s.env, s.dbis[i])
		if err != nil {
			return fmt.Errorf("dump %s: %w", d.name, err)
		}
		got, _, err := dumpTxnDB(s.eng, ft, fdbi)
		if err != nil {
			return fmt.Errorf("dump %s in the copy: %w", d.name, err)
		}
		if len(got) != len(live) {
			return fmt.Errorf("DB %s: the copy has %d entries, the env %d", d.name, len(got), len(live))
		}
		for j := range live {
			if !bytes.Equal(got[j].k, live[j].k) || !bytes.Equal(got[j].v, live[j].v) {
				return fmt.Errorf("DB %s entry %d: copy %s/%s, env %s/%s", d.name, j, showBytes(got[j].k),
					showBytes(got[j].v), showBytes(live[j].k), showBytes(live[j].v))
			}
		}
	}
	return nil
}

func (s *side) ensureTxn() error {
	if len(s.txns) > 0 {
		return nil
	}
	t, err := s.env.begin(nil, 0)
	if err != nil {
		return err
	}
	s.txns = append(s.txns, t)
	s.curs = append(s.curs, make([]tCursor, len(diffDBs)*cursorSlots))
	return nil
}

func (s *side) top() tTxn { return s.txns[len(s.txns)-1] }

func (s *side) cursor(db, slot int) (tCursor, error) {
	lvl := s.curs[len(s.curs)-1]
	i := db*cursorSlots + slot
	if lvl[i] == nil {
		c, err := s.top().cursor(s.dbis[db])
		if err != nil {
			return nil, err
		}
		lvl[i] = c
	}
	return lvl[i], nil
}

// forgetCursors closes every cursor on db in the innermost txn except the
// slots listed. It runs after each successful MDB_APPEND put, on both sides:
// stock LMDB 0.9.33 does not tell other cursors about a root split caused
// by an append (a cursor left on the old last item then returns NotFound for
// Next although an item follows; ours returns the item). That is a stock
// defect we must not require ours to copy, so the harness does not look at
// other cursors across an append.
func (s *side) forgetCursors(db int, keep ...int) {
	for slot := 0; slot < cursorSlots; slot++ {
		kept := false
		for _, k := range keep {
			kept = kept || k == slot
		}
		if !kept {
			s.dropCursor(db, slot)
		}
	}
}

// dropCursor closes one cursor slot of the innermost txn.
func (s *side) dropCursor(db, slot int) {
	lvl := s.curs[len(s.curs)-1]
	if c := lvl[db*cursorSlots+slot]; c != nil {
		c.close()
		lvl[db*cursorSlots+slot] = nil
	}
}

func (s *side) closeTopCursors() {
	lvl := s.curs[len(s.curs)-1]
	for i, c := range lvl {
		if c != nil {
			c.close()
			lvl[i] = nil
		}
	}
}

func (s *side) pop() {
	s.txns = s.txns[:len(s.txns)-1]
	s.curs = s.curs[:len(s.curs)-1]
}

// endTop commits or aborts the innermost txn; returns the commit error code.
func (s *side) endTop(commit bool) int {
	s.closeTopCursors()
	t := s.top()
	s.pop()
	if commit {
		return s.eng.code(t.commit())
	}
	t.abort()
	return 0
}

func (s *side) endAll(commit bool) string {
	var codes []string
	for len(s.txns) > 0 {
		codes = append(codes, errName(s.endTop(commit)))
	}
	return strings.Join(codes, ",")
}

// successor returns a key that sorts after last in the db's order, or nil.
func successor(kind keyKind, last []byte, bump uint) []byte {
	switch kind {
	case kInt8:
		v := binary.NativeEndian.Uint64(last) + 1 + uint64(bump)
		b := make([]byte, 8)
		binary.NativeEndian.PutUint64(b, v)
		return b
	case kInt4:
		v := binary.NativeEndian.Uint32(last) + 1 + uint32(bump)
		b := make([]byte, 4)
		binary.NativeEndian.PutUint32(b, v)
		return b
	case kReverse:
		if len(last) >= 500 {
			return nil
		}
		return append([]byte{byte(bump)}, last...)
	}
	if len(last) < 40 {
		return append(append([]byte(nil), last...), byte(bump))
	}
	for i := len(last) - 1; i >= 0; i-- {
		if last[i] < 0xff {
			b := append([]byte(nil), last[:i+1]...)
			b[i]++
			return b
		}
	}
	return nil
}

// unsetKey: see the FirstDup case in apply1.
var unsetKey = []byte("\xff(key not set)")

// unsetVal: the same for the data item of GetMultiple.
var unsetVal = []byte("\xff(value not set)")

// apply runs one op on the side and reports its observable result. A Go
// panic inside the engine is reported as a result too.
func (s *side) apply(o op) (r result) {
	o, skipped := s.beforeDupOp(o) // stock bug 4 (stockdup_test.go)
	if skipped != nil {
		return *skipped
	}
	// Stock UB, not a difference: Del(key, nil) hands the engine an empty
	// data item (lmdb-go semantics: delete the matching empty duplicate). In
	// an INTEGERDUP DB stock's integer comparator then reads 4 bytes past
	// that empty item, so its answer depends on whatever memory follows
	// (seen flipping under -asan, seed 2184710774245556269). Ours compares
	// sizes first and answers NotFound; TestDelEmptyValueIntegerDup pins it.
	if (o.kind == opDel || (o.kind == opDelDup && len(o.val) == 0)) && diffDBs[o.db].flags&fIntegerDup != 0 {
		return result{note: "skipped: empty data item in an INTEGERDUP DB (stock reads past it)"}
	}
	var self tCursor
	if !isDup(o.db) && len(s.curs) > 0 {
		self = s.curs[len(s.curs)-1][o.db*cursorSlots+o.slot]
	}
	r = s.apply1(o)
	s.eofDelStep(o, &r) // stock bug 9 (stockdup_test.go)
	s.afterDupOp(o, &r) // stock bugs 2, 5, 6, 7 (stockdup_test.go)
	s.pastEndStep(o, self, &r)
	s.leafShapeStep(o, &r)
	s.unplacedStep(o, r)
	// In DUPSORT DBs stock LMDB crashes (NULL sub-cursor page) when a cursor
	// is used after another cursor or a txn-level write deleted duplicates
	// under it, so there the harness always forgets the other cursors of a
	// DB once it is written; elsewhere only when exploring (-difftest.tolerate=fixup).
	if (o.kind == opCommitNested || o.kind == opAbortNested) && len(s.curs) > 0 {
		// The parent's cursors after its child wrote. In DUPSORT DBs stock
		// LMDB gets this wrong (a parent cursor's Del after the child added a
		// duplicate left Stat.Entries one too high), so those are always
		// forgotten; the rest only when exploring.
		for db := range diffDBs {
			if tolerated("fixup") || isDup(db) {
				s.forgetCursors(db)
			}
		}
	}
	if (tolerated("fixup") || isDup(o.db)) && len(s.curs) > 0 {
		switch o.kind {
		case opPut, opPutNoOverwrite, opPutAppend, opAppendNext, opPutReserve, opDel, opDelDup, opPutNoDupData:
			s.forgetCursors(o.db)
		case opCurPut, opCurPutReserve, opCurPutCurrent, opCurDel, opCurDelAll, opCurPutMulti:
			s.forgetCursors(o.db, o.slot)
		}
	}
	return r
}

func (s *side) apply1(o op) (r result) {
	defer func() {
		if p := recover(); p != nil {
			r = result{code: errNotErrno, note: fmt.Sprintf("PANIC: %v", p)}
		}
	}()
	switch o.kind {
	case opCommit:
		return result{note: "commit " + s.endAll(true)}
	case opAbort:
		return result{note: "abort " + s.endAll(false)}
	case opCommitNested, opAbortNested:
		if len(s.txns) < 2 {
			return result{note: "noop"}
		}
		return result{code: s.endTop(o.kind == opCommitNested)}
	case opReopen:
		note := s.endAll(o.flags == 1)
		if inMemory(s.env) {
			// An in-memory env's data ends with its Close; what survives
			// is a copy. So the side persists through one instead: the
			// committed state is copied to a data file, which must hold
			// exactly the live contents, and the run goes on with the
			// same env (as the reopened file env goes on with the same
			// data and tree).
			if err := s.persistCheck(); err != nil {
				return result{code: errNotErrno, note: "in-memory reopen: " + err.Error()}
			}
			return result{note: "reopen " + note}
		}
		if err := s.env.close(); err != nil {
			return result{code: s.eng.code(err), note: "close"}
		}
		s.env = nil
		if err := s.open(); err != nil {
			return result{code: s.eng.code(err), note: err.Error()}
		}
		return result{note: "reopen " + note}
	case opReadView:
		if len(o.key) > 511 && tolerated("keysize") {
			return result{note: "skipped: oversized key in a lookup (tolerated)"}
		}
		return s.readView(o)
	}
	if len(o.val) > 511 && tolerated("keysize") && isDup(o.db) {
		switch o.kind {
		case opDelDup, opCurGetBoth, opCurGetBothRange:
			return result{note: "skipped: oversized data item in a lookup (tolerated)"}
		}
	}
	if len(o.key) > 511 && tolerated("keysize") {
		switch o.kind {
		case opGet, opDel, opCurSet, opCurSetKey, opCurSetRange, opReadView, opDelDup, opCurGetBoth, opCurGetBothRange:
			return result{note: "skipped: oversized key in a lookup (tolerated)"}
		}
	}
	if tolerated("dupappend") && isDup(o.db) && (o.kind == opPutAppend || o.kind == opAppendNext ||
		((o.kind == opCurPut || o.kind == opCurPutReserve) && o.flags == fAppend)) {
		return result{note: "skipped: MDB_APPEND in a DUPSORT DB (tolerated)"}
	}
	if tolerated("nestedbig") && len(s.txns) > 1 && len(o.val) > 2000 {
		return result{note: "skipped: large value in a nested txn (tolerated)"}
	}
	if err := s.ensureTxn(); err != nil {
		return result{code: s.eng.code(err), note: "begin"}
	}
	t := s.top()
	dbi := s.dbis[o.db]
	switch o.kind {
	case opPut, opPutNoOverwrite, opPutAppend:
		fl := map[opKind]uint{opPut: 0, opPutNoOverwrite: fNoOverwrite, opPutAppend: fAppend}[o.kind]
		err := t.put(dbi, o.key, o.val, fl)
		if err == nil && fl == fAppend {
			s.forgetCursors(o.db)
		}
		return s.res(err)
	case opAppendNext:
		c, err := t.cursor(dbi)
		if err != nil {
			return result{code: s.eng.code(err), note: "cursor"}
		}
		lk, _, err := c.get(nil, nil, cLast)
		c.close()
		key := o.key
		note := "last:" + errName(s.eng.code(err))
		if err == nil {
			if k := successor(diffDBs[o.db].kind, lk, o.flags%7); k != nil {
				key = k
			}
		}
		err = t.put(dbi, key, o.val, fAppend)
		if err == nil {
			s.forgetCursors(o.db)
		}
		r := s.res(err)
		r.note, r.k, r.kv = note, key, true
		return r
	case opPutReserve:
		buf, err := t.putReserve(dbi, o.key, len(o.val), 0)
		if err != nil {
			return s.res(err)
		}
		n := copy(buf, o.val)
		return result{note: fmt.Sprintf("reserved %d copied %d", len(buf), n)}
	case opGet:
		v, err := t.get(dbi, o.key)
		return result{code: s.eng.code(err), v: v, kv: err == nil}
	case opDel:
		return s.res(t.del(dbi, o.key, nil))
	case opDelDup:
		return s.res(t.del(dbi, o.key, o.val))
	case opPutNoDupData:
		return s.res(t.put(dbi, o.key, o.val, fNoDupData))
	case opStat:
		st, err := t.stat(dbi)
		if err != nil {
			return s.res(err)
		}
		if isDup(o.db) && !comparePageCounts() {
			// see stockStatDrift: stock's entry count is not reliable here
			return result{note: fmt.Sprintf("psize=%d", st.psize)}
		}
		if !comparePageCounts() {
			return result{note: fmt.Sprintf("entries=%d psize=%d", st.items, st.psize)}
		}
		return result{note: st.String()}
	case opCheck:
		if err := t.check(); err != nil {
			return result{code: s.eng.code(err), note: "Check: " + err.Error()}
		}
		return result{}
	case opDrop:
		s.closeTopCursors() // dropping under open cursors is not something callers may rely on
		return s.res(t.drop(dbi, false))
	case opBeginNested:
		if len(s.txns) >= 4 {
			return result{note: "deep"}
		}
		child, err := s.env.begin(t, 0)
		if err != nil {
			return s.res(err)
		}
		s.txns = append(s.txns, child)
		s.curs = append(s.curs, make([]tCursor, len(diffDBs)*cursorSlots))
		return result{}
	}
	// cursor ops
	if o.kind == opCurClose {
		lvl := s.curs[len(s.curs)-1]
		i := o.db*cursorSlots + o.slot
		if lvl[i] != nil {
			lvl[i].close()
			lvl[i] = nil
		}
		return result{}
	}
	c, err := s.cursor(o.db, o.slot)
	if err != nil {
		return result{code: s.eng.code(err), note: "cursor"}
	}
	if o.kind == opCurGetBatch {
		return s.curBatch(o, c)
	}
	getOp := map[opKind]uint{opCurFirst: cFirst, opCurLast: cLast, opCurNext: cNext, opCurPrev: cPrev,
		opCurSet: cSet, opCurSetKey: cSetKey, opCurSetRange: cSetRange, opCurGetCurrent: cGetCurrent,
		opCurGetBoth: cGetBoth, opCurGetBothRange: cGetBothRange, opCurFirstDup: cFirstDup,
		opCurLastDup: cLastDup, opCurNextDup: cNextDup, opCurPrevDup: cPrevDup, opCurNextNoDup: cNextNoDup,
		opCurPrevNoDup: cPrevNoDup, opCurGetMultiple: cGetMultiple, opCurNextMultiple: cNextMultiple}
	if cop, ok := getOp[o.kind]; ok {
		var k, v []byte
		switch o.kind {
		case opCurGetBoth, opCurGetBothRange:
			k, v, err = c.get(o.key, o.val, cop)
		case opCurSet, opCurSetKey, opCurSetRange:
			k, v, err = c.get(o.key, nil, cop)
		case opCurFirstDup, opCurLastDup, opCurGetMultiple:
			// LMDB leaves the key unset for these when the item has
			// duplicates, and lmdb-go then copies whatever its key buffer
			// holds: after a cursor Put that turned a single value into
			// duplicates that is a wild pointer (Put k=a; cursor Put k=b;
			// FirstDup -> nil-pointer panic or SIGSEGV in the binding).
			// Passing a placeholder key gives the binding valid memory; a
			// key still equal to it was not set by the engine (both sides).
			// GetMultiple: stock's "ok without data" leaves the data item
			// untouched, and lmdb-go then copies whatever its value buffer
			// last held (after a cursor Put of a new key: a wild pointer,
			// SIGSEGV; master seed 252269587 at scale 5). A placeholder
			// value gives it valid memory likewise; a value still equal to
			// it was not set by the engine.
			var setval []byte
			if o.kind == opCurGetMultiple {
				setval = unsetVal
			}
			k, v, err = c.get(unsetKey, setval, cop)
			if bytes.Equal(k, unsetKey) {
				k = nil
			}
			if setval != nil && bytes.Equal(v, unsetVal) {
				v = nil
			}
		default:
			k, v, err = c.get(nil, nil, cop)
		}
		seek := o.kind == opCurSet || o.kind == opCurSetKey || o.kind == opCurSetRange ||
			o.kind == opCurGetBoth || o.kind == opCurGetBothRange
		if tolerated("dupkey") && (o.kind == opCurFirstDup || o.kind == opCurLastDup || o.kind == opCurGetMultiple) {
			k = nil // LMDB leaves the key unset for these when the item has duplicates
		}
		if err != nil && seek && (tolerated("failedpos") || isDup(o.db)) {
			// In a DUPSORT DB stock LMDB leaves a cursor whose positioning
			// failed half set up: a following Prev dereferences an
			// uninitialised sub-cursor and crashes (seen with GetBothRange,
			// then Prev). The harness never uses such a cursor again.
			s.dropCursor(o.db, o.slot)
		}
		return result{code: s.eng.code(err), k: k, v: v, kv: err == nil}
	}
	switch o.kind {
	case opCurPut:
		err := c.put(o.key, o.val, o.flags)
		if err == nil && o.flags == fAppend {
			s.forgetCursors(o.db, o.slot)
		}
		if err != nil && tolerated("failedpos") {
			s.dropCursor(o.db, o.slot)
		}
		return s.res(err)
	case opCurPutReserve:
		buf, err := c.putReserve(o.key, len(o.val), o.flags)
		if err == nil && o.flags == fAppend {
			s.forgetCursors(o.db, o.slot)
		}
		if err != nil {
			if tolerated("failedpos") {
				s.dropCursor(o.db, o.slot)
			}
			return s.res(err)
		}
		copy(buf, o.val)
		return result{note: fmt.Sprintf("reserved %d", len(buf))}
	case opCurPutCurrent:
		k, cv, err := c.get(nil, nil, cGetCurrent)
		if err != nil {
			return result{code: s.eng.code(err), note: "getcurrent"}
		}
		if isDup(o.db) {
			// with duplicates MDB_CURRENT may not change the sort position:
			// re-put the current data item
			return result{code: s.eng.code(c.put(k, cv, fCurrent)), k: k, kv: true}
		}
		if o.flags == 1 {
			buf, err := c.putReserve(k, len(o.val), fCurrent)
			if err != nil {
				return result{code: s.eng.code(err), k: k, kv: true}
			}
			copy(buf, o.val)
			return result{k: k, kv: true, note: fmt.Sprintf("reserved %d", len(buf))}
		}
		return result{code: s.eng.code(c.put(k, o.val, fCurrent)), k: k, kv: true}
	case opCurCount:
		n, err := c.count()
		return result{code: s.eng.code(err), note: fmt.Sprint("count ", n)}
	case opCurDelAll:
		return s.res(c.del(fNoDupData))
	case opCurPutMulti:
		return s.res(c.putMulti(o.key, o.val, dupStride(o.db), 0))
	case opCurDel:
		err := c.del(0)
		if tolerated("afterdel") {
			s.dropCursor(o.db, o.slot)
		}
		return s.res(err)
	}
	panic(fmt.Sprintf("unhandled op %v", o.kind))
}

func (s *side) readView(o op) result {
	t, err := s.env.begin(nil, fReadonly)
	if err != nil {
		return result{code: s.eng.code(err), note: "begin ro"}
	}
	defer t.abort()
	dbi := s.dbis[o.db]
	var parts []string
	v, err := t.get(dbi, o.key)
	parts = append(parts, fmt.Sprintf("get %s %s", errName(s.eng.code(err)), showBytes(v)))
	c, err := t.cursor(dbi)
	if err != nil {
		return result{code: s.eng.code(err), note: "cursor ro"}
	}
	defer c.close()
	for _, cop := range []uint{cFirst, cLast} {
		k, v, err := c.get(nil, nil, cop)
		parts = append(parts, fmt.Sprintf("%d %s %s %s", cop, errName(s.eng.code(err)), showBytes(k), showBytes(v)))
	}
	k, v, err := c.get(o.key, nil, cSetRange)
	parts = append(parts, fmt.Sprintf("range %s %s %s", errName(s.eng.code(err)), showBytes(k), showBytes(v)))
	if err == nil || !tolerated("failedpos") {
		k, v, err = c.get(nil, nil, cNext)
		parts = append(parts, fmt.Sprintf("next %s %s %s", errName(s.eng.code(err)), showBytes(k), showBytes(v)))
	}
	// the same read txn and cursor again after Reset/Renew (a newer snapshot
	// if something was committed meanwhile; nothing is here, so the same)
	t.reset()
	if err := t.renew(); err != nil {
		return result{code: s.eng.code(err), note: "renew"}
	}
	if err := c.renew(t); err != nil {
		return result{code: s.eng.code(err), note: "cursor renew"}
	}
	k, v, err = c.get(nil, nil, cLast)
	parts = append(parts, fmt.Sprintf("renewed last %s %s %s", errName(s.eng.code(err)), showBytes(k), showBytes(v)))
	v, err = t.get(dbi, o.key)
	parts = append(parts, fmt.Sprintf("renewed get %s %s", errName(s.eng.code(err)), showBytes(v)))
	return result{note: strings.Join(parts, "; ")}
}

// dump reads one DB completely in a fresh read txn.
type kvPair struct{ k, v []byte }

func dumpDB(eng engine, env tEnv, dbi uint32) ([]kvPair, tStat, error) {
	t, err := env.begin(nil, fReadonly)
	if err != nil {
		return nil, tStat{}, err
	}
	defer t.abort()
	st, err := t.stat(dbi)
	if err != nil {
		return nil, tStat{}, err
	}
	c, err := t.cursor(dbi)
	if err != nil {
		return nil, tStat{}, err
	}
	defer c.close()
	var out []kvPair
	for op := cFirst; ; op = cNext {
		k, v, err := c.get(nil, nil, op)
		if eng.code(err) == eNotFound {
			break
		}
		if err != nil {
			return nil, tStat{}, err
		}
		out = append(out, kvPair{k, v})
	}
	return out, st, nil
}

// closeSides ends every txn of each side still open and closes its env.
func closeSides(sides ...*side) {
	for _, s := range sides {
		if s.env != nil {
			s.endAll(false)
			s.env.close()
		}
	}
}

// comparePageCounts: whether Stat page counts and depth must match stock too
// (entries always must). Off by default: our engine's split policy and its
// overflow-page reuse differ from LMDB's (README, "Differences from stock LMDB"), which is
// allowed; -difftest.pages turns the comparison on to measure the difference.
func comparePageCounts() bool { return *flagPages }

func compareStats(where string, a, b tStat) string {
	if a.items != b.items {
		return fmt.Sprintf("%s: entries differ: %v vs %v", where, a, b)
	}
	if comparePageCounts() && a != b {
		return fmt.Sprintf("%s: stat differs (page counts/depth): %v vs %v", where, a, b)
	}
	return ""
}

// compareContents compares every DB of the two sides; "" if identical.
func compareContents(a, b *side, stats *opStats) string {
	for i, d := range diffDBs {
		if !a.used[i] {
			continue
		}
		da, sa, err := dumpDB(a.eng, a.env, a.dbis[i])
		if err != nil {
			return fmt.Sprintf("%s: dump %s: %v", a.eng.name(), d.name, err)
		}
		db, sb, err := dumpDB(b.eng, b.env, b.dbis[i])
		if err != nil {
			return fmt.Sprintf("%s: dump %s: %v", b.eng.name(), d.name, err)
		}
		for j := 0; j < len(da) && j < len(db); j++ {
			if !bytes.Equal(da[j].k, db[j].k) || !bytes.Equal(da[j].v, db[j].v) {
				return fmt.Sprintf("db %s entry %d: %s=%s/%s, %s=%s/%s", d.name, j, a.eng.name(),
					showBytes(da[j].k), showBytes(da[j].v), b.eng.name(), showBytes(db[j].k), showBytes(db[j].v))
			}
		}
		if len(da) != len(db) {
			return fmt.Sprintf("db %s: %s has %d entries, %s has %d", d.name, a.eng.name(), len(da), b.eng.name(), len(db))
		}
		if uint64(len(da)) != sa.items && a.eng.name() != "stock" {
			return fmt.Sprintf("db %s: %s scan found %d entries, Stat says %d", d.name, a.eng.name(), len(da), sa.items)
		}
		if uint64(len(db)) != sb.items {
			// Stock LMDB's own Stat.Entries can drift from its contents in
			// DUPFIXED/INTEGERDUP DBs after long random runs (a stock bug,
			// seen stock-vs-stock); then only the contents are compared.
			if stats != nil {
				stats.stockStatDrift++
			}
		} else if m := compareStats("db "+d.name, sa, sb); m != "" {
			return m
		}
		if stats != nil {
			if sa == sb {
				stats.sameStat++
			} else {
				stats.diffStat++
			}
			stats.maxDepth = max(stats.maxDepth, sa.depth)
			stats.maxEntries = max(stats.maxEntries, sa.items)
			stats.overflow += sa.overflow
		}
	}
	return ""
}

type mismatch struct {
	index  int // op index, or len(ops) for the final comparison
	op     string
	detail string
}

func (m *mismatch) String() string {
	return fmt.Sprintf("op #%d %s: %s", m.index, m.op, m.detail)
}

// runOps applies ops to a fresh pair of envs under base and returns the first
// difference, or nil. a is the engine under test, b the reference.
func runOps(base string, a, b engine, ops []op, flags uint) (mm *mismatch, fatal error) {
	return runOpsStats(base, a, b, ops, flags, nil)
}

// opStats counts, per op kind, the result codes seen (for the -v summary).
type opStats struct {
	codes          map[opKind]map[int]int
	maxDepth       uint
	maxEntries     uint64
	overflow       uint64
	stockStatDrift int    // final Stat.Entries of stock disagreeing with stock's own scan
	sameStat       int    // final per-DB Stat identical including page counts and depth
	diffStat       int    // ... same entries but different page counts or depth
	sameLast       int    // sequences whose envs ended with the same last page number
	diffLast       int    // ... and with different ones (allocation policy differs; not an error)
	demotions      uint64 // duplicates moved back from a sub-tree to a sub-page (ours)
	demotedSeqs    int    // sequences with at least one such move
	multiDiffs     int    // GetMultiple/NextMultiple answers that differ from stock by design
	sequences      int
}

func (st *opStats) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "  max tree depth %d, max entries in one DB %d, overflow pages seen %d\n",
		st.maxDepth, st.maxEntries, st.overflow)
	fmt.Fprintf(&sb, "  final per-DB Stat: identical page counts/depth in %d, different in %d; last page number equal in %d sequences, different in %d; stock Stat.Entries self-inconsistent %d times\n",
		st.sameStat, st.diffStat, st.sameLast, st.diffLast, st.stockStatDrift)
	fmt.Fprintf(&sb, "  duplicate demotions (sub-tree back to sub-page, ours): %d in %d sequences\n",
		st.demotions, st.demotedSeqs)
	fmt.Fprintf(&sb, "  GetMultiple/NextMultiple answers that differ from stock by design (values or an error where stock has none): %d\n",
		st.multiDiffs)
	for k := opKind(0); k < numOpKinds; k++ {
		m := st.codes[k]
		if len(m) == 0 {
			continue
		}
		fmt.Fprintf(&sb, "  %-15s", opNames[k])
		for _, c := range []int{0, eNotFound, eKeyExist, eBadValSize} {
			if m[c] > 0 {
				fmt.Fprintf(&sb, " %s=%d", errName(c), m[c])
			}
		}
		for c, n := range m {
			if c != 0 && c != eNotFound && c != eKeyExist && c != eBadValSize {
				fmt.Fprintf(&sb, " %s=%d", errName(c), n)
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// noShapeFree turns the shapeFree step-around off (for the test that pins
// why it is there: TestFailedSetPositionDependsOnTreeShape).
var noShapeFree bool

func runOpsStats(base string, a, b engine, ops []op, flags uint, stats *opStats) (mm *mismatch, fatal error) {
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	used := make([]bool, len(diffDBs))
	for _, o := range ops {
		used[o.db] = true
	}
	sa := &side{eng: a, dir: filepath.Join(base, "a"), flags: flags, used: used}
	sb := &side{eng: b, dir: filepath.Join(base, "b"), flags: flags, used: used}
	adda, ca := extFlagsOf(a)
	addb, cb := extFlagsOf(b)
	sa.shapeFree, sb.shapeFree = (ca || cb) && !noShapeFree, (ca || cb) && !noShapeFree
	pfx := (adda|addb)&0x100 != 0 && !noShapeFree // PrefixCompression
	sa.leafShapeFree, sb.leafShapeFree = pfx, pfx
	for _, s := range []*side{sa, sb} {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return nil, err
		}
		if err := s.open(); err != nil {
			return nil, err
		}
	}
	defer closeSides(sa, sb)
	for i, o := range ops {
		ra, rb := sa.apply(o), sb.apply(o)
		if stats != nil {
			if stats.codes[o.kind] == nil {
				stats.codes[o.kind] = map[int]int{}
			}
			stats.codes[o.kind][ra.code]++
		}
		if !ra.equal(rb) && multiAccepted(o, sa, sb, ra, rb) != "" {
			// the deliberate GetMultiple difference (getmulti_stock_test.go)
			if stats != nil {
				stats.multiDiffs++
			}
			ra = rb
		}
		if !ra.equal(rb) {
			return &mismatch{i, o.String(), fmt.Sprintf("%s: %v | %s: %v", a.name(), ra, b.name(), rb)}, nil
		}
		if sa.env == nil || sb.env == nil {
			return &mismatch{i, o.String(), "env could not be reopened: " + ra.note}, nil
		}
	}
	end := op{kind: opCommit}
	if ra, rb := sa.apply(end), sb.apply(end); !ra.equal(rb) {
		return &mismatch{len(ops), "final commit", fmt.Sprintf("%v | %v", ra, rb)}, nil
	}
	if d := compareContents(sa, sb, stats); d != "" {
		return &mismatch{len(ops), "final contents", d}, nil
	}
	if st1, err := sa.env.stat(); err != nil {
		return &mismatch{len(ops), "env stat", err.Error()}, nil
	} else if st2, err := sb.env.stat(); err != nil {
		return &mismatch{len(ops), "env stat", err.Error()}, nil
	} else if d := compareStats("main db", st1, st2); d != "" {
		return &mismatch{len(ops), "env stat", d}, nil
	}
	if err := sa.env.check(); err != nil {
		return &mismatch{len(ops), "Check", fmt.Sprintf("%s: %v", a.name(), err)}, nil
	}
	for _, sd := range []*side{sa, sb} {
		dir := sd.dir
		if inMemory(sd.env) {
			// an in-memory env writes nothing of its own; its pages are
			// walked in a page-exact copy
			if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
				return &mismatch{len(ops), "in-memory env's directory", fmt.Sprintf("%s: %v, %d entries (want none)", sd.eng.name(), err, len(ents))}, nil
			}
			snap, err := sd.env.(memEnv).snapshotFile("final")
			if err != nil {
				return &mismatch{len(ops), "copy of the in-memory env", fmt.Sprintf("%s: %v", sd.eng.name(), err)}, nil
			}
			defer os.RemoveAll(snap)
			dir = snap
		}
		if probs, _ := walkEnv(dir); len(probs) > 0 {
			return &mismatch{len(ops), "page accounting of the data file", fmt.Sprintf("%s: %v", sd.eng.name(), probs)}, nil
		}
	}
	if stats != nil {
		la, erra := sa.env.lastPgno()
		lb, errb := sb.env.lastPgno()
		if erra != nil || errb != nil {
			return &mismatch{len(ops), "env info", fmt.Sprint(erra, errb)}, nil
		}
		if la == lb {
			stats.sameLast++
		} else {
			stats.diffLast++
		}
	}
	return nil, nil
}

// shrink removes chunks of ops while some mismatch persists (a simple ddmin).
func shrink(base string, a, b engine, ops []op, flags uint, budget int) []op {
	cur := ops
	for chunk := len(cur) / 2; chunk >= 1 && budget > 0; {
		removed := false
		for start := 0; start < len(cur) && budget > 0; {
			end := min(start+chunk, len(cur))
			cand := append(append([]op(nil), cur[:start]...), cur[end:]...)
			budget--
			if mm, err := runOps(base, a, b, cand, flags); err == nil && mm != nil {
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

func TestDifferential(t *testing.T) {
	if isolate(t) {
		return
	}
	differential(t, genOps, 400000)
}

// TestDifferentialDupSort: the same with sorted-duplicate DBs (DUPSORT,
// DUPFIXED, INTEGERDUP, REVERSEDUP) and the duplicate cursor ops.
func TestDifferentialDupSort(t *testing.T) {
	if isolate(t) {
		return
	}
	differential(t, genDupOps, 150000)
}

func differential(t *testing.T, gen func(int64) []op, perScale int) *opStats {
	return differentialOf(t, subject, gen, perScale, whole)
}

// part is the part of a workload's seed stream a run takes: all of it
// (div 1, whole), or the sequences of its first 1/div operations, extended
// sequence by sequence until every op kind with a weight in kinds has
// occurred (up to the whole stream), so that a short run still tries
// everything.
type part struct {
	div   int
	kinds [numOpKinds]int
}

var whole = part{div: 1}

// pickSeeds draws sequence seeds from r until their op lists reach budget
// operations, or the part p of that list.
func pickSeeds(r *rand.Rand, gen func(int64) []op, budget int, p part) []int64 {
	var want uint64 // bit k: kind k must occur
	for k, w := range p.kinds {
		if w > 0 {
			want |= 1 << k
		}
	}
	var seeds []int64
	var seen uint64
	for n := 0; n < budget; {
		s := r.Int63()
		ops := gen(s)
		seeds = append(seeds, s)
		n += len(ops)
		if p.div <= 1 {
			continue
		}
		for _, o := range ops {
			seen |= 1 << o.kind
		}
		if n >= budget/p.div && seen&want == want {
			break
		}
	}
	return seeds
}

// differentialOf runs the differential test with engine a against stock on
// the part p of the master seed's stream of perScale*scale operations (a
// part repeats the first sequences of the whole, so an in-memory run
// replays sequences of the file run).
func differentialOf(t *testing.T, a engine, gen func(int64) []op, perScale int, p part) *opStats {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b := engine(stockEngine{})
	base := t.TempDir()

	var seeds []int64
	budget := perScale * testScale(t)
	if *flagSeed != 0 {
		seeds = []int64{*flagSeed}
	} else {
		seeds = pickSeeds(rand.New(rand.NewSource(masterSeed(t))), gen, budget, p)
	}
	total, failures := 0, 0
	stats := &opStats{codes: map[opKind]map[int]int{}}
	if *flagNoDemote {
		setEngineDemotion(false)
		defer setEngineDemotion(true)
	}
	for i, seed := range seeds {
		ops := withBatches(gen(seed), seed)
		total += len(ops)
		flags := seqEnvFlags(seed)
		dem0 := engineDemotions()
		mm, err := runOpsStats(filepath.Join(base, fmt.Sprint(i)), a, b, ops, flags, stats)
		if d := engineDemotions() - dem0; d > 0 {
			stats.demotions += d
			stats.demotedSeqs++
		}
		if err != nil {
			t.Fatalf("seed %d: setup: %v", seed, err)
		}
		if mm == nil {
			continue
		}
		t.Errorf("%s vs %s: seed %d (env flags %#x): %v", a.name(), b.name(), seed, flags, mm)
		// ops after the first difference cannot matter: start from there
		start := ops
		if mm.index+1 < len(ops) {
			if m2, err := runOps(filepath.Join(base, "shrink"), a, b, ops[:mm.index+1], flags); err == nil && m2 != nil {
				start = ops[:mm.index+1]
			}
		}
		small := shrink(filepath.Join(base, "shrink"), a, b, start, flags, 600)
		mm2, _ := runOps(filepath.Join(base, "shrink"), a, b, small, flags)
		var sb strings.Builder
		for j, o := range small {
			fmt.Fprintf(&sb, "  %3d %v\n", j, o)
		}
		t.Errorf("shrunk to %d ops (mismatch: %v):\n%s", len(small), mm2, sb.String())
		t.Errorf("reproduce: go test ./internal/difftest -run '^%s$' -difftest.seed=%d -v", t.Name(), seed)
		if failures++; failures >= *flagKeepGoing {
			t.FailNow()
		}
	}
	stats.sequences = len(seeds)
	t.Logf("%s vs %s: %d sequences, %d operations; results of the engine under test by op:\n%v",
		a.name(), b.name(), len(seeds), total, stats)
	return stats
}

// pickSeeds keeps a set of op kinds in one uint64.
var _ = [64 - numOpKinds]int{}

// extFlagger is an engine that adds extension DBI flags to every DB it
// creates (extEngine, in the builds that have our engine).
type extFlagger interface{ extFlags() uint }

// extFlagsOf reports the extension flags e adds, and whether it adds any.
func extFlagsOf(e engine) (uint, bool) {
	if x, ok := e.(extFlagger); ok {
		return x.extFlags(), true
	}
	return 0, false
}
