//go:build !dlmdb_standin

package bench

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

const leaf2TestBase = ourslmdb.DupSort | ourslmdb.Counted | ourslmdb.PrefixCompression

func leaf2TestSizes() leaf2Sizes {
	return leaf2Sizes{Keys: 6, Dups: 300, Lookups: 400, Inserts: 200, TxnVals: 700, Passes: 2, Rounds: 1, MapSize: 64 << 20}
}

// A whole round passes on both layouts, with a value for every row the
// layout has and none for the DUPFIXED-only rows on the other.
func TestLeaf2RoundBothLayouts(t *testing.T) {
	runtime.LockOSThread() // write transactions stay on one thread
	defer runtime.UnlockOSThread()
	c := &Config{Quick: true, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	sz := leaf2TestSizes()
	p := makeLeaf2Plans(sz, 3)
	for _, fl := range []uint{leaf2TestBase, leaf2TestBase | ourslmdb.DupFixed} {
		out, err := leaf2Round(c, sz, fl, p)
		if err != nil {
			t.Fatalf("flags %#x: %v", fl, err)
		}
		for m, v := range out {
			if has := !leaf2Metrics[m].leaf2Only || fl&ourslmdb.DupFixed != 0; has != (v > 0) {
				t.Fatalf("flags %#x: metric %q = %v", fl, leaf2Metrics[m].name, v)
			}
		}
	}
}

// Every read and write check of leaf2_bench fails loudly once the DBI holds
// something other than what the suite wrote.
func TestLeaf2DetectsWrongAnswers(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := &Config{Quick: true, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	sz := leaf2TestSizes()
	p := makeLeaf2Plans(sz, 5)
	for _, fl := range []uint{leaf2TestBase, leaf2TestBase | ourslmdb.DupFixed} {
		d, err := newLeaf2DB(c, sz, fl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.appendAll(); err != nil {
			t.Fatal(err)
		}
		modes := []int{leaf2ScanNextDup, leaf2ScanListDup, leaf2ScanListFixed}
		if d.fixed() {
			modes = append(modes, leaf2ScanMultiple)
		}
		for _, m := range modes {
			if _, err := d.scans(d.dbi, m); err != nil {
				t.Fatalf("flags %#x mode %d on good data: %v", fl, m, err)
			}
		}
		if _, err := d.lookups(p.lookups); err != nil {
			t.Fatalf("flags %#x lookups on good data: %v", fl, err)
		}
		// Replace one looked-up base value by a different 8-byte value:
		// the count holds, scans and lookups must fail.
		idx := int(p.lookups[0])
		k, i := idx/sz.Dups, idx%sz.Dups
		var a, b [8]byte
		mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error {
			if err := txn.Del(d.dbi, d.key(k), leaf2Val(a[:], k, 2*i)); err != nil {
				return err
			}
			return txn.Put(d.dbi, d.key(k), leaf2Val(b[:], k, 1<<30), 0)
		})
		for _, m := range modes {
			if _, err := d.scans(d.dbi, m); !wrongAnswer(err) {
				t.Fatalf("flags %#x mode %d with a changed value: %v, want a wrong-answer failure", fl, m, err)
			}
		}
		if _, err := d.lookups(p.lookups); !wrongAnswer(err) {
			t.Fatalf("flags %#x lookups with a changed value: %v", fl, err)
		}
		// An absent probe that the DBI holds: the lookups see it.
		mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error {
			if err := txn.Del(d.dbi, d.key(k), leaf2Val(b[:], k, 1<<30)); err != nil {
				return err
			}
			return txn.Put(d.dbi, d.key(k), leaf2Val(a[:], k, 2*i), 0)
		})
		if _, err := d.lookups(p.lookups); err != nil {
			t.Fatalf("flags %#x lookups after restoring: %v", fl, err)
		}
		j := 7 // lookups[7] is probed as absent
		k7, i7 := int(p.lookups[j])/sz.Dups, int(p.lookups[j])%sz.Dups
		mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error {
			return txn.Put(d.dbi, d.key(k7), leaf2Val(b[:], k7, 2*i7+1), 0)
		})
		if _, err := d.lookups(p.lookups); !wrongAnswer(err) {
			t.Fatalf("flags %#x lookups finding an absent pair: %v", fl, err)
		}
		// The extra value breaks the insert phase's count and the delete
		// phase's final scan.
		if _, err := d.interior(p.inserts); !wrongAnswer(err) {
			t.Fatalf("flags %#x interior insert with an extra value: %v", fl, err)
		}
		if _, err := d.exactDelete(p.inserts); !wrongAnswer(err) {
			t.Fatalf("flags %#x exact delete with an extra value: %v", fl, err)
		}
		if err := d.close(); err != nil {
			t.Fatal(err)
		}
	}
}

// leaf2_bench's JSON at a tiny size: one table with every row, both sides
// where both run, every round kept; the DUPFIXED-only rows have an empty
// left side and render as "—".
func TestLeaf2SuiteJSON(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-quick", "-scale", "0.01", "-rounds", "2", "-tmpdir", t.TempDir(), "-json"}
	if code := Main("leaf2_bench", args, &out, &errb, "leaf2"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	if len(r.Tables) != 1 || r.Tables[0].ID != "leaf2" || len(r.Tables[0].Rows) != len(leaf2Metrics) {
		t.Fatalf("unexpected report: %+v", r)
	}
	for m, row := range r.Tables[0].Rows {
		left := 2
		if leaf2Metrics[m].leaf2Only {
			left = 0
		}
		if len(row.Stats) != 2 || len(row.Stats[0].Rounds) != left || len(row.Stats[1].Rounds) != 2 || (row.Ratio > 0) != (left > 0) {
			t.Fatalf("row %q: %+v", row.Name, row)
		}
	}
	md := r.Tables[0].Markdown()
	if !bytes.Contains([]byte(md), []byte("| — |")) {
		t.Fatalf("DUPFIXED-only rows not rendered with —:\n%s", md)
	}
}
