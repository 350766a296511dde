/*
 * listdup.c - mdb_cursor_list_dup: every duplicate of the cursor's key in
 * one call (DLMDB's bulk duplicate read).
 *
 * The values are described by an MDB_val array kept in the cursor's
 * duplicate state (dl_xcur.x_ld), grown as needed and reused by the next
 * call.  Where the map holds a value whole, its descriptor points into the
 * map; values of prefix-compressed pages that share anchor bytes are
 * decoded into byte storage kept beside the array.  Both stay valid until
 * the cursor's next list_dup, its close, or the end of its txn (and, in a
 * write txn, until the next write).
 *
 * The walk runs on a copy of the cursor with a duplicate cursor of its own,
 * so the caller's cursor and its duplicate position are left exactly as
 * they were.  Per layout:
 *  - a single value stored as a plain node: one element;
 *  - an inline sub-page: its nodes (LEAF2: fixed-width arithmetic);
 *  - a sub-tree: leaf by leaf from the first, nodes or LEAF2 values,
 *    each leaf checked by the same code a cursor step uses (page kind,
 *    LEAF2 width against the DB's, count against the page's room).
 */
#include "internal.h"
#include <stddef.h>

struct dl_ldbuf {
	MDB_val *l_vals;
	size_t l_cap;
	unsigned char *l_bytes;	/* decoded values */
	size_t l_bcap, l_bused;
};

void dlmdb_listdup_free(dl_xcur *x)
{
	if (!x->x_ld)
		return;
	free(x->x_ld->l_vals);
	free(x->x_ld->l_bytes);
	free(x->x_ld);
	x->x_ld = NULL;
}

/* Room for n more descriptors. */
static int ld_reserve(struct dl_ldbuf *b, size_t used, size_t n)
{
	if (used + n <= b->l_cap)
		return 0;
	size_t cap = b->l_cap ? b->l_cap : 64;
	while (cap < used + n)
		cap *= 2;
	MDB_val *v = realloc(b->l_vals, cap * sizeof *v);
	if (!v)
		return ENOMEM;
	b->l_vals = v;
	b->l_cap = cap;
	return 0;
}

/*
 * Decoded bytes: the storage may move while it grows, so a decoded value's
 * descriptor holds its offset + 1 in mv_data until the walk is over
 * (ld_fixup).  No map or heap address is that small (Linux maps nothing
 * below 64 KiB), so the two kinds cannot be confused.
 */
static unsigned char *ld_bytes(struct dl_ldbuf *b, size_t n, size_t *off)
{
	if (b->l_bused + n > b->l_bcap) {
		size_t cap = b->l_bcap ? b->l_bcap : 4096;
		while (cap < b->l_bused + n)
			cap *= 2;
		unsigned char *p = realloc(b->l_bytes, cap);
		if (!p)
			return NULL;
		b->l_bytes = p;
		b->l_bcap = cap;
	}
	*off = b->l_bused;
	b->l_bused += n;
	return b->l_bytes + *off;
}

/* The values of node page p (a sub-page copy, or a sub-tree leaf) into
 * b->l_vals[*used...]; copy/orig translate pointers into a sub-page copy
 * back to the tree (NULL for a leaf, whose pointers are the tree's). */
static int ld_page(struct dl_ldbuf *b, size_t *used, const dl_page *p, unsigned bound,
	const char *copy, const char *orig, size_t *ntag, unsigned width, size_t *nvals, int runs)
{
	unsigned n = dl_pg_nkeys(p);
	int rc;
	/* the page the DB's record promises: a leaf, LEAF2 exactly when the
	 * values are fixed-width, of that width, its values inside it */
	if (!dl_pg_is_leaf(p) || dl_pg_is_branch(p) || p->p_lower < DL_PAGEHDR || n == 0 ||
	    !dl_pg_is_leaf2(p) != !width || (width && (p->p_pad != width ||
	    DL_PAGEHDR + (size_t)n * width > bound)))
		return MDB_CORRUPTED;
	*nvals += n;
	if (runs && dl_pg_is_leaf2(p)) {
		/* the page's values lie back to back: one run */
		if ((rc = ld_reserve(b, *used, 1)))
			return rc;
		b->l_vals[*used].mv_size = (size_t)n * p->p_pad;
		b->l_vals[*used].mv_data = (void *)((orig ? orig : (const char *)p) + DL_PAGEHDR);
		(*used)++;
		return 0;
	}
	if ((rc = ld_reserve(b, *used, n)))
		return rc;
	MDB_val *out = b->l_vals + *used;
	if (dl_pg_is_leaf2(p)) {
		unsigned w = p->p_pad;
		const char *base = (orig ? orig : (const char *)p) + DL_PAGEHDR;
		for (unsigned i = 0; i < n; i++) {
			out[i].mv_size = w;
			out[i].mv_data = (void *)(base + (size_t)i * w);
		}
		*used += n;
		return 0;
	}
	/* the checks of dl_node_in_page, with a PREFIX page's anchor
	 * checked once (when a node first uses it), not per node */
	int pfx = dl_pg_prefix(p), aok = -1;
	unsigned lim = pfx ? dl_pg_node_lim(p, bound) : bound, alen = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned at = dl_pg_slot(p, i);
		if (at < p->p_upper || at + DL_NODEHDR > bound)
			return MDB_CORRUPTED;
		const dl_node *nd = (const dl_node *)((const char *)p + at);
		unsigned s = 0;
		if (pfx) {
			s = dl_node_shared(nd);
			unsigned k = s + nd->n_ksize;
			if (k == 0 || k > DL_MAXKEY ||
			    (nd->n_flags & ~(DL_N_KIND | (0x1ffu << DL_N_SHARED_SHIFT))))
				return MDB_CORRUPTED;
			if (s) {
				if (aok < 0 && (aok = dl_pg_anchor_ok(p, bound)))
					alen = dl_pg_anchor_len(p);
				if (!aok || s > alen)
					return MDB_CORRUPTED;
			}
		}
		if (at + DL_NODEHDR + nd->n_ksize > lim)
			return MDB_CORRUPTED;
		if (DL_UNLIKELY(nd->n_ksize > DL_MAXKEY || dl_node_kind(nd) != 0))
			return MDB_CORRUPTED;	/* a duplicate is a bare key */
		if (!s) {
			const char *k = dl_node_key(nd);
			out[i].mv_size = nd->n_ksize;
			out[i].mv_data = (void *)(orig ? orig + (k - copy) : k);
			continue;
		}
		size_t off;
		unsigned char *d = ld_bytes(b, s + nd->n_ksize, &off);
		if (!d)
			return ENOMEM;
		dl_copy_short(d, dl_pg_anchor(p), s);
		dl_copy_short(d + s, dl_node_key(nd), nd->n_ksize);
		out[i].mv_size = s + nd->n_ksize;
		out[i].mv_data = (void *)(uintptr_t)(off + 1);
		(*ntag)++;
	}
	*used += n;
	return 0;
}

/* Give decoded values (offset + 1 in mv_data, see ld_bytes) their final
 * addresses. */
static void ld_fixup(struct dl_ldbuf *b, size_t used, size_t ntag)
{
	for (size_t i = 0; i < used && ntag; i++) {
		uintptr_t v = (uintptr_t)b->l_vals[i].mv_data;
		if (v && v <= b->l_bused) {
			b->l_vals[i].mv_data = b->l_bytes + (v - 1);
			ntag--;
		}
	}
}

/*
 * A copy of mc for a walk of its own: its fields and its stack c_depth
 * deep; of the buffers, only what their guards say is in use (c_saved for
 * a cursor that will re-seek or stands on a deleted item, else c_savedlen
 * 0; c_kbuf never, c_kpage NULL; no rank cache).  A whole copy would move
 * 1.7 KiB per call.
 */
static void walk_copy(MDB_cursor *c, const MDB_cursor *mc)
{
	memcpy(c, mc, offsetof(MDB_cursor, c_pg));
	memcpy(c->c_pg, mc->c_pg, mc->c_depth * sizeof mc->c_pg[0]);
	memcpy(c->c_ki, mc->c_ki, mc->c_depth * sizeof mc->c_ki[0]);
	c->c_savedlen = 0;
	if (mc->c_flags & (DL_C_SAVED | DL_C_DEL)) {
		c->c_savedlen = mc->c_savedlen;
		memcpy(c->c_saved, mc->c_saved, mc->c_savedlen);
	}
	c->c_kpage = NULL;	/* c_kbuf holds nothing */
	c->c_kvalid = 0;
	c->c_batch = mc->c_batch;
	c->c_rkleaf = NULL;
	c->c_rkgen = 0;
	c->c_rkdepth = 0;
}

/*
 * The walk behind both entry points.  runs = 0: one descriptor per value
 * (mdb_cursor_list_dup).  runs = 1: a LEAF2 page's values as one
 * descriptor for the whole page, other values one each; *nvals gets the
 * number of values either way, *fixw the width of LEAF2 values (0 when
 * the values are not on LEAF2 pages).
 */
static int list_walk(MDB_cursor *mc, int runs, const MDB_val **vals, mdb_size_t *count,
	mdb_size_t *nvals, unsigned *fixw)
{
	if (!mc || !vals || !count || mc->c_owner)
		return EINVAL;
	MDB_txn *txn = mc->c_txn;
	int rc = dlmdb_txn_usable(txn, 0);
	if (rc)
		return rc;
	if (!mc->c_sub)
		return MDB_INCOMPATIBLE;	/* not a DUPSORT DB */
	if ((mc->c_flags & DL_C_SAVED) && (rc = dlmdb_cursor_revalidate(mc)))
		return rc;
	if (!(mc->c_flags & DL_C_INIT) || mc->c_depth == 0)
		return EINVAL;
	if (mc->c_ki[mc->c_top] >= dl_pg_nkeys(mc->c_pg[mc->c_top]))
		return MDB_NOTFOUND;
	dl_xcur *ux = mc->c_sub;
	if (!ux->x_ld && !(ux->x_ld = calloc(1, sizeof *ux->x_ld)))
		return ENOMEM;
	struct dl_ldbuf *b = ux->x_ld;
	b->l_bused = 0;
	size_t used = 0, ntag = 0, nv = 0;
	*fixw = 0;

	/* a copy of the cursor with a duplicate cursor of its own (the
	 * sub-page copy goes to the txn's scratch page, as for mdb_get) */
	MDB_cursor c;
	walk_copy(&c, mc);
	dl_xcur x;
	x.x_buf = dlmdb_txn_scratch(txn, 2);
	if (!x.x_buf)
		return ENOMEM;
	c.c_tracked = 0;
	c.c_next = NULL;
	dlmdb_dup_bind(&c, &x);
	rc = dlmdb_dup_setup(&c);
	if (rc == MDB_NOTFOUND) {
		/* a single value: the plain node's data */
		MDB_val v;
		if ((rc = dlmdb_cur_fetch(&c, NULL, &v)) == MDB_INCOMPATIBLE)
			rc = MDB_CORRUPTED;
		if (rc)
			return rc == MDB_NOTFOUND ? DL_TXN_FAIL(txn, MDB_CORRUPTED) : rc;
		if ((rc = ld_reserve(b, 0, 1)))
			return rc;
		b->l_vals[0] = v;
		*vals = b->l_vals;
		*count = *nvals = 1;
		return 0;
	}
	if (rc)
		return rc;
	MDB_cursor *xc = &x.x_c;
	if (xc->c_inline) {
		const dl_page *sp = xc->c_inline;
		*fixw = dl_pg_is_leaf2(sp) ? sp->p_pad : 0;
		rc = ld_page(b, &used, sp, xc->c_bound, x.x_buf, x.x_orig, &ntag,
			dl_pg_is_leaf2(sp) ? sp->p_pad : 0, &nv, runs);
	} else {
		*fixw = (x.x_db.d_flags & MDB_DUPFIXED) ? x.x_db.d_pad : 0;
		rc = dlmdb_search_root(xc, NULL, DL_SEARCH_FIRST);
		if (rc == MDB_NOTFOUND)
			rc = DL_TXN_FAIL(txn, MDB_CORRUPTED);	/* an empty sub-tree */
		while (rc == 0) {
			const dl_page *lp = xc->c_pg[xc->c_top];
			if ((rc = ld_page(b, &used, lp, txn->t_env->e_psize, NULL, NULL, &ntag,
			    (x.x_db.d_flags & MDB_DUPFIXED) ? x.x_db.d_pad : 0, &nv, runs)))
				break;
			rc = dlmdb_cur_step_leaf(xc, 1);
		}
		if (rc == MDB_NOTFOUND)
			rc = 0;
		if (!rc && nv != x.x_db.d_entries)
			rc = DL_TXN_FAIL(txn, MDB_CORRUPTED);	/* the record disagrees with its tree */
	}
	if (rc)
		return rc == MDB_CORRUPTED ? DL_TXN_FAIL(txn, rc) : rc;
	ld_fixup(b, used, ntag);
	*vals = b->l_vals;
	*count = used;
	*nvals = nv;
	return 0;
}

static int dl_u_cursor_list_dup(MDB_cursor *mc, const MDB_val **vals, mdb_size_t *count)
{
	mdb_size_t nv;
	unsigned fixw;
	return list_walk(mc, 0, vals, count, &nv, &fixw);
}

/* The values as runs of back-to-back values of one width: a LEAF2 page's
 * values are one run (list_walk), other values one each, neighbours that
 * happen to touch (decoded values) joined. */
static int dl_u_cursor_list_dup_fixed(MDB_cursor *mc, const MDB_val **runs, mdb_size_t *nruns,
	size_t *width, mdb_size_t *count)
{
	if (!width)
		return EINVAL;
	const MDB_val *v;
	mdb_size_t n, nv;
	unsigned fixw;
	int rc = list_walk(mc, 1, &v, &n, &nv, &fixw);
	if (rc)
		return rc;
	size_t w = fixw ? fixw : (n ? v[0].mv_size : 0);
	MDB_val *out = (MDB_val *)v;	/* the cursor's own array */
	mdb_size_t k = 0;
	for (mdb_size_t i = 0; i < n; i++) {
		/* LEAF2 runs hold whole values of the page's width (checked
		 * by the walk); any other descriptor is one value */
		if (!fixw && v[i].mv_size != w)
			return MDB_INCOMPATIBLE;
		if (k && (const char *)out[k - 1].mv_data + out[k - 1].mv_size == (const char *)v[i].mv_data) {
			out[k - 1].mv_size += v[i].mv_size;
			continue;
		}
		out[k++] = v[i];
	}
	*runs = out;
	*nruns = k;
	*width = w;
	*count = nv;
	return 0;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_cursor_list_dup(MDB_cursor *mc, const MDB_val **vals, mdb_size_t *count)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_list_dup(mc, vals, count));
}

int mdb_cursor_list_dup_fixed(MDB_cursor *mc, const MDB_val **runs, mdb_size_t *nruns,
	size_t *width, mdb_size_t *count)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_list_dup_fixed(mc, runs, nruns, width, count));
}
