/*
 * counted.c - MDB_COUNTED: subtree counts in branch nodes and the
 * order-statistics queries built on them.
 *
 * Maintenance.  A change at a leaf first adds its delta (entries, and for
 * DUPSORT main trees distinct keys) to every branch node on the writing
 * cursor's path (dlmdb_count_bump; the path is already dirty).  Structural
 * changes then fix only what they move: a split sets the counts of the
 * parent's nodes for both halves from the halves' contents, a merge adds the
 * right node's counts to the left one, a borrowed item moves its count from
 * one parent node to the other.  Nodes copied between pages carry their
 * counts with them (the counts are part of the node bytes).
 */
#include "internal.h"

void dlmdb_count_bump(MDB_cursor *mc, int64_t dent, int64_t dkeys)
{
	if (!(mc->c_db->d_flags & MDB_COUNTED) || (!dent && !dkeys))
		return;
	for (unsigned l = 0; l < mc->c_top; l++) {
		dl_page *p = mc->c_pg[l];
		DL_ASSERT(p->p_flags & DL_P_COUNTED);
		dl_node *n = dl_pg_node(p, mc->c_ki[l]);
		dl_node_set_count(n, dl_node_count(n) + (uint64_t)dent);
		if (p->p_flags & DL_P_KEYCOUNT)
			dl_node_set_keycount(n, dl_node_keycount(n) + (uint64_t)dkeys);
	}
}

void dlmdb_count_page(const dl_page *p, int dupsort, uint64_t *ent, uint64_t *keys)
{
	unsigned n = dl_pg_nkeys(p);
	uint64_t e = 0, k = 0;
	if (dl_pg_is_branch(p)) {
		for (unsigned i = 0; i < n; i++) {
			const dl_node *nd = dl_pg_node(p, i);
			e += dl_node_count(nd);
			k += (p->p_flags & DL_P_KEYCOUNT) ? dl_node_keycount(nd) : dl_node_count(nd);
		}
	} else if (dl_pg_is_leaf2(p) || !dupsort) {
		e = k = n;
	} else {
		for (unsigned i = 0; i < n; i++)
			e += dl_leaf_items(dl_pg_node(p, i), 1);
		k = n;
	}
	*ent = e;
	*keys = k;
}

void dlmdb_count_set_from(const dl_page *parent, dl_node *n, const dl_page *child, int dupsort)
{
	if (!(parent->p_flags & DL_P_COUNTED))
		return;
	uint64_t e, k;
	dlmdb_count_page(child, dupsort, &e, &k);
	dl_node_set_count(n, e);
	if (parent->p_flags & DL_P_KEYCOUNT)
		dl_node_set_keycount(n, k);
}

/* ---- queries ------------------------------------------------------------------ */

/*
 * Every query walks one root-to-leaf path.  Going down by key (range
 * bounds, key ranks) it adds up the counts of the branch nodes left of the
 * path; going down by rank it skips whole children whose counts lie below
 * the rank.  At a leaf the position itself is the count, except in a
 * DUPSORT main tree where each node stands for dl_leaf_items entries.  A
 * rank inside one key's duplicates is an index into its sub-page, or a
 * second descent through its (counted) sub-tree.
 *
 * Rank cache (cursor queries): c_rank0[l] is the rank of the first entry
 * under c_pg[l].  A stack is a root path, so while the tree is unchanged
 * (t_gen) and the leaf is the same page, every level's base still holds,
 * whatever moves the cursor made in between.  The next rank then climbs to
 * the lowest page covering it and walks sideways from the child the stack
 * already names.
 */

/* Local cursor, with duplicate sub-cursor for DUPSORT DBs. */
typedef struct cq_cursor {
	MDB_cursor q_c;
	dl_xcur q_x;
} cq_cursor;

static int cq_corrupt(MDB_txn *txn)
{
	return DL_TXN_FAIL(txn, MDB_CORRUPTED);
}

/* The usual checks of a txn-level read, plus: the DB must be counted. */
static int cq_open(MDB_txn *txn, MDB_dbi dbi)
{
	int rc = dlmdb_txn_usable(txn, 0);
	if (rc)
		return rc;
	if ((rc = dlmdb_dbi_ok(txn, dbi)))
		return rc;
	if (dbi == DL_FREE_DBI)
		return EINVAL;
	if (txn->t_dbstate[dbi] & DL_DBS_STALE) {
		if ((rc = dlmdb_db_refresh(txn, dbi)))
			return rc;
	}
	if (!(txn->t_dbs[dbi].d_flags & MDB_COUNTED))
		return MDB_INCOMPATIBLE;
	return 0;
}

static int cq_cursor_init(cq_cursor *q, MDB_txn *txn, MDB_dbi dbi, int withsub)
{
	dlmdb_cursor_setup(&q->q_c, txn, dbi);
	if (withsub && (txn->t_dbs[dbi].d_flags & MDB_DUPSORT)) {
		if (!txn->t_scratch[2] && !(txn->t_scratch[2] = malloc(txn->t_env->e_psize)))
			return ENOMEM;
		q->q_x.x_buf = txn->t_scratch[2];
		dlmdb_dup_bind(&q->q_c, &q->q_x);
	}
	return 0;
}

/* Count flags every branch page of mc's tree must carry. */
static unsigned cq_cntflags(const MDB_cursor *mc)
{
	return dl_db_branch_flags(mc->c_db) & (DL_P_COUNTED | DL_P_KEYCOUNT);
}

/* Does mc's tree count duplicates per leaf node (a DUPSORT main tree)? */
static int cq_dupmain(const MDB_cursor *mc)
{
	return (mc->c_db->d_flags & MDB_DUPSORT) != 0;
}

/* Shape checks of a page about to be used as a tree level. */
static int cq_page_ok(const MDB_cursor *mc, const dl_page *p)
{
	unsigned kind = p->p_flags & (DL_P_BRANCH | DL_P_LEAF);
	if (kind != DL_P_BRANCH && kind != DL_P_LEAF)
		return 0;
	if (p->p_lower < DL_PAGEHDR || p->p_lower > p->p_upper || p->p_upper > mc->c_bound)
		return 0;
	unsigned n = dl_pg_nkeys(p);
	if (kind == DL_P_BRANCH) {
		unsigned want = cq_cntflags(mc);
		return n > 0 && (want & DL_P_COUNTED) &&
			(p->p_flags & (DL_P_COUNTED | DL_P_KEYCOUNT)) == want;
	}
	if (dl_pg_is_leaf2(p))
		return p->p_pad && p->p_pad <= DL_MAXKEY && DL_PAGEHDR + (size_t)n * p->p_pad <= mc->c_bound &&
			mc->c_owner && (mc->c_db->d_flags & MDB_DUPFIXED);
	return 1;
}

/* Entries leaf node i of p stands for (checked: a damaged node fails). */
static int cq_items(const MDB_cursor *mc, const dl_page *p, unsigned i, uint64_t *out)
{
	if (!cq_dupmain(mc) || dl_pg_is_leaf2(p)) {
		*out = 1;
		return 0;
	}
	if (!dl_node_in_page(p, i, mc->c_bound))
		return MDB_CORRUPTED;
	const dl_node *n = dl_pg_node(p, i);
	if (n->n_flags & DL_N_DUP) {
		size_t ds = dl_node_dsize(n);
		if ((n->n_flags & DL_N_BIG) ||
		    dl_pg_slot(p, i) + DL_NODEHDR + n->n_ksize + ds > mc->c_bound)
			return MDB_CORRUPTED;
		if ((n->n_flags & DL_N_TREE) ? ds != sizeof(dl_dbrec) : ds < DL_PAGEHDR)
			return MDB_CORRUPTED;
	}
	*out = dl_leaf_items(n, 1);
	return *out ? 0 : MDB_CORRUPTED;
}

/* Entries and distinct keys of items [from, to) of level l of mc's stack
 * (branch nodes by their counts, leaf items by what they stand for). */
static int cq_sum(const MDB_cursor *mc, unsigned l, unsigned from, unsigned to, uint64_t *ent,
	uint64_t *keys)
{
	const dl_page *p = mc->c_pg[l];
	uint64_t e = 0, k = 0;
	if (dl_pg_is_branch(p)) {
		int kc = (p->p_flags & DL_P_KEYCOUNT) != 0;
		for (unsigned i = from; i < to; i++) {
			if (!dl_node_in_page(p, i, mc->c_bound))
				return MDB_CORRUPTED;
			const dl_node *nd = dl_pg_node(p, i);
			e += dl_node_count(nd);
			k += kc ? dl_node_keycount(nd) : dl_node_count(nd);
		}
	} else if (cq_dupmain(mc) && !dl_pg_is_leaf2(p)) {
		for (unsigned i = from; i < to; i++) {
			uint64_t it;
			if (cq_items(mc, p, i, &it))
				return MDB_CORRUPTED;
			e += it;
		}
		k = to - from;
	} else {
		e = k = to - from;
	}
	*ent = e;
	*keys = k;
	return 0;
}

/* Are the totals of the page at level l known without reading it? */
static int cq_total_known(const MDB_cursor *mc, unsigned l)
{
	return l > 0 || !cq_dupmain(mc);
}

/* Does cq_left count position ki of an n-item page from the right? */
static int cq_from_right(const MDB_cursor *mc, unsigned l, unsigned ki, unsigned n)
{
	return ki > n / 2 && cq_total_known(mc, l);
}

/* Items cq_left reads for position ki of an n-item page at level l. */
static unsigned cq_left_cost(const MDB_cursor *mc, unsigned l, unsigned ki, unsigned n)
{
	return cq_from_right(mc, l, ki, n) ? n - ki : ki;
}

/*
 * What lies in front of c_ki[l] on level l.  When the page's totals are
 * known (its parent node's counts; the record's entries at the root of a
 * tree whose keys are its entries) and the position is in the right half,
 * the total less the items from the position on is cheaper.
 */
static int cq_left(const MDB_cursor *mc, unsigned l, uint64_t *ent, uint64_t *keys)
{
	const dl_page *p = mc->c_pg[l];
	unsigned ki = mc->c_ki[l], n = dl_pg_nkeys(p);
	if (ki > n)
		return MDB_CORRUPTED;
	if (!cq_from_right(mc, l, ki, n))
		return cq_sum(mc, l, 0, ki, ent, keys);
	uint64_t te, tk, re, rk;
	if (l > 0) {
		/* distinct keys differ from entries in a DUPSORT main tree */
		const dl_node *pn = dl_pg_node(mc->c_pg[l - 1], mc->c_ki[l - 1]);
		te = dl_node_count(pn);
		tk = cq_dupmain(mc) ? dl_node_keycount(pn) : te;
	} else {
		te = tk = mc->c_db->d_entries;
	}
	if (cq_sum(mc, l, ki, n, &re, &rk) || re > te || rk > tk)
		return MDB_CORRUPTED;
	*ent = te - re;
	*keys = tk - rk;
	return 0;
}

/*
 * Search key in mc's tree: search_root, then the lower-bound position in
 * the leaf (c_ki[c_top]); *exact says whether the item there equals key.
 * Branch pages on the path get their count flags checked.  An empty tree
 * gives MDB_NOTFOUND.
 */
static int cq_seek(MDB_cursor *mc, const MDB_val *key, int *exact)
{
	MDB_txn *txn = mc->c_txn;
	*exact = 0;
	int rc = dlmdb_search_root(mc, key, DL_SEARCH_KEY);
	if (rc)
		return rc;
	for (unsigned l = 0; l < mc->c_top; l++)
		if (!cq_page_ok(mc, mc->c_pg[l]))
			return cq_corrupt(txn);
	const dl_page *lp = mc->c_pg[mc->c_top];
	unsigned j = dlmdb_node_find(mc, lp, key, exact);
	if (*exact < 0)
		return cq_corrupt(txn);
	mc->c_ki[mc->c_top] = (indx_t)j;
	return 0;
}

/*
 * cq_seek, adding up what lies in front of the position: *ent entries and
 * *keys distinct keys.
 */
static int cq_seek_below(MDB_cursor *mc, const MDB_val *key, uint64_t *ent, uint64_t *keys,
	int *exact)
{
	uint64_t e = 0, k = 0;
	*ent = *keys = 0;
	int rc = cq_seek(mc, key, exact);
	if (rc)
		return rc;
	for (unsigned l = 0; l <= mc->c_top; l++) {
		uint64_t se, sk;
		if (cq_left(mc, l, &se, &sk))
			return cq_corrupt(mc->c_txn);
		e += se;
		k += sk;
	}
	*ent = e;
	*keys = k;
	return 0;
}

/* After cq_seek(mc, bound): add the item at the position (entries to *ent,
 * one key to *keys) when it equals the bound and the bound counts. */
static int cq_add_exact(MDB_cursor *mc, int exact, int incl, uint64_t *ent, uint64_t *keys)
{
	if (!incl || !exact)
		return 0;
	uint64_t it;
	if (cq_items(mc, mc->c_pg[mc->c_top], mc->c_ki[mc->c_top], &it))
		return cq_corrupt(mc->c_txn);
	*ent += it;
	*keys += 1;
	return 0;
}

/* Entries (and distinct keys) whose key is < key, or <= key when incl. */
static int cq_below(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key, int incl, uint64_t *ent,
	uint64_t *keys)
{
	cq_cursor q;
	MDB_cursor *mc = &q.q_c;
	int exact;
	cq_cursor_init(&q, txn, dbi, 0);
	int rc = cq_seek_below(mc, key, ent, keys, &exact);
	if (rc == MDB_NOTFOUND) {
		*ent = *keys = 0;
		return 0;
	}
	if (rc)
		return rc;
	return cq_add_exact(mc, exact, incl, ent, keys);
}

/*
 * Entries and keys between two bounds: below(high) - below(low) in one
 * pass over both paths.  Where the paths share a page the counts left of
 * both positions cancel, so only the items between them are added up;
 * below the fork each side adds its own left part.
 */
static int cq_between(MDB_txn *txn, MDB_dbi dbi, const MDB_val *low, int low_incl,
	const MDB_val *high, int high_incl, uint64_t *ent, uint64_t *keys)
{
	cq_cursor qa, qb;
	MDB_cursor *a = &qa.q_c, *b = &qb.q_c;
	int xa, xb, rc;
	uint64_t pe = 0, pk = 0, me = 0, mk = 0, se, sk;
	*ent = *keys = 0;
	cq_cursor_init(&qa, txn, dbi, 0);
	cq_cursor_init(&qb, txn, dbi, 0);
	rc = cq_seek(a, low, &xa);
	if (rc == 0)
		rc = cq_seek(b, high, &xb);
	if (rc)
		return rc == MDB_NOTFOUND ? 0 : rc;
	if (a->c_top != b->c_top)
		return cq_corrupt(txn);
	for (unsigned l = 0; l <= a->c_top; l++) {
		unsigned ia = a->c_ki[l], ib = b->c_ki[l], n = dl_pg_nkeys(a->c_pg[l]);
		int same = a->c_pg[l] == b->c_pg[l];
		if (same && ia == ib)
			continue;	/* still on the common path: cancels out */
		if (same && ia <= n && ib <= n &&
		    (ia < ib ? ib - ia : ia - ib) <= cq_left_cost(a, l, ia, n) + cq_left_cost(b, l, ib, n)) {
			/* the fork: just the items between the two positions */
			int up = ia < ib;
			if (cq_sum(a, l, up ? ia : ib, up ? ib : ia, &se, &sk))
				return cq_corrupt(txn);
			*(up ? &pe : &me) += se;
			*(up ? &pk : &mk) += sk;
			continue;
		}
		if (cq_left(b, l, &se, &sk))
			return cq_corrupt(txn);
		pe += se;
		pk += sk;
		if (cq_left(a, l, &se, &sk))
			return cq_corrupt(txn);
		me += se;
		mk += sk;
	}
	/* the high bound's own items count when it is inclusive, the low
	 * bound's are left out unless it is */
	if ((rc = cq_add_exact(b, xb, high_incl, &pe, &pk)) ||
	    (rc = cq_add_exact(a, xa, !low_incl, &me, &mk)))
		return rc;
	*ent = pe > me ? pe - me : 0;
	*keys = pk > mk ? pk - mk : 0;
	return 0;
}

/* Distinct keys of the whole DB: the record counts entries only. */
static int cq_total_keys(MDB_txn *txn, MDB_dbi dbi, uint64_t *out)
{
	dl_dbrec *db = &txn->t_dbs[dbi];
	if (!(db->d_flags & MDB_DUPSORT) || db->d_root == DL_NO_PAGE) {
		*out = db->d_root == DL_NO_PAGE ? 0 : db->d_entries;
		return 0;
	}
	cq_cursor q;
	cq_cursor_init(&q, txn, dbi, 0);
	dl_page *p;
	int rc = dlmdb_page_get(txn, db->d_root, &p);
	if (rc)
		return DL_TXN_FAIL(txn, rc);
	if (!cq_page_ok(&q.q_c, p))
		return cq_corrupt(txn);
	q.q_c.c_pg[0] = p;
	uint64_t e;
	if (cq_sum(&q.q_c, 0, 0, dl_pg_nkeys(p), &e, out))
		return cq_corrupt(txn);
	return 0;
}

static int cq_bound_ok(const MDB_val *v)
{
	return !v || !v->mv_size || v->mv_data;
}

#define CQ_RANGE_FLAGS (MDB_COUNT_LOWER_INCL | MDB_COUNT_UPPER_INCL)

/* The range counts: entries (keys == 0) or distinct keys in the range. */
static int cq_range(MDB_txn *txn, MDB_dbi dbi, const MDB_val *low, const MDB_val *high,
	unsigned flags, int keys, uint64_t *out)
{
	if (!txn || !out || (flags & ~CQ_RANGE_FLAGS) || !cq_bound_ok(low) || !cq_bound_ok(high))
		return EINVAL;
	int rc = cq_open(txn, dbi);
	if (rc)
		return rc;
	int lincl = (flags & MDB_COUNT_LOWER_INCL) != 0, hincl = (flags & MDB_COUNT_UPPER_INCL) != 0;
	uint64_t lo_e = 0, lo_k = 0, hi_e, hi_k;
	if (low && high) {
		if ((rc = cq_between(txn, dbi, low, lincl, high, hincl, &hi_e, &hi_k)))
			return rc;
		*out = keys ? hi_k : hi_e;
		return 0;
	}
	if (high) {
		rc = cq_below(txn, dbi, high, hincl, &hi_e, &hi_k);
	} else {
		hi_e = txn->t_dbs[dbi].d_entries;
		rc = keys ? cq_total_keys(txn, dbi, &hi_k) : 0;
	}
	if (rc)
		return rc;
	if (low && (rc = cq_below(txn, dbi, low, !lincl, &lo_e, &lo_k)))
		return rc;
	uint64_t a = keys ? lo_k : lo_e, b = keys ? hi_k : hi_e;
	*out = b > a ? b - a : 0;
	return 0;
}

static int dl_u_count_all(MDB_txn *txn, MDB_dbi dbi, unsigned flags, uint64_t *out)
{
	if (!txn || !out || flags)
		return EINVAL;
	int rc = cq_open(txn, dbi);
	if (rc)
		return rc;
	*out = txn->t_dbs[dbi].d_entries;
	return 0;
}

static int dl_u_count_range(MDB_txn *txn, MDB_dbi dbi, const MDB_val *low, const MDB_val *high,
	unsigned flags, uint64_t *out)
{
	return cq_range(txn, dbi, low, high, flags, 0, out);
}

static int dl_u_range_count_values(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key_low,
	const MDB_val *key_high, unsigned key_flags, uint64_t *out)
{
	return cq_range(txn, dbi, key_low, key_high, key_flags, 0, out);
}

static int dl_u_range_count_keys(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key_low,
	const MDB_val *key_high, unsigned flags, uint64_t *out)
{
	return cq_range(txn, dbi, key_low, key_high, flags, 1, out);
}

/* ---- by rank ---- */

/* Is mc's rank cache usable for its current stack? */
static int cq_cache_ok(const MDB_cursor *mc)
{
	return mc->c_depth > 0 && mc->c_rkleaf && mc->c_rkleaf == mc->c_pg[mc->c_top] &&
		mc->c_rkdepth == mc->c_depth && mc->c_rkgen == mc->c_txn->t_gen;
}

/*
 * Among the nodes of branch page p find the child holding rank r, walking
 * from node *ip whose subtree starts at rank *bp (either direction).
 */
static int cq_pick(const MDB_cursor *mc, const dl_page *p, uint64_t r, unsigned *ip, uint64_t *bp)
{
	unsigned i = *ip, n = dl_pg_nkeys(p);
	uint64_t b = *bp;
	if (r >= b) {
		for (;; i++) {
			if (i >= n || !dl_node_in_page(p, i, mc->c_bound))
				return MDB_CORRUPTED;
			uint64_t c = dl_node_count(dl_pg_node(p, i));
			if (r - b < c)
				break;
			b += c;
		}
	} else {
		while (r < b) {
			if (i == 0 || !dl_node_in_page(p, i - 1, mc->c_bound))
				return MDB_CORRUPTED;
			i--;
			uint64_t c = dl_node_count(dl_pg_node(p, i));
			if (c > b)
				return MDB_CORRUPTED;
			b -= c;
		}
		/* r >= b now, and b + count(i) is the old b > r */
	}
	*ip = i;
	*bp = b;
	return 0;
}

/*
 * Put mc's stack on the leaf item holding entry r of its tree (r below the
 * tree's entry count), starting from the cached bases when they hold.
 * *within gets r's place among that item's duplicates (DUPSORT main tree;
 * else 0).  mc ends positioned (DL_C_INIT) with a fresh rank cache.
 */
static int cq_rank_descend(MDB_cursor *mc, uint64_t r, uint64_t *within)
{
	MDB_txn *txn = mc->c_txn;
	unsigned lvl;
	uint64_t base;
	dl_page *p;
	int rc;
	*within = 0;
	if (cq_cache_ok(mc)) {
		/* climb to the lowest level whose page covers r (the root does) */
		for (lvl = mc->c_top; lvl > 0; lvl--) {
			uint64_t lo = mc->c_rank0[lvl];
			uint64_t cnt = dl_node_count(dl_pg_node(mc->c_pg[lvl - 1], mc->c_ki[lvl - 1]));
			if (r >= lo && r - lo < cnt)
				break;
		}
		p = mc->c_pg[lvl];
		base = mc->c_rank0[lvl];
		if (lvl < mc->c_top) {
			/* sideways from the child the stack names */
			unsigned i = mc->c_ki[lvl];
			uint64_t cb = mc->c_rank0[lvl + 1];
			if (cq_pick(mc, p, r, &i, &cb))
				return cq_corrupt(txn);
			mc->c_ki[lvl] = (indx_t)i;
			if ((rc = dlmdb_page_get(txn, dl_node_child(dl_pg_node(p, i)), &p)))
				return DL_TXN_FAIL(txn, rc);
			base = cb;
			lvl++;
		}
	} else {
		lvl = 0;
		base = 0;
		if (mc->c_inline) {
			p = mc->c_inline;
		} else {
			if (mc->c_db->d_root == DL_NO_PAGE)
				return cq_corrupt(txn);
			if ((rc = dlmdb_page_get(txn, mc->c_db->d_root, &p)))
				return DL_TXN_FAIL(txn, rc);
		}
	}
	/* (from here mc's stack above lvl is settled; p is the page at lvl) */
	for (;; lvl++) {
		if (lvl >= DL_MAX_DEPTH)
			return DL_TXN_FAIL(txn, MDB_CURSOR_FULL);
		if (!cq_page_ok(mc, p))
			return cq_corrupt(txn);
		mc->c_pg[lvl] = p;
		mc->c_rank0[lvl] = base;
		if (dl_pg_is_leaf(p))
			break;
		unsigned i = 0;
		if (cq_pick(mc, p, r, &i, &base))
			return cq_corrupt(txn);
		mc->c_ki[lvl] = (indx_t)i;
		if ((rc = dlmdb_page_get(txn, dl_node_child(dl_pg_node(p, i)), &p)))
			return DL_TXN_FAIL(txn, rc);
	}
	/* leaf */
	unsigned n = dl_pg_nkeys(p), j;
	uint64_t off = r - base;
	if (cq_dupmain(mc) && !dl_pg_is_leaf2(p)) {
		for (j = 0;; j++) {
			uint64_t it;
			if (j >= n || cq_items(mc, p, j, &it))
				return cq_corrupt(txn);
			if (off < it)
				break;
			off -= it;
		}
		*within = off;
	} else {
		if (off >= n)
			return cq_corrupt(txn);
		j = (unsigned)off;
	}
	mc->c_ki[lvl] = (indx_t)j;
	mc->c_top = lvl;
	mc->c_depth = lvl + 1;
	mc->c_flags = DL_C_INIT;
	mc->c_gen = txn->t_gen;
	mc->c_rkleaf = p;
	mc->c_rkgen = txn->t_gen;
	mc->c_rkdepth = mc->c_depth;
	return 0;
}

/*
 * mc stands on a DUPSORT leaf item; aim its sub-cursor at duplicate w of
 * it and return that value.  A sub-cursor still inside the same sub-tree
 * with a valid rank cache continues from its place.
 */
static int cq_dup_aim(MDB_cursor *mc, uint64_t w, MDB_val *data)
{
	MDB_txn *txn = mc->c_txn;
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	dl_page *p = mc->c_pg[mc->c_top];
	unsigned i = mc->c_ki[mc->c_top];
	int rc;
	if (!dl_node_in_page(p, i, mc->c_bound))
		return cq_corrupt(txn);
	dl_node *n = dl_pg_node(p, i);
	if (!(n->n_flags & DL_N_DUP)) {
		xc->c_flags = 0;
		if (w)
			return cq_corrupt(txn);
		/* (the fetch checks that the value lies inside the page) */
		if (data && (rc = dlmdb_cur_fetch(mc, NULL, data)))
			return DL_TXN_FAIL(txn, rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc);
		return 0;
	}
	int keep = (n->n_flags & DL_N_TREE) && (xc->c_flags & DL_C_INIT) && !xc->c_inline &&
		xc->c_owner == mc && cq_cache_ok(xc) && dl_node_dsize(n) == sizeof(dl_dbrec) &&
		memcmp(dl_node_data(n), &x->x_db, sizeof(dl_dbrec)) == 0;
	if (!keep) {
		rc = dlmdb_dup_setup(mc);
		if (rc)
			return rc == MDB_NOTFOUND ? cq_corrupt(txn) : rc;
	}
	if (w >= x->x_db.d_entries)
		return cq_corrupt(txn);
	if (xc->c_inline) {
		if ((rc = dlmdb_search_root(xc, NULL, DL_SEARCH_FIRST)))
			return rc == MDB_NOTFOUND ? cq_corrupt(txn) : rc;
		if (w >= dl_pg_nkeys(xc->c_inline))
			return cq_corrupt(txn);
		xc->c_ki[0] = (indx_t)w;
		xc->c_gen = txn->t_gen;
	} else {
		uint64_t dummy;
		if ((rc = cq_rank_descend(xc, w, &dummy)))
			return rc;
	}
	MDB_val v;
	if ((rc = dlmdb_cur_fetch(xc, &v, NULL)))
		return rc;
	if (xc->c_inline)
		dl_xcur_out(x, &v);
	if (data)
		*data = v;
	return 0;
}

/* Position mc (a cursor of a counted DB) on entry r and read it. */
static int cq_goto_rank(MDB_cursor *mc, uint64_t r, MDB_val *key, MDB_val *data)
{
	uint64_t within;
	int rc = cq_rank_descend(mc, r, &within);
	if (rc)
		return rc;
	if (!mc->c_sub) {
		if (within)
			return cq_corrupt(mc->c_txn);
		return dlmdb_cur_fetch(mc, key, data);
	}
	if ((rc = dlmdb_cur_fetch(mc, key, NULL)))
		return rc;
	return cq_dup_aim(mc, within, data);
}

static int dl_u_get_rank(MDB_txn *txn, MDB_dbi dbi, uint64_t rank, MDB_val *key, MDB_val *data)
{
	if (!txn)
		return EINVAL;
	int rc = cq_open(txn, dbi);
	if (rc)
		return rc;
	if (rank >= txn->t_dbs[dbi].d_entries)
		return MDB_NOTFOUND;
	cq_cursor q;
	if ((rc = cq_cursor_init(&q, txn, dbi, 1)))
		return rc;
	/* views decoded into this call's cursor move to the txn's storage */
	if ((rc = cq_goto_rank(&q.q_c, rank, key, data)) == 0 &&
	    (rc = dlmdb_txn_keep(txn, key, &q.q_c, 0)) == 0)
		rc = dlmdb_txn_keep(txn, data, &q.q_c, 1);
	return rc;
}

static int dl_u_cursor_get_rank(MDB_cursor *mc, uint64_t rank, MDB_val *key, MDB_val *data, unsigned flags)
{
	if (!mc || !mc->c_txn || mc->c_owner || flags)
		return EINVAL;
	MDB_txn *txn = mc->c_txn;
	int rc = cq_open(txn, mc->c_dbi);
	if (rc)
		return rc;
	if (rank >= mc->c_db->d_entries)
		return MDB_NOTFOUND;	/* the cursor stays where it was */
	rc = cq_goto_rank(mc, rank, key, data);
	if (rc)
		mc->c_flags = 0;
	return rc;
}

/* ---- rank of a key ---- */

static int cq_key_rank(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key, const MDB_val *data,
	uint64_t *rank)
{
	if (key->mv_size == 0)
		return MDB_BAD_VALSIZE;
	if (!key->mv_data || (data && data->mv_size && !data->mv_data))
		return EINVAL;
	cq_cursor q;
	MDB_cursor *mc = &q.q_c;
	int rc = cq_cursor_init(&q, txn, dbi, 1);
	if (rc)
		return rc;
	uint64_t ent, keys;
	int exact;
	if ((rc = cq_seek_below(mc, key, &ent, &keys, &exact)))
		return rc;
	if (!exact)
		return MDB_NOTFOUND;
	if (!data) {
		*rank = ent;
		return 0;
	}
	if (!mc->c_sub) {
		/* a plain DB with a value: the key counts only when its value
		 * is that one, byte for byte (an empty data is the empty value) */
		MDB_val v;
		if ((rc = dlmdb_cur_fetch(mc, NULL, &v)))
			return DL_TXN_FAIL(txn, rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc);
		if (v.mv_size != data->mv_size || (v.mv_size && memcmp(v.mv_data, data->mv_data, v.mv_size)))
			return MDB_NOTFOUND;
		*rank = ent;
		return 0;
	}
	/* DUPSORT with a value: find it among the key's duplicates */
	rc = dlmdb_dup_setup(mc);
	if (rc == MDB_NOTFOUND) {
		MDB_val v;
		/* a single value, read with the checks of any fetch */
		if ((rc = dlmdb_cur_fetch(mc, NULL, &v)))
			return DL_TXN_FAIL(txn, rc == MDB_NOTFOUND ? MDB_CORRUPTED : rc);
		MDB_cmp_func *dcmp = mc->c_dbx->x_dcmp ? mc->c_dbx->x_dcmp : dlmdb_cmp_for(0);
		if (dcmp(data, &v) != 0)
			return MDB_NOTFOUND;
		*rank = ent;
		return 0;
	}
	if (rc)
		return rc;
	uint64_t dent, dkeys;
	rc = cq_seek_below(&q.q_x.x_c, data, &dent, &dkeys, &exact);
	if (rc)
		return rc == MDB_NOTFOUND ? cq_corrupt(txn) : rc;
	if (!exact)
		return MDB_NOTFOUND;
	*rank = ent + dent;
	return 0;
}

static int dl_u_get_key_rank(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key, const MDB_val *data,
	uint64_t *rank)
{
	if (!txn || !key || !rank)
		return EINVAL;
	int rc = cq_open(txn, dbi);
	if (rc)
		return rc;
	return cq_key_rank(txn, dbi, key, data, rank);
}

static int dl_u_cursor_key_rank(MDB_cursor *mc, const MDB_val *key, const MDB_val *data, unsigned flags,
	uint64_t *rank)
{
	if (!mc || !mc->c_txn || mc->c_owner || !key || !rank || flags)
		return EINVAL;
	int rc = cq_open(mc->c_txn, mc->c_dbi);
	if (rc)
		return rc;
	return cq_key_rank(mc->c_txn, mc->c_dbi, key, data, rank);
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_count_all(MDB_txn *txn, MDB_dbi dbi, unsigned flags, uint64_t *out)
{
	DL_GUARDED(txn, 0, dl_u_count_all(txn, dbi, flags, out));
}

int mdb_count_range(MDB_txn *txn, MDB_dbi dbi, const MDB_val *low, const MDB_val *high, unsigned flags, uint64_t *out)
{
	DL_GUARDED(txn, 0, dl_u_count_range(txn, dbi, low, high, flags, out));
}

int mdb_range_count_values(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key_low, const MDB_val *key_high, unsigned key_flags, uint64_t *out)
{
	DL_GUARDED(txn, 0, dl_u_range_count_values(txn, dbi, key_low, key_high, key_flags, out));
}

int mdb_range_count_keys(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key_low, const MDB_val *key_high, unsigned flags, uint64_t *out)
{
	DL_GUARDED(txn, 0, dl_u_range_count_keys(txn, dbi, key_low, key_high, flags, out));
}

int mdb_get_rank(MDB_txn *txn, MDB_dbi dbi, uint64_t rank, MDB_val *key, MDB_val *data)
{
	DL_GUARDED(txn, 0, dl_u_get_rank(txn, dbi, rank, key, data));
}

int mdb_cursor_get_rank(MDB_cursor *mc, uint64_t rank, MDB_val *key, MDB_val *data, unsigned flags)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_get_rank(mc, rank, key, data, flags));
}

int mdb_get_key_rank(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key, const MDB_val *data, uint64_t *rank)
{
	DL_GUARDED(txn, 0, dl_u_get_key_rank(txn, dbi, key, data, rank));
}

int mdb_cursor_key_rank(MDB_cursor *mc, const MDB_val *key, const MDB_val *data, unsigned flags, uint64_t *rank)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_key_rank(mc, key, data, flags, rank));
}
