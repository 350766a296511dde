package lmdb

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// In-memory envs (InMemory) at the edge of their map: a txn that runs out
// of map (on a Put, or only at its Commit) ends with MapFull and leaves the
// last committed state exactly; SetMapSize grows the map and the work goes
// on. Each test runs on a file env too, for comparison (inModes).

// mfState is the model: DB name -> key -> value for the plain DBs; for
// the DupSort one key -> sorted values.
type mfState struct {
	plain map[string][]byte
	dups  map[string][]string
}

func (s mfState) clone() mfState {
	c := mfState{plain: map[string][]byte{}, dups: map[string][]string{}}
	for k, v := range s.plain {
		c.plain[k] = v
	}
	for k, v := range s.dups {
		c.dups[k] = slices.Clone(v)
	}
	return c
}

type mfEnv struct {
	t     *testing.T
	env   *Env
	plain DBI
	dups  DBI
}

// openMF opens an env of size bytes (in memory with InMemory in flags,
// else in a fresh directory) with a plain and a DupSort DB.
func openMF(t *testing.T, flags uint, size int64) *mfEnv {
	t.Helper()
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	if err := env.SetMaxDBs(4); err != nil {
		t.Fatal(err)
	}
	if err := env.SetMapSize(size); err != nil {
		t.Fatal(err)
	}
	path := ""
	if flags&InMemory == 0 {
		path = t.TempDir()
	}
	if err := env.Open(path, flags|NoSync, 0o600); err != nil {
		t.Fatal(err)
	}
	m := &mfEnv{t: t, env: env}
	mustUpdate(t, env, func(txn *Txn) (err error) {
		if m.plain, err = txn.OpenDBI("plain", Create); err != nil {
			return err
		}
		m.dups, err = txn.OpenDBI("dups", Create|DupSort)
		return err
	})
	return m
}

func mfKey(i int) []byte { return []byte(fmt.Sprintf("key%07d", i)) }

// mfVal: the value of the i-th put; every seventh one is big (overflow
// pages), the rest small.
func mfVal(i int) []byte {
	n := 60 + i%40
	if i%7 == 3 {
		n = 3000 + (i%5)*1500
	}
	return bytes.Repeat([]byte{byte('a' + i%26)}, n)
}

// put stores the i-th pair: in the plain DB, and one duplicate of one of
// 50 keys in the DupSort DB; the model changes only on success.
func (m *mfEnv) put(txn *Txn, s mfState, i int) error {
	if err := txn.Put(m.plain, mfKey(i), mfVal(i), 0); err != nil {
		return err
	}
	dk, dv := fmt.Sprintf("d%02d", i%50), fmt.Sprintf("v%07d", i)
	if err := txn.Put(m.dups, []byte(dk), []byte(dv), 0); err != nil {
		return err
	}
	s.plain[string(mfKey(i))] = mfVal(i)
	s.dups[dk] = append(s.dups[dk], dv)
	slices.Sort(s.dups[dk])
	return nil
}

// verify compares the committed state with s: every pair in both DBs,
// Stat's entry counts, and the structural checker.
func (m *mfEnv) verify(s mfState, what string) {
	m.t.Helper()
	err := m.env.View(func(txn *Txn) error {
		got := map[string][]byte{}
		if err := mfScan(txn, m.plain, func(k, v []byte) { got[string(k)] = v }); err != nil {
			return err
		}
		if len(got) != len(s.plain) {
			return fmt.Errorf("plain DB: %d entries, want %d", len(got), len(s.plain))
		}
		for k, v := range s.plain {
			if !bytes.Equal(got[k], v) {
				return fmt.Errorf("plain DB: %s = %d bytes, want %d", k, len(got[k]), len(v))
			}
		}
		gotDups := map[string][]string{}
		n := 0
		if err := mfScan(txn, m.dups, func(k, v []byte) { gotDups[string(k)] = append(gotDups[string(k)], string(v)); n++ }); err != nil {
			return err
		}
		want := 0
		for k, vs := range s.dups {
			want += len(vs)
			if !slices.Equal(gotDups[k], vs) {
				return fmt.Errorf("dup DB: key %s holds %d values, want %d", k, len(gotDups[k]), len(vs))
			}
		}
		if n != want || len(gotDups) != len(s.dups) {
			return fmt.Errorf("dup DB: %d values under %d keys, want %d under %d", n, len(gotDups), want, len(s.dups))
		}
		for _, c := range []struct {
			dbi  DBI
			want int
		}{{m.plain, len(s.plain)}, {m.dups, want}} {
			st, err := txn.Stat(c.dbi)
			if err != nil || st.Entries != uint64(c.want) {
				return fmt.Errorf("Stat: %v entries, %v; want %d", st, err, c.want)
			}
		}
		return txn.Check()
	})
	if err != nil {
		m.t.Fatalf("%s: %v", what, err)
	}
}

func mfScan(txn *Txn, dbi DBI, fn func(k, v []byte)) error {
	c, err := txn.OpenCursor(dbi)
	if err != nil {
		return err
	}
	defer c.Close()
	for op := uint(First); ; op = Next {
		k, v, err := c.Get(nil, nil, op)
		if IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		fn(k, v)
	}
}

// fill runs write txns of batch puts from *next on until one fails with
// MapFull (at a Put: the txn is aborted; or at its Commit). It returns
// where it failed ("put" or "commit"); s holds the committed state.
func (m *mfEnv) fill(s *mfState, next *int, batch int) string {
	m.t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for txns := 0; ; txns++ {
		if txns > 100000 {
			m.t.Fatal("the map never filled")
		}
		txn, err := m.env.BeginTxn(nil, 0)
		if err != nil {
			m.t.Fatal(err)
		}
		pending := s.clone()
		for i := 0; i < batch; i++ {
			if err := m.put(txn, pending, *next+i); err != nil {
				if !IsMapFull(err) {
					m.t.Fatalf("put %d: %v, want MapFull or success", *next+i, err)
				}
				// the txn is spoilt: no more puts, no commit
				if err := txn.Put(m.plain, []byte("other"), []byte("v"), 0); err == nil {
					m.t.Error("a put after MapFull in the same txn succeeded")
				}
				if err := txn.Commit(); err == nil {
					m.t.Fatal("a txn whose Put hit MapFull committed")
				}
				return "put"
			}
		}
		if err := txn.Commit(); err != nil {
			if !IsMapFull(err) {
				m.t.Fatalf("commit: %v, want MapFull or success", err)
			}
			return "commit"
		}
		*s, *next = pending, *next+batch
	}
}

// grow doubles the map size and checks Info reports it.
func (m *mfEnv) grow() {
	m.t.Helper()
	info, err := m.env.Info()
	if err != nil {
		m.t.Fatal(err)
	}
	if err := m.env.SetMapSize(info.MapSize * 2); err != nil {
		m.t.Fatalf("SetMapSize(%d): %v", info.MapSize*2, err)
	}
	if info2, err := m.env.Info(); err != nil || info2.MapSize != info.MapSize*2 {
		m.t.Fatalf("after SetMapSize(%d): Info %+v, %v", info.MapSize*2, info2, err)
	}
}

// TestMapFullOnPutAndGrowth fills a small map until a Put answers MapFull,
// checks that the aborted txn left the committed state exactly, grows the
// map, goes on to the next MapFull and grows again, three times.
func TestMapFullOnPutAndGrowth(t *testing.T) {
	inModes(t, func(t *testing.T, flags uint) {
		m := openMF(t, flags, 256<<10)
		s := mfState{plain: map[string][]byte{}, dups: map[string][]string{}}
		next, fullOnPut := 0, 0
		for round := 0; round < 4; round++ {
			before := len(s.plain)
			where := m.fill(&s, &next, 40)
			if where == "put" {
				fullOnPut++
			}
			m.verify(s, fmt.Sprintf("round %d, after MapFull at a %s", round, where))
			if round > 0 && len(s.plain) <= before {
				t.Fatalf("round %d: the grown map took no more pairs (%d before, %d now)", round, before, len(s.plain))
			}
			m.grow()
			m.verify(s, fmt.Sprintf("round %d, after the map grew", round))
		}
		if fullOnPut == 0 {
			t.Error("no round ended with MapFull at a Put")
		}
		t.Logf("%d pairs stored, %d of 4 rounds full at a Put", len(s.plain), fullOnPut)
	})
}

// TestMapFullOnCommit: a txn whose every Put succeeded but whose Commit
// needs more map than is left. Engines allocate deterministically, so the
// test replays one history on fresh envs: the largest number of single
// small puts a txn takes before a Put fails is found first, then txns of
// that many puts and fewer are committed, each on a fresh env with the
// same history, until a commit fails with MapFull. That env must then hold
// the previous state exactly, grow, and take the failed txn's puts.
func TestMapFullOnCommit(t *testing.T) {
	inModes(t, func(t *testing.T, flags uint) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		// history: big txns until the map is nearly full (a Put fails),
		// then the last state is where the probe txns start
		build := func() (*mfEnv, mfState, int) {
			m := openMF(t, flags, 192<<10)
			s := mfState{plain: map[string][]byte{}, dups: map[string][]string{}}
			next := 0
			m.fill(&s, &next, 25)
			return m, s, next
		}
		// probe: one txn of n small puts (into the plain DB only, which the
		// txn dirties as it goes; the commit must still write the DB's
		// record and the free list)
		probe := func(m *mfEnv, s mfState, next, n int) (putsOK int, commitErr error) {
			txn, err := m.env.BeginTxn(nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				err := txn.Put(m.plain, mfKey(next+i), []byte("small value"), 0)
				if err != nil {
					if !IsMapFull(err) {
						t.Fatalf("probe put: %v", err)
					}
					txn.Abort()
					return i, nil
				}
			}
			return n, txn.Commit()
		}
		m, s, next := build()
		limit, _ := probe(m, s, next, 1<<20) // puts that fit in one txn
		if limit == 0 {
			t.Fatal("after the fill no single put fits: nothing to probe")
		}
		found := -1
		for n := limit; n >= 1 && n > limit-200 && found < 0; n-- {
			m, s, next = build()
			ok, err := probe(m, s, next, n)
			if ok != n {
				t.Fatalf("replay: %d of %d puts fit, the first run took %d (allocation not deterministic?)", ok, n, limit)
			}
			if err == nil {
				continue
			}
			if !IsMapFull(err) {
				t.Fatalf("commit of %d puts: %v, want MapFull or success", n, err)
			}
			found = n
		}
		if found < 0 {
			t.Fatalf("no txn of up to %d puts failed at its commit", limit)
		}
		m.verify(s, fmt.Sprintf("after the commit of %d puts failed", found))
		m.grow()
		mustUpdate(t, m.env, func(txn *Txn) error {
			for i := 0; i < found; i++ {
				if err := txn.Put(m.plain, mfKey(next+i), []byte("small value"), 0); err != nil {
					return err
				}
				s.plain[string(mfKey(next+i))] = []byte("small value")
			}
			return nil
		})
		m.verify(s, "after the map grew and the txn was redone")
		t.Logf("puts fit in one txn: %d; the commit failed with %d", limit, found)
	})
}

// TestInMemoryCreatesNoFiles: in-memory envs, used for everything (named
// DBs of several kinds, nested txns committed and aborted, values of
// overflow size, a map grown, read txns reset and renewed, a second env
// at once), add nothing to the working directory nor to os.TempDir.
func TestInMemoryCreatesNoFiles(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	// a temp directory of this test's own: /tmp is shared with the other
	// test packages that go test runs at the same time
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	if os.TempDir() != tmp {
		t.Fatalf("os.TempDir %q does not follow TMPDIR %q", os.TempDir(), tmp)
	}
	list := func(dir string) []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}
	tmpBefore := list(tmp)
	for round := 0; round < 2; round++ {
		envs := []*Env{}
		for i := 0; i < 2; i++ {
			env, err := NewEnv()
			if err != nil {
				t.Fatal(err)
			}
			envs = append(envs, env)
			if err := env.SetMaxDBs(8); err != nil {
				t.Fatal(err)
			}
			if err := env.SetMapSize(4 << 20); err != nil {
				t.Fatal(err)
			}
			if err := env.Open("", InMemory, 0o600); err != nil {
				t.Fatal(err)
			}
			if p, err := env.Path(); err != nil || p != "" {
				t.Fatalf("Path of an in-memory env: %q, %v", p, err)
			}
		}
		big := bytes.Repeat([]byte("0123456789"), 3000) // overflow pages
		for i, env := range envs {
			var plain, dups DBI
			mustUpdate(t, env, func(txn *Txn) (err error) {
				if plain, err = txn.OpenDBI("plain", Create); err != nil {
					return err
				}
				if dups, err = txn.OpenDBI("dups", Create|DupSort); err != nil {
					return err
				}
				for k := 0; k < 200; k++ {
					if err := txn.Put(plain, kv("k", k), big[:100+k*100], 0); err != nil {
						return err
					}
					if err := txn.Put(dups, kv("d", k%7), kv("v", k), 0); err != nil {
						return err
					}
				}
				// a nested txn that commits, one that aborts
				if err := txn.Sub(func(c *Txn) error { return c.Put(plain, []byte("nested"), big, 0) }); err != nil {
					return err
				}
				_ = txn.Sub(func(c *Txn) error {
					if err := c.Put(plain, []byte("gone"), big, 0); err != nil {
						return err
					}
					return fmt.Errorf("abort on purpose")
				})
				return nil
			})
			// grow, then more big values than the first map holds
			if err := env.SetMapSize(16 << 20); err != nil {
				t.Fatal(err)
			}
			mustUpdate(t, env, func(txn *Txn) error {
				for k := 0; k < 160; k++ {
					if err := txn.Put(plain, kv("big", k), big, 0); err != nil {
						return err
					}
				}
				return nil
			})
			rtxn, err := env.BeginTxn(nil, Readonly)
			if err != nil {
				t.Fatal(err)
			}
			for r := 0; r < 3; r++ {
				v, err := rtxn.Get(plain, []byte("nested"))
				if err != nil || !bytes.Equal(v, big) {
					t.Fatalf("env %d: nested value: %d bytes, %v", i, len(v), err)
				}
				if _, err := rtxn.Get(plain, []byte("gone")); !IsNotFound(err) {
					t.Fatalf("env %d: the aborted nested txn's value: %v, want NotFound", i, err)
				}
				st, err := rtxn.Stat(plain)
				if err != nil || st.Entries != 361 || st.OverflowPages*uint64(st.PSize) < 4<<20 {
					t.Fatalf("env %d: Stat %+v, %v; want 361 entries, over 4 MiB in overflow pages", i, st, err)
				}
				rtxn.Reset()
				if err := rtxn.Renew(); err != nil {
					t.Fatal(err)
				}
			}
			rtxn.Abort()
			if err := env.Sync(true); err != nil {
				t.Fatalf("Sync: %v", err)
			}
		}
		for _, env := range envs {
			env.Close()
		}
		if got := list("."); len(got) != 0 {
			t.Fatalf("round %d: the working directory gained %v", round, got)
		}
		var gained []string
		for _, n := range list(tmp) {
			if !slices.Contains(tmpBefore, n) {
				gained = append(gained, n)
			}
		}
		if len(gained) != 0 {
			t.Fatalf("round %d: os.TempDir (%s) gained %v", round, tmp, gained)
		}
	}
	if abs, _ := filepath.Abs("."); abs != work {
		if r1, e1 := filepath.EvalSymlinks(abs); e1 != nil || r1 != mustEval(t, work) {
			t.Fatalf("the test ran in %s, not in %s", abs, work)
		}
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
