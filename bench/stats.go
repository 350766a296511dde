package bench

import (
	"fmt"
	"sort"
)

// Stats summarises the rounds of one side of a comparison. Rounds keeps
// every measurement in the order it was taken; none is dropped.
type Stats struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Rounds []float64 `json:"rounds"`
}

// Summarize computes median, minimum and maximum of v (the mean of the two
// middle values for an even count).
func Summarize(v []float64) Stats {
	s := Stats{Rounds: append([]float64(nil), v...)}
	if len(v) == 0 {
		return s
	}
	sorted := append([]float64(nil), v...)
	sort.Float64s(sorted)
	n := len(sorted)
	s.Min, s.Max = sorted[0], sorted[n-1]
	if n%2 == 1 {
		s.Median = sorted[n/2]
	} else {
		s.Median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	return s
}

// Side is one contender of an alternating comparison. Measure runs round r
// and returns its value (per operation, in the unit of the comparison);
// setup and verification belong inside Measure but outside its timer.
type Side struct {
	Name    string
	Measure func(round int) (float64, error)
}

// Alternate runs rounds rounds over the sides. Round r starts with side
// r mod len(sides) and continues in order, so with two sides the order is
// A B, B A, A B, ... Every value is kept. progress, if not nil, receives one
// line per measurement.
func Alternate(rounds int, sides []Side, progress func(string)) ([]Stats, error) {
	vals := make([][]float64, len(sides))
	for r := 0; r < rounds; r++ {
		for j := range sides {
			i := (r + j) % len(sides)
			v, err := sides[i].Measure(r)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", sides[i].Name, r+1, err)
			}
			vals[i] = append(vals[i], v)
			if progress != nil {
				progress(fmt.Sprintf("round %d/%d %s: %s", r+1, rounds, sides[i].Name, FormatNum(v)))
			}
		}
	}
	out := make([]Stats, len(sides))
	for i := range vals {
		out[i] = Summarize(vals[i])
	}
	return out, nil
}

// FormatNum prints v with three significant digits (at least no decimals
// for values of 100 and above), without thousands separators.
func FormatNum(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// Cell renders "median [min, max]", or "—" for a side that has no
// measurement in a row (a workload only one side can run).
func (s Stats) Cell() string {
	if len(s.Rounds) == 0 {
		return "—"
	}
	return fmt.Sprintf("%s [%s, %s]", FormatNum(s.Median), FormatNum(s.Min), FormatNum(s.Max))
}
