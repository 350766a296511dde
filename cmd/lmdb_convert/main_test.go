package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	dlmdb "github.com/dlmdb/dlmdb-go"
	"github.com/dlmdb/dlmdb-go/internal/toolutil"
	"github.com/dlmdb/dlmdb-go/internal/toolutil/tooltest"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

func convert(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(args, &out, &errOut)
	if errOut.Len() > 0 {
		t.Errorf("%v wrote to stderr (not a terminal): %q", args, errOut.String())
	}
	return out.String(), err
}

// expectDB reads database db of the environment at dir with our engine: the
// fixture's pairs in the database's order, flags want, and the checker
// passes.
func expectDB(t *testing.T, dir string, db tooltest.DB, want uint) {
	t.Helper()
	env, err := toolutil.OpenEnv(dir, lmdb.Readonly, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	err = env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(db.Name, 0)
		if err != nil {
			return err
		}
		f, err := txn.Flags(dbi)
		if err != nil {
			return err
		}
		if f != want {
			t.Errorf("%s: flags %#x, want %#x", db.Name, f, want)
		}
		c, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer c.Close()
		var got []tooltest.Pair
		for op := uint(lmdb.First); ; op = lmdb.Next {
			k, v, err := c.Get(nil, nil, op)
			if lmdb.IsNotFound(err) {
				break
			}
			if err != nil {
				return err
			}
			got = append(got, tooltest.Pair{Key: k, Val: v})
		}
		if ok, why := tooltest.Equal(got, tooltest.Sorted(db)); !ok {
			t.Errorf("%s: %s", db.Name, why)
		}
		if _, err := txn.OpenDBI(dlmdb.ConvertTempPrefix+db.Name, 0); !lmdb.IsNotFound(err) {
			t.Errorf("%s: temporary database left: %v", db.Name, err)
		}
		return txn.Check()
	})
	if err != nil {
		t.Fatalf("%s: %v", db.Name, err)
	}
}

func TestConvertFixture(t *testing.T) {
	dir := t.TempDir()
	dbs := append(tooltest.Fixture(), tooltest.FixedDups())
	tooltest.Build(t, dir, dbs)
	for _, db := range dbs {
		out, err := convert(t, "-counted", "on", "-batch", "37", dir, db.Name)
		if err != nil {
			t.Fatalf("%s: %v", db.Name, err)
		}
		if !strings.Contains(out, "converted \""+db.Name+"\"") || !strings.Contains(out, "counted") {
			t.Errorf("%s: summary %q", db.Name, out)
		}
		expectDB(t, dir, db, db.Flags|lmdb.Counted)
	}
	// the others stay as they were while one is converted back
	db := dbs[0]
	if _, err := convert(t, "-counted=off", dir, db.Name); err != nil {
		t.Fatal(err)
	}
	expectDB(t, dir, db, db.Flags)
	expectDB(t, dir, dbs[1], dbs[1].Flags|lmdb.Counted)
	// prefix compression on and off again, with counted kept, for the
	// kinds the engine compresses (DupSort: not yet)
	for _, db := range dbs {
		if db.Flags&lmdb.DupSort != 0 {
			continue
		}
		want := db.Flags | lmdb.Counted
		if db.Name == dbs[0].Name {
			want = db.Flags
		}
		if _, err := convert(t, "-prefix", "on", "-batch", "50", dir, db.Name); err != nil {
			t.Fatalf("%s: -prefix on: %v", db.Name, err)
		}
		expectDB(t, dir, db, want|lmdb.PrefixCompression)
		if _, err := convert(t, "-prefix", "off", dir, db.Name); err != nil {
			t.Fatalf("%s: -prefix off: %v", db.Name, err)
		}
		expectDB(t, dir, db, want)
	}
	// keep/keep rebuilds as it is
	if _, err := convert(t, "-batch", "5", dir, dbs[1].Name); err != nil {
		t.Fatal(err)
	}
	expectDB(t, dir, dbs[1], dbs[1].Flags|lmdb.Counted)
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	dbs := tooltest.Fixture()
	tooltest.Build(t, dir, dbs)
	var ue *toolutil.UsageError
	for _, args := range [][]string{
		{dir},
		{},
		{"-counted", "maybe", dir, dbs[0].Name},
		{"-prefix", "yes", dir, dbs[0].Name},
		{"-batch", "0", dir, dbs[0].Name},
		{"-bogus", dir, dbs[0].Name},
		{dir, ""},
		{dir, "a", "b"},
	} {
		if _, err := convert(t, args...); !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	_, err := convert(t, dir, "no-such-db")
	if err == nil || !lmdb.IsNotFound(err) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "no-such-db") {
		t.Errorf("missing DB: %v, want NotFound naming the path and the DB", err)
	}
	missing := dir + "/nowhere"
	if _, err := convert(t, missing, dbs[0].Name); err == nil || !strings.Contains(err.Error(), missing) ||
		!strings.Contains(err.Error(), dbs[0].Name) {
		t.Errorf("missing env: %v", err)
	}
	// nothing changed by the failures
	expectDB(t, dir, dbs[0], dbs[0].Flags)

	out, err := convert(t, "-h")
	if err != nil || !strings.Contains(out, "usage: lmdb_convert") || !strings.Contains(out, "-prefix on|off|keep") {
		t.Errorf("-h: %v\n%s", err, out)
	}
	out, err = convert(t, "-V")
	if err != nil || !strings.Contains(out, lmdb.VersionString()) {
		t.Errorf("-V: %v %q", err, out)
	}
}

func TestBar(t *testing.T) {
	for _, c := range []struct {
		copied, total uint64
		want          string
	}{
		{0, 0, "0 entries copied"},
		{5, 10, "[###############...............]  50% 5/10 entries"},
		{12, 10, "[##############################] 100% 12/10 entries"},
	} {
		if got := bar(c.copied, c.total); got != c.want {
			t.Errorf("bar(%d, %d) = %q, want %q", c.copied, c.total, got, c.want)
		}
	}
}
