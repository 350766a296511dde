// Batched Go scans of the cgo floor: our binding only (stock lmdb-go has no
// mdb_cursor_get_batch), so these loops are not part of goside_ours.go and
// its generated stock twin.

package cgofloor

import (
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
