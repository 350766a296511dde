package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dlmdb/dlmdb-go/internal/toolutil/tooltest"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

func runLoad(t *testing.T, args ...string) error {
	t.Helper()
	var out, errOut bytes.Buffer
	return run(args, &out, &errOut)
}

// facts for hand-made dumps: a small map that the loader must grow when
// the data needs more.
var smallFacts = tooltest.EnvFacts{MapSize: 1 << 20, MaxReaders: 126, PageSize: 4096}

func TestLoadRoundTripsExpectedDump(t *testing.T) {
	work := t.TempDir()
	dbs := append(tooltest.Fixture(), tooltest.FixedDups())
	for _, printable := range []bool{false, true} {
		text := tooltest.ExpectedDumpAll(smallFacts, dbs, printable)
		in := tooltest.WriteFile(t, work, fmt.Sprintf("dump-%v.txt", printable), text)
		dst := filepath.Join(work, fmt.Sprintf("env-%v", printable))
		if err := os.Mkdir(dst, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := runLoad(t, "-f", in, dst); err != nil {
			t.Fatalf("print=%v: %v", printable, err)
		}
		tooltest.CheckContents(t, dst, 0, dbs)
	}
}

func TestLoadFromStdinIntoNamedDB(t *testing.T) {
	db := tooltest.Fixture()[2] // DupSort
	text := tooltest.Section(smallFacts, nil, db.Flags, tooltest.Sorted(db), true)
	old := stdin
	stdin = strings.NewReader(text)
	defer func() { stdin = old }()
	dst := t.TempDir()
	if err := runLoad(t, "-s", "renamed", dst); err != nil {
		t.Fatal(err)
	}
	db.Name = "renamed"
	tooltest.CheckContents(t, dst, 0, []tooltest.DB{db})
}

func TestLoadGrowsTheMap(t *testing.T) {
	// About 2.4 MiB of values under a header that asks for a 1 MiB map.
	db := tooltest.DB{Name: "grow"}
	for i := 0; i < 300; i++ {
		db.Pairs = append(db.Pairs, tooltest.Pair{Key: []byte(fmt.Sprintf("key%04d", i)),
			Val: bytes.Repeat([]byte{byte(i), byte(i >> 3)}, 4000)})
	}
	// One value whose hex line (600 KB) is longer than the reader's buffer.
	db.Pairs = append(db.Pairs, tooltest.Pair{Key: []byte("huge"), Val: bytes.Repeat([]byte("0123456789"), 30000)})
	work := t.TempDir()
	in := tooltest.WriteFile(t, work, "big.txt", tooltest.ExpectedDumpAll(smallFacts, []tooltest.DB{db}, false))
	dst := filepath.Join(work, "env")
	os.Mkdir(dst, 0o755)
	if err := runLoad(t, "-f", in, dst); err != nil {
		t.Fatal(err)
	}
	tooltest.CheckContents(t, dst, 0, []tooltest.DB{db})
}

func TestLoadPlainText(t *testing.T) {
	work := t.TempDir()
	// -T: key and value lines alternate, print encoding, no leading space.
	text := "alpha\none\nb\\\\s\\00x\n\nzeta\n\\ff\\fe\n"
	in := tooltest.WriteFile(t, work, "plain.txt", text)
	dst := filepath.Join(work, "env")
	os.Mkdir(dst, 0o755)
	if err := runLoad(t, "-T", "-s", "p", "-f", in, dst); err != nil {
		t.Fatal(err)
	}
	want := tooltest.DB{Name: "p", Pairs: []tooltest.Pair{
		{Key: []byte("alpha"), Val: []byte("one")},
		{Key: []byte("b\\s\x00x"), Val: []byte{}},
		{Key: []byte("zeta"), Val: []byte{0xff, 0xfe}},
	}}
	tooltest.CheckContents(t, dst, 0, []tooltest.DB{want})

	odd := tooltest.WriteFile(t, work, "odd.txt", "k1\nv1\nk2\n")
	err := runLoad(t, "-T", "-s", "q", "-f", odd, dst)
	if err == nil || !strings.Contains(err.Error(), "line 3:") {
		t.Errorf("-T with a key and no value: %v (want an error at line 3)", err)
	}
	tooltest.CheckContents(t, dst, 0, []tooltest.DB{want})
}

func TestLoadNoOverwrite(t *testing.T) {
	work := t.TempDir()
	dst := filepath.Join(work, "env")
	os.Mkdir(dst, 0o755)
	name := "d"
	first := []tooltest.Pair{{Key: []byte("a"), Val: []byte("1")}, {Key: []byte("b"), Val: []byte("2")}}
	in := tooltest.WriteFile(t, work, "1.txt", tooltest.Section(smallFacts, &name, 0, first, false))
	if err := runLoad(t, "-f", in, dst); err != nil {
		t.Fatal(err)
	}
	second := []tooltest.Pair{{Key: []byte("b"), Val: []byte("new")}, {Key: []byte("c"), Val: []byte("3")}}
	in2 := tooltest.WriteFile(t, work, "2.txt", tooltest.Section(smallFacts, &name, 0, second, false))
	if err := runLoad(t, "-N", "-f", in2, dst); err != nil {
		t.Fatal(err)
	}
	tooltest.CheckContents(t, dst, 0, []tooltest.DB{{Name: "d", Pairs: []tooltest.Pair{
		{Key: []byte("a"), Val: []byte("1")}, {Key: []byte("b"), Val: []byte("2")}, {Key: []byte("c"), Val: []byte("3")}}}})
	if err := runLoad(t, "-f", in2, dst); err != nil {
		t.Fatal(err)
	}
	tooltest.CheckContents(t, dst, 0, []tooltest.DB{{Name: "d", Pairs: []tooltest.Pair{
		{Key: []byte("a"), Val: []byte("1")}, {Key: []byte("b"), Val: []byte("new")}, {Key: []byte("c"), Val: []byte("3")}}}})
}

func TestLoadAppendMode(t *testing.T) {
	work := t.TempDir()
	dbs := tooltest.Fixture()[1:3] // plain with overflow values, DupSort
	in := tooltest.WriteFile(t, work, "sorted.txt", tooltest.ExpectedDumpAll(smallFacts, dbs, false))
	dst := filepath.Join(work, "env")
	os.Mkdir(dst, 0o755)
	if err := runLoad(t, "-a", "-f", in, dst); err != nil {
		t.Fatal(err)
	}
	tooltest.CheckContents(t, dst, 0, dbs)

	name := "u"
	unsorted := tooltest.Section(smallFacts, &name, 0, []tooltest.Pair{
		{Key: []byte("b"), Val: []byte("1")}, {Key: []byte("a"), Val: []byte("2")}}, false)
	in2 := tooltest.WriteFile(t, work, "unsorted.txt", unsorted)
	err := runLoad(t, "-a", "-f", in2, dst)
	// The header has 8 lines; the out-of-order value is on line 12.
	if err == nil || !strings.Contains(err.Error(), "line 12:") {
		t.Errorf("unsorted input with -a: %v", err)
	}
	tooltest.CheckContents(t, dst, 0, dbs)
}

// TestLoadMalformed feeds broken dumps to an environment that already holds
// one database and checks that each is refused with the right line number
// and that nothing changes — not even the valid sections before the error.
func TestLoadMalformed(t *testing.T) {
	work := t.TempDir()
	base := []tooltest.DB{tooltest.Fixture()[3]}
	dst := filepath.Join(work, "env")
	os.Mkdir(dst, 0o755)
	in := tooltest.WriteFile(t, work, "base.txt", tooltest.ExpectedDumpAll(smallFacts, base, false))
	if err := runLoad(t, "-f", in, dst); err != nil {
		t.Fatal(err)
	}
	tooltest.CheckContents(t, dst, 0, base)

	rev, fresh := base[0].Name, "fresh"
	good := func(name string) []string {
		// A valid section that would add records to name.
		s := tooltest.Section(smallFacts, &name, 0, []tooltest.Pair{
			{Key: []byte("zz-new-1"), Val: []byte("v1")}, {Key: []byte("zz-new-2"), Val: []byte("v2")}}, false)
		return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	}
	header := func(name string) []string {
		h := tooltest.Header(smallFacts, &name, 0, false)
		return strings.Split(strings.TrimSuffix(h, "\n"), "\n")
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	revHeader := tooltest.Header(smallFacts, &rev, base[0].Flags, false)
	revHead := strings.Split(strings.TrimSuffix(revHeader, "\n"), "\n")
	cases := []struct {
		name  string
		lines []string
		bad   int // 1-based line the error must name
	}{
		{"bad hex", cat(good(fresh), revHead, []string{" 6b31", " 7a7a", " 6bzz", " 00"}), len(good(fresh)) + len(revHead) + 3},
		{"odd hex length", cat(revHead, []string{" 6b31", " 7a7"}), len(revHead) + 2},
		{"missing HEADER=END before data", cat(header(fresh)[:4], []string{" 6b31", " 00", "DATA=END"}), 5},
		{"missing HEADER=END at end of input", header(fresh)[:5], 5},
		{"unknown header key", cat(header(fresh)[:2], []string{"frobnicate=1"}, header(fresh)[2:], []string{" 6b", " 00", "DATA=END"}), 3},
		{"unsupported version", cat([]string{"VERSION=4"}, header(fresh)[1:], []string{"DATA=END"}), 1},
		{"unsupported format", cat(header(fresh)[:1], []string{"format=base64"}, header(fresh)[2:], []string{"DATA=END"}), 2},
		{"missing DATA=END", cat(good(fresh), revHead, []string{" 6b31", " 00"}), len(good(fresh)) + len(revHead) + 2},
		{"key without value", cat(header(fresh), []string{" 6b31", " 00", " 6b32", "DATA=END"}), len(header(fresh)) + 4},
		{"data line without space", cat(header(fresh), []string{" 6b31", " 00", "6b32", " 00", "DATA=END"}), len(header(fresh)) + 3},
		{"bad escape in print format", cat([]string{"VERSION=3", "format=print", "database=fresh", "type=btree", "HEADER=END",
			" ok", " fine", " a\\zzb", " v", "DATA=END"}), 8},
		{"truncated escape in print format", cat([]string{"VERSION=3", "format=print", "database=fresh", "HEADER=END",
			" ok", " fine\\4"}), 6},
		{"flags differ from the existing database", cat(header(rev), []string{" 6b", " 00", "DATA=END"}), 1},
		{"dupsort dump into an existing plain database", cat(good(fresh), []string{"VERSION=3", "format=bytevalue",
			"database=fresh", "dupsort=1", "HEADER=END", " 6b", " 00", "DATA=END"}), len(good(fresh)) + 1},
		{"second section broken", cat(good(fresh), good("other"), []string{"VERSION=3", "nonsense"}), len(good(fresh)) + len(good("other")) + 2},
	}
	for i, tc := range cases {
		text := strings.Join(tc.lines, "\n") + "\n"
		in := tooltest.WriteFile(t, work, fmt.Sprintf("bad%d.txt", i), text)
		err := runLoad(t, "-f", in, dst)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
		} else if want := fmt.Sprintf("line %d:", tc.bad); !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not name %q", tc.name, err, want)
		}
		tooltest.CheckContents(t, dst, 0, base)
	}

	emptyIn := tooltest.WriteFile(t, work, "empty.txt", "")
	if err := runLoad(t, "-f", emptyIn, dst); err == nil {
		t.Error("empty input accepted")
	}
	tooltest.CheckContents(t, dst, 0, base)
}

func TestLoadUsage(t *testing.T) {
	if err := runLoad(t); err == nil {
		t.Error("missing path accepted")
	}
	if err := runLoad(t, "-x", t.TempDir()); err == nil {
		t.Error("unknown option accepted")
	}
	if err := runLoad(t, "-f", filepath.Join(t.TempDir(), "missing"), t.TempDir()); err == nil {
		t.Error("missing input file accepted")
	}
}

func TestLoadMainDatabase(t *testing.T) {
	work := t.TempDir()
	pairs := []tooltest.Pair{{Key: []byte("k\x00"), Val: []byte{}}, {Key: []byte("a"), Val: []byte{0xff}}}
	in := tooltest.WriteFile(t, work, "main.txt", tooltest.Section(smallFacts, nil, 0, pairs, true))
	dst := filepath.Join(work, "env")
	os.Mkdir(dst, 0o755)
	if err := runLoad(t, "-f", in, dst); err != nil {
		t.Fatal(err)
	}
	got := tooltest.ReadMain(t, dst, 0)
	if ok, why := tooltest.Equal(got, tooltest.Sorted(tooltest.DB{Pairs: pairs})); !ok {
		t.Error(why)
	}
}

func TestLoadMapSize(t *testing.T) {
	work := t.TempDir()
	name := "m"
	pairs := []tooltest.Pair{{Key: []byte("k"), Val: []byte("v")}}
	facts := smallFacts
	facts.MapSize = 3 << 20
	in := tooltest.WriteFile(t, work, "m.txt", tooltest.Section(facts, &name, 0, pairs, false))
	dst := filepath.Join(work, "env")
	os.Mkdir(dst, 0o755)
	if err := runLoad(t, "-f", in, dst); err != nil {
		t.Fatal(err)
	}
	if got := tooltest.Facts(t, dst, 0).MapSize; got != facts.MapSize {
		t.Errorf("new environment has map size %d, want the dump's %d", got, facts.MapSize)
	}
	// A dump with a smaller map does not shrink an existing environment.
	facts.MapSize = 1 << 20
	in2 := tooltest.WriteFile(t, work, "m2.txt", tooltest.Section(facts, &name, 0, pairs, false))
	if err := runLoad(t, "-f", in2, dst); err != nil {
		t.Fatal(err)
	}
	if got := tooltest.Facts(t, dst, 0).MapSize; got != 3<<20 {
		t.Errorf("existing environment's map size became %d, want %d", got, 3<<20)
	}
}

func TestLoadCreatesOnlyOnSuccess(t *testing.T) {
	work := t.TempDir()
	name := "c"
	pairs := []tooltest.Pair{{Key: []byte("k"), Val: []byte("v")}}
	good := tooltest.WriteFile(t, work, "good.txt", tooltest.Section(smallFacts, &name, 0, pairs, false))
	bad := tooltest.WriteFile(t, work, "bad.txt", strings.Replace(
		tooltest.Section(smallFacts, &name, 0, pairs, false), " 6b\n", " 6x\n", 1))

	// An existing but empty directory stays, without environment files.
	empty := filepath.Join(work, "empty")
	os.Mkdir(empty, 0o755)
	if err := runLoad(t, "-f", bad, empty); err == nil {
		t.Error("bad input accepted")
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Errorf("failed load into an empty directory left %v (%v)", ents, err)
	}

	for _, nosub := range []bool{false, true} {
		target := filepath.Join(work, fmt.Sprintf("new-%v", nosub), "deeper")
		if nosub {
			target = filepath.Join(work, "new.mdb")
		}
		args := func(in string) []string {
			if nosub {
				return []string{"-n", "-f", in, target}
			}
			return []string{"-f", in, target}
		}
		if err := runLoad(t, args(bad)...); err == nil || !strings.Contains(err.Error(), "line 9:") {
			t.Errorf("nosubdir=%v: bad input: %v", nosub, err)
		}
		left := target
		if !nosub {
			left = filepath.Dir(target) // the tool created both levels
		}
		if _, err := os.Stat(left); !os.IsNotExist(err) {
			t.Errorf("nosubdir=%v: failed load left %s behind (%v)", nosub, left, err)
		}
		if err := runLoad(t, args(good)...); err != nil {
			t.Fatalf("nosubdir=%v: %v", nosub, err)
		}
		var flags uint
		if nosub {
			flags = lmdb.NoSubdir
		}
		tooltest.CheckContents(t, target, flags, []tooltest.DB{{Name: "c", Pairs: pairs}})
	}
}

func TestHelp(t *testing.T) {
	tooltest.CheckHelp(t, run, "usage: lmdb_load [-V] [-a] [-f input] [-n] [-s name] [-N] [-T] path", "-f input", "-s name", "-n", "-N", "-T", "-a")
}
