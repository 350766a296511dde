package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/internal/toolutil/tooltest"
)

// dump runs the tool in-process and returns its standard output.
func dump(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(args, &out, &errOut)
	return out.String(), err
}

// firstDiff locates the first differing line for a readable failure.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ": got " + clip(g[i]) + " want " + clip(w[i])
		}
	}
	return "got " + strconv.Itoa(len(g)) + " lines, want " + strconv.Itoa(len(w))
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func TestDumpAllMatchesExpectedText(t *testing.T) {
	dir := t.TempDir()
	dbs := tooltest.Fixture()
	tooltest.Build(t, dir, dbs)
	facts := tooltest.Facts(t, dir, 0)

	for _, printable := range []bool{false, true} {
		args := []string{"-a", dir}
		if printable {
			args = []string{"-p", "-a", dir}
		}
		got, err := dump(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		want := tooltest.ExpectedDumpAll(facts, dbs, printable)
		if got != want {
			t.Errorf("%v: dump differs from the expected text: %s", args, firstDiff(got, want))
		}
	}
}

func TestDumpOneNamedDatabase(t *testing.T) {
	dir := t.TempDir()
	dbs := tooltest.Fixture()
	tooltest.Build(t, dir, dbs)
	facts := tooltest.Facts(t, dir, 0)
	for _, db := range dbs {
		got, err := dump(t, "-s", db.Name, dir)
		if err != nil {
			t.Fatalf("-s %s: %v", db.Name, err)
		}
		want := tooltest.Section(facts, &db.Name, db.Flags, tooltest.Sorted(db), false)
		if got != want {
			t.Errorf("-s %s: %s", db.Name, firstDiff(got, want))
		}
	}
	if _, err := dump(t, "-s", "no-such-db", dir); err == nil {
		t.Error("dumping a missing database succeeded")
	}
}

func TestDumpMainDatabaseAndList(t *testing.T) {
	dir := t.TempDir()
	dbs := tooltest.Fixture()
	tooltest.Build(t, dir, dbs)
	facts := tooltest.Facts(t, dir, 0)
	main := tooltest.ReadMain(t, dir, 0)
	if len(main) != len(dbs) {
		t.Fatalf("main database has %d records, want %d", len(main), len(dbs))
	}

	got, err := dump(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := tooltest.Section(facts, nil, 0, main, false)
	if got != want {
		t.Errorf("main database dump: %s", firstDiff(got, want))
	}

	got, err = dump(t, "-l", dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range main {
		names = append(names, string(p.Key))
	}
	if want := strings.Join(names, "\n") + "\n"; got != want {
		t.Errorf("-l printed %q, want %q", got, want)
	}
}

func TestDumpToFileAndNoSubdir(t *testing.T) {
	dir := t.TempDir()
	dbs := tooltest.Fixture()[1:2]
	tooltest.Build(t, dir, dbs)
	facts := tooltest.Facts(t, dir, 0)
	out := filepath.Join(t.TempDir(), "out.txt")
	if _, err := dump(t, "-f", out, "-a", dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := tooltest.ExpectedDumpAll(facts, dbs, false)
	if string(b) != want {
		t.Errorf("-f output: %s", firstDiff(string(b), want))
	}

	// -n reads an environment that is a single file; the lock file sits
	// next to it with a "-lock" suffix.
	file := filepath.Join(t.TempDir(), "env.db")
	if err := os.Link(tooltest.DataFile(dir), file); err != nil {
		b, _ := os.ReadFile(tooltest.DataFile(dir))
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := dump(t, "-n", "-a", file)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("-n dump: %s", firstDiff(got, want))
	}
}

func TestDumpErrors(t *testing.T) {
	empty := t.TempDir()
	tooltest.Build(t, empty, nil)
	if _, err := dump(t, "-a", empty); !errors.Is(err, errNoDatabases) {
		t.Errorf("-a on an environment without named databases: %v", err)
	}
	if _, err := dump(t, "-a", "-s", "x", empty); err == nil {
		t.Error("-a with -s accepted")
	}
	if _, err := dump(t); err == nil {
		t.Error("missing path accepted")
	}
	if _, err := dump(t, "-q", empty); err == nil {
		t.Error("unknown option accepted")
	}
	if _, err := dump(t, filepath.Join(empty, "missing")); err == nil {
		t.Error("missing environment accepted")
	}
}
