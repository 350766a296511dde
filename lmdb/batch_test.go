package lmdb

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
)

// TestCursorGetBatch: batches of every size from every start op equal the
// items a Get loop returns (forward and backward, with an end bound on
// either side of it), on plain, DupSort and prefix-compressed databases,
// with and without RawRead; the cursor ends on the last item returned.
func TestCursorGetBatch(t *testing.T) {
	for _, flags := range []uint{0, PrefixCompression, DupSort, DupSort | PrefixCompression | Counted, DupSort | DupFixed} {
		t.Run(fmt.Sprintf("flags%#x", flags), func(t *testing.T) {
			r := rand.New(rand.NewSource(cntSubSeed(cntSeed(t), fmt.Sprint(flags))))
			env := openEnv(t, NoSync)
			dbi := openDB(t, env, "b", flags)
			mustUpdate(t, env, func(txn *Txn) error {
				for i := 0; i < 2000; i++ {
					k := []byte(fmt.Sprintf("common/key/prefix/%05d", r.Intn(700)))
					v := []byte(fmt.Sprintf("%08d", r.Intn(100000)))
					if err := txn.Put(dbi, k, v, 0); err != nil {
						return err
					}
				}
				return nil
			})
			for _, raw := range []bool{false, true} {
				mustView(t, env, func(txn *Txn) error {
					txn.RawRead = raw
					var ks, vs [][]byte
					c, _ := txn.OpenCursor(dbi)
					defer c.Close()
					for k, v, err := c.Get(nil, nil, First); err == nil; k, v, err = c.Get(nil, nil, Next) {
						ks = append(ks, append([]byte(nil), k...))
						vs = append(vs, append([]byte(nil), v...))
					}
					b, _ := txn.OpenCursor(dbi)
					defer b.Close()
					var bk, bv [][]byte
					for trial := 0; trial < 200; trial++ {
						max := 1 + r.Intn(400)
						back := r.Intn(2) == 0
						var end []byte
						var fl uint
						if r.Intn(2) == 0 {
							end = ks[r.Intn(len(ks))]
							if r.Intn(2) == 0 {
								fl |= BatchEndIncl
							}
						}
						op := uint(First)
						if back {
							op = Last
						}
						var err error
						bk, bv, err = b.GetBatch(nil, op, max, end, fl, bk, bv)
						// the model: from the first (last) item, up to max, within end
						var wk, wv [][]byte
						for i := 0; i < len(ks) && len(wk) < max; i++ {
							j := i
							if back {
								j = len(ks) - 1 - i
							}
							if end != nil {
								c := bytes.Compare(ks[j], end)
								if back {
									c = -c
								}
								if c > 0 || (c == 0 && fl&BatchEndIncl == 0) {
									break
								}
							}
							wk, wv = append(wk, ks[j]), append(wv, vs[j])
						}
						if len(wk) == 0 {
							if !IsNotFound(err) {
								t.Fatalf("trial %d: empty batch: %v", trial, err)
							}
							continue
						}
						if err != nil || len(bk) != len(wk) {
							t.Fatalf("trial %d (max %d back %v end %q): %d items, %v; want %d", trial, max, back, end, len(bk), err, len(wk))
						}
						for i := range bk {
							if !bytes.Equal(bk[i], wk[i]) || !bytes.Equal(bv[i], wv[i]) {
								t.Fatalf("trial %d item %d: %q/%q, want %q/%q", trial, i, bk[i], bv[i], wk[i], wv[i])
							}
						}
						if len(wk) == max {
							ck, cv, err := b.Get(nil, nil, GetCurrent)
							if err != nil || !bytes.Equal(ck, wk[max-1]) || !bytes.Equal(cv, wv[max-1]) {
								t.Fatalf("trial %d: cursor after a full batch on %q/%q, %v; want the last item", trial, ck, cv, err)
							}
						}
					}
					return nil
				})
			}
		})
	}
}

// TestCursorGetMany: GetMany equals a Get per key (present and absent keys,
// empty values, every DB kind incl. compressed DupSort), raw and copied, and
// allocates nothing with RawRead once its buffers are warm.
func TestCursorGetMany(t *testing.T) {
	for _, flags := range []uint{0, PrefixCompression, DupSort, DupSort | PrefixCompression, DupSort | DupFixed} {
		t.Run(fmt.Sprintf("flags%#x", flags), func(t *testing.T) {
			r := rand.New(rand.NewSource(cntSubSeed(cntSeed(t), fmt.Sprint(flags))))
			env := openEnv(t, NoSync)
			dbi := openDB(t, env, "m", flags)
			mustUpdate(t, env, func(txn *Txn) error {
				for i := 0; i < 3000; i++ {
					k := []byte(fmt.Sprintf("common/key/prefix/%05d", r.Intn(2000)*2))
					v := []byte(fmt.Sprintf("shared/value/%04d", r.Intn(10000)))
					if flags&DupFixed != 0 {
						v = v[len(v)-4:]
					} else if r.Intn(20) == 0 && flags&DupSort == 0 {
						v = []byte{} // an empty value
					}
					if err := txn.Put(dbi, k, v, 0); err != nil {
						return err
					}
				}
				return nil
			})
			for _, raw := range []bool{false, true} {
				mustView(t, env, func(txn *Txn) error {
					txn.RawRead = raw
					c, err := txn.OpenCursor(dbi)
					if err != nil {
						return err
					}
					defer c.Close()
					var vals [][]byte
					for trial := 0; trial < 50; trial++ {
						keys := make([][]byte, r.Intn(300))
						for i := range keys {
							keys[i] = []byte(fmt.Sprintf("common/key/prefix/%05d", r.Intn(4000)))
						}
						var found int
						vals, found, err = c.GetMany(keys, vals)
						if err != nil || len(vals) != len(keys) {
							t.Fatalf("GetMany: %d values, %v", len(vals), err)
						}
						hits := 0
						for i, k := range keys {
							want, err := txn.Get(dbi, k)
							if IsNotFound(err) {
								if vals[i] != nil {
									t.Fatalf("key %q absent, GetMany gave %q", k, vals[i])
								}
								continue
							}
							hits++
							if err != nil || vals[i] == nil || !bytes.Equal(vals[i], want) {
								t.Fatalf("key %q: GetMany %q, Get %q (%v)", k, vals[i], want, err)
							}
						}
						if found != hits {
							t.Fatalf("found %d, %d keys present", found, hits)
						}
					}
					if raw {
						keys := [][]byte{[]byte("common/key/prefix/00000"), []byte("common/key/prefix/00002"), []byte("absent")}
						vals, _, _ = c.GetMany(keys, vals)
						if a := testing.AllocsPerRun(50, func() { vals, _, err = c.GetMany(keys, vals) }); a != 0 || err != nil {
							t.Errorf("GetMany with RawRead: %v allocations per call, %v", a, err)
						}
					}
					_, _, err = c.GetMany([][]byte{[]byte("k"), {}}, nil)
					wantErrno(t, "an empty key", err, BadValSize)
					return nil
				})
			}
		})
	}
}

// TestCursorGetBatchTwin: a batch against the same op and then Next (Prev)
// per item through a second cursor, the end bound applied by hand, on
// every DB kind the batch's tight loops read (plain, counted, compressed
// keys; DupSort keys with single values, inline duplicates and sub-trees
// of many duplicates, DupFixed, compressed and counted DupSort), from
// every start op, both directions, end bounds inclusive and exclusive,
// batch sizes 1 to 300: the same items, then the same answers of
// GetCurrent and of a random step (Next, Prev, the Dup and NoDup steps)
// on both cursors, from which the next trial goes on; with RawRead the end
// bound is now and then a view from the batch before. In a read txn and
// in a write txn whose puts and deletes between trials make both cursors
// find their place again.
func TestCursorGetBatchTwin(t *testing.T) {
	kinds := []uint{0, Counted, PrefixCompression, DupSort, DupSort | PrefixCompression,
		DupSort | DupFixed, DupSort | PrefixCompression | Counted}
	for _, flags := range kinds {
		t.Run(fmt.Sprintf("flags%#x", flags), func(t *testing.T) {
			r := rand.New(rand.NewSource(cntSubSeed(cntSeed(t), fmt.Sprint("twin", flags))))
			env := openEnv(t, NoSync)
			dbi := openDB(t, env, "t", flags)
			dup := flags&DupSort != 0
			key := func() []byte {
				i := r.Intn(800)
				if dup && r.Intn(3) == 0 {
					i = 100 * r.Intn(3) // a few keys with many duplicates
				}
				if i%7 == 3 {
					return []byte(fmt.Sprintf("x%d/other", i*7919%10000))
				}
				return []byte(fmt.Sprintf("common/key/prefix/%05d", i))
			}
			val := func() []byte {
				if flags&DupFixed != 0 {
					return []byte(fmt.Sprintf("%08d", r.Intn(100000)))
				}
				if dup {
					return []byte(fmt.Sprintf("shared/value/%06d", r.Intn(100000)))
				}
				if r.Intn(50) == 0 {
					return bytes.Repeat([]byte{byte(r.Intn(256))}, 3000+r.Intn(3000)) // overflow pages
				}
				return []byte(fmt.Sprintf("v%d", r.Intn(1e6)))[:r.Intn(6)]
			}
			mustUpdate(t, env, func(txn *Txn) error {
				for i := 0; i < 4000; i++ {
					if err := txn.Put(dbi, key(), val(), 0); err != nil {
						return err
					}
				}
				return nil
			})
			trials := func(txn *Txn, writes bool) error {
				a, err := txn.OpenCursor(dbi)
				if err != nil {
					return err
				}
				defer a.Close()
				b, err := txn.OpenCursor(dbi)
				if err != nil {
					return err
				}
				defer b.Close()
				var bk, bv [][]byte
				ops := []uint{First, Last, Next, Prev, GetCurrent, SetRange, SetKey}
				steps := []uint{Next, Prev, Next, Prev}
				if dup {
					steps = append(steps, NextDup, PrevDup, NextNoDup, PrevNoDup)
				}
				for trial := 0; trial < 300; trial++ {
					op := ops[r.Intn(len(ops))]
					var setkey, end []byte
					if op == SetRange || op == SetKey {
						setkey = key()
						if r.Intn(3) == 0 {
							setkey = setkey[:len(setkey)-1] // mostly absent
						}
					}
					var fl uint
					if r.Intn(2) == 0 {
						fl |= BatchBackward
					}
					if r.Intn(2) == 0 {
						end = key()
						if r.Intn(4) == 0 {
							end = end[:len(end)-1]
						}
						if r.Intn(2) == 0 {
							fl |= BatchEndIncl
						}
					}
					max := 1 + r.Intn(300)
					aend := end
					if end != nil && txn.RawRead && len(bk) > 0 && r.Intn(3) == 0 {
						// a view from the last batch (decoded keys: in the
						// storage this batch writes to); the twin gets a copy
						aend = bk[r.Intn(len(bk))]
						end = append([]byte(nil), aend...)
					}
					bk, bv, err = a.GetBatch(setkey, op, max, aend, fl, bk, bv)
					// the per-item twin
					back := fl&BatchBackward != 0 || op == Last || op == Prev
					var wk, wv [][]byte
					var werr error
					for cur := op; len(wk) < max; {
						k, v, e := b.Get(setkey, nil, cur)
						if e != nil {
							werr = e
							break
						}
						if end != nil {
							c, ce := txn.Cmp(dbi, k, end)
							if ce != nil {
								return ce
							}
							if back {
								c = -c
							}
							if c > 0 || (c == 0 && fl&BatchEndIncl == 0) {
								break
							}
						}
						wk = append(wk, append([]byte(nil), k...))
						wv = append(wv, append([]byte(nil), v...))
						cur, setkey = Next, nil
						if back {
							cur = Prev
						}
					}
					if len(wk) == 0 && werr == nil {
						werr = NotFound
					}
					if len(wk) > 0 && IsNotFound(werr) {
						werr = nil
					}
					if cntCode(err) != cntCode(werr) || len(bk) != len(wk) {
						t.Fatalf("trial %d (op %d max %d flags %#x end %q): %d items, %v; per item %d, %v",
							trial, op, max, fl, end, len(bk), err, len(wk), werr)
					}
					for i := range bk {
						if !bytes.Equal(bk[i], wk[i]) || !bytes.Equal(bv[i], wv[i]) {
							t.Fatalf("trial %d item %d: %q/%q, per item %q/%q", trial, i, bk[i], bv[i], wk[i], wv[i])
						}
					}
					// where both cursors stand
					for _, st := range []uint{GetCurrent, steps[r.Intn(len(steps))]} {
						ka, va, ea := a.Get(nil, nil, st)
						kb, vb, eb := b.Get(nil, nil, st)
						if cntCode(ea) != cntCode(eb) || !bytes.Equal(ka, kb) || !bytes.Equal(va, vb) {
							t.Fatalf("trial %d: op %d after the batch: %q/%q, %v; per item %q/%q, %v",
								trial, st, ka, va, ea, kb, vb, eb)
						}
					}
					if writes && r.Intn(4) == 0 {
						// a put, or a delete of one value or (DupSort) of
						// every value of a key, through a third cursor
						if r.Intn(2) == 0 {
							if err := txn.Put(dbi, key(), val(), 0); err != nil {
								return err
							}
						} else {
							c, err := txn.OpenCursor(dbi)
							if err != nil {
								return err
							}
							_, _, err = c.Get(key(), nil, SetRange)
							if err == nil {
								var fl uint
								if dup && r.Intn(2) == 0 {
									fl = NoDupData
								}
								err = c.Del(fl)
							}
							c.Close()
							if err != nil && !IsNotFound(err) {
								return err
							}
						}
					}
				}
				return nil
			}
			for _, raw := range []bool{false, true} {
				mustView(t, env, func(txn *Txn) error {
					txn.RawRead = raw
					return trials(txn, false)
				})
			}
			mustUpdate(t, env, func(txn *Txn) error { return trials(txn, true) })
		})
	}
}
