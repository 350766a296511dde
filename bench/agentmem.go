package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"
)

func init() {
	Register(Suite{ID: "agentmem", Command: "agentmem_bench", Title: "Agent-memory workload (p50 latency)", Order: 40, Run: runAgentMem})
}

// The agent-memory workload: 64 agents store memories of 200 bytes of text
// plus metadata. Record r belongs to agent r%64 with sequence r/64; its key
// is the agent (2 bytes, big endian) then the complemented sequence (8 bytes,
// big endian), so one agent's memories sort newest first.
const (
	amAgents  = 64
	amTextLen = 200
	amMetaLen = 24
	amValLen  = amMetaLen + amTextLen
	amKeyLen  = 10
	amSeed    = 20261016
	amRecentK = 10
)

func amKey(dst []byte, id int) []byte {
	binary.BigEndian.PutUint16(dst[0:2], uint16(id%amAgents))
	binary.BigEndian.PutUint64(dst[2:10], ^uint64(id/amAgents))
	return dst[:amKeyLen]
}

// amValue is version ver of record id: metadata (id, timestamp, version,
// agent) followed by text derived from id and version.
func amValue(dst []byte, id, ver int) []byte {
	dst = dst[:amValLen]
	binary.LittleEndian.PutUint64(dst[0:8], uint64(id))
	binary.LittleEndian.PutUint64(dst[8:16], uint64(1_760_000_000_000+id*1000+ver))
	binary.LittleEndian.PutUint32(dst[16:20], uint32(ver))
	binary.LittleEndian.PutUint32(dst[20:24], uint32(id%amAgents))
	FillValue(dst[amMetaLen:], int(mix(uint64(id)<<8|uint64(ver&0xff))>>1))
	return dst
}

// amModel is what one environment must contain: versions[id] for every
// record id < len(versions).
type amModel struct{ versions []uint16 }

type amSizes struct {
	Inserts, Reads, Recent, Overwrites, Mixed int
}

type amRng struct{ s uint64 }

func (r *amRng) intn(n int) int { r.s = mix(r.s); return int(r.s % uint64(n)) }

func runAgentMem(c *Config) (*Table, error) {
	ours, stock := c.Engines()
	engines := []Engine{ours, stock}
	bases := []int{c.Size(10_000, 10_000, 200), c.Size(1_000_000, 100_000, 400)}
	rounds := c.RoundsOr(9, 9)
	fast := amSizes{c.Size(2000, 1000, 20), c.Size(20_000, 10_000, 50), c.Size(5000, 2000, 20), c.Size(2000, 1000, 20), c.Size(20_000, 5000, 50)}
	// Durable writes wait for fsync (~0.4 ms each here) and the latency
	// drifts: 300 per round keep each round's p50 steady.
	durable := amSizes{c.Size(300, 50, 5), c.Size(20_000, 10_000, 50), c.Size(5000, 2000, 20), c.Size(300, 50, 5), c.Size(1000, 500, 20)}
	t := &Table{Sides: []string{ours.Name(), stock.Name()}}

	for _, base := range bases {
		// Bulk-load the base records once per engine (untimed).
		dirs := make([]*scratchEnv, len(engines))
		models := make([]*amModel, len(engines))
		cleanup := func() {
			for _, s := range dirs {
				if s != nil {
					s.close()
				}
			}
		}
		maxRecords := base + 2*rounds*(fast.Inserts+durable.Inserts)
		mapSize := int64(maxRecords)*amValLen*8 + 256<<20 // generous: virtual space only
		c.Logf("agentmem: loading %s base records per engine", Comma(base))
		for i, e := range engines {
			s, err := openScratch(c, e, "agentmem", Options{MapSize: mapSize, Flags: NoSync | NoMetaSync})
			if err != nil {
				cleanup()
				return nil, err
			}
			dirs[i] = s
			var kb [amKeyLen]byte
			var vb [amValLen]byte
			// Insert in key order (agent by agent, newest first) so that
			// loading appends.
			order := make([]int, 0, base)
			for a := 0; a < amAgents; a++ {
				for seq := (base - 1) / amAgents; seq >= 0; seq-- {
					if id := seq*amAgents + a; id < base {
						order = append(order, id)
					}
				}
			}
			err = loadSeq(s, "", base, 50_000,
				func(j int) []byte { return amKey(kb[:], order[j]) },
				func(j int) []byte { return amValue(vb[:], order[j], 0) })
			if err == nil {
				err = s.Sync()
			}
			if err != nil {
				cleanup()
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			models[i] = &amModel{versions: make([]uint16, base, maxRecords)}
		}
		for _, mode := range []struct {
			name  string
			flags EnvFlags
			sz    amSizes
		}{{"fast", NoSync | NoMetaSync, fast}, {"durable", 0, durable}} {
			// Reopen every environment with the mode's flags.
			for i, e := range engines {
				if err := dirs[i].Env.Close(); err != nil {
					cleanup()
					return nil, err
				}
				env, err := e.Open(dirs[i].dir, Options{MapSize: mapSize, Flags: mode.flags})
				dirs[i].Env = env // nil on error; close skips it
				if err != nil {
					cleanup()
					return nil, err
				}
			}
			type op struct {
				name string
				run  func(env Env, m *amModel, rng *amRng, lat []time.Duration) ([]time.Duration, error)
				n    int
			}
			sz := mode.sz
			ops := []op{
				{"W1 insert", amInsert, sz.Inserts},
				{"W2 point read", amPointRead, sz.Reads},
				{fmt.Sprintf("W3 recent %d", amRecentK), amRecent, sz.Recent},
				{"W4 overwrite", amOverwrite, sz.Overwrites},
				{"W5 mixed 90/10", amMixed, sz.Mixed},
			}
			for wi, o := range ops {
				name := fmt.Sprintf("%s, %s", o.name, mode.name)
				if !c.WantRow(name) {
					continue
				}
				c.Logf("agentmem: N=%s %s", Comma(base), name)
				o := o
				sides := make([]Side, len(engines))
				for i, e := range engines {
					i := i
					sides[i] = Side{Name: e.Name(), Measure: func(r int) (float64, error) {
						// Same seed for both engines in a round: same operations.
						rng := &amRng{s: amSeed ^ uint64(base)<<20 ^ uint64(wi)<<12 ^ uint64(r)}
						if mode.flags != 0 {
							rng.s ^= 1 << 40
						}
						lat, err := o.run(dirs[i].Env, models[i], rng, make([]time.Duration, 0, o.n))
						if err != nil {
							return 0, err
						}
						if len(lat) != o.n {
							return 0, fmt.Errorf("%d operations timed, want %d", len(lat), o.n)
						}
						return p50(lat), nil
					}}
				}
				st, err := Alternate(rounds, sides, func(s string) { c.Logf("  %s", s) })
				if err != nil {
					cleanup()
					return nil, fmt.Errorf("N=%d %s: %w", base, name, err)
				}
				t.Add(name, fmt.Sprintf("N = %s, %s ops/round", Comma(base), Comma(o.n)), "µs p50", st...)
			}
		}
		// Final state verified again after reopening.
		for i, e := range engines {
			err := dirs[i].Env.Close()
			if err == nil {
				dirs[i].Env, err = e.Open(dirs[i].dir, Options{MapSize: mapSize})
			} else {
				dirs[i].Env = nil
			}
			if err == nil {
				err = amVerifyAll(dirs[i].Env, models[i])
			}
			if err != nil {
				cleanup()
				return nil, fmt.Errorf("%s: final verification after reopen: %w", e.Name(), err)
			}
		}
		cleanup()
	}
	t.Notes = []string{
		fmt.Sprintf("64 agents, %d-byte values (200 B text + 24 B metadata), 10-byte keys (agent, newest-first sequence), seed %d; %d alternating rounds, both engines run the same operations each round.", amValLen, amSeed, rounds),
		"Each operation is timed alone (point read = read txn begin + get + abort; recent-K = read txn + seek + 9 Next; writes = write txn + put + commit); the cell is the median over rounds of each round's p50. Durable = fsync at every commit, fast = NOSYNC|NOMETASYNC.",
		"Every write is read back right after its commit and every read is checked against a model of the database (untimed); the final state is verified again after reopening.",
	}
	return t, nil
}

func p50(lat []time.Duration) float64 {
	s := append([]time.Duration(nil), lat...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[len(s)/2].Nanoseconds()) / 1000
}

// amWrite puts version ver of id in its own write transaction (timed), then
// reads it back in a fresh read transaction (untimed).
func amWrite(env Env, id, ver int) (time.Duration, error) {
	var kb [amKeyLen]byte
	var vb [amValLen]byte
	k, v := amKey(kb[:], id), amValue(vb[:], id, ver)
	t0 := time.Now()
	txn, err := env.Begin(false)
	if err != nil {
		return 0, err
	}
	db, err := txn.OpenDB("", 0)
	if err == nil {
		err = txn.Put(db, k, v)
	}
	el, err := endTimed(txn, nil, err, t0)
	if err != nil {
		return 0, err
	}
	return el, amCheck(env, id, ver)
}

// amCheck reads record id in its own read transaction and compares it.
func amCheck(env Env, id, ver int) error {
	txn, err := env.Begin(true)
	if err != nil {
		return err
	}
	defer txn.Abort()
	db, err := txn.OpenDB("", 0)
	if err != nil {
		return err
	}
	var kb [amKeyLen]byte
	var vb [amValLen]byte
	got, err := txn.Get(db, amKey(kb[:], id))
	if err != nil {
		return fmt.Errorf("read back record %d: %w", id, err)
	}
	if !bytes.Equal(got, amValue(vb[:], id, ver)) {
		return fmt.Errorf("record %d: read back wrong value (want version %d)", id, ver)
	}
	return nil
}

func amInsert(env Env, m *amModel, _ *amRng, lat []time.Duration) ([]time.Duration, error) {
	for j := 0; j < cap(lat); j++ {
		id := len(m.versions)
		d, err := amWrite(env, id, 0)
		if err != nil {
			return nil, err
		}
		m.versions = append(m.versions, 0)
		lat = append(lat, d)
	}
	return lat, nil
}

func amOverwrite(env Env, m *amModel, rng *amRng, lat []time.Duration) ([]time.Duration, error) {
	for j := 0; j < cap(lat); j++ {
		id := rng.intn(len(m.versions))
		ver := int(m.versions[id]) + 1
		d, err := amWrite(env, id, ver)
		if err != nil {
			return nil, err
		}
		m.versions[id] = uint16(ver)
		lat = append(lat, d)
	}
	return lat, nil
}

func amRead(env Env, m *amModel, id int) (time.Duration, error) {
	var kb [amKeyLen]byte
	var vb [amValLen]byte
	k := amKey(kb[:], id)
	t0 := time.Now()
	txn, err := env.Begin(true)
	if err != nil {
		return 0, err
	}
	db, err := txn.OpenDB("", 0)
	var got []byte
	if err == nil {
		got, err = txn.Get(db, k)
	}
	ok := err == nil && bytes.Equal(got, amValue(vb[:], id, int(m.versions[id])))
	txn.Abort()
	el := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("point read %d: %w", id, err)
	}
	if !ok {
		return 0, fmt.Errorf("point read %d: wrong value", id)
	}
	return el, nil
}

func amPointRead(env Env, m *amModel, rng *amRng, lat []time.Duration) ([]time.Duration, error) {
	for j := 0; j < cap(lat); j++ {
		d, err := amRead(env, m, rng.intn(len(m.versions)))
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	return lat, nil
}

func amMixed(env Env, m *amModel, rng *amRng, lat []time.Duration) ([]time.Duration, error) {
	for j := 0; j < cap(lat); j++ {
		id := rng.intn(len(m.versions))
		var d time.Duration
		var err error
		if rng.intn(10) == 0 {
			ver := int(m.versions[id]) + 1
			if d, err = amWrite(env, id, ver); err == nil {
				m.versions[id] = uint16(ver)
			}
		} else {
			d, err = amRead(env, m, id)
		}
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	return lat, nil
}

// amRecent reads the newest amRecentK memories of a random agent and checks
// them against the model (ids of that agent, newest first, right versions).
func amRecent(env Env, m *amModel, rng *amRng, lat []time.Duration) ([]time.Duration, error) {
	var prefix [2]byte
	var vb [amValLen]byte
	got := make([]int, 0, amRecentK)
	vals := make([][]byte, 0, amRecentK)
	for j := 0; j < cap(lat); j++ {
		agent := rng.intn(amAgents)
		binary.BigEndian.PutUint16(prefix[:], uint16(agent))
		got, vals = got[:0], vals[:0]
		t0 := time.Now()
		txn, err := env.Begin(true)
		if err != nil {
			return nil, err
		}
		db, err := txn.OpenDB("", 0)
		var cur Cursor
		if err == nil {
			cur, err = txn.Cursor(db)
		}
		if err != nil {
			txn.Abort()
			return nil, err
		}
		k, v, err := cur.Seek(prefix[:])
		for err == nil && len(got) < amRecentK && bytes.HasPrefix(k, prefix[:]) {
			got = append(got, int(^binary.BigEndian.Uint64(k[2:]))*amAgents+agent)
			vals = append(vals, append([]byte(nil), v...))
			if len(got) < amRecentK {
				k, v, err = cur.Next()
			}
		}
		cur.Close()
		txn.Abort()
		el := time.Since(t0)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		// The model's newest ids of this agent.
		want := 0
		for id := len(m.versions) - 1; id >= 0 && want < amRecentK; id-- {
			if id%amAgents != agent {
				continue
			}
			if want >= len(got) || got[want] != id {
				return nil, fmt.Errorf("recent-%d of agent %d: position %d is record %v, want %d", amRecentK, agent, want, got, id)
			}
			if !bytes.Equal(vals[want], amValue(vb[:], id, int(m.versions[id]))) {
				return nil, fmt.Errorf("recent-%d of agent %d: record %d has a wrong value", amRecentK, agent, id)
			}
			want++
		}
		if want != len(got) {
			return nil, fmt.Errorf("recent-%d of agent %d: %d records, want %d", amRecentK, agent, len(got), want)
		}
		lat = append(lat, el)
	}
	return lat, nil
}

// amVerifyAll checks the entry count and every record's value.
func amVerifyAll(env Env, m *amModel) error {
	txn, err := env.Begin(true)
	if err != nil {
		return err
	}
	defer txn.Abort()
	db, err := txn.OpenDB("", 0)
	if err != nil {
		return err
	}
	n, err := txn.Entries(db)
	if err != nil {
		return err
	}
	if n != uint64(len(m.versions)) {
		return fmt.Errorf("%d records, want %d", n, len(m.versions))
	}
	var kb [amKeyLen]byte
	var vb [amValLen]byte
	for id, ver := range m.versions {
		got, err := txn.Get(db, amKey(kb[:], id))
		if err != nil {
			return fmt.Errorf("record %d: %w", id, err)
		}
		if !bytes.Equal(got, amValue(vb[:], id, int(ver))) {
			return fmt.Errorf("record %d: wrong value", id)
		}
	}
	return nil
}
