package lmdb_test

import (
	"testing"

	stock "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// TestConstantsMatchLMDBGo compares every exported constant with the one of
// the same name in github.com/PowerDNS/lmdb-go/lmdb (linked into the same
// test binary): a drop-in replacement must pass identical numbers.
func TestConstantsMatchLMDBGo(t *testing.T) {
	flags := []struct {
		name       string
		ours, them uint
	}{
		{"FixedMap", lmdb.FixedMap, stock.FixedMap},
		{"NoSubdir", lmdb.NoSubdir, stock.NoSubdir},
		{"Readonly", lmdb.Readonly, stock.Readonly},
		{"WriteMap", lmdb.WriteMap, stock.WriteMap},
		{"NoMetaSync", lmdb.NoMetaSync, stock.NoMetaSync},
		{"NoSync", lmdb.NoSync, stock.NoSync},
		{"MapAsync", lmdb.MapAsync, stock.MapAsync},
		{"NoTLS", lmdb.NoTLS, stock.NoTLS},
		{"NoLock", lmdb.NoLock, stock.NoLock},
		{"NoReadahead", lmdb.NoReadahead, stock.NoReadahead},
		{"NoMemInit", lmdb.NoMemInit, stock.NoMemInit},
		{"CopyCompact", lmdb.CopyCompact, stock.CopyCompact},
		{"ReverseKey", lmdb.ReverseKey, stock.ReverseKey},
		{"DupSort", lmdb.DupSort, stock.DupSort},
		{"DupFixed", lmdb.DupFixed, stock.DupFixed},
		{"ReverseDup", lmdb.ReverseDup, stock.ReverseDup},
		{"Create", lmdb.Create, stock.Create},
		{"IntegerKey", lmdb.IntegerKey, stock.IntegerKey},
		{"IntegerDup", lmdb.IntegerDup, stock.IntegerDup},
		{"First", lmdb.First, stock.First},
		{"FirstDup", lmdb.FirstDup, stock.FirstDup},
		{"GetBoth", lmdb.GetBoth, stock.GetBoth},
		{"GetBothRange", lmdb.GetBothRange, stock.GetBothRange},
		{"GetCurrent", lmdb.GetCurrent, stock.GetCurrent},
		{"GetMultiple", lmdb.GetMultiple, stock.GetMultiple},
		{"Last", lmdb.Last, stock.Last},
		{"LastDup", lmdb.LastDup, stock.LastDup},
		{"Next", lmdb.Next, stock.Next},
		{"NextDup", lmdb.NextDup, stock.NextDup},
		{"NextMultiple", lmdb.NextMultiple, stock.NextMultiple},
		{"NextNoDup", lmdb.NextNoDup, stock.NextNoDup},
		{"Prev", lmdb.Prev, stock.Prev},
		{"PrevDup", lmdb.PrevDup, stock.PrevDup},
		{"PrevNoDup", lmdb.PrevNoDup, stock.PrevNoDup},
		{"Set", lmdb.Set, stock.Set},
		{"SetKey", lmdb.SetKey, stock.SetKey},
		{"SetRange", lmdb.SetRange, stock.SetRange},
		{"Current", lmdb.Current, stock.Current},
		{"NoDupData", lmdb.NoDupData, stock.NoDupData},
		{"NoOverwrite", lmdb.NoOverwrite, stock.NoOverwrite},
		{"Append", lmdb.Append, stock.Append},
		{"AppendDup", lmdb.AppendDup, stock.AppendDup},
	}
	for _, f := range flags {
		if f.ours != f.them {
			t.Errorf("%s = %#x, lmdb-go has %#x", f.name, f.ours, f.them)
		}
	}
	codes := []struct {
		name string
		ours lmdb.Errno
		them stock.Errno
	}{
		{"KeyExist", lmdb.KeyExist, stock.KeyExist},
		{"NotFound", lmdb.NotFound, stock.NotFound},
		{"PageNotFound", lmdb.PageNotFound, stock.PageNotFound},
		{"Corrupted", lmdb.Corrupted, stock.Corrupted},
		{"Panic", lmdb.Panic, stock.Panic},
		{"VersionMismatch", lmdb.VersionMismatch, stock.VersionMismatch},
		{"Invalid", lmdb.Invalid, stock.Invalid},
		{"MapFull", lmdb.MapFull, stock.MapFull},
		{"DBsFull", lmdb.DBsFull, stock.DBsFull},
		{"ReadersFull", lmdb.ReadersFull, stock.ReadersFull},
		{"TLSFull", lmdb.TLSFull, stock.TLSFull},
		{"TxnFull", lmdb.TxnFull, stock.TxnFull},
		{"CursorFull", lmdb.CursorFull, stock.CursorFull},
		{"PageFull", lmdb.PageFull, stock.PageFull},
		{"MapResized", lmdb.MapResized, stock.MapResized},
		{"Incompatible", lmdb.Incompatible, stock.Incompatible},
		{"BadRSlot", lmdb.BadRSlot, stock.BadRSlot},
		{"BadTxn", lmdb.BadTxn, stock.BadTxn},
		{"BadValSize", lmdb.BadValSize, stock.BadValSize},
		{"BadDBI", lmdb.BadDBI, stock.BadDBI},
	}
	for _, c := range codes {
		if int(c.ours) != int(c.them) {
			t.Errorf("%s = %d, lmdb-go has %d", c.name, c.ours, c.them)
		}
	}
	if a, b := (*lmdb.Env)(nil).MaxKeySize(), (*stock.Env)(nil).MaxKeySize(); a != b {
		t.Errorf("MaxKeySize = %d, lmdb-go %d", a, b)
	}
}

// TestFileCompatWithLMDBGo writes a database with each engine and reads it
// with the other, through the two Go APIs side by side.
func TestFileCompatWithLMDBGo(t *testing.T) {
	type opener func(dir string, flags uint) (put func(k, v string) error, get func(k string) (string, error), done func())
	oursOpen := func(dir string, flags uint) (func(k, v string) error, func(k string) (string, error), func()) {
		env, err := lmdb.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		env.SetMaxDBs(2)
		if err := env.Open(dir, flags, 0o600); err != nil {
			t.Fatal(err)
		}
		put := func(k, v string) error {
			return env.Update(func(txn *lmdb.Txn) error {
				db, err := txn.OpenDBI("named-db", lmdb.Create)
				if err != nil {
					return err
				}
				return txn.Put(db, []byte(k), []byte(v), 0)
			})
		}
		get := func(k string) (s string, err error) {
			err = env.View(func(txn *lmdb.Txn) error {
				db, err := txn.OpenDBI("named-db", 0)
				if err != nil {
					return err
				}
				v, err := txn.Get(db, []byte(k))
				s = string(v)
				return err
			})
			return s, err
		}
		return put, get, func() { env.Close() }
	}
	stockOpen := func(dir string, flags uint) (func(k, v string) error, func(k string) (string, error), func()) {
		env, err := stock.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		env.SetMaxDBs(2)
		if err := env.Open(dir, flags, 0o600); err != nil {
			t.Fatal(err)
		}
		put := func(k, v string) error {
			return env.Update(func(txn *stock.Txn) error {
				db, err := txn.OpenDBI("named-db", stock.Create)
				if err != nil {
					return err
				}
				return txn.Put(db, []byte(k), []byte(v), 0)
			})
		}
		get := func(k string) (s string, err error) {
			err = env.View(func(txn *stock.Txn) error {
				db, err := txn.OpenDBI("named-db", 0)
				if err != nil {
					return err
				}
				v, err := txn.Get(db, []byte(k))
				s = string(v)
				return err
			})
			return s, err
		}
		return put, get, func() { env.Close() }
	}
	pairs := []struct {
		name           string
		writer, reader opener
	}{
		{"ours->stock", oursOpen, stockOpen},
		{"stock->ours", stockOpen, oursOpen},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			put, _, done := p.writer(dir, 0)
			for _, k := range []string{"a", "odd", "even", "seventeen-chars!!"} {
				if err := put(k, "value of "+k); err != nil {
					done()
					t.Fatal(err)
				}
			}
			done()
			_, get, done := p.reader(dir, lmdb.Readonly)
			defer done()
			for _, k := range []string{"a", "odd", "even", "seventeen-chars!!"} {
				v, err := get(k)
				if err != nil || v != "value of "+k {
					t.Errorf("%s: %q, %v", k, v, err)
				}
			}
		})
	}
}
