//go:build !dlmdb_stockonly

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
	"testing"
)

// GetMultiple, NextMultiple and PrevMultiple in DUPFIXED DBs, checked against
// a model after every positioning op, on every layout a key's values can
// have in a file: a single value as a plain node, as a one-value sub-page
// (ours makes one by deleting down to one value; stock also by a refused
// APPENDDUP put) and as a one-value sub-tree (stock only: it never moves
// values back inline), several values inline, and a sub-tree of several
// LEAF2 pages. The files are written by stock LMDB (lmdb-go v1.9.3) and by
// ours, then read by ours.
//
// The semantics checked (current_page in cdlmdb/dupsort.c): while the
// cursor stands on a value, GetMultiple returns the page holding it and
// moves to that page's last value; NextMultiple steps one value and returns
// the page it lands on; PrevMultiple returns the page before the current
// one; both answer NotFound past the key's first or last page. On an
// unpositioned cursor NextMultiple returns the first key's first page and
// PrevMultiple the last key's last page. The pages themselves are the
// file's: a plain value or a sub-page is one page, a sub-tree's pages are
// its leaves. The test learns each key's pages by a forward walk, checks
// that they cut the model's values into runs in order (each within a page's
// capacity, one run for inline layouts, several for a big sub-tree), that
// stock's walk over the same file cuts them alike, and then requires every
// answer to match that partition.

const gmPageSize = 4096

// gmVal is value x of a DUPFIXED DB of the given width: x big-endian in the
// last 8 bytes, zeros before. Stored values are even, so x-1 lies between
// two of them (GetBothRange probes).
func gmVal(stride int, x uint64) []byte {
	b := make([]byte, stride)
	binary.BigEndian.PutUint64(b[stride-8:], x)
	return b
}

// gmModel: the keys of one DB in order and each key's values in order.
type gmModel struct {
	keys []string
	vals map[string][][]byte
}

func (m *gmModel) add(k string, v []byte) {
	if m.vals == nil {
		m.vals = map[string][][]byte{}
	}
	vs, ok := m.vals[k]
	if !ok {
		i, _ := slices.BinarySearch(m.keys, k)
		m.keys = slices.Insert(m.keys, i, k)
	}
	if i, found := slices.BinarySearchFunc(vs, v, bytes.Compare); !found {
		m.vals[k] = slices.Insert(vs, i, append([]byte(nil), v...))
	}
}

func (m *gmModel) del(k string, v []byte) {
	vs := m.vals[k]
	if i, found := slices.BinarySearchFunc(vs, v, bytes.Compare); found {
		vs = slices.Delete(vs, i, i+1)
		m.vals[k] = vs
	}
	if len(vs) == 0 {
		delete(m.vals, k)
		if i, found := slices.BinarySearch(m.keys, k); found {
			m.keys = slices.Delete(m.keys, i, i+1)
		}
	}
}

// gmPages maps a key to its pages as [first, last] value indices.
type gmPages map[string][][2]int

func (p gmPages) pageOf(k string, i int) int {
	for j, r := range p[k] {
		if r[0] <= i && i <= r[1] {
			return j
		}
	}
	return -1
}

// walkPages reads key k's pages with SetKey, GetMultiple, NextMultiple...
// and returns the raw pages (stock: none when its GetMultiple answers no
// data). Any error other than the final NotFound fails the test.
func walkPages(t *testing.T, eng engine, c tCursor, k string) [][]byte {
	t.Helper()
	if _, _, err := c.get([]byte(k), nil, cSetKey); err != nil {
		t.Fatalf("%s: SetKey %q: %v", eng.name(), k, err)
	}
	_, page, err := c.get(unsetKey, nil, cGetMultiple)
	if err != nil {
		t.Fatalf("%s: GetMultiple %q: %v", eng.name(), k, err)
	}
	if len(page) == 0 {
		return nil
	}
	out := [][]byte{append([]byte(nil), page...)}
	for {
		_, page, err = c.get(nil, nil, cNextMultiple)
		if eng.code(err) == eNotFound {
			return out
		}
		if err != nil {
			t.Fatalf("%s: NextMultiple %q: %v", eng.name(), k, err)
		}
		out = append(out, append([]byte(nil), page...))
	}
}

// learnPages cuts the model's values of k by the raw pages, failing the test
// unless the pages are the values in order, each within one page's room.
func learnPages(t *testing.T, what string, vals [][]byte, raw [][]byte, stride int) [][2]int {
	t.Helper()
	var out [][2]int
	i := 0
	for _, page := range raw {
		n := len(page) / stride
		if n == 0 || len(page)%stride != 0 || n > (gmPageSize-16)/stride || i+n > len(vals) {
			t.Fatalf("%s: page %d of %d bytes (stride %d) after %d of %d values", what, len(out), len(page), stride, i, len(vals))
		}
		if !bytes.Equal(page, bytes.Join(vals[i:i+n], nil)) {
			t.Fatalf("%s: page %d is not values %d..%d of the model", what, len(out), i, i+n-1)
		}
		out = append(out, [2]int{i, i + n - 1})
		i += n
	}
	if i != len(vals) {
		t.Fatalf("%s: the pages hold %d values, the model %d", what, i, len(vals))
	}
	return out
}

// gmChecker runs positioning ops followed by multi-value reads on our
// engine and checks every answer against the model and the pages.
type gmChecker struct {
	t      *testing.T
	txn    tTxn
	dbi    uint32
	m      *gmModel
	pages  gmPages
	stride int
	what   string
	steps  int
}

func (g *gmChecker) fatalf(format string, args ...any) {
	g.t.Helper()
	g.t.Fatalf("%s: "+format, append([]any{g.what}, args...)...)
}

func (g *gmChecker) val(k string, i int) []byte { return g.m.vals[k][i] }

// page returns the concatenated values of page j of k.
func (g *gmChecker) page(k string, j int) []byte {
	r := g.pages[k][j]
	return bytes.Join(g.m.vals[k][r[0]:r[1]+1], nil)
}

// want checks one answer: code, and when ok the value (and the key unless
// wantKey is "").
func (g *gmChecker) want(what string, k, v []byte, err error, code int, wantKey string, wantVal []byte) {
	g.t.Helper()
	g.steps++
	if c := subject.code(err); c != code {
		g.fatalf("%s: %s (%v), want %s", what, errName(c), err, errName(code))
	}
	if code != 0 {
		return
	}
	if wantKey != "" && string(k) != wantKey {
		g.fatalf("%s: key %q, want %q", what, k, wantKey)
	}
	if !bytes.Equal(v, wantVal) {
		g.fatalf("%s: %d bytes %x, want %d bytes %x", what, len(v), short(v), len(wantVal), short(wantVal))
	}
}

func short(b []byte) []byte {
	if len(b) > 48 {
		return b[:48]
	}
	return b
}

// A positioning op: run leaves the cursor on value i of key k (its last
// answer checked by run itself).
type gmPos struct {
	name string
	// ok reports whether the op can land on (key index ki, value i).
	ok  func(g *gmChecker, ki, i int) bool
	run func(g *gmChecker, c tCursor, ki, i int)
}

func gmLast(g *gmChecker, ki int) int { return len(g.m.vals[g.m.keys[ki]]) - 1 }

var gmPositions = []gmPos{
	{"Set", func(g *gmChecker, ki, i int) bool { return i == 0 }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		_, v, err := c.get([]byte(k), nil, cSet)
		g.want("Set", nil, v, err, 0, "", g.val(k, 0))
	}},
	{"SetKey", func(g *gmChecker, ki, i int) bool { return i == 0 }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		kk, v, err := c.get([]byte(k), nil, cSetKey)
		g.want("SetKey", kk, v, err, 0, k, g.val(k, 0))
	}},
	{"SetRange", func(g *gmChecker, ki, i int) bool { return i == 0 }, func(g *gmChecker, c tCursor, ki, i int) {
		// a probe below k and above its predecessor (keys are at least
		// two bytes long and end in a letter above 'a')
		k := g.m.keys[ki]
		probe := append([]byte(k[:len(k)-1]), k[len(k)-1]-1, 0xff)
		kk, v, err := c.get(probe, nil, cSetRange)
		g.want("SetRange", kk, v, err, 0, k, g.val(k, 0))
	}},
	{"GetBoth", func(g *gmChecker, ki, i int) bool { return true }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		_, v, err := c.get([]byte(k), g.val(k, i), cGetBoth)
		g.want("GetBoth", nil, v, err, 0, "", g.val(k, i))
	}},
	{"GetBothRange", func(g *gmChecker, ki, i int) bool { return true }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		x := binary.BigEndian.Uint64(g.val(k, i)[g.stride-8:])
		_, v, err := c.get([]byte(k), gmVal(g.stride, x-1), cGetBothRange)
		g.want("GetBothRange", nil, v, err, 0, "", g.val(k, i))
	}},
	{"First", func(g *gmChecker, ki, i int) bool { return ki == 0 && i == 0 }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		kk, v, err := c.get(nil, nil, cFirst)
		g.want("First", kk, v, err, 0, k, g.val(k, 0))
	}},
	{"Last", func(g *gmChecker, ki, i int) bool { return ki == len(g.m.keys)-1 && i == gmLast(g, ki) },
		func(g *gmChecker, c tCursor, ki, i int) {
			k := g.m.keys[ki]
			kk, v, err := c.get(nil, nil, cLast)
			g.want("Last", kk, v, err, 0, k, g.val(k, i))
		}},
	{"Next (from the previous key's last value)", func(g *gmChecker, ki, i int) bool { return ki > 0 && i == 0 },
		func(g *gmChecker, c tCursor, ki, i int) {
			p, k := g.m.keys[ki-1], g.m.keys[ki]
			_, v, err := c.get([]byte(p), g.val(p, gmLast(g, ki-1)), cGetBoth)
			g.want("GetBoth on the previous key", nil, v, err, 0, "", g.val(p, gmLast(g, ki-1)))
			kk, v, err := c.get(nil, nil, cNext)
			g.want("Next", kk, v, err, 0, k, g.val(k, 0))
		}},
	{"Next (inside the key)", func(g *gmChecker, ki, i int) bool { return i > 0 }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		_, v, err := c.get([]byte(k), g.val(k, i-1), cGetBoth)
		g.want("GetBoth", nil, v, err, 0, "", g.val(k, i-1))
		kk, v, err := c.get(nil, nil, cNext)
		g.want("Next", kk, v, err, 0, k, g.val(k, i))
	}},
	{"Prev (from the next key)", func(g *gmChecker, ki, i int) bool { return ki+1 < len(g.m.keys) && i == gmLast(g, ki) },
		func(g *gmChecker, c tCursor, ki, i int) {
			n, k := g.m.keys[ki+1], g.m.keys[ki]
			_, v, err := c.get([]byte(n), nil, cSet)
			g.want("Set on the next key", nil, v, err, 0, "", g.val(n, 0))
			kk, v, err := c.get(nil, nil, cPrev)
			g.want("Prev", kk, v, err, 0, k, g.val(k, i))
		}},
	{"NextNoDup", func(g *gmChecker, ki, i int) bool { return ki > 0 && i == 0 }, func(g *gmChecker, c tCursor, ki, i int) {
		p, k := g.m.keys[ki-1], g.m.keys[ki]
		_, v, err := c.get([]byte(p), nil, cSet)
		g.want("Set on the previous key", nil, v, err, 0, "", g.val(p, 0))
		kk, v, err := c.get(nil, nil, cNextNoDup)
		g.want("NextNoDup", kk, v, err, 0, k, g.val(k, 0))
	}},
	{"PrevNoDup", func(g *gmChecker, ki, i int) bool { return ki+1 < len(g.m.keys) && i == gmLast(g, ki) },
		func(g *gmChecker, c tCursor, ki, i int) {
			n, k := g.m.keys[ki+1], g.m.keys[ki]
			_, v, err := c.get([]byte(n), g.val(n, gmLast(g, ki+1)), cGetBoth)
			g.want("GetBoth on the next key", nil, v, err, 0, "", g.val(n, gmLast(g, ki+1)))
			kk, v, err := c.get(nil, nil, cPrevNoDup)
			g.want("PrevNoDup", kk, v, err, 0, k, g.val(k, i))
		}},
	{"FirstDup", func(g *gmChecker, ki, i int) bool { return i == 0 }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		last := gmLast(g, ki)
		_, v, err := c.get([]byte(k), g.val(k, last), cGetBoth)
		g.want("GetBoth", nil, v, err, 0, "", g.val(k, last))
		_, v, err = c.get(unsetKey, nil, cFirstDup)
		g.want("FirstDup", nil, v, err, 0, "", g.val(k, 0))
	}},
	{"LastDup", func(g *gmChecker, ki, i int) bool { return i == gmLast(g, ki) }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		_, v, err := c.get([]byte(k), nil, cSet)
		g.want("Set", nil, v, err, 0, "", g.val(k, 0))
		_, v, err = c.get(unsetKey, nil, cLastDup)
		g.want("LastDup", nil, v, err, 0, "", g.val(k, i))
	}},
	{"NextDup to the end", func(g *gmChecker, ki, i int) bool { return i == gmLast(g, ki) },
		func(g *gmChecker, c tCursor, ki, i int) {
			k := g.m.keys[ki]
			_, v, err := c.get([]byte(k), nil, cSet)
			g.want("Set", nil, v, err, 0, "", g.val(k, 0))
			for j := 1; j <= i; j++ {
				kk, v, err := c.get(nil, nil, cNextDup)
				g.want("NextDup", kk, v, err, 0, k, g.val(k, j))
			}
			_, _, err = c.get(nil, nil, cNextDup)
			g.want("NextDup past the end", nil, nil, err, eNotFound, "", nil)
		}},
	{"PrevDup to the start", func(g *gmChecker, ki, i int) bool { return i == 0 },
		func(g *gmChecker, c tCursor, ki, i int) {
			k := g.m.keys[ki]
			last := gmLast(g, ki)
			_, v, err := c.get([]byte(k), g.val(k, last), cGetBoth)
			g.want("GetBoth", nil, v, err, 0, "", g.val(k, last))
			for j := last - 1; j >= 0; j-- {
				kk, v, err := c.get(nil, nil, cPrevDup)
				g.want("PrevDup", kk, v, err, 0, k, g.val(k, j))
			}
			_, _, err = c.get(nil, nil, cPrevDup)
			g.want("PrevDup past the start", nil, nil, err, eNotFound, "", nil)
		}},
	{"refused NoDupData put", func(g *gmChecker, ki, i int) bool { return true }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		g.want("Put(NoDupData) of a stored value", nil, nil, c.put([]byte(k), g.val(k, i), fNoDupData), eKeyExist, "", nil)
	}},
	{"refused AppendDup put", func(g *gmChecker, ki, i int) bool { return i == gmLast(g, ki) },
		func(g *gmChecker, c tCursor, ki, i int) {
			k := g.m.keys[ki]
			g.want("Put(AppendDup) of the first value", nil, nil, c.put([]byte(k), g.val(k, 0), uint(0x40000)), eKeyExist, "", nil)
		}},
	{"refused NoOverwrite put", func(g *gmChecker, ki, i int) bool { return i == 0 }, func(g *gmChecker, c tCursor, ki, i int) {
		k := g.m.keys[ki]
		g.want("Put(NoOverwrite) of an existing key", nil, nil, c.put([]byte(k), g.val(k, 0), fNoOverwrite), eKeyExist, "", nil)
	}},
}

const cPrevMultiple = 18 // MDB_PREV_MULTIPLE (lmdb-go has no name for it)

// after checks the three ways on from the position (key index ki, value
// i), each on a cursor freshly put there by pos: GetMultiple then the whole
// NextMultiple and PrevMultiple sequences; NextMultiple straight away;
// PrevMultiple straight away.
func (g *gmChecker) after(pos gmPos, ki, i int) {
	k := g.m.keys[ki]
	j := g.pages.pageOf(k, i)
	np := len(g.pages[k])
	for way := 0; way < 3; way++ {
		c, err := g.txn.cursor(g.dbi)
		if err != nil {
			g.fatalf("cursor: %v", err)
		}
		pos.run(g, c, ki, i)
		what := fmt.Sprintf("%s onto %q value %d (page %d of %d)", pos.name, k, i, j, np)
		switch way {
		case 0:
			_, v, err := c.get(unsetKey, nil, cGetMultiple)
			g.want(what+", GetMultiple", nil, v, err, 0, "", g.page(k, j))
			end := g.pages[k][j][1]
			kk, v, err := c.get(nil, nil, cGetCurrent)
			g.want(what+", GetCurrent after GetMultiple", kk, v, err, 0, k, g.val(k, end))
			for p := j + 1; p < np; p++ {
				kk, v, err := c.get(nil, nil, cNextMultiple)
				g.want(fmt.Sprintf("%s, NextMultiple to page %d", what, p), kk, v, err, 0, k, g.page(k, p))
			}
			_, _, err = c.get(nil, nil, cNextMultiple)
			g.want(what+", NextMultiple past the last page", nil, nil, err, eNotFound, "", nil)
			for p := np - 2; p >= 0; p-- {
				_, v, err := c.get(unsetKey, nil, cPrevMultiple)
				g.want(fmt.Sprintf("%s, PrevMultiple back to page %d", what, p), nil, v, err, 0, "", g.page(k, p))
			}
			_, _, err = c.get(unsetKey, nil, cPrevMultiple)
			g.want(what+", PrevMultiple before the first page", nil, nil, err, eNotFound, "", nil)
			_, v, err = c.get(unsetKey, nil, cGetMultiple)
			g.want(what+", GetMultiple at the first page again", nil, v, err, 0, "", g.page(k, 0))
		case 1:
			if i+1 < len(g.m.vals[k]) {
				p := g.pages.pageOf(k, i+1)
				kk, v, err := c.get(nil, nil, cNextMultiple)
				g.want(what+", NextMultiple straight away", kk, v, err, 0, k, g.page(k, p))
				for p++; p < np; p++ {
					kk, v, err := c.get(nil, nil, cNextMultiple)
					g.want(fmt.Sprintf("%s, NextMultiple to page %d", what, p), kk, v, err, 0, k, g.page(k, p))
				}
			}
			_, _, err := c.get(nil, nil, cNextMultiple)
			g.want(what+", NextMultiple past the last page", nil, nil, err, eNotFound, "", nil)
			kk, v, err := c.get(nil, nil, cGetCurrent)
			g.want(what+", GetCurrent at the end", kk, v, err, 0, k, g.val(k, len(g.m.vals[k])-1))
		case 2:
			for p := j - 1; p >= 0; p-- {
				_, v, err := c.get(unsetKey, nil, cPrevMultiple)
				g.want(fmt.Sprintf("%s, PrevMultiple to page %d", what, p), nil, v, err, 0, "", g.page(k, p))
			}
			_, _, err := c.get(unsetKey, nil, cPrevMultiple)
			g.want(what+", PrevMultiple before the first page", nil, nil, err, eNotFound, "", nil)
			at := i // no page before: the position stays
			if j > 0 {
				at = g.pages[k][0][1]
			}
			kk, v, err := c.get(nil, nil, cGetCurrent)
			g.want(what+", GetCurrent after the PrevMultiples", kk, v, err, 0, k, g.val(k, at))
		}
		c.close()
	}
}

// unpositioned checks NextMultiple and PrevMultiple on fresh cursors: the
// first key's first page, the last key's last page.
func (g *gmChecker) unpositioned() {
	first, last := g.m.keys[0], g.m.keys[len(g.m.keys)-1]
	c, err := g.txn.cursor(g.dbi)
	if err != nil {
		g.fatalf("cursor: %v", err)
	}
	kk, v, err := c.get(nil, nil, cNextMultiple)
	g.want("NextMultiple on a fresh cursor", kk, v, err, 0, first, g.page(first, 0))
	c.close()
	if c, err = g.txn.cursor(g.dbi); err != nil {
		g.fatalf("cursor: %v", err)
	}
	lp := len(g.pages[last]) - 1
	kk, v, err = c.get(nil, nil, cPrevMultiple)
	g.want("PrevMultiple on a fresh cursor", kk, v, err, 0, last, g.page(last, lp))
	for p := lp - 1; p >= 0; p-- {
		_, v, err := c.get(unsetKey, nil, cPrevMultiple)
		g.want(fmt.Sprintf("PrevMultiple on to page %d", p), nil, v, err, 0, "", g.page(last, p))
	}
	_, _, err = c.get(unsetKey, nil, cPrevMultiple)
	g.want("PrevMultiple before the first page", nil, nil, err, eNotFound, "", nil)
	c.close()
}

// learn reads every key's pages with ours (checked against the model) and
// with stock from the closed env in dir (where it answers with data it
// must cut the values alike).
func learnAll(t *testing.T, dir string, dbs []string, models []*gmModel, stride int) []gmPages {
	t.Helper()
	out := make([]gmPages, len(dbs))
	for _, eng := range []engine{subject, stockEngine{}} {
		env, err := eng.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 64, flags: fReadonly})
		if err != nil {
			t.Fatalf("%s: open: %v", eng.name(), err)
		}
		txn, err := env.begin(nil, fReadonly)
		if err != nil {
			t.Fatal(err)
		}
		for d, name := range dbs {
			dbi, err := txn.openDBI(name, 0)
			if err != nil {
				t.Fatalf("%s: open %s: %v", eng.name(), name, err)
			}
			c, err := txn.cursor(dbi)
			if err != nil {
				t.Fatal(err)
			}
			if out[d] == nil {
				out[d] = gmPages{}
			}
			for _, k := range models[d].keys {
				raw := walkPages(t, eng, c, k)
				what := fmt.Sprintf("%s: %s key %q", eng.name(), name, k)
				if eng == subject {
					out[d][k] = learnPages(t, what, models[d].vals[k], raw, stride)
					continue
				}
				if raw == nil {
					continue // stock's "ok without data" (a plain value)
				}
				if got := learnPages(t, what, models[d].vals[k], raw, stride); !slices.Equal(got, out[d][k]) {
					t.Fatalf("%s: stock's pages %v, ours %v", what, got, out[d][k])
				}
			}
			c.close()
		}
		txn.abort()
		env.close()
	}
	return out
}

// keyFlags reads the data file at path (filewalk_test.go's walker, which
// also checks the file's page accounting) and returns the node flags of
// every key of the named DB db.
func keyFlags(path, db string) (map[string]uint16, error) {
	if errs, _ := walkFile(path); len(errs) > 0 {
		return nil, fmt.Errorf("data file: %v", errs)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const psize = 4096
	meta := b[wPageHdr:]
	if binary.LittleEndian.Uint64(b[psize+wPageHdr+128:]) > binary.LittleEndian.Uint64(meta[128:]) {
		meta = b[psize+wPageHdr:]
	}
	w := &fileWalker{b: b, psize: psize, last: binary.LittleEndian.Uint64(meta[120:]), owner: map[uint64]string{}, subFlags: map[uint16]int{}}
	var rec []byte
	w.walkTree(binary.LittleEndian.Uint64(meta[24+wDBSize+40:]), "main", 0, func(fl uint16, key, data []byte) {
		if string(key) == db && fl&wFSubData != 0 {
			rec = data
		}
	})
	if rec == nil {
		return nil, fmt.Errorf("no DB %q in the file", db)
	}
	out := map[string]uint16{}
	w.walkTree(binary.LittleEndian.Uint64(rec[40:]), db, 0, func(fl uint16, key, data []byte) {
		out[string(key)] = fl
	})
	return out, nil
}

// shapeOf names the layout of a key from its node flags.
func shapeOf(fl uint16) int {
	switch fl & (wFDupData | wFSubData) {
	case 0:
		return gmPlain
	case wFDupData:
		return gmSubPage
	}
	return gmTree
}

// gmLayout is one way key "m" can hold its values.
type gmLayout struct {
	name   string
	stock  bool // written by stock (else ours)
	shape  int  // gmPlain, gmSubPage, gmTree
	n      int  // values at the end
	writes func(t *testing.T, e engine, txn tTxn, dbi uint32, stride int)
}

const (
	gmPlain = iota
	gmSubPage
	gmTree
)

// gmMany: values of the sub-tree layouts (several LEAF2 pages at widths 8
// and 16 with 4 KB pages).
const gmMany = 1200

func gmPut(t *testing.T, eng engine, txn tTxn, dbi uint32, k string, v []byte, flags uint, want int) {
	t.Helper()
	if c := eng.code(txn.put(dbi, []byte(k), v, flags)); c != want {
		t.Fatalf("%s: put %q %x flags %#x: %s, want %s", eng.name(), k, v, flags, errName(c), errName(want))
	}
}

func gmDel(t *testing.T, txn tTxn, dbi uint32, k string, v []byte) {
	t.Helper()
	if err := txn.del(dbi, []byte(k), v); err != nil {
		t.Fatalf("del %q %x: %v", k, v, err)
	}
}

// gmLayouts: x = 2, 4, 6, ... are the values (value index i is x = 2i+2).
var gmLayouts = []gmLayout{
	{"plain", false, gmPlain, 1, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		gmPut(t, e, txn, dbi, "m", gmVal(s, 2), 0, 0)
	}},
	{"plain", true, gmPlain, 1, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		gmPut(t, e, txn, dbi, "m", gmVal(s, 2), 0, 0)
	}},
	{"one-value sub-page by delete", false, gmSubPage, 1, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		gmPut(t, e, txn, dbi, "m", gmVal(s, 2), 0, 0)
		gmPut(t, e, txn, dbi, "m", gmVal(s, 4), 0, 0)
		gmDel(t, txn, dbi, "m", gmVal(s, 4))
	}},
	{"one-value sub-page by delete", true, gmSubPage, 1, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		gmPut(t, e, txn, dbi, "m", gmVal(s, 2), 0, 0)
		gmPut(t, e, txn, dbi, "m", gmVal(s, 4), 0, 0)
		gmDel(t, txn, dbi, "m", gmVal(s, 4))
	}},
	{"one-value sub-page by a refused APPENDDUP", true, gmSubPage, 1, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		gmPut(t, e, txn, dbi, "m", gmVal(s, 2), 0, 0)
		gmPut(t, e, txn, dbi, "m", gmVal(s, 1), 0x40000, eKeyExist)
	}},
	{"one-value sub-tree", true, gmTree, 1, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		for i := 0; i < gmMany; i++ {
			gmPut(t, e, txn, dbi, "m", gmVal(s, uint64(2*i+2)), 0, 0)
		}
		for i := 1; i < gmMany; i++ {
			gmDel(t, txn, dbi, "m", gmVal(s, uint64(2*i+2)))
		}
	}},
	{"inline", false, gmSubPage, 5, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		for i := 0; i < 5; i++ {
			gmPut(t, e, txn, dbi, "m", gmVal(s, uint64(2*i+2)), 0, 0)
		}
	}},
	{"inline", true, gmSubPage, 5, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		for i := 0; i < 5; i++ {
			gmPut(t, e, txn, dbi, "m", gmVal(s, uint64(2*i+2)), 0, 0)
		}
	}},
	{"sub-tree", false, gmTree, gmMany, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		for i := 0; i < gmMany; i++ {
			gmPut(t, e, txn, dbi, "m", gmVal(s, uint64(2*i+2)), 0, 0)
		}
	}},
	{"sub-tree", true, gmTree, gmMany, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		for i := 0; i < gmMany; i++ {
			gmPut(t, e, txn, dbi, "m", gmVal(s, uint64(2*i+2)), 0, 0)
		}
	}},
	{"sub-tree shrunk to one page", true, gmTree, 20, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		for i := 0; i < gmMany; i++ {
			gmPut(t, e, txn, dbi, "m", gmVal(s, uint64(2*i+2)), 0, 0)
		}
		for i := 20; i < gmMany; i++ {
			gmDel(t, txn, dbi, "m", gmVal(s, uint64(2*i+2)))
		}
	}},
	{"sub-tree shrunk and moved back inline", false, gmSubPage, 20, func(t *testing.T, e engine, txn tTxn, dbi uint32, s int) {
		for i := 0; i < gmMany; i++ {
			gmPut(t, e, txn, dbi, "m", gmVal(s, uint64(2*i+2)), 0, 0)
		}
		for i := 20; i < gmMany; i++ {
			gmDel(t, txn, dbi, "m", gmVal(s, uint64(2*i+2)))
		}
	}},
}

// TestGetMultipleLayouts: every positioning op onto key "m" of every
// layout, alone in its DB and between neighbours ("ab" with three inline
// values, "zb" with one plain value), at widths 8 and 16; files written by
// stock and by ours, read by ours.
func TestGetMultipleLayouts(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, stride := range []int{8, 16} {
		dir := t.TempDir()
		var dbs []string
		var models []*gmModel
		var shapes []int
		for _, writer := range []engine{stockEngine{}, subject} {
			env, err := writer.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 64})
			if err != nil {
				t.Fatal(err)
			}
			txn, err := env.begin(nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for li, l := range gmLayouts {
				if l.stock != (writer.name() == "stock") {
					continue
				}
				for _, alone := range []bool{true, false} {
					name := fmt.Sprintf("%d-%s-%s-%v", li, writer.name(), l.name, alone)
					dbi, err := txn.openDBI(name, fDupSort|fDupFixed|fCreate)
					if err != nil {
						t.Fatal(err)
					}
					m := &gmModel{}
					if !alone {
						for i := 0; i < 3; i++ {
							gmPut(t, writer, txn, dbi, "ab", gmVal(stride, uint64(2*i+2)), 0, 0)
							m.add("ab", gmVal(stride, uint64(2*i+2)))
						}
						gmPut(t, writer, txn, dbi, "zb", gmVal(stride, 2), 0, 0)
						m.add("zb", gmVal(stride, 2))
					}
					l.writes(t, writer, txn, dbi, stride)
					for i := 0; i < l.n; i++ {
						m.add("m", gmVal(stride, uint64(2*i+2)))
					}
					dbs = append(dbs, name)
					models = append(models, m)
					shapes = append(shapes, l.shape)
				}
			}
			if err := txn.commit(); err != nil {
				t.Fatal(err)
			}
			env.close()
		}
		// the layouts are the ones meant, as the file has them
		for d, name := range dbs {
			fl, err := keyFlags(filepath.Join(dir, "data.mdb"), name)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if f, ok := fl["m"]; !ok || shapeOf(f) != shapes[d] {
				t.Fatalf("%s: key m stored with node flags %#x (present %v), not as layout %d", name, f, ok, shapes[d])
			}
		}
		pages := learnAll(t, dir, dbs, models, stride)

		env, err := subject.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 64})
		if err != nil {
			t.Fatal(err)
		}
		txn, err := env.begin(nil, 0) // a write txn: the refused puts
		if err != nil {
			t.Fatal(err)
		}
		steps := 0
		for d, name := range dbs {
			dbi, err := txn.openDBI(name, 0)
			if err != nil {
				t.Fatal(err)
			}
			g := &gmChecker{t: t, txn: txn, dbi: dbi, m: models[d], pages: pages[d], stride: stride,
				what: fmt.Sprintf("width %d, DB %s", stride, name)}
			ki, _ := slices.BinarySearch(g.m.keys, "m")
			n := len(g.m.vals["m"])
			if np := len(g.pages["m"]); (n == gmMany) != (np >= 2) || (n < gmMany && np != 1) {
				t.Fatalf("%s: %d values in %d page(s)", g.what, n, np)
			}
			alone := len(g.m.keys) == 1
			for _, pos := range gmPositions {
				ran := false
				for _, i := range slices.Compact([]int{0, n / 3, n - 1}) {
					if pos.ok(g, ki, i) {
						g.after(pos, ki, i)
						ran = true
					}
				}
				// each op ran where it can: First and Last on the key
				// alone, moves from a neighbour between neighbours, Next
				// inside the key with more than one value
				switch pos.name {
				case "First", "Last":
					ran = ran || !alone
				case "Next (from the previous key's last value)", "Prev (from the next key)", "NextNoDup", "PrevNoDup":
					ran = ran || alone
				case "Next (inside the key)":
					ran = ran || n == 1
				}
				if !ran {
					t.Fatalf("%s: %s never applied", g.what, pos.name)
				}
			}
			g.unpositioned()
			steps += g.steps
		}
		txn.abort()
		env.close()
		t.Logf("width %d: %d DBs, %d checked answers", stride, len(dbs), steps)
	}
}

// TestGetMultipleRandom: random DUPFIXED DBs whose keys got their layouts
// from random histories of stock and ours in turn (puts of one, a few or
// hundreds of values, deletes down to a few or one, refused APPENDDUP puts,
// which stock answers by turning a plain value into a one-value sub-page),
// then random positioning ops each followed by the GetMultiple,
// NextMultiple and PrevMultiple sequences, checked against the model and
// the pages (TestGetMultipleLayouts says how).
func TestGetMultipleRandom(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewSource(masterSeed(t)))
	shapes := map[string]int{}
	answers := 0
	for it := 0; it < 20*testScale(t); it++ {
		seed := r.Int63()
		answers += gmRandomRun(t, seed, shapes)
	}
	t.Logf("%d checked answers; keys by layout: %v", answers, shapes)
	// the histories reach every layout (plain, one value inline, several
	// inline, a sub-tree of several pages)
	for _, want := range []string{"plain", "sub-page, 1 value", "sub-page, several values", "sub-tree, several pages"} {
		if shapes[want] == 0 {
			t.Errorf("no key had the layout %q", want)
		}
	}
}

func gmRandomRun(t *testing.T, seed int64, shapes map[string]int) int {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	stride := []int{8, 16}[r.Intn(2)]
	dir := t.TempDir()
	m := &gmModel{}
	what := fmt.Sprintf("seed %d, width %d", seed, stride)
	keys := make([]string, 4+r.Intn(8))
	for i := range keys {
		keys[i] = string([]byte{'b' + byte(r.Intn(24)), 'b' + byte(r.Intn(24))})
	}
	for round := 0; round < 3+r.Intn(4); round++ {
		eng := []engine{subject, stockEngine{}}[r.Intn(2)]
		env, err := eng.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 4})
		if err != nil {
			t.Fatalf("%s: %s: open: %v", what, eng.name(), err)
		}
		txn, err := env.begin(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		dbi, err := txn.openDBI("g", fDupSort|fDupFixed|fCreate)
		if err != nil {
			t.Fatal(err)
		}
		for op := 0; op < 4+r.Intn(8); op++ {
			k := keys[r.Intn(len(keys))]
			vs := m.vals[k]
			switch p := r.Intn(10); {
			case p < 5 || len(vs) == 0:
				n := 1
				switch q := r.Intn(10); {
				case q < 4:
					n = 2 + r.Intn(9)
				case q < 6:
					n = 200 + r.Intn(1300)
				}
				for j := 0; j < n; j++ {
					v := gmVal(stride, uint64(2+2*r.Intn(100000)))
					gmPut(t, eng, txn, dbi, k, v, 0, 0)
					m.add(k, v)
				}
			case p < 7:
				// delete down to a random count (maybe one value)
				keep := r.Intn(min(len(vs), 4)) + 1
				if r.Intn(2) == 0 {
					keep = 1
				}
				for _, v := range slices.Clone(vs[keep:]) {
					gmDel(t, txn, dbi, k, v)
					m.del(k, v)
				}
			case p < 9:
				// refused APPENDDUP of a value not above the last
				gmPut(t, eng, txn, dbi, k, vs[r.Intn(len(vs))], 0x40000, eKeyExist)
			default:
				// every value of the key (lmdb-go's Del(k, nil) would look
				// for an empty value)
				c, err := txn.cursor(dbi)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := c.get([]byte(k), nil, cSet); err != nil {
					t.Fatalf("%s: Set %q: %v", what, k, err)
				}
				if err := c.del(fNoDupData); err != nil {
					t.Fatalf("%s: del %q: %v", what, k, err)
				}
				c.close()
				for _, v := range slices.Clone(vs) {
					m.del(k, v)
				}
			}
		}
		if err := txn.commit(); err != nil {
			t.Fatal(err)
		}
		env.close()
	}
	if len(m.keys) == 0 {
		return 0
	}
	fl, err := keyFlags(filepath.Join(dir, "data.mdb"), "g")
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	pages := learnAll(t, dir, []string{"g"}, []*gmModel{m}, stride)[0]
	for _, k := range m.keys {
		name := []string{"plain", "sub-page", "sub-tree"}[shapeOf(fl[k])]
		switch {
		case shapeOf(fl[k]) == gmPlain:
		case len(m.vals[k]) == 1:
			name += ", 1 value"
		case len(pages[k]) == 1:
			name += ", several values"
		default:
			name += ", several pages"
		}
		shapes[name]++
	}
	env, err := subject.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer env.close()
	txn, err := env.begin(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.abort()
	dbi, err := txn.openDBI("g", 0)
	if err != nil {
		t.Fatal(err)
	}
	g := &gmChecker{t: t, txn: txn, dbi: dbi, m: m, pages: pages, stride: stride, what: what}
	g.unpositioned()
	for step := 0; step < 40; step++ {
		ki := r.Intn(len(m.keys))
		n := len(m.vals[m.keys[ki]])
		i := []int{0, n - 1, r.Intn(n)}[r.Intn(3)]
		var can []gmPos
		for _, p := range gmPositions {
			if p.ok(g, ki, i) {
				can = append(can, p)
			}
		}
		g.after(can[r.Intn(len(can))], ki, i)
	}
	return g.steps
}

// TestGetMultipleDifferenceFromStock pins where ours deliberately answers
// GetMultiple differently from stock LMDB 0.9.33 (README, "Differences from
// stock LMDB"), running the same calls on both engines: a single value
// stored as a plain node and a key whose duplicate cursor ran off the end
// (NextDup, LastDup) get "ok, no data" from stock and the values from ours;
// after the key's last value was deleted through the cursor stock says
// "ok, no data" and ours NotFound; an unpositioned NextMultiple onto a
// plain value is NotFound for stock and the value for ours.
func TestGetMultipleDifferenceFromStock(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	v := func(x uint64) []byte { return gmVal(8, x) }
	type answer struct {
		code int
		v    []byte
	}
	for _, eng := range []engine{stockEngine{}, subject} {
		env, err := eng.openEnv(t.TempDir(), envOpts{mapSize: 64 << 20, maxDBs: 4, flags: fNoSync})
		if err != nil {
			t.Fatal(err)
		}
		txn, err := env.begin(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		dbi, err := txn.openDBI("d", fDupSort|fDupFixed|fCreate)
		if err != nil {
			t.Fatal(err)
		}
		// "a": one plain value; "b": three values inline
		for _, kv := range []struct {
			k string
			x uint64
		}{{"a", 7}, {"b", 1}, {"b", 2}, {"b", 3}} {
			gmPut(t, eng, txn, dbi, kv.k, v(kv.x), 0, 0)
		}
		got := map[string]answer{}
		ask := func(name string, moves ...func(c tCursor) error) {
			c, err := txn.cursor(dbi)
			if err != nil {
				t.Fatal(err)
			}
			defer c.close()
			for i, mv := range moves {
				if err := mv(c); err != nil && !(i == len(moves)-1 && eng.code(err) == eNotFound) {
					t.Fatalf("%s: %s: move %d: %v", eng.name(), name, i, err)
				}
			}
			_, page, err := c.get(unsetKey, nil, cGetMultiple)
			got[name] = answer{eng.code(err), page}
		}
		get := func(k string, op uint) func(c tCursor) error {
			return func(c tCursor) error {
				var kk []byte
				if k != "" {
					kk = []byte(k)
				}
				_, _, err := c.get(kk, nil, op)
				return err
			}
		}
		ask("Set on a plain value", get("a", cSet))
		ask("NextDup off the end", get("b", cSet), get("", cNextDup), get("", cNextDup), get("", cNextDup))
		ask("LastDup", get("b", cSet), get("", cLastDup))
		ask("Del of the last value", get("b", cSet), get("", cLastDup), func(c tCursor) error { return c.del(0) })
		// NextMultiple on a fresh cursor: "a", the first key, is plain
		c, err := txn.cursor(dbi)
		if err != nil {
			t.Fatal(err)
		}
		_, page, err := c.get(nil, nil, cNextMultiple)
		got["NextMultiple unpositioned"] = answer{eng.code(err), page}
		c.close()

		want := map[string]answer{
			"Set on a plain value":      {0, v(7)},
			"NextDup off the end":       {0, bytes.Join([][]byte{v(1), v(2), v(3)}, nil)},
			"LastDup":                   {0, bytes.Join([][]byte{v(1), v(2), v(3)}, nil)},
			"Del of the last value":     {eNotFound, nil},
			"NextMultiple unpositioned": {0, v(7)},
		}
		if eng.name() == "stock" {
			want = map[string]answer{
				"Set on a plain value":      {0, nil},
				"NextDup off the end":       {0, nil},
				"LastDup":                   {0, nil},
				"Del of the last value":     {0, nil},
				"NextMultiple unpositioned": {eNotFound, nil},
			}
		}
		for name, w := range want {
			if g := got[name]; g.code != w.code || !bytes.Equal(g.v, w.v) {
				t.Errorf("%s: %s: %s %x, want %s %x", eng.name(), name, errName(g.code), g.v, errName(w.code), w.v)
			}
		}
		txn.abort()
		env.close()
	}
}
