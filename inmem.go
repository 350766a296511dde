package dlmdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// InMemoryOptions configures OpenInMemory and LoadInMemory. The zero value
// is usable: the engine's default map size, no named databases beyond the
// engine default, the default reader table.
type InMemoryOptions struct {
	// MapSize bounds the memory the environment may use, in bytes (pages
	// are taken from the system as they are first written). 0 keeps the
	// engine's default; LoadInMemory uses at least the source's map size.
	// It can be grown later with Env.SetMapSize while no transaction runs.
	MapSize int64
	// MaxDBs is the number of named databases allowed (Env.SetMaxDBs);
	// 0 leaves the engine's default.
	MaxDBs int
	// MaxReaders is the capacity of the reader table (Env.SetMaxReaders);
	// 0 leaves the engine's default.
	MaxReaders int
	// Flags are extra Env.Open flags, such as lmdb.NoLock (the caller
	// serialises everything), lmdb.WriteMap or lmdb.NoMemInit. InMemory
	// is added; Readonly and FixedMap are refused.
	Flags uint
}

// newEnv creates an Env configured by opts, not opened yet.
func (o InMemoryOptions) newEnv() (*lmdb.Env, error) {
	env, err := lmdb.NewEnv()
	if err != nil {
		return nil, err
	}
	if err = o.apply(env); err != nil {
		env.Close()
		return nil, err
	}
	return env, nil
}

func (o InMemoryOptions) apply(env *lmdb.Env) error {
	if o.MapSize > 0 {
		if err := env.SetMapSize(o.MapSize); err != nil {
			return err
		}
	}
	if o.MaxDBs > 0 {
		if err := env.SetMaxDBs(o.MaxDBs); err != nil {
			return err
		}
	}
	if o.MaxReaders > 0 {
		if err := env.SetMaxReaders(o.MaxReaders); err != nil {
			return err
		}
	}
	return nil
}

// OpenInMemory opens an environment that lives in this process's memory
// only (lmdb.InMemory): no data or lock file is created, and the data is
// gone when the Env is closed. It behaves as a file environment otherwise:
// readers on many goroutines and one writer, every database flag, nested
// transactions. Persist writes it to a data file; LoadInMemory reads one
// back.
func OpenInMemory(opts InMemoryOptions) (*lmdb.Env, error) {
	env, err := opts.newEnv()
	if err != nil {
		return nil, err
	}
	if err := env.Open("", opts.Flags|lmdb.InMemory, 0o644); err != nil {
		env.Close()
		return nil, err
	}
	return env, nil
}

// LoadInMemory opens the environment at path read-only (a directory holding
// data.mdb, or the data file itself), copies the latest committed snapshot
// into a new in-memory environment configured by opts, and closes the file
// environment again. The data file is not modified; later changes to the
// in-memory env stay in memory until Persist.
//
// The read-only open still takes part in the file's locking, as any reader
// does: it uses the lock file beside the data file (lock.mdb in the
// directory, or path+"-lock"), creating it if it does not exist yet and the
// directory is writable, so a writer in another process may keep working
// meanwhile and the copy is a consistent snapshot.
func LoadInMemory(path string, opts InMemoryOptions) (*lmdb.Env, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var flags uint = lmdb.Readonly
	if !st.IsDir() {
		flags |= lmdb.NoSubdir
	}
	src, err := lmdb.NewEnv()
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := src.Open(path, flags, 0o644); err != nil {
		return nil, err
	}
	txn, err := src.BeginTxn(nil, lmdb.Readonly)
	if err != nil {
		return nil, err
	}
	defer txn.Abort()
	env, err := opts.newEnv()
	if err != nil {
		return nil, err
	}
	if err := env.Load(txn, opts.Flags); err != nil {
		env.Close()
		return nil, err
	}
	return env, nil
}

// DataFileName is the name of the data file in an environment directory.
const DataFileName = "data.mdb"

// Persist writes the latest committed snapshot of env (in-memory or file
// based) as an ordinary environment directory: dir/data.mdb, which
// lmdb.Env.Open(dir, ...) opens. With compact set only live pages are
// written (lmdb.CopyCompact). It is PersistContext without a context.
func Persist(env *lmdb.Env, dir string, compact bool) error {
	return PersistContext(context.Background(), env, dir, compact)
}

// PersistContext is Persist that stops, with an *InterruptedError, when ctx
// is done before the copy is complete.
//
// The file is written crash-safely: the copy goes to a temporary file in
// dir, which is synced to disk and then linked to data.mdb, and dir itself
// is synced, so after a crash data.mdb is either absent or complete (a
// temporary ".data.mdb.*.tmp" file may be left behind). dir must exist.
// An existing data.mdb is never replaced: the result is then an error for
// which errors.Is(err, fs.ErrExist) holds, also when another process
// creates it meanwhile. The file system must support hard links.
func PersistContext(ctx context.Context, env *lmdb.Env, dir string, compact bool) (err error) {
	final := filepath.Join(dir, DataFileName)
	if _, err := os.Lstat(final); err == nil {
		return &fs.PathError{Op: "persist", Path: final, Err: fs.ErrExist}
	}
	f, tmp, err := createTemp(dir)
	if err != nil {
		return err
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		os.Remove(tmp) // the link holds the data once it exists
	}()
	var flags uint
	if compact {
		flags = lmdb.CopyCompact
	}
	if err := copyToFile(ctx, env, f, flags); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return cerr
	}
	if err := os.Link(tmp, final); err != nil {
		return err // EEXIST comes as an *os.LinkError matching fs.ErrExist
	}
	return syncDir(dir)
}

// createTemp creates a new file in dir for a copy, with the permissions a
// data file gets (0644 less the umask).
func createTemp(dir string) (*os.File, string, error) {
	var b [8]byte
	for range 100 {
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", err
		}
		name := filepath.Join(dir, "."+DataFileName+"."+hex.EncodeToString(b[:])+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, "", err
		}
	}
	return nil, "", fmt.Errorf("dlmdb: no free temporary name in %s", dir)
}

// syncDir makes a new directory entry in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// InterruptedError reports a transaction or copy stopped because its
// context was done. errors.Is sees both causes: the context's
// (context.Canceled, context.DeadlineExceeded or the cause given to
// context.WithCancelCause) and, when the engine was stopped in the middle
// of an operation, the error of that operation (syscall.EINTR, as an
// *lmdb.OpError).
type InterruptedError struct {
	// Cause is context.Cause of the context.
	Cause error
	// Err is the error the transaction's function (or the copy) returned;
	// nil when it finished its work before noticing the interrupt.
	Err error
}

// Error describes both causes.
func (e *InterruptedError) Error() string {
	if e.Err == nil {
		return "dlmdb: transaction aborted: " + e.Cause.Error()
	}
	return "dlmdb: transaction interrupted: " + e.Cause.Error() + ": " + e.Err.Error()
}

// Unwrap returns the context's cause and the operation's error.
func (e *InterruptedError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Cause}
	}
	return []error{e.Cause, e.Err}
}

// errCtxDone makes Txn.RunOp abort when the context ended while fn ran
// (it is replaced by an *InterruptedError before anyone sees it).
var errCtxDone = errors.New("dlmdb: context done")

// View runs fn in a read-only transaction of env that ctx can stop: when
// ctx is done the transaction is interrupted (lmdb.Txn.SetInterrupt), so a
// long scan, count, sample or copy in fn fails at its next page visit with
// an error for which errors.Is(err, syscall.EINTR) holds. View then returns
// an *InterruptedError, for which errors.Is(err, context.Canceled) (or
// context.DeadlineExceeded) holds as well. fn should return such errors as
// they are; an interrupted transaction fails every later operation.
//
// When ctx is already done View returns context.Cause(ctx) without
// beginning a transaction. The interrupt cannot reach the transaction after
// it has ended. Other rules are those of lmdb.Env.View.
func View(ctx context.Context, env *lmdb.Env, fn lmdb.TxnOp) error {
	return RunTxn(ctx, env, lmdb.Readonly, fn)
}

// Update runs fn in a write transaction of env that ctx can stop, as View
// does for reads: when ctx is done before fn returns, the transaction is
// aborted, never committed (an operation of fn in progress fails with
// EINTR), and Update returns an *InterruptedError. When fn returns nil
// before ctx is done the transaction commits, and a cancellation after that
// point does not stop the commit. The goroutine is locked to its OS thread
// for the duration, as in lmdb.Env.Update.
func Update(ctx context.Context, env *lmdb.Env, fn lmdb.TxnOp) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return RunTxn(ctx, env, 0, fn)
}

// RunTxn is View or Update with transaction flags of the caller's choice
// (lmdb.Readonly for a reader). It does not lock the OS thread: without
// lmdb.Readonly the caller must have called runtime.LockOSThread, as for
// lmdb.Env.RunTxn.
func RunTxn(ctx context.Context, env *lmdb.Env, flags uint, fn lmdb.TxnOp) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	txn, err := env.BeginTxn(nil, flags)
	if err != nil {
		return err
	}
	// SetInterrupt is safe on any goroutine, and a no-op once txn ended.
	stop := context.AfterFunc(ctx, func() { _ = txn.SetInterrupt(true) })
	defer stop()
	var fnErr error
	fired := false
	err = txn.RunOp(func(txn *lmdb.Txn) error {
		fnErr = fn(txn)
		// After a successful stop the interrupt can no longer be armed,
		// so the commit that follows runs undisturbed; otherwise the
		// context won and the transaction must not commit.
		if !stop() {
			fired = true
			if fnErr == nil {
				return errCtxDone
			}
		}
		return fnErr
	}, true)
	if fired {
		return &InterruptedError{Cause: context.Cause(ctx), Err: fnErr}
	}
	return err
}

// CopyContext writes a copy of the latest committed snapshot of env to w,
// as lmdb.Env.CopyFDFlag does (flags: lmdb.CopyCompact), under a read
// transaction that ctx can interrupt: when ctx is done the copy stops
// within one page and CopyContext returns an *InterruptedError (which
// matches both the context's error and syscall.EINTR). An *os.File is
// written directly (through its descriptor, which os.File.Fd puts in
// blocking mode); any other writer is fed through a pipe. When w fails,
// the copy is stopped and w's error returned. What was written before an
// error is an incomplete file.
func CopyContext(ctx context.Context, env *lmdb.Env, w io.Writer, flags uint) error {
	if f, ok := w.(*os.File); ok {
		return copyToFile(ctx, env, f, flags)
	}
	return View(ctx, env, func(txn *lmdb.Txn) error {
		return copyThroughPipe(txn, w, flags)
	})
}

// copyToFile copies the snapshot of a new read txn to f. f.Fd puts the
// descriptor in blocking mode, which the engine's write(2) loop needs (a
// pipe or socket is non-blocking in Go).
func copyToFile(ctx context.Context, env *lmdb.Env, f *os.File, flags uint) error {
	fd := f.Fd()
	err := View(ctx, env, func(txn *lmdb.Txn) error { return txn.CopyFD(fd, flags) })
	runtime.KeepAlive(f)
	return err
}

// copyThroughPipe runs txn.CopyFD into a pipe whose other end a goroutine
// copies to w. A failing w interrupts the copy (and the pipe is then
// drained, so the engine never blocks on it nor meets a closed reader).
func copyThroughPipe(txn *lmdb.Txn, w io.Writer, flags uint) error {
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	werr := make(chan error, 1)
	go func() {
		_, err := io.Copy(w, pr)
		if err != nil {
			_ = txn.SetInterrupt(true)
			_, _ = io.Copy(io.Discard, pr)
		}
		pr.Close()
		werr <- err
	}()
	cerr := txn.CopyFD(pw.Fd(), flags)
	pw.Close()
	if err := <-werr; err != nil {
		return err // the writer's failure, not the EINTR it caused
	}
	return cerr
}
