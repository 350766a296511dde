package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"testing"
)

// File compatibility for sorted-duplicate DBs (DUPSORT, DUPFIXED,
// INTEGERDUP, REVERSEDUP), with enough duplicates per key that some of them
// become sub-databases: written by one engine, read by the other, then
// written by the other, in both directions.

type dupDB struct {
	name  string
	flags uint
}

var compatDupDBs = []dupDB{
	{"d-plain", fDupSort},
	{"d-fixed", fDupSort | fDupFixed},
	{"d-intdup", fDupSort | fDupFixed | fIntegerDup},
	{"d-revdup", fDupSort | fReverseDup},
	{"d-odd", fDupSort}, // odd name length
}

// dupModel: db -> key -> set of data items.
type dupModel map[string]map[string]map[string]bool

func dupData(r *rand.Rand, db dupDB) []byte {
	switch {
	case db.flags&fIntegerDup != 0:
		return binary.NativeEndian.AppendUint32(nil, uint32(r.Intn(100000)))
	case db.flags&fDupFixed != 0:
		return binary.BigEndian.AppendUint64(nil, uint64(r.Intn(100000)))
	}
	n := 1 + r.Intn(30)
	if r.Intn(15) == 0 {
		n = 100 + r.Intn(400)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(r.Intn(10))
	}
	return b
}

func dupLess(db dupDB, a, b string) bool {
	switch {
	case db.flags&fIntegerDup != 0:
		return binary.NativeEndian.Uint32([]byte(a)) < binary.NativeEndian.Uint32([]byte(b))
	case db.flags&fReverseDup != 0:
		return reverseLess(a, b)
	}
	return a < b
}

func compatDupWrite(t *testing.T, eng engine, dir string, m dupModel, r *rand.Rand, txns int) {
	t.Helper()
	env, err := eng.openEnv(dir, envOpts{mapSize: 128 << 20, maxDBs: 16})
	if err != nil {
		t.Fatalf("%s: open: %v", eng.name(), err)
	}
	defer env.close()
	for i := 0; i < txns; i++ {
		txn, err := env.begin(nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for j, n := 0, 100+r.Intn(500); j < n; j++ {
			db := compatDupDBs[r.Intn(len(compatDupDBs))]
			if i == 0 && j < 2000 {
				// start with a few hundred duplicates of "hot" in every DB,
				// so each has a duplicate sub-database
				db = compatDupDBs[j%len(compatDupDBs)]
				n = max(n, 2001)
			}
			dbi, err := txn.openDBI(db.name, db.flags|fCreate)
			if err != nil {
				t.Fatalf("%s: open dbi %s: %v", eng.name(), db.name, err)
			}
			if m[db.name] == nil {
				m[db.name] = map[string]map[string]bool{}
			}
			key := fmt.Sprintf("k%03d", r.Intn(40)) // few keys: long duplicate lists
			if r.Intn(3) == 0 || (i == 0 && j < 2000) {
				key = "hot" // hundreds of duplicates: a sub-database
			}
			p := r.Intn(10)
			if i == 0 && j < 2000 {
				p = 0
			}
			switch {
			case p < 7:
				v := dupData(r, db)
				if err := txn.put(dbi, []byte(key), v, 0); err != nil {
					t.Fatalf("%s: put %s/%s: %v", eng.name(), db.name, key, err)
				}
				if m[db.name][key] == nil {
					m[db.name][key] = map[string]bool{}
				}
				m[db.name][key][string(v)] = true
			case p < 9:
				// delete one existing duplicate
				vals := m[db.name][key]
				if len(vals) == 0 {
					continue
				}
				var v string
				for v = range vals {
					break
				}
				if err := txn.del(dbi, []byte(key), []byte(v)); err != nil {
					t.Fatalf("%s: del %s/%s/%q: %v", eng.name(), db.name, key, v, err)
				}
				delete(vals, v)
				if len(vals) == 0 {
					delete(m[db.name], key)
				}
			default:
				// delete all duplicates of a key through a cursor
				if len(m[db.name][key]) == 0 || (key == "hot" && r.Intn(10) != 0) {
					continue
				}
				c, err := txn.cursor(dbi)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := c.get([]byte(key), nil, cSet); err != nil {
					t.Fatalf("%s: set %s/%s: %v", eng.name(), db.name, key, err)
				}
				if err := c.del(fNoDupData); err != nil {
					t.Fatalf("%s: del all %s/%s: %v", eng.name(), db.name, key, err)
				}
				c.close()
				delete(m[db.name], key)
			}
		}
		if err := txn.commit(); err != nil {
			t.Fatal(err)
		}
	}
}

func compatDupVerify(t *testing.T, eng engine, dir string, m dupModel, what string) {
	t.Helper()
	// the file itself, engine-independently: every page used exactly once
	probs, info := walkEnv(dir)
	if len(probs) > 0 {
		t.Fatalf("%s: page accounting of the data file (%s): %v", what, info, probs)
	}
	t.Logf("%s: file: %s", what, info)
	env, err := eng.openEnv(dir, envOpts{mapSize: 128 << 20, maxDBs: 16, flags: fReadonly})
	if err != nil {
		t.Fatalf("%s: %s cannot open: %v", what, eng.name(), err)
	}
	defer env.close()
	txn, err := env.begin(nil, fReadonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.abort()
	total, maxDups := 0, 0
	for _, db := range compatDupDBs {
		dbi, err := txn.openDBI(db.name, 0)
		if err != nil {
			t.Fatalf("%s: %s: open %s: %v", what, eng.name(), db.name, err)
		}
		if fl, err := txn.dbFlags(dbi); err != nil || fl&(fDupSort|fDupFixed|fIntegerDup|fReverseDup) != db.flags {
			t.Fatalf("%s: %s: %s flags %#x (%v), want %#x", what, eng.name(), db.name, fl, err, db.flags)
		}
		var want [][2]string
		keys := make([]string, 0, len(m[db.name]))
		for k := range m[db.name] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			vals := make([]string, 0, len(m[db.name][k]))
			for v := range m[db.name][k] {
				vals = append(vals, v)
			}
			sort.Slice(vals, func(i, j int) bool { return dupLess(db, vals[i], vals[j]) })
			for _, v := range vals {
				want = append(want, [2]string{k, v})
			}
			maxDups = max(maxDups, len(vals))
		}
		got, st, err := dumpTxnDB(eng, txn, dbi)
		if err != nil {
			t.Fatalf("%s: %s: scan %s: %v", what, eng.name(), db.name, err)
		}
		if len(got) != len(want) || st.items != uint64(len(want)) {
			t.Fatalf("%s: %s: %s has %d pairs (stat %d), want %d", what, eng.name(), db.name, len(got), st.items, len(want))
		}
		for i := range want {
			if string(got[i].k) != want[i][0] || !bytes.Equal(got[i].v, []byte(want[i][1])) {
				t.Fatalf("%s: %s: %s pair %d: got %q/%s, want %q/%s", what, eng.name(), db.name, i,
					got[i].k, showBytes(got[i].v), want[i][0], showBytes([]byte(want[i][1])))
			}
		}
		// duplicate counts per key through a cursor
		c, err := txn.cursor(dbi)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if _, _, err := c.get([]byte(k), nil, cSet); err != nil {
				t.Fatalf("%s: %s: set %s/%s: %v", what, eng.name(), db.name, k, err)
			}
			n, err := c.count()
			if err != nil || n != uint64(len(m[db.name][k])) {
				t.Fatalf("%s: %s: count %s/%s = %d (%v), want %d", what, eng.name(), db.name, k, n, err, len(m[db.name][k]))
			}
		}
		c.close()
		total += len(got)
	}
	if err := txn.check(); err != nil {
		t.Fatalf("%s: %s: Check: %v", what, eng.name(), err)
	}
	t.Logf("%s: %s read %d pairs, up to %d duplicates per key", what, eng.name(), total, maxDups)
}

func TestFileCompatDupSort(t *testing.T) {
	if isolate(t) {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewSource(masterSeed(t)))
	ours, stock := subject, engine(stockEngine{})
	stockDir, oursDir := t.TempDir(), t.TempDir()

	mStock := dupModel{}
	compatDupWrite(t, stock, stockDir, mStock, r, 12)
	compatDupVerify(t, stock, stockDir, mStock, "stock file, stock reads (model sanity)")
	compatDupVerify(t, ours, stockDir, mStock, "stock file, ours reads")

	mOurs := dupModel{}
	compatDupWrite(t, ours, oursDir, mOurs, r, 12)
	compatDupVerify(t, ours, oursDir, mOurs, "ours file, ours reads")
	compatDupVerify(t, stock, oursDir, mOurs, "ours file, stock reads")

	compatDupWrite(t, ours, stockDir, mStock, r, 8)
	compatDupVerify(t, stock, stockDir, mStock, "stock file after ours wrote, stock reads")
	compatDupWrite(t, stock, oursDir, mOurs, r, 8)
	compatDupVerify(t, ours, oursDir, mOurs, "ours file after stock wrote, ours reads")
}
