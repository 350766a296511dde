package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"sync"
	"time"
)

// Config is what every suite receives.
type Config struct {
	Quick  bool    // reduced sizes (make bench-quick)
	Scale  float64 // multiplies every entry/operation count (1 = preset)
	Rounds int     // rounds per comparison; 0 = the suite's preset
	TmpDir string  // parent of all temporary environments; "" = os.TempDir()
	Log    io.Writer
	Ours   Engine
	Stock  Engine
	// Rows, if set, limits every suite to the rows whose workload name it
	// matches (for development; the commands refuse it with -readme).
	Rows *regexp.Regexp

	mu   sync.Mutex
	dirs []string // every temporary directory made, for RemoveTemps
}

// WantRow reports whether the row named name should run.
func (c *Config) WantRow(name string) bool {
	return c.Rows == nil || c.Rows.MatchString(name)
}

// Size picks the full or quick count and applies Scale (never below min).
func (c *Config) Size(full, quick, min int) int {
	n := full
	if c.Quick {
		n = quick
	}
	if c.Scale > 0 && c.Scale != 1 {
		n = int(math.Round(float64(n) * c.Scale))
	}
	if n < min {
		n = min
	}
	return n
}

// RoundsOr returns c.Rounds if set, else the full or quick preset.
func (c *Config) RoundsOr(full, quick int) int {
	if c.Rounds > 0 {
		return c.Rounds
	}
	if c.Quick {
		return quick
	}
	return full
}

// Logf writes a progress line to c.Log (stderr in the commands).
func (c *Config) Logf(format string, args ...any) {
	if c.Log == nil {
		return
	}
	fmt.Fprintf(c.Log, "%s  %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// TempDir makes a fresh directory for environments under c.TmpDir (or
// os.TempDir()). The caller removes it with os.RemoveAll.
func (c *Config) TempDir(pattern string) (string, error) {
	parent := c.TmpDir
	if parent == "" {
		parent = os.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "dlmdb-bench-"+pattern+"-")
	if err == nil {
		c.mu.Lock()
		c.dirs = append(c.dirs, dir)
		c.mu.Unlock()
	}
	return dir, err
}

// RemoveTemps removes every temporary directory this Config created (those
// already removed are skipped); the commands call it when interrupted.
func (c *Config) RemoveTemps() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.dirs {
		os.RemoveAll(d)
	}
	c.dirs = nil
}

// Engines returns ours and stock, defaulting to the linked adapters.
func (c *Config) Engines() (ours, stock Engine) {
	ours, stock = c.Ours, c.Stock
	if ours == nil {
		ours = Ours
	}
	if stock == nil {
		stock = Stock
	}
	return
}

// Suite is one benchmark command's body. Run returns the finished table or
// an error when anything — including result verification — failed.
type Suite struct {
	ID      string // README marker name: <!-- bench:ID -->
	Command string // cmd/<Command>
	Title   string
	Order   int // position in benchall output and in appended README sections
	Run     func(c *Config) (*Table, error)
}

var suites []Suite

// Register adds a suite; packages call it from init.
func Register(s Suite) {
	suites = append(suites, s)
	sort.SliceStable(suites, func(i, j int) bool { return suites[i].Order < suites[j].Order })
}

// Suites lists the registered suites in output order.
func Suites() []Suite { return append([]Suite(nil), suites...) }

// Lookup finds a registered suite by ID.
func Lookup(id string) (Suite, bool) {
	for _, s := range suites {
		if s.ID == id {
			return s, true
		}
	}
	return Suite{}, false
}
