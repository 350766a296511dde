package dlmdb

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// TestScan: Scan, ScanReverse and ScanBatch (batch sizes 1 to 300) over
// random ranges of every shape equal the model, on plain, DupSort, prefix-
// compressed and compressed+counted databases, with and without RawRead.
func TestScan(t *testing.T) {
	kinds := []struct {
		name  string
		flags uint
		dup   bool
	}{
		{"plain", 0, false},
		{"prefix", lmdb.PrefixCompression, false},
		{"dupsort", lmdb.DupSort, true},
		{"prefix-counted-dupsort", lmdb.DupSort | lmdb.PrefixCompression | lmdb.Counted, true},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(countedSeed(t)))
			env := countedEnv(t)
			var dbi lmdb.DBI
			var all []cpair
			if kind.dup {
				dbi, all = fillCountedFlags(t, env, rng, 3000, kind.flags, "scan", "", "shared/value/prefix/v")
			} else {
				dbi, all = fillUnique(t, env, rng, 3000, kind.flags)
			}
			for round := 0; round < 150*countedScale(t); round++ {
				r := countedRange(rng, all)
				var want []cpair
				for _, p := range all {
					if countedIn(r, p.k) {
						want = append(want, p)
					}
				}
				reverse := rng.Intn(2) == 0
				if reverse {
					want = slices.Clone(want)
					slices.Reverse(want)
				}
				batch := 1 + rng.Intn(300)
				raw := rng.Intn(2) == 0
				err := env.View(func(txn *lmdb.Txn) error {
					txn.RawRead = raw
					seq, errf := ScanBatch(txn, dbi, r, batch, reverse)
					var got []cpair
					for k, v := range seq {
						got = append(got, cpair{string(k), string(v)})
					}
					if err := errf(); err != nil {
						return err
					}
					if !countedSame(got, want) {
						n := min(len(got), len(want))
						first := n
						for i := 0; i < n; i++ {
							if got[i] != want[i] {
								first = i
								break
							}
						}
						t.Fatalf("ScanBatch %v reverse %v batch %d raw %v: %d pairs, want %d (first difference at %d)",
							r, reverse, batch, raw, len(got), len(want), first)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// fillUnique stores n random unique keys (with shared prefixes) in a new
// database with flags and returns the pairs in key order.
func fillUnique(t *testing.T, env *lmdb.Env, rng *rand.Rand, n int, flags uint) (lmdb.DBI, []cpair) {
	t.Helper()
	set := map[string]string{}
	for len(set) < n {
		set[fmt.Sprintf("k%05d/%s", rng.Intn(100000), "suffix"[:rng.Intn(7)])] = fmt.Sprintf("v%d", rng.Intn(1000))
	}
	var all []cpair
	for k, v := range set {
		all = append(all, cpair{k, v})
	}
	slices.SortFunc(all, func(a, b cpair) int {
		if a.k < b.k {
			return -1
		}
		if a.k > b.k {
			return 1
		}
		return 0
	})
	var dbi lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenDBI("unique", lmdb.Create|flags); err != nil {
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

// TestScanAllocs: with RawRead a scan allocates the same small number of
// times whatever its length: nothing per entry.
func TestScanAllocs(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := countedEnv(t)
	dbi, all := fillUnique(t, env, rng, 5000, 0)
	err := env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true
		count := func(r Range) (float64, int) {
			n := 0
			allocs := testing.AllocsPerRun(20, func() {
				n = 0
				seq, _ := Scan(txn, dbi, r)
				for range seq {
					n++
				}
			})
			return allocs, n
		}
		short, ns := count(Between([]byte(all[0].k), []byte(all[9].k)))
		long, nl := count(All())
		if ns != 10 || nl != len(all) {
			t.Fatalf("scans saw %d and %d entries, want 10 and %d", ns, nl, len(all))
		}
		if long != short {
			t.Errorf("allocations: %v for 10 entries, %v for %d", short, long, nl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// BenchmarkScan: a RawRead walk of 100,000 entries through Cursor.Get per
// entry against Scan (batched). Reported per entry.
// benchEnv is an environment of n entries key%08d -> "value" in its main DB,
// closed when the benchmark ends.
func benchEnv(b *testing.B, n int) (*lmdb.Env, lmdb.DBI) {
	b.Helper()
	env, err := lmdb.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	env.SetMapSize(256 << 20)
	if err := env.Open(b.TempDir(), lmdb.NoSync, 0o600); err != nil {
		b.Fatal(err)
	}
	var dbi lmdb.DBI
	err = env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenRoot(0); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			if err := txn.Put(dbi, []byte(fmt.Sprintf("key%08d", i)), []byte("value"), lmdb.Append); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return env, dbi
}

func BenchmarkScan(b *testing.B) {
	const n = 100000
	env, dbi := benchEnv(b, n)
	b.Run("get", func(b *testing.B) {
		env.View(func(txn *lmdb.Txn) error {
			txn.RawRead = true
			c, _ := txn.OpenCursor(dbi)
			defer c.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cnt := 0
				for _, _, err := c.Get(nil, nil, lmdb.First); err == nil; _, _, err = c.Get(nil, nil, lmdb.Next) {
					cnt++
				}
				if cnt != n {
					b.Fatal(cnt)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
			return nil
		})
	})
	b.Run("batch", func(b *testing.B) {
		env.View(func(txn *lmdb.Txn) error {
			txn.RawRead = true
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cnt := 0
				seq, _ := Scan(txn, dbi, All())
				for range seq {
					cnt++
				}
				if cnt != n {
					b.Fatal(cnt)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
			return nil
		})
	})
}

// TestGetMany: the root helper equals a Get per key, with RawRead values
// that outlive its cursor (compressed DupSort: decoded values are copied).
func TestGetMany(t *testing.T) {
	rng := rand.New(rand.NewSource(countedSeed(t)))
	env := countedEnv(t)
	dbi, all := fillCountedFlags(t, env, rng, 2000, lmdb.DupSort|lmdb.PrefixCompression, "many", "", "shared/value/prefix/v")
	for _, raw := range []bool{false, true} {
		err := env.View(func(txn *lmdb.Txn) error {
			txn.RawRead = raw
			keys := [][]byte{[]byte("absent")}
			for i := 0; i < 200; i++ {
				keys = append(keys, []byte(all[rng.Intn(len(all))].k))
			}
			vals, err := GetMany(txn, dbi, keys)
			if err != nil {
				return err
			}
			for i, k := range keys {
				want, err := txn.Get(dbi, k)
				if lmdb.IsNotFound(err) {
					if vals[i] != nil {
						t.Fatalf("absent key %q gave %q", k, vals[i])
					}
					continue
				}
				if err != nil || string(vals[i]) != string(want) {
					t.Fatalf("key %q: %q, want %q (%v)", k, vals[i], want, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkGetMany: 256 random keys of a 100,000-entry DB read with one
// Txn.Get each against one GetMany call (RawRead, reused buffers).
func BenchmarkGetMany(b *testing.B) {
	const n = 100000
	env, dbi := benchEnv(b, n)
	rng := rand.New(rand.NewSource(1))
	keys := make([][]byte, 256)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key%08d", rng.Intn(n)))
	}
	b.Run("get", func(b *testing.B) {
		env.View(func(txn *lmdb.Txn) error {
			txn.RawRead = true
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for _, k := range keys {
					if _, err := txn.Get(dbi, k); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
			return nil
		})
	})
	b.Run("many", func(b *testing.B) {
		env.View(func(txn *lmdb.Txn) error {
			txn.RawRead = true
			c, _ := txn.OpenCursor(dbi)
			defer c.Close()
			var vals [][]byte
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var found int
				var err error
				if vals, found, err = c.GetMany(keys, vals); err != nil || found != len(keys) {
					b.Fatal(found, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
			return nil
		})
	})
}

// BenchmarkScanKinds: RawRead walks of 200,000 entries per DB kind (plain,
// compressed keys, DupSort with 10 values a key, DupFixed with 1,000),
// forward and backward, through Cursor.Get per entry ("get") and through
// Scan / ScanReverse ("scan"). Reported per entry.
func BenchmarkScanKinds(b *testing.B) {
	const n = 200000
	kinds := []struct {
		name  string
		flags uint
		per   int // values a key
		vsize int
	}{
		{"plain", 0, 1, 16},
		{"prefix", lmdb.PrefixCompression, 1, 16},
		{"dupsort", lmdb.DupSort, 10, 16},
		{"dupfixed", lmdb.DupSort | lmdb.DupFixed, 1000, 8},
	}
	for _, kd := range kinds {
		env, err := lmdb.NewEnv()
		if err != nil {
			b.Fatal(err)
		}
		env.SetMaxDBs(2)
		env.SetMapSize(512 << 20)
		if err := env.Open(b.TempDir(), lmdb.NoSync, 0o600); err != nil {
			b.Fatal(err)
		}
		var dbi lmdb.DBI
		err = env.Update(func(txn *lmdb.Txn) (err error) {
			if dbi, err = txn.OpenDBI("k", lmdb.Create|kd.flags); err != nil {
				return err
			}
			v := make([]byte, kd.vsize)
			for i := 0; i < n/kd.per; i++ {
				k := []byte(fmt.Sprintf("key/%012d", i))
				for j := 0; j < kd.per; j++ {
					copy(v, fmt.Sprintf("%08d%08d", j, i))
					if err := txn.Put(dbi, k, v, 0); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		for _, reverse := range []bool{false, true} {
			dir := "fwd"
			first, step := uint(lmdb.First), uint(lmdb.Next)
			if reverse {
				dir, first, step = "back", lmdb.Last, lmdb.Prev
			}
			b.Run(kd.name+"/"+dir+"/get", func(b *testing.B) {
				env.View(func(txn *lmdb.Txn) error {
					txn.RawRead = true
					c, _ := txn.OpenCursor(dbi)
					defer c.Close()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						cnt := 0
						for _, _, err := c.Get(nil, nil, first); err == nil; _, _, err = c.Get(nil, nil, step) {
							cnt++
						}
						if cnt != n {
							b.Fatal(cnt)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
					return nil
				})
			})
			b.Run(kd.name+"/"+dir+"/scan", func(b *testing.B) {
				env.View(func(txn *lmdb.Txn) error {
					txn.RawRead = true
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						cnt := 0
						seq, _ := ScanBatch(txn, dbi, All(), DefaultBatch, reverse)
						for range seq {
							cnt++
						}
						if cnt != n {
							b.Fatal(cnt)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/entry")
					return nil
				})
			})
		}
		env.Close()
	}
}
