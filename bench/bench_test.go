package bench_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/bench"
	_ "github.com/dlmdb/dlmdb-go/bench/cgofloor"
)

// tinyArgs run a whole command in well under a second per suite.
func tinyArgs(tmp string) []string {
	return []string{"-quick", "-scale", "0.01", "-rounds", "2", "-tmpdir", tmp}
}

func TestSummarizeAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 1; n <= 9; n++ {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(rng.Intn(1000))
		}
		s := bench.Summarize(v)
		sorted := append([]float64(nil), v...)
		sort.Float64s(sorted)
		var med float64
		if n%2 == 1 {
			med = sorted[n/2]
		} else {
			med = (sorted[n/2-1] + sorted[n/2]) / 2
		}
		if s.Median != med || s.Min != sorted[0] || s.Max != sorted[n-1] {
			t.Fatalf("n=%d %v: got %+v, want median %v min %v max %v", n, v, s, med, sorted[0], sorted[n-1])
		}
		for i := range v {
			if s.Rounds[i] != v[i] {
				t.Fatalf("rounds not kept in order: %v vs %v", s.Rounds, v)
			}
		}
	}
}

func TestAlternateFlipsStartingSide(t *testing.T) {
	var order []string
	mk := func(name string) bench.Side {
		return bench.Side{Name: name, Measure: func(r int) (float64, error) {
			order = append(order, fmt.Sprintf("%s%d", name, r))
			return float64(len(order)), nil
		}}
	}
	st, err := bench.Alternate(4, []bench.Side{mk("A"), mk("B")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "A0 B0 B1 A1 A2 B2 B3 A3"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	if len(st) != 2 || len(st[0].Rounds) != 4 || len(st[1].Rounds) != 4 {
		t.Fatalf("rounds not all kept: %+v", st)
	}
	// A's values are the positions at which A ran.
	if fmt.Sprint(st[0].Rounds) != "[1 4 5 8]" {
		t.Fatalf("A rounds %v", st[0].Rounds)
	}
}

func TestSplice(t *testing.T) {
	prose := "# Title\n\nSome prose.\n"
	doc, err := bench.Splice(prose, []bench.SplicedSection{{ID: "a", Body: "table A v1"}, {ID: "b", Body: "table B v1\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc, prose) || strings.Count(doc, "## Benchmarks") != 1 {
		t.Fatalf("prose lost or heading wrong:\n%s", doc)
	}
	ia, ib := strings.Index(doc, "<!-- bench:a -->"), strings.Index(doc, "<!-- bench:b -->")
	if ia < 0 || ib < ia || !strings.Contains(doc, "<!-- bench:a -->\ntable A v1\n<!-- /bench:a -->") {
		t.Fatalf("sections missing or out of order:\n%s", doc)
	}
	// Idempotent, and a new body replaces only what is between markers.
	again, err := bench.Splice(doc, []bench.SplicedSection{{ID: "a", Body: "table A v1"}, {ID: "b", Body: "table B v1\n"}})
	if err != nil || again != doc {
		t.Fatalf("second splice changed the document (err %v):\n%s", err, again)
	}
	edited := strings.Replace(doc, "## Benchmarks", "## Benchmarks\n\nLead's words.", 1)
	upd, err := bench.Splice(edited, []bench.SplicedSection{{ID: "b", Body: "table B v2"}})
	if err != nil {
		t.Fatal(err)
	}
	if upd != strings.Replace(edited, "table B v1", "table B v2", 1) {
		t.Fatalf("update touched more than section b:\n%s", upd)
	}
	if _, err := bench.Splice("x <!-- bench:a --> y", []bench.SplicedSection{{ID: "a", Body: "z"}}); err == nil {
		t.Fatal("unpaired marker accepted")
	}
	if _, err := bench.Splice("<!-- /bench:a --> <!-- bench:a -->", []bench.SplicedSection{{ID: "a", Body: "z"}}); err == nil {
		t.Fatal("misordered markers accepted")
	}
}

var (
	numRe   = `-?[0-9]+(?:\.[0-9]+)?`
	cellRe  = regexp.MustCompile(`^(` + numRe + `) \[(` + numRe + `), (` + numRe + `)\]$`)
	ratioRe = regexp.MustCompile(`^(` + numRe + `)x$`)
	numOnly = regexp.MustCompile(`^` + numRe + `$`)
)

// mdTable is a Markdown table found in a document.
type mdTable struct {
	header []string
	rows   [][]string
}

func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// parseTables finds every table (header, separator, rows) and checks their
// shape; any malformed table fails the test.
func parseTables(t *testing.T, doc string) []mdTable {
	t.Helper()
	var out []mdTable
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		tb := mdTable{header: splitRow(lines[i])}
		if i+1 >= len(lines) {
			t.Fatalf("table header without separator at line %d", i+1)
		}
		sep := splitRow(lines[i+1])
		if len(sep) != len(tb.header) {
			t.Fatalf("separator has %d cells, header %d", len(sep), len(tb.header))
		}
		for _, s := range sep {
			if !regexp.MustCompile(`^:?-{3,}:?$`).MatchString(s) {
				t.Fatalf("bad separator cell %q", s)
			}
		}
		i += 2
		for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			r := splitRow(lines[i])
			if len(r) != len(tb.header) {
				t.Fatalf("row %q has %d cells, header %d", lines[i], len(r), len(tb.header))
			}
			tb.rows = append(tb.rows, r)
		}
		if len(tb.rows) == 0 {
			t.Fatalf("table %v has no rows", tb.header)
		}
		out = append(out, tb)
	}
	return out
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return v
}

// checkNumericCells checks every measurement cell: "median [min, max]"
// with min ≤ median ≤ max and positive, ratio "r.rrx", difference numeric.
// A row may leave sides other than its last one empty ("—", a workload only
// that side runs); its ratio and difference cells are then "—" too.
func checkNumericCells(t *testing.T, tb mdTable) {
	t.Helper()
	for _, r := range tb.rows {
		empty, last := false, -1
		for j, h := range tb.header {
			if strings.HasSuffix(h, "median [min, max]") {
				last = j
				empty = empty || r[j] == "—"
			}
		}
		for j, h := range tb.header {
			cell := r[j]
			if empty && cell == "—" && j != last && (strings.HasSuffix(h, "median [min, max]") || strings.Contains(h, " / ") || strings.Contains(h, " − ")) {
				continue
			}
			switch {
			case strings.HasSuffix(h, "median [min, max]"):
				m := cellRe.FindStringSubmatch(cell)
				if m == nil {
					t.Fatalf("cell %q under %q is not 'median [min, max]'", cell, h)
				}
				med, lo, hi := atof(t, m[1]), atof(t, m[2]), atof(t, m[3])
				// Cells are rounded to three digits; allow that much slack.
				if lo <= 0 || lo > med*1.001 || med > hi*1.001 {
					t.Fatalf("cell %q: want 0 < min ≤ median ≤ max", cell)
				}
			case strings.Contains(h, " / "):
				m := ratioRe.FindStringSubmatch(cell)
				if m == nil || atof(t, m[1]) <= 0 {
					t.Fatalf("ratio cell %q under %q", cell, h)
				}
			case strings.Contains(h, " − "):
				if !numOnly.MatchString(cell) {
					t.Fatalf("difference cell %q", cell)
				}
			case h == "workload" || h == "size" || h == "unit":
				if cell == "" {
					t.Fatalf("empty %s cell in %v", h, r)
				}
			default:
				t.Fatalf("unexpected column %q", h)
			}
		}
	}
}

// maskNumbers replaces every digit run so two runs compare equal when only
// numbers differ.
func maskNumbers(s string) string {
	return regexp.MustCompile(`-?[0-9]+(?:[.,][0-9]+)*`).ReplaceAllString(s, "#")
}

func TestCommandsTinyAndReadme(t *testing.T) {
	tmp := t.TempDir()
	envs := filepath.Join(tmp, "envs")
	if err := os.Mkdir(envs, 0o755); err != nil {
		t.Fatal(err)
	}
	readme := filepath.Join(tmp, "README.md")
	prose := "# dlmdb-go\n\nProse owned by the lead.\n"
	if err := os.WriteFile(readme, []byte(prose), 0o644); err != nil {
		t.Fatal(err)
	}
	suites := bench.Suites()
	if len(suites) < 2 {
		t.Fatalf("only %d suites registered", len(suites))
	}
	// Each command on its own (as cmd/<Command> runs it), then benchall.
	for _, s := range suites {
		var out, errb bytes.Buffer
		code := bench.Main(s.Command, tinyArgs(envs), &out, &errb, s.ID)
		if code != 0 {
			t.Fatalf("%s exit %d:\n%s", s.Command, code, errb.String())
		}
		tables := parseTables(t, out.String())
		if len(tables) != 1 {
			t.Fatalf("%s printed %d tables", s.Command, len(tables))
		}
		checkNumericCells(t, tables[0])
		if !strings.Contains(out.String(), "quick") {
			t.Fatalf("%s: quick run not labelled", s.Command)
		}
	}
	run := func() string {
		var out, errb bytes.Buffer
		args := append(tinyArgs(envs), "-readme", readme)
		if code := bench.Main("benchall", args, &out, &errb); code != 0 {
			t.Fatalf("benchall exit %d:\n%s", code, errb.String())
		}
		b, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	first := run()
	if !strings.HasPrefix(first, prose) {
		t.Fatalf("README prose changed:\n%s", first)
	}
	tables := parseTables(t, first)
	if len(tables) != len(suites) {
		t.Fatalf("README has %d tables, want %d", len(tables), len(suites))
	}
	for _, tb := range tables {
		checkNumericCells(t, tb)
	}
	for _, s := range suites {
		open, close := bench.Markers(s.ID)
		i, j := strings.Index(first, open), strings.Index(first, close)
		if i < 0 || j < i {
			t.Fatalf("markers for %s missing", s.ID)
		}
		if !strings.Contains(first[i:j], "UTC on ") {
			t.Fatalf("section %s lacks the machine/date line", s.ID)
		}
	}
	second := run()
	if maskNumbers(first) != maskNumbers(second) {
		t.Fatalf("second run changed more than numbers:\n--- first\n%s\n--- second\n%s", first, second)
	}
	// Every temporary environment is gone.
	left, err := os.ReadDir(envs)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("temporary directories left behind: %v", left)
	}
}

func TestJSONOutput(t *testing.T) {
	var out, errb bytes.Buffer
	if code := bench.Main("dropin_bench", append(tinyArgs(t.TempDir()), "-json"), &out, &errb, "dropin"); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r bench.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out.String())
	}
	if len(r.Tables) != 1 || len(r.Tables[0].Rows) == 0 || !r.Quick {
		t.Fatalf("unexpected report: %+v", r)
	}
	for _, row := range r.Tables[0].Rows {
		rounds := 2 // tinyArgs
		if strings.HasPrefix(row.Name, "durable") {
			rounds *= 3 // many short rounds, see dropin.go
		}
		if len(row.Stats) != 2 || len(row.Stats[0].Rounds) != rounds || len(row.Stats[1].Rounds) != rounds || row.Ratio <= 0 {
			t.Fatalf("row %q: %+v", row.Name, row)
		}
	}
}

// corruptEngine wraps an engine and damages what it returns: with gets set
// it flips a byte in every value Get returns, otherwise it makes cursors
// skip one entry after the first.
type corruptEngine struct {
	bench.Engine
	gets bool
}
type corruptEnv struct {
	bench.Env
	gets bool
}
type corruptTxn struct {
	bench.Txn
	gets bool
}
type corruptCursor struct {
	bench.Cursor
	skipped, skippedMulti, skippedPut bool
}

func (e corruptEngine) Open(dir string, o bench.Options) (bench.Env, error) {
	env, err := e.Engine.Open(dir, o)
	if err != nil {
		return nil, err
	}
	return corruptEnv{env, e.gets}, nil
}

func (e corruptEnv) Begin(ro bool) (bench.Txn, error) {
	t, err := e.Env.Begin(ro)
	if err != nil {
		return nil, err
	}
	return corruptTxn{t, e.gets}, nil
}

func (x corruptTxn) Get(db bench.DB, key []byte) ([]byte, error) {
	v, err := x.Txn.Get(db, key)
	if !x.gets || err != nil || len(v) == 0 {
		return v, err
	}
	w := append([]byte(nil), v...)
	w[len(w)-1] ^= 1
	return w, nil
}

func (x corruptTxn) Cursor(db bench.DB) (bench.Cursor, error) {
	c, err := x.Txn.Cursor(db)
	if x.gets || err != nil {
		return c, err
	}
	return &corruptCursor{Cursor: c}, nil
}

func (c *corruptCursor) Next() ([]byte, []byte, error) {
	if !c.skipped {
		c.skipped = true
		c.Cursor.Next()
	}
	return c.Cursor.Next()
}

// NextMultiple skips one page of values, once.
func (c *corruptCursor) NextMultiple() ([]byte, error) {
	if !c.skippedMulti {
		c.skippedMulti = true
		c.Cursor.NextMultiple()
	}
	return c.Cursor.NextMultiple()
}

// Append drops one entry, once.
func (c *corruptCursor) Append(key, val []byte) error {
	if !c.skippedPut {
		c.skippedPut = true
		return nil
	}
	return c.Cursor.Append(key, val)
}

// AppendDup drops one value, once.
func (c *corruptCursor) AppendDup(key, val []byte) error {
	if !c.skippedPut {
		c.skippedPut = true
		return nil
	}
	return c.Cursor.AppendDup(key, val)
}

func TestWrongResultsFailLoudly(t *testing.T) {
	cases := []struct {
		suite, rows string
		gets        bool
		want        string
	}{
		{"dropin", "", true, "wrong"},
		{"startup", "", true, "wrong"},
		{"agentmem", "", true, "wrong value"},
		{"dropin", "full scan", false, "full scan saw"},
		{"dropin", "range scan", false, "range scans saw"},
		{"dropin", "promoted", false, "GET_MULTIPLE pass 1 read"},
		{"dropin", "AppendDup", false, "AppendDup load holds"},
		{"dropin", "Put.Append", false, "verify: 1999 entries"},
		{"agentmem", "recent", false, "recent-10"},
	}
	for _, tc := range cases {
		c := &bench.Config{Quick: true, Scale: 0.01, Rounds: 1, TmpDir: t.TempDir(), Ours: corruptEngine{bench.Stock, tc.gets}}
		if tc.rows != "" {
			c.Rows = regexp.MustCompile(tc.rows)
		}
		_, err := bench.Run(c, []string{tc.suite})
		if err == nil {
			t.Fatalf("%s %q: damaged results were not detected", tc.suite, tc.rows)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s %q: error %q does not mention %q", tc.suite, tc.rows, err, tc.want)
		}
	}
}

func TestKeysSortedAndValuesDistinct(t *testing.T) {
	k := bench.MakeKeys(1200)
	for i := 1; i < k.Len(); i++ {
		if bytes.Compare(k.At(i-1), k.At(i)) >= 0 {
			t.Fatalf("key %d does not sort after key %d", i, i-1)
		}
		if got, _ := strconv.Atoi(string(k.At(i))); got != i {
			t.Fatalf("key %d reads as %d", i, got)
		}
	}
	v := bench.MakeValues(100, 100)
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		if bench.ValueTag(v.At(i)) != bench.Tag(i) {
			t.Fatalf("value %d tag mismatch", i)
		}
		seen[string(v.At(i))] = true
	}
	if len(seen) != 100 {
		t.Fatal("values collide")
	}
	p := bench.Perm(1000, 3)
	hit := make([]bool, 1000)
	for _, x := range p {
		if hit[x] {
			t.Fatalf("perm repeats %d", x)
		}
		hit[x] = true
	}
}
