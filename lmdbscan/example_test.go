package lmdbscan_test

import (
	"fmt"
	"log"
	"os"

	"github.com/dlmdb/dlmdb-go/lmdb"
	"github.com/dlmdb/dlmdb-go/lmdbscan"
)

// Scanning every item of a database, then only the keys from "c" on.
func ExampleScanner() {
	dir, err := os.MkdirTemp("", "lmdbscan-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	env, err := lmdb.NewEnv()
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()
	if err := env.Open(dir, 0, 0o644); err != nil {
		log.Fatal(err)
	}

	var dbi lmdb.DBI
	err = env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenRoot(0); err != nil {
			return err
		}
		for _, k := range []string{"d", "b", "a", "c"} {
			if err := txn.Put(dbi, []byte(k), []byte(k+k), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	err = env.View(func(txn *lmdb.Txn) error {
		s := lmdbscan.New(txn, dbi)
		defer s.Close()
		for s.Scan() {
			fmt.Printf("%s=%s\n", s.Key(), s.Val())
		}
		if err := s.Err(); err != nil {
			return err
		}

		s.Set([]byte("c"), nil, lmdb.SetRange)
		for s.Scan() {
			fmt.Println("from c:", string(s.Key()))
		}
		return s.Err()
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// a=aa
	// b=bb
	// c=cc
	// d=dd
	// from c: c
	// from c: d
}
