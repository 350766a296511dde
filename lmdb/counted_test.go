package lmdb

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tests of the order-statistics API (Counted databases).
//
// The main test replays random operation sequences on a counted database and
// on an uncounted twin with the same flags in the same environment, and
// checks after every step that the counting and ranking answers of the
// counted database match a brute-force model (a sorted slice of pairs) and
// that both databases answer every ordinary read the same way. It runs on
// plain, DupSort, DupFixed, ReverseKey, ReverseDup and IntegerKey databases,
// and with keys and values long enough to make branch nodes big. Operations:
// puts with every flag, deletes of pairs, keys and runs of entries (through
// cursors positioned by rank), PutMulti, Drop, nested transactions that commit
// or abort, aborted write transactions and reopening the environment; the
// structure checker runs at intervals. A failure prints the seed and the
// latest operations.
//
// Seeds: DLMDB_TEST_SEED=N replays N, DLMDB_TEST_SEED=random draws one (it is
// printed when a test fails); the default is fixed so every run is the same.
// DLMDB_TEST_SCALE=k multiplies the number of steps.

const cntDefaultSeed = 20261129

func cntSeed(t *testing.T) int64 {
	t.Helper()
	seed := int64(cntDefaultSeed)
	switch s := os.Getenv("DLMDB_TEST_SEED"); s {
	case "":
	case "random":
		seed = time.Now().UnixNano() & 0x7fffffffffff
	default:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("DLMDB_TEST_SEED=%q: want an integer or \"random\"", s)
		}
		seed = n
	}
	name := t.Name()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s: seed %d; repeat with DLMDB_TEST_SEED=%d go test ./lmdb -run '^%s$' -v",
				name, seed, seed, strings.SplitN(name, "/", 2)[0])
		}
	})
	return seed
}

// cntSubSeed derives an independent seed for a named part of a test.
func cntSubSeed(seed int64, part string) int64 {
	h := fnv.New64a()
	h.Write([]byte(part))
	return seed ^ int64(h.Sum64()&0x7fffffffffffffff)
}

// cntCode reduces an error to the code it carries (0 for nil), so that
// answers of two databases can be compared.
func cntCode(err error) int {
	if err == nil {
		return 0
	}
	var e Errno
	if errors.As(err, &e) {
		return int(e)
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return int(se)
	}
	return -1
}

// ---- the model ----------------------------------------------------------------

type cntPair struct{ k, v string }

// cntModel is the brute-force oracle: every entry in database order (keys
// bytewise, or bytewise from the last byte with ReverseKey; DupSort values
// bytewise).
type cntModel struct {
	dup    bool
	rev    bool // ReverseKey
	vrev   bool // ReverseDup
	intKey bool // IntegerKey, keys of 8 bytes
	ents   []cntPair
}

func (m *cntModel) clone() *cntModel {
	c := *m
	c.ents = append([]cntPair(nil), m.ents...)
	return &c
}

// cntIntKey is the 8-byte IntegerKey key of n.
func cntIntKey(n uint64) string {
	return string(binary.NativeEndian.AppendUint64(nil, n))
}

// after returns a key that sorts right after k (it may be stored too).
func (m *cntModel) after(k string) string {
	if m.intKey {
		return cntIntKey(binary.NativeEndian.Uint64([]byte(k)) + 1)
	}
	return k + "\x00"
}

// kcmp compares two keys in the database's order.
func (m *cntModel) kcmp(a, b string) int {
	if m.intKey {
		return cmp.Compare(binary.NativeEndian.Uint64([]byte(a)), binary.NativeEndian.Uint64([]byte(b)))
	}
	return cntCompare(a, b, m.rev)
}

// vcmp compares two values of one key in the database's order.
func (m *cntModel) vcmp(a, b string) int {
	return cntCompare(a, b, m.vrev)
}

// cntCompare compares bytewise, from the last byte backwards when reverse.
func cntCompare(a, b string, reverse bool) int {
	if !reverse {
		return strings.Compare(a, b)
	}
	for i, j := len(a)-1, len(b)-1; i >= 0 && j >= 0; i, j = i-1, j-1 {
		if a[i] != b[j] {
			if a[i] < b[j] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

// lowerKey is the index of the first entry whose key is >= k.
func (m *cntModel) lowerKey(k string) int {
	return sort.Search(len(m.ents), func(i int) bool { return m.kcmp(m.ents[i].k, k) >= 0 })
}

// upperKey is the index of the first entry whose key is > k.
func (m *cntModel) upperKey(k string) int {
	return sort.Search(len(m.ents), func(i int) bool { return m.kcmp(m.ents[i].k, k) > 0 })
}

// findPair is the index where (k, v) is or would be, and whether it is.
func (m *cntModel) findPair(k, v string) (int, bool) {
	i := sort.Search(len(m.ents), func(i int) bool {
		e := m.ents[i]
		c := m.kcmp(e.k, k)
		return c > 0 || (c == 0 && m.vcmp(e.v, v) >= 0)
	})
	return i, i < len(m.ents) && m.ents[i] == cntPair{k, v}
}

func (m *cntModel) hasKey(k string) bool {
	i := m.lowerKey(k)
	return i < len(m.ents) && m.ents[i].k == k
}

func (m *cntModel) insertAt(i int, p cntPair) {
	m.ents = append(m.ents, cntPair{})
	copy(m.ents[i+1:], m.ents[i:])
	m.ents[i] = p
}

// put stores (k, v): a plain database replaces the value, a DupSort one
// adds the pair unless present.
func (m *cntModel) put(k, v string) {
	if !m.dup {
		i := m.lowerKey(k)
		if i < len(m.ents) && m.ents[i].k == k {
			m.ents[i].v = v
			return
		}
		m.insertAt(i, cntPair{k, v})
		return
	}
	if i, ok := m.findPair(k, v); !ok {
		m.insertAt(i, cntPair{k, v})
	}
}

func (m *cntModel) delPair(k, v string) bool {
	i, ok := m.findPair(k, v)
	if ok {
		m.ents = append(m.ents[:i], m.ents[i+1:]...)
	}
	return ok
}

func (m *cntModel) delKey(k string) int {
	lo, hi := m.lowerKey(k), m.upperKey(k)
	m.ents = append(m.ents[:lo], m.ents[hi:]...)
	return hi - lo
}

// span is the index interval [lo, hi) of the entries whose keys lie between
// the bounds (nil or empty = open).
func (m *cntModel) span(low, high []byte, flags uint) (int, int) {
	lo, hi := 0, len(m.ents)
	if len(low) > 0 {
		if flags&CountLowerIncl != 0 {
			lo = m.lowerKey(string(low))
		} else {
			lo = m.upperKey(string(low))
		}
	}
	if len(high) > 0 {
		if flags&CountUpperIncl != 0 {
			hi = m.upperKey(string(high))
		} else {
			hi = m.lowerKey(string(high))
		}
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func (m *cntModel) count(low, high []byte, flags uint) (entries, keys uint64) {
	lo, hi := m.span(low, high, flags)
	for i := lo; i < hi; i++ {
		if i == lo || m.ents[i].k != m.ents[i-1].k {
			keys++
		}
	}
	return uint64(hi - lo), keys
}

// ---- one randomised run -------------------------------------------------------

type cntConfig struct {
	name  string
	flags uint // DupSort, DupFixed
	fixed int  // value size of DupFixed databases
	long  bool // keys (and DupSort values) up to about 500 bytes
	// compress: the counted database also has PrefixCompression (its
	// uncounted twin stays plain, so the ordinary reads of a compressed and
	// a plain database are compared too); prefix is prepended to every key
	// and DupSort value (cut to 500 bytes), so that the leaves really share
	// a long prefix
	compress bool
	prefix   string
	// mem: the env is InMemory; a reopen then checks a copy instead
	mem bool
}

type cntRun struct {
	t     *testing.T
	cfg   cntConfig
	rng   *rand.Rand
	dir   string
	env   *Env
	cdb   DBI // counted
	udb   DBI // uncounted twin
	m     *cntModel
	dup   bool
	step  int
	where string // what the run is doing, for failure messages
	hot   []string
	trail []string // the latest operations, printed on failure
	// a cursor on the counted database that lives through a whole write
	// transaction, so that its remembered rank position meets changes
	pc    *Cursor
	pcTxn *Txn
	// the largest sizes seen, reported at the end
	peakEntries, peakDups int
	// copies checked in place of a reopen (mem)
	copies int
	// leaf pages of the counted and of the twin database, summed over the
	// states after each batch (compressed runs)
	leavesC, leavesU uint64
}

// notePeaks records the model's size for the summary.
func (r *cntRun) notePeaks() {
	r.peakEntries = max(r.peakEntries, len(r.m.ents))
	for i := 0; i < len(r.m.ents); {
		j := r.m.upperKey(r.m.ents[i].k)
		r.peakDups = max(r.peakDups, j-i)
		i = j
	}
}

func (r *cntRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("[%s step %d, %s] %s\nlatest operations, oldest first:\n\t%s", r.cfg.name, r.step, r.where,
		fmt.Sprintf(format, args...), strings.Join(r.trail, "\n\t"))
}

// did records an operation in the trail.
func (r *cntRun) did(what string) {
	r.where = what
	if len(r.trail) == 40 {
		r.trail = append(r.trail[:0], r.trail[1:]...)
	}
	r.trail = append(r.trail, fmt.Sprintf("step %d: %s", r.step, what))
}

func (r *cntRun) open() {
	env, err := NewEnv()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := env.SetMaxDBs(4); err != nil {
		r.t.Fatal(err)
	}
	if err := env.SetMapSize(256 << 20); err != nil {
		r.t.Fatal(err)
	}
	path, flags := r.dir, uint(0)
	if r.cfg.mem {
		path, flags = "", InMemory
	}
	if err := env.Open(path, flags, 0o600); err != nil {
		env.Close()
		r.t.Fatal(err)
	}
	r.env = env
	err = env.Update(func(txn *Txn) (err error) {
		cf := Create | Counted | r.cfg.flags
		if r.cfg.compress {
			cf |= PrefixCompression
		}
		if r.cdb, err = txn.OpenDBI("counted", cf); err != nil {
			return err
		}
		r.udb, err = txn.OpenDBI("plain", Create|r.cfg.flags)
		return err
	})
	if err != nil {
		r.t.Fatalf("opening databases: %v", err)
	}
	err = env.View(func(txn *Txn) error {
		f, err := txn.Flags(r.cdb)
		if err != nil || f&Counted == 0 || f&(DupSort|DupFixed|ReverseKey|IntegerKey|ReverseDup) != r.cfg.flags ||
			(f&PrefixCompression != 0) != r.cfg.compress {
			return fmt.Errorf("counted db flags %#x, %v", f, err)
		}
		f, err = txn.Flags(r.udb)
		if err != nil || f&(Counted|PrefixCompression) != 0 {
			return fmt.Errorf("uncounted db flags %#x, %v", f, err)
		}
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r *cntRun) reopen() {
	if r.cfg.mem {
		r.checkCopy()
		return
	}
	r.did("commit, close and reopen the environment")
	if err := r.env.Close(); err != nil {
		r.fatalf("close: %v", err)
	}
	r.open()
	if err := r.env.Check(); err != nil {
		r.fatalf("Env.Check after reopen: %v", err)
	}
	r.view(func(txn *Txn) { r.checkAll(txn) })
}

// checkCopy is reopen for an in-memory env, whose data a close would end:
// the committed state is copied to a data file (plain and compacting in
// turn), which is opened as a file env and must pass Env.Check and the full
// comparison with the model; the run goes on in memory.
func (r *cntRun) checkCopy() {
	r.copies++
	compact := r.copies%2 == 0
	r.did(fmt.Sprintf("copy the in-memory environment to a file (compact: %v) and check the copy", compact))
	dir, err := os.MkdirTemp(r.dir, "copy")
	if err != nil {
		r.fatalf("%v", err)
	}
	defer os.RemoveAll(dir)
	if compact {
		err = r.env.CopyFlag(dir, CopyCompact)
	} else {
		err = r.env.Copy(dir)
	}
	if err != nil {
		r.fatalf("copy: %v", err)
	}
	env, err := NewEnv()
	if err != nil {
		r.fatalf("%v", err)
	}
	defer env.Close()
	if err := env.SetMaxDBs(4); err != nil {
		r.fatalf("%v", err)
	}
	if err := env.Open(dir, Readonly, 0o600); err != nil {
		r.fatalf("open the copy: %v", err)
	}
	if err := env.Check(); err != nil {
		r.fatalf("Env.Check of the copy: %v", err)
	}
	live, liveU := r.cdb, r.udb
	defer func() { r.cdb, r.udb = live, liveU }()
	err = env.View(func(txn *Txn) (err error) {
		if r.cdb, err = txn.OpenDBI("counted", 0); err != nil {
			return err
		}
		if r.udb, err = txn.OpenDBI("plain", 0); err != nil {
			return err
		}
		if f, err := txn.Flags(r.cdb); err != nil || f&Counted == 0 || (f&PrefixCompression != 0) != r.cfg.compress {
			return fmt.Errorf("counted db flags in the copy %#x, %v", f, err)
		}
		r.checkAll(txn)
		return nil
	})
	if err != nil {
		r.fatalf("the copy: %v", err)
	}
}

func (r *cntRun) view(fn func(txn *Txn)) {
	r.t.Helper()
	if err := r.env.View(func(txn *Txn) error { fn(txn); return nil }); err != nil {
		r.fatalf("View: %v", err)
	}
}

// key draws a key: mostly from a moderate key space, sometimes a hot key of
// a DupSort database (which collects enough values for a sub-tree).
func (r *cntRun) key() string {
	if r.m.intKey {
		return cntIntKey(1 + 7*uint64(r.rng.Intn(3000)))
	}
	if r.dup && r.rng.Intn(5) == 0 {
		return r.hot[r.rng.Intn(len(r.hot))]
	}
	k := fmt.Sprintf("k%04d", r.rng.Intn(3000))
	switch {
	case r.cfg.long && r.rng.Intn(2) == 0:
		// long keys make branch nodes (with their counts) large
		k += strings.Repeat("x", r.rng.Intn(490))
	case r.rng.Intn(4) == 0:
		k += strings.Repeat("x", 1+r.rng.Intn(12))
	}
	return r.prefixed(k)
}

// prefixed prepends the configuration's shared prefix (keeping 500 bytes:
// the operations derive neighbours of stored keys and values by appending).
func (r *cntRun) prefixed(s string) string {
	if r.cfg.prefix == "" {
		return s
	}
	s = r.cfg.prefix + s
	return s[:min(len(s), 500)]
}

func (r *cntRun) val() string {
	switch {
	case r.cfg.fixed > 0:
		const digits = "0123456789abcdef"
		b := make([]byte, r.cfg.fixed)
		for i := range b {
			b[i] = digits[r.rng.Intn(16)]
		}
		return string(b)
	case r.dup && r.cfg.long:
		return r.prefixed(fmt.Sprintf("v%d", r.rng.Intn(1e6)) + strings.Repeat("-", r.rng.Intn(480)))
	case r.dup:
		return r.prefixed(fmt.Sprintf("v%d", r.rng.Intn(1e6)) + strings.Repeat("-", r.rng.Intn(20)))
	case r.rng.Intn(40) == 0:
		return strings.Repeat(fmt.Sprintf("%d.", r.rng.Intn(1000)), 700) // overflow pages
	default:
		return strings.Repeat("w", r.rng.Intn(60))
	}
}

// anyEntry picks a stored entry (ok false when the model is empty).
func (r *cntRun) anyEntry(m *cntModel) (cntPair, int, bool) {
	if len(m.ents) == 0 {
		return cntPair{}, 0, false
	}
	i := r.rng.Intn(len(m.ents))
	return m.ents[i], i, true
}

// both runs one write on the counted and the uncounted database, demands
// the same outcome and returns it.
func (r *cntRun) both(what string, fn func(dbi DBI) error) error {
	r.t.Helper()
	r.did(what)
	ec := fn(r.cdb)
	eu := fn(r.udb)
	if cntCode(ec) != cntCode(eu) {
		r.fatalf("%s: counted db says %v, uncounted says %v", what, ec, eu)
	}
	return ec
}

// expect fails unless err carries want (0 = success).
func (r *cntRun) expect(what string, err error, want int) {
	r.t.Helper()
	if cntCode(err) != want {
		r.fatalf("%s: error %v, want code %d", what, err, want)
	}
}

// mutate applies one random operation to both databases and the model.
func (r *cntRun) mutate(txn *Txn, m *cntModel) {
	r.t.Helper()
	delBias := []int{15, 60, 35}[(r.step/300)%3] // grow, shrink, mixed phases
	roll := r.rng.Intn(100)
	if r.rng.Intn(400) == 0 {
		// empty both databases (they stay open)
		err := r.both(fmt.Sprintf("Drop(%d entries)", len(m.ents)), func(dbi DBI) error { return txn.Drop(dbi, false) })
		r.expect(r.where, err, 0)
		m.ents = m.ents[:0]
		return
	}
	switch {
	case roll < delBias:
		r.mutateDel(txn, m)
	case roll < delBias+4 && delBias > 50:
		r.bulkDel(txn, m)
	case roll < delBias+4:
		r.bulk(txn, m)
	default:
		r.mutatePut(txn, m)
	}
}

func (r *cntRun) mutatePut(txn *Txn, m *cntModel) {
	r.t.Helper()
	k, v := r.key(), r.val()
	switch op := r.rng.Intn(6); {
	case op == 0: // NoOverwrite
		r.where = fmt.Sprintf("Put(%q, NoOverwrite)", k)
		err := r.both(r.where, func(dbi DBI) error { return txn.Put(dbi, []byte(k), []byte(v), NoOverwrite) })
		if m.hasKey(k) {
			r.expect(r.where, err, int(KeyExist))
		} else {
			r.expect(r.where, err, 0)
			m.put(k, v)
		}
	case op == 1 && r.dup: // NoDupData
		if p, _, ok := r.anyEntry(m); ok && r.rng.Intn(2) == 0 {
			k, v = p.k, p.v // an existing pair
		}
		r.where = fmt.Sprintf("Put(%q, %q, NoDupData)", k, v)
		err := r.both(r.where, func(dbi DBI) error { return txn.Put(dbi, []byte(k), []byte(v), NoDupData) })
		if _, ok := m.findPair(k, v); ok {
			r.expect(r.where, err, int(KeyExist))
		} else {
			r.expect(r.where, err, 0)
			m.put(k, v)
		}
	case op == 2 && !m.rev: // Append a key after the last one
		k = "z"
		if m.intKey {
			k = cntIntKey(1 << 40)
		}
		if n := len(m.ents); n > 0 {
			// a successor of the last key that grows slowly: bump its
			// last byte, add a byte only after a 'z'
			last := m.ents[n-1].k
			switch c := last[len(last)-1]; {
			case len(last) > 400:
				return
			case c >= 'a' && c < 'z':
				k = last[:len(last)-1] + string(c+1)
			default:
				k = last + "a"
			}
			if m.intKey {
				k = cntIntKey(binary.NativeEndian.Uint64([]byte(m.ents[n-1].k)) + 1 + uint64(r.rng.Intn(5)))
			}
		}
		r.where = fmt.Sprintf("Put(%q, Append)", k)
		err := r.both(r.where, func(dbi DBI) error { return txn.Put(dbi, []byte(k), []byte(v), Append) })
		r.expect(r.where, err, 0)
		m.put(k, v)
	case op == 3 && r.dup && !m.vrev && len(m.ents) > 0: // AppendDup after the last value of the last key
		last := m.ents[len(m.ents)-1]
		k = last.k
		if r.cfg.fixed > 0 {
			v = last.v[:r.cfg.fixed-1] + "~"
			if last.v >= v {
				return // nothing fits after it
			}
		} else {
			v = last.v + "+"
		}
		r.where = fmt.Sprintf("Put(%q, %q, AppendDup)", k, v)
		err := r.both(r.where, func(dbi DBI) error { return txn.Put(dbi, []byte(k), []byte(v), AppendDup) })
		r.expect(r.where, err, 0)
		m.put(k, v)
	case op == 4 && r.cfg.fixed > 0: // PutMulti
		n := 1 + r.rng.Intn(40)
		page := make([]byte, 0, n*r.cfg.fixed)
		vals := make([]string, n)
		for i := range vals {
			vals[i] = r.val()
			page = append(page, vals[i]...)
		}
		r.where = fmt.Sprintf("PutMulti(%q, %d values)", k, n)
		err := r.both(r.where, func(dbi DBI) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			return cur.PutMulti([]byte(k), page, r.cfg.fixed, 0)
		})
		r.expect(r.where, err, 0)
		for _, v := range vals {
			m.put(k, v)
		}
	default: // plain put, sometimes of an existing pair
		if p, _, ok := r.anyEntry(m); ok && r.rng.Intn(5) == 0 {
			k = p.k
			if r.dup && r.rng.Intn(2) == 0 {
				v = p.v
			}
		}
		r.where = fmt.Sprintf("Put(%q, %d bytes)", k, len(v))
		viaCursor := r.pc != nil && r.pcTxn == txn && r.rng.Intn(3) == 0
		if viaCursor {
			// the counted database through the long-lived cursor
			r.where = fmt.Sprintf("Cursor.Put(%q, %d bytes) on the long-lived cursor", k, len(v))
		}
		err := r.both(r.where, func(dbi DBI) error {
			if viaCursor && dbi == r.cdb {
				return r.pc.Put([]byte(k), []byte(v), 0)
			}
			return txn.Put(dbi, []byte(k), []byte(v), 0)
		})
		r.expect(r.where, err, 0)
		m.put(k, v)
	}
}

func (r *cntRun) mutateDel(txn *Txn, m *cntModel) {
	r.t.Helper()
	p, rank, ok := r.anyEntry(m)
	if !ok || r.rng.Intn(12) == 0 { // absent key or pair
		k, v := r.key(), r.val()
		_, present := m.findPair(k, v)
		if (!r.dup && m.hasKey(k)) || present {
			return
		}
		r.where = fmt.Sprintf("Del(%q, %q) absent", k, v)
		err := r.both(r.where, func(dbi DBI) error { return txn.Del(dbi, []byte(k), []byte(v)) })
		r.expect(r.where, err, int(NotFound))
		return
	}
	switch op := r.rng.Intn(4); {
	case op == 0 && r.dup: // every value of the key, through a cursor
		r.where = fmt.Sprintf("Cursor.Del(%q, NoDupData)", p.k)
		err := r.both(r.where, func(dbi DBI) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			if _, _, err := cur.Get([]byte(p.k), nil, Set); err != nil {
				return err
			}
			return cur.Del(NoDupData)
		})
		r.expect(r.where, err, 0)
		m.delKey(p.k)
	case op == 1: // the entry at a rank, through a cursor: the counted
		// database is positioned with GetRank, its twin by lookup
		r.where = fmt.Sprintf("Cursor.Del at rank %d (%q, %q)", rank, p.k, p.v)
		err := r.both(r.where, func(dbi DBI) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			if dbi == r.cdb {
				k, v, err := cur.GetRank(uint64(rank))
				if err != nil {
					return err
				}
				if string(k) != p.k || string(v) != p.v {
					r.fatalf("GetRank(%d) = %q %q, want %q %q", rank, k, v, p.k, p.v)
				}
			} else if r.dup {
				if _, _, err := cur.Get([]byte(p.k), []byte(p.v), GetBoth); err != nil {
					return err
				}
			} else if _, _, err := cur.Get([]byte(p.k), nil, Set); err != nil {
				return err
			}
			return cur.Del(0)
		})
		r.expect(r.where, err, 0)
		m.delPair(p.k, p.v)
	default: // Txn.Del of a pair (DupSort) or a key
		r.where = fmt.Sprintf("Del(%q, %q)", p.k, p.v)
		err := r.both(r.where, func(dbi DBI) error { return txn.Del(dbi, []byte(p.k), []byte(p.v)) })
		r.expect(r.where, err, 0)
		m.delPair(p.k, p.v)
	}
}

// bulkDel deletes a run of consecutive entries through a cursor: Del, then
// Next to the entry that followed the deleted one. The counted database's
// cursor starts at the run's first rank with GetRank, its twin's by lookup.
func (r *cntRun) bulkDel(txn *Txn, m *cntModel) {
	r.t.Helper()
	if len(m.ents) == 0 {
		return
	}
	start := r.rng.Intn(len(m.ents))
	n := min(len(m.ents)-start, 20+r.rng.Intn(200))
	run := append([]cntPair(nil), m.ents[start:start+n]...)
	err := r.both(fmt.Sprintf("delete %d entries from rank %d (%q, %q)", n, start, run[0].k, run[0].v), func(dbi DBI) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		var k, v []byte
		switch {
		case dbi == r.cdb:
			k, v, err = cur.GetRank(uint64(start))
		case r.dup:
			k, v, err = cur.Get([]byte(run[0].k), []byte(run[0].v), GetBoth)
		default:
			k, v, err = cur.Get([]byte(run[0].k), nil, SetKey)
		}
		for i := 0; ; i++ {
			if err != nil {
				return err
			}
			if string(k) != run[i].k || string(v) != run[i].v {
				r.fatalf("db %d: entry %d of the run is %q %q, want %q %q", dbi, i, k, v, run[i].k, run[i].v)
			}
			if err := cur.Del(0); err != nil {
				return err
			}
			if i+1 == n {
				return nil
			}
			k, v, err = cur.Get(nil, nil, Next)
		}
	})
	r.expect(r.where, err, 0)
	m.ents = append(m.ents[:start], m.ents[start+n:]...)
}

// bulk stores many entries at once: a few hundred keys in a plain
// database, a few hundred more values of a hot key in a DupSort one (enough
// over a run for its duplicates to need a sub-tree with branch pages).
func (r *cntRun) bulk(txn *Txn, m *cntModel) {
	r.t.Helper()
	if !r.dup {
		n := 50 + r.rng.Intn(250)
		pairs := make([]cntPair, n)
		for i := range pairs {
			pairs[i] = cntPair{r.key(), r.val()}
		}
		err := r.both(fmt.Sprintf("bulk %d puts", n), func(dbi DBI) error {
			for _, p := range pairs {
				if err := txn.Put(dbi, []byte(p.k), []byte(p.v), 0); err != nil {
					return err
				}
			}
			return nil
		})
		r.expect(r.where, err, 0)
		for _, p := range pairs {
			m.put(p.k, p.v)
		}
		return
	}
	k := r.hot[r.rng.Intn(len(r.hot))]
	n := 100 + r.rng.Intn(300)
	if r.cfg.fixed > 0 {
		n = 200 + r.rng.Intn(800)
	}
	vals := make([]string, n)
	for i := range vals {
		vals[i] = r.val()
	}
	r.where = fmt.Sprintf("bulk %d values on %q", n, k)
	if r.cfg.fixed > 0 && r.rng.Intn(2) == 0 {
		page := []byte(strings.Join(vals, ""))
		err := r.both(r.where, func(dbi DBI) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			return cur.PutMulti([]byte(k), page, r.cfg.fixed, 0)
		})
		r.expect(r.where, err, 0)
	} else {
		err := r.both(r.where, func(dbi DBI) error {
			for _, v := range vals {
				if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
					return err
				}
			}
			return nil
		})
		r.expect(r.where, err, 0)
	}
	for _, v := range vals {
		m.put(k, v)
	}
}

// ---- checks -------------------------------------------------------------------

// bound draws a range bound: open, a stored key, a key between stored keys,
// one outside the data, or a random key.
func (r *cntRun) bound(m *cntModel) []byte {
	switch r.rng.Intn(8) {
	case 0:
		return nil
	case 1:
		return []byte{} // empty is open too
	case 2:
		if m.intKey {
			return []byte(cntIntKey(0))
		}
		return []byte("\x01") // below every key
	case 3:
		if m.intKey {
			return []byte(cntIntKey(math.MaxUint64))
		}
		return []byte("\xff\xff") // above every key
	case 4, 5:
		if p, _, ok := r.anyEntry(m); ok {
			if r.rng.Intn(3) == 0 {
				return []byte(m.after(p.k)) // just after a stored key
			}
			return []byte(p.k)
		}
	}
	return []byte(r.key())
}

func (r *cntRun) checkRange(txn *Txn, m *cntModel, low, high []byte, flags uint) {
	r.t.Helper()
	wantE, wantK := m.count(low, high, flags)
	got, err := txn.CountRange(r.cdb, low, high, flags)
	if err != nil || got != wantE {
		r.fatalf("CountRange(%q, %q, %#x) = %d, %v; want %d", low, high, flags, got, err, wantE)
	}
	got, err = txn.CountValues(r.cdb, low, high, flags)
	if err != nil || got != wantE {
		r.fatalf("CountValues(%q, %q, %#x) = %d, %v; want %d", low, high, flags, got, err, wantE)
	}
	got, err = txn.CountKeys(r.cdb, low, high, flags)
	if err != nil || got != wantK {
		r.fatalf("CountKeys(%q, %q, %#x) = %d, %v; want %d", low, high, flags, got, err, wantK)
	}
}

func (r *cntRun) checkRank(txn *Txn, m *cntModel, rank int) {
	r.t.Helper()
	k, v, err := txn.GetRank(r.cdb, uint64(rank))
	if rank >= len(m.ents) {
		if !IsNotFound(err) {
			r.fatalf("Rank(%d) of %d entries = %q %q %v, want NotFound", rank, len(m.ents), k, v, err)
		}
		return
	}
	want := m.ents[rank]
	if err != nil || string(k) != want.k || string(v) != want.v {
		r.fatalf("Rank(%d) = %q %q %v, want %q %q", rank, k, v, err, want.k, want.v)
	}
}

func (r *cntRun) checkKeyRank(txn *Txn, cur *Cursor, m *cntModel) {
	r.t.Helper()
	p, i, ok := r.anyEntry(m)
	if !ok {
		k := r.key()
		if _, err := txn.KeyRank(r.cdb, []byte(k), nil); !IsNotFound(err) {
			r.fatalf("KeyRank(%q) on an empty db: %v, want NotFound", k, err)
		}
		return
	}
	first := m.lowerKey(p.k)
	got, err := txn.KeyRank(r.cdb, []byte(p.k), nil)
	if err != nil || got != uint64(first) {
		r.fatalf("KeyRank(%q, nil) = %d, %v; want %d", p.k, got, err, first)
	}
	got, err = cur.KeyRank([]byte(p.k), nil)
	if err != nil || got != uint64(first) {
		r.fatalf("Cursor.KeyRank(%q, nil) = %d, %v; want %d", p.k, got, err, first)
	}
	// with a value: the pair in DupSort databases; in others the key, as
	// long as that is its value (an empty, non-nil slice is the empty
	// value, not "no value")
	val := []byte(p.v)
	got, err = txn.KeyRank(r.cdb, []byte(p.k), val)
	if err != nil || got != uint64(i) {
		r.fatalf("KeyRank(%q, %q) = %d, %v; want %d", p.k, val, got, err, i)
	}
	got, err = cur.KeyRank([]byte(p.k), val)
	if err != nil || got != uint64(i) {
		r.fatalf("Cursor.KeyRank(%q, %q) = %d, %v; want %d", p.k, val, got, err, i)
	}
	// an absent key, and in DupSort databases an absent value of a present key
	if ak := m.after(p.k); !m.hasKey(ak) {
		if got, err := txn.KeyRank(r.cdb, []byte(ak), nil); !IsNotFound(err) {
			r.fatalf("KeyRank(absent %q) = %d, %v; want NotFound", ak, got, err)
		}
		if got, err := cur.KeyRank([]byte(ak), nil); !IsNotFound(err) {
			r.fatalf("Cursor.KeyRank(absent %q) = %d, %v; want NotFound", ak, got, err)
		}
		if got, err := txn.KeyRank(r.cdb, []byte(ak), []byte(p.v)); !IsNotFound(err) {
			r.fatalf("KeyRank(absent %q, %q) = %d, %v; want NotFound", ak, p.v, got, err)
		}
	}
	if !r.dup {
		// any other value: one byte more, one less, empty, a random one
		others := [][]byte{[]byte(p.v + "x"), []byte(r.val())}
		if p.v != "" {
			others = append(others, []byte(p.v[:len(p.v)-1]), []byte{})
		}
		for _, ov := range others {
			if string(ov) == p.v {
				continue
			}
			if got, err := txn.KeyRank(r.cdb, []byte(p.k), ov); !IsNotFound(err) {
				r.fatalf("KeyRank(%q, other value %q) = %d, %v; want NotFound", p.k, ov, got, err)
			}
			if got, err := cur.KeyRank([]byte(p.k), ov); !IsNotFound(err) {
				r.fatalf("Cursor.KeyRank(%q, other value %q) = %d, %v; want NotFound", p.k, ov, got, err)
			}
		}
	}
	if r.dup {
		av := r.val()
		if _, present := m.findPair(p.k, av); !present {
			if got, err := txn.KeyRank(r.cdb, []byte(p.k), []byte(av)); !IsNotFound(err) {
				r.fatalf("KeyRank(%q, absent %q) = %d, %v; want NotFound", p.k, av, got, err)
			}
			if got, err := cur.KeyRank([]byte(p.k), []byte(av)); !IsNotFound(err) {
				r.fatalf("Cursor.KeyRank(%q, absent %q) = %d, %v; want NotFound", p.k, av, got, err)
			}
		}
	}
}

// checkCursorRanks walks a random ascending sequence of ranks with one
// cursor, then checks that ordinary cursor moves continue from the last one
// and that a rank past the end leaves the cursor in place.
func (r *cntRun) checkCursorRanks(txn *Txn, cur *Cursor, m *cntModel) {
	r.t.Helper()
	n := len(m.ents)
	if n == 0 {
		if k, v, err := cur.GetRank(0); !IsNotFound(err) {
			r.fatalf("Cursor.GetRank(0) on an empty db = %q %q %v", k, v, err)
		}
		return
	}
	rank := r.rng.Intn(1 + n/8)
	last := -1
	for j := 0; j < 8 && rank < n; j++ {
		k, v, err := cur.GetRank(uint64(rank))
		if want := m.ents[rank]; err != nil || string(k) != want.k || string(v) != want.v {
			r.fatalf("Cursor.GetRank(%d) (ascending, previous %d) = %q %q %v, want %q %q",
				rank, last, k, v, err, want.k, want.v)
		}
		last = rank
		rank += r.rng.Intn(1 + n/4)
	}
	// past the end: NotFound, position kept
	if k, v, err := cur.GetRank(uint64(n + r.rng.Intn(3))); !IsNotFound(err) {
		r.fatalf("Cursor.GetRank(past end of %d) = %q %q %v", n, k, v, err)
	}
	k, v, err := cur.Get(nil, nil, GetCurrent)
	if want := m.ents[last]; err != nil || string(k) != want.k || string(v) != want.v {
		r.fatalf("GetCurrent after GetRank(%d) = %q %q %v, want %q %q", last, k, v, err, want.k, want.v)
	}
	op, step := uint(Next), 1
	switch r.rng.Intn(3) {
	case 1:
		op, step = Prev, -1
	case 2:
		if r.dup {
			op = NextDup
		}
	}
	k, v, err = cur.Get(nil, nil, op)
	next := last + step
	if op == NextDup && (next >= n || m.ents[next].k != m.ents[last].k) {
		next = -1
	}
	if next < 0 || next >= n {
		if !IsNotFound(err) {
			r.fatalf("cursor op %d after GetRank(%d) = %q %q %v, want NotFound", op, last, k, v, err)
		}
		return
	}
	if want := m.ents[next]; err != nil || string(k) != want.k || string(v) != want.v {
		r.fatalf("cursor op %d after GetRank(%d) = %q %q %v, want %q %q", op, last, k, v, err, want.k, want.v)
	}
	// a rank below the current position works too
	back := r.rng.Intn(n)
	k, v, err = cur.GetRank(uint64(back))
	if want := m.ents[back]; err != nil || string(k) != want.k || string(v) != want.v {
		r.fatalf("Cursor.GetRank(%d) after %d = %q %q %v, want %q %q", back, last, k, v, err, want.k, want.v)
	}
}

// checkLongLived uses the write transaction's long-lived cursor after a
// change: GetRank must not trust a position remembered from before it.
func (r *cntRun) checkLongLived(m *cntModel) {
	r.t.Helper()
	if r.pc == nil {
		return
	}
	r.where = "long-lived cursor"
	n := len(m.ents)
	rank := r.rng.Intn(n + 1)
	for j := 0; j < 3; j++ {
		k, v, err := r.pc.GetRank(uint64(rank))
		if rank >= n {
			if !IsNotFound(err) {
				r.fatalf("long-lived Cursor.GetRank(%d) of %d entries = %q %q %v, want NotFound", rank, n, k, v, err)
			}
			return
		}
		if want := m.ents[rank]; err != nil || string(k) != want.k || string(v) != want.v {
			r.fatalf("long-lived Cursor.GetRank(%d) = %q %q %v, want %q %q", rank, k, v, err, want.k, want.v)
		}
		rank += r.rng.Intn(1 + n/10)
	}
}

// checkCounts runs the counting and ranking checks on the counted database.
func (r *cntRun) checkCounts(txn *Txn, m *cntModel) {
	r.t.Helper()
	r.where = "checks"
	n := len(m.ents)
	if got, err := txn.CountAll(r.cdb); err != nil || got != uint64(n) {
		r.fatalf("CountAll = %d, %v; want %d", got, err, n)
	}
	for j := 0; j < 3; j++ {
		r.checkRange(txn, m, r.bound(m), r.bound(m), uint(r.rng.Intn(4))*2)
	}
	eq := r.bound(m)
	for f := uint(0); f < 4; f++ {
		r.checkRange(txn, m, eq, eq, f*2)
	}
	for _, rank := range []int{0, n - 1, n, n + 1, r.rng.Intn(n + 1)} {
		if rank >= 0 {
			r.checkRank(txn, m, rank)
		}
	}
	cur, err := txn.OpenCursor(r.cdb)
	if err != nil {
		r.fatalf("OpenCursor: %v", err)
	}
	defer cur.Close()
	r.checkKeyRank(txn, cur, m)
	r.checkCursorRanks(txn, cur, m)
}

// scanAll reads a database from first to last (or last to first).
func (r *cntRun) scanAll(txn *Txn, dbi DBI, backwards bool) []cntPair {
	r.t.Helper()
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		r.fatalf("OpenCursor: %v", err)
	}
	defer cur.Close()
	op := uint(Next)
	if backwards {
		op = Prev
	}
	var out []cntPair
	for {
		k, v, err := cur.Get(nil, nil, op)
		if IsNotFound(err) {
			break
		}
		if err != nil {
			r.fatalf("scan: %v", err)
		}
		out = append(out, cntPair{string(k), string(v)})
	}
	if backwards {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

func (r *cntRun) samePairs(what string, got []cntPair, want []cntPair) {
	r.t.Helper()
	if len(got) != len(want) {
		r.fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			r.fatalf("%s: entry %d is %q, want %q", what, i, got[i], want[i])
		}
	}
}

// checkAll compares whole databases with the model, both read directions,
// every rank in order through one cursor, the DupFixed pages, the ordinary
// read API of both databases, and runs the structure checker.
func (r *cntRun) checkAll(txn *Txn) {
	r.t.Helper()
	m := r.m
	r.where = "full comparison"
	r.samePairs("counted forward scan", r.scanAll(txn, r.cdb, false), m.ents)
	r.samePairs("uncounted forward scan", r.scanAll(txn, r.udb, false), m.ents)
	r.samePairs("counted backward scan", r.scanAll(txn, r.cdb, true), m.ents)
	r.samePairs("uncounted backward scan", r.scanAll(txn, r.udb, true), m.ents)

	cur, err := txn.OpenCursor(r.cdb)
	if err != nil {
		r.fatalf("OpenCursor: %v", err)
	}
	for i, want := range m.ents {
		k, v, err := cur.GetRank(uint64(i))
		if err != nil || string(k) != want.k || string(v) != want.v {
			cur.Close()
			r.fatalf("every rank: GetRank(%d) = %q %q %v, want %q %q", i, k, v, err, want.k, want.v)
		}
	}
	cur.Close()
	for _, dbi := range []DBI{r.cdb, r.udb} {
		st, err := txn.Stat(dbi)
		if err != nil || st.Entries != uint64(len(m.ents)) {
			r.fatalf("Stat(%d).Entries = %v, %v; want %d", dbi, st, err, len(m.ents))
		}
	}
	if r.cfg.fixed > 0 {
		r.checkMultiple(txn)
	}
	r.compareReads(txn)
	if err := txn.Check(); err != nil {
		r.fatalf("Txn.Check: %v", err)
	}
}

// checkMultiple reads every key's values page by page on both databases.
func (r *cntRun) checkMultiple(txn *Txn) {
	r.t.Helper()
	for _, dbi := range []DBI{r.cdb, r.udb} {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			r.fatalf("OpenCursor: %v", err)
		}
		var got []cntPair
		for {
			k, v, err := cur.Get(nil, nil, NextNoDup)
			if IsNotFound(err) {
				break
			}
			if err != nil {
				r.fatalf("NextNoDup: %v", err)
			}
			// every key, a lone value too, is read as pages (the
			// first page holds the value NextNoDup returned)
			_, page, err := cur.Get(nil, nil, GetMultiple)
			if err == nil && !bytes.HasPrefix(page, v) {
				r.fatalf("GetMultiple of %q: page %x does not start with %x", k, page, v)
			}
			for err == nil {
				for _, v := range WrapMulti(page, r.cfg.fixed).Vals() {
					got = append(got, cntPair{string(k), string(v)})
				}
				_, page, err = cur.Get(nil, nil, NextMultiple)
			}
			if !IsNotFound(err) {
				r.fatalf("GetMultiple/NextMultiple of %q: %v", k, err)
			}
		}
		cur.Close()
		r.samePairs(fmt.Sprintf("DupFixed pages of db %d", dbi), got, r.m.ents)
	}
}

// compareReads runs the same random gets and cursor programs on both
// databases and demands identical answers.
func (r *cntRun) compareReads(txn *Txn) {
	r.t.Helper()
	m := r.m
	probe := func() []byte {
		if p, _, ok := r.anyEntry(m); ok && r.rng.Intn(2) == 0 {
			return []byte(p.k)
		}
		return []byte(r.key())
	}
	for j := 0; j < 20; j++ {
		k := probe()
		vc, ec := txn.Get(r.cdb, k)
		vu, eu := txn.Get(r.udb, k)
		if cntCode(ec) != cntCode(eu) || !bytes.Equal(vc, vu) {
			r.fatalf("Get(%q): counted %q %v, uncounted %q %v", k, vc, ec, vu, eu)
		}
		if i := r.m.lowerKey(string(k)); (i < len(r.m.ents) && r.m.ents[i].k == string(k)) != (ec == nil) ||
			(ec == nil && string(vc) != r.m.ents[i].v) {
			r.fatalf("Get(%q) = %q %v disagrees with the model", k, vc, ec)
		}
	}
	ops := []uint{First, Last, Next, Prev, GetCurrent, Set, SetKey, SetRange}
	if r.dup {
		ops = append(ops, FirstDup, LastDup, NextDup, PrevDup, NextNoDup, PrevNoDup, GetBoth, GetBothRange)
	}
	cc, err := txn.OpenCursor(r.cdb)
	if err != nil {
		r.fatalf("OpenCursor: %v", err)
	}
	defer cc.Close()
	cu, err := txn.OpenCursor(r.udb)
	if err != nil {
		r.fatalf("OpenCursor: %v", err)
	}
	defer cu.Close()
	lost := false
	for j := 0; j < 60; j++ {
		if p, rank, ok := r.anyEntry(m); ok && r.rng.Intn(10) == 0 {
			// position the counted cursor by rank and its twin by
			// lookup; the program must not tell them apart
			r.did(fmt.Sprintf("read program: GetRank(%d) on counted, lookup of (%q, %q) on uncounted", rank, p.k, p.v))
			kc, vc, ec := cc.GetRank(uint64(rank))
			var ku, vu []byte
			var eu error
			if r.dup {
				ku, vu, eu = cu.Get([]byte(p.k), []byte(p.v), GetBoth)
			} else {
				ku, vu, eu = cu.Get([]byte(p.k), nil, SetKey)
			}
			if ec != nil || eu != nil || string(kc) != p.k || string(vc) != p.v ||
				string(ku) != p.k || string(vu) != p.v {
				r.fatalf("positioning at rank %d (%q, %q): GetRank %q %q %v, lookup %q %q %v",
					rank, p.k, p.v, kc, vc, ec, ku, vu, eu)
			}
			lost = false
			continue
		}
		op := ops[r.rng.Intn(len(ops))]
		for lost && !seeks(op) && op != First && op != Last {
			op = ops[r.rng.Intn(len(ops))]
		}
		var sk, sv []byte
		if seeks(op) {
			sk = probe()
			if op == GetBoth || op == GetBothRange {
				if p, _, ok := r.anyEntry(m); ok && r.rng.Intn(2) == 0 {
					sk, sv = []byte(p.k), []byte(p.v)
				} else {
					sv = []byte(r.val())
				}
			}
		}
		r.did(fmt.Sprintf("read program: cursor op %d (%q, %q)", op, sk, sv))
		kc, vc, ec := cc.Get(sk, sv, op)
		ku, vu, eu := cu.Get(sk, sv, op)
		if cntCode(ec) != cntCode(eu) || !bytes.Equal(kc, ku) || !bytes.Equal(vc, vu) {
			r.fatalf("cursor op %d (%q, %q), step %d of a program: counted %q %q %v, uncounted %q %q %v",
				op, sk, sv, j, kc, vc, ec, ku, vu, eu)
		}
		switch {
		case ec == nil && (seeks(op) || op == First || op == Last):
			lost = false
		case ec != nil && seeks(op):
			// Where a failed lookup leaves a cursor depends on page
			// boundaries, which differ between the two databases
			// (counted branch nodes are larger, so rebalancing pairs
			// other pages): only absolute moves until the next hit.
			lost = true
		}
	}
}

// ---- the driver -------------------------------------------------------------

func cntTestConfig(t *testing.T, cfg cntConfig, seed int64, steps int) {
	r := &cntRun{
		t:   t,
		cfg: cfg,
		rng: rand.New(rand.NewSource(seed)),
		dir: t.TempDir(),
		m: &cntModel{dup: cfg.flags&DupSort != 0, rev: cfg.flags&ReverseKey != 0,
			vrev: cfg.flags&ReverseDup != 0, intKey: cfg.flags&IntegerKey != 0},
		dup: cfg.flags&DupSort != 0,
	}
	r.hot = []string{r.prefixed("hot-a"), r.prefixed("k0700"), r.prefixed("zz-hot")}
	r.open()
	defer func() { r.env.Close() }()
	errAbort := errors.New("abort on purpose")
	for r.step < steps {
		batch := 1 + r.rng.Intn(30)
		saved := r.m.clone()
		abortTop := r.rng.Intn(10) == 0
		r.did(fmt.Sprintf("write txn begins (will abort: %v)", abortTop))
		err := r.env.Update(func(txn *Txn) error {
			pc, err := txn.OpenCursor(r.cdb)
			if err != nil {
				r.fatalf("OpenCursor: %v", err)
			}
			r.pc, r.pcTxn = pc, txn
			defer func() { r.pc, r.pcTxn = nil, nil }()
			for b := 0; b < batch && r.step < steps; b++ {
				r.step++
				if r.rng.Intn(12) == 0 {
					// a nested transaction, committed or aborted
					commit := r.rng.Intn(2) == 0
					inner := r.m.clone()
					r.did(fmt.Sprintf("nested txn begins (will commit: %v)", commit))
					err := txn.Sub(func(child *Txn) error {
						for j := 1 + r.rng.Intn(20); j > 0; j-- {
							r.mutate(child, inner)
						}
						r.checkCounts(child, inner)
						r.did("nested txn ends")
						if !commit {
							return errAbort
						}
						return nil
					})
					if commit {
						if err != nil {
							r.fatalf("Sub commit: %v", err)
						}
						r.m = inner
					} else if err != errAbort {
						r.fatalf("Sub abort: %v", err)
					}
				} else {
					r.mutate(txn, r.m)
				}
				r.checkCounts(txn, r.m)
				r.checkLongLived(r.m)
			}
			if r.rng.Intn(4) == 0 {
				r.checkAll(txn)
			}
			if abortTop {
				return errAbort
			}
			return nil
		})
		if abortTop {
			if err != errAbort {
				r.fatalf("aborted batch: %v", err)
			}
			r.m = saved
		} else if err != nil {
			r.fatalf("batch: %v", err)
		}
		r.notePeaks()
		r.view(func(txn *Txn) {
			r.checkCounts(txn, r.m)
			if cfg.prefix != "" {
				r.noteLeaves(txn)
			}
		})
		if r.rng.Intn(15) == 0 {
			r.view(func(txn *Txn) { r.checkAll(txn) })
		}
		if r.rng.Intn(60) == 0 {
			r.reopen()
		}
	}
	r.view(func(txn *Txn) { r.checkAll(txn) })
	if cfg.prefix != "" {
		// the shared prefix is stored once per page, not once per key: over
		// the run the compressed DB must have taken fewer leaf pages, and
		// the run must have grown past single-page trees
		if r.leavesC >= r.leavesU || r.leavesU < uint64(steps/10) {
			r.fatalf("compressed counted DB: %d leaf pages summed over the states after each batch; its plain twin: %d (want fewer, and at least %d)",
				r.leavesC, r.leavesU, steps/10)
		}
		t.Logf("%s: leaf pages summed over the batches: %d compressed, %d plain", cfg.name, r.leavesC, r.leavesU)
	}
	r.reopen()
	t.Logf("%s: %d steps, %d entries at the end, at most %d entries and %d values on one key, %d copies checked (in memory)",
		cfg.name, steps, len(r.m.ents), r.peakEntries, r.peakDups, r.copies)
}

// cntModes runs one configuration on a file env (subtest cfg.name) and in
// memory (cfg.name+"-mem"): the same seed, so the in-memory run replays the
// file run, its first third (steps/3) where div is 3. (The prefix runs take
// every step in memory too: their check that compression saved leaf pages
// wants a workload of their full size.)
func cntModes(t *testing.T, cfg cntConfig, seed int64, steps, div int) {
	t.Run(cfg.name, func(t *testing.T) {
		cntTestConfig(t, cfg, cntSubSeed(seed, cfg.name), steps)
	})
	mem := cfg
	mem.mem = true
	t.Run(cfg.name+"-mem", func(t *testing.T) {
		cntTestConfig(t, mem, cntSubSeed(seed, cfg.name), max(steps/div, 1))
	})
}

// TestCountedRandomOps is the model test described at the top of the file.
func TestCountedRandomOps(t *testing.T) {
	seed := cntSeed(t)
	steps := 2500 * testScale()
	for _, cfg := range []cntConfig{
		{name: "plain"},
		{name: "dupsort", flags: DupSort},
		{name: "dupfixed", flags: DupSort | DupFixed, fixed: 8},
		{name: "dupsort-reversekey", flags: DupSort | ReverseKey},
		{name: "integerkey", flags: IntegerKey},
		{name: "dupsort-reversedup", flags: DupSort | ReverseDup},
		{name: "plain-longkeys", long: true},
		{name: "dupsort-long", flags: DupSort, long: true},
	} {
		cntModes(t, cfg, seed, steps, 3)
	}
}

// noteLeaves adds the leaf pages of both databases to the run's sums.
func (r *cntRun) noteLeaves(txn *Txn) {
	sc, err := txn.Stat(r.cdb)
	if err != nil {
		r.fatalf("Stat: %v", err)
	}
	su, err := txn.Stat(r.udb)
	if err != nil {
		r.fatalf("Stat: %v", err)
	}
	if sc.Entries != su.Entries {
		r.fatalf("Stat: %d entries in the counted DB, %d in its twin", sc.Entries, su.Entries)
	}
	r.leavesC += sc.LeafPages
	r.leavesU += su.LeafPages
}

// TestCountedPrefixRandomOps reruns the model test on counted databases that
// are also prefix-compressed (keys, and DupSort values, with a long shared
// prefix; IntegerKey keys as they are), against the brute-force model and a
// plain uncounted twin; at the end the compressed database must take fewer
// leaf pages than its twin.
func TestCountedPrefixRandomOps(t *testing.T) {
	seed := cntSeed(t)
	steps := 1500 * testScale()
	const pfx = "urn:dlmdb:counted-prefix-test/shared/"
	for _, cfg := range []cntConfig{
		{name: "prefix-plain", compress: true, prefix: pfx},
		{name: "prefix-dupsort", flags: DupSort, compress: true, prefix: pfx},
		{name: "prefix-dupfixed", flags: DupSort | DupFixed, fixed: 8, compress: true, prefix: pfx},
		{name: "prefix-dupsort-reversekey", flags: DupSort | ReverseKey, compress: true, prefix: pfx},
		{name: "prefix-integerkey", flags: IntegerKey, compress: true},
		{name: "prefix-dupsort-long", flags: DupSort, long: true, compress: true, prefix: pfx},
	} {
		cntModes(t, cfg, seed, steps, 1)
	}
}

// ---- smaller, targeted tests ---------------------------------------------------

// cntEnv opens a fresh environment with one counted and one uncounted
// database of the given flags.
func cntEnv(t *testing.T, flags uint) (env *Env, counted, plain DBI) {
	t.Helper()
	env = openEnv(t, 0)
	mustUpdate(t, env, func(txn *Txn) (err error) {
		if counted, err = txn.OpenDBI("counted", Create|Counted|flags); err != nil {
			return err
		}
		plain, err = txn.OpenDBI("plain", Create|flags)
		return err
	})
	return env, counted, plain
}

// TestCountedNestedAbort fills a DupSort database so that one key has a
// duplicate sub-tree and the main tree has branch pages, then deletes and
// inserts inside nested transactions that abort, and demands the exact
// previous counts afterwards, in the parent and after commit and reopen.
func TestCountedNestedAbort(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Env, DBI) {
		env, err := NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		env.SetMaxDBs(2)
		env.SetMapSize(64 << 20)
		if err := env.Open(dir, 0, 0o600); err != nil {
			t.Fatal(err)
		}
		var dbi DBI
		mustUpdate(t, env, func(txn *Txn) (err error) {
			dbi, err = txn.OpenDBI("d", Create|Counted|DupSort)
			return err
		})
		return env, dbi
	}
	env, dbi := open()
	const keys, hotVals = 400, 1200
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < keys; i++ {
			for j := 0; j <= i%3; j++ {
				if err := txn.Put(dbi, kv("key", i), kv("v", j), 0); err != nil {
					return err
				}
			}
		}
		for j := 0; j < hotVals; j++ {
			if err := txn.Put(dbi, []byte("key200"), []byte(fmt.Sprintf("hot%05d", j)), 0); err != nil {
				return err
			}
		}
		return nil
	})
	type snapshot struct{ all, keysLo, valsMid, rank uint64 }
	take := func(txn *Txn) snapshot {
		var s snapshot
		var err error
		if s.all, err = txn.CountAll(dbi); err != nil {
			t.Fatal(err)
		}
		if s.keysLo, err = txn.CountKeys(dbi, nil, []byte("key300"), 0); err != nil {
			t.Fatal(err)
		}
		if s.valsMid, err = txn.CountValues(dbi, []byte("key150"), []byte("key250"), CountLowerIncl|CountUpperIncl); err != nil {
			t.Fatal(err)
		}
		if s.rank, err = txn.KeyRank(dbi, []byte("key302"), nil); err != nil { // never loses all values
			t.Fatal(err)
		}
		return s
	}
	var before snapshot
	mustUpdate(t, env, func(txn *Txn) error {
		before = take(txn)
		errAbort := errors.New("abort")
		for round := 0; round < 3; round++ {
			err := txn.Sub(func(child *Txn) error {
				// delete most of the hot key's values and many keys
				for j := 0; j < hotVals-10; j++ {
					if err := child.Del(dbi, []byte("key200"), []byte(fmt.Sprintf("hot%05d", j))); err != nil {
						return err
					}
				}
				for i := 0; i < keys; i += 2 + round {
					if err := child.Del(dbi, kv("key", i), kv("v", 0)); err != nil {
						return err
					}
				}
				for i := 0; i < 300; i++ {
					if err := child.Put(dbi, []byte(fmt.Sprintf("new%04d", i)), []byte("x"), 0); err != nil {
						return err
					}
				}
				if s := take(child); s == before {
					t.Errorf("round %d: nested changes did not show in the counts: %+v", round, s)
				}
				if err := child.Check(); err != nil {
					t.Errorf("round %d: Check in the nested txn: %v", round, err)
				}
				return errAbort
			})
			if err != errAbort {
				t.Fatalf("round %d: Sub: %v", round, err)
			}
			if s := take(txn); s != before {
				t.Fatalf("round %d: after nested abort %+v, want %+v", round, s, before)
			}
		}
		return txn.Check()
	})
	// the totals, computed independently of the engine: key i holds i%3+1
	// values, key200 also the hot ones
	var want snapshot
	for i := 0; i < keys; i++ {
		n := uint64(i%3 + 1)
		want.all += n
		if i < 300 {
			want.keysLo++
		}
		if i < 302 {
			want.rank += n
		}
		if i >= 150 && i <= 250 {
			want.valsMid += n
		}
	}
	want.all += hotVals
	want.rank += hotVals
	want.valsMid += hotVals
	if before != want {
		t.Fatalf("counts %+v, want %+v", before, want)
	}
	env.Close()
	env, dbi = open()
	defer env.Close()
	if err := env.Check(); err != nil {
		t.Fatalf("Env.Check after reopen: %v", err)
	}
	mustView(t, env, func(txn *Txn) error {
		if s := take(txn); s != before {
			t.Fatalf("after reopen %+v, want %+v", s, before)
		}
		return nil
	})
}

// TestCountedIncompatible: every counting method refuses an uncounted
// database with Incompatible, including one that was created uncounted and
// reopened with the Counted flag.
func TestCountedIncompatible(t *testing.T) {
	env, counted, plain := cntEnv(t, 0)
	fill(t, env, plain, 20)
	fill(t, env, counted, 20)
	var reopened DBI
	mustUpdate(t, env, func(txn *Txn) (err error) {
		reopened, err = txn.OpenDBI("plain", Counted)
		return err
	})
	mustView(t, env, func(txn *Txn) error {
		f, err := txn.Flags(reopened)
		if err != nil || f&Counted != 0 {
			t.Errorf("existing uncounted db reopened with Counted has flags %#x, %v", f, err)
		}
		for _, dbi := range []DBI{plain, reopened} {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			_, err1 := txn.CountAll(dbi)
			_, err2 := txn.CountRange(dbi, nil, nil, 0)
			_, err3 := txn.CountKeys(dbi, []byte("key001"), nil, CountLowerIncl)
			_, err4 := txn.CountValues(dbi, nil, []byte("key010"), 0)
			_, _, err5 := txn.GetRank(dbi, 0)
			_, err6 := txn.KeyRank(dbi, []byte("key001"), nil)
			_, _, err7 := cur.GetRank(0)
			_, err8 := cur.KeyRank([]byte("key001"), nil)
			for i, err := range []error{err1, err2, err3, err4, err5, err6, err7, err8} {
				if !errors.Is(err, Incompatible) {
					t.Errorf("db %d call %d: %v, want Incompatible", dbi, i+1, err)
				}
				var op *OpError
				if !errors.As(err, &op) || !strings.HasPrefix(op.Op, "mdb_") {
					t.Errorf("db %d call %d: %v is not an *OpError naming the C function", dbi, i+1, err)
				}
			}
		}
		// the counted twin answers the same calls
		if n, err := txn.CountAll(counted); err != nil || n != 20 {
			t.Errorf("CountAll(counted) = %d, %v; want 20", n, err)
		}
		return nil
	})
}

// TestCountedKeyRankWithValue: KeyRank with a value on a plain counted
// database counts the key only while it holds exactly that value (nil asks
// for the key, an empty non-nil slice is the empty value); in a DupSort
// database the value names the pair, an empty slice the empty duplicate.
// Through Txn.KeyRank and Cursor.KeyRank (the cursor does not move).
func TestCountedKeyRankWithValue(t *testing.T) {
	big := strings.Repeat("q", 5000) // an overflow value
	for _, flags := range []uint{0, DupSort} {
		env, dbi, _ := cntEnv(t, flags)
		mustUpdate(t, env, func(txn *Txn) error {
			for _, kv := range [][2]string{{"a", ""}, {"b", "x"}, {"c", big}} {
				if flags != 0 && kv[0] == "c" {
					kv[1] = "y" // (DupSort values are at most a key long)
				}
				if err := txn.Put(dbi, []byte(kv[0]), []byte(kv[1]), 0); err != nil {
					return err
				}
			}
			if flags != 0 { // a: {"", "x"}; b: {"x"}; c: {"y"}
				return txn.Put(dbi, []byte("a"), []byte("x"), 0)
			}
			return nil
		})
		type tc struct {
			k   string
			v   []byte
			err bool // NotFound
			r   uint64
		}
		var cases []tc
		if flags == 0 {
			cases = []tc{
				{"a", nil, false, 0}, {"a", []byte{}, false, 0}, {"a", []byte("x"), true, 0},
				{"b", nil, false, 1}, {"b", []byte("x"), false, 1}, {"b", []byte{}, true, 0},
				{"b", []byte("y"), true, 0}, {"b", []byte("xx"), true, 0},
				{"c", []byte(big), false, 2}, {"c", []byte(big[1:]), true, 0},
				{"c", []byte(big[1:] + "r"), true, 0}, {"c", nil, false, 2},
				{"d", nil, true, 0}, {"d", []byte("x"), true, 0},
			}
		} else {
			cases = []tc{
				{"a", nil, false, 0}, {"a", []byte{}, false, 0}, {"a", []byte("x"), false, 1},
				{"a", []byte("y"), true, 0}, {"b", []byte("x"), false, 2}, {"b", []byte{}, true, 0},
				{"c", nil, false, 3}, {"c", []byte("y"), false, 3}, {"d", []byte("x"), true, 0},
			}
		}
		mustView(t, env, func(txn *Txn) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			lk, lv, err := cur.Get(nil, nil, Last)
			if err != nil {
				return err
			}
			for _, c := range cases {
				for via, f := range []func() (uint64, error){
					func() (uint64, error) { return txn.KeyRank(dbi, []byte(c.k), c.v) },
					func() (uint64, error) { return cur.KeyRank([]byte(c.k), c.v) },
				} {
					r, err := f()
					if c.err != IsNotFound(err) || (!c.err && (err != nil || r != c.r)) {
						t.Errorf("flags %#x, via %d: KeyRank(%q, %q) = %d, %v; want rank %d / NotFound %v",
							flags, via, c.k, c.v, r, err, c.r, c.err)
					}
				}
			}
			if k, v, err := cur.Get(nil, nil, GetCurrent); err != nil || !bytes.Equal(k, lk) || !bytes.Equal(v, lv) {
				t.Errorf("the cursor moved: %q %v", k, err)
			}
			return nil
		})
	}
}

// TestCountedErrors: calls on ended transactions and closed cursors, error
// operation names, and an empty database.
func TestCountedErrors(t *testing.T) {
	env, counted, _ := cntEnv(t, DupSort)
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := txn.CountAll(counted); err != nil || n != 0 {
		t.Errorf("CountAll(empty) = %d, %v", n, err)
	}
	if n, err := txn.CountRange(counted, []byte("a"), []byte("z"), CountLowerIncl|CountUpperIncl); err != nil || n != 0 {
		t.Errorf("CountRange(empty) = %d, %v", n, err)
	}
	for _, bad := range []uint{1, 8, 0x10 | CountLowerIncl} {
		if _, err := txn.CountRange(counted, nil, nil, bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("CountRange with flags %#x: %v, want EINVAL", bad, err)
		}
		if _, err := txn.CountKeys(counted, []byte("a"), nil, bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("CountKeys with flags %#x: %v, want EINVAL", bad, err)
		}
	}
	_, _, err = txn.GetRank(counted, 0)
	var op *OpError
	if !IsNotFound(err) || !errors.As(err, &op) || op.Op != "mdb_get_rank" {
		t.Errorf("Rank(0) on an empty db: %v, want mdb_get_rank NotFound", err)
	}
	_, err = txn.KeyRank(counted, []byte("a"), nil)
	if !IsNotFound(err) || !errors.As(err, &op) || op.Op != "mdb_get_key_rank" {
		t.Errorf("KeyRank on an empty db: %v, want mdb_get_key_rank NotFound", err)
	}
	cur, err := txn.OpenCursor(counted)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cur.GetRank(0)
	if !IsNotFound(err) || !errors.As(err, &op) || op.Op != "mdb_cursor_get_rank" {
		t.Errorf("Cursor.GetRank(0) on an empty db: %v", err)
	}
	_, err = cur.KeyRank([]byte("a"), []byte("b"))
	if !IsNotFound(err) || !errors.As(err, &op) || op.Op != "mdb_cursor_key_rank" {
		t.Errorf("Cursor.KeyRank on an empty db: %v", err)
	}
	cur.Close()
	if _, _, err := cur.GetRank(0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("GetRank on a closed cursor: %v, want EINVAL", err)
	}
	if _, err := cur.KeyRank([]byte("a"), nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("KeyRank on a closed cursor: %v, want EINVAL", err)
	}
	txn.Abort()
	if _, err := txn.CountAll(counted); !errors.Is(err, BadTxn) {
		t.Errorf("CountAll after Abort: %v, want BadTxn", err)
	}
	if _, err := txn.CountKeys(counted, nil, nil, 0); !errors.Is(err, BadTxn) {
		t.Errorf("CountKeys after Abort: %v, want BadTxn", err)
	}
	if _, _, err := txn.GetRank(counted, 0); !errors.Is(err, BadTxn) {
		t.Errorf("Rank after Abort: %v, want BadTxn", err)
	}
	if _, err := txn.KeyRank(counted, []byte("a"), nil); !errors.Is(err, BadTxn) {
		t.Errorf("KeyRank after Abort: %v, want BadTxn", err)
	}
}

// TestCountedRawRead: Rank and GetRank honour RawRead like Get does.
func TestCountedRawRead(t *testing.T) {
	env, counted, _ := cntEnv(t, 0)
	fill(t, env, counted, 50)
	mustView(t, env, func(txn *Txn) error {
		k1, v1, err := txn.GetRank(counted, 7)
		if err != nil || string(k1) != "key007" || string(v1) != "val007" {
			t.Fatalf("Rank(7) = %q %q %v", k1, v1, err)
		}
		k1[0], v1[0] = 'X', 'X' // copies: writable, the map is untouched
		txn.RawRead = true
		k2, v2, err := txn.GetRank(counted, 7)
		if err != nil || string(k2) != "key007" || string(v2) != "val007" {
			t.Fatalf("Rank(7) raw = %q %q %v", k2, v2, err)
		}
		k3, _, _ := txn.GetRank(counted, 7)
		if &k2[0] != &k3[0] {
			t.Errorf("RawRead Rank does not return views of the map")
		}
		cur, err := txn.OpenCursor(counted)
		if err != nil {
			return err
		}
		defer cur.Close()
		k4, v4, err := cur.GetRank(7)
		if err != nil || &k4[0] != &k2[0] || &v4[0] != &v2[0] {
			t.Errorf("RawRead GetRank: %q %q %v, not the same view as Rank", k4, v4, err)
		}
		txn.RawRead = false
		k5, _, _ := cur.GetRank(7)
		if &k5[0] == &k2[0] {
			t.Errorf("GetRank without RawRead returned a view")
		}
		return nil
	})
}

// TestCountedAllocs: the counting calls allocate nothing; RawRead rank
// lookups allocate nothing; copying ones allocate exactly the copies.
func TestCountedAllocs(t *testing.T) {
	env, counted, _ := cntEnv(t, DupSort)
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < 300; i++ {
			for j := 0; j < 3; j++ {
				if err := txn.Put(counted, kv("key", i), kv("val", j), 0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	low, high := []byte("key010"), []byte("key200")
	key, val := []byte("key100"), []byte("val002")
	mustView(t, env, func(txn *Txn) error {
		var err, err2 error
		var n uint64
		allocs := func(what string, want float64, fn func()) {
			t.Helper()
			if got := testing.AllocsPerRun(200, fn); got != want {
				t.Errorf("%s: %v allocs/op, want %v", what, got, want)
			}
		}
		allocs("CountAll", 0, func() { n, err = txn.CountAll(counted) })
		allocs("CountRange", 0, func() { n, err = txn.CountRange(counted, low, high, CountLowerIncl) })
		allocs("CountKeys", 0, func() { n, err = txn.CountKeys(counted, low, nil, 0) })
		allocs("CountValues", 0, func() { n, err = txn.CountValues(counted, nil, high, CountUpperIncl) })
		allocs("KeyRank", 0, func() { n, err = txn.KeyRank(counted, key, val) })
		nokey := []byte("nokey") // converted once: under -asan a conversion in the closure allocates
		allocs("KeyRank missing", 0, func() { _, err2 = txn.KeyRank(counted, nokey, nil) })
		if err != nil || n != 302 || !IsNotFound(err2) {
			t.Errorf("KeyRank = %d, %v; missing: %v", n, err, err2)
		}
		txn.RawRead = true
		var k, v []byte
		allocs("Rank raw", 0, func() { k, v, err = txn.GetRank(counted, 302) })
		if err != nil || string(k) != "key100" || string(v) != "val002" {
			t.Errorf("Rank(302) = %q %q %v", k, v, err)
		}
		allocs("Rank past the end", 0, func() { _, _, err2 = txn.GetRank(counted, 900) })
		cur, err := txn.OpenCursor(counted)
		if err != nil {
			return err
		}
		defer cur.Close()
		var r uint64
		allocs("Cursor.GetRank raw", 0, func() { k, v, err = cur.GetRank(r); r = (r + 7) % 900 })
		allocs("Cursor.GetRank past the end", 0, func() { _, _, err2 = cur.GetRank(900) })
		allocs("Cursor.KeyRank", 0, func() { n, err = cur.KeyRank(key, nil) })
		if err != nil || n != 300 || !IsNotFound(err2) {
			t.Errorf("Cursor.KeyRank = %d, %v; past the end: %v", n, err, err2)
		}
		txn.RawRead = false
		allocs("Rank copy", 2, func() { k, v, err = txn.GetRank(counted, 5) })
		allocs("Cursor.GetRank copy", 2, func() { k, v, err = cur.GetRank(5) })
		if err != nil || string(k) != "key001" || string(v) != "val002" {
			t.Errorf("GetRank(5) = %q %q %v", k, v, err)
		}
		return nil
	})
}

// TestCountedCursorRenew: a read cursor that ranked in one snapshot and is
// renewed into a newer one must answer from the new snapshot.
func TestCountedCursorRenew(t *testing.T) {
	env, counted, _ := cntEnv(t, DupSort)
	put := func(from, to int) {
		mustUpdate(t, env, func(txn *Txn) error {
			for i := from; i < to; i++ {
				for j := 0; j < 1+i%4; j++ {
					if err := txn.Put(counted, kv("key", i), kv("v", j), 0); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	entries := func(keys int) (n int) {
		for i := 0; i < keys; i++ {
			n += 1 + i%4
		}
		return n
	}
	put(100, 400)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	cur, err := txn.OpenCursor(counted)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	for round := 0; round < 3; round++ {
		// ranks before the keys added below move once they are in
		for _, r := range []int{0, 10, 200, 500} {
			k, _, err := cur.GetRank(uint64(r))
			if err != nil {
				t.Fatalf("round %d: GetRank(%d): %v", round, r, err)
			}
			want, _, err := txn.GetRank(counted, uint64(r))
			if err != nil || string(k) != string(want) {
				t.Fatalf("round %d: GetRank(%d) = %q, Rank says %q %v", round, r, k, want, err)
			}
		}
		lo := 100 - 30*(round+1)
		put(lo, lo+30) // keys before every key the cursor has seen
		txn.Reset()
		if err := txn.Renew(); err != nil {
			t.Fatal(err)
		}
		if err := cur.Renew(txn); err != nil {
			t.Fatal(err)
		}
		n, err := txn.CountAll(counted)
		if want := entries(400) - entries(lo); err != nil || n != uint64(want) {
			t.Fatalf("round %d: CountAll = %d, %v; want %d", round, n, err, want)
		}
		k, _, err := cur.GetRank(0)
		if err != nil || string(k) != string(kv("key", lo)) {
			t.Fatalf("round %d: GetRank(0) after Renew = %q, %v; want %q", round, k, err, kv("key", lo))
		}
		k, _, err = cur.GetRank(uint64(entries(100) - entries(lo)))
		if err != nil || string(k) != "key100" {
			t.Fatalf("round %d: GetRank of key100's rank after Renew = %q, %v", round, k, err)
		}
	}
}

// TestCountedDeepTree builds a counted tree three branch levels deep, then
// deletes most of it in random chunks (merging pages on every level) and
// checks counts and ranks against a model of which keys are present.
func TestCountedDeepTree(t *testing.T) {
	seed := cntSeed(t)
	rng := rand.New(rand.NewSource(cntSubSeed(seed, "deep")))
	env, counted, _ := cntEnv(t, 0)
	const n = 20000
	// long keys keep branch pages narrow, so the tree gets deep quickly
	pad := strings.Repeat("p", 90)
	val := bytes.Repeat([]byte("v"), 300)
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%08d%s", i, pad)) }
	present := make([]bool, n)
	mustUpdate(t, env, func(txn *Txn) error {
		for _, i := range rng.Perm(n) {
			if err := txn.Put(counted, key(i), val, 0); err != nil {
				return err
			}
			present[i] = true
		}
		return nil
	})
	check := func(txn *Txn, what string) {
		t.Helper()
		var live []int
		for i, ok := range present {
			if ok {
				live = append(live, i)
			}
		}
		if got, err := txn.CountAll(counted); err != nil || got != uint64(len(live)) {
			t.Fatalf("%s: CountAll = %d, %v; want %d", what, got, err, len(live))
		}
		for j := 0; j < 100 && len(live) > 0; j++ {
			r := rng.Intn(len(live))
			k, _, err := txn.GetRank(counted, uint64(r))
			if err != nil || string(k) != string(key(live[r])) {
				t.Fatalf("%s: Rank(%d) = %q, %v; want %q", what, r, k, err, key(live[r]))
			}
			got, err := txn.KeyRank(counted, key(live[r]), nil)
			if err != nil || got != uint64(r) {
				t.Fatalf("%s: KeyRank(%q) = %d, %v; want %d", what, key(live[r]), got, err, r)
			}
			a, b := rng.Intn(n), rng.Intn(n)
			want := 0
			for _, i := range live {
				if i >= a && i < b {
					want++
				}
			}
			got, err = txn.CountRange(counted, key(a), key(b), CountLowerIncl)
			if err != nil || got != uint64(want) {
				t.Fatalf("%s: CountRange([%d, %d)) = %d, %v; want %d", what, a, b, got, err, want)
			}
		}
		if err := txn.Check(); err != nil {
			t.Fatalf("%s: Check: %v", what, err)
		}
	}
	mustView(t, env, func(txn *Txn) error {
		st, err := txn.Stat(counted)
		if err != nil {
			return err
		}
		if st.Depth < 4 {
			t.Errorf("tree depth %d: the test wants three branch levels", st.Depth)
		}
		t.Logf("depth %d, %d branch and %d leaf pages", st.Depth, st.BranchPages, st.LeafPages)
		check(txn, "full")
		return nil
	})
	for round := 0; round < 6; round++ {
		mustUpdate(t, env, func(txn *Txn) error {
			// delete a random chunk of consecutive keys and random singles
			start, size := rng.Intn(n), rng.Intn(n/5)
			for i := start; i < start+size && i < n; i++ {
				if present[i] {
					if err := txn.Del(counted, key(i), nil); err != nil {
						return err
					}
					present[i] = false
				}
			}
			for j := 0; j < n/10; j++ {
				if i := rng.Intn(n); present[i] {
					if err := txn.Del(counted, key(i), nil); err != nil {
						return err
					}
					present[i] = false
				}
			}
			check(txn, fmt.Sprintf("round %d, write txn", round))
			return nil
		})
		mustView(t, env, func(txn *Txn) error {
			check(txn, fmt.Sprintf("round %d, after commit", round))
			return nil
		})
	}
}

// TestCountedSnapshot: a reader keeps the counts of its snapshot while a
// writer changes the database; a new reader sees the new counts.
func TestCountedSnapshot(t *testing.T) {
	env, counted, _ := cntEnv(t, DupSort)
	fill(t, env, counted, 300)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Abort()
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < 100; i++ {
			if err := txn.Del(counted, kv("key", i), kv("val", i)); err != nil {
				return err
			}
		}
		for j := 0; j < 50; j++ {
			if err := txn.Put(counted, kv("key", 250), kv("more", j), 0); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range []struct {
		txn          *Txn
		all, keys    uint64
		rank0        string
		rankOfKey250 uint64
	}{
		{old, 300, 300, "key000", 250},
		{nil, 250, 200, "key100", 150},
	} {
		txn := c.txn
		if txn == nil {
			if txn, err = env.BeginTxn(nil, Readonly); err != nil {
				t.Fatal(err)
			}
			defer txn.Abort()
		}
		all, err1 := txn.CountAll(counted)
		keys, err2 := txn.CountKeys(counted, nil, nil, 0)
		k0, _, err3 := txn.GetRank(counted, 0)
		r, err4 := txn.KeyRank(counted, kv("key", 250), nil)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatal(err)
		}
		if all != c.all || keys != c.keys || string(k0) != c.rank0 || r != c.rankOfKey250 {
			t.Errorf("snapshot %d: all %d keys %d rank0 %q rank(key250) %d; want %d %d %q %d",
				txn.ID(), all, keys, k0, r, c.all, c.keys, c.rank0, c.rankOfKey250)
		}
	}
}

// FuzzCounted interprets its input as a program of writes on a counted
// DupSort database (three bytes per operation: what, key, value) and then
// compares every count over every pair of bounds from a small key universe,
// every rank and every key rank with the model. The seeds run with go test.
func FuzzCounted(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 2, 2, 0, 1, 3})
	f.Add([]byte{3, 5, 0, 0, 5, 9, 1, 5, 9, 2, 5, 0})
	f.Add(bytes.Repeat([]byte{3, 7, 1, 0, 3, 3}, 12))
	f.Add([]byte{3, 1, 0, 3, 2, 0, 3, 3, 0, 2, 2, 0, 1, 1, 7, 3, 15, 200})
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 300 {
			prog = prog[:300]
		}
		env, dbi, _ := cntEnv(t, DupSort)
		m := &cntModel{dup: true}
		key := func(b byte) string { return fmt.Sprintf("key%02d", b%16) }
		val := func(b byte, i int) string { return fmt.Sprintf("v%03d-%02x", i, b) }
		mustUpdate(t, env, func(txn *Txn) error {
			for i := 0; i+2 < len(prog); i += 3 {
				k, v := key(prog[i+1]), val(prog[i+2], 0)
				switch prog[i] % 4 {
				case 0:
					if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
						return err
					}
					m.put(k, v)
				case 1:
					err := txn.Del(dbi, []byte(k), []byte(v))
					if _, ok := m.findPair(k, v); ok != (err == nil) {
						return fmt.Errorf("Del(%q, %q): %v, model has it: %v", k, v, err, ok)
					}
					m.delPair(k, v)
				case 2: // every value of the key
					cur, err := txn.OpenCursor(dbi)
					if err != nil {
						return err
					}
					if _, _, err := cur.Get([]byte(k), nil, Set); err == nil {
						if err := cur.Del(NoDupData); err != nil {
							return err
						}
						m.delKey(k)
					} else if m.hasKey(k) {
						return fmt.Errorf("Set(%q): %v, but the model has the key", k, err)
					}
					cur.Close()
				case 3: // many values at once: a duplicate sub-tree
					for j := 0; j < 40+int(prog[i+2]); j++ {
						v := val(prog[i+2], j)
						if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
							return err
						}
						m.put(k, v)
					}
				}
			}
			return txn.Check()
		})
		mustView(t, env, func(txn *Txn) error {
			n := len(m.ents)
			if got, err := txn.CountAll(dbi); err != nil || got != uint64(n) {
				t.Fatalf("CountAll = %d, %v; want %d", got, err, n)
			}
			bounds := [][]byte{nil}
			for b := byte(0); b < 16; b++ {
				bounds = append(bounds, []byte(key(b)))
			}
			for _, lo := range bounds {
				for _, hi := range bounds {
					for f := uint(0); f < 8; f += 2 {
						wantE, wantK := m.count(lo, hi, f)
						e, err1 := txn.CountRange(dbi, lo, hi, f)
						k, err2 := txn.CountKeys(dbi, lo, hi, f)
						if err1 != nil || err2 != nil || e != wantE || k != wantK {
							t.Fatalf("counts of (%q, %q, %#x) = %d %d (%v %v), want %d %d",
								lo, hi, f, e, k, err1, err2, wantE, wantK)
						}
					}
				}
			}
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			for i, p := range m.ents {
				k, v, err := cur.GetRank(uint64(i))
				if err != nil || string(k) != p.k || string(v) != p.v {
					t.Fatalf("GetRank(%d) = %q %q %v, want %q %q", i, k, v, err, p.k, p.v)
				}
				r, err := txn.KeyRank(dbi, []byte(p.k), []byte(p.v))
				if err != nil || r != uint64(i) {
					t.Fatalf("KeyRank(%q, %q) = %d, %v; want %d", p.k, p.v, r, err, i)
				}
			}
			if _, _, err := txn.GetRank(dbi, uint64(n)); !IsNotFound(err) {
				t.Fatalf("Rank(%d) past the end: %v", n, err)
			}
			return nil
		})
	})
}
