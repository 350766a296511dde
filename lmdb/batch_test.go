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
