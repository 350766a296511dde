package lmdb_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/dlmdb/dlmdb-go/lmdb"
)

// createScores makes a counted DupSort database of players and their
// scores:
//
//	ann -> 10, 30
//	bob -> 20
//	cid -> 10, 20, 40
//	dan -> 50
func createScores(env *lmdb.Env) lmdb.DBI {
	var dbi lmdb.DBI
	err := env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.OpenDBI("scores", lmdb.Create|lmdb.DupSort|lmdb.Counted)
		if err != nil {
			return err
		}
		for _, kv := range [][2]string{
			{"ann", "10"}, {"ann", "30"}, {"bob", "20"},
			{"cid", "10"}, {"cid", "20"}, {"cid", "40"}, {"dan", "50"},
		} {
			if err := txn.Put(dbi, []byte(kv[0]), []byte(kv[1]), 0); err != nil {
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

// A counted database answers how many entries it holds without a scan.
func ExampleTxn_CountAll() {
	env, cleanup := newExampleEnv()
	defer cleanup()
	dbi := createScores(env)

	err := env.View(func(txn *lmdb.Txn) error {
		n, err := txn.CountAll(dbi)
		fmt.Println("entries:", n)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// entries: 7
}

// Bounds are exclusive unless their flag is given; a nil bound is open.
func ExampleTxn_CountRange() {
	env, cleanup := newExampleEnv()
	defer cleanup()
	dbi := createScores(env)

	err := env.View(func(txn *lmdb.Txn) error {
		both, err := txn.CountRange(dbi, []byte("bob"), []byte("cid"), lmdb.CountLowerIncl|lmdb.CountUpperIncl)
		if err != nil {
			return err
		}
		neither, err := txn.CountRange(dbi, []byte("bob"), []byte("cid"), 0)
		if err != nil {
			return err
		}
		upTo, err := txn.CountRange(dbi, nil, []byte("bob"), lmdb.CountUpperIncl)
		if err != nil {
			return err
		}
		fmt.Println("[bob, cid]:", both)
		fmt.Println("(bob, cid):", neither)
		fmt.Println("(-inf, bob]:", upTo)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// [bob, cid]: 4
	// (bob, cid): 0
	// (-inf, bob]: 3
}

// CountKeys counts distinct keys, CountValues every value under them.
func ExampleTxn_CountKeys() {
	env, cleanup := newExampleEnv()
	defer cleanup()
	dbi := createScores(env)

	err := env.View(func(txn *lmdb.Txn) error {
		keys, err := txn.CountKeys(dbi, []byte("b"), nil, lmdb.CountLowerIncl)
		if err != nil {
			return err
		}
		vals, err := txn.CountValues(dbi, []byte("b"), nil, lmdb.CountLowerIncl)
		if err != nil {
			return err
		}
		fmt.Printf("from b on: %d players, %d scores\n", keys, vals)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// from b on: 3 players, 5 scores
}

// Rank finds the entry at a position; past the end is NotFound.
func ExampleTxn_GetRank() {
	env, cleanup := newExampleEnv()
	defer cleanup()
	dbi := createScores(env)

	err := env.View(func(txn *lmdb.Txn) error {
		k, v, err := txn.GetRank(dbi, 4)
		if err != nil {
			return err
		}
		fmt.Printf("entry 4: %s %s\n", k, v)
		_, _, err = txn.GetRank(dbi, 7)
		fmt.Println("entry 7 not found:", lmdb.IsNotFound(err))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// entry 4: cid 20
	// entry 7 not found: true
}

// KeyRank is the inverse: the position of a key's first value, or of one
// key/value pair.
func ExampleTxn_KeyRank() {
	env, cleanup := newExampleEnv()
	defer cleanup()
	dbi := createScores(env)

	err := env.View(func(txn *lmdb.Txn) error {
		first, err := txn.KeyRank(dbi, []byte("cid"), nil)
		if err != nil {
			return err
		}
		pair, err := txn.KeyRank(dbi, []byte("cid"), []byte("40"))
		if err != nil {
			return err
		}
		fmt.Println("cid starts at", first, "and cid 40 is at", pair)
		_, err = txn.KeyRank(dbi, []byte("cid"), []byte("99"))
		fmt.Println("cid 99 not found:", lmdb.IsNotFound(err))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// cid starts at 3 and cid 40 is at 5
	// cid 99 not found: true
}

// GetRank positions a cursor; ordinary moves continue from there, and
// ascending ranks reuse the cursor's position.
func ExampleCursor_GetRank() {
	env, cleanup := newExampleEnv()
	defer cleanup()
	dbi := createScores(env)

	err := env.View(func(txn *lmdb.Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		for _, r := range []uint64{0, 2, 4, 6} {
			k, v, err := cur.GetRank(r)
			if err != nil {
				return err
			}
			fmt.Printf("%d: %s %s\n", r, k, v)
		}
		k, v, err := cur.GetRank(1)
		if err != nil {
			return err
		}
		fmt.Printf("1: %s %s\n", k, v)
		k, v, err = cur.Get(nil, nil, lmdb.Next)
		if err != nil {
			return err
		}
		fmt.Printf("next: %s %s\n", k, v)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 0: ann 10
	// 2: bob 20
	// 4: cid 20
	// 6: dan 50
	// 1: ann 30
	// next: bob 20
}

// Cursor.KeyRank answers through the cursor's database without moving it.
func ExampleCursor_KeyRank() {
	env, cleanup := newExampleEnv()
	defer cleanup()
	dbi := createScores(env)

	err := env.View(func(txn *lmdb.Txn) error {
		cur, err := txn.OpenCursor(dbi)
		if err != nil {
			return err
		}
		defer cur.Close()
		if _, _, err := cur.Get([]byte("dan"), nil, lmdb.Set); err != nil {
			return err
		}
		r, err := cur.KeyRank([]byte("bob"), nil)
		if err != nil {
			return err
		}
		k, _, err := cur.Get(nil, nil, lmdb.GetCurrent)
		fmt.Printf("bob is at %d; the cursor is still on %s\n", r, k)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// bob is at 2; the cursor is still on dan
}

// Only databases created with Counted can count; others say Incompatible.
func ExampleCounted() {
	env, cleanup := newExampleEnv()
	defer cleanup()

	err := env.Update(func(txn *lmdb.Txn) error {
		counted, err := txn.OpenDBI("counted", lmdb.Create|lmdb.Counted)
		if err != nil {
			return err
		}
		plain, err := txn.OpenDBI("plain", lmdb.Create)
		if err != nil {
			return err
		}
		for _, dbi := range []lmdb.DBI{counted, plain} {
			if err := txn.Put(dbi, []byte("k"), []byte("v"), 0); err != nil {
				return err
			}
		}
		n, err := txn.CountAll(counted) // a write txn sees its own changes
		fmt.Println("counted:", n, err)
		_, err = txn.CountAll(plain)
		fmt.Println("plain is incompatible:", errors.Is(err, lmdb.Incompatible))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// counted: 1 <nil>
	// plain is incompatible: true
}
