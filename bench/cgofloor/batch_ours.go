// Batched Go scans of the cgo floor: our binding only (stock lmdb-go has no
// mdb_cursor_get_batch), so these loops are not part of goside_ours.go and
// its generated stock twin.

package cgofloor

import (
	"fmt"
	"time"

	dlmdb "github.com/dlmdb/dlmdb-go"
	"github.com/dlmdb/dlmdb-go/bench"
	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// oursBatchScan times passes full scans with Cursor.GetBatch of up to batch
// items a call (First, then Next), the result slices reused.
func oursBatchScan(dir string, mapSize int64, passes, batch int) (loopResult, error) {
	var r loopResult
	err := oursWithTxn(dir, mapSize, func(txn *ourslmdb.Txn, dbi ourslmdb.DBI) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		keys, vals := make([][]byte, 0, batch), make([][]byte, 0, batch)
		t0 := time.Now()
		for p := 0; p < passes; p++ {
			op := uint(ourslmdb.First)
			for {
				keys, vals, err = cur.GetBatch(nil, op, batch, nil, 0, keys, vals)
				if err != nil {
					break
				}
				for _, v := range vals {
					r.sum = r.sum*31 + bench.ValueTag(v)
				}
				r.count += uint64(len(vals))
				if len(vals) < batch {
					break
				}
				op = ourslmdb.Next
			}
			if err != nil && !ourslmdb.IsNotFound(err) {
				return err
			}
		}
		r.el = time.Since(t0)
		return nil
	})
	return r, err
}

// oursIterScan times passes full scans with the root package's iterator
// dlmdb.Scan (batches of dlmdb.DefaultBatch through GetBatch).
func oursIterScan(dir string, mapSize int64, passes int) (loopResult, error) {
	var r loopResult
	err := oursWithTxn(dir, mapSize, func(txn *ourslmdb.Txn, dbi ourslmdb.DBI) error {
		t0 := time.Now()
		for p := 0; p < passes; p++ {
			seq, errf := dlmdb.Scan(txn, dbi, dlmdb.All())
			for _, v := range seq {
				r.sum = r.sum*31 + bench.ValueTag(v)
				r.count++
			}
			if err := errf(); err != nil {
				return err
			}
		}
		r.el = time.Since(t0)
		return nil
	})
	return r, err
}

// oursManyGets times the gets of order (keys.At(i) for each i) with
// Cursor.GetMany, batch keys a call, the key and result slices reused (the
// key list is built outside the timer).
func oursManyGets(dir string, mapSize int64, keys bench.Keys, order []int32, batch int) (loopResult, error) {
	var r loopResult
	err := oursWithTxn(dir, mapSize, func(txn *ourslmdb.Txn, dbi ourslmdb.DBI) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		all := make([][]byte, len(order))
		for j, i := range order {
			all[j] = keys.At(int(i))
		}
		var vals [][]byte
		t0 := time.Now()
		for off := 0; off < len(all); off += batch {
			end := min(off+batch, len(all))
			var found int
			if vals, found, err = cur.GetMany(all[off:end], vals); err != nil {
				return err
			}
			if found != end-off {
				return fmt.Errorf("GetMany: %d of %d keys found", found, end-off)
			}
			for _, v := range vals {
				r.sum = r.sum*31 + bench.ValueTag(v)
			}
			r.count += uint64(len(vals))
		}
		r.el = time.Since(t0)
		return nil
	})
	return r, err
}
