package dlmdb

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// Seeds follow the project's convention: DLMDB_TEST_SEED=N replays N,
// DLMDB_TEST_SEED=random draws one, the default is fixed; the seed is
// printed when a test fails. DLMDB_TEST_SCALE=k multiplies the budgets.

func countedSeed(t *testing.T) int64 {
	t.Helper()
	seed := int64(20261129)
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
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d; repeat with DLMDB_TEST_SEED=%d go test . -run '^%s$'", seed, seed, t.Name())
		}
	})
	return seed
}

func countedScale(t *testing.T) int {
	s := os.Getenv("DLMDB_TEST_SCALE")
	if s == "" {
		return 1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("DLMDB_TEST_SCALE=%q: want a positive integer", s)
	}
	return n
}

// countedEnv opens an environment in a temporary directory, closed at the end
// of the test.
func countedEnv(t *testing.T) *lmdb.Env {
	t.Helper()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.SetMaxDBs(4)
	env.SetMapSize(64 << 20)
	if err := env.Open(t.TempDir(), 0, 0o600); err != nil {
		env.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

type cpair struct{ k, v string }

// fillCounted stores random pairs in a new counted DupSort database and
// returns them in database order.
func fillCounted(t *testing.T, env *lmdb.Env, rng *rand.Rand, n int) (lmdb.DBI, []cpair) {
	return fillCountedWith(t, env, rng, n, 0, "")
}

// fillCountedWith is fillCounted with extra DBI flags (PrefixCompression)
// and a prefix that every key and value starts with (it keeps their order;
// it must sort between "a" and "z", the ends countedRange uses).
func fillCountedWith(t *testing.T, env *lmdb.Env, rng *rand.Rand, n int, extra uint, prefix string) (lmdb.DBI, []cpair) {
	t.Helper()
	return fillCountedFlags(t, env, rng, n, lmdb.DupSort|lmdb.Counted|extra, "counted", prefix, prefix+"v")
}

// fillCountedFlags is fillCounted for a database name with other flags;
// keys start with kprefix, values are vprefix followed by a number.
func fillCountedFlags(t *testing.T, env *lmdb.Env, rng *rand.Rand, n int, flags uint, name, kprefix, vprefix string) (lmdb.DBI, []cpair) {
	t.Helper()
	set := map[cpair]bool{}
	for len(set) < n {
		k := fmt.Sprintf("k%03d", rng.Intn(n/3+1))
		if rng.Intn(10) == 0 {
			k = "hot" // a key with many values
		}
		set[cpair{kprefix + k, fmt.Sprintf("%s%05d", vprefix, rng.Intn(100000))}] = true
	}
	all := make([]cpair, 0, n)
	for p := range set {
		all = append(all, p)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		return a.k < b.k || (a.k == b.k && a.v < b.v)
	})
	var dbi lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenDBI(name, lmdb.Create|flags); err != nil {
			return err
		}
		for _, i := range rng.Perm(n) {
			if err := txn.Put(dbi, []byte(all[i].k), []byte(all[i].v), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dbi, all
}

// countedIn is the model of Range membership (bytewise key order).
func countedIn(r Range, key string) bool {
	if k, incl := r.Low(); k != nil {
		if key < string(k) || (key == string(k) && !incl) {
			return false
		}
	}
	if k, incl := r.High(); k != nil {
		if key > string(k) || (key == string(k) && !incl) {
			return false
		}
	}
	return true
}

// countedRange draws a Range of any shape, with ends that are stored keys,
// keys between stored keys or keys outside the data.
func countedRange(rng *rand.Rand, all []cpair) Range {
	end := func() []byte {
		switch rng.Intn(4) {
		case 0:
			return []byte("a") // before every key
		case 1:
			return []byte("z") // after every key
		case 2:
			return []byte(all[rng.Intn(len(all))].k + "\x00")
		}
		return []byte(all[rng.Intn(len(all))].k)
	}
	var r Range
	switch rng.Intn(9) {
	case 0:
		r = All()
	case 1:
		r = AtLeast(end())
	case 2:
		r = GreaterThan(end())
	case 3:
		r = AtMost(end())
	case 4:
		r = LessThan(end())
	case 5:
		k := end()
		r = Between(k, k)
	case 6:
		k := all[rng.Intn(len(all))].k
		r = Prefix([]byte(k[:rng.Intn(len(k)+1)]))
	default:
		r = Between(end(), end())
	}
	if rng.Intn(3) == 0 {
		r = r.ExcludeLow()
	}
	if rng.Intn(3) == 0 {
		r = r.ExcludeHigh()
	}
	if rng.Intn(4) == 0 {
		r = r.IncludeLow()
	}
	return r
}

func TestRangeConstructors(t *testing.T) {
	a, b := []byte("a"), []byte("b")
	for _, c := range []struct {
		r                 Range
		low, high         []byte
		lowIncl, highIncl bool
		flags             uint
		text              string
	}{
		{All(), nil, nil, false, false, lmdb.CountLowerIncl | lmdb.CountUpperIncl, "(-∞, ∞)"},
		{Range{}, nil, nil, false, false, lmdb.CountLowerIncl | lmdb.CountUpperIncl, "(-∞, ∞)"},
		{Between(a, b), a, b, true, true, lmdb.CountLowerIncl | lmdb.CountUpperIncl, `["a", "b"]`},
		{Between(a, b).ExcludeHigh(), a, b, true, false, lmdb.CountLowerIncl, `["a", "b")`},
		{Between(a, b).ExcludeLow(), a, b, false, true, lmdb.CountUpperIncl, `("a", "b"]`},
		{AtLeast(a), a, nil, true, false, lmdb.CountLowerIncl | lmdb.CountUpperIncl, `["a", ∞)`},
		{GreaterThan(a), a, nil, false, false, lmdb.CountUpperIncl, `("a", ∞)`},
		{GreaterThan(a).IncludeLow(), a, nil, true, false, lmdb.CountLowerIncl | lmdb.CountUpperIncl, `["a", ∞)`},
		{AtMost(b), nil, b, false, true, lmdb.CountLowerIncl | lmdb.CountUpperIncl, `(-∞, "b"]`},
		{LessThan(b), nil, b, false, false, lmdb.CountLowerIncl, `(-∞, "b")`},
		{LessThan(b).IncludeHigh(), nil, b, false, true, lmdb.CountLowerIncl | lmdb.CountUpperIncl, `(-∞, "b"]`},
		{Between(nil, []byte{}), nil, nil, false, false, lmdb.CountLowerIncl | lmdb.CountUpperIncl, "(-∞, ∞)"},
		{AtLeast([]byte("q\"\x01")), []byte("q\"\x01"), nil, true, false, lmdb.CountLowerIncl | lmdb.CountUpperIncl, `["q\"\x01", ∞)`},
	} {
		low, li := c.r.Low()
		high, hi := c.r.High()
		if string(low) != string(c.low) || (low == nil) != (c.low == nil) || li != c.lowIncl {
			t.Errorf("%v: Low() = %q %v, want %q %v", c.r, low, li, c.low, c.lowIncl)
		}
		if string(high) != string(c.high) || (high == nil) != (c.high == nil) || hi != c.highIncl {
			t.Errorf("%v: High() = %q %v, want %q %v", c.r, high, hi, c.high, c.highIncl)
		}
		if f := c.r.Flags(); f != c.flags {
			t.Errorf("%v: Flags() = %#x, want %#x", c.r, f, c.flags)
		}
		if s := c.r.String(); s != c.text {
			t.Errorf("String() = %s, want %s", s, c.text)
		}
	}
}

// TestCountRankAt compares every helper with the model on random ranges of
// a random counted DupSort database, and again on one that is also
// prefix-compressed, with keys and values sharing a long prefix.
func TestCountRankAt(t *testing.T) {
	seed := countedSeed(t)
	for _, c := range []struct {
		name   string
		extra  uint
		prefix string
	}{
		{"plain", 0, ""},
		{"prefix", lmdb.PrefixCompression, "graph:example.org/dataset/shared-prefix/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testCountRankAt(t, rand.New(rand.NewSource(seed)), c.extra, c.prefix)
		})
	}
}

func testCountRankAt(t *testing.T, rng *rand.Rand, extra uint, prefix string) {
	env := countedEnv(t)
	dbi, all := fillCountedWith(t, env, rng, 600*countedScale(t), extra, prefix)
	if extra&lmdb.PrefixCompression != 0 {
		// the file must really hold compressed pages: fewer leaf pages
		// than the same pairs in a plain counted DB
		var plain lmdb.DBI
		var sc, sp *lmdb.Stat
		err := env.Update(func(txn *lmdb.Txn) (err error) {
			if plain, err = txn.OpenDBI("plain-twin", lmdb.Create|lmdb.DupSort|lmdb.Counted); err != nil {
				return err
			}
			for _, p := range all {
				if err := txn.Put(plain, []byte(p.k), []byte(p.v), 0); err != nil {
					return err
				}
			}
			if sc, err = txn.Stat(dbi); err != nil {
				return err
			}
			sp, err = txn.Stat(plain)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Entries != sp.Entries || sc.LeafPages+sc.BranchPages >= sp.LeafPages+sp.BranchPages {
			t.Fatalf("compressed: %d entries in %d leaf + %d branch pages; plain: %d in %d + %d (want fewer pages)",
				sc.Entries, sc.LeafPages, sc.BranchPages, sp.Entries, sp.LeafPages, sp.BranchPages)
		}
		t.Logf("%d pairs: %d leaf pages compressed, %d plain", len(all), sc.LeafPages, sp.LeafPages)
	}
	err := env.View(func(txn *lmdb.Txn) error {
		for i := 0; i < 300; i++ {
			r := countedRange(rng, all)
			var want, wantKeys uint64
			first, end := -1, -1
			for j, p := range all {
				if countedIn(r, p.k) {
					if first < 0 {
						first = j
					}
					end = j + 1
					want++
					if j == 0 || all[j-1].k != p.k {
						wantKeys++
					}
				}
			}
			if first < 0 { // empty: the rank where the range would start
				first = sort.Search(len(all), func(j int) bool {
					p := all[j].k
					if k, incl := r.Low(); k != nil {
						return p > string(k) || (p == string(k) && incl)
					}
					return true
				})
				end = first
			}
			n, err := Count(txn, dbi, r)
			if err != nil || n != want {
				t.Fatalf("Count(%v) = %d, %v; want %d", r, n, err, want)
			}
			n, err = CountValues(txn, dbi, r)
			if err != nil || n != want {
				t.Fatalf("CountValues(%v) = %d, %v; want %d", r, n, err, want)
			}
			n, err = CountKeys(txn, dbi, r)
			if err != nil || n != wantKeys {
				t.Fatalf("CountKeys(%v) = %d, %v; want %d", r, n, err, wantKeys)
			}
			lo, hi, err := Bounds(txn, dbi, r)
			if err != nil || lo != uint64(first) || hi != uint64(end) {
				t.Fatalf("Bounds(%v) = %d, %d, %v; want %d, %d", r, lo, hi, err, first, end)
			}
		}
		for i := 0; i < 200; i++ {
			j := rng.Intn(len(all))
			k, v, err := GetRank(txn, dbi, uint64(j))
			if err != nil || string(k) != all[j].k || string(v) != all[j].v {
				t.Fatalf("At(%d) = %q %q %v, want %v", j, k, v, err, all[j])
			}
			got, err := KeyRank(txn, dbi, k, v)
			if err != nil || got != uint64(j) {
				t.Fatalf("Rank(%q, %q) = %d, %v; want %d", k, v, got, err, j)
			}
			firstOfKey := sort.Search(len(all), func(i int) bool { return all[i].k >= all[j].k })
			got, err = KeyRank(txn, dbi, k, nil)
			if err != nil || got != uint64(firstOfKey) {
				t.Fatalf("Rank(%q, nil) = %d, %v; want %d", k, got, err, firstOfKey)
			}
		}
		if _, _, err := GetRank(txn, dbi, uint64(len(all))); !lmdb.IsNotFound(err) {
			t.Fatalf("At(past the end): %v, want NotFound", err)
		}
		if _, err := KeyRank(txn, dbi, []byte("nope"), nil); !lmdb.IsNotFound(err) {
			t.Fatalf("Rank(absent key): %v, want NotFound", err)
		}
		if _, err := KeyRank(txn, dbi, []byte(all[0].k), []byte("absent value")); !lmdb.IsNotFound(err) {
			t.Fatalf("Rank(absent value): %v, want NotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRankPlainWithValue: on a plain counted database Rank with a value
// finds the key only while that is its value, byte for byte (a nil value
// asks for the key; an empty non-nil one is the empty value), against a
// sorted model of random keys with random values, some empty, some over a
// page long.
func TestRankPlainWithValue(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := countedEnv(t)
	model := map[string]string{}
	for len(model) < 300*countedScale(t) {
		v := strings.Repeat(string(rune('a'+rng.Intn(26))), rng.Intn(40))
		if rng.Intn(30) == 0 {
			v = strings.Repeat("o", 4000+rng.Intn(3000))
		}
		model[fmt.Sprintf("k%05d", rng.Intn(100000))] = v
	}
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var dbi lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenDBI("plain", lmdb.Create|lmdb.Counted); err != nil {
			return err
		}
		for _, i := range rng.Perm(len(keys)) {
			if err := txn.Put(dbi, []byte(keys[i]), []byte(model[keys[i]]), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = env.View(func(txn *lmdb.Txn) error {
		for i, k := range keys {
			v := model[k]
			for _, with := range [][]byte{nil, []byte(v)} {
				if got, err := KeyRank(txn, dbi, []byte(k), with); err != nil || got != uint64(i) {
					t.Fatalf("Rank(%q, %.20q) = %d, %v; want %d", k, with, got, err, i)
				}
			}
			others := [][]byte{[]byte(v + "!"), []byte(model[keys[rng.Intn(len(keys))]])}
			if v != "" {
				others = append(others, []byte{}, []byte(v[1:]), []byte("?"+v[1:]))
			}
			for _, o := range others {
				if string(o) == v {
					continue
				}
				if got, err := KeyRank(txn, dbi, []byte(k), o); !lmdb.IsNotFound(err) {
					t.Fatalf("Rank(%q, other value %.20q) = %d, %v; want NotFound", k, o, got, err)
				}
			}
		}
		if _, err := KeyRank(txn, dbi, []byte("absent"), []byte{}); !lmdb.IsNotFound(err) {
			t.Fatalf("Rank(absent key, empty value): %v, want NotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countedSampleModel is what SampleRange must yield: positions first + i*c/n.
func countedSampleModel(all []cpair, r Range, n int) []cpair {
	var in []cpair
	for _, p := range all {
		if countedIn(r, p.k) {
			in = append(in, p)
		}
	}
	if n <= 0 {
		return nil
	}
	if n > len(in) {
		n = len(in)
	}
	out := make([]cpair, 0, n)
	for i := 0; i < n; i++ {
		// float arithmetic as an independent check of the integer formula
		j := int(math.Floor(float64(i) * float64(len(in)) / float64(n)))
		switch { // correct a rounding slip
		case (j+1)*n <= i*len(in):
			j++
		case j*n > i*len(in):
			j--
		}
		out = append(out, in[j])
	}
	return out
}

func countedCollect(t *testing.T, seq func(func([]byte, []byte) bool), errf func() error) []cpair {
	t.Helper()
	var got []cpair
	for k, v := range seq {
		got = append(got, cpair{string(k), string(v)})
	}
	if err := errf(); err != nil {
		t.Fatalf("sample error: %v", err)
	}
	return got
}

func countedSame(a, b []cpair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSample checks SampleRange against the model on random ranges and
// sizes, in read and write transactions, and that a sequence can be ranged
// over twice.
func TestSample(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := countedEnv(t)
	dbi, all := fillCounted(t, env, rng, 500*countedScale(t))
	check := func(txn *lmdb.Txn) error {
		for i := 0; i < 150; i++ {
			r := countedRange(rng, all)
			n := rng.Intn(40) - 2
			if rng.Intn(10) == 0 {
				n = len(all) + rng.Intn(5) // more than there is: everything
			}
			want := countedSampleModel(all, r, n)
			seq, errf := SampleRange(txn, dbi, r, n)
			got := countedCollect(t, seq, errf)
			if !countedSame(got, want) {
				t.Fatalf("SampleRange(%v, %d) = %v\nwant %v", r, n, got, want)
			}
			if i%10 == 0 { // a second pass gives the same
				if again := countedCollect(t, seq, errf); !countedSame(again, want) {
					t.Fatalf("SampleRange(%v, %d) second pass = %v\nwant %v", r, n, again, want)
				}
			}
		}
		seq, errf := Sample(txn, dbi, len(all))
		if got := countedCollect(t, seq, errf); !countedSame(got, all) {
			t.Fatalf("Sample(all %d) differs from the whole database", len(all))
		}
		return nil
	}
	if err := env.View(check); err != nil {
		t.Fatal(err)
	}
	if err := env.Update(check); err != nil {
		t.Fatal(err)
	}
}

// TestSampleStopsEarly: breaking out of the loop ends the sampling without
// an error, and the transaction stays usable.
func TestSampleStopsEarly(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := countedEnv(t)
	dbi, all := fillCounted(t, env, rng, 300)
	err := env.View(func(txn *lmdb.Txn) error {
		seq, errf := Sample(txn, dbi, 50)
		want := countedSampleModel(all, All(), 50)
		stop := 1 + rng.Intn(20)
		var got []cpair
		for k, v := range seq {
			got = append(got, cpair{string(k), string(v)})
			if len(got) == stop {
				break
			}
		}
		if err := errf(); err != nil {
			t.Errorf("error after break: %v", err)
		}
		if !countedSame(got, want[:stop]) {
			t.Errorf("stopped sample = %v, want %v", got, want[:stop])
		}
		n, err := Count(txn, dbi, All())
		if err != nil || n != uint64(len(all)) {
			t.Errorf("Count after an early stop = %d, %v", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSampleErrors: an uncounted database and an ended transaction end the
// sequence at once and report the error; a later successful pass clears it.
func TestSampleErrors(t *testing.T) {
	env := countedEnv(t)
	var counted, plain lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		if counted, err = txn.OpenDBI("c", lmdb.Create|lmdb.Counted); err != nil {
			return err
		}
		if plain, err = txn.OpenDBI("p", lmdb.Create); err != nil {
			return err
		}
		for i := 0; i < 10; i++ {
			k := []byte(fmt.Sprintf("k%d", i))
			if err := txn.Put(counted, k, k, 0); err != nil {
				return err
			}
			if err := txn.Put(plain, k, k, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = env.View(func(txn *lmdb.Txn) error {
		for name, fn := range map[string]func() error{
			"Count":       func() error { _, err := Count(txn, plain, All()); return err },
			"CountKeys":   func() error { _, err := CountKeys(txn, plain, All()); return err },
			"CountValues": func() error { _, err := CountValues(txn, plain, All()); return err },
			"KeyRank":     func() error { _, err := KeyRank(txn, plain, []byte("k1"), nil); return err },
			"GetRank":     func() error { _, _, err := GetRank(txn, plain, 0); return err },
			"Bounds":      func() error { _, _, err := Bounds(txn, plain, AtLeast([]byte("k3"))); return err },
		} {
			if err := fn(); !errors.Is(err, lmdb.Incompatible) {
				t.Errorf("%s on an uncounted db: %v, want Incompatible", name, err)
			}
		}
		seq, errf := SampleRange(txn, plain, AtLeast([]byte("k2")), 3)
		for k := range seq {
			t.Errorf("uncounted sample yielded %q", k)
		}
		if err := errf(); !errors.Is(err, lmdb.Incompatible) {
			t.Errorf("sample of an uncounted db: %v, want Incompatible", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	txn, err := env.BeginTxn(nil, lmdb.Readonly)
	if err != nil {
		t.Fatal(err)
	}
	seq, errf := Sample(txn, counted, 3)
	if got := len(countedCollect(t, seq, errf)); got != 3 {
		t.Errorf("sample of 3 gave %d", got)
	}
	txn.Abort()
	for k := range seq {
		t.Errorf("sample after Abort yielded %q", k)
	}
	if err := errf(); !errors.Is(err, lmdb.BadTxn) {
		t.Errorf("sample after Abort: %v, want BadTxn", err)
	}
	for _, n := range []int{0, -1} {
		seq, errf := Sample(txn, counted, n) // nothing to do: no error even here
		for k := range seq {
			t.Errorf("Sample(%d) yielded %q", n, k)
		}
		if err := errf(); err != nil {
			t.Errorf("Sample(%d): %v", n, err)
		}
	}
}

// TestSpread checks the overflow-free i*total/n against big-number
// arithmetic done by hand on values near the 64-bit limit.
func TestSpread(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	for i := 0; i < 2000; i++ {
		total := rng.Uint64()
		if total == 0 {
			continue
		}
		n := 1 + rng.Uint64()%total
		if rng.Intn(2) == 0 {
			n = 1 + uint64(rng.Intn(1000))
			if n > total {
				n = total
			}
		}
		idx := rng.Uint64() % n
		got := spread(idx, total, n)
		// got must be the largest q with q*n <= idx*total
		if got >= total && total > 0 {
			t.Fatalf("spread(%d, %d, %d) = %d beyond total", idx, total, n, got)
		}
		if !countedMulLE(got, n, idx, total) || countedMulLE(got+1, n, idx, total) {
			t.Fatalf("spread(%d, %d, %d) = %d is not the floor", idx, total, n, got)
		}
	}
	if got := spread(2, 11, 3); got != 7 {
		t.Fatalf("spread(2, 11, 3) = %d, want 7", got)
	}
}

// countedMulLE reports whether a*b <= c*d, with 128-bit products built from 32-bit
// halves (independent of math/bits).
func countedMulLE(a, b, c, d uint64) bool {
	ah, al := countedMul128(a, b)
	ch, cl := countedMul128(c, d)
	return ah < ch || (ah == ch && al <= cl)
}

func countedMul128(x, y uint64) (hi, lo uint64) {
	const mask = 1<<32 - 1
	x0, x1 := x&mask, x>>32
	y0, y1 := y&mask, y>>32
	p00 := x0 * y0
	p01 := x0 * y1
	p10 := x1 * y0
	p11 := x1 * y1
	mid := p00>>32 + p01&mask + p10&mask
	lo = p00&mask | mid<<32
	hi = p11 + p01>>32 + p10>>32 + mid>>32
	return hi, lo
}

// TestPrefix compares Prefix with strings.HasPrefix over random byte keys,
// many of them with 0xff bytes.
func TestPrefix(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	alphabet := []byte{0, 1, 'a', 'b', 0xfe, 0xff}
	word := func(max int) []byte {
		b := make([]byte, rng.Intn(max+1))
		for i := range b {
			b[i] = alphabet[rng.Intn(len(alphabet))]
		}
		return b
	}
	for i := 0; i < 20000; i++ {
		p, k := word(3), word(5)
		if len(k) == 0 {
			continue
		}
		r := Prefix(p)
		if got, want := countedIn(r, string(k)), strings.HasPrefix(string(k), string(p)); got != want {
			t.Fatalf("Prefix(%q) contains %q: %v, want %v (range %v)", p, k, got, want, r)
		}
	}
	p := []byte("ab")
	r := Prefix(p)
	p[1] = 'z' // the high end is a copy, the low end is not
	if high, _ := r.High(); string(high) != "ac" {
		t.Fatalf("Prefix high end changed with its argument: %q", high)
	}
}

// TestQuote covers the escaping of String.
func TestQuote(t *testing.T) {
	if got := quote([]byte("a\\b\"c\x00\xff~")); got != `"a\\b\"c\x00\xff~"` {
		t.Fatalf("quote = %s", got)
	}
	if !strings.HasPrefix(GreaterThan([]byte{0x7f}).String(), `("\x7f"`) {
		t.Fatalf("String of a DEL byte: %s", GreaterThan([]byte{0x7f}))
	}
}

// The deprecated spellings keep their old meaning: Rank is the rank of a
// key (KeyRank), At the entry at a rank (GetRank), and lmdb's Txn.Rank the
// entry at a rank too.
func TestDeprecatedRankNames(t *testing.T) {
	env := countedEnv(t)
	dbi, _ := fillCounted(t, env, rand.New(rand.NewSource(34)), 50)
	if err := env.View(func(txn *lmdb.Txn) error {
		for _, r := range []uint64{0, 17, 49} {
			k1, v1, err1 := At(txn, dbi, r)
			k2, v2, err2 := GetRank(txn, dbi, r)
			k3, v3, err3 := txn.Rank(dbi, r)
			if err1 != nil || err2 != nil || err3 != nil || string(k1) != string(k2) || string(k1) != string(k3) ||
				string(v1) != string(v2) || string(v1) != string(v3) {
				t.Errorf("rank %d: At %q %v, GetRank %q %v, Txn.Rank %q %v", r, k1, err1, k2, err2, k3, err3)
			}
			n1, err1 := Rank(txn, dbi, k1, v1) // the pair: a DupSort DB
			n2, err2 := KeyRank(txn, dbi, k1, v1)
			if err1 != nil || err2 != nil || n1 != r || n2 != r {
				t.Errorf("key %q: Rank %d %v, KeyRank %d %v, want %d", k1, n1, err1, n2, err2, r)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
