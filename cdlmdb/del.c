/*
 * del.c - deleting items, rebalancing after a delete, freeing whole trees.
 *
 * Rebalancing follows stock LMDB's policy so that both engines end up with
 * the same pages (cursor results at page ends depend on it): a leaf below
 * 25% use (per mille of the usable bytes) or a branch with fewer than two
 * children is fixed; a leaf first tries to take one item from its left
 * neighbour (right one for a leftmost leaf) when that one is at least 25%
 * full and has more than one item, otherwise it is merged with it when
 * both fit in one page; empty pages are unlinked; a root branch with a
 * single child is replaced by that child (LEAF2 pages of DUPFIXED
 * sub-trees borrow and merge like other leaves).  A separator is rewritten only
 * when an item is borrowed (to the new first key of the page that changed);
 * otherwise, after a delete, a separator may be smaller than the first key
 * of its subtree, which keeps the search invariant (separator <= every key
 * on its right, > every key on its left), as in LMDB.  A page that cannot
 * be merged stays underfull.
 */
#include "internal.h"

/* Remove entry i of a branch page, keeping node 0 keyless. */
static void branch_remove(dl_page *p, unsigned i)
{
	dlmdb_pg_del_node(p, i);
	if (i == 0 && dl_pg_nkeys(p) > 0) {
		dl_node *n0 = dl_pg_node(p, 0);
		if (n0->n_ksize) {
			pgno_t child = dl_node_child(n0);
			unsigned char counts[16];
			memcpy(counts, dl_node_counts(n0), dl_pg_cntbytes(p));
			dlmdb_pg_del_node(p, 0);
			dlmdb_pg_add_branch(p, 0, NULL, child, counts);
		}
	}
}

static int drop_page(MDB_cursor *mc, dl_page *p)
{
	if (dl_pg_is_branch(p))
		mc->c_db->d_branch--;
	else
		mc->c_db->d_leaf--;
	return dlmdb_page_free(mc->c_txn, p->p_pgno, 1);
}

/* As LMDB: once a delete leaves a DB empty, every cursor on it (in this
 * txn) becomes unpositioned, even if items are added again later. */
void dlmdb_cursors_forget(MDB_txn *txn, MDB_dbi dbi)
{
	/* the enclosing txns' cursors too: in LMDB they live on in the child
	 * (an abort restores them, see dl_curbak) */
	for (MDB_txn *t = txn; t; t = t->t_parent) {
		for (MDB_cursor *c = t->t_cursors; c; c = c->c_next) {
			if (c->c_dbi != dbi)
				continue;
			/* LMDB drops only the "initialised" bit: a pending delete
			 * mark survives (a refused put keeps it, Next then returns
			 * the item the put found) */
			c->c_flags &= DL_C_DEL;
			c->c_depth = 0;
			if (c->c_sub)
				c->c_sub->x_c.c_flags = 0;
		}
	}
	txn->t_dbstate[dbi] |= DL_DBS_EMPTIED;
}

/* Whether any cursor but mc (also of enclosing txns) on mc's DB is saved
 * as standing past the end of a leaf: only then is there anything for
 * dlmdb_retarget_past to do (its callers ask first, before they build the
 * keys it takes). */
int dlmdb_past_cursors(const MDB_cursor *mc)
{
	if (mc->c_owner || (mc->c_db->d_flags & MDB_DUPSORT))
		return 0;
	unsigned want = DL_C_INIT | DL_C_SAVED | DL_C_PAST;
	for (MDB_txn *t = mc->c_txn; t; t = t->t_parent)
		for (MDB_cursor *c = t->t_cursors; c; c = c->c_next)
			if (c != mc && c->c_dbi == mc->c_dbi && (c->c_flags & want) == want)
				return 1;
	return 0;
}

/*
 * Cursors (also of enclosing txns) saved as standing past the end of the
 * leaf whose last key is `from` get `to` as their anchor, past the end of
 * its leaf when pastflag is DL_C_PAST, else on it.
 */
void dlmdb_retarget_past(MDB_cursor *mc, const MDB_val *from, const MDB_val *to, unsigned pastflag)
{
	if (!dlmdb_past_cursors(mc))
		return;
	unsigned want = DL_C_INIT | DL_C_SAVED | DL_C_PAST;
	for (MDB_txn *t = mc->c_txn; t; t = t->t_parent) {
		for (MDB_cursor *c = t->t_cursors; c; c = c->c_next) {
			if (c == mc || c->c_dbi != mc->c_dbi || (c->c_flags & want) != want)
				continue;
			if (c->c_savedlen != from->mv_size || memcmp(c->c_saved, from->mv_data, from->mv_size))
				continue;
			memcpy(c->c_saved, to->mv_data, to->mv_size);
			c->c_savedlen = to->mv_size;
			c->c_flags = (c->c_flags & ~DL_C_PAST) | pastflag;
		}
	}
}

static unsigned fill_permille(const dl_page *p, size_t cap)
{
	return (unsigned)(1000 * (cap - dl_pg_room(p)) / cap);
}

/*
 * Stock LMDB's alternative to a merge: an underfull leaf whose neighbour
 * (the left one; the right one for a leftmost leaf) is at least 25% full
 * and holds more than one item takes one item from it, and the parent's
 * separator of the page that got a new first key is rewritten.  Doing the
 * same keeps our page boundaries equal to stock's.  *done stays 0 when the
 * neighbour does not qualify; a new separator too long for the parent's free
 * room splits the parent (LMDB's key update does that too).
 */
static int borrow_leaf_node(MDB_cursor *mc, unsigned level, int *done)
{
	MDB_txn *txn = mc->c_txn;
	size_t cap = txn->t_env->e_psize - DL_PAGEHDR;
	dl_page *p = mc->c_pg[level], *parent = mc->c_pg[level - 1], *sib, *nsib;
	unsigned pi = mc->c_ki[level - 1];
	int fromleft = pi > 0;
	unsigned si = fromleft ? pi - 1 : pi + 1;
	pgno_t sibpg = dl_node_child(dl_pg_node(parent, si));
	int rc = dlmdb_page_get(txn, sibpg, &sib);
	if (rc)
		return rc;
	if (sib->p_pgno != sibpg)	/* a damaged header: the copy would be keyed wrongly */
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	/* LEAF2 pages (DUPFIXED sub-trees) lend one fixed-size key the same way */
	int fixed = dl_pg_is_leaf2(p);
	if (!dl_pg_is_leaf(sib) || dl_pg_is_leaf2(sib) != fixed || (fixed && sib->p_pad != p->p_pad))
		return 0;	/* the merge path reports what is wrong */
	if ((rc = dlmdb_page_validate(txn->t_env, sib)))
		return rc;
	unsigned sn = dl_pg_nkeys(sib);
	if (fill_permille(sib, cap) < 250 || sn <= 1)
		return 0;
	unsigned from = fromleft ? sn - 1 : 0;
	dl_node *nd = fixed ? NULL : dl_pg_node(sib, from);
	/* a node moving into a PREFIX page is encoded against its anchor */
	int pfx = !fixed && dl_pg_prefix(p);
	size_t len = fixed ? p->p_pad : pfx ? dlmdb_pfx_moved_len(sib, nd, p) :
		dl_node_bytes(sib, nd) - sizeof(indx_t);
	if (dl_pg_room(p) < (fixed ? len : dl_even(len) + sizeof(indx_t)))
		return 0;
	unsigned sepidx = fromleft ? pi : si;
	/* the new first key of the page that gets one */
	unsigned char keybuf[DL_MAXKEY + 1];
	MDB_val sep;
	unsigned char sb[DL_MAXKEY];
	dlmdb_node_keyval(sib, fromleft ? from : 1, &sep, sb);
	if (sep.mv_size > DL_MAXKEY)	/* damaged node (validation bounds it by the page only) */
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	memcpy(keybuf, sep.mv_data, sep.mv_size);
	sep.mv_data = keybuf;
	const dl_node *old = dl_pg_node(parent, sepidx);
	size_t oldb = dl_even(DL_NODEHDR + old->n_ksize + dl_pg_cntbytes(parent)),
		newb = dl_even(DL_NODEHDR + sep.mv_size + dl_pg_cntbytes(parent));
	/* a longer separator that does not fit splits the parent, as in LMDB */
	int grow = newb > oldb && dl_pg_room(parent) < newb - oldb;
	if ((rc = dlmdb_page_touch(txn, sib, &nsib)))
		return rc;
	if (nsib != sib) {
		dl_node_set_child(dl_pg_node(parent, si), nsib->p_pgno);
		sib = nsib;
		nd = fixed ? NULL : dl_pg_node(sib, from);
	}
	if (fromleft && sn >= 2 && !fixed && dlmdb_past_cursors(mc)) {
		/* cursors past the end of the left page stay past its end */
		MDB_val moved, newlast;
		unsigned char mb[DL_MAXKEY], nb[DL_MAXKEY];
		dlmdb_node_keyval(sib, from, &moved, mb);
		dlmdb_node_keyval(sib, from - 1, &newlast, nb);
		dlmdb_retarget_past(mc, &moved, &newlast, DL_C_PAST);
	}
	unsigned cb = dl_pg_cntbytes(parent);
	if (cb) {
		/* the moved item's entries (and key) change parent nodes */
		uint64_t items = fixed ? 1 : dl_leaf_items(nd, (mc->c_db->d_flags & MDB_DUPSORT) != 0);
		dl_node *np = dl_pg_node(parent, pi), *ns = dl_pg_node(parent, si);
		dl_node_set_count(np, dl_node_count(np) + items);
		dl_node_set_count(ns, dl_node_count(ns) - items);
		if (cb > 8) {
			dl_node_set_keycount(np, dl_node_keycount(np) + 1);
			dl_node_set_keycount(ns, dl_node_keycount(ns) - 1);
		}
	}
	if (fixed)
		dlmdb_pg_add_leaf2(p, fromleft ? 0 : dl_pg_nkeys(p), dl_pg_leaf2_key(sib, from));
	else if (pfx)
		dlmdb_pfx_add_from(p, fromleft ? 0 : dl_pg_nkeys(p), sib, nd);
	else
		dlmdb_pg_add_raw(p, fromleft ? 0 : dl_pg_nkeys(p), nd, len);
	dlmdb_pg_del_node(sib, from);
	dl_node *oldsep = dl_pg_node(parent, sepidx);
	pgno_t child = dl_node_child(oldsep);
	unsigned char counts[16];
	memcpy(counts, dl_node_counts(oldsep), cb);
	dlmdb_pg_del_node(parent, sepidx);
	*done = 1;
	if (!grow) {
		dlmdb_pg_add_branch(parent, sepidx, &sep, child, counts);
		return 0;
	}
	unsigned char nodebuf[DL_NODEHDR + DL_MAXKEY + 2 + 16];
	dl_node *sepnode = (dl_node *)nodebuf;
	memset(nodebuf, 0, DL_NODEHDR);
	sepnode->n_ksize = (uint16_t)sep.mv_size;
	memcpy(nodebuf + DL_NODEHDR, keybuf, sep.mv_size);
	memcpy(nodebuf + DL_NODEHDR + sep.mv_size, counts, cb);
	dl_node_set_child(sepnode, child);
	int split = 0;
	return dlmdb_insert_at(mc, level - 1, sepidx, nodebuf, DL_NODEHDR + sep.mv_size + cb, 0, &split);
}

/*
 * The delete of mc's item (key in mc->c_saved) is emptying the DB.  LMDB
 * gives the delete mark to the other cursors on that item (also of
 * enclosing txns) before it rebalances; dlmdb_cursors_forget keeps it.
 */
static void mark_on_gone_item(MDB_cursor *mc)
{
	for (MDB_txn *t = mc->c_txn; t; t = t->t_parent) {
		for (MDB_cursor *c = t->t_cursors; c; c = c->c_next) {
			if (c == mc || c->c_dbi != mc->c_dbi ||
			    (c->c_flags & (DL_C_INIT | DL_C_SAVED | DL_C_PAST)) != (DL_C_INIT | DL_C_SAVED))
				continue;
			if (c->c_savedlen == mc->c_savedlen && !memcmp(c->c_saved, mc->c_saved, c->c_savedlen))
				c->c_flags |= DL_C_DEL;
		}
	}
}

/* The items of PREFIX leaves left and right as one page, their best
 * layout (prefix.c; either page's anchor is a candidate) and its bytes. */
static int merge_items(MDB_txn *txn, const dl_page *left, const dl_page *right,
	dl_pfx_item **items, dl_pfx_cand *best, size_t *cost)
{
	unsigned ln = dl_pg_nkeys(left), rn = dl_pg_nkeys(right);
	dl_pfx_item *it = dlmdb_pfx_items(txn, ln + rn);
	int rc;
	if (!it)
		return ENOMEM;
	dlmdb_pfx_arena_reset(txn);
	if ((rc = dlmdb_pfx_gather(txn, left, 0, ln, it)) ||
	    (rc = dlmdb_pfx_gather(txn, right, 0, rn, it + ln)))
		return rc;
	dl_pfx_cand c[2] = {
		{left->p_pad ? dl_pg_anchor(left) : NULL, dl_pg_anchor_len(left), 0},
		{right->p_pad ? dl_pg_anchor(right) : NULL, dl_pg_anchor_len(right), 0},
	};
	*cost = dlmdb_pfx_best(it, ln + rn, c, 2, best);
	*items = it;
	return 0;
}

static int rebalance(MDB_cursor *mc)
{
	MDB_txn *txn = mc->c_txn;
	size_t psize = txn->t_env->e_psize, cap = psize - DL_PAGEHDR;
	unsigned level = mc->c_top;
	int rc;
	for (;;) {
		dl_page *p = mc->c_pg[level];
		unsigned n = dl_pg_nkeys(p);
		int branch = dl_pg_is_branch(p);
		if (level == 0) {
			if (n == 0) {
				if ((rc = drop_page(mc, p)))
					return rc;
				mc->c_db->d_root = DL_NO_PAGE;
				mc->c_db->d_depth = 0;
				if (!mc->c_owner) {	/* not a duplicate sub-tree */
					mark_on_gone_item(mc);
					dlmdb_cursors_forget(txn, mc->c_dbi);
				}
				return 0;
			}
			while (branch && n == 1) {
				pgno_t child = dl_node_child(dl_pg_node(p, 0));
				if ((rc = drop_page(mc, p)))
					return rc;
				mc->c_db->d_root = child;
				mc->c_db->d_depth--;
				if ((rc = dlmdb_page_get(txn, child, &p)))
					return rc;
				n = dl_pg_nkeys(p);
				branch = dl_pg_is_branch(p);
			}
			return 0;
		}
		/* stock LMDB's thresholds: a leaf below 25% use (in per mille of
		 * the usable bytes, as it computes it), a branch only when it is
		 * almost empty or down to one child */
		unsigned minkeys = branch ? 2 : 1;
		if (fill_permille(p, cap) >= (branch ? 1u : 250u) && n >= minkeys)
			return 0;
		dl_page *parent = mc->c_pg[level - 1];
		unsigned pi = mc->c_ki[level - 1];
		if (!branch && dl_pg_nkeys(parent) >= 2) {
			int done = 0;
			if ((rc = borrow_leaf_node(mc, level, &done)))
				return rc;
			if (done)
				return 0;
		}
		if (n == 0) {
			if ((rc = drop_page(mc, p)))
				return rc;
			branch_remove(parent, pi);
			level--;
			continue;
		}
		if (dl_pg_nkeys(parent) < 2)
			return 0;
		unsigned si = pi > 0 ? pi - 1 : pi + 1;
		dl_page *sib, *nsib;
		pgno_t sibpg = dl_node_child(dl_pg_node(parent, si));
		if ((rc = dlmdb_page_get(txn, sibpg, &sib)))
			return rc;
		if (sib->p_pgno != sibpg)	/* a damaged header: the copy would be keyed wrongly */
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		if ((sib->p_flags & (DL_P_BRANCH | DL_P_LEAF)) != (p->p_flags & (DL_P_BRANCH | DL_P_LEAF)))
			return MDB_CORRUPTED;
		if ((rc = dlmdb_page_validate(txn->t_env, sib)))
			return rc;
		unsigned ri = pi > 0 ? pi : pi + 1;
		dl_page *left = pi > 0 ? sib : p, *right = pi > 0 ? p : sib;
		size_t need = 0;
		int fixed = dl_pg_is_leaf2(left);
		if (fixed != dl_pg_is_leaf2(right) || (fixed && left->p_pad != right->p_pad))
			return MDB_CORRUPTED;
		int pfx = !fixed && !branch && dl_pg_prefix(left);
		if (pfx != (!fixed && !branch && dl_pg_prefix(right)))
			return MDB_CORRUPTED;
		dl_pfx_item *items = NULL;
		dl_pfx_cand best;
		if (fixed) {
			need = (size_t)(dl_pg_nkeys(left) + dl_pg_nkeys(right)) * left->p_pad;
		} else if (pfx) {
			/* both pages as one, laid out anew */
			if ((rc = merge_items(txn, left, right, &items, &best, &need)))
				return rc;
		} else {
			for (unsigned j = 0; j < dl_pg_nkeys(left); j++)
				need += dl_node_bytes(left, dl_pg_node(left, j));
			for (unsigned j = 0; j < dl_pg_nkeys(right); j++)
				need += dl_node_bytes(right, dl_pg_node(right, j));
		}
		unsigned char sepkey[DL_MAXKEY + 1];
		MDB_val sep = {0, sepkey};
		if (branch) {
			dl_node *sn = dl_pg_node(parent, ri);
			if (sn->n_ksize > DL_MAXKEY)
				return DL_TXN_FAIL(txn, MDB_CORRUPTED);
			sep.mv_size = sn->n_ksize;
			memcpy(sepkey, dl_node_key(sn), sn->n_ksize);
			dl_node *r0 = dl_pg_node(right, 0);
			need += dl_even(DL_NODEHDR + sep.mv_size + dl_pg_cntbytes(right)) -
				dl_even(DL_NODEHDR + r0->n_ksize + dl_pg_cntbytes(right));
		}
		if (need > cap)
			return 0;
		/* the sibling is about to change: make it ours */
		if ((rc = dlmdb_page_touch(txn, sib, &nsib)))
			return rc;
		if (nsib != sib) {
			dl_node_set_child(dl_pg_node(parent, si), nsib->p_pgno);
			if (left == sib)
				left = nsib;
			else
				right = nsib;
		}
		unsigned base = dl_pg_nkeys(left), rn = dl_pg_nkeys(right);
		if (!branch && !fixed && base && rn && left == sib && dlmdb_past_cursors(mc)) {
			/* as LMDB's index arithmetic: a cursor past the end of the
			 * left page now stands on the right page's first item */
			MDB_val llast, rfirst;
			unsigned char lb[DL_MAXKEY], rb[DL_MAXKEY];
			dlmdb_node_keyval(left, base - 1, &llast, lb);
			dlmdb_node_keyval(right, 0, &rfirst, rb);
			dlmdb_retarget_past(mc, &llast, &rfirst, 0);
		}
		for (unsigned j = 0; j < rn && fixed; j++)
			dlmdb_pg_add_leaf2(left, base + j, dl_pg_leaf2_key(right, j));
		if (pfx) {
			/* from a snapshot of left: the build overwrites it */
			char *snap = dlmdb_txn_scratch(txn, 0);
			if (!snap)
				return ENOMEM;
			memcpy(snap, left, psize);
			if ((rc = merge_items(txn, (dl_page *)snap, right, &items, &best, &need)))
				return rc;
			if (need > cap)
				return DL_TXN_FAIL(txn, MDB_PROBLEM);
			dlmdb_pfx_build(left, (unsigned)psize, items, base + rn, &best, 1);
			txn->t_pgen++;	/* another anchor at left's address (dl_cur_key) */
		}
		for (unsigned j = 0; j < rn && !fixed && !pfx; j++) {
			dl_node *nd = dl_pg_node(right, j);
			if (branch && j == 0)
				dlmdb_pg_add_branch(left, base, &sep, dl_node_child(nd), dl_node_counts(nd));
			else
				dlmdb_pg_add_raw(left, base + j, nd, dl_node_bytes(right, nd) - sizeof(indx_t));
		}
		if (dl_pg_cntbytes(parent)) {
			/* the left node now stands for both pages */
			dl_node *nl = dl_pg_node(parent, ri - 1), *nr = dl_pg_node(parent, ri);
			dl_node_set_count(nl, dl_node_count(nl) + dl_node_count(nr));
			if (parent->p_flags & DL_P_KEYCOUNT)
				dl_node_set_keycount(nl, dl_node_keycount(nl) + dl_node_keycount(nr));
		}
		if ((rc = drop_page(mc, right)))
			return rc;
		branch_remove(parent, ri);
		level--;
	}
}

static int drop_overflow(MDB_cursor *mc, dl_node *n)
{
	dl_page *ov;
	pgno_t pg = dl_node_bigpg(n);
	int rc = dlmdb_page_get(mc->c_txn, pg, &ov);
	if (rc)
		return rc;
	unsigned np = dl_pg_ovcount(ov);
	if (!(ov->p_flags & DL_P_OVERFLOW) || np == 0 || pg + np > mc->c_txn->t_next_pg)
		return MDB_CORRUPTED;
	mc->c_db->d_overflow -= np;
	return dlmdb_page_free(mc->c_txn, pg, np);
}

/*
 * Other cursors that stood on the item mc just deleted (their saved key is
 * mc->c_saved) move to its successor at once, in the DEL state, and keep
 * that successor as their anchor.  LMDB's index arithmetic has the same
 * effect: such a cursor keeps pointing at the successor even when items
 * are inserted between the deleted key and it later.
 */
static int reanchor_others(MDB_cursor *mc)
{
	for (MDB_cursor *c = mc->c_txn->t_cursors; c; c = c->c_next) {
		if (c == mc || c->c_dbi != mc->c_dbi)
			continue;
		if ((c->c_flags & (DL_C_INIT | DL_C_SAVED | DL_C_PAST)) != (DL_C_INIT | DL_C_SAVED))
			continue;
		if (c->c_savedlen != mc->c_savedlen || memcmp(c->c_saved, mc->c_saved, c->c_savedlen))
			continue;
		int rc = dlmdb_cursor_revalidate(c);
		if (rc)
			return rc;
		dlmdb_cursor_save(c);
	}
	if (!mc->c_txn->t_parent || (mc->c_db->d_flags & MDB_DUPSORT))
		return 0;
	/* cursors of enclosing txns (saved by key, cannot re-seek in this
	 * txn's tree): give them the anchor mc itself now has */
	MDB_cursor anchor = *mc;
	anchor.c_sub = NULL;
	anchor.c_flags &= ~DL_C_SAVED;
	dlmdb_cursor_save(&anchor);
	for (MDB_txn *t = mc->c_txn->t_parent; t; t = t->t_parent) {
		for (MDB_cursor *c = t->t_cursors; c; c = c->c_next) {
			if (c->c_dbi != mc->c_dbi ||
			    (c->c_flags & (DL_C_INIT | DL_C_SAVED | DL_C_PAST)) != (DL_C_INIT | DL_C_SAVED))
				continue;
			if (c->c_savedlen != mc->c_savedlen || memcmp(c->c_saved, mc->c_saved, c->c_savedlen))
				continue;
			/* LMDB only adds the delete mark: the cursor's own EOF mark
			 * stays (and standing past the last item sets it) */
			unsigned eof = (c->c_flags & DL_C_EOF) | ((anchor.c_flags & DL_C_PAST) ? DL_C_EOF : 0);
			c->c_flags = (anchor.c_flags & ~DL_C_EOF) | eof;
			c->c_savedlen = anchor.c_savedlen;
			memcpy(c->c_saved, anchor.c_saved, anchor.c_savedlen);
		}
	}
	return 0;
}

#define DL_MAX_PAST 16

/* Whether any other cursor (also of enclosing txns) on mc's DB stands past
 * the end of a leaf: collect_past can find one only then, so without one
 * the deleting leaf's edge keys need no decoding. */
static int any_past(const MDB_cursor *mc)
{
	unsigned want = DL_C_INIT | DL_C_SAVED | DL_C_PAST;
	for (const MDB_txn *t = mc->c_txn; t; t = t->t_parent)
		for (const MDB_cursor *c = t->t_cursors; c; c = c->c_next)
			if (c != mc && c->c_dbi == mc->c_dbi && (c->c_flags & want) == want)
				return 1;
	return 0;
}

/* Other cursors (also of enclosing txns) standing past the end of the leaf
 * whose keys span [lo, hi]: their saved key is that leaf's last key. */
static unsigned collect_past(MDB_cursor *mc, const MDB_val *lo, const MDB_val *hi, MDB_cursor **out)
{
	unsigned n = 0;
	for (MDB_txn *t = mc->c_txn; t; t = t->t_parent) {
		for (MDB_cursor *c = t->t_cursors; c && n < DL_MAX_PAST; c = c->c_next) {
			unsigned want = DL_C_INIT | DL_C_SAVED | DL_C_PAST;
			if (c == mc || c->c_dbi != mc->c_dbi || (c->c_flags & want) != want)
				continue;
			MDB_val s = {c->c_savedlen, c->c_saved};
			if (mc->c_dbx->x_cmp(&s, lo) >= 0 && mc->c_dbx->x_cmp(&s, hi) <= 0)
				out[n++] = c;
		}
	}
	return n;
}

/*
 * LMDB moves a cursor that stood past the end of the leaf an item was
 * deleted from to the first item of the next leaf (or leaves it past the
 * end with EOF when there is none), whatever merging happened: i.e. onto
 * the first key above the leaf's old last key `top`.
 */
static int move_past(MDB_cursor *mc, const MDB_val *top, MDB_cursor **past, unsigned n)
{
	MDB_cursor tmp;
	MDB_val k = *top;
	dlmdb_cursor_setup(&tmp, mc->c_txn, mc->c_dbi);
	tmp.c_db = mc->c_db;
	tmp.c_dbx = mc->c_dbx;
	int rc = dlmdb_cursor_seek(&tmp, &k, NULL, MDB_SET_RANGE);
	if (rc == 0) {
		MDB_val at;
		unsigned char ab[DL_MAXKEY];
		dlmdb_node_keyval(tmp.c_pg[tmp.c_top], tmp.c_ki[tmp.c_top], &at, ab);
		if (mc->c_dbx->x_cmp(&at, top) == 0)
			rc = dlmdb_cur_next(&tmp, NULL, NULL, MDB_NEXT);
	}
	if (rc == MDB_NOTFOUND) {
		if ((rc = dlmdb_search_root(&tmp, NULL, DL_SEARCH_LAST)))
			return rc == MDB_NOTFOUND ? 0 : rc;
		tmp.c_ki[tmp.c_top] = (indx_t)dl_pg_nkeys(tmp.c_pg[tmp.c_top]);
		tmp.c_flags = DL_C_INIT | DL_C_EOF;
	} else if (rc) {
		return rc;
	} else {
		tmp.c_flags = DL_C_INIT;
	}
	dlmdb_cursor_save(&tmp);
	for (unsigned i = 0; i < n; i++) {
		if (!(past[i]->c_flags & DL_C_INIT))
			continue;	/* the DB became empty */
		/* moving it keeps a pending delete mark, as in LMDB */
		past[i]->c_flags = tmp.c_flags | (past[i]->c_flags & DL_C_DEL);
		past[i]->c_savedlen = tmp.c_savedlen;
		memcpy(past[i]->c_saved, tmp.c_saved, tmp.c_savedlen);
	}
	return 0;
}

/*
 * Delete the item under the cursor; the cursor is left in the DEL state.
 * reposition = 0 is for a throwaway cursor (mdb_del): it skips re-seeking
 * mc onto the successor when nothing else needs that position.
 */
static int del_current(MDB_cursor *mc, int allow_tree, int reposition)
{
	MDB_txn *txn = mc->c_txn;
	unsigned wasdel = mc->c_flags & DL_C_DEL;
	dl_page *leaf = mc->c_pg[mc->c_top];
	unsigned ki = mc->c_ki[mc->c_top];
	if (ki >= dl_pg_nkeys(leaf))
		return MDB_NOTFOUND;
	MDB_val curkey;
	unsigned char cb_[DL_MAXKEY];
	dlmdb_node_keyval(leaf, ki, &curkey, cb_);
	if (curkey.mv_size > DL_MAXKEY)
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	if (!dl_pg_is_leaf2(leaf) && (dl_pg_node(leaf, ki)->n_flags & DL_N_TREE) && !allow_tree)
		return MDB_INCOMPATIBLE;
	dlmdb_txn_changed(txn, mc);
	memcpy(mc->c_saved, curkey.mv_data, curkey.mv_size);
	mc->c_savedlen = curkey.mv_size;
	MDB_cursor *past[DL_MAX_PAST];
	unsigned npast = 0;
	unsigned char topbuf[DL_MAXKEY + 1];
	MDB_val top = {0, topbuf};
	if (!mc->c_owner && !(mc->c_db->d_flags & MDB_DUPSORT) && !dl_pg_is_leaf2(leaf) && any_past(mc)) {
		MDB_val lo, hi;
		unsigned char lob[DL_MAXKEY], hib[DL_MAXKEY];
		/* the leaf is checked as a whole only when it is copied, below */
		if (!dl_node_in_page(leaf, 0, mc->c_bound) ||
		    !dl_node_in_page(leaf, dl_pg_nkeys(leaf) - 1, mc->c_bound))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		dlmdb_node_keyval(leaf, 0, &lo, lob);
		dlmdb_node_keyval(leaf, dl_pg_nkeys(leaf) - 1, &hi, hib);
		if (hi.mv_size > DL_MAXKEY || lo.mv_size > DL_MAXKEY)
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		top.mv_size = hi.mv_size;
		memcpy(topbuf, hi.mv_data, hi.mv_size);
		npast = collect_past(mc, &lo, &hi, past);
	}
	int rc = dlmdb_cursor_touch(mc);
	if (rc)
		return rc;
	leaf = mc->c_pg[mc->c_top];
	uint64_t items = 1;
	if (!dl_pg_is_leaf2(leaf)) {
		dl_node *n = dl_pg_node(leaf, ki);
		items = dl_leaf_items(n, (mc->c_db->d_flags & MDB_DUPSORT) != 0);
		if ((n->n_flags & DL_N_BIG) && (rc = drop_overflow(mc, n)))
			return DL_TXN_FAIL(txn, rc);
	}
	dlmdb_count_bump(mc, -(int64_t)items, -1);
	dlmdb_pg_del_node(leaf, ki);
	mc->c_db->d_entries--;
	if ((rc = rebalance(mc)))
		return DL_TXN_FAIL(txn, rc);
	/* stand before the deleted key's successor (LMDB's C_DEL state) */
	mc->c_flags = DL_C_INIT | DL_C_SAVED | (mc->c_flags & DL_C_EOF);
	/* reanchor_others copies mc's position to cursors of enclosing txns */
	if ((reposition || txn->t_parent) && (rc = dlmdb_cursor_revalidate(mc)))
		return DL_TXN_FAIL(txn, rc);
	if (mc->c_db->d_root == DL_NO_PAGE && !mc->c_owner)
		mc->c_flags |= wasdel;	/* emptied: as LMDB, a mark it had stays */
	if (!mc->c_owner && (rc = reanchor_others(mc)))
		return DL_TXN_FAIL(txn, rc);
	if (npast && mc->c_db->d_root != DL_NO_PAGE && (rc = move_past(mc, &top, past, npast)))
		return DL_TXN_FAIL(txn, rc);
	txn->t_gen++;
	return 0;
}

int dlmdb_tree_del_current(MDB_cursor *mc, int allow_tree)
{
	return del_current(mc, allow_tree, 1);
}

int dlmdb_tree_del_discard(MDB_cursor *mc)
{
	return del_current(mc, 0, 0);
}

static int dl_u_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)
{
	if (!txn || !key)
		return EINVAL;
	int rc = dlmdb_dbi_ok(txn, dbi);
	if (rc)
		return rc;
	if (dbi == DL_FREE_DBI)
		return EINVAL;	/* the free-page DB is engine-private */
	if ((rc = dlmdb_txn_usable(txn, 1)))
		return rc;
	if (key->mv_size == 0)
		return MDB_BAD_VALSIZE;	/* no upper bound: an oversized key is NOTFOUND */
	if (txn->t_dbstate[dbi] & DL_DBS_STALE) {
		if ((rc = dlmdb_db_refresh(txn, dbi)))
			return rc;
	}
	MDB_cursor mc;
	MDB_val k = *key;
	dlmdb_cursor_setup(&mc, txn, dbi);
	if (txn->t_dbs[dbi].d_flags & MDB_DUPSORT) {
		dl_xcur x;
		x.x_buf = txn->t_scratch[2] ? txn->t_scratch[2] : (txn->t_scratch[2] = malloc(txn->t_env->e_psize));
		if (!x.x_buf)
			return ENOMEM;
		dlmdb_dup_bind(&mc, &x);
		if (data)
			return dlmdb_dup_del_pair(&mc, &k, data);
		if ((rc = dlmdb_cursor_seek(&mc, &k, NULL, MDB_SET)))
			return rc;
		return dlmdb_dup_del(&mc, MDB_NODUPDATA);
	}
	if ((rc = dlmdb_cursor_seek(&mc, &k, NULL, MDB_SET)))
		return rc;
	return del_current(&mc, 0, 0);
}

static int dl_u_cursor_del(MDB_cursor *mc, unsigned int flags)
{
	if (!mc || !mc->c_txn)
		return EINVAL;
	int rc = dlmdb_txn_usable(mc->c_txn, 1);
	if (rc)
		return rc;
	if (flags & ~MDB_NODUPDATA)
		return EINVAL;
	if ((rc = dlmdb_cursor_revalidate(mc)))
		return rc;
	if (!(mc->c_flags & DL_C_INIT))
		return EINVAL;
	if (mc->c_depth == 0)
		return MDB_NOTFOUND;
	if ((mc->c_db->d_flags & MDB_DUPSORT) && mc->c_sub)
		return dlmdb_dup_del(mc, flags);
	return dlmdb_tree_del_current(mc, 0);
}

/*
 * Dropping a tree.  The pages are gathered first and freed only when the
 * walk is complete: a damaged tree may reach a page twice (a cycle, or two
 * parents naming one child), and a page freed twice would later be handed
 * out twice.  The walk checks every page like any write does before it
 * reads its nodes, and it cannot take longer than the snapshot has pages.
 */
struct drop_walk {
	MDB_txn *dw_txn;
	dl_pgl dw_seen;		/* every page reached, overflow runs expanded */
	dl_pgl dw_tree;		/* tree pages, freed one by one */
	dl_pgl dw_runs;		/* overflow runs as (first page, length) pairs */
};

static int drop_gather_run(struct drop_walk *w, const dl_node *nd)
{
	MDB_txn *txn = w->dw_txn;
	dl_page *ov;
	pgno_t pg = dl_node_bigpg(nd);
	int rc = dlmdb_page_get(txn, pg, &ov);
	if (rc)
		return rc;
	unsigned np = dl_pg_ovcount(ov);
	if (!(ov->p_flags & DL_P_OVERFLOW) || np == 0 || pg + np > txn->t_next_pg ||
	    w->dw_seen.l_n + np > txn->t_next_pg)
		return MDB_CORRUPTED;
	if ((rc = dlmdb_pgl_push_run(&w->dw_seen, pg, np)) || (rc = dlmdb_pgl_push(&w->dw_runs, pg)))
		return rc;
	return dlmdb_pgl_push(&w->dw_runs, np);
}

static int drop_gather(struct drop_walk *w, pgno_t pg, unsigned depth, int dupsort)
{
	MDB_txn *txn = w->dw_txn;
	dl_page *p;
	int rc;
	/* deeper than any tree, or more pages than the snapshot has: some
	 * page was reached twice */
	if (depth > DL_MAX_DEPTH || w->dw_seen.l_n >= txn->t_next_pg)
		return MDB_CORRUPTED;
	if ((rc = dlmdb_page_get(txn, pg, &p)))
		return rc;
	if ((rc = dlmdb_page_validate(txn->t_env, p)))
		return rc;
	if ((rc = dlmdb_pgl_push(&w->dw_seen, pg)) || (rc = dlmdb_pgl_push(&w->dw_tree, pg)))
		return rc;
	unsigned n = dl_pg_nkeys(p);
	if (dl_pg_is_branch(p)) {
		for (unsigned i = 0; i < n; i++)
			if ((rc = drop_gather(w, dl_node_child(dl_pg_node(p, i)), depth + 1, dupsort)))
				return rc;
		return 0;
	}
	if (dl_pg_is_leaf2(p))
		return 0;
	for (unsigned i = 0; i < n; i++) {
		const dl_node *nd = dl_pg_node(p, i);
		if ((nd->n_flags & DL_N_BIG) && (rc = drop_gather_run(w, nd)))
			return rc;
		if ((nd->n_flags & (DL_N_DUP | DL_N_TREE)) == (DL_N_DUP | DL_N_TREE) && dupsort &&
		    dl_node_dsize(nd) == sizeof(dl_dbrec)) {
			/* a duplicate sub-tree: its pages go too */
			dl_dbrec sub;
			memcpy(&sub, dl_node_data(nd), sizeof sub);
			if (sub.d_root != DL_NO_PAGE && (rc = drop_gather(w, sub.d_root, depth + 1, 0)))
				return rc;
		}
	}
	return 0;
}

static int drop_free(struct drop_walk *w)
{
	MDB_txn *txn = w->dw_txn;
	int rc;
	dlmdb_pgl_sort(&w->dw_seen);
	for (size_t i = 1; i < w->dw_seen.l_n; i++)
		if (w->dw_seen.l_v[i] == w->dw_seen.l_v[i - 1])
			return MDB_CORRUPTED;
	for (size_t i = 0; i < w->dw_tree.l_n; i++)
		if ((rc = dlmdb_page_free(txn, w->dw_tree.l_v[i], 1)))
			return rc;
	for (size_t i = 0; i + 1 < w->dw_runs.l_n; i += 2)
		if ((rc = dlmdb_page_free(txn, w->dw_runs.l_v[i], (unsigned)w->dw_runs.l_v[i + 1])))
			return rc;
	return 0;
}

int dlmdb_tree_free_all(MDB_txn *txn, dl_dbrec *db)
{
	if (db->d_root == DL_NO_PAGE)
		return 0;
	struct drop_walk w;
	memset(&w, 0, sizeof w);
	w.dw_txn = txn;
	int rc = drop_gather(&w, db->d_root, 1, (db->d_flags & MDB_DUPSORT) != 0);
	if (!rc)
		rc = drop_free(&w);
	dlmdb_pgl_free(&w.dw_seen);
	dlmdb_pgl_free(&w.dw_tree);
	dlmdb_pgl_free(&w.dw_runs);
	if (rc)
		return DL_TXN_FAIL(txn, rc);
	db->d_root = DL_NO_PAGE;
	db->d_depth = 0;
	db->d_branch = db->d_leaf = db->d_overflow = db->d_entries = 0;
	return 0;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)
{
	DL_GUARDED(txn, 0, dl_u_del(txn, dbi, key, data));
}

int mdb_cursor_del(MDB_cursor *mc, unsigned int flags)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_del(mc, flags));
}
