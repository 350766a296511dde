package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"testing"
)

// Issue 12, finding 1: stock LMDB, writing over a file of ours, leaves
// layouts our engine never writes itself. Our LEAF2 sub-pages of an odd
// value width hold 16 + n*width bytes (odd for odd n); stock grows such a
// sub-page by four slots at once and, deleting values, shrinks it by the
// slack it gathered, moving the nodes below it by that (odd) amount. So
// nodes of odd size at odd offsets, sub-pages with slack of any size and
// nodes packed side by side without a pad byte appear. Our reader, writer,
// copier and checker must take all of them.

// TestStockOverOursOddDupFixed: ours, writing LEAF2 sub-pages at their
// exact size as releases before the even rule did (setLeaf2Exact), fills a
// DUPSORT|DUPFIXED DB of 13-byte values: keys of odd and even lengths
// holding 1..700 values, some inline, some promoted. Stock then deletes
// values (never a key's last one: stock's own delete of a node it packed
// without a pad byte damages the next node, see FORMAT.md), which leaves
// nodes of odd size at odd offsets; the test makes sure the file holds
// some. Then ours (back to even sub-pages) reads the file both ways and
// checks it, writes over it, copies it (plain and compacting), and both
// engines read every result back against the model.
func TestStockOverOursOddDupFixed(t *testing.T) {
	if isolate(t) {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	seed := masterSeed(t)
	r := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	ours, stock := subject, engine(stockEngine{})
	dir := t.TempDir()
	const width = 13
	db := ppDB{name: "df13", flags: fDupSort | fDupFixed, width: width}
	m := &ppModel{}
	m.ensure(db)
	val := func() string { return string(ppDupVal(r, db)) }
	// write: txns txns of ops random changes each (fill: the first txn
	// first fills 128 keys); onlyDel: nothing is added and deletes leave
	// every key at least one value
	write := func(eng engine, txns, ops int, fill, onlyDel bool) {
		t.Helper()
		env, err := eng.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 8})
		if err != nil {
			t.Fatalf("%s: open: %v", eng.name(), err)
		}
		defer env.close()
		for i := 0; i < txns; i++ {
			txn, err := env.begin(nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			dbi, err := txn.openDBI(db.name, db.flags|fCreate)
			if err != nil {
				t.Fatalf("%s: open dbi: %v", eng.name(), err)
			}
			if fill && i == 0 {
				for k := 0; k < 128; k++ {
					key := fmt.Sprintf("%0*d", 1+k%9, k) // odd and even lengths
					m.dup[db.name][key] = map[string]bool{}
					for n := 1 + r.Intn(700); n > 0; n-- {
						v := val()
						if err := txn.put(dbi, []byte(key), []byte(v), 0); err != nil {
							t.Fatalf("%s: put: %v", eng.name(), err)
						}
						m.dup[db.name][key][v] = true
					}
				}
			}
			for j := 0; j < ops; j++ {
				keys := m.keys(db.name)
				if len(keys) == 0 {
					break
				}
				key := keys[r.Intn(len(keys))]
				vals := m.dup[db.name][key]
				if !onlyDel && r.Intn(10) < 4 {
					for n := 1 + r.Intn(6); n > 0; n-- {
						v := val()
						if err := txn.put(dbi, []byte(key), []byte(v), 0); err != nil {
							t.Fatalf("%s: put: %v", eng.name(), err)
						}
						vals[v] = true
					}
					continue
				}
				keep := 0
				if onlyDel {
					keep = 1
				}
				s := sortedDups(db, vals)
				for n := 1 + r.Intn(6); n > 0 && len(s) > keep; n-- {
					i := r.Intn(len(s))
					v := s[i]
					s = append(s[:i], s[i+1:]...)
					if err := txn.del(dbi, []byte(key), []byte(v)); err != nil {
						t.Fatalf("%s: del: %v", eng.name(), err)
					}
					delete(vals, v)
				}
				if len(vals) == 0 {
					delete(m.dup[db.name], key)
				}
			}
			if err := txn.commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	setLeaf2Exact(true)
	write(ours, 10, 300, true, false)
	setLeaf2Exact(false)
	ppVerify(t, ours, dir, m, []ppDB{db}, "ours wrote (exact-size sub-pages)")
	write(stock, 10, 300, false, true)
	odd, err := oddNodeOffsets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if odd == 0 {
		t.Fatalf("stock's deletes left no node at an odd offset: the test does not test what it claims")
	}
	t.Logf("after stock's deletes: %d nodes at odd offsets", odd)
	ppVerify(t, stock, dir, m, []ppDB{db}, "stock deleted, stock reads")
	ppVerify(t, ours, dir, m, []ppDB{db}, "stock deleted, ours reads")
	for _, compact := range []bool{false, true} {
		dst := t.TempDir()
		env, err := ours.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 8})
		if err != nil {
			t.Fatal(err)
		}
		err = env.copyTo(dst, compact)
		env.close()
		if err != nil {
			t.Fatalf("ours: copy (compact=%v): %v", compact, err)
		}
		what := fmt.Sprintf("copy by ours (compact=%v)", compact)
		ppVerify(t, ours, dst, m, []ppDB{db}, what+", ours reads")
		ppVerify(t, stock, dst, m, []ppDB{db}, what+", stock reads")
	}
	// ours writes over stock's layouts, then both read it
	write(ours, 6, 400, false, false)
	ppVerify(t, ours, dir, m, []ppDB{db}, "ours wrote over stock's layouts, ours reads")
	ppVerify(t, stock, dir, m, []ppDB{db}, "ours wrote over stock's layouts, stock reads")
}

// oddNodeOffsets counts the slots at odd offsets in the leaf pages of a
// data file (pages whose header names their own number; 4 KiB pages).
func oddNodeOffsets(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "data.mdb"))
	if err != nil {
		return 0, err
	}
	const ps = 4096
	n := 0
	for pg := 2; (pg+1)*ps <= len(b); pg++ {
		p := b[pg*ps : (pg+1)*ps]
		flags := binary.LittleEndian.Uint16(p[10:])
		lower, upper := int(binary.LittleEndian.Uint16(p[12:])), int(binary.LittleEndian.Uint16(p[14:]))
		if binary.LittleEndian.Uint64(p) != uint64(pg) || flags&^0x10 != 0x02 || lower < 16 || lower > upper || upper > ps {
			continue
		}
		for i := 16; i < lower; i += 2 {
			if binary.LittleEndian.Uint16(p[i:])&1 != 0 {
				n++
			}
		}
	}
	return n, nil
}

// sortedDups is the model's values of key in db's duplicate order.
func sortedDups(db ppDB, vals map[string]bool) []string {
	out := make([]string, 0, len(vals))
	for v := range vals {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return db.dupLess(out[i], out[j]) })
	return out
}

// joinVals concatenates fixed-width values (a GetMultiple page).
func joinVals(vs []string) []byte {
	var b bytes.Buffer
	for _, v := range vs {
		b.WriteString(v)
	}
	return b.Bytes()
}
