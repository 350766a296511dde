/*
 * batch.c - mdb_cursor_get_batch: many cursor steps in one call (a
 * DLMDB-go extension for bindings whose per-call cost dominates a scan,
 * such as cgo).
 *
 * The results are two MDB_val arrays kept with the cursor (MDB_cursor.
 * c_batch), reused by its next batch.  Keys and values the map holds whole
 * point into it; those decoded from prefix-compressed pages (which a plain
 * cursor step leaves in the cursor's own one-key buffer) are copied into
 * byte storage kept beside the arrays.  While the storage grows it may
 * move, so a copied item's descriptor holds its offset + 1 until the batch
 * is complete (no map or heap address is that small).
 */
#include "internal.h"

struct dl_batch {
	MDB_val *b_keys, *b_vals;
	size_t b_cap;
	unsigned char *b_bytes;
	size_t b_bcap, b_bused;
};

void dlmdb_batch_free(MDB_cursor *mc)
{
	struct dl_batch *b = mc->c_batch;
	if (!b)
		return;
	free(b->b_keys);
	free(b->b_vals);
	free(b->b_bytes);
	free(b);
	mc->c_batch = NULL;
}

static int batch_reserve(struct dl_batch *b, size_t n)
{
	if (n <= b->b_cap)
		return 0;
	MDB_val *k = realloc(b->b_keys, n * sizeof *k);
	if (!k)
		return ENOMEM;
	b->b_keys = k;
	MDB_val *v = realloc(b->b_vals, n * sizeof *v);
	if (!v)
		return ENOMEM;
	b->b_vals = v;
	b->b_cap = n;
	return 0;
}

/* Does v lie in one of the cursor's one-item decode buffers? */
static int in_cursor_buf(const MDB_cursor *mc, const MDB_val *v)
{
	const unsigned char *p = v->mv_data;
	if (p >= mc->c_kbuf && p < mc->c_kbuf + sizeof mc->c_kbuf)
		return 1;
	if (mc->c_sub) {
		const MDB_cursor *xc = &mc->c_sub->x_c;
		if (p >= xc->c_kbuf && p < xc->c_kbuf + sizeof xc->c_kbuf)
			return 1;
	}
	return 0;
}

/* Keep item it of a batch when the cursor's next step would overwrite it,
 * or when it is the caller's own memory (callers), by a copy (see the
 * file comment): 0, or ENOMEM. */
static int batch_keep(struct dl_batch *b, MDB_cursor *mc, MDB_val *it, size_t *copied,
	const void *callers)
{
	if (!it->mv_size || (!in_cursor_buf(mc, it) && !(callers && it->mv_data == callers)))
		return 0;
	if (b->b_bused + it->mv_size > b->b_bcap) {
		size_t cap = b->b_bcap ? b->b_bcap : 8192;
		while (cap < b->b_bused + it->mv_size)
			cap *= 2;
		unsigned char *p = realloc(b->b_bytes, cap);
		if (!p)
			return ENOMEM;
		b->b_bytes = p;
		b->b_bcap = cap;
	}
	memcpy(b->b_bytes + b->b_bused, it->mv_data, it->mv_size);
	it->mv_data = (void *)(uintptr_t)(b->b_bused + 1);
	b->b_bused += it->mv_size;
	(*copied)++;
	return 0;
}

/* Is item i past the end bound?  (forward: above it; backward: below) */
static int past_end(MDB_cursor *mc, const MDB_val *k, const MDB_val *end, int back, int incl)
{
	int c = mc->c_dbx->x_cmp(k, end);
	if (back)
		c = -c;
	return c > 0 || (c == 0 && !incl);
}

static int dl_u_cursor_get_batch(MDB_cursor *mc, MDB_cursor_op op, MDB_val *key, mdb_size_t max,
	const MDB_val *end, unsigned flags, const MDB_val **keys, const MDB_val **vals,
	mdb_size_t *count)
{
	if (!mc || !mc->c_txn || mc->c_owner || !keys || !vals || !count || max == 0 ||
	    (flags & ~(MDB_BATCH_BACKWARD | MDB_BATCH_END_INCL)))
		return EINVAL;
	*count = 0;
	int back = (flags & MDB_BATCH_BACKWARD) || op == MDB_LAST || op == MDB_PREV;
	switch (op) {
	case MDB_FIRST:
	case MDB_LAST:
	case MDB_NEXT:
	case MDB_PREV:
	case MDB_GET_CURRENT:
		break;
	case MDB_SET_RANGE:
	case MDB_SET_KEY:
		if (!key)
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (!mc->c_batch && !(mc->c_batch = calloc(1, sizeof *mc->c_batch)))
		return ENOMEM;
	struct dl_batch *b = mc->c_batch;
	b->b_bused = 0;
	size_t want = max > 4096 ? 4096 : (size_t)max;	/* grown below as needed */
	int rc = batch_reserve(b, want);
	if (rc)
		return rc;
	MDB_cursor_op step = back ? MDB_PREV : MDB_NEXT;
	MDB_val k, v;
	size_t n = 0, copied = 0;
	if (key && (op == MDB_SET_RANGE || op == MDB_SET_KEY))
		k = *key;
	/* a forward step inside the current leaf of a plain DB goes straight
	 * to the fetch (what mdb_cursor_get's own fast path does, without
	 * the per-call checks); everything else through mdb_cursor_get */
	int direct = !back && !(mc->c_db->d_flags & MDB_DUPSORT);
	int incl = (flags & MDB_BATCH_END_INCL) != 0;
	for (MDB_cursor_op cur = op; n < max; cur = step) {
		if (direct && cur == MDB_NEXT && n) {
			/* the rest of a plain leaf in a tight loop: nodes read with
			 * the checks dlmdb_cur_fetch makes, straight into the arrays
			 * (items of such a page are whole in the map: nothing to
			 * keep); a big value, a compressed page or a damaged node
			 * goes the general way below */
			const dl_page *p = mc->c_pg[mc->c_top];
			unsigned nk = dl_pg_nkeys(p), bound = mc->c_bound, upper = p->p_upper;
			if (!(p->p_flags & (DL_P_PREFIX | DL_P_LEAF2))) {
				if (b->b_cap < max && (rc = batch_reserve(b, max < nk + n ? (size_t)max : nk + n)))
					break;
				size_t lim = b->b_cap < max ? b->b_cap : (size_t)max;
				while (n < lim && mc->c_ki[mc->c_top] + 1u < nk) {
					unsigned off = dl_pg_slot(p, mc->c_ki[mc->c_top] + 1u);
					if (off < upper || off + DL_NODEHDR > bound)
						break;
					const dl_node *nd = (const dl_node *)((const char *)p + off);
					size_t ds = dl_node_dsize(nd);
					if ((nd->n_flags & DL_N_KIND) || nd->n_ksize > DL_MAXKEY ||
					    off + DL_NODEHDR + nd->n_ksize + ds > bound)
						break;
					MDB_val *bk = &b->b_keys[n];
					bk->mv_size = nd->n_ksize;
					bk->mv_data = dl_node_key(nd);
					if (end && past_end(mc, bk, end, 0, incl)) {
						mc->c_ki[mc->c_top]++;
						rc = MDB_NOTFOUND;
						goto done;
					}
					b->b_vals[n].mv_size = ds;
					b->b_vals[n].mv_data = dl_node_data(nd);
					mc->c_ki[mc->c_top]++;
					n++;
				}
				if (n >= max)
					break;
			}
		}
		if (direct && cur == MDB_NEXT && n &&
		    mc->c_ki[mc->c_top] + 1u < dl_pg_nkeys(mc->c_pg[mc->c_top])) {
			mc->c_ki[mc->c_top]++;
			rc = dlmdb_cur_fetch(mc, &k, &v);
		} else {
			rc = mdb_cursor_get(mc, &k, &v, cur);
		}
		if (rc)
			break;
		if (end && past_end(mc, &k, end, back, (flags & MDB_BATCH_END_INCL) != 0)) {
			rc = MDB_NOTFOUND;
			break;
		}
		if (n == b->b_cap && (rc = batch_reserve(b, b->b_cap * 2)))
			break;
		/* the next step decodes over an item in the cursor's buffer, and
		 * the caller's own key (a seek may hand it back) is not ours to
		 * keep pointing at: copy both */
		if ((rc = batch_keep(b, mc, &k, &copied, key ? key->mv_data : NULL)) ||
		    (rc = batch_keep(b, mc, &v, &copied, NULL)))
			break;
		b->b_keys[n] = k;
		b->b_vals[n] = v;
		n++;
	}
done:
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (n == 0)
		return MDB_NOTFOUND;
	for (size_t i = 0; i < n && copied; i++) {
		MDB_val *pair[2] = {&b->b_keys[i], &b->b_vals[i]};
		for (int j = 0; j < 2; j++) {
			uintptr_t off = (uintptr_t)pair[j]->mv_data;
			if (pair[j]->mv_size && off && off <= b->b_bused) {
				pair[j]->mv_data = b->b_bytes + (off - 1);
				copied--;
			}
		}
	}
	*keys = b->b_keys;
	*vals = b->b_vals;
	*count = n;
	return 0;
}

static int dl_u_cursor_get_many(MDB_cursor *mc, const MDB_val *keys, mdb_size_t n, const MDB_val **vals,
	mdb_size_t *found)
{
	if (!mc || !mc->c_txn || mc->c_owner || (!keys && n) || !vals || !found)
		return EINVAL;
	*found = 0;
	if (!mc->c_batch && !(mc->c_batch = calloc(1, sizeof *mc->c_batch)))
		return ENOMEM;
	struct dl_batch *b = mc->c_batch;
	b->b_bused = 0;
	int rc = batch_reserve(b, n ? (size_t)n : 1);
	if (rc)
		return rc;
	size_t copied = 0, hits = 0;
	for (size_t i = 0; i < n; i++) {
		MDB_val k = keys[i], v;
		rc = mdb_cursor_get(mc, &k, &v, MDB_SET);
		if (rc == MDB_NOTFOUND) {
			b->b_vals[i].mv_size = 0;
			b->b_vals[i].mv_data = NULL;
			continue;
		}
		if (rc)
			return rc;
		if ((rc = batch_keep(b, mc, &v, &copied, NULL)))
			return rc;
		b->b_vals[i] = v;
		hits++;
	}
	for (size_t i = 0; i < n && copied; i++) {
		uintptr_t off = (uintptr_t)b->b_vals[i].mv_data;
		if (b->b_vals[i].mv_size && off && off <= b->b_bused) {
			b->b_vals[i].mv_data = b->b_bytes + (off - 1);
			copied--;
		}
	}
	*vals = b->b_vals;
	*found = hits;
	return 0;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_cursor_get_batch(MDB_cursor *mc, MDB_cursor_op op, MDB_val *key, mdb_size_t max, const MDB_val *end, unsigned flags, const MDB_val **keys, const MDB_val **vals, mdb_size_t *count)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_get_batch(mc, op, key, max, end, flags, keys, vals, count));
}

int mdb_cursor_get_many(MDB_cursor *mc, const MDB_val *keys, mdb_size_t n, const MDB_val **vals, mdb_size_t *found)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_get_many(mc, keys, n, vals, found));
}
