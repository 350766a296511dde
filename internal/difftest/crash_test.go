package difftest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	lmdb "github.com/PowerDNS/lmdb-go/lmdb"
)

// Crash safety: a child process commits numbered batches in a loop and prints
// each sequence number after Commit returns; the parent SIGKILLs it at random
// moments, then reopens the env and checks that every reported batch is
// there, that no batch is half there, and that the checker is happy. The next
// child continues from whatever the env holds.

const (
	crashKeep  = 5 // txn s deletes batch s-crashKeep, so pages are freed and reused
	crashDBA   = "crash-a"
	crashDBB   = "crash-b"
	crashSeqDB = "crash-seq"
)

func init() {
	childRoles["crash-writer"] = crashWriter
}

type crashItem struct {
	db  string
	key []byte
	val []byte
}

// crashBatch is the deterministic content written by txn s: keys in two DBs
// (so a torn commit could show in one and not the other), some values
// spilling to overflow pages.
func crashBatch(s uint64) []crashItem {
	n := 1 + int(s*7919%41)
	items := make([]crashItem, 0, n)
	for i := 0; i < n; i++ {
		db := crashDBA
		if i%3 == 1 {
			db = crashDBB
		}
		size := 8 + int((s*31+uint64(i)*17)%90)
		if (s+uint64(i))%6 == 0 {
			size = 2500 + int((s*13+uint64(i))%9000)
		}
		val := make([]byte, size)
		x := s*1000003 + uint64(i) + 1
		for j := range val {
			x = x*6364136223846793005 + 1442695040888963407
			val[j] = byte(x >> 56)
		}
		items = append(items, crashItem{db, []byte(fmt.Sprintf("b%08d/%03d", s, i)), val})
	}
	return items
}

func crashOpts() envOpts {
	o := envOpts{mapSize: 256 << 20, maxDBs: 4}
	if os.Getenv("DIFFTEST_WRITEMAP") == "1" {
		o.flags |= uint(lmdb.WriteMap)
	}
	return o
}

func crashWriter() error {
	dir := os.Getenv("DIFFTEST_DIR")
	env, err := subject.openEnv(dir, crashOpts())
	if err != nil {
		return err
	}
	defer env.close()
	txn, err := env.begin(nil, 0)
	if err != nil {
		return err
	}
	dbis := map[string]uint32{}
	for _, name := range []string{crashDBA, crashDBB, crashSeqDB} {
		if dbis[name], err = txn.openDBI(name, fCreate); err != nil {
			return err
		}
	}
	var start uint64
	if v, err := txn.get(dbis[crashSeqDB], []byte("seq")); err == nil {
		start, _ = strconv.ParseUint(string(v), 10, 64)
	} else if subject.code(err) != eNotFound {
		return err
	}
	if err := txn.commit(); err != nil {
		return err
	}
	fmt.Printf("start %d\n", start)
	for s := start + 1; s < start+100000; s++ {
		txn, err := env.begin(nil, 0)
		if err != nil {
			return err
		}
		for _, it := range crashBatch(s) {
			if err := txn.put(dbis[it.db], it.key, it.val, 0); err != nil {
				return err
			}
		}
		if s > crashKeep {
			for _, it := range crashBatch(s - crashKeep) {
				if err := txn.del(dbis[it.db], it.key, nil); err != nil {
					return fmt.Errorf("txn %d: del %s: %w", s, it.key, err)
				}
			}
		}
		if err := txn.put(dbis[crashSeqDB], []byte("seq"), []byte(strconv.FormatUint(s, 10)), 0); err != nil {
			return err
		}
		if err := txn.commit(); err != nil {
			return err
		}
		fmt.Printf("committed %d\n", s)
	}
	return nil
}

// crashVerify opens the env and checks it holds exactly the batches
// max(1,S-crashKeep+1)..S where S is the stored sequence; returns S.
func crashVerify(t *testing.T, dir string, o envOpts) uint64 {
	return crashVerifyWith(t, subject, dir, o)
}

func crashVerifyWith(t *testing.T, subject engine, dir string, o envOpts) uint64 {
	t.Helper()
	env, err := subject.openEnv(dir, o)
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer env.close()
	txn, err := env.begin(nil, fReadonly)
	if err != nil {
		t.Fatalf("begin after kill: %v", err)
	}
	defer txn.abort()
	var seq uint64
	seqDB, err := txn.openDBI(crashSeqDB, 0)
	if subject.code(err) == eNotFound {
		return 0 // killed before the first commit
	}
	if err != nil {
		t.Fatalf("open seq db: %v", err)
	}
	v, err := txn.get(seqDB, []byte("seq"))
	if err != nil {
		t.Fatalf("read seq: %v", err)
	}
	if seq, err = strconv.ParseUint(string(v), 10, 64); err != nil {
		t.Fatalf("seq value %q: %v", v, err)
	}
	want := map[string]map[string][]byte{crashDBA: {}, crashDBB: {}}
	for s := seq; s > 0 && s+crashKeep > seq; s-- {
		for _, it := range crashBatch(s) {
			want[it.db][string(it.key)] = it.val
		}
	}
	for _, name := range []string{crashDBA, crashDBB} {
		dbi, err := txn.openDBI(name, 0)
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		kvs, st, err := dumpTxnDB(subject, txn, dbi)
		if err != nil {
			t.Fatalf("scan %s: %v", name, err)
		}
		for _, kv := range kvs {
			w, ok := want[name][string(kv.k)]
			if !ok {
				t.Fatalf("seq %d: %s holds %q which no committed batch in the window wrote (partial or stale txn visible)",
					seq, name, kv.k)
			}
			if !bytes.Equal(w, kv.v) {
				t.Fatalf("seq %d: %s/%q has a wrong value (%d bytes, want %d)", seq, name, kv.k, len(kv.v), len(w))
			}
		}
		if len(kvs) != len(want[name]) || st.items != uint64(len(kvs)) {
			t.Fatalf("seq %d: %s has %d entries (stat %d), want %d: a committed batch is incomplete",
				seq, name, len(kvs), st.items, len(want[name]))
		}
	}
	if err := txn.check(); err != nil {
		t.Fatalf("seq %d: Check after kill: %v", seq, err)
	}
	return seq
}

func TestCrashSafety(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := rand.New(rand.NewSource(masterSeed(t)))
	dir := t.TempDir()
	kills := 100 * testScale(t)
	var reported, stored uint64
	totalCommits, unreported, stockChecks := 0, 0, 0
	for i := 0; i < kills; i++ {
		writemap := "0"
		if i%3 == 2 {
			writemap = "1"
		}
		cmd := childCmd("crash-writer", "DIFFTEST_DIR="+dir, "DIFFTEST_WRITEMAP="+writemap)
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
		// kill after a random number of reported commits plus a random delay
		target := r.Intn(15)
		var out []string
		seen := 0
	wait:
		for seen < target {
			var l string
			var ok bool
			select {
			case l, ok = <-lines:
			case <-time.After(2 * time.Minute):
				// not a speed limit: a child that writes nothing for this long
				// is stuck (e.g. a writer lock left by the killed child that
				// was never recovered)
				cmd.Process.Signal(syscall.SIGKILL)
				t.Fatalf("kill %d: child silent for 2 minutes after %d commits: hung?\n%s\n%s",
					i, seen, strings.Join(out, "\n"), stderr.String())
			}
			if !ok {
				break wait
			}
			out = append(out, l)
			if strings.HasPrefix(l, "committed ") {
				seen++
			}
		}
		time.Sleep(time.Duration(r.Intn(3000)) * time.Microsecond)
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
				totalCommits++
			case strings.HasPrefix(l, "start "):
				n, _ := strconv.ParseUint(strings.TrimPrefix(l, "start "), 10, 64)
				if n != stored {
					t.Fatalf("kill %d: child started from seq %d, the env held %d", i, n, stored)
				}
				reported = n
			case strings.HasPrefix(l, "CHILD-ERROR"):
				t.Fatalf("kill %d: child failed: %s\n%s", i, l, stderr.String())
			}
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("kill %d: child ended on its own, not by our SIGKILL (%v): %s\n%s", i, werr,
				strings.Join(out, "\n"), headLines(stderr.String(), 40))
		}
		if probs, info := walkEnv(dir); len(probs) > 0 {
			t.Fatalf("kill %d: page accounting of the data file (%s): %v", i, info, probs)
		}
		got := crashVerify(t, dir, crashOpts())
		if i%5 == 4 && subject.name() != "stock" {
			// stock LMDB must see the same state in the killed engine's file
			if s := crashVerifyWith(t, stockEngine{}, dir, crashOpts()); s != got {
				t.Fatalf("kill %d: ours sees seq %d, stock sees %d", i, got, s)
			}
			stockChecks++
		}
		if got < reported || got > reported+1 {
			t.Fatalf("kill %d: env holds seq %d but the child had reported %d committed", i, got, reported)
		}
		if got == reported+1 {
			unreported++
		}
		stored, reported = got, got
	}
	t.Logf("%d kills, %d reported commits, %d kills landed after a commit but before its report, final seq %d, "+
		"%d times also verified with stock", kills, totalCommits, unreported, stored, stockChecks)
	if totalCommits == 0 {
		t.Fatal("no child ever committed: the test exercised nothing")
	}
}
