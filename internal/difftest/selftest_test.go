package difftest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// The harness must be able to fail: a deliberately broken engine (stock LMDB
// that silently corrupts one value in a few hundred puts) has to be caught, and
// the shrinker has to cut the sequence down.

type faultyEngine struct{ stockEngine }

func (faultyEngine) name() string { return "faulty" }

func (f faultyEngine) openEnv(path string, o envOpts) (tEnv, error) {
	e, err := f.stockEngine.openEnv(path, o)
	if err != nil {
		return nil, err
	}
	return faultyEnv{e.(*stockEnv)}, nil
}

type faultyEnv struct{ *stockEnv }

func (f faultyEnv) begin(parent tTxn, flags uint) (tTxn, error) {
	if p, ok := parent.(faultyTxn); ok {
		parent = p.stockTxn
	}
	t, err := f.stockEnv.begin(parent, flags)
	if err != nil {
		return nil, err
	}
	return faultyTxn{t.(*stockTxn)}, nil
}

type faultyTxn struct{ *stockTxn }

func (f faultyTxn) put(dbi uint32, key, val []byte, flags uint) error {
	if len(val) > 3 && fnv32(key)%300 == 7 {
		val = append([]byte(nil), val...)
		val[len(val)/2] ^= 0x40
	}
	return f.stockTxn.put(dbi, key, val, flags)
}

func TestHarnessCatchesFault(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base := t.TempDir()
	found := 0
	for seed := int64(1); seed <= 40 && found == 0; seed++ {
		ops := genOps(seed)
		mm, err := runOps(filepath.Join(base, "run"), faultyEngine{}, stockEngine{}, ops, fNoSync)
		if err != nil {
			t.Fatal(err)
		}
		if mm == nil {
			continue
		}
		found++
		small := shrink(filepath.Join(base, "shrink"), faultyEngine{}, stockEngine{}, ops, fNoSync, 300)
		mm2, err := runOps(filepath.Join(base, "again"), faultyEngine{}, stockEngine{}, small, fNoSync)
		if err != nil {
			t.Fatal(err)
		}
		if mm2 == nil {
			t.Fatalf("seed %d: shrunk sequence (%d ops) no longer fails", seed, len(small))
		}
		if len(small) > 10 {
			t.Errorf("seed %d: shrinker left %d of %d ops (%v)", seed, len(small), len(ops), mm2)
		}
		t.Logf("seed %d: fault found (%v), shrunk %d -> %d ops: %v", seed, mm, len(ops), len(small), mm2)
	}
	if found == 0 {
		t.Fatal("the differential harness never noticed a corrupted value in 40 sequences")
	}
}

// The crash classifier of the child-process tests: a signal, a Go runtime
// crash banner and a sanitizer report count as crashes; a plain failure
// (non-zero exit with ordinary output) and a clean exit do not.
func TestCrashedChildClassifier(t *testing.T) {
	for _, c := range []struct {
		script string
		crash  bool
	}{
		{"exit 0", false},
		{"echo FAIL: something; exit 1", false},
		{"kill -9 $$", true},
		{"echo '==42==ERROR: AddressSanitizer: heap-use-after-free'; exit 1", true},
		{"echo '==42==ERROR: LeakSanitizer: detected memory leaks'; exit 1", true},
		{"echo 'SIGSEGV: segmentation violation'; exit 2", true},
		{"echo 'fatal error: unexpected signal during runtime execution'; exit 2", true},
	} {
		out, err := exec.Command("sh", "-c", c.script).CombinedOutput()
		if got := crashedChild(err, string(out)); got != c.crash {
			t.Errorf("%q: crashedChild = %v, want %v (err %v)", c.script, got, c.crash, err)
		}
	}
}
