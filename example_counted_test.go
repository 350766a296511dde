package dlmdb_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	dlmdb "github.com/dlmdb/dlmdb-go"
	"github.com/dlmdb/dlmdb-go/lmdb"
)

// openTagsExample opens an environment in a temporary directory with one
// counted DupSort database holding a few fruits and their tags:
//
//	apple  -> fruit, red
//	banana -> fruit, yellow
//	cherry -> fruit, red, small
//	kiwi   -> fruit, green
//	lime   -> citrus, green
//
// 11 entries under 5 keys. The returned function closes and removes it all.
func openTagsExample() (*lmdb.Env, lmdb.DBI, func()) {
	dir, err := os.MkdirTemp("", "dlmdb-example")
	if err != nil {
		log.Fatal(err)
	}
	env, err := lmdb.NewEnv()
	if err != nil {
		log.Fatal(err)
	}
	env.SetMaxDBs(2)
	if err := env.Open(dir, 0, 0o644); err != nil {
		log.Fatal(err)
	}
	var dbi lmdb.DBI
	err = env.Update(func(txn *lmdb.Txn) (err error) {
		dbi, err = txn.OpenDBI("tags", lmdb.Create|lmdb.DupSort|lmdb.Counted)
		if err != nil {
			return err
		}
		for _, kv := range [][2]string{
			{"apple", "fruit"}, {"apple", "red"},
			{"banana", "fruit"}, {"banana", "yellow"},
			{"cherry", "fruit"}, {"cherry", "red"}, {"cherry", "small"},
			{"kiwi", "fruit"}, {"kiwi", "green"},
			{"lime", "citrus"}, {"lime", "green"},
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
	return env, dbi, func() {
		env.Close()
		os.RemoveAll(dir)
	}
}

// openNumbersExample opens a temporary environment whose counted root database
// maps n000 ... n099 to their squares.
func openNumbersExample() (*lmdb.Env, lmdb.DBI, func()) {
	dir, err := os.MkdirTemp("", "dlmdb-example")
	if err != nil {
		log.Fatal(err)
	}
	env, err := lmdb.NewEnv()
	if err != nil {
		log.Fatal(err)
	}
	if err := env.Open(dir, 0, 0o644); err != nil {
		log.Fatal(err)
	}
	var dbi lmdb.DBI
	err = env.Update(func(txn *lmdb.Txn) (err error) {
		if dbi, err = txn.OpenRoot(lmdb.Counted); err != nil {
			return err
		}
		for i := 0; i < 100; i++ {
			k, v := fmt.Sprintf("n%03d", i), fmt.Sprint(i*i)
			if err := txn.Put(dbi, []byte(k), []byte(v), 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	return env, dbi, func() {
		env.Close()
		os.RemoveAll(dir)
	}
}

// Counting, ranking and sampling a counted database.
func Example() {
	env, dbi, done := openTagsExample()
	defer done()

	err := env.View(func(txn *lmdb.Txn) error {
		n, err := dlmdb.Count(txn, dbi, dlmdb.All())
		if err != nil {
			return err
		}
		keys, err := dlmdb.CountKeys(txn, dbi, dlmdb.All())
		if err != nil {
			return err
		}
		fmt.Printf("%d tags on %d fruits\n", n, keys)

		r, err := dlmdb.KeyRank(txn, dbi, []byte("kiwi"), nil)
		if err != nil {
			return err
		}
		k, v, err := dlmdb.GetRank(txn, dbi, r)
		if err != nil {
			return err
		}
		fmt.Printf("entry %d is %s=%s\n", r, k, v)

		seq, errf := dlmdb.Sample(txn, dbi, 3)
		for k, v := range seq {
			fmt.Printf("sample: %s=%s\n", k, v)
		}
		return errf()
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 11 tags on 5 fruits
	// entry 7 is kiwi=fruit
	// sample: apple=fruit
	// sample: banana=yellow
	// sample: kiwi=fruit
}

// printCount prints how many entries of dbi lie in r.
func printCount(env *lmdb.Env, dbi lmdb.DBI, r dlmdb.Range) {
	err := env.View(func(txn *lmdb.Txn) error {
		n, err := dlmdb.Count(txn, dbi, r)
		if err != nil {
			return err
		}
		fmt.Printf("%v: %d\n", r, n)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}

func ExampleAll() {
	env, dbi, done := openTagsExample()
	defer done()
	printCount(env, dbi, dlmdb.All())
	// Output:
	// (-∞, ∞): 11
}

func ExampleBetween() {
	env, dbi, done := openTagsExample()
	defer done()
	printCount(env, dbi, dlmdb.Between([]byte("banana"), []byte("kiwi")))
	printCount(env, dbi, dlmdb.Between([]byte("banana"), []byte("kiwi")).ExcludeHigh())
	printCount(env, dbi, dlmdb.Between([]byte("kiwi"), []byte("banana"))) // empty, not an error
	// Output:
	// ["banana", "kiwi"]: 7
	// ["banana", "kiwi"): 5
	// ["kiwi", "banana"]: 0
}

func ExampleAtLeast() {
	env, dbi, done := openTagsExample()
	defer done()
	printCount(env, dbi, dlmdb.AtLeast([]byte("cherry")))
	// Output:
	// ["cherry", ∞): 7
}

func ExampleGreaterThan() {
	env, dbi, done := openTagsExample()
	defer done()
	printCount(env, dbi, dlmdb.GreaterThan([]byte("cherry")))
	printCount(env, dbi, dlmdb.GreaterThan([]byte("c"))) // bounds need not be stored keys
	// Output:
	// ("cherry", ∞): 4
	// ("c", ∞): 7
}

func ExampleAtMost() {
	env, dbi, done := openTagsExample()
	defer done()
	printCount(env, dbi, dlmdb.AtMost([]byte("banana")))
	// Output:
	// (-∞, "banana"]: 4
}

func ExampleLessThan() {
	env, dbi, done := openTagsExample()
	defer done()
	printCount(env, dbi, dlmdb.LessThan([]byte("banana")))
	// Output:
	// (-∞, "banana"): 2
}

func ExamplePrefix() {
	env, dbi, done := openNumbersExample()
	defer done()
	printCount(env, dbi, dlmdb.Prefix([]byte("n04"))) // n040 ... n049
	printCount(env, dbi, dlmdb.Prefix([]byte("n")))
	// Output:
	// ["n04", "n05"): 10
	// ["n", "o"): 100
}

// The ends of a range switch between inclusive and exclusive; each method
// returns a changed copy.
func ExampleRange_ExcludeLow() {
	r := dlmdb.Between([]byte("a"), []byte("m"))
	fmt.Println(r)
	fmt.Println(r.ExcludeLow())
	fmt.Println(r.ExcludeLow().ExcludeHigh())
	fmt.Println(r.ExcludeLow().ExcludeHigh().IncludeLow())
	fmt.Println(dlmdb.LessThan([]byte("m")).IncludeHigh())
	fmt.Println(dlmdb.GreaterThan([]byte("a")).IncludeLow())
	// Output:
	// ["a", "m"]
	// ("a", "m"]
	// ("a", "m")
	// ["a", "m")
	// (-∞, "m"]
	// ["a", ∞)
}

// Low, High and Flags give a range's ends in the form package lmdb takes.
func ExampleRange_Flags() {
	r := dlmdb.Between([]byte("apple"), []byte("kiwi")).ExcludeHigh()
	low, lowIncl := r.Low()
	high, highIncl := r.High()
	fmt.Printf("low %s (inclusive %v), high %s (inclusive %v)\n", low, lowIncl, high, highIncl)
	fmt.Println(r.Flags() == lmdb.CountLowerIncl)

	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		a, err := dlmdb.Count(txn, dbi, r)
		if err != nil {
			return err
		}
		b, err := txn.CountRange(dbi, low, high, r.Flags())
		fmt.Println(a, b)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// low apple (inclusive true), high kiwi (inclusive false)
	// true
	// 7 7
}

func ExampleCount() {
	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		n, err := dlmdb.Count(txn, dbi, dlmdb.Between([]byte("b"), []byte("d")))
		fmt.Println("entries with keys in [b, d]:", n)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// entries with keys in [b, d]: 5
}

func ExampleCountKeys() {
	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		n, err := dlmdb.CountKeys(txn, dbi, dlmdb.Between([]byte("b"), []byte("d")))
		fmt.Println("keys in [b, d]:", n)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// keys in [b, d]: 2
}

func ExampleCountValues() {
	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		n, err := dlmdb.CountValues(txn, dbi, dlmdb.AtLeast([]byte("kiwi")))
		fmt.Println("tags of kiwi and later:", n)
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// tags of kiwi and later: 4
}

func ExampleRank() {
	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		first, err := dlmdb.KeyRank(txn, dbi, []byte("cherry"), nil)
		if err != nil {
			return err
		}
		small, err := dlmdb.KeyRank(txn, dbi, []byte("cherry"), []byte("small"))
		if err != nil {
			return err
		}
		fmt.Println("cherry starts at", first, "and cherry=small is at", small)
		_, err = dlmdb.KeyRank(txn, dbi, []byte("mango"), nil)
		fmt.Println("mango:", lmdb.IsNotFound(err))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// cherry starts at 4 and cherry=small is at 6
	// mango: true
}

func ExampleAt() {
	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		for _, r := range []uint64{0, 5, 10} {
			k, v, err := dlmdb.GetRank(txn, dbi, r)
			if err != nil {
				return err
			}
			fmt.Printf("%d: %s=%s\n", r, k, v)
		}
		_, _, err := dlmdb.GetRank(txn, dbi, 11)
		fmt.Println("11:", lmdb.IsNotFound(err))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 0: apple=fruit
	// 5: cherry=red
	// 10: lime=green
	// 11: true
}

// Bounds gives the positions a range covers: here a page of results
// starting at "banana".
func ExampleBounds() {
	env, dbi, done := openTagsExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		first, end, err := dlmdb.Bounds(txn, dbi, dlmdb.Between([]byte("banana"), []byte("cherry")))
		if err != nil {
			return err
		}
		fmt.Printf("ranks [%d, %d)\n", first, end)
		for r := first; r < end; r++ {
			k, v, err := dlmdb.GetRank(txn, dbi, r)
			if err != nil {
				return err
			}
			fmt.Printf("  %s=%s\n", k, v)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// ranks [2, 7)
	//   banana=fruit
	//   banana=yellow
	//   cherry=fruit
	//   cherry=red
	//   cherry=small
}

func ExampleSample() {
	env, dbi, done := openNumbersExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		seq, errf := dlmdb.Sample(txn, dbi, 4)
		for k, v := range seq {
			fmt.Printf("%s=%s\n", k, v)
		}
		return errf()
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// n000=0
	// n025=625
	// n050=2500
	// n075=5625
}

// A sample of a range; the loop may stop early, and an uncounted database
// reports its error after the loop.
func ExampleSampleRange() {
	env, dbi, done := openNumbersExample()
	defer done()
	err := env.View(func(txn *lmdb.Txn) error {
		seq, errf := dlmdb.SampleRange(txn, dbi, dlmdb.Between([]byte("n010"), []byte("n020")).ExcludeHigh(), 3)
		var keys []string
		for k := range seq {
			keys = append(keys, string(k))
		}
		fmt.Println(strings.Join(keys, " "))
		if err := errf(); err != nil {
			return err
		}

		seq, errf = dlmdb.SampleRange(txn, dbi, dlmdb.AtLeast([]byte("n090")), 100)
		keys = keys[:0]
		for k := range seq {
			keys = append(keys, string(k))
			if string(k) == "n093" {
				break // ends the sampling early
			}
		}
		fmt.Println(strings.Join(keys, " "))
		if err := errf(); err != nil {
			return err
		}

		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	// An uncounted database cannot be sampled: the sequence is empty and
	// the error function says why.
	fmt.Println(errors.Is(sampleUncounted(), lmdb.Incompatible))
	// Output:
	// n010 n013 n016
	// n090 n091 n092 n093
	// true
}

// sampleUncounted samples an uncounted database and returns the error.
func sampleUncounted() error {
	dir, err := os.MkdirTemp("", "dlmdb-example")
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
	var sampleErr error
	err = env.Update(func(txn *lmdb.Txn) error {
		dbi, err := txn.OpenRoot(0)
		if err != nil {
			return err
		}
		if err := txn.Put(dbi, []byte("k"), []byte("v"), 0); err != nil {
			return err
		}
		seq, errf := dlmdb.Sample(txn, dbi, 2)
		for range seq {
			fmt.Println("unexpected entry")
		}
		sampleErr = errf()
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	return sampleErr
}
