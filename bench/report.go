package bench

import (
	"fmt"
	"strings"
	"time"
)

// Row is one line of a comparison table: a workload, its size, the unit of
// the numbers and one Stats per side (in the table's side order).
type Row struct {
	Name  string  `json:"name"`
	Size  string  `json:"size"`
	Unit  string  `json:"unit"`
	Stats []Stats `json:"stats"`
	// Ratio is Stats[0].Median / Stats[1].Median.
	Ratio float64 `json:"ratio"`
	// Ratios, in tables of more than two sides, is Stats[0].Median over
	// the median of each further side (Ratios[0] == Ratio).
	Ratios []float64 `json:"ratios,omitempty"`
}

// Table is the result of one suite; ID names its README marker pair.
type Table struct {
	ID    string   `json:"id"`
	Title string   `json:"title"`
	Sides []string `json:"sides"`
	// Diff adds a column with the difference of the two medians.
	Diff  bool     `json:"-"`
	Rows  []Row    `json:"rows"`
	Notes []string `json:"notes"`
}

// Add appends a row and computes its ratio.
func (t *Table) Add(name, size, unit string, stats ...Stats) {
	r := Row{Name: name, Size: size, Unit: unit, Stats: stats}
	if len(stats) >= 2 && stats[1].Median != 0 {
		r.Ratio = stats[0].Median / stats[1].Median
	}
	if len(stats) > 2 {
		for _, s := range stats[1:] {
			var q float64
			if s.Median != 0 {
				q = stats[0].Median / s.Median
			}
			r.Ratios = append(r.Ratios, q)
		}
	}
	t.Rows = append(t.Rows, r)
}

// Markdown renders the table followed by its notes.
func (t *Table) Markdown() string {
	var b strings.Builder
	head := []string{"workload", "size", "unit"}
	align := []string{"---", "---", "---"}
	for _, s := range t.Sides {
		head = append(head, s+" median [min, max]")
		align = append(align, "---:")
	}
	if len(t.Sides) >= 2 {
		if t.Diff {
			head = append(head, t.Sides[0]+" − "+t.Sides[1])
			align = append(align, "---:")
		}
		head = append(head, t.Sides[0]+" / "+t.Sides[1])
		align = append(align, "---:")
		for _, s := range t.Sides[min(2, len(t.Sides)):] {
			head = append(head, t.Sides[0]+" / "+s)
			align = append(align, "---:")
		}
	}
	writeRow(&b, head)
	writeRow(&b, align)
	for _, r := range t.Rows {
		cells := []string{r.Name, r.Size, r.Unit}
		for _, s := range r.Stats {
			cells = append(cells, s.Cell())
		}
		if len(t.Sides) >= 2 {
			if t.Diff {
				if len(r.Stats[0].Rounds) == 0 || len(r.Stats[1].Rounds) == 0 {
					cells = append(cells, "—")
				} else {
					cells = append(cells, FormatNum(r.Stats[0].Median-r.Stats[1].Median))
				}
			}
			cells = append(cells, ratioCell(r.Ratio))
			for i := 1; i < len(r.Ratios); i++ {
				cells = append(cells, ratioCell(r.Ratios[i]))
			}
		}
		writeRow(&b, cells)
	}
	if len(t.Notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.Notes {
			b.WriteString(n)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// ratioCell renders a ratio, or "—" where a side has no measurement (the
// ratio is 0 then).
func ratioCell(q float64) string {
	if q == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2fx", q)
}

func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" ")
		b.WriteString(strings.ReplaceAll(c, "|", `\|`))
		b.WriteString(" |")
	}
	b.WriteString("\n")
}

// Report is everything one run measured.
type Report struct {
	Machine   Machine   `json:"machine"`
	Quick     bool      `json:"quick"`
	Scale     float64   `json:"scale"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LoadStart float64   `json:"load1_start"`
	LoadEnd   float64   `json:"load1_end"`
	Ours      string    `json:"ours"`
	Stock     string    `json:"stock"`
	StandIn   bool      `json:"ours_is_stand_in"`
	Tables    []*Table  `json:"tables"`
}

// Header is the line written above every table: machine, date (UTC), size
// preset and load.
func (r *Report) Header() string {
	sizes := "full sizes"
	if r.Quick {
		sizes = "**quick** sizes (`make bench-quick`)"
	}
	if r.Scale != 1 {
		sizes += fmt.Sprintf(", scaled ×%g", r.Scale)
	}
	h := fmt.Sprintf("_Measured %s UTC on %s; %s; 1-min load %.2f → %.2f._",
		r.Start.UTC().Format("2006-01-02 15:04"), r.Machine, sizes, r.LoadStart, r.LoadEnd)
	if r.StandIn {
		h += "\n\n**WARNING: \"ours\" is a STAND-IN (stock lmdb-go), not dlmdb-go — these numbers compare lmdb-go with itself.**"
	}
	return h
}

// Section is the text spliced between a table's README markers.
func (r *Report) Section(t *Table) string {
	return fmt.Sprintf("%s\n\n%s", r.Header(), t.Markdown())
}

// Markdown renders the whole report as printed on stdout.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# dlmdb-go benchmarks\n\n")
	fmt.Fprintf(&b, "- machine: %s (%s)\n", r.Machine, r.Machine.OS)
	fmt.Fprintf(&b, "- started %s UTC, finished %s UTC\n",
		r.Start.UTC().Format("2006-01-02 15:04:05"), r.End.UTC().Format("15:04:05"))
	fmt.Fprintf(&b, "- 1-minute load average: %.2f at start, %.2f at end\n", r.LoadStart, r.LoadEnd)
	fmt.Fprintf(&b, "- ours: %s\n- lmdb-go: %s\n", r.Ours, r.Stock)
	if r.Quick {
		b.WriteString("- QUICK run: reduced sizes\n")
	}
	for _, t := range r.Tables {
		fmt.Fprintf(&b, "\n## %s (`%s`)\n\n%s\n\n%s", t.Title, t.ID, r.Header(), t.Markdown())
	}
	return b.String()
}
