package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dlmdb/dlmdb-go/internal/toolutil/tooltest"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

func runCopy(t *testing.T, stdout *bytes.Buffer, args ...string) error {
	t.Helper()
	var errOut bytes.Buffer
	if stdout == nil {
		stdout = &bytes.Buffer{}
	}
	return run(args, stdout, &errOut)
}

// checkWithOurEngine runs Env.Check on a copy.
func checkWithOurEngine(t *testing.T, path string, flags uint) {
	t.Helper()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.Open(path, flags|lmdb.Readonly, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := env.Check(); err != nil {
		t.Errorf("%s: check failed: %v", path, err)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func TestCopyAndCompactCopy(t *testing.T) {
	work := t.TempDir()
	src := filepath.Join(work, "src")
	os.Mkdir(src, 0o755)
	dbs := tooltest.Fixture()
	tooltest.Build(t, src, dbs)
	if free, _ := tooltest.FreePages(t, src); free == 0 {
		t.Fatal("fixture has no free pages; the compaction check would be vacuous")
	}

	plain := filepath.Join(work, "plain") // created by the tool
	if err := runCopy(t, nil, src, plain); err != nil {
		t.Fatal(err)
	}
	compact := filepath.Join(work, "compact")
	if err := runCopy(t, nil, "-c", src, compact); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{plain, compact} {
		tooltest.CheckContents(t, dir, 0, dbs)
		checkWithOurEngine(t, dir, 0)
	}
	if free, _ := tooltest.FreePages(t, compact); free != 0 {
		t.Errorf("compact copy still has %d free pages", free)
	}
	ps, cs := fileSize(t, tooltest.DataFile(plain)), fileSize(t, tooltest.DataFile(compact))
	if cs >= ps {
		t.Errorf("compact copy is %d bytes, plain copy %d: nothing was compacted", cs, ps)
	}
}

func TestCopyToStdoutAndNoSubdir(t *testing.T) {
	work := t.TempDir()
	src := filepath.Join(work, "src")
	os.Mkdir(src, 0o755)
	dbs := tooltest.Fixture()[1:3]
	tooltest.Build(t, src, dbs)

	for _, compact := range []bool{false, true} {
		var out bytes.Buffer
		args := []string{src}
		if compact {
			args = []string{"-c", src}
		}
		if err := runCopy(t, &out, args...); err != nil {
			t.Fatal(err)
		}
		// The stream is a complete data file: open it as a single-file env.
		file := filepath.Join(work, "stream.mdb")
		os.Remove(file)
		os.Remove(file + "-lock")
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		tooltest.CheckContents(t, file, lmdb.NoSubdir, dbs)

		// -n: single-file source and destination.
		dst := filepath.Join(work, "copy.mdb")
		os.Remove(dst)
		os.Remove(dst + "-lock")
		if err := runCopy(t, nil, "-n", file, dst); err != nil {
			t.Fatal(err)
		}
		tooltest.CheckContents(t, dst, lmdb.NoSubdir, dbs)
		checkWithOurEngine(t, dst, lmdb.NoSubdir)
	}
}

// TestCopyToPipeStdout hands the tool a real pipe as standard output: the
// engine must stream into the descriptor without seeking.
func TestCopyToPipeStdout(t *testing.T) {
	work := t.TempDir()
	src := filepath.Join(work, "src")
	os.Mkdir(src, 0o755)
	dbs := tooltest.Fixture()
	tooltest.Build(t, src, dbs)

	sizes := map[bool]int{}
	for _, compact := range []bool{false, true} {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(pr)
			pr.Close()
			got <- b
		}()
		args := []string{src}
		if compact {
			args = []string{"-c", src}
		}
		var errOut bytes.Buffer
		runErr := run(args, pw, &errOut)
		pw.Close()
		data := <-got
		if runErr != nil {
			t.Fatalf("compact=%v: %v", compact, runErr)
		}
		sizes[compact] = len(data)
		file := filepath.Join(work, fmt.Sprintf("pipe-%v.mdb", compact))
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tooltest.CheckContents(t, file, lmdb.NoSubdir, dbs)
		checkWithOurEngine(t, file, lmdb.NoSubdir)
	}
	if sizes[true] >= sizes[false] {
		t.Errorf("compact stream is %d bytes, plain stream %d", sizes[true], sizes[false])
	}
}

func TestCopyUsage(t *testing.T) {
	if err := runCopy(t, nil); err == nil {
		t.Error("no arguments accepted")
	}
	if err := runCopy(t, nil, "a", "b", "c"); err == nil {
		t.Error("three paths accepted")
	}
	if err := runCopy(t, nil, filepath.Join(t.TempDir(), "missing"), t.TempDir()); err == nil {
		t.Error("missing source accepted")
	}
}

func TestHelp(t *testing.T) {
	tooltest.CheckHelp(t, run, "usage: lmdb_copy [-V] [-c] [-n] srcpath [dstpath]", "-c", "-n")
}
