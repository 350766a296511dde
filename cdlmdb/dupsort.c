/*
 * dupsort.c - sorted duplicate values (MDB_DUPSORT databases).
 *
 * A key with one value is an ordinary leaf node.  With more values the node
 * gets DL_N_DUP and its data is an inline sub-page: a leaf page image whose
 * nodes have the values as keys and no data.  When that sub-page would make
 * the node larger than e_nodemax, the values move into a sub-tree and the
 * node (DL_N_DUP | DL_N_TREE) holds the sub-tree's 48-byte record.  When
 * deletes shrink a sub-tree to one leaf whose values would fit in half of
 * e_nodemax, they move back into a sub-page (maybe_demote; FORMAT.md,
 * "When duplicates move").
 *
 * A sub-cursor (dl_xcur) walks the values of the current key with the same
 * movement code as the main cursor: over a sub-tree it is an ordinary cursor
 * with the duplicate order as key order; over a sub-page it is a one-leaf
 * tree whose root is an aligned copy of the sub-page (sub-pages may start at
 * odd addresses), and returned pointers are translated back into the map.
 *
 * Writes rebuild the sub-page (values are few and small) or update the
 * sub-tree and then store the new node data in the main tree.  DUPFIXED
 * values live in LEAF2 sub-pages / LEAF2 sub-tree leaves (page.c, split.c).
 */
#include <stddef.h>
#include "internal.h"

/* dlmdb_dup_del flag (above every MDB_* flag): keep a sub-tree a sub-tree */
#define DL_DEL_KEEPTREE 0x80000000u
/* dlmdb_dup_del flag: the cursor is discarded right after (mdb_del): the
 * sub-cursor need not find its place again after a sub-tree delete */
#define DL_DEL_DISCARD 0x40000000u

static int leaf2_restamp(MDB_cursor *mc, const MDB_val *v);

static MDB_cmp_func *dcmp_of(MDB_cursor *mc)
{
	return mc->c_dbx->x_dcmp ? mc->c_dbx->x_dcmp : dlmdb_cmp_for(0);
}

void dlmdb_dup_bind(MDB_cursor *mc, dl_xcur *x)
{
	/* Clear what may be read before dlmdb_dup_setup aims the sub-cursor:
	 * the cursor's fields up to its page stack, and the ones that say
	 * whether the rest is valid (c_depth guards c_pg/c_ki, c_savedlen
	 * c_saved, c_rkleaf the rank cache).  The arrays themselves are left
	 * alone: clearing them (about 1 KB) was most of the cost of a get in
	 * a DUPSORT DB. */
	MDB_cursor *xc = &x->x_c;
	memset(xc, 0, offsetof(MDB_cursor, c_pg));
	xc->c_savedlen = 0;
	xc->c_rkleaf = NULL;
	xc->c_rkgen = 0;
	xc->c_rkdepth = 0;
	memset(&x->x_db, 0, sizeof x->x_db);
	memset(&x->x_dbx, 0, sizeof x->x_dbx);
	x->x_orig = NULL;
	mc->c_sub = x;
}

static void x_out(dl_xcur *x, MDB_val *v)
{
	dl_xcur_out(x, v);
}

/*
 * Aim the sub-cursor at the duplicates of the node under mc (unpositioned).
 * MDB_NOTFOUND: the node holds a single value.
 */
int dlmdb_dup_setup(MDB_cursor *mc)
{
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	MDB_txn *txn = mc->c_txn;
	xc->c_flags = 0;
	if (!(mc->c_flags & DL_C_INIT) || mc->c_depth == 0)
		return MDB_NOTFOUND;
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned i = mc->c_ki[mc->c_top];
	if (i >= dl_pg_nkeys(p))
		return MDB_NOTFOUND;
	if (!dl_node_in_page(p, i, mc->c_bound))
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	dl_node *n = dl_pg_node(p, i);
	if (!(n->n_flags & DL_N_DUP))
		return MDB_NOTFOUND;
	dlmdb_cursor_setup(xc, txn, mc->c_dbi);
	xc->c_db = &x->x_db;
	xc->c_dbx = &x->x_dbx;
	xc->c_owner = mc;
	x->x_dbx.x_cmp = dcmp_of(mc);
	size_t ds = dl_node_dsize(n);
	if (dl_pg_slot(p, i) + DL_NODEHDR + n->n_ksize + ds > mc->c_bound)
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	if (n->n_flags & DL_N_TREE) {
		if (ds != sizeof(dl_dbrec))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		memcpy(&x->x_db, dl_node_data(n), sizeof x->x_db);
		x->x_orig = NULL;
		return 0;
	}
	if (ds < DL_PAGEHDR)
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	memcpy(x->x_buf, dl_node_data(n), ds);
	xc->c_kpage = NULL;	/* the copy's bytes changed under the same address */
	dl_page *sp = (dl_page *)x->x_buf;
	if (!(sp->p_flags & DL_P_LEAF) || sp->p_lower < DL_PAGEHDR || sp->p_lower > sp->p_upper ||
	    sp->p_upper > ds || dl_pg_nkeys(sp) == 0)
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	if ((sp->p_flags & DL_P_LEAF2) &&
	    (!sp->p_pad || sp->p_pad > DL_MAXKEY || DL_PAGEHDR + (size_t)dl_pg_nkeys(sp) * sp->p_pad > ds))
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	memset(&x->x_db, 0, sizeof x->x_db);
	if (sp->p_flags & DL_P_LEAF2) {
		x->x_db.d_pad = sp->p_pad;
		x->x_db.d_flags = (uint16_t)(MDB_DUPFIXED |
			((mc->c_db->d_flags & MDB_INTEGERDUP) ? MDB_INTEGERKEY : 0));
	} else if (dl_dup_prefix(mc)) {
		/* (what the sub-page's PREFIX flag is held against) */
		x->x_db.d_flags = MDB_PREFIX_COMPRESSION;
	}
	if (!dl_pg_prefix_ok(sp, &x->x_db))
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	x->x_db.d_depth = 1;
	x->x_db.d_leaf = 1;
	x->x_db.d_entries = dl_pg_nkeys(sp);
	x->x_db.d_root = DL_NO_PAGE;
	xc->c_inline = sp;
	xc->c_bound = (unsigned)ds;
	x->x_orig = dl_node_data(n);
	return 0;
}

/*
 * The key under cursor c, checked exactly as dlmdb_cur_fetch(c, key, NULL)
 * checks it; kept here so the per-value steps below need no call.
 */
static inline __attribute__((always_inline)) int item_key(MDB_cursor *c, MDB_val *key)
{
	dl_page *p = c->c_pg[c->c_top];
	unsigned i = c->c_ki[c->c_top];
	if (DL_UNLIKELY(i >= dl_pg_nkeys(p)))
		return MDB_NOTFOUND;
	if (dl_pg_is_leaf2(p)) {
		if (key) {
			key->mv_size = p->p_pad;
			key->mv_data = dl_pg_leaf2_key(p, i);
		}
		return 0;
	}
	unsigned off = dl_pg_slot(p, i);
	dl_node *n = (dl_node *)((char *)p + off);
	/* a step through the values of one key asks again for the same
	 * (prefix-compressed) key: held in full, and checked when it was read */
	if (key && dl_pg_prefix(p) && dl_cur_key_held(c, p, n, key))
		return 0;
	unsigned lim = dl_pg_node_lim(p, c->c_bound);
	if (DL_UNLIKELY(off < p->p_upper || off + DL_NODEHDR > lim))
		return DL_TXN_FAIL(c->c_txn, MDB_CORRUPTED);
	size_t after = (n->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(n);
	if (DL_UNLIKELY(off + DL_NODEHDR + n->n_ksize + after > lim || n->n_ksize > DL_MAXKEY))
		return DL_TXN_FAIL(c->c_txn, MDB_CORRUPTED);
	if (dl_pg_prefix(p)) {
		if (DL_UNLIKELY(!dl_cur_node_ok(c, p, n)))
			return DL_TXN_FAIL(c->c_txn, MDB_CORRUPTED);
		if (key)
			dl_cur_key(c, p, n, key);
	} else if (key) {
		key->mv_size = n->n_ksize;
		key->mv_data = dl_node_key(n);
	}
	return 0;
}

/* data = first/last value of the node under mc; positions the sub-cursor. */
static int node_value_edge(MDB_cursor *mc, MDB_val *data, int last)
{
	dl_xcur *x = mc->c_sub;
	int rc = dlmdb_dup_setup(mc);
	if (rc == MDB_NOTFOUND) {
		if (!data)
			return 0;
		/* a single value: read with the checks of any fetch (the value
		 * must lie inside its page) */
		return dlmdb_cur_fetch(mc, NULL, data);
	}
	if (rc)
		return rc;
	MDB_val v;
	MDB_cursor *xc = &x->x_c;
	if (xc->c_inline) {
		/* a sub-page is a one-leaf tree that dlmdb_dup_setup has already
		 * checked (leaf, bounds, at least one value): stand on its edge
		 * directly instead of searching from a root */
		dl_page *sp = xc->c_inline;
		xc->c_pg[0] = sp;
		xc->c_ki[0] = (indx_t)(last ? dl_pg_nkeys(sp) - 1 : 0);
		xc->c_top = 0;
		xc->c_depth = 1;
		/* as dlmdb_cur_last: the last value carries the EOF mark */
		xc->c_flags = last ? DL_C_INIT | DL_C_EOF : DL_C_INIT;
		rc = item_key(xc, &v);
	} else {
		rc = last ? dlmdb_cur_last(xc, &v, NULL) : dlmdb_cur_first(xc, &v, NULL);
	}
	if (rc)
		return rc == MDB_NOTFOUND ? DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED) : rc;
	if (data) {
		x_out(x, &v);
		*data = v;
	}
	return 0;
}

int dlmdb_dup_edge(MDB_cursor *mc, MDB_val *data, int last)
{
	return node_value_edge(mc, data, last);
}

static int x_current(MDB_cursor *mc, MDB_val *data)
{
	dl_xcur *x = mc->c_sub;
	MDB_val v;
	/* LMDB reads it through a full cursor_get, which ends any
	 * deleted-before state of the sub-cursor */
	x->x_c.c_flags &= ~DL_C_DEL;
	int rc = dlmdb_cur_fetch(&x->x_c, &v, NULL);
	if (rc)
		return rc;
	if (data) {
		x_out(x, &v);
		*data = v;
	}
	return 0;
}

/* A whole LEAF2 page of values from the sub-cursor's page; the sub-cursor
 * moves to that page's last value (LMDB's GET/NEXT_MULTIPLE contract). */
static int fetch_multiple(MDB_cursor *mc, MDB_val *data)
{
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	dl_page *p = xc->c_pg[xc->c_top];
	unsigned n = dl_pg_nkeys(p);
	if (!dl_pg_is_leaf2(p) || n == 0)
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	data->mv_size = (size_t)n * p->p_pad;
	data->mv_data = (char *)p + DL_PAGEHDR;
	x_out(x, data);
	xc->c_ki[xc->c_top] = (indx_t)(n - 1);
	return 0;
}

static inline int cur_is_dup(MDB_cursor *mc)
{
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned i = mc->c_ki[mc->c_top];
	return mc->c_depth && i < dl_pg_nkeys(p) && (dl_pg_node(p, i)->n_flags & DL_N_DUP);
}

/*
 * GET_MULTIPLE: the page of values holding the current value, i.e. the one
 * GET_CURRENT returns (it fails where GET_CURRENT fails).  The page is the
 * inline sub-page, the sub-tree leaf the value is on, or, for a single value
 * stored as a plain node, that value alone (a one-element page, in place).
 * The position moves to the page's last value, so NEXT_MULTIPLE and
 * PREV_MULTIPLE go on with the pages after and before it.  After NEXT_DUP
 * ran off the end (or LAST, LAST_DUP, PREV_NODUP, a refused APPENDDUP) the
 * cursor still stands on the key's last value: the page is the key's last.
 * LMDB answers success without data for a plain node and after such an
 * end; we never do (README, "Differences from stock LMDB").
 */
static int current_page(MDB_cursor *mc, MDB_val *data)
{
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	int rc;
	if (mc->c_depth == 0 || mc->c_ki[mc->c_top] >= dl_pg_nkeys(mc->c_pg[mc->c_top]))
		return MDB_NOTFOUND;	/* nothing under the cursor */
	if (!cur_is_dup(mc))
		return dlmdb_cur_fetch(mc, NULL, data);
	if (!(xc->c_flags & DL_C_INIT)) {
		/* as GET_CURRENT: after a delete the key's first value,
		 * otherwise (a failed lookup) no value is current */
		if (!(mc->c_flags & DL_C_DEL))
			return EINVAL;
		if ((rc = node_value_edge(mc, NULL, 0)))
			return rc;
	}
	if (xc->c_ki[xc->c_top] >= dl_pg_nkeys(xc->c_pg[xc->c_top]))
		return MDB_NOTFOUND;	/* its value was deleted, none follows */
	return fetch_multiple(mc, data);
}

/* Every cursor op on a DUPSORT DB but the step below (dlmdb_dup_get). */
__attribute__((noinline))
static int dup_get_op(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	MDB_val v;
	int rc;
	switch (op) {
	case MDB_FIRST:
	case MDB_LAST:
		rc = op == MDB_FIRST ? dlmdb_cur_first(mc, key, NULL) : dlmdb_cur_last(mc, key, NULL);
		if (rc)
			return rc;
		return node_value_edge(mc, data, op == MDB_LAST);
	case MDB_GET_CURRENT:
		if (!(mc->c_flags & DL_C_INIT))
			return EINVAL;
		if (mc->c_depth == 0)
			return MDB_NOTFOUND;
		if ((rc = dlmdb_cur_fetch(mc, key, NULL)))
			return rc;
		if (!cur_is_dup(mc))
			return node_value_edge(mc, data, 0);
		if (!(xc->c_flags & DL_C_INIT)) {
			/* after a delete LMDB re-aims the duplicates at the first one;
			 * otherwise an unpositioned duplicate cursor is an error */
			if (!(mc->c_flags & DL_C_DEL))
				return EINVAL;
			return node_value_edge(mc, data, 0);
		}
		return x_current(mc, data);
	case MDB_NEXT:
	case MDB_NEXT_DUP:
	case MDB_NEXT_NODUP:
		/* mirrors LMDB's order of checks, quirks included */
		if ((mc->c_flags & DL_C_DEL) && op == MDB_NEXT_DUP)
			return MDB_NOTFOUND;
		if (!(mc->c_flags & DL_C_INIT) || mc->c_depth == 0)
			return dlmdb_dup_get(mc, key, data, MDB_FIRST);
		if (mc->c_flags & DL_C_EOF) {
			if (mc->c_ki[mc->c_top] + 1u >= dl_pg_nkeys(mc->c_pg[mc->c_top]))
				return MDB_NOTFOUND;
			mc->c_flags &= ~DL_C_EOF;
		}
		if (mc->c_ki[mc->c_top] < dl_pg_nkeys(mc->c_pg[mc->c_top])) {
			if (cur_is_dup(mc)) {
				if (op != MDB_NEXT_NODUP) {
					/* node_value_edge already translates the value: only
					 * a sub-cursor step needs x_out (twice = wild pointer) */
					int stepped = (xc->c_flags & DL_C_INIT) != 0;
					/* duplicates never aimed (e.g. a failed SET left the key
					 * cursor at the insertion point): no position to step
					 * from, as FIRST_DUP/LAST_DUP/GET_CURRENT report */
					if (!stepped && op == MDB_NEXT_DUP)
						return EINVAL;
					if (stepped)
						rc = dlmdb_cur_next(xc, &v, NULL, MDB_NEXT);
					else
						rc = node_value_edge(mc, &v, 0);
					if (rc == 0) {
						if (stepped)
							x_out(x, &v);
						if (data)
							*data = v;
						return dlmdb_cur_fetch(mc, key, NULL);
					}
					if (op != MDB_NEXT || rc != MDB_NOTFOUND)
						return rc;
				}
			} else {
				xc->c_flags = 0;
				if (op == MDB_NEXT_DUP)
					return MDB_NOTFOUND;
			}
		}
		if ((rc = dlmdb_cur_next(mc, key, NULL, MDB_NEXT)))
			return rc;
		return node_value_edge(mc, data, 0);
	case MDB_PREV:
	case MDB_PREV_DUP:
	case MDB_PREV_NODUP:
		if (!(mc->c_flags & DL_C_INIT) || mc->c_depth == 0)
			return dlmdb_dup_get(mc, key, data, MDB_LAST);
		if (mc->c_ki[mc->c_top] < dl_pg_nkeys(mc->c_pg[mc->c_top])) {
			if (cur_is_dup(mc)) {
				if (op != MDB_PREV_NODUP) {
					if (op == MDB_PREV_DUP && !(xc->c_flags & DL_C_INIT) &&
					    !(mc->c_flags & DL_C_DEL))
						return EINVAL;	/* as NEXT_DUP above */
					if (xc->c_flags & DL_C_INIT) {
						rc = dlmdb_cur_prev(xc, &v, NULL);
						if (rc == 0)
							x_out(x, &v);
					} else {
						rc = node_value_edge(mc, &v, 1);
					}
					if (rc == 0) {
						mc->c_flags &= ~DL_C_EOF;
						if (data)
							*data = v;
						return dlmdb_cur_fetch(mc, key, NULL);
					}
					if (op != MDB_PREV || rc != MDB_NOTFOUND)
						return rc;
				}
			} else {
				xc->c_flags = 0;
				if (op == MDB_PREV_DUP)
					return MDB_NOTFOUND;
			}
		}
		if ((rc = dlmdb_cur_prev(mc, key, NULL)))
			return rc;
		return node_value_edge(mc, data, 1);
	case MDB_SET:
	case MDB_SET_KEY:
	case MDB_SET_RANGE:
		xc->c_flags = 0;
		if ((rc = dlmdb_cursor_seek(mc, key, NULL, op)))
			return rc;
		return node_value_edge(mc, data, 0);
	case MDB_GET_BOTH:
	case MDB_GET_BOTH_RANGE:
		if (!data)
			return EINVAL;
		xc->c_flags = 0;
		if ((rc = dlmdb_cursor_seek(mc, key, NULL, MDB_SET)))
			return rc;
		rc = dlmdb_dup_setup(mc);
		if (rc == MDB_NOTFOUND) {
			/* a single value, read with the checks of any fetch */
			if ((rc = dlmdb_cur_fetch(mc, NULL, &v)))
				return DL_TXN_FAIL(mc->c_txn, rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc);
			int c = dcmp_of(mc)(data, &v);
			if (op == MDB_GET_BOTH ? c != 0 : c > 0)
				return MDB_NOTFOUND;
			*data = v;
			return 0;
		}
		if (rc)
			return rc;
		v = *data;
		rc = dlmdb_cursor_seek(xc, &v, NULL, op == MDB_GET_BOTH ? MDB_SET_KEY : MDB_SET_RANGE);
		if (rc) {
			xc->c_flags = 0;
			return rc;
		}
		x_out(x, &v);
		*data = v;
		return 0;
	case MDB_FIRST_DUP:
	case MDB_LAST_DUP:
		if (!data || !(mc->c_flags & DL_C_INIT))
			return EINVAL;
		if (mc->c_depth == 0 || mc->c_ki[mc->c_top] >= dl_pg_nkeys(mc->c_pg[mc->c_top]))
			return MDB_NOTFOUND;
		mc->c_flags &= ~DL_C_EOF;
		if (!cur_is_dup(mc)) {
			if ((rc = dlmdb_cur_fetch(mc, key, NULL)))
				return rc;
			return node_value_edge(mc, data, 0);
		}
		/* as LMDB: the key is left alone, an unpositioned sub-cursor is an error */
		if (!(xc->c_flags & DL_C_INIT))
			return EINVAL;
		rc = op == MDB_LAST_DUP ? dlmdb_cur_last(xc, &v, NULL) : dlmdb_cur_first(xc, &v, NULL);
		if (rc)
			return rc;
		x_out(x, &v);
		*data = v;
		return 0;
	case MDB_GET_MULTIPLE:
		if (!data || !(mc->c_flags & DL_C_INIT))
			return EINVAL;
		if (!(mc->c_db->d_flags & MDB_DUPFIXED))
			return MDB_INCOMPATIBLE;
		return current_page(mc, data);
	case MDB_NEXT_MULTIPLE:
		if (!data)
			return EINVAL;
		if (!(mc->c_db->d_flags & MDB_DUPFIXED))
			return MDB_INCOMPATIBLE;
		if (!(mc->c_flags & DL_C_INIT)) {
			/* a fresh cursor: the first key's first page, as FIRST
			 * then GET_MULTIPLE (a plain value is a page too) */
			if ((rc = dlmdb_dup_get(mc, key, NULL, MDB_FIRST)))
				return rc;
			return current_page(mc, data);
		}
		/* the page walk's step (every NEXT_MULTIPLE of a loop over a
		 * sub-tree): from the last value of the sub-cursor's leaf
		 * straight to the next leaf's page, nothing pending on either
		 * cursor -- what the NEXT_DUP step below does there (the
		 * sub-cursor marked at the end, the key left alone), without
		 * fetching a value only to replace it with its page */
		if ((mc->c_flags & (DL_C_INIT | DL_C_DEL | DL_C_EOF)) == DL_C_INIT &&
		    (xc->c_flags & (DL_C_INIT | DL_C_DEL | DL_C_EOF)) == DL_C_INIT &&
		    xc->c_top && cur_is_dup(mc) &&
		    xc->c_ki[xc->c_top] + 1u >= dl_pg_nkeys(xc->c_pg[xc->c_top])) {
			if ((rc = dlmdb_cur_step_leaf(xc, 1))) {
				if (rc == MDB_NOTFOUND)
					xc->c_flags |= DL_C_EOF;
				return rc;
			}
			if ((rc = item_key(mc, key)))
				return rc;
			return fetch_multiple(mc, data);
		}
		/* one value on, then that value's page; NEXT_DUP never leaves
		 * the key, so a plain node (one value) ends here */
		if ((rc = dlmdb_dup_get(mc, key, data, MDB_NEXT_DUP)))
			return rc;
		if (!(xc->c_flags & DL_C_INIT))
			return MDB_NOTFOUND;
		return fetch_multiple(mc, data);
	case MDB_PREV_MULTIPLE:
		if (!data)
			return EINVAL;
		if (!(mc->c_db->d_flags & MDB_DUPFIXED))
			return MDB_INCOMPATIBLE;
		if (!(mc->c_flags & DL_C_INIT)) {
			/* a fresh cursor: the last key's last page, as LAST then
			 * GET_MULTIPLE (LMDB skips that page and returns the one
			 * before it) */
			if ((rc = dlmdb_dup_get(mc, key, NULL, MDB_LAST)))
				return rc;
			return current_page(mc, data);
		}
		if (mc->c_depth == 0 || mc->c_ki[mc->c_top] >= dl_pg_nkeys(mc->c_pg[mc->c_top]) ||
		    !cur_is_dup(mc) || !(xc->c_flags & DL_C_INIT))
			return MDB_NOTFOUND;	/* no page before this one */
		if (xc->c_ki[xc->c_top] >= dl_pg_nkeys(xc->c_pg[xc->c_top])) {
			/* past the last value (it was deleted): the page before
			 * the position is the one it stands at the end of (LMDB
			 * skips it) */
			return fetch_multiple(mc, data);
		}
		if ((rc = dlmdb_cur_step_leaf(xc, -1)))
			return rc;
		return fetch_multiple(mc, data);
	default:
		return EINVAL;
	}
}

int dlmdb_dup_get(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	MDB_val v;
	int rc;
	/* the step of a duplicate scan: the next value on the sub-cursor's
	 * leaf, nothing pending on either cursor (the same outcome as the
	 * general MDB_NEXT/MDB_NEXT_DUP case of dup_get_op, which does the rest) */
	if ((op == MDB_NEXT_DUP || op == MDB_NEXT) &&
	    (mc->c_flags & (DL_C_INIT | DL_C_DEL | DL_C_EOF)) == DL_C_INIT &&
	    (xc->c_flags & (DL_C_INIT | DL_C_DEL | DL_C_EOF)) == DL_C_INIT &&
	    xc->c_depth && cur_is_dup(mc)) {
		unsigned top = xc->c_top;
		if (xc->c_ki[top] + 1u < dl_pg_nkeys(xc->c_pg[top])) {
			xc->c_ki[top]++;
			if ((rc = item_key(xc, &v)))
				return rc;
			x_out(x, &v);
			if (data)
				*data = v;
			return item_key(mc, key);
		}
		if (op == MDB_NEXT_DUP && top == 0) {
			/* past the last value of a one-leaf set (the end of every
			 * GET/NEXT_MULTIPLE loop): marked as dlmdb_cur_next marks it */
			xc->c_flags |= DL_C_EOF;
			return MDB_NOTFOUND;
		}
	}
	return dup_get_op(mc, key, data, op);
}

int dlmdb_dup_count(MDB_cursor *mc, mdb_size_t *count)
{
	if (!(mc->c_flags & DL_C_INIT))
		return EINVAL;
	if (mc->c_depth == 0 || mc->c_ki[mc->c_top] >= dl_pg_nkeys(mc->c_pg[mc->c_top]))
		return MDB_NOTFOUND;
	/* as LMDB: a count on an item clears the EOF mark (a NEXT_DUP after
	 * a NEXT_NODUP that hit the end then moves on within the key) */
	mc->c_flags &= ~DL_C_EOF;
	if (!cur_is_dup(mc)) {
		*count = 1;
		return 0;
	}
	dl_xcur *x = mc->c_sub;
	unsigned keep = x->x_c.c_flags;
	indx_t kpos[DL_MAX_DEPTH];
	memcpy(kpos, x->x_c.c_ki, sizeof kpos);
	unsigned depth = x->x_c.c_depth, top = x->x_c.c_top;
	dl_page *pgs[DL_MAX_DEPTH];
	memcpy(pgs, x->x_c.c_pg, sizeof pgs);
	int rc = dlmdb_dup_setup(mc);
	if (rc)
		return rc;
	*count = x->x_db.d_entries;
	/* setup reset the position; put it back (same pages, nothing moved) */
	x->x_c.c_flags = keep;
	memcpy(x->x_c.c_ki, kpos, sizeof kpos);
	memcpy(x->x_c.c_pg, pgs, sizeof pgs);
	x->x_c.c_depth = depth;
	x->x_c.c_top = top;
	return 0;
}

/* ---- writing ---------------------------------------------------------------- */

/* Test hook (not in lmdb.h): write LEAF2 sub-pages at their exact size
 * even when that is odd, as releases before the even rule did, so that
 * tests can have stock LMDB build the layouts it makes of such files. */
static int leaf2_exact;
void dlmdb_debug_leaf2_exact(int on);
void dlmdb_debug_leaf2_exact(int on)
{
	__atomic_store_n(&leaf2_exact, on, __ATOMIC_RELAXED);
}
static inline size_t leaf2_subpage_bytes(size_t n, unsigned pad)
{
	size_t sz = DL_PAGEHDR + n * pad;
	return __atomic_load_n(&leaf2_exact, __ATOMIC_RELAXED) ? sz : dl_even(sz);
}

/* A sub-page of a compressed DB: its anchor, chosen by subpage_size. */
typedef struct sp_plan {
	int pfx;
	dl_pfx_cand a;
} sp_plan;

/* vals as prefix.c items (values are keys without data) */
static dl_pfx_item *sp_items(MDB_txn *txn, const MDB_val *vals, unsigned m)
{
	dl_pfx_item *it = dlmdb_pfx_items(txn, m ? m : 1);
	for (unsigned i = 0; it && i < m; i++) {
		it[i].key = vals[i].mv_data;
		it[i].klen = (unsigned)vals[i].mv_size;
		it[i].kind = 0;
		it[i].dsize = 0;
		it[i].data = NULL;
		it[i].dlen = 0;
		it[i].sh = 0;
	}
	return it;
}

/* Bytes of a sub-page holding these values (fixed: LEAF2 of that size; a
 * compressed DB's: the smallest layout, noted in *pl; 0 out of memory). */
static size_t subpage_size(MDB_txn *txn, const MDB_val *vals, unsigned m, unsigned fixed, sp_plan *pl)
{
	if (pl->pfx && !fixed) {
		dl_pfx_item *it = sp_items(txn, vals, m);
		return it ? DL_PAGEHDR + dlmdb_pfx_best(it, m, NULL, 0, &pl->a) : 0;
	}
	/* a LEAF2 image of an odd size gets one byte of slack: stock LMDB
	 * shrinks a sub-page by its slack only to an even size, so a sub-page
	 * it meets at an odd size would end up in a node packed against its
	 * neighbour, which stock's next delete of it damages (FORMAT.md) */
	if (fixed)
		return leaf2_subpage_bytes(m, fixed);
	size_t sz = DL_PAGEHDR + (size_t)m * sizeof(indx_t);
	for (unsigned i = 0; i < m; i++)
		sz += dl_even(DL_NODEHDR + vals[i].mv_size);
	return sz;
}

/* Encode sorted values as a sub-page image into buf (aligned). */
static void subpage_build(MDB_txn *txn, char *buf, const MDB_val *vals, unsigned m, size_t size,
	unsigned fixed, const sp_plan *pl)
{
	dl_page *sp = (dl_page *)buf;
	memset(buf, 0, size);
	if (pl->pfx && !fixed) {
		/* the items array subpage_size filled may have been reused */
		dl_pfx_item *it = sp_items(txn, vals, m);
		sp->p_flags = DL_P_LEAF | DL_P_SUBP | DL_P_DIRTY | DL_P_PREFIX;
		dlmdb_pfx_build(sp, (unsigned)size, it, m, &pl->a, 0);
		return;
	}
	if (fixed) {
		sp->p_flags = DL_P_LEAF | DL_P_LEAF2 | DL_P_SUBP | DL_P_DIRTY;
		sp->p_pad = (uint16_t)fixed;
		sp->p_lower = (uint16_t)(DL_PAGEHDR + m * sizeof(indx_t));
		sp->p_upper = (uint16_t)(sp->p_lower + (size - DL_PAGEHDR - (size_t)m * fixed));
		for (unsigned i = 0; i < m; i++)
			memcpy(buf + DL_PAGEHDR + (size_t)i * fixed, vals[i].mv_data, fixed);
		return;
	}
	/* LMDB 0.9 keeps DIRTY on every sub-page, in memory and on disk: its
	 * writers treat a sub-page without it as a real page to copy and free */
	sp->p_flags = DL_P_LEAF | DL_P_SUBP | DL_P_DIRTY;
	sp->p_lower = (uint16_t)(DL_PAGEHDR + m * sizeof(indx_t));
	sp->p_upper = sp->p_lower;
	size_t off = size;
	indx_t *slots = dl_pg_slots(sp);
	for (unsigned i = 0; i < m; i++) {
		off -= dl_even(DL_NODEHDR + vals[i].mv_size);
		slots[i] = (indx_t)off;
		dl_node *nd = (dl_node *)(buf + off);
		nd->n_ksize = (uint16_t)vals[i].mv_size;
		if (vals[i].mv_size)
			memcpy(dl_node_key(nd), vals[i].mv_data, vals[i].mv_size);
	}
}

/* After a sub-page went into the node under mc: like LMDB, its header
 * names the leaf page that holds it (LMDB uses it as the sub-page's root). */
static void subpage_stamp(MDB_cursor *mc)
{
	dl_page *p = mc->c_pg[mc->c_top];
	dl_node *n = dl_pg_node(p, mc->c_ki[mc->c_top]);
	if ((n->n_flags & (DL_N_DUP | DL_N_TREE)) == DL_N_DUP && dl_node_dsize(n) >= DL_PAGEHDR)
		memcpy((char *)dl_node_data(n) + offsetof(dl_page, p_pgno), &p->p_pgno, sizeof p->p_pgno);
}

static char *scratch(MDB_txn *txn, int i)
{
	if (!txn->t_scratch[i])
		txn->t_scratch[i] = malloc(txn->t_env->e_psize);
	return txn->t_scratch[i];
}

/*
 * Edits of a compressed inline sub-page that leave its anchor alone (FORMAT.md,
 * "How writers choose": an insert encodes its node against the page's
 * anchor, a delete removes one): the new image is the old one with its node
 * area moved by the size change, one node added or removed, no value
 * decoded and no layout planned.  sp is the sub-cursor's aligned copy (of
 * size; its nodes checked by dlmdb_dup_setup's reader, and here before any
 * is moved); out gets the new image.
 */
static void sp_move_nodes(dl_page *p, unsigned size, long delta)
{
	unsigned n = dl_pg_nkeys(p);
	indx_t *s = dl_pg_slots(p);
	char *base = (char *)p;
	memmove(base + p->p_upper + delta, base + p->p_upper, size - p->p_upper);
	for (unsigned i = 0; i < n; i++)
		s[i] = (indx_t)(s[i] + delta);
	if (p->p_pad)
		p->p_pad = (uint16_t)(p->p_pad + delta);
	p->p_upper = (uint16_t)(p->p_upper + delta);
}

/* Check every node of copy sp (size bytes) before an in-place edit. */
static int sp_nodes_ok(const dl_page *sp, unsigned size)
{
	if (!dl_pg_prefix(sp) || dl_pg_is_leaf2(sp) || !dl_pg_anchor_ok(sp, size) ||
	    (sp->p_pad && sp->p_pad + dl_pg_anchor_bytes(sp) != size))
		return 0;	/* only the layout our writer makes: anchor at the top */
	for (unsigned i = 0; i < dl_pg_nkeys(sp); i++)
		if (!dl_node_in_page(sp, i, size) || dl_node_kind(dl_pg_node(sp, i)) ||
		    dl_node_dsize(dl_pg_node(sp, i)))
			return 0;
	return 1;
}

/* The image of sub-page copy sp (size bytes) with value v added at slot pos
 * into out; its size, or 0 when it would not fit maxsize. */
static size_t sp_insert(const dl_page *sp, unsigned size, unsigned pos, const MDB_val *v, char *out,
	size_t maxsize)
{
	unsigned s = 0;
	if (sp->p_pad) {
		unsigned al = dl_pg_anchor_len(sp), lim = al < v->mv_size ? al : (unsigned)v->mv_size;
		const unsigned char *a = dl_pg_anchor(sp), *k = v->mv_data;
		while (s < lim && a[s] == k[s])
			s++;
	}
	size_t len = DL_NODEHDR + v->mv_size - s, nb = dl_even(len);
	size_t nsize = size + nb + sizeof(indx_t);
	if (nsize > maxsize)
		return 0;
	memcpy(out, sp, size);
	dl_page *np = (dl_page *)out;
	sp_move_nodes(np, (unsigned)size, (long)(nb + sizeof(indx_t)));
	dl_node *nd = dlmdb_pg_make_room(np, pos, nb);
	dl_node_set_dsize(nd, 0);
	nd->n_ksize = (uint16_t)(v->mv_size - s);
	nd->n_flags = (uint16_t)(s << DL_N_SHARED_SHIFT);
	dl_copy_short(dl_node_key(nd), (const char *)v->mv_data + s, v->mv_size - s);
	if (len & 1)
		((char *)nd)[len] = 0;
	return nsize;
}

/* The image of sub-page copy sp (size bytes) without slot pos into out;
 * its size. */
static size_t sp_remove(const dl_page *sp, unsigned size, unsigned pos, char *out)
{
	memcpy(out, sp, size);
	dl_page *np = (dl_page *)out;
	dlmdb_pg_del_node(np, pos);
	unsigned room = dl_pg_room(np);
	/* the freed bytes go: the node area moves down onto the slot array */
	sp_move_nodes(np, size, -(long)room);
	return size - room;
}

/* Position the sub-cursor on value v of the (re-read) node under mc. */
static int x_locate(MDB_cursor *mc, MDB_val *v)
{
	int rc = dlmdb_dup_setup(mc);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return rc;
	MDB_val k = *v;
	if (k.mv_size == 0)
		return dlmdb_cur_first(&mc->c_sub->x_c, &k, NULL);
	return dlmdb_cursor_seek(&mc->c_sub->x_c, &k, NULL, MDB_SET);
}

/* The values of leaf (or sub-page) p, nodes checked, into vals: views of
 * p, or of the txn's value storage for those that share anchor bytes. */
static int page_values(MDB_txn *txn, const dl_page *p, MDB_val *vals)
{
	unsigned n = dl_pg_nkeys(p);
	size_t need = 0;
	if (dl_pg_prefix(p))
		for (unsigned i = 0; i < n; i++)
			if (dl_node_shared(dl_pg_node(p, i)))
				need += dl_leaf_klen(p, dl_pg_node(p, i));
	unsigned char *store = need ? dlmdb_pfx_valbuf(txn, need) : NULL;
	if (need && !store)
		return ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		dlmdb_node_keyval(p, i, &vals[i], store);
		if (vals[i].mv_data == store)
			store += vals[i].mv_size;
	}
	return 0;
}

/* Values of the node under mc (single value or sub-page) into vals. */
static int gather(MDB_cursor *mc, MDB_val *vals, unsigned *m, unsigned cap)
{
	int rc = dlmdb_dup_setup(mc);
	if (rc == MDB_NOTFOUND) {
		/* a single value, read with the checks of any fetch; a value of
		 * a DUPSORT DB is at most a key's size and never in overflow
		 * pages (a damaged tree could say otherwise, and the value would
		 * then be copied into key-sized buffers) */
		if ((rc = dlmdb_cur_fetch(mc, NULL, &vals[0])))
			return rc == MDB_NOTFOUND ? DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED) : rc;
		dl_node *n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
		if ((n->n_flags & DL_N_BIG) || vals[0].mv_size > DL_MAXKEY)
			return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
		*m = 1;
		return 0;
	}
	if (rc)
		return rc;
	dl_page *sp = mc->c_sub->x_c.c_inline;
	unsigned n = dl_pg_nkeys(sp);
	if (n > cap)
		return MDB_CORRUPTED;
	for (unsigned i = 0; i < n; i++) {
		if (!dl_pg_is_leaf2(sp) && !dl_node_in_page(sp, i, mc->c_sub->x_c.c_bound))
			return MDB_CORRUPTED;
	}
	if ((rc = page_values(mc->c_txn, sp, vals)))
		return rc;
	*m = n;
	return 0;
}

/*
 * Whether mc's sub-cursor still stands on the last value of node n's
 * sub-tree, as a put through mc that was the txn's last change left it:
 * its stack was current then (c_gen, set by dlmdb_dup_put), nothing has
 * changed since (t_gen), n still holds the record the sub-cursor works
 * on, and every level of the stack is at its last entry.  A run of
 * APPENDDUP puts then skips the setup and the descent to the last value.
 */
static int xc_on_last(MDB_cursor *mc, const dl_node *n)
{
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	return xc->c_owner == mc && xc->c_gen == mc->c_txn->t_gen && dl_node_dsize(n) == sizeof(dl_dbrec) &&
		!memcmp(dl_node_data(n), &x->x_db, sizeof(dl_dbrec)) && dlmdb_cur_on_last(xc);
}

/* Room for every value a sub-page can hold (at least one byte each in a
 * LEAF2 sub-page, so never more than nodemax), kept per transaction. */
static MDB_val *vals_buf(MDB_txn *txn, unsigned *cap)
{
	*cap = (unsigned)txn->t_env->e_nodemax + 1;
	if (!txn->t_vals)
		txn->t_vals = malloc((*cap + 1) * sizeof(MDB_val));
	return txn->t_vals;
}

static int dup_put_multiple(MDB_cursor *mc, MDB_val *key, MDB_val *data, unsigned flags);

int dlmdb_dup_put(MDB_cursor *mc, MDB_val *key, MDB_val *data, unsigned flags)
{
	MDB_txn *txn = mc->c_txn;
	MDB_env *env = txn->t_env;
	dl_xcur *x = mc->c_sub;
	MDB_cmp_func *dcmp = dcmp_of(mc);
	int rc, exact = 0;
	if (data->mv_size > DL_MAXKEY)
		return MDB_BAD_VALSIZE;
	if (flags & MDB_RESERVE)
		return EINVAL;
	if (flags & MDB_MULTIPLE)
		return dup_put_multiple(mc, key, data, flags & ~MDB_MULTIPLE);
	unsigned char keybuf[DL_MAXKEY + 1], valbuf[DL_MAXKEY + 1];
	MDB_val k = *key, d = *data;
	if (flags & MDB_CURRENT) {
		/* replace the value under the cursor: delete it, then insert */
		if ((rc = dlmdb_cursor_revalidate(mc)))
			return rc;
		if (!(mc->c_flags & DL_C_INIT) || (mc->c_flags & DL_C_DEL) || mc->c_depth == 0)
			return EINVAL;
		MDB_val ck;
		if ((rc = dlmdb_cur_fetch(mc, &ck, NULL)))
			return rc;
		memcpy(keybuf, ck.mv_data, ck.mv_size);
		k.mv_data = keybuf;
		k.mv_size = ck.mv_size;
		if (d.mv_size)
			memcpy(valbuf, d.mv_data, d.mv_size);
		d.mv_data = valbuf;
		/* as LMDB: replacing the current value in place does not move the
		 * duplicate cursor, so a run-off-the-end mark (LastDup, Last, ...)
		 * survives it (GetMultiple then still answers the last page); so does the
		 * key cursor's (NextDup after a failed NextNoDup stays NotFound) */
		unsigned xeof = (x->x_c.c_flags & DL_C_INIT) ? (x->x_c.c_flags & DL_C_EOF) : 0;
		unsigned meof = mc->c_flags & DL_C_EOF;
		dl_node *cn = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
		dl_page hdr;
		if ((cn->n_flags & (DL_N_DUP | DL_N_TREE)) == (DL_N_DUP | DL_N_TREE) &&
		    (x->x_c.c_flags & DL_C_INIT) && !(x->x_c.c_flags & DL_C_DEL)) {
			/* as LMDB: the value itself again writes it in place (a
			 * delete and re-insert could rebalance the sub-tree) */
			MDB_val cur;
			if ((rc = dlmdb_cur_fetch(&x->x_c, &cur, NULL)) == 0 && cur.mv_size == d.mv_size &&
			    !memcmp(cur.mv_data, d.mv_data, d.mv_size))
				return leaf2_restamp(mc, &d);
		}
		if ((cn->n_flags & (DL_N_DUP | DL_N_TREE)) == DL_N_DUP && dl_node_dsize(cn) >= DL_PAGEHDR) {
			memcpy(&hdr, dl_node_data(cn), DL_PAGEHDR);
			if (dl_pg_nkeys(&hdr) == 1) {
				/* as LMDB: a one-value sub-page stays a sub-page (the
				 * delete below would turn it into a plain node) */
				unsigned fixed = (mc->c_db->d_flags & MDB_DUPFIXED) ? (unsigned)d.mv_size : 0;
				if (fixed && fixed != hdr.p_pad)
					return MDB_BAD_VALSIZE;
				sp_plan pl = {dl_dup_prefix(mc), {NULL, 0}};
				size_t sz = subpage_size(txn, &d, 1, fixed, &pl);
				char *buf = scratch(txn, 3);
				if (!buf || !sz)
					return ENOMEM;
				subpage_build(txn, buf, &d, 1, sz, fixed, &pl);
				MDB_val sub = {sz, buf};
				dlmdb_txn_changed(txn, mc);
				if ((rc = dlmdb_tree_put(mc, &k, &sub, DL_PUT_DUP)))
					return rc;
				subpage_stamp(mc);
				if ((rc = x_locate(mc, &d)) == 0) {
					x->x_c.c_flags |= xeof;
					mc->c_flags |= meof;
				}
				return rc;
			}
		}
		/* a replacement puts a value right back: no demotion in between */
		if ((rc = dlmdb_dup_del(mc, DL_DEL_KEEPTREE)))
			return rc;
		rc = dlmdb_dup_put(mc, &k, &d, flags & ~MDB_CURRENT);
		if (rc == 0 && (x->x_c.c_flags & DL_C_INIT))
			x->x_c.c_flags |= xeof;
		if (rc == 0 && (mc->c_flags & DL_C_INIT))
			mc->c_flags |= meof;
		return rc;
	}
	/* as LMDB's SET step of a put: an EOF mark (from LAST) survives a
	 * miss answered from the cursor's own page (dlmdb_seek_keeps_eof), so
	 * a new key put there leaves it set and a Del then NEXT_NODUP report
	 * the end, as on a plain DB (dlmdb_tree_put).  The search below
	 * clears the mark: note it first. */
	unsigned eofkeep = 0;
	if (!(flags & MDB_APPEND) && (mc->c_flags & DL_C_EOF)) {
		if ((mc->c_flags & DL_C_SAVED) && (rc = dlmdb_cursor_revalidate(mc)))
			return rc;
		if (dlmdb_seek_keeps_eof(mc, &k))
			eofkeep = DL_C_EOF;
	}
	rc = dlmdb_search_key(mc, &k, &exact);
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (rc == MDB_NOTFOUND)
		exact = 0;
	else if (exact < 0)
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	if (!exact) {
		/* new key: a plain node */
		rc = dlmdb_tree_put(mc, &k, &d, flags & (MDB_APPEND | MDB_NOOVERWRITE));
		if (rc == MDB_KEYEXIST && (flags & MDB_APPEND)) {
			/* the refused APPEND left mc on the last key (LMDB's
			 * cursor_last): its duplicates must follow, aimed at the
			 * last one, never keep the old key's sub-cursor */
			int erc = node_value_edge(mc, NULL, 1);
			return erc ? erc : rc;
		}
		if (rc)
			return rc;
		x->x_c.c_flags = 0;
		mc->c_flags |= eofkeep;
		return 0;
	}
	if (flags & MDB_APPEND) {
		/* as LMDB: APPEND needs a key above the last one, duplicates or
		 * not (MDB_APPENDDUP is for values); the cursor ends on the last
		 * item with the EOF mark */
		MDB_val lk, lv;
		if ((rc = dlmdb_dup_get(mc, &lk, &lv, MDB_LAST)))
			return rc;
		mc->c_flags |= DL_C_EOF;
		return MDB_KEYEXIST;
	}
	if (flags & MDB_NOOVERWRITE) {
		node_value_edge(mc, data, 0);
		return MDB_KEYEXIST;
	}
	dl_node *n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
	if ((n->n_flags & (DL_N_DUP | DL_N_TREE)) == (DL_N_DUP | DL_N_TREE)) {
		/* an APPENDDUP run through this cursor: its sub-cursor may still
		 * stand on the last value, where the previous put left it */
		int onlast = (flags & MDB_APPENDDUP) && xc_on_last(mc, n);
		if (!onlast && (rc = dlmdb_dup_setup(mc)))
			return rc;
		MDB_cursor *xc = &x->x_c;
		MDB_val probe = d, last;
		unsigned here = 0;
		if ((x->x_db.d_flags & MDB_DUPFIXED) && d.mv_size != x->x_db.d_pad)
			return MDB_BAD_VALSIZE;
		if (flags & MDB_APPENDDUP) {
			/* as LMDB, only the last value is looked at: one descent
			 * to it, refused unless d sorts above it, and the put goes
			 * right after it (no search for d itself) */
			if (onlast) {
				if ((rc = dlmdb_cur_fetch(xc, &last, NULL)))
					return rc;
				xc->c_flags |= DL_C_EOF;	/* as LAST */
			} else if ((rc = dlmdb_cur_last(xc, &last, NULL))) {
				return rc;
			}
			if (dcmp(&d, &last) <= 0)
				return MDB_KEYEXIST;
			xc->c_ki[xc->c_top]++;
			here = DL_PUT_HERE;
		} else if (d.mv_size) {
			rc = dlmdb_cursor_seek(xc, &probe, NULL, MDB_SET);
			/* a miss leaves xc where the value goes (touching mc's
			 * pages below does not move it) */
			here = rc == MDB_NOTFOUND ? DL_PUT_HERE : 0;
			if (rc == 0) {
				if (flags & MDB_NODUPDATA)
					return MDB_KEYEXIST;
				return leaf2_restamp(mc, &d);
			}
			if (rc != MDB_NOTFOUND)
				return rc;
		}
		dlmdb_txn_changed(txn, mc);
		if ((rc = dlmdb_cursor_touch(mc)))
			return rc;
		MDB_val empty = {0, NULL};
		if ((rc = dlmdb_tree_put(xc, &d, &empty, (flags & MDB_APPENDDUP) ? MDB_APPEND | here : here)))
			return rc;
		n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
		memcpy(dl_node_data(n), &x->x_db, sizeof x->x_db);
		mc->c_db->d_entries++;
		dlmdb_count_bump(mc, 1, 0);
		mc->c_flags = DL_C_INIT;
		txn->t_gen++;
		xc->c_gen = txn->t_gen;	/* its stack is current (xc_on_last) */
		return 0;
	}

	if (dl_dup_prefix(mc) && (n->n_flags & (DL_N_DUP | DL_N_TREE)) == DL_N_DUP) {
		/* a compressed sub-page takes a new value in place when it
		 * fits: no decode, no new layout */
		if ((rc = dlmdb_dup_setup(mc)))
			return rc == MDB_NOTFOUND ? DL_TXN_FAIL(txn, MDB_CORRUPTED) : rc;
		MDB_cursor *xc = &x->x_c;
		dl_page *sp = xc->c_inline;
		unsigned size = xc->c_bound;
		if (sp && sp_nodes_ok(sp, size)) {
			int ex;
			unsigned pos = dlmdb_node_find(xc, sp, &d, &ex);
			if (ex < 0)
				return DL_TXN_FAIL(txn, MDB_CORRUPTED);
			if (!ex && (!(flags & MDB_APPENDDUP) || pos == dl_pg_nkeys(sp))) {
				char *buf = scratch(txn, 3);
				if (!buf)
					return ENOMEM;
				size_t room = dl_db_nodemax(env, mc->c_db) - DL_NODEHDR - k.mv_size;
				size_t sz = sp_insert(sp, size, pos, &d, buf, room);
				if (sz) {
					MDB_val sub = {sz, buf};
					if (k.mv_data != keybuf) {
						memcpy(keybuf, k.mv_data, k.mv_size);
						k.mv_data = keybuf;
					}
					if (d.mv_data != valbuf) {
						if (d.mv_size)
							memcpy(valbuf, d.mv_data, d.mv_size);
						d.mv_data = valbuf;
					}
					dlmdb_txn_changed(txn, mc);
					if ((rc = dlmdb_tree_put(mc, &k, &sub, DL_PUT_DUP)))
						return rc;
					subpage_stamp(mc);
					mc->c_db->d_entries++;
					return x_locate(mc, &d);
				}
			}
		}
		/* (refusals, and a page that must grow into a sub-tree, take
		 * the general path below) */
	}
	if ((n->n_flags & (DL_N_DUP | DL_N_TREE)) == DL_N_DUP && (mc->c_db->d_flags & MDB_DUPFIXED)) {
		/* a LEAF2 sub-page taking a new value that keeps it a sub-page:
		 * the new image is the old one with the value copied in at its
		 * place (refusals, repeats and growth take the general path) */
		if ((rc = dlmdb_dup_setup(mc)))
			return rc == MDB_NOTFOUND ? DL_TXN_FAIL(txn, MDB_CORRUPTED) : rc;
		MDB_cursor *xc = &x->x_c;
		dl_page *sp = xc->c_inline;
		unsigned m = sp ? dl_pg_nkeys(sp) : 0, pad = sp ? sp->p_pad : 0;
		int ex = 0;
		unsigned pos = 0;
		if (sp && dl_pg_is_leaf2(sp) && pad == d.mv_size)
			pos = dlmdb_node_find(xc, sp, &d, &ex);
		size_t sz = leaf2_subpage_bytes(m + 1, pad);
		char *buf = scratch(txn, 3);
		if (!buf)
			return ENOMEM;
		if (sp && dl_pg_is_leaf2(sp) && pad == d.mv_size && !ex &&
		    (!(flags & MDB_APPENDDUP) || pos == m) &&
		    DL_NODEHDR + k.mv_size + sz <= dl_db_nodemax(env, mc->c_db)) {
			dl_page *np = (dl_page *)buf;
			const char *from = (const char *)sp + DL_PAGEHDR;
			char *to = buf + DL_PAGEHDR;
			size_t used = DL_PAGEHDR + (size_t)(m + 1) * pad;
			np->p_pgno = 0;
			np->p_flags = DL_P_LEAF | DL_P_LEAF2 | DL_P_SUBP | DL_P_DIRTY;
			np->p_pad = (uint16_t)pad;
			np->p_lower = (uint16_t)(DL_PAGEHDR + (m + 1) * sizeof(indx_t));
			np->p_upper = (uint16_t)(np->p_lower + (sz - used));
			memcpy(to, from, (size_t)pos * pad);
			memcpy(to + (size_t)pos * pad, d.mv_data, pad);
			memcpy(to + (size_t)(pos + 1) * pad, from + (size_t)pos * pad, (size_t)(m - pos) * pad);
			memset(buf + used, 0, sz - used);	/* the slack byte, if any */
			MDB_val sub = {sz, buf};
			if (k.mv_data != keybuf) {
				memcpy(keybuf, k.mv_data, k.mv_size);
				k.mv_data = keybuf;
			}
			dlmdb_txn_changed(txn, mc);
			if ((rc = dlmdb_tree_put(mc, &k, &sub, DL_PUT_DUP)))
				return rc;
			subpage_stamp(mc);
			mc->c_db->d_entries++;
			/* the sub-cursor on the new value (as x_locate would put it) */
			if ((rc = dlmdb_dup_setup(mc)))
				return rc == MDB_NOTFOUND ? DL_TXN_FAIL(txn, MDB_PROBLEM) : rc;
			xc->c_pg[0] = xc->c_inline;
			xc->c_ki[0] = (indx_t)pos;
			xc->c_top = 0;
			xc->c_depth = 1;
			xc->c_flags = DL_C_INIT;
			return 0;
		}
	}
	/* single value or sub-page: rebuild with the new value */
	const dl_node *nd = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
	int single = !(nd->n_flags & DL_N_DUP), refuse = 0;
	unsigned vcap;
	MDB_val *vals = vals_buf(txn, &vcap);
	if (!vals)
		return ENOMEM;
	unsigned m = 0;
	if ((rc = gather(mc, vals, &m, vcap)))
		goto out;
	if ((mc->c_db->d_flags & MDB_DUPFIXED) && vals[0].mv_size != d.mv_size) {
		rc = MDB_BAD_VALSIZE;
		goto out;
	}
	unsigned pos = 0;
	while (pos < m && dcmp(&vals[pos], &d) < 0)
		pos++;
	if (pos < m && dcmp(&vals[pos], &d) == 0) {
		/* as LMDB, also when refused: the duplicate cursor ends on the
		 * value found (APPENDDUP looks only at the last one: there) */
		int prc = (flags & MDB_APPENDDUP) ? node_value_edge(mc, NULL, 1) : x_locate(mc, &d);
		rc = prc ? prc : (flags & (MDB_NODUPDATA | MDB_APPENDDUP)) ? MDB_KEYEXIST : 0;
		goto out;
	}
	if ((flags & MDB_APPENDDUP) && pos < m) {
		if (!single) {
			int prc = node_value_edge(mc, NULL, 1);
			rc = prc ? prc : MDB_KEYEXIST;
			goto out;
		}
		/* as LMDB: a single value is first made a sub-page of itself,
		 * then the new value below it is refused, and the sub-page
		 * stays (FIRST_DUP then leaves the key unset, as on any
		 * sub-page) */
		refuse = 1;
	} else {
		memmove(vals + pos + 1, vals + pos, (m - pos) * sizeof(MDB_val));
		vals[pos] = d;
		m++;
	}
	unsigned fixed = (mc->c_db->d_flags & MDB_DUPFIXED) ? (unsigned)d.mv_size : 0;
	sp_plan pl = {dl_dup_prefix(mc), {NULL, 0}};
	size_t sz = subpage_size(txn, vals, m, fixed, &pl);
	if (!sz) {
		rc = ENOMEM;
		goto out;
	}
	dlmdb_txn_changed(txn, mc);
	if (DL_NODEHDR + k.mv_size + sz <= dl_db_nodemax(env, mc->c_db)) {
		char *buf = scratch(txn, 3);
		if (!buf) {
			rc = ENOMEM;
			goto out;
		}
		subpage_build(txn, buf, vals, m, sz, fixed, &pl);
		MDB_val sub = {sz, buf};
		if (k.mv_data != keybuf) {
			memcpy(keybuf, k.mv_data, k.mv_size);
			k.mv_data = keybuf;
		}
		if ((rc = dlmdb_tree_put(mc, &k, &sub, DL_PUT_DUP)))
			goto out;
		subpage_stamp(mc);
	} else {
		/* too big for a sub-page: move the values into a sub-tree */
		MDB_cursor *xc = &x->x_c;
		dlmdb_cursor_setup(xc, txn, mc->c_dbi);
		memset(&x->x_db, 0, sizeof x->x_db);
		x->x_db.d_root = DL_NO_PAGE;
		if (fixed) {
			x->x_db.d_pad = fixed;
			x->x_db.d_flags = (uint16_t)(MDB_DUPFIXED |
				((mc->c_db->d_flags & MDB_INTEGERDUP) ? MDB_INTEGERKEY : 0));
		}
		/* a counted DB's duplicate sub-trees are counted too, a
		 * compressed one's (not DUPFIXED: LEAF2 leaves) compressed */
		x->x_db.d_flags |= (uint16_t)(mc->c_db->d_flags & MDB_COUNTED);
		if (!fixed)
			x->x_db.d_flags |= (uint16_t)(mc->c_db->d_flags & MDB_PREFIX_COMPRESSION);
		x->x_dbx.x_cmp = dcmp;
		xc->c_db = &x->x_db;
		xc->c_dbx = &x->x_dbx;
		xc->c_owner = mc;
		MDB_val empty = {0, NULL};
		for (unsigned i = 0; i < m && !rc; i++) {
			MDB_val v = vals[i];
			rc = dlmdb_tree_put(xc, &v, &empty, MDB_APPEND);
		}
		if (rc)
			goto out;
		dl_dbrec rec = x->x_db;
		MDB_val recv = {sizeof rec, &rec};
		if (k.mv_data != keybuf) {
			memcpy(keybuf, k.mv_data, k.mv_size);
			k.mv_data = keybuf;
		}
		if ((rc = dlmdb_tree_put(mc, &k, &recv, DL_PUT_DUP | DL_PUT_TREE)))
			goto out;
	}
	if (refuse) {
		int prc = node_value_edge(mc, NULL, 1);
		rc = prc ? prc : MDB_KEYEXIST;
		goto out;
	}
	mc->c_db->d_entries++;
	if (d.mv_data != valbuf) {
		if (d.mv_size)	/* an empty value may come as {0, NULL} */
			memcpy(valbuf, d.mv_data, d.mv_size);
		d.mv_data = valbuf;
	}
	rc = x_locate(mc, &d);
out:
	return rc;
}

/* ---- MDB_MULTIPLE ------------------------------------------------------------ */

/*
 * Append n values (isz bytes each, ascending, all above the last one) to
 * the LEAF2 sub-tree of xc.  The last leaf takes as many as fit in one
 * copy; the value that finds it full goes in by an ordinary put, which
 * splits the leaf as a put of that value alone would (halves, or with
 * MDB_APPEND in split a fresh leaf), so the leaves end up as one put per
 * value leaves them, and GET_MULTIPLE hands out the same pages.  *done
 * counts the values stored, also on an error.
 */
static int leaf2_append(MDB_cursor *xc, const char *vals, size_t n, unsigned isz, unsigned split,
	size_t *done)
{
	MDB_txn *txn = xc->c_txn;
	MDB_val empty = {0, NULL};
	size_t i = 0;
	int rc = dlmdb_search_root(xc, NULL, DL_SEARCH_LAST);
	*done = 0;
	if (rc)
		return rc == MDB_NOTFOUND ? DL_TXN_FAIL(txn, MDB_CORRUPTED) : rc;
	if ((rc = dlmdb_cursor_touch(xc)))
		return rc;
	while (i < n) {
		dl_page *p = xc->c_pg[xc->c_top];
		if (DL_UNLIKELY(!dl_pg_is_leaf2(p) || p->p_pad != isz || p->p_lower < DL_PAGEHDR ||
		    p->p_lower > p->p_upper || p->p_upper > txn->t_env->e_psize))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		size_t fit = dl_pg_room(p) / isz;
		if (fit) {
			size_t t = fit < n - i ? fit : n - i;
			unsigned nk = dl_pg_nkeys(p);
			memcpy((char *)p + DL_PAGEHDR + (size_t)nk * isz, vals + i * isz, t * isz);
			/* as t calls of dlmdb_pg_add_leaf2 at the end */
			p->p_lower = (uint16_t)(p->p_lower + t * sizeof(indx_t));
			p->p_upper = (uint16_t)(p->p_upper + t * sizeof(indx_t) - t * isz);
			xc->c_db->d_entries += t;
			dlmdb_count_bump(xc, (int64_t)t, (int64_t)t);
			xc->c_ki[xc->c_top] = (indx_t)(nk + t - 1);
			xc->c_flags = DL_C_INIT;
			i += t;
			*done = i;
			continue;
		}
		MDB_val v = {isz, (void *)(vals + i * isz)};
		if ((rc = dlmdb_tree_put(xc, &v, &empty, split)))
			return rc;
		*done = ++i;
		/* the put left xc on v, in the last leaf; its path is ours */
		if ((rc = dlmdb_cursor_touch(xc)))
			return rc;
	}
	txn->t_gen++;
	return 0;
}

/* dup_append_run: these values take single puts */
#define DL_MULTI_SINGLE (-1)

/*
 * Store n values (isz bytes each, ascending, all above the last value of
 * key k, which exists) in one go: a sub-page rebuilt once when they all
 * fit in one, else the sub-tree (made from the values there are first,
 * as the put that outgrows the sub-page makes it) filled leaf by leaf.
 * The result is the one n single puts with these flags leave.  *done:
 * the values stored.
 */
static int dup_append_run(MDB_cursor *mc, MDB_val *k, const char *vals, size_t n, unsigned isz,
	unsigned flags, size_t *done)
{
	MDB_txn *txn = mc->c_txn;
	MDB_env *env = txn->t_env;
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	unsigned split = (flags & MDB_APPENDDUP) ? MDB_APPEND : 0;
	int rc, exact = 0;
	*done = 0;
	/* the key again: the cursor may have been moved by a fix-up */
	if ((rc = dlmdb_search_root(mc, k, DL_SEARCH_KEY)))
		return rc == MDB_NOTFOUND ? DL_TXN_FAIL(txn, MDB_PROBLEM) : rc;
	mc->c_ki[mc->c_top] = (indx_t)dlmdb_node_find(mc, mc->c_pg[mc->c_top], k, &exact);
	if (exact <= 0)
		return DL_TXN_FAIL(txn, exact < 0 ? MDB_CORRUPTED : MDB_PROBLEM);
	dl_node *nd = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
	if ((nd->n_flags & (DL_N_DUP | DL_N_TREE)) == (DL_N_DUP | DL_N_TREE)) {
		if ((rc = dlmdb_dup_setup(mc)))
			return rc == MDB_NOTFOUND ? DL_TXN_FAIL(txn, MDB_CORRUPTED) : rc;
		if (!(x->x_db.d_flags & MDB_DUPFIXED))
			return DL_MULTI_SINGLE;	/* not our layout: single puts */
		if (x->x_db.d_pad != isz)
			return MDB_BAD_VALSIZE;
		dlmdb_txn_changed(txn, mc);
		if ((rc = dlmdb_cursor_touch(mc)))
			return rc;
		rc = leaf2_append(xc, vals, n, isz, split, done);
		/* what went in is recorded, also after a failure */
		nd = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
		memcpy(dl_node_data(nd), &x->x_db, sizeof x->x_db);
		mc->c_db->d_entries += *done;
		dlmdb_count_bump(mc, (int64_t)*done, 0);
		mc->c_flags = DL_C_INIT;
		txn->t_gen++;
		if (rc)
			return rc;
	} else {
		unsigned vcap, m = 0;
		MDB_val *old = vals_buf(txn, &vcap);
		char *buf = scratch(txn, 3);
		if (!old || !buf)
			return ENOMEM;
		if ((rc = gather(mc, old, &m, vcap)))
			return rc;
		if (old[0].mv_size != isz)
			return MDB_BAD_VALSIZE;
		if (DL_NODEHDR + k->mv_size + leaf2_subpage_bytes(m + n, isz) <= dl_db_nodemax(env, mc->c_db)) {
			/* (m + n values in a sub-page: fewer than vcap) */
			for (size_t i = 0; i < n; i++) {
				old[m + i].mv_size = isz;
				old[m + i].mv_data = (void *)(vals + i * isz);
			}
			sp_plan pl = {0, {NULL, 0}};
			size_t sz = subpage_size(txn, old, (unsigned)(m + n), isz, &pl);
			subpage_build(txn, buf, old, (unsigned)(m + n), sz, isz, &pl);
			MDB_val sub = {sz, buf};
			dlmdb_txn_changed(txn, mc);
			if ((rc = dlmdb_tree_put(mc, k, &sub, DL_PUT_DUP)))
				return rc;
			subpage_stamp(mc);
		} else {
			/* a sub-tree: as in dlmdb_dup_put, then the rest appended */
			dlmdb_txn_changed(txn, mc);
			dlmdb_cursor_setup(xc, txn, mc->c_dbi);
			memset(&x->x_db, 0, sizeof x->x_db);
			x->x_db.d_root = DL_NO_PAGE;
			x->x_db.d_pad = isz;
			x->x_db.d_flags = (uint16_t)(MDB_DUPFIXED | (mc->c_db->d_flags & MDB_COUNTED) |
				((mc->c_db->d_flags & MDB_INTEGERDUP) ? MDB_INTEGERKEY : 0));
			x->x_dbx.x_cmp = dcmp_of(mc);
			xc->c_db = &x->x_db;
			xc->c_dbx = &x->x_dbx;
			xc->c_owner = mc;
			MDB_val empty = {0, NULL};
			for (unsigned i = 0; i < m; i++) {
				MDB_val v = old[i];
				if ((rc = dlmdb_tree_put(xc, &v, &empty, MDB_APPEND)))
					return DL_TXN_FAIL(txn, rc);
			}
			/* a failure leaves the new sub-tree unlinked: the txn is done */
			if ((rc = leaf2_append(xc, vals, n, isz, split, done)))
				return DL_TXN_FAIL(txn, rc);
			dl_dbrec rec = x->x_db;
			MDB_val recv = {sizeof rec, &rec};
			if ((rc = dlmdb_tree_put(mc, k, &recv, DL_PUT_DUP | DL_PUT_TREE))) {
				*done = 0;
				return DL_TXN_FAIL(txn, rc);
			}
		}
		*done = n;
		mc->c_db->d_entries += n;
	}
	/* as after the last single put: on that value */
	MDB_val lastv = {isz, (void *)(vals + (n - 1) * isz)};
	return x_locate(mc, &lastv);
}

/* How many of the n items at it (isz bytes each, n >= 1) ascend strictly
 * under dcmp from the first; the common orders without a call per item. */
static size_t ascending_run(MDB_cmp_func *dcmp, const char *it, size_t n, size_t isz)
{
	size_t r = 1;
	if (dcmp == dlmdb_cmp_for(0) && isz == 8) {
		uint64_t prev = dl_key_u64(it, 1), cur;
		for (; r < n; r++, prev = cur) {
			cur = dl_key_u64(it + r * 8, 1);
			if (cur <= prev)
				break;
		}
	} else if (dcmp == dlmdb_cmp_for(0)) {
		/* equal sizes: memcmp's sign is the byte order */
		while (r < n && memcmp(it + r * isz, it + (r - 1) * isz, isz) > 0)
			r++;
	} else if (dcmp == dlmdb_cmp_for(MDB_INTEGERKEY) && (isz == 8 || isz == 4)) {
		for (; r < n; r++) {
			uint64_t a = 0, b = 0;
			if (isz == 8) {
				memcpy(&a, it + (r - 1) * 8, 8);
				memcpy(&b, it + r * 8, 8);
			} else {
				uint32_t x, y;
				memcpy(&x, it + (r - 1) * 4, 4);
				memcpy(&y, it + r * 4, 4);
				a = x;
				b = y;
			}
			if (b <= a)
				break;
		}
	} else {
		for (; r < n; r++) {
			MDB_val a = {isz, (void *)(it + (r - 1) * isz)}, b = {isz, (void *)(it + r * isz)};
			if (dcmp(&b, &a) <= 0)
				break;
		}
	}
	return r;
}

/* MDB_MULTIPLE items are copied into a buffer of this size before a run
 * of them is stored (they may be a view of a page the put edits) */
#define DL_MULTI_CHUNK 4096u

/*
 * MDB_MULTIPLE put (DUPFIXED): data[0] holds the item size and the first
 * item, data[1].mv_size the item count, and on return the number stored.
 * As in LMDB the items go in as single puts would, in order, stopping at
 * the first failure, except that only the first one looks at the key
 * (NOOVERWRITE, APPEND); data[0].mv_data is left at the last item tried.
 * Runs of ascending items above the key's last value (bulk loads) are
 * stored page-wise (dup_append_run); any other item takes a single put.
 * Unlike LMDB 0.9.33, an item equal to a key's only value does not end the
 * put early (a stock bug: internal/difftest/stockdup_test.go, bug 4).
 */
static int dup_put_multiple(MDB_cursor *mc, MDB_val *key, MDB_val *data, unsigned flags)
{
	size_t isz = data[0].mv_size, count = data[1].mv_size, done = 0;
	const char *src = data[0].mv_data;
	int rc;
	data[1].mv_size = 0;
	if (!(mc->c_db->d_flags & MDB_DUPFIXED))
		return MDB_INCOMPATIBLE;
	if (isz > DL_MAXKEY)
		return MDB_BAD_VALSIZE;
	if (count == 0)
		count = 1;	/* as LMDB: the first item is always put */
	unsigned char keybuf[DL_MAXKEY + 1], lastbuf[DL_MAXKEY + 1];
	memcpy(keybuf, key->mv_data, key->mv_size);
	MDB_val k = {key->mv_size, keybuf}, kk = k;
	MDB_val item = {isz, (void *)src};
	if ((rc = dlmdb_dup_put(mc, &kk, &item, flags))) {
		data[0] = item;	/* NOOVERWRITE: the value there is */
		return rc;
	}
	done = 1;
	if ((flags & MDB_CURRENT) || isz == 0) {
		/* (rare) item by item, each replacing the current value */
		for (; done < count; done++) {
			kk = k;
			item.mv_size = isz;
			item.mv_data = (void *)(src + done * isz);
			if ((rc = dlmdb_dup_put(mc, &kk, &item, flags)))
				break;
		}
		goto out;
	}
	flags &= ~(MDB_NOOVERWRITE | MDB_APPEND);
	MDB_cmp_func *dcmp = dcmp_of(mc);
	MDB_val last;
	if (count > 1) {
		if ((rc = node_value_edge(mc, &last, 1)))
			goto out;
		if (last.mv_size != isz) {
			rc = DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
			goto out;
		}
		memcpy(lastbuf, last.mv_data, isz);
		last.mv_data = lastbuf;
	}
	unsigned char chunk[DL_MULTI_CHUNK];
	size_t per = DL_MULTI_CHUNK / isz;
	while (done < count) {
		const char *it = src + done * isz;
		MDB_val v = {isz, (void *)it};
		size_t r = 0;
		if (dcmp(&v, &last) > 0) {
			/* a run of ascending items above the key's last value */
			size_t lim = count - done < per ? count - done : per;
			r = ascending_run(dcmp, it, lim, isz);
		}
		if (r < 2) {
			kk = k;
			item = v;
			if ((rc = dlmdb_dup_put(mc, &kk, &item, flags)))
				break;
			if (r == 1)
				memcpy(lastbuf, it, isz);
			done++;
			continue;
		}
		memcpy(chunk, it, r * isz);
		size_t got = 0;
		rc = dup_append_run(mc, &k, (const char *)chunk, r, (unsigned)isz, flags, &got);
		if (rc == DL_MULTI_SINGLE) {
			per = 1;	/* from here on item by item */
			continue;
		}
		done += got;
		if (got)
			memcpy(lastbuf, chunk + (got - 1) * isz, isz);
		if (rc)
			break;
	}
out:
	data[1].mv_size = done;
	data[0].mv_data = (void *)(src + (done < count ? done : count - 1) * isz);
	return rc;
}

/* Delete the whole node under mc (every value of its key). */
static int del_node(MDB_cursor *mc)
{
	MDB_txn *txn = mc->c_txn;
	dl_node *n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
	uint64_t count = 1;
	int rc;
	/* other cursors note their places before any page goes away */
	dlmdb_txn_changed(txn, mc);
	if (n->n_flags & DL_N_DUP) {
		if ((rc = dlmdb_dup_setup(mc)))
			return rc;
		count = mc->c_sub->x_db.d_entries;
		if (n->n_flags & DL_N_TREE) {
			dl_dbrec rec = mc->c_sub->x_db;
			if ((rc = dlmdb_tree_free_all(txn, &rec)))
				return DL_TXN_FAIL(txn, rc);
		}
	}
	mc->c_sub->x_c.c_flags = 0;
	if ((rc = dlmdb_tree_del_current(mc, 1)))
		return rc;
	mc->c_db->d_entries -= count - 1;
	/* as LMDB: when the successor has duplicates, the sub-cursor stands
	 * on its first one, marked deleted-before */
	if ((mc->c_flags & DL_C_INIT) && cur_is_dup(mc)) {
		if ((rc = node_value_edge(mc, NULL, 0)))
			return rc;
		mc->c_sub->x_c.c_flags |= DL_C_DEL;
	}
	return 0;
}

static int maybe_demote(MDB_cursor *mc, MDB_val *k);

/*
 * A put of a value a DUPFIXED sub-tree already holds, found (by xc) first
 * on a leaf that is not the tree's leftmost: LMDB rewrites that value in
 * place and, as for any write to slot 0 of a LEAF2 leaf, sets the nearest
 * separator above it to the value.  The separator can only rise (it was
 * <= the leaf's first value), so it decides where later values between
 * the two leaves go; doing the same keeps our leaves equal to LMDB's.
 */
static int leaf2_restamp(MDB_cursor *mc, const MDB_val *v)
{
	MDB_cursor *xc = &mc->c_sub->x_c;
	dl_xcur *x = mc->c_sub;
	MDB_txn *txn = mc->c_txn;
	int rc;
	if (!(x->x_db.d_flags & MDB_DUPFIXED) || xc->c_top == 0 || xc->c_ki[xc->c_top] != 0)
		return 0;
	int l = (int)xc->c_top - 1;
	while (l > 0 && xc->c_ki[l] == 0)
		l--;
	if (xc->c_ki[l] == 0)
		return 0;	/* the leftmost leaf: no separator names it */
	dl_node *sep = dl_pg_node(xc->c_pg[l], xc->c_ki[l]);
	if (sep->n_ksize != v->mv_size || !memcmp(dl_node_key(sep), v->mv_data, v->mv_size))
		return 0;
	dlmdb_txn_changed(txn, mc);
	if ((rc = dlmdb_cursor_touch(mc)) || (rc = dlmdb_cursor_touch(xc)))
		return rc;
	memcpy(dl_node_key(dl_pg_node(xc->c_pg[l], xc->c_ki[l])), v->mv_data, v->mv_size);
	dl_node *n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
	memcpy(dl_node_data(n), &x->x_db, sizeof x->x_db);
	txn->t_gen++;
	return 0;
}

int dlmdb_dup_del(MDB_cursor *mc, unsigned flags)
{
	MDB_txn *txn = mc->c_txn;
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	int rc;
	if (!(mc->c_flags & DL_C_INIT))
		return EINVAL;
	if (mc->c_depth == 0 || mc->c_ki[mc->c_top] >= dl_pg_nkeys(mc->c_pg[mc->c_top]))
		return MDB_NOTFOUND;
	if ((flags & MDB_NODUPDATA) || !cur_is_dup(mc))
		return del_node(mc);
	/* as LMDB: deleting one duplicate leaves the key cursor's flags alone
	 * (a pending deleted-before mark from an earlier delete survives) */
	unsigned keep = mc->c_flags & (DL_C_DEL | DL_C_EOF);
	if (!(xc->c_flags & DL_C_INIT)) {
		/* the cursor stands on the key (e.g. after a delete): its first value */
		if ((rc = node_value_edge(mc, NULL, 0)))
			return rc;
	}
	MDB_val dv;
	if ((rc = dlmdb_cur_fetch(xc, &dv, NULL)))
		return rc;
	unsigned char valbuf[DL_MAXKEY + 1], keybuf[DL_MAXKEY + 1];
	memcpy(valbuf, dv.mv_data, dv.mv_size);
	MDB_val d = {dv.mv_size, valbuf}, ck;
	if ((rc = dlmdb_cur_fetch(mc, &ck, NULL)))
		return rc;
	memcpy(keybuf, ck.mv_data, ck.mv_size);
	MDB_val k = {ck.mv_size, keybuf};
	dl_node *n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
	if (n->n_flags & DL_N_TREE) {
		if (x->x_db.d_entries <= 1)
			return del_node(mc);
		dlmdb_txn_changed(txn, mc);
		if ((rc = dlmdb_cursor_touch(mc)))
			return rc;
		if ((rc = (flags & DL_DEL_DISCARD) ? dlmdb_tree_del_discard(xc) : dlmdb_tree_del_current(xc, 0)))
			return rc;
		n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
		memcpy(dl_node_data(n), &x->x_db, sizeof x->x_db);
		mc->c_db->d_entries--;
		dlmdb_count_bump(mc, -1, 0);
		txn->t_gen++;
		if (!(flags & DL_DEL_KEEPTREE) && (rc = maybe_demote(mc, &k)))
			return rc;
		mc->c_flags |= keep;
		return 0;
	}
	char *buf = scratch(txn, 3);
	if (!buf)
		return ENOMEM;
	size_t sz = 0;
	dl_page *isp = xc->c_inline;
	if (dl_dup_prefix(mc) && isp && xc->c_depth == 1 && xc->c_ki[0] < dl_pg_nkeys(isp) &&
	    dl_pg_nkeys(isp) > 1 && sp_nodes_ok(isp, xc->c_bound)) {
		/* a compressed sub-page loses the value in place */
		sz = sp_remove(isp, xc->c_bound, xc->c_ki[0], buf);
	} else {
		unsigned vcap;
		MDB_val *vals = vals_buf(txn, &vcap);
		if (!vals)
			return ENOMEM;
		unsigned m = 0, j = 0;
		if ((rc = gather(mc, vals, &m, vcap)))
			goto out;
		if (m <= 1)
			return del_node(mc);
		MDB_cmp_func *dcmp = dcmp_of(mc);
		for (unsigned i = 0; i < m; i++)
			if (dcmp(&vals[i], &d) != 0)
				vals[j++] = vals[i];
		unsigned fixed = (mc->c_db->d_flags & MDB_DUPFIXED) ? (unsigned)d.mv_size : 0;
		sp_plan pl = {dl_dup_prefix(mc), {NULL, 0}};
		sz = subpage_size(txn, vals, j, fixed, &pl);
		if (!sz) {
			rc = ENOMEM;
			goto out;
		}
		subpage_build(txn, buf, vals, j, sz, fixed, &pl);
	}
	MDB_val sub = {sz, buf};
	dlmdb_txn_changed(txn, mc);
	if ((rc = dlmdb_tree_put(mc, &k, &sub, DL_PUT_DUP)))
		goto out;
	subpage_stamp(mc);
	mc->c_db->d_entries--;
	/* the sub-cursor now stands before the deleted value's successor */
	if ((rc = dlmdb_dup_setup(mc)))
		goto out;
	memcpy(xc->c_saved, valbuf, d.mv_size);
	xc->c_savedlen = d.mv_size;
	xc->c_flags = DL_C_INIT | DL_C_SAVED;
	rc = dlmdb_cursor_revalidate(xc);
	if (!rc)
		mc->c_flags |= keep;
out:
	return rc;
}

/*
 * Demotion (FORMAT.md, "When duplicates move").  Promotion happens when the
 * node holding a sub-page would exceed nodemax; the way back is taken only
 * when a delete leaves the sub-tree a single leaf whose values make a node
 * of at most nodemax / 2 bytes (8 + key + exact sub-page size).  The gap
 * between the two thresholds (about nodemax / 2 bytes of values) means a
 * put/delete pair at either boundary never moves the values back and forth.
 * The counters below are for tests only (not in lmdb.h).
 */
static unsigned long long demotions;
static int demote_off;
unsigned long long dlmdb_debug_demotions(void);
void dlmdb_debug_demote_enable(int on);
unsigned long long dlmdb_debug_demotions(void)
{
	return __atomic_load_n(&demotions, __ATOMIC_RELAXED);
}
void dlmdb_debug_demote_enable(int on)
{
	__atomic_store_n(&demote_off, !on, __ATOMIC_RELAXED);
}

/* Node size the values of one-leaf page lp (in vals) would make inline
 * under a key of ksize bytes (0 if lp is not a plain or LEAF2 leaf, or a
 * node of it lies outside the page). */
static size_t inline_node_size(MDB_txn *txn, const dl_page *lp, size_t ksize, unsigned bound,
	MDB_val *vals, sp_plan *pl)
{
	unsigned n = dl_pg_nkeys(lp);
	if (!dl_pg_is_leaf(lp) || n == 0)
		return 0;
	if (dl_pg_is_leaf2(lp))
		return DL_NODEHDR + ksize + leaf2_subpage_bytes(n, lp->p_pad);
	for (unsigned i = 0; i < n; i++)
		if (!dl_node_in_page(lp, i, bound))
			return 0;
	if (page_values(txn, lp, vals))
		return 0;
	size_t sz = subpage_size(txn, vals, n, 0, pl);
	return sz ? DL_NODEHDR + ksize + sz : 0;
}

/*
 * After a duplicate was deleted from the sub-tree of the node under mc (key
 * k): if the sub-tree is down to one small leaf, put its values back into
 * an inline sub-page and free the leaf.  The sub-cursor keeps its place: a
 * one-leaf tree and a sub-page list the same values in the same order, so
 * its index and its DEL/EOF marks carry over unchanged.  Other cursors were
 * saved by key and value before the delete and re-seek into the sub-page.
 */
static int maybe_demote(MDB_cursor *mc, MDB_val *k)
{
	MDB_txn *txn = mc->c_txn;
	MDB_env *env = txn->t_env;
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	dl_page *lp;
	int rc;
	if (x->x_db.d_depth != 1 || x->x_db.d_root == DL_NO_PAGE ||
	    __atomic_load_n(&demote_off, __ATOMIC_RELAXED))
		return 0;
	if ((rc = dlmdb_page_get(txn, x->x_db.d_root, &lp)))
		return DL_TXN_FAIL(txn, rc);
	unsigned vcap, m = dl_pg_nkeys(lp);
	MDB_val *vals = vals_buf(txn, &vcap);
	char *buf = scratch(txn, 3);
	if (!vals || !buf || m > vcap)
		return 0;	/* the delete is done; the move is optional */
	sp_plan pl = {dl_dup_prefix(mc), {NULL, 0}};
	size_t nsz = inline_node_size(txn, lp, k->mv_size, env->e_psize, vals, &pl);
	if (nsz == 0 || nsz > dl_db_nodemax(env, mc->c_db) / 2)
		return 0;
	unsigned fixed = dl_pg_is_leaf2(lp) ? lp->p_pad : 0;
	if (((x->x_db.d_flags & MDB_DUPFIXED) != 0) != (fixed != 0))
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	for (unsigned i = 0; fixed && i < m; i++)
		dlmdb_node_keyval(lp, i, &vals[i], NULL);	/* LEAF2: in place */
	size_t sz = nsz - DL_NODEHDR - k->mv_size;
	/* the image must exist before the leaf (maybe our dirty copy) goes */
	subpage_build(txn, buf, vals, m, sz, fixed, &pl);
	unsigned xflags = (xc->c_flags & DL_C_INIT) && xc->c_depth == 1
		? xc->c_flags & (DL_C_INIT | DL_C_DEL | DL_C_EOF) : 0;
	unsigned xki = xflags ? xc->c_ki[0] : 0;
	pgno_t leafpg = lp->p_pgno;
	/* the sub-tree's page counts live in its record, which goes away with
	 * it; the main DB's counts and entries do not change (a failed put
	 * marks the txn failed, so the half-done move is never committed) */
	MDB_val sub = {sz, buf};
	xc->c_flags = 0;
	if ((rc = dlmdb_tree_put(mc, k, &sub, DL_PUT_DUP)))
		return rc;
	subpage_stamp(mc);
	if ((rc = dlmdb_page_free(txn, leafpg, 1)))
		return DL_TXN_FAIL(txn, rc);
	if ((rc = dlmdb_dup_setup(mc)))
		return rc == MDB_NOTFOUND ? DL_TXN_FAIL(txn, MDB_PROBLEM) : rc;
	if (xflags) {
		xc->c_pg[0] = xc->c_inline;
		xc->c_ki[0] = (indx_t)xki;
		xc->c_depth = 1;
		xc->c_top = 0;
		xc->c_flags = xflags;
	}
	__atomic_add_fetch(&demotions, 1, __ATOMIC_RELAXED);
	return 0;
}

/* mdb_del with a value on a DUPSORT DB: remove just that pair (mc is
 * mdb_del's own cursor, discarded after). */
int dlmdb_dup_del_pair(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
	MDB_val k = *key, d = *data;
	int rc = dlmdb_dup_get(mc, &k, &d, MDB_GET_BOTH);
	if (rc)
		return rc;
	return dlmdb_dup_del(mc, DL_DEL_DISCARD);
}
