package difftest

import (
	"errors"
	"syscall"

	lmdb "github.com/PowerDNS/lmdb-go/lmdb"
)

// stockEngine is stock LMDB 0.9.33 through lmdb-go v1.9.3.
type stockEngine struct{}

func (stockEngine) name() string   { return "stock" }
func (stockEngine) hasCheck() bool { return false }

func (stockEngine) code(err error) int {
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

func (stockEngine) openEnv(path string, o envOpts) (tEnv, error) {
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
	if err := e.Open(path, o.flags, mode); err != nil {
		e.Close()
		return nil, err
	}
	return &stockEnv{e}, nil
}

type stockEnv struct{ e *lmdb.Env }

func (s *stockEnv) begin(parent tTxn, flags uint) (tTxn, error) {
	var p *lmdb.Txn
	if parent != nil {
		p = parent.(*stockTxn).t
	}
	t, err := s.e.BeginTxn(p, flags)
	if err != nil {
		return nil, err
	}
	return &stockTxn{t}, nil
}

func (s *stockEnv) stat() (tStat, error) {
	st, err := s.e.Stat()
	if err != nil {
		return tStat{}, err
	}
	return stockStat(st), nil
}

func stockStat(st *lmdb.Stat) tStat {
	return tStat{psize: st.PSize, depth: st.Depth, branch: st.BranchPages,
		leaf: st.LeafPages, overflow: st.OverflowPages, items: st.Entries}
}

func (s *stockEnv) check() error             { return nil }
func (s *stockEnv) sync(force bool) error    { return s.e.Sync(force) }
func (s *stockEnv) setMapSize(n int64) error { return s.e.SetMapSize(n) }
func (s *stockEnv) lastPgno() (uint64, error) {
	info, err := s.e.Info()
	if err != nil {
		return 0, err
	}
	return uint64(info.LastPNO), nil
}
func (s *stockEnv) copyTo(path string, compact bool) error {
	if compact {
		return s.e.CopyFlag(path, lmdb.CopyCompact)
	}
	return s.e.Copy(path)
}
func (s *stockEnv) maxKeySize() int     { return s.e.MaxKeySize() }
func (s *stockEnv) close() error        { return s.e.Close() }
func (s *stockEnv) closeDBI(dbi uint32) { s.e.CloseDBI(lmdb.DBI(dbi)) }

type stockTxn struct{ t *lmdb.Txn }

func (s *stockTxn) openDBI(name string, flags uint) (uint32, error) {
	var d lmdb.DBI
	var err error
	if name == "" {
		d, err = s.t.OpenRoot(flags)
	} else {
		d, err = s.t.OpenDBI(name, flags)
	}
	return uint32(d), err
}
func (s *stockTxn) dbFlags(dbi uint32) (uint, error)           { return s.t.Flags(lmdb.DBI(dbi)) }
func (s *stockTxn) get(dbi uint32, key []byte) ([]byte, error) { return s.t.Get(lmdb.DBI(dbi), key) }
func (s *stockTxn) put(dbi uint32, key, val []byte, flags uint) error {
	return s.t.Put(lmdb.DBI(dbi), key, val, flags)
}
func (s *stockTxn) putReserve(dbi uint32, key []byte, n int, flags uint) ([]byte, error) {
	return s.t.PutReserve(lmdb.DBI(dbi), key, n, flags)
}
func (s *stockTxn) del(dbi uint32, key, val []byte) error { return s.t.Del(lmdb.DBI(dbi), key, val) }
func (s *stockTxn) cursor(dbi uint32) (tCursor, error) {
	c, err := s.t.OpenCursor(lmdb.DBI(dbi))
	if err != nil {
		return nil, err
	}
	return &stockCursor{c}, nil
}
func (s *stockTxn) stat(dbi uint32) (tStat, error) {
	st, err := s.t.Stat(lmdb.DBI(dbi))
	if err != nil {
		return tStat{}, err
	}
	return stockStat(st), nil
}
func (s *stockTxn) drop(dbi uint32, del bool) error { return s.t.Drop(lmdb.DBI(dbi), del) }
func (s *stockTxn) commit() error                   { return s.t.Commit() }
func (s *stockTxn) abort()                          { s.t.Abort() }
func (s *stockTxn) reset()                          { s.t.Reset() }
func (s *stockTxn) renew() error                    { return s.t.Renew() }
func (s *stockTxn) check() error                    { return nil }

type stockCursor struct{ c *lmdb.Cursor }

func (s *stockCursor) get(k, v []byte, op uint) ([]byte, []byte, error) { return s.c.Get(k, v, op) }
func (s *stockCursor) put(k, v []byte, flags uint) error                { return s.c.Put(k, v, flags) }
func (s *stockCursor) putReserve(k []byte, n int, flags uint) ([]byte, error) {
	return s.c.PutReserve(k, n, flags)
}
func (s *stockCursor) del(flags uint) error   { return s.c.Del(flags) }
func (s *stockCursor) count() (uint64, error) { return s.c.Count() }
func (s *stockCursor) renew(t tTxn) error     { return s.c.Renew(t.(*stockTxn).t) }
func (s *stockCursor) putMulti(k, page []byte, stride int, flags uint) error {
	return s.c.PutMulti(k, page, stride, flags)
}
func (s *stockCursor) close() { s.c.Close() }
