package lmdb

import (
	"os"
	"strings"
	"sync"
	"testing"
)

// ourReaders returns the third field (txnid, or "-" when idle) of every
// reader-list line that carries our pid.
func ourReaders(t *testing.T, env *Env) []string {
	t.Helper()
	pid := itoa(os.Getpid())
	var ids []string
	err := env.ReaderList(func(line string) error {
		if f := strings.Fields(line); len(f) == 3 && f[0] == pid {
			ids = append(ids, f[2])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func putValue(t *testing.T, env *Env, dbi DBI, v int) {
	t.Helper()
	mustUpdate(t, env, func(txn *Txn) error {
		return txn.Put(dbi, []byte("k"), kv("value", v), 0)
	})
}

// A reset reader keeps its slot but shows it idle; Renew takes the newest
// commit; many Reset/Renew cycles leave the reader table as it was; Abort
// of a reset reader gives the slot up.
func TestResetKeepsIdleSlot(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	putValue(t, env, dbi, 0)

	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	if ids := ourReaders(t, env); len(ids) != 1 || ids[0] != itoa(int(txn.ID())) {
		t.Fatalf("live reader: list %q, txn id %d", ids, txn.ID())
	}
	txn.Reset()
	if ids := ourReaders(t, env); len(ids) != 1 || ids[0] != "-" {
		t.Fatalf("reset reader: list %q, want one idle slot", ids)
	}

	putValue(t, env, dbi, 1)
	if err := txn.Renew(); err != nil {
		t.Fatal(err)
	}
	got, err := txn.Get(dbi, []byte("k"))
	if err != nil || string(got) != string(kv("value", 1)) {
		t.Fatalf("after Renew: %q, %v; want the newest commit", got, err)
	}
	info, err := env.Info()
	if err != nil {
		t.Fatal(err)
	}
	if int64(txn.ID()) != info.LastTxnID {
		t.Fatalf("renewed txn id %d, last commit %d", txn.ID(), info.LastTxnID)
	}
	slots := info.NumReaders

	// cycles next to other readers and writers
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := env.View(func(r *Txn) error {
				_, err := r.Get(dbi, []byte("k"))
				return err
			}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 300; i++ {
		txn.Reset()
		if i%30 == 0 {
			putValue(t, env, dbi, 2+i)
		}
		if err := txn.Renew(); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Get(dbi, []byte("k")); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if info, err = env.Info(); err != nil {
		t.Fatal(err)
	}
	if info.NumReaders > slots+1 {
		t.Fatalf("reader table grew from %d to %d slots", slots, info.NumReaders)
	}
	if ids := ourReaders(t, env); len(ids) != 1 || ids[0] != itoa(int(txn.ID())) {
		t.Fatalf("renewed reader: list %q, txn id %d", ids, txn.ID())
	}

	txn.Reset()
	txn.Abort()
	if ids := ourReaders(t, env); len(ids) != 0 {
		t.Fatalf("aborted reset reader still listed: %q", ids)
	}
}

// A reset reader pins no pages: commits made while it is reset reuse freed
// pages, while the same commits under the live reader grow the file.
func TestResetReaderPinsNoPages(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	putValue(t, env, dbi, 0)
	lastPage := func() int64 {
		info, err := env.Info()
		if err != nil {
			t.Fatal(err)
		}
		return info.LastPNO
	}
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	txn.Reset()
	for i := 0; i < 4; i++ {
		putValue(t, env, dbi, i)
	}
	before := lastPage()
	for i := 0; i < 40; i++ {
		putValue(t, env, dbi, 100+i)
	}
	idle := lastPage() - before
	if err := txn.Renew(); err != nil {
		t.Fatal(err)
	}
	before = lastPage()
	for i := 0; i < 40; i++ {
		putValue(t, env, dbi, 200+i)
	}
	pinned := lastPage() - before
	if pinned < 40 || idle*4 > pinned {
		t.Fatalf("file growth over 40 commits: %d pages with the reader reset, %d with it live",
			idle, pinned)
	}
	got, err := txn.Get(dbi, []byte("k"))
	if err != nil || string(got) != string(kv("value", 139)) {
		t.Fatalf("renewed reader sees %q, %v; want the commit before Renew", got, err)
	}
}
