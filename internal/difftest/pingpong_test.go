package difftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strconv"
	"testing"
)

// TestPingPong: one env that ours and stock LMDB (0.9.33 through lmdb-go
// v1.9.3) take turns to open read-write. Each round one engine commits a
// random batch of every kind of write (puts with each flag, cursor puts,
// reserved puts, PutMulti, deletes of keys and of single values, overwrites
// that move values between inline and overflow sizes, DUPFIXED bursts that
// grow and shrink sub-pages across the promotion threshold, drops and
// re-creates) on every kind of DB; then both engines check every DB
// against the model (walks both ways, gets, counts, GetMultiple read-back)
// and our checker checks the file.
//
// Rounds: DLMDB_PINGPONG_ROUNDS (default 20 times DLMDB_TEST_SCALE).
func TestPingPong(t *testing.T) {
	if isolate(t) {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rounds := 20 * testScale(t)
	if s := os.Getenv("DLMDB_PINGPONG_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("DLMDB_PINGPONG_ROUNDS=%q: want a positive integer", s)
		}
		rounds = n
	}
	seed := masterSeed(t)
	t.Logf("seed %d, %d rounds", seed, rounds)
	r := rand.New(rand.NewSource(seed))
	engines := []engine{subject, stockEngine{}}
	dir := t.TempDir()
	m := &ppModel{}
	ops := 0
	for round := 0; round < rounds; round++ {
		eng := engines[round%2]
		ops += ppRound(t, eng, dir, m, r, round)
		for _, v := range engines {
			ppVerify(t, v, dir, m, ppDBs, fmt.Sprintf("round %d (%s wrote)", round, eng.name()))
		}
	}
	t.Logf("%d rounds, %d write operations; final model: %s", rounds, ops, m.summary())
}

const fAppendDup = uint(0x40000) // MDB_APPENDDUP

// ppDB is one database of the ping-pong env.
type ppDB struct {
	name  string
	flags uint
	width int    // DUPFIXED value size (0: values of any size)
	keys  string // key shape: mix, odd, even, int, rev, dup
}

var ppDBs = []ppDB{
	{name: "p-mix", keys: "mix"},
	{name: "p-odd", keys: "odd"},
	{name: "p-even", keys: "even"},
	{name: "ds", flags: fDupSort, keys: "dup"},
	{name: "df8", flags: fDupSort | fDupFixed, width: 8, keys: "dup"},
	{name: "df13", flags: fDupSort | fDupFixed, width: 13, keys: "dup"},
	{name: "df16", flags: fDupSort | fDupFixed, width: 16, keys: "dup"},
	{name: "ik", flags: fIntegerKey, keys: "int"},
	{name: "idup", flags: fDupSort | fDupFixed | fIntegerDup, width: 4, keys: "dup"},
	{name: "rk", flags: fReverseKey, keys: "rev"},
	{name: "rd", flags: fDupSort | fReverseDup, keys: "dup"},
}

func (d ppDB) isDup() bool { return d.flags&fDupSort != 0 }

func (d ppDB) keyLess(a, b string) bool {
	switch {
	case d.flags&fIntegerKey != 0:
		return binary.NativeEndian.Uint64([]byte(a)) < binary.NativeEndian.Uint64([]byte(b))
	case d.flags&fReverseKey != 0:
		return reverseLess(a, b)
	}
	return a < b
}

func (d ppDB) dupLess(a, b string) bool {
	switch {
	case d.flags&fIntegerDup != 0:
		return binary.NativeEndian.Uint32([]byte(a)) < binary.NativeEndian.Uint32([]byte(b))
	case d.flags&fReverseDup != 0:
		return reverseLess(a, b)
	}
	return a < b
}

// ppModel is what every DB must hold: plain DBs key -> value, DUPSORT DBs
// key -> set of values; a DB that is not in exists is dropped.
type ppModel struct {
	plain  map[string]map[string]string
	dup    map[string]map[string]map[string]bool
	exists map[string]bool
}

func (m *ppModel) ensure(d ppDB) {
	if m.plain == nil {
		m.plain, m.dup, m.exists = map[string]map[string]string{}, map[string]map[string]map[string]bool{}, map[string]bool{}
	}
	if !m.exists[d.name] {
		m.exists[d.name] = true
		m.plain[d.name] = map[string]string{}
		m.dup[d.name] = map[string]map[string]bool{}
	}
}

func (m *ppModel) drop(d ppDB, del bool) {
	m.plain[d.name] = map[string]string{}
	m.dup[d.name] = map[string]map[string]bool{}
	if del {
		delete(m.exists, d.name)
	}
}

// keys lists a DB's keys (in no particular order, but the same for the
// same model: sorted bytewise, so that a seed replays).
func (m *ppModel) keys(db string) []string {
	var out []string
	for k := range m.plain[db] {
		out = append(out, k)
	}
	for k := range m.dup[db] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (m *ppModel) summary() string {
	s := ""
	for _, d := range ppDBs {
		if !m.exists[d.name] {
			s += d.name + "=dropped "
			continue
		}
		n := len(m.plain[d.name])
		for _, vs := range m.dup[d.name] {
			n += len(vs)
		}
		s += fmt.Sprintf("%s=%d ", d.name, n)
	}
	return s
}

// pairs lists what a forward walk of d must return.
func (m *ppModel) pairs(d ppDB) [][2]string {
	keys := m.keys(d.name)
	sort.Slice(keys, func(i, j int) bool { return d.keyLess(keys[i], keys[j]) })
	var out [][2]string
	for _, k := range keys {
		if d.isDup() {
			for _, v := range sortedDups(d, m.dup[d.name][k]) {
				out = append(out, [2]string{k, v})
			}
		} else {
			out = append(out, [2]string{k, m.plain[d.name][k]})
		}
	}
	return out
}

func ppLetters(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(r.Intn(26))
	}
	return b
}

// ppNewKey draws a key of d's shape (maybe one that exists).
func ppNewKey(r *rand.Rand, d ppDB) string {
	switch d.keys {
	case "int":
		return string(binary.NativeEndian.AppendUint64(nil, uint64(r.Intn(5000))))
	case "rev":
		return string(ppLetters(r, 1+r.Intn(40)))
	case "dup":
		// few keys of odd and even lengths: long duplicate lists
		k := r.Intn(24)
		return fmt.Sprintf("%0*d", 1+k%9, k)
	}
	n := 1 + r.Intn(40)
	if r.Intn(4) == 0 {
		n = 1 + r.Intn(511)
	}
	switch d.keys {
	case "odd":
		n |= 1
	case "even":
		n = min(n+n&1, 510)
	}
	return string(ppLetters(r, n))
}

// ppPlainVal draws a value on either side of the inline/overflow line.
func ppPlainVal(r *rand.Rand) []byte {
	var n int
	switch r.Intn(5) {
	case 0:
		n = r.Intn(20)
	case 1:
		n = 20 + r.Intn(1000)
	case 2:
		n = 1450 + r.Intn(650) // inline or not, depending on the key
	case 3:
		n = 2040 + r.Intn(200)
	default:
		n = 2500 + r.Intn(9800)
	}
	b := make([]byte, n)
	r.Read(b)
	return b
}

func ppDupVal(r *rand.Rand, d ppDB) []byte {
	switch {
	case d.flags&fIntegerDup != 0:
		return binary.NativeEndian.AppendUint32(nil, uint32(r.Intn(1<<20)))
	case d.width > 0:
		b := make([]byte, d.width)
		r.Read(b)
		return b
	}
	n := 1 + r.Intn(40)
	if r.Intn(10) == 0 {
		n = 100 + r.Intn(412)
	}
	return ppLetters(r, n)
}

// ppRound: eng opens the env and commits a few txns of random writes.
func ppRound(t *testing.T, eng engine, dir string, m *ppModel, r *rand.Rand, round int) int {
	t.Helper()
	env, err := eng.openEnv(dir, envOpts{mapSize: 512 << 20, maxDBs: 16})
	if err != nil {
		t.Fatalf("round %d: %s: open: %v", round, eng.name(), err)
	}
	defer env.close()
	ops := 0
	for tx := 0; tx < 3; tx++ {
		txn, err := env.begin(nil, 0)
		if err != nil {
			t.Fatalf("round %d: %s: begin: %v", round, eng.name(), err)
		}
		w := &ppWriter{t: t, eng: eng, txn: txn, m: m, r: r, where: fmt.Sprintf("round %d txn %d (%s)", round, tx, eng.name()),
			dbis: map[string]uint32{}}
		for _, d := range ppDBs {
			w.open(d)
		}
		n := 100 + r.Intn(150)
		if round == 0 && tx == 0 {
			n = 3000 // a first fill: most DBs get sub-trees and branch pages
		}
		for i := 0; i < n; i++ {
			w.op(ppDBs[r.Intn(len(ppDBs))])
		}
		ops += n
		if err := txn.commit(); err != nil {
			t.Fatalf("%s: commit: %v", w.where, err)
		}
	}
	return ops
}

type ppWriter struct {
	t     *testing.T
	eng   engine
	txn   tTxn
	m     *ppModel
	r     *rand.Rand
	where string
	dbis  map[string]uint32
}

func (w *ppWriter) open(d ppDB) {
	w.m.ensure(d)
	dbi, err := w.txn.openDBI(d.name, d.flags|fCreate)
	if err != nil {
		w.t.Fatalf("%s: open %s: %v", w.where, d.name, err)
	}
	w.dbis[d.name] = dbi
}

func (w *ppWriter) fail(d ppDB, what string, err error) {
	w.t.Helper()
	w.t.Fatalf("%s: %s: %s: %v (%s)", w.where, d.name, what, err, errName(w.eng.code(err)))
}

// want fails the test unless err has code c.
func (w *ppWriter) want(d ppDB, what string, err error, c int) {
	w.t.Helper()
	if w.eng.code(err) != c {
		w.t.Fatalf("%s: %s: %s: got %v (%s), want %s", w.where, d.name, what, err, errName(w.eng.code(err)), errName(c))
	}
}

// existing picks a stored key of d, or "" when d is empty.
func (w *ppWriter) existing(d ppDB) string {
	keys := w.m.keys(d.name)
	if len(keys) == 0 {
		return ""
	}
	return keys[w.r.Intn(len(keys))]
}

func (w *ppWriter) maxKey(d ppDB) (string, bool) {
	keys := w.m.keys(d.name)
	if len(keys) == 0 {
		return "", false
	}
	best := keys[0]
	for _, k := range keys[1:] {
		if d.keyLess(best, k) {
			best = k
		}
	}
	return best, true
}

func (w *ppWriter) op(d ppDB) {
	w.t.Helper()
	if w.r.Intn(1500) == 0 {
		w.dropOp(d)
		return
	}
	if d.isDup() {
		w.dupOp(d)
	} else {
		w.plainOp(d)
	}
}

// dropOp empties d, or deletes it and creates it again in the same txn.
func (w *ppWriter) dropOp(d ppDB) {
	del := w.r.Intn(2) == 0
	if err := w.txn.drop(w.dbis[d.name], del); err != nil {
		w.fail(d, "drop", err)
	}
	w.m.drop(d, del)
	if del {
		w.open(d)
	}
}

func (w *ppWriter) plainOp(d ppDB) {
	mm := w.m.plain[d.name]
	dbi := w.dbis[d.name]
	key := ppNewKey(w.r, d)
	if w.r.Intn(2) == 0 {
		if k := w.existing(d); k != "" {
			key = k
		}
	}
	_, exists := mm[key]
	val := ppPlainVal(w.r)
	switch w.r.Intn(9) {
	case 0, 1: // put (an overwrite when the key exists)
		if err := w.txn.put(dbi, []byte(key), val, 0); err != nil {
			w.fail(d, "put", err)
		}
		mm[key] = string(val)
	case 2: // NoOverwrite
		err := w.txn.put(dbi, []byte(key), val, fNoOverwrite)
		if exists {
			w.want(d, "put NoOverwrite on a stored key", err, eKeyExist)
			return
		}
		w.want(d, "put NoOverwrite", err, 0)
		mm[key] = string(val)
	case 3: // Append: allowed only past the last key
		if w.r.Intn(2) == 0 {
			if mk, ok := w.maxKey(d); ok && d.keys != "int" && len(mk) < 509 {
				key = mk + string(ppLetters(w.r, 2))
			} else if ok && d.keys == "int" {
				key = string(binary.NativeEndian.AppendUint64(nil, binary.NativeEndian.Uint64([]byte(mk))+1+uint64(w.r.Intn(9))))
			}
		}
		mk, ok := w.maxKey(d)
		err := w.txn.put(dbi, []byte(key), val, fAppend)
		if ok && !d.keyLess(mk, key) {
			w.want(d, "put Append below the last key", err, eKeyExist)
			return
		}
		w.want(d, "put Append", err, 0)
		mm[key] = string(val)
	case 4: // reserved put
		buf, err := w.txn.putReserve(dbi, []byte(key), len(val), 0)
		if err != nil {
			w.fail(d, "put Reserve", err)
		}
		copy(buf, val)
		mm[key] = string(val)
	case 5: // cursor put, and Current on a stored key
		c, err := w.txn.cursor(dbi)
		if err != nil {
			w.fail(d, "cursor", err)
		}
		defer c.close()
		if !exists {
			if err := c.put([]byte(key), val, 0); err != nil {
				w.fail(d, "cursor put", err)
			}
			mm[key] = string(val)
			return
		}
		if _, _, err := c.get([]byte(key), nil, cSet); err != nil {
			w.fail(d, "cursor Set", err)
		}
		if err := c.put([]byte(key), val, fCurrent); err != nil {
			w.fail(d, "cursor put Current", err)
		}
		mm[key] = string(val)
	case 6, 7: // delete by key
		err := w.txn.del(dbi, []byte(key), nil)
		if !exists {
			w.want(d, "del of a missing key", err, eNotFound)
			return
		}
		w.want(d, "del", err, 0)
		delete(mm, key)
	default: // cursor delete
		if !exists {
			return
		}
		c, err := w.txn.cursor(dbi)
		if err != nil {
			w.fail(d, "cursor", err)
		}
		defer c.close()
		if _, _, err := c.get([]byte(key), nil, cSet); err != nil {
			w.fail(d, "cursor Set", err)
		}
		if err := c.del(0); err != nil {
			w.fail(d, "cursor del", err)
		}
		delete(mm, key)
	}
}

func (w *ppWriter) dupOp(d ppDB) {
	mm := w.m.dup[d.name]
	dbi := w.dbis[d.name]
	key := ppNewKey(w.r, d)
	vals := mm[key]
	add := func(v string) {
		if mm[key] == nil {
			mm[key] = map[string]bool{}
		}
		mm[key][v] = true
		vals = mm[key]
	}
	// a stored value, drawn from the sorted values so that a seed replays
	pickSorted := func() string {
		s := sortedDups(d, vals)
		return s[w.r.Intn(len(s))]
	}
	val := ppDupVal(w.r, d)
	switch w.r.Intn(12) {
	case 0, 1, 2: // put a value
		err := w.txn.put(dbi, []byte(key), val, 0)
		if vals[string(val)] {
			if c := w.eng.code(err); c != 0 && c != eKeyExist {
				w.fail(d, "put of a stored pair", err)
			}
			return
		}
		w.want(d, "put", err, 0)
		add(string(val))
	case 3: // NoDupData / NoOverwrite
		flag, refused := fNoDupData, vals[string(val)]
		if len(vals) > 0 && w.r.Intn(2) == 0 {
			val = []byte(pickSorted())
			refused = true
		}
		if w.r.Intn(2) == 0 {
			flag, refused = fNoOverwrite, len(vals) > 0
		}
		err := w.txn.put(dbi, []byte(key), val, flag)
		if refused {
			w.want(d, fmt.Sprintf("put flags %#x refused", flag), err, eKeyExist)
			return
		}
		w.want(d, fmt.Sprintf("put flags %#x", flag), err, 0)
		add(string(val))
	case 4: // AppendDup: past the key's last value, or refused
		if len(vals) > 0 && w.r.Intn(3) == 0 {
			val = []byte(pickSorted())
		}
		c, err := w.txn.cursor(dbi)
		if err != nil {
			w.fail(d, "cursor", err)
		}
		defer c.close()
		err = c.put([]byte(key), val, fAppendDup)
		last := ""
		if len(vals) > 0 {
			s := sortedDups(d, vals)
			last = s[len(s)-1]
		}
		if len(vals) > 0 && !d.dupLess(last, string(val)) {
			w.want(d, "put AppendDup at or below the last value", err, eKeyExist)
			return
		}
		w.want(d, "put AppendDup", err, 0)
		add(string(val))
	case 5: // a burst: many values at once (PutMulti on DUPFIXED), across the promotion size
		n := 20 + w.r.Intn(160)
		if d.width > 0 && w.r.Intn(2) == 0 {
			seen := map[string]bool{}
			var page []byte
			for i := 0; i < n; i++ {
				v := ppDupVal(w.r, d)
				if vals[string(v)] || seen[string(v)] {
					continue
				}
				seen[string(v)] = true
				page = append(page, v...)
			}
			if len(page) == 0 {
				return
			}
			c, err := w.txn.cursor(dbi)
			if err != nil {
				w.fail(d, "cursor", err)
			}
			defer c.close()
			if err := c.putMulti([]byte(key), page, d.width, 0); err != nil {
				w.fail(d, "PutMulti", err)
			}
			for v := range seen {
				add(v)
			}
			return
		}
		for i := 0; i < n; i++ {
			v := ppDupVal(w.r, d)
			if err := w.txn.put(dbi, []byte(key), v, 0); err != nil && !vals[string(v)] {
				w.fail(d, "burst put", err)
			}
			add(string(v))
		}
	case 6: // cursor put of a new value
		if vals[string(val)] {
			return
		}
		c, err := w.txn.cursor(dbi)
		if err != nil {
			w.fail(d, "cursor", err)
		}
		defer c.close()
		if err := c.put([]byte(key), val, 0); err != nil {
			w.fail(d, "cursor put", err)
		}
		add(string(val))
	case 7, 8: // delete single values (a run of them shrinks a sub-page)
		n := 1
		if w.r.Intn(3) == 0 {
			n = 1 + w.r.Intn(60)
		}
		for ; n > 0 && len(vals) > 0; n-- {
			v := pickSorted()
			if err := w.txn.del(dbi, []byte(key), []byte(v)); err != nil {
				w.fail(d, "del value", err)
			}
			delete(vals, v)
		}
		if len(vals) == 0 {
			delete(mm, key)
		}
	case 9: // delete a value through a cursor
		if len(vals) == 0 {
			err := w.txn.del(dbi, []byte(key), val)
			w.want(d, "del of a missing pair", err, eNotFound)
			return
		}
		v := pickSorted()
		c, err := w.txn.cursor(dbi)
		if err != nil {
			w.fail(d, "cursor", err)
		}
		defer c.close()
		if _, _, err := c.get([]byte(key), []byte(v), cGetBoth); err != nil {
			w.fail(d, "cursor GetBoth", err)
		}
		if err := c.del(0); err != nil {
			w.fail(d, "cursor del", err)
		}
		delete(vals, v)
		if len(vals) == 0 {
			delete(mm, key)
		}
	case 10: // delete a key with all its values (cursor Del with NoDupData; lmdb-go's
		// Txn.Del with nil data passes an empty value, which names the pair key/"")
		if len(vals) == 0 {
			return
		}
		c, err := w.txn.cursor(dbi)
		if err != nil {
			w.fail(d, "cursor", err)
		}
		defer c.close()
		if _, _, err := c.get([]byte(key), nil, cSet); err != nil {
			w.fail(d, "cursor Set", err)
		}
		if err := c.del(fNoDupData); err != nil {
			w.fail(d, "cursor del NoDupData", err)
		}
		delete(mm, key)
	default: // a DUPFIXED key shrunk to a few values (sub-tree back towards a sub-page)
		if len(vals) < 3 {
			return
		}
		s := sortedDups(d, vals)
		keep := w.r.Intn(4)
		for _, v := range s[keep:] {
			if err := w.txn.del(dbi, []byte(key), []byte(v)); err != nil {
				w.fail(d, "del value", err)
			}
			delete(vals, v)
		}
		if len(vals) == 0 {
			delete(mm, key)
		}
	}
}

// ppVerify: eng opens the env read-only and finds every DB as the model
// says; ours also runs its checker.
func ppVerify(t *testing.T, eng engine, dir string, m *ppModel, dbs []ppDB, what string) {
	t.Helper()
	env, err := eng.openEnv(dir, envOpts{mapSize: 512 << 20, maxDBs: 16, flags: fReadonly})
	if err != nil {
		t.Fatalf("%s: %s: open: %v", what, eng.name(), err)
	}
	defer env.close()
	txn, err := env.begin(nil, fReadonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.abort()
	for _, d := range dbs {
		where := fmt.Sprintf("%s: %s: %s", what, eng.name(), d.name)
		dbi, err := txn.openDBI(d.name, 0)
		if !m.exists[d.name] {
			if eng.code(err) != eNotFound {
				t.Fatalf("%s: open of a dropped DB: %v, want NotFound", where, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: open: %v", where, err)
		}
		want := m.pairs(d)
		st, err := txn.stat(dbi)
		if err != nil || st.items != uint64(len(want)) {
			t.Fatalf("%s: stat %v (%v), want %d entries", where, st, err, len(want))
		}
		c, err := txn.cursor(dbi)
		if err != nil {
			t.Fatal(err)
		}
		for dir, ops := range [][2]uint{{cFirst, cNext}, {cLast, cPrev}} {
			for i, op := 0, ops[0]; ; i, op = i+1, ops[1] {
				k, v, err := c.get(nil, nil, op)
				if eng.code(err) == eNotFound && i == len(want) {
					break
				}
				j := i
				if dir == 1 {
					j = len(want) - 1 - i
				}
				if err != nil || i >= len(want) || string(k) != want[j][0] || string(v) != want[j][1] {
					wk, wv := "(end)", ""
					if i < len(want) {
						wk, wv = want[j][0], want[j][1]
					}
					t.Fatalf("%s: walk %d step %d: %s/%s (%v), want %s/%s", where, dir, i, showBytes(k), showBytes(v), err,
						showBytes([]byte(wk)), showBytes([]byte(wv)))
				}
			}
		}
		for _, k := range m.keys(d.name) {
			first := m.plain[d.name][k]
			n := 1
			if d.isDup() {
				s := sortedDups(d, m.dup[d.name][k])
				first, n = s[0], len(s)
			}
			if v, err := txn.get(dbi, []byte(k)); err != nil || string(v) != first {
				t.Fatalf("%s: get %s: %s (%v), want %s", where, showBytes([]byte(k)), showBytes(v), err, showBytes([]byte(first)))
			}
			if !d.isDup() {
				continue
			}
			if _, _, err := c.get([]byte(k), nil, cSet); err != nil {
				t.Fatalf("%s: Set %s: %v", where, showBytes([]byte(k)), err)
			}
			if got, err := c.count(); err != nil || got != uint64(n) {
				t.Fatalf("%s: count %s: %d (%v), want %d", where, showBytes([]byte(k)), got, err, n)
			}
			if d.width > 0 {
				ppCheckMultiple(t, eng, txn, dbi, c, d, k, sortedDups(d, m.dup[d.name][k]), where)
			}
		}
		c.close()
	}
	if err := txn.check(); err != nil {
		t.Fatalf("%s: %s: Txn.Check: %v", what, eng.name(), err)
	}
	if err := env.check(); err != nil {
		t.Fatalf("%s: %s: Env.Check: %v", what, eng.name(), err)
	}
}

// ppCheckMultiple reads key k's values back with GetMultiple and
// NextMultiple (the cursor stands on k's first value).
func ppCheckMultiple(t *testing.T, eng engine, txn tTxn, dbi uint32, c tCursor, d ppDB, k string, want []string, where string) {
	t.Helper()
	_, page, err := c.get(nil, nil, cGetMultiple)
	if err != nil {
		t.Fatalf("%s: GetMultiple %s: %v", where, showBytes([]byte(k)), err)
	}
	got := append([]byte(nil), page...)
	if len(page) == 0 && !emptyGetMultipleAccepted(eng, txn, dbi, k, want) {
		t.Fatalf("%s: GetMultiple %s: empty success on a key of %d values", where, showBytes([]byte(k)), len(want))
	}
	for {
		_, page, err := c.get(nil, nil, cNextMultiple)
		if eng.code(err) == eNotFound {
			break
		}
		if err != nil || len(page) == 0 || len(page)%d.width != 0 {
			t.Fatalf("%s: NextMultiple %s: %d bytes (%v)", where, showBytes([]byte(k)), len(page), err)
		}
		got = append(got, page...)
	}
	if len(page) == 0 && len(got) == 0 {
		return // the tolerated empty case: checked above
	}
	if !bytes.Equal(got, joinVals(want)) {
		t.Fatalf("%s: GetMultiple/NextMultiple %s: %d bytes, want %d values (%d bytes)", where, showBytes([]byte(k)),
			len(got), len(want), len(want)*d.width)
	}
}

// emptyGetMultipleAccepted is the one tolerance of the GetMultiple
// read-back, and only for stock LMDB: it answers GetMultiple on a key whose
// single value is stored as a plain node with success and no data, which is
// accepted only for a key of exactly one value that Get returns. Ours
// returns that value as a one-element page (README, "Differences from stock
// LMDB"), so an empty success from ours always fails.
func emptyGetMultipleAccepted(eng engine, txn tTxn, dbi uint32, k string, want []string) bool {
	if len(want) != 1 || eng.name() != (stockEngine{}).name() {
		return false
	}
	v, err := txn.get(dbi, []byte(k))
	return err == nil && string(v) == want[0]
}
