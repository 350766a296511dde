package lmdb

import (
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A txn failed by an earlier error says so at Commit: the code stays
// lmdb-go's (BadTxn), and the cause matches too.
func TestCommitReportsCause(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.SetMapSize(64 << 10); err != nil {
		t.Fatal(err)
	}
	if err := env.Open(t.TempDir(), NoSync, 0o600); err != nil {
		t.Fatal(err)
	}
	txn, err := env.BeginTxn(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	dbi, err := txn.OpenRoot(0)
	if err != nil {
		t.Fatal(err)
	}
	var putErr error
	for i := 0; i < 100000 && putErr == nil; i++ {
		putErr = txn.Put(dbi, []byte{byte(i >> 16), byte(i >> 8), byte(i)}, make([]byte, 100), 0)
	}
	if !IsMapFull(putErr) {
		t.Fatalf("filling a 64 KiB map: %v", putErr)
	}
	err = txn.Commit()
	if !errors.Is(err, BadTxn) || !errors.Is(err, MapFull) || !IsMapFull(err) || !IsErrno(err, BadTxn) {
		t.Fatalf("Commit after MapFull: %v (want BadTxn with MapFull as its cause)", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "mdb_txn_commit" || oe.Cause() != MapFull ||
		!strings.Contains(err.Error(), "MDB_MAP_FULL") {
		t.Errorf("the error does not name its cause: %#v %q", oe, err)
	}
	if errors.Is(err, NotFound) || errors.Is(err, syscall.EINTR) {
		t.Errorf("%v matches codes it does not carry", err)
	}

	// a commit that did not fail earlier has no cause; the DB then has a
	// page for the next txn's put to visit
	if err := env.Update(func(txn *Txn) error { return txn.Put(dbi, []byte("a"), []byte("b"), 0) }); err != nil {
		t.Fatal(err)
	}
	// an interrupted write txn: EINTR is the cause
	txn, err = env.BeginTxn(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.SetInterrupt(true); err != nil {
		t.Fatal(err)
	}
	if err := txn.Put(dbi, []byte("k"), []byte("v"), 0); !errors.Is(err, syscall.EINTR) {
		t.Fatalf("Put under an interrupt: %v", err)
	}
	if err := txn.Commit(); !errors.Is(err, BadTxn) || !errors.Is(err, syscall.EINTR) || IsMapFull(err) {
		t.Fatalf("Commit after EINTR: %v", err)
	}
}

// The common misuses are named in the message while the codes stay.
func TestErrorsNameTheMisuse(t *testing.T) {
	env := openEnv(t, 0)
	var plain DBI
	if err := env.Update(func(txn *Txn) (err error) {
		plain, err = txn.OpenDBI("plain", Create)
		if err == nil {
			err = txn.Put(plain, []byte("k"), []byte("v"), 0)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	rtxn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer rtxn.Abort()
	err = rtxn.Put(plain, []byte("x"), []byte("y"), 0)
	if !errors.Is(err, syscall.EACCES) || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("Put in a read-only txn: %v", err)
	}
	err = rtxn.Del(plain, []byte("k"), nil)
	if !errors.Is(err, syscall.EACCES) || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("Del in a read-only txn: %v", err)
	}
	_, err = rtxn.CountAll(plain)
	if !errors.Is(err, Incompatible) || !strings.Contains(err.Error(), "lmdb.Counted") ||
		!strings.Contains(err.Error(), "Convert") {
		t.Errorf("CountAll on a DB without Counted: %v", err)
	}
	_, _, err = rtxn.GetRank(plain, 0)
	if !errors.Is(err, Incompatible) || !strings.Contains(err.Error(), "lmdb.Counted") {
		t.Errorf("GetRank on a DB without Counted: %v", err)
	}
	// the reader is still open: no map resize now
	err = env.SetMapSize(256 << 20)
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "no transaction running") {
		t.Errorf("SetMapSize under an open txn: %v", err)
	}
	rtxn.Abort()
	if err := env.SetMapSize(256 << 20); err != nil {
		t.Errorf("SetMapSize with no txn: %v", err)
	}
}

// The side table that carries causes and hints forgets an error once the
// error is garbage.
func TestOpErrorExtrasAreCollected(t *testing.T) {
	count := func() (n int) {
		opExtras.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	env := openEnv(t, 0)
	rtxn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer rtxn.Abort()
	dbi, err := rtxn.OpenRoot(0)
	if err != nil {
		t.Fatal(err)
	}
	base := count()
	for i := 0; i < 1000; i++ {
		if err := rtxn.Put(dbi, []byte("k"), []byte("v"), 0); !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("Put in a read-only txn: %v", err)
		}
	}
	if count() < base+1000 {
		t.Fatalf("the hinted errors were not recorded (%d entries, %d before)", count(), base)
	}
	for i := 0; i < 200 && count() >= base+1000; i++ {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := count(); n >= base+1000 {
		t.Errorf("%d entries remain after the errors became garbage", n-base)
	}
}
