package difftest

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// DBI handle lifetimes against stock LMDB (issue 12, finding 3): named DBs
// are created, filled, dropped (del 0 and 1), recreated and closed by write
// txns that commit or abort, nested up to three deep, while up to three read
// txns of earlier and later snapshots begin, reset, renew, commit and abort,
// open the DBs by name and use the handles (Get, a cursor walk, Stat,
// Flags).  One scripted schedule drives both engines step by step; each
// step runs on a goroutine of its actor (the writer's is locked to its OS
// thread, a reader's step runs on one of three goroutines, chosen per step)
// first on stock, then on ours, and both answers must equal each other and
// the snapshot model: a txn finds a DB exactly when its view (snapshot, or
// the write txn's own changes) holds it.
//
// Stock LMDB keeps one handle table for the process and documents that
// mdb_dbi_open must not run in two txns at once, nor a handle be closed
// while another txn uses it; outside that contract its answers are not
// the snapshot's (a reader can get a slot some other txn filled meanwhile,
// a txn's handle can lose its name).  The schedule therefore tracks stock's
// table (slot names, which txn registered which slot, what each txn knows
// and has loaded) and only takes steps inside that contract, so that stock
// itself is a fair oracle.  Everything it leaves out is covered for our
// engine alone by TestDBIHandlePolling (dbipoll_test.go) and
// cdlmdb/ctest/dbisnap_test.  DH_DEBUG=1 prints every step as it runs.

const dhMaxDBs = 32

var dhNames = []string{"a", "b", "c"}

func dhFlagsOf(name string) uint {
	switch name {
	case "b":
		return fDupSort
	case "c":
		return fReverseKey
	}
	return 0
}

var dhKeys = []string{"k", "k2", "m"}

// dhDB is a DB's content: key -> values (one for plain DBs, sorted dups).
type dhDB map[string][]string

// dhView is what one txn sees: name -> DB (absent: no such DB).
type dhView map[string]dhDB

func (v dhView) clone() dhView {
	out := make(dhView, len(v))
	for n, db := range v {
		c := make(dhDB, len(db))
		for k, vals := range db {
			c[k] = append([]string(nil), vals...)
		}
		out[n] = c
	}
	return out
}

// dhOrder: the keys of DB name in its order (ReverseKey compares from the end).
func dhOrder(name string, db dhDB) []string {
	keys := make([]string, 0, len(db))
	for k := range db {
		keys = append(keys, k)
	}
	rev := func(s string) string {
		b := []byte(s)
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		return string(b)
	}
	sort.Slice(keys, func(i, j int) bool {
		if dhFlagsOf(name)&fReverseKey != 0 {
			return rev(keys[i]) < rev(keys[j])
		}
		return keys[i] < keys[j]
	})
	return keys
}

// dhTxn is one txn of the schedule: its model view and what stock's
// handle table says about it.
type dhTxn struct {
	writer  bool
	version int // readers: the commit their snapshot shows
	view    dhView
	numdbs  int
	known   map[int]string // stock slot -> name bound in this txn
	loaded  map[int]bool   // record read from the txn's view
	isNew   map[int]bool   // slots this txn registered
	slotOf  map[string]int // name -> slot of its binding
	dbi     map[string][2]uint32
	eng     [2]tTxn
	// write txns: the slot sequence numbers of the family (stock copies
	// the env's at the top txn's begin) and the records changed
	wseq  []int
	dirty map[int]bool
}

func (t *dhTxn) copyTables(from *dhTxn) {
	t.numdbs = from.numdbs
	t.known, t.loaded, t.slotOf, t.dbi = map[int]string{}, map[int]bool{}, map[string]int{}, map[string][2]uint32{}
	for k, v := range from.known {
		t.known[k] = v
	}
	for k, v := range from.loaded {
		t.loaded[k] = v
	}
	for k, v := range from.slotOf {
		t.slotOf[k] = v
	}
	for k, v := range from.dbi {
		t.dbi[k] = v
	}
	t.wseq, t.dirty = from.wseq, map[int]bool{}
	for k, v := range from.dirty {
		t.dirty[k] = v
	}
}

type dhActor struct{ ch chan func() }

func newDHActor(lock bool, wg *sync.WaitGroup) *dhActor {
	a := &dhActor{ch: make(chan func())}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if lock {
			runtime.LockOSThread() // write txns begin and end on this thread
			defer runtime.UnlockOSThread()
		}
		for f := range a.ch {
			f()
		}
	}()
	return a
}

func (a *dhActor) do(f func()) {
	done := make(chan struct{})
	a.ch <- func() { f(); close(done) }
	<-done
}

type dhRun struct {
	t        *testing.T
	r        *rand.Rand
	engs     [2]engine
	envs     [2]tEnv
	writer   [2]*dhActor
	pool     [2][3]*dhActor
	slot     []string // stock's table: slot -> name ("" free)
	valid    []bool
	seq      []int // stock's me_dbiseqs: bumped when a slot is registered or closed
	numdbs   int
	pub      map[string][2]uint32 // handles later txns begin with
	latest   dhView
	version  int
	readers  [3]*dhTxn
	resetR   [3]bool // reader i is reset (kept for renew)
	resetTxn [3][2]tTxn
	vals     int
	ws       []*dhTxn
	step     int
	log      []string
	steps    map[string]int
}

func (s *dhRun) fail(format string, args ...any) {
	tail := s.log
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	s.t.Fatalf("step %d: %s\nlast steps:\n  %s", s.step, fmt.Sprintf(format, args...), strings.Join(tail, "\n  "))
}

// on runs f for engine e on the actor of txn owner (writer or reader i).
func (s *dhRun) on(e int, reader int, poolIdx int, f func()) {
	if reader < 0 {
		s.writer[e].do(f)
		return
	}
	s.pool[e][poolIdx].do(f)
}

// both runs f on each engine (stock first) and requires equal answers,
// equal to want.
func (s *dhRun) both(what string, reader int, want string, f func(e int) string) {
	p := s.r.Intn(3)
	var got [2]string
	for e := 0; e < 2; e++ {
		s.on(e, reader, p, func() { got[e] = f(e) })
	}
	s.log = append(s.log, fmt.Sprintf("%s -> %s", what, got[0]))
	if os.Getenv("DH_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, s.log[len(s.log)-1], got[1])
	}
	s.steps[strings.Fields(what)[1]]++
	if got[0] != got[1] {
		s.fail("%s: stock %q, ours %q (model %q)", what, got[0], got[1], want)
	}
	if got[0] != want {
		s.fail("%s: both engines %q, model %q (the schedule left stock's contract)", what, got[0], want)
	}
}

func (s *dhRun) live() []*dhTxn {
	var out []*dhTxn
	for _, r := range s.readers {
		if r != nil {
			out = append(out, r)
		}
	}
	return append(out, s.ws...)
}

func (s *dhRun) newTxn(writer bool, view dhView) *dhTxn {
	t := &dhTxn{writer: writer, version: s.version, view: view, numdbs: s.numdbs,
		known: map[int]string{}, loaded: map[int]bool{}, isNew: map[int]bool{},
		slotOf: map[string]int{}, dbi: map[string][2]uint32{}, dirty: map[int]bool{}}
	if writer {
		t.wseq = append([]int(nil), s.seq...)
	}
	for i := 2; i < s.numdbs; i++ {
		if s.valid[i] {
			n := s.slot[i]
			t.known[i], t.slotOf[n], t.dbi[n] = n, i, s.pub[n]
		}
	}
	return t
}

// endHandles: stock's export (keep) or close of the slots t registered.
func (s *dhRun) endHandles(t *dhTxn, keep bool) {
	for i := range t.isNew {
		if keep {
			s.valid[i] = true
			s.pub[s.slot[i]] = t.dbi[s.slot[i]]
		} else if s.slot[i] != "" {
			s.slot[i], s.valid[i] = "", false
			s.seq[i]++
		}
	}
	if keep && t.numdbs > s.numdbs {
		s.numdbs = t.numdbs
	}
}

func (s *dhRun) code(e int, err error) string { return errName(s.engs[e].code(err)) }

// useAnswer runs one read of DB name through handle dbi in txn.
func dhUse(eng engine, txn tTxn, dbi uint32, how int) string {
	code := func(err error) string { return errName(eng.code(err)) }
	switch how {
	case 0:
		v, err := txn.get(dbi, []byte("k"))
		if err != nil {
			return code(err)
		}
		return "get " + string(v)
	case 1:
		c, err := txn.cursor(dbi)
		if err != nil {
			return code(err)
		}
		defer c.close()
		var b strings.Builder
		b.WriteString("walk")
		op := cFirst
		for {
			k, v, err := c.get(nil, nil, op)
			if err != nil {
				if eng.code(err) != eNotFound {
					b.WriteString(" " + code(err))
				}
				return b.String()
			}
			fmt.Fprintf(&b, " %s=%s", k, v)
			op = cNext
		}
	case 2:
		st, err := txn.stat(dbi)
		if err != nil {
			return code(err)
		}
		return fmt.Sprintf("entries %d", st.items)
	default:
		f, err := txn.dbFlags(dbi)
		if err != nil {
			return code(err)
		}
		return fmt.Sprintf("flags %#x", f)
	}
}

func dhModelUse(name string, db dhDB, how int) string {
	switch how {
	case 0:
		if v, ok := db["k"]; ok {
			return "get " + v[0]
		}
		return errName(eNotFound)
	case 1:
		var b strings.Builder
		b.WriteString("walk")
		for _, k := range dhOrder(name, db) {
			for _, v := range db[k] {
				fmt.Fprintf(&b, " %s=%s", k, v)
			}
		}
		return b.String()
	case 2:
		n := 0
		for _, vals := range db {
			n += len(vals)
		}
		return fmt.Sprintf("entries %d", n)
	default:
		return fmt.Sprintf("flags %#x", dhFlagsOf(name))
	}
}

// canUse: stock answers from t's view when t uses its binding of name.
func (s *dhRun) canUse(t *dhTxn, name string) bool {
	sl, ok := t.slotOf[name]
	if !ok || t.known[sl] != name {
		return false
	}
	if _, ok := t.view[name]; !ok {
		return false
	}
	return t.loaded[sl] || s.slot[sl] == name
}

// changed: stock's TXN_DBI_CHANGED, the slot was registered or closed
// since the write txn family took its copy of the sequence numbers.
func (s *dhRun) changed(t *dhTxn, name string) bool {
	return t.writer && t.wseq[t.slotOf[name]] != s.seq[t.slotOf[name]]
}

func (s *dhRun) others(t *dhTxn) []*dhTxn {
	var out []*dhTxn
	for _, u := range s.live() {
		if u != t {
			out = append(out, u)
		}
	}
	return out
}

// open: mdb_dbi_open(name) in t (reader index ri, or -1 for the writer).
func (s *dhRun) open(t *dhTxn, ri int, name string, create bool) bool {
	hit := 0
	for i := 2; i < t.numdbs; i++ {
		if s.slot[i] == name {
			hit = i
			break
		}
	}
	_, exists := t.view[name]
	var want string
	target := 0
	switch {
	case hit != 0:
		if t.known[hit] != name || !exists {
			return false // stock would hand out a slot this txn cannot use
		}
		want = "ok"
	case exists || (create && t.writer):
		for i := 2; i < t.numdbs; i++ {
			if s.slot[i] == "" {
				target = i
				break
			}
		}
		if target == 0 {
			target = t.numdbs
		}
		if target >= dhMaxDBs || s.slot[target] != "" {
			return false
		}
		if t.known[target] != "" {
			return false // stock would overwrite this txn's own binding of the slot
		}
		for _, u := range s.others(t) {
			if u.numdbs > target {
				return false // that txn's own scan could meet the new slot
			}
		}
		if !t.writer && t.version != s.version {
			return false // the handle would outlive the DB in later snapshots
		}
		if sl, ok := t.slotOf[name]; ok && t.known[sl] == name && t.dirty[sl] {
			// the txn changed the DB, whose handle a child's drop
			// closed before the child aborted: stock registers a new
			// slot with the record of the main DB, losing the changes
			// (ours answers with the txn's own record)
			return false
		}
		want = "ok"
	case create:
		want = errName(13) // EACCES: a reader cannot create
	default:
		want = errName(eNotFound)
	}
	flags := dhFlagsOf(name)
	if create {
		flags |= fCreate
	}
	var got [2]uint32
	s.both(fmt.Sprintf("%s open %s create=%v", s.who(ri), name, create), ri, want, func(e int) string {
		d, err := s.txnOf(t, e).openDBI(name, flags)
		got[e] = d
		return s.code(e, err)
	})
	if want != "ok" {
		return true
	}
	if hit != 0 {
		t.slotOf[name] = hit
	} else {
		if !exists {
			t.view[name] = dhDB{}
		}
		s.slot[target] = name
		s.seq[target]++
		if t.writer {
			t.wseq[target] = s.seq[target]
			t.dirty[target] = !exists
		}
		t.known[target], t.loaded[target], t.isNew[target] = name, true, true
		if target == t.numdbs {
			t.numdbs++
		}
		t.slotOf[name] = target
	}
	t.dbi[name] = got
	return true
}

func (s *dhRun) txnOf(t *dhTxn, e int) tTxn { return t.eng[e] }

func (s *dhRun) who(ri int) string {
	if ri < 0 {
		return fmt.Sprintf("w%d", len(s.ws))
	}
	return fmt.Sprintf("r%d", ri)
}

// actorOf: the reader index of t, or -1 for a write txn.
func (s *dhRun) actorOf(t *dhTxn) int {
	for i, r := range s.readers {
		if r == t {
			return i
		}
	}
	return -1
}

func (s *dhRun) use(t *dhTxn, ri int, name string) bool {
	return s.useHow(t, ri, name, s.r.Intn(4))
}

func (s *dhRun) useHow(t *dhTxn, ri int, name string, how int) bool {
	if !s.canUse(t, name) {
		return false
	}
	if how != 3 && !t.loaded[t.slotOf[name]] && s.changed(t, name) {
		return false // stock: MDB_BAD_DBI on reading the record
	}
	d := t.dbi[name]
	s.both(fmt.Sprintf("%s use%d %s", s.who(ri), how, name), ri, dhModelUse(name, t.view[name], how), func(e int) string {
		return dhUse(s.engs[e], s.txnOf(t, e), d[e], how)
	})
	if how != 3 { // stock's mdb_dbi_flags answers without reading the record
		t.loaded[t.slotOf[name]] = true
	}
	return true
}

func (s *dhRun) put(t *dhTxn, name string, del bool) bool {
	if !s.canUse(t, name) {
		return false
	}
	if s.changed(t, name) {
		return false // stock: MDB_BAD_DBI when the record is touched
	}
	key := dhKeys[s.r.Intn(len(dhKeys))]
	db := t.view[name]
	d := t.dbi[name]
	if del {
		// lmdb-go passes a nil value as an empty one: in a DupSort DB
		// that names the pair (key, ""), so name a stored value instead
		want, val := "ok", []byte(nil)
		vals, ok := db[key]
		if !ok {
			want = errName(eNotFound)
		}
		dup := dhFlagsOf(name)&fDupSort != 0
		if dup && ok {
			val = []byte(vals[0])
		}
		s.both(fmt.Sprintf("w%d del %s %s %s", len(s.ws), name, key, val), -1, want, func(e int) string {
			return s.code(e, s.txnOf(t, e).del(d[e], []byte(key), val))
		})
		if dup && len(vals) > 1 {
			db[key] = vals[1:]
		} else {
			delete(db, key)
		}
		if ok {
			t.dirty[t.slotOf[name]] = true
		}
	} else {
		s.vals++
		val := fmt.Sprintf("v%d", s.vals)
		s.both(fmt.Sprintf("w%d put %s %s=%s", len(s.ws), name, key, val), -1, "ok", func(e int) string {
			return s.code(e, s.txnOf(t, e).put(d[e], []byte(key), []byte(val), 0))
		})
		t.dirty[t.slotOf[name]] = true
		if dhFlagsOf(name)&fDupSort != 0 {
			db[key] = append(db[key], val)
			sort.Strings(db[key])
		} else {
			db[key] = []string{val}
		}
	}
	t.loaded[t.slotOf[name]] = true
	return true
}

func (s *dhRun) drop(t *dhTxn, name string, del bool) bool {
	if !s.canUse(t, name) {
		return false
	}
	sl := t.slotOf[name]
	if s.changed(t, name) {
		return false // stock checks the slot first
	}
	if del {
		for _, u := range s.others(t) {
			if u.known[sl] == name && !u.loaded[sl] {
				return false // stock would leave that txn a handle without a name
			}
		}
	}
	d := t.dbi[name]
	s.both(fmt.Sprintf("w%d drop %s del=%v", len(s.ws), name, del), -1, "ok", func(e int) string {
		return s.code(e, s.txnOf(t, e).drop(d[e], del))
	})
	if !del {
		t.view[name] = dhDB{}
		t.loaded[sl], t.dirty[sl] = true, true
		return true
	}
	delete(t.view, name)
	s.slot[sl], s.valid[sl] = "", false
	s.seq[sl]++
	delete(t.dirty, sl)
	delete(t.known, sl)
	delete(t.loaded, sl)
	delete(t.isNew, sl)
	delete(t.slotOf, name)
	delete(t.dbi, name)
	return true
}

func (s *dhRun) readerStep(i int) bool {
	t := s.readers[i]
	if t == nil {
		renew := s.resetR[i]
		what := fmt.Sprintf("r%d begin", i)
		if renew {
			what = fmt.Sprintf("r%d renew", i)
		}
		nt := s.newTxn(false, s.latest)
		if renew {
			nt.eng = s.resetTxn[i]
		}
		s.both(what, i, "ok", func(e int) string {
			if renew {
				return s.code(e, nt.eng[e].renew())
			}
			tx, err := s.envs[e].begin(nil, fReadonly)
			nt.eng[e] = tx
			return s.code(e, err)
		})
		s.readers[i], s.resetR[i] = nt, false
		return true
	}
	switch k := s.r.Intn(10); {
	case k < 4:
		return s.open(t, i, dhNames[s.r.Intn(len(dhNames))], s.r.Intn(8) == 0)
	case k < 8:
		return s.use(t, i, dhNames[s.r.Intn(len(dhNames))])
	default:
		end := s.r.Intn(3) // commit, abort, reset
		s.both(fmt.Sprintf("r%d end%d", i, end), i, "ok", func(e int) string {
			switch end {
			case 0:
				return s.code(e, t.eng[e].commit())
			case 1:
				t.eng[e].abort()
			default:
				t.eng[e].reset()
			}
			return "ok"
		})
		s.endHandles(t, end == 0)
		s.readers[i] = nil
		if end == 2 {
			s.resetR[i], s.resetTxn[i] = true, t.eng
		}
		return true
	}
}

func (s *dhRun) writerStep() bool {
	if len(s.ws) == 0 {
		nt := s.newTxn(true, s.latest.clone())
		s.both("w0 begin", -1, "ok", func(e int) string {
			tx, err := s.envs[e].begin(nil, 0)
			nt.eng[e] = tx
			return s.code(e, err)
		})
		s.ws = append(s.ws, nt)
		return true
	}
	t := s.ws[len(s.ws)-1]
	name := dhNames[s.r.Intn(len(dhNames))]
	switch k := s.r.Intn(20); {
	case k < 5:
		return s.open(t, -1, name, s.r.Intn(2) == 0)
	case k < 9:
		return s.put(t, name, false)
	case k < 10:
		return s.put(t, name, true)
	case k < 12:
		return s.use(t, -1, name)
	case k < 14:
		return s.drop(t, name, s.r.Intn(3) != 0)
	case k < 15:
		if len(s.ws) >= 3 {
			return false
		}
		c := &dhTxn{writer: true, view: t.view.clone(), isNew: map[int]bool{}}
		c.copyTables(t)
		s.both(fmt.Sprintf("w%d begin-child", len(s.ws)), -1, "ok", func(e int) string {
			tx, err := s.envs[e].begin(t.eng[e], 0)
			c.eng[e] = tx
			return s.code(e, err)
		})
		s.ws = append(s.ws, c)
		return true
	default:
		commit := s.r.Intn(3) != 0
		if commit && len(s.ws) == 1 {
			for sl, d := range t.dirty {
				if d && t.wseq[sl] != s.seq[sl] {
					commit = false // stock's commit would fail with MDB_BAD_DBI
				}
			}
		}
		s.both(fmt.Sprintf("w%d end commit=%v", len(s.ws)-1, commit), -1, "ok", func(e int) string {
			if commit {
				return s.code(e, t.eng[e].commit())
			}
			t.eng[e].abort()
			return "ok"
		})
		s.ws = s.ws[:len(s.ws)-1]
		if len(s.ws) > 0 { // a child
			p := s.ws[len(s.ws)-1]
			if commit {
				p.view = t.view
				isNew := p.isNew
				p.copyTables(t)
				for i := range t.isNew {
					isNew[i] = true
				}
				p.isNew = isNew
			} else {
				s.endHandles(t, false)
			}
			return true
		}
		if commit {
			s.latest = t.view
			s.version++
		}
		s.endHandles(t, commit)
		return true
	}
}

// closeStep: mdb_dbi_close of a published handle (txns that have it bound
// have read its record: stock's contract asks for no user at all).
func (s *dhRun) closeStep() bool {
	name := dhNames[s.r.Intn(len(dhNames))]
	d, ok := s.pub[name]
	sl := 0
	for i := 2; i < s.numdbs; i++ {
		if s.valid[i] && s.slot[i] == name {
			sl = i
		}
	}
	if !ok || sl == 0 {
		return false
	}
	for _, u := range s.live() {
		if u.known[sl] != "" && !u.loaded[sl] {
			// stock would leave that txn a handle without a name:
			// have it read the record first, if it can
			if u.known[sl] != name || u.slotOf[name] != sl || (u.writer && u != s.ws[len(s.ws)-1]) ||
				!s.useHow(u, s.actorOf(u), name, 2) {
				return false
			}
		}
	}
	s.log = append(s.log, "close "+name)
	s.steps["close"]++
	for e := 0; e < 2; e++ {
		s.envs[e].closeDBI(d[e])
	}
	s.slot[sl], s.valid[sl] = "", false
	s.seq[sl]++
	delete(s.pub, name)
	return true
}

func runDHSchedule(t *testing.T, sub engine, seed int64, nsteps int, steps map[string]int) {
	dir := t.TempDir()
	s := &dhRun{t: t, r: rand.New(rand.NewSource(seed)), engs: [2]engine{stockEngine{}, sub},
		slot: make([]string, dhMaxDBs+1), valid: make([]bool, dhMaxDBs+1), seq: make([]int, dhMaxDBs+1), numdbs: 2,
		pub: map[string][2]uint32{}, latest: dhView{}, steps: steps}
	var wg sync.WaitGroup
	for e := 0; e < 2; e++ {
		p := filepath.Join(dir, fmt.Sprintf("%d-%s", e, s.engs[e].name()))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		env, err := s.engs[e].openEnv(p, envOpts{mapSize: 16 << 20, maxDBs: dhMaxDBs})
		if err != nil {
			t.Fatal(err)
		}
		s.envs[e] = env
		s.writer[e] = newDHActor(true, &wg)
		for i := range s.pool[e] {
			s.pool[e][i] = newDHActor(false, &wg)
		}
	}
	defer func() {
		// end whatever is still open, innermost writer first, then close
		for e := 0; e < 2; e++ {
			for i := len(s.ws) - 1; i >= 0; i-- {
				tx := s.ws[i].eng[e]
				s.writer[e].do(func() { tx.abort() })
			}
			for i, r := range s.readers {
				if r != nil {
					r.eng[e].abort()
				} else if s.resetR[i] {
					s.resetTxn[i][e].abort()
				}
			}
			close(s.writer[e].ch)
			for _, a := range s.pool[e] {
				close(a.ch)
			}
		}
		wg.Wait()
		for e := 0; e < 2; e++ {
			s.envs[e].close()
		}
	}()
	for s.step = 0; s.step < nsteps; {
		done := false
		for try := 0; try < 20 && !done; try++ {
			switch k := s.r.Intn(20); {
			case k < 9:
				done = s.writerStep()
			case k < 19:
				done = s.readerStep(s.r.Intn(len(s.readers)))
			default:
				done = s.r.Intn(4) == 0 && s.closeStep()
			}
		}
		s.step++
	}
}

func TestDBIHandleLifetimesDiff(t *testing.T) { dbiHandleLifetimes(t, subject, 1) }

// dbiHandleLifetimes runs the schedules with sub against stock; div > 1
// takes the first 1/div of them.
func dbiHandleLifetimes(t *testing.T, sub engine, div int) {
	master := masterSeed(t)
	scale := testScale(t)
	steps := map[string]int{}
	rounds := max(12*scale/div, 1)
	for i := 0; i < rounds; i++ {
		seed := master + int64(i)*7919
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			runDHSchedule(t, sub, seed, 500, steps)
		})
		if t.Failed() {
			return
		}
	}
	t.Logf("%d schedules, steps by kind: %v", rounds, steps)
	for _, kind := range []string{"open", "use0", "use1", "use2", "use3", "drop", "put", "begin-child", "renew", "close"} {
		if steps[kind] == 0 {
			t.Errorf("the schedules never took a %q step", kind)
		}
	}
}
