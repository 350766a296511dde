// The Go side of the cgo floor for our binding. goside_stock.go is generated
// from this file by gen_stock.sh (`go generate ./bench/cgofloor`).

package cgofloor

import (
	"errors"
	"fmt"
	"time"

	"github.com/dlmdb/dlmdb-go/bench"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// oursLoad writes n sequential entries into a new environment in dir and
// verifies them.
func oursLoad(dir string, mapSize int64, n, valSize int, keys bench.Keys) error {
	env, err := ourslmdb.NewEnv()
	if err != nil {
		return err
	}
	defer env.Close()
	if err := env.SetMapSize(mapSize); err != nil {
		return err
	}
	if err := env.Open(dir, ourslmdb.NoSync|ourslmdb.NoMetaSync, 0o644); err != nil {
		return err
	}
	val := make([]byte, valSize)
	for lo := 0; lo < n; lo += 50_000 {
		err := env.Update(func(txn *ourslmdb.Txn) error {
			dbi, err := txn.OpenRoot(0)
			if err != nil {
				return err
			}
			for i := lo; i < min(lo+50_000, n); i++ {
				bench.FillValue(val, i)
				if err := txn.Put(dbi, keys.At(i), val, 0); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if err := env.Sync(true); err != nil {
		return err
	}
	return env.View(func(txn *ourslmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		if st.Entries != uint64(n) {
			return fmt.Errorf("load: %d entries, want %d", st.Entries, n)
		}
		for i := 0; i < n; i += 101 {
			v, err := txn.Get(dbi, keys.At(i))
			if err != nil {
				return err
			}
			bench.FillValue(val, i)
			if string(v) != string(val) {
				return errors.New("load: value read back differs")
			}
		}
		return nil
	})
}

// oursWithTxn opens the environment (outside the caller's timer), runs fn in
// a RawRead read transaction on the main DB and closes everything.
func oursWithTxn(dir string, mapSize int64, fn func(*ourslmdb.Txn, ourslmdb.DBI) error) error {
	env, err := ourslmdb.NewEnv()
	if err != nil {
		return err
	}
	defer env.Close()
	if err := env.SetMapSize(mapSize); err != nil {
		return err
	}
	if err := env.Open(dir, ourslmdb.Readonly, 0o644); err != nil {
		return err
	}
	txn, err := env.BeginTxn(nil, ourslmdb.Readonly)
	if err != nil {
		return err
	}
	defer txn.Abort()
	txn.RawRead = true
	dbi, err := txn.OpenRoot(0)
	if err != nil {
		return err
	}
	return fn(txn, dbi)
}

// oursGets times Txn.Get of the keys in order; it returns the checksum of
// the values' tags, the count and the loop time.
func oursGets(dir string, mapSize int64, keys bench.Keys, order []int32) (loopResult, error) {
	var r loopResult
	err := oursWithTxn(dir, mapSize, func(txn *ourslmdb.Txn, dbi ourslmdb.DBI) error {
		t0 := time.Now()
		for _, i := range order {
			v, err := txn.Get(dbi, keys.At(int(i)))
			if err != nil {
				return err
			}
			r.sum = r.sum*31 + bench.ValueTag(v)
			r.count++
		}
		r.el = time.Since(t0)
		return nil
	})
	return r, err
}

// oursScan times passes full cursor scans (First, then Next to the end).
func oursScan(dir string, mapSize int64, passes int) (loopResult, error) {
	var r loopResult
	err := oursWithTxn(dir, mapSize, func(txn *ourslmdb.Txn, dbi ourslmdb.DBI) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		t0 := time.Now()
		for p := 0; p < passes; p++ {
			_, v, err := cur.Get(nil, nil, ourslmdb.First)
			for err == nil {
				r.sum = r.sum*31 + bench.ValueTag(v)
				r.count++
				_, v, err = cur.Get(nil, nil, ourslmdb.Next)
			}
			if !ourslmdb.IsNotFound(err) {
				return err
			}
		}
		r.el = time.Since(t0)
		return nil
	})
	return r, err
}
