package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// counted=1 in a header recreates the database with lmdb.Counted, so its
// counts and ranks work after the load.
func TestLoadCountedHeader(t *testing.T) {
	work := t.TempDir()
	var sb strings.Builder
	for _, counted := range []bool{true, false} {
		name := map[bool]string{true: "ranked", false: "plain"}[counted]
		fmt.Fprintf(&sb, "VERSION=3\nformat=print\ndatabase=%s\ntype=btree\nmapsize=1048576\nmaxreaders=126\n", name)
		if counted {
			sb.WriteString("counted=1\n")
		}
		sb.WriteString("db_pagesize=4096\nHEADER=END\n")
		for i := 0; i < 300; i++ {
			fmt.Fprintf(&sb, " key%04d\n value%d\n", i, i)
		}
		sb.WriteString("DATA=END\n")
	}
	in := filepath.Join(work, "dump.txt")
	if err := os.WriteFile(in, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(work, "env")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := runLoad(t, "-f", in, dst); err != nil {
		t.Fatal(err)
	}
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.SetMaxDBs(4); err != nil {
		t.Fatal(err)
	}
	if err := env.Open(dst, lmdb.Readonly, 0o644); err != nil {
		t.Fatal(err)
	}
	err = env.View(func(txn *lmdb.Txn) error {
		ranked, err := txn.OpenDBI("ranked", 0)
		if err != nil {
			return err
		}
		flags, err := txn.Flags(ranked)
		if err != nil {
			return err
		}
		if flags&lmdb.Counted == 0 {
			t.Errorf("loaded database flags %#x lack Counted", flags)
		}
		n, err := txn.CountAll(ranked)
		if err != nil || n != 300 {
			t.Errorf("CountAll = %d, %v; want 300", n, err)
		}
		k, _, err := txn.GetRank(ranked, 123)
		if err != nil || string(k) != "key0123" {
			t.Errorf("Rank(123) = %q, %v; want key0123", k, err)
		}
		plain, err := txn.OpenDBI("plain", 0)
		if err != nil {
			return err
		}
		if _, err := txn.CountAll(plain); !errors.Is(err, lmdb.Incompatible) {
			t.Errorf("CountAll on the plain database: %v, want Incompatible", err)
		}
		return txn.Check()
	})
	if err != nil {
		t.Fatal(err)
	}
}
