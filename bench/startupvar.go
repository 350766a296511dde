//go:build !dlmdb_standin

package bench

import (
	"fmt"
	"os"
	"time"

	ourslmdb "github.com/dlmdb/dlmdb-go/lmdb"
)

// DLMDB's startup_bench also opens counted databases: the extension must not
// make opening dearer. This suite (ours only: stock LMDB has no
// MDB_COUNTED) times the same open sequence as "startup" on two copies of
// one data set, a plain named DBI and a counted one, side by side.

func init() {
	Register(Suite{ID: "startupvar", Command: "startup_bench", Title: "Startup with DLMDB database variants: plain vs MDB_COUNTED (ours only)", Order: 21, Run: runStartupVariants})
}

func runStartupVariants(c *Config) (*Table, error) {
	n := c.Size(2_000_000, 200_000, 100)
	reps := c.Size(200, 100, 3)
	rounds := c.RoundsOr(9, 9)
	const valSize = 64
	const dbName = "startup"
	mapSize := int64(n)*1000 + 256<<20
	variants := []struct {
		name  string
		flags uint
	}{{"plain DBI", 0}, {"counted DBI", ourslmdb.Counted}}

	keys := MakeKeys(n)
	val := make([]byte, valSize)
	dirs := make([]string, len(variants))
	defer func() {
		for _, d := range dirs {
			if d != "" {
				os.RemoveAll(d)
			}
		}
	}()
	open := func(dir string, flags uint) (*ourslmdb.Env, error) {
		env, err := ourslmdb.NewEnv()
		if err != nil {
			return nil, err
		}
		if err = env.SetMapSize(mapSize); err == nil {
			err = env.SetMaxDBs(4)
		}
		if err == nil {
			err = env.Open(dir, flags, 0o644)
		}
		if err != nil {
			env.Close()
			return nil, err
		}
		return env, nil
	}
	for i, v := range variants {
		c.Logf("loading %s entries (%s)", Comma(n), v.name)
		dir, err := c.TempDir("startupvar")
		if err != nil {
			return nil, err
		}
		dirs[i] = dir
		env, err := open(dir, ourslmdb.NoSync|ourslmdb.NoMetaSync)
		if err != nil {
			return nil, err
		}
		for lo := 0; lo < n && err == nil; lo += 100_000 {
			err = env.Update(func(txn *ourslmdb.Txn) error {
				dbi, err := txn.OpenDBI(dbName, ourslmdb.Create|v.flags)
				if err != nil {
					return err
				}
				for k := lo; k < min(lo+100_000, n); k++ {
					FillValue(val, k)
					if err := txn.Put(dbi, keys.At(k), val, ourslmdb.Append); err != nil {
						return err
					}
				}
				return nil
			})
		}
		if err == nil {
			err = env.Sync(true)
		}
		if err == nil {
			// verification outside the timer: every entry, and the counts
			err = env.View(func(txn *ourslmdb.Txn) error {
				dbi, err := txn.OpenDBI(dbName, 0)
				if err != nil {
					return err
				}
				st, err := txn.Stat(dbi)
				if err == nil && st.Entries != uint64(n) {
					err = fmt.Errorf("%d entries, want %d", st.Entries, n)
				}
				if err == nil && v.flags != 0 {
					var got uint64
					if got, err = txn.CountAll(dbi); err == nil && got != uint64(n) {
						err = fmt.Errorf("CountAll %d, want %d", got, n)
					}
				}
				if err == nil {
					err = txn.Check()
				}
				return err
			})
		}
		if cerr := env.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
	}

	probes := Perm(n, 43)
	scratch := make([]byte, valSize)
	round := func(side int, envFlags uint, probe bool, r int) (float64, error) {
		var total time.Duration
		for i := 0; i < reps; i++ {
			k := int(probes[(r*reps+i)%n])
			t0 := time.Now()
			env, err := open(dirs[side], envFlags|ourslmdb.Readonly)
			if err != nil {
				return 0, err
			}
			txn, err := env.BeginTxn(nil, ourslmdb.Readonly)
			if err != nil {
				env.Close()
				return 0, err
			}
			txn.RawRead = true
			dbi, err := txn.OpenDBI(dbName, 0)
			var got []byte
			if err == nil && probe {
				got, err = txn.Get(dbi, keys.At(k))
			}
			total += time.Since(t0)
			if err == nil && probe {
				err = checkValue(got, k, valSize, scratch)
			}
			if err == nil && !probe {
				var flags uint
				if flags, err = txn.Flags(dbi); err == nil && flags&ourslmdb.Counted != variants[side].flags {
					err = fmt.Errorf("DBI flags %#x, want Counted = %#x", flags, variants[side].flags)
				}
			}
			txn.Abort()
			if cerr := env.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return 0, err
			}
		}
		return float64(total.Nanoseconds()) / float64(reps) / 1000, nil
	}

	size := fmt.Sprintf("%s × (16 B key, %d B value), named DBI", Comma(n), valSize)
	rows := []struct {
		name  string
		flags uint
		probe bool
	}{
		{"env_open + txn_begin + dbi_open", 0, false},
		{"env_open + txn_begin + dbi_open, NOLOCK", ourslmdb.NoLock, false},
		{"env_open + txn_begin + dbi_open + first get", 0, true},
		{"env_open + txn_begin + dbi_open + first get, NOLOCK", ourslmdb.NoLock, true},
	}
	t := &Table{Sides: []string{variants[0].name, variants[1].name}}
	for _, rw := range rows {
		if !c.WantRow(rw.name) {
			continue
		}
		c.Logf("startupvar: %s", rw.name)
		rw := rw
		sides := make([]Side, len(variants))
		for i, v := range variants {
			i := i
			sides[i] = Side{Name: v.name, Measure: func(r int) (float64, error) { return round(i, rw.flags, rw.probe, r) }}
		}
		st, err := Alternate(rounds, sides, func(s string) { c.Logf("  %s", s) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rw.name, err)
		}
		t.Add(rw.name, size, "µs", st...)
	}
	t.Notes = []string{
		fmt.Sprintf("Both columns are github.com/dlmdb/dlmdb-go/lmdb; each round is the mean of %d open/close cycles of a closed, fully written read-only environment (warm page cache); %d alternating rounds per row.", reps, rounds),
		"DLMDB measured 0.054–0.063 ms (0.034–0.039 ms NOLOCK) for its plain/counted/prefix variants on an M3 Pro. Prefix-compressed variants follow once MDB_PREFIX_COMPRESSION exists.",
	}
	return t, nil
}
