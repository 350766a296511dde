package lmdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// scan walks the cursor with first/next ops and returns "k=v" strings.
func scan(t testing.TB, cur *Cursor, first, next uint) []string {
	t.Helper()
	var out []string
	op := first
	for {
		k, v, err := cur.Get(nil, nil, op)
		if IsNotFound(err) {
			return out
		}
		if err != nil {
			t.Fatalf("cursor Get: %v", err)
		}
		out = append(out, string(k)+"="+string(v))
		op = next
	}
}

func TestCursorIterate(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 20)
	mustView(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		fwd := scan(t, cur, First, Next)
		if len(fwd) != 20 || fwd[0] != "key000=val000" || fwd[19] != "key019=val019" {
			t.Fatalf("forward scan: %v", fwd)
		}
		back := scan(t, cur, Last, Prev)
		for i := range back {
			if back[i] != fwd[len(fwd)-1-i] {
				t.Fatalf("backward scan differs at %d: %v", i, back)
			}
		}
		// A fresh cursor starts at the ends with Next/Prev.
		c2, _ := txn.OpenCursor(dbi)
		defer c2.Close()
		if k, _, err := c2.Get(nil, nil, Next); err != nil || string(k) != "key000" {
			t.Errorf("Next on fresh cursor: %q, %v", k, err)
		}
		c3, _ := txn.OpenCursor(dbi)
		defer c3.Close()
		if k, _, err := c3.Get(nil, nil, Prev); err != nil || string(k) != "key019" {
			t.Errorf("Prev on fresh cursor: %q, %v", k, err)
		}
		k, v, err := c3.Get(nil, nil, GetCurrent)
		if err != nil || string(k) != "key019" || string(v) != "val019" {
			t.Errorf("GetCurrent: %q %q %v", k, v, err)
		}
		return nil
	})
}

func TestCursorSeek(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 10)
	for _, raw := range []bool{false, true} {
		mustView(t, env, func(txn *Txn) error {
			txn.RawRead = raw
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()

			want := []byte("key004")
			k, v, err := cur.Get(want, nil, Set)
			if err != nil || !bytes.Equal(k, want) || string(v) != "val004" {
				t.Fatalf("raw=%v Set: %q %q %v", raw, k, v, err)
			}
			// Set hands back setkey itself with RawRead, a copy otherwise.
			if raw != (&k[0] == &want[0]) {
				t.Errorf("raw=%v: Set key aliases setkey = %v", raw, &k[0] == &want[0])
			}

			k, v, err = cur.Get([]byte("key007"), nil, SetKey)
			if err != nil || string(k) != "key007" || string(v) != "val007" {
				t.Fatalf("SetKey: %q %q %v", k, v, err)
			}
			k, v, err = cur.Get([]byte("key0045"), nil, SetRange)
			if err != nil || string(k) != "key005" || string(v) != "val005" {
				t.Fatalf("SetRange: %q %q %v", k, v, err)
			}
			if _, _, err := cur.Get([]byte("zzz"), nil, SetRange); !IsNotFound(err) {
				t.Fatalf("SetRange past end: %v", err)
			}
			if _, _, err := cur.Get([]byte("key0045"), nil, Set); !IsNotFound(err) {
				t.Fatalf("Set missing key: %v", err)
			}
			// Seeking with an empty key is an error, never a crash.
			for _, op := range []uint{Set, SetKey, SetRange, GetBoth, GetBothRange} {
				_, _, err := cur.Get(nil, nil, op)
				wantErrno(t, fmt.Sprintf("op %d with nil key", op), err, BadValSize)
				_, _, err = cur.Get([]byte{}, []byte("v"), op)
				wantErrno(t, fmt.Sprintf("op %d with empty key", op), err, BadValSize)
			}
			return nil
		})
	}
}

func TestCursorDupSort(t *testing.T) {
	env := openEnv(t, 0)
	requireDupSort(t, env, 0)
	dbi := openDB(t, env, "dups", DupSort)
	mustUpdate(t, env, func(txn *Txn) error {
		for _, k := range []string{"a", "b", "c"} {
			for _, v := range []string{"3", "1", "2"} {
				if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
					return err
				}
			}
		}
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		all := scan(t, cur, First, Next)
		if fmt.Sprint(all) != "[a=1 a=2 a=3 b=1 b=2 b=3 c=1 c=2 c=3]" {
			t.Fatalf("scan: %v", all)
		}
		keys := scan(t, cur, First, NextNoDup)
		if fmt.Sprint(keys) != "[a=1 b=1 c=1]" {
			t.Fatalf("NextNoDup: %v", keys)
		}
		keys = scan(t, cur, Last, PrevNoDup)
		if fmt.Sprint(keys) != "[c=3 b=3 a=3]" {
			t.Fatalf("PrevNoDup: %v", keys)
		}

		k, v, err := cur.Get([]byte("b"), []byte("2"), GetBoth)
		if err != nil || string(k) != "b" || string(v) != "2" {
			t.Fatalf("GetBoth: %q %q %v", k, v, err)
		}
		if _, _, err := cur.Get([]byte("b"), []byte("9"), GetBoth); !IsNotFound(err) {
			t.Fatalf("GetBoth missing: %v", err)
		}
		k, v, err = cur.Get([]byte("b"), []byte("15"), GetBothRange)
		if err != nil || string(k) != "b" || string(v) != "2" {
			t.Fatalf("GetBothRange: %q %q %v", k, v, err)
		}
		n, err := cur.Count()
		if err != nil || n != 3 {
			t.Fatalf("Count = %d, %v", n, err)
		}
		for _, step := range []struct {
			op   uint
			want string
		}{{FirstDup, "1"}, {NextDup, "2"}, {NextDup, "3"}, {LastDup, "3"}, {PrevDup, "2"}} {
			_, v, err := cur.Get(nil, nil, step.op)
			if err != nil || string(v) != step.want {
				t.Fatalf("op %d: %q %v, want %s", step.op, v, err, step.want)
			}
		}
		cur.Get(nil, nil, LastDup)
		if _, _, err := cur.Get(nil, nil, NextDup); !IsNotFound(err) {
			t.Fatalf("NextDup past last dup: %v", err)
		}
		return nil
	})
	// Cursor.Del with NoDupData removes every value of the key.
	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		if _, _, err := cur.Get([]byte("b"), nil, Set); err != nil {
			return err
		}
		if err := cur.Del(NoDupData); err != nil {
			return err
		}
		st, err := txn.Stat(dbi)
		if err != nil || st.Entries != 6 {
			t.Errorf("after deleting key b: %+v, %v", st, err)
		}
		return nil
	})
}

func TestCursorCountNonDup(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 1)
	mustView(t, env, func(txn *Txn) error {
		cur, _ := txn.OpenCursor(dbi)
		defer cur.Close()
		cur.Get(nil, nil, First)
		_, err := cur.Count()
		if !IsErrno(err, Incompatible) {
			t.Errorf("Count without DupSort = %v, want Incompatible", err)
		}
		return nil
	})
}

func TestCursorPutDel(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		for i := 0; i < 10; i++ {
			if err := cur.Put(kv("k", i), kv("v", i), 0); err != nil {
				return err
			}
			// The cursor sits on the item it stored.
			k, _, err := cur.Get(nil, nil, GetCurrent)
			if err != nil || !bytes.Equal(k, kv("k", i)) {
				t.Fatalf("after Put %d cursor on %q, %v", i, k, err)
			}
		}
		wantErrno(t, "cursor Put empty key", cur.Put(nil, []byte("v"), 0), BadValSize)
		wantErrno(t, "cursor NoOverwrite", cur.Put(kv("k", 3), nil, NoOverwrite), KeyExist)

		if _, _, err := cur.Get(kv("k", 5), nil, Set); err != nil {
			return err
		}
		if err := cur.Put(kv("k", 5), []byte("replaced"), Current); err != nil {
			return err
		}
		if err := cur.Put(kv("k", 9), []byte("empty-next"), 0); err != nil {
			return err
		}
		if err := cur.Put(kv("k", 9), nil, 0); err != nil { // empty value
			return err
		}
		if _, _, err := cur.Get(kv("k", 2), nil, Set); err != nil {
			return err
		}
		if err := cur.Del(0); err != nil {
			return err
		}
		k, _, err := cur.Get(nil, nil, Next)
		if err != nil || !bytes.Equal(k, kv("k", 3)) {
			t.Errorf("Next after Del: %q, %v", k, err)
		}
		buf, err := cur.PutReserve([]byte("res"), 4, 0)
		if err != nil {
			return err
		}
		copy(buf, "1234")
		if _, err := cur.PutReserve(nil, 4, 0); !errors.Is(err, BadValSize) {
			t.Errorf("cursor PutReserve nil key = %v", err)
		}
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		for k, want := range map[string]string{"k005": "replaced", "k009": "", "res": "1234"} {
			v, err := txn.Get(dbi, []byte(k))
			if err != nil || string(v) != want {
				t.Errorf("%s = %q, %v; want %q", k, v, err, want)
			}
		}
		if _, err := txn.Get(dbi, []byte("k002")); !IsNotFound(err) {
			t.Errorf("deleted k002: %v", err)
		}
		return nil
	})
}

// GetMultiple on a key holding one value stored as a plain node returns
// that value as a one-value page, in place (RawRead: the same bytes of the
// map GetCurrent points at), and NextMultiple/PrevMultiple find no other
// page; on a fresh cursor NextMultiple and PrevMultiple return the first
// and last key's pages.
func TestCursorGetMultipleSingleValue(t *testing.T) {
	env := openEnv(t, 0)
	requireDupSort(t, env, DupFixed)
	dbi := openDB(t, env, "fixed", DupSort|DupFixed)
	one, two := []byte("onevalue"), []byte("twovalue")
	mustUpdate(t, env, func(txn *Txn) error {
		if err := txn.Put(dbi, []byte("a"), one, 0); err != nil {
			return err
		}
		return txn.Put(dbi, []byte("b"), two, 0)
	})
	mustView(t, env, func(txn *Txn) error {
		txn.RawRead = true
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		if _, _, err := cur.Get([]byte("a"), nil, SetKey); err != nil {
			return err
		}
		_, page, err := cur.Get(nil, nil, GetMultiple)
		if err != nil || !bytes.Equal(page, one) {
			t.Fatalf("GetMultiple on a single value: %q, %v; want %q", page, err, one)
		}
		_, cv, err := cur.Get(nil, nil, GetCurrent)
		if err != nil || &cv[0] != &page[0] || len(cv) != len(page) {
			t.Errorf("GetMultiple's page is not the stored value in place (GetCurrent %q, %v)", cv, err)
		}
		if m := WrapMulti(page, len(one)); m.Len() != 1 || !bytes.Equal(m.Val(0), one) {
			t.Errorf("WrapMulti of the page: %d values", m.Len())
		}
		if _, _, err := cur.Get(nil, nil, NextMultiple); !IsNotFound(err) {
			t.Errorf("NextMultiple after the only page: %v, want NotFound", err)
		}
		if _, _, err := cur.Get(nil, nil, PrevMultiple); !IsNotFound(err) {
			t.Errorf("PrevMultiple before the only page: %v, want NotFound", err)
		}
		for _, c := range []struct {
			op   uint
			k, v []byte
		}{{NextMultiple, []byte("a"), one}, {PrevMultiple, []byte("b"), two}} {
			fresh, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			k, v, err := fresh.Get(nil, nil, c.op)
			fresh.Close()
			if err != nil || !bytes.Equal(k, c.k) || !bytes.Equal(v, c.v) {
				t.Errorf("op %d on a fresh cursor: %q %q %v; want %q %q", c.op, k, v, err, c.k, c.v)
			}
		}
		return nil
	})
}

func TestCursorDupFixedMulti(t *testing.T) {
	env := openEnv(t, 0)
	requireDupSort(t, env, DupFixed)
	dbi := openDB(t, env, "fixed", DupSort|DupFixed)
	const n = 2000
	page := make([]byte, 0, 8*n)
	for i := 0; i < n; i++ {
		page = binary.BigEndian.AppendUint64(page, uint64(i*3))
	}
	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		if err := cur.PutMulti([]byte("k"), page, 8, 0); err != nil {
			return err
		}
		if err := cur.PutMulti([]byte("k"), nil, 8, 0); err == nil {
			t.Error("PutMulti with empty page: no error")
		}
		if err := cur.PutMulti([]byte("k"), page, 0, 0); err == nil {
			t.Error("PutMulti with stride 0: no error")
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("PutMulti with incongruent page did not panic")
				}
			}()
			cur.PutMulti([]byte("k"), page[:13], 8, 0)
		}()
		return nil
	})
	mustView(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		if _, _, err := cur.Get([]byte("k"), nil, Set); err != nil {
			return err
		}
		if c, err := cur.Count(); err != nil || c != n {
			t.Fatalf("Count = %d, %v", c, err)
		}
		var got []byte
		_, first, err := cur.Get(nil, nil, FirstDup)
		if err != nil {
			return err
		}
		stride := len(first)
		_, p, err := cur.Get(nil, nil, GetMultiple)
		for err == nil {
			m := WrapMulti(p, stride)
			got = append(got, m.Page()...)
			_, p, err = cur.Get(nil, nil, NextMultiple)
		}
		if !IsNotFound(err) {
			return err
		}
		if !bytes.Equal(got, page) {
			t.Fatalf("GetMultiple/NextMultiple returned %d bytes, want %d (equal=%v)", len(got), len(page), bytes.Equal(got, page))
		}
		return nil
	})
}

func TestCursorRenew(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 1)
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	txn.Reset()
	fill(t, env, dbi, 2)
	if err := txn.Renew(); err != nil {
		t.Fatal(err)
	}
	if err := cur.Renew(txn); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, cur, First, Next); len(got) != 2 {
		t.Fatalf("renewed cursor sees %v", got)
	}
	// Move the cursor to a different transaction.
	txn2, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn2.Abort()
	if err := cur.Renew(txn2); err != nil {
		t.Fatal(err)
	}
	if cur.Txn() != txn2 {
		t.Fatal("Txn() not updated by Renew")
	}
	// Renewing with an ended transaction fails cleanly.
	txn2.Abort()
	if err := cur.Renew(txn2); !errors.Is(err, BadTxn) {
		t.Fatalf("Renew with ended txn = %v", err)
	}
	// A write cursor cannot be renewed.
	mustUpdate(t, env, func(w *Txn) error {
		wc, err := w.OpenCursor(dbi)
		if err != nil {
			return err
		}
		if err := wc.Renew(txn); !IsErrnoSys(err, syscall.EINVAL) {
			t.Errorf("Renew of a write cursor = %v", err)
		}
		return nil
	})
}

func TestCursorAfterEnd(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 3)

	probe := func(name string, cur *Cursor, want error) {
		t.Helper()
		results := map[string]error{}
		_, _, results["Get"] = cur.Get(nil, nil, First)
		_, _, results["Get/Set"] = cur.Get([]byte("key001"), nil, Set)
		results["Put"] = cur.Put([]byte("x"), []byte("y"), 0)
		_, results["PutReserve"] = cur.PutReserve([]byte("x"), 2, 0)
		results["PutMulti"] = cur.PutMulti([]byte("x"), []byte("ab"), 1, 0)
		results["Del"] = cur.Del(0)
		_, results["Count"] = cur.Count()
		for op, err := range results {
			if !errors.Is(err, want) {
				t.Errorf("%s: %s = %v, want %v", name, op, err, want)
			}
		}
	}

	// Cursor of a committed write transaction: the engine freed it.
	var wcur *Cursor
	mustUpdate(t, env, func(txn *Txn) (err error) {
		wcur, err = txn.OpenCursor(dbi)
		return err
	})
	probe("write cursor after commit", wcur, BadTxn)
	if wcur.DBI() != ^DBI(0) {
		t.Error("DBI of freed write cursor is not the invalid handle")
	}
	wcur.Close()
	wcur.Close()

	// Cursor of an aborted reader: still allocated, unusable until renewed.
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	rcur, err := txn.OpenCursor(dbi)
	if err != nil {
		t.Fatal(err)
	}
	if rcur.DBI() != dbi {
		t.Errorf("DBI = %d, want %d", rcur.DBI(), dbi)
	}
	txn.Abort()
	probe("read cursor after abort", rcur, BadTxn)
	txn2, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn2.Abort()
	if err := rcur.Renew(txn2); err != nil {
		t.Fatalf("Renew after abort: %v", err)
	}
	if _, _, err := rcur.Get(nil, nil, First); err != nil {
		t.Fatalf("renewed cursor: %v", err)
	}

	// Closed cursor.
	rcur.Close()
	probe("closed cursor", rcur, syscall.EINVAL)
	if rcur.Txn() != nil || rcur.DBI() != ^DBI(0) {
		t.Error("closed cursor still reports a txn or DBI")
	}
	if err := rcur.Renew(txn2); err == nil {
		t.Error("Renew of closed cursor: no error")
	}
}

func TestCursorOpenErrors(t *testing.T) {
	env := openEnv(t, 0)
	mustView(t, env, func(txn *Txn) error {
		if _, err := txn.OpenCursor(DBI(200)); err == nil {
			t.Error("OpenCursor on unknown DBI: no error")
		}
		return nil
	})
}

func TestCursorCloseInsideWriteTxn(t *testing.T) {
	inChild(t, func(t *testing.T) {
		env := openEnv(t, 0)
		dbi := openDB(t, env, "", 0)
		fill(t, env, dbi, 5)
		for _, commit := range []bool{true, false} {
			err := env.Update(func(txn *Txn) error {
				cur, err := txn.OpenCursor(dbi)
				if err != nil {
					return err
				}
				if _, _, err := cur.Get(nil, nil, First); err != nil {
					return err
				}
				if err := cur.Del(0); err != nil {
					return err
				}
				cur.Close() // explicitly, before the transaction ends
				if !commit {
					return errors.New("roll back")
				}
				return nil
			})
			if commit && err != nil {
				t.Fatal(err)
			}
		}
		mustView(t, env, func(txn *Txn) error {
			st, err := txn.Stat(dbi)
			if err != nil || st.Entries != 4 {
				t.Errorf("after one committed delete: %+v, %v", st, err)
			}
			return nil
		})
	})
}

// A read-only cursor that becomes unreachable is closed by its finalizer;
// the transaction and later cursors are unaffected.
func TestCursorFinalizer(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 3)
	txn, err := env.BeginTxn(nil, Readonly)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Abort()
	collected := make(chan struct{}, 1)
	func() {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			t.Fatal(err)
		}
		cur.Get(nil, nil, First)
		runtime.AddCleanup(cur, func(ch chan struct{}) { ch <- struct{}{} }, collected)
	}()
	for tries := 0; ; tries++ {
		if tries == 10000 {
			t.Fatal("leaked cursor was never collected")
		}
		runtime.GC()
		select {
		case <-collected:
		default:
			continue
		}
		break
	}
	cur, err := txn.OpenCursor(dbi)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	if got := scan(t, cur, First, Next); len(got) != 3 {
		t.Fatalf("after a finalized cursor: %v", got)
	}
}

func TestBadOpsAndFlags(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "", 0)
	fill(t, env, dbi, 3)
	mustUpdate(t, env, func(txn *Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		if _, _, err := cur.Get(nil, nil, 99); err == nil {
			t.Error("cursor op 99: no error")
		}
		// Reserve and multiple-value flags belong to PutReserve/PutMulti;
		// given to Put they are ignored rather than corrupting memory.
		const reserve, multiple = 0x10000, 0x80000
		if err := txn.Put(dbi, []byte("p"), []byte("plain"), reserve|multiple); err != nil {
			return err
		}
		if err := cur.Put([]byte("q"), []byte("plain too"), reserve|multiple); err != nil {
			return err
		}
		for k, want := range map[string]string{"p": "plain", "q": "plain too"} {
			if v, err := txn.Get(dbi, []byte(k)); err != nil || string(v) != want {
				t.Errorf("%s = %q, %v", k, v, err)
			}
		}
		return nil
	})
}

func TestKeyOrderFlags(t *testing.T) {
	env := openEnv(t, 0)
	u64 := func(n uint64) []byte { return binary.NativeEndian.AppendUint64(nil, n) }
	cases := []struct {
		name  string
		flags uint
		keys  [][]byte
		order []int // indexes into keys, in expected scan order
	}{
		{"bytewise", 0, [][]byte{[]byte("ab"), []byte("ba"), []byte("ca")}, []int{0, 1, 2}},
		{"reverse", ReverseKey, [][]byte{[]byte("ab"), []byte("ba"), []byte("ca")}, []int{1, 2, 0}},
		{"integer", IntegerKey, [][]byte{u64(256), u64(1), u64(2)}, []int{1, 2, 0}},
	}
	for _, tc := range cases {
		dbi := openDB(t, env, tc.name, tc.flags)
		mustUpdate(t, env, func(txn *Txn) error {
			for _, k := range tc.keys {
				if err := txn.Put(dbi, k, []byte(tc.name), 0); err != nil {
					return err
				}
			}
			return nil
		})
		mustView(t, env, func(txn *Txn) error {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				return err
			}
			defer cur.Close()
			for i, want := range tc.order {
				op := uint(Next)
				if i == 0 {
					op = First
				}
				k, _, err := cur.Get(nil, nil, op)
				if err != nil || !bytes.Equal(k, tc.keys[want]) {
					t.Errorf("%s: item %d = %x, %v; want %x", tc.name, i, k, err, tc.keys[want])
				}
			}
			return nil
		})
	}
}

func TestDupOrderFlags(t *testing.T) {
	u32 := func(n uint32) []byte { return binary.NativeEndian.AppendUint32(nil, n) }
	cases := []struct {
		name  string
		flags uint
		vals  [][]byte
		order []int
	}{
		{"plain", 0, [][]byte{[]byte("ab"), []byte("ba"), []byte("ca")}, []int{0, 1, 2}},
		{"reverse", ReverseDup, [][]byte{[]byte("ab"), []byte("ba"), []byte("ca")}, []int{1, 2, 0}},
		{"integer", DupFixed | IntegerDup, [][]byte{u32(256), u32(1), u32(2)}, []int{1, 2, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := openEnv(t, 0)
			requireDupSort(t, env, tc.flags)
			dbi := openDB(t, env, tc.name, DupSort|tc.flags)
			mustUpdate(t, env, func(txn *Txn) error {
				for _, v := range tc.vals {
					if err := txn.Put(dbi, []byte("k"), v, 0); err != nil {
						return err
					}
				}
				return nil
			})
			mustView(t, env, func(txn *Txn) error {
				cur, err := txn.OpenCursor(dbi)
				if err != nil {
					return err
				}
				defer cur.Close()
				for i, want := range tc.order {
					op := uint(NextDup)
					if i == 0 {
						op = First
					}
					_, v, err := cur.Get(nil, nil, op)
					if err != nil || !bytes.Equal(v, tc.vals[want]) {
						t.Errorf("value %d = %x, %v; want %x", i, v, err, tc.vals[want])
					}
				}
				return nil
			})
		})
	}
}

// TestReadCursorFinalizerBesideAbort: a read-only txn's cursor dropped
// without Close is released by its finalizer, which may run while the
// txn's own goroutine aborts it; under -race that must not be a data race
// on the txn's handle (a regression: freed read it before the read-only
// flag).
func TestReadCursorFinalizerBesideAbort(t *testing.T) {
	env := openEnv(t, 0)
	dbi := openDB(t, env, "d", 0)
	mustUpdate(t, env, func(txn *Txn) error { return txn.Put(dbi, []byte("k"), []byte("v"), 0) })
	for i := 0; i < 20; i++ {
		txn, err := env.BeginTxn(nil, Readonly)
		if err != nil {
			t.Fatal(err)
		}
		func() {
			cur, err := txn.OpenCursor(dbi)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := cur.Get(nil, nil, First); err != nil {
				t.Fatal(err)
			}
		}() // the cursor is garbage from here on
		// the finalizer runs on its own goroutine; nothing orders it
		// before the abort but time
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		txn.Abort()
	}
}
