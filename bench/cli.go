package bench

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Run executes the given suites (all registered ones when ids is empty) and
// returns the report. Any error — a failed verification included — aborts
// the run.
func Run(c *Config, ids []string) (*Report, error) {
	var run []Suite
	if len(ids) == 0 {
		run = Suites()
	} else {
		for _, id := range ids {
			s, ok := Lookup(id)
			if !ok {
				return nil, fmt.Errorf("unknown benchmark %q (have %s)", id, suiteIDs())
			}
			run = append(run, s)
		}
	}
	if len(run) == 0 {
		return nil, fmt.Errorf("no benchmark registered")
	}
	ours, stock := c.Engines()
	c.Ours, c.Stock = ours, stock
	if c.Scale == 0 {
		c.Scale = 1
	}
	// Write transactions need a locked OS thread; keep one for the run.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	r := &Report{
		Machine: DetectMachine(), Quick: c.Quick, Scale: c.Scale,
		Start: time.Now(), LoadStart: LoadAvg1(),
		Ours: ours.Describe(), Stock: stock.Describe(), StandIn: ours.StandIn() || stock.StandIn(),
	}
	c.Logf("machine: %s; load %.2f", r.Machine, r.LoadStart)
	if r.StandIn {
		c.Logf("WARNING: ours is a stand-in: %s", ours.Describe())
	}
	for _, s := range run {
		c.Logf("== %s (cmd/%s)", s.Title, s.Command)
		t, err := s.Run(c)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Command, err)
		}
		t.ID = s.ID
		if t.Title == "" {
			t.Title = s.Title
		}
		r.Tables = append(r.Tables, t)
	}
	r.End = time.Now()
	r.LoadEnd = LoadAvg1()
	c.Logf("done in %s; load %.2f", r.End.Sub(r.Start).Round(time.Second), r.LoadEnd)
	return r, nil
}

func suiteIDs() string {
	var ids []string
	for _, s := range suites {
		ids = append(ids, s.ID)
	}
	return strings.Join(ids, ", ")
}

// Main is the whole command line of cmd/benchall and of each single
// benchmark command (ids fixes which suites it runs; empty = all, then -only
// may narrow it). It returns the process exit code.
func Main(name string, args []string, stdout, stderr io.Writer, ids ...string) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "reduced sizes (about two minutes for benchall on 2 cores)")
	scale := fs.Float64("scale", 1, "multiply every entry and operation count by this factor")
	rounds := fs.Int("rounds", 0, "alternating rounds per comparison (0 = preset of each benchmark: 9)")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of Markdown")
	readme := fs.String("readme", "", "splice the tables into this README between <!-- bench:ID --> markers")
	tmp := fs.String("tmpdir", "", "parent directory for temporary environments (default os.TempDir())")
	rows := fs.String("rows", "", "regexp: run only the workloads whose name matches (development; not with -readme)")
	only := fs.String("only", "", "comma-separated suite IDs to run ("+suiteIDs()+")")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected arguments %q\n", name, fs.Args())
		return 2
	}
	if *only != "" {
		if len(ids) > 0 {
			fmt.Fprintf(stderr, "%s: -only is for benchall\n", name)
			return 2
		}
		ids = strings.Split(*only, ",")
	}
	if *scale <= 0 {
		fmt.Fprintf(stderr, "%s: -scale must be positive\n", name)
		return 2
	}
	c := &Config{Quick: *quick, Scale: *scale, Rounds: *rounds, TmpDir: *tmp, Log: stderr}
	if *rows != "" {
		if *readme != "" {
			fmt.Fprintf(stderr, "%s: -rows would splice partial tables; not allowed with -readme\n", name)
			return 2
		}
		re, err := regexp.Compile(*rows)
		if err != nil {
			fmt.Fprintf(stderr, "%s: -rows: %v\n", name, err)
			return 2
		}
		c.Rows = re
	}
	// Ctrl-C or SIGTERM: remove the temporary environments, then exit.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer func() { signal.Stop(sigs); close(sigs) }()
	go func() {
		if _, ok := <-sigs; ok {
			fmt.Fprintf(stderr, "%s: interrupted; removing temporary environments\n", name)
			c.RemoveTemps()
			os.Exit(130)
		}
	}()
	r, err := Run(c, ids)
	c.RemoveTemps()
	if err != nil {
		fmt.Fprintf(stderr, "%s: FAILED: %v\n", name, err)
		return 1
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
	} else {
		io.WriteString(stdout, r.Markdown())
	}
	if *readme != "" {
		var secs []SplicedSection
		for _, t := range r.Tables {
			secs = append(secs, SplicedSection{ID: t.ID, Body: r.Section(t)})
		}
		if err := SpliceFile(*readme, secs); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return 1
		}
		c.Logf("spliced %d table(s) into %s", len(secs), *readme)
	}
	return 0
}

// Exit is a convenience for command mains: os.Exit(Main(...)).
func Exit(name string, ids ...string) {
	os.Exit(Main(name, os.Args[1:], os.Stdout, os.Stderr, ids...))
}
