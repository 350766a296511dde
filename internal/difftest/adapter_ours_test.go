//go:build !dlmdb_stockonly

package difftest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	lmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// oursEngine is our engine through our drop-in lmdb package (this file mirrors
// adapter_stock_test.go; keep the two in step).
type oursEngine struct {
	// mem: every env is opened InMemory. The path handed to openEnv is
	// then no env's file: it is the directory the harness copies the env
	// into when it needs a data file (memEnv), and it must stay empty
	// otherwise.
	mem bool
}

func (e oursEngine) name() string {
	if e.mem {
		return "ours-mem"
	}
	return "ours"
}
func (oursEngine) hasCheck() bool { return true }

func (oursEngine) code(err error) int {
	if err == nil {
		return 0
	}
	var oe *lmdb.OpError
	if errors.As(err, &oe) {
		err = oe.Errno
	}
	var le lmdb.Errno
	if errors.As(err, &le) {
		return int(le)
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return int(se)
	}
	return errNotErrno
}

func (e oursEngine) openEnv(path string, o envOpts) (tEnv, error) {
	env, err := openOurs(path, o, e.mem)
	if err != nil {
		return nil, err
	}
	return &oursEnv{e: env, mem: e.mem, dir: path}, nil
}

func openOurs(path string, o envOpts, mem bool) (*lmdb.Env, error) {
	e, err := lmdb.NewEnv()
	if err != nil {
		return nil, err
	}
	if o.mapSize > 0 {
		if err := e.SetMapSize(o.mapSize); err != nil {
			e.Close()
			return nil, err
		}
	}
	if o.maxDBs > 0 {
		if err := e.SetMaxDBs(o.maxDBs); err != nil {
			e.Close()
			return nil, err
		}
	}
	mode := o.mode
	if mode == 0 {
		mode = 0o644
	}
	flags := o.flags
	if mem {
		path, flags = "", flags|lmdb.InMemory
	}
	if err := e.Open(path, flags, mode); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

type oursEnv struct {
	e   *lmdb.Env
	mem bool   // opened InMemory
	dir string // the path given to openEnv (with mem: where copies go)
}

func (s *oursEnv) inMemory() bool { return s.mem }

// openSnapshot opens a copy made by snapshotFile as an ordinary file env
// of our engine, read-only.
func (s *oursEnv) openSnapshot(dir string) (tEnv, error) {
	return oursEngine{}.openEnv(dir, envOpts{maxDBs: 64, flags: fReadonly})
}

func (s *oursEnv) snapshotFile(name string) (string, error) {
	if !s.mem {
		return "", fmt.Errorf("snapshotFile: %s is not an in-memory env", s.dir)
	}
	dir := filepath.Join(s.dir, name)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := s.e.Copy(dir); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

func (s *oursEnv) begin(parent tTxn, flags uint) (tTxn, error) {
	var p *lmdb.Txn
	if parent != nil {
		p = parent.(*oursTxn).t
	}
	t, err := s.e.BeginTxn(p, flags)
	if err != nil {
		return nil, err
	}
	return &oursTxn{t}, nil
}

func (s *oursEnv) stat() (tStat, error) {
	st, err := s.e.Stat()
	if err != nil {
		return tStat{}, err
	}
	return oursStat(st), nil
}

func oursStat(st *lmdb.Stat) tStat {
	return tStat{psize: st.PSize, depth: st.Depth, branch: st.BranchPages,
		leaf: st.LeafPages, overflow: st.OverflowPages, items: st.Entries}
}

func (s *oursEnv) check() error             { return s.e.Check() }
func (s *oursEnv) sync(force bool) error    { return s.e.Sync(force) }
func (s *oursEnv) setMapSize(n int64) error { return s.e.SetMapSize(n) }
func (s *oursEnv) lastPgno() (uint64, error) {
	info, err := s.e.Info()
	if err != nil {
		return 0, err
	}
	return uint64(info.LastPNO), nil
}
func (s *oursEnv) copyTo(path string, compact bool) error {
	if compact {
		return s.e.CopyFlag(path, lmdb.CopyCompact)
	}
	return s.e.Copy(path)
}
func (s *oursEnv) maxKeySize() int     { return s.e.MaxKeySize() }
func (s *oursEnv) close() error        { return s.e.Close() }
func (s *oursEnv) closeDBI(dbi uint32) { s.e.CloseDBI(lmdb.DBI(dbi)) }

type oursTxn struct{ t *lmdb.Txn }

func (s *oursTxn) openDBI(name string, flags uint) (uint32, error) {
	var d lmdb.DBI
	var err error
	if name == "" {
		d, err = s.t.OpenRoot(flags)
	} else {
		d, err = s.t.OpenDBI(name, flags)
	}
	return uint32(d), err
}
func (s *oursTxn) dbFlags(dbi uint32) (uint, error)           { return s.t.Flags(lmdb.DBI(dbi)) }
func (s *oursTxn) get(dbi uint32, key []byte) ([]byte, error) { return s.t.Get(lmdb.DBI(dbi), key) }
func (s *oursTxn) put(dbi uint32, key, val []byte, flags uint) error {
	return s.t.Put(lmdb.DBI(dbi), key, val, flags)
}
func (s *oursTxn) putReserve(dbi uint32, key []byte, n int, flags uint) ([]byte, error) {
	return s.t.PutReserve(lmdb.DBI(dbi), key, n, flags)
}
func (s *oursTxn) del(dbi uint32, key, val []byte) error { return s.t.Del(lmdb.DBI(dbi), key, val) }
func (s *oursTxn) cursor(dbi uint32) (tCursor, error) {
	c, err := s.t.OpenCursor(lmdb.DBI(dbi))
	if err != nil {
		return nil, err
	}
	return &oursCursor{c}, nil
}
func (s *oursTxn) stat(dbi uint32) (tStat, error) {
	st, err := s.t.Stat(lmdb.DBI(dbi))
	if err != nil {
		return tStat{}, err
	}
	return oursStat(st), nil
}
func (s *oursTxn) drop(dbi uint32, del bool) error { return s.t.Drop(lmdb.DBI(dbi), del) }
func (s *oursTxn) commit() error                   { return s.t.Commit() }
func (s *oursTxn) abort()                          { s.t.Abort() }
func (s *oursTxn) reset()                          { s.t.Reset() }
func (s *oursTxn) renew() error                    { return s.t.Renew() }
func (s *oursTxn) check() error                    { return s.t.Check() }

type oursCursor struct{ c *lmdb.Cursor }

func (s *oursCursor) get(k, v []byte, op uint) ([]byte, []byte, error) { return s.c.Get(k, v, op) }
func (s *oursCursor) put(k, v []byte, flags uint) error                { return s.c.Put(k, v, flags) }
func (s *oursCursor) putReserve(k []byte, n int, flags uint) ([]byte, error) {
	return s.c.PutReserve(k, n, flags)
}
func (s *oursCursor) del(flags uint) error   { return s.c.Del(flags) }
func (s *oursCursor) count() (uint64, error) { return s.c.Count() }
func (s *oursCursor) renew(t tTxn) error     { return s.c.Renew(t.(*oursTxn).t) }
func (s *oursCursor) putMulti(k, page []byte, stride int, flags uint) error {
	return s.c.PutMulti(k, page, stride, flags)
}
func (s *oursCursor) close() { s.c.Close() }

// getBatch: the batch op (batch_diff_test.go).
func (s *oursCursor) getBatch(setkey []byte, op uint, max int, end []byte, flags uint) ([][]byte, [][]byte, error) {
	return s.c.GetBatch(setkey, op, max, end, flags, nil, nil)
}

// subject is the engine under test; memSubject the same with every env in
// memory (InMemory), for the in-memory half of the matrix (memdiff_test.go).
var (
	subject    engine = oursEngine{}
	memSubject        = oursEngine{mem: true}
)

// subjects: the engine under test on files and in memory, for the pinned
// sequences that run in both modes.
func subjects() []engine { return []engine{subject, memSubject} }
