/*
Command lmdb_load reads the text format written by lmdb_dump (or by LMDB's
mdb_dump) and stores its records in an LMDB/DLMDB environment, creating the
environment and its databases as needed.

	lmdb_load [-V] [-a] [-f input] [-n] [-s name] [-N] [-T] path

The input holds one or more sections, each a header (VERSION=3,
format=bytevalue|print, database=, type=btree, mapsize=, maxreaders=,
db_pagesize=, duplicates=, the database flag keywords, HEADER=END) followed
by key and value lines that begin with a space and end at DATA=END.

	-f file  read the dump from file instead of stdin
	-s name  load every section into the named database
	-n       the environment is a single file, not a directory
	-N       do not overwrite existing keys (nor add an existing duplicate)
	-T       plain text input: no header, lines alternate key and value in
	         the print encoding without a leading space
	-a       append: the input is already in database order (faster; an
	         out-of-order record is an error)

Everything is loaded in one write transaction: a malformed input is
reported with its line number and leaves the environment unchanged.
*/
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dlmdb/dlmdb-go/internal/toolutil"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

const usage = "usage: lmdb_load [-V] [-a] [-f input] [-n] [-s name] [-N] [-T] path" + `

Read the text format written by lmdb_dump (or by LMDB's mdb_dump) and store
its records in the environment at path, creating the environment and its
databases as needed. Everything goes into one write transaction: a
malformed input is reported with its line number and changes nothing.

  -f input  read the dump from the file input instead of standard input
  -s name   load every section into the named database
  -n        the environment is a single file, not a directory
  -N        do not overwrite existing keys (nor add an existing duplicate)
  -T        plain text input: no header, lines alternate key and value in
            the print encoding without a leading space
  -a        append: the input is already in database order (faster; an
            out-of-order record is an error)
  -V        print the engine version and exit
  -h        print this help
`

// stdin is where the dump is read from without -f (tests replace it).
var stdin io.Reader = os.Stdin

func main() { toolutil.Main("lmdb_load", run) }

type config struct {
	path      string
	input     string
	name      string
	named     bool
	envFlags  uint
	noOver    bool
	plain     bool
	appending bool
}

func parseArgs(args []string) (*config, bool, error) {
	o, err := toolutil.Parse("af:ns:NTV", args, usage)
	if err != nil {
		return nil, false, err
	}
	if o.Has('V') {
		return nil, true, nil
	}
	c := &config{noOver: o.Has('N'), plain: o.Has('T'), appending: o.Has('a')}
	c.input, _ = o.Value('f')
	c.name, c.named = o.Value('s')
	if o.Has('n') {
		c.envFlags |= lmdb.NoSubdir
	}
	if len(o.Operands) != 1 {
		return nil, false, toolutil.Usagef(usage, "exactly one environment path is required")
	}
	c.path = o.Operands[0]
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
	in := stdin
	if c.input != "" {
		f, err := os.Open(c.input)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	// A target that does not exist yet is created (the directory too), and
	// removed again if the load fails, so a failed load leaves no trace.
	dataFile, lockFile := c.path, c.path+"-lock"
	createdDir := ""
	if c.envFlags&lmdb.NoSubdir == 0 {
		dataFile, lockFile = filepath.Join(c.path, "data.mdb"), filepath.Join(c.path, "lock.mdb")
		if _, err := os.Stat(c.path); errors.Is(err, os.ErrNotExist) {
			createdDir = topMissing(c.path)
			if err := os.MkdirAll(c.path, 0o755); err != nil {
				return err
			}
		}
	}
	_, statErr := os.Stat(dataFile)
	fresh := errors.Is(statErr, os.ErrNotExist)
	err = load(c, in, stderr)
	if err != nil && fresh {
		if createdDir != "" {
			os.RemoveAll(createdDir)
		} else {
			os.Remove(dataFile)
			os.Remove(lockFile)
		}
	}
	return err
}

// topMissing returns the outermost directory of path that does not exist
// yet (path itself if only it is missing).
func topMissing(path string) string {
	top := filepath.Clean(path)
	for {
		parent := filepath.Dir(top)
		if parent == top {
			return top
		}
		if _, err := os.Stat(parent); !errors.Is(err, os.ErrNotExist) {
			return top
		}
		top = parent
	}
}

// header is what one section's header says.
type header struct {
	name       *string
	flags      uint
	printable  bool
	mapSize    int64
	maxReaders int
	firstLine  int
}

// lineReader hands out input lines (without their newline) and counts them.
type lineReader struct {
	r    *bufio.Reader
	line int
}

// next returns the next line; ok is false at the end of the input.
func (lr *lineReader) next() (line []byte, ok bool, err error) {
	b, err := lr.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := append([]byte(nil), b...)
		for err == bufio.ErrBufferFull {
			b, err = lr.r.ReadSlice('\n')
			long = append(long, b...)
		}
		b = long
	}
	if err == io.EOF {
		if len(b) == 0 {
			return nil, false, nil
		}
		err = nil // a last line without its newline still counts
	}
	if err != nil {
		return nil, false, err
	}
	lr.line++
	return bytes.TrimSuffix(b, []byte{'\n'}), true, nil
}

// lineError is a problem in the input, located by line number.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (lr *lineReader) errorf(format string, a ...any) error {
	return &lineError{line: lr.line, msg: fmt.Sprintf(format, a...)}
}

// flagWords maps the header's database flag keywords to flag bits.
var flagWords = map[string]uint{
	"reversekey": lmdb.ReverseKey,
	"dupsort":    lmdb.DupSort,
	"integerkey": lmdb.IntegerKey,
	"dupfixed":   lmdb.DupFixed,
	"integerdup": lmdb.IntegerDup,
	"reversedup": lmdb.ReverseDup,
	"duplicates": lmdb.DupSort,
	"counted":    lmdb.Counted, // DLMDB: order statistics (not an order flag)
}

// readHeader parses a header up to HEADER=END. It returns nil at a clean
// end of input (no further section).
func readHeader(lr *lineReader) (*header, error) {
	h := &header{}
	for {
		line, ok, err := lr.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			if h.firstLine == 0 {
				return nil, nil
			}
			return nil, lr.errorf("unexpected end of input: header has no HEADER=END")
		}
		if h.firstLine == 0 {
			h.firstLine = lr.line
		}
		if len(line) > 0 && line[0] == ' ' {
			return nil, lr.errorf("data line before HEADER=END")
		}
		eq := bytes.IndexByte(line, '=')
		if eq < 0 {
			return nil, lr.errorf("malformed header line %q (want keyword=value)", line)
		}
		key, val := string(line[:eq]), string(line[eq+1:])
		switch key {
		case "HEADER":
			if val != "END" {
				return nil, lr.errorf("unexpected %q", line)
			}
			return h, nil
		case "VERSION":
			v, err := strconv.Atoi(val)
			if err != nil || v < 1 || v > 3 {
				return nil, lr.errorf("unsupported VERSION %q", val)
			}
		case "format":
			switch val {
			case "print":
				h.printable = true
			case "bytevalue":
				h.printable = false
			default:
				return nil, lr.errorf("unsupported format %q", val)
			}
		case "type":
			if val != "btree" {
				return nil, lr.errorf("unsupported type %q", val)
			}
		case "database":
			name := val
			h.name = &name
		case "mapsize":
			v, err := strconv.ParseInt(val, 10, 64)
			if err != nil || v < 0 {
				return nil, lr.errorf("invalid mapsize %q", val)
			}
			h.mapSize = v
		case "maxreaders":
			v, err := strconv.ParseUint(val, 10, 31)
			if err != nil {
				return nil, lr.errorf("invalid maxreaders %q", val)
			}
			h.maxReaders = int(v)
		case "db_pagesize":
			// The page size is fixed when an environment is created; a
			// dump from another page size still loads.
			if _, err := strconv.ParseUint(val, 10, 32); err != nil {
				return nil, lr.errorf("invalid db_pagesize %q", val)
			}
		case "mapaddr":
			// A fixed map address is a property of the source process,
			// not of the data; it is accepted and not reproduced.
		default:
			bit, known := flagWords[key]
			if !known {
				return nil, lr.errorf("unknown header keyword %q", key)
			}
			switch val {
			case "1":
				h.flags |= bit
			case "0":
			default:
				return nil, lr.errorf("invalid value %q for %s (want 0 or 1)", val, key)
			}
		}
	}
}

// unhex returns the value of one hex digit, or -1.
func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// decodeHex decodes a bytevalue line body into dst.
func decodeHex(dst, s []byte) ([]byte, error) {
	if len(s)%2 != 0 {
		return nil, fmt.Errorf("odd number of hex digits (%d)", len(s))
	}
	for i := 0; i < len(s); i += 2 {
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi < 0 || lo < 0 {
			return nil, fmt.Errorf("invalid hex digits %q at column %d", s[i:i+2], i+2)
		}
		dst = append(dst, byte(hi<<4|lo))
	}
	return dst, nil
}

// decodePrintable decodes a print-format line body into dst: "\\" is a
// backslash, "\xy" the byte with hex value xy, anything else itself.
func decodePrintable(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '\\' {
			dst = append(dst, '\\')
			i++
			continue
		}
		if i+2 >= len(s) {
			return nil, fmt.Errorf("incomplete escape at column %d", i+1)
		}
		hi, lo := unhex(s[i+1]), unhex(s[i+2])
		if hi < 0 || lo < 0 {
			return nil, fmt.Errorf("invalid escape %q at column %d", s[i:i+3], i+1)
		}
		dst = append(dst, byte(hi<<4|lo))
		i += 2
	}
	return dst, nil
}

// maxSections is how many named databases one load can create or fill.
const maxSections = 10000

// load opens (or creates) the environment and applies the whole input in a
// single write transaction. If the map fills up and the input can be
// rewound, the map is doubled and the load starts over; nothing of a failed
// attempt is ever committed.
func load(c *config, in io.Reader, stderr io.Writer) error {
	// Remember where the input starts so that a retry can reread it.
	seeker, canRewind := in.(io.Seeker)
	var start int64
	if canRewind {
		pos, err := seeker.Seek(0, io.SeekCurrent)
		start, canRewind = pos, err == nil
	}
	br := bufio.NewReaderSize(in, 256<<10)
	lr := &lineReader{r: br}
	var first *header
	if !c.plain {
		var err error
		first, err = readHeader(lr)
		if err != nil {
			return err
		}
		if first == nil {
			return errors.New("empty input: no dump header found")
		}
	}

	env, err := lmdb.NewEnv()
	if err != nil {
		return err
	}
	defer env.Close()
	// One transaction holds every section's handle open at once, so
	// leave room for dumps with many databases.
	if err := env.SetMaxDBs(maxSections); err != nil {
		return err
	}
	if first != nil && first.maxReaders > 0 {
		if err := env.SetMaxReaders(first.maxReaders); err != nil {
			return err
		}
	}
	if err := env.Open(c.path, c.envFlags, 0o644); err != nil {
		return fmt.Errorf("%s: %w", c.path, err)
	}
	if first != nil && first.mapSize > 0 {
		// A new environment takes the dump's map size, as with mdb_load;
		// an existing one is only ever grown to it, never shrunk.
		info, err := env.Info()
		if err != nil {
			return err
		}
		if info.LastTxnID == 0 || first.mapSize > info.MapSize {
			if err := env.SetMapSize(first.mapSize); err != nil {
				return err
			}
		}
	}

	for attempt := 0; ; attempt++ {
		prog := toolutil.NewProgress(stderr, "lmdb_load", "records")
		err := env.Update(func(txn *lmdb.Txn) error {
			return loadAll(c, txn, lr, first, prog)
		})
		prog.Done()
		if !lmdb.IsMapFull(err) {
			return err
		}
		if !canRewind || attempt >= 20 {
			return fmt.Errorf("line %d: %w (the input cannot be reread to retry with a larger map)", lr.line, err)
		}
		info, ierr := env.Info()
		if ierr != nil {
			return ierr
		}
		if err := env.SetMapSize(info.MapSize * 2); err != nil {
			return err
		}
		if _, err := seeker.Seek(start, io.SeekStart); err != nil {
			return err
		}
		br.Reset(in)
		lr = &lineReader{r: br}
		first = nil
		if !c.plain {
			if first, err = readHeader(lr); err != nil {
				return err
			}
		}
	}
}

// loadAll stores every section of the input in txn.
func loadAll(c *config, txn *lmdb.Txn, lr *lineReader, first *header, prog *toolutil.Progress) error {
	if c.plain {
		h := &header{printable: true}
		if c.named {
			h.name = &c.name
		}
		return loadSection(c, txn, lr, h, prog)
	}
	for h := first; h != nil; {
		if err := loadSection(c, txn, lr, h, prog); err != nil {
			return err
		}
		var err error
		if h, err = readHeader(lr); err != nil {
			return err
		}
	}
	return nil
}

// loadSection opens (creating if needed) the section's database and
// stores its records up to DATA=END (or the end of input with -T).
func loadSection(c *config, txn *lmdb.Txn, lr *lineReader, h *header, prog *toolutil.Progress) error {
	name := h.name
	if c.named {
		name = &c.name
	}
	var dbi lmdb.DBI
	var err error
	if name == nil {
		dbi, err = txn.OpenRoot(h.flags | lmdb.Create)
	} else {
		dbi, err = txn.OpenDBI(*name, h.flags|lmdb.Create)
	}
	if err != nil {
		return fmt.Errorf("line %d: opening %s: %w", h.firstLine, describe(name), err)
	}
	if !c.plain {
		// An existing database keeps the flags it was created with; loading
		// duplicates into a plain database (or the reverse) would silently
		// change the data's meaning, so refuse it.
		have, err := txn.Flags(dbi)
		if err != nil {
			return err
		}
		if have&orderFlags != h.flags&orderFlags {
			return fmt.Errorf("line %d: %s exists with flags %s but the dump has %s",
				h.firstLine, describe(name), flagString(have), flagString(h.flags))
		}
	}
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return err
	}
	defer cur.Close()

	var putFlags uint
	if c.noOver {
		putFlags = lmdb.NoOverwrite | lmdb.NoDupData
	}
	var key, val, prevKey []byte
	for {
		line, ok, err := lr.next()
		if err != nil {
			return err
		}
		if !ok {
			if c.plain {
				return nil
			}
			return &lineError{line: lr.line, msg: "unexpected end of input: no DATA=END"}
		}
		if !c.plain && string(line) == "DATA=END" {
			return nil
		}
		if key, err = decodeItem(c, h, lr, line, key[:0]); err != nil {
			return err
		}
		line, ok, err = lr.next()
		if err != nil {
			return err
		}
		if !ok || (!c.plain && string(line) == "DATA=END") {
			return lr.errorf("key without a value")
		}
		if val, err = decodeItem(c, h, lr, line, val[:0]); err != nil {
			return err
		}
		flags := putFlags
		if c.appending {
			flags |= lmdb.Append
			if h.flags&lmdb.DupSort != 0 && prevKey != nil && bytes.Equal(prevKey, key) {
				flags = putFlags | lmdb.AppendDup
			}
			prevKey = append(prevKey[:0], key...)
		}
		err = cur.Put(key, val, flags)
		if errors.Is(err, lmdb.KeyExist) {
			if c.appending {
				return lr.errorf("record out of order or already present (append mode): %v", err)
			}
			if c.noOver {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", lr.line, err)
		}
		prog.Add(1)
	}
}

// orderFlags are the database flags a dump header records.
const orderFlags = lmdb.ReverseKey | lmdb.DupSort | lmdb.IntegerKey | lmdb.DupFixed | lmdb.IntegerDup | lmdb.ReverseDup

// flagString names the header flags set in f, or "none".
func flagString(f uint) string {
	var out []byte
	for _, w := range []string{"reversekey", "dupsort", "integerkey", "dupfixed", "integerdup", "reversedup"} {
		if f&flagWords[w] != 0 {
			if len(out) > 0 {
				out = append(out, ',')
			}
			out = append(out, w...)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return string(out)
}

// describe names a load target in messages.
func describe(name *string) string {
	if name == nil {
		return "the main database"
	}
	return fmt.Sprintf("database %q", *name)
}

// decodeItem decodes one key or value line of the current section.
func decodeItem(c *config, h *header, lr *lineReader, line, dst []byte) ([]byte, error) {
	body := line
	if !c.plain {
		if len(line) == 0 || line[0] != ' ' {
			return nil, lr.errorf("expected a data line starting with a space or DATA=END, got %q", clip(line))
		}
		body = line[1:]
	}
	var err error
	if h.printable {
		dst, err = decodePrintable(dst, body)
	} else {
		dst, err = decodeHex(dst, body)
	}
	if err != nil {
		return nil, lr.errorf("%v", err)
	}
	if dst == nil {
		dst = []byte{}
	}
	return dst, nil
}

// clip shortens a line quoted in an error message.
func clip(b []byte) []byte {
	if len(b) > 40 {
		return append(append([]byte(nil), b[:40]...), "..."...)
	}
	return b
}
