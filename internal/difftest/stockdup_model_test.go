//go:build !dlmdb_stockonly

package difftest

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// The situations TestDifferentialDupSort steps around because stock LMDB
// 0.9.33 gets them wrong (stockdup_test.go): here our engine is checked
// against the documented behaviour, computed by a brute-force model (sorted
// set of values per key). Not built in the stock-only self-check, which
// would fail exactly on those stock bugs.

type valModel map[string][][]byte // key -> sorted distinct values

func (m valModel) put(k string, v []byte) {
	vs := m[k]
	i, found := slices.BinarySearchFunc(vs, v, bytes.Compare)
	if !found {
		m[k] = slices.Insert(vs, i, append([]byte(nil), v...))
	}
}

// dupEnv opens a fresh env of the engine under test with one DB of the given
// flags and returns a write txn on it.
func dupEnv(t *testing.T, flags uint) (tTxn, uint32) {
	t.Helper()
	// The write txn below is aborted by a cleanup, which runs after the test
	// function (and its deferred UnlockOSThread) has returned, and subtests
	// run on goroutines of their own: keep this goroutine on its OS thread
	// until the cleanups are done (they run last-registered first, so this
	// unlock comes after the abort and the close).
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	env, err := subject.openEnv(t.TempDir(), envOpts{mapSize: 64 << 20, maxDBs: 4, flags: fNoSync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.close() })
	txn, err := env.begin(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(txn.abort)
	dbi, err := txn.openDBI("d", flags|fCreate)
	if err != nil {
		t.Fatal(err)
	}
	return txn, dbi
}

func be64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// scanKey returns all values of key k through a fresh cursor (Set, NextDup...).
func scanKey(t *testing.T, txn tTxn, dbi uint32, k string) [][]byte {
	t.Helper()
	c, err := txn.cursor(dbi)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var out [][]byte
	_, v, err := c.get([]byte(k), nil, cSet)
	for err == nil {
		out = append(out, append([]byte(nil), v...))
		_, v, err = c.get(nil, nil, cNextDup)
	}
	if subject.code(err) != eNotFound {
		t.Fatalf("scan %q: %v", k, err)
	}
	return out
}

func wantGet(t *testing.T, what string, c tCursor, op uint, wantK string, wantV []byte, wantCode int) {
	t.Helper()
	k, v, err := c.get(nil, nil, op)
	if code := subject.code(err); code != wantCode {
		t.Fatalf("%s: got %s, want %s", what, errName(code), errName(wantCode))
	}
	if wantCode != 0 {
		return
	}
	if wantK != "" && string(k) != wantK {
		t.Fatalf("%s: key %q, want %q", what, k, wantK)
	}
	if !bytes.Equal(v, wantV) {
		t.Fatalf("%s: value %x, want %x", what, v, wantV)
	}
}

// Stock bug 4: an MDB_MULTIPLE put must store every item (duplicates of
// stored values are no-ops), also when an item repeats the key's only value.
func TestModelMultiplePutStoresAll(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	txn, dbi := dupEnv(t, fDupSort|fDupFixed)
	m := valModel{}
	batch := func(vals ...uint64) []byte {
		var b []byte
		for _, v := range vals {
			b = append(b, be64(v)...)
		}
		return b
	}
	cases := []struct {
		key   string
		pre   []uint64 // single puts before the MULTIPLE put
		items []uint64
	}{
		{"new-repeat", nil, []uint64{7, 7, 3, 9, 7, 1}},            // new key, item 1 == item 0
		{"single-equal", []uint64{5}, []uint64{5, 2, 8, 5, 4}},     // one value, item 0 equal to it
		{"single-later", []uint64{5}, []uint64{6, 5, 5, 1}},        // equal item after a new one
		{"two-values", []uint64{5, 6}, []uint64{5, 6, 7, 5, 0}},    // already a duplicate page
		{"all-same", []uint64{4}, []uint64{4, 4, 4}},               // nothing new at all
		{"many", nil, []uint64{3, 3, 3, 1, 2, 1, 2, 1000, 999, 3}}, // repeats everywhere
	}
	for _, tc := range cases {
		for _, v := range tc.pre {
			if err := txn.put(dbi, []byte(tc.key), be64(v), 0); err != nil {
				t.Fatalf("%s: put: %v", tc.key, err)
			}
			m.put(tc.key, be64(v))
		}
		c, err := txn.cursor(dbi)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.putMulti([]byte(tc.key), batch(tc.items...), 8, 0); err != nil {
			t.Fatalf("%s: MULTIPLE put: %v", tc.key, err)
		}
		c.close()
		for _, v := range tc.items {
			m.put(tc.key, be64(v))
		}
		got := scanKey(t, txn, dbi, tc.key)
		if !slices.EqualFunc(got, m[tc.key], bytes.Equal) {
			t.Errorf("%s: stored %x, model %x", tc.key, got, m[tc.key])
		}
		c, _ = txn.cursor(dbi)
		if _, _, err := c.get([]byte(tc.key), nil, cSet); err != nil {
			t.Fatal(err)
		}
		if n, err := c.count(); err != nil || n != uint64(len(m[tc.key])) {
			t.Errorf("%s: Count %d %v, model %d", tc.key, n, err, len(m[tc.key]))
		}
		c.close()
	}
	st, err := txn.stat(dbi)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, vs := range m {
		total += len(vs)
	}
	if st.items != uint64(total) {
		t.Errorf("Stat entries %d, model %d", st.items, total)
	}
}

// Stock bug 5: the cursor of a MULTIPLE put stays usable: GetMultiple,
// FirstDup and Next walk the key's values as the model has them.
func TestModelCursorAfterMultiplePut(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	txn, dbi := dupEnv(t, fDupSort|fDupFixed)
	m := valModel{}
	items := []uint64{40, 10, 30, 10, 20}
	var page []byte
	for _, v := range items {
		page = append(page, be64(v)...)
		m.put("k", be64(v))
	}
	if err := txn.put(dbi, []byte("z"), be64(1), 0); err != nil {
		t.Fatal(err)
	}
	for round, op := range []uint{cGetMultiple, cFirstDup} {
		c, err := txn.cursor(dbi)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.putMulti([]byte("k"), page, 8, 0); err != nil {
			t.Fatal(err)
		}
		if op == cGetMultiple {
			_, v, err := c.get(nil, nil, cGetMultiple)
			if err != nil || !bytes.Equal(v, bytes.Join(m["k"], nil)) {
				t.Fatalf("GetMultiple after MULTIPLE put: %x %v, model %x", v, err, bytes.Join(m["k"], nil))
			}
			wantGet(t, "NextMultiple", c, cNextMultiple, "", nil, eNotFound)
		} else {
			wantGet(t, "FirstDup after MULTIPLE put", c, cFirstDup, "", m["k"][0], 0)
			for i := 1; i < len(m["k"]); i++ {
				wantGet(t, "Next", c, cNext, "k", m["k"][i], 0)
			}
			wantGet(t, "Next onto the next key", c, cNext, "z", be64(1), 0)
			wantGet(t, "Prev back", c, cPrev, "k", m["k"][len(m["k"])-1], 0)
		}
		c.close()
		_ = round
	}
}

// Stock bugs 2 and 7: Next/Prev/PrevNoDup from a key with duplicates onto a
// key with one value must not leave the old key's duplicate cursor live.
func TestModelMoveOntoSingleValue(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t.Run("GetMultiple", func(t *testing.T) {
		txn, dbi := dupEnv(t, fDupSort|fDupFixed)
		for _, kv := range [][2]uint64{{'f', 16}, {'f', 0x96}, {'b', 0x114}} {
			if err := txn.put(dbi, []byte{byte(kv[0])}, be64(kv[1]), 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, move := range []uint{cPrevNoDup, cPrev} {
			c, _ := txn.cursor(dbi)
			if _, _, err := c.get([]byte("f"), be64(0x50), cGetBothRange); err != nil {
				t.Fatal(err)
			}
			if move == cPrev {
				wantGet(t, "Prev inside f", c, cPrev, "f", be64(16), 0)
			}
			wantGet(t, "move onto b", c, move, "b", be64(0x114), 0)
			// b has one value: GetMultiple answers it (as on a cursor
			// freshly Set on b), never f's values
			_, v, err := c.get(nil, nil, cGetMultiple)
			if err != nil || !bytes.Equal(v, be64(0x114)) {
				t.Errorf("move %d: GetMultiple on a single-value key: %x %v, want b's value", move, v, err)
			}
			c.close()
		}
	})
	t.Run("Del", func(t *testing.T) {
		txn, dbi := dupEnv(t, fDupSort)
		for _, kv := range [][2]string{{"m", "v1"}, {"m", "v2"}, {"a", "x"}} {
			if err := txn.put(dbi, []byte(kv[0]), []byte(kv[1]), 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, current := range []bool{true, false} {
			if err := txn.put(dbi, []byte("a"), []byte("x"), 0); err != nil {
				t.Fatal(err)
			}
			c, _ := txn.cursor(dbi)
			wantGet(t, "Prev (last)", c, cPrev, "m", []byte("v2"), 0)
			wantGet(t, "PrevNoDup", c, cPrevNoDup, "a", []byte("x"), 0)
			if err := c.del(0); err != nil {
				t.Fatal(err)
			}
			// the cursor now stands on m's first value, as after any Del
			if current {
				wantGet(t, "GetCurrent after Del", c, cGetCurrent, "m", []byte("v1"), 0)
			} else {
				wantGet(t, "Next after Del", c, cNext, "m", []byte("v1"), 0)
				wantGet(t, "Next", c, cNext, "m", []byte("v2"), 0)
				wantGet(t, "Next at end", c, cNext, "", nil, eNotFound)
			}
			c.close()
		}
	})
}

// Stock bug 6: FirstDup after a cursor Del is a fresh position: Next moves on.
func TestModelFirstDupAfterDel(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	txn, dbi := dupEnv(t, fDupSort)
	for _, kv := range [][2]string{{"k", "h"}, {"k", "z"}, {"k", "q"}} {
		if err := txn.put(dbi, []byte(kv[0]), []byte(kv[1]), 0); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := txn.cursor(dbi)
	defer c.close()
	wantGet(t, "Next", c, cNext, "k", []byte("h"), 0)
	if err := c.del(0); err != nil {
		t.Fatal(err)
	}
	wantGet(t, "FirstDup", c, cFirstDup, "", []byte("q"), 0)
	wantGet(t, "Next", c, cNext, "k", []byte("z"), 0)
	wantGet(t, "Next at end", c, cNext, "", nil, eNotFound)
}

// Found by TestDifferentialDupSort (master 5, seed 935344382310329574): an
// MDB_CURRENT re-put of the current duplicate keeps the duplicate cursor's
// end mark, so GetMultiple after Last then PutCurrent answers as after Last
// alone (stock: no data; ours: the last page, getmulti_stock_test.go);
// likewise the key cursor's end mark. Ours and stock must agree.
func TestDupPutCurrentKeepsEnd(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, db := range []int{5, 6} {
		v1, v2 := []byte("w0000000"), []byte("x0000000")
		ops := []op{
			{kind: opPut, db: db, key: []byte("f"), val: v1},
			{kind: opPut, db: db, key: []byte("f"), val: v2},
			{kind: opCurPrev, db: db, slot: 2},
			{kind: opCurPutCurrent, db: db, slot: 2},
			{kind: opCurGetMultiple, db: db, slot: 2},
			{kind: opCurGetCurrent, db: db, slot: 2},
			{kind: opCurPrev, db: db, slot: 2},
		}
		// seed 1398509696346265092 (master 28, scale 2): the key cursor's
		// end mark after a failed NextNoDup survives the re-put too
		ops2 := []op{
			{kind: opPut, db: db, key: []byte("j"), val: v1},
			{kind: opPut, db: db, key: []byte("j"), val: v2},
			{kind: opCurSet, db: db, slot: 2, key: []byte("j")},
			{kind: opCurNextNoDup, db: db, slot: 2},
			{kind: opCurPutCurrent, db: db, slot: 2},
			{kind: opCurNextDup, db: db, slot: 2},
			{kind: opCurPrev, db: db, slot: 2},
		}
		for i, seq := range [][]op{ops, ops2} {
			mm, err := runOps(filepath.Join(t.TempDir(), "p"), subject, stockEngine{}, seq, fNoSync)
			if err != nil {
				t.Fatal(err)
			}
			if mm != nil {
				t.Errorf("db %s, sequence %d: %v", diffDBs[db].name, i, mm)
			}
		}
	}
}

// Found by TestDifferentialDupSort (masters 1 and 4): FirstDup/LastDup/
// GetMultiple right after a cursor Put that turned a single value into
// duplicates. LMDB leaves the key unset there and lmdb-go used to copy a wild
// key buffer (panic/SIGSEGV); the harness passes a placeholder key (see
// apply1), and both engines must agree on everything else.
func TestDupFirstDupAfterConvertingPut(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, db := range []int{5, 6, 7, 8} {
		for _, kind := range []opKind{opCurFirstDup, opCurLastDup, opCurGetMultiple} {
			v1, v2 := []byte("\xde\x00\x00\x00"), []byte("\x01\x00\x00\x00")
			if dupStride(db) == 8 || !isDupFixed(db) {
				v1, v2 = append(v1, "0000"...), append(v2, "0000"...)
			}
			ops := []op{
				{kind: opPut, db: db, key: []byte("rhp"), val: v1},
				{kind: opCurPut, db: db, slot: 1, key: []byte("rhp"), val: v2},
				{kind: kind, db: db, slot: 1},
				{kind: opCurNext, db: db, slot: 1},
			}
			mm, err := runOps(filepath.Join(t.TempDir(), "p"), subject, stockEngine{}, ops, fNoSync)
			if err != nil {
				t.Fatal(err)
			}
			if mm != nil {
				t.Errorf("db %s, %s: %v", diffDBs[db].name, opNames[kind], mm)
			}
		}
	}
}

// Stock bug 8: a cursor Put(NOOVERWRITE) refused with KeyExist moves the
// cursor onto the existing key's first value; an earlier Del's mark must not
// survive that (seed 2577213342427047146 at DLMDB_TEST_SCALE=4).
func TestModelRefusedNoOverwriteAfterDel(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	txn, dbi := dupEnv(t, fDupSort)
	for _, kv := range [][2]string{{"d", "ae"}, {"d", "bd"}, {"m", "x"}} {
		if err := txn.put(dbi, []byte(kv[0]), []byte(kv[1]), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, next := range []uint{cNextDup, cNextNoDup, cNext} {
		if err := txn.put(dbi, []byte("z"), []byte("y"), 0); err != nil {
			t.Fatal(err)
		}
		c, _ := txn.cursor(dbi)
		wantGet(t, "Last", c, cLast, "z", []byte("y"), 0)
		if err := c.del(0); err != nil {
			t.Fatal(err)
		}
		if err := c.put([]byte("d"), []byte("a2"), fNoOverwrite); subject.code(err) != eKeyExist {
			t.Fatalf("NOOVERWRITE put of an existing key: %v, want KeyExist", err)
		}
		switch next {
		case cNextDup, cNext:
			wantGet(t, "NextDup/Next after the refused put", c, next, "d", []byte("bd"), 0)
		case cNextNoDup:
			wantGet(t, "NextNoDup after the refused put", c, next, "m", []byte("x"), 0)
		}
		c.close()
	}
}
