package dlmdb_test

import (
	"fmt"
	"log"

	dlmdb "github.com/dlmdb/dlmdb-go"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

// The values of one key in one call, and every key of a range with its
// values (the counted example's fruit tags).
func ExampleGroups() {
	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		vals, err := dlmdb.ListDup(txn, dbi, []byte("cherry"))
		if err != nil {
			return err
		}
		fmt.Printf("cherry: %q\n", vals)
		groups, errf := dlmdb.Groups(txn, dbi, dlmdb.Between([]byte("b"), []byte("l")))
		for key, vals := range groups {
			fmt.Printf("%s: %d\n", key, len(vals))
		}
		return errf()
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// cherry: ["fruit" "red" "small"]
	// banana: 2
	// cherry: 3
	// kiwi: 2
}

// A batched scan: 256 entries per call into the engine, here backwards over
// the keys below "kiwi".
func ExampleScanReverse() {
	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		seq, errf := dlmdb.ScanReverse(txn, dbi, dlmdb.LessThan([]byte("kiwi")))
		for k, v := range seq {
			fmt.Printf("%s=%s\n", k, v)
		}
		return errf()
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// cherry=small
	// cherry=red
	// cherry=fruit
	// banana=yellow
	// banana=fruit
	// apple=red
	// apple=fruit
}
