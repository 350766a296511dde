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
