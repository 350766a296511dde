package bench

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// scratchEnv is an environment in its own temporary directory.
type scratchEnv struct {
	Env
	dir string
}

// openScratch creates a temporary directory and opens an environment of e
// in it. close removes the directory.
func openScratch(c *Config, e Engine, pattern string, o Options) (*scratchEnv, error) {
	dir, err := c.TempDir(pattern)
	if err != nil {
		return nil, err
	}
	env, err := e.Open(dir, o)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("open %s env: %w", e.Name(), err)
	}
	return &scratchEnv{Env: env, dir: dir}, nil
}

func (s *scratchEnv) close() error {
	var err error
	if s.Env != nil {
		err = s.Env.Close()
		s.Env = nil
	}
	if rerr := os.RemoveAll(s.dir); err == nil {
		err = rerr
	}
	return err
}

// loadSeq stores keys 0..n-1 with value(i) in key order, batch puts per
// write transaction, into the database name ("" = main; created if needed).
func loadSeq(env Env, name string, n, batch int, key func(i int) []byte, value func(i int) []byte) error {
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		txn, err := env.Begin(false)
		if err != nil {
			return err
		}
		db, err := txn.OpenDB(name, Create)
		if err != nil {
			txn.Abort()
			return err
		}
		for i := lo; i < hi; i++ {
			if err := txn.Put(db, key(i), value(i)); err != nil {
				txn.Abort()
				return fmt.Errorf("load put %d: %w", i, err)
			}
		}
		if err := txn.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// verifyContents checks that database name holds exactly n entries and that
// every stride-th key (and the last) maps to its expected value.
func verifyContents(env Env, name string, n, stride int, key func(i int) []byte, valSize int) error {
	txn, err := env.Begin(true)
	if err != nil {
		return err
	}
	defer txn.Abort()
	db, err := txn.OpenDB(name, 0)
	if err != nil {
		return err
	}
	got, err := txn.Entries(db)
	if err != nil {
		return err
	}
	if got != uint64(n) {
		return fmt.Errorf("verify: %d entries, want %d", got, n)
	}
	if stride < 1 {
		stride = 1
	}
	scratch := make([]byte, valSize)
	check := func(i int) error {
		v, err := txn.Get(db, key(i))
		if err != nil {
			return fmt.Errorf("verify get %d: %w", i, err)
		}
		return checkValue(v, i, valSize, scratch)
	}
	for i := 0; i < n; i += stride {
		if err := check(i); err != nil {
			return err
		}
	}
	if n > 0 {
		if err := check(n - 1); err != nil {
			return err
		}
	}
	// A key past the end must not exist.
	if _, err := txn.Get(db, key(n)); !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("verify: key %d past the end: err=%v, want not found", n, err)
	}
	return nil
}

// endTimed ends a timed write txn: it closes cur (if not nil), aborts the
// txn when err is set and commits it otherwise, and returns the time since
// t0 (the commit included).
func endTimed(txn Txn, cur Cursor, err error, t0 time.Time) (time.Duration, error) {
	if cur != nil {
		cur.Close()
	}
	if err != nil {
		txn.Abort()
		return 0, err
	}
	if err := txn.Commit(); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}
