package lmdb_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// newExampleEnv opens an environment in a fresh temporary directory and
// returns a function that closes and removes it.
func newExampleEnv() (*lmdb.Env, func()) {
	dir, err := os.MkdirTemp("", "lmdb-example")
	if err != nil {
		log.Fatal(err)
	}
	env, err := lmdb.NewEnv()
	if err != nil {
		log.Fatal(err)
	}
	env.SetMaxDBs(4)
	env.SetMapSize(16 << 20)
	if err := env.Open(dir, 0, 0o644); err != nil {
		log.Fatal(err)
	}
	return env, func() {
		env.Close()
		os.RemoveAll(dir)
	}
}

// The basic cycle: open an environment, create a database, write in one
// transaction and read in another.
func Example() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	var dbi lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.CreateDBI("fruit")
		if err != nil {
			return err
		}
		return txn.Put(dbi, []byte("apple"), []byte("red"), 0)
	})
	if err != nil {
		log.Fatal(err)
	}

	err = env.View(func(txn *lmdb.Txn) error {
		v, err := txn.Get(dbi, []byte("apple"))
		if err != nil {
			return err
		}
		fmt.Printf("apple is %s\n", v)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: apple is red
}

// Update commits when the function returns nil and rolls back otherwise.
func ExampleEnv_Update() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	errOutOfStock := errors.New("out of stock")
	var dbi lmdb.DBI
	env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.OpenRoot(0)
		if err != nil {
			return err
		}
		return txn.Put(dbi, []byte("stock"), []byte("1"), 0)
	})

	err := env.Update(func(txn *lmdb.Txn) error {
		if err := txn.Put(dbi, []byte("stock"), []byte("0"), 0); err != nil {
			return err
		}
		return errOutOfStock // undoes the Put above
	})
	fmt.Println("update:", err)

	env.View(func(txn *lmdb.Txn) error {
		v, _ := txn.Get(dbi, []byte("stock"))
		fmt.Println("stock:", string(v))
		return nil
	})
	// Output:
	// update: out of stock
	// stock: 1
}

// A missing key is reported with an error that IsNotFound (or errors.Is
// with lmdb.NotFound) recognises, even after wrapping.
func ExampleTxn_Get() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	err := env.Update(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		_, err = txn.Get(dbi, []byte("nobody"))
		return fmt.Errorf("looking up nobody: %w", err)
	})
	fmt.Println(lmdb.IsNotFound(err), errors.Is(err, lmdb.NotFound))
	// Output: true true
}

// RawRead avoids copying values: the slices point into the map and are
// only valid inside the transaction.
func ExampleTxn_RawRead() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	var dbi lmdb.DBI
	env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.OpenRoot(0)
		if err != nil {
			return err
		}
		return txn.Put(dbi, []byte("big"), make([]byte, 1<<16), 0)
	})
	env.View(func(txn *lmdb.Txn) error {
		txn.RawRead = true
		v, err := txn.Get(dbi, []byte("big"))
		if err != nil {
			return err
		}
		fmt.Println(len(v)) // use v here, never after View returns
		return nil
	})
	// Output: 65536
}

// Iterating over a database with a cursor, and seeking to the first key at
// or after a given one.
func ExampleCursor_Get() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	var dbi lmdb.DBI
	env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.CreateDBI("planets")
		if err != nil {
			return err
		}
		for i, name := range []string{"mercury", "venus", "earth", "mars"} {
			if err := txn.Put(dbi, []byte(name), []byte{byte('1' + i)}, 0); err != nil {
				return err
			}
		}
		return nil
	})

	env.View(func(txn *lmdb.Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		var pairs []string
		for op := uint(lmdb.First); ; op = lmdb.Next {
			k, v, err := cur.Get(nil, nil, op)
			if lmdb.IsNotFound(err) {
				break
			}
			if err != nil {
				return err
			}
			pairs = append(pairs, fmt.Sprintf("%s=%s", k, v))
		}
		fmt.Println(strings.Join(pairs, " "))
		k, _, err := cur.Get([]byte("mb"), nil, lmdb.SetRange)
		if err != nil {
			return err
		}
		fmt.Println("first key >= mb:", string(k))
		return nil
	})
	// Output:
	// earth=3 mars=4 mercury=1 venus=2
	// first key >= mb: mercury
}

// In a DupSort database a key holds a sorted set of values.
func ExampleCursor_Get_dupSort() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	var dbi lmdb.DBI
	env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.OpenDBI("tags", lmdb.Create|lmdb.DupSort)
		if err != nil {
			return err
		}
		for _, tag := range []string{"go", "c", "db"} {
			if err := txn.Put(dbi, []byte("lmdb"), []byte(tag), 0); err != nil {
				return err
			}
		}
		return nil
	})

	env.View(func(txn *lmdb.Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		_, v, err := cur.Get([]byte("lmdb"), nil, lmdb.Set)
		for err == nil {
			fmt.Print(string(v), " ")
			_, v, err = cur.Get(nil, nil, lmdb.NextDup)
		}
		n, _ := cur.Count()
		fmt.Println("count", n)
		return nil
	})
	// Output: c db go count 3
}

// Sub runs a nested transaction whose changes can be discarded without
// giving up the outer one.
func ExampleTxn_Sub() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	env.Update(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		txn.Put(dbi, []byte("a"), []byte("kept"), 0)
		txn.Sub(func(sub *lmdb.Txn) error {
			sub.Put(dbi, []byte("b"), []byte("discarded"), 0)
			return errors.New("changed my mind")
		})
		_, err = txn.Get(dbi, []byte("b"))
		fmt.Println("b after rollback found:", err == nil)
		v, _ := txn.Get(dbi, []byte("a"))
		fmt.Println("a:", string(v))
		return nil
	})
	// Output:
	// b after rollback found: false
	// a: kept
}

// A goroutine that owns all writes: other goroutines send it functions, so
// none of them needs to care about OS thread locking.
func ExampleEnv_UpdateLocked() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	type job struct {
		fn   lmdb.TxnOp
		done chan error
	}
	jobs := make(chan job)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for j := range jobs {
			j.done <- env.UpdateLocked(j.fn)
		}
	}()
	write := func(fn lmdb.TxnOp) error {
		j := job{fn, make(chan error)}
		jobs <- j
		return <-j.done
	}

	err := write(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		return txn.Put(dbi, []byte("from"), []byte("worker"), 0)
	})
	close(jobs)
	fmt.Println("write:", err)
	// Output: write: <nil>
}

// Check verifies the structure of every tree of the environment.
func ExampleEnv_Check() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	env.Update(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		for i := 0; i < 1000; i++ {
			if err := txn.Put(dbi, []byte(fmt.Sprint(i)), []byte("x"), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err := env.Check(); errors.Is(err, lmdb.Corrupted) {
		fmt.Println("corrupt:", err)
		return
	} else if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ok")
	// Output: ok
}

// A long-lived reader can be parked with Reset and brought up to date with
// Renew, which is cheaper than beginning a new transaction each time.
func ExampleTxn_Renew() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	var dbi lmdb.DBI
	put := func(v string) {
		env.Update(func(txn *lmdb.Txn) (err error) {
			if dbi, err = txn.OpenRoot(0); err != nil {
				return err
			}
			return txn.Put(dbi, []byte("version"), []byte(v), 0)
		})
	}
	put("v1")

	reader, err := env.BeginTxn(nil, lmdb.Readonly)
	if err != nil {
		log.Fatal(err)
	}
	defer reader.Abort()
	v, _ := reader.Get(dbi, []byte("version"))
	fmt.Println("snapshot:", string(v))

	put("v2")
	v, _ = reader.Get(dbi, []byte("version"))
	fmt.Println("same snapshot after a write:", string(v))

	reader.Reset()
	if err := reader.Renew(); err != nil {
		log.Fatal(err)
	}
	v, _ = reader.Get(dbi, []byte("version"))
	fmt.Println("after Renew:", string(v))
	// Output:
	// snapshot: v1
	// same snapshot after a write: v1
	// after Renew: v2
}
