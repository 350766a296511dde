package difftest

import (
	"bytes"
	"fmt"
)

// Step-arounds for stock LMDB 0.9.33 sub-cursor bugs in sorted-duplicate DBs
// (documented with minimal sequences in /work/notes/DUPFIX.md). Each one
// applies the same harness action on both sides and only in the situation
// that triggers the stock bug; our engine's correct behaviour there is pinned
// against a model in stockdup_model_test.go.
//
// Stock bug (4), MDB_MULTIPLE stops early: while a key holds one value stored
//   as a plain node V, a MULTIPLE put whose next item equals V overwrites V
//   and returns success without storing the remaining items. The harness
//   removes exactly those items (for a new key: the repeats of the first item
//   right after it; for a key holding one plain value V: the leading items
//   equal to V), which cannot change the stored set on a correct engine.
// Stock bug (5), cursor garbage after MDB_MULTIPLE: the putting cursor is
//   closed after a successful MULTIPLE put (the binding panics on
//   GetMultiple/FirstDup straight after it; later moves return wild bytes).
// Stock bug (2)/(7), stale sub-cursor: Next/Prev/NextNoDup/PrevNoDup from a
//   key with duplicates onto a key with a single value leave the previous
//   key's sub-cursor live: GetMultiple there returns the previous key's
//   duplicates, and after a cursor Del there the next key's duplicate index
//   is the stale one (GetCurrent/Del/Next act on the wrong duplicate). After
//   such a move onto a key whose Count is 1 the harness re-positions the
//   cursor on the same key with SetKey (the same position, clean state).
// Stock bug (6), FirstDup keeps the deleted mark: after a cursor Del, a
//   FirstDup followed by Next/NextDup returns the first duplicate again. A
//   FirstDup on a cursor whose last write was a Del is followed by GetCurrent
//   and GetBoth of the returned item (the same position, clean state).

const markDel = 1 // the cursor's last write was a successful cursor Del

// dupMarks returns the per-cursor marks of the side (created on first use).
func (s *side) dupMarks() map[tCursor]uint8 {
	if s.marks == nil {
		s.marks = map[tCursor]uint8{}
	}
	return s.marks
}

// topCursor returns the open cursor of the slot in the innermost txn, or nil.
func (s *side) topCursor(db, slot int) tCursor {
	if len(s.curs) == 0 {
		return nil
	}
	return s.curs[len(s.curs)-1][db*cursorSlots+slot]
}

// beforeDupOp rewrites an MDB_MULTIPLE put around stock bug (4). skip is
// non-nil when nothing is left to put.
func (s *side) beforeDupOp(o op) (op, *result) {
	if o.kind != opCurPutMulti || !isDupFixed(o.db) || len(o.key) == 0 || len(o.key) > 511 {
		return o, nil
	}
	stride := dupStride(o.db)
	if len(o.val) < stride || len(o.val)%stride != 0 {
		return o, nil
	}
	if err := s.ensureTxn(); err != nil {
		return o, nil
	}
	pc, err := s.top().cursor(s.dbis[o.db])
	if err != nil {
		return o, nil
	}
	defer pc.close()
	items := o.val
	first := items[:stride]
	var drop int
	var what string
	_, single, err := pc.get(o.key, nil, cSetKey)
	switch code := s.eng.code(err); {
	case code == eNotFound:
		// a new key: item 0 becomes a plain single value; repeats of it
		// right after it hit the bug
		for drop = 0; stride*(drop+2) <= len(items) && bytes.Equal(items[stride*(drop+1):stride*(drop+2)], first); drop++ {
		}
		if drop > 0 {
			items = append(append([]byte(nil), first...), items[stride*(drop+1):]...)
		}
		what = "new key"
	case code == 0:
		n, err := pc.count()
		if err != nil || n != 1 {
			return o, nil
		}
		// one value: plain node (GetMultiple on a fresh cursor gives no
		// data) or a one-item duplicate page (gives the item; no bug)
		_, page, err := pc.get(nil, nil, cGetMultiple)
		if err != nil || len(page) != 0 {
			return o, nil
		}
		for drop = 0; stride*(drop+1) <= len(items) && bytes.Equal(items[stride*drop:stride*(drop+1)], single); drop++ {
		}
		items = items[stride*drop:]
		what = "single value"
	default:
		return o, nil
	}
	if drop == 0 {
		return o, nil
	}
	note := fmt.Sprintf("stock bug 4 (%s): %d item(s) dropped", what, drop)
	if len(items) == 0 {
		return o, &result{note: note + ", nothing left to put"}
	}
	o.val = items
	s.pendingNote = note
	return o, nil
}

// afterDupOp applies the post-op step-arounds for bugs (5), (2)/(7) and (6).
func (s *side) afterDupOp(o op, r *result) {
	note := s.pendingNote
	s.pendingNote = ""
	if note != "" {
		r.note = joinNote(r.note, note)
	}
	if !isDup(o.db) {
		return
	}
	c := s.topCursor(o.db, o.slot)
	if c == nil {
		return
	}
	marks := s.dupMarks()
	m := marks[c]
	switch o.kind {
	case opCurGetCurrent, opCurCount, opCurGetMultiple, opCurLastDup, opCurClose:
		return // these leave the stock sub-cursor's deleted mark alone
	case opCurDel, opCurDelAll:
		if r.code == 0 {
			marks[c] = markDel
		} else {
			delete(marks, c)
		}
		return
	case opCurPutMulti:
		delete(marks, c)
		if r.code == 0 {
			s.dropCursor(o.db, o.slot) // bug (5)
		}
		return
	case opCurFirstDup:
		delete(marks, c)
		if m&markDel == 0 || r.code != 0 {
			return
		}
		// bug (6)
		k, v, err := c.get(nil, nil, cGetCurrent)
		if err == nil {
			_, _, err = c.get(k, v, cGetBoth)
		}
		r.note = joinNote(r.note, "stock bug 6: re-set after Del: "+errName(s.eng.code(err)))
		return
	case opCurNext, opCurPrev, opCurNextNoDup, opCurPrevNoDup:
		delete(marks, c)
		if r.code != 0 || len(r.k) == 0 {
			return
		}
		// bug (2)/(7)
		if n, err := c.count(); err == nil && n == 1 {
			_, _, err := c.get(r.k, nil, cSetKey)
			r.note = joinNote(r.note, "stock bug 2/7: re-set on a single value: "+errName(s.eng.code(err)))
		}
		return
	}
	delete(marks, c)
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
