//go:build !dlmdb_stockonly

package difftest

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"

	lmdb "github.com/PowerDNS/lmdb-go/lmdb"
	dl "github.com/dlmdb/dlmdb-go/lmdb"
)

// TestDifferentialMultiplePut runs one random program of MDB_MULTIPLE puts
// (Cursor.PutMulti) on DUPFIXED DBs through lmdb-go (stock LMDB 0.9.33) and
// through ours, with MDB_COUNTED / MDB_PREFIX_COMPRESSION added on our side
// in some configurations. Batches are ascending above the key's last value
// (the bulk-load case our engine stores page-wise), ascending through the
// stored values, descending, random with repeats, two interleaved runs, small
// and large (across leaf boundaries, growing sub-pages into sub-trees), with
// flags 0, NoDupData, AppendDup, NoOverwrite or Append; single puts and
// deletes in between, commits now and then. Every error must be stock's;
// after every op the key's values and the pages GetMultiple/NextMultiple hand
// out for it must be stock's. After a MULTIPLE put (but Append, whose answer
// depends on the other keys) both engines must hold exactly the key's old
// values plus the first c items, c being where a model of single puts
// refuses (the count data[1] reports, which the Go API does not return; the
// C test multiput_test compares the count itself), and fail iff the model
// refuses. Every 25
// ops and at the end the whole DB and its Stat are compared and our checker
// runs (txn Check, then Env.Check of the committed file).
//
// Stock bug 4 (stockdup_test.go) is stepped around as the main harness does:
// while a key holds one value stored as a plain node, an item equal to it
// ends stock's put early, so such items are dropped on both sides (no-ops for
// a correct engine) unless NoDupData / AppendDup make them refusals anyway.
// Stock bug 5: the putting cursor is closed right after the put.
func TestDifferentialMultiplePut(t *testing.T) {
	cfgs := []struct {
		name  string
		flags uint
		add   uint
		isz   int
	}{
		{"dupfixed8", fDupSort | fDupFixed, 0, 8},
		{"dupfixed8-counted-prefix", fDupSort | fDupFixed, uint(dl.Counted | dl.PrefixCompression), 8},
		{"intdup8-prefix", fDupSort | fDupFixed | fIntegerDup, uint(dl.PrefixCompression), 8},
		{"intdup4-counted", fDupSort | fDupFixed | fIntegerDup, uint(dl.Counted), 4},
		{"revdup5-counted-prefix", fDupSort | fDupFixed | fReverseDup, uint(dl.Counted | dl.PrefixCompression), 5},
		{"dupfixed3-counted", fDupSort | fDupFixed, uint(dl.Counted), 3},
	}
	for i, cf := range cfgs {
		t.Run(cf.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			m := &multiRun{t: t, flags: cf.flags, isz: cf.isz, r: rand.New(rand.NewSource(int64(0x6d70 + i)))}
			m.open(extEngine{add: cf.add}, stockEngine{})
			defer m.close()
			m.run(200 * testScale(t))
		})
	}
}

type multiSide struct {
	eng engine
	env tEnv
	txn tTxn
	dbi uint32
}

type multiRun struct {
	t     *testing.T
	flags uint
	isz   int
	r     *rand.Rand
	sides [2]*multiSide // ours, stock
	hw    map[string]uint64
	stats struct{ multis, refused, bulk, deep int }
}

func (m *multiRun) open(engs ...engine) {
	for i, e := range engs {
		env, err := e.openEnv(m.t.TempDir(), envOpts{mapSize: 256 << 20, maxDBs: 4, flags: fNoSync})
		if err != nil {
			m.t.Fatal(err)
		}
		s := &multiSide{eng: e, env: env}
		m.sides[i] = s
		if s.txn, err = env.begin(nil, 0); err != nil {
			m.t.Fatal(err)
		}
		if s.dbi, err = s.txn.openDBI("m", m.flags|fCreate); err != nil {
			m.t.Fatal(err)
		}
	}
	m.hw = map[string]uint64{}
}

func (m *multiRun) close() {
	for _, s := range m.sides {
		if s != nil && s.env != nil {
			if s.txn != nil {
				s.txn.abort()
			}
			s.env.close()
		}
	}
}

// enc is v as an item that sorts as v does under the DB's order.
func (m *multiRun) enc(v uint64) []byte {
	b := make([]byte, m.isz)
	switch {
	case m.flags&fIntegerDup != 0 && m.isz == 4:
		binary.NativeEndian.PutUint32(b, uint32(v))
	case m.flags&fIntegerDup != 0:
		binary.NativeEndian.PutUint64(b, v)
	default:
		for i := range b {
			sh := 8 * (m.isz - 1 - i) // most significant byte first
			if m.flags&fReverseDup != 0 {
				sh = 8 * i // compared from the last byte
			}
			if sh < 64 {
				b[i] = byte(v >> sh)
			}
		}
	}
	return b
}

func (m *multiRun) limit() uint64 {
	if m.isz >= 8 {
		return 1 << 40
	}
	return 1<<(8*m.isz) - 1
}

// values of key on side s (nil if none), read through a fresh cursor.
func (m *multiRun) values(s *multiSide, key []byte) [][]byte {
	c, err := s.txn.cursor(s.dbi)
	if err != nil {
		m.t.Fatal(err)
	}
	defer c.close()
	var out [][]byte
	_, v, err := c.get(key, nil, cSet)
	for err == nil {
		out = append(out, slices.Clone(v))
		_, v, err = c.get(nil, nil, cNextDup)
	}
	if code := s.eng.code(err); code != eNotFound {
		m.t.Fatalf("%s: reading %q: %v", s.eng.name(), key, err)
	}
	return out
}

// pages GetMultiple/NextMultiple hand out for key (a key with two values
// or more), each as its bytes.
func (m *multiRun) pages(s *multiSide, key []byte) [][]byte {
	c, err := s.txn.cursor(s.dbi)
	if err != nil {
		m.t.Fatal(err)
	}
	defer c.close()
	if _, _, err := c.get(key, nil, cSet); err != nil {
		return nil
	}
	if n, err := c.count(); err != nil || n < 2 {
		return nil
	}
	var out [][]byte
	_, v, err := c.get(nil, nil, cGetMultiple)
	for err == nil {
		out = append(out, slices.Clone(v))
		_, v, err = c.get(nil, nil, cNextMultiple)
	}
	if code := s.eng.code(err); code != eNotFound {
		m.t.Fatalf("%s: pages of %q: %v", s.eng.name(), key, err)
	}
	return out
}

// all is the whole DB as "key=value" lines, and its Stat entry count.
func (m *multiRun) all(s *multiSide) ([]string, uint64) {
	c, err := s.txn.cursor(s.dbi)
	if err != nil {
		m.t.Fatal(err)
	}
	defer c.close()
	var out []string
	k, v, err := c.get(nil, nil, cFirst)
	for err == nil {
		out = append(out, fmt.Sprintf("%x=%x", k, v))
		k, v, err = c.get(nil, nil, cNext)
	}
	if code := s.eng.code(err); code != eNotFound {
		m.t.Fatalf("%s: scan: %v", s.eng.name(), err)
	}
	st, err := s.txn.stat(s.dbi)
	if err != nil {
		m.t.Fatal(err)
	}
	return out, st.items
}

func (m *multiRun) batch(key string, n int) []uint64 {
	r, hw, lim := m.r, m.hw[key], m.limit()
	nums := make([]uint64, n)
	base := hw + 1 + uint64(r.Intn(3))
	shape := r.Intn(6)
	for i := range nums {
		switch shape {
		case 0: // append-like: ascending above the last value
			nums[i] = base + uint64(i)
		case 1: // ascending with gaps, above the last value
			nums[i] = base + uint64(i)*uint64(1+r.Intn(3))
		case 2: // ascending through the stored values
			nums[i] = uint64(r.Int63n(int64(hw + 200)))
		case 3: // descending
			nums[i] = base + uint64(n-i)*2
		case 4: // random, with repeats inside the batch
			if i > 0 && r.Intn(4) == 0 {
				nums[i] = nums[r.Intn(i)]
			} else {
				nums[i] = uint64(r.Int63n(int64(hw + 50)))
			}
		default: // two ascending runs, the second between the first's values
			if i < n/2 {
				nums[i] = base + uint64(i)*2
			} else {
				nums[i] = base + uint64(i-n/2)*2 + 1
			}
		}
		nums[i] = min(nums[i], lim)
	}
	if shape == 2 {
		slices.Sort(nums)
	}
	return nums
}

func (m *multiRun) run(nops int) {
	t, r := m.t, m.r
	ours, stock := m.sides[0], m.sides[1]
	for op := 0; op < nops && !t.Failed(); op++ {
		ks := fmt.Sprintf("tenant/0042/user/%04d", 37*r.Intn(8))
		key := []byte(ks)
		what := ""
		switch x := r.Intn(100); {
		case x < 65:
			n := 1 + r.Intn(120)
			if r.Intn(5) == 0 {
				n = 1 + r.Intn(1500)
			}
			nums := m.batch(ks, n)
			flags := []uint{0, 0, 0, 0, 0, fNoDupData, fNoDupData, uint(lmdb.AppendDup), uint(lmdb.AppendDup),
				fNoOverwrite, fAppend}[r.Intn(11)]
			if flags&(fNoDupData|uint(lmdb.AppendDup)) == 0 {
				nums = m.stepAroundBug4(key, nums)
				if len(nums) == 0 {
					continue
				}
			}
			var page []byte
			for _, v := range nums {
				page = append(page, m.enc(v)...)
				m.hw[ks] = max(m.hw[ks], v)
			}
			what = fmt.Sprintf("op %d: PutMulti(%q, %d items, flags %#x)", op, key, len(nums), flags)
			var codes [2]int
			var before [2][][]byte
			for i, s := range m.sides {
				before[i] = m.values(s, key)
				c, err := s.txn.cursor(s.dbi)
				if err != nil {
					t.Fatal(err)
				}
				codes[i] = s.eng.code(c.putMulti(key, page, m.isz, flags))
				c.close() // stock bug 5
			}
			if codes[0] != codes[1] {
				t.Fatalf("%s: ours %s, stock %s", what, errName(codes[0]), errName(codes[1]))
			}
			// the model: items go in one by one until the first refusal, so
			// the key must hold its old values plus exactly the first c items
			// (c: the count data[1] reports)
			if flags&fAppend == 0 {
				c, refused := m.expectCount(before[0], nums, flags)
				if refused != (codes[0] != 0) {
					t.Fatalf("%s: %s, the model refuses item %d: %v", what, errName(codes[0]), c, refused)
				}
				want := slices.Clone(before[0])
				for _, v := range nums[:c] {
					want = append(want, m.enc(v))
				}
				want = m.sortUniq(want)
				for _, s := range m.sides {
					if got := m.values(s, key); !slices.EqualFunc(got, want, bytes.Equal) {
						t.Fatalf("%s on %s: %d values, the model %d (old values and the first %d items)",
							what, s.eng.name(), len(got), len(want), c)
					}
				}
			}
			m.stats.multis++
			if codes[0] != 0 {
				m.stats.refused++
			}
			if nums[0] > 0 && len(nums) > 1 && slices.IsSorted(nums) && len(before[0]) > 0 {
				m.stats.bulk++
			}
		case x < 80:
			v := m.enc(min(uint64(r.Int63n(int64(m.hw[ks]+20))), m.limit()))
			what = fmt.Sprintf("op %d: Put(%q, %x)", op, key, v)
			m.both(what, func(s *multiSide) error { return s.txn.put(s.dbi, key, v, 0) })
		case x < 93:
			v := m.enc(min(uint64(r.Int63n(int64(m.hw[ks]+20))), m.limit()))
			what = fmt.Sprintf("op %d: Del(%q, %x)", op, key, v)
			m.both(what, func(s *multiSide) error { return s.txn.del(s.dbi, key, v) })
		case x < 95:
			what = fmt.Sprintf("op %d: Del(%q)", op, key)
			m.both(what, func(s *multiSide) error { return s.txn.del(s.dbi, key, nil) })
			delete(m.hw, ks)
		default:
			for _, s := range m.sides {
				var err error
				if err = s.txn.commit(); err == nil {
					s.txn, err = s.env.begin(nil, 0)
				}
				if err != nil {
					t.Fatalf("op %d: %s: commit: %v", op, s.eng.name(), err)
				}
			}
			continue
		}
		if a, b := m.values(ours, key), m.values(stock, key); !slices.EqualFunc(a, b, bytes.Equal) {
			t.Fatalf("%s: %q holds %d values on ours, %d on stock (or different ones)", what, key, len(a), len(b))
		}
		pa, pb := m.pages(ours, key), m.pages(stock, key)
		if !slices.EqualFunc(pa, pb, bytes.Equal) {
			t.Fatalf("%s: GetMultiple/NextMultiple of %q: ours %d pages, stock %d (or different ones)",
				what, key, len(pa), len(pb))
		}
		if len(pa) > 1 {
			m.stats.deep++
		}
		if op%25 == 0 {
			m.compareAll(what)
		}
	}
	m.compareAll("end")
	for _, s := range m.sides {
		if err := s.txn.commit(); err != nil {
			t.Fatalf("%s: final commit: %v", s.eng.name(), err)
		}
		s.txn = nil
	}
	if err := ours.env.check(); err != nil {
		t.Fatalf("ours: Env.Check of the committed file: %v", err)
	}
	st := m.stats
	t.Logf("%d MULTIPLE puts (%d refused, %d ascending onto existing values), %d ops on keys of several pages",
		st.multis, st.refused, st.bulk, st.deep)
	if st.multis < nops/3 || st.refused == 0 || st.deep == 0 {
		t.Errorf("the program covered too little: %+v", st)
	}
}

func (m *multiRun) both(what string, f func(*multiSide) error) {
	a, b := m.sides[0].eng.code(f(m.sides[0])), m.sides[1].eng.code(f(m.sides[1]))
	if a != b {
		m.t.Fatalf("%s: ours %s, stock %s", what, errName(a), errName(b))
	}
}

func (m *multiRun) compareAll(what string) {
	a, na := m.all(m.sides[0])
	b, nb := m.all(m.sides[1])
	if !slices.Equal(a, b) || na != nb {
		m.t.Fatalf("%s: whole DB: ours %d items (Stat %d), stock %d (Stat %d), or different ones",
			what, len(a), na, len(b), nb)
	}
	if na != uint64(len(a)) {
		m.t.Fatalf("%s: Stat says %d entries, a scan finds %d", what, na, len(a))
	}
	if err := m.sides[0].txn.check(); err != nil {
		m.t.Fatalf("%s: ours: txn Check: %v", what, err)
	}
}

// dec is the number enc made b from.
func (m *multiRun) dec(b []byte) uint64 {
	switch {
	case m.flags&fIntegerDup != 0 && m.isz == 4:
		return uint64(binary.NativeEndian.Uint32(b))
	case m.flags&fIntegerDup != 0:
		return binary.NativeEndian.Uint64(b)
	}
	var v uint64
	for i := range b {
		sh := 8 * (m.isz - 1 - i)
		if m.flags&fReverseDup != 0 {
			sh = 8 * i
		}
		if sh < 64 {
			v |= uint64(b[i]) << sh
		}
	}
	return v
}

// sortUniq orders values as the DB does (by their numbers), repeats dropped.
func (m *multiRun) sortUniq(vals [][]byte) [][]byte {
	slices.SortFunc(vals, func(a, b []byte) int { return cmp.Compare(m.dec(a), m.dec(b)) })
	return slices.CompactFunc(vals, bytes.Equal)
}

// expectCount: how many items single puts with these flags (NoOverwrite on
// the first only, as LMDB) store before the first refusal, and whether one
// comes; old are the key's values before.
func (m *multiRun) expectCount(old [][]byte, nums []uint64, flags uint) (int, bool) {
	if flags&fNoOverwrite != 0 && len(old) > 0 {
		return 0, true
	}
	have := map[uint64]bool{}
	var top uint64
	for _, v := range old {
		have[m.dec(v)] = true
		top = max(top, m.dec(v))
	}
	for i, v := range nums {
		if flags&fNoDupData != 0 && have[v] {
			return i, true
		}
		if flags&uint(lmdb.AppendDup) != 0 && len(have) > 0 && v <= top {
			return i, true
		}
		have[v] = true
		top = max(top, v)
	}
	return len(nums), false
}

// stepAroundBug4 drops the items of a batch that stock bug 4 would stop at
// (see the test's comment), judged on both sides alike.
func (m *multiRun) stepAroundBug4(key []byte, nums []uint64) []uint64 {
	var vals [2][][]byte
	for i, s := range m.sides {
		vals[i] = m.values(s, key)
	}
	if len(vals[0]) != len(vals[1]) {
		m.t.Fatalf("%q: %d values on ours, %d on stock", key, len(vals[0]), len(vals[1]))
	}
	switch len(vals[0]) {
	case 0: // a new key: repeats of the first item right after it
		drop := 0
		for drop+1 < len(nums) && nums[drop+1] == nums[0] {
			drop++
		}
		return append(nums[:1], nums[1+drop:]...)
	case 1: // one value: the leading items equal to it
		lead := 0
		for lead < len(nums) && bytes.Equal(m.enc(nums[lead]), vals[0][0]) {
			lead++
		}
		return nums[lead:]
	}
	return nums
}
