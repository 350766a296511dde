package bench

import (
	"fmt"
	"os"
	"time"
)

func init() {
	Register(Suite{ID: "startup", Command: "startup_bench", Title: "Startup: open an existing environment and read", Order: 20, Run: runStartup})
}

func runStartup(c *Config) (*Table, error) {
	ours, stock := c.Engines()
	engines := []Engine{ours, stock}
	n := c.Size(2_000_000, 200_000, 100)
	reps := c.Size(200, 100, 3)
	rounds := c.RoundsOr(9, 9)
	const valSize = 64
	const dbName = "startup"
	mapSize := int64(n)*1000 + 256<<20 // generous: virtual space only
	base := Options{MapSize: mapSize, MaxDBs: 4}

	keys := MakeKeys(n + 1)
	val := make([]byte, valSize)
	value := func(i int) []byte { FillValue(val, i); return val }

	// One populated environment per engine, closed after loading so that
	// every timed open starts from files only.
	dirs := make([]string, len(engines))
	defer func() {
		for _, d := range dirs {
			if d != "" {
				os.RemoveAll(d)
			}
		}
	}()
	c.Logf("loading %s entries per engine", Comma(n))
	for i, e := range engines {
		s, err := openScratch(c, e, "startup", Options{MapSize: mapSize, MaxDBs: 4, Flags: NoSync | NoMetaSync})
		if err != nil {
			return nil, err
		}
		dirs[i] = s.dir
		err = loadSeq(s, dbName, n, 100_000, keys.At, value)
		if err == nil {
			err = s.Sync()
		}
		if err == nil {
			err = verifyContents(s, dbName, n, 101, keys.At, valSize)
		}
		if cerr := s.Env.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
	}

	probes := Perm(n, 42)
	scratch := make([]byte, valSize)
	// openRound opens the environment reps times and returns the mean time
	// of open+begin+dbi (and the first get when probe is set), in µs.
	openRound := func(side int, o Options, probe bool, round int) (float64, error) {
		e := engines[side]
		var total time.Duration
		for r := 0; r < reps; r++ {
			k := int(probes[(round*reps+r)%n])
			t0 := time.Now()
			env, err := e.Open(dirs[side], o)
			if err != nil {
				return 0, err
			}
			txn, err := env.Begin(true)
			if err != nil {
				env.Close()
				return 0, err
			}
			db, err := txn.OpenDB(dbName, 0)
			var v []byte
			if err == nil && probe {
				v, err = txn.Get(db, keys.At(k))
			}
			total += time.Since(t0)
			if err == nil && probe {
				err = checkValue(v, k, valSize, scratch)
			}
			if err == nil && !probe {
				// Verification outside the timer: the handle works.
				var got uint64
				got, err = txn.Entries(db)
				if err == nil && got != uint64(n) {
					err = fmt.Errorf("%d entries after open, want %d", got, n)
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

	noLock := base
	noLock.Flags |= NoLock
	size := fmt.Sprintf("%s × (16 B key, %d B value), named DBI", Comma(n), valSize)
	type row struct {
		name  string
		o     Options
		probe bool
	}
	rows := []row{
		{"env_open + txn_begin + dbi_open", base, false},
		{"env_open + txn_begin + dbi_open, NOLOCK", noLock, false},
		{"env_open + txn_begin + dbi_open + first get", base, true},
		{"env_open + txn_begin + dbi_open + first get, NOLOCK", noLock, true},
	}
	t := &Table{Sides: []string{ours.Name(), stock.Name()}}
	for _, rw := range rows {
		if !c.WantRow(rw.name) {
			continue
		}
		c.Logf("startup: %s", rw.name)
		rw := rw
		sides := make([]Side, len(engines))
		for i, e := range engines {
			i := i
			sides[i] = Side{Name: e.Name(), Measure: func(r int) (float64, error) { return openRound(i, rw.o, rw.probe, r) }}
		}
		st, err := Alternate(rounds, sides, func(s string) { c.Logf("  %s", s) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rw.name, err)
		}
		t.Add(rw.name, size, "µs", st...)
	}
	t.Notes = []string{
		fmt.Sprintf("Each round is the mean of %d open/close cycles of a closed, fully written environment (warm page cache); %d alternating rounds per row.", reps, rounds),
		"The timer covers creating the env handle, setting map size and max DBs, mdb_env_open, a read-only txn_begin and dbi_open of a named DBI (plus one get of a random key). Close and verification are outside it.",
		"Plain DBI (stock LMDB has no extensions); the counted, prefix-compressed and counted+prefix variants are in the next table.",
	}
	return t, nil
}
