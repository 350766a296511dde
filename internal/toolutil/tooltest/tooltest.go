// Package tooltest builds the test environments that the command-line tool
// tests share. Environments are written and read back with stock LMDB
// (github.com/PowerDNS/lmdb-go), so a tool under test (which runs on our
// engine) is always compared against an independent implementation. The
// expected dump text is generated here from the fixture data alone.
//
// Stock LMDB and our engine must never have the same environment open at
// the same time in one process: every helper here closes its environment
// before returning.
package tooltest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	stock "github.com/PowerDNS/lmdb-go/lmdb"
)

// Pair is one record; in a DupSort database a key appears once per value.
type Pair struct {
	Key, Val []byte
}

// DB describes one named database of a fixture.
type DB struct {
	Name  string
	Flags uint // stock.DupSort, stock.ReverseKey, ...
	Pairs []Pair
}

// Fixture returns the standard test data: named databases with odd and
// even name and key lengths, binary bytes (zero, 0xff, backslash, space),
// empty values, overflow-sized values, a DupSort database whose biggest key
// holds enough values to need a sub-tree, and a ReverseKey database. The
// data is deterministic.
func Fixture() []DB {
	r := rand.New(rand.NewPCG(7, 11))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}

	alpha := DB{Name: "alpha"}
	seen := map[string]bool{}
	add := func(k, v []byte) {
		if !seen[string(k)] {
			seen[string(k)] = true
			alpha.Pairs = append(alpha.Pairs, Pair{k, v})
		}
	}
	add([]byte{0}, []byte{})
	add([]byte{0xff, 0x00, '\\', ' '}, []byte("back\\slash and \x7f del"))
	add([]byte(`a\b`), []byte(`\\`))
	add([]byte(" lead"), []byte("trail "))
	for i := 0; i < 700; i++ {
		klen := 1 + i%23 // odd and even lengths
		k := append([]byte(fmt.Sprintf("k%04d-", i)), randBytes(klen)...)
		var v []byte
		switch i % 4 {
		case 0:
			v = []byte(fmt.Sprintf("printable value %d", i))
		case 1:
			v = randBytes(i % 41)
		case 2:
			v = nil
		default:
			v = bytes.Repeat([]byte{byte(i)}, 3+i%8)
		}
		add(k, v)
	}

	beta := DB{Name: "beta2"}
	for i, n := range []int{3000, 4096, 4097, 10000, 20001} {
		beta.Pairs = append(beta.Pairs, Pair{[]byte(fmt.Sprintf("big%d", i)), randBytes(n)})
	}
	beta.Pairs = append(beta.Pairs, Pair{[]byte("small"), []byte("s")})

	dups := DB{Name: "dups", Flags: stock.DupSort}
	addDups := func(key string, vals ...[]byte) {
		for _, v := range vals {
			dups.Pairs = append(dups.Pairs, Pair{[]byte(key), v})
		}
	}
	addDups("k1", []byte("one"), []byte("two"), []byte("three"))
	addDups("k2", []byte{0, 1, 2})
	addDups("x", []byte("\\"), []byte{0xfe})
	var many [][]byte
	for i := 0; i < 400; i++ {
		many = append(many, []byte(fmt.Sprintf("v%05d-%x", i*7919%100000, randBytes(1+i%5))))
	}
	addDups("many", many...)

	rev := DB{Name: "rev", Flags: stock.ReverseKey}
	for i := 0; i < 30; i++ {
		rev.Pairs = append(rev.Pairs, Pair{[]byte(fmt.Sprintf("%c-%d", 'a'+i%7, i)), []byte(fmt.Sprint(i * i))})
	}
	ints := DB{Name: "ints", Flags: stock.IntegerKey}
	for i := 0; i < 40; i++ {
		k := make([]byte, 8)
		binary.NativeEndian.PutUint64(k, uint64(i*i*7919)^uint64(i)<<40)
		ints.Pairs = append(ints.Pairs, Pair{k, []byte(fmt.Sprintf("int %d", i))})
	}
	return []DB{alpha, beta, dups, rev, ints}
}

// FixedDups is a DupSort|DupFixed database with 4-byte values, kept out of
// Fixture while our engine may still refuse DupFixed.
func FixedDups() DB {
	db := DB{Name: "fixed", Flags: stock.DupSort | stock.DupFixed}
	for k := 0; k < 5; k++ {
		for v := 0; v < 1+k*60; v++ {
			val := make([]byte, 4)
			binary.BigEndian.PutUint32(val, uint32(v*2654435761))
			db.Pairs = append(db.Pairs, Pair{[]byte{'a' + byte(k)}, val})
		}
	}
	return db
}

// Sorted returns the database's records in the order LMDB keeps them.
func Sorted(db DB) []Pair {
	out := slices.Clone(db.Pairs)
	keyOrder := bytes.Compare
	if db.Flags&stock.IntegerKey != 0 {
		keyOrder = func(a, b []byte) int {
			x, y := binary.NativeEndian.Uint64(a), binary.NativeEndian.Uint64(b)
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	if db.Flags&stock.ReverseKey != 0 {
		keyOrder = func(a, b []byte) int {
			ra, rb := slices.Clone(a), slices.Clone(b)
			slices.Reverse(ra)
			slices.Reverse(rb)
			return bytes.Compare(ra, rb)
		}
	}
	slices.SortStableFunc(out, func(a, b Pair) int {
		if c := keyOrder(a.Key, b.Key); c != 0 {
			return c
		}
		return bytes.Compare(a.Val, b.Val)
	})
	return out
}

// Build creates an environment at dir (a directory) with stock LMDB and
// writes dbs in several transactions, deleting a few extra records on the
// way so that the free list is not empty.
func Build(t testing.TB, dir string, dbs []DB) {
	t.Helper()
	env := openStock(t, dir, 0, 1<<24)
	defer env.Close()
	for _, db := range dbs {
		err := env.Update(func(txn *stock.Txn) error {
			dbi, err := txn.OpenDBI(db.Name, db.Flags|stock.Create)
			if err != nil {
				return err
			}
			for i, p := range db.Pairs {
				if err := txn.Put(dbi, p.Key, p.Val, 0); err != nil {
					return fmt.Errorf("put %d in %s: %w", i, db.Name, err)
				}
			}
			// Scratch records, removed in a later transaction.
			for i := 0; i < 50; i++ {
				if err := txn.Put(dbi, scratchKey(db, i), scratchVal(db), 0); err != nil {
					return fmt.Errorf("scratch record %d of %s: %w", i, db.Name, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = env.Update(func(txn *stock.Txn) error {
			dbi, err := txn.OpenDBI(db.Name, 0)
			if err != nil {
				return err
			}
			for i := 0; i < 50; i++ {
				// lmdb-go passes a nil value as an empty one, which in a
				// DupSort database names the (key, "") pair: give the value.
				if err := txn.Del(dbi, scratchKey(db, i), scratchVal(db)); err != nil {
					return fmt.Errorf("deleting scratch record %d of %s: %w", i, db.Name, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// scratchKey is the key of the i'th temporary record Build adds to db (an
// 8-byte integer beyond the fixture's keys for IntegerKey databases).
func scratchKey(db DB, i int) []byte {
	if db.Flags&stock.IntegerKey != 0 {
		k := make([]byte, 8)
		binary.NativeEndian.PutUint64(k, 1<<63+uint64(i))
		return k
	}
	return []byte(fmt.Sprintf("~scratch%03d", i))
}

// scratchVal is the value of every temporary record: as long as the
// fixture's values in a DupFixed database, 100 bytes otherwise.
func scratchVal(db DB) []byte {
	if db.Flags&stock.DupFixed != 0 && len(db.Pairs) > 0 {
		return make([]byte, len(db.Pairs[0].Val))
	}
	return make([]byte, 100)
}

func openStock(t testing.TB, path string, flags uint, mapSize int64) *stock.Env {
	t.Helper()
	env, err := stock.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := env.SetMaxDBs(64); err != nil {
		t.Fatal(err)
	}
	if mapSize > 0 {
		if err := env.SetMapSize(mapSize); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Open(path, flags, 0o644); err != nil {
		env.Close()
		t.Fatalf("stock open %s: %v", path, err)
	}
	return env
}

// EnvFacts are the header values mdb_dump would print for an environment.
type EnvFacts struct {
	MapSize    int64
	MaxReaders uint
	PageSize   uint
	LastPNO    int64
}

// Facts opens path read-only with stock LMDB (as mdb_dump does) and
// reports its map size, reader table size and page size.
func Facts(t testing.TB, path string, flags uint) EnvFacts {
	t.Helper()
	env := openStock(t, path, flags|stock.Readonly, 0)
	defer env.Close()
	info, err := env.Info()
	if err != nil {
		t.Fatal(err)
	}
	st, err := env.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return EnvFacts{MapSize: info.MapSize, MaxReaders: info.MaxReaders, PageSize: st.PSize, LastPNO: info.LastPNO}
}

// Contents is what ReadAll finds: records per database name, with the
// flags of each database.
type Contents struct {
	Pairs map[string][]Pair
	Flags map[string]uint
}

// ReadAll reads every named database of the environment at path with stock
// LMDB, records in cursor order. The main database's keys name them.
func ReadAll(t testing.TB, path string, flags uint) Contents {
	t.Helper()
	env := openStock(t, path, flags|stock.Readonly, 0)
	defer env.Close()
	c := Contents{Pairs: map[string][]Pair{}, Flags: map[string]uint{}}
	err := env.View(func(txn *stock.Txn) error {
		root, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		names, err := scan(txn, root)
		if err != nil {
			return err
		}
		for _, n := range names {
			dbi, err := txn.OpenDBI(string(n.Key), 0)
			if err != nil {
				return fmt.Errorf("open %q: %w", n.Key, err)
			}
			f, err := txn.Flags(dbi)
			if err != nil {
				return err
			}
			c.Flags[string(n.Key)] = f
			if c.Pairs[string(n.Key)], err = scan(txn, dbi); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ReadMain returns the raw records of the main database.
func ReadMain(t testing.TB, path string, flags uint) []Pair {
	t.Helper()
	env := openStock(t, path, flags|stock.Readonly, 0)
	defer env.Close()
	var out []Pair
	err := env.View(func(txn *stock.Txn) error {
		root, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		out, err = scan(txn, root)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FreePages sums the page counts of the free list as stock LMDB reads it.
func FreePages(t testing.TB, path string) (total uint64, records int) {
	t.Helper()
	env := openStock(t, path, stock.Readonly, 0)
	defer env.Close()
	err := env.View(func(txn *stock.Txn) error {
		pairs, err := scan(txn, 0)
		if err != nil {
			return err
		}
		for _, p := range pairs {
			total += binary.NativeEndian.Uint64(p.Val[:8])
		}
		records = len(pairs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total, records
}

func scan(txn *stock.Txn, dbi stock.DBI) ([]Pair, error) {
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		return nil, err
	}
	defer cur.Close()
	var out []Pair
	for {
		k, v, err := cur.Get(nil, nil, stock.Next)
		if stock.IsNotFound(err) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Pair{bytes.Clone(k), bytes.Clone(v)})
	}
}

// Equal reports whether two record lists are identical, with a description
// of the first difference.
func Equal(got, want []Pair) (bool, string) {
	for i := 0; i < len(got) && i < len(want); i++ {
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Val, want[i].Val) {
			return false, fmt.Sprintf("record %d: got %q=%q, want %q=%q", i,
				trunc(got[i].Key), trunc(got[i].Val), trunc(want[i].Key), trunc(want[i].Val))
		}
	}
	if len(got) != len(want) {
		return false, fmt.Sprintf("got %d records, want %d", len(got), len(want))
	}
	return true, ""
}

func trunc(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// CheckContents fails t unless the environment at path holds exactly dbs.
func CheckContents(t testing.TB, path string, flags uint, dbs []DB) {
	t.Helper()
	got := ReadAll(t, path, flags)
	if len(got.Pairs) != len(dbs) {
		t.Errorf("%s: %d databases, want %d", path, len(got.Pairs), len(dbs))
	}
	for _, db := range dbs {
		pairs, ok := got.Pairs[db.Name]
		if !ok {
			t.Errorf("%s: database %q missing", path, db.Name)
			continue
		}
		if ok, why := Equal(pairs, Sorted(db)); !ok {
			t.Errorf("%s: database %q: %s", path, db.Name, why)
		}
		if got.Flags[db.Name] != db.Flags {
			t.Errorf("%s: database %q flags %#x, want %#x", path, db.Name, got.Flags[db.Name], db.Flags)
		}
	}
}

// Encode renders b as a dump data line (without the leading space and the
// newline): two lowercase hex digits per byte, or for the print format the
// printable ASCII characters as themselves, a backslash doubled and any
// other byte as a backslash and two hex digits.
func Encode(b []byte, printable bool) string {
	if !printable {
		return hex.EncodeToString(b)
	}
	var sb strings.Builder
	for _, c := range b {
		if c == '\\' {
			sb.WriteString(`\\`)
		} else if c >= ' ' && c <= '~' {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, `\%02x`, c)
		}
	}
	return sb.String()
}

// Header is the header section mdb_dump writes for one database. name nil
// means the main database.
func Header(f EnvFacts, name *string, flags uint, printable bool) string {
	var sb strings.Builder
	sb.WriteString("VERSION=3\n")
	if printable {
		sb.WriteString("format=print\n")
	} else {
		sb.WriteString("format=bytevalue\n")
	}
	if name != nil {
		sb.WriteString("database=" + *name + "\n")
	}
	fmt.Fprintf(&sb, "type=btree\nmapsize=%d\nmaxreaders=%d\n", f.MapSize, f.MaxReaders)
	if flags&stock.DupSort != 0 {
		sb.WriteString("duplicates=1\n")
	}
	for _, fl := range []struct {
		bit  uint
		word string
	}{{stock.ReverseKey, "reversekey"}, {stock.DupSort, "dupsort"}, {stock.IntegerKey, "integerkey"},
		{stock.DupFixed, "dupfixed"}, {stock.IntegerDup, "integerdup"}, {stock.ReverseDup, "reversedup"}} {
		if flags&fl.bit != 0 {
			sb.WriteString(fl.word + "=1\n")
		}
	}
	fmt.Fprintf(&sb, "db_pagesize=%d\nHEADER=END\n", f.PageSize)
	return sb.String()
}

// Section is the complete dump text of records under a header.
func Section(f EnvFacts, name *string, flags uint, pairs []Pair, printable bool) string {
	var sb strings.Builder
	sb.WriteString(Header(f, name, flags, printable))
	for _, p := range pairs {
		sb.WriteString(" " + Encode(p.Key, printable) + "\n")
		sb.WriteString(" " + Encode(p.Val, printable) + "\n")
	}
	sb.WriteString("DATA=END\n")
	return sb.String()
}

// ExpectedDumpAll is what "mdb_dump -a" prints for an environment built
// from dbs: one section per database in name order.
func ExpectedDumpAll(f EnvFacts, dbs []DB, printable bool) string {
	sorted := slices.Clone(dbs)
	slices.SortFunc(sorted, func(a, b DB) int { return strings.Compare(a.Name, b.Name) })
	var sb strings.Builder
	for _, db := range sorted {
		sb.WriteString(Section(f, &db.Name, db.Flags, Sorted(db), printable))
	}
	return sb.String()
}

// DataFile returns the data file of an environment directory.
func DataFile(dir string) string { return filepath.Join(dir, "data.mdb") }

// WriteFile writes a test input file and returns its path.
func WriteFile(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// CompactCopy copies the environment at src into the existing directory
// dst with stock LMDB's compacting copy, which leaves only pages that the
// newest snapshot uses.
func CompactCopy(t testing.TB, src, dst string) {
	t.Helper()
	env := openStock(t, src, stock.Readonly, 0)
	defer env.Close()
	if err := env.CopyFlag(dst, stock.CopyCompact); err != nil {
		t.Fatal(err)
	}
}

// RunFunc is a tool's in-process entry point (toolutil.RunFunc).
type RunFunc func(args []string, stdout, stderr io.Writer) error

// CheckHelp runs a tool with -h and checks that it succeeds and prints its
// usage line followed by a line describing each of the given options
// (such as "-n" or "-s name").
func CheckHelp(t *testing.T, run RunFunc, usageLine string, options ...string) {
	t.Helper()
	var out bytes.Buffer
	if err := run([]string{"-h"}, &out, io.Discard); err != nil {
		t.Fatalf("-h: %v", err)
	}
	text := out.String()
	if !strings.HasPrefix(text, usageLine+"\n") {
		t.Errorf("-h does not start with the usage line %q:\n%s", usageLine, text)
	}
	for _, o := range append(options, "-V", "-h") {
		found := false
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && strings.HasPrefix(strings.TrimSpace(line), o+" ") {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("-h describes no option %q:\n%s", o, text)
		}
	}
}

// CheckNoEnvironment runs a tool on an empty directory (and, with -n, on a
// missing file) and checks that it fails naming the path and leaves the
// directory empty: no lock file, no new environment.
func CheckNoEnvironment(t *testing.T, run RunFunc, extra ...string) {
	t.Helper()
	dir := t.TempDir()
	err := run(append(append([]string{}, extra...), dir), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("empty directory: error %v, want one naming %s", err, dir)
	}
	file := filepath.Join(dir, "missing.mdb")
	err = run(append(append([]string{"-n"}, extra...), file), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("missing file: error %v, want one naming %s", err, file)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Errorf("the tool left %d entries behind (%v)", len(ents), err)
	}
}
