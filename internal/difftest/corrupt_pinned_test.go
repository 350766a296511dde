//go:build !dlmdb_stockonly

package difftest

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	lmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// TestCorruptDupSortBigNode pins an engine crash FuzzCorruptFile found (on
// its pristine file with the prefix-compressed DBs added, input
// "\x00\aL\x00\a'-": the "cdups" record's root set to page 3): a DUPSORT
// DB whose root is damaged to point at a plain DB's leaf holding a big-data
// (overflow) node. A put of a second value under that node's key treats
// the 3000..11000-byte overflow value as a duplicate, builds a sub-tree
// with it as a key and copies it into a page-sized buffer: a heap overflow
// (glibc "double free or corruption" at env close without ASan,
// heap-buffer-overflow in dlmdb_tree_put from dlmdb_dup_put under -asan).
// Wanted: MDB_CORRUPTED (a DUPSORT leaf never holds a BIGDATA node, and a
// duplicate is at most 511 bytes), no crash. The test runs in a child
// process (isolate), so a crash fails it without taking the test binary
// down; the raw fuzz input is replayed there as well.
func TestCorruptDupSortBigNode(t *testing.T) {
	if isolate(t) {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cb := corruptPristine()
	if cb.err != nil {
		t.Fatalf("building the pristine file: %v", cb.err)
	}
	// the plain DB's leaf with the overflow nodes, and their keys
	var bigPage int
	var bigKeys [][]byte
	for _, sp := range cb.kinds["bignode"] {
		p := cb.file[sp.page*cb.psize : (sp.page+1)*cb.psize]
		off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*sp.slot:]))
		k := p[off+8 : off+8+int(binary.LittleEndian.Uint16(p[off+6:]))]
		if bytes.HasPrefix(k, []byte("ov")) && binary.LittleEndian.Uint16(p[10:])&wPPrefix == 0 {
			bigPage = sp.page
			bigKeys = append(bigKeys, append([]byte(nil), k...))
		}
	}
	if len(bigKeys) == 0 {
		t.Fatal("the pristine file has no plain leaf with overflow nodes")
	}
	for _, db := range []string{"dups", "cdups", "pdups"} {
		img := append([]byte(nil), cb.file...)
		found := false
		for _, sp := range cb.kinds["dbrec"] {
			p := img[sp.page*cb.psize : (sp.page+1)*cb.psize]
			off := int(binary.LittleEndian.Uint16(p[wPageHdr+2*sp.slot:]))
			ks := int(binary.LittleEndian.Uint16(p[off+6:]))
			if string(p[off+8:off+8+ks]) == db {
				binary.LittleEndian.PutUint64(p[off+8+ks+40:], uint64(bigPage))
				found = true
			}
		}
		if !found {
			t.Fatalf("no DB record for %s", db)
		}
		dir := filepath.Join(t.TempDir(), db)
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, "data.mdb"), img, 0o644); err != nil {
			t.Fatal(err)
		}
		env, err := lmdb.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		env.SetMapSize(8 << 20)
		env.SetMaxDBs(16)
		if err := env.Open(dir, lmdb.NoSync, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, k := range bigKeys {
			err := env.Update(func(txn *lmdb.Txn) error {
				dbi, err := txn.OpenDBI(db, 0)
				if err != nil {
					return err
				}
				return txn.Put(dbi, k, []byte("a second value"), 0)
			})
			if !lmdb.IsErrno(err, lmdb.Corrupted) {
				t.Errorf("%s with its root on a plain leaf: Put(%q, a second value) = %v, want MDB_CORRUPTED", db, k, err)
			}
		}
		if err := env.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// the fuzz input as found (its page numbers fit the pristine file of
	// this commit)
	in := []byte("\x00\aL\x00\a'-")
	if _, edits, _ := decodeCorruptInput(in); len(edits) != 1 || !strings.Contains(string(cb.file), "cdups") {
		t.Fatalf("decoding the pinned input: %v", edits)
	}
	runCorruptInput(t, cb, in)
}
