/*
 * footprint.c - mdb_footprint: how many bytes one DB's keys and values take
 * as stored against their decoded size, from one walk over its pages.
 *
 * The main tree is walked depth first, leaf by leaf, in chunks: a call
 * visits at most max_leaves leaf pages and leaves in the caller's
 * MDB_footprint the path (child index per branch level) of the next leaf
 * to visit, so the next call descends straight to it.  A branch page is
 * counted when the walk first enters it; the position also records from
 * which level down the pages on the path are new (fp_fresh), so that a
 * resumed walk does not count the pages it passes through again.  Duplicates of a
 * DUPSORT key (inline sub-page or sub-tree) are walked whole with the leaf
 * that holds them.
 *
 * Sizes: on a page with DL_P_PREFIX a leaf node's stored key is its suffix
 * (n_ksize bytes) and its decoded key is shared + n_ksize bytes, shared
 * being n_flags >> DL_N_SHARED_SHIFT; the page's anchor record (at offset
 * p_pad, 0 for none: a length word and the anchor bytes) counts as anchor
 * bytes, the even number of bytes it takes in the page.  On
 * every other page stored and decoded sizes are the same.  A plain value
 * counts its data size (a big value too, its pages as overflow pages); the
 * values of a DUPSORT key are the keys of its sub-page or sub-tree leaves.
 *
 * The walk only reads, and checks every offset and size it follows, so a
 * damaged page gives MDB_CORRUPTED, never a read outside the page; and it
 * visits no more pages than the records count (mdb_txn_check holds them
 * exact), so a damaged child pointer that makes a loop ends it too.
 */
#include "internal.h"

#define FP_STARTED 1

_Static_assert(sizeof(((MDB_footprint *)0)->fp_ki) / sizeof(unsigned short) == DL_MAX_DEPTH,
	"a walk position holds one index per tree level");

struct fp_walk {
	MDB_txn *w_txn;
	MDB_footprint *w_fp;
	unsigned w_psize;
	uint64_t w_dupleft;	/* pages the current sub-tree's record still allows */
};

/* Bytes the anchor record of PREFIX page (or sub-page) p of size bytes
 * takes, or ~0u when it does not lie inside it.  p may be unaligned (a
 * sub-page), so the header fields come from the caller's copy h. */
static unsigned anchor_bytes(const char *p, const dl_page *h, size_t size)
{
	if (!h->p_pad)
		return 0;
	uint16_t len;
	if (h->p_pad < h->p_upper || h->p_pad + sizeof len > size)
		return ~0u;
	memcpy(&len, p + h->p_pad, sizeof len);
	if (h->p_pad + sizeof len + len > size)
		return ~0u;
	return (unsigned)dl_even(sizeof len + len);
}

/* Count page p (header copy h, size bytes) as compressed, with its anchor. */
static int count_prefix_page(MDB_footprint *fp, const char *p, const dl_page *h, size_t size)
{
	unsigned a = anchor_bytes(p, h, size);
	if (a == ~0u)
		return MDB_CORRUPTED;
	fp->fp_prefix_pages++;
	fp->fp_anchor_bytes += a;
	return 0;
}

/* leaf node shared-prefix length (0 outside DL_P_PREFIX pages) */
static unsigned node_shared(unsigned pflags, const dl_node *n)
{
	return (pflags & DL_P_PREFIX) ? (unsigned)(n->n_flags >> DL_N_SHARED_SHIFT) : 0u;
}

/* page pg of kind want (DL_P_BRANCH or DL_P_LEAF), header sane */
static int fp_page(struct fp_walk *w, pgno_t pg, unsigned want, dl_page **out)
{
	dl_page *p;
	int rc = dlmdb_page_get(w->w_txn, pg, &p);
	if (rc)
		return rc;
	if (!(p->p_flags & want) || (p->p_flags & (DL_P_OVERFLOW | DL_P_META)) ||
	    (p->p_flags & (DL_P_BRANCH | DL_P_LEAF)) == (DL_P_BRANCH | DL_P_LEAF) ||
	    p->p_lower < DL_PAGEHDR || p->p_lower > p->p_upper || p->p_upper > w->w_psize ||
	    (p->p_lower & 1))
		return MDB_CORRUPTED;
	*out = p;
	return 0;
}

/* node i of a tree page, its extent (header, key, and for a leaf its data
 * or big-value page number) inside the page */
static int fp_node(const struct fp_walk *w, const dl_page *p, unsigned i, const dl_node **out)
{
	unsigned off = dl_pg_slot(p, i);
	if (off < p->p_upper || off + DL_NODEHDR > w->w_psize)
		return MDB_CORRUPTED;
	const dl_node *n = (const dl_node *)((const char *)p + off);
	size_t ext = DL_NODEHDR + n->n_ksize;
	if (dl_pg_is_leaf(p))
		ext += (n->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(n);
	else
		ext += dl_pg_cntbytes(p);
	if (off + ext > w->w_psize)
		return MDB_CORRUPTED;
	*out = n;
	return 0;
}

/* the values of an inline sub-page of size bytes at sp (any alignment) */
static int fp_subpage(struct fp_walk *w, const char *sp, size_t size)
{
	MDB_footprint *fp = w->w_fp;
	dl_page h;
	if (size < DL_PAGEHDR)
		return MDB_CORRUPTED;
	memcpy(&h, sp, sizeof h);
	if ((h.p_flags & (DL_P_LEAF | DL_P_SUBP | DL_P_BRANCH)) != (DL_P_LEAF | DL_P_SUBP) ||
	    h.p_lower < DL_PAGEHDR || h.p_lower > h.p_upper || h.p_upper > size)
		return MDB_CORRUPTED;
	unsigned n = dl_pg_nkeys(&h);
	fp->fp_subpages++;
	if (h.p_flags & DL_P_LEAF2) {
		if (DL_PAGEHDR + (size_t)n * h.p_pad > size)
			return MDB_CORRUPTED;
		fp->fp_entries += n;
		fp->fp_val_stored += (mdb_size_t)n * h.p_pad;
		fp->fp_val_decoded += (mdb_size_t)n * h.p_pad;
		return 0;
	}
	unsigned alen = 0;	/* the anchor's length: the most a node may share */
	if (h.p_flags & DL_P_PREFIX) {
		if (count_prefix_page(fp, sp, &h, size))
			return MDB_CORRUPTED;
		if (h.p_pad) {
			uint16_t l;
			memcpy(&l, sp + h.p_pad, sizeof l);
			alen = l;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		indx_t off;
		memcpy(&off, sp + DL_PAGEHDR + 2 * (size_t)i, sizeof off);
		if (off < h.p_upper || off + DL_NODEHDR > size)
			return MDB_CORRUPTED;
		const dl_node *nd = (const dl_node *)(sp + off);
		if (off + DL_NODEHDR + nd->n_ksize > size)
			return MDB_CORRUPTED;
		if (h.p_flags & DL_P_PREFIX) {
			unsigned sh = node_shared(h.p_flags, nd);
			if (sh > alen || sh + nd->n_ksize == 0 || sh + nd->n_ksize > DL_MAXKEY ||
			    (nd->n_flags & ~(DL_N_KIND | (0x1ffu << DL_N_SHARED_SHIFT))))
				return MDB_CORRUPTED;
		}
		fp->fp_val_stored += nd->n_ksize;
		fp->fp_val_decoded += node_shared(h.p_flags, nd) + nd->n_ksize;
	}
	fp->fp_entries += n;
	return 0;
}

/* the pages of a duplicate sub-tree below page pg at depth level */
static int fp_dup_tree(struct fp_walk *w, pgno_t pg, unsigned level, unsigned depth)
{
	MDB_footprint *fp = w->w_fp;
	dl_page *p;
	int leaf = level + 1 == depth;
	if (w->w_dupleft == 0)
		return MDB_CORRUPTED;	/* more pages than the record counts: a loop? */
	w->w_dupleft--;
	int rc = fp_page(w, pg, leaf ? DL_P_LEAF : DL_P_BRANCH, &p);
	if (rc)
		return rc;
	unsigned n = dl_pg_nkeys(p);
	if (!leaf) {
		fp->fp_dup_branch_pages++;
		for (unsigned i = 0; i < n; i++) {
			const dl_node *nd;
			if ((rc = fp_node(w, p, i, &nd)) ||
			    (rc = fp_dup_tree(w, dl_node_child(nd), level + 1, depth)))
				return rc;
		}
		return 0;
	}
	fp->fp_dup_leaf_pages++;
	fp->fp_entries += n;
	if (dl_pg_is_leaf2(p)) {
		if (DL_PAGEHDR + (size_t)n * p->p_pad > w->w_psize)
			return MDB_CORRUPTED;
		fp->fp_val_stored += (mdb_size_t)n * p->p_pad;
		fp->fp_val_decoded += (mdb_size_t)n * p->p_pad;
		return 0;
	}
	if ((p->p_flags & DL_P_PREFIX) && count_prefix_page(fp, (const char *)p, p, w->w_psize))
		return MDB_CORRUPTED;
	for (unsigned i = 0; i < n; i++) {
		const dl_node *nd;
		if ((rc = fp_node(w, p, i, &nd)))
			return rc;
		if (dl_pg_prefix(p) && !dl_pfx_node_ok(p, nd, w->w_psize))
			return MDB_CORRUPTED;
		fp->fp_val_stored += nd->n_ksize;
		fp->fp_val_decoded += node_shared(p->p_flags, nd) + nd->n_ksize;
	}
	return 0;
}

/* one leaf page of the main tree, with the duplicates and big values of
 * its nodes */
static int fp_leaf(struct fp_walk *w, const dl_page *p, int dupsort)
{
	MDB_footprint *fp = w->w_fp;
	unsigned n = dl_pg_nkeys(p);
	int rc;
	fp->fp_leaf_pages++;
	if (dl_pg_is_leaf2(p))
		return MDB_CORRUPTED;	/* only duplicate sub-trees have LEAF2 leaves */
	if ((p->p_flags & DL_P_PREFIX) && count_prefix_page(fp, (const char *)p, p, w->w_psize))
		return MDB_CORRUPTED;
	for (unsigned i = 0; i < n; i++) {
		const dl_node *nd;
		if ((rc = fp_node(w, p, i, &nd)))
			return rc;
		if (dl_pg_prefix(p) && !dl_pfx_node_ok(p, nd, w->w_psize))
			return MDB_CORRUPTED;
		unsigned kind = nd->n_flags & DL_N_KIND;
		fp->fp_keys++;
		fp->fp_key_stored += nd->n_ksize;
		fp->fp_key_decoded += node_shared(p->p_flags, nd) + nd->n_ksize;
		size_t ds = dl_node_dsize(nd);
		if (dupsort && (kind & DL_N_DUP)) {
			if (kind & DL_N_BIG)
				return MDB_CORRUPTED;
			if (!(kind & DL_N_TREE)) {
				if ((rc = fp_subpage(w, dl_node_data(nd), ds)))
					return rc;
				continue;
			}
			dl_dbrec rec;
			if (ds != sizeof rec)
				return MDB_CORRUPTED;
			memcpy(&rec, dl_node_data(nd), sizeof rec);
			if (rec.d_root == DL_NO_PAGE || rec.d_depth == 0 || rec.d_depth > DL_MAX_DEPTH)
				return MDB_CORRUPTED;
			w->w_dupleft = rec.d_branch + rec.d_leaf;
			if (w->w_dupleft < rec.d_leaf)
				return MDB_CORRUPTED;
			if ((rc = fp_dup_tree(w, rec.d_root, 0, rec.d_depth)))
				return rc;
			continue;
		}
		fp->fp_entries++;
		fp->fp_val_stored += ds;
		fp->fp_val_decoded += ds;
		if (kind & DL_N_BIG) {
			dl_page *ov;
			if ((rc = dlmdb_page_get(w->w_txn, dl_node_bigpg(nd), &ov)))
				return rc;
			if (!(ov->p_flags & DL_P_OVERFLOW) || dl_pg_ovcount(ov) < dl_ov_pages(w->w_txn->t_env, ds))
				return MDB_CORRUPTED;
			fp->fp_overflow_pages += dl_pg_ovcount(ov);
		}
	}
	return 0;
}

static int dl_u_footprint(MDB_txn *txn, MDB_dbi dbi, MDB_footprint *fp, mdb_size_t max_leaves)
{
	if (!txn || !fp || !max_leaves)
		return EINVAL;
	int rc;
	if ((rc = dlmdb_txn_usable(txn, 0)) || (rc = dlmdb_dbi_ok(txn, dbi)))
		return rc;
	if (dbi == DL_FREE_DBI)
		return EINVAL;
	if ((txn->t_dbstate[dbi] & DL_DBS_STALE) && (rc = dlmdb_db_refresh(txn, dbi)))
		return rc;
	const dl_dbrec *db = &txn->t_dbs[dbi];
	if (fp->fp_done)
		return 0;
	if (!(fp->fp_state & FP_STARTED)) {
		MDB_footprint zero;
		memset(&zero, 0, sizeof zero);
		*fp = zero;
		fp->fp_state = FP_STARTED;
		fp->fp_txnid = txn->t_id;
		fp->fp_gen = txn->t_gen;
		fp->fp_root = db->d_root;
		fp->fp_depth = db->d_depth;
		fp->fp_leaf_total = db->d_leaf;
		if (db->d_root == DL_NO_PAGE) {
			fp->fp_done = 1;
			return 0;
		}
		if (db->d_depth == 0 || db->d_depth > DL_MAX_DEPTH)
			return MDB_CORRUPTED;
	} else if (fp->fp_txnid != txn->t_id || fp->fp_gen != txn->t_gen ||
		   fp->fp_root != db->d_root || fp->fp_depth != db->d_depth) {
		return EINVAL;	/* another txn, or the DB changed since the last call */
	}
	struct fp_walk w = {txn, fp, txn->t_env->e_psize, 0};
	int dupsort = (db->d_flags & MDB_DUPSORT) != 0;
	unsigned depth = fp->fp_depth, last = depth - 1;
	dl_page *stack[DL_MAX_DEPTH];
	unsigned valid = 0;	/* stack[0 .. valid) matches fp_ki */
	unsigned fresh = fp->fp_fresh;	/* pages from this level down are not counted yet */
	for (mdb_size_t visited = 0; visited < max_leaves;) {
		/* descend along fp_ki from the first level not on the stack */
		for (unsigned l = valid; l < depth; l++) {
			pgno_t pg = fp->fp_root;
			if (l > 0) {
				const dl_node *nd;
				if ((rc = fp_node(&w, stack[l - 1], fp->fp_ki[l - 1], &nd)))
					return rc;
				pg = dl_node_child(nd);
			}
			if ((rc = fp_page(&w, pg, l == last ? DL_P_LEAF : DL_P_BRANCH, &stack[l])))
				return rc;
			if (l < last) {
				if (fp->fp_ki[l] >= dl_pg_nkeys(stack[l]))
					return EINVAL;	/* the path no longer fits the tree */
				if (l >= fresh && ++fp->fp_branch_pages > db->d_branch)
					return MDB_CORRUPTED;	/* more than the record counts */
			}
		}
		valid = depth;
		if (fp->fp_leaf_pages >= db->d_leaf)
			return MDB_CORRUPTED;
		if ((rc = fp_leaf(&w, stack[last], dupsort)))
			return rc;
		visited++;
		/* the next leaf: the deepest branch level with a next child */
		unsigned l = last;
		for (;;) {
			if (l == 0) {
				fp->fp_done = 1;
				return 0;
			}
			l--;
			if (fp->fp_ki[l] + 1u < dl_pg_nkeys(stack[l])) {
				fp->fp_ki[l]++;
				break;
			}
			fp->fp_ki[l] = 0;
		}
		valid = fresh = l + 1;
	}
	fp->fp_fresh = fresh;
	return 0;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_footprint(MDB_txn *txn, MDB_dbi dbi, MDB_footprint *fp, mdb_size_t max_leaves)
{
	DL_GUARDED(txn, 0, dl_u_footprint(txn, dbi, fp, max_leaves));
}
