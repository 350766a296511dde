package difftest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
)

// Freed DB-handle slots against stock LMDB (issue 12, edge (a)).  Stock's
// mdb_dbi_close frees a slot at once and the next registration of any name
// may take it; ours takes it as soon as no live txn has resolved the old
// handle.  With few slots and long-lived readers that do not use the closed
// handles, a program that opens, uses and closes many names must see the
// same answers from both: success wherever stock succeeds, MDB_DBS_FULL
// exactly where stock answers it.

const (
	eDBsFull = -30791 // MDB_DBS_FULL
	eBadDBI  = -30780 // MDB_BAD_DBI
)

// dsSide is one engine's env with a writer and a reader goroutine, each
// locked to its OS thread.
type dsSide struct {
	eng    engine
	env    tEnv
	writer *dhActor
	reader *dhActor
	rtxn   tTxn // the long-lived reader, or nil
	keep   uint32
	open   map[string]uint32 // handles registered and not closed
}

func newDSSides(t *testing.T, sub engine, maxDBs int, wg *sync.WaitGroup) [2]*dsSide {
	dir := t.TempDir()
	var sides [2]*dsSide
	for e, eng := range [2]engine{stockEngine{}, sub} {
		p := filepath.Join(dir, fmt.Sprintf("%d-%s", e, eng.name()))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		env, err := eng.openEnv(p, envOpts{mapSize: 8 << 20, maxDBs: maxDBs})
		if err != nil {
			t.Fatal(err)
		}
		sides[e] = &dsSide{eng: eng, env: env, writer: newDHActor(true, wg), reader: newDHActor(true, wg),
			open: map[string]uint32{}}
	}
	return sides
}

func (s *dsSide) shutdown() {
	if s.rtxn != nil {
		tx := s.rtxn
		s.reader.do(func() { tx.abort() })
		s.rtxn = nil
	}
	close(s.writer.ch)
	close(s.reader.ch)
}

// writeName runs one write txn on s: open name (create or not), put
// key=name val, read it back, then commit or abort.  It answers the open's
// code, the read-back and the commit's code.
func (s *dsSide) writeName(name string, create bool, val string, commit bool) (string, error) {
	var out string
	var ferr error
	s.writer.do(func() {
		tx, err := s.env.begin(nil, 0)
		if err != nil {
			ferr = err
			return
		}
		flags := uint(0)
		if create {
			flags = fCreate
		}
		d, err := tx.openDBI(name, flags)
		if err != nil {
			tx.abort()
			out = "open " + errName(s.eng.code(err))
			return
		}
		if err := tx.put(d, []byte(name), []byte(val), 0); err != nil {
			tx.abort()
			ferr = fmt.Errorf("put %s: %v", name, err)
			return
		}
		got, err := tx.get(d, []byte(name))
		out = fmt.Sprintf("open ok, get %q %s", got, errName(s.eng.code(err)))
		if !commit {
			tx.abort()
			return
		}
		if err := tx.commit(); err != nil {
			ferr = fmt.Errorf("commit %s: %v", name, err)
			return
		}
		s.open[name] = d
	})
	return out, ferr
}

// readKeep: the long-lived reader reads DB "keep" through its handle.
func (s *dsSide) readKeep() string {
	var out string
	s.reader.do(func() {
		v, err := s.rtxn.get(s.keep, []byte("keep"))
		out = fmt.Sprintf("%q %s", v, errName(s.eng.code(err)))
	})
	return out
}

// restartReader ends the long-lived reader and begins another that opens
// "keep" (whose handle is never closed) and nothing else.
func (s *dsSide) restartReader() error {
	var ferr error
	s.reader.do(func() {
		if s.rtxn != nil {
			s.rtxn.abort()
		}
		tx, err := s.env.begin(nil, fReadonly)
		if err != nil {
			ferr = err
			return
		}
		s.rtxn = tx
		if s.keep, err = tx.openDBI("keep", 0); err != nil {
			ferr = fmt.Errorf("reader open keep: %v", err)
		}
	})
	return ferr
}

func TestDBISlotReuseLiveReader(t *testing.T) { dbiSlotReuse(t, subject, 1) }

// dbiSlotReuse runs the schedules with sub against stock; div > 1 takes
// the first 1/div of them.
func dbiSlotReuse(t *testing.T, sub engine, div int) {
	master := masterSeed(t)
	rounds := max(6*testScale(t)/div, 1)
	var full, reused, created int
	for i := 0; i < rounds; i++ {
		seed := master + int64(i)*104729
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			f, r, c := runDSSchedule(t, sub, seed, 150)
			full, reused, created = full+f, reused+r, created+c
		})
		if t.Failed() {
			return
		}
	}
	t.Logf("%d schedules: %d registrations of a new name in a freed slot while a reader lived, %d creates, %d MDB_DBS_FULL on both",
		rounds, reused, created, full)
	if full == 0 || reused == 0 {
		t.Errorf("the schedules did not exercise both a full table (%d) and slot reuse under a live reader (%d)", full, reused)
	}
}

// runDSSchedule: maxdbs 4 ("keep" and three more), a reader that lives
// across many write txns, names drawn from a pool of 12.  Each step a
// write txn opens a name (mostly with MDB_CREATE), puts and reads back,
// commits (mostly) or aborts; after a commit the handle is mostly closed;
// sometimes another open handle is closed, or the reader starts over.
func runDSSchedule(t *testing.T, sub engine, seed int64, nsteps int) (full, reused, created int) {
	const maxDBs = 4
	r := rand.New(rand.NewSource(seed))
	var wg sync.WaitGroup
	sides := newDSSides(t, sub, maxDBs, &wg)
	defer func() {
		for _, s := range sides {
			s.shutdown()
		}
		wg.Wait()
		for _, s := range sides {
			s.env.close()
		}
	}()
	for _, s := range sides {
		if out, err := s.writeName("keep", true, "K", true); err != nil || out != `open ok, get "K" ok` {
			t.Fatalf("%s: create keep: %s %v", s.eng.name(), out, err)
		}
		if err := s.restartReader(); err != nil {
			t.Fatalf("%s: %v", s.eng.name(), err)
		}
	}
	exists := map[string]bool{"keep": true} // committed DBs (the same on both)
	named := map[string]bool{"keep": true}  // names ever registered
	for step := 0; step < nsteps; step++ {
		switch k := r.Intn(10); {
		case k < 7:
			name := fmt.Sprintf("n%02d", r.Intn(12))
			create := r.Intn(5) != 0
			commit := r.Intn(8) != 0
			val := fmt.Sprintf("v%d", step)
			_, wasOpen := sides[0].open[name]
			var outs [2]string
			for e, s := range sides {
				out, err := s.writeName(name, create, val, commit)
				if err != nil {
					t.Fatalf("step %d %s: %s: %v", step, name, s.eng.name(), err)
				}
				outs[e] = out
			}
			if outs[0] != outs[1] {
				t.Fatalf("step %d: write %s create=%v commit=%v: stock %s, ours %s (open handles %v)",
					step, name, create, commit, outs[0], outs[1], sides[0].open)
			}
			switch {
			case outs[0] == "open "+errName(eDBsFull):
				full++
			case outs[0] == "open "+errName(eNotFound):
				if exists[name] || create {
					t.Fatalf("step %d: open %s: NotFound on both, model has it=%v create=%v", step, name, exists[name], create)
				}
			default:
				if want := fmt.Sprintf("open ok, get %q ok", val); outs[0] != want {
					t.Fatalf("step %d: write %s: %s, want %s", step, name, outs[0], want)
				}
				if !wasOpen {
					named[name] = true
					if len(named) > maxDBs {
						reused++ // slots have taken other names while the reader lived
					}
				}
				if commit {
					if !exists[name] {
						created++
					}
					exists[name] = true
					if r.Intn(4) != 0 {
						for _, s := range sides {
							s.env.closeDBI(s.open[name])
							delete(s.open, name)
						}
					}
				}
			}
		case k < 8:
			names := make([]string, 0, len(sides[0].open))
			for n := range sides[0].open {
				if n != "keep" { // the reader's handle stays open
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				continue
			}
			sort.Strings(names)
			name := names[r.Intn(len(names))]
			for _, s := range sides {
				s.env.closeDBI(s.open[name])
				delete(s.open, name)
			}
		case k < 9:
			if a, b := sides[0].readKeep(), sides[1].readKeep(); a != b || a != `"K" ok` {
				t.Fatalf("step %d: reader get keep: stock %s, ours %s", step, a, b)
			}
		default:
			for _, s := range sides {
				if err := s.restartReader(); err != nil {
					t.Fatalf("step %d: %s: %v", step, s.eng.name(), err)
				}
			}
		}
	}
	// every committed DB holds what both engines agree on, read back in a
	// fresh txn that opens, reads and closes each name in turn
	for name := range exists {
		var got [2]string
		for e, s := range sides {
			s.writer.do(func() {
				tx, err := s.env.begin(nil, fReadonly)
				if err != nil {
					got[e] = err.Error()
					return
				}
				defer tx.abort()
				d, err := tx.openDBI(name, 0)
				if err != nil {
					got[e] = "open " + errName(s.eng.code(err))
					return
				}
				v, err := tx.get(d, []byte(name))
				got[e] = fmt.Sprintf("%q %s", v, errName(s.eng.code(err)))
			})
		}
		if got[0] != got[1] {
			t.Fatalf("final read of %s: stock %s, ours %s", name, got[0], got[1])
		}
	}
	return full, reused, created
}

// A reader that resolved a handle which is then closed: stock gives the
// slot to the next name at once and the reader's handle goes on reading
// the old DB (its record was loaded; the slot's comparators are now the
// new DB's, the same here).  Ours does not rename the slot under the
// reader (README, "Differences from stock LMDB"): the new name takes
// another free slot, or MDB_DBS_FULL when there is none, until the reader
// ends.  The reader's reads through its handle answer the same on both.
func TestDBISlotBoundByReader(t *testing.T) { dbiSlotBound(t, subject) }

// dbiSlotBound is TestDBISlotBoundByReader with sub against stock.
func dbiSlotBound(t *testing.T, sub engine) {
	var wg sync.WaitGroup
	sides := newDSSides(t, sub, 2, &wg)
	defer func() {
		for _, s := range sides {
			s.shutdown()
		}
		wg.Wait()
		for _, s := range sides {
			s.env.close()
		}
	}()
	ours := sub.name() != "stock"
	for _, s := range sides {
		if out, err := s.writeName("keep", true, "K", true); err != nil || out != `open ok, get "K" ok` {
			t.Fatalf("%s: create keep: %s %v", s.eng.name(), out, err)
		}
		if err := s.restartReader(); err != nil {
			t.Fatal(err)
		}
		// the reader uses the handle (stock loads the record only then:
		// a handle merely opened would follow the slot's next name)
		if out := s.readKeep(); out != `"K" ok` {
			t.Fatalf("%s: reader get keep: %s", s.eng.name(), out)
		}
		// "keep" closed: stock renames its slot under the reader
		s.env.closeDBI(s.open["keep"])
		delete(s.open, "keep")
	}
	var outs [2]string
	for e, s := range sides {
		out, err := s.writeName("b", true, "B", true)
		if err != nil {
			t.Fatal(err)
		}
		outs[e] = out
	}
	if outs[0] != `open ok, get "B" ok` || outs[1] != outs[0] {
		t.Fatalf("create b (a slot is free on both): stock %s, ours %s", outs[0], outs[1])
	}
	for e, s := range sides {
		out, err := s.writeName("c", true, "C", true)
		if err != nil {
			t.Fatal(err)
		}
		outs[e] = out
	}
	if outs[0] != `open ok, get "C" ok` {
		t.Fatalf("stock: create c in keep's freed slot: %s", outs[0])
	}
	want := outs[0]
	if ours {
		want = "open " + errName(eDBsFull) // the reader still has keep's slot bound
	}
	if outs[1] != want {
		t.Fatalf("ours: create c while the reader has keep's slot bound: %s, want %s", outs[1], want)
	}
	if a, b := sides[0].readKeep(), sides[1].readKeep(); a != `"K" ok` || b != a {
		t.Fatalf("reader's handle of the closed keep: stock %s, ours %s", a, b)
	}
	// the reader ends: the slot is free to ours too
	for _, s := range sides {
		tx := s.rtxn
		s.reader.do(func() { tx.abort() })
		s.rtxn = nil
	}
	if ours {
		out, err := sides[1].writeName("c", true, "C", true)
		if err != nil || out != `open ok, get "C" ok` {
			t.Fatalf("ours: create c after the reader ended: %s %v", out, err)
		}
	}
}
