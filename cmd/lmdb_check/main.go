/*
Command lmdb_check verifies the structure of an LMDB/DLMDB environment with
the engine's checker (Env.Check): every page reachable from the newest
snapshot is visited and its kind, bounds, key order and ownership are
checked, and the free list is reconciled with the pages in use.

	lmdb_check [-V] [-n] [-q] [-w] [-a|-s name] path

	-a  also print the statistics of every named database
	-s  also print the statistics of one named database
	-w  also walk every record of every database with a cursor and
	    compare the count with the entry count the database records
	-q  print nothing on success
	-n  the environment is a single file, not a directory

The exit status is 0 when the environment is sound and 1 (with the
checker's explanation) when it is not.
*/
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/dlmdb/dlmdb-go/internal/toolutil"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

const usage = "usage: lmdb_check [-V] [-n] [-q] [-w] [-a|-s name] path" + `

Verify the structure of the environment at path with the engine's checker:
every page reachable from the newest snapshot is visited (kind, bounds, key
order, ownership) and the free list is reconciled with the pages in use.

  -a       also print the statistics of every named database
  -s name  also print the statistics of the named database
  -w       also walk every record of every database with a cursor and
           compare the count with the database's entry count
  -q       print nothing on success
  -n       the environment is a single file, not a directory
  -V       print the engine version and exit
  -h       print this help

Exit status: 0 when the environment is sound, 1 (with the checker's
explanation) when it is not or cannot be opened, 2 for a bad command line.
`

func main() { toolutil.Main("lmdb_check", run) }

type config struct {
	path     string
	envFlags uint
	quiet    bool
	walk     bool
	all      bool
	name     string
	named    bool
}

func parseArgs(args []string) (*config, bool, error) {
	o, err := toolutil.Parse("anqs:wV", args, usage)
	if err != nil {
		return nil, false, err
	}
	if o.Has('V') {
		return nil, true, nil
	}
	c := &config{quiet: o.Has('q'), walk: o.Has('w'), all: o.Has('a')}
	c.name, c.named = o.Value('s')
	if o.Has('n') {
		c.envFlags |= lmdb.NoSubdir
	}
	if c.all && c.named {
		return nil, false, toolutil.Usagef(usage, "-a and -s cannot be combined")
	}
	if len(o.Operands) != 1 {
		return nil, false, toolutil.Usagef(usage, "exactly one environment path is required")
	}
	c.path = o.Operands[0]
	return c, false, nil
}

// ErrDamaged wraps every checker failure reported by run.
var ErrDamaged = errors.New("environment is damaged")

func run(args []string, stdout, stderr io.Writer) (err error) {
	c, version, err := parseArgs(args)
	if err != nil {
		return toolutil.Help(err, stdout)
	}
	if version {
		_, err = fmt.Fprintln(stdout, toolutil.Version())
		return err
	}
	w := bufio.NewWriter(stdout)
	defer func() {
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
	}()
	maxDBs := 0
	if c.all || c.named || c.walk {
		maxDBs = 4
	}
	env, err := toolutil.OpenEnv(c.path, c.envFlags|lmdb.Readonly, maxDBs)
	if err != nil {
		return err
	}
	defer env.Close()

	return env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true
		stop := toolutil.Ticker(stderr, "lmdb_check", nil)
		cerr := txn.Check()
		stop()
		if cerr == nil && c.walk {
			cerr = walkAll(env, txn, stderr)
		}
		if cerr != nil {
			return fmt.Errorf("%s: %w: %w", c.path, ErrDamaged, cerr)
		}
		if c.quiet {
			return nil
		}
		info, err := env.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s: OK (transaction %d, %d pages in use)\n", c.path, txn.ID(), info.LastPNO+1)
		root, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		if err := printStat(w, txn, root, "main database"); err != nil {
			return err
		}
		switch {
		case c.named:
			dbi, err := txn.OpenDBI(c.name, 0)
			if err != nil {
				return fmt.Errorf("database %q: %w", c.name, err)
			}
			return printStat(w, txn, dbi, fmt.Sprintf("database %q", c.name))
		case c.all:
			_, err := toolutil.ForEachDB(env, txn, toolutil.Warner(stderr, "lmdb_check"), func(name string, dbi lmdb.DBI) error {
				return printStat(w, txn, dbi, fmt.Sprintf("database %q", name))
			})
			return err
		}
		return nil
	})
}

func printStat(w io.Writer, txn *lmdb.Txn, dbi lmdb.DBI, title string) error {
	st, err := txn.Stat(dbi)
	if err != nil {
		return fmt.Errorf("stat of %s: %w", title, err)
	}
	_, err = fmt.Fprintf(w, "  %s: %d entries, depth %d, %d branch, %d leaf, %d overflow pages\n",
		title, st.Entries, st.Depth, st.BranchPages, st.LeafPages, st.OverflowPages)
	return err
}

// errCountMismatch reports a database whose records do not add up to the
// entry count it stores.
var errCountMismatch = errors.New("entry count does not match the records")

// walkAll counts the records of the main database and of every named
// database with a cursor and compares each total with Stat's entry count.
func walkAll(env *lmdb.Env, txn *lmdb.Txn, stderr io.Writer) error {
	prog := toolutil.NewProgress(stderr, "lmdb_check", "records walked")
	defer prog.Done()
	root, err := txn.OpenRoot(0)
	if err != nil {
		return err
	}
	if err := walkOne(txn, root, "main database", prog); err != nil {
		return err
	}
	_, err = toolutil.ForEachDB(env, txn, toolutil.Warner(stderr, "lmdb_check"), func(name string, dbi lmdb.DBI) error {
		return walkOne(txn, dbi, fmt.Sprintf("database %q", name), prog)
	})
	return err
}

func walkOne(txn *lmdb.Txn, dbi lmdb.DBI, title string, prog *toolutil.Progress) error {
	st, err := txn.Stat(dbi)
	if err != nil {
		return err
	}
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return err
	}
	defer cur.Close()
	var n uint64
	for op := uint(lmdb.First); ; op = lmdb.Next {
		_, _, err := cur.Get(nil, nil, op)
		if lmdb.IsNotFound(err) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: walking record %d: %w", title, n, err)
		}
		n++
		prog.Add(1)
	}
	if n != st.Entries {
		return fmt.Errorf("%s: %w: %d records walked, %d recorded", title, errCountMismatch, n, st.Entries)
	}
	return nil
}
