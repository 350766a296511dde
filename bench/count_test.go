//go:build !dlmdb_standin

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

func TestDecimalOrderAndRoundTrip(t *testing.T) {
	tab := makeDecimals('k', countKeyWidth, 1500)
	for i := 0; i < 1500; i++ {
		if got := decimalValue(tab.At(i), 'k'); got != i {
			t.Fatalf("decimal %d reads back as %d (%q)", i, got, tab.At(i))
		}
		if i > 0 && bytes.Compare(tab.At(i-1), tab.At(i)) >= 0 {
			t.Fatalf("%q does not sort before %q", tab.At(i-1), tab.At(i))
		}
	}
	if decimalValue([]byte("x000001"), 'k') != -1 || decimalValue([]byte("k00a"), 'k') != -1 {
		t.Fatal("malformed decimals accepted")
	}
}

// wrongAnswer reports whether err is a verification failure of a side.
func wrongAnswer(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "want"))
}

func mustUpdate(t *testing.T, env *ourslmdb.Env, fn func(txn *ourslmdb.Txn) error) {
	t.Helper()
	if err := env.Update(fn); err != nil {
		t.Fatal(err)
	}
}

// Every side of count_bench accepts the right answers and fails loudly once
// the database no longer holds what the suite loaded into it.
// (On both layouts of countLayouts: plain and prefix-compressed.)
func TestCountSidesDetectWrongAnswers(t *testing.T) {
	for _, lay := range countLayouts {
		t.Run(fmt.Sprintf("flags=%#x", lay.flags), func(t *testing.T) { testCountSides(t, lay.flags) })
	}
}

func testCountSides(t *testing.T, extra uint) {
	runtime.LockOSThread() // write transactions stay on one thread
	defer runtime.UnlockOSThread()
	c := &Config{Quick: true, Scale: 0.01, Rounds: 1, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	const n, dupKeys, dups = 200, 60, 5
	keys := makeDecimals('k', countKeyWidth, n)
	vals := makeDecimals('v', countKeyWidth, n)
	dupVals := makeDecimals('d', countDupWidth, dups)
	u, _, err := countLoadAs(c, true, extra, 1, keys, vals, dupVals, Perm(n, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer u.close()
	dd, _, err := countLoadAs(c, true, extra, dups, keys, vals, dupVals, Perm(dupKeys, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer dd.close()
	if err := u.verify(keys, vals, dupVals, true); err != nil {
		t.Fatal(err)
	}
	if err := dd.verify(keys, vals, dupVals, true); err != nil {
		t.Fatal(err)
	}
	u.counted = false
	if err := u.verify(keys, vals, dupVals, false); err == nil || !strings.Contains(err.Error(), "counted") {
		t.Fatalf("a counted database passed as uncounted: %v", err)
	}
	u.counted = true
	u.extra ^= ourslmdb.PrefixCompression
	if err := u.verify(keys, vals, dupVals, false); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Fatalf("a database of the other layout passed: %v", err)
	}
	u.extra ^= ourslmdb.PrefixCompression

	ranges := []countRange{{0, 30}, {17, 59}}
	ranks := []uint64{5, 150, 198}
	rw, rc := rangeSides(u, keys, ranges)
	rs := rankSides(u, keys, vals, ranks, 2)
	dw, dc := dupSides(dd, keys, ranges)
	sides := []Side{rw, rc, rs.walk, rs.cursorRank, rs.txnRank, rs.keyWalk, rs.keyRank, dw, dc}
	for _, s := range sides {
		if v, err := s.Measure(0); err != nil || v <= 0 {
			t.Fatalf("%s on a good database: %v, %v", s.Name, v, err)
		}
	}

	// Delete key 0 (inside the first range, and before every rank) and one
	// duplicate of key 20 behind the suite's back.
	mustUpdate(t, u.env, func(txn *ourslmdb.Txn) error { return txn.Del(u.dbi, keys.At(0), nil) })
	mustUpdate(t, dd.env, func(txn *ourslmdb.Txn) error { return txn.Del(dd.dbi, keys.At(20), dupVals.At(3)) })
	for _, s := range sides {
		if _, err := s.Measure(1); !wrongAnswer(err) {
			t.Fatalf("%s on a damaged database: err %v, want a wrong-answer failure", s.Name, err)
		}
	}
	if err := u.verify(keys, vals, dupVals, false); !wrongAnswer(err) {
		t.Fatalf("verify after a delete: %v", err)
	}
}

func TestSampleSidesDetectWrongAnswers(t *testing.T) {
	runtime.LockOSThread() // write transactions stay on one thread
	defer runtime.UnlockOSThread()
	c := &Config{Quick: true, Scale: 0.01, Rounds: 1, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	sz := sampleSizes{Entries: 500, Samples: 10, Stride: 50, Batch: 120, Dups: 4, Rounds: 1, MapSize: 64 << 20}
	for _, lay := range countLayouts {
		for _, dups := range []int{1, sz.Dups} {
			d, _, err := samplePopulateAs(c, sz, dups, lay.flags)
			if err != nil {
				t.Fatal(err)
			}
			scan, ranked := sampleSides(d, sz)
			for _, s := range []Side{scan, ranked} {
				if v, err := s.Measure(0); err != nil || v <= 0 {
					t.Fatalf("dups %d: %s on a good database: %v, %v", dups, s.Name, v, err)
				}
			}
			key, val := make([]byte, sampleWidth), make([]byte, sampleWidth)
			decimal(key, 'k', 0)
			decimal(val, 'v', 0)
			mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error { return txn.Del(d.dbi, key, val) })
			for _, s := range []Side{scan, ranked} {
				if _, err := s.Measure(1); !wrongAnswer(err) {
					t.Fatalf("dups %d: %s on a damaged database: err %v, want a wrong-answer failure", dups, s.Name, err)
				}
			}
			if err := d.verify(); !wrongAnswer(err) {
				t.Fatalf("dups %d: verify after a delete: %v", dups, err)
			}
			d.extra ^= ourslmdb.PrefixCompression
			if err := d.verify(); err == nil || !strings.Contains(err.Error(), "prefix") {
				t.Fatalf("dups %d: a database of the other layout passed: %v", dups, err)
			}
			if err := d.close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// The two commands' JSON: one table, every row with both sides, every round
// kept and a positive ratio.
func TestCountedSuitesJSON(t *testing.T) {
	for _, tc := range []struct {
		cmd, id string
		rows    int
	}{{"count_bench", "count", 14}, {"sample_bench", "sample", 4}} {
		var out, errb bytes.Buffer
		args := []string{"-quick", "-scale", "0.01", "-rounds", "2", "-tmpdir", t.TempDir(), "-json"}
		if code := Main(tc.cmd, args, &out, &errb, tc.id); code != 0 {
			t.Fatalf("%s exit %d:\n%s", tc.cmd, code, errb.String())
		}
		var r Report
		if err := json.Unmarshal(out.Bytes(), &r); err != nil {
			t.Fatalf("%s: bad JSON: %v", tc.cmd, err)
		}
		if len(r.Tables) != 1 || r.Tables[0].ID != tc.id || len(r.Tables[0].Rows) != tc.rows || !r.Quick {
			t.Fatalf("%s: unexpected report: %+v", tc.cmd, r)
		}
		for _, row := range r.Tables[0].Rows {
			if len(row.Stats) != 2 || len(row.Stats[0].Rounds) != 2 || len(row.Stats[1].Rounds) != 2 || row.Ratio <= 0 {
				t.Fatalf("%s row %q: %+v", tc.cmd, row.Name, row)
			}
		}
	}
}
