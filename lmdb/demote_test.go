package lmdb_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	stock "github.com/PowerDNS/lmdb-go/lmdb"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// Duplicates that grew into a sub-tree move back into an inline sub-page
// once deletes shrink them enough (cdlmdb/FORMAT.md, "When duplicates
// move"). Seen from Go: the main DB's leaves fill up with the inline
// values (Stat's leaf pages grow although no key was added), the freed
// sub-tree pages leave the pages in use, Env.Check passes, and the file
// still reads the same in stock LMDB, which keeps working on it.

const (
	demoteKeys = 200
	demoteGrow = 120 // 12-byte values: past the promotion point (~90)
	demoteKeep = 30  // inline node ~700 bytes: under nodemax/2 (1019)
)

func demoteKey(i int) []byte { return []byte(fmt.Sprintf("key%05d", i)) }
func demoteVal(j int) []byte { return []byte(fmt.Sprintf("v%011d", j)) }

// pagesInUse: pages of the snapshot that are neither meta pages nor listed
// in the free DB (every tree page, sub-trees included).
func pagesInUse(t *testing.T, env *lmdb.Env) int64 {
	t.Helper()
	info, err := env.Info()
	if err != nil {
		t.Fatal(err)
	}
	var free int64
	err = env.View(func(txn *lmdb.Txn) error {
		cur, err := txn.OpenCursor(0)
		if err != nil {
			return err
		}
		defer cur.Close()
		for {
			_, v, err := cur.Get(nil, nil, lmdb.Next)
			if lmdb.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			free += int64(binary.NativeEndian.Uint64(v[:8]))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return info.LastPNO + 1 - 2 - free
}

func TestDuplicatesDemoted(t *testing.T) {
	dir := t.TempDir()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	env.SetMaxDBs(2)
	env.SetMapSize(64 << 20)
	if err := env.Open(dir, 0, 0o644); err != nil {
		t.Fatal(err)
	}
	var dbi lmdb.DBI
	stat := func() *lmdb.Stat {
		var st *lmdb.Stat
		if err := env.View(func(txn *lmdb.Txn) (err error) { st, err = txn.Stat(dbi); return }); err != nil {
			t.Fatal(err)
		}
		return st
	}
	err = env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenDBI("d", lmdb.Create|lmdb.DupSort); err != nil {
			return err
		}
		for i := 0; i < demoteKeys; i++ {
			for j := 0; j < demoteGrow; j++ {
				if err := txn.Put(dbi, demoteKey(i), demoteVal(j), 0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	grown, usedGrown := stat(), pagesInUse(t, env)
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
	// every key a sub-tree: the main DB holds 48-byte records only, and
	// each sub-tree has a leaf of its own
	if usedGrown < demoteKeys {
		t.Fatalf("grown: %d pages in use, want at least one sub-tree leaf per key (%d)", usedGrown, demoteKeys)
	}
	err = env.Update(func(txn *lmdb.Txn) error {
		for i := 0; i < demoteKeys; i++ {
			for j := demoteKeep; j < demoteGrow; j++ {
				if err := txn.Del(dbi, demoteKey(i), demoteVal(j)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	shrunk, usedShrunk := stat(), pagesInUse(t, env)
	if err := env.Check(); err != nil {
		t.Fatal(err)
	}
	if shrunk.Entries != demoteKeys*demoteKeep || grown.Entries != demoteKeys*demoteGrow {
		t.Fatalf("entries %d then %d", grown.Entries, shrunk.Entries)
	}
	// inline, each key's node is 8 + 8 + 16 + 30*22 = 692 bytes: the main
	// DB needs at least 200*694/4080 leaves; with sub-tree records (66
	// bytes a key) it needed a handful
	minLeaves := uint64(demoteKeys * 694 / 4080)
	if shrunk.LeafPages < minLeaves || grown.LeafPages >= minLeaves {
		t.Errorf("main DB leaf pages %d (grown) -> %d (shrunk); want < %d -> >= %d: duplicates not demoted",
			grown.LeafPages, shrunk.LeafPages, minLeaves, minLeaves)
	}
	if shrunk.Depth > grown.Depth+1 || shrunk.OverflowPages != 0 || shrunk.BranchPages < grown.BranchPages {
		t.Errorf("stat after shrinking: %+v (before: %+v)", *shrunk, *grown)
	}
	// the sub-tree leaves were freed: the pages in use shrink although the
	// main DB grew
	if usedShrunk >= usedGrown-demoteKeys/2 {
		t.Errorf("pages in use %d -> %d: the sub-tree leaves were not freed", usedGrown, usedShrunk)
	}
	t.Logf("main DB leaf pages %d -> %d, pages in use %d -> %d", grown.LeafPages, shrunk.LeafPages, usedGrown, usedShrunk)
	want := demoteContents(t, env, dbi)
	env.Close()

	// the same file in stock LMDB (its own lock file: ours has another format)
	sdir := t.TempDir()
	copyFile(t, filepath.Join(dir, "data.mdb"), filepath.Join(sdir, "data.mdb"))
	senv, err := stock.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	senv.SetMaxDBs(2)
	senv.SetMapSize(64 << 20)
	if err := senv.Open(sdir, 0, 0o644); err != nil {
		senv.Close()
		t.Fatal(err)
	}
	var got []byte
	err = senv.Update(func(txn *stock.Txn) error {
		sdbi, err := txn.OpenDBI("d", 0)
		if err != nil {
			return err
		}
		cur, err := txn.OpenCursor(sdbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		for op := uint(stock.First); ; op = stock.Next {
			k, v, err := cur.Get(nil, nil, op)
			if stock.IsNotFound(err) {
				break
			}
			if err != nil {
				return err
			}
			got = append(append(append(got, k...), '='), v...)
			got = append(got, '\n')
		}
		// stock keeps working on the demoted keys: one grows back into
		// a sub-tree, one loses a value, one gains one
		for j := demoteKeep; j < demoteGrow; j++ {
			if err := txn.Put(sdbi, demoteKey(0), demoteVal(j), 0); err != nil {
				return err
			}
		}
		if err := txn.Del(sdbi, demoteKey(1), demoteVal(0)); err != nil {
			return err
		}
		return txn.Put(sdbi, demoteKey(2), demoteVal(demoteGrow), 0)
	})
	senv.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("stock LMDB reads %d bytes of items, ours wrote %d", len(got), len(want))
	}

	// and back in ours: structure and the stock writes intact
	odir := t.TempDir()
	copyFile(t, filepath.Join(sdir, "data.mdb"), filepath.Join(odir, "data.mdb"))
	env2, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env2.Close()
	env2.SetMaxDBs(2)
	if err := env2.Open(odir, 0, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := env2.Check(); err != nil {
		t.Fatal(err)
	}
	err = env2.View(func(txn *lmdb.Txn) error {
		d2, err := txn.OpenDBI("d", 0)
		if err != nil {
			return err
		}
		cur, err := txn.OpenCursor(d2)
		if err != nil {
			return err
		}
		defer cur.Close()
		for i, want := range []uint64{demoteGrow, demoteKeep - 1, demoteKeep + 1, demoteKeep} {
			if _, _, err := cur.Get(demoteKey(i), nil, lmdb.SetKey); err != nil {
				return err
			}
			if n, err := cur.Count(); err != nil || n != want {
				return fmt.Errorf("key %d: %d values (%v), want %d", i, n, err, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func demoteContents(t *testing.T, env *lmdb.Env, dbi lmdb.DBI) []byte {
	t.Helper()
	var out []byte
	err := env.View(func(txn *lmdb.Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		for op := uint(lmdb.First); ; op = lmdb.Next {
			k, v, err := cur.Get(nil, nil, op)
			if lmdb.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			out = append(append(append(out, k...), '='), v...)
			out = append(out, '\n')
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no items")
	}
	return out
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
