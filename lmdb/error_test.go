package lmdb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestErrnoMessages(t *testing.T) {
	for _, e := range []Errno{KeyExist, NotFound, Corrupted, MapFull, BadTxn, BadValSize, BadDBI} {
		msg := e.Error()
		if msg == "" || !strings.HasPrefix(msg, "MDB_") {
			t.Errorf("Errno(%d).Error() = %q", int(e), msg)
		}
	}
	if KeyExist.Error() == NotFound.Error() {
		t.Error("distinct codes share a message")
	}
}

func TestCodeErrorClassification(t *testing.T) {
	err := codeError("mdb_get", -30798) // MDB_NOTFOUND
	var op *OpError
	if !errors.As(err, &op) || op.Op != "mdb_get" || op.Errno != NotFound {
		t.Fatalf("engine code: %#v", err)
	}
	if got := err.Error(); !strings.HasPrefix(got, "mdb_get: ") || !strings.Contains(got, NotFound.Error()) {
		t.Fatalf("message %q", got)
	}
	err = codeError("mdb_env_open", 2) // ENOENT on Linux
	if !errors.As(err, &op) || op.Errno != syscall.ENOENT {
		t.Fatalf("system code: %#v", err)
	}
	if check("x", 0) != nil {
		t.Fatal("check(0) is not nil")
	}
}

func TestErrorsIsThroughWrapping(t *testing.T) {
	base := &OpError{Op: "mdb_put", Errno: MapFull}
	wrapped := fmt.Errorf("saving batch: %w", fmt.Errorf("inner: %w", base))
	if !errors.Is(wrapped, MapFull) || !IsMapFull(wrapped) || !IsErrno(wrapped, MapFull) {
		t.Error("MapFull not seen through two wraps")
	}
	if errors.Is(wrapped, NotFound) || IsNotFound(wrapped) {
		t.Error("MapFull error matches NotFound")
	}
	if !errors.Is(wrapped, &OpError{Op: "mdb_put", Errno: MapFull}) {
		t.Error("OpError.Is with same op and code failed")
	}
	if !errors.Is(wrapped, &OpError{Errno: MapFull}) {
		t.Error("OpError.Is with code only failed")
	}
	if errors.Is(wrapped, &OpError{Op: "mdb_get", Errno: MapFull}) {
		t.Error("OpError.Is matched a different op")
	}

	sys := fmt.Errorf("open: %w", &OpError{Op: "mdb_env_open", Errno: syscall.ENOENT})
	if !IsNotExist(sys) || !errors.Is(sys, fs.ErrNotExist) || !IsErrnoSys(sys, syscall.ENOENT) {
		t.Error("ENOENT not recognised through wrapping")
	}
	if IsErrnoSys(sys, syscall.EINVAL) || IsMapResized(sys) {
		t.Error("ENOENT matches other codes")
	}
	// Plain errors go to fn unchanged; nil never matches.
	if !IsErrnoFn(os.ErrPermission, os.IsPermission) {
		t.Error("IsErrnoFn on a plain error")
	}
	if IsErrnoFn(nil, func(error) bool { return true }) || IsNotFound(nil) {
		t.Error("nil error matched")
	}
	if !IsErrno(NotFound, NotFound) || !IsErrnoSys(syscall.EINVAL, syscall.EINVAL) {
		t.Error("bare codes not matched")
	}
}

func TestErrorsFromEngine(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	err := env.View(func(txn *Txn) error {
		_, err := txn.Get(dbi, []byte("missing"))
		return fmt.Errorf("lookup: %w", err)
	})
	if !errors.Is(err, NotFound) || !IsNotFound(err) {
		t.Fatalf("wrapped not-found from Get: %v", err)
	}
	var op *OpError
	if !errors.As(err, &op) || op.Op != "mdb_get" {
		t.Fatalf("op of %v", err)
	}
	err = env.View(func(txn *Txn) error {
		_, err := txn.Get(DBI(99), []byte("k"))
		return err
	})
	if !IsErrnoSys(err, syscall.EINVAL) && !IsErrno(err, BadDBI) {
		t.Fatalf("Get on unknown DBI: %v", err)
	}
	// Handle 0 is the engine's free-page database, never a user database.
	err = env.View(func(txn *Txn) error {
		_, err := txn.Get(0, []byte("k"))
		return err
	})
	if !IsErrnoSys(err, syscall.EINVAL) {
		t.Fatalf("Get on DBI 0 = %v, want EINVAL as in LMDB", err)
	}
}
