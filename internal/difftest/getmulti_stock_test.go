package difftest

import (
	"bytes"
	"fmt"
)

// GetMultiple is where our engine deliberately answers differently from
// stock LMDB 0.9.33 (README, "Differences from stock LMDB"; the C side is
// current_page in cdlmdb/dupsort.c). Stock answers success without data
// whenever its duplicate cursor is unset or at its end mark: on a single
// value stored as a plain node, after NextDup ran off the end, after Last,
// LastDup or PrevNoDup, after its value was deleted. Ours answers, while
// the cursor stands on a value, the page of values holding it (a plain
// value is a one-element page) and otherwise the error GetCurrent gives.
// Likewise NextMultiple on an unpositioned cursor whose first key is a
// plain value: stock NotFound, ours that value.
//
// multiAccepted decides whether such a difference is exactly that one. It
// asks both cursors GetCurrent (a read both engines answer alike, and the
// same op on both sides, so the two stay in step) and requires:
//   - stock empty, ours a page: both GetCurrent equal and ok; the page is
//     whole values of that size, ends with the current value (ours moved to
//     the page's last value, stock did not need to) and each of its values
//     is a value of the current key (GetBoth through a fresh cursor);
//   - stock empty, ours an error: both GetCurrent fail with that error;
//   - NextMultiple, stock NotFound, ours a page: both GetCurrent equal and
//     ok, on the DB's first key, which holds one value, and the page is it
//     (stock ends there with NotFound only from an unpositioned cursor).
//
// It returns a note for the harness statistics, or "" when the difference
// is not the deliberate one (a real mismatch).
func multiAccepted(o op, sa, sb *side, ra, rb result) string {
	if !isDupFixed(o.db) || (o.kind != opCurGetMultiple && o.kind != opCurNextMultiple) {
		return ""
	}
	ca, cb := sa.topCursor(o.db, o.slot), sb.topCursor(o.db, o.slot)
	if ca == nil || cb == nil {
		return ""
	}
	stockEmpty := rb.code == 0 && len(rb.v) == 0
	freshNext := o.kind == opCurNextMultiple && rb.code == eNotFound
	switch {
	case o.kind == opCurGetMultiple && stockEmpty && ra.code == 0 && len(ra.v) > 0:
	case o.kind == opCurGetMultiple && stockEmpty && ra.code != 0:
	case freshNext && ra.code == 0 && len(ra.v) > 0:
	default:
		return ""
	}
	ka, va, erra := ca.get(nil, nil, cGetCurrent)
	kb, vb, errb := cb.get(nil, nil, cGetCurrent)
	codeA, codeB := sa.eng.code(erra), sb.eng.code(errb)
	if codeA != codeB || !bytes.Equal(ka, kb) || !bytes.Equal(va, vb) {
		return ""
	}
	// the harness's per-cursor notes of ours (the key it stands on, whether
	// it was ever placed) follow stock's answer, so that the step-arounds
	// of later ops act alike on both sides
	if k, ok := sb.lastKey[cb]; ok {
		if sa.lastKey == nil {
			sa.lastKey = map[tCursor][]byte{}
		}
		sa.lastKey[ca] = k
	} else {
		delete(sa.lastKey, ca)
	}
	if sa.placed != nil && sb.placed != nil {
		sa.placed[ca] = sb.placed[cb]
	}
	if ra.code != 0 {
		if codeA != ra.code {
			return ""
		}
		return "GetMultiple: " + errName(ra.code) + " where stock answers ok without data"
	}
	if codeA != 0 || len(va) == 0 || len(ra.v)%len(va) != 0 || !bytes.HasSuffix(ra.v, va) {
		return ""
	}
	if freshNext && !bytes.Equal(ra.v, va) {
		return ""
	}
	// every value of the page belongs to the key (a fresh cursor leaves
	// the harness's cursors alone)
	pc, err := sa.top().cursor(sa.dbis[o.db])
	if err != nil {
		return ""
	}
	defer pc.close()
	for off := 0; off < len(ra.v); off += len(va) {
		if _, _, err := pc.get(ka, ra.v[off:off+len(va)], cGetBoth); err != nil {
			return ""
		}
	}
	if freshNext {
		// stock's NEXT_MULTIPLE only ends on the first key with NotFound
		// when the cursor was unpositioned and that key holds a plain value
		if k, _, err := pc.get(nil, nil, cFirst); err != nil || !bytes.Equal(k, ka) {
			return ""
		}
		if n, err := pc.count(); err != nil || n != 1 {
			return ""
		}
		return "NextMultiple: the first key's single value where stock answers NotFound"
	}
	return fmt.Sprintf("GetMultiple: %d value(s) where stock answers ok without data", len(ra.v)/len(va))
}
