/*
Command lmdb_copy makes a consistent copy of an LMDB/DLMDB environment,
even while other processes use it (the copy is taken from one read
snapshot).

	lmdb_copy [-V] [-c] [-n] srcpath [dstpath]

	-c  compact while copying: free pages are left out and the pages are
	    renumbered, so the copy may be much smaller
	-n  the environments are single files, not directories

dstpath is a directory (created if missing) that receives data.mdb, or with
-n the data file itself. Without dstpath the data file is written to
standard output.
*/
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/dlmdb/dlmdb-go/internal/toolutil"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

const usage = "usage: lmdb_copy [-V] [-c] [-n] srcpath [dstpath]" + `

Write a consistent copy of the environment at srcpath (taken from one read
snapshot, so other processes may go on using it).

  -c  compact while copying: leave out free pages and renumber the rest,
      so the copy may be much smaller
  -n  the environments are single files, not directories
  -V  print the engine version and exit
  -h  print this help

dstpath is a directory (created if missing) that receives data.mdb, or with
-n the data file itself; it must not hold a data file yet. Without dstpath
the data file is written to standard output.
`

func main() { toolutil.Main("lmdb_copy", run) }

type config struct {
	src, dst string
	compact  bool
	envFlags uint
}

func parseArgs(args []string) (*config, bool, error) {
	o, err := toolutil.Parse("cnV", args, usage)
	if err != nil {
		return nil, false, err
	}
	if o.Has('V') {
		return nil, true, nil
	}
	c := &config{compact: o.Has('c')}
	if o.Has('n') {
		c.envFlags |= lmdb.NoSubdir
	}
	switch len(o.Operands) {
	case 1:
		c.src = o.Operands[0]
	case 2:
		c.src, c.dst = o.Operands[0], o.Operands[1]
	default:
		return nil, false, toolutil.Usagef(usage, "need a source path and at most one destination")
	}
	return c, false, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, version, err := parseArgs(args)
	if err != nil {
		return toolutil.Help(err, stdout)
	}
	if version {
		_, err = fmt.Fprintln(stdout, toolutil.Version())
		return err
	}
	env, err := toolutil.OpenEnv(c.src, c.envFlags|lmdb.Readonly, 0)
	if err != nil {
		return err
	}
	defer env.Close()
	var flags uint
	if c.compact {
		flags |= lmdb.CopyCompact
	}
	if c.dst == "" {
		return copyToWriter(env, flags, stdout, stderr)
	}
	dataFile := c.dst
	if c.envFlags&lmdb.NoSubdir == 0 {
		if err := os.MkdirAll(c.dst, 0o755); err != nil {
			return err
		}
		dataFile = filepath.Join(c.dst, "data.mdb")
	}
	stop := toolutil.Ticker(stderr, "lmdb_copy", func() string {
		if st, err := os.Stat(dataFile); err == nil {
			return toolutil.HumanBytes(st.Size()) + " written"
		}
		return ""
	})
	err = env.CopyFlag(c.dst, flags)
	stop()
	if err != nil {
		return fmt.Errorf("copy to %s: %w", c.dst, err)
	}
	return nil
}

// copyToWriter streams the copy to w. The engine writes its copy strictly
// in order, so any *os.File (regular file, pipe, socket, terminal) receives
// it straight through its descriptor. Any other writer is fed through an
// os.Pipe whose read end is drained into w while the copy runs.
func copyToWriter(env *lmdb.Env, flags uint, w, stderr io.Writer) error {
	if f, ok := w.(*os.File); ok {
		stop := toolutil.Ticker(stderr, "lmdb_copy", nil)
		err := env.CopyFDFlag(f.Fd(), flags)
		stop()
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cw := &countingWriter{w: w}
	drained := make(chan error, 1)
	go func() {
		_, err := io.Copy(cw, pr)
		// Keep reading after a failed write to w so the copy is never
		// left blocked on a full pipe; its result is discarded anyway.
		if err != nil {
			io.Copy(io.Discard, pr)
		}
		pr.Close()
		drained <- err
	}()
	stop := toolutil.Ticker(stderr, "lmdb_copy", func() string {
		return toolutil.HumanBytes(cw.n.Load()) + " written"
	})
	copyErr := env.CopyFDFlag(pw.Fd(), flags)
	closeErr := pw.Close()
	drainErr := <-drained
	stop()
	switch {
	case copyErr != nil:
		return copyErr
	case closeErr != nil:
		return closeErr
	}
	return drainErr
}

// countingWriter passes writes through and counts the bytes for the
// progress line.
type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}
