// Adapter for stock github.com/PowerDNS/lmdb-go/lmdb v1.9.3.
//
// adapter_ours.go is generated from this file (see gen.go): edit this one,
// then run `go generate ./bench`.

package bench

import (
	stocklmdb "github.com/PowerDNS/lmdb-go/lmdb"
)

type stockEngine struct{}

// Stock is the adapter for the stock engine.
var Stock Engine = stockEngine{}

func (stockEngine) Name() string     { return stockName }
func (stockEngine) Describe() string { return stockDescribe }
func (stockEngine) StandIn() bool    { return stockStandIn }

func (stockEngine) Open(dir string, o Options) (Env, error) {
	env, err := stocklmdb.NewEnv()
	if err != nil {
		return nil, err
	}
	if o.MapSize > 0 {
		if err = env.SetMapSize(o.MapSize); err != nil {
			env.Close()
			return nil, err
		}
	}
	if o.MaxDBs > 0 {
		if err = env.SetMaxDBs(o.MaxDBs); err != nil {
			env.Close()
			return nil, err
		}
	}
	var fl uint
	if o.Flags&NoSync != 0 {
		fl |= stocklmdb.NoSync
	}
	if o.Flags&NoMetaSync != 0 {
		fl |= stocklmdb.NoMetaSync
	}
	if o.Flags&NoLock != 0 {
		fl |= stocklmdb.NoLock
	}
	if o.Flags&NoReadahead != 0 {
		fl |= stocklmdb.NoReadahead
	}
	if o.Flags&WriteMap != 0 {
		fl |= stocklmdb.WriteMap
	}
	if err = env.Open(dir, fl, 0o644); err != nil {
		env.Close()
		return nil, err
	}
	return &stockEnv{env: env}, nil
}

type stockEnv struct{ env *stocklmdb.Env }

func (e *stockEnv) Begin(readOnly bool) (Txn, error) {
	var fl uint
	if readOnly {
		fl = stocklmdb.Readonly
	}
	t, err := e.env.BeginTxn(nil, fl)
	if err != nil {
		return nil, err
	}
	return &stockTxn{t: t}, nil
}

func (e *stockEnv) Sync() error  { return e.env.Sync(true) }
func (e *stockEnv) Close() error { return e.env.Close() }

type stockTxn struct{ t *stocklmdb.Txn }

func stockErr(err error) error {
	if stocklmdb.IsNotFound(err) {
		return ErrNotFound
	}
	return err
}

func (x *stockTxn) OpenDB(name string, flags DBFlags) (DB, error) {
	var fl uint
	if flags&Create != 0 {
		fl |= stocklmdb.Create
	}
	if flags&DupSort != 0 {
		fl |= stocklmdb.DupSort
	}
	if flags&DupFixed != 0 {
		fl |= stocklmdb.DupFixed
	}
	var d stocklmdb.DBI
	var err error
	if name == "" {
		d, err = x.t.OpenRoot(fl)
	} else {
		d, err = x.t.OpenDBI(name, fl)
	}
	return DB(d), stockErr(err)
}

func (x *stockTxn) SetRawRead(on bool) { x.t.RawRead = on }

func (x *stockTxn) Get(db DB, key []byte) ([]byte, error) {
	v, err := x.t.Get(stocklmdb.DBI(db), key)
	return v, stockErr(err)
}

func (x *stockTxn) Put(db DB, key, val []byte) error {
	return x.t.Put(stocklmdb.DBI(db), key, val, 0)
}

func (x *stockTxn) Del(db DB, key []byte) error {
	return stockErr(x.t.Del(stocklmdb.DBI(db), key, nil))
}

func (x *stockTxn) Entries(db DB) (uint64, error) {
	st, err := x.t.Stat(stocklmdb.DBI(db))
	if err != nil {
		return 0, err
	}
	return st.Entries, nil
}

func (x *stockTxn) Cursor(db DB) (Cursor, error) {
	c, err := x.t.OpenCursor(stocklmdb.DBI(db))
	if err != nil {
		return nil, err
	}
	return &stockCursor{c: c}, nil
}

func (x *stockTxn) Commit() error { return x.t.Commit() }
func (x *stockTxn) Abort()        { x.t.Abort() }

type stockCursor struct{ c *stocklmdb.Cursor }

func (c *stockCursor) First() ([]byte, []byte, error) {
	k, v, err := c.c.Get(nil, nil, stocklmdb.First)
	return k, v, stockErr(err)
}

func (c *stockCursor) Next() ([]byte, []byte, error) {
	k, v, err := c.c.Get(nil, nil, stocklmdb.Next)
	return k, v, stockErr(err)
}

func (c *stockCursor) Seek(key []byte) ([]byte, []byte, error) {
	k, v, err := c.c.Get(key, nil, stocklmdb.SetRange)
	return k, v, stockErr(err)
}

func (c *stockCursor) NextDup() ([]byte, []byte, error) {
	k, v, err := c.c.Get(nil, nil, stocklmdb.NextDup)
	return k, v, stockErr(err)
}

func (c *stockCursor) NextNoDup() ([]byte, []byte, error) {
	k, v, err := c.c.Get(nil, nil, stocklmdb.NextNoDup)
	return k, v, stockErr(err)
}

func (c *stockCursor) SetKey(key []byte) ([]byte, []byte, error) {
	k, v, err := c.c.Get(key, nil, stocklmdb.SetKey)
	return k, v, stockErr(err)
}

func (c *stockCursor) GetMultiple(key []byte) ([]byte, error) {
	_, v, err := c.c.Get(key, nil, stocklmdb.GetMultiple)
	return v, stockErr(err)
}

func (c *stockCursor) NextMultiple() ([]byte, error) {
	_, v, err := c.c.Get(nil, nil, stocklmdb.NextMultiple)
	return v, stockErr(err)
}

func (c *stockCursor) Append(key, val []byte) error {
	return stockErr(c.c.Put(key, val, stocklmdb.Append))
}

func (c *stockCursor) AppendDup(key, val []byte) error {
	return stockErr(c.c.Put(key, val, stocklmdb.AppendDup))
}

func (c *stockCursor) Close() { c.c.Close() }
