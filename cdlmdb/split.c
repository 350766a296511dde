/*
 * split.c - inserting a node at a given level, splitting full pages.
 *
 * dlmdb_insert_at places a ready-made node blob at (level, index).  When the
 * page is full the page's nodes plus the new one are viewed as one ordered
 * sequence of "items", cut where stock LMDB 0.9 cuts (see stock_cut; a
 * byte-balanced cut if that would not fit; right at the end of the leaf
 * for MDB_APPEND), written back into the old
 * page and a new right sibling, and a separator pointing at the sibling is
 * inserted one level up -- recursively, growing a new root when the old
 * root splits.  The first node of a new right branch page gets an empty key
 * (branch key 0 is never consulted).  After a split the caller re-seeks.
 */
#include "internal.h"

struct item_view {
	const dl_page *src;	/* snapshot of the full page */
	unsigned idx;		/* where the new blob goes */
	unsigned n;		/* items including the new one */
	const void *blob;
	size_t bloblen;
};

static const dl_node *item_node(const struct item_view *v, unsigned i, size_t *len)
{
	if (i == v->idx) {
		*len = v->bloblen;
		return v->blob;
	}
	const dl_node *nd = dl_pg_node(v->src, i < v->idx ? i : i - 1);
	*len = dl_node_bytes(v->src, nd) - sizeof(indx_t);
	return nd;
}

static size_t item_cost(const struct item_view *v, unsigned i)
{
	size_t len;
	item_node(v, i, &len);
	return dl_even(len) + sizeof(indx_t);
}

/* Copy item i into page p at slot position pos; strip the key if asked. */
static void item_put(const struct item_view *v, unsigned i, dl_page *p, unsigned pos, int nokey)
{
	size_t len;
	const dl_node *nd = item_node(v, i, &len);
	if (nokey && nd->n_ksize) {
		dlmdb_pg_add_branch(p, pos, NULL, dl_node_child(nd), dl_node_counts(nd));
		return;
	}
	dlmdb_pg_add_raw(p, pos, nd, len);
}

static int split_page(MDB_cursor *mc, unsigned level, unsigned idx, const void *blob,
	size_t len, unsigned putflags);

/*
 * Last step of a split at `level` (the page p now holds the left half,
 * right the rest): grow a new root when the root split, give the parent's
 * node for p the left half's counts and the separator (sepbuf, key of
 * seplen bytes followed by room for the counts) the right half's, and
 * insert the separator one level up.
 */
static int split_finish(MDB_cursor *mc, unsigned level, dl_page *p, dl_page *right,
	unsigned char *sepbuf, size_t seplen, unsigned putflags)
{
	MDB_txn *txn = mc->c_txn;
	unsigned psize = txn->t_env->e_psize;
	int rc;
	if (level == 0) {
		dl_page *root;
		if (mc->c_depth >= DL_MAX_DEPTH)
			return MDB_CURSOR_FULL;
		if ((rc = dlmdb_page_alloc(txn, 1, &root)))
			return rc;
		dlmdb_pg_init(root, root->p_pgno, dl_db_branch_flags(mc->c_db), psize);
		dlmdb_pg_add_branch(root, 0, NULL, p->p_pgno, NULL);
		mc->c_db->d_root = root->p_pgno;
		mc->c_db->d_depth++;
		mc->c_db->d_branch++;
		for (unsigned l = mc->c_depth; l > 0; l--) {
			mc->c_pg[l] = mc->c_pg[l - 1];
			mc->c_ki[l] = mc->c_ki[l - 1];
		}
		mc->c_pg[0] = root;
		mc->c_ki[0] = 0;
		mc->c_depth++;
		mc->c_top++;
		level = 1;
	}
	dl_page *parent = mc->c_pg[level - 1];
	unsigned cb = dl_pg_cntbytes(parent);
	if (cb) {
		int dupsort = (mc->c_db->d_flags & MDB_DUPSORT) != 0;
		uint64_t e, k;
		dlmdb_count_set_from(parent, dl_pg_node(parent, mc->c_ki[level - 1]), p, dupsort);
		dlmdb_count_page(right, dupsort, &e, &k);
		dl_node *sn = (dl_node *)sepbuf;
		dl_node_set_count(sn, e);
		if (cb > 8)
			dl_node_set_keycount(sn, k);
	}
	int dummy = 0;
	/* the separator goes into the parent by an ordinary insert (as LMDB:
	 * only the leaf level splits for an append) */
	return dlmdb_insert_at(mc, level - 1, mc->c_ki[level - 1] + 1u, sepbuf,
		DL_NODEHDR + seplen + cb, putflags & ~MDB_APPEND, &dummy);
}

/* Bytes items [from, to) need in a page; a right branch page drops the key
 * of its first item. */
static size_t items_bytes(const struct item_view *v, unsigned from, unsigned to, int branch)
{
	size_t sum = 0;
	for (unsigned i = from; i < to; i++)
		sum += item_cost(v, i);
	if (branch && from > 0 && from < to) {
		size_t len0;
		item_node(v, from, &len0);
		sum -= dl_even(len0) - dl_even(DL_NODEHDR + dl_pg_cntbytes(v->src));
	}
	return sum;
}

static int cut_fits(const struct item_view *v, unsigned cut, int branch, size_t cap)
{
	return cut > 0 && cut < v->n && items_bytes(v, 0, cut, branch) <= cap &&
		items_bytes(v, cut, v->n, branch) <= cap;
}

/* The most even cut (in bytes) at which both halves fit; 0 if none. */
static unsigned balanced_cut(const struct item_view *v, int branch, size_t cap)
{
	unsigned cut = 0;
	size_t best = (size_t)-1;
	for (unsigned c = 1; c < v->n; c++) {
		size_t left = items_bytes(v, 0, c, branch), right = items_bytes(v, c, v->n, branch);
		if (left > cap || right > cap)
			continue;
		size_t diff = left > right ? left - right : right - left;
		if (diff < best) {
			best = diff;
			cut = c;
		}
	}
	return cut;
}

/*
 * The cut stock LMDB 0.9 makes, so that both engines build the same pages
 * from the same operations (cursor results after a failed lookup or at the
 * end of a page depend on where pages end).  Its rule: cut at the middle
 * by count; but when the page holds few items, the new item is large, or
 * it goes to the end, walk the items' sizes from one end -- from the left
 * when the new item is in the left half or last (then only the last old
 * item joins it on the new page), from the right otherwise -- and cut where
 * the running total first exceeds a page or at a fixed bound near the
 * middle.  The caller verifies that both halves fit.
 */
static unsigned stock_cut(const struct item_view *v, int leaf, size_t pmax, unsigned psize)
{
	unsigned nold = v->n - 1, idx = v->idx, mid = (nold + 1) / 2;
	if (!(nold < (psize >> 7) || item_cost(v, idx) > pmax / 16 || idx >= nold))
		return mid;
	size_t run = 0;
	if (idx <= mid || idx >= nold) {
		unsigned stop = idx >= nold ? nold : mid + 1 + (unsigned)leaf;
		if (stop > v->n)
			stop = v->n;
		for (unsigned i = 0; i < stop; i++) {
			run += item_cost(v, i);
			if (run > pmax || i + 1 == stop)
				return i;
		}
		return mid;
	}
	for (unsigned i = nold;; i--) {
		run += item_cost(v, i);
		if (run > pmax || i == mid)
			return i + 1;
	}
}

/* Split a full LEAF2 page while inserting key (p_pad bytes) at idx. */
/* Keys [0, n) of the empty LEAF2 page p := keys (n of ks bytes), as n calls
 * of dlmdb_pg_add_leaf2 at the end would leave it, in one copy. */
static void leaf2_fill(dl_page *p, const char *keys, unsigned n, unsigned ks)
{
	DL_ASSERT(dl_pg_nkeys(p) == 0 && dl_pg_room(p) >= (size_t)n * ks);
	memcpy((char *)p + DL_PAGEHDR, keys, (size_t)n * ks);
	p->p_lower = (uint16_t)(p->p_lower + n * sizeof(indx_t));
	p->p_upper = (uint16_t)(p->p_upper + n * sizeof(indx_t) - (size_t)n * ks);
}

static int split_leaf2(MDB_cursor *mc, unsigned level, unsigned idx, const void *key,
	unsigned putflags)
{
	MDB_txn *txn = mc->c_txn;
	size_t psize = txn->t_env->e_psize;
	dl_page *p = mc->c_pg[level];
	unsigned ks = p->p_pad, n = dl_pg_nkeys(p), m = n + 1;
	int rc;
	if (!txn->t_scratch[0] && !(txn->t_scratch[0] = malloc(psize)))
		return ENOMEM;
	char *all = txn->t_scratch[0];
	char *base = (char *)p + DL_PAGEHDR;
	/* the full sequence of m keys, the new one in place */
	memcpy(all, base, (size_t)idx * ks);
	memcpy(all + (size_t)idx * ks, key, ks);
	memcpy(all + (size_t)(idx + 1) * ks, base + (size_t)idx * ks, (size_t)(n - idx) * ks);
	/* as LMDB: the first (n+1)/2 old keys stay, and the new key joins
	 * them when it sorts before the first key that moves */
	unsigned half = m / 2;
	unsigned cut = ((putflags & MDB_APPEND) && idx == n) ? n : half + (idx < half);
	if (cut == 0)
		cut = 1;
	unsigned char sepbuf[DL_NODEHDR + DL_MAXKEY + 2 + 16];
	dl_node *sepnode = (dl_node *)sepbuf;
	sepnode->n_ksize = (uint16_t)ks;
	memcpy(sepbuf + DL_NODEHDR, all + (size_t)cut * ks, ks);
	dl_page *right;
	if ((rc = dlmdb_page_alloc(txn, 1, &right)))
		return rc;
	dlmdb_pg_init(right, right->p_pgno, p->p_flags & (DL_P_LEAF | DL_P_LEAF2), (unsigned)psize);
	right->p_pad = (uint16_t)ks;
	dl_node_set_child(sepnode, right->p_pgno);
	mc->c_db->d_leaf++;
	uint16_t flags = p->p_flags;
	dlmdb_pg_init(p, p->p_pgno, flags, (unsigned)psize);
	p->p_pad = (uint16_t)ks;
	leaf2_fill(p, all, cut, ks);
	leaf2_fill(right, all + (size_t)cut * ks, m - cut, ks);
	return split_finish(mc, level, p, right, sepbuf, ks, putflags);
}

int dlmdb_insert_at(MDB_cursor *mc, unsigned level, unsigned idx, const void *blob,
	size_t len, unsigned putflags, int *split)
{
	dl_page *p = mc->c_pg[level];
	/* A damaged free list can hand out a page that is still in use; with
	 * WRITEMAP its new image then overwrites a page on this very path.
	 * Refuse to shift slots or nodes by a position or room that the page
	 * does not have (the memmoves below would run wild). */
	if (DL_UNLIKELY(p->p_lower < DL_PAGEHDR || p->p_lower > p->p_upper ||
	    p->p_upper > mc->c_txn->t_env->e_psize || idx > dl_pg_nkeys(p)))
		return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
	if (dl_pg_is_leaf2(p)) {
		/* blob is the bare key (a damaged tree may put a LEAF2 page
		 * where a branch belongs: never copy pad bytes from a node) */
		if (DL_UNLIKELY(len != p->p_pad || !dl_pg_is_leaf(p) || dl_pg_is_branch(p)))
			return DL_TXN_FAIL(mc->c_txn, MDB_CORRUPTED);
		if (dl_pg_room(p) >= p->p_pad) {
			dlmdb_pg_add_leaf2(p, idx, blob);
			return 0;
		}
		*split = 1;
		return split_leaf2(mc, level, idx, blob, putflags);
	}
	/* a leaf blob carries its whole key; a PREFIX page stores it encoded
	 * against the page's anchor (FORMAT.md), made from it when the page
	 * is empty and has none */
	const void *full = blob;
	if (dl_pg_prefix(p) && dl_pg_is_leaf(p)) {
		const dl_node *fn = blob;
		if (!dl_pg_nkeys(p) && !p->p_pad && p->p_upper == mc->c_bound &&
		    dl_pg_room(p) >= dl_even(sizeof(uint16_t) + fn->n_ksize) + dl_even(len) + sizeof(indx_t))
		{
			dlmdb_pfx_set_anchor(p, (const char *)blob + DL_NODEHDR, fn->n_ksize);
			mc->c_txn->t_pgen++;
		}
		char *enc = dlmdb_txn_scratch(mc->c_txn, DL_SCRATCH_PFXBLOB);
		if (!enc)
			return ENOMEM;
		len = dlmdb_pfx_encode(p, blob, len, enc);
		blob = enc;
	}
	if (dl_pg_room(p) >= dl_even(len) + sizeof(indx_t)) {
		unsigned n = dl_pg_nkeys(p);
		if (dl_pg_is_leaf(p) && n && idx == n && dlmdb_past_cursors(mc)) {
			/* a cursor past the end of this leaf stays past its end */
			MDB_val oldlast, newlast;
			unsigned char ob[DL_MAXKEY];
			dlmdb_node_keyval(p, n - 1, &oldlast, ob);
			newlast.mv_size = ((const dl_node *)full)->n_ksize;
			newlast.mv_data = (char *)full + DL_NODEHDR;
			dlmdb_retarget_past(mc, &oldlast, &newlast, DL_C_PAST);
		}
		dlmdb_pg_add_raw(p, idx, blob, len);
		return 0;
	}
	*split = 1;
	return split_page(mc, level, idx, blob, len, putflags);
}

/*
 * Write the halves of a PREFIX leaf's split: items [0, cut) into p, the
 * rest into right, each laid out anew (prefix.c chooses the anchors; the
 * old page's anchor is a candidate, and the cut was chosen so that the
 * halves fit under it).
 */
static int split_prefixed(MDB_txn *txn, const struct item_view *v, unsigned cut, dl_page *p,
	dl_page *right, unsigned psize)
{
	const dl_page *snap = v->src;
	dl_pfx_item *it = dlmdb_pfx_items(txn, v->n);
	if (!it)
		return ENOMEM;
	dlmdb_pfx_arena_reset(txn);
	/* the snapshot's nodes with the new node (encoded against the same
	 * anchor) in its place: gather around it */
	int rc;
	if ((rc = dlmdb_pfx_gather(txn, snap, 0, v->idx, it)) ||
	    (rc = dlmdb_pfx_gather(txn, snap, v->idx, v->n - 1, it + v->idx + 1)))
		return rc;
	{
		const dl_node *nd = v->blob;
		dl_pfx_item *ni = &it[v->idx];
		unsigned sh = dl_node_shared(nd);
		unsigned char *k = dlmdb_pfx_arena(txn, sh + nd->n_ksize);
		if (!k)
			return ENOMEM;
		memcpy(k, dl_pg_anchor(snap), sh);
		memcpy(k + sh, dl_node_key(nd), nd->n_ksize);
		ni->key = k;
		ni->klen = sh + nd->n_ksize;
		ni->kind = dl_node_kind(nd);
		ni->dsize = dl_node_dsize(nd);
		ni->data = dl_node_data(nd);
		ni->dlen = (nd->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(nd);
		ni->sh = sh;
	}
	/* every item's share of the old anchor is its node's, as cut_fits counted */
	dl_pfx_cand old = {snap->p_pad ? dl_pg_anchor(snap) : NULL, dl_pg_anchor_len(snap), 1}, best;
	txn->t_pgen++;	/* both pages get new anchors (dl_cur_key) */
	size_t cap = psize - DL_PAGEHDR;
	for (int half = 0; half < 2; half++) {
		dl_page *dst = half ? right : p;
		dl_pfx_item *hi = half ? it + cut : it;
		unsigned hn = half ? v->n - cut : cut;
		if (dlmdb_pfx_best(hi, hn, &old, 1, &best) > cap)
			return MDB_PROBLEM;
		if (hn == 1 && DL_PAGEHDR + dl_even(sizeof(uint16_t) + hi[0].klen) +
		    dl_even(DL_NODEHDR + hi[0].dlen) + sizeof(indx_t) <= psize) {
			/* a page of one item (the new page of an append): its key
			 * is the anchor, as for the first key of an empty leaf, so
			 * the keys that follow it share with it */
			best.a = hi[0].key;
			best.len = hi[0].klen;
			hi[0].sh = hi[0].klen;
		}
		dlmdb_pfx_build(dst, psize, hi, hn, &best, 1);
	}
	return 0;
}

static int split_page(MDB_cursor *mc, unsigned level, unsigned idx, const void *blob,
	size_t len, unsigned putflags)
{
	MDB_txn *txn = mc->c_txn;
	MDB_env *env = txn->t_env;
	size_t psize = env->e_psize, cap = psize - DL_PAGEHDR;
	dl_page *p = mc->c_pg[level];
	int branch = dl_pg_is_branch(p);
	int rc;

	if (!txn->t_scratch[0] && !(txn->t_scratch[0] = malloc(psize)))
		return ENOMEM;
	dl_page *snap = (dl_page *)txn->t_scratch[0];
	memcpy(snap, p, psize);
	struct item_view v = {snap, idx, dl_pg_nkeys(snap) + 1, blob, len};

	/* a PREFIX leaf's halves must fit under its present anchor too */
	int pfx = dl_pg_prefix(p) && !branch;
	if (pfx)
		cap -= dl_pg_anchor_bytes(snap);
	/* choose the cut: items [0,cut) stay, [cut,n) move right */
	unsigned cut = 0;
	if ((putflags & MDB_APPEND) && idx == v.n - 1) {
		cut = v.n - 1;
	} else {
		cut = stock_cut(&v, !branch, cap, (unsigned)psize);
		if (!cut_fits(&v, cut, branch, cap))
			cut = balanced_cut(&v, branch, cap);
		if (!cut)
			return MDB_PAGE_FULL;
	}

	/* separator: key of the first item that moves right */
	unsigned char sepbuf[DL_NODEHDR + DL_MAXKEY + 2 + 16];
	size_t seplen;
	const dl_node *first = item_node(&v, cut, &seplen);
	MDB_val sep;
	unsigned char kb1[DL_MAXKEY], kb2[DL_MAXKEY];
	dl_leaf_key(snap, first, &sep, kb1);	/* a branch's keys are whole */
	if (sep.mv_size > DL_MAXKEY)	/* damaged node: the page check bounds keys by the page only */
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	dl_node *sepnode = (dl_node *)sepbuf;
	sepnode->n_ksize = (uint16_t)sep.mv_size;
	memcpy(sepbuf + DL_NODEHDR, sep.mv_data, sep.mv_size);

	dl_page *right;
	if ((rc = dlmdb_page_alloc(txn, 1, &right)))
		return rc;
	dlmdb_pg_init(right, right->p_pgno, p->p_flags & (DL_P_BRANCH | DL_P_LEAF | DL_P_LEAF2 |
		DL_P_COUNTED | DL_P_KEYCOUNT | DL_P_PREFIX), (unsigned)psize);
	right->p_pad = p->p_pad;
	dl_node_set_child(sepnode, right->p_pgno);
	if (branch)
		mc->c_db->d_branch++;
	else
		mc->c_db->d_leaf++;

	if (!branch && v.n >= 2 && dlmdb_past_cursors(mc)) {
		/* as LMDB: a cursor past the end of the page ends up past the end
		 * of the new right page */
		MDB_val oldlast, newlast;
		size_t l1, l2;
		const dl_node *a = item_node(&v, idx == v.n - 1 ? v.n - 2 : v.n - 1, &l1);
		const dl_node *b = item_node(&v, v.n - 1, &l2);
		dl_leaf_key(snap, a, &oldlast, kb1);
		dl_leaf_key(snap, b, &newlast, kb2);
		dlmdb_retarget_past(mc, &oldlast, &newlast, DL_C_PAST);
	}
	if (pfx) {
		if ((rc = split_prefixed(txn, &v, cut, p, right, (unsigned)psize)))
			return DL_TXN_FAIL(txn, rc);
		return split_finish(mc, level, p, right, sepbuf, sep.mv_size, putflags);
	}
	/* rebuild both halves from the snapshot */
	dlmdb_pg_init(p, p->p_pgno, snap->p_flags, (unsigned)psize);
	p->p_pad = snap->p_pad;
	for (unsigned i = 0; i < cut; i++)
		item_put(&v, i, p, i, 0);
	for (unsigned i = cut; i < v.n; i++)
		item_put(&v, i, right, i - cut, branch && i == cut);

	return split_finish(mc, level, p, right, sepbuf, sep.mv_size, putflags);
}
