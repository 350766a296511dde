//go:build !dlmdb_standin

package bench

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

func TestCompressKeysLayout(t *testing.T) {
	keys := compressKeys(300)
	d := &compressDB{keys: keys, dups: 1}
	if got := string(d.key(0x12b)); got != "pppppppppppppppp000000000000012b" {
		t.Fatalf("key 0x12b = %q", got)
	}
	for i := 1; i < 300; i++ {
		if bytes.Compare(d.key(i-1), d.key(i)) >= 0 {
			t.Fatalf("key %d does not sort before key %d", i-1, i)
		}
	}
	// DLMDB's value: byte i of entry idx is (idx + i) & 0xff.
	if v := d.value(300, 0); v[0] != 300&0xff || v[63] != 363&0xff || len(v) != compressValLen {
		t.Fatalf("unique value 300 = %x", v)
	}
	// DLMDB's DUPSORT value: the key's index byte repeated, then the
	// version and the ordinal.
	dd := &compressDB{keys: keys, dups: 20}
	a := append([]byte(nil), dd.value(41, 1)...) // key 2, dup 1, version 1
	b := append([]byte(nil), dd.value(42, 0)...) // key 2, dup 2, version 0
	c := dd.value(42, 1)                         // key 2, dup 2, version 1
	if !bytes.Equal(a[:62], bytes.Repeat([]byte{2}, 62)) || a[62] != 1 || a[63] != 1 || !bytes.Equal(dd.key(41), dd.key(42)) {
		t.Fatalf("dup value 41 = %x", a)
	}
	if bytes.Compare(b, a) >= 0 || bytes.Compare(a, c) >= 0 {
		t.Fatalf("dup values do not sort by (version, ordinal): %x, %x, %x", b, a, c)
	}
	// The model's order follows that: key 2 with dup 2 at version 0 and
	// dup 1 at version 1 lists dup 2 first.
	dd.items, dd.live = 60, 60
	dd.gen = make([]uint8, 60)
	dd.gen[41] = 1
	order, keyStart := dd.modelOrder()
	if len(order) != 60 || keyStart[2] != 40 || keyStart[3] != 60 || order[40] != 40 || order[41] != 42 || order[59] != 41 {
		t.Fatalf("model order %v, key starts %v", order, keyStart)
	}
}

// Each layout's round passes on a good database, and every verification
// (random reads, range scans, the full walk, the entry count after a write
// phase) fails loudly once the database differs from what the suite wrote.
func TestCompressDetectsWrongAnswers(t *testing.T) {
	runtime.LockOSThread() // write transactions stay on one thread
	defer runtime.UnlockOSThread()
	c := &Config{Quick: true, Rounds: 1, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	sz := compressSizes{MapSize: 64 << 20}
	keys := compressKeys(400)
	for _, tc := range []struct {
		flags      uint
		dups, keys int
	}{
		{0, 1, 400},
		{ourslmdb.PrefixCompression, 1, 400},
		{ourslmdb.DupSort, 8, 50},
		{ourslmdb.DupSort | ourslmdb.PrefixCompression, 8, 50},
	} {
		items := tc.dups * tc.keys
		p := makeCompressPlan(items, tc.dups, 150, 120, 200, 6, 40, 7)
		out, err := compressRound(c, sz, keys, tc.flags, p, true)
		if err != nil {
			t.Fatalf("flags %#x: good round: %v", tc.flags, err)
		}
		if len(out) != len(compressMetrics) {
			t.Fatalf("flags %#x: %d metrics, want %d", tc.flags, len(out), len(compressMetrics))
		}
		for m, v := range out {
			if v <= 0 {
				t.Fatalf("flags %#x: metric %q = %v", tc.flags, compressMetrics[m].name, v)
			}
		}

		// Run the write phases, then change one read item's value behind
		// the suite's back.
		d, err := newCompressDB(c, sz, keys, tc.flags, tc.dups, items)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []func() error{
			func() error { _, err := d.load(p.order); return err },
			func() error { _, err := d.update(p.updates); return err },
			func() error { _, err := d.remove(p.deletes); return err },
			func() error { _, err := d.reinsert(p.deletes); return err },
		} {
			if err := f(); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.verify(true); err != nil {
			t.Fatalf("flags %#x: verify of a good database: %v", tc.flags, err)
		}
		victim := int(p.reads[0])
		stale := append([]byte(nil), d.value(victim, d.gen[victim]^3)...)
		mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error {
			if tc.dups > 1 {
				if err := txn.Del(d.dbi, d.key(victim), d.value(victim, d.gen[victim])); err != nil {
					return err
				}
			}
			return txn.Put(d.dbi, d.key(victim), stale, 0)
		})
		if _, err := d.reads(p.reads); !wrongAnswer(err) {
			t.Fatalf("flags %#x: reads of a changed value: %v, want a wrong-answer failure", tc.flags, err)
		}
		if err := d.verify(false); !wrongAnswer(err) {
			t.Fatalf("flags %#x: verify of a changed value: %v", tc.flags, err)
		}
		// Scans starting at the victim's key see the changed value.
		if _, err := d.scans([]int32{int32(victim / tc.dups * tc.dups)}, p.scanLen); !wrongAnswer(err) {
			t.Fatalf("flags %#x: scan over a changed value: %v", tc.flags, err)
		}
		// An entry the model does not know: the count check and the walk fail.
		extra := d.key(items - 1)
		mustUpdate(t, d.env, func(txn *ourslmdb.Txn) error {
			return txn.Put(d.dbi, append(append([]byte(nil), extra...), 'x'), stale, 0)
		})
		if err := d.checkEntries("test"); !wrongAnswer(err) {
			t.Fatalf("flags %#x: entry count with an extra entry: %v", tc.flags, err)
		}
		if _, err := d.scans([]int32{int32(items - tc.dups)}, p.scanLen); !wrongAnswer(err) {
			t.Fatalf("flags %#x: scan over an extra entry: %v", tc.flags, err)
		}
		// A DBI of the other layout is refused.
		d.flags ^= ourslmdb.PrefixCompression
		if err := d.verify(false); !wrongAnswer(err) {
			t.Fatalf("flags %#x: verify with the other layout's flags: %v", tc.flags, err)
		}
		if err := d.close(); err != nil {
			t.Fatal(err)
		}
	}
}

// compress_bench's JSON at a tiny size: one table, 20 rows, each with both
// sides, every round kept, a positive ratio.
func TestCompressSuiteJSON(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-quick", "-scale", "0.01", "-rounds", "2", "-tmpdir", t.TempDir(), "-json"}
	if code := Main("compress_bench", args, &out, &errb, "compress"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	if len(r.Tables) != 1 || r.Tables[0].ID != "compress" || len(r.Tables[0].Rows) != 2*len(compressMetrics) {
		t.Fatalf("unexpected report: %+v", r)
	}
	for _, row := range r.Tables[0].Rows {
		if len(row.Stats) != 2 || len(row.Stats[0].Rounds) != 2 || len(row.Stats[1].Rounds) != 2 || row.Ratio <= 0 {
			t.Fatalf("row %q: %+v", row.Name, row)
		}
	}
}
