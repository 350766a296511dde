package cgofloor

import (
	"runtime"
	"testing"

	"github.com/dlmdb/dlmdb-go/bench"
	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// The batched scans visit every entry once per pass in key order, whatever
// the batch size against the entry count (a partial last batch, an exact
// multiple, a batch larger than the DBI), and a changed value changes the
// checksum they report.
func TestBatchedScansMatchModel(t *testing.T) {
	runtime.LockOSThread() // the load's write transactions stay on one thread
	defer runtime.UnlockOSThread()
	const n, passes, mapSize = 300, 2, 64 << 20
	dir := t.TempDir()
	keys := bench.MakeKeys(n)
	if err := oursLoad(dir, mapSize, n, 100, keys); err != nil {
		t.Fatal(err)
	}
	var want uint64
	for p := 0; p < passes; p++ {
		for i := 0; i < n; i++ {
			want = want*31 + bench.Tag(i)
		}
	}
	check := func(what string, r loopResult, err error) {
		t.Helper()
		if err != nil || r.count != n*passes || r.sum != want {
			t.Fatalf("%s: %d entries, checksum %x, %v; want %d, %x", what, r.count, r.sum, err, n*passes, want)
		}
	}
	for _, b := range []int{1, 7, 100, 256, 1000} {
		r, err := oursBatchScan(dir, mapSize, passes, b)
		check("GetBatch", r, err)
	}
	r, err := oursIterScan(dir, mapSize, passes)
	check("dlmdb.Scan", r, err)

	// Entry 123 gets entry 124's value.
	env, err := ourslmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.SetMapSize(mapSize); err != nil {
		t.Fatal(err)
	}
	if err := env.Open(dir, 0, 0o644); err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 100)
	bench.FillValue(val, 124)
	err = env.Update(func(txn *ourslmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		return txn.Put(dbi, keys.At(123), val, 0)
	})
	env.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []int{7, 256} {
		if r, err := oursBatchScan(dir, mapSize, passes, b); err != nil || r.sum == want {
			t.Fatalf("GetBatch(%d) over a changed value: checksum %x (%v), the model's", b, r.sum, err)
		}
	}
	if r, err := oursIterScan(dir, mapSize, passes); err != nil || r.sum == want {
		t.Fatalf("dlmdb.Scan over a changed value: checksum %x (%v), the model's", r.sum, err)
	}
}

// TestManyGetsMatchModel: the GetMany row's loop returns exactly what one
// Txn.Get per key does (count and checksum), for batch sizes 1 to more
// than the key list, and refuses a key that is absent.
func TestManyGetsMatchModel(t *testing.T) {
	runtime.LockOSThread() // the load's write transactions stay on one thread
	defer runtime.UnlockOSThread()
	const n, mapSize = 300, 64 << 20
	dir := t.TempDir()
	keys := bench.MakeKeys(n)
	if err := oursLoad(dir, mapSize, n, 100, keys); err != nil {
		t.Fatal(err)
	}
	order := make([]int32, 0, 2*n)
	for i := 0; i < 2*n; i++ {
		order = append(order, int32((i*37)%n))
	}
	one, err := oursGets(dir, mapSize, keys, order)
	if err != nil || one.count != uint64(len(order)) {
		t.Fatalf("one Get per key: %d, %v", one.count, err)
	}
	for _, b := range []int{1, 7, 256, 5000} {
		r, err := oursManyGets(dir, mapSize, keys, order, b)
		if err != nil || r.count != one.count || r.sum != one.sum {
			t.Fatalf("GetMany batch %d: %d values, checksum %x, %v; want %d, %x", b, r.count, r.sum, err, one.count, one.sum)
		}
	}
	absent := bench.MakeKeys(n + 1) // key n is not in the DB
	if _, err := oursManyGets(dir, mapSize, absent, []int32{0, int32(n)}, 8); err == nil {
		t.Fatal("GetMany with an absent key: no error")
	}
}
