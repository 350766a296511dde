//go:build !dlmdb_standin

package bench

import (
	"bytes"
	"encoding/json"
	"runtime"
	"testing"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// inmemFold changes with any byte of a value, with its length and with the
// order of the values folded.
func TestInmemFoldSensitive(t *testing.T) {
	d := newInmemData(64)
	a, b := d.vals.At(3), d.vals.At(4)
	base := inmemFold(inmemFold(0, a), b)
	if inmemFold(inmemFold(0, b), a) == base {
		t.Fatal("swapping two values keeps the checksum")
	}
	for i := range a {
		c := append([]byte(nil), a...)
		c[i] ^= 0x40
		if inmemFold(inmemFold(0, c), b) == base {
			t.Fatalf("flipping byte %d keeps the checksum", i)
		}
	}
	if inmemFold(inmemFold(0, a[:63]), b) == base || inmemFold(0, a) == inmemFold(inmemFold(0, a), nil) {
		t.Fatal("a shorter or an extra empty value keeps the checksum")
	}
	// keys are big-endian: key order is numeric order
	for i := 1; i < d.n; i++ {
		if bytes.Compare(d.key(i-1), d.key(i)) >= 0 {
			t.Fatalf("key %d does not sort after key %d", i, i-1)
		}
	}
}

// One round of each side reads back the model's checksum, and a round whose
// read disagrees with the model fails loudly.
func TestInmemRoundVerifies(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := &Config{Quick: true, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	sz := inmemSizes{N: 3000, Rounds: 1, Passes: 2, MapSize: 3000 * inmemMapPerEntry}
	d := newInmemData(sz.N)
	for _, inMem := range []bool{false, true} {
		w, r, sum, err := inmemRound(c, sz, d, inMem)
		if err != nil || w <= 0 || r <= 0 || sum != d.wantGets {
			t.Fatalf("inMem=%v: %v %v %#x %v (want sum %#x)", inMem, w, r, sum, err, d.wantGets)
		}
		bad := *d
		bad.wantGets ^= 1
		if _, _, _, err := inmemRound(c, sz, &bad, inMem); !wrongAnswer(err) {
			t.Fatalf("inMem=%v: a model that disagrees was accepted: %v", inMem, err)
		}
	}
}

// An env that is not what its side claims is refused.
func TestInmemCheckKind(t *testing.T) {
	c := &Config{Quick: true, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	mem, err := openInmemEnv(c, true, 4<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer mem.close()
	if err := mem.checkKind(10); err != nil {
		t.Fatalf("InMemory env: %v", err)
	}
	file, err := openInmemEnv(c, false, 4<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer file.close()
	// an empty data file is too small for 100,000 entries
	if err := file.checkKind(100_000); !wrongAnswer(err) {
		t.Fatalf("file-backed env with an empty data file: %v", err)
	}
	// an in-memory env under a file-backed label
	liar := &inmemEnv{env: mem.env, dir: file.dir}
	if err := liar.checkKind(10); !wrongAnswer(err) {
		t.Fatalf("in-memory env labelled file-backed: %v", err)
	}
}

// Both scan sides pass on the loaded DB and fail loudly once one value is
// changed or one entry is missing.
func TestInmemScanDetectsWrongAnswers(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := &Config{Quick: true, TmpDir: t.TempDir()}
	defer c.RemoveTemps()
	d := newInmemData(2000)
	for _, inMem := range []bool{false, true} {
		e, err := openInmemEnv(c, inMem, 4<<20, ourslmdb.NoSync)
		if err != nil {
			t.Fatal(err)
		}
		_, dbi, err := inmemWrite(e.env, d)
		if err != nil {
			t.Fatal(err)
		}
		for _, armed := range []bool{false, true} {
			if v, err := scanPasses(e.env, dbi, d, 2, armed); err != nil || v <= 0 {
				t.Fatalf("inMem=%v armed=%v on a good DB: %v, %v", inMem, armed, v, err)
			}
		}
		const k = 777
		changed := append([]byte(nil), d.vals.At(k)...)
		changed[40] ^= 1
		mustUpdate(t, e.env, func(txn *ourslmdb.Txn) error { return txn.Put(dbi, d.key(k), changed, 0) })
		for _, armed := range []bool{false, true} {
			if _, err := scanPasses(e.env, dbi, d, 2, armed); !wrongAnswer(err) {
				t.Fatalf("inMem=%v armed=%v with a changed value: %v", inMem, armed, err)
			}
		}
		if _, h, err := inmemRead(e.env, dbi, d); err != nil || h == d.wantGets {
			t.Fatalf("inMem=%v: gets with a changed value: %#x, %v", inMem, h, err)
		}
		mustUpdate(t, e.env, func(txn *ourslmdb.Txn) error { return txn.Del(dbi, d.key(k), nil) })
		for _, armed := range []bool{false, true} {
			if _, err := scanPasses(e.env, dbi, d, 2, armed); !wrongAnswer(err) {
				t.Fatalf("inMem=%v armed=%v with a missing entry: %v", inMem, armed, err)
			}
		}
		if _, _, err := inmemRead(e.env, dbi, d); !ourslmdb.IsNotFound(err) {
			t.Fatalf("inMem=%v: gets with a missing entry: %v", inMem, err)
		}
		if err := e.close(); err != nil {
			t.Fatal(err)
		}
	}
}

// inmem_bench's JSON at a tiny size: both tables, both sides, every round
// (the scan table runs 3× the rounds).
func TestInmemSuiteJSON(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"-quick", "-scale", "0.01", "-rounds", "2", "-tmpdir", t.TempDir(), "-json"}
	if code := Main("inmem_bench", args, &out, &errb, "inmem", "inmemscan"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	var r Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bad JSON: %v", err)
	}
	if len(r.Tables) != 2 || r.Tables[0].ID != "inmem" || r.Tables[1].ID != "inmemscan" {
		t.Fatalf("unexpected report: %+v", r)
	}
	for ti, rounds := range []int{2, 6} {
		tb := r.Tables[ti]
		if len(tb.Rows) != 2 {
			t.Fatalf("%s: %d rows", tb.ID, len(tb.Rows))
		}
		for _, row := range tb.Rows {
			if len(row.Stats) != 2 || len(row.Stats[0].Rounds) != rounds || len(row.Stats[1].Rounds) != rounds || row.Ratio <= 0 {
				t.Fatalf("%s row %q: %+v", tb.ID, row.Name, row)
			}
		}
	}
}
