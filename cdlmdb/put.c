/*
 * put.c - storing items: mdb_put, mdb_cursor_put and the shared tree_put.
 *
 * A new leaf node is first assembled as a byte blob (header, key, inline
 * data or overflow page number), then handed to dlmdb_insert_at, which
 * either drops it into the leaf or splits (split.c).  Values too large for
 * a node (8 + key + data > e_nodemax) go to a run of overflow pages.
 */
#include "internal.h"


static char *scratch(MDB_txn *txn, int i)
{
	if (!txn->t_scratch[i])
		txn->t_scratch[i] = malloc(txn->t_env->e_psize);
	return txn->t_scratch[i];
}

/* Write a value into a fresh run of overflow pages; returns its first page. */
static int overflow_store(MDB_cursor *mc, const MDB_val *data, unsigned flags, dl_page **out)
{
	MDB_txn *txn = mc->c_txn;
	MDB_env *env = txn->t_env;
	unsigned np = dl_ov_pages(env, data->mv_size);
	dl_page *ov;
	int rc = dlmdb_page_alloc(txn, np, &ov);
	if (rc)
		return rc;
	ov->p_pad = 0;
	ov->p_flags = DL_P_OVERFLOW;
	dl_pg_set_ovcount(ov, np);
	if (!(flags & MDB_RESERVE))
		memcpy((char *)ov + DL_PAGEHDR, data->mv_data, data->mv_size);
	else if (!(env->e_flags & MDB_NOMEMINIT))
		memset((char *)ov + DL_PAGEHDR, 0, data->mv_size);
	mc->c_db->d_overflow += np;
	*out = ov;
	return 0;
}

/* Try to rewrite a BIG value in place (its run is ours and long enough). */
static int overflow_reuse(MDB_cursor *mc, dl_node *n, MDB_val *data, unsigned flags, int *done)
{
	MDB_txn *txn = mc->c_txn;
	*done = 0;
	pgno_t pg = dl_node_bigpg(n);
	dl_page *ov = dlmdb_dirty_find(&txn->t_dirty, pg);
	MDB_env *env = txn->t_env;
	/* as LMDB: a run dirty in this txn is rewritten even when the new value
	 * would fit in the node (the node stays BIG), so pages match stock's;
	 * a run dirty only in an enclosing txn gets a private copy here under
	 * the same page numbers first (a child commit hands it to the parent) */
	if (!ov) {
		dl_page *pov = NULL;
		for (MDB_txn *t = txn->t_parent; t && !pov; t = t->t_parent)
			pov = dlmdb_dirty_find(&t->t_dirty, pg);
		if (!pov || !(pov->p_flags & DL_P_OVERFLOW) ||
		    dl_pg_ovcount(pov) < dl_ov_pages(env, data->mv_size))
			return 0;
		size_t sz = (size_t)dl_pg_ovcount(pov) * env->e_psize;
		if (!(ov = malloc(sz)))
			return ENOMEM;
		memcpy(ov, pov, sz);
		int rc = dlmdb_dirty_put(&txn->t_dirty, pg, ov);
		if (rc) {
			free(ov);
			return rc;
		}
	}
	/* a damaged node may name a dirty tree page: its lower/upper are no
	 * run length (overflow_drop then reports the damage) */
	if (!(ov->p_flags & DL_P_OVERFLOW) || dl_pg_ovcount(ov) < dl_ov_pages(env, data->mv_size))
		return 0;
	if (flags & MDB_RESERVE)
		data->mv_data = (char *)ov + DL_PAGEHDR;
	else
		memcpy((char *)ov + DL_PAGEHDR, data->mv_data, data->mv_size);
	dl_node_set_dsize(n, data->mv_size);
	*done = 1;
	return 0;
}

/* Release the overflow run of a BIG node. */
static int overflow_drop(MDB_cursor *mc, dl_node *n)
{
	MDB_txn *txn = mc->c_txn;
	dl_page *ov;
	int rc = dlmdb_page_get(txn, dl_node_bigpg(n), &ov);
	if (rc)
		return rc;
	unsigned np = dl_pg_ovcount(ov);
	if (!(ov->p_flags & DL_P_OVERFLOW) || np == 0 || dl_node_bigpg(n) + np > txn->t_next_pg)
		return MDB_CORRUPTED;
	mc->c_db->d_overflow -= np;
	return dlmdb_page_free(txn, dl_node_bigpg(n), np);
}

int dlmdb_tree_put(MDB_cursor *mc, MDB_val *key, MDB_val *data, unsigned flags)
{
	MDB_txn *txn = mc->c_txn;
	MDB_env *env = txn->t_env;
	unsigned nflags = ((flags & DL_PUT_TREE) ? DL_N_TREE : 0) | ((flags & DL_PUT_DUP) ? DL_N_DUP : 0);
	unsigned char keybuf[DL_MAXKEY + 1];
	MDB_val k = *key;
	int rc, exact = 0, empty = 0;
	unsigned eofkeep = 0;
	/* LMDB keeps a pending "after delete" state when a put fails early */
	unsigned wasdel = mc->c_flags & DL_C_DEL;

	if (flags & MDB_CURRENT) {
		if ((rc = dlmdb_cursor_revalidate(mc)))
			return rc;
		if (!(mc->c_flags & DL_C_INIT) || (mc->c_flags & DL_C_DEL) || mc->c_depth == 0)
			return EINVAL;
		eofkeep = mc->c_flags & DL_C_EOF;	/* LMDB does no SET step here */
		dl_page *p = mc->c_pg[mc->c_top];
		if (mc->c_ki[mc->c_top] >= dl_pg_nkeys(p))
			return MDB_NOTFOUND;
		MDB_val ck;
		unsigned char ckb[DL_MAXKEY];
		dlmdb_node_keyval(p, mc->c_ki[mc->c_top], &ck, ckb);
		memcpy(keybuf, ck.mv_data, ck.mv_size);
		k.mv_data = keybuf;
		k.mv_size = ck.mv_size;
		exact = 1;
	} else if ((flags & (MDB_APPEND | DL_PUT_HERE)) == (MDB_APPEND | DL_PUT_HERE) && mc->c_depth &&
	    (mc->c_flags & DL_C_INIT)) {
		/* the caller went LAST and checked key against the last
		 * item, and mc stands just past it */
		eofkeep = DL_C_EOF;
	} else if (flags & MDB_APPEND) {
		/* a run of appends: the cursor already stands on the last
		 * item, where its previous append left it */
		rc = dlmdb_cur_on_last(mc) ? 0 : dlmdb_search_root(mc, NULL, DL_SEARCH_LAST);
		if (rc == MDB_NOTFOUND) {
			empty = 1;
		} else if (rc) {
			return rc;
		} else {
			dl_page *p = mc->c_pg[mc->c_top];
			MDB_val last;
			unsigned char lb[DL_MAXKEY];
			dlmdb_node_keyval(p, mc->c_ki[mc->c_top], &last, lb);
			if (mc->c_dbx->x_cmp(&k, &last) <= 0) {
				/* as LMDB: left on the last item with the EOF mark */
				mc->c_flags |= wasdel | DL_C_EOF;
				return MDB_KEYEXIST;
			}
			mc->c_ki[mc->c_top]++;
			eofkeep = DL_C_EOF;	/* LMDB's LAST step marks EOF and keeps it */
		}
	} else if ((flags & DL_PUT_HERE) && mc->c_depth && (mc->c_flags & DL_C_INIT)) {
		/* (the caller's search ran dlmdb_search_root and dlmdb_node_find
		 * for this key, as the branch below would) */
		exact = 0;
	} else {
		if ((mc->c_flags & DL_C_SAVED) && (rc = dlmdb_cursor_revalidate(mc)))
			return rc;
		if (dlmdb_seek_keeps_eof(mc, &k))
			eofkeep = DL_C_EOF;	/* as LMDB's SET step of a put */
		rc = dlmdb_search_key(mc, &k, &exact);
		if (rc == MDB_NOTFOUND) {
			empty = 1;
		} else if (rc) {
			return rc;
		} else if (exact < 0) {
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		}
	}
	if (exact && dl_pg_is_leaf2(mc->c_pg[mc->c_top]))
		return (flags & MDB_NOOVERWRITE) ? MDB_KEYEXIST : 0; /* fixed-size value already there */
	if (!exact && !empty && dl_pg_is_leaf2(mc->c_pg[mc->c_top])) {
		if (k.mv_size != mc->c_pg[mc->c_top]->p_pad)
			return MDB_BAD_VALSIZE;
		dlmdb_txn_changed(txn, mc);
		if ((rc = dlmdb_cursor_touch(mc)))
			return rc;
		dlmdb_count_bump(mc, 1, 1);
		int sp = 0;
		if ((rc = dlmdb_insert_at(mc, mc->c_top, mc->c_ki[mc->c_top], k.mv_data, k.mv_size, flags, &sp)))
			return DL_TXN_FAIL(txn, rc);
		mc->c_db->d_entries++;
		if (sp) {
			int ex;
			if ((rc = dlmdb_search_root(mc, &k, DL_SEARCH_KEY)))
				return DL_TXN_FAIL(txn, rc == MDB_NOTFOUND ? MDB_PROBLEM : rc);
			mc->c_ki[mc->c_top] = (indx_t)dlmdb_node_find(mc, mc->c_pg[mc->c_top], &k, &ex);
			if (ex <= 0)
				return DL_TXN_FAIL(txn, MDB_PROBLEM);
		}
		mc->c_flags = DL_C_INIT;
		txn->t_gen++;
		return 0;
	}
	if (exact) {
		dl_node *n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
		if (!(flags & DL_PUT_DUP) && (n->n_flags & (DL_N_TREE | DL_N_DUP)) != nflags)
			return MDB_INCOMPATIBLE;
		if (flags & MDB_NOOVERWRITE) {
			mc->c_flags |= wasdel;
			/* the stored value, checked to lie inside its page */
			rc = (n->n_flags & DL_N_DUP) ? dlmdb_node_value(txn, n, data) :
				dlmdb_cur_fetch(mc, NULL, data);
			return rc ? rc : MDB_KEYEXIST;
		}
	}

	/* from here on the tree changes */
	dlmdb_txn_changed(txn, mc);
	if (empty) {
		dl_page *root;
		if ((rc = dlmdb_page_alloc(txn, 1, &root)))
			return DL_TXN_FAIL(txn, rc);
		unsigned fixed = (mc->c_db->d_flags & MDB_DUPFIXED) && mc->c_owner;
		dlmdb_pg_init(root, root->p_pgno, dl_db_leaf_flags(mc->c_db, fixed), env->e_psize);
		if (fixed)
			root->p_pad = (uint16_t)mc->c_db->d_pad;
		mc->c_db->d_root = root->p_pgno;
		mc->c_db->d_depth = 1;
		mc->c_db->d_leaf++;
		mc->c_pg[0] = root;
		mc->c_ki[0] = 0;
		mc->c_depth = 1;
		mc->c_top = 0;
		mc->c_flags = DL_C_INIT;
		txn->t_dbstate[mc->c_dbi] |= DL_DBS_DIRTY;
		txn->t_flags |= DL_T_DIRTY;
		if (fixed) {
			if (k.mv_size != root->p_pad)
				return DL_TXN_FAIL(txn, MDB_BAD_VALSIZE);
			dlmdb_pg_add_leaf2(root, 0, k.mv_data);
			mc->c_db->d_entries++;
			txn->t_gen++;
			return 0;
		}
	} else if ((rc = dlmdb_cursor_touch(mc))) {
		return rc;
	} else if (mc->c_db->d_flags & MDB_COUNTED) {
		/* the entries this item adds (or, replacing one, the change) */
		int dupsort = (mc->c_db->d_flags & MDB_DUPSORT) != 0;
		int64_t dent = (int64_t)dl_value_items(nflags, data->mv_data, dupsort), dkeys = 1;
		if (exact) {
			dent -= (int64_t)dl_leaf_items(dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]), dupsort);
			dkeys = 0;
		}
		dlmdb_count_bump(mc, dent, dkeys);
	}

	dl_page *leaf = mc->c_pg[mc->c_top];
	unsigned ki = mc->c_ki[mc->c_top];
	if (exact) {
		dl_node *n = dl_pg_node(leaf, ki);
		int done = 0;
		if (n->n_flags & DL_N_BIG) {
			if ((rc = overflow_reuse(mc, n, data, flags, &done)))
				return DL_TXN_FAIL(txn, rc);
			if (done)
				goto placed;
			if ((rc = overflow_drop(mc, n)))
				return DL_TXN_FAIL(txn, rc);
		} else if (dl_node_dsize(n) == data->mv_size &&
			   DL_NODEHDR + k.mv_size + data->mv_size <= dl_db_nodemax(env, mc->c_db)) {
			/* (the overflow rule counts the whole key, wherever the
			 * node lives; a PREFIX node keeps its shared length) */
			n->n_flags = (uint16_t)(nflags | (n->n_flags & ~DL_N_KIND));
			if (flags & MDB_RESERVE)
				data->mv_data = dl_node_data(n);
			else if (data->mv_size)
				memcpy(dl_node_data(n), data->mv_data, data->mv_size);
			goto placed;
		}
		dlmdb_pg_del_node(leaf, ki);
	}

	/* assemble the node */
	char *blob = scratch(txn, 1);
	if (!blob)
		return DL_TXN_FAIL(txn, ENOMEM);
	dl_node *nd = (dl_node *)blob;
	size_t len;
	nd->n_ksize = (uint16_t)k.mv_size;
	memcpy(blob + DL_NODEHDR, k.mv_data, k.mv_size);
	dl_node_set_dsize(nd, data->mv_size);
	if (DL_NODEHDR + k.mv_size + data->mv_size > dl_db_nodemax(env, mc->c_db)) {
		dl_page *ov;
		if ((rc = overflow_store(mc, data, flags, &ov)))
			return DL_TXN_FAIL(txn, rc);
		nd->n_flags = (uint16_t)(nflags | DL_N_BIG);
		memcpy(blob + DL_NODEHDR + k.mv_size, &ov->p_pgno, sizeof(pgno_t));
		len = DL_NODEHDR + k.mv_size + sizeof(pgno_t);
	} else {
		nd->n_flags = (uint16_t)nflags;
		if (!(flags & MDB_RESERVE)) {
			if (data->mv_size)
				memcpy(blob + DL_NODEHDR + k.mv_size, data->mv_data, data->mv_size);
		} else {
			memset(blob + DL_NODEHDR + k.mv_size, 0, data->mv_size);
		}
		len = DL_NODEHDR + k.mv_size + data->mv_size;
	}
	int split = 0;
	rc = dlmdb_insert_at(mc, mc->c_top, ki, blob, len, flags, &split);
	if (rc)
		return DL_TXN_FAIL(txn, rc);
	if (!exact)
		mc->c_db->d_entries++;
	if (split) {
		/* the split moved things around: find the item again */
		int ex;
		if ((rc = dlmdb_search_root(mc, &k, DL_SEARCH_KEY)))
			return DL_TXN_FAIL(txn, rc == MDB_NOTFOUND ? MDB_PROBLEM : rc);
		mc->c_ki[mc->c_top] = (indx_t)dlmdb_node_find(mc, mc->c_pg[mc->c_top], &k, &ex);
		if (ex <= 0)
			return DL_TXN_FAIL(txn, MDB_PROBLEM);
	}
	if (flags & MDB_RESERVE) {
		dl_node *n = dl_pg_node(mc->c_pg[mc->c_top], mc->c_ki[mc->c_top]);
		MDB_val v;
		if ((rc = dlmdb_node_value(txn, n, &v)))
			return DL_TXN_FAIL(txn, rc);
		data->mv_data = v.mv_data;
	}
placed:
	mc->c_flags = DL_C_INIT | eofkeep;
	txn->t_gen++;
	return 0;
}

static int put_checks(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned flags,
	unsigned allowed)
{
	int rc;
	if (!key || !data)
		return EINVAL;
	if ((rc = dlmdb_dbi_ok(txn, dbi)))
		return rc;
	if (dbi == DL_FREE_DBI || (flags & ~allowed))
		return EINVAL;
	if ((rc = dlmdb_txn_usable(txn, 1)))
		return rc;
	if (key->mv_size == 0 || key->mv_size > DL_MAXKEY)
		return MDB_BAD_VALSIZE;
	if (data->mv_size > 0xffffffffu)
		return MDB_BAD_VALSIZE;
	if (txn->t_dbstate[dbi] & DL_DBS_STALE) {
		if ((rc = dlmdb_db_refresh(txn, dbi)))
			return rc;
	}
	return 0;
}

static int dl_u_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags)
{
	if (!txn)
		return EINVAL;
	int rc = put_checks(txn, dbi, key, data, flags, MDB_NOOVERWRITE | MDB_NODUPDATA |
		MDB_RESERVE | MDB_APPEND | MDB_APPENDDUP);
	if (rc)
		return rc;
	MDB_cursor mc;
	dlmdb_cursor_setup(&mc, txn, dbi);
	if (txn->t_dbs[dbi].d_flags & MDB_DUPSORT) {
		dl_xcur x;
		x.x_buf = txn->t_scratch[2] ? txn->t_scratch[2] : (txn->t_scratch[2] = malloc(txn->t_env->e_psize));
		if (!x.x_buf)
			return ENOMEM;
		dlmdb_dup_bind(&mc, &x);
		return dlmdb_dup_put(&mc, key, data, flags);
	}
	if (flags & (MDB_NODUPDATA | MDB_APPENDDUP)) {
		/* meaningful only with duplicates; LMDB ignores them here too */
		flags &= ~(MDB_NODUPDATA | MDB_APPENDDUP);
	}
	return dlmdb_tree_put(&mc, key, data, flags & ~MDB_CURRENT);
}

static int dl_u_cursor_put(MDB_cursor *mc, MDB_val *key, MDB_val *data, unsigned int flags)
{
	if (!mc || !mc->c_txn)
		return EINVAL;
	if ((flags & MDB_MULTIPLE) && key && data && mc->c_db && !(mc->c_db->d_flags & MDB_DUPFIXED)) {
		/* LMDB refuses MULTIPLE outside DUPFIXED before any other check
		 * (key size included) and reports zero items written */
		data[1].mv_size = 0;
		return MDB_INCOMPATIBLE;
	}
	/* as LMDB: an MDB_MULTIPLE put refused before any item reports none */
	size_t count = (flags & MDB_MULTIPLE) && data ? data[1].mv_size : 0;
	if ((flags & MDB_MULTIPLE) && data)
		data[1].mv_size = 0;
	int rc = put_checks(mc->c_txn, mc->c_dbi, key, data, flags, MDB_NOOVERWRITE |
		MDB_NODUPDATA | MDB_RESERVE | MDB_APPEND | MDB_APPENDDUP | MDB_CURRENT | MDB_MULTIPLE);
	if (rc)
		return rc;
	if (flags & MDB_MULTIPLE)
		data[1].mv_size = count;
	if ((mc->c_db->d_flags & MDB_DUPSORT) && mc->c_sub)
		return dlmdb_dup_put(mc, key, data, flags);
	return dlmdb_tree_put(mc, key, data, flags & ~(MDB_NODUPDATA | MDB_APPENDDUP | MDB_MULTIPLE));
}

/* Store a named-DB record in the main DB (used by dbi.c). */
int dlmdb_put_dbrec(MDB_txn *txn, const char *name, size_t len, const dl_dbrec *rec)
{
	MDB_cursor mc;
	MDB_val k = {len, (void *)name}, d = {sizeof *rec, (void *)rec};
	dlmdb_cursor_setup(&mc, txn, DL_MAIN_DBI);
	return dlmdb_tree_put(&mc, &k, &d, DL_PUT_TREE);
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags)
{
	DL_GUARDED(txn, 0, dl_u_put(txn, dbi, key, data, flags));
}

int mdb_cursor_put(MDB_cursor *mc, MDB_val *key, MDB_val *data, unsigned int flags)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_put(mc, key, data, flags));
}
