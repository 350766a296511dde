package bench_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/dlmdb/dlmdb-go/bench"
)

// Standard Go benchmarks over the same adapters, for `go test -bench`:
// BenchmarkGet/<engine>/<copy|raw>, BenchmarkPut/<engine>,
// BenchmarkCursorNext/<engine>. make bench does not use them.

const gbN = 50_000

func gbLoaded(b *testing.B, e bench.Engine) (bench.Env, bench.Keys) {
	b.Helper()
	dir := b.TempDir()
	env, err := e.Open(dir, bench.Options{MapSize: 256 << 20, Flags: bench.NoSync | bench.NoMetaSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	keys := bench.MakeKeys(gbN)
	val := make([]byte, 100)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	txn, err := env.Begin(false)
	if err != nil {
		b.Fatal(err)
	}
	db, err := txn.OpenDB("", 0)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < gbN; i++ {
		bench.FillValue(val, i)
		if err := txn.Put(db, keys.At(i), val); err != nil {
			b.Fatal(err)
		}
	}
	if err := txn.Commit(); err != nil {
		b.Fatal(err)
	}
	return env, keys
}

func gbEngines() []bench.Engine { return []bench.Engine{bench.Ours, bench.Stock} }

func BenchmarkGet(b *testing.B) {
	for _, e := range gbEngines() {
		for _, raw := range []bool{false, true} {
			mode := "copy"
			if raw {
				mode = "raw"
			}
			b.Run(e.Name()+"/"+mode, func(b *testing.B) {
				env, keys := gbLoaded(b, e)
				txn, err := env.Begin(true)
				if err != nil {
					b.Fatal(err)
				}
				defer txn.Abort()
				txn.SetRawRead(raw)
				db, err := txn.OpenDB("", 0)
				if err != nil {
					b.Fatal(err)
				}
				order := bench.Perm(gbN, 1)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					k := int(order[i%gbN])
					v, err := txn.Get(db, keys.At(k))
					if err != nil || bench.ValueTag(v) != bench.Tag(k) {
						b.Fatalf("get %d: %v", k, err)
					}
				}
			})
		}
	}
}

func BenchmarkPut(b *testing.B) {
	for _, e := range gbEngines() {
		b.Run(e.Name(), func(b *testing.B) {
			env, err := e.Open(b.TempDir(), bench.Options{MapSize: 1 << 30, Flags: bench.NoSync | bench.NoMetaSync})
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			txn, err := env.Begin(false)
			if err != nil {
				b.Fatal(err)
			}
			defer txn.Abort()
			db, err := txn.OpenDB("", 0)
			if err != nil {
				b.Fatal(err)
			}
			key := make([]byte, bench.KeySize)
			val := make([]byte, 100)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				bench.PutKey(key, i)
				if err := txn.Put(db, key, val); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCursorNext(b *testing.B) {
	for _, e := range gbEngines() {
		b.Run(e.Name(), func(b *testing.B) {
			env, _ := gbLoaded(b, e)
			txn, err := env.Begin(true)
			if err != nil {
				b.Fatal(err)
			}
			defer txn.Abort()
			txn.SetRawRead(true)
			db, err := txn.OpenDB("", 0)
			if err != nil {
				b.Fatal(err)
			}
			cur, err := txn.Cursor(db)
			if err != nil {
				b.Fatal(err)
			}
			defer cur.Close()
			if _, _, err := cur.First(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, _, err := cur.Next(); errors.Is(err, bench.ErrNotFound) {
					if _, _, err = cur.First(); err != nil {
						b.Fatal(err)
					}
				} else if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
