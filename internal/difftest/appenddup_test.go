package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
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
			last, st, err := appendDupLoad(t, eng, t.TempDir(), c.flags, c.put, keys, dups,
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
func appendDupLoad(t *testing.T, eng engine, dir string, dbFlags, put uint, keys, dups int, val func(int) []byte) (uint64, tStat, error) {
	env, err := eng.openEnv(dir, envOpts{mapSize: 256 << 20, maxDBs: 2, flags: fNoSync})
	if err != nil {
		return 0, tStat{}, err
	}
	defer env.close()
	txn, err := env.begin(nil, 0)
	if err != nil {
		return 0, tStat{}, err
	}
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
