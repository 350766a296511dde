package lmdbscan

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

func testEnv(t *testing.T, n int) (*lmdb.Env, lmdb.DBI) {
	t.Helper()
	env, err := lmdb.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	env.SetMaxDBs(4)
	if err := env.Open(t.TempDir(), 0, 0o600); err != nil {
		env.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	var dbi lmdb.DBI
	err = env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.CreateDBI("items"); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("k%02d", i)
			if err := txn.Put(dbi, []byte(k), []byte(strings.ToUpper(k)), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return env, dbi
}

// drain scans s to the end and returns the keys seen.
func drain(s *Scanner) []string {
	var keys []string
	for s.Scan() {
		if want := strings.ToUpper(string(s.Key())); string(s.Val()) != want {
			keys = append(keys, "BAD:"+string(s.Val()))
		}
		keys = append(keys, string(s.Key()))
	}
	return keys
}

func TestScanAll(t *testing.T) {
	env, dbi := testEnv(t, 25)
	err := env.View(func(txn *lmdb.Txn) error {
		s := New(txn, dbi)
		defer s.Close()
		keys := drain(s)
		if len(keys) != 25 || keys[0] != "k00" || keys[24] != "k24" {
			t.Errorf("scan saw %v", keys)
		}
		if s.Err() != nil {
			t.Errorf("Err after clean end = %v", s.Err())
		}
		// Still exhausted: further Scans keep returning false, no error.
		if s.Scan() || s.Err() != nil {
			t.Errorf("Scan after end = true or err %v", s.Err())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestScanEmptyDB(t *testing.T) {
	env, dbi := testEnv(t, 0)
	env.View(func(txn *lmdb.Txn) error {
		s := New(txn, dbi)
		defer s.Close()
		if s.Scan() {
			t.Errorf("Scan on empty db found %q", s.Key())
		}
		if s.Err() != nil {
			t.Errorf("Err = %v", s.Err())
		}
		return nil
	})
}

func TestScanSet(t *testing.T) {
	env, dbi := testEnv(t, 10)
	env.View(func(txn *lmdb.Txn) error {
		s := New(txn, dbi)
		defer s.Close()
		if !s.Set([]byte("k045"), nil, lmdb.SetRange) {
			t.Fatalf("Set: %v", s.Err())
		}
		if string(s.Key()) != "k05" {
			t.Errorf("Set landed on %q", s.Key())
		}
		// The first Scan reports the Set position, then moves on.
		if keys := drain(s); strings.Join(keys, ",") != "k05,k06,k07,k08,k09" {
			t.Errorf("scan after Set: %v", keys)
		}
		// A failed Set makes the next Scan fail too, without an error.
		if s.Set([]byte("zz"), nil, lmdb.SetRange) {
			t.Error("Set past the end succeeded")
		}
		if s.Scan() || s.Err() != nil {
			t.Errorf("Scan after failed Set: err %v", s.Err())
		}
		return nil
	})
}

func TestScanSetNext(t *testing.T) {
	env, dbi := testEnv(t, 10)
	env.View(func(txn *lmdb.Txn) error {
		s := New(txn, dbi)
		defer s.Close()
		if !s.SetNext(nil, nil, lmdb.Last, lmdb.Prev) {
			t.Fatalf("SetNext: %v", s.Err())
		}
		keys := drain(s)
		if len(keys) != 10 || keys[0] != "k09" || keys[9] != "k00" {
			t.Errorf("backward scan: %v", keys)
		}
		return nil
	})
}

func TestScanErrors(t *testing.T) {
	env, _ := testEnv(t, 1)
	env.View(func(txn *lmdb.Txn) error {
		// A cursor that cannot be opened shows up in Err.
		s := New(txn, lmdb.DBI(1000))
		if s.Scan() {
			t.Error("Scan on bad DBI succeeded")
		}
		if s.Err() == nil || s.Cursor() != nil {
			t.Errorf("bad DBI: Err %v, Cursor %v", s.Err(), s.Cursor())
		}
		s.Close()
		return nil
	})
	env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI("items", 0)
		if err != nil {
			return err
		}
		s := New(txn, dbi)
		if s.Cursor() == nil {
			t.Fatal("no cursor")
		}
		s.Close()
		s.Close() // twice is fine
		if s.Cursor() != nil {
			t.Error("Cursor after Close")
		}
		if s.Scan() || s.Set([]byte("k00"), nil, lmdb.Set) || s.SetNext(nil, nil, lmdb.First, lmdb.Next) {
			t.Error("closed scanner moved")
		}
		if !errors.Is(s.Err(), errClosed) {
			t.Errorf("Err after Close = %v", s.Err())
		}
		if err := s.Del(0); !errors.Is(err, errClosed) {
			t.Errorf("Del after Close = %v", err)
		}
		return nil
	})
}

func TestScanDelete(t *testing.T) {
	// In a child process: an engine crash here must not hide the other
	// tests' results.
	if os.Getenv("DLMDBSCAN_CHILD") != t.Name() {
		cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), "DLMDBSCAN_CHILD="+t.Name())
		if out, err := cmd.CombinedOutput(); err != nil {
			if len(out) > 2500 {
				out = out[:2500]
			}
			t.Fatalf("child process failed (%v):\n%s", err, out)
		}
		return
	}
	env, dbi := testEnv(t, 10)
	err := env.Update(func(txn *lmdb.Txn) error {
		s := New(txn, dbi)
		defer s.Close()
		for s.Scan() {
			var err error
			switch n := s.Key()[2] - '0'; {
			case n%3 == 0:
				err = s.Del(0)
			case n%3 == 1:
				err = s.Cursor().Del(0)
			}
			if err != nil {
				return err
			}
		}
		return s.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	env.View(func(txn *lmdb.Txn) error {
		s := New(txn, dbi)
		defer s.Close()
		if keys := drain(s); strings.Join(keys, ",") != "k02,k05,k08" {
			t.Errorf("after deleting: %v", keys)
		}
		return nil
	})
}
