/*
Command lmdb_stat prints status information about an LMDB/DLMDB
environment, in the layout of LMDB's mdb_stat.

	lmdb_stat [-V] [-n] [-e] [-r[r]] [-f[f[f]]] [-a|-s name] path

	-e    environment information (map size, pages used, last transaction, readers)
	-r    the reader table; -rr also clears stale readers and prints it again
	-f    free-list totals; -ff adds one line per freeing transaction;
	      -fff also lists the free page numbers
	-a    statistics of every named database as well
	-s    statistics of one named database instead of the main one
	-n    the environment is a single file, not a directory

The main database's statistics are always printed, except after -r alone.
*/
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/dlmdb/dlmdb-go/internal/toolutil"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

const usage = "usage: lmdb_stat [-V] [-n] [-e] [-r[r]] [-f[f[f]]] [-a|-s name] path" + `

Print status information about the environment at path, in the layout of
LMDB's mdb_stat. The main database's statistics are always printed, except
after -r alone.

  -e       environment information (map size, pages used, last transaction,
           readers)
  -r       the reader table; -rr also clears stale readers and prints it again
  -f       free-list totals; -ff adds one line per freeing transaction;
           -fff also lists the free page numbers
  -a       statistics of every named database as well
  -s name  statistics of the named database instead of the main one
  -n       the environment is a single file, not a directory
  -V       print the engine version and exit
  -h       print this help
`

func main() { toolutil.Main("lmdb_stat", run) }

type config struct {
	path     string
	envFlags uint
	envInfo  bool
	readers  int
	free     int
	all      bool
	name     string
	named    bool
}

func parseArgs(args []string) (*config, bool, error) {
	o, err := toolutil.Parse("aefnrs:V", args, usage)
	if err != nil {
		return nil, false, err
	}
	if o.Has('V') {
		return nil, true, nil
	}
	c := &config{envInfo: o.Has('e'), readers: o.Count('r'), free: o.Count('f'), all: o.Has('a')}
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
	if c.all || c.named {
		maxDBs = 4
	}
	env, err := toolutil.OpenEnv(c.path, c.envFlags|lmdb.Readonly, maxDBs)
	if err != nil {
		return err
	}
	defer env.Close()

	if c.envInfo {
		if err := printEnvInfo(w, env); err != nil {
			return err
		}
	}
	if c.readers > 0 {
		if err := printReaders(w, env, c.readers > 1); err != nil {
			return err
		}
		if !c.all && !c.named && c.free == 0 {
			return nil
		}
	}
	return env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true
		if c.free > 0 {
			if err := printFreeList(w, txn, c.free); err != nil {
				return err
			}
		}
		var dbi lmdb.DBI
		title := "Main DB"
		if c.named {
			dbi, err = txn.OpenDBI(c.name, 0)
			if err != nil {
				return fmt.Errorf("database %q: %w", c.name, err)
			}
			title = c.name
		} else if dbi, err = txn.OpenRoot(0); err != nil {
			return err
		}
		if err := printDBStat(w, txn, dbi, title); err != nil {
			return err
		}
		if !c.all {
			return nil
		}
		_, err := toolutil.ForEachDB(env, txn, toolutil.Warner(stderr, "lmdb_stat"), func(name string, dbi lmdb.DBI) error {
			return printDBStat(w, txn, dbi, name)
		})
		return err
	})
}

func printEnvInfo(w io.Writer, env *lmdb.Env) error {
	info, err := env.Info()
	if err != nil {
		return err
	}
	st, err := env.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Environment Info")
	// Only a FixedMap environment records a map address; the tools never
	// open one that way, so like mdb_stat on such files this is null.
	fmt.Fprintln(w, "  Map address: (nil)")
	fmt.Fprintf(w, "  Map size: %d\n", info.MapSize)
	fmt.Fprintf(w, "  Page size: %d\n", st.PSize)
	if st.PSize > 0 {
		fmt.Fprintf(w, "  Max pages: %d\n", info.MapSize/int64(st.PSize))
	}
	fmt.Fprintf(w, "  Number of pages used: %d\n", info.LastPNO+1)
	fmt.Fprintf(w, "  Last transaction ID: %d\n", info.LastTxnID)
	fmt.Fprintf(w, "  Max readers: %d\n", info.MaxReaders)
	_, err = fmt.Fprintf(w, "  Number of readers used: %d\n", info.NumReaders)
	return err
}

func printReaders(w io.Writer, env *lmdb.Env, clearStale bool) error {
	fmt.Fprintln(w, "Reader Table Status")
	list := func() error {
		return env.ReaderList(func(msg string) error {
			_, err := io.WriteString(w, msg)
			return err
		})
	}
	if err := list(); err != nil {
		return err
	}
	if !clearStale {
		return nil
	}
	n, err := env.ReaderCheck()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  %d stale readers cleared.\n", n)
	return list()
}

func printStat(w io.Writer, st *lmdb.Stat) {
	fmt.Fprintf(w, "  Tree depth: %d\n", st.Depth)
	fmt.Fprintf(w, "  Branch pages: %d\n", st.BranchPages)
	fmt.Fprintf(w, "  Leaf pages: %d\n", st.LeafPages)
	fmt.Fprintf(w, "  Overflow pages: %d\n", st.OverflowPages)
	fmt.Fprintf(w, "  Entries: %d\n", st.Entries)
}

func printDBStat(w io.Writer, txn *lmdb.Txn, dbi lmdb.DBI, title string) error {
	st, err := txn.Stat(dbi)
	if err != nil {
		return fmt.Errorf("stat of %s: %w", title, err)
	}
	fmt.Fprintf(w, "Status of %s\n", title)
	printStat(w, st)
	return nil
}

// freeDBI is the handle of the free-page database, always 0.
const freeDBI lmdb.DBI = 0

// freeRecord is one free-list entry: the transaction that freed the pages
// and the page numbers, which the file keeps in descending order.
type freeRecord struct {
	txnID uint64
	pages []uint64
}

// decodeFreeRecord reads a record: the key is the transaction id, the value
// a count followed by that many page numbers, all native 64-bit words.
func decodeFreeRecord(k, v []byte) (freeRecord, error) {
	var r freeRecord
	if len(k) != 8 || len(v) < 8 || len(v)%8 != 0 {
		return r, fmt.Errorf("malformed free-list record (key %d bytes, value %d bytes)", len(k), len(v))
	}
	r.txnID = binary.NativeEndian.Uint64(k)
	n := binary.NativeEndian.Uint64(v)
	if n > uint64(len(v)/8-1) {
		return r, fmt.Errorf("free-list record of transaction %d claims %d pages but holds %d", r.txnID, n, len(v)/8-1)
	}
	r.pages = make([]uint64, n)
	for i := range r.pages {
		r.pages[i] = binary.NativeEndian.Uint64(v[8+8*i:])
	}
	return r, nil
}

// runs splits ascending page numbers into maximal consecutive runs,
// returned as (first page, length) pairs, smallest first. The input is
// descending, so it is read from its end.
func runs(pages []uint64) [][2]uint64 {
	var out [][2]uint64
	for i := len(pages) - 1; i >= 0; {
		first, n := pages[i], uint64(1)
		for i--; i >= 0 && pages[i] == first+n; i-- {
			n++
		}
		out = append(out, [2]uint64{first, n})
	}
	return out
}

func printFreeList(w io.Writer, txn *lmdb.Txn, level int) error {
	fmt.Fprintln(w, "Freelist Status")
	st, err := txn.Stat(freeDBI)
	if err != nil {
		return err
	}
	printStat(w, st)
	cur, err := txn.OpenCursor(freeDBI)
	if err != nil {
		return err
	}
	defer cur.Close()
	var total uint64
	for {
		k, v, err := cur.Get(nil, nil, lmdb.Next)
		if lmdb.IsNotFound(err) {
			break
		}
		if err != nil {
			return err
		}
		r, err := decodeFreeRecord(k, v)
		if err != nil {
			return err
		}
		total += uint64(len(r.pages))
		if level < 2 {
			continue
		}
		bad := ""
		for i := 1; i < len(r.pages); i++ {
			if r.pages[i] >= r.pages[i-1] {
				bad = " [bad sequence]"
				break
			}
		}
		var maxSpan uint64
		spans := runs(r.pages)
		for _, s := range spans {
			maxSpan = max(maxSpan, s[1])
		}
		fmt.Fprintf(w, "    Transaction %d, %d pages, maxspan %d%s\n", r.txnID, len(r.pages), maxSpan, bad)
		if level < 3 {
			continue
		}
		for _, s := range spans {
			if s[1] > 1 {
				fmt.Fprintf(w, "     %9d[%d]\n", s[0], s[1])
			} else {
				fmt.Fprintf(w, "     %9d\n", s[0])
			}
		}
	}
	_, err = fmt.Fprintf(w, "  Free pages: %d\n", total)
	return err
}
