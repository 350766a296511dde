/*
 * cursor.c - cursor life cycle, movement and the read API (mdb_get).
 *
 * A cursor is a root-to-leaf stack of (page, index).  Write operations in a
 * transaction may replace pages, so before any change every other open
 * cursor of the transaction copies its current key into c_saved and sets
 * DL_C_SAVED; its next operation re-seeks by that key (dlmdb_cursor_revalidate).
 * A cursor whose item was deleted keeps DL_C_DEL and the deleted key: it then
 * stands "between" items, in front of the deleted key's successor.
 */
#include "internal.h"

void dlmdb_cursor_setup(MDB_cursor *mc, MDB_txn *txn, MDB_dbi dbi)
{
	mc->c_txn = txn;
	mc->c_dbi = dbi;
	mc->c_flags = 0;
	mc->c_db = &txn->t_dbs[dbi];
	mc->c_dbx = &txn->t_env->e_dbx[dbi];
	mc->c_next = NULL;
	mc->c_sub = NULL;
	mc->c_owner = NULL;
	mc->c_inline = NULL;
	mc->c_bound = txn->t_env->e_psize;
	mc->c_tracked = 0;
	mc->c_gen = 0;
	mc->c_top = 0;
	mc->c_depth = 0;
	mc->c_far = 0;
	mc->c_tmask = 0;
	mc->c_savedlen = 0;
	mc->c_rkleaf = NULL;
	mc->c_rkdepth = 0;
	mc->c_kpage = NULL;
}

void dlmdb_cursor_save(MDB_cursor *mc)
{
	if (!(mc->c_flags & DL_C_INIT) || (mc->c_flags & DL_C_SAVED))
		return;
	if (mc->c_depth == 0) {
		mc->c_flags = 0;
		return;
	}
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned i = mc->c_ki[mc->c_top], n = dl_pg_nkeys(p);
	if (n == 0) {
		mc->c_flags = 0;
		return;
	}
	if (i >= n) {
		/* past the end of its leaf: remember the last key there */
		i = n - 1;
		mc->c_flags |= DL_C_PAST;
	}
	MDB_val k;
	unsigned char kb[DL_MAXKEY];
	/* a damaged page (this cursor may stand on one no write has checked
	 * yet) must not overrun c_saved: such a cursor cannot be re-seeked,
	 * and the txn fails as for any corrupt page it meets */
	if (!dl_pg_is_leaf2(p) && !dl_node_in_page(p, i, mc->c_bound)) {
		mc->c_flags = 0;
		dl_txn_fail(mc->c_txn, MDB_CORRUPTED);
		return;
	}
	dlmdb_node_keyval(p, i, &k, kb);
	if (k.mv_size > DL_MAXKEY) {
		mc->c_flags = 0;
		dl_txn_fail(mc->c_txn, MDB_CORRUPTED);
		return;
	}
	memcpy(mc->c_saved, k.mv_data, k.mv_size);
	mc->c_savedlen = k.mv_size;
	mc->c_flags |= DL_C_SAVED;
	if (mc->c_sub) {
		MDB_cursor *xc = &mc->c_sub->x_c;
		dl_node *n = dl_pg_is_leaf2(p) ? NULL : dl_pg_node(p, i);
		if (n && !(mc->c_flags & (DL_C_PAST | DL_C_DEL)) && !(n->n_flags & (DL_N_DUP | DL_N_BIG)) &&
		    dl_node_dsize(n) <= DL_MAXKEY &&
		    dl_pg_slot(p, i) + DL_NODEHDR + n->n_ksize + dl_node_dsize(n) <= mc->c_bound) {
			/* a single value: if the key gains duplicates meanwhile, LMDB
			 * leaves the cursor on this (old) value */
			memcpy(xc->c_saved, dl_node_data(n), dl_node_dsize(n));
			xc->c_savedlen = dl_node_dsize(n);
			xc->c_flags = DL_C_INIT | DL_C_SAVED;
		} else {
			dlmdb_cursor_save(xc);
		}
	}
}

/* Key i of leaf p: a node checked to lie inside the page, or a LEAF2 key
 * (the page's checks bounded those); 0 if the node is outside. */
static inline int leaf_key(const MDB_cursor *mc, const dl_page *p, unsigned i, MDB_val *k,
	unsigned char *buf)
{
	if (dl_pg_is_leaf2(p)) {
		k->mv_size = p->p_pad;
		k->mv_data = dl_pg_leaf2_key(p, i);
		return 1;
	}
	if (!dl_node_in_page(p, i, mc->c_bound))
		return 0;
	dl_leaf_key(p, dl_pg_node(p, i), k, buf);
	return 1;
}

/* Do leaves below and above lie on either side of separator sep: the last
 * key of below under it, the first key of above not?  (search.c,
 * dlmdb_leaf_in_bounds, says why.)  A leaf without keys has no edge. */
static inline __attribute__((always_inline)) int leaves_straddle(const MDB_cursor *mc,
	const dl_page *below, const dl_page *above, const MDB_val *sep)
{
	MDB_cmp_func *cmp = mc->c_dbx->x_cmp;
	unsigned n = dl_pg_nkeys(below);
	MDB_val k;
	unsigned char kb[DL_MAXKEY];
	/* the common DUPFIXED walk: 8-byte values under the byte or native
	 * order, compared as integers in place */
	int order;
	if (sep->mv_size == 8 && dl_pg_is_leaf2(below) && dl_pg_is_leaf2(above) && below->p_pad == 8 &&
	    above->p_pad == 8 && (order = dlmdb_cmp_u64(cmp))) {
		uint64_t s = dl_key_u64(sep->mv_data, order);
		if (n && dl_key_u64(dl_pg_leaf2_key(below, n - 1), order) >= s)
			return 0;
		if (dl_pg_nkeys(above) && dl_key_u64(dl_pg_leaf2_key(above, 0), order) < s)
			return 0;
		return 1;
	}
	if (n && (!leaf_key(mc, below, n - 1, &k, kb) || cmp(&k, sep) >= 0))
		return 0;
	if (dl_pg_nkeys(above) && (!leaf_key(mc, above, 0, &k, kb) || cmp(&k, sep) < 0))
		return 0;
	return 1;
}

/* Move the stack to the first (dir > 0) or last item of the adjacent leaf.
 * On MDB_NOTFOUND the stack is unchanged. */
int dlmdb_cur_step_leaf(MDB_cursor *mc, int dir)
{
	int l;
	for (l = (int)mc->c_top - 1; l >= 0; l--) {
		unsigned n = dl_pg_nkeys(mc->c_pg[l]);
		if (dir > 0 ? mc->c_ki[l] + 1u < n : mc->c_ki[l] > 0)
			break;
	}
	if (l < 0)
		return MDB_NOTFOUND;
	/* the leaf we leave and the one we enter lie on either side of one
	 * separator: the key of the node we turn into at level l (forward) or
	 * of the one we turn away from (backward) */
	dl_page *from = mc->c_pg[mc->c_top];
	unsigned sep = dir > 0 ? mc->c_ki[l] + 1u : mc->c_ki[l];
	mc->c_ki[l] = (indx_t)(mc->c_ki[l] + dir);
	for (unsigned lvl = (unsigned)l + 1; lvl <= mc->c_top; lvl++) {
		dl_page *parent = mc->c_pg[lvl - 1], *p;
		if (!dl_node_in_page(parent, mc->c_ki[lvl - 1], mc->c_bound))
			return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
		int rc = dlmdb_page_get(mc->c_txn, dl_node_child(dl_pg_node(parent, mc->c_ki[lvl - 1])), &p);
		if (rc)
			return DL_TXN_FAIL(mc->c_txn, rc);
		/* the checks dlmdb_search_root makes on the way down (a lower
		 * below the header would make nkeys wrap to ~2^31; a LEAF2
		 * page's values must fit in it) */
		if (p->p_lower < DL_PAGEHDR)
			return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
		unsigned n = dl_pg_nkeys(p);
		if (n == 0 || !(p->p_flags & (DL_P_LEAF | DL_P_BRANCH)) || p->p_lower > p->p_upper ||
		    p->p_upper > mc->c_bound || !dl_pg_prefix_ok(p, mc->c_db) ||
		    !(p->p_flags & (lvl == mc->c_top ? DL_P_LEAF : DL_P_BRANCH)))
			return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
		if (dl_pg_is_leaf2(p) && (!p->p_pad || p->p_pad > DL_MAXKEY ||
		    DL_PAGEHDR + (size_t)n * p->p_pad > mc->c_bound ||
		    !mc->c_owner || !(mc->c_db->d_flags & MDB_DUPFIXED)))
			return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
		mc->c_pg[lvl] = p;
		mc->c_ki[lvl] = (indx_t)(dir > 0 ? 0 : n - 1);
	}
	/* a walk's keys stay in order across the two leaves, and each agrees
	 * with the separator a lookup would follow: two compares per leaf */
	const dl_page *sp = mc->c_pg[l], *to = mc->c_pg[mc->c_top];
	MDB_val sk;
	if (!dl_node_in_page(sp, sep, mc->c_bound))
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	sk.mv_size = dl_pg_node(sp, sep)->n_ksize;
	sk.mv_data = dl_node_key(dl_pg_node(sp, sep));
	if (!(dir > 0 ? leaves_straddle(mc, from, to, &sk) : leaves_straddle(mc, to, from, &sk)))
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	return 0;
}

/* After the main cursor found its key again, re-aim its duplicate cursor. */
static int revalidate_sub(MDB_cursor *mc)
{
	MDB_cursor *xc = &mc->c_sub->x_c;
	unsigned xf = xc->c_flags;
	size_t xlen = xc->c_savedlen;
	int rc = dlmdb_dup_setup(mc);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (!(xf & DL_C_SAVED)) {
		/* the key just gained duplicates: like LMDB, stand on the first */
		MDB_val v;
		return dlmdb_cur_first(xc, &v, NULL);
	}
	xc->c_flags = xf;
	xc->c_savedlen = xlen;
	return dlmdb_cursor_revalidate(xc);
}

/* Re-seek a cursor whose pages may have changed since it was positioned. */
int dlmdb_cursor_revalidate(MDB_cursor *mc)
{
	if (!(mc->c_flags & DL_C_SAVED))
		return 0;
	unsigned keep = mc->c_flags & (DL_C_DEL | DL_C_EOF | DL_C_PAST);
	MDB_val k = {mc->c_savedlen, mc->c_saved};
	int rc = dlmdb_search_root(mc, &k, DL_SEARCH_KEY);
	if (rc == MDB_NOTFOUND) {
		mc->c_flags = 0;
		return 0;
	}
	if (rc)
		return rc;
	int exact;
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned i = dlmdb_node_find(mc, p, &k, &exact);
	if (exact < 0)
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	mc->c_ki[mc->c_top] = (indx_t)i;
	if (keep & DL_C_PAST) {
		/* it stood past the end of that key's leaf; like LMDB's index
		 * arithmetic, keys added at the end of the leaf stay before it */
		mc->c_ki[mc->c_top] = (indx_t)dl_pg_nkeys(p);
		mc->c_flags = DL_C_INIT | (keep & (DL_C_EOF | DL_C_DEL));
		return 0;
	}
	if (exact) {
		mc->c_flags = DL_C_INIT | (keep & (DL_C_EOF | DL_C_DEL));
		if (mc->c_sub)
			return revalidate_sub(mc);
		return 0;
	}
	if (mc->c_sub)
		mc->c_sub->x_c.c_flags = 0;
	/* the item it stood on is gone: it now stands before the successor
	 * (an EOF mark survives, as in LMDB) */
	mc->c_flags = DL_C_INIT | DL_C_DEL | (keep & DL_C_EOF);
	if (i >= dl_pg_nkeys(p) && dlmdb_cur_step_leaf(mc, 1) != 0) {
		mc->c_ki[mc->c_top] = (indx_t)dl_pg_nkeys(p);
		mc->c_flags |= DL_C_EOF;
		return 0;
	}
	if (mc->c_sub && dlmdb_dup_setup(mc) == 0) {
		/* as LMDB: the successor's duplicates start deleted-before */
		MDB_val v;
		if ((rc = dlmdb_cur_first(&mc->c_sub->x_c, &v, NULL)))
			return rc;
		mc->c_sub->x_c.c_flags |= DL_C_DEL;
	}
	return 0;
}

/* Return key/data of the item under the cursor. */
int dlmdb_cur_fetch(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned i = mc->c_ki[mc->c_top];
	if (i >= dl_pg_nkeys(p))
		return MDB_NOTFOUND;
	if (DL_UNLIKELY(dl_pg_is_leaf2(p))) {
		/* values of DUPFIXED duplicates: a sub-cursor reads keys only */
		if (data && !mc->c_owner)
			return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
		if (key)
			dlmdb_node_keyval(p, i, key, mc->c_kbuf);
		return 0;
	}
	/* the node, its key and its value (or a big value's page number)
	 * must lie inside the page before anything is read through them */
	unsigned bound = dl_pg_node_lim(p, mc->c_bound), off = dl_pg_slot(p, i);
	if (DL_UNLIKELY(off < p->p_upper || off + DL_NODEHDR > bound))
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	dl_node *n = (dl_node *)((char *)p + off);
	int big = (n->n_flags & DL_N_BIG) != 0;
	size_t dsize = dl_node_dsize(n);
	/* no key is longer than DL_MAXKEY: callers copy keys into buffers
	 * of that size (c_saved, the write paths' key buffers) */
	if (DL_UNLIKELY(off + DL_NODEHDR + n->n_ksize + (big ? sizeof(pgno_t) : dsize) > bound ||
	    n->n_ksize > DL_MAXKEY))
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	if (dl_pg_prefix(p)) {
		/* the shared length and the anchor matter only to the key: a
		 * fetch of the value alone (mdb_get) reads neither */
		if (key) {
			if (DL_UNLIKELY(!dl_cur_node_ok(mc, p, n)))
				return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
			dl_cur_key(mc, p, n, key);
		}
	} else if (key) {
		key->mv_size = n->n_ksize;
		key->mv_data = dl_node_key(n);
	}
	if (!data)
		return 0;
	if (n->n_flags & DL_N_DUP)
		return MDB_INCOMPATIBLE;
	if (!big) {
		data->mv_size = dsize;
		data->mv_data = dl_node_data(n);
		return 0;
	}
	int rc = dlmdb_node_value(mc->c_txn, n, data);
	return rc ? DL_TXN_FAIL(mc->c_txn, rc) : 0;
}

int dlmdb_cur_first(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
	int rc = dlmdb_search_root(mc, NULL, DL_SEARCH_FIRST);
	if (rc)
		return rc;
	return dlmdb_cur_fetch(mc, key, data);
}

int dlmdb_cur_last(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
	int rc = dlmdb_search_root(mc, NULL, DL_SEARCH_LAST);
	if (rc)
		return rc;
	/* as LMDB: LAST sets the EOF mark (it survives a delete, so NEXT
	 * then still reports the end of this page) */
	mc->c_flags |= DL_C_EOF;
	return dlmdb_cur_fetch(mc, key, data);
}

int dlmdb_cur_next(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
	if ((mc->c_flags & DL_C_DEL) && op == MDB_NEXT_DUP)
		return MDB_NOTFOUND;
	if (!(mc->c_flags & DL_C_INIT) || mc->c_depth == 0)
		return dlmdb_cur_first(mc, key, data);
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned n = dl_pg_nkeys(p);
	if (mc->c_flags & DL_C_EOF) {
		/* items may have been added behind the end since */
		if (mc->c_ki[mc->c_top] + 1u >= n)
			return MDB_NOTFOUND;
		mc->c_flags &= ~DL_C_EOF;
	}
	if (mc->c_flags & DL_C_DEL) {
		mc->c_flags &= ~DL_C_DEL;
		if (mc->c_ki[mc->c_top] < n)
			return dlmdb_cur_fetch(mc, key, data);
		mc->c_flags |= DL_C_EOF;
		return MDB_NOTFOUND;
	}
	if (mc->c_ki[mc->c_top] + 1u < n) {
		mc->c_ki[mc->c_top]++;
	} else {
		int rc = dlmdb_cur_step_leaf(mc, 1);
		if (rc) {
			if (rc == MDB_NOTFOUND)
				mc->c_flags |= DL_C_EOF;
			return rc;
		}
	}
	return dlmdb_cur_fetch(mc, key, data);
}

int dlmdb_cur_prev(MDB_cursor *mc, MDB_val *key, MDB_val *data)
{
	if (!(mc->c_flags & DL_C_INIT) || mc->c_depth == 0) {
		int rc = dlmdb_cur_last(mc, key, data);
		mc->c_flags &= ~DL_C_EOF;	/* PREV clears it, as in LMDB */
		return rc;
	}
	mc->c_flags &= ~(DL_C_DEL | DL_C_EOF);
	if (mc->c_ki[mc->c_top] > 0) {
		mc->c_ki[mc->c_top]--;
	} else {
		int rc = dlmdb_cur_step_leaf(mc, -1);
		if (rc)
			return rc;
	}
	return dlmdb_cur_fetch(mc, key, data);
}

/*
 * LMDB answers a SET from the cursor's current page without a new search
 * when the key lies outside that page and nothing can lie beyond it (key
 * above the last key on the rightmost leaf, or below the first key of a
 * one-page tree); only then does a pending EOF mark survive the miss (a
 * search or a hit clears it).  Says whether that is the case for key.
 * (SET_RANGE takes the same shortcut for a key above the rightmost leaf:
 * its miss there leaves the mark as it was, where a search that runs off
 * the end sets it; below a one-page tree it finds the first item.)
 */
static int seek_fast_miss(MDB_cursor *mc, const MDB_val *key)
{
	if ((mc->c_flags & (DL_C_INIT | DL_C_SAVED)) != DL_C_INIT || !mc->c_depth || mc->c_owner)
		return 0;
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned n = dl_pg_nkeys(p);
	if (dl_pg_is_leaf2(p))
		return 0;
	if (n == 0)
		return 1;
	/* below the root only the rightmost leaf can answer (with the key
	 * above its last key): anywhere else no key need be compared */
	for (unsigned l = 0; l < mc->c_top; l++)
		if (mc->c_ki[l] + 1u < dl_pg_nkeys(mc->c_pg[l]))
			return 0;
	/* unchecked edge nodes: let the search meet (and report) the damage */
	if (!dl_node_in_page(p, 0, mc->c_bound) || !dl_node_in_page(p, n - 1, mc->c_bound))
		return 0;
	MDB_val edge;
	unsigned char eb[DL_MAXKEY];
	dlmdb_node_keyval(p, 0, &edge, eb);
	int c = mc->c_dbx->x_cmp(key, &edge);
	if (c <= 0)
		return c < 0 && mc->c_top == 0;
	if (n > 1) {
		dlmdb_node_keyval(p, n - 1, &edge, eb);
		if (mc->c_dbx->x_cmp(key, &edge) <= 0)
			return 0;
	}
	return 1;
}

int dlmdb_seek_keeps_eof(MDB_cursor *mc, const MDB_val *key)
{
	return (mc->c_flags & DL_C_EOF) && seek_fast_miss(mc, key);
}

/* SET, SET_KEY, SET_RANGE (and the positioning step of puts). */
int dlmdb_cursor_seek(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
	if (!key)
		return EINVAL;
	/* as LMDB: lookups check only for an empty key; a longer key than
	 * any stored one simply is not found */
	if (key->mv_size == 0)
		return MDB_BAD_VALSIZE;
	int fast = seek_fast_miss(mc, key);
	unsigned eof0 = mc->c_flags & DL_C_EOF;
	int exact;
	int rc = dlmdb_search_key(mc, key, &exact);
	if (rc)
		return rc;
	if (exact < 0)
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned i = mc->c_ki[mc->c_top];
	/* a miss, unless it moves on to the next leaf (a step, checked there):
	 * is this leaf the one the separators on its path name?  (search.c) */
	if (!exact && mc->c_top && (op != MDB_SET_RANGE || i < dl_pg_nkeys(p)) &&
	    dlmdb_leaf_check_path(mc))
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	if (op == MDB_SET_RANGE) {
		if (i >= dl_pg_nkeys(p)) {
			rc = dlmdb_cur_step_leaf(mc, 1);
			if (rc) {
				/* as LMDB: positioned past the last item, EOF set
				 * (answered from the cursor's own rightmost leaf:
				 * the mark stays as it was) */
				if (rc == MDB_NOTFOUND)
					mc->c_flags |= fast ? eof0 : DL_C_EOF;
				return rc;
			}
		}
		return dlmdb_cur_fetch(mc, key, data);
	}
	if (!exact) {
		/* as LMDB: the cursor stays at the insertion point, so PREV
		 * yields the predecessor and GET_CURRENT the successor */
		if (fast)
			mc->c_flags |= eof0;
		return MDB_NOTFOUND;
	}
	return dlmdb_cur_fetch(mc, op == MDB_SET_KEY ? key : NULL, data);
}

static int cursor_get_op(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
	int isdup = (mc->c_db->d_flags & MDB_DUPSORT) != 0;
	if (isdup && mc->c_sub)
		return dlmdb_dup_get(mc, key, data, op);
	switch (op) {
	case MDB_GET_CURRENT:
		if (!(mc->c_flags & DL_C_INIT))
			return EINVAL;
		if (mc->c_depth == 0)
			return MDB_NOTFOUND;
		return dlmdb_cur_fetch(mc, key, data);
	case MDB_GET_BOTH:
	case MDB_GET_BOTH_RANGE:
		if (!data)
			return EINVAL;
		if (!isdup)
			return MDB_INCOMPATIBLE;
		return MDB_INCOMPATIBLE;
	case MDB_SET:
	case MDB_SET_KEY:
	case MDB_SET_RANGE:
		return dlmdb_cursor_seek(mc, key, data, op);
	case MDB_GET_MULTIPLE:
		if (!data || !(mc->c_flags & DL_C_INIT))
			return EINVAL;
		return MDB_INCOMPATIBLE;
	case MDB_NEXT_MULTIPLE:
	case MDB_PREV_MULTIPLE:
		if (!data)
			return EINVAL;
		return MDB_INCOMPATIBLE;
	case MDB_NEXT:
	case MDB_NEXT_DUP:
	case MDB_NEXT_NODUP:
		return dlmdb_cur_next(mc, key, data, op);
	case MDB_PREV:
	case MDB_PREV_DUP:
	case MDB_PREV_NODUP:
		return dlmdb_cur_prev(mc, key, data);
	case MDB_FIRST:
		return dlmdb_cur_first(mc, key, data);
	case MDB_LAST:
		return dlmdb_cur_last(mc, key, data);
	case MDB_FIRST_DUP:
	case MDB_LAST_DUP:
		if (!data || !(mc->c_flags & DL_C_INIT))
			return EINVAL;
		return MDB_INCOMPATIBLE;
	default:
		return EINVAL;
	}
}

static int dl_u_cursor_get(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
	if (!mc || !mc->c_txn)
		return EINVAL;
	/* dlmdb_txn_usable(txn, 0), spelled out on this hot path */
	if (DL_UNLIKELY(mc->c_txn->t_flags & (DL_T_ERROR | DL_T_DONE | DL_T_CHILD)))
		return MDB_BAD_TXN;
	int rc;
	if ((mc->c_flags & DL_C_SAVED) && (rc = dlmdb_cursor_revalidate(mc)))
		return rc;
	/* the common step of a scan, NEXT inside the current leaf of a plain
	 * DB, goes straight to the fetch (dlmdb_cur_next does the same) */
	if (op == MDB_NEXT && (mc->c_flags & (DL_C_INIT | DL_C_EOF | DL_C_DEL)) == DL_C_INIT &&
	    mc->c_depth && !(mc->c_db->d_flags & MDB_DUPSORT) &&
	    mc->c_ki[mc->c_top] + 1u < dl_pg_nkeys(mc->c_pg[mc->c_top])) {
		mc->c_ki[mc->c_top]++;
		return dlmdb_cur_fetch(mc, key, data);
	}
	rc = cursor_get_op(mc, key, data, op);
	mc->c_flags &= ~DL_C_DEL;
	return rc;
}

static int dl_u_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)
{
	if (!txn || !key || !data)
		return EINVAL;
	int rc = dlmdb_txn_usable(txn, 0);
	if (rc)
		return rc;
	if ((rc = dlmdb_dbi_ok(txn, dbi)))
		return rc;
	if (dbi == DL_FREE_DBI)
		return EINVAL;	/* as LMDB: only cursors may read the free-page DB */
	if (txn->t_dbstate[dbi] & DL_DBS_STALE) {
		if ((rc = dlmdb_db_refresh(txn, dbi)))
			return rc;
	}
	MDB_cursor mc;
	dlmdb_cursor_setup(&mc, txn, dbi);
	if (txn->t_dbs[dbi].d_flags & MDB_DUPSORT) {
		dl_xcur x;
		x.x_buf = txn->t_scratch[2] ? txn->t_scratch[2] : (txn->t_scratch[2] = malloc(txn->t_env->e_psize));
		if (!x.x_buf)
			return ENOMEM;
		dlmdb_dup_bind(&mc, &x);
		/* a value of a compressed sub-page was decoded into storage of
		 * this call's cursor: it moves to the txn's (FORMAT.md, "Views") */
		if ((rc = dlmdb_dup_get(&mc, key, data, MDB_SET)) == 0)
			rc = dlmdb_txn_keep(txn, data, &mc, 1);
		return rc;
	}
	return dlmdb_cursor_seek(&mc, key, data, MDB_SET);
}

static int dl_u_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **out)
{
	if (!txn || !out)
		return EINVAL;
	int rc = dlmdb_txn_usable(txn, 0);
	if (rc)
		return rc;
	if ((rc = dlmdb_dbi_ok(txn, dbi)))
		return rc;
	if (dbi == DL_FREE_DBI && !(txn->t_flags & DL_T_RDONLY))
		return EINVAL;
	if (txn->t_dbstate[dbi] & DL_DBS_STALE) {
		if ((rc = dlmdb_db_refresh(txn, dbi)))
			return rc;
	}
	MDB_env *env = txn->t_env;
	size_t sz = sizeof(MDB_cursor) + sizeof(dl_xcur) + env->e_psize;
	MDB_cursor *mc = malloc(sz);
	if (!mc)
		return ENOMEM;
	dlmdb_cursor_setup(mc, txn, dbi);
	dl_xcur *x = (dl_xcur *)(mc + 1);
	x->x_buf = (char *)(x + 1);
	x->x_ld = NULL;
	mc->c_batch = NULL;
	if (txn->t_dbs[dbi].d_flags & MDB_DUPSORT)
		dlmdb_dup_bind(mc, x);
	if (!(txn->t_flags & DL_T_RDONLY)) {
		mc->c_tracked = 1;
		mc->c_next = txn->t_cursors;
		txn->t_cursors = mc;
	}
	*out = mc;
	return 0;
}

static void dl_u_cursor_close(MDB_cursor *mc)
{
	if (!mc)
		return;
	if (mc->c_tracked && mc->c_txn) {
		/* children running under its txn must not restore it later */
		for (MDB_txn *ch = mc->c_txn->t_child; ch; ch = ch->t_child)
			for (size_t i = 0; i < ch->t_ncurbak; i++)
				if (ch->t_curbak[i].b_cur == mc)
					ch->t_curbak[i].b_cur = NULL;
		MDB_cursor **pp = &mc->c_txn->t_cursors;
		while (*pp && *pp != mc)
			pp = &(*pp)->c_next;
		if (*pp)
			*pp = mc->c_next;
	}
	if (mc->c_sub)
		dlmdb_listdup_free(mc->c_sub);
	dlmdb_batch_free(mc);
	free(mc);
}

int mdb_cursor_renew(MDB_txn *txn, MDB_cursor *mc)
{
	if (!txn || !mc)
		return EINVAL;
	if (mc->c_tracked || !(txn->t_flags & DL_T_RDONLY))
		return EINVAL;
	int rc = dlmdb_txn_usable(txn, 0);
	if (rc)
		return rc;
	if ((rc = dlmdb_dbi_ok(txn, mc->c_dbi)))
		return rc;
	if (txn->t_dbstate[mc->c_dbi] & DL_DBS_STALE) {
		if ((rc = dlmdb_db_refresh(txn, mc->c_dbi)))
			return rc;
	}
	dl_xcur *x = mc->c_sub;
	dlmdb_cursor_setup(mc, txn, mc->c_dbi);
	if (x)
		dlmdb_dup_bind(mc, x);
	return 0;
}

MDB_txn *mdb_cursor_txn(MDB_cursor *mc)
{
	return mc ? mc->c_txn : NULL;
}

MDB_dbi mdb_cursor_dbi(MDB_cursor *mc)
{
	return mc ? mc->c_dbi : 0;
}

static int dl_u_cursor_count(MDB_cursor *mc, mdb_size_t *countp)
{
	if (!mc || !countp || !mc->c_txn)
		return EINVAL;
	if (!(mc->c_db->d_flags & MDB_DUPSORT) || !mc->c_sub)
		return MDB_INCOMPATIBLE;
	int rc = dlmdb_txn_usable(mc->c_txn, 0);
	if (rc)
		return rc;
	if ((rc = dlmdb_cursor_revalidate(mc)))
		return rc;
	return dlmdb_dup_count(mc, countp);
}

int mdb_cmp(MDB_txn *txn, MDB_dbi dbi, const MDB_val *a, const MDB_val *b)
{
	if (!txn || !a || !b || dlmdb_dbi_ok(txn, dbi))
		return 0;
	return txn->t_env->e_dbx[dbi].x_cmp(a, b);
}

int mdb_dcmp(MDB_txn *txn, MDB_dbi dbi, const MDB_val *a, const MDB_val *b)
{
	if (!txn || !a || !b || dlmdb_dbi_ok(txn, dbi))
		return 0;
	MDB_cmp_func *f = txn->t_env->e_dbx[dbi].x_dcmp;
	return f ? f(a, b) : 0;
}

/* Make every page on the cursor's path writable (copy-on-write). */
int dlmdb_cursor_touch(MDB_cursor *mc)
{
	MDB_txn *txn = mc->c_txn;
	for (unsigned l = 0; l < mc->c_depth; l++) {
		dl_page *np;
		if (((mc->c_tmask >> l) & 1) && mc->c_tpg[l] == mc->c_pg[l])
			continue;	/* made writable by this cursor already */
		/* the copy is keyed by the page's own header: a damaged header
		 * naming another page would make us edit (and free) that one */
		if (!mc->c_inline && DL_UNLIKELY(mc->c_pg[l]->p_pgno != (l ? dl_node_child(dl_pg_node(
		    mc->c_pg[l - 1], mc->c_ki[l - 1])) : mc->c_db->d_root)))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		int rc = dlmdb_page_touch(txn, mc->c_pg[l], &np);
		if (rc)
			return DL_TXN_FAIL(txn, rc);
		if (np != mc->c_pg[l]) {
			if (l == 0)
				mc->c_db->d_root = np->p_pgno;
			else
				dl_node_set_child(dl_pg_node(mc->c_pg[l - 1], mc->c_ki[l - 1]), np->p_pgno);
			mc->c_pg[l] = np;
		}
		if (!mc->c_inline) {
			mc->c_tpg[l] = np;
			mc->c_tmask |= 1u << l;
		}
	}
	txn->t_dbstate[mc->c_dbi] |= DL_DBS_DIRTY;
	txn->t_flags |= DL_T_DIRTY;
	return 0;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_cursor_get(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_get(mc, key, data, op));
}

int mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)
{
	DL_GUARDED(txn, 0, dl_u_get(txn, dbi, key, data));
}

int mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **out)
{
	DL_GUARDED(txn, 0, dl_u_cursor_open(txn, dbi, out));
}

void mdb_cursor_close(MDB_cursor *mc)
{
	DL_GUARDED_VOID(mc && mc->c_tracked ? mc->c_txn : NULL, dl_u_cursor_close(mc));
}

int mdb_cursor_count(MDB_cursor *mc, mdb_size_t *countp)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_count(mc, countp));
}
