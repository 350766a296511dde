package difftest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// Some tests need a second process: the crash test kills one, the corruption
// and misuse tests run in one so that a crash is reported as a failure with
// its output instead of taking the whole test binary down, and the
// multi-process test shares an env between two. The child is this same test
// binary, re-executed with DLMDB_DIFFTEST_CHILD naming the role.

const childEnvVar = "DLMDB_DIFFTEST_CHILD"

var childRoles = map[string]func() error{}

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnvVar); role != "" {
		fn := childRoles[role]
		if fn == nil {
			fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
			os.Exit(3)
		}
		runtime.LockOSThread() // write txns belong to one OS thread
		if err := fn(); err != nil {
			fmt.Fprintf(os.Stdout, "CHILD-ERROR: %v\n", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stdout, "CHILD-OK")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// childCmd prepares a re-execution of the test binary in the given role.
func childCmd(role string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnvVar+"="+role), env...)
	return cmd
}

// childOutcome is how a child run ended.
type childOutcome struct {
	out     string
	err     error // nil: exit status 0
	crashed bool  // killed by a signal (SIGSEGV, SIGABRT, ...) or a Go runtime crash
}

func execChild(role string, env ...string) childOutcome {
	cmd := childCmd(role, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	o := childOutcome{out: out.String(), err: err}
	o.crashed = crashedChild(err, o.out)
	return o
}

// crashedChild tells a child that crashed from one that merely failed: a
// fatal signal; a Go runtime crash (fatal signal in cgo code, SIGABRT from a
// C assert), which exits with status 2 and a "SIGxxx" / "fatal error"
// banner; or, under -asan, a sanitizer report, which exits with status 1.
func crashedChild(err error, out string) bool {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return true
	}
	return strings.Contains(out, "\nSIG") || strings.HasPrefix(out, "SIG") ||
		strings.Contains(out, "fatal error:") || strings.Contains(out, "Assertion") ||
		strings.Contains(out, "ERROR: AddressSanitizer") || strings.Contains(out, "ERROR: LeakSanitizer")
}

// headLines keeps failure messages readable.
func headLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines[n] = "..."
	}
	return strings.Join(lines, "\n")
}

// runChild runs a child to completion and returns its output. A child that
// crashes or reports failure fails the test.
func runChild(t *testing.T, role string, env ...string) string {
	t.Helper()
	o := execChild(role, env...)
	if o.crashed {
		t.Fatalf("child %s (%s) CRASHED — a crash, not an error:\n%s", role, strings.Join(env, " "), headLines(o.out, 40))
	}
	if o.err != nil || !strings.Contains(o.out, "CHILD-OK") {
		t.Fatalf("child %s (%s) failed: %v\n%s", role, strings.Join(env, " "), o.err, headLines(o.out, 40))
	}
	return o.out
}

// isolate runs the calling test's body in a child process (this binary,
// -test.run=^Name$) unless it is that child. A crash of either engine —
// stock LMDB asserts on some inputs, ours may have bugs — then fails this
// test with the child's output instead of killing the whole test binary.
// Usage: if isolate(t) { return }.
func isolate(t *testing.T) bool {
	t.Helper()
	if os.Getenv("DLMDB_DIFFTEST_INNER") == t.Name() {
		return false
	}
	args := []string{"-test.run=^" + t.Name() + "$", "-test.v", "-test.count=1"}
	flag.Visit(func(f *flag.Flag) {
		if strings.HasPrefix(f.Name, "difftest.") {
			args = append(args, "-"+f.Name+"="+f.Value.String())
		}
	})
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DLMDB_DIFFTEST_INNER="+t.Name())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	s := out.String()
	// a crash shows the child's whole output (a sanitizer report, say),
	// not only the test's log lines
	crashed := crashedChild(err, s)
	// pass the child's own log lines through
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "--- ") {
			keep = append(keep, l)
		}
	}
	switch {
	case crashed:
		t.Fatalf("the test CRASHED in its child process (%v):\n%s", err, headLines(s, 60))
	case err != nil:
		t.Fatalf("failed in its child process (%v):\n%s", err, strings.Join(keep, "\n"))
	case !strings.Contains(s, "--- PASS: "+t.Name()):
		t.Fatalf("child did not report a pass:\n%s", headLines(s, 40))
	}
	t.Logf("ran in a child process:\n%s", strings.Join(keep, "\n"))
	return true
}
