package lmdb_test

// Side-by-side micro-benchmarks of the Go-side cost of this package and of
// github.com/PowerDNS/lmdb-go v1.9.3 (linked into the same test binary), on
// identical data. Timings belong to benchmarks only; nothing here asserts
// speed. Run for instance:
//
//	go test -run x -bench 'Side' -count 5 ./lmdb
//
// Each benchmark name ends in /ours or /lmdb-go so benchstat can pair them.

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	stock "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

const (
	sideKeys   = 20_000
	sideValLen = 100
)

// sideKey is the 16-digit decimal key of item i.
func sideKey(i int) []byte { return []byte(fmt.Sprintf("%016d", i)) }

// sideVal fills a value that encodes i, so a read can be checked.
func sideVal(buf []byte, i int) []byte {
	for j := range buf {
		buf[j] = byte('a' + (i+j)%26)
	}
	return buf
}

// sideData is the shared key set and a random read order.
type sideData struct {
	keys  [][]byte
	order []int
}

func newSideData(n int) *sideData {
	d := &sideData{keys: make([][]byte, n), order: make([]int, 1<<16)}
	for i := range d.keys {
		d.keys[i] = sideKey(i)
	}
	rng := rand.New(rand.NewSource(7))
	for i := range d.order {
		d.order[i] = rng.Intn(n)
	}
	return d
}

const sideEnvFlags = lmdb.NoSync | lmdb.NoMetaSync

// sideLoad writes the benchmark data through put: d's keys with their
// values, or 20 eight-byte duplicates per key for the DUPFIXED variant.
func sideLoad(d *sideData, dupfixed bool, put func(k, v []byte) error) error {
	val := make([]byte, sideValLen)
	for i, k := range d.keys {
		if dupfixed {
			for j := 0; j < 20; j++ {
				if err := put(k, []byte(fmt.Sprintf("%08d", j))); err != nil {
					return err
				}
			}
			continue
		}
		if err := put(k, sideVal(val, i)); err != nil {
			return err
		}
	}
	return nil
}

func oursSideEnv(b *testing.B, d *sideData, dupfixed bool) (*lmdb.Env, lmdb.DBI) {
	b.Helper()
	env, err := lmdb.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	if err := env.SetMapSize(256 << 20); err != nil {
		b.Fatal(err)
	}
	if err := env.SetMaxDBs(4); err != nil {
		b.Fatal(err)
	}
	if err := env.Open(b.TempDir(), sideEnvFlags, 0o600); err != nil {
		b.Fatal(err)
	}
	var dbi lmdb.DBI
	err = env.Update(func(txn *lmdb.Txn) (err error) {
		if dupfixed {
			dbi, err = txn.OpenDBI("dups", lmdb.Create|lmdb.DupSort|lmdb.DupFixed)
		} else {
			dbi, err = txn.OpenRoot(0)
		}
		if err != nil {
			return err
		}
		return sideLoad(d, dupfixed, func(k, v []byte) error { return txn.Put(dbi, k, v, 0) })
	})
	if err != nil {
		b.Fatal(err)
	}
	return env, dbi
}

func stockSideEnv(b *testing.B, d *sideData, dupfixed bool) (*stock.Env, stock.DBI) {
	b.Helper()
	env, err := stock.NewEnv()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { env.Close() })
	if err := env.SetMapSize(256 << 20); err != nil {
		b.Fatal(err)
	}
	if err := env.SetMaxDBs(4); err != nil {
		b.Fatal(err)
	}
	if err := env.Open(b.TempDir(), sideEnvFlags, 0o600); err != nil {
		b.Fatal(err)
	}
	var dbi stock.DBI
	err = env.Update(func(txn *stock.Txn) (err error) {
		if dupfixed {
			dbi, err = txn.OpenDBI("dups", stock.Create|stock.DupSort|stock.DupFixed)
		} else {
			dbi, err = txn.OpenRoot(0)
		}
		if err != nil {
			return err
		}
		return sideLoad(d, dupfixed, func(k, v []byte) error { return txn.Put(dbi, k, v, 0) })
	})
	if err != nil {
		b.Fatal(err)
	}
	return env, dbi
}

// BenchmarkSideGet: random Txn.Get in one read transaction, copying and
// RawRead.
func BenchmarkSideGet(b *testing.B) {
	d := newSideData(sideKeys)
	for _, raw := range []bool{false, true} {
		mode := "copy"
		if raw {
			mode = "raw"
		}
		b.Run(mode+"/ours", func(b *testing.B) {
			env, dbi := oursSideEnv(b, d, false)
			txn, err := env.BeginTxn(nil, lmdb.Readonly)
			if err != nil {
				b.Fatal(err)
			}
			defer txn.Abort()
			txn.RawRead = raw
			var sum int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, err := txn.Get(dbi, d.keys[d.order[i&0xffff]])
				if err != nil {
					b.Fatal(err)
				}
				sum += int(v[0])
			}
			runtime.KeepAlive(sum)
		})
		b.Run(mode+"/lmdb-go", func(b *testing.B) {
			env, dbi := stockSideEnv(b, d, false)
			txn, err := env.BeginTxn(nil, stock.Readonly)
			if err != nil {
				b.Fatal(err)
			}
			defer txn.Abort()
			txn.RawRead = raw
			var sum int
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				v, err := txn.Get(dbi, d.keys[d.order[i&0xffff]])
				if err != nil {
					b.Fatal(err)
				}
				sum += int(v[0])
			}
			runtime.KeepAlive(sum)
		})
	}
}

// BenchmarkSidePointRead: the agent-memory W2 shape, a read transaction per
// get (BeginTxn, OpenRoot, Get, Abort).
func BenchmarkSidePointRead(b *testing.B) {
	d := newSideData(sideKeys)
	b.Run("ours", func(b *testing.B) {
		env, _ := oursSideEnv(b, d, false)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			txn, err := env.BeginTxn(nil, lmdb.Readonly)
			if err != nil {
				b.Fatal(err)
			}
			dbi, err := txn.OpenRoot(0)
			if err == nil {
				_, err = txn.Get(dbi, d.keys[d.order[i&0xffff]])
			}
			txn.Abort()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lmdb-go", func(b *testing.B) {
		env, _ := stockSideEnv(b, d, false)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			txn, err := env.BeginTxn(nil, stock.Readonly)
			if err != nil {
				b.Fatal(err)
			}
			dbi, err := txn.OpenRoot(0)
			if err == nil {
				_, err = txn.Get(dbi, d.keys[d.order[i&0xffff]])
			}
			txn.Abort()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSideNamedRead: a read transaction per get on a named DB, the
// handle opened by name in each transaction (open/) or kept from the
// transaction that created it (handle/): BeginTxn, [OpenDBI,] Get, Abort.
func BenchmarkSideNamedRead(b *testing.B) {
	d := newSideData(sideKeys)
	for _, byName := range []bool{true, false} {
		mode := "handle"
		if byName {
			mode = "open"
		}
		b.Run(mode+"/ours", func(b *testing.B) {
			env, dbi := oursSideEnv(b, d, true)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				txn, err := env.BeginTxn(nil, lmdb.Readonly)
				if err != nil {
					b.Fatal(err)
				}
				h := dbi
				if byName {
					h, err = txn.OpenDBI("dups", 0)
				}
				if err == nil {
					_, err = txn.Get(h, d.keys[d.order[i&0xffff]])
				}
				txn.Abort()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(mode+"/lmdb-go", func(b *testing.B) {
			env, dbi := stockSideEnv(b, d, true)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				txn, err := env.BeginTxn(nil, stock.Readonly)
				if err != nil {
					b.Fatal(err)
				}
				h := dbi
				if byName {
					h, err = txn.OpenDBI("dups", 0)
				}
				if err == nil {
					_, err = txn.Get(h, d.keys[d.order[i&0xffff]])
				}
				txn.Abort()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSideRenew: a pooled read transaction, Renew + Get + Reset.
func BenchmarkSideRenew(b *testing.B) {
	d := newSideData(sideKeys)
	b.Run("ours", func(b *testing.B) {
		env, dbi := oursSideEnv(b, d, false)
		txn, err := env.BeginTxn(nil, lmdb.Readonly)
		if err != nil {
			b.Fatal(err)
		}
		defer txn.Abort()
		txn.Reset()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := txn.Renew(); err != nil {
				b.Fatal(err)
			}
			_, err = txn.Get(dbi, d.keys[d.order[i&0xffff]])
			txn.Reset()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lmdb-go", func(b *testing.B) {
		env, dbi := stockSideEnv(b, d, false)
		txn, err := env.BeginTxn(nil, stock.Readonly)
		if err != nil {
			b.Fatal(err)
		}
		defer txn.Abort()
		txn.Reset()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := txn.Renew(); err != nil {
				b.Fatal(err)
			}
			_, err = txn.Get(dbi, d.keys[d.order[i&0xffff]])
			txn.Reset()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSideWrite: the agent-memory W4 shape in fast mode, one write
// transaction per put: BeginTxn, OpenRoot, Put (overwrite), Commit; and the
// same through Env.Update.
func BenchmarkSideWrite(b *testing.B) {
	d := newSideData(sideKeys)
	val := make([]byte, sideValLen)
	b.Run("begin/ours", func(b *testing.B) {
		env, _ := oursSideEnv(b, d, false)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := d.order[i&0xffff]
			txn, err := env.BeginTxn(nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			dbi, err := txn.OpenRoot(0)
			if err == nil {
				err = txn.Put(dbi, d.keys[k], sideVal(val, k+i), 0)
			}
			if err != nil {
				txn.Abort()
				b.Fatal(err)
			}
			if err := txn.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("begin/lmdb-go", func(b *testing.B) {
		env, _ := stockSideEnv(b, d, false)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := d.order[i&0xffff]
			txn, err := env.BeginTxn(nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			dbi, err := txn.OpenRoot(0)
			if err == nil {
				err = txn.Put(dbi, d.keys[k], sideVal(val, k+i), 0)
			}
			if err != nil {
				txn.Abort()
				b.Fatal(err)
			}
			if err := txn.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update/ours", func(b *testing.B) {
		env, dbi := oursSideEnv(b, d, false)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := d.order[i&0xffff]
			err := env.Update(func(txn *lmdb.Txn) error {
				return txn.Put(dbi, d.keys[k], sideVal(val, k+i), 0)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update/lmdb-go", func(b *testing.B) {
		env, dbi := stockSideEnv(b, d, false)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := d.order[i&0xffff]
			err := env.Update(func(txn *stock.Txn) error {
				return txn.Put(dbi, d.keys[k], sideVal(val, k+i), 0)
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	// An aborted write transaction: begin + put + abort, no commit work.
	b.Run("abort/ours", func(b *testing.B) {
		env, dbi := oursSideEnv(b, d, false)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := d.order[i&0xffff]
			txn, err := env.BeginTxn(nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			err = txn.Put(dbi, d.keys[k], val, 0)
			txn.Abort()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("abort/lmdb-go", func(b *testing.B) {
		env, dbi := stockSideEnv(b, d, false)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := d.order[i&0xffff]
			txn, err := env.BeginTxn(nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			err = txn.Put(dbi, d.keys[k], val, 0)
			txn.Abort()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSideMultiple: DupFixed values read by SetKey + GetMultiple +
// NextMultiple for random keys (20 dups of 8 bytes per key), RawRead.
func BenchmarkSideMultiple(b *testing.B) {
	d := newSideData(sideKeys)
	b.Run("ours", func(b *testing.B) {
		env, dbi := oursSideEnv(b, d, true)
		txn, err := env.BeginTxn(nil, lmdb.Readonly)
		if err != nil {
			b.Fatal(err)
		}
		defer txn.Abort()
		txn.RawRead = true
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			b.Fatal(err)
		}
		defer cur.Close()
		n := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := d.keys[d.order[i&0xffff]]
			if _, _, err := cur.Get(k, nil, lmdb.SetKey); err != nil {
				b.Fatal(err)
			}
			_, page, err := cur.Get(k, nil, lmdb.GetMultiple)
			for err == nil {
				n += len(page)
				_, page, err = cur.Get(nil, nil, lmdb.NextMultiple)
			}
			if !lmdb.IsNotFound(err) {
				b.Fatal(err)
			}
		}
		if n != b.N*160 {
			b.Fatalf("read %d bytes, want %d", n, b.N*160)
		}
	})
	b.Run("lmdb-go", func(b *testing.B) {
		env, dbi := stockSideEnv(b, d, true)
		txn, err := env.BeginTxn(nil, stock.Readonly)
		if err != nil {
			b.Fatal(err)
		}
		defer txn.Abort()
		txn.RawRead = true
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			b.Fatal(err)
		}
		defer cur.Close()
		n := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := d.keys[d.order[i&0xffff]]
			if _, _, err := cur.Get(k, nil, stock.SetKey); err != nil {
				b.Fatal(err)
			}
			_, page, err := cur.Get(k, nil, stock.GetMultiple)
			for err == nil {
				n += len(page)
				_, page, err = cur.Get(nil, nil, stock.NextMultiple)
			}
			if !stock.IsNotFound(err) {
				b.Fatal(err)
			}
		}
		if n != b.N*160 {
			b.Fatalf("read %d bytes, want %d", n, b.N*160)
		}
	})
}

// BenchmarkSideScan: full cursor scans (First, then Next to the end) in one
// read transaction, RawRead; one op is one entry.
func BenchmarkSideScan(b *testing.B) {
	d := newSideData(sideKeys)
	b.Run("ours", func(b *testing.B) {
		env, dbi := oursSideEnv(b, d, false)
		txn, err := env.BeginTxn(nil, lmdb.Readonly)
		if err != nil {
			b.Fatal(err)
		}
		defer txn.Abort()
		txn.RawRead = true
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			b.Fatal(err)
		}
		defer cur.Close()
		n := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, v, err := cur.Get(nil, nil, lmdb.Next)
			if lmdb.IsNotFound(err) {
				_, v, err = cur.Get(nil, nil, lmdb.First)
			}
			if err != nil {
				b.Fatal(err)
			}
			n += len(v)
		}
		if n != b.N*sideValLen {
			b.Fatalf("read %d bytes, want %d", n, b.N*sideValLen)
		}
	})
	b.Run("lmdb-go", func(b *testing.B) {
		env, dbi := stockSideEnv(b, d, false)
		txn, err := env.BeginTxn(nil, stock.Readonly)
		if err != nil {
			b.Fatal(err)
		}
		defer txn.Abort()
		txn.RawRead = true
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			b.Fatal(err)
		}
		defer cur.Close()
		n := 0
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			_, v, err := cur.Get(nil, nil, stock.Next)
			if stock.IsNotFound(err) {
				_, v, err = cur.Get(nil, nil, stock.First)
			}
			if err != nil {
				b.Fatal(err)
			}
			n += len(v)
		}
		if n != b.N*sideValLen {
			b.Fatalf("read %d bytes, want %d", n, b.N*sideValLen)
		}
	})
}
