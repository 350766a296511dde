//go:build !dlmdb_stockonly

package difftest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dl "github.com/dlmdb/dlmdb-go/lmdb"
)

// Crash safety of counted DBs: a child commits numbered transactions into a
// counted DB, a counted DUPSORT DB (sub-pages and a sub-tree under one hot
// key) and a counted DUPSORT|DUPFIXED DB, using nested transactions (some
// aborted, so their count changes must vanish); the parent SIGKILLs it at
// random moments. After every kill the env must open, Check must pass (it
// verifies every stored count), the contents must be exactly the model's for
// the last committed sequence number, and CountAll, CountKeys and Rank must
// agree with a full scan.

const (
	ccKeep  = 5 // txn s deletes what txn s-ccKeep added (except the permanent keys)
	ccCnt   = "cc-cnt"
	ccDup   = "cc-dup"
	ccFix   = "cc-fix"
	ccSeq   = "cc-seq"
	ccPerm  = 3000 // permanent keys "p0000".."p2999" of ccCnt, rewritten now and then
	ccPerTx = 10   // permanent keys written per txn
)

func init() {
	childRoles["counted-crash-writer"] = countedCrashWriter
}

type ccPair struct{ k, v string }

// ccPrefix, in the prefix-compressed runs (TestPrefixCrashSafety,
// TestPrefixCountedCrashSafety), starts every key of the three DBs and every
// value of the DUPSORT one, so that their leaves (and duplicate sub-pages and
// sub-trees) share a long prefix; empty otherwise. The child sets it from
// DIFFTEST_CC_PFX, the parent for the duration of its run.
var ccPrefix string

const ccLongPrefix = "urn:dlmdb:crash-test/prefix-compressed/shared-part/"

// ccWindow: what txn s adds that txn s+ccKeep deletes again.
func ccWindow(s uint64) (cnt []crashItem, dup, fix []ccPair) {
	cnt = crashBatch(s) // own keys per s, overflow values now and then
	if ccPrefix != "" {
		for i := range cnt {
			cnt[i].key = append([]byte(ccPrefix), cnt[i].key...)
		}
	}
	n := 1 + int(s*7919%41)
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("g%02d", (s+uint64(i))%40)
		if i%2 == 0 {
			k = "hot"
		}
		// 40-byte values: the hot key's duplicates outgrow a sub-page
		dup = append(dup, ccPair{ccPrefix + k, ccPrefix + fmt.Sprintf("v%08d-%03d-%026d", s, i, s*uint64(i+1))})
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], s*1000+uint64(i))
		fix = append(fix, ccPair{ccPrefix + fmt.Sprintf("f%d", i%3), string(b[:])})
	}
	return
}

// ccPermKeys: the permanent keys txn s (re)writes, with their values.
func ccPermKeys(s uint64) []ccPair {
	out := make([]ccPair, ccPerTx)
	for j := range out {
		id := (s*37 + uint64(j)*101) % ccPerm
		out[j] = ccPair{ccPrefix + fmt.Sprintf("p%04d", id), fmt.Sprintf("perm-%d-%d", s, id)}
	}
	return out
}

func ccOpts() (uint, int64) {
	var flags uint
	if os.Getenv("DIFFTEST_WRITEMAP") == "1" {
		flags |= dl.WriteMap
	}
	return flags, 256 << 20
}

func ccOpen(dir string) (*dl.Env, error) {
	env, err := dl.NewEnv()
	if err != nil {
		return nil, err
	}
	flags, size := ccOpts()
	if err := env.SetMapSize(size); err != nil {
		env.Close()
		return nil, err
	}
	if err := env.SetMaxDBs(8); err != nil {
		env.Close()
		return nil, err
	}
	if err := env.Open(dir, flags, 0o644); err != nil {
		env.Close()
		return nil, err
	}
	return env, nil
}

func ccWrite(txn *dl.Txn, dbis map[string]dl.DBI, s uint64, add bool) error {
	cnt, dup, fix := ccWindow(s)
	for _, it := range cnt {
		var err error
		if add {
			err = txn.Put(dbis[ccCnt], it.key, it.val, 0)
		} else {
			err = txn.Del(dbis[ccCnt], it.key, nil)
		}
		if err != nil {
			return fmt.Errorf("txn %d %s %s: %w", s, ccCnt, it.key, err)
		}
	}
	for _, set := range []struct {
		db    string
		pairs []ccPair
	}{{ccDup, dup}, {ccFix, fix}} {
		for _, p := range set.pairs {
			var err error
			if add {
				err = txn.Put(dbis[set.db], []byte(p.k), []byte(p.v), 0)
			} else {
				err = txn.Del(dbis[set.db], []byte(p.k), []byte(p.v))
			}
			if err != nil {
				return fmt.Errorf("txn %d %s %s: %w", s, set.db, p.k, err)
			}
		}
	}
	return nil
}

func countedCrashWriter() error {
	env, err := ccOpen(os.Getenv("DIFFTEST_DIR"))
	if err != nil {
		return err
	}
	defer env.Close()
	dbis := map[string]dl.DBI{}
	var start uint64
	err = env.Update(func(txn *dl.Txn) error {
		counted := uint(dl.Counted)
		if os.Getenv("DIFFTEST_CC_PLAIN") == "1" {
			counted = 0 // TestDupSortCrashSafety: the same DBs without counts
		}
		if os.Getenv("DIFFTEST_CC_PFX") == "1" {
			counted |= dl.PrefixCompression // the prefix-compressed runs
			ccPrefix = ccLongPrefix
		}
		specs := map[string]uint{ccCnt: counted, ccDup: counted | dl.DupSort,
			ccFix: counted | dl.DupSort | dl.DupFixed, ccSeq: 0}
		for name, fl := range specs {
			d, err := txn.OpenDBI(name, dl.Create|fl)
			if err != nil {
				return err
			}
			dbis[name] = d
		}
		v, err := txn.Get(dbis[ccSeq], []byte("seq"))
		if err == nil {
			start, err = strconv.ParseUint(string(v), 10, 64)
		} else if dl.IsNotFound(err) {
			err = nil
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Printf("start %d\n", start)
	// LMDB has no nested txns under WriteMap (MDB_BAD_TXN)
	nested := os.Getenv("DIFFTEST_WRITEMAP") != "1"
	for s := start + 1; s < start+100000; s++ {
		err := env.Update(func(txn *dl.Txn) error {
			if err := ccWrite(txn, dbis, s, true); err != nil {
				return err
			}
			for _, p := range ccPermKeys(s) {
				if err := txn.Put(dbis[ccCnt], []byte(p.k), []byte(p.v), 0); err != nil {
					return err
				}
			}
			if s > ccKeep {
				// the deletes in a nested txn on odd s
				del := func(t *dl.Txn) error { return ccWrite(t, dbis, s-ccKeep, false) }
				if nested && s%2 == 1 {
					if err := txn.Sub(del); err != nil {
						return err
					}
				} else if err := del(txn); err != nil {
					return err
				}
			}
			// a nested txn that is aborted: none of it may stay, counts included
			if nested && s%3 == 0 {
				junk := fmt.Errorf("abort on purpose")
				err := txn.Sub(func(t *dl.Txn) error {
					if err := ccWrite(t, dbis, s+1000000, true); err != nil {
						return err
					}
					return junk
				})
				if err != junk {
					return fmt.Errorf("aborted nested txn: %v", err)
				}
			}
			return txn.Put(dbis[ccSeq], []byte("seq"), []byte(strconv.FormatUint(s, 10)), 0)
		})
		if err != nil {
			return err
		}
		fmt.Printf("committed %d\n", s)
	}
	return nil
}

// ccVerify opens the env, checks it and compares it with the model of
// sequence S (the stored one); returns S.
func ccVerify(t *testing.T, dir string) uint64 {
	t.Helper()
	env, err := ccOpen(dir)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer env.Close()
	var seq uint64
	err = env.View(func(txn *dl.Txn) error {
		seqDB, err := txn.OpenDBI(ccSeq, 0)
		if dl.IsNotFound(err) {
			return nil // killed before the first commit
		}
		if err != nil {
			return err
		}
		v, err := txn.Get(seqDB, []byte("seq"))
		if err != nil {
			return fmt.Errorf("read seq: %w", err)
		}
		if seq, err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return err
		}
		if err := txn.Check(); err != nil {
			return fmt.Errorf("seq %d: Check after kill: %w", seq, err)
		}
		// the model of seq
		want := map[string]map[string]bool{ccCnt: {}, ccDup: {}, ccFix: {}}
		add := func(db, k, v string) { want[db][k+"\x00"+v] = true }
		perm := map[string]string{}
		for s := uint64(1); s <= seq; s++ {
			for _, p := range ccPermKeys(s) {
				perm[p.k] = p.v
			}
		}
		for k, v := range perm {
			add(ccCnt, k, v)
		}
		for s := seq; s > 0 && s+ccKeep > seq; s-- {
			cnt, dup, fix := ccWindow(s)
			for _, it := range cnt {
				add(ccCnt, string(it.key), string(it.val))
			}
			for _, p := range dup {
				add(ccDup, p.k, p.v)
			}
			for _, p := range fix {
				add(ccFix, p.k, p.v)
			}
		}
		for _, name := range []string{ccCnt, ccDup, ccFix} {
			dbi, err := txn.OpenDBI(name, 0)
			if err != nil {
				return fmt.Errorf("open %s: %w", name, err)
			}
			if err := ccCompare(txn, dbi, name, want[name]); err != nil {
				return fmt.Errorf("seq %d: %s: %w", seq, name, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// ccCompare: the DB holds exactly the pairs of want, and the count API agrees
// with a full scan.
func ccCompare(txn *dl.Txn, dbi dl.DBI, name string, want map[string]bool) error {
	c, err := txn.OpenCursor(dbi)
	if err != nil {
		return err
	}
	defer c.Close()
	var keys, vals [][]byte
	distinct := uint64(0)
	for op := uint(dl.First); ; op = dl.Next {
		k, v, err := c.Get(nil, nil, op)
		if dl.IsNotFound(err) {
			break
		}
		if err != nil {
			return err
		}
		if !want[string(k)+"\x00"+string(v)] {
			return fmt.Errorf("holds %q=%s which no committed txn in the window wrote", k, showBytes(v))
		}
		if len(keys) == 0 || !bytes.Equal(keys[len(keys)-1], k) {
			distinct++
		}
		keys = append(keys, append([]byte(nil), k...))
		vals = append(vals, append([]byte(nil), v...))
	}
	if len(keys) != len(want) {
		return fmt.Errorf("%d items, the model has %d (a committed txn is incomplete)", len(keys), len(want))
	}
	n := uint64(len(keys))
	if flags, err := txn.Flags(dbi); err != nil {
		return err
	} else if (flags&dl.PrefixCompression != 0) != (ccPrefix != "") {
		return fmt.Errorf("DB flags %#x in a run with key prefix %q", flags, ccPrefix)
	} else if flags&dl.Counted == 0 {
		return nil // an uncounted run (TestDupSortCrashSafety): contents only
	}
	all, err := txn.CountAll(dbi)
	if err != nil || all != n {
		return fmt.Errorf("CountAll = %d, %v; a scan sees %d", all, err, n)
	}
	nk, err := txn.CountKeys(dbi, nil, nil, 0)
	if err != nil || nk != distinct {
		return fmt.Errorf("CountKeys(all) = %d, %v; a scan sees %d distinct keys", nk, err, distinct)
	}
	for _, r := range []uint64{0, n / 4, n / 2, n - 1} {
		if r >= n {
			continue
		}
		k, v, err := txn.GetRank(dbi, r)
		if err != nil || !bytes.Equal(k, keys[r]) || !bytes.Equal(v, vals[r]) {
			return fmt.Errorf("Rank(%d) = %q/%s, %v; the scan has %q/%s", r, k, showBytes(v), err, keys[r], showBytes(vals[r]))
		}
		first := sort.Search(int(r)+1, func(i int) bool { return bytes.Equal(keys[i], keys[r]) })
		kr, err := txn.KeyRank(dbi, keys[r], nil)
		if err != nil || kr != uint64(first) {
			return fmt.Errorf("KeyRank(%q) = %d, %v; the scan has its first item at %d", keys[r], kr, err, first)
		}
	}
	return nil
}

func TestCountedCrashSafety(t *testing.T) {
	ccCrashRun(t, false, false, 48*testScale(t))
}

// The same writer and checks over the same DBs created without MDB_COUNTED:
// crash safety of plain DUPSORT and DUPSORT|DUPFIXED DBs (inline sub-pages
// and a sub-tree under one hot key) with nested transactions.
func TestDupSortCrashSafety(t *testing.T) {
	ccCrashRun(t, true, false, 24*testScale(t))
}

// The same again with the three DBs prefix-compressed (and their keys, and
// the DUPSORT values, sharing a 52-byte prefix): crash safety of compressed
// leaves, compressed sub-pages and compressed duplicate sub-trees, without
// counts and with them. After each kill the file walk also requires that
// leaf pages with P_PREFIX were found.
func TestPrefixCrashSafety(t *testing.T) {
	ccCrashRun(t, true, true, 24*testScale(t))
}

func TestPrefixCountedCrashSafety(t *testing.T) {
	ccCrashRun(t, false, true, 24*testScale(t))
}

func ccCrashRun(t *testing.T, plain, pfx bool, kills int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	seedMix, wantTrees, plainEnv := int64(0xcc), 3, "DIFFTEST_CC_PLAIN=0"
	if plain {
		seedMix, wantTrees, plainEnv = 0xcd, 0, "DIFFTEST_CC_PLAIN=1"
	}
	pfxEnv := "DIFFTEST_CC_PFX=0"
	if pfx {
		seedMix ^= 0x100
		pfxEnv = "DIFFTEST_CC_PFX=1"
		ccPrefix = ccLongPrefix
		defer func() { ccPrefix = "" }()
	}
	r := rand.New(rand.NewSource(masterSeed(t) ^ seedMix))
	dir := t.TempDir()
	var reported, stored uint64
	commits := 0
	for i := 0; i < kills; i++ {
		writemap := "0"
		if i%3 == 2 {
			writemap = "1"
		}
		cmd := childCmd("counted-crash-writer", "DIFFTEST_DIR="+dir, "DIFFTEST_WRITEMAP="+writemap, plainEnv, pfxEnv)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			io.Copy(io.Discard, stdout)
			close(lines)
		}()
		target := r.Intn(25)
		var out []string
		for seen := 0; seen < target; {
			var l string
			var ok bool
			select {
			case l, ok = <-lines:
			case <-time.After(2 * time.Minute):
				// a child silent this long is stuck, not slow
				cmd.Process.Signal(syscall.SIGKILL)
				t.Fatalf("kill %d: child silent for 2 minutes after %d commits:\n%s\n%s", i, seen,
					strings.Join(out, "\n"), stderr.String())
			}
			if !ok {
				break
			}
			out = append(out, l)
			if strings.HasPrefix(l, "committed ") {
				seen++
			}
		}
		time.Sleep(time.Duration(r.Intn(4000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		for l := range lines {
			out = append(out, l)
		}
		werr := cmd.Wait()
		for _, l := range out {
			switch {
			case strings.HasPrefix(l, "committed "):
				n, _ := strconv.ParseUint(strings.TrimPrefix(l, "committed "), 10, 64)
				if n != reported+1 {
					t.Fatalf("kill %d: child reported commit %d after %d", i, n, reported)
				}
				reported = n
				commits++
			case strings.HasPrefix(l, "start "):
				n, _ := strconv.ParseUint(strings.TrimPrefix(l, "start "), 10, 64)
				if n != stored {
					t.Fatalf("kill %d: child started from seq %d, the env held %d", i, n, stored)
				}
				reported = n
			case strings.HasPrefix(l, "CHILD-ERROR"):
				t.Fatalf("kill %d: child failed: %s\n%s", i, l, headLines(stderr.String(), 40))
			}
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: child ended on its own, not by our SIGKILL (%v): %s\n%s", i, werr,
				strings.Join(out, "\n"), headLines(stderr.String(), 40))
		}
		if probs, info := walkEnv(dir); len(probs) > 0 {
			t.Fatalf("kill %d: page accounting of the data file (%s): %v", i, info, probs)
		}
		if probs, trees := countedFileCheck(dir); len(probs) > 0 || trees != wantTrees {
			t.Fatalf("kill %d: counts in the data file (%d counted trees, want %d): %v", i, trees, wantTrees, probs)
		}
		if pfx && reported > 0 {
			if leaves, prefixed, probs := prefixLeafPages(dir); prefixed == 0 || len(probs) > 0 {
				t.Fatalf("kill %d: %d of %d leaf pages (and sub-pages) have P_PREFIX (want some); walk: %v", i, prefixed, leaves, probs)
			}
		}
		got := ccVerify(t, dir)
		if i%6 == 5 {
			ccCopies(t, dir, got, wantTrees)
		}
		if got < reported || got > reported+1 {
			t.Fatalf("kill %d: env holds seq %d but the child had reported %d committed", i, got, reported)
		}
		stored, reported = got, got
	}
	t.Logf("%d kills, %d reported commits, final seq %d", kills, commits, stored)
	if commits == 0 {
		t.Fatal("no child ever committed: the test exercised nothing")
	}
}

// ccCopies: a plain and a compacting copy of the env hold the same state, with
// counts that pass both checkers.
func ccCopies(t *testing.T, dir string, seq uint64, wantTrees int) {
	t.Helper()
	env, err := ccOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	for _, flags := range []uint{0, dl.CopyCompact} {
		to := filepath.Join(t.TempDir(), fmt.Sprint(flags))
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := env.CopyFlag(to, flags); err != nil {
			t.Fatalf("copy (flags %d) at seq %d: %v", flags, seq, err)
		}
		if probs, trees := countedFileCheck(to); len(probs) > 0 || trees != wantTrees {
			t.Fatalf("copy (flags %d) at seq %d: counts in the file (%d counted trees): %v", flags, seq, trees, probs)
		}
		if got := ccVerify(t, to); got != seq {
			t.Fatalf("copy (flags %d): seq %d, the env has %d", flags, got, seq)
		}
	}
}
