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
//   cursor on the same key with SetKey (the same position, clean state);
//   not when the cursor was freshly opened or is known to have started on a
//   plain single-value key (no sub-cursor to leave behind).
// Stock bug (8), refused NOOVERWRITE cursor put keeps the deleted mark: Del,
//   then a cursor Put(NOOVERWRITE) of an existing key (KeyExist: the cursor
//   now stands on that key's first value), then NextDup -> stock NotFound,
//   NextNoDup -> stock the same key again. The harness re-sets the cursor on
//   the key with SetKey (the same position, clean state).
// Stock bug (6), FirstDup keeps the deleted mark: after a cursor Del, a
//   FirstDup followed by Next/NextDup returns the first duplicate again. A
//   FirstDup on a cursor whose last write was a Del is followed by GetCurrent
//   and GetBoth of the returned item (the same position, clean state).

const (
	markDel     = 1 // the cursor's last write was a successful cursor Del
	markMainDel = 2 // ... and no get op ran on it since (stock's C_DEL on the cursor itself)
)

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
	// a cursor the op is about to open has no sub-cursor state at all
	s.freshCursor = s.topCursor(o.db, o.slot) == nil
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
		// one value: plain node or a one-item duplicate page (no bug);
		// FirstDup tells them apart on both engines (dupNode), where
		// GetMultiple does not (ours answers the value for either)
		if s.dupNode(o.db, o.key) {
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
		if o.kind == opCurGetCurrent {
			s.setLastKey(c, r)
		}
		if o.kind != opCurCount && m != 0 {
			marks[c] = m &^ markMainDel // every cursor get clears stock's C_DEL
		}
		return // these leave the stock sub-cursor's deleted mark alone
	case opCurDel, opCurDelAll:
		delete(s.lastKey, c)
		if r.code == 0 {
			marks[c] = markDel | markMainDel
		} // a refused Del changes nothing, marks included
		return
	case opCurPutMulti:
		delete(marks, c)
		if r.code == 0 {
			s.dropCursor(o.db, o.slot) // bug (5)
		}
		return
	case opCurFirstDup:
		delete(marks, c)
		if r.code != 0 {
			delete(s.lastKey, c)
		}
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
		from, known := s.lastKey[c]
		s.setLastKey(c, r)
		if r.code != 0 || len(r.k) == 0 {
			return
		}
		// bug (2)/(7): only a move that started on a key with duplicates
		// (or from an unknown position) can leave a live sub-cursor behind
		if s.freshCursor || (known && !s.dupNode(o.db, from)) {
			return
		}
		if n, err := c.count(); err == nil && n == 1 {
			_, _, err := c.get(r.k, nil, cSetKey)
			r.note = joinNote(r.note, "stock bug 2/7: re-set on a single value: "+errName(s.eng.code(err)))
		}
		return
	}
	delete(marks, c)
	s.setLastKey(c, r)
	if o.kind == opCurPut && (r.code == 0 || (r.code == eKeyExist && o.flags != fAppend)) {
		s.lastKey[c] = o.key // the cursor stands on the key it put (or found)
	}
	if o.kind == opCurPut && r.code == eKeyExist && o.flags == fNoOverwrite && m&markMainDel != 0 {
		// bug (8): the refused put moved the cursor onto the existing key
		// but kept the deleted mark of the earlier Del (NextDup then says
		// NotFound, NextNoDup returns the same key again)
		_, _, err := c.get(o.key, nil, cSetKey)
		r.note = joinNote(r.note, "stock bug 8: re-set after a refused NOOVERWRITE put: "+errName(s.eng.code(err)))
	}
}

// setLastKey records the key the cursor stands on after an op, as far as the
// harness knows it (unknown: removed from the map).
func (s *side) setLastKey(c tCursor, r *result) {
	if s.lastKey == nil {
		s.lastKey = map[tCursor][]byte{}
	}
	if r.code == 0 && r.kv && len(r.k) > 0 {
		s.lastKey[c] = append([]byte(nil), r.k...)
	} else {
		delete(s.lastKey, c)
	}
}

// dupNode reports whether key k of db is stored as a duplicate node (a
// sub-page or sub-tree, even with one value) rather than a plain single
// value, through a fresh cursor: FirstDup sets the key only for a plain node.
// Anything unexpected answers true (the step-around then applies).
func (s *side) dupNode(db int, k []byte) bool {
	pc, err := s.top().cursor(s.dbis[db])
	if err != nil {
		return true
	}
	defer pc.close()
	if _, _, err := pc.get(k, nil, cSetKey); err != nil {
		return true
	}
	got, _, err := pc.get(unsetKey, nil, cFirstDup)
	return err != nil || bytes.Equal(got, unsetKey)
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
