package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/internal/toolutil/tooltest"
)

func stat(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := run(args, &out, &errOut); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String()
}

// sections splits mdb_stat output into "Status of X" blocks: title ->
// field name -> value.
func sections(out string) map[string]map[string]string {
	res := map[string]map[string]string{}
	var cur map[string]string
	for _, line := range strings.Split(out, "\n") {
		if title, ok := strings.CutPrefix(line, "Status of "); ok {
			cur = map[string]string{}
			res[title] = cur
			continue
		}
		if !strings.HasPrefix(line, "  ") {
			cur = nil
			continue
		}
		if cur != nil {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
				cur[k] = v
			}
		}
	}
	return res
}

func field(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(name) + `: (.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no %q line in output:\n%s", name, out)
	}
	return m[1]
}

func TestStatAllDatabases(t *testing.T) {
	dir := t.TempDir()
	dbs := tooltest.Fixture()
	tooltest.Build(t, dir, dbs)
	facts := tooltest.Facts(t, dir, 0)
	freeTotal, freeRecords := tooltest.FreePages(t, dir)

	out := stat(t, "-e", "-fff", "-a", dir)
	secs := sections(out)
	if got := secs["Main DB"]["Entries"]; got != strconv.Itoa(len(dbs)) {
		t.Errorf("Main DB entries %q, want %d", got, len(dbs))
	}
	for _, db := range dbs {
		s, ok := secs[db.Name]
		if !ok {
			t.Errorf("no section for %s", db.Name)
			continue
		}
		if s["Entries"] != strconv.Itoa(len(db.Pairs)) {
			t.Errorf("%s: entries %q, want %d", db.Name, s["Entries"], len(db.Pairs))
		}
	}
	if secs["alpha"]["Branch pages"] == "0" {
		t.Errorf("alpha should need branch pages: %v", secs["alpha"])
	}
	if secs["beta2"]["Overflow pages"] == "0" {
		t.Errorf("beta2 should have overflow pages: %v", secs["beta2"])
	}

	if got := field(t, out, "Map size"); got != fmt.Sprint(facts.MapSize) {
		t.Errorf("map size %s, want %d", got, facts.MapSize)
	}
	if got := field(t, out, "Page size"); got != fmt.Sprint(facts.PageSize) {
		t.Errorf("page size %s, want %d", got, facts.PageSize)
	}
	if got := field(t, out, "Number of pages used"); got != fmt.Sprint(facts.LastPNO+1) {
		t.Errorf("pages used %s, want %d", got, facts.LastPNO+1)
	}
	if got := field(t, out, "Free pages"); got != fmt.Sprint(freeTotal) {
		t.Errorf("free pages %s, want %d", got, freeTotal)
	}

	// -fff: one line per freeing transaction, then its pages as runs.
	txnLine := regexp.MustCompile(`^    Transaction (\d+), (\d+) pages, maxspan (\d+)$`)
	pageLine := regexp.MustCompile(`^     +(\d+)(?:\[(\d+)\])?$`)
	var txns int
	var perTxn, listed uint64
	for _, line := range strings.Split(out, "\n") {
		if m := txnLine.FindStringSubmatch(line); m != nil {
			txns++
			n, _ := strconv.ParseUint(m[2], 10, 64)
			perTxn += n
		} else if m := pageLine.FindStringSubmatch(line); m != nil {
			span := uint64(1)
			if m[2] != "" {
				span, _ = strconv.ParseUint(m[2], 10, 64)
			}
			listed += span
		}
	}
	if txns != freeRecords || perTxn != freeTotal || listed != freeTotal {
		t.Errorf("-fff: %d transactions with %d pages, %d pages listed; want %d transactions, %d pages",
			txns, perTxn, listed, freeRecords, freeTotal)
	}
}

func TestStatOneDatabaseAndReaders(t *testing.T) {
	dir := t.TempDir()
	dbs := tooltest.Fixture()
	tooltest.Build(t, dir, dbs)
	dups := dbs[2]

	out := stat(t, "-s", dups.Name, dir)
	secs := sections(out)
	if _, ok := secs["Main DB"]; ok {
		t.Error("-s also printed the main database")
	}
	if got := secs[dups.Name]["Entries"]; got != strconv.Itoa(len(dups.Pairs)) {
		t.Errorf("%s entries %q, want %d", dups.Name, got, len(dups.Pairs))
	}

	out = stat(t, "-r", dir)
	if !strings.HasPrefix(out, "Reader Table Status\n") || strings.Contains(out, "Status of") {
		t.Errorf("-r output:\n%s", out)
	}
	out = stat(t, "-rr", dir)
	if !strings.Contains(out, "stale readers cleared") {
		t.Errorf("-rr output:\n%s", out)
	}

	// -n: the same data file opened as a single-file environment.
	file := filepath.Join(t.TempDir(), "one.mdb")
	b, err := os.ReadFile(tooltest.DataFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(file, b, 0o644)
	out = stat(t, "-n", file)
	if got := sections(out)["Main DB"]["Entries"]; got != strconv.Itoa(len(dbs)) {
		t.Errorf("-n: Main DB entries %q, want %d", got, len(dbs))
	}
}

func TestStatErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run([]string{"-a", "-s", "x", t.TempDir()}, &out, &errOut); err == nil {
		t.Error("-a with -s accepted")
	}
	dir := t.TempDir()
	tooltest.Build(t, dir, nil)
	if err := run([]string{"-s", "missing", dir}, &out, &errOut); err == nil {
		t.Error("missing database accepted")
	}
}

func TestRuns(t *testing.T) {
	got := fmt.Sprint(runs([]uint64{20, 12, 11, 10, 7, 5, 4}))
	// 10, 11, 12 form one run of three; 4, 5 one of two.
	if want := "[[4 2] [7 1] [10 3] [20 1]]"; got != want {
		t.Errorf("runs = %s, want %s", got, want)
	}
}

func TestHelp(t *testing.T) {
	tooltest.CheckHelp(t, run, "usage: lmdb_stat [-V] [-n] [-e] [-r[r]] [-f[f[f]]] [-a|-s name] path", "-e", "-r", "-f", "-a", "-s name", "-n")
}

func TestNoEnvironment(t *testing.T) {
	tooltest.CheckNoEnvironment(t, run)
}
