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

int dlmdb_cmp_u64(MDB_cmp_func *cmp)
{
	return cmp == cmp_bytes ? 1 : cmp == cmp_native ? 2 : 0;
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
/* A probe key's place against one PREFIX leaf under the byte order,
 * worked out once for all the probes of a search (cursor reuse probes a
 * leaf several times). */
typedef struct pfx_probe {
	const dl_page *p;
	const unsigned char *an, *kd;
	size_t ks;
	unsigned alen, q, upper, bound;
	int past_q;
} pfx_probe;

/* 0, or -1 when the page's anchor is damaged */
static int pfx_setup(const MDB_cursor *mc, const dl_page *p, const MDB_val *key, unsigned lo,
	unsigned hi, pfx_probe *pp)
{
	/* the anchor sits at the far end of the page from the slots: start
	 * its load and the first probe's together (two cache misses that
	 * would otherwise come one after the other) */
	__builtin_prefetch((const char *)p + p->p_pad);
	if (hi > lo)
		__builtin_prefetch((const char *)p + dl_pg_slot(p, lo + (hi - lo) / 2));
	if (DL_UNLIKELY(!dl_pg_anchor_ok(p, mc->c_bound)))
		return -1;
	pp->p = p;
	pp->upper = p->p_upper;
	pp->bound = dl_pg_node_lim(p, mc->c_bound);	/* nodes end below the anchor */
	pp->an = dl_pg_anchor(p);
	pp->kd = key->mv_data;
	pp->alen = dl_pg_anchor_len(p);
	pp->ks = key->mv_size;
	const unsigned char *kd = pp->kd, *an = pp->an;
	unsigned q = dl_lcp(kd, pp->ks, an, pp->alen);
	pp->q = q;
	/* the probe's order against a key that has anchor[q] at byte q */
	pp->past_q = q == pp->ks ? -1 : (q < pp->alen && kd[q] < an[q] ? -1 : 1);
	return 0;
}

static unsigned pfx_find(const pfx_probe *pp, unsigned lo, unsigned hi, int *exact)
{
	const dl_page *p = pp->p;
	*exact = 0;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		unsigned off = dl_pg_slot(p, mid);
		if (DL_UNLIKELY(off < pp->upper || off + DL_NODEHDR > pp->bound))
			goto damaged;
		const dl_node *n = (const dl_node *)((const char *)p + off);
		unsigned sh = dl_node_shared(n);
		size_t nk = n->n_ksize;
		if (DL_UNLIKELY(off + DL_NODEHDR + nk > pp->bound || sh > pp->alen || sh + nk > DL_MAXKEY ||
		    sh + nk == 0))
			goto damaged;
		int r = sh > pp->q ? pp->past_q : key_order(pp->kd + sh, pp->ks - sh, dl_node_key(n), nk);
		if (r > 0)
			lo = mid + 1;
		else if (r < 0)
			hi = mid;
		else
			return *exact = 1, mid;
	}
	return lo;
damaged:
	*exact = -1;
	return 0;
}

static unsigned find_prefixed(MDB_cursor *mc, const dl_page *p, const MDB_val *key, unsigned lo,
	unsigned hi, int *exact)
{
	if (mc->c_dbx->x_cmp == cmp_bytes) {
		pfx_probe pp;
		if (DL_UNLIKELY(pfx_setup(mc, p, key, lo, hi, &pp)))
			return *exact = -1, 0;
		return pfx_find(&pp, lo, hi, exact);
	}
	if (DL_UNLIKELY(!dl_pg_anchor_ok(p, mc->c_bound)))
		return *exact = -1, 0;
	return find_by_cmp(mc, p, key, lo, hi, exact);
}

/* dlmdb_node_find on a LEAF2 page of 8-byte keys under the byte order or
 * the native one (order: dlmdb_cmp_u64's answer): compared as integers,
 * no call per probe (the common DUPFIXED layout). */
static unsigned find_leaf2_u64(const dl_page *p, const MDB_val *key, int order, unsigned lo,
	unsigned hi, int *exact)
{
	uint64_t want = dl_key_u64(key->mv_data, order);
	const char *base = (const char *)p + DL_PAGEHDR;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		uint64_t x = dl_key_u64(base + (size_t)mid * 8, order);
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
/* dlmdb_node_find over the slots [lo, hi) of p only (lo >= 1 on a branch
 * page): the lower bound among them, hi if all are below key. */
static unsigned node_find_in(MDB_cursor *mc, const dl_page *p, const MDB_val *key, unsigned lo,
	unsigned hi, int *exact)
{
	MDB_cmp_func *cmp = mc->c_dbx->x_cmp;
	MDB_val k;
	*exact = 0;
	if (dl_pg_is_leaf2(p)) {
		k.mv_size = p->p_pad;
		int order;
		if (key->mv_size == 8 && p->p_pad == 8 && (order = dlmdb_cmp_u64(cmp)))
			return find_leaf2_u64(p, key, order, lo, hi, exact);
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
		return find_prefixed(mc, p, key, lo, hi, exact);
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
 * The child of branch page p (the stack's page at lvl) that covers key,
 * given that key lies right of the stack's child there (side 1: key >=
 * key(ki+1)) or left of it (side -1: key < key(ki)).  The neighbour on that
 * side first (a stride through the tree lands there), then a binary search
 * of the separators beyond it only.  Nonzero: a node outside its page.
 */
static int have_child(MDB_cursor *mc, const dl_page *p, unsigned lvl, int side,
	const MDB_val *key, unsigned *child)
{
	unsigned n = dl_pg_nkeys(p), k = mc->c_ki[lvl], r;
	int exact;
	if (side > 0) {
		k++;	/* key >= key(k): child k or one right of it */
		if (k + 1 >= n) {
			*child = k;
			return 0;
		}
		r = node_find_in(mc, p, key, k + 1, k + 2, &exact);
		if (!exact && r > k + 1)
			r = node_find_in(mc, p, key, k + 2, n, &exact);
	} else {
		/* key < key(k): child k - 1 or one left of it */
		if (k <= 1) {
			*child = 0;
			return 0;
		}
		r = node_find_in(mc, p, key, k - 1, k, &exact);
		if (!exact && r == k - 1)
			r = node_find_in(mc, p, key, 1, k - 1, &exact);
	}
	if (exact < 0)
		return 1;
	*child = exact ? r : r - 1;
	return 0;
}

unsigned dlmdb_node_find(MDB_cursor *mc, const dl_page *p, const MDB_val *key, int *exact)
{
	return node_find_in(mc, p, key, dl_pg_is_branch(p) ? 1 : 0, dl_pg_nkeys(p), exact);
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
/*
 * The descent from level lvl: page pg there, or (have nonzero) the page the
 * stack already holds at lvl, which was checked when it was read.  have 1
 * or -1 says more: key lies past the bound of the stack's child at lvl on
 * that side (right: at or past separator ki+1; left: below separator ki),
 * as a climb of cursor reuse found, so the search there tries the next
 * child on that side first and then only the separators beyond it
 * (have_child).
 */
static int descend(MDB_cursor *mc, const MDB_val *key, int where, unsigned lvl, pgno_t pg,
	int have)
{
	MDB_txn *txn = mc->c_txn;
	for (;; lvl++) {
		dl_page *p;
		if (have) {
			p = mc->c_pg[lvl];
			goto inside;
		}
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
inside:;
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
		} else if (have == 1 || have == -1) {
			if (have_child(mc, p, lvl, have, key, &i))
				return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		} else {
			int exact;
			i = dlmdb_node_find(mc, p, key, &exact);
			if (exact < 0)
				return DL_TXN_FAIL(txn, MDB_CORRUPTED);
			if (!exact)
				i--;
		}
		have = 0;
		if (!dl_node_in_page(p, i, mc->c_bound))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		mc->c_ki[lvl] = (indx_t)i;
		pg = dl_node_child(dl_pg_node(p, i));
	}
}

int dlmdb_search_root(MDB_cursor *mc, const MDB_val *key, int where)
{
	pgno_t pg = mc->c_db->d_root;
	mc->c_depth = 0;
	mc->c_flags &= ~(DL_C_INIT | DL_C_EOF | DL_C_DEL | DL_C_SAVED | DL_C_PAST);
	if (pg == DL_NO_PAGE && !mc->c_inline)
		return MDB_NOTFOUND;
	return descend(mc, key, where, 0, pg, 0);
}

/*
 * Cursor reuse (SPEC.md): a seek or put through a positioned cursor starts
 * from the stack the cursor already holds.  The result is the stack the
 * root-first descent would build, page for page and index for index, so
 * everything after the search (inserts, splits, counts, cursor state) is
 * the same whichever way it was found.
 *
 *  - In the leaf: the key of the cursor's node first, then the neighbour
 *    on the probe's side, then the separator that bounds the leaf on that
 *    side, and only then a binary search of the slots the earlier compares
 *    leave.  A sorted run of puts through one cursor costs two compares per
 *    put.  A key inside the leaf's bounds is in this leaf (maybe in the gap
 *    after its last key).
 *  - Past a bound: a page covers the keys between its tightest separators,
 *    the key of the node the path turns into at the deepest level that
 *    turns right of its first node (lower bound) and that of the node
 *    after it at the deepest level that has one (upper bound).  Climbing
 *    to the level that set the failed bound, and again while the bound
 *    there fails (only that side's bounds can), finds the deepest page on
 *    the path that covers the key; the descent restarts there with the
 *    stack above it kept, and searches that page from the failed bound
 *    on: the child next to the old one on the key's side first (a stride
 *    lands there), then only the separators beyond it (have_child).
 *  - The cursor remembers where its last search ended (c_far), and orders
 *    the next one's compares by it: after another leaf, that leaf's bounds
 *    first (a stride: one compare, then the climb); after a target outside
 *    the root's child, the search starts at the root with no compare more
 *    than a root-first one (random targets), until a target lands near
 *    the one before: under the same parent, or under the same page two
 *    levels below the root or deeper (near_again).  Results never depend
 *    on it.
 *
 * Only a stack known to be current qualifies: positioned, not saved for a
 * re-seek (another cursor changed the tree), not standing on a deleted
 * item, and not an inline sub-page (its copy is refreshed by the duplicate
 * code).  A benchmark build (DLMDB_REUSE_SWITCH, cdlmdb/reuse_switch.go)
 * can turn reuse off at run time to time both paths; other builds have
 * no switch.
 */
#ifdef DLMDB_REUSE_SWITCH
int dlmdb_reuse_off;	/* set by cdlmdb.SetCursorReuse */
#endif

/* The separator that bounds the page at level j from below (lo) or above:
 * the level that sets it, or -1 for none. */
static int bound_level(const MDB_cursor *mc, unsigned j, int lo)
{
	for (int m = (int)j - 1; m >= 0; m--) {
		unsigned i = mc->c_ki[m];
		if (lo ? i > 0 : i + 1u < dl_pg_nkeys(mc->c_pg[m]))
			return m;
	}
	return -1;
}

/* Compare key with the key of branch node i at level m: <0, 0, >0, or
 * DL_CMP_BAD when the node does not lie in its page. */
#define DL_CMP_BAD 2
static int cmp_sep(const MDB_cursor *mc, unsigned m, unsigned i, const MDB_val *key)
{
	const dl_page *p = mc->c_pg[m];
	if (!dl_node_in_page(p, i, mc->c_bound))
		return DL_CMP_BAD;
	MDB_val k;
	dlmdb_node_keyval(p, i, &k, NULL);	/* branch pages are never PREFIX */
	MDB_cmp_func *cmp = mc->c_dbx->x_cmp;
	int r = cmp == cmp_bytes ? key_order(key->mv_data, key->mv_size, k.mv_data, k.mv_size) :
		cmp(key, &k);
	return (r > 0) - (r < 0);
}

/*
 * Whether key lies beyond the separator that bounds the page at level j on
 * the side up (above: at or past the upper bound) or !up (below the lower
 * bound): 1 yes, 0 no or no such bound, -1 a damaged separator.  *m gets
 * the level that sets the bound (-1 for none).
 */
static int beyond_bound(const MDB_cursor *mc, unsigned j, int up, const MDB_val *key, int *m)
{
	*m = bound_level(mc, j, !up);
	if (*m < 0)
		return 0;
	int r = cmp_sep(mc, (unsigned)*m, mc->c_ki[*m] + (up ? 1u : 0u), key);
	if (r == DL_CMP_BAD)
		return -1;
	return up ? r >= 0 : r < 0;
}

/*
 * The deepest level whose page on the stack covers key, given that key lies
 * beyond the bound level m sets on side up (so the page at m is the deepest
 * candidate), or -1 on a damaged separator.  Only that side's bounds can
 * fail: key lies past the cursor's own key, which every bound on the other
 * side admits.
 */
static int climb(const MDB_cursor *mc, int m, int up, const MDB_val *key)
{
	for (;;) {
		int m2 = bound_level(mc, (unsigned)m, !up);
		if (m2 < 0)
			return m;
		int r = cmp_sep(mc, (unsigned)m2, mc->c_ki[m2] + (up ? 1u : 0u), key);
		if (r == DL_CMP_BAD)
			return -1;
		if (up ? r < 0 : r >= 0)
			return m;
		m = m2;
	}
}

/* c_far: where the last search through the cursor ended, a hint for the
 * order of the next one's compares (never for its result) */
#define DL_NEAR 0	/* in its leaf: the neighbour first */
#define DL_UP 1		/* in a leaf to the right: the leaf's bounds first, upper */
#define DL_DOWN 2	/* ... to the left: lower bound first */
#define DL_ROOT 3	/* outside the root's child: from the root */

/*
 * After a search from the root (DL_ROOT): whether the new path stays near
 * the old one, so that the next search should try the leaf's bounds and
 * climb first.  It should when both paths share the leaf's parent (the
 * climb is one compare), or the page two levels below the root: a climb
 * to it costs a compare per level below it, while the root-first search
 * pays a binary search of both levels above it.  Random targets rarely
 * share more than the root's child.  near_note keeps what near_again
 * compares (the old path's pages and indexes at those two levels).
 */
typedef struct {
	unsigned top;		/* the old path's leaf level (0: nothing noted) */
	const dl_page *pg2, *parent;
	indx_t ki2, kiparent;
} dl_near;

static inline void near_note(const MDB_cursor *mc, dl_near *w)
{
	w->top = mc->c_top;
	w->parent = mc->c_pg[mc->c_top - 1];
	w->kiparent = mc->c_ki[mc->c_top - 1];
	if (mc->c_top > 2) {
		w->pg2 = mc->c_pg[2];
		w->ki2 = mc->c_ki[2];
	}
}

static unsigned near_again(const MDB_cursor *mc, const dl_near *w)
{
	unsigned top = mc->c_top;
	if (top != w->top || !top)
		return DL_ROOT;	/* the tree changed height: start afresh */
	if (mc->c_pg[top - 1] == w->parent)
		return mc->c_ki[top - 1] >= w->kiparent ? DL_UP : DL_DOWN;
	if (top > 2 && mc->c_pg[2] == w->pg2)
		/* the side the paths part to, when they part at level 2 (a
		 * deeper parting is a hint only either way) */
		return mc->c_ki[2] >= w->ki2 ? DL_UP : DL_DOWN;
	return DL_ROOT;
}

/* node_find_in on the cursor's leaf, through pp when the leaf is PREFIX
 * under the byte order (its anchor compared with key once per search) */
static unsigned leaf_find(MDB_cursor *mc, const dl_page *p, const pfx_probe *pp, const MDB_val *key,
	unsigned lo, unsigned hi, int *exact)
{
	if (pp)
		return pfx_find(pp, lo, hi, exact);
	return node_find_in(mc, p, key, lo, hi, exact);
}

/*
 * Where key goes in the cursor's leaf p of n >= 1 keys, probing from the
 * cursor's index i: key(i), then the neighbour on the key's side and the
 * separator that bounds the leaf on that side (a key past it belongs to
 * another leaf: *lvl gets the level to search again from, else -1, and
 * *side the side of the bound it failed, 1 right or -1 left), and
 * only then a binary search of the slots the compares leave.  After a
 * target in another leaf (c_far) the bounds come first, and a key inside
 * them gets a binary search of the whole leaf.
 */
static unsigned leaf_near(MDB_cursor *mc, const dl_page *p, unsigned n, const MDB_val *key,
	int *exact, int *lvl, int *side)
{
	unsigned i = mc->c_ki[mc->c_top];
	if (i >= n)
		i = n - 1;
	*lvl = -1;
	*exact = 0;
	if (mc->c_far == DL_UP || mc->c_far == DL_DOWN) {
		/* the last target was in another leaf: the leaf's bounds
		 * decide first (a stride through the tree: one compare),
		 * the side that failed last time first */
		for (int t = 0; t < 2; t++) {
			int up = (mc->c_far == DL_UP) != t, m, b = beyond_bound(mc, mc->c_top, up, key, &m);
			if (b) {
				if (b < 0 || (*lvl = climb(mc, m, up, key)) < 0)
					*exact = -1;
				mc->c_far = *lvl == 0 ? DL_ROOT : up ? DL_UP : DL_DOWN;
				*side = up ? 1 : -1;
				return 0;
			}
		}
		mc->c_far = DL_NEAR;
		return node_find_in(mc, p, key, 0, n, exact);
	}
	pfx_probe pb, *pp = NULL;
	if (dl_pg_prefix(p) && !dl_pg_is_leaf2(p) && mc->c_dbx->x_cmp == cmp_bytes) {
		if (DL_UNLIKELY(pfx_setup(mc, p, key, i, i + 1, &pb)))
			return *exact = -1, 0;
		pp = &pb;
	}
	unsigned r = leaf_find(mc, p, pp, key, i, i + 1, exact);
	if (*exact)
		return r;	/* a hit, or damage (-1) */
	int up = r > i;
	unsigned lo = up ? (i + 2 < n ? i + 2 : n) : 0, hi = up ? n : (i > 0 ? i - 1 : 0);
	if (up ? i + 1 < n : i > 0) {
		unsigned j = up ? i + 1 : i - 1;
		r = leaf_find(mc, p, pp, key, j, j + 1, exact);
		if (*exact || r == (up ? j : i))
			return r;
	}
	int m, b = beyond_bound(mc, mc->c_top, up, key, &m);
	if (b) {
		if (b < 0 || (*lvl = climb(mc, m, up, key)) < 0)
			*exact = -1;
		mc->c_far = *lvl == 0 ? DL_ROOT : up ? DL_UP : DL_DOWN;
		*side = up ? 1 : -1;
		return 0;
	}
	mc->c_far = DL_NEAR;
	if (lo >= hi)
		return *exact = 0, lo;
	return leaf_find(mc, p, pp, key, lo, hi, exact);
}

int dlmdb_search_key(MDB_cursor *mc, const MDB_val *key, int *exact)
{
	int rc;
#ifdef DLMDB_REUSE_SWITCH
	if (!__atomic_load_n(&dlmdb_reuse_off, __ATOMIC_RELAXED))
#endif
	if ((mc->c_flags & (DL_C_INIT | DL_C_SAVED | DL_C_DEL)) == DL_C_INIT && mc->c_depth &&
	    !mc->c_inline && mc->c_top + 1 == mc->c_depth) {
		dl_page *p = mc->c_pg[mc->c_top];
		unsigned n = dl_pg_nkeys(p);
		if (n) {
			int j = 0, side = 0;
			unsigned i = 0;
			dl_near was = {0};
			if (mc->c_far == DL_ROOT && mc->c_top) {
				/* the last target left the root's child: this one
				 * is searched from the root without a compare more
				 * than the root-first search (random targets), and
				 * only a target near the last one brings the leaf's
				 * bounds back (below) */
				near_note(mc, &was);
				*exact = 0;
			} else {
				i = leaf_near(mc, p, n, key, exact, &j, &side);
				if (*exact < 0)
					return 0;	/* the caller reports the damage */
			}
			mc->c_flags = (mc->c_flags & ~(DL_C_EOF | DL_C_PAST)) | DL_C_INIT;
			if (j < 0) {
				mc->c_ki[mc->c_top] = (indx_t)i;
				return 0;
			}
			/* another leaf: down again from the covering page */
			mc->c_depth = (unsigned)j + 1;
			mc->c_top = (unsigned)j;
			mc->c_flags &= ~DL_C_INIT;
			if ((rc = descend(mc, key, DL_SEARCH_KEY, (unsigned)j, 0, side ? side : 2)))
				return rc;
			if (was.top)
				mc->c_far = near_again(mc, &was);
			goto leaf;
		}
	}
	if ((rc = dlmdb_search_root(mc, key, DL_SEARCH_KEY)))
		return rc;
leaf:
	mc->c_ki[mc->c_top] = (indx_t)dlmdb_node_find(mc, mc->c_pg[mc->c_top], key, exact);
	return 0;
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
