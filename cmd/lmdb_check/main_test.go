package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/internal/toolutil/tooltest"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

func runCheck(args ...string) (string, error) {
	var out, errOut bytes.Buffer
	err := run(args, &out, &errOut)
	return out.String(), err
}

// compactFixture builds the fixture with stock LMDB and returns a compact
// copy of it, in which every page belongs to the newest snapshot.
func compactFixture(t *testing.T) (string, []tooltest.DB) {
	t.Helper()
	work := t.TempDir()
	src := filepath.Join(work, "src")
	dst := filepath.Join(work, "compact")
	os.Mkdir(src, 0o755)
	os.Mkdir(dst, 0o755)
	dbs := tooltest.Fixture()
	tooltest.Build(t, src, dbs)
	tooltest.CompactCopy(t, src, dst)
	return dst, dbs
}

func TestCheckCleanEnvironment(t *testing.T) {
	dir, dbs := compactFixture(t)
	out, err := runCheck("-a", dir)
	if err != nil {
		t.Fatalf("clean environment reported damaged: %v", err)
	}
	if !strings.Contains(out, ": OK") {
		t.Errorf("no OK line:\n%s", out)
	}
	for _, db := range dbs {
		want := fmt.Sprintf("database %q: %d entries", db.Name, len(db.Pairs))
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runCheck("-w", "-q", dir)
	if err != nil || out != "" {
		t.Errorf("-w -q: output %q, error %v", out, err)
	}
	out, err = runCheck("-q", "-s", "dups", dir)
	if err != nil || out != "" {
		t.Errorf("-q: output %q, error %v", out, err)
	}
	if _, err := runCheck("-s", "missing", dir); err == nil {
		t.Error("missing database accepted")
	}
}

const (
	pageHeaderSize = 16   // pgno(8) pad(2) flags(2) lower(2) upper(2)
	pageBranch     = 0x01 // page flag of an interior page
)

// branchPages lists the numbers of the branch pages of a data file.
func branchPages(t *testing.T, data []byte, psize int) []int {
	t.Helper()
	var out []int
	for pg := 2; (pg+1)*psize <= len(data); pg++ {
		p := data[pg*psize:]
		if binary.LittleEndian.Uint64(p) == uint64(pg) && binary.LittleEndian.Uint16(p[10:]) == pageBranch {
			out = append(out, pg)
		}
	}
	return out
}

func TestCheckDamagedBranchPage(t *testing.T) {
	damages := []struct {
		name string
		hurt func(page []byte)
	}{
		{"child page number of the first node flipped", func(p []byte) {
			node := int(binary.LittleEndian.Uint16(p[pageHeaderSize:]))
			for i := 0; i < 6; i++ { // the node's 48-bit child page number
				p[node+i] ^= 0xff
			}
		}},
		{"lower bound of the node table flipped", func(p []byte) {
			p[12] ^= 0xff
			p[13] ^= 0x0f
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir, _ := compactFixture(t)
			psize := int(tooltest.Facts(t, dir, 0).PageSize)
			path := tooltest.DataFile(dir)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			branches := branchPages(t, data, psize)
			if len(branches) == 0 {
				t.Fatal("the fixture has no branch page to damage")
			}
			pg := branches[0]
			d.hurt(data[pg*psize : (pg+1)*psize])
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = runCheck(dir)
			if err == nil {
				t.Fatalf("damage in branch page %d not detected", pg)
			}
			t.Logf("branch page %d damaged: %v", pg, err)
			if !errors.Is(err, ErrDamaged) || !errors.Is(err, lmdb.Corrupted) {
				t.Errorf("error %v: want ErrDamaged and lmdb.Corrupted", err)
			}
		})
	}
}

func TestCheckUsage(t *testing.T) {
	if _, err := runCheck(); err == nil {
		t.Error("missing path accepted")
	}
	if _, err := runCheck("-a", "-s", "x", t.TempDir()); err == nil {
		t.Error("-a with -s accepted")
	}
	if _, err := runCheck(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing environment accepted")
	}
}

// TestCheckDamagedEntryCount changes the entry count stored in a named
// database's record: the pages themselves stay intact.
func TestCheckDamagedEntryCount(t *testing.T) {
	dir, dbs := compactFixture(t)
	var record []byte
	for _, p := range tooltest.ReadMain(t, dir, 0) {
		if string(p.Key) == dbs[0].Name {
			record = p.Val
		}
	}
	if len(record) != 48 {
		t.Fatalf("record of %s is %d bytes", dbs[0].Name, len(record))
	}
	const entriesOff = 32 // pad(4) flags(2) depth(2) branch(8) leaf(8) overflow(8)
	if got := binary.LittleEndian.Uint64(record[entriesOff:]); got != uint64(len(dbs[0].Pairs)) {
		t.Fatalf("record layout: entries field holds %d, want %d", got, len(dbs[0].Pairs))
	}
	path := tooltest.DataFile(dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(data, record) != 1 {
		t.Fatalf("the record occurs %d times in the file", bytes.Count(data, record))
	}
	at := bytes.Index(data, record) + entriesOff
	binary.LittleEndian.PutUint64(data[at:], uint64(len(dbs[0].Pairs)+5))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = runCheck("-w", dir)
	t.Logf("damaged entry count: %v", err)
	if !errors.Is(err, ErrDamaged) {
		t.Errorf("wrong entry count not detected: %v", err)
	}
}

func TestHelp(t *testing.T) {
	tooltest.CheckHelp(t, run, "usage: lmdb_check [-V] [-n] [-q] [-w] [-a|-s name] path", "-a", "-s name", "-w", "-q", "-n")
}

func TestNoEnvironment(t *testing.T) {
	tooltest.CheckNoEnvironment(t, run)
}
