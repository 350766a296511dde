//go:build dlmdb_tools

// A search tool, not a check: go test -tags dlmdb_tools ./internal/difftest -run TestCrashMinimise -difftest.crashmaster=N

package difftest

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool more than a test: with -difftest.crashmaster=M it replays the
// sequences TestDifferentialDupSort (or, with -difftest.crashplain,
// TestDifferential) would generate from master seed M, each in a child
// process, finds the first one that crashes an engine, and shrinks it with
// more children. Without the flag it is skipped.

var (
	flagCrashMaster = flag.Int64("difftest.crashmaster", 0, "find and shrink a crashing differential sequence")
	flagCrashPlain  = flag.Bool("difftest.crashplain", false, "with -difftest.crashmaster: plain DBs")
	flagCrashEngine = flag.String("difftest.crashengine", "stock", "engine under test in the replay: stock or ours")
)

type jsonOp struct {
	K    opKind
	DB   int
	Slot int
	Key  []byte
	Val  []byte
	Fl   uint
}

func init() {
	childRoles["ops-file"] = func() error {
		b, err := os.ReadFile(os.Getenv("DIFFTEST_OPS"))
		if err != nil {
			return err
		}
		var jops []jsonOp
		if err := json.Unmarshal(b, &jops); err != nil {
			return err
		}
		ops := make([]op, len(jops))
		for i, j := range jops {
			ops[i] = op{kind: j.K, db: j.DB, slot: j.Slot, key: j.Key, val: j.Val, flags: j.Fl}
		}
		a := engine(stockEngine{})
		if os.Getenv("DIFFTEST_ENGINE") == "ours" {
			a = subject
		}
		dir, err := os.MkdirTemp("", "opsfile")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		mm, err := runOps(dir, a, stockEngine{}, ops, fNoSync)
		if err != nil {
			return err
		}
		fmt.Println("MISMATCH", mm)
		return nil
	}
}

func crashes(t *testing.T, dir string, ops []op) bool {
	jops := make([]jsonOp, len(ops))
	for i, o := range ops {
		jops[i] = jsonOp{o.kind, o.db, o.slot, o.key, o.val, o.flags}
	}
	b, _ := json.Marshal(jops)
	p := filepath.Join(dir, "ops.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	o := execChild("ops-file", "DIFFTEST_OPS="+p, "DIFFTEST_ENGINE="+*flagCrashEngine)
	return o.crashed
}

func TestCrashMinimise(t *testing.T) {
	if *flagCrashMaster == 0 {
		t.Skip("a tool, not a check: run with -difftest.crashmaster=N to find and shrink a crashing sequence")
	}
	gen := genDupOps
	if *flagCrashPlain {
		gen = genOps
	}
	dir := t.TempDir()
	r := rand.New(rand.NewSource(*flagCrashMaster))
	for n := 0; n < 300000; {
		seed := r.Int63()
		ops := gen(seed)
		n += len(ops)
		if !crashes(t, dir, ops) {
			continue
		}
		t.Logf("seed %d crashes (%d ops); shrinking", seed, len(ops))
		cur := ops
		for chunk := len(cur) / 2; chunk >= 1; {
			removed := false
			for start := 0; start < len(cur); {
				end := min(start+chunk, len(cur))
				cand := append(append([]op(nil), cur[:start]...), cur[end:]...)
				if crashes(t, dir, cand) {
					cur, removed = cand, true
					continue
				}
				start += chunk
			}
			if !removed {
				chunk /= 2
			}
		}
		var sb strings.Builder
		for i, o := range cur {
			fmt.Fprintf(&sb, "  %d %v\n", i, o)
		}
		t.Fatalf("crash with %s as engine under test, %d ops:\n%s", *flagCrashEngine, len(cur), sb.String())
	}
	t.Log("no crash found")
}
