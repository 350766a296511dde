// Package bench is the harness shared by the benchmark commands in cmd/.
//
// A workload is written once against the small Engine interface below and
// runs on two adapters linked into the same binary: our drop-in package
// github.com/dlmdb/dlmdb-go/lmdb ("ours", adapter_ours.go, generated from
// adapter_stock.go by gen_ours.sh) and stock github.com/PowerDNS/lmdb-go/lmdb
// v1.9.3 ("lmdb-go"). The harness alternates the two sides round by round
// (flipping who starts), keeps every round, reports median and [min, max],
// verifies every result outside the timed section and renders Markdown
// tables (or JSON) that cmd/benchall splices into README.md.
//
// Suites register themselves (Register) and run through Main:
//
//	go run ./cmd/benchall [-quick] [-readme README.md]   # every suite
//	go run ./cmd/dropin_bench -quick -rounds 3           # one suite
//	go run ./cmd/benchall -quick -only dropin -rows 'get' # development subset
//
// Building with -tags dlmdb_standin replaces ours by stock lmdb-go under a
// STAND-IN label: an A/A run that shows the noise floor of every ratio.
package bench

import "errors"

// ErrNotFound is what adapters return when a key or cursor position does not
// exist, whatever the engine's own error value is.
var ErrNotFound = errors.New("bench: not found")

// EnvFlags selects environment options in an engine-neutral way; each
// adapter translates them into its own constants.
type EnvFlags uint

const (
	NoSync      EnvFlags = 1 << iota // no fsync at commit
	NoMetaSync                       // no fsync of the meta page at commit
	NoLock                           // no lock file locking
	NoReadahead                      // MADV_RANDOM on the map
	WriteMap                         // writable memory map
)

// Options describe how an environment is opened.
type Options struct {
	MapSize int64 // bytes; 0 leaves the engine default
	MaxDBs  int   // named databases; 0 leaves the engine default
	Flags   EnvFlags
}

// Engine opens environments of one implementation.
type Engine interface {
	// Name is the short column name ("ours", "lmdb-go").
	Name() string
	// Describe says precisely what is linked behind the name.
	Describe() string
	// StandIn reports whether this adapter is a placeholder running another
	// implementation (for instance stock lmdb-go standing in for ours).
	StandIn() bool
	// Open creates the environment handle, applies o and opens dir.
	Open(dir string, o Options) (Env, error)
}

// DB is a database handle inside an Env.
type DB uint

// DBFlags selects database options for OpenDB.
type DBFlags uint

const (
	Create   DBFlags = 1 << iota // create the database if missing (write txn)
	DupSort                      // sorted duplicate values
	DupFixed                     // with DupSort: duplicates of one fixed size
)

// Env is an open environment.
type Env interface {
	// Begin starts a transaction. Write transactions must be used from the
	// goroutine that started them, on a locked OS thread (see LockThread).
	Begin(readOnly bool) (Txn, error)
	// Sync flushes the data file to disk even under NoSync (a forced
	// mdb_env_sync).
	Sync() error
	Close() error
}

// Txn is a read or write transaction.
type Txn interface {
	// OpenDB opens a named database ("" is the main database).
	OpenDB(name string, flags DBFlags) (DB, error)
	// SetRawRead makes Get and cursor results point into the map instead of
	// being copied to Go memory (valid until the transaction ends).
	SetRawRead(on bool)
	Get(db DB, key []byte) ([]byte, error)
	Put(db DB, key, val []byte) error
	Del(db DB, key []byte) error
	// Entries is the number of entries in db as seen by this transaction.
	Entries(db DB) (uint64, error)
	Cursor(db DB) (Cursor, error)
	Commit() error
	Abort()
}

// Cursor walks a database in key order. Every method returns ErrNotFound
// when there is no such position.
type Cursor interface {
	First() (key, val []byte, err error)
	Next() (key, val []byte, err error)
	// Seek positions at the first key >= key (MDB_SET_RANGE).
	Seek(key []byte) (k, val []byte, err error)
	// NextDup moves to the next duplicate of the current key (DupSort).
	NextDup() (key, val []byte, err error)
	// NextNoDup moves to the first value of the next key (DupSort).
	NextNoDup() (key, val []byte, err error)
	// SetKey positions at exactly key (MDB_SET_KEY; ErrNotFound if absent).
	SetKey(key []byte) (k, val []byte, err error)
	// GetMultiple returns the duplicates of the current key from the
	// cursor's position to the end of its page, packed back to back
	// (MDB_GET_MULTIPLE, DupFixed); NextMultiple the next such batch
	// (MDB_NEXT_MULTIPLE), ErrNotFound after the key's last one. key is
	// the current key: the engine ignores it, but lmdb-go v1.9.3 under
	// RawRead dereferences the key slot that GET_MULTIPLE leaves unset
	// (a nil-pointer panic) unless a key is passed in.
	GetMultiple(key []byte) (vals []byte, err error)
	NextMultiple() (vals []byte, err error)
	// Append stores key, which must sort above every key, with val
	// (MDB_APPEND); an error otherwise.
	Append(key, val []byte) error
	// AppendDup stores val as key's new last duplicate (MDB_APPENDDUP,
	// DupSort); an error unless val sorts above the key's values.
	AppendDup(key, val []byte) error
	Close()
}
