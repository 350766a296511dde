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
func TestRandomOpsAgainstModel(t *testing.T) {
	seed := int64(os.Getpid())
	if s := os.Getenv("DLMDB_MODEL_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (replay with DLMDB_MODEL_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewSource(seed))

	env := openEnv(t, 0)
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
