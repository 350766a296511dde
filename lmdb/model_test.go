package lmdb

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"testing"
)

// testScale reads DLMDB_TEST_SCALE (default 1) to size randomised tests.
func testScale() int {
	if n, err := strconv.Atoi(os.Getenv("DLMDB_TEST_SCALE")); err == nil && n > 0 {
		return n
	}
	return 1
}

// model is the oracle: a plain map plus sorting when order matters.
type model map[string]string

func (m model) sortedKeys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestRandomOpsAgainstModel applies random puts, deletes, nested
// transactions and aborted transactions through the Go API and compares
// every read, cursor scan and seek with a map. The seed is printed so a
// failure can be replayed.
func TestRandomOpsAgainstModel(t *testing.T) { inModes(t, testRandomOpsAgainstModel) }

func testRandomOpsAgainstModel(t *testing.T, envFlags uint) {
	seed := int64(os.Getpid())
	if s := os.Getenv("DLMDB_MODEL_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (replay with DLMDB_MODEL_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))

	env := openEnv(t, envFlags)
	dbi := openDB(t, env, "model", 0)
	committed := model{}

	randKey := func() string {
		// A small key space so updates and deletes hit existing keys.
		return fmt.Sprintf("k%04d", rng.Intn(600))
	}
	randVal := func() string {
		n := rng.Intn(40)
		if rng.Intn(50) == 0 {
			n = 2000 + rng.Intn(6000) // sometimes an overflow-page value
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('a' + rng.Intn(26))
		}
		return string(b)
	}

	// apply runs n random writes in txn, mirroring them into m.
	apply := func(txn *Txn, m model, n int) error {
		for i := 0; i < n; i++ {
			k := randKey()
			switch op := rng.Intn(10); {
			case op < 6:
				v := randVal()
				if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
					return fmt.Errorf("put %s: %w", k, err)
				}
				m[k] = v
			case op < 7:
				err := txn.Put(dbi, []byte(k), []byte("no"), NoOverwrite)
				_, exists := m[k]
				if exists != IsErrno(err, KeyExist) || (!exists && err != nil) {
					return fmt.Errorf("NoOverwrite %s (exists=%v): %v", k, exists, err)
				}
				if !exists {
					m[k] = "no"
				}
			default:
				err := txn.Del(dbi, []byte(k), nil)
				_, exists := m[k]
				if exists && err != nil || !exists && !IsNotFound(err) {
					return fmt.Errorf("del %s (exists=%v): %v", k, exists, err)
				}
				delete(m, k)
			}
		}
		return nil
	}

	// verify compares everything visible in txn with m.
	verify := func(txn *Txn, m model, where string) {
		t.Helper()
		keys := m.sortedKeys()
		st, err := txn.Stat(dbi)
		if err != nil || st.Entries != uint64(len(m)) {
			t.Fatalf("%s: Stat %+v, %v; model has %d", where, st, err, len(m))
		}
		for i := 0; i < 30; i++ {
			k := randKey()
			v, err := txn.Get(dbi, []byte(k))
			want, ok := m[k]
			if ok != (err == nil) || ok && string(v) != want {
				t.Fatalf("%s: Get %s = %.20q, %v; model %v %.20q", where, k, v, err, ok, want)
			}
		}
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			t.Fatal(err)
		}
		defer cur.Close()
		i := 0
		for k, v, err := cur.Get(nil, nil, First); !IsNotFound(err); k, v, err = cur.Get(nil, nil, Next) {
			if err != nil {
				t.Fatalf("%s: scan: %v", where, err)
			}
			if i >= len(keys) || string(k) != keys[i] || string(v) != m[keys[i]] {
				t.Fatalf("%s: scan item %d is %q", where, i, k)
			}
			i++
		}
		if i != len(keys) {
			t.Fatalf("%s: scan saw %d items, model %d", where, i, len(keys))
		}
		for j := 0; j < 20; j++ {
			probe := randKey() + "!"[:rng.Intn(2)]
			at := sort.SearchStrings(keys, probe)
			k, _, err := cur.Get([]byte(probe), nil, SetRange)
			if at == len(keys) {
				if !IsNotFound(err) {
					t.Fatalf("%s: SetRange %s past end: %q %v", where, probe, k, err)
				}
				continue
			}
			if err != nil || string(k) != keys[at] {
				t.Fatalf("%s: SetRange %s = %q %v, want %s", where, probe, k, err, keys[at])
			}
		}
	}

	rounds := 120 * testScale()
	for r := 0; r < rounds; r++ {
		where := fmt.Sprintf("round %d", r)
		next := model{}
		for k, v := range committed {
			next[k] = v
		}
		abort := rng.Intn(5) == 0
		err := env.Update(func(txn *Txn) error {
			if err := apply(txn, next, 1+rng.Intn(80)); err != nil {
				return err
			}
			verify(txn, next, where+" (inside write txn)")
			// A nested transaction that commits or rolls back.
			child := model{}
			for k, v := range next {
				child[k] = v
			}
			keepChild := rng.Intn(2) == 0
			err := txn.Sub(func(sub *Txn) error {
				if err := apply(sub, child, 1+rng.Intn(30)); err != nil {
					return err
				}
				if !keepChild {
					return errRollback
				}
				return nil
			})
			if keepChild && err != nil || !keepChild && err != errRollback {
				return fmt.Errorf("sub: %v", err)
			}
			if keepChild {
				next = child
			}
			verify(txn, next, where+" (after sub)")
			if abort {
				return errRollback
			}
			return nil
		})
		if abort && err != errRollback || !abort && err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if !abort {
			committed = next
		}
		mustView(t, env, func(txn *Txn) error {
			verify(txn, committed, where+" (read txn)")
			return nil
		})
	}
	if err := env.Check(); err != nil {
		t.Fatalf("Check after random ops: %v", err)
	}
}

var errRollback = fmt.Errorf("rollback requested by test")

// FuzzPutGet stores arbitrary keys and values and reads them back through
// Txn.Get and a cursor, checking the size limits.
func FuzzPutGet(f *testing.F) {
	for _, seed := range [][2][]byte{
		{[]byte("k"), []byte("v")},
		{[]byte("k"), nil},
		{nil, []byte("v")},
		{bytes.Repeat([]byte{0xff}, 511), []byte{0}},
		{bytes.Repeat([]byte{1}, 512), []byte("too long")},
		{[]byte{0, 0, 0}, bytes.Repeat([]byte("big"), 5000)},
	} {
		f.Add(seed[0], seed[1])
	}
	env := openEnv(f, 0)
	dbi := openDB(f, env, "", 0)
	f.Fuzz(func(t *testing.T, key, val []byte) {
		err := env.Update(func(txn *Txn) error {
			err := txn.Put(dbi, key, val, 0)
			if len(key) == 0 || len(key) > env.MaxKeySize() {
				if !IsErrno(err, BadValSize) {
					t.Fatalf("Put with %d-byte key = %v, want BadValSize", len(key), err)
				}
				return nil
			}
			if err != nil {
				return err
			}
			got, err := txn.Get(dbi, key)
			if err != nil || !bytes.Equal(got, val) {
				t.Fatalf("Get = %d bytes, %v; want %d bytes", len(got), err, len(val))
			}
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			k, v, err := cur.Get(key, nil, SetKey)
			if err != nil || !bytes.Equal(k, key) || !bytes.Equal(v, val) {
				t.Fatalf("SetKey: %v", err)
			}
			return txn.Del(dbi, key, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// dupModel is the oracle for a DupSort database: key -> sorted values.
type dupModel map[string][]string

func (m dupModel) clone() dupModel {
	out := make(dupModel, len(m))
	for k, vs := range m {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func (m dupModel) has(k, v string) bool {
	vs := m[k]
	i := sort.SearchStrings(vs, v)
	return i < len(vs) && vs[i] == v
}

func (m dupModel) add(k, v string) {
	vs := m[k]
	i := sort.SearchStrings(vs, v)
	if i < len(vs) && vs[i] == v {
		return
	}
	vs = append(vs, "")
	copy(vs[i+1:], vs[i:])
	vs[i] = v
	m[k] = vs
}

func (m dupModel) remove(k, v string) {
	vs := m[k]
	i := sort.SearchStrings(vs, v)
	if i < len(vs) && vs[i] == v {
		vs = append(vs[:i], vs[i+1:]...)
	}
	if len(vs) == 0 {
		delete(m, k)
	} else {
		m[k] = vs
	}
}

func (m dupModel) count() (n int) {
	for _, vs := range m {
		n += len(vs)
	}
	return n
}

// TestRandomDupOpsAgainstModel drives a DupSort database with random
// puts, NoDupData puts, value deletes and whole-key deletes, then checks
// every duplicate-aware cursor operation against the model.
func TestRandomDupOpsAgainstModel(t *testing.T) { inModes(t, testRandomDupOpsAgainstModel) }

func testRandomDupOpsAgainstModel(t *testing.T, envFlags uint) {
	env := openEnv(t, envFlags)
	requireDupSort(t, env, 0)
	seed := int64(os.Getpid()) + 7
	if s := os.Getenv("DLMDB_MODEL_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (replay with DLMDB_MODEL_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	dbi := openDB(t, env, "dups", DupSort)
	committed := dupModel{}
	randKey := func() string { return fmt.Sprintf("key%02d", rng.Intn(40)) }
	randVal := func() string { return fmt.Sprintf("val%04d", rng.Intn(400)) }

	apply := func(txn *Txn, m dupModel, n int) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			k, v := randKey(), randVal()
			switch op := rng.Intn(20); {
			case op == 0 && rng.Intn(8) == 0:
				// A burst of values under one key pushes its duplicates
				// out of the leaf into a sub-database.
				for j := 0; j < 150; j++ {
					v := randVal()
					if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
						return fmt.Errorf("burst put %s/%s: %w", k, v, err)
					}
					m.add(k, v)
				}
			case op < 11:
				if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
					return fmt.Errorf("put %s/%s: %w", k, v, err)
				}
				m.add(k, v)
			case op < 13:
				err := cur.Put([]byte(k), []byte(v), NoDupData)
				if m.has(k, v) != IsErrno(err, KeyExist) || !m.has(k, v) && err != nil {
					return fmt.Errorf("NoDupData %s/%s (has=%v): %v", k, v, m.has(k, v), err)
				}
				m.add(k, v)
			case op < 18:
				if vs := m[k]; len(vs) > 0 && rng.Intn(3) > 0 {
					v = vs[rng.Intn(len(vs))] // mostly delete values that exist
				}
				err := txn.Del(dbi, []byte(k), []byte(v))
				if m.has(k, v) && err != nil || !m.has(k, v) && !IsNotFound(err) {
					return fmt.Errorf("del %s/%s (has=%v): %v", k, v, m.has(k, v), err)
				}
				m.remove(k, v)
			default:
				_, _, err := cur.Get([]byte(k), nil, Set)
				if _, ok := m[k]; ok != (err == nil) {
					return fmt.Errorf("Set %s (present=%v): %v", k, ok, err)
				}
				if err == nil {
					if err := cur.Del(NoDupData); err != nil {
						return fmt.Errorf("del all of %s: %w", k, err)
					}
					delete(m, k)
				}
			}
		}
		return nil
	}

	verify := func(txn *Txn, m dupModel, where string) {
		t.Helper()
		st, err := txn.Stat(dbi)
		if err != nil || st.Entries != uint64(m.count()) {
			t.Fatalf("%s: Stat %+v, %v; model has %d values", where, st, err, m.count())
		}
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			t.Fatal(err)
		}
		defer cur.Close()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// Key by key with NextNoDup, values with NextDup, counts with Count.
		ki := 0
		for k, v, err := cur.Get(nil, nil, First); !IsNotFound(err); k, v, err = cur.Get(nil, nil, NextNoDup) {
			if err != nil || ki >= len(keys) || string(k) != keys[ki] {
				t.Fatalf("%s: key %d = %q, %v; model %v", where, ki, k, err, keys[ki:])
			}
			want := m[keys[ki]]
			if n, err := cur.Count(); err != nil || n != uint64(len(want)) {
				t.Fatalf("%s: Count(%s) = %d, %v; want %d", where, k, n, err, len(want))
			}
			got := []string{string(v)}
			for {
				_, v, err := cur.Get(nil, nil, NextDup)
				if IsNotFound(err) {
					break
				}
				if err != nil {
					t.Fatalf("%s: NextDup in %s: %v", where, k, err)
				}
				got = append(got, string(v))
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: values of %s = %v, want %v", where, k, got, want)
			}
			// LastDup then PrevDup back to the start.
			if _, v, err := cur.Get(nil, nil, LastDup); err != nil || string(v) != want[len(want)-1] {
				t.Fatalf("%s: LastDup %s = %q, %v", where, k, v, err)
			}
			if _, v, err := cur.Get(nil, nil, FirstDup); err != nil || string(v) != want[0] {
				t.Fatalf("%s: FirstDup %s = %q, %v", where, k, v, err)
			}
			cur.Get(nil, nil, LastDup)
			ki++
		}
		if ki != len(keys) {
			t.Fatalf("%s: saw %d keys, model %d", where, ki, len(keys))
		}
		// Point lookups.
		for j := 0; j < 40; j++ {
			k, v := randKey(), randVal()
			_, _, err := cur.Get([]byte(k), []byte(v), GetBoth)
			if m.has(k, v) != (err == nil) {
				t.Fatalf("%s: GetBoth %s/%s = %v, model has=%v", where, k, v, err, m.has(k, v))
			}
			vs := m[k]
			at := sort.SearchStrings(vs, v)
			_, got, err := cur.Get([]byte(k), []byte(v), GetBothRange)
			switch {
			case at == len(vs) && !IsNotFound(err):
				t.Fatalf("%s: GetBothRange %s/%s = %q, %v; want NotFound", where, k, v, got, err)
			case at < len(vs) && (err != nil || string(got) != vs[at]):
				t.Fatalf("%s: GetBothRange %s/%s = %q, %v; want %s", where, k, v, got, err, vs[at])
			}
			first, err := txn.Get(dbi, []byte(k))
			if len(vs) == 0 && !IsNotFound(err) || len(vs) > 0 && (err != nil || string(first) != vs[0]) {
				t.Fatalf("%s: Get %s = %q, %v; model %v", where, k, first, err, vs)
			}
		}
	}

	rounds := 60 * testScale()
	for r := 0; r < rounds; r++ {
		where := fmt.Sprintf("round %d", r)
		next := committed.clone()
		abort := rng.Intn(6) == 0
		err := env.Update(func(txn *Txn) error {
			if err := apply(txn, next, 1+rng.Intn(100)); err != nil {
				return err
			}
			verify(txn, next, where+" (write txn)")
			if abort {
				return errRollback
			}
			return nil
		})
		if abort && err != errRollback || !abort && err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if !abort {
			committed = next
		}
		mustView(t, env, func(txn *Txn) error {
			verify(txn, committed, where+" (read txn)")
			return nil
		})
	}
	if err := env.Check(); err != nil {
		t.Fatalf("Check after random dup ops: %v", err)
	}
}

// runCursorProgram interprets prog as a program of cursor and transaction
// calls with arbitrary operation codes and flags on the DupSort database
// dbi, all in one write transaction. Whatever the calls return, nothing may
// crash, and afterwards the database must pass the checker and agree with
// its own statistics.
func runCursorProgram(t testing.TB, env *Env, dbi DBI, prog []byte) {
	t.Helper()
	next := func() byte {
		if len(prog) == 0 {
			return 0
		}
		b := prog[0]
		prog = prog[1:]
		return b
	}
	item := func() []byte { // short keys and values from a tiny alphabet
		n := int(next() % 4)
		out := make([]byte, n)
		for i := range out {
			out[i] = 'a' + next()%3
		}
		return out
	}
	flagsFrom := func(b byte) uint {
		all := []uint{NoOverwrite, NoDupData, Current, Append, AppendDup}
		var fl uint
		for i, v := range all {
			if b&(1<<i) != 0 {
				fl |= v
			}
		}
		return fl
	}
	err := env.Update(func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		for len(prog) > 0 {
			switch next() % 8 {
			case 0:
				cur.Get(item(), item(), uint(next()%20))
			case 1:
				cur.Put(item(), item(), flagsFrom(next()))
			case 2:
				cur.Del(uint(next()&1) * NoDupData)
			case 3:
				txn.Put(dbi, item(), item(), flagsFrom(next()))
			case 4:
				txn.Del(dbi, item(), item())
			case 5:
				txn.Get(dbi, item())
			case 6:
				cur.Count()
			case 7:
				txn.Sub(func(sub *Txn) error {
					sub.Put(dbi, item(), item(), 0)
					if next()&1 == 0 {
						return errRollback
					}
					return nil
				})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	mustView(t, env, func(txn *Txn) error {
		if err := txn.Check(); err != nil {
			t.Fatalf("Check: %v", err)
		}
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		n := uint64(0)
		for _, _, err := cur.Get(nil, nil, First); err == nil; _, _, err = cur.Get(nil, nil, Next) {
			n++
		}
		if n != st.Entries {
			t.Fatalf("scan counted %d items, Stat says %d", n, st.Entries)
		}
		return nil
	})
}

// FuzzCursorOps runs one cursor program per input on a fresh environment,
// so a failure reproduces from its input alone.
func FuzzCursorOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	f.Add([]byte("\x01a\x01b\x02\x00\x03\x08\x04\x40\x05\x20\x06\x00\x07\x01"))
	f.Add(bytes.Repeat([]byte{1, 7, 3, 9, 4, 0x40, 2, 12}, 20))
	f.Fuzz(func(t *testing.T, prog []byte) {
		env := openEnv(t, 0)
		runCursorProgram(t, env, openDB(t, env, "fuzz", DupSort), prog)
	})
}

// TestRandomCursorPrograms runs many seeded random cursor programs one
// after another on the same database, so that state (sub-databases, free
// pages) builds up between them. The seed and program number identify a
// failure.
func TestRandomCursorPrograms(t *testing.T) {
	// Arbitrary flag and op combinations are where engine crashes hide, so
	// this runs in a child process, with the seed chosen (and logged) here.
	if os.Getenv("DLMDB_MODEL_SEED") == "" {
		t.Setenv("DLMDB_MODEL_SEED", strconv.Itoa(os.Getpid()+13))
	}
	t.Logf("seed %s", os.Getenv("DLMDB_MODEL_SEED"))
	inModes(t, func(t *testing.T, envFlags uint) {
		inChild(t, func(t *testing.T) { testRandomCursorPrograms(t, envFlags) })
	})
}

func testRandomCursorPrograms(t *testing.T, envFlags uint) {
	seed := int64(os.Getpid()) + 13
	if s := os.Getenv("DLMDB_MODEL_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (replay with DLMDB_MODEL_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))
	env := openEnv(t, envFlags)
	dbi := openDB(t, env, "programs", DupSort)
	for i := 0; i < 300*testScale(); i++ {
		prog := make([]byte, rng.Intn(200))
		rng.Read(prog)
		t.Run(fmt.Sprint("program", i), func(t *testing.T) {
			runCursorProgram(t, env, dbi, prog)
		})
		if t.Failed() {
			t.Fatalf("program %d failed: %x", i, prog)
		}
	}
}
