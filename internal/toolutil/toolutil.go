// Package toolutil holds what the command-line tools (lmdb_stat, lmdb_copy,
// lmdb_dump, lmdb_load, lmdb_check, lmdb_convert) share: a small getopt-style option
// parser (the tools accept the same single-letter option clusters as LMDB's
// C utilities, such as "-ef" or "-fff"), the process entry point that turns
// a run function's error into an exit status, environment opening, and a
// progress line that is drawn only when stderr is a terminal.
package toolutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// UsageError reports a command line that the tool cannot accept. Main exits
// with status 2 for it (1 for every other failure).
type UsageError struct {
	Msg   string
	Usage string
}

func (e *UsageError) Error() string {
	if e.Usage == "" {
		return e.Msg
	}
	// the usage line only (a tool's usage text may go on with its help)
	line, _, more := strings.Cut(e.Usage, "\n")
	if more {
		line += " (-h for help)"
	}
	return e.Msg + "\n" + line
}

// HelpRequest is what Parse returns for -h: the tool prints Text (its whole
// usage text) to standard output and exits with status 0 (see Help).
type HelpRequest struct{ Text string }

func (h *HelpRequest) Error() string { return "help requested" }

// Help finishes a command line that asked for help: for a HelpRequest it
// writes the help text to w and returns nil; any other error is returned as
// it is.
func Help(err error, w io.Writer) error {
	var h *HelpRequest
	if !errors.As(err, &h) {
		return err
	}
	text := h.Text
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_, werr := io.WriteString(w, text)
	return werr
}

// Options is the result of Parse: how often each flag letter was given, the
// argument of each letter that takes one (the last one given wins), and the
// operands in their original order.
type Options struct {
	count    map[byte]int
	value    map[byte]string
	Operands []string
}

// Count is how many times letter c appeared ("-fff" counts three).
func (o *Options) Count(c byte) int { return o.count[c] }

// Has reports whether letter c appeared at least once.
func (o *Options) Has(c byte) bool { return o.count[c] > 0 }

// Value is the argument of the last occurrence of letter c, and whether c
// appeared at all.
func (o *Options) Value(c byte) (string, bool) {
	v, ok := o.value[c]
	return v, ok
}

// Parse reads args against spec, a getopt(3)-style letter list where a
// letter followed by ':' takes an argument ("af:lnps:V"). Letters may be
// clustered ("-pa"), an argument may be attached ("-sname") or separate
// ("-s name"), operands may appear between options, and "--" ends option
// processing. usage is attached to the errors it returns; its first line is
// the usage line, the rest (if any) the help that -h prints (HelpRequest).
func Parse(spec string, args []string, usage string) (*Options, error) {
	takesArg := map[byte]bool{}
	known := map[byte]bool{}
	for i := 0; i < len(spec); i++ {
		c := spec[i]
		if c == ':' {
			continue
		}
		known[c] = true
		if i+1 < len(spec) && spec[i+1] == ':' {
			takesArg[c] = true
		}
	}
	o := &Options{count: map[byte]int{}, value: map[byte]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.Operands = append(o.Operands, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			o.Operands = append(o.Operands, a)
			continue
		}
		for j := 1; j < len(a); j++ {
			c := a[j]
			if c == 'h' && !known['h'] {
				return nil, &HelpRequest{Text: usage}
			}
			if !known[c] {
				return nil, &UsageError{Msg: fmt.Sprintf("unknown option -%c", c), Usage: usage}
			}
			o.count[c]++
			if !takesArg[c] {
				continue
			}
			if j+1 < len(a) {
				o.value[c] = a[j+1:]
			} else if i+1 < len(args) {
				i++
				o.value[c] = args[i]
			} else {
				return nil, &UsageError{Msg: fmt.Sprintf("option -%c needs an argument", c), Usage: usage}
			}
			break
		}
	}
	return o, nil
}

// Usagef builds a UsageError.
func Usagef(usage, format string, a ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, a...), Usage: usage}
}

// RunFunc is the shape of every tool's in-process entry point.
type RunFunc func(args []string, stdout, stderr io.Writer) error

// Main runs a tool with the process arguments and exits: 0 on success, 2 on
// a usage error, 1 on any other error (printed as "name: error").
func Main(name string, run RunFunc) {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err == nil {
		os.Exit(0)
	}
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	var ue *UsageError
	if errors.As(err, &ue) {
		os.Exit(2)
	}
	os.Exit(1)
}

// Version is the line printed by every tool's -V option.
func Version() string { return lmdb.VersionString() }

// OpenEnv opens the existing environment at path with the given flags.
// maxDBs > 0 reserves that many named-database handles. A path without a
// data file is an error that names it, and leaves nothing behind (the
// engine would create a lock file, or with write access a new environment).
func OpenEnv(path string, flags uint, maxDBs int) (*lmdb.Env, error) {
	data := path
	if flags&lmdb.NoSubdir == 0 {
		data = filepath.Join(path, "data.mdb")
	}
	if st, err := os.Stat(data); err != nil {
		return nil, fmt.Errorf("%s: no environment here: %w", path, err)
	} else if st.IsDir() {
		return nil, fmt.Errorf("%s: no environment here: %s is a directory (use -n only for single-file environments)", path, data)
	}
	env, err := lmdb.NewEnv()
	if err != nil {
		return nil, err
	}
	if maxDBs > 0 {
		if err := env.SetMaxDBs(maxDBs); err != nil {
			env.Close()
			return nil, err
		}
	}
	if err := env.Open(path, flags, 0o644); err != nil {
		env.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return env, nil
}

// IsTerminal reports whether w is an *os.File attached to a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	return isTerminalFile(f)
}

// Progress draws a single self-overwriting status line on a terminal. On
// any other writer every method is a cheap no-op, so tools call it
// unconditionally.
type Progress struct {
	w       io.Writer
	label   string
	unit    string
	n       int64
	start   time.Time
	next    time.Time
	drawn   bool
	enabled bool
}

// progressEvery is how often the line is redrawn.
const progressEvery = 250 * time.Millisecond

// NewProgress returns a progress line for w counting unit ("records",
// "pages", ...) under label. It is enabled only if w is a terminal.
func NewProgress(w io.Writer, label, unit string) *Progress {
	now := time.Now()
	return &Progress{w: w, label: label, unit: unit, start: now,
		next: now.Add(progressEvery), enabled: IsTerminal(w)}
}

// Add counts n more units and redraws the line if it is due. The clock is
// read only every 1024 calls' worth of units to keep Add cheap.
func (p *Progress) Add(n int64) {
	before := p.n
	p.n += n
	if !p.enabled || before>>10 == p.n>>10 {
		return
	}
	if now := time.Now(); now.After(p.next) {
		p.next = now.Add(progressEvery)
		p.draw(now)
	}
}

func (p *Progress) draw(now time.Time) {
	secs := now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "\r%s: %d %s (%.1fs)\x1b[K", p.label, p.n, p.unit, secs)
	p.drawn = true
}

// Done erases the line if one was drawn.
func (p *Progress) Done() {
	if p.enabled && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// Ticker shows "label: <status()> (elapsed)" every quarter second on a
// terminal while one long call (a copy, a check) runs. The returned stop
// function erases the line and must be called exactly once.
func Ticker(w io.Writer, label string, status func() string) (stop func()) {
	if !IsTerminal(w) {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	start := time.Now()
	go func() {
		defer wg.Done()
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		drawn := false
		for {
			select {
			case <-done:
				if drawn {
					fmt.Fprint(w, "\r\x1b[K")
				}
				return
			case now := <-t.C:
				s := ""
				if status != nil {
					s = status() + " "
				}
				fmt.Fprintf(w, "\r%s: %s(%.1fs)\x1b[K", label, s, now.Sub(start).Seconds())
				drawn = true
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// HumanBytes renders a byte count for progress lines.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// HasNUL reports whether b contains a zero byte (such main-DB keys cannot
// name a database).
func HasNUL(b []byte) bool { return bytes.IndexByte(b, 0) >= 0 }

// dbRecordSize is the size of a named database's record in the main
// database (LMDB's MDB_db).
const dbRecordSize = 48

// ForEachDB walks the main database of txn in key order and calls fn with
// every key that names a database, opened as dbi (closed again after fn
// returns, so the environment needs only one spare handle). Keys holding a
// zero byte, and keys whose record is not a database, are skipped, as LMDB's
// utilities do. candidates counts the keys without a zero byte, which the
// tools use to tell "no named databases" apart from "none could be opened".
//
// A key whose value has the size of a database record (48 bytes) but which
// cannot be opened is most likely a database this engine refuses (for
// example one using a flag it does not support); it is still skipped, but
// reported through warn (if not nil) so that it does not vanish silently.
func ForEachDB(env *lmdb.Env, txn *lmdb.Txn, warn func(name string, err error), fn func(name string, dbi lmdb.DBI) error) (candidates int, err error) {
	root, err := txn.OpenRoot(0)
	if err != nil {
		return 0, err
	}
	cur, err := txn.OpenCursor(root)
	if err != nil {
		return 0, err
	}
	defer cur.Close()
	type entry struct {
		name     string
		dbRecord bool
	}
	var names []entry
	for op := uint(lmdb.First); ; op = lmdb.NextNoDup {
		k, v, err := cur.Get(nil, nil, op)
		if lmdb.IsNotFound(err) {
			break
		}
		if err != nil {
			return candidates, fmt.Errorf("main database (listing the named databases): %w", err)
		}
		if HasNUL(k) {
			continue
		}
		candidates++
		names = append(names, entry{string(k), len(v) == dbRecordSize})
	}
	for _, e := range names {
		name := e.name
		dbi, err := txn.OpenDBI(name, 0)
		if errors.Is(err, lmdb.Incompatible) || lmdb.IsNotFound(err) {
			if e.dbRecord && warn != nil {
				warn(name, err)
			}
			continue
		}
		if err != nil {
			return candidates, fmt.Errorf("opening database %q: %w", name, err)
		}
		err = fn(name, dbi)
		env.CloseDBI(dbi)
		if err != nil {
			return candidates, err
		}
	}
	return candidates, nil
}

// Warner returns a ForEachDB warning function that prints to w.
func Warner(w io.Writer, tool string) func(name string, err error) {
	return func(name string, err error) {
		fmt.Fprintf(w, "%s: warning: skipping %q, which looks like a database but cannot be opened: %v\n", tool, name, err)
	}
}
