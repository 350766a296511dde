/*
Command lmdb_dump writes the contents of an LMDB/DLMDB environment in the
portable text format of LMDB's mdb_dump (itself the Berkeley DB db_dump
format), so the output can be read by lmdb_load or by stock mdb_load.

	lmdb_dump [-V] [-f output] [-l] [-n] [-p] [-a|-s name] path

Without -a or -s the main (unnamed) database is dumped. -a dumps every named
database, one header/data section after another; -l only lists their
names; -s dumps one named database. -p writes printable characters as
themselves and escapes the rest as \xx (a backslash as \\) instead of
writing every byte as two hex digits. -n opens an environment that is a
single file rather than a directory. -f writes to a file instead of stdout.
For the same data the output is byte for byte what stock mdb_dump prints.
*/
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dlmdb/dlmdb-go/internal/toolutil"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

const usage = "usage: lmdb_dump [-V] [-f output] [-l] [-n] [-p] [-a|-s name] path" + `

Write the contents of the environment at path in the portable text format
of LMDB's mdb_dump, readable by lmdb_load and by stock mdb_load.

  -a         dump every named database, one section after another
  -s name    dump the named database (default: the main, unnamed one)
  -l         list the names of the named databases instead
  -p         write printable bytes as themselves and escape the rest as \xx
             (default: every byte as two hex digits)
  -f output  write to the file output instead of standard output
  -n         the environment is a single file, not a directory
  -V         print the engine version and exit
  -h         print this help

For the same data the output is byte for byte what stock mdb_dump prints.
`

func main() { toolutil.Main("lmdb_dump", run) }

// config is the parsed command line.
type config struct {
	path      string
	output    string
	all       bool
	list      bool
	printable bool
	name      string
	named     bool
	envFlags  uint
}

func parseArgs(args []string) (*config, bool, error) {
	o, err := toolutil.Parse("af:lnps:V", args, usage)
	if err != nil {
		return nil, false, err
	}
	if o.Has('V') {
		return nil, true, nil
	}
	c := &config{list: o.Has('l'), printable: o.Has('p')}
	c.all = o.Has('a') || c.list
	c.name, c.named = o.Value('s')
	c.output, _ = o.Value('f')
	if o.Has('n') {
		c.envFlags |= lmdb.NoSubdir
	}
	if c.all && c.named {
		return nil, false, toolutil.Usagef(usage, "-a/-l and -s cannot be combined")
	}
	if len(o.Operands) != 1 {
		return nil, false, toolutil.Usagef(usage, "exactly one environment path is required")
	}
	c.path = o.Operands[0]
	return c, false, nil
}

// run is the whole tool; main only supplies the process's arguments and
// streams.
func run(args []string, stdout, stderr io.Writer) (err error) {
	c, version, err := parseArgs(args)
	if err != nil {
		return toolutil.Help(err, stdout)
	}
	if version {
		_, err = fmt.Fprintln(stdout, toolutil.Version())
		return err
	}
	out := stdout
	if c.output != "" {
		f, err := os.Create(c.output)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		out = f
	}
	bw := bufio.NewWriterSize(out, 64<<10)
	defer func() {
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
	}()

	maxDBs := 0
	if c.all || c.named {
		maxDBs = 2
	}
	env, err := toolutil.OpenEnv(c.path, c.envFlags|lmdb.Readonly, maxDBs)
	if err != nil {
		return err
	}
	defer env.Close()

	prog := toolutil.NewProgress(stderr, "lmdb_dump", "records")
	defer prog.Done()
	d := &dumper{w: bw, printable: c.printable, prog: prog}
	err = env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true
		info, err := env.Info()
		if err != nil {
			return err
		}
		d.info = info
		switch {
		case c.all:
			return dumpAll(env, txn, d, c, stderr)
		case c.named:
			dbi, err := txn.OpenDBI(c.name, 0)
			if err != nil {
				return fmt.Errorf("database %q: %w", c.name, err)
			}
			if err := d.dumpDB(txn, dbi, &c.name); err != nil {
				return fmt.Errorf("database %q: %w", c.name, err)
			}
			return nil
		default:
			dbi, err := txn.OpenRoot(0)
			if err != nil {
				return fmt.Errorf("main database: %w", err)
			}
			if err := d.dumpDB(txn, dbi, nil); err != nil {
				return fmt.Errorf("main database: %w", err)
			}
			return nil
		}
	})
	if err != nil {
		// name the environment (a damaged page says nothing of where)
		return fmt.Errorf("%s: %w", c.path, err)
	}
	return nil
}

// errNoDatabases is returned by -a/-l on an environment whose main
// database has no key that could name a database.
var errNoDatabases = errors.New("the environment does not contain named databases")

func dumpAll(env *lmdb.Env, txn *lmdb.Txn, d *dumper, c *config, stderr io.Writer) error {
	n, err := toolutil.ForEachDB(env, txn, toolutil.Warner(stderr, "lmdb_dump"), func(name string, dbi lmdb.DBI) error {
		if c.list {
			_, err := fmt.Fprintln(d.w, name)
			return err
		}
		if err := d.dumpDB(txn, dbi, &name); err != nil {
			return fmt.Errorf("database %q: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", c.path, errNoDatabases)
	}
	return nil
}

// dumper writes header and data sections.
type dumper struct {
	w         *bufio.Writer
	printable bool
	info      *lmdb.EnvInfo
	prog      *toolutil.Progress
	line      []byte
}

// headerFlags lists the database flags in the order the header names them.
var headerFlags = []struct {
	bit  uint
	name string
}{
	{lmdb.ReverseKey, "reversekey"},
	{lmdb.DupSort, "dupsort"},
	{lmdb.IntegerKey, "integerkey"},
	{lmdb.DupFixed, "dupfixed"},
	{lmdb.IntegerDup, "integerdup"},
	{lmdb.ReverseDup, "reversedup"},
	// DLMDB's extension (lmdb_load recreates the database counted);
	// stock mdb_load does not know the keyword
	{lmdb.Counted, "counted"},
}

// dumpDB writes one section: the header describing dbi, then every
// key/value pair (every duplicate of a DupSort key) in database order.
func (d *dumper) dumpDB(txn *lmdb.Txn, dbi lmdb.DBI, name *string) error {
	flags, err := txn.Flags(dbi)
	if err != nil {
		return err
	}
	st, err := txn.Stat(dbi)
	if err != nil {
		return err
	}
	w := d.w
	format := "bytevalue"
	if d.printable {
		format = "print"
	}
	fmt.Fprintf(w, "VERSION=3\nformat=%s\n", format)
	if name != nil {
		fmt.Fprintf(w, "database=%s\n", *name)
	}
	fmt.Fprintf(w, "type=btree\nmapsize=%d\nmaxreaders=%d\n", d.info.MapSize, d.info.MaxReaders)
	if flags&lmdb.DupSort != 0 {
		w.WriteString("duplicates=1\n")
	}
	for _, f := range headerFlags {
		if flags&f.bit != 0 {
			fmt.Fprintf(w, "%s=1\n", f.name)
		}
	}
	fmt.Fprintf(w, "db_pagesize=%d\nHEADER=END\n", st.PSize)

	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return err
	}
	defer cur.Close()
	for {
		k, v, err := cur.Get(nil, nil, lmdb.Next)
		if lmdb.IsNotFound(err) {
			break
		}
		if err != nil {
			return err
		}
		d.writeItem(k)
		d.writeItem(v)
		d.prog.Add(1)
	}
	_, err = w.WriteString("DATA=END\n")
	return err
}

const hexDigits = "0123456789abcdef"

// writeItem writes one data line: a space, the encoded bytes, a newline.
func (d *dumper) writeItem(b []byte) {
	line := append(d.line[:0], ' ')
	if d.printable {
		line = appendPrintable(line, b)
	} else {
		for _, c := range b {
			line = append(line, hexDigits[c>>4], hexDigits[c&15])
		}
	}
	line = append(line, '\n')
	d.w.Write(line)
	d.line = line
}

// appendPrintable encodes b for format=print: bytes that C's isprint()
// accepts in the "C" locale (0x20..0x7e) stand for themselves, except the
// backslash, which is doubled; every other byte becomes \ and two hex
// digits.
func appendPrintable(dst, b []byte) []byte {
	for _, c := range b {
		switch {
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c >= 0x20 && c <= 0x7e:
			dst = append(dst, c)
		default:
			dst = append(dst, '\\', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return dst
}
