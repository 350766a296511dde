package lmdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// openEnv opens a fresh environment in a temporary directory with room for
// a few named databases; it is closed when the test ends.
func openEnv(t testing.TB, flags uint) *Env {
	t.Helper()
	env, err := NewEnv()
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	if err := env.SetMaxDBs(16); err != nil {
		t.Fatalf("SetMaxDBs: %v", err)
	}
	if err := env.SetMapSize(64 << 20); err != nil {
		t.Fatalf("SetMapSize: %v", err)
	}
	path := ""
	if flags&InMemory == 0 {
		path = t.TempDir()
	}
	if err := env.Open(path, flags, 0o600); err != nil {
		env.Close()
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// envModes is the file / in-memory matrix of the model tests: the flags
// openEnv gets in each mode.
var envModes = []struct {
	name  string
	flags uint
}{{"file", 0}, {"mem", InMemory}}

// inModes runs body once per env mode, as subtests named after the mode.
func inModes(t *testing.T, body func(t *testing.T, flags uint)) {
	for _, m := range envModes {
		t.Run(m.name, func(t *testing.T) { body(t, m.flags) })
	}
}

// mustUpdate runs fn in a write transaction and fails the test on error.
func mustUpdate(t testing.TB, env *Env, fn TxnOp) {
	t.Helper()
	if err := env.Update(fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// mustView runs fn in a read transaction and fails the test on error.
func mustView(t testing.TB, env *Env, fn TxnOp) {
	t.Helper()
	if err := env.View(fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// openDB creates (or opens) a database; name "" means the root database.
func openDB(t testing.TB, env *Env, name string, flags uint) DBI {
	t.Helper()
	var dbi DBI
	mustUpdate(t, env, func(txn *Txn) (err error) {
		if name == "" {
			dbi, err = txn.OpenRoot(flags)
		} else {
			dbi, err = txn.OpenDBI(name, flags|Create)
		}
		return err
	})
	return dbi
}

// fill stores key%03d -> val%03d for i in [0, n).
func fill(t testing.TB, env *Env, dbi DBI, n int) {
	t.Helper()
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < n; i++ {
			if err := txn.Put(dbi, kv("key", i), kv("val", i), 0); err != nil {
				return err
			}
		}
		return nil
	})
}

func kv(prefix string, i int) []byte {
	return []byte(fmt.Sprintf("%s%03d", prefix, i))
}

// wantErrno fails unless err carries code.
func wantErrno(t testing.TB, what string, err error, code error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error, want %v", what, code)
	}
	if !errors.Is(err, code) {
		t.Fatalf("%s: error %v, want %v", what, err, code)
	}
}

// beginWrite begins an unmanaged write transaction on a locked thread;
// the thread is unlocked and the txn aborted at cleanup.
func beginWrite(t testing.TB, env *Env) *Txn {
	t.Helper()
	runtime.LockOSThread()
	txn, err := env.BeginTxn(nil, 0)
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("BeginTxn: %v", err)
	}
	t.Cleanup(func() {
		txn.Abort()
		runtime.UnlockOSThread()
	})
	return txn
}

// requireDupSort fails the calling test unless the engine accepts sorted
// duplicates with the given database flags (DupSort plus any of DupFixed,
// IntegerDup, ReverseDup).
func requireDupSort(t testing.TB, env *Env, flags uint) {
	t.Helper()
	name := fmt.Sprintf("dupsort-probe-%#x", flags)
	err := env.Update(func(txn *Txn) error {
		_, err := txn.OpenDBI(name, Create|DupSort|flags)
		return err
	})
	if err != nil {
		t.Fatalf("probing DupSort support: %v", err)
	}
}

// inChild runs body in a child process (this test binary re-executed for
// the calling test only) when a crash in the engine would otherwise take
// the whole test binary down. The test fails if the child fails or dies.
func inChild(t *testing.T, body func(t *testing.T)) {
	t.Helper()
	// DLMDBGO_IN_PROCESS: where the binary cannot re-execute itself (the
	// arm64 run under qemu-user, internal/arm64/run.sh), run body here
	if os.Getenv(childEnvVar) == t.Name() || os.Getenv("DLMDBGO_IN_PROCESS") != "" {
		body(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnvVar+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child process for %s failed (%v):\n%s", t.Name(), err, head(out, 2500))
	}
}

const childEnvVar = "DLMDBGO_CHILD_TEST"

// head keeps the start of a crash report: the signal and the failing
// goroutine come first.
func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
