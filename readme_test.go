package dlmdb

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReadmeProgramsRun builds every Go code block of README.md as a program
// of its own, in a scratch module that uses this checkout, and runs it: the
// tour's code must compile and run as pasted. A block that is not a whole
// program (package main) fails the test.
func TestReadmeProgramsRun(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build README's programs: %v", err)
	}
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```\n").FindAllStringSubmatch(string(text), -1)
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go code block")
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf("module readmeprograms\n\ngo 1.24\n\nrequire github.com/dlmdb/dlmdb-go v0.0.0\n\nreplace github.com/dlmdb/dlmdb-go => %s\n", repo)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, b := range blocks {
		if !strings.HasPrefix(b[1], "package main\n") {
			t.Errorf("README Go block %d is not a whole program (package main):\n%s", i+1, b[1])
			continue
		}
		sub := filepath.Join(dir, fmt.Sprintf("block%d", i+1))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "main.go"), []byte(b[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if t.Failed() {
		return
	}
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	build := exec.Command(goTool, "build", "-o", filepath.Join(dir, "bin")+string(filepath.Separator), "./...")
	build.Dir, build.Env = dir, env
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building README's programs: %v\n%s", err, out)
	}
	for i := range blocks {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		run := exec.CommandContext(ctx, filepath.Join(dir, "bin", fmt.Sprintf("block%d", i+1)))
		run.Dir = dir
		out, err := run.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README program %d: %v\n%s", i+1, err, out)
		} else if len(out) == 0 {
			t.Errorf("README program %d printed nothing", i+1)
		}
	}
}
