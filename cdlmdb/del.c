/*
 * del.c - deleting items, rebalancing after a delete, freeing whole trees.
 *
 * Rebalancing is merge-only: a page that fell below 25% use (or below its
 * minimum node count) is merged with an adjacent sibling when both fit in
 * one page; empty pages are unlinked; a root branch with a single child is
 * replaced by that child.  Separator keys are never rewritten: after a
 * delete a separator may be smaller than the first key of its subtree,
 * which keeps the search invariant (separator <= every key on its right,
 * > every key on its left).  A page that cannot be merged stays underfull.
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
			dlmdb_pg_del_node(p, 0);
			dlmdb_pg_add_branch(p, 0, NULL, child);
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
		size_t used = cap - dl_pg_room(p);
		unsigned minkeys = branch ? 2 : 1;
		if (used >= DL_FILL_MIN(psize) && n >= minkeys)
			return 0;
		dl_page *parent = mc->c_pg[level - 1];
		unsigned pi = mc->c_ki[level - 1];
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
		if ((rc = dlmdb_page_get(txn, dl_node_child(dl_pg_node(parent, si)), &sib)))
			return rc;
		if ((sib->p_flags & (DL_P_BRANCH | DL_P_LEAF)) != (p->p_flags & (DL_P_BRANCH | DL_P_LEAF)))
			return MDB_CORRUPTED;
		unsigned ri = pi > 0 ? pi : pi + 1;
		dl_page *left = pi > 0 ? sib : p, *right = pi > 0 ? p : sib;
		size_t need = (cap - dl_pg_room(left)) + (cap - dl_pg_room(right));
		unsigned char sepkey[DL_MAXKEY + 1];
		MDB_val sep = {0, sepkey};
		if (branch) {
			dl_node *sn = dl_pg_node(parent, ri);
			sep.mv_size = sn->n_ksize;
			memcpy(sepkey, dl_node_key(sn), sn->n_ksize);
			dl_node *r0 = dl_pg_node(right, 0);
			need += dl_even(DL_NODEHDR + sep.mv_size) - dl_even(DL_NODEHDR + r0->n_ksize);
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
		for (unsigned j = 0; j < rn; j++) {
			dl_node *nd = dl_pg_node(right, j);
			if (branch && j == 0)
				dlmdb_pg_add_branch(left, base, &sep, dl_node_child(nd));
			else
				dlmdb_pg_add_raw(left, base + j, nd, dl_node_bytes(right, nd) - sizeof(indx_t));
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
	if (!(ov->p_flags & DL_P_OVERFLOW))
		return MDB_CORRUPTED;
	unsigned np = dl_pg_ovcount(ov);
	mc->c_db->d_overflow -= np;
	return dlmdb_page_free(mc->c_txn, pg, np);
}

/* Delete the item under the cursor; the cursor is left in the DEL state. */
int dlmdb_tree_del_current(MDB_cursor *mc, int allow_tree)
{
	MDB_txn *txn = mc->c_txn;
	dl_page *leaf = mc->c_pg[mc->c_top];
	unsigned ki = mc->c_ki[mc->c_top];
	if (ki >= dl_pg_nkeys(leaf))
		return MDB_NOTFOUND;
	dl_node *n = dl_pg_node(leaf, ki);
	if ((n->n_flags & DL_N_TREE) && !allow_tree)
		return MDB_INCOMPATIBLE;
	dlmdb_txn_changed(txn, mc);
	memcpy(mc->c_saved, dl_node_key(n), n->n_ksize);
	mc->c_savedlen = n->n_ksize;
	int rc = dlmdb_cursor_touch(mc);
	if (rc)
		return rc;
	leaf = mc->c_pg[mc->c_top];
	n = dl_pg_node(leaf, ki);
	if ((n->n_flags & DL_N_BIG) && (rc = drop_overflow(mc, n)))
		return DL_TXN_FAIL(txn, rc);
	dlmdb_pg_del_node(leaf, ki);
	mc->c_db->d_entries--;
	if ((rc = rebalance(mc)))
		return DL_TXN_FAIL(txn, rc);
	mc->c_flags = DL_C_INIT | DL_C_DEL | DL_C_SAVED;
	txn->t_gen++;
	return 0;
}

int mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)
{
	(void)data;
	if (!txn || !key)
		return EINVAL;
	int rc = dlmdb_dbi_ok(txn, dbi);
	if (rc)
		return rc;
	if ((rc = dlmdb_txn_usable(txn, 1)))
		return rc;
	if (dbi == DL_FREE_DBI)
		return EINVAL;
	if (key->mv_size == 0 || key->mv_size > DL_MAXKEY)
		return MDB_BAD_VALSIZE;
	if (txn->t_dbstate[dbi] & DL_DBS_STALE) {
		if ((rc = dlmdb_db_refresh(txn, dbi)))
			return rc;
	}
	MDB_cursor mc;
	MDB_val k = *key;
	dlmdb_cursor_setup(&mc, txn, dbi);
	if ((rc = dlmdb_cursor_seek(&mc, &k, NULL, MDB_SET)))
		return rc;
	return dlmdb_tree_del_current(&mc, 0);
}

int mdb_cursor_del(MDB_cursor *mc, unsigned int flags)
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
	return dlmdb_tree_del_current(mc, 0);
}

/* Free every page of a tree (drop); counts are reset by the caller. */
static int free_subtree(MDB_cursor *mc, pgno_t pg, unsigned depth)
{
	dl_page *p;
	int rc;
	if (depth > DL_MAX_DEPTH)
		return MDB_CORRUPTED;
	if ((rc = dlmdb_page_get(mc->c_txn, pg, &p)))
		return rc;
	unsigned n = dl_pg_nkeys(p);
	if (dl_pg_is_branch(p)) {
		for (unsigned i = 0; i < n; i++)
			if ((rc = free_subtree(mc, dl_node_child(dl_pg_node(p, i)), depth + 1)))
				return rc;
	} else if (dl_pg_is_leaf(p) && !dl_pg_is_leaf2(p)) {
		for (unsigned i = 0; i < n; i++) {
			dl_node *nd = dl_pg_node(p, i);
			if ((nd->n_flags & DL_N_BIG) && (rc = drop_overflow(mc, nd)))
				return rc;
		}
	} else if (!dl_pg_is_leaf(p)) {
		return MDB_CORRUPTED;
	}
	return dlmdb_page_free(mc->c_txn, pg, 1);
}

int dlmdb_tree_free_all(MDB_txn *txn, dl_dbrec *db)
{
	if (db->d_root == DL_NO_PAGE)
		return 0;
	MDB_cursor mc;
	dlmdb_cursor_setup(&mc, txn, DL_MAIN_DBI);
	mc.c_db = db;
	int rc = free_subtree(&mc, db->d_root, 1);
	if (rc)
		return rc;
	db->d_root = DL_NO_PAGE;
	db->d_depth = 0;
	db->d_branch = db->d_leaf = db->d_overflow = db->d_entries = 0;
	return 0;
}
