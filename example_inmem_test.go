package dlmdb_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	dlmdb "github.com/dlmdb/dlmdb-go"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

// fillNumbers stores n keys "n00000".. in the named database.
func fillNumbers(env *lmdb.Env, name string, n int) lmdb.DBI {
	var dbi lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenDBI(name, lmdb.Create|lmdb.Counted); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			k := fmt.Sprintf("n%05d", i)
			if err := txn.Put(dbi, []byte(k), []byte("value of "+k), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	return dbi
}

// An in-memory environment is filled, written to a directory as an
// ordinary data file, and loaded back into memory.
func ExampleOpenInMemory() {
	env, err := dlmdb.OpenInMemory(dlmdb.InMemoryOptions{MapSize: 16 << 20, MaxDBs: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()
	fillNumbers(env, "numbers", 1000)

	dir, err := os.MkdirTemp("", "dlmdb-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := dlmdb.Persist(env, dir, true); err != nil {
		log.Fatal(err)
	}
	fmt.Println("persisted:", fileExists(filepath.Join(dir, "data.mdb")))
	err = dlmdb.Persist(env, dir, true)
	fmt.Println("second Persist refused:", errors.Is(err, os.ErrExist))

	back, err := dlmdb.LoadInMemory(dir, dlmdb.InMemoryOptions{MaxDBs: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer back.Close()
	err = back.View(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenDBI("numbers", 0)
		if err != nil {
			return err
		}
		n, err := dlmdb.Count(txn, dbi, dlmdb.All())
		fmt.Println("loaded entries:", n)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// persisted: true
	// second Persist refused: true
	// loaded entries: 1000
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Ctrl-C stops a long scan: os/signal delivers SIGINT to a goroutine that
// sets the environment's interrupt flag, and the scan fails with EINTR at
// its next page. Clearing the flag lets new transactions work again.
func Example_interruptOnSignal() {
	env, err := dlmdb.OpenInMemory(dlmdb.InMemoryOptions{MapSize: 64 << 20, MaxDBs: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()
	const total = 20000
	dbi := fillNumbers(env, "numbers", total)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	armed := make(chan struct{})
	go func() {
		for range sigs {
			if err := env.SetInterrupt(true); err != nil { // every txn stops at its next page
				log.Print(err)
			}
			armed <- struct{}{}
		}
	}()

	seen := 0
	err = env.View(func(txn *lmdb.Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		for ; ; seen++ {
			if _, _, err := cur.Get(nil, nil, lmdb.Next); err != nil {
				return err
			}
			if seen == 1000 {
				// as if the user pressed Ctrl-C
				syscall.Kill(os.Getpid(), syscall.SIGINT)
				<-armed // only so that the output does not depend on timing
			}
		}
	})
	signal.Stop(sigs)
	close(sigs)
	fmt.Println("scan stopped early:", seen < total)
	fmt.Println("stopped with EINTR:", errors.Is(err, syscall.EINTR))

	if err := env.SetInterrupt(false); err != nil {
		log.Fatal(err)
	}
	err = env.View(func(txn *lmdb.Txn) error {
		n, err := dlmdb.Count(txn, dbi, dlmdb.All())
		fmt.Println("entries after clearing the flag:", n)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// scan stopped early: true
	// stopped with EINTR: true
	// entries after clearing the flag: 20000
}

// A context bounds a read transaction: when it is done, the work in
// progress stops at its next page visit. The error matches both the
// context's error and EINTR.
func ExampleView() {
	env, err := dlmdb.OpenInMemory(dlmdb.InMemoryOptions{MapSize: 16 << 20, MaxDBs: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()
	dbi := fillNumbers(env, "numbers", 1000)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = dlmdb.View(ctx, env, func(txn *lmdb.Txn) error {
		time.AfterFunc(10*time.Millisecond, cancel) // a user gives up
		// an endless job, such as repeated counts
		for {
			if _, err := dlmdb.Count(txn, dbi, dlmdb.AtLeast([]byte("n00500"))); err != nil {
				return err
			}
		}
	})
	fmt.Println("canceled:", errors.Is(err, context.Canceled))
	fmt.Println("interrupted:", errors.Is(err, syscall.EINTR))
	// Output:
	// canceled: true
	// interrupted: true
}
