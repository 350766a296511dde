package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

func init() {
	Register(Suite{ID: "dropin", Command: "dropin_bench", Title: "Drop-in cost: dlmdb-go vs lmdb-go on plain databases", Order: 10, Run: runDropin})
}

// dropinSizes are the documented sizes of cmd/dropin_bench.
type dropinSizes struct {
	N, ValSize, Gets, Passes, Scans, ScanLen, Commits, DupKeys, Dups, Rounds int
	// The promoted DUPFIXED case: BigKeys keys × BigDups 8-byte values
	// (sub-trees, not inline sub-pages), read BigPasses times a round.
	BigKeys, BigDups, BigPasses int
}

func dropinPreset(c *Config) dropinSizes {
	return dropinSizes{
		N:       c.Size(1_000_000, 200_000, 200),
		ValSize: 100,
		Gets:    c.Size(2_000_000, 500_000, 200),
		Passes:  3,
		Scans:   c.Size(50_000, 10_000, 20),
		ScanLen: 100,
		Commits: c.Size(400, 60, 5),
		DupKeys: c.Size(20_000, 10_000, 20),
		Dups:    20,
		Rounds:  c.RoundsOr(9, 9),
		// issue 14's case: 256 keys × 4,096 values, 100 read passes.
		BigKeys:   c.Size(256, 256, 4),
		BigDups:   4096,
		BigPasses: c.Size(100, 20, 2),
	}
}

// durableRoundsPer is how many more rounds the durable row runs than the
// others: its time is fsync latency, which drifts over seconds on either
// side, so it takes many short alternating rounds for the medians to
// settle (27 × 400 commits per side by default).
const durableRoundsPer = 3

// workload is one row: run measures one round on one engine and returns
// the per-operation value in unit.
type workload struct {
	name, size, unit string
	run              func(e Engine, side int, round int) (float64, error)
	rounds           int // 0: sz.Rounds
}

func runDropin(c *Config) (*Table, error) {
	ours, stock := c.Engines()
	sz := dropinPreset(c)
	engines := []Engine{ours, stock}
	keys := MakeKeys(sz.N + 1)
	vals := MakeValues(sz.N, sz.ValSize)
	key := keys.At
	// The map is virtual address space; make it generous so that no engine
	// runs out of room on the delete-heavy rows (the file grows only as used).
	bulkOpts := Options{MapSize: int64(sz.N)*2000 + 256<<20, Flags: NoSync | NoMetaSync}

	// The read workloads share one loaded environment per engine.
	c.Logf("loading %s entries per engine", Comma(sz.N))
	loaded := make([]*scratchEnv, len(engines))
	defer func() {
		for _, s := range loaded {
			if s != nil {
				s.close()
			}
		}
	}()
	for i, e := range engines {
		s, err := openScratch(c, e, "dropin-read", bulkOpts)
		if err != nil {
			return nil, err
		}
		loaded[i] = s
		if err := loadSeq(s, "", sz.N, 50_000, key, vals.At); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if err := s.Sync(); err != nil {
			return nil, err
		}
		if err := verifyContents(s, "", sz.N, 97, key, sz.ValSize); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
	}

	seqOrder := make([]int32, sz.N)
	for i := range seqOrder {
		seqOrder[i] = int32(i)
	}
	randOrder := Perm(sz.N, 20261129)
	getOrder := Perm(sz.N, 7)
	var getSum uint64
	for i := 0; i < sz.Gets; i++ {
		getSum = getSum*31 + Tag(int(getOrder[i%sz.N]))
	}
	var scanSum uint64
	for i := 0; i < sz.N; i++ {
		scanSum = scanSum*31 + Tag(i)
	}
	maxStart := sz.N - sz.ScanLen - 1
	if maxStart < 1 {
		return nil, fmt.Errorf("dropin: %d entries are too few for %d-entry range scans", sz.N, sz.ScanLen)
	}
	scanStarts := make([]int, sz.Scans)
	for i := range scanStarts {
		scanStarts[i] = int(mix(uint64(i)+99) % uint64(maxStart))
	}
	var rangeSum uint64
	for _, st := range scanStarts {
		for j := st; j <= st+sz.ScanLen; j++ {
			rangeSum = rangeSum*31 + Tag(j)
		}
	}

	// putRound loads all entries in the given order into a fresh environment
	// within one write transaction and times puts plus commit: Txn.Put, or
	// with viaAppend one cursor's MDB_APPEND puts (order ascending).
	putRound := func(e Engine, order []int32, viaAppend bool) (float64, error) {
		s, err := openScratch(c, e, "dropin-put", bulkOpts)
		if err != nil {
			return 0, err
		}
		defer s.close()
		t0 := time.Now()
		txn, err := s.Begin(false)
		if err != nil {
			return 0, err
		}
		db, err := txn.OpenDB("", 0)
		var cur Cursor
		if err == nil && viaAppend {
			cur, err = txn.Cursor(db)
		}
		for _, i := range order {
			if err != nil {
				break
			}
			if viaAppend {
				err = cur.Append(keys.At(int(i)), vals.At(int(i)))
			} else {
				err = txn.Put(db, keys.At(int(i)), vals.At(int(i)))
			}
			if err != nil {
				err = fmt.Errorf("put %d: %w", i, err)
			}
		}
		el, err := endTimed(txn, cur, err, t0)
		if err != nil {
			return 0, err
		}
		if err := verifyContents(s, "", sz.N, 13, key, sz.ValSize); err != nil {
			return 0, err
		}
		return nsPer(el, len(order)), nil
	}

	// delRound loads all entries into a fresh environment (untimed), then
	// times deleting every other key of randOrder in one write transaction.
	delRound := func(e Engine) (float64, error) {
		s, err := openScratch(c, e, "dropin-del", bulkOpts)
		if err != nil {
			return 0, err
		}
		defer s.close()
		if err := loadSeq(s, "", sz.N, 50_000, key, vals.At); err != nil {
			return 0, err
		}
		t0 := time.Now()
		txn, err := s.Begin(false)
		if err != nil {
			return 0, err
		}
		db, err := txn.OpenDB("", 0)
		if err != nil {
			txn.Abort()
			return 0, err
		}
		ndel := 0
		for j := 0; j < len(randOrder); j += 2 {
			if err := txn.Del(db, keys.At(int(randOrder[j]))); err != nil {
				txn.Abort()
				return 0, fmt.Errorf("del %d: %w", randOrder[j], err)
			}
			ndel++
		}
		if err := txn.Commit(); err != nil {
			return 0, err
		}
		el := time.Since(t0)
		if fi, err := os.Stat(filepath.Join(s.dir, "data.mdb")); err == nil {
			c.Logf("  %s: data.mdb %.1f MiB after %s deletes", e.Name(), float64(fi.Size())/(1<<20), Comma(ndel))
		}
		// Verify: the count, every deleted key gone, every kept key intact.
		rt, err := s.Begin(true)
		if err != nil {
			return 0, err
		}
		defer rt.Abort()
		if db, err = rt.OpenDB("", 0); err != nil {
			return 0, err
		}
		if got, err := rt.Entries(db); err != nil || got != uint64(sz.N-ndel) {
			return 0, fmt.Errorf("after deletes: %d entries (err %v), want %d", got, err, sz.N-ndel)
		}
		scratch := make([]byte, sz.ValSize)
		for j, i := range randOrder {
			v, err := rt.Get(db, keys.At(int(i)))
			if j%2 == 0 {
				if !errors.Is(err, ErrNotFound) {
					return 0, fmt.Errorf("deleted key %d: err=%v, want not found", i, err)
				}
			} else if err != nil {
				return 0, fmt.Errorf("kept key %d: %w", i, err)
			} else if err := checkValue(v, int(i), sz.ValSize, scratch); err != nil {
				return 0, err
			}
		}
		return nsPer(el, ndel), nil
	}

	getRound := func(side int, raw bool) (float64, error) {
		txn, err := loaded[side].Begin(true)
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		txn.SetRawRead(raw)
		db, err := txn.OpenDB("", 0)
		if err != nil {
			return 0, err
		}
		var sum uint64
		t0 := time.Now()
		for i := 0; i < sz.Gets; i++ {
			v, err := txn.Get(db, keys.At(int(getOrder[i%sz.N])))
			if err != nil {
				return 0, fmt.Errorf("get: %w", err)
			}
			sum = sum*31 + ValueTag(v)
		}
		el := time.Since(t0)
		if sum != getSum {
			return 0, fmt.Errorf("random get checksum %x, want %x", sum, getSum)
		}
		return nsPer(el, sz.Gets), nil
	}

	scanRound := func(side int) (float64, error) {
		txn, err := loaded[side].Begin(true)
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		txn.SetRawRead(true)
		db, err := txn.OpenDB("", 0)
		if err != nil {
			return 0, err
		}
		cur, err := txn.Cursor(db)
		if err != nil {
			return 0, err
		}
		defer cur.Close()
		var el time.Duration
		for pass := 0; pass < sz.Passes; pass++ {
			var sum uint64
			n := 0
			t0 := time.Now()
			_, v, err := cur.First()
			for err == nil {
				sum = sum*31 + ValueTag(v)
				n++
				_, v, err = cur.Next()
			}
			el += time.Since(t0)
			if !errors.Is(err, ErrNotFound) {
				return 0, err
			}
			if n != sz.N || sum != scanSum {
				return 0, fmt.Errorf("full scan saw %d entries (checksum %x), want %d (%x)", n, sum, sz.N, scanSum)
			}
		}
		return nsPer(el, sz.N*sz.Passes), nil
	}

	rangeRound := func(side int) (float64, error) {
		txn, err := loaded[side].Begin(true)
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		txn.SetRawRead(true)
		db, err := txn.OpenDB("", 0)
		if err != nil {
			return 0, err
		}
		cur, err := txn.Cursor(db)
		if err != nil {
			return 0, err
		}
		defer cur.Close()
		var sum uint64
		n := 0
		t0 := time.Now()
		for _, st := range scanStarts {
			_, v, err := cur.Seek(keys.At(st))
			for j := 0; ; j++ {
				if err != nil {
					return 0, fmt.Errorf("range scan from %d, step %d: %w", st, j, err)
				}
				sum = sum*31 + ValueTag(v)
				n++
				if j == sz.ScanLen {
					break
				}
				_, v, err = cur.Next()
			}
		}
		el := time.Since(t0)
		if n != sz.Scans*(sz.ScanLen+1) || sum != rangeSum {
			return 0, fmt.Errorf("range scans saw %d entries (checksum %x), want %d (%x)", n, sum, sz.Scans*(sz.ScanLen+1), rangeSum)
		}
		return nsPer(el, sz.Scans) / 1000, nil
	}

	// Durable commits: one environment per engine with full sync, each round
	// adds Commits new keys, one write transaction and fsync'ed commit each.
	durable := make([]*scratchEnv, len(engines))
	defer func() {
		for _, s := range durable {
			if s != nil {
				s.close()
			}
		}
	}()
	for i, e := range engines {
		s, err := openScratch(c, e, "dropin-durable", Options{MapSize: 256 << 20})
		if err != nil {
			return nil, err
		}
		durable[i] = s
	}
	durableRound := func(side, round int) (float64, error) {
		s := durable[side]
		lo := round * sz.Commits
		if lo+sz.Commits > sz.N {
			return 0, fmt.Errorf("durable: not enough keys for round %d", round)
		}
		// The bulk rows leave hundreds of MB of NOSYNC writes in the page
		// cache; a commit whose fdatasync forces a journal commit would
		// pay for writing back whichever engine's files are still dirty.
		// Flush everything first (untimed), so each round starts alike.
		unix.Sync()
		t0 := time.Now()
		for i := lo; i < lo+sz.Commits; i++ {
			txn, err := s.Begin(false)
			if err != nil {
				return 0, err
			}
			db, err := txn.OpenDB("", 0)
			if err != nil {
				txn.Abort()
				return 0, err
			}
			if err := txn.Put(db, keys.At(i), vals.At(i)); err != nil {
				txn.Abort()
				return 0, err
			}
			if err := txn.Commit(); err != nil {
				return 0, err
			}
		}
		el := time.Since(t0)
		if err := verifyContents(s, "", lo+sz.Commits, 1, key, sz.ValSize); err != nil {
			return 0, err
		}
		return nsPer(el, sz.Commits) / 1000, nil
	}

	// Duplicate reads: DupKeys keys × Dups sorted duplicates in an
	// environment of their own per engine, twice: 16-byte values in a
	// DUPSORT database ("dups"; duplicate j of key i is big-endian j
	// followed by Tag(i*Dups+j)) and 8-byte values in a DUPSORT|DUPFIXED
	// one ("fixed"; big-endian uint32 j followed by the low half of the
	// same tag).
	dupEnvs := make([]*scratchEnv, len(engines))
	defer func() {
		for _, s := range dupEnvs {
			if s != nil {
				s.close()
			}
		}
	}()
	dupVal := func(dst []byte, i, j int) []byte {
		binary.BigEndian.PutUint64(dst[:8], uint64(j))
		binary.LittleEndian.PutUint64(dst[8:16], Tag(i*sz.Dups+j))
		return dst[:16]
	}
	fixedVal := func(dst []byte, i, j int) []byte {
		binary.BigEndian.PutUint32(dst[:4], uint32(j))
		binary.LittleEndian.PutUint32(dst[4:8], uint32(Tag(i*sz.Dups+j)))
		return dst[:8]
	}
	// Both rows visit the keys in this order: a SET_KEY per key, then
	// the key's duplicates.
	dupOrder := Perm(sz.DupKeys, 7)
	var dupSum, fixedSum uint64
	for _, i := range dupOrder {
		for j := 0; j < sz.Dups; j++ {
			dupSum = dupSum*31 + Tag(int(i)*sz.Dups+j)
			fixedSum = fixedSum*31 + uint64(uint32(Tag(int(i)*sz.Dups+j)))
		}
	}
	bigKeys := min(sz.BigKeys, sz.N)
	bigVal := func(dst []byte, i, j int) []byte {
		binary.BigEndian.PutUint32(dst[:4], uint32(j))
		binary.LittleEndian.PutUint32(dst[4:8], uint32(Tag(i*sz.BigDups+j)))
		return dst[:8]
	}
	bigOrder := Perm(bigKeys, 11)
	var bigSum uint64 // one pass; passes repeat it
	for _, i := range bigOrder {
		for j := 0; j < sz.BigDups; j++ {
			bigSum = bigSum*31 + uint64(uint32(Tag(int(i)*sz.BigDups+j)))
		}
	}
	for side, e := range engines {
		if !c.WantRow(dupRowName) && !c.WantRow(multiRowName) && !c.WantRow(bigMultiRowName) {
			break
		}
		c.Logf("loading %s keys × %d duplicates (%s)", Comma(sz.DupKeys), sz.Dups, e.Name())
		s, err := openScratch(c, e, "dropin-dups", Options{MapSize: int64(sz.DupKeys*sz.Dups+bigKeys*sz.BigDups)*400 + 256<<20, MaxDBs: 3, Flags: NoSync | NoMetaSync})
		if err != nil {
			return nil, err
		}
		dupEnvs[side] = s
		txn, err := s.Begin(false)
		if err != nil {
			return nil, err
		}
		db, err := txn.OpenDB("dups", Create|DupSort)
		if err != nil {
			txn.Abort()
			return nil, err
		}
		fdb, err := txn.OpenDB("fixed", Create|DupSort|DupFixed)
		if err != nil {
			txn.Abort()
			return nil, err
		}
		var buf [16]byte
		for i := 0; i < sz.DupKeys; i++ {
			for j := 0; j < sz.Dups; j++ {
				if err := txn.Put(db, keys.At(i), dupVal(buf[:], i, j)); err != nil {
					txn.Abort()
					return nil, fmt.Errorf("%s: dup put: %w", e.Name(), err)
				}
				if err := txn.Put(fdb, keys.At(i), fixedVal(buf[:], i, j)); err != nil {
					txn.Abort()
					return nil, fmt.Errorf("%s: dupfixed put: %w", e.Name(), err)
				}
			}
		}
		bdb, err := txn.OpenDB("bigfixed", Create|DupSort|DupFixed)
		if err != nil {
			txn.Abort()
			return nil, err
		}
		for i := 0; i < bigKeys; i++ {
			for j := 0; j < sz.BigDups; j++ {
				if err := txn.Put(bdb, keys.At(i), bigVal(buf[:], i, j)); err != nil {
					txn.Abort()
					return nil, fmt.Errorf("%s: promoted dupfixed put: %w", e.Name(), err)
				}
			}
		}
		if err := txn.Commit(); err != nil {
			return nil, err
		}
	}
	// dupCursor opens a read txn (RawRead) and a cursor on database name,
	// after checking that it holds every value.
	dupCursor := func(side int, name string, flags DBFlags, want int) (Txn, Cursor, error) {
		txn, err := dupEnvs[side].Begin(true)
		if err != nil {
			return nil, nil, err
		}
		txn.SetRawRead(true)
		db, err := txn.OpenDB(name, flags)
		if err == nil {
			var got uint64
			if got, err = txn.Entries(db); err == nil && got != uint64(want) {
				err = fmt.Errorf("%s database holds %d values, want %d", name, got, want)
			}
		}
		var cur Cursor
		if err == nil {
			cur, err = txn.Cursor(db)
		}
		if err != nil {
			txn.Abort()
			return nil, nil, err
		}
		return txn, cur, nil
	}
	dupRound := func(side int) (float64, error) {
		txn, cur, err := dupCursor(side, "dups", DupSort, sz.DupKeys*sz.Dups)
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		defer cur.Close()
		var sum uint64
		nvals := 0
		t0 := time.Now()
		for _, i := range dupOrder {
			_, v, err := cur.SetKey(keys.At(int(i)))
			for err == nil {
				if len(v) == 16 {
					sum = sum*31 + binary.LittleEndian.Uint64(v[8:])
				}
				nvals++
				_, v, err = cur.NextDup()
			}
			if !errors.Is(err, ErrNotFound) {
				return 0, err
			}
		}
		el := time.Since(t0)
		if nvals != sz.DupKeys*sz.Dups || sum != dupSum {
			return 0, fmt.Errorf("dup iteration saw %d values (checksum %x), want %d (%x)",
				nvals, sum, sz.DupKeys*sz.Dups, dupSum)
		}
		return nsPer(el, nvals), nil
	}
	// multiRound reads database name (nkeys × ndups values, visited in
	// order) passes times with GET_MULTIPLE / NEXT_MULTIPLE; each pass
	// must see every value and checksum wantSum.
	multiRound := func(side int, name string, order []int32, ndups, passes int, wantSum uint64) (float64, error) {
		txn, cur, err := dupCursor(side, name, DupSort|DupFixed, len(order)*ndups)
		if err != nil {
			return 0, err
		}
		defer txn.Abort()
		defer cur.Close()
		sums := make([]uint64, passes)
		counts := make([]int, passes)
		t0 := time.Now()
		for p := range sums {
			sum, nvals, err := multiPass(cur, keys, order)
			if err != nil {
				return 0, err
			}
			sums[p], counts[p] = sum, nvals
		}
		el := time.Since(t0)
		for p := range sums {
			if counts[p] != len(order)*ndups || sums[p] != wantSum {
				return 0, fmt.Errorf("%s: GET_MULTIPLE pass %d read %d values (checksum %x), want %d (%x)",
					name, p+1, counts[p], sums[p], len(order)*ndups, wantSum)
			}
		}
		return nsPer(el, passes*len(order)*ndups), nil
	}
	// appendDupRound loads the promoted DUPFIXED data into a fresh
	// environment: keys in order, each key's values in order, through one
	// cursor with MDB_APPENDDUP, in one write txn; it times the puts and
	// the commit, then checks the count and reads every value back.
	appendDupRound := func(e Engine) (float64, error) {
		s, err := openScratch(c, e, "dropin-appenddup", Options{MapSize: int64(bigKeys*sz.BigDups)*400 + 256<<20, MaxDBs: 1, Flags: NoSync | NoMetaSync})
		if err != nil {
			return 0, err
		}
		defer s.close()
		var buf [8]byte
		t0 := time.Now()
		txn, err := s.Begin(false)
		if err != nil {
			return 0, err
		}
		db, err := txn.OpenDB("bigfixed", Create|DupSort|DupFixed)
		var cur Cursor
		if err == nil {
			cur, err = txn.Cursor(db)
		}
		for i := 0; i < bigKeys && err == nil; i++ {
			for j := 0; j < sz.BigDups && err == nil; j++ {
				if err = cur.AppendDup(keys.At(i), bigVal(buf[:], i, j)); err != nil {
					err = fmt.Errorf("AppendDup key %d value %d: %w", i, j, err)
				}
			}
		}
		el, err := endTimed(txn, cur, err, t0)
		if err != nil {
			return 0, err
		}
		rt, err := s.Begin(true)
		if err != nil {
			return 0, err
		}
		defer rt.Abort()
		rt.SetRawRead(true)
		if db, err = rt.OpenDB("bigfixed", DupSort|DupFixed); err != nil {
			return 0, err
		}
		if n, err := rt.Entries(db); err != nil || n != uint64(bigKeys*sz.BigDups) {
			return 0, fmt.Errorf("AppendDup load holds %d values (%v), want %d: wrong count", n, err, bigKeys*sz.BigDups)
		}
		rc, err := rt.Cursor(db)
		if err != nil {
			return 0, err
		}
		defer rc.Close()
		if sum, n, err := multiPass(rc, keys, bigOrder); err != nil || n != bigKeys*sz.BigDups || sum != bigSum {
			return 0, fmt.Errorf("AppendDup load read back %d values (checksum %x, %v), want %d (%x): wrong values", n, sum, err, bigKeys*sz.BigDups, bigSum)
		}
		return nsPer(el, bigKeys*sz.BigDups), nil
	}
	kv := fmt.Sprintf("%s × (16 B key, %d B value)", Comma(sz.N), sz.ValSize)
	rows := []workload{
		{"sequential put, 1 txn + commit (NOSYNC)", kv, "ns/put", func(e Engine, _, _ int) (float64, error) { return putRound(e, seqOrder, false) }, 0},
		{"sequential load, Cursor.Put(Append), 1 txn + commit (NOSYNC)", kv, "ns/put", func(e Engine, _, _ int) (float64, error) { return putRound(e, seqOrder, true) }, 0},
		{"random put, 1 txn + commit (NOSYNC)", kv, "ns/put", func(e Engine, _, _ int) (float64, error) { return putRound(e, randOrder, false) }, 0},
		{"random delete of ½ the keys, 1 txn + commit (NOSYNC)", kv, "ns/del", func(e Engine, _, _ int) (float64, error) { return delRound(e) }, 0},
		{"random get (copying)", fmt.Sprintf("%s gets of %s", Comma(sz.Gets), Comma(sz.N)), "ns/get", func(_ Engine, side, _ int) (float64, error) { return getRound(side, false) }, 0},
		{"random get (RawRead)", fmt.Sprintf("%s gets of %s", Comma(sz.Gets), Comma(sz.N)), "ns/get", func(_ Engine, side, _ int) (float64, error) { return getRound(side, true) }, 0},
		{fmt.Sprintf("full scan ×%d, cursor First + Next (RawRead)", sz.Passes), kv, "ns/entry", func(_ Engine, side, _ int) (float64, error) { return scanRound(side) }, 0},
		{fmt.Sprintf("range scan, Seek + %d Next (RawRead)", sz.ScanLen), fmt.Sprintf("%s scans of %s", Comma(sz.Scans), Comma(sz.N)), "µs/scan", func(_ Engine, side, _ int) (float64, error) { return rangeRound(side) }, 0},
		{dupRowName, fmt.Sprintf("%s keys × %d dups (16 B)", Comma(sz.DupKeys), sz.Dups), "ns/value", func(_ Engine, side, _ int) (float64, error) { return dupRound(side) }, 0},
		{multiRowName, fmt.Sprintf("%s keys × %d dups (8 B)", Comma(sz.DupKeys), sz.Dups), "ns/value", func(_ Engine, side, _ int) (float64, error) {
			return multiRound(side, "fixed", dupOrder, sz.Dups, 1, fixedSum)
		}, 0},
		{bigMultiRowName, fmt.Sprintf("%s keys × %s dups (8 B), %d passes", Comma(bigKeys), Comma(sz.BigDups), sz.BigPasses), "ns/value", func(_ Engine, side, _ int) (float64, error) {
			return multiRound(side, "bigfixed", bigOrder, sz.BigDups, sz.BigPasses, bigSum)
		}, 0},
		{appendDupRowName, fmt.Sprintf("%s keys × %s dups (8 B)", Comma(bigKeys), Comma(sz.BigDups)), "ns/value", func(e Engine, _, _ int) (float64, error) { return appendDupRound(e) }, 0},
		{"durable put + commit (fsync)", fmt.Sprintf("%s commits/round, %d rounds", Comma(sz.Commits), sz.Rounds*durableRoundsPer), "µs/commit", func(_ Engine, side, round int) (float64, error) { return durableRound(side, round) }, sz.Rounds * durableRoundsPer},
	}
	t := &Table{Sides: []string{ours.Name(), stock.Name()}}
	for _, w := range rows {
		if !c.WantRow(w.name) {
			continue
		}
		c.Logf("dropin: %s", w.name)
		sides := make([]Side, len(engines))
		for i, e := range engines {
			i, e, w := i, e, w
			sides[i] = Side{Name: e.Name(), Measure: func(r int) (float64, error) { return w.run(e, i, r) }}
		}
		rounds := sz.Rounds
		if w.rounds > 0 {
			rounds = w.rounds
		}
		st, err := Alternate(rounds, sides, func(s string) { c.Logf("  %s", s) })
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		t.Add(w.name, w.size, w.unit, st...)
	}
	t.Notes = []string{
		fmt.Sprintf("%d alternating rounds per row (the durable row: %d, shorter ones; the side that starts flips every round); every round verifies its results outside the timer (entry counts, values read back, order-sensitive checksums).", sz.Rounds, sz.Rounds*durableRoundsPer),
		"Keys are 16-digit decimal strings; bulk workloads run with NOSYNC|NOMETASYNC, the durable row with full sync. Ratio = ours median / lmdb-go median: < 1 means ours is faster (target ≤ 1.0x).",
		fmt.Sprintf("The two DUPFIXED rows read 8-byte duplicates with MDB_GET_MULTIPLE / MDB_NEXT_MULTIPLE: %d per key (inline sub-pages) once a round, and %s per key (promoted to a sub-tree each, issue 14's case) %d times a round, keys in a shuffled order. The DUPFIXED load row stores that promoted data into a fresh environment, keys and each key's values in order, with one MDB_APPENDDUP cursor put per value, and reads it all back outside the timer.", sz.Dups, Comma(sz.BigDups), sz.BigPasses),
	}
	return t, nil
}

const (
	dupRowName   = "DUPSORT reads, SetKey + NextDup per key (RawRead)"
	multiRowName = "DUPFIXED reads, SetKey + GetMultiple/NextMultiple (RawRead)"
	// The same over promoted duplicates (a sub-tree per key).
	bigMultiRowName = "DUPFIXED reads, promoted sub-trees, SetKey + GetMultiple/NextMultiple (RawRead)"
	// Loading that data value by value.
	appendDupRowName = "DUPFIXED load, promoted sub-trees, Cursor.Put(AppendDup) per value, 1 txn + commit (NOSYNC)"
)

// multiPass reads the DUPFIXED values of the keys in order (SetKey, then
// GetMultiple and NextMultiple to the key's end) and returns an
// order-sensitive checksum of the values' last 4 bytes and their count.
func multiPass(cur Cursor, keys Keys, order []int32) (sum uint64, nvals int, err error) {
	for _, i := range order {
		k := keys.At(int(i))
		if _, _, err := cur.SetKey(k); err != nil {
			return 0, 0, err
		}
		vals, err := cur.GetMultiple(k)
		for err == nil {
			if len(vals)%8 != 0 {
				return 0, 0, fmt.Errorf("GET_MULTIPLE returned %d bytes, not a multiple of 8", len(vals))
			}
			for o := 0; o < len(vals); o += 8 {
				sum = sum*31 + uint64(binary.LittleEndian.Uint32(vals[o+4:]))
			}
			nvals += len(vals) / 8
			vals, err = cur.NextMultiple()
		}
		if !errors.Is(err, ErrNotFound) {
			return 0, 0, err
		}
	}
	return sum, nvals, nil
}

func nsPer(d time.Duration, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / float64(n)
}
