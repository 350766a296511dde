package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestAppendDupPagesLikeStock: loading promoted duplicate sets value by
// value through one cursor answers as stock LMDB and allocates exactly its
// pages. With MDB_APPENDDUP a put past a sub-tree's last value splits the
// last leaf there (full pages, the layout DLMDB's leaf2_bench measures);
// with plain ascending puts the split is stock's middle one. Every 97th
// value a refused APPENDDUP is tried (the last value again, a value that
// is present, an absent one below the last): KeyExist, with the cursor left
// on the key's last value. Asserted per layout: every answer, the value
// count, the order read back, and the data file's last page and the DBI's
// stat equal to stock's.
func TestAppendDupPagesLikeStock(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const keys = 5
	dups := 3000 * testScale(t)
	type layout struct {
		name         string
		flags, width uint
		put          uint
	}
	var cases []layout
	for _, put := range []uint{fAppendDup, 0} {
		cases = append(cases,
			layout{"dupfixed-8", fDupSort | fDupFixed, 8, put},
			layout{"dupfixed-12", fDupSort | fDupFixed, 12, put},
			layout{"dupsort", fDupSort, 0, put})
	}
	// value x: x in big-endian order, padded to width (or to 8 + x/2
	// mod 5 bytes for plain DUPSORT, whose widths vary); a key's value j
	// is value 2j
	val := func(c layout, x int) []byte {
		w := int(c.width)
		if w == 0 {
			w = 8 + x/2%5
		}
		b := make([]byte, w)
		binary.BigEndian.PutUint64(b, uint64(x))
		return b
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s/put=%#x", c.name, c.put)
		var pages [2]uint64
		var stats [2]tStat
		for side, eng := range []engine{subject, stockEngine{}} {
			last, st, err := appendDupLoad(eng, t.TempDir(), c.flags, c.put, keys, dups,
				func(x int) []byte { return val(c, x) })
			if err != nil {
				t.Fatalf("%s: %s: %v", name, eng.name(), err)
			}
			pages[side], stats[side] = last, st
		}
		if pages[0] != pages[1] || stats[0] != stats[1] {
			t.Errorf("%s: ours ends at page %d with stat %v, stock at page %d with %v", name, pages[0], stats[0], pages[1], stats[1])
		}
		t.Logf("%s: last page %d, stat %v", name, pages[0], stats[0])
	}
}

// appendDupLoad stores keys × dups values (val(0), val(2), val(4), ...) into a
// fresh environment at dir with cursor puts of flags put, checking the
// refused APPENDDUPs along the way and the data read back; it returns the
// last page in use and the DBI's stat.
func appendDupLoad(eng engine, dir string, dbFlags, put uint, keys, dups int, val func(int) []byte) (uint64, tStat, error) {
	env, txn, err := loadEnv(eng, dir)
	if err != nil {
		return 0, tStat{}, err
	}
	defer env.close()
	dbi, err := txn.openDBI("dups", dbFlags|fCreate)
	var cur tCursor
	if err == nil {
		cur, err = txn.cursor(dbi)
	}
	if err != nil {
		txn.abort()
		return 0, tStat{}, err
	}
	key := func(k int) []byte { return []byte(fmt.Sprintf("key-%04d", k)) }
	for k := 0; k < keys && err == nil; k++ {
		for j := 0; j < dups && err == nil; j++ {
			if err = cur.put(key(k), val(2*j), put); err != nil {
				err = fmt.Errorf("put key %d value %d: %w", k, j, err)
				break
			}
			if j%97 != 96 {
				continue
			}
			for _, probe := range [][]byte{val(2 * j), val(2 * (j / 2)), val(2*j - 1)} {
				if perr := cur.put(key(k), probe, fAppendDup); eng.code(perr) != eKeyExist {
					err = fmt.Errorf("key %d after value %d: APPENDDUP of %x answered %v, want KeyExist", k, j, probe, perr)
					break
				}
				if _, v, gerr := cur.get(nil, nil, cGetCurrent); gerr != nil || !bytes.Equal(v, val(2*j)) {
					err = fmt.Errorf("key %d after a refused APPENDDUP of %x: current value %x (%v), want the last, %x", k, probe, v, gerr, val(2*j))
					break
				}
			}
		}
	}
	cur.close()
	if err != nil {
		txn.abort()
		return 0, tStat{}, err
	}
	if err := txn.commit(); err != nil {
		return 0, tStat{}, err
	}
	rt, err := env.begin(nil, fReadonly)
	if err != nil {
		return 0, tStat{}, err
	}
	defer rt.abort()
	rc, err := rt.cursor(dbi)
	if err != nil {
		return 0, tStat{}, err
	}
	defer rc.close()
	for k := 0; k < keys; k++ {
		_, v, err := rc.get(key(k), nil, cSetKey)
		for j := 0; j < dups; j++ {
			if err != nil || !bytes.Equal(v, val(2*j)) {
				return 0, tStat{}, fmt.Errorf("read back key %d value %d: %x (%v), want %x", k, j, v, err, val(2*j))
			}
			_, v, err = rc.get(nil, nil, cNextDup)
		}
		if eng.code(err) != eNotFound {
			return 0, tStat{}, fmt.Errorf("read back key %d: %x (%v) after its last value, want NotFound", k, v, err)
		}
	}
	st, err := rt.stat(dbi)
	if err != nil {
		return 0, tStat{}, err
	}
	if st.items != uint64(keys*dups) {
		return 0, tStat{}, fmt.Errorf("stat: %d values, want %d", st.items, keys*dups)
	}
	last, err := env.lastPgno()
	return last, st, err
}

// DLMDB's DBI flags (MDB_COUNTED, MDB_PREFIX_COMPRESSION), for the
// variants that only our engine runs.
const (
	fCountedExt = 0x80
	fPrefixExt  = 0x100
)

// TestAppendDupRunInterrupted: a run of MDB_APPENDDUP puts through one
// cursor into a promoted duplicate set, interrupted by everything that can
// change the set or move the cursor in between: another cursor's put past
// the last value, a plain put and a delete through the txn, a lookup and a
// step to another key through the same cursor, a delete through it, a
// nested txn that commits and one that aborts, and puts to another key.
// Every answer and the final contents must be stock LMDB's (and its last
// page, for the layouts stock has). Our engine also runs each layout with
// MDB_COUNTED and MDB_PREFIX_COMPRESSION, where the answers must not
// change.
func TestAppendDupRunInterrupted(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, base := range []uint{fDupSort | fDupFixed, fDupSort} {
		want, wantDump, wantLast, err := appendDupScript(stockEngine{}, t.TempDir(), base)
		if err != nil {
			t.Fatalf("flags %#x: stock: %v", base, err)
		}
		variants := []uint{base}
		if subject.name() != "stock" {
			variants = append(variants, base|fCountedExt, base|fPrefixExt, base|fCountedExt|fPrefixExt)
		}
		for _, flags := range variants {
			got, dump, last, err := appendDupScript(subject, t.TempDir(), flags)
			if err != nil {
				t.Fatalf("flags %#x: %s: %v", flags, subject.name(), err)
			}
			for i := range max(len(got), len(want)) {
				var g, w string
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Fatalf("flags %#x: step %d: %s answered %q, stock %q", flags, i, subject.name(), g, w)
				}
			}
			if dump != wantDump {
				t.Errorf("flags %#x: contents differ from stock's (%d against %d bytes of dump)", flags, len(dump), len(wantDump))
			}
			if flags == base && last != wantLast {
				t.Errorf("flags %#x: last page %d, stock %d", flags, last, wantLast)
			}
		}
	}
}

// appendDupScript runs TestAppendDupRunInterrupted's sequence on eng and
// returns its answers, a dump of the DB after the commit and the last page.
func appendDupScript(eng engine, dir string, flags uint) ([]string, string, uint64, error) {
	env, txn, err := loadEnv(eng, dir)
	if err != nil {
		return nil, "", 0, err
	}
	defer env.close()
	defer func() {
		if txn != nil {
			txn.abort()
		}
	}()
	dbi, err := txn.openDBI("dups", flags|fCreate)
	if err != nil {
		return nil, "", 0, err
	}
	var log []string
	val := func(x int) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint64(b, uint64(x))
		return b
	}
	k0, k1, k2 := []byte("k0"), []byte("k1"), []byte("k2")
	note := func(what string, err error) { log = append(log, what+": "+errName(eng.code(err))) }
	// where cursor c stands (after a put: the value it put)
	at := func(c tCursor, what string) {
		k, v, err := c.get(nil, nil, cGetCurrent)
		log = append(log, fmt.Sprintf("%s: at %s %x %s", what, k, v, errName(eng.code(err))))
	}
	a, err := txn.cursor(dbi)
	if err != nil {
		return nil, "", 0, err
	}
	b, err := txn.cursor(dbi)
	if err != nil {
		return nil, "", 0, err
	}
	// k0 a few values (a sub-page), k2 a sub-tree of its own
	for x := 0; x < 20; x += 2 {
		note(fmt.Sprintf("put k0 %d", x), txn.put(dbi, k0, val(x), 0))
	}
	for x := 0; x < 2400; x += 2 {
		if err := txn.put(dbi, k2, val(x), 0); err != nil {
			return nil, "", 0, fmt.Errorf("put k2 %d: %w", x, err)
		}
	}
	appendA := func(x int) {
		note(fmt.Sprintf("A appenddup k1 %d", x), a.put(k1, val(x), fAppendDup))
		at(a, "A")
	}
	for x := 0; x < 2400; x += 2 { // a sub-tree of several leaves
		if err := a.put(k1, val(x), fAppendDup); err != nil {
			return nil, "", 0, fmt.Errorf("A appenddup k1 %d: %w", x, err)
		}
	}
	at(a, "A after the run")
	// another cursor's put past the last value
	note("B appenddup k1 2400", b.put(k1, val(2400), fAppendDup))
	appendA(2399)
	appendA(2401)
	// a plain put and a delete through the txn
	note("put k1 2404", txn.put(dbi, k1, val(2404), 0))
	appendA(2403)
	appendA(2406)
	note("del k1 2406", txn.del(dbi, k1, val(2406)))
	appendA(2405)
	// the same cursor looks elsewhere first
	_, v, err := a.get(k1, val(100), cGetBoth)
	log = append(log, fmt.Sprintf("A get_both k1 100: %x %s", v, errName(eng.code(err))))
	appendA(2408)
	k, v, err := a.get(nil, nil, cNextNoDup)
	log = append(log, fmt.Sprintf("A next_nodup: %s %x %s", k, v, errName(eng.code(err))))
	appendA(2410)
	k, v, err = a.get(nil, nil, cPrevDup)
	log = append(log, fmt.Sprintf("A prev_dup: %s %x %s", k, v, errName(eng.code(err))))
	appendA(2409)
	appendA(2412)
	// a lookup of a missing key, then a put to another sub-tree (k2's)
	k, v, err = a.get([]byte("k15"), nil, cSet)
	log = append(log, fmt.Sprintf("A set k15: %s %x %s", k, v, errName(eng.code(err))))
	note("A appenddup k2 2400", a.put(k2, val(2400), fAppendDup))
	at(a, "A")
	appendA(2413)
	appendA(2414)
	// a delete through the cursor itself (its current value: the last)
	note("A del", a.del(0))
	appendA(2413)
	appendA(2416)
	// a nested txn that commits values past the last one, and one that
	// aborts many (splits included)
	for _, commit := range []bool{true, false} {
		child, err := env.begin(txn, 0)
		if err != nil {
			return nil, "", 0, err
		}
		c, err := child.cursor(dbi)
		if err != nil {
			child.abort()
			return nil, "", 0, err
		}
		lo := 3000 // past the last value: 2416, then (the first child committed) 4000
		if !commit {
			lo = 4100
		}
		for x := lo; x < lo+1000; x += 2 {
			if err := c.put(k1, val(x), fAppendDup); err != nil {
				child.abort()
				return nil, "", 0, fmt.Errorf("child appenddup k1 %d: %w", x, err)
			}
		}
		c.close()
		if commit {
			note("child commit", child.commit())
			appendA(3997)
			appendA(4000)
		} else {
			child.abort()
			appendA(4001)
		}
	}
	// a nested txn that swaps the last value for a greater one: the same
	// count and pages, new copies of them in the parent
	child, err := env.begin(txn, 0)
	if err != nil {
		return nil, "", 0, err
	}
	note("child del k1 4001", child.del(dbi, k1, val(4001)))
	note("child put k1 4005", child.put(dbi, k1, val(4005), 0))
	note("child commit", child.commit())
	appendA(4003)
	appendA(4006)
	// another key between the puts of a long run
	for x := 4010; x < 6000; x += 2 {
		if x%50 == 0 {
			note(fmt.Sprintf("B appenddup k2 %d", x), b.put(k2, val(x), fAppendDup))
		}
		if err := a.put(k1, val(x), fAppendDup); err != nil {
			return nil, "", 0, fmt.Errorf("A appenddup k1 %d: %w", x, err)
		}
	}
	at(a, "A after the second run")
	a.close()
	b.close()
	if err := txn.commit(); err != nil {
		return nil, "", 0, err
	}
	txn = nil
	dump, last, err := dumpText(eng, env, dbi)
	return log, dump, last, err
}

// TestAppendRunLikeStock: MDB_APPEND puts through one cursor into a plain
// DB (ours skips the descent to the last key while the cursor still stands
// there), interrupted by another cursor's append, a put in the middle
// through the txn, moves of the cursor (to the first key, and to keys all
// over the tree, the last ones of their leaves among them), deletes through
// the txn of the last few hundred keys (pages merge and are freed) put back
// again, a delete of the last key through the cursor and refused appends.
// Every answer, the contents and the last page must be stock LMDB's.
func TestAppendRunLikeStock(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	run := func(eng engine) ([]string, string, uint64, error) {
		env, txn, err := loadEnv(eng, t.TempDir())
		if err != nil {
			return nil, "", 0, err
		}
		defer env.close()
		dbi, err := txn.openDBI("plain", fCreate)
		var a, b tCursor
		if err == nil {
			a, err = txn.cursor(dbi)
		}
		if err == nil {
			b, err = txn.cursor(dbi)
		}
		if err != nil {
			txn.abort()
			return nil, "", 0, err
		}
		var log []string
		key := func(i int) []byte { return []byte(fmt.Sprintf("key-%07d", i)) }
		val := bytes.Repeat([]byte("v"), 60)
		for i := 0; i < 20000; i += 2 {
			var err error
			switch {
			case i%50 == 10:
				// the cursor somewhere else first
				_, _, gerr := a.get(key((i/3)&^1), nil, cSetKey)
				log = append(log, "A set_key: "+errName(eng.code(gerr)))
				err = a.put(key(i), val, fAppend)
			case i%5000 == 4000:
				for j := i - 400; j < i; j += 2 {
					if derr := txn.del(dbi, key(j), nil); derr != nil {
						log = append(log, fmt.Sprintf("txn del %d: %s", j, errName(eng.code(derr))))
					}
				}
				for j := i - 400; j < i; j += 2 {
					if perr := txn.put(dbi, key(j), val, 0); perr != nil {
						log = append(log, fmt.Sprintf("txn put %d: %s", j, errName(eng.code(perr))))
					}
				}
				err = a.put(key(i), val, fAppend)
			case i%1000 == 500:
				err = b.put(key(i), val, fAppend) // another cursor appends
			case i%1000 == 0:
				log = append(log, "txn put in the middle: "+errName(eng.code(txn.put(dbi, key(i/2+1), val, 0))))
				err = a.put(key(i), val, fAppend)
			case i%1000 == 250:
				_, _, gerr := a.get(nil, nil, cFirst)
				log = append(log, "A first: "+errName(eng.code(gerr)))
				err = a.put(key(i), val, fAppend)
			case i%1000 == 750:
				log = append(log, "A append the last again: "+errName(eng.code(a.put(key(i-2), val, fAppend))))
				log = append(log, "A append below the last: "+errName(eng.code(a.put(key(i-3), val, fAppend))))
				k, _, gerr := a.get(nil, nil, cGetCurrent)
				log = append(log, fmt.Sprintf("A at %s %s", k, errName(eng.code(gerr))))
				log = append(log, "A del the last: "+errName(eng.code(a.del(0))))
				err = a.put(key(i), val, fAppend)
			default:
				err = a.put(key(i), val, fAppend)
			}
			if err != nil {
				log = append(log, fmt.Sprintf("append %d: %s", i, errName(eng.code(err))))
			}
		}
		a.close()
		b.close()
		if err := txn.commit(); err != nil {
			return nil, "", 0, err
		}
		dump, last, err := dumpText(eng, env, dbi)
		return log, dump, last, err
	}
	want, wantDump, wantLast, err := run(stockEngine{})
	if err != nil {
		t.Fatalf("stock: %v", err)
	}
	got, dump, last, err := run(subject)
	if err != nil {
		t.Fatalf("%s: %v", subject.name(), err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("answers differ:\n%s: %q\nstock: %q", subject.name(), got, want)
	}
	if dump != wantDump || last != wantLast {
		t.Fatalf("after the commit: %s has %d bytes of dump and last page %d, stock %d and %d", subject.name(), len(dump), last, len(wantDump), wantLast)
	}
	t.Logf("%d answers alike, last page %d", len(got), last)
}

// loadEnv opens a fresh environment at dir for these tests (NOSYNC, two
// named DBs) and begins a write txn in it.
func loadEnv(eng engine, dir string) (tEnv, tTxn, error) {
	env, err := eng.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 2, flags: fNoSync})
	if err != nil {
		return nil, nil, err
	}
	txn, err := env.begin(nil, 0)
	if err != nil {
		env.close()
		return nil, nil, err
	}
	return env, txn, nil
}

// dumpText is the committed contents of dbi as text (every pair, then the
// stat) and the data file's last page.
func dumpText(eng engine, env tEnv, dbi uint32) (string, uint64, error) {
	kv, st, err := dumpDB(eng, env, dbi)
	if err != nil {
		return "", 0, err
	}
	var dump strings.Builder
	for _, p := range kv {
		fmt.Fprintf(&dump, "%s=%x\n", p.k, p.v)
	}
	fmt.Fprintf(&dump, "%v\n", st)
	last, err := env.lastPgno()
	return dump.String(), last, err
}
