package difftest

import (
	"fmt"
	"os"
)

// The harness talks to an engine only through these interfaces, so every test
// is written once and run against both our lmdb package and lmdb-go. Numeric
// flag, cursor-op and error values are LMDB's, identical in both packages.

// engine is one implementation of the LMDB API.
type engine interface {
	name() string
	// hasCheck reports whether Txn.Check / Env.Check are real structural
	// checks (ours) rather than no-ops (stock LMDB has no checker).
	hasCheck() bool
	openEnv(path string, o envOpts) (tEnv, error)
	// code maps an error returned by this engine to its LMDB errno
	// (negative MDB_* values or positive system errno); 0 for nil and
	// errNotErrno for errors that carry no errno.
	code(err error) int
}

const errNotErrno = -1

type envOpts struct {
	mapSize int64
	maxDBs  int
	flags   uint
	mode    os.FileMode
}

type tStat struct {
	psize                         uint
	depth                         uint
	branch, leaf, overflow, items uint64
}

func (s tStat) String() string {
	return fmt.Sprintf("{psize=%d depth=%d branch=%d leaf=%d ovf=%d entries=%d}",
		s.psize, s.depth, s.branch, s.leaf, s.overflow, s.items)
}

type tEnv interface {
	begin(parent tTxn, flags uint) (tTxn, error)
	stat() (tStat, error)
	check() error
	sync(force bool) error
	setMapSize(n int64) error
	maxKeySize() int
	lastPgno() (uint64, error)
	copyTo(path string, compact bool) error
	closeDBI(dbi uint32)
	close() error
}

type tTxn interface {
	openDBI(name string, flags uint) (uint32, error)
	dbFlags(dbi uint32) (uint, error)
	get(dbi uint32, key []byte) ([]byte, error)
	put(dbi uint32, key, val []byte, flags uint) error
	putReserve(dbi uint32, key []byte, n int, flags uint) ([]byte, error)
	del(dbi uint32, key, val []byte) error
	cursor(dbi uint32) (tCursor, error)
	stat(dbi uint32) (tStat, error)
	drop(dbi uint32, del bool) error
	commit() error
	abort()
	reset()
	renew() error
	check() error
}

type tCursor interface {
	get(k, v []byte, op uint) ([]byte, []byte, error)
	put(k, v []byte, flags uint) error
	putReserve(k []byte, n int, flags uint) ([]byte, error)
	del(flags uint) error
	count() (uint64, error)
	putMulti(k, page []byte, stride int, flags uint) error
	renew(t tTxn) error
	close()
}

// memEnv is implemented by the envs of an in-memory engine (our engine with
// InMemory, adapter_ours_test.go): they have no data file, so the harness
// makes one where it reads or checks files.
type memEnv interface {
	// inMemory reports whether the env lives in memory only.
	inMemory() bool
	// snapshotFile copies the env's committed state (a plain, page-exact
	// copy) into a fresh directory name under the env's path and returns
	// that directory; the caller removes it.
	snapshotFile(name string) (string, error)
	// openSnapshot opens such a copy as a read-only file env.
	openSnapshot(dir string) (tEnv, error)
}

// inMemory reports whether env is an in-memory env.
func inMemory(env tEnv) bool {
	m, ok := env.(memEnv)
	return ok && m.inMemory()
}
