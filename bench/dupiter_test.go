//go:build !dlmdb_standin

package bench

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// Both loops of dup_iter_bench pass on the loaded DBI and fail loudly once
// one value differs, one is missing, or one is added.
func TestDupIterDetectsWrongAnswers(t *testing.T) {
	runtime.LockOSThread() // write transactions stay on one thread
	defer runtime.UnlockOSThread()
	c := &Config{Quick: true, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	sz := dupIterSizes{Keys: 60, Dups: 20, Passes: 2, Rounds: 1, MapSize: 64 << 20}
	d, err := openDupIter(c, sz)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	for _, list := range []bool{false, true} {
		if v, err := d.measure(list); err != nil || v <= 0 {
			t.Fatalf("list=%v on a good DBI: %v, %v", list, v, err)
		}
	}
	var buf, other [32]byte
	const k, j = 17, 9
	orig := append([]byte(nil), dupIterValue(buf[:], k, j)...)
	// Same ordinal, one payload byte changed (or added): the count holds,
	// the checksum must not.
	changed := append(dupIterValue(other[:], k, j), 0xee)
	if bytes.Equal(orig, changed) {
		t.Fatal("test value did not change")
	}
	mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error {
		if err := txn.Del(d.dbi, d.key(k), orig); err != nil {
			return err
		}
		return txn.Put(d.dbi, d.key(k), changed, 0)
	})
	for _, list := range []bool{false, true} {
		if _, err := d.measure(list); !wrongAnswer(err) {
			t.Fatalf("list=%v with a changed value: %v, want a wrong-answer failure", list, err)
		}
	}
	// A missing value: the entry count check refuses the DBI.
	mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error { return txn.Del(d.dbi, d.key(k), changed) })
	for _, list := range []bool{false, true} {
		if _, err := d.measure(list); !wrongAnswer(err) {
			t.Fatalf("list=%v with a missing value: %v", list, err)
		}
	}
	// The original back: good again (the model is what the loops compare with).
	mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error { return txn.Put(d.dbi, d.key(k), orig, 0) })
	for _, list := range []bool{false, true} {
		if _, err := d.measure(list); err != nil {
			t.Fatalf("list=%v after restoring the value: %v", list, err)
		}
	}
}

// dup_iter_bench's JSON at a tiny size: one row, both sides, every round.
func TestDupIterSuiteJSON(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-quick", "-scale", "0.01", "-rounds", "2", "-tmpdir", t.TempDir(), "-json"}
	if code := Main("dup_iter_bench", args, &out, &errb, "dupiter"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	if len(r.Tables) != 1 || r.Tables[0].ID != "dupiter" || len(r.Tables[0].Rows) != 1 {
		t.Fatalf("unexpected report: %+v", r)
	}
	row := r.Tables[0].Rows[0]
	if len(row.Stats) != 2 || len(row.Stats[0].Rounds) != 2 || len(row.Stats[1].Rounds) != 2 || row.Ratio <= 0 {
		t.Fatalf("row %q: %+v", row.Name, row)
	}
}
