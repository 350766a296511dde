//go:build !dlmdb_stockonly

package difftest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	dl "github.com/dlmdb/dlmdb-go/lmdb"
)

// Stock LMDB (lmdb-go) and files with counted DBs (cdlmdb/FORMAT.md, "DLMDB
// extensions"). Stock must refuse what it cannot read with an error, never
// crash or misread:
//   - a stock-made file with plain DBs reads the same in both engines;
//   - once ours adds a named counted DB, stock's env Open fails with
//     MDB_VERSION_MISMATCH (the meta version is what stock checks; marking
//     the DB's node instead would crash stock's cursors), and keeps failing
//     after the counted DB is dropped again; ours reads every DB, counts too;
//   - a counted main DB: the same; a plain main DB written by ours: stock
//     reads it (the control).
// Stock runs in a child process, so a crash is reported as such.

const ccMainName = "@main" // the root DB in DIFFTEST_NAMES

func init() {
	childRoles["counted-stock-probe"] = countedStockProbe
	childRoles["counted-stock-write"] = countedStockWrite
}

func kvHash(kvs []kvPair) string {
	h := uint64(1469598103934665603)
	for _, kv := range kvs {
		for _, b := range [][]byte{[]byte(strconv.Itoa(len(kv.k))), kv.k, []byte(strconv.Itoa(len(kv.v))), kv.v} {
			for _, c := range b {
				h = (h ^ uint64(c)) * 1099511628211
			}
			h = (h ^ 0xff) * 1099511628211
		}
	}
	return fmt.Sprintf("%016x", h)
}

// countedStockProbe (child): stock opens DIFFTEST_DIR read-only and, for
// each name in DIFFTEST_NAMES, prints "probe NAME code=C items=N hash=H".
func countedStockProbe() error {
	eng := stockEngine{}
	env, err := eng.openEnv(os.Getenv("DIFFTEST_DIR"), envOpts{mapSize: 64 << 20, maxDBs: 8, flags: fReadonly})
	if err != nil {
		fmt.Printf("envopen code=%d\n", eng.code(err))
		return nil
	}
	defer env.close()
	for _, name := range strings.Split(os.Getenv("DIFFTEST_NAMES"), ",") {
		txn, err := env.begin(nil, fReadonly)
		if err != nil {
			return err
		}
		open := name
		if name == ccMainName {
			open = ""
		}
		dbi, err := txn.openDBI(open, 0)
		if err != nil {
			fmt.Printf("probe %s code=%d items=0 hash=-\n", name, eng.code(err))
			txn.abort()
			continue
		}
		kvs, _, err := dumpTxnDB(eng, txn, dbi)
		txn.abort()
		fmt.Printf("probe %s code=%d items=%d hash=%s\n", name, eng.code(err), len(kvs), kvHash(kvs))
	}
	return nil
}

// countedStockWrite (child): stock writes to the plain DB DIFFTEST_NAMES.
func countedStockWrite() error {
	eng := stockEngine{}
	env, err := eng.openEnv(os.Getenv("DIFFTEST_DIR"), envOpts{mapSize: 64 << 20, maxDBs: 8})
	if err != nil {
		return err
	}
	defer env.close()
	for round := 0; round < 3; round++ {
		txn, err := env.begin(nil, 0)
		if err != nil {
			return err
		}
		dbi, err := txn.openDBI(os.Getenv("DIFFTEST_NAMES"), fCreate)
		if err != nil {
			txn.abort()
			return err
		}
		for i := 0; i < 400; i++ {
			k := []byte(fmt.Sprintf("stock-%d-%04d", round, i))
			if err := txn.put(dbi, k, []byte(strings.Repeat("s", i%300)), 0); err != nil {
				txn.abort()
				return err
			}
		}
		if err := txn.commit(); err != nil {
			return err
		}
	}
	return nil
}

type probeResult struct {
	code  int
	items int
	hash  string
}

// stockProbe runs the probe child; nil map if stock crashed (reported).
func stockProbe(t *testing.T, dir string, names ...string) map[string]probeResult {
	t.Helper()
	o := execChild("counted-stock-probe", "DIFFTEST_DIR="+dir, "DIFFTEST_NAMES="+strings.Join(names, ","))
	if o.crashed {
		t.Errorf("stock LMDB CRASHED reading %s (names %v) instead of refusing with an error:\n%s",
			filepath.Base(dir), names, headLines(o.out, 12))
		return nil
	}
	if o.err != nil || !strings.Contains(o.out, "CHILD-OK") {
		t.Fatalf("stock probe failed: %v\n%s", o.err, headLines(o.out, 30))
	}
	res := map[string]probeResult{}
	for _, l := range strings.Split(o.out, "\n") {
		var name string
		var r probeResult
		if strings.HasPrefix(l, "envopen ") {
			fmt.Sscanf(l, "envopen code=%d", &r.code)
			res["envopen"] = r
		} else if _, err := fmt.Sscanf(l, "probe %s code=%d items=%d hash=%s", &name, &r.code, &r.items, &r.hash); err == nil {
			res[name] = r
		}
	}
	return res
}

// ourDigest reads a DB with ours: items, hash, CountAll (or -1 if the DB
// refuses counting); the whole env must pass Check.
func ourDigest(t *testing.T, dir, name string) (int, string, int64) {
	t.Helper()
	env, err := oursEngine{}.openEnv(dir, envOpts{mapSize: 64 << 20, maxDBs: 8})
	if err != nil {
		t.Fatalf("ours: open %s: %v", dir, err)
	}
	defer env.close()
	txn, err := env.begin(nil, fReadonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.abort()
	if err := txn.check(); err != nil {
		t.Errorf("ours: Check of %s: %v", dir, err)
	}
	open := name
	if name == ccMainName {
		open = ""
	}
	dbi, err := txn.openDBI(open, 0)
	if err != nil {
		t.Fatalf("ours: open %s/%s: %v", dir, name, err)
	}
	kvs, _, err := dumpTxnDB(oursEngine{}, txn, dbi)
	if err != nil {
		t.Fatalf("ours: read %s/%s: %v", dir, name, err)
	}
	n, err := txn.(*oursTxn).t.CountAll(dl.DBI(dbi))
	cnt := int64(n)
	if errors.Is(err, dl.Incompatible) {
		cnt = -1
	} else if err != nil {
		t.Fatalf("ours: CountAll %s/%s: %v", dir, name, err)
	}
	return len(kvs), kvHash(kvs), cnt
}

// ccBuild writes an env with ours: the named DBs, or (names nil) a main DB
// with mainFlags.
func ccBuild(t *testing.T, dir string, named map[string]uint, mainFlags uint) {
	t.Helper()
	env, err := dl.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	env.SetMapSize(64 << 20)
	env.SetMaxDBs(8)
	if err := env.Open(dir, 0, 0o644); err != nil {
		t.Fatal(err)
	}
	put := func(txn *dl.Txn, dbi dl.DBI, dups bool) error {
		for i := 0; i < 3000; i++ {
			k := []byte(fmt.Sprintf("key-%05d", i))
			if dups {
				k = k[:7] // 300 keys, 10 values each
			}
			if err := txn.Put(dbi, k, []byte(fmt.Sprintf("val-%d-%s", i, strings.Repeat("v", i%50))), 0); err != nil {
				return err
			}
		}
		return nil
	}
	err = env.Update(func(txn *dl.Txn) error {
		if named == nil {
			dbi, err := txn.OpenRoot(mainFlags)
			if err != nil {
				return err
			}
			return put(txn, dbi, false)
		}
		for name, fl := range named {
			dbi, err := txn.OpenDBI(name, dl.Create|fl)
			if err != nil {
				return err
			}
			if err := put(txn, dbi, fl&dl.DupSort != 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if named == nil {
		// an extension flag cannot be added to a non-empty main DB
		err := env.Update(func(txn *dl.Txn) error { _, err := txn.OpenRoot(dl.Counted); return err })
		if mainFlags&dl.Counted == 0 && !errors.Is(err, dl.Incompatible) {
			t.Errorf("adding Counted to a non-empty main DB: %v, want Incompatible", err)
		} else if mainFlags&dl.Counted != 0 && err != nil {
			t.Errorf("reopening a counted main DB with Counted: %v", err)
		}
	}
}

func TestCountedStockCompat(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base := t.TempDir()

	dir := filepath.Join(base, "named")
	os.MkdirAll(dir, 0o755)
	if o := execChild("counted-stock-write", "DIFFTEST_DIR="+dir, "DIFFTEST_NAMES=plain"); o.crashed || o.err != nil {
		t.Fatalf("stock writing the plain DB: crashed=%v %v\n%s", o.crashed, o.err, headLines(o.out, 12))
	}
	n, h, c := ourDigest(t, dir, "plain")
	if n != 1200 || c != -1 {
		t.Errorf("ours reads stock's plain DB: %d items (want 1200), CountAll %d (want Incompatible)", n, c)
	}
	if res := stockProbe(t, dir, "plain"); res != nil && (res["plain"] != probeResult{0, n, h}) {
		t.Errorf("stock reads its plain DB as %+v, ours as %d items %s", res["plain"], n, h)
	}
	plain := probeResult{0, n, h}

	ccBuild(t, dir, map[string]uint{"plaindup": dl.DupSort, "cnt": dl.Counted, "cdup": dl.Counted | dl.DupSort}, 0)
	for _, name := range []string{"plaindup", "cnt", "cdup"} {
		n, _, c := ourDigest(t, dir, name)
		if n != 3000 {
			t.Errorf("ours: %s has %d items, want 3000", name, n)
		}
		if counted := name[0] == 'c'; counted && c != int64(n) || !counted && c != -1 {
			t.Errorf("ours: %s: CountAll %d, %d items", name, c, n)
		}
	}
	if n, h, _ := ourDigest(t, dir, "plain"); (probeResult{0, n, h}) != plain {
		t.Errorf("ours: the plain DB changed when counted DBs were added")
	}
	for _, names := range [][]string{{"cnt"}, {"plain"}, {ccMainName}} {
		if res := stockProbe(t, dir, names...); res != nil {
			if r, ok := res["envopen"]; !ok || r.code != eVersion {
				t.Errorf("stock opening a file with counted named DBs (then %v): %+v, want env open to fail with MDB_VERSION_MISMATCH",
					names, res)
			}
		}
	}
	// dropping the counted DBs leaves the file extended
	env, err := dl.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.SetMaxDBs(8)
	if err := env.Open(dir, 0, 0o644); err != nil {
		t.Fatal(err)
	}
	err = env.Update(func(txn *dl.Txn) error {
		for _, name := range []string{"cnt", "cdup"} {
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
	env.Close()
	if err != nil {
		t.Fatal(err)
	}
	if res := stockProbe(t, dir, "plain"); res != nil {
		if r, ok := res["envopen"]; !ok || r.code != eVersion {
			t.Errorf("stock opening the file after the counted DBs were dropped: %+v, want MDB_VERSION_MISMATCH", res)
		}
	}
	if n, h, _ := ourDigest(t, dir, "plain"); (probeResult{0, n, h}) != plain {
		t.Errorf("ours: the plain DB changed when the counted DBs were dropped")
	}

	// counted main DB: stock refuses the env; plain main DB: the control
	for _, counted := range []bool{false, true} {
		dir := filepath.Join(base, fmt.Sprintf("main-%v", counted))
		os.MkdirAll(dir, 0o755)
		var fl uint
		if counted {
			fl = dl.Counted
		}
		ccBuild(t, dir, nil, fl)
		n, h, c := ourDigest(t, dir, ccMainName)
		if n != 3000 || counted && c != 3000 || !counted && c != -1 {
			t.Errorf("ours: main DB (counted %v): %d items, CountAll %d", counted, n, c)
		}
		res := stockProbe(t, dir, ccMainName)
		if res == nil {
			continue
		}
		if counted {
			if r, ok := res["envopen"]; !ok || r.code != eVersion {
				t.Errorf("stock opening an env with a counted main DB: %+v, want env open to fail with MDB_VERSION_MISMATCH", res)
			}
		} else if r := res[ccMainName]; r.code != 0 || r.items != n || r.hash != h {
			t.Errorf("stock reading a plain main DB: %+v, ours %d items %s", r, n, h)
		}
	}
}
