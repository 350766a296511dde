//go:build !dlmdb_stockonly

package difftest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	dl "github.com/dlmdb/dlmdb-go/lmdb"
)

// Stock LMDB (lmdb-go) and files with prefix-compressed DBs (cdlmdb/FORMAT.md,
// "DLMDB extensions" and "Prefix-compressed leaves"), in the style of
// TestCountedStockCompat. The rule pinned here: a commit that leaves a DB
// with MDB_PREFIX_COMPRESSION in the file writes meta version 0x444C4301, and
// every later commit keeps it, so stock's env open fails with
// MDB_VERSION_MISMATCH, never reads the compressed leaves and never crashes:
//   - named compressed DBs (plain, DUPSORT, with Counted): refused, and still
//     refused after they are dropped again; ours reads all of them;
//   - a compressed named DB created empty and committed: refused (the record
//     carries the flag); one created in a txn that aborts: the file stays
//     version 1 and stock reads it;
//   - a compressed (and compressed+counted) main DB: refused.
// Stock runs in a child process (stockProbe), so a crash is reported as such.

const metaVersionExt = 0x444C4301 // FORMAT.md "Stock refusal: the meta version"

// newestMetaVersion reads the version field of the newest meta page of dir.
func newestMetaVersion(t *testing.T, dir string) uint32 {
	t.Helper()
	b := make([]byte, 2*4096)
	f, err := os.Open(filepath.Join(dir, "data.mdb"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	m := b[wPageHdr:]
	if binary.LittleEndian.Uint64(b[4096+wPageHdr+128:]) > binary.LittleEndian.Uint64(b[wPageHdr+128:]) {
		m = b[4096+wPageHdr:]
	}
	return binary.LittleEndian.Uint32(m[4:])
}

// prefixLeafPages walks the data file of dir (fileWalker) and counts, over
// every tree page, the leaf pages and those of them with P_PREFIX; problems
// of the walk are returned too.
func prefixLeafPages(dir string) (leaves, prefixed int, probs []string) {
	path := filepath.Join(dir, "data.mdb")
	probs, _ = walkFile(path)
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, append(probs, err.Error())
	}
	defer f.Close()
	// only the used part: a WriteMap env's file is as long as the map
	const ps = 4096
	b := make([]byte, 2*ps)
	if _, err := f.ReadAt(b, 0); err != nil {
		return 0, 0, append(probs, err.Error())
	}
	m := b[wPageHdr:]
	if binary.LittleEndian.Uint64(b[ps+wPageHdr+128:]) > binary.LittleEndian.Uint64(b[wPageHdr+128:]) {
		m = b[ps+wPageHdr:]
	}
	if last := binary.LittleEndian.Uint64(m[120:]); last < 1<<20 {
		full := make([]byte, int(last+1)*ps)
		n, _ := f.ReadAt(full, 0)
		b = full[:n]
		m = b[wPageHdr:]
		if binary.LittleEndian.Uint64(b[ps+wPageHdr+128:]) > binary.LittleEndian.Uint64(b[wPageHdr+128:]) {
			m = b[ps+wPageHdr:]
		}
	}
	w := &fileWalker{b: b, psize: ps, last: binary.LittleEndian.Uint64(m[120:]), owner: map[uint64]string{}, subFlags: map[uint16]int{}}
	w.walkDB(m[24+wDBSize:24+2*wDBSize], "main DB", true)
	for pg, who := range w.owner {
		if strings.HasSuffix(who, "(overflow)") {
			continue
		}
		p := w.page(pg)
		if p == nil {
			continue
		}
		fl := binary.LittleEndian.Uint16(p[10:])
		if fl&wPLeaf != 0 && fl&wPLeaf2 == 0 {
			leaves++
			if fl&wPPrefix != 0 {
				prefixed++
			}
		}
	}
	for f, n := range w.subFlags {
		if f&wPPrefix != 0 {
			prefixed += n
		}
	}
	return leaves, prefixed, probs
}

// wantRefused: stock's env open of dir fails with MDB_VERSION_MISMATCH (and
// so returns no data), whichever DBs it would then read.
func wantRefused(t *testing.T, dir, what string, names ...string) {
	t.Helper()
	res := stockProbe(t, dir, names...)
	if res == nil {
		return // a crash, already reported
	}
	if r, ok := res["envopen"]; !ok || r.code != eVersion {
		t.Errorf("stock opening %s (then reading %v): %+v, want env open to fail with MDB_VERSION_MISMATCH (%d)",
			what, names, res, eVersion)
	}
	for _, n := range names {
		if r, ok := res[n]; ok {
			t.Errorf("stock read %s/%s from %s: %+v; it must not get that far", filepath.Base(dir), n, what, r)
		}
	}
	if v := newestMetaVersion(t, dir); v != metaVersionExt {
		t.Errorf("%s: newest meta version %#x, want %#x", what, v, metaVersionExt)
	}
}

func TestPrefixStockCompat(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base := t.TempDir()
	pc := uint(dl.PrefixCompression)

	// stock writes a plain DB, ours adds compressed ones beside it
	dir := filepath.Join(base, "named")
	os.MkdirAll(dir, 0o755)
	if o := execChild("counted-stock-write", "DIFFTEST_DIR="+dir, "DIFFTEST_NAMES=plain"); o.crashed || o.err != nil {
		t.Fatalf("stock writing the plain DB: crashed=%v %v\n%s", o.crashed, o.err, headLines(o.out, 12))
	}
	if v := newestMetaVersion(t, dir); v != 1 {
		t.Fatalf("stock's own file has meta version %#x, want 1", v)
	}
	n, h, _ := ourDigest(t, dir, "plain")
	plain := probeResult{0, n, h}
	named := map[string]uint{"pfx": pc, "pdup": pc | dl.DupSort, "pcnt": pc | dl.Counted, "pcdup": pc | dl.Counted | dl.DupSort}
	ccBuild(t, dir, named, 0)
	for name, fl := range named {
		n, _, c := ourDigest(t, dir, name)
		if n != 3000 {
			t.Errorf("ours: %s has %d items, want 3000", name, n)
		}
		if counted := fl&dl.Counted != 0; counted && c != int64(n) || !counted && c != -1 {
			t.Errorf("ours: %s: CountAll %d, %d items", name, c, n)
		}
	}
	leaves, prefixed, probs := prefixLeafPages(dir)
	if len(probs) > 0 {
		t.Errorf("file walk of the env with compressed DBs: %v", probs)
	}
	// every leaf of the four compressed DBs is P_PREFIX; stock's plain DB
	// and the main DB are not
	if prefixed == 0 || prefixed >= leaves {
		t.Errorf("%d of %d leaf pages (and sub-pages) have P_PREFIX: want some, not all", prefixed, leaves)
	}
	if n, h, _ := ourDigest(t, dir, "plain"); (probeResult{0, n, h}) != plain {
		t.Errorf("ours: the plain DB changed when compressed DBs were added")
	}
	for _, names := range [][]string{{"pfx", "pdup"}, {"plain", ccMainName}} {
		wantRefused(t, dir, "a file with compressed named DBs", names...)
	}

	// drop them all (deleted from the main DB): the file stays extended
	env, err := dl.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.SetMaxDBs(8)
	if err := env.Open(dir, 0, 0o644); err != nil {
		t.Fatal(err)
	}
	err = env.Update(func(txn *dl.Txn) error {
		for name := range named {
			dbi, err := txn.OpenDBI(name, 0)
			if err != nil {
				return err
			}
			if err := txn.Drop(dbi, true); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		// two more commits: both meta pages are written after the drop
		for i := 0; i < 2 && err == nil; i++ {
			err = env.Update(func(txn *dl.Txn) error {
				dbi, err := txn.OpenDBI("plain", 0)
				if err != nil {
					return err
				}
				return txn.Put(dbi, []byte(fmt.Sprintf("after-drop-%d", i)), []byte("x"), 0)
			})
		}
	}
	env.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, prefixed, probs := prefixLeafPages(dir); prefixed != 0 || len(probs) > 0 {
		t.Errorf("after dropping the compressed DBs: %d P_PREFIX pages left, walk problems %v", prefixed, probs)
	}
	wantRefused(t, dir, "a file whose compressed DBs were dropped", "plain")
	if n, _, _ := ourDigest(t, dir, "plain"); n != plain.items+2 {
		t.Errorf("ours: the plain DB has %d items after the drop and two puts, want %d", n, plain.items+2)
	}

	// an empty compressed DB committed: refused; created and aborted: plain
	for _, commit := range []bool{true, false} {
		dir := filepath.Join(base, fmt.Sprintf("empty-%v", commit))
		os.MkdirAll(dir, 0o755)
		if o := execChild("counted-stock-write", "DIFFTEST_DIR="+dir, "DIFFTEST_NAMES=plain"); o.crashed || o.err != nil {
			t.Fatalf("stock writing the plain DB: crashed=%v %v\n%s", o.crashed, o.err, headLines(o.out, 12))
		}
		env, err := dl.NewEnv()
		if err != nil {
			t.Fatal(err)
		}
		env.SetMaxDBs(8)
		if err := env.Open(dir, 0, 0o644); err != nil {
			t.Fatal(err)
		}
		abort := errors.New("abort on purpose")
		err = env.Update(func(txn *dl.Txn) error {
			if _, err := txn.OpenDBI("pempty", dl.Create|pc|dl.DupSort); err != nil {
				return err
			}
			if !commit {
				return abort
			}
			return nil
		})
		env.Close()
		if commit && err != nil || !commit && err != abort {
			t.Fatalf("creating an empty compressed DB (commit %v): %v", commit, err)
		}
		if commit {
			wantRefused(t, dir, "a file with an empty compressed DB", "plain")
			continue
		}
		if v := newestMetaVersion(t, dir); v != 1 {
			t.Errorf("a compressed DB created in an aborted txn: meta version %#x, want 1", v)
		}
		if res := stockProbe(t, dir, "plain", "pempty"); res != nil {
			if r := res["plain"]; r != (probeResult{0, plain.items, plain.hash}) {
				t.Errorf("stock reading its plain DB after an aborted compressed create: %+v, want %+v", r, plain)
			}
			if r := res["pempty"]; r.code != eNotFound {
				t.Errorf("stock opening the aborted compressed DB: %+v, want MDB_NOTFOUND", r)
			}
		}
	}

	// a compressed main DB, alone and with Counted
	for _, fl := range []uint{pc, pc | dl.Counted} {
		dir := filepath.Join(base, fmt.Sprintf("main-%#x", fl))
		os.MkdirAll(dir, 0o755)
		ccBuild(t, dir, nil, fl)
		n, _, c := ourDigest(t, dir, ccMainName)
		if n != 3000 || fl&dl.Counted != 0 && c != 3000 || fl&dl.Counted == 0 && c != -1 {
			t.Errorf("ours: main DB (flags %#x): %d items, CountAll %d", fl, n, c)
		}
		if leaves, prefixed, probs := prefixLeafPages(dir); leaves == 0 || prefixed != leaves || len(probs) > 0 {
			t.Errorf("compressed main DB (flags %#x): %d of %d leaves P_PREFIX (want all), walk problems %v", fl, prefixed, leaves, probs)
		}
		wantRefused(t, dir, fmt.Sprintf("an env with a compressed main DB (flags %#x)", fl), ccMainName)
	}
}
