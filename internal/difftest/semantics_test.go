package difftest

import (
	"bytes"
	"path/filepath"
	"runtime"
	"testing"
)

// Hand-written minimal sequences for the classes of differences that the
// random differential test found between our engine and stock LMDB. Each
// runs through the same executor as TestDifferential, so a failure prints
// the first op whose result differs. They document LMDB 0.9.33's observable
// cursor behaviour that a drop-in replacement has to reproduce.

func TestCursorSemantics(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	put := func(k string) op { return op{kind: opPut, key: []byte(k), val: []byte("v-" + k)} }
	del := func(k string) op { return op{kind: opDel, key: []byte(k)} }
	cur := func(kind opKind, slot int, k string) op {
		o := op{kind: kind, slot: slot}
		if k != "" {
			o.key = []byte(k)
		}
		return o
	}
	long := string(bytes.Repeat([]byte("q"), 512))
	cases := []struct {
		name string
		ops  []op
	}{
		// After a Set/SetKey/SetRange that finds nothing, LMDB leaves the
		// cursor initialised at the insertion point.
		{"failed Set leaves cursor at insertion point", []op{
			put("d"), cur(opCurSet, 0, "b"), cur(opCurGetCurrent, 0, ""), cur(opCurNext, 0, ""),
		}},
		{"failed SetKey past the end then Del", []op{
			put("b"), cur(opCurSetKey, 0, "z"), cur(opCurDel, 0, ""), cur(opCurGetCurrent, 0, ""),
		}},
		{"failed SetRange past the end then Next", []op{
			put("b"), cur(opCurSetRange, 0, "z"), cur(opCurNext, 0, ""),
		}},
		// When a delete empties the tree, LMDB resets every cursor on the
		// DB: GetCurrent/Del give EINVAL and Next/Prev restart at First/Last.
		{"emptied tree resets other cursors", []op{
			put("x"), cur(opCurFirst, 1, ""), cur(opCurFirst, 2, ""), cur(opCurDel, 2, ""), put("y"),
			cur(opCurGetCurrent, 1, ""), cur(opCurNext, 1, ""),
		}},
		{"emptied tree by txn Del resets cursors", []op{
			put("x"), cur(opCurFirst, 1, ""), del("x"), put("w"), cur(opCurPrev, 1, ""),
		}},
		// A Next that hit the end leaves the cursor on the last item; an
		// item appended later is returned by the next Next.
		{"Next at end, then insert after, then Next", []op{
			put("b"), cur(opCurLast, 0, ""), cur(opCurNext, 0, ""), put("c"), cur(opCurNext, 0, ""),
		}},
		// A cursor whose item was deleted through another cursor keeps its
		// slot; inserts before it shift it like any other cursor.
		{"item deleted by another cursor, then insert before", []op{
			put("g"), put("m"), cur(opCurSet, 1, "g"), cur(opCurFirst, 2, ""), cur(opCurDel, 2, ""),
			put("j"), cur(opCurNext, 1, ""),
		}},
		{"Del of last item, Next, Del again", []op{
			put("a"), put("b"), cur(opCurLast, 0, ""), cur(opCurDel, 0, ""), cur(opCurNext, 0, ""),
			cur(opCurDel, 0, ""),
		}},
		// MDB_APPEND in a DUPSORT DB with a key equal to the last key is
		// KeyExist in LMDB (appending duplicates needs MDB_APPENDDUP).
		{"Append of an existing key in a DUPSORT DB", []op{
			{kind: opPut, db: 5, key: []byte("a"), val: []byte("x")},
			{kind: opPutAppend, db: 5, key: []byte("a"), val: []byte("y")},
			{kind: opCurPut, db: 5, key: []byte("a"), val: []byte("z"), flags: fAppend},
		}},
		{"GetBoth and DelDup with a 512-byte data item", []op{
			{kind: opPut, db: 5, key: []byte("a"), val: []byte("x")},
			{kind: opPut, db: 5, key: []byte("a"), val: []byte("y")},
			{kind: opCurGetBoth, db: 5, key: []byte("a"), val: bytes.Repeat([]byte("v"), 512)},
			{kind: opDelDup, db: 5, key: []byte("a"), val: bytes.Repeat([]byte("v"), 512)},
		}},
		// Lookups with a key (or, in a DUPSORT DB, a data item) longer than
		// 511 bytes: stock LMDB only checks the size on writes and answers
		// NotFound for lookups.
		{"Get with a 512-byte key", []op{put("a"), {kind: opGet, key: []byte(long)}}},
		{"Del with a 512-byte key", []op{put("a"), {kind: opDel, key: []byte(long)}}},
		{"SetRange with a 512-byte key", []op{put("a"), cur(opCurSetRange, 0, long)}},
	}
	base := t.TempDir()
	for i, c := range cases {
		mm, err := runOps(filepath.Join(base, string(rune('a'+i))), subject, stockEngine{}, c.ops, fNoSync)
		if err != nil {
			t.Fatal(err)
		}
		if mm != nil {
			t.Errorf("%s: %v", c.name, mm)
		}
	}
}

// Found by TestDifferential (seed 8019205103897998630): two overflow values
// written in a txn, a nested txn that shrinks both (freeing their overflow
// pages, which are dirty in the parent) and writes a new large value, then
// commit: the new value must read back exactly.
func TestNestedTxnOverflowReuse(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	g := newGen(1)
	bigA, bigB, bigC, small := g.fill(16129), g.fill(19802), g.fill(18152), g.fill(184)
	ops := []op{
		{kind: opPut, key: []byte("A"), val: bigA},
		{kind: opPut, key: []byte("B"), val: bigB},
		{kind: opBeginNested},
		{kind: opPut, key: []byte("B"), val: small},
		{kind: opPut, key: []byte("A"), val: small},
		{kind: opPut, key: []byte("C"), val: bigC},
		{kind: opGet, key: []byte("C")},
		{kind: opCommitNested},
		{kind: opGet, key: []byte("C")},
		{kind: opCommit},
		{kind: opReadView, key: []byte("C")},
	}
	for _, commitChild := range []bool{true, false} {
		seq := ops
		if !commitChild {
			seq = append([]op(nil), ops...)
			seq[7].kind = opAbortNested
		}
		mm, err := runOps(filepath.Join(t.TempDir(), "n"), subject, stockEngine{}, seq, fNoSync)
		if err != nil {
			t.Fatal(err)
		}
		if mm != nil {
			t.Errorf("child committed=%v: %v", commitChild, mm)
		}
	}
}
