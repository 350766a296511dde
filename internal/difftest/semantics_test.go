package difftest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
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
		// A cursor Put with MDB_APPEND leaves LMDB's EOF mark (it steps to
		// the last item first); as after Last, the mark survives an insert
		// behind the cursor and a Del (seed 66179467738538197).
		{"cursor Append, insert after, Del, Next", []op{
			put("j"), {kind: opCurPut, slot: 1, key: []byte("m"), val: []byte("x"), flags: fAppend},
			put("s"), cur(opCurDel, 1, ""), cur(opCurNext, 1, ""),
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
	for _, sub := range subjects() {
		for i, c := range cases {
			mm, err := runOps(filepath.Join(base, sub.name(), string(rune('a'+i))), sub, stockEngine{}, c.ops, fNoSync)
			if err != nil {
				t.Fatal(err)
			}
			if mm != nil {
				t.Errorf("%s: %s: %v", sub.name(), c.name, mm)
			}
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
	for _, sub := range subjects() {
		for _, commitChild := range []bool{true, false} {
			seq := ops
			if !commitChild {
				seq = append([]op(nil), ops...)
				seq[7].kind = opAbortNested
			}
			mm, err := runOps(filepath.Join(t.TempDir(), "n"), sub, stockEngine{}, seq, fNoSync)
			if err != nil {
				t.Fatal(err)
			}
			if mm != nil {
				t.Errorf("%s: child committed=%v: %v", sub.name(), commitChild, mm)
			}
		}
	}
}

// Found by TestDifferential (seed 4367162740686136049): a delete leaves a
// leaf underfull and it borrows the last item of its left neighbour; the
// new separator for it in the parent is a long key that does not fit there.
// Stock LMDB then splits the parent (its key update does), our engine used
// to merge the two leaves instead. Both trees are valid, but the page
// boundary shows through LMDB's cursor arithmetic: after a Set that finds
// nothing, Next returns the first key above it when the insertion point is
// at the end of a leaf and the second one otherwise. Keys are "NNNN" plus
// L times 'a' ("P0070.8" = put of "0070aaaaaaaa"); S = Set of the key plus
// a zero byte (a miss just after it), N = Next on the same cursor.
func TestBorrowWithParentSplit(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const seq = `P0070.8 P0192.3 P0061.431 P0072.4 P0105.5 P0034.3 P0090.491 P0128.357 P0052.3 P0197.393
		P0023.410 P0123.5 P0080.4 P0186.488 P0102.3 P0025.8 P0133.8 P0082.448 P0050.7 P0022.7 P0176.8
		P0010.418 P0098.6 P0079.420 P0078.412 P0035.2 P0106.5 P0153.478 P0165.357 P0039.8 P0028.3
		P0062.348 P0084.465 P0001.440 P0019.466 P0120.6 P0047.383 P0041.8 P0037.354 P0168.8 P0138.7
		P0151.5 P0032.356 P0115.7 P0137.373 P0110.4 P0150.3 P0116.1 P0154.393 P0095.316 P0159.329
		P0172.8 P0144.8 P0108.6 P0101.1 P0011.490 P0140.2 P0097.2 P0171.7 P0020.432 P0067.465 P0190.7
		P0058.1 P0185.5 P0024.1 P0099.2 P0191.2 P0049.376 P0006.3 P0016.5 P0109.7 P0178.3 P0188.4
		P0126.394 P0170.5 P0184.6 P0069.486 P0164.375 P0143.1 P0119.321 P0139.7 P0149.2 P0104.393
		P0198.8 P0146.356 P0114.396 P0017.5 P0076.422 P0030.418 P0008.5 P0003.314 P0125.396 P0167.493
		P0161.355 P0096.490 P0130.404 P0000.5 P0117.2 P0156.417 P0112.302 P0163.384 P0004.384
		P0169.474 P0129.405 P0132.412 P0127.396 D0168.8 D0114.396 S0109.7 N`
	var ops []op
	for _, w := range strings.Fields(seq) {
		if w == "N" {
			ops = append(ops, op{kind: opCurNext, slot: 1})
			continue
		}
		var n int
		if _, err := fmt.Sscanf(w[6:], "%d", &n); err != nil || w[5] != '.' {
			t.Fatalf("bad word %q", w)
		}
		key := append([]byte(w[1:5]), bytes.Repeat([]byte{'a'}, n)...)
		switch w[0] {
		case 'P':
			ops = append(ops, op{kind: opPut, key: key, val: []byte("v")})
		case 'D':
			ops = append(ops, op{kind: opDel, key: key})
		case 'S':
			ops = append(ops, op{kind: opCurSet, slot: 1, key: append(key, 0)})
		default:
			t.Fatalf("bad word %q", w)
		}
	}
	for _, sub := range subjects() {
		mm, err := runOps(filepath.Join(t.TempDir(), "b"), sub, stockEngine{}, ops, fNoSync)
		if err != nil {
			t.Fatal(err)
		}
		if mm != nil {
			t.Errorf("%s: %v", sub.name(), mm)
		}
	}
}
