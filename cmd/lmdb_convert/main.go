/*
Command lmdb_convert rebuilds one named database of an LMDB/DLMDB
environment with the DLMDB encodings Counted and PrefixCompression switched
on or off, while other processes keep reading and writing it.

	lmdb_convert [-V] [-counted on|off|keep] [-prefix on|off|keep] [-batch N] [-n] path dbname

	-counted on|off|keep  counted tree (rank and range-count queries); default keep
	-prefix on|off|keep   prefix-compressed leaves; default keep
	-batch N              entries copied per write transaction (default 50000)
	-n                    the environment is a single file, not a directory
	-V                    print the engine version and exit
	-h                    print this help

The database is copied in batches, each in its own short write transaction,
into a temporary database "dlmdb-convert.<dbname>"; a last write transaction
brings the copy level with changes made meanwhile, verifies that it holds
exactly the source's key/value pairs, and puts it in the source's place.
Readers see the old database or the new one, never a mix. An interrupted run
leaves the database as it was; the next run drops its half-built copy.

The environment's map is enlarged when needed to hold a second copy of the
database. Once a database uses Counted or PrefixCompression, stock LMDB can
no longer open the file, even after the flag is switched off again. The
main (unnamed) database cannot be converted.

On a terminal a progress bar is drawn on stderr.
*/
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	dlmdb "github.com/dlmdb/dlmdb-go"
	"github.com/dlmdb/dlmdb-go/internal/toolutil"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

const usage = "usage: lmdb_convert [-V] [-counted on|off|keep] [-prefix on|off|keep] [-batch N] [-n] path dbname"

const help = usage + `

Rebuild named database dbname of the environment at path with the DLMDB
encodings switched on or off, in batches of short write transactions, and
swap the rebuilt database in atomically (readers see the old or the new one).

  -counted on|off|keep  counted tree (rank and range-count queries); default keep
  -prefix on|off|keep   prefix-compressed leaves; default keep
  -batch N              entries copied per write transaction (default 50000)
  -n                    the environment is a single file, not a directory
  -V                    print the engine version and exit
  -h                    print this help

An interrupted run leaves the database as it was; the next run drops the
half-built copy "dlmdb-convert.<dbname>". Once a database uses Counted or
PrefixCompression, stock LMDB cannot open the file any more, even after the
flag is switched off again.
`

func main() { toolutil.Main("lmdb_convert", run) }

type config struct {
	path, name string
	envFlags   uint
	opts       dlmdb.ConvertOptions
	version    bool
	help       bool
}

// change parses on|off|keep.
func change(opt, s string) (dlmdb.FlagChange, error) {
	switch strings.ToLower(s) {
	case "on":
		return dlmdb.SetFlag, nil
	case "off":
		return dlmdb.ClearFlag, nil
	case "keep", "":
		return dlmdb.KeepFlag, nil
	}
	return 0, toolutil.Usagef(usage, "-%s takes on, off or keep, not %q", opt, s)
}

func parseArgs(args []string) (*config, error) {
	fs := flag.NewFlagSet("lmdb_convert", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &config{}
	counted := fs.String("counted", "keep", "")
	prefix := fs.String("prefix", "keep", "")
	batch := fs.Int("batch", dlmdb.DefaultConvertBatch, "")
	noSubdir := fs.Bool("n", false, "")
	fs.BoolVar(&c.version, "V", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.help = true
			return c, nil
		}
		return nil, toolutil.Usagef(usage, "%v", err)
	}
	if c.version {
		return c, nil
	}
	var err error
	if c.opts.Counted, err = change("counted", *counted); err != nil {
		return nil, err
	}
	if c.opts.PrefixCompression, err = change("prefix", *prefix); err != nil {
		return nil, err
	}
	if *batch < 1 {
		return nil, toolutil.Usagef(usage, "-batch must be at least 1, not %d", *batch)
	}
	c.opts.BatchEntries = *batch
	if *noSubdir {
		c.envFlags |= lmdb.NoSubdir
	}
	if fs.NArg() != 2 {
		return nil, toolutil.Usagef(usage, "an environment path and a database name are required")
	}
	c.path, c.name = fs.Arg(0), fs.Arg(1)
	if c.name == "" {
		return nil, toolutil.Usagef(usage, "the main (unnamed) database cannot be converted")
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseArgs(args)
	if err != nil {
		return err
	}
	if c.help {
		_, err = io.WriteString(stdout, help)
		return err
	}
	if c.version {
		_, err = fmt.Fprintln(stdout, toolutil.Version())
		return err
	}
	env, err := toolutil.OpenEnv(c.path, c.envFlags, 8)
	if err != nil {
		return fmt.Errorf("database %q: %w", c.name, err) // err names the path
	}
	defer env.Close()
	fail := func(err error) error {
		return fmt.Errorf("%s: database %q: %w", c.path, c.name, err)
	}
	var before uint
	err = env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(c.name, 0)
		if err != nil {
			return err
		}
		before, err = txn.Flags(dbi)
		return err
	})
	if err != nil {
		return fail(err)
	}
	if err := roomForCopy(env); err != nil {
		return fail(err)
	}

	var copied, total atomic.Uint64
	stop := toolutil.Ticker(stderr, "lmdb_convert", func() string {
		return bar(copied.Load(), total.Load())
	})
	c.opts.Progress = func(n, of uint64) {
		copied.Store(n)
		total.Store(of)
	}
	err = dlmdb.Convert(env, c.name, c.opts)
	stop()
	if err != nil {
		return fail(err)
	}
	var after uint
	var entries uint64
	err = env.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI(c.name, 0)
		if err != nil {
			return err
		}
		if after, err = txn.Flags(dbi); err != nil {
			return err
		}
		st, err := txn.Stat(dbi)
		if err != nil {
			return err
		}
		entries = st.Entries
		return nil
	})
	if err != nil {
		return fail(err)
	}
	_, err = fmt.Fprintf(stdout, "%s: converted %q: %d entries, %s -> %s\n", c.path, c.name, entries,
		flagNames(before), flagNames(after))
	return err
}

// roomForCopy enlarges the map, if needed, so that it holds the pages in
// use twice over (the copy, and the old pages that stay until readers move
// on) with some slack.
func roomForCopy(env *lmdb.Env) error {
	info, err := env.Info()
	if err != nil {
		return err
	}
	st, err := env.Stat()
	if err != nil {
		return err
	}
	used := (info.LastPNO + 1) * int64(st.PSize)
	want := 3*used + 64<<20
	if info.MapSize >= want {
		return nil
	}
	return env.SetMapSize(want)
}

// bar renders copied of total as a progress bar.
func bar(copied, total uint64) string {
	const width = 30
	if total == 0 {
		return fmt.Sprintf("%d entries copied", copied)
	}
	frac := float64(copied) / float64(total)
	if frac > 1 {
		frac = 1
	}
	n := int(frac * width)
	return fmt.Sprintf("[%s%s] %3.0f%% %d/%d entries", strings.Repeat("#", n), strings.Repeat(".", width-n),
		frac*100, copied, total)
}

// flagNames spells the DB flags for the summary line.
func flagNames(f uint) string {
	names := []struct {
		bit  uint
		name string
	}{
		{lmdb.ReverseKey, "reversekey"}, {lmdb.DupSort, "dupsort"}, {lmdb.IntegerKey, "integerkey"},
		{lmdb.DupFixed, "dupfixed"}, {lmdb.IntegerDup, "integerdup"}, {lmdb.ReverseDup, "reversedup"},
		{lmdb.Counted, "counted"}, {lmdb.PrefixCompression, "prefix"},
	}
	var b bytes.Buffer
	for _, n := range names {
		if f&n.bit != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n.name)
		}
	}
	if b.Len() == 0 {
		return "plain"
	}
	return b.String()
}
