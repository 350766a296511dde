package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// A counted database's header says so (counted=1), a plain one does not.
func TestDumpCountedHeader(t *testing.T) {
	dir := t.TempDir()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.SetMaxDBs(4); err != nil {
		t.Fatal(err)
	}
	if err := env.Open(dir, 0, 0o644); err != nil {
		t.Fatal(err)
	}
	err = env.Update(func(txn *lmdb.Txn) error {
		for _, name := range []string{"counted", "plain"} {
			flags := uint(lmdb.Create)
			if name == "counted" {
				flags |= lmdb.Counted
			}
			dbi, err := txn.OpenDBI(name, flags)
			if err != nil {
				return err
			}
			for i := 0; i < 50; i++ {
				if err := txn.Put(dbi, []byte(fmt.Sprintf("k%03d", i)), []byte("v"), 0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	env.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{{"counted", true}, {"plain", false}} {
		out, err := dump(t, "-p", "-s", tc.name, dir)
		if err != nil {
			t.Fatal(err)
		}
		header, _, ok := strings.Cut(out, "HEADER=END\n")
		if !ok {
			t.Fatalf("%s: no header end in %q", tc.name, out)
		}
		if got := strings.Contains(header, "\ncounted=1\n"); got != tc.want {
			t.Errorf("%s: header %q: counted=1 present %v, want %v", tc.name, header, got, tc.want)
		}
		if n := strings.Count(out, "\n k"); n != 50 {
			t.Errorf("%s: %d key lines, want 50", tc.name, n)
		}
	}
}
