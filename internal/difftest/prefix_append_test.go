//go:build !dlmdb_stockonly

package difftest

import (
	"fmt"
	"runtime"
	"testing"

	dl "github.com/dlmdb/dlmdb-go/lmdb"
)

// TestPrefixAppendCompresses: a sorted load with MDB_APPEND (MDB_APPENDDUP
// for duplicates), as lmdb_load -a and bulk conversions do it, must compress
// about as well as the same sorted load with plain puts. The keys (and the
// duplicate values) share a 54-byte prefix. Asserted: the APPEND load takes
// fewer leaf pages than the uncompressed DB and at most 5/4 (+1) of the
// in-order compressed load's.
func TestPrefixAppendCompresses(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const pfx = "urn:dlmdb:append-test/a-long-shared-prefix/0123456789/"
	n := 5000 * testScale(t)
	for _, dup := range []bool{false, true} {
		env, err := dl.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		env.SetMapSize(256 << 20)
		env.SetMaxDBs(4)
		if err := env.Open(t.TempDir(), dl.NoSync, 0o644); err != nil {
			t.Fatal(err)
		}
		var base uint
		putFlag := uint(dl.Append)
		if dup {
			base, putFlag = dl.DupSort, dl.AppendDup
		}
		leaves := map[string]uint64{}
		err = env.Update(func(txn *dl.Txn) error {
			for _, c := range []struct {
				name  string
				flags uint
				put   uint
			}{
				{"plain", base, 0},
				{"compressed", base | dl.PrefixCompression, 0},
				{"compressed+append", base | dl.PrefixCompression, putFlag},
			} {
				dbi, err := txn.OpenDBI(c.name, dl.Create|c.flags)
				if err != nil {
					return err
				}
				for i := 0; i < n; i++ {
					k, v := []byte(fmt.Sprintf("%s%08d", pfx, i)), []byte("v")
					if dup {
						k = []byte(fmt.Sprintf("%s%04d", pfx, i/10)) // inline sub-pages: they sit in the leaves
						v = []byte(fmt.Sprintf("%s%08d", pfx, i))
					}
					if err := txn.Put(dbi, k, v, c.put); err != nil {
						return fmt.Errorf("%s: put %d: %w", c.name, i, err)
					}
				}
				st, err := txn.Stat(dbi)
				if err != nil {
					return err
				}
				if st.Entries != uint64(n) {
					return fmt.Errorf("%s: %d entries, want %d", c.name, st.Entries, n)
				}
				leaves[c.name] = st.LeafPages
			}
			return txn.Check()
		})
		env.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("dupsort %v: leaf pages %v", dup, leaves)
		if a, c, p := leaves["compressed+append"], leaves["compressed"], leaves["plain"]; a >= p || a > c*5/4+1 {
			t.Errorf("ENGINE (compression lost under MDB_APPEND, dupsort %v): %d keys with a shared %d-byte prefix take %d leaf pages "+
				"loaded with APPEND, %d with in-order puts, %d uncompressed; want fewer than uncompressed and at most %d",
				dup, n, len(pfx), a, c, p, c*5/4+1)
		}
	}
}
