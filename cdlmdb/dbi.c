/*
 * dbi.c - database handles: open/close/flags/drop, comparators, and writing
 * changed named-DB records back into the main DB at commit.
 *
 * A named DB is a main-DB item whose key is the name and whose node carries
 * DL_N_TREE with a 48-byte dl_dbrec as value.  Handles live in the env's
 * e_dbx table; a txn tracks per handle whether its record copy is valid,
 * stale (reload on first use) or dirty (write back at commit).
 */
#include "internal.h"

/*
 * Every change of a slot's x_used / x_seq or of e_numdbs happens under
 * e_dbimutex, between dbx_change_start and dbx_change_done, which make
 * e_dbigen odd for the duration.  Txn begin (txn.c) copies those fields
 * without the mutex and keeps the copy only if it saw the same even
 * generation before and after; otherwise it copies again under the mutex.
 * The fields themselves are stored and loaded atomically (relaxed).
 */
static void dbx_change_start(MDB_env *env)
{
	__atomic_store_n(&env->e_dbigen, env->e_dbigen + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static void dbx_change_done(MDB_env *env)
{
	__atomic_store_n(&env->e_dbigen, env->e_dbigen + 1, __ATOMIC_RELEASE);
}

/*
 * Which handles a txn may use (issue 12).  A slot of e_dbx names a DB for
 * the whole environment, but whether that DB exists is a question for each
 * txn's own view: its snapshot, plus what a write txn and its parents
 * changed.  So a txn resolves a handle itself before it uses it: opening
 * it by name, or using a handle it has not seen before (dlmdb_dbi_adopt),
 * looks the name up in the txn's view; found, the handle is bound in the
 * txn (t_dbstate VALID, t_dbseq = x_seq) with the record it found; not
 * found, the open answers MDB_NOTFOUND and the use EINVAL, whoever else
 * has the handle open.  Handles in use at txn begin are bound unresolved
 * (VALID | STALE: the record is looked up at first use, and a missing DB
 * is MDB_BAD_DBI then), as in LMDB.
 *
 * Closing a slot (mdb_dbi_close, mdb_drop with del) only frees it for
 * later registrations: it keeps its name and x_seq, so txns that have it
 * bound go on using the DB their view holds.  x_seq changes only when a
 * slot is registered under another name, and that waits until no live txn
 * has resolved the slot's current handle: x_binders counts the txn
 * families (a top-level txn with its children) that did, each once
 * (DL_DBS_COUNTED in its t_dbstate), from the resolution until the top
 * txn ends (commit, abort, reset) or the child that resolved it aborts.
 * A binding taken at txn begin and not used yet is not counted: if the
 * slot is renamed before its first use, that use finds x_seq changed and
 * answers MDB_BAD_DBI, as LMDB does for a write txn; the first use
 * (dlmdb_db_refresh) joins the count in a way no rename can slip past.
 * Registration prefers a free slot that had the same name, then one never
 * used, then a free one nobody counts, then one that only the registering
 * txn itself counts (dbx_self_renamable); else MDB_DBS_FULL.
 *
 * A handle first registered by a txn that then aborts (or a reader that is
 * reset) is closed again, unless another txn family opened it meanwhile:
 * x_owner names the registering family's top txn until either happens.
 */
static void dbx_close(MDB_env *env, MDB_dbi dbi)
{
	dl_dbx *x = &env->e_dbx[dbi];
	dbx_change_start(env);
	__atomic_store_n(&x->x_used, 0, __ATOMIC_SEQ_CST);
	x->x_owner = NULL;
	dbx_change_done(env);
}

/* txn's family joins the binders of slot (not counted yet) */
static void dbi_count(MDB_txn *txn, unsigned slot)
{
	if (txn->t_dbstate[slot] & DL_DBS_COUNTED)
		return;
	__atomic_add_fetch(&txn->t_env->e_dbx[slot].x_binders, 1, __ATOMIC_SEQ_CST);
	txn->t_dbstate[slot] |= DL_DBS_COUNTED;
}

void dlmdb_dbis_release(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	const MDB_txn *p = txn->t_parent;
	if (!env->e_dbx)
		return;
	for (unsigned i = DL_CORE_DBS; i < txn->t_numdbs; i++) {
		if (!(txn->t_dbstate[i] & DL_DBS_COUNTED))
			continue;
		txn->t_dbstate[i] &= (unsigned char)~DL_DBS_COUNTED;
		if (p && i < p->t_numdbs && (p->t_dbstate[i] & DL_DBS_COUNTED))
			continue;	/* the parent's count, not ours to give up */
		__atomic_sub_fetch(&env->e_dbx[i].x_binders, 1, __ATOMIC_SEQ_CST);
	}
}

static void dbx_set_cmp(dl_dbx *x, unsigned f)
{
	x->x_cmp = dlmdb_cmp_for(f);
	x->x_dcmp = dlmdb_cmp_for(((f & MDB_REVERSEDUP) ? MDB_REVERSEKEY : 0) |
		((f & MDB_INTEGERDUP) ? MDB_INTEGERKEY : 0));
}

static MDB_txn *txn_top(MDB_txn *txn)
{
	while (txn->t_parent)
		txn = txn->t_parent;
	return txn;
}

static int dbx_named(const dl_dbx *x, const char *name, size_t len)
{
	return x->x_name && x->x_namelen == len && !memcmp(x->x_name, name, len);
}

/* The slot registered under name, or 0 (e_dbimutex held). */
static unsigned dbx_find(MDB_env *env, const char *name, size_t len)
{
	for (unsigned i = DL_CORE_DBS; i < env->e_numdbs; i++)
		if (env->e_dbx[i].x_used && dbx_named(&env->e_dbx[i], name, len))
			return i;
	return 0;
}

/*
 * 1 if txn may rename free slot i that it has bound itself: the binding it
 * loses is its own to give up, as after mdb_dbi_close in LMDB, where the
 * handle is not to be used again.  Only a top-level txn with no record
 * change of that DB still to write and (a write txn) no cursor open on it,
 * so that nothing of the old DB is left half-done.  This is the pattern of
 * mdb_stat -a and the tools: one txn opens, uses and closes each DB in
 * turn with maxdbs smaller than the number of DBs.
 */
static int dbx_self_renamable(const MDB_txn *txn, unsigned i)
{
	if (txn->t_parent || (txn->t_dbstate[i] & DL_DBS_DIRTY))
		return 0;
	for (const MDB_cursor *c = txn->t_cursors; c; c = c->c_next)
		if (c->c_dbi == i)
			return 0;
	return 1;
}

/* The slot a new registration of name by txn takes, or 0 if all are in use. */
static unsigned dbx_pick(MDB_env *env, const char *name, size_t len, const MDB_txn *txn)
{
	unsigned any = 0, self = 0;
	for (unsigned i = DL_CORE_DBS; i < env->e_numdbs; i++) {
		dl_dbx *x = &env->e_dbx[i];
		if (x->x_used)
			continue;
		if (dbx_named(x, name, len))
			return i;
		if (any)
			continue;
		int n = __atomic_load_n(&x->x_binders, __ATOMIC_SEQ_CST);
		if (n == 0)
			any = i;
		else if (n == 1 && !self && i < txn->t_numdbs &&
		    (txn->t_dbstate[i] & DL_DBS_COUNTED) && dbx_self_renamable(txn, i))
			self = i;	/* its count carries over to the new name */
	}
	if (env->e_numdbs < env->e_maxdbs)
		return env->e_numdbs;
	return any ? any : self;
}

/* The free slot that had name last, or 0 (e_dbimutex held). */
static unsigned dbx_find_free(MDB_env *env, const char *name, size_t len)
{
	for (unsigned i = DL_CORE_DBS; i < env->e_numdbs; i++)
		if (!env->e_dbx[i].x_used && dbx_named(&env->e_dbx[i], name, len))
			return i;
	return 0;
}

/* Register name in free slot (e_dbimutex held); dup is a malloc'd copy of
 * the name, taken over or freed (NULL will do when the slot had the name). */
static void dbx_register(MDB_env *env, unsigned slot, const char *name, size_t len, char *dup,
	unsigned dbflags, MDB_txn *owner)
{
	dl_dbx *x = &env->e_dbx[slot];
	char *old = NULL;
	dbx_change_start(env);
	if (dbx_named(x, name, len)) {
		old = dup;	/* the slot's own name: it stays what it was */
	} else {
		old = x->x_name;
		x->x_name = dup;
		x->x_namelen = len;
		/* before x_used: a first use that sees the slot in use sees
		 * the new x_seq too (dlmdb_db_refresh) */
		__atomic_store_n(&x->x_seq, x->x_seq + 1, __ATOMIC_SEQ_CST);
	}
	x->x_rel = NULL;
	x->x_relctx = NULL;
	dbx_set_cmp(x, dbflags);
	x->x_owner = owner;
	__atomic_store_n(&x->x_used, 1, __ATOMIC_SEQ_CST);
	if (slot >= env->e_numdbs)
		__atomic_store_n(&env->e_numdbs, slot + 1, __ATOMIC_RELAXED);
	dbx_change_done(env);
	free(old);
}

/* Bind slot in txn to rec (e_dbimutex held): the txn resolved the handle
 * and joins its binders.  A handle another family registered is no longer
 * theirs to take back. */
static void dbi_bind(MDB_txn *txn, unsigned slot, const dl_dbrec *rec, unsigned state)
{
	dl_dbx *x = &txn->t_env->e_dbx[slot];
	if (x->x_owner && x->x_owner != txn_top(txn))
		x->x_owner = NULL;
	if (slot >= txn->t_numdbs)
		txn->t_numdbs = slot + 1;
	txn->t_dbs[slot] = *rec;
	txn->t_dbstate[slot] = (unsigned char)(state | (txn->t_dbstate[slot] & DL_DBS_COUNTED));
	txn->t_dbseq[slot] = x->x_seq;
	dbi_count(txn, slot);
}

int dlmdb_dbrec_lookup(MDB_txn *txn, const char *name, size_t len, dl_dbrec *rec)
{
	MDB_cursor mc;
	MDB_val k = {len, (void *)name}, d;
	dlmdb_cursor_setup(&mc, txn, DL_MAIN_DBI);
	int rc = dlmdb_cursor_seek(&mc, &k, &d, MDB_SET);
	if (rc)
		return rc;
	dl_node *n = dl_pg_node(mc.c_pg[mc.c_top], mc.c_ki[mc.c_top]);
	if ((n->n_flags & (DL_N_TREE | DL_N_DUP)) != DL_N_TREE || d.mv_size != sizeof *rec)
		return MDB_INCOMPATIBLE;
	memcpy(rec, d.mv_data, sizeof *rec);
	return 0;
}

int dlmdb_dbi_adopt(MDB_txn *txn, MDB_dbi dbi)
{
	MDB_env *env = txn->t_env;
	if (dbi < DL_CORE_DBS)
		return EINVAL;
	int rc = EINVAL;
	pthread_mutex_lock(&env->e_dbimutex);
	dl_dbx *x = &env->e_dbx[dbi];
	if (dbi < env->e_numdbs && x->x_used) {
		dl_dbrec rec;
		rc = dlmdb_dbrec_lookup(txn, x->x_name, x->x_namelen, &rec);
		if (rc == 0)
			dbi_bind(txn, dbi, &rec, DL_DBS_VALID);
		else if (rc == MDB_NOTFOUND)
			rc = EINVAL;	/* not a DB of this txn's view */
	}
	pthread_mutex_unlock(&env->e_dbimutex);
	return rc;
}

static int dl_u_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi)
{
	if (!txn || !dbi)
		return EINVAL;
	if (flags & ~(DL_DB_USERFLAGS | MDB_CREATE))
		return EINVAL;
	if (txn->t_flags & (DL_T_ERROR | DL_T_DONE | DL_T_CHILD))
		return MDB_BAD_TXN;
	MDB_env *env = txn->t_env;

	if (!name) {
		*dbi = DL_MAIN_DBI;
		unsigned f2 = flags & DL_DB_USERFLAGS;
		dl_dbrec *m = &txn->t_dbs[DL_MAIN_DBI];
		if (m->d_flags & ~DL_DB_USERFLAGS)
			return MDB_INCOMPATIBLE;
		if ((m->d_flags | f2) != m->d_flags) {
			/* an extension changes how the tree is encoded: only an
			 * empty main DB can take one */
			if ((f2 & ~m->d_flags & DL_DB_EXTFLAGS) && m->d_root != DL_NO_PAGE)
				return MDB_INCOMPATIBLE;
			m->d_flags = (uint16_t)(m->d_flags | f2);
			txn->t_flags |= DL_T_DIRTY;
		}
		dbx_set_cmp(&env->e_dbx[DL_MAIN_DBI], m->d_flags);
		return 0;
	}
	size_t len = strlen(name);
	int rc;
	char *dup = NULL;
	pthread_mutex_lock(&env->e_dbimutex);
	unsigned slot = dbx_find(env, name, len);
	unsigned mine = slot ? slot : dbx_find_free(env, name, len);
	if (mine && mine < txn->t_numdbs && txn->t_dbseq[mine] == env->e_dbx[mine].x_seq &&
	    (txn->t_dbstate[mine] & (DL_DBS_VALID | DL_DBS_STALE)) == DL_DBS_VALID) {
		/* resolved in this txn already: its record is the one to use,
		 * newer than the main DB's in a write txn.  A handle closed
		 * meanwhile (a child's drop that aborted, another txn's drop or
		 * mdb_dbi_close) is registered again, as this txn's */
		if (!slot) {
			dbx_register(env, mine, name, len, NULL, txn->t_dbs[mine].d_flags, txn_top(txn));
			txn->t_dbstate[mine] |= DL_DBS_NEW;
		}
		pthread_mutex_unlock(&env->e_dbimutex);
		*dbi = mine;
		return 0;
	}
	unsigned fresh = slot ? 0 : dbx_pick(env, name, len, txn);
	if (!slot && !fresh) {
		rc = MDB_DBS_FULL;
		goto out;
	}
	if (txn->t_dbs[DL_MAIN_DBI].d_flags & (MDB_DUPSORT | MDB_INTEGERKEY)) {
		rc = (flags & MDB_CREATE) ? MDB_INCOMPATIBLE : MDB_NOTFOUND;
		goto out;
	}
	if (!slot && !(dup = malloc(len + 1))) {
		rc = ENOMEM;	/* before anything is created */
		goto out;
	}
	dl_dbrec rec;
	unsigned state = DL_DBS_VALID;
	rc = dlmdb_dbrec_lookup(txn, name, len, &rec);
	if (rc == 0) {
		if (rec.d_flags & ~DL_DB_USERFLAGS) {
			rc = MDB_INCOMPATIBLE;
			goto out;
		}
	} else {
		if (rc != MDB_NOTFOUND || !(flags & MDB_CREATE))
			goto out;
		if (txn->t_flags & DL_T_RDONLY) {
			rc = EACCES;
			goto out;
		}
		memset(&rec, 0, sizeof rec);
		rec.d_root = DL_NO_PAGE;
		rec.d_flags = (uint16_t)(flags & DL_DB_USERFLAGS);
		if ((rc = dlmdb_put_dbrec(txn, name, len, &rec)))
			goto out;
		state |= DL_DBS_DIRTY;
	}
	if (!slot) {
		memcpy(dup, name, len + 1);	/* dbx_register frees it if not needed */
		slot = fresh;	/* still free: the mutex was held all along */
		dbx_register(env, slot, name, len, dup, rec.d_flags, txn_top(txn));
		dup = NULL;
		state |= DL_DBS_NEW;
	} else if (slot < txn->t_numdbs && txn->t_dbseq[slot] == env->e_dbx[slot].x_seq) {
		state |= txn->t_dbstate[slot] & DL_DBS_NEW;	/* registered by this txn */
	}
	dbi_bind(txn, slot, &rec, state);
	*dbi = slot;
	rc = 0;
out:
	pthread_mutex_unlock(&env->e_dbimutex);
	free(dup);
	return rc;
}

void mdb_dbi_close(MDB_env *env, MDB_dbi dbi)
{
	if (!env || dbi < DL_CORE_DBS || dbi >= env->e_maxdbs || !env->e_dbx)
		return;
	pthread_mutex_lock(&env->e_dbimutex);
	if (env->e_dbx[dbi].x_used)
		dbx_close(env, dbi);
	pthread_mutex_unlock(&env->e_dbimutex);
}

static int dl_u_dbi_flags(MDB_txn *txn, MDB_dbi dbi, unsigned int *flags)
{
	if (!txn || !flags)
		return EINVAL;
	int rc = dlmdb_dbi_ok(txn, dbi);
	if (rc)
		return rc;
	if ((txn->t_dbstate[dbi] & DL_DBS_STALE) && (rc = dlmdb_db_refresh(txn, dbi)))
		return rc;
	*flags = txn->t_dbs[dbi].d_flags & DL_DB_PERSIST;
	return 0;
}

static int dl_u_drop(MDB_txn *txn, MDB_dbi dbi, int del)
{
	if (!txn || (unsigned)del > 1)
		return EINVAL;
	int rc = dlmdb_dbi_ok(txn, dbi);
	if (rc)
		return rc;
	if (dbi == DL_FREE_DBI)
		return EINVAL;	/* not a user handle, whatever the txn */
	if (txn->t_flags & DL_T_RDONLY)
		return EACCES;
	if ((rc = dlmdb_txn_usable(txn, 1)))
		return rc;
	if ((txn->t_dbstate[dbi] & DL_DBS_STALE) && (rc = dlmdb_db_refresh(txn, dbi)))
		return rc;
	dlmdb_txn_changed(txn, NULL);
	if ((rc = dlmdb_tree_free_all(txn, &txn->t_dbs[dbi])))
		return DL_TXN_FAIL(txn, rc);
	dlmdb_cursors_forget(txn, dbi);	/* as LMDB: its cursors are unpositioned */
	txn->t_flags |= DL_T_DIRTY;
	if (del && dbi >= DL_CORE_DBS) {
		MDB_env *env = txn->t_env;
		dl_dbx *x = &env->e_dbx[dbi];
		MDB_cursor mc;
		MDB_val k = {x->x_namelen, x->x_name};
		dlmdb_cursor_setup(&mc, txn, DL_MAIN_DBI);
		rc = dlmdb_cursor_seek(&mc, &k, NULL, MDB_SET);
		if (rc == 0) {
			rc = dlmdb_tree_del_current(&mc, 1);
		} else if (rc == MDB_NOTFOUND) {
			rc = 0;
		}
		if (rc)
			return DL_TXN_FAIL(txn, rc);
		txn->t_dbstate[dbi] &= DL_DBS_COUNTED;	/* counted till the txn ends */
		mdb_dbi_close(env, dbi);
		return 0;
	}
	txn->t_dbstate[dbi] |= DL_DBS_DIRTY;
	return 0;
}

int mdb_set_compare(MDB_txn *txn, MDB_dbi dbi, MDB_cmp_func *cmp)
{
	if (!txn || dlmdb_dbi_ok(txn, dbi) || dbi == DL_FREE_DBI)
		return EINVAL;
	txn->t_env->e_dbx[dbi].x_cmp = cmp ? cmp : dlmdb_cmp_for(txn->t_dbs[dbi].d_flags);
	return 0;
}

int mdb_set_dupsort(MDB_txn *txn, MDB_dbi dbi, MDB_cmp_func *cmp)
{
	if (!txn || dlmdb_dbi_ok(txn, dbi) || dbi == DL_FREE_DBI)
		return EINVAL;
	txn->t_env->e_dbx[dbi].x_dcmp = cmp;
	return 0;
}

int mdb_set_relfunc(MDB_txn *txn, MDB_dbi dbi, MDB_rel_func *rel)
{
	if (!txn || dlmdb_dbi_ok(txn, dbi) || dbi == DL_FREE_DBI)
		return EINVAL;
	txn->t_env->e_dbx[dbi].x_rel = rel;
	return 0;
}

int mdb_set_relctx(MDB_txn *txn, MDB_dbi dbi, void *ctx)
{
	if (!txn || dlmdb_dbi_ok(txn, dbi) || dbi == DL_FREE_DBI)
		return EINVAL;
	txn->t_env->e_dbx[dbi].x_relctx = ctx;
	return 0;
}

int dlmdb_dbrecs_flush(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	for (unsigned i = DL_CORE_DBS; i < txn->t_numdbs; i++) {
		unsigned char st = txn->t_dbstate[i];
		if ((st & (DL_DBS_VALID | DL_DBS_DIRTY | DL_DBS_STALE)) != (DL_DBS_VALID | DL_DBS_DIRTY))
			continue;
		dl_dbx *x = &env->e_dbx[i];
		if (txn->t_dbseq[i] != x->x_seq)
			return MDB_BAD_DBI;	/* the slot was given another name meanwhile */
		int rc = dlmdb_put_dbrec(txn, x->x_name, x->x_namelen, &txn->t_dbs[i]);
		if (rc)
			return rc;
		if (txn->t_dbs[i].d_flags & DL_DB_EXTFLAGS)
			txn->t_flags |= DL_T_EXTFMT;	/* the file gets the extended version */
		txn->t_dbstate[i] = (unsigned char)(st & ~DL_DBS_DIRTY);
	}
	return 0;
}

void dlmdb_dbis_finish(MDB_txn *txn, int committed)
{
	MDB_env *env = txn->t_env;
	if (!env->e_dbx)
		return;
	/* t_dbstate is the txn's own: look for handles it opened unlocked */
	unsigned i = DL_CORE_DBS;
	while (i < txn->t_numdbs && !(txn->t_dbstate[i] & DL_DBS_NEW))
		i++;
	if (i >= txn->t_numdbs)
		return;
	MDB_txn *top = txn_top(txn);
	pthread_mutex_lock(&env->e_dbimutex);
	for (; i < txn->t_numdbs; i++) {
		if (!(txn->t_dbstate[i] & DL_DBS_NEW))
			continue;
		txn->t_dbstate[i] &= (unsigned char)~DL_DBS_NEW;
		dl_dbx *x = &env->e_dbx[i];
		if (x->x_owner != top || txn->t_dbseq[i] != x->x_seq)
			continue;	/* shared with other txns by now, or closed */
		if (committed) {
			if (txn == top)
				x->x_owner = NULL;	/* the handle stays */
			continue;	/* a child's: the parent decides */
		}
		MDB_txn *p = txn->t_parent;
		if (p && i < p->t_numdbs && (p->t_dbstate[i] & DL_DBS_VALID))
			continue; /* the parent already knew this handle */
		if (x->x_used)
			dbx_close(env, i);
	}
	pthread_mutex_unlock(&env->e_dbimutex);
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi)
{
	DL_GUARDED(txn, 0, dl_u_dbi_open(txn, name, flags, dbi));
}

int mdb_dbi_flags(MDB_txn *txn, MDB_dbi dbi, unsigned int *flags)
{
	DL_GUARDED(txn, 0, dl_u_dbi_flags(txn, dbi, flags));
}

int mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del)
{
	DL_GUARDED(txn, 0, dl_u_drop(txn, dbi, del));
}
