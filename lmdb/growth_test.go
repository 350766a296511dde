package lmdb

import (
	"encoding/binary"
	"fmt"
	"testing"

	stock "github.com/PowerDNS/lmdb-go/lmdb"
)

// growthTxns is the number of small write transactions each engine runs in
// TestSmallTxnsReuseFreePages.
const growthTxns = 60000

// growthPuts returns the three puts of small transaction i: two counters
// that every transaction rewrites and one of 5,000 keys with a value of
// 50 to 299 bytes.
func growthPuts(i int, big []byte) (keys, vals [3][]byte) {
	var ctr [8]byte
	binary.LittleEndian.PutUint64(ctr[:], uint64(i))
	keys[0], vals[0] = []byte("a"), ctr[:]
	keys[1], vals[1] = []byte("b"), ctr[:]
	keys[2], vals[2] = []byte(fmt.Sprintf("k%09d", i%5000)), big[:50+i%250]
	return keys, vals
}

// growthRun runs the growthTxns transactions: update must run its argument
// in one write transaction, passing it that transaction's put.
func growthRun(big []byte, update func(func(put func(k, v []byte) error) error) error) error {
	for i := 1; i <= growthTxns; i++ {
		keys, vals := growthPuts(i, big)
		err := update(func(put func(k, v []byte) error) error {
			for j := range keys {
				if err := put(keys[j], vals[j]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("txn %d: %w", i, err)
		}
	}
	return nil
}

// TestSmallTxnsReuseFreePages is the regression test for unbounded file
// growth under many small write transactions with no reader: saving the
// free list found no free page on hand and extended the file every time,
// and once that began the file grew with most commits (about 13 MB after 60,000
// three-put commits, where stock LMDB stays near 1 MB). The same workload
// runs on stock LMDB (lmdb-go) and on ours; our file may not end up more
// than a few pages larger than stock's.
func TestSmallTxnsReuseFreePages(t *testing.T) {
	big := make([]byte, 300)
	for i := range big {
		big[i] = byte('a' + i%26)
	}

	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.SetMapSize(1 << 30); err != nil {
		t.Fatal(err)
	}
	if err := env.Open(t.TempDir(), NoSync|NoMetaSync, 0o600); err != nil {
		t.Fatal(err)
	}
	var dbi DBI
	if err := env.Update(func(txn *Txn) (err error) { dbi, err = txn.OpenRoot(0); return err }); err != nil {
		t.Fatal(err)
	}
	if err := growthRun(big, func(put func(put func(k, v []byte) error) error) error {
		return env.Update(func(txn *Txn) error {
			return put(func(k, v []byte) error { return txn.Put(dbi, k, v, 0) })
		})
	}); err != nil {
		t.Fatalf("ours: %v", err)
	}
	info, err := env.Info()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}

	senv, err := stock.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer senv.Close()
	if err := senv.SetMapSize(1 << 30); err != nil {
		t.Fatal(err)
	}
	if err := senv.Open(t.TempDir(), stock.NoSync|stock.NoMetaSync, 0o600); err != nil {
		t.Fatal(err)
	}
	var sdbi stock.DBI
	if err := senv.Update(func(txn *stock.Txn) (err error) { sdbi, err = txn.OpenRoot(0); return err }); err != nil {
		t.Fatal(err)
	}
	if err := growthRun(big, func(put func(put func(k, v []byte) error) error) error {
		return senv.Update(func(txn *stock.Txn) error {
			return put(func(k, v []byte) error { return txn.Put(sdbi, k, v, 0) })
		})
	}); err != nil {
		t.Fatalf("stock: %v", err)
	}
	sinfo, err := senv.Info()
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("last page after %d three-put txns: ours %d, stock %d", growthTxns, info.LastPNO, sinfo.LastPNO)
	if limit := sinfo.LastPNO + sinfo.LastPNO/4 + 16; info.LastPNO > limit {
		t.Errorf("file grows: our last page %d, stock's %d (limit %d)", info.LastPNO, sinfo.LastPNO, limit)
	}
}
