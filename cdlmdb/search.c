/*
 * search.c - key orders, binary search inside a page, root-to-leaf descent.
 */
#include "internal.h"

/*
 * Byte-wise order, shorter key first on a common prefix.  Short keys are
 * compared a machine word at a time (loaded big-endian, so the first
 * differing byte decides); longer ones go to memcmp.
 */
static inline int key_order(const unsigned char *a, size_t as, const unsigned char *b, size_t bs)
{
	size_t n = as < bs ? as : bs;
	if (n > 32) {
		int r = memcmp(a, b, n);
		if (r)
			return r;
	} else {
		size_t i = 0;
		for (; i + 8 <= n; i += 8) {
			uint64_t x, y;
			memcpy(&x, a + i, 8);
			memcpy(&y, b + i, 8);
			if (x != y) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
				x = __builtin_bswap64(x);
				y = __builtin_bswap64(y);
#endif
				return x < y ? -1 : 1;
			}
		}
		for (; i < n; i++)
			if (a[i] != b[i])
				return a[i] < b[i] ? -1 : 1;
	}
	return (as > bs) - (as < bs);
}

static int cmp_bytes(const MDB_val *a, const MDB_val *b)
{
	return key_order(a->mv_data, a->mv_size, b->mv_data, b->mv_size);
}

/* Byte-wise order reading both keys from their last byte backwards. */
static int cmp_backwards(const MDB_val *a, const MDB_val *b)
{
	const unsigned char *pa = (const unsigned char *)a->mv_data + a->mv_size;
	const unsigned char *pb = (const unsigned char *)b->mv_data + b->mv_size;
	size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
	while (n--) {
		int d = (int)*--pa - (int)*--pb;
		if (d)
			return d;
	}
	return (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
}

/* Native unsigned integers (4 or 8 bytes); other sizes as little-endian
 * numbers of equal width, most significant byte last. */
static int cmp_native(const MDB_val *a, const MDB_val *b)
{
	if (a->mv_size == 8 && b->mv_size == 8) {
		uint64_t x, y;
		memcpy(&x, a->mv_data, 8);
		memcpy(&y, b->mv_data, 8);
		return (x > y) - (x < y);
	}
	if (a->mv_size == 4 && b->mv_size == 4) {
		uint32_t x, y;
		memcpy(&x, a->mv_data, 4);
		memcpy(&y, b->mv_data, 4);
		return (x > y) - (x < y);
	}
	if (a->mv_size != b->mv_size)
		return (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
	return cmp_backwards(a, b);
}

MDB_cmp_func *dlmdb_cmp_for(unsigned f)
{
	if (f & MDB_INTEGERKEY)
		return cmp_native;
	if (f & MDB_REVERSEKEY)
		return cmp_backwards;
	return cmp_bytes;
}

void dlmdb_node_keyval(const dl_page *p, unsigned i, MDB_val *key, unsigned char *buf)
{
	if (dl_pg_is_leaf2(p)) {
		key->mv_size = p->p_pad;
		key->mv_data = dl_pg_leaf2_key(p, i);
		return;
	}
	dl_leaf_key(p, dl_pg_node(p, i), key, buf);
}

/* Binary search of node page p over [lo, hi) under the cursor's own order
 * (any comparator; a PREFIX page's probed keys decoded into a stack
 * buffer), every probed node checked to lie inside the page. */
static unsigned find_by_cmp(MDB_cursor *mc, const dl_page *p, const MDB_val *key, unsigned lo,
	unsigned hi, int *exact)
{
	MDB_cmp_func *cmp = mc->c_dbx->x_cmp;
	unsigned char buf[DL_MAXKEY];
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (DL_UNLIKELY(!dl_node_in_page(p, mid, mc->c_bound))) {
			*exact = -1;
			return 0;
		}
		MDB_val k;
		dl_leaf_key(p, dl_pg_node(p, mid), &k, buf);	/* (branch keys: in place) */
		int r = cmp(key, &k);
		if (r > 0)
			lo = mid + 1;
		else if (r < 0)
			hi = mid;
		else
			return *exact = 1, mid;	/* keys are unique */
	}
	return lo;
}

/*
 * dlmdb_node_find on a PREFIX leaf (FORMAT.md, "Prefix-compressed leaves").
 * No probe decodes the keys before it.  Under the byte order, q = the
 * length of the common prefix of the probe key and the anchor: a node
 * sharing more than q anchor bytes holds anchor[q] where the probe differs
 * (or ends), so one byte decides; one sharing s <= q bytes agrees with the
 * probe on them and the suffixes decide.  Other orders get each probed key
 * decoded into a stack buffer.
 */
static unsigned find_prefixed(MDB_cursor *mc, const dl_page *p, const MDB_val *key, int *exact)
{
	MDB_cmp_func *cmp = mc->c_dbx->x_cmp;
	unsigned lo = 0, hi = dl_pg_nkeys(p), bound = mc->c_bound, upper = p->p_upper;
	/* the anchor sits at the far end of the page from the slots: start
	 * its load and the first probe's together (two cache misses that
	 * would otherwise come one after the other) */
	__builtin_prefetch((const char *)p + p->p_pad);
	if (hi)
		__builtin_prefetch((const char *)p + dl_pg_slot(p, hi / 2));
	if (DL_UNLIKELY(!dl_pg_anchor_ok(p, bound)))
		goto damaged;
	bound = dl_pg_node_lim(p, bound);	/* nodes end below the anchor */
	const unsigned char *an = dl_pg_anchor(p), *kd = key->mv_data;
	unsigned alen = dl_pg_anchor_len(p);
	size_t ks = key->mv_size;
	if (cmp == cmp_bytes) {
		unsigned q = 0, lim = ks < alen ? (unsigned)ks : alen;
		for (; q + 8 <= lim; q += 8) {
			uint64_t x, y;
			memcpy(&x, kd + q, 8);
			memcpy(&y, an + q, 8);
			if (x != y)
				break;
		}
		while (q < lim && kd[q] == an[q])
			q++;
		/* the probe's order against a key that has anchor[q] at byte q */
		int past_q = q == ks ? -1 : (q < alen && kd[q] < an[q] ? -1 : 1);
		while (lo < hi) {
			unsigned mid = lo + (hi - lo) / 2;
			unsigned off = dl_pg_slot(p, mid);
			if (DL_UNLIKELY(off < upper || off + DL_NODEHDR > bound))
				goto damaged;
			const dl_node *n = (const dl_node *)((const char *)p + off);
			unsigned sh = dl_node_shared(n);
			size_t nk = n->n_ksize;
			if (DL_UNLIKELY(off + DL_NODEHDR + nk > bound || sh > alen || sh + nk > DL_MAXKEY ||
			    sh + nk == 0))
				goto damaged;
			int r = sh > q ? past_q : key_order(kd + sh, ks - sh, dl_node_key(n), nk);
			if (r > 0)
				lo = mid + 1;
			else if (r < 0)
				hi = mid;
			else
				return *exact = 1, mid;
		}
		return lo;
	}
	return find_by_cmp(mc, p, key, lo, hi, exact);
damaged:
	*exact = -1;
	return 0;
}

/* dlmdb_node_find on a LEAF2 page of 8-byte keys under the byte order
 * (be: big-endian numbers) or the native one: compared as integers, no
 * call per probe (the common DUPFIXED layout). */
static unsigned find_leaf2_u64(const dl_page *p, const MDB_val *key, int be, unsigned hi, int *exact)
{
	uint64_t want;
	unsigned lo = 0;
	memcpy(&want, key->mv_data, 8);
	if (be)
		want = __builtin_bswap64(want);
	const char *base = (const char *)p + DL_PAGEHDR;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		uint64_t x;
		memcpy(&x, base + (size_t)mid * 8, 8);
		if (be)
			x = __builtin_bswap64(x);
		if (want > x)
			lo = mid + 1;
		else if (want < x)
			hi = mid;
		else
			return *exact = 1, mid;
	}
	return lo;
}

/*
 * Lower bound: the first index whose key is >= key (nkeys if none).  Branch
 * pages skip index 0, whose key is never consulted.  *exact says whether the
 * key at the returned index equals the probe, or is -1 when a probed node
 * lies outside the page (callers report MDB_CORRUPTED).
 *
 * Three loops: fixed-size LEAF2 keys, node pages under the default byte
 * order (compared inline, the common case), and node pages under any other
 * order.  Every node probe checks that the node lies inside the page.
 */
unsigned dlmdb_node_find(MDB_cursor *mc, const dl_page *p, const MDB_val *key, int *exact)
{
	MDB_cmp_func *cmp = mc->c_dbx->x_cmp;
	unsigned lo = dl_pg_is_branch(p) ? 1 : 0, hi = dl_pg_nkeys(p);
	MDB_val k;
	*exact = 0;
	if (dl_pg_is_leaf2(p)) {
		k.mv_size = p->p_pad;
		if (key->mv_size == 8 && p->p_pad == 8 && (cmp == cmp_bytes || cmp == cmp_native))
			return find_leaf2_u64(p, key, cmp == cmp_bytes, hi, exact);
		while (lo < hi) {
			unsigned mid = lo + (hi - lo) / 2;
			k.mv_data = dl_pg_leaf2_key(p, mid);
			int r = cmp(key, &k);
			if (r > 0)
				lo = mid + 1;
			else if (r < 0)
				hi = mid;
			else
				return *exact = 1, mid;
		}
		return lo;
	}
	if (dl_pg_prefix(p))
		return find_prefixed(mc, p, key, exact);
	/* a node must fit: header, key and (counted branches) its counts */
	unsigned bound = mc->c_bound;
	unsigned tail = DL_NODEHDR + (dl_pg_is_branch(p) ? dl_pg_cntbytes(p) : 0);
	unsigned upper = p->p_upper;
	if (cmp == cmp_bytes) {
		const unsigned char *kd = key->mv_data;
		size_t ks = key->mv_size;
		while (lo < hi) {
			unsigned mid = lo + (hi - lo) / 2;
			unsigned off = dl_pg_slot(p, mid);
			if (DL_UNLIKELY(off < upper || off + tail > bound))
				goto damaged;
			const dl_node *n = (const dl_node *)((const char *)p + off);
			size_t nk = n->n_ksize;
			if (DL_UNLIKELY(off + tail + nk > bound))
				goto damaged;
			int r = key_order(kd, ks, dl_node_key(n), nk);
			if (r > 0)
				lo = mid + 1;
			else if (r < 0)
				hi = mid;
			else
				return *exact = 1, mid;
		}
		return lo;
	}
	return find_by_cmp(mc, p, key, lo, hi, exact);
damaged:
	*exact = -1;
	return 0;
}

/*
 * Order across pages (damaged files).  Every key under branch node i lies in
 * [key(i), key(i+1)), the bounds inherited from the levels above included
 * (FORMAT.md).  A file whose separators and leaves disagree -- a separator
 * byte changed, two child pointers swapped, a leaf's edge key damaged --
 * would make a cursor walk return keys out of order, or a lookup miss a
 * key, without any error.  So leaf edge keys are held against separators:
 * first key >= lo, last key < hi (either bound may be NULL), where a
 * cursor can go wrong without them --
 *  - a step to the neighbouring leaf (dlmdb_cur_step_leaf): the leaf left
 *    and the leaf entered against the one separator between them, so a
 *    walk's keys stay in order across leaves (two compares per leaf);
 *  - a descent to the first or last leaf (FIRST, LAST), and a lookup that
 *    does not find its key, against the separators of the path
 *    (dlmdb_leaf_check_path).
 * Nothing per item: the order inside one leaf is left to the checker.
 * Always under the DB's own order (x_cmp: a custom comparator, or the
 * duplicate order in a sub-cursor), never bytes.  Pages of the trusted
 * table (page.c) get no exemption: a compare costs about what the table
 * lookup would, read txns never consult that table, and the check is about
 * two pages agreeing, not one.  A leaf without keys has no edges.
 */
int dlmdb_leaf_in_bounds(const MDB_cursor *mc, const dl_page *leaf, const MDB_val *lo,
	const MDB_val *hi)
{
	unsigned n = dl_pg_nkeys(leaf);
	MDB_val k;
	unsigned char kb[DL_MAXKEY];
	if (n == 0)
		return 0;
	if (lo) {
		if (!dl_pg_is_leaf2(leaf) && !dl_node_in_page(leaf, 0, mc->c_bound))
			return MDB_CORRUPTED;
		dlmdb_node_keyval(leaf, 0, &k, kb);
		if (mc->c_dbx->x_cmp(&k, lo) < 0)
			return MDB_CORRUPTED;
	}
	if (hi) {
		if (!dl_pg_is_leaf2(leaf) && !dl_node_in_page(leaf, n - 1, mc->c_bound))
			return MDB_CORRUPTED;
		dlmdb_node_keyval(leaf, n - 1, &k, kb);
		if (mc->c_dbx->x_cmp(&k, hi) >= 0)
			return MDB_CORRUPTED;
	}
	return 0;
}

/* The key of branch node i of p, checked to lie inside the page. */
static int sep_key(const MDB_cursor *mc, const dl_page *p, unsigned i, MDB_val *k)
{
	if (!dl_node_in_page(p, i, mc->c_bound))
		return MDB_CORRUPTED;
	dlmdb_node_keyval(p, i, k, NULL);	/* branch pages are never PREFIX */
	return 0;
}

/*
 * The leaf under mc against the separators of its path: the tightest lower
 * bound is the key of node c_ki[l] at the deepest level l where that index
 * is above 0, the tightest upper bound node c_ki[l] + 1 at the deepest
 * level that has one.  A lookup calls this when its key is not in the leaf
 * (a hit is an answer whatever the neighbours hold; a miss might be wrong
 * only because the leaf is not the one the separators name), so lookups of
 * present keys pay nothing.
 */
int dlmdb_leaf_check_path(MDB_cursor *mc)
{
	MDB_val lk, hk;
	const MDB_val *lo = NULL, *hi = NULL;
	for (int l = (int)mc->c_top - 1; l >= 0 && !(lo && hi); l--) {
		const dl_page *p = mc->c_pg[l];
		unsigned i = mc->c_ki[l];
		if (!lo && i > 0) {
			if (sep_key(mc, p, i, &lk))
				return MDB_CORRUPTED;
			lo = &lk;
		}
		if (!hi && i + 1 < dl_pg_nkeys(p)) {
			if (sep_key(mc, p, i + 1, &hk))
				return MDB_CORRUPTED;
			hi = &hk;
		}
	}
	return dlmdb_leaf_in_bounds(mc, mc->c_pg[mc->c_top], lo, hi);
}

static int page_sane(unsigned bound, const dl_page *p)
{
	if (!(p->p_flags & (DL_P_BRANCH | DL_P_LEAF)))
		return 0;
	if (p->p_lower < DL_PAGEHDR || p->p_lower > p->p_upper || p->p_upper > bound)
		return 0;
	return 1;
}

/*
 * Walk from the root to a leaf, recording the path in the cursor.  where
 * selects the key's path, the leftmost or the rightmost one.  The leaf index
 * is left at 0 (KEY, FIRST) or the last node (LAST).
 */
int dlmdb_search_root(MDB_cursor *mc, const MDB_val *key, int where)
{
	MDB_txn *txn = mc->c_txn;
	pgno_t pg = mc->c_db->d_root;
	mc->c_depth = 0;
	mc->c_flags &= ~(DL_C_INIT | DL_C_EOF | DL_C_DEL | DL_C_SAVED | DL_C_PAST);
	if (pg == DL_NO_PAGE && !mc->c_inline)
		return MDB_NOTFOUND;
	for (unsigned lvl = 0;; lvl++) {
		dl_page *p;
		if (mc->c_inline) {
			/* duplicates kept in a sub-page: a one-leaf tree */
			p = mc->c_inline;
			if (!dl_pg_is_leaf(p))
				return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		} else {
			int rc = dlmdb_page_get(txn, pg, &p);
			if (rc)
				return DL_TXN_FAIL(txn, rc);
		}
		if (lvl >= DL_MAX_DEPTH)
			return DL_TXN_FAIL(txn, MDB_CURSOR_FULL);
		if (!page_sane(mc->c_bound, p) || DL_UNLIKELY(!dl_pg_prefix_ok(p, mc->c_db)))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		mc->c_pg[lvl] = p;
		mc->c_depth = lvl + 1;
		mc->c_top = lvl;
		unsigned n = dl_pg_nkeys(p);
		/* LEAF2 pages hold the values of DUPFIXED duplicates only (a
		 * sub-cursor's tree), at most DL_MAXKEY bytes each; anywhere else
		 * their packed keys would be read as slots and nodes */
		if (dl_pg_is_leaf2(p) && (!p->p_pad || p->p_pad > DL_MAXKEY ||
		    DL_PAGEHDR + (size_t)n * p->p_pad > mc->c_bound ||
		    !mc->c_owner || !(mc->c_db->d_flags & MDB_DUPFIXED)))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		if (dl_pg_is_leaf(p)) {
			mc->c_ki[lvl] = (where == DL_SEARCH_LAST && n) ? (indx_t)(n - 1) : 0;
			/* the leaf at either end of the tree against its path (the
			 * first or last item of a DB must be its smallest or largest);
			 * a key search's leaf is checked by the caller when the key
			 * is not there (dlmdb_cursor_seek) */
			if (where != DL_SEARCH_KEY && lvl && dlmdb_leaf_check_path(mc))
				return DL_TXN_FAIL(txn, MDB_CORRUPTED);
			mc->c_flags |= DL_C_INIT;
			return 0;
		}
		if (n == 0)
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		unsigned i;
		if (where == DL_SEARCH_FIRST) {
			i = 0;
		} else if (where == DL_SEARCH_LAST) {
			i = n - 1;
		} else {
			int exact;
			i = dlmdb_node_find(mc, p, key, &exact);
			if (exact < 0)
				return DL_TXN_FAIL(txn, MDB_CORRUPTED);
			if (!exact)
				i--;
		}
		if (!dl_node_in_page(p, i, mc->c_bound))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		mc->c_ki[lvl] = (indx_t)i;
		pg = dl_node_child(dl_pg_node(p, i));
	}
}

int dlmdb_node_value(MDB_txn *txn, const dl_node *n, MDB_val *data)
{
	if (!(n->n_flags & DL_N_BIG)) {
		data->mv_size = dl_node_dsize(n);
		data->mv_data = dl_node_data(n);
		return 0;
	}
	dl_page *ov;
	pgno_t pg = dl_node_bigpg(n);
	int rc = dlmdb_page_get(txn, pg, &ov);
	if (rc)
		return rc;
	if (!(ov->p_flags & DL_P_OVERFLOW))
		return MDB_CORRUPTED;
	/* the run must end inside the snapshot: bounded by the number the
	 * node gives (the page's own header may be damaged as well) */
	uint32_t cnt = dl_pg_ovcount(ov), need = dl_ov_pages(txn->t_env, dl_node_dsize(n));
	if (cnt < need || pg + cnt > txn->t_next_pg)
		return MDB_CORRUPTED;
	/* a committed run's last page must exist too (dlmdb_page_get refuses
	 * pages the file does not hold); a dirty run is one buffer */
	dl_page *tail;
	if (need > 1 && dl_in_map(txn->t_env, ov) && (rc = dlmdb_page_get(txn, pg + need - 1, &tail)))
		return rc;
	data->mv_size = dl_node_dsize(n);
	data->mv_data = (char *)ov + DL_PAGEHDR;
	return 0;
}
