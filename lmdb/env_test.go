package lmdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// itoa formats n without strconv, for matching text output.
func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

func TestEnvOpenCloseTwice(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Open(t.TempDir(), 0, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := env.Close(); err == nil {
		t.Fatal("second Close returned nil")
	}
	// Methods of a closed environment report errors instead of crashing.
	if _, err := env.Info(); err == nil {
		t.Error("Info on closed env: no error")
	}
	if _, err := env.Stat(); err == nil {
		t.Error("Stat on closed env: no error")
	}
	if _, err := env.BeginTxn(nil, Readonly); err == nil {
		t.Error("BeginTxn on closed env: no error")
	}
	if err := env.View(func(*Txn) error { return nil }); err == nil {
		t.Error("View on closed env: no error")
	}
	if err := env.Sync(true); err == nil {
		t.Error("Sync on closed env: no error")
	}
	env.CloseDBI(1) // must not crash
}

func TestEnvOpenMissingDir(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	err = env.Open(filepath.Join(t.TempDir(), "absent", "deeper"), 0, 0o600)
	if !IsNotExist(err) {
		t.Fatalf("IsNotExist(%v) = false", err)
	}
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("errors.Is does not see ENOENT in %v", err)
	}
	var op *OpError
	if !errors.As(err, &op) || op.Op != "mdb_env_open" {
		t.Fatalf("error %#v is not an mdb_env_open OpError", err)
	}
}

func TestEnvPathAndFD(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if p, err := env.Path(); err == nil || p != "" {
		t.Fatalf("Path before Open = %q, %v; want error", p, err)
	}
	if _, err := env.FD(); err == nil {
		t.Fatal("FD before Open: no error")
	}
	if _, err := env.BeginTxn(nil, Readonly); err == nil {
		t.Fatal("BeginTxn before Open: no error")
	}
	if err := env.Update(func(*Txn) error { return nil }); err == nil {
		t.Fatal("Update before Open: no error")
	}
	dir := t.TempDir()
	if err := env.Open(dir, 0, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := env.Path()
	if err != nil || p != dir {
		t.Fatalf("Path = %q, %v; want %q", p, err, dir)
	}
	fd, err := env.FD()
	if err != nil {
		t.Fatal(err)
	}
	// The descriptor must refer to the data file.
	var st1, st2 syscall.Stat_t
	if err := syscall.Fstat(int(fd), &st1); err != nil {
		t.Fatalf("fstat: %v", err)
	}
	if err := syscall.Stat(filepath.Join(dir, "data.mdb"), &st2); err != nil {
		t.Fatal(err)
	}
	if st1.Ino != st2.Ino || st1.Dev != st2.Dev {
		t.Fatalf("FD %d is not data.mdb", fd)
	}
}

func TestEnvNoSubdir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "single.db")
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.Open(path, NoSubdir, 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		t.Fatalf("data file %s: %v", path, err)
	}
	if _, err := os.Stat(path + "-lock"); err != nil {
		t.Fatalf("lock file: %v", err)
	}
}

func TestEnvFlags(t *testing.T) {
	env := openEnv(t, NoSync)
	f, err := env.Flags()
	if err != nil {
		t.Fatal(err)
	}
	if f&NoSync == 0 || f&NoTLS == 0 {
		t.Fatalf("flags %#x lack NoSync or NoTLS", f)
	}
	if err := env.UnsetFlags(NoSync); err != nil {
		t.Fatal(err)
	}
	if err := env.SetFlags(NoMetaSync); err != nil {
		t.Fatal(err)
	}
	f, err = env.Flags()
	if err != nil {
		t.Fatal(err)
	}
	if f&NoSync != 0 || f&NoMetaSync == 0 {
		t.Fatalf("flags %#x after Unset(NoSync)+Set(NoMetaSync)", f)
	}
	// Flags fixed at open time cannot be switched.
	if err := env.SetFlags(WriteMap); !IsErrnoSys(err, syscall.EINVAL) {
		t.Fatalf("SetFlags(WriteMap) = %v, want EINVAL", err)
	}
}

func TestEnvInfoStat(t *testing.T) {
	env := openEnv(t, 0)
	info, err := env.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.MapSize != 64<<20 {
		t.Errorf("MapSize = %d, want %d", info.MapSize, 64<<20)
	}
	if info.MaxReaders == 0 {
		t.Error("MaxReaders = 0")
	}
	dbi := openDB(t, env, "", 0)
	info, err = env.Info()
	if err != nil {
		t.Fatal(err)
	}
	before := info.LastTxnID
	fill(t, env, dbi, 50)
	fill(t, env, dbi, 1)

	info, err = env.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.LastTxnID != before+2 {
		t.Errorf("LastTxnID = %d after two commits from %d", info.LastTxnID, before)
	}
	if info.LastPNO < 2 {
		t.Errorf("LastPNO = %d", info.LastPNO)
	}
	st, err := env.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 50 || st.Depth < 1 || st.LeafPages < 1 {
		t.Errorf("env Stat = %+v", st)
	}
	if st.PSize != uint(os.Getpagesize()) {
		t.Errorf("PSize = %d, page size %d", st.PSize, os.Getpagesize())
	}
}

func TestEnvSizes(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.SetMapSize(-1); err == nil {
		t.Error("SetMapSize(-1): no error")
	}
	if err := env.SetMaxReaders(-1); err == nil {
		t.Error("SetMaxReaders(-1): no error")
	}
	if err := env.SetMaxDBs(-1); err == nil {
		t.Error("SetMaxDBs(-1): no error")
	}
	// LMDB puts no upper bound on the number of named databases (lmdb-go's
	// own tests ask for 65536).
	if err := env.SetMaxDBs(64 << 10); err != nil {
		t.Errorf("SetMaxDBs(65536): %v", err)
	}
	if err := env.SetMaxReaders(77); err != nil {
		t.Fatal(err)
	}
	if n, err := env.MaxReaders(); err != nil || n != 77 {
		t.Fatalf("MaxReaders = %d, %v", n, err)
	}
	if err := env.Open(t.TempDir(), 0, 0o600); err != nil {
		t.Fatal(err)
	}
	// Too late once open.
	if err := env.SetMaxReaders(10); err == nil {
		t.Error("SetMaxReaders after Open: no error")
	}
	if err := env.SetMapSize(8 << 20); err != nil {
		t.Fatalf("SetMapSize on open env: %v", err)
	}
	if info, err := env.Info(); err != nil || info.MapSize != 8<<20 {
		t.Fatalf("Info after resize = %+v, %v", info, err)
	}
}

func TestEnvMaxKeySize(t *testing.T) {
	var nilEnv *Env
	n := nilEnv.MaxKeySize()
	if n != 511 {
		t.Fatalf("MaxKeySize(nil) = %d, want 511", n)
	}
	env := openEnv(t, 0)
	if m := env.MaxKeySize(); m != n {
		t.Fatalf("MaxKeySize = %d, nil env says %d", m, n)
	}
	dbi := openDB(t, env, "", 0)
	err := env.Update(func(txn *Txn) error {
		if err := txn.Put(dbi, bytes.Repeat([]byte("k"), n), []byte("v"), 0); err != nil {
			return err
		}
		return txn.Put(dbi, bytes.Repeat([]byte("k"), n+1), []byte("v"), 0)
	})
	wantErrno(t, "oversized key", err, BadValSize)
}

func TestEnvReaderList(t *testing.T) {
	env := openEnv(t, 0)
	openDB(t, env, "", 0)

	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()

	var lines []string
	if err := env.ReaderList(func(s string) error {
		lines = append(lines, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 {
		t.Fatalf("ReaderList gave %d lines, want header + 1 reader: %q", len(lines), lines)
	}
	pid := os.Getpid()
	if !strings.Contains(lines[1], itoa(pid)) {
		t.Errorf("reader line %q lacks our pid %d", lines[1], pid)
	}

	// An error from fn stops the listing and is returned as is.
	stop := errors.New("stop")
	calls := 0
	err = env.ReaderList(func(string) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("ReaderList with failing fn = %v after %d calls", err, calls)
	}

	if err := env.ReaderList(nil); err == nil {
		t.Error("ReaderList(nil): no error")
	}
	if err := (&Env{}).ReaderList(func(string) error { return nil }); err == nil {
		t.Error("ReaderList on zero Env: no error")
	}
}

func TestEnvReaderCheck(t *testing.T) {
	env := openEnv(t, 0)
	n, err := env.ReaderCheck()
	if err != nil || n != 0 {
		t.Fatalf("ReaderCheck = %d, %v", n, err)
	}
}

// TestEnvCopy fills an env (leaving free pages), copies it each way and
// checks the copy opens, passes Check and holds the same items.
func TestEnvCopy(t *testing.T) {
	cases := []struct {
		name string
		do   func(env *Env, dst string) error
		file bool // dst is a file written through a descriptor
	}{
		{"Copy", func(env *Env, dst string) error { return env.Copy(dst) }, false},
		{"CopyFlag/compact", func(env *Env, dst string) error { return env.CopyFlag(dst, CopyCompact) }, false},
		{"CopyFlag/zero", func(env *Env, dst string) error { return env.CopyFlag(dst, 0) }, false},
		{"CopyFD", func(env *Env, dst string) error { return viaFD(dst, env.CopyFD) }, true},
		{"CopyFDFlag/compact", func(env *Env, dst string) error {
			return viaFD(dst, func(fd uintptr) error { return env.CopyFDFlag(fd, CopyCompact) })
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := openEnv(t, 0)
			dbi := openDB(t, env, "items", 0)
			fill(t, env, dbi, 300)
			mustUpdate(t, env, func(txn *Txn) error { // leave free pages behind
				for i := 0; i < 300; i += 2 {
					if err := txn.Del(dbi, kv("key", i), nil); err != nil {
						return err
					}
				}
				return nil
			})
			dst := t.TempDir()
			flags := uint(0)
			if tc.file {
				dst = filepath.Join(dst, "copy.mdb")
				flags = NoSubdir
			}
			if err := tc.do(env, dst); err != nil {
				t.Fatal(err)
			}
			cp, err := NewEnv()
			if err != nil {
				t.Fatal(err)
			}
			defer cp.Close()
			cp.SetMaxDBs(4)
			if err := cp.Open(dst, flags|Readonly, 0o600); err != nil {
				t.Fatalf("open copy: %v", err)
			}
			if err := cp.Check(); err != nil {
				t.Fatalf("copy fails Check: %v", err)
			}
			mustView(t, cp, func(txn *Txn) error {
				db, err := txn.OpenDBI("items", 0)
				if err != nil {
					return err
				}
				st, err := txn.Stat(db)
				if err != nil {
					return err
				}
				if st.Entries != 150 {
					t.Errorf("copy has %d entries, want 150", st.Entries)
				}
				for i := 0; i < 300; i++ {
					v, err := txn.Get(db, kv("key", i))
					switch {
					case i%2 == 0 && !IsNotFound(err):
						t.Errorf("deleted key %d: %q, %v", i, v, err)
					case i%2 == 1 && (err != nil || !bytes.Equal(v, kv("val", i))):
						t.Errorf("key %d: %q, %v", i, v, err)
					}
				}
				return nil
			})
		})
	}
}

func viaFD(path string, copyTo func(uintptr) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := copyTo(f.Fd()); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func TestEnvSync(t *testing.T) {
	env := openEnv(t, NoSync)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 3)
	if err := env.Sync(true); err != nil {
		t.Fatal(err)
	}
	if err := env.Sync(false); err != nil {
		t.Fatal(err)
	}
}

func TestEnvCloseDBI(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "gone", 0)
	fill(t, env, dbi, 2)
	env.CloseDBI(dbi)
	// The handle is dead, but the data is not: reopening finds it.
	mustView(t, env, func(txn *Txn) error {
		db, err := txn.OpenDBI("gone", 0)
		if err != nil {
			return err
		}
		_, err = txn.Get(db, kv("key", 1))
		return err
	})
}

func TestEnvCheck(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "c", 0)
	fill(t, env, dbi, 500)
	if err := env.Check(); err != nil {
		t.Fatalf("Check on a healthy env: %v", err)
	}
	mustView(t, env, func(txn *Txn) error { return txn.Check() })
	// Inside a write transaction the checker sees the uncommitted pages.
	mustUpdate(t, env, func(txn *Txn) error {
		for i := 0; i < 500; i += 3 {
			if err := txn.Del(dbi, kv("key", i), nil); err != nil {
				return err
			}
		}
		return txn.Check()
	})
}

func TestCheckErrorShape(t *testing.T) {
	// The engine's report is attached to an OpError carrying Corrupted.
	err := error(&checkError{op: &OpError{Op: "mdb_txn_check", Errno: Corrupted}, why: "page 7: keys out of order"})
	if !errors.Is(err, Corrupted) || !IsErrno(err, Corrupted) {
		t.Fatalf("errors.Is(%v, Corrupted) = false", err)
	}
	if !strings.Contains(err.Error(), "keys out of order") || !strings.Contains(err.Error(), "mdb_txn_check") {
		t.Fatalf("message %q lacks op or reason", err)
	}
	var op *OpError
	if !errors.As(err, &op) || op.Errno != Corrupted {
		t.Fatalf("errors.As: %v", op)
	}
}

func TestVersion(t *testing.T) {
	major, minor, patch, s := Version()
	if major != 0 || minor != 9 || patch < 33 {
		t.Errorf("Version = %d.%d.%d", major, minor, patch)
	}
	if s == "" || s != VersionString() {
		t.Errorf("version strings %q / %q", s, VersionString())
	}
	if !strings.Contains(s, itoa(major)+"."+itoa(minor)+"."+itoa(patch)) {
		t.Errorf("version string %q does not contain %d.%d.%d", s, major, minor, patch)
	}
}

// Closing an environment while transactions and cursors are still open is
// a programming error, but it must not crash: they report errors instead.
func TestEnvCloseUnderOpenTxn(t *testing.T) {
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Open(t.TempDir(), 0, 0o600); err != nil {
		t.Fatal(err)
	}
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 3)
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Get(dbi, kv("key", 1)); err == nil {
		t.Error("Get after env Close: no error")
	}
	if _, _, err := cur.Get(nil, nil, First); err == nil {
		t.Error("cursor Get after env Close: no error")
	}
	if txn.ID() != 0 {
		t.Error("ID after env Close is not 0")
	}
	if err := txn.Commit(); err == nil {
		t.Error("Commit after env Close: no error")
	}
	cur.Close()
	txn.Abort()
}

// TestCheckFindsCorruption damages key order inside one leaf page of a
// closed environment and expects Env.Check to report Corrupted with the
// checker's reason.
func TestCheckFindsCorruption(t *testing.T) {
	dir := t.TempDir()
	env, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Open(dir, 0, 0o600); err != nil {
		t.Fatal(err)
	}
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 1000)
	if err := env.Check(); err != nil {
		t.Fatalf("Check before damage: %v", err)
	}
	st, err := env.Stat()
	if err != nil {
		t.Fatal(err)
	}
	psize := int(st.PSize)
	env.Close()

	path := filepath.Join(dir, "data.mdb")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// LMDB 64-bit page header: pgno u64, pad u16, flags u16, lower u16,
	// upper u16, then u16 node offsets; a leaf node is lo u16, hi u16,
	// flags u16, ksize u16, key bytes.
	damaged := false
	for pg := 2; (pg+1)*psize <= len(data) && !damaged; pg++ {
		page := data[pg*psize : (pg+1)*psize]
		flags := binary.LittleEndian.Uint16(page[10:])
		lower := int(binary.LittleEndian.Uint16(page[12:]))
		if flags != 0x02 || (lower-16)/2 < 3 {
			continue
		}
		node := int(binary.LittleEndian.Uint16(page[16+2:])) // second node
		if node+8 >= psize || page[node+8] != 'k' {
			continue
		}
		page[node+8] = 'z' // now sorts after its right neighbour
		damaged = true
	}
	if !damaged {
		t.Fatal("found no leaf page to damage")
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	env2, err := NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	defer env2.Close()
	if err := env2.Open(dir, Readonly, 0o600); err != nil {
		t.Fatal(err)
	}
	err = env2.Check()
	if !errors.Is(err, Corrupted) || !IsErrno(err, Corrupted) {
		t.Fatalf("Check after damage = %v, want Corrupted", err)
	}
	if msg := err.Error(); len(msg) <= len("mdb_txn_check: "+Corrupted.Error()) {
		t.Fatalf("Check error %q carries no reason", msg)
	}
	t.Logf("checker says: %v", err)
}

// Every environment flag round-trips data through a write, a reopen and
// the checker.
func TestEnvFlagMatrix(t *testing.T) {
	for _, flags := range []uint{0, WriteMap, WriteMap | MapAsync, NoSync, NoMetaSync, NoReadahead, NoMemInit, NoLock} {
		t.Run(fmt.Sprintf("%#x", flags), func(t *testing.T) {
			dir := t.TempDir()
			env, err := NewEnv()
			if err != nil {
				t.Fatal(err)
			}
			if err := env.Open(dir, flags, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := env.Flags()
			if err != nil || got&flags != flags {
				t.Errorf("Flags() = %#x, %v; opened with %#x", got, err, flags)
			}
			dbi := openDB(t, env, "", 0)
			fill(t, env, dbi, 200)
			if err := env.Sync(true); err != nil {
				t.Fatal(err)
			}
			env.Close()

			env, err = NewEnv()
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			if err := env.Open(dir, Readonly, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := env.Check(); err != nil {
				t.Fatal(err)
			}
			mustView(t, env, func(txn *Txn) error {
				st, err := txn.Stat(dbi)
				if err != nil || st.Entries != 200 {
					t.Errorf("reopened: %+v, %v", st, err)
				}
				v, err := txn.Get(dbi, kv("key", 123))
				if err != nil || string(v) != "val123" {
					t.Errorf("reopened Get: %q, %v", v, err)
				}
				return nil
			})
		})
	}
}
