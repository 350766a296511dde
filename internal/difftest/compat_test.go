package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// File compatibility: an env written by one engine is read completely and
// identically by the other, and each can keep writing the other's file.
// A Go map is the model; each step is done by exactly one engine with the env
// closed in between (never both engines on one env at once).

type compatDB struct {
	name  string
	flags uint
}

// Names of odd and even lengths (DLMDB misaligns nodes after odd-length keys,
// and DB names are keys of the main DB).
var compatDBs = func() []compatDB {
	var dbs []compatDB
	for i := 0; i < 14; i++ {
		name := fmt.Sprintf("db%0*d", 1+i%5, i) // lengths 3..7
		var fl uint
		switch i % 7 {
		case 3:
			fl = fIntegerKey
		case 5:
			fl = fReverseKey
		}
		dbs = append(dbs, compatDB{name, fl})
	}
	return dbs
}()

type compatModel map[string]map[string][]byte

func (m compatModel) keyFor(r *rand.Rand, db compatDB) []byte {
	if db.flags&fIntegerKey != 0 {
		b := make([]byte, 8)
		binary.NativeEndian.PutUint64(b, uint64(r.Intn(50000)))
		return b
	}
	n := 1 + r.Intn(40)
	if r.Intn(20) == 0 {
		n = 100 + r.Intn(412) // up to 511
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + r.Intn(40))
	}
	return b
}

func compatValue(r *rand.Rand) []byte {
	n := r.Intn(60)
	switch r.Intn(12) {
	case 0:
		n = 2100 + r.Intn(18000) // overflow pages
	case 1:
		n = 0
	}
	b := make([]byte, n)
	r.Read(b)
	return b
}

// compatWrite runs txns write transactions on the env at dir with eng,
// mirroring every committed change in m. Some txns delete a lot (freeing
// pages, including overflow pages), some are aborted.
func compatWrite(t *testing.T, eng engine, dir string, m compatModel, r *rand.Rand, txns int) {
	t.Helper()
	env, err := eng.openEnv(dir, envOpts{mapSize: 128 << 20, maxDBs: 32})
	if err != nil {
		t.Fatalf("%s: open %s: %v", eng.name(), dir, err)
	}
	defer env.close()
	compatWriteEnv(t, eng, env, m, r, txns)
}

// compatWriteEnv is compatWrite on an env already open.
func compatWriteEnv(t *testing.T, eng engine, env tEnv, m compatModel, r *rand.Rand, txns int) {
	t.Helper()
	for i := 0; i < txns; i++ {
		txn, err := env.begin(nil, 0)
		if err != nil {
			t.Fatalf("%s: begin: %v", eng.name(), err)
		}
		pending := compatModel{}
		abort := r.Intn(6) == 0
		for j, n := 0, 50+r.Intn(400); j < n; j++ {
			db := compatDBs[r.Intn(len(compatDBs))]
			dbi, err := txn.openDBI(db.name, db.flags|fCreate)
			if err != nil {
				t.Fatalf("%s: open dbi %s: %v", eng.name(), db.name, err)
			}
			cur := func(k string) ([]byte, bool) {
				if p, ok := pending[db.name]; ok {
					if v, ok := p[k]; ok {
						return v, v != nil
					}
				}
				v, ok := m[db.name][k]
				return v, ok
			}
			set := func(k string, v []byte) {
				if pending[db.name] == nil {
					pending[db.name] = map[string][]byte{}
				}
				pending[db.name][k] = v
			}
			if r.Intn(5) == 0 {
				// delete an existing key, or a range of them
				keys := sortedKeys(m[db.name])
				if len(keys) == 0 {
					continue
				}
				start := r.Intn(len(keys))
				cnt := 1
				if r.Intn(25) == 0 {
					cnt = 1 + r.Intn(200)
				}
				for _, k := range keys[start:min(len(keys), start+cnt)] {
					if _, ok := cur(k); !ok {
						continue
					}
					if err := txn.del(dbi, []byte(k), nil); err != nil {
						t.Fatalf("%s: del: %v", eng.name(), err)
					}
					set(k, nil)
				}
				continue
			}
			k, v := m.keyFor(r, db), compatValue(r)
			if err := txn.put(dbi, k, v, 0); err != nil {
				t.Fatalf("%s: put %q: %v", eng.name(), k, err)
			}
			set(string(k), v)
		}
		if abort {
			txn.abort()
			continue
		}
		if err := txn.commit(); err != nil {
			t.Fatalf("%s: commit: %v", eng.name(), err)
		}
		for db, p := range pending {
			if m[db] == nil {
				m[db] = map[string][]byte{}
			}
			for k, v := range p {
				if v == nil {
					delete(m[db], k)
				} else {
					m[db][k] = v
				}
			}
		}
	}
}

func sortedKeys(mm map[string][]byte) []string {
	keys := make([]string, 0, len(mm))
	for k := range mm {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func reverseLess(a, b string) bool {
	for i, j := len(a)-1, len(b)-1; i >= 0 && j >= 0; i, j = i-1, j-1 {
		if a[i] != b[j] {
			return a[i] < b[j]
		}
	}
	return len(a) < len(b)
}

// modelOrder lists a DB's keys in the order its comparator defines.
func modelOrder(db compatDB, mm map[string][]byte) []string {
	keys := sortedKeys(mm)
	switch {
	case db.flags&fIntegerKey != 0:
		sort.Slice(keys, func(i, j int) bool {
			return binary.NativeEndian.Uint64([]byte(keys[i])) < binary.NativeEndian.Uint64([]byte(keys[j]))
		})
	case db.flags&fReverseKey != 0:
		sort.Slice(keys, func(i, j int) bool { return reverseLess(keys[i], keys[j]) })
	}
	return keys
}

// compatVerify opens dir with eng read-only and checks that it holds exactly m.
func compatVerify(t *testing.T, eng engine, dir string, m compatModel, what string) {
	t.Helper()
	// the file itself, engine-independently: every page used exactly once
	if probs, info := walkEnv(dir); len(probs) > 0 {
		t.Fatalf("%s: page accounting of the data file (%s): %v", what, info, probs)
	}
	env, err := eng.openEnv(dir, envOpts{mapSize: 128 << 20, maxDBs: 32, flags: fReadonly})
	if err != nil {
		t.Fatalf("%s: %s: %s cannot open: %v", what, dir, eng.name(), err)
	}
	defer env.close()
	txn, err := env.begin(nil, fReadonly)
	if err != nil {
		t.Fatalf("%s: %s: begin: %v", what, eng.name(), err)
	}
	defer txn.abort()
	// the main DB lists exactly the named DBs
	root, err := txn.openDBI("", 0)
	if err != nil {
		t.Fatalf("%s: %s: open main db: %v", what, eng.name(), err)
	}
	names, _, err := dumpTxnDB(eng, txn, root)
	if err != nil {
		t.Fatalf("%s: %s: scan main db: %v", what, eng.name(), err)
	}
	var want []string
	for _, db := range compatDBs {
		if _, ok := m[db.name]; ok {
			want = append(want, db.name)
		}
	}
	sort.Strings(want)
	var got []string
	for _, kv := range names {
		got = append(got, string(kv.k))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: %s lists DBs %v, want %v", what, eng.name(), got, want)
	}
	entries := 0
	var treePages uint64
	if st, err := txn.stat(root); err == nil {
		treePages += st.branch + st.leaf + st.overflow
	}
	for _, db := range compatDBs {
		mm, ok := m[db.name]
		if !ok {
			continue
		}
		dbi, err := txn.openDBI(db.name, 0)
		if err != nil {
			t.Fatalf("%s: %s: open dbi %s: %v", what, eng.name(), db.name, err)
		}
		if fl, err := txn.dbFlags(dbi); err != nil || fl&(fIntegerKey|fReverseKey) != db.flags {
			t.Fatalf("%s: %s: db %s flags %#x (%v), want %#x", what, eng.name(), db.name, fl, err, db.flags)
		}
		kvs, st, err := dumpTxnDB(eng, txn, dbi)
		if err != nil {
			t.Fatalf("%s: %s: scan %s: %v", what, eng.name(), db.name, err)
		}
		order := modelOrder(db, mm)
		if len(kvs) != len(order) || st.items != uint64(len(order)) {
			t.Fatalf("%s: %s: db %s has %d entries (stat %d), want %d", what, eng.name(), db.name,
				len(kvs), st.items, len(order))
		}
		for i, k := range order {
			if string(kvs[i].k) != k || !bytes.Equal(kvs[i].v, mm[k]) {
				t.Fatalf("%s: %s: db %s entry %d: got %s=%s, want %s=%s", what, eng.name(), db.name, i,
					showBytes(kvs[i].k), showBytes(kvs[i].v), showBytes([]byte(k)), showBytes(mm[k]))
			}
			// point lookups agree with the scan
			if i%7 == 0 {
				v, err := txn.get(dbi, []byte(k))
				if err != nil || !bytes.Equal(v, mm[k]) {
					t.Fatalf("%s: %s: get %s/%s = %s, %v", what, eng.name(), db.name, showBytes([]byte(k)), showBytes(v), err)
				}
			}
		}
		entries += len(kvs)
		treePages += st.branch + st.leaf + st.overflow
	}
	if err := txn.check(); err != nil {
		t.Fatalf("%s: %s: Check: %v", what, eng.name(), err)
	}
	lastPg, err := env.lastPgno()
	if err != nil {
		t.Fatalf("%s: %s: info: %v", what, eng.name(), err)
	}
	// pages neither meta nor in a user tree: the free DB and the free pages it lists
	spare := int64(lastPg+1) - 2 - int64(treePages)
	if spare <= 0 && !strings.Contains(what, "compact=true") {
		t.Fatalf("%s: %s: no free pages (last pgno %d, %d pages in trees): the workload should have freed some",
			what, eng.name(), lastPg, treePages)
	}
	t.Logf("%s: %s read %d DBs, %d entries, %d tree pages, %d pages free or in the free DB",
		what, eng.name(), len(want), entries, treePages, spare)
}

func dumpTxnDB(eng engine, txn tTxn, dbi uint32) ([]kvPair, tStat, error) {
	st, err := txn.stat(dbi)
	if err != nil {
		return nil, st, err
	}
	c, err := txn.cursor(dbi)
	if err != nil {
		return nil, st, err
	}
	defer c.close()
	var out []kvPair
	for op := cFirst; ; op = cNext {
		k, v, err := c.get(nil, nil, op)
		if eng.code(err) == eNotFound {
			return out, st, nil
		}
		if err != nil {
			return nil, st, err
		}
		out = append(out, kvPair{k, v})
	}
}

func TestFileCompat(t *testing.T) {
	if isolate(t) {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	seed := masterSeed(t)
	r := rand.New(rand.NewSource(seed))
	ours, stock := subject, engine(stockEngine{})

	stockDir, oursDir := t.TempDir(), t.TempDir()

	// 1. stock writes, ours reads
	mStock := compatModel{}
	compatWrite(t, stock, stockDir, mStock, r, 25)
	compatVerify(t, stock, stockDir, mStock, "stock file, stock reads (model sanity)")
	compatVerify(t, ours, stockDir, mStock, "stock file, ours reads")

	// 2. ours writes, stock reads
	mOurs := compatModel{}
	compatWrite(t, ours, oursDir, mOurs, r, 25)
	compatVerify(t, ours, oursDir, mOurs, "ours file, ours reads")
	compatVerify(t, stock, oursDir, mOurs, "ours file, stock reads")

	// 3. each writes into the other's file; the other still reads it
	compatWrite(t, ours, stockDir, mStock, r, 15)
	compatVerify(t, stock, stockDir, mStock, "stock file after ours wrote, stock reads")
	compatVerify(t, ours, stockDir, mStock, "stock file after ours wrote, ours reads")
	compatWrite(t, stock, oursDir, mOurs, r, 15)
	compatVerify(t, ours, oursDir, mOurs, "ours file after stock wrote, ours reads")
	compatVerify(t, stock, oursDir, mOurs, "ours file after stock wrote, stock reads")

	// 4. and once more the other way round, so both engines reuse pages the
	// other freed
	compatWrite(t, stock, stockDir, mStock, r, 10)
	compatVerify(t, ours, stockDir, mStock, "stock file, third generation, ours reads")
	compatWrite(t, ours, oursDir, mOurs, r, 10)
	compatVerify(t, stock, oursDir, mOurs, "ours file, third generation, stock reads")

	// 5. copies (plain and compacting) made by one engine are read by the other
	for _, c := range []struct {
		by, reader engine
		src        string
		m          compatModel
	}{{ours, stock, stockDir, mStock}, {stock, ours, oursDir, mOurs}} {
		for _, compact := range []bool{false, true} {
			dst := t.TempDir()
			env, err := c.by.openEnv(c.src, envOpts{mapSize: 128 << 20, maxDBs: 32})
			if err != nil {
				t.Fatal(err)
			}
			err = env.copyTo(dst, compact)
			env.close()
			if err != nil {
				t.Fatalf("%s: copy (compact=%v): %v", c.by.name(), compact, err)
			}
			what := fmt.Sprintf("copy by %s (compact=%v)", c.by.name(), compact)
			compatVerify(t, c.reader, dst, c.m, what+", "+c.reader.name()+" reads")
			compatVerify(t, c.by, dst, c.m, what+", "+c.by.name()+" reads")
		}
	}
}
