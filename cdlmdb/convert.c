/*
 * convert.c - mdb_dbi_replace: one named DB takes over the tree of another
 * in a single write txn (DLMDB-go extension, the last step of a migration
 * that rebuilt a DB with other encoding flags; see lmdb.h).
 *
 * What it does to the txn's state:
 *   - dst's old tree is freed as mdb_drop frees a tree (pages the txn made
 *     itself go back to its loose list, committed ones to its freed list,
 *     so readers of older snapshots keep reading them);
 *   - dst's record in the txn becomes src's record verbatim (root, depth,
 *     page counts, entries, pad and flags) and is marked dirty, so the
 *     commit writes it back to the main DB, and an extension flag in it
 *     gives the file the extended meta version (dlmdb_dbrecs_flush);
 *   - src's name item is deleted from the main DB and its handle is closed
 *     as mdb_drop(txn, src, 1) does, but its pages are not freed: dst owns
 *     them now.
 * Nothing is done to the env-wide handle data of dst (comparators, name):
 * the two DBs must have the same key and duplicate order, which is what
 * the flag check guarantees for the built-in orders.  A nested txn works
 * on its own copies of the records and page lists, so its abort leaves
 * the parent as it was.
 */
#include "internal.h"

/* flags in which the two records may differ: they change the encoding of
 * the tree, not the order of what it holds */
#define DL_REPLACE_FREEFLAGS (MDB_COUNTED | MDB_PREFIX_COMPRESSION)

/* 1 if a cursor of txn or of an enclosing txn is open on dbi */
static int dbi_has_cursor(const MDB_txn *txn, MDB_dbi dbi)
{
	for (const MDB_txn *t = txn; t; t = t->t_parent)
		for (const MDB_cursor *c = t->t_cursors; c; c = c->c_next)
			if (c->c_dbi == dbi)
				return 1;
	return 0;
}

/* Remove src's name item from the main DB (the record's pages stay). */
static int unlink_name(MDB_txn *txn, MDB_dbi src)
{
	dl_dbx *x = &txn->t_env->e_dbx[src];
	MDB_cursor mc;
	MDB_val k = {x->x_namelen, x->x_name};
	dlmdb_cursor_setup(&mc, txn, DL_MAIN_DBI);
	int rc = dlmdb_cursor_seek(&mc, &k, NULL, MDB_SET);
	if (rc == MDB_NOTFOUND)
		return 0;	/* created in this txn and not written back yet */
	if (rc)
		return rc;
	return dlmdb_tree_del_current(&mc, 1);
}

static int dl_u_dbi_replace(MDB_txn *txn, MDB_dbi dst, MDB_dbi src)
{
	if (!txn || dst == src || dst < DL_CORE_DBS || src < DL_CORE_DBS)
		return EINVAL;
	if (txn->t_flags & DL_T_RDONLY)
		return EACCES;
	int rc;
	if ((rc = dlmdb_txn_usable(txn, 1)))
		return rc;
	if ((rc = dlmdb_dbi_ok(txn, dst)) || (rc = dlmdb_dbi_ok(txn, src)))
		return rc;
	if ((txn->t_dbstate[dst] & DL_DBS_STALE) && (rc = dlmdb_db_refresh(txn, dst)))
		return rc;
	if ((txn->t_dbstate[src] & DL_DBS_STALE) && (rc = dlmdb_db_refresh(txn, src)))
		return rc;
	dl_dbrec *d = &txn->t_dbs[dst];
	const dl_dbrec *s = &txn->t_dbs[src];
	if ((d->d_flags ^ s->d_flags) & ~DL_REPLACE_FREEFLAGS)
		return MDB_INCOMPATIBLE;
	if (dbi_has_cursor(txn, dst) || dbi_has_cursor(txn, src))
		return EBUSY;

	dlmdb_txn_changed(txn, NULL);
	if ((rc = dlmdb_tree_free_all(txn, d)))
		return DL_TXN_FAIL(txn, rc);
	*d = *s;
	txn->t_dbstate[dst] |= DL_DBS_DIRTY;
	txn->t_flags |= DL_T_DIRTY;
	if ((rc = unlink_name(txn, src)))
		return DL_TXN_FAIL(txn, rc);
	txn->t_dbstate[src] = 0;
	mdb_dbi_close(txn->t_env, src);
	return 0;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_dbi_replace(MDB_txn *txn, MDB_dbi dst, MDB_dbi src)
{
	DL_GUARDED(txn, 0, dl_u_dbi_replace(txn, dst, src));
}
