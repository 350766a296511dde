/*
 * txn.c - transactions: begin, snapshot, page lookup, commit, abort,
 * reset/renew, nested write transactions.
 *
 * Readers publish their snapshot id in a reader slot before trusting the
 * meta they read, then re-check that meta; writers hold the writer mutex.
 * A write transaction's changes live in malloc'd page copies (t_dirty); a
 * commit writes them with pwrite, syncs, then writes the meta page.  Under
 * MDB_WRITEMAP the top-level writer edits free pages of the shared map in
 * place instead (freelist.c), and the commit only flushes them.  A
 * nested transaction has its own dirty map and copies of the parent's free
 * lists and DB records; commit folds them into the parent, abort drops them.
 */
#include "internal.h"
#include <sys/stat.h>
#include <sys/uio.h>

/*
 * Does the data file hold pages [0, end)?  The map usually runs past the
 * end of the file, and a page there is not just empty: touching it kills
 * the process with SIGBUS.  Every page a committed tree refers to was
 * written, so only a damaged file can point past the end (or at a page
 * number below last_pg that was freed before it was ever written).  The
 * file never shrinks, so the size last seen is a floor; it is refreshed
 * only when a page beyond it is wanted.
 */
static void fpages_raise(MDB_env *env, size_t pages)
{
	size_t seen = __atomic_load_n(&env->e_fpages, __ATOMIC_RELAXED);
	while (pages > seen && !__atomic_compare_exchange_n(&env->e_fpages, &seen, pages, 0,
		__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* The pages the data file holds now (fstat), raising e_fpages to match;
 * 0 when fstat fails. */
static size_t file_pages(MDB_env *env)
{
	struct stat st;
	if (fstat(env->e_fd, &st))
		return 0;
	size_t pages = (size_t)st.st_size / env->e_psize;
	fpages_raise(env, pages);
	return pages;
}

static int file_holds(MDB_env *env, pgno_t end)
{
	return end <= file_pages(env);
}

int dlmdb_page_get(MDB_txn *txn, pgno_t pg, dl_page **out)
{
	/* every page visit is where an interrupt is noticed (interrupt.c) */
	if (DL_UNLIKELY(dl_intr_pending(txn)))
		return dlmdb_txn_intr_fail(txn);
	if (DL_UNLIKELY(pg >= txn->t_next_pg || pg < DL_NMETAS))
		return MDB_PAGE_NOTFOUND;
	if (!(txn->t_flags & DL_T_RDONLY)) {
		for (MDB_txn *t = txn; t; t = t->t_parent) {
			if (!t->t_dirty.d_n)
				continue;
			dl_page *p = dlmdb_dirty_find(&t->t_dirty, pg);
			if (p) {
				*out = p;
				return 0;
			}
		}
	}
	MDB_env *env = txn->t_env;
	if (DL_UNLIKELY(pg >= __atomic_load_n(&env->e_fpages, __ATOMIC_RELAXED)) &&
	    !file_holds(env, pg + 1))
		return MDB_PAGE_NOTFOUND;	/* as for a number past the snapshot */
	*out = (dl_page *)(env->e_map + (size_t)pg * env->e_psize);
	return 0;
}

int dlmdb_txn_usable(MDB_txn *txn, int write)
{
	if (write && (txn->t_flags & DL_T_RDONLY))
		return EACCES;
	if (txn->t_flags & (DL_T_ERROR | DL_T_DONE | DL_T_CHILD))
		return MDB_BAD_TXN;
	return 0;
}

void dlmdb_txn_cursors_save(MDB_txn *txn, MDB_cursor *except)
{
	MDB_cursor *owner = except ? except->c_owner : NULL;
	for (MDB_cursor *c = txn->t_cursors; c; c = c->c_next)
		if (c != except && c != owner)
			dlmdb_cursor_save(c);
}

int dlmdb_dbi_ok(MDB_txn *txn, MDB_dbi dbi)
{
	MDB_env *env = txn->t_env;
	if (dbi >= env->e_maxdbs)
		return EINVAL;
	if (DL_UNLIKELY(dbi >= txn->t_numdbs || !(txn->t_dbstate[dbi] & DL_DBS_VALID)))
		return dlmdb_dbi_adopt(txn, dbi);	/* not resolved in this txn yet (dbi.c) */
	/* (an atomic load: a registration in another thread stores x_seq so;
	 * relaxed is enough, the same plain load on x86-64) */
	if (dbi >= DL_CORE_DBS &&
	    txn->t_dbseq[dbi] != __atomic_load_n(&env->e_dbx[dbi].x_seq, __ATOMIC_RELAXED))
		return MDB_BAD_DBI;	/* the slot names another DB now */
	return 0;
}

static int db_reload(MDB_txn *txn, MDB_dbi dbi, const dl_dbx *x)
{
	int rc = dlmdb_dbrec_lookup(txn, x->x_name, x->x_namelen, &txn->t_dbs[dbi]);
	if (rc == MDB_NOTFOUND)
		return MDB_BAD_DBI;
	if (rc)
		return rc;
	txn->t_dbstate[dbi] &= ~DL_DBS_STALE;
	return 0;
}

/*
 * Reload a named DB's record from the main DB (a handle bound at txn begin,
 * at its first use): the txn family joins the slot's binders first (dbi.c),
 * which keeps the slot's name from changing.  Without the mutex when the
 * slot is in use: a rename needs x_used == 0 and x_binders == 0 under the
 * mutex, and we count ourselves before we look at x_used and x_seq (all
 * sequentially consistent), so either the renamer sees our count or we see
 * the slot closed or renamed and take the mutex.
 */
int dlmdb_db_refresh(MDB_txn *txn, MDB_dbi dbi)
{
	MDB_env *env = txn->t_env;
	dl_dbx *x = &env->e_dbx[dbi];
	if (txn->t_dbstate[dbi] & DL_DBS_COUNTED)
		return db_reload(txn, dbi, x);
	if (DL_LIKELY(__atomic_load_n(&x->x_used, __ATOMIC_SEQ_CST))) {
		__atomic_add_fetch(&x->x_binders, 1, __ATOMIC_SEQ_CST);
		if (DL_LIKELY(__atomic_load_n(&x->x_used, __ATOMIC_SEQ_CST) &&
		    __atomic_load_n(&x->x_seq, __ATOMIC_SEQ_CST) == txn->t_dbseq[dbi])) {
			txn->t_dbstate[dbi] |= DL_DBS_COUNTED;
			return db_reload(txn, dbi, x);
		}
		__atomic_sub_fetch(&x->x_binders, 1, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_lock(&env->e_dbimutex);
	int rc = MDB_BAD_DBI;
	if (txn->t_dbseq[dbi] == x->x_seq && x->x_name) {
		__atomic_add_fetch(&x->x_binders, 1, __ATOMIC_SEQ_CST);
		txn->t_dbstate[dbi] |= DL_DBS_COUNTED;
		rc = db_reload(txn, dbi, x);
	}
	pthread_mutex_unlock(&env->e_dbimutex);
	return rc;
}

/* A top-level txn's struct (reader or writer: both have the same size) is
 * kept in the env for the next one (e_txn_spare) instead of a free and a
 * malloc per txn.  The spare is taken and filled with atomic exchanges: two
 * threads may race to begin.  A parked struct owns no reader slot. */
static MDB_txn *txn_alloc(MDB_env *env, int top)
{
	unsigned nd = env->e_maxdbs;
	size_t arrays = nd * (sizeof(dl_dbrec) + sizeof(unsigned) + 1);
	MDB_txn *txn = NULL;
	if (top && __atomic_load_n(&env->e_txn_spare, __ATOMIC_RELAXED))
		txn = __atomic_exchange_n(&env->e_txn_spare, NULL, __ATOMIC_ACQ_REL);
	/* malloc (thread cache) and a clear rather than calloc, which always
	 * takes the slow path of the allocator.  One library memset for the
	 * struct and the arrays (cheaper than the compiler's inline clear of
	 * the struct); the size passes through an empty asm so that the
	 * compiler cannot match it with the malloc and fold the pair back
	 * into calloc */
	if (!txn && !(txn = malloc(sizeof(MDB_txn) + arrays)))
		return NULL;
	size_t clear = sizeof(MDB_txn) + arrays;
	__asm__("" : "+r"(clear));
	memset(txn, 0, clear);
	txn->t_dbs = (dl_dbrec *)(txn + 1);
	txn->t_dbseq = (unsigned *)(txn->t_dbs + nd);
	txn->t_dbstate = (unsigned char *)(txn->t_dbseq + nd);
	txn->t_env = env;
	return txn;
}

static void txn_free(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	MDB_txn *none = NULL;
	if (!txn->t_parent && !txn->t_slot &&
	    __atomic_compare_exchange_n(&env->e_txn_spare, &none, txn, 0,
		__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	free(txn);
}

static void dbis_copy(MDB_txn *txn, MDB_env *env)
{
	unsigned n = __atomic_load_n(&env->e_numdbs, __ATOMIC_RELAXED);
	_Static_assert(DL_CORE_DBS == 2, "core DB states");
	txn->t_numdbs = n;
	txn->t_dbstate[DL_FREE_DBI] = txn->t_dbstate[DL_MAIN_DBI] = DL_DBS_VALID;
	for (unsigned i = DL_CORE_DBS; i < n; i++) {
		if (__atomic_load_n(&env->e_dbx[i].x_used, __ATOMIC_RELAXED)) {
			txn->t_dbstate[i] = DL_DBS_VALID | DL_DBS_STALE;
			txn->t_dbseq[i] = __atomic_load_n(&env->e_dbx[i].x_seq, __ATOMIC_RELAXED);
		} else {
			txn->t_dbstate[i] = 0;
		}
	}
}

/* Copy the handle table of the environment into a fresh txn: without the
 * mutex when no handle changed meanwhile (e_dbigen, see dbi.c).  A second
 * copy only ever sees as many slots as the first or more (e_numdbs never
 * shrinks), so it overwrites every state the first one wrote. */
static void txn_dbis_init(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	unsigned gen = __atomic_load_n(&env->e_dbigen, __ATOMIC_ACQUIRE);
	if (!(gen & 1)) {
		dbis_copy(txn, env);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&env->e_dbigen, __ATOMIC_RELAXED) == gen)
			return;
	}
	pthread_mutex_lock(&env->e_dbimutex);
	dbis_copy(txn, env);
	pthread_mutex_unlock(&env->e_dbimutex);
}

/*
 * A reader's snapshot when commits are published in the lock file (see
 * meta.c): take the published id, announce it in our slot, copy the meta
 * page of that id and keep the copy if the id is still the published one,
 * i.e. no writer can have started to rewrite that page meanwhile.
 * Returns 1 (and no snapshot) if the pages do not hold the published id,
 * for the caller to fall back to choosing by the pages' own txnids.
 */
static int snapshot_published(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	volatile uint64_t *pub = &env->e_lck->l_txnid;
	for (int tries = 0; tries < 1000; tries++) {
		txnid_t id = __atomic_load_n(pub, __ATOMIC_ACQUIRE);
		if (txn->t_slot) {
			__atomic_store_n(&txn->t_slot->r_txnid, id, __ATOMIC_SEQ_CST);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		}
		const dl_meta *m = dlmdb_meta_page(env, id);
		if (__atomic_load_n(&m->m_txnid, __ATOMIC_ACQUIRE) != id) {
			if (__atomic_load_n(pub, __ATOMIC_ACQUIRE) != id)
				continue;	/* a commit went by: try again */
			return 1;
		}
		dl_meta copy;
		memcpy(&copy, m, sizeof copy);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(pub, __ATOMIC_ACQUIRE) != id)
			continue;
		if (dlmdb_meta_check(&copy, env->e_psize))
			return MDB_CORRUPTED;
		if (copy.m_last_pg + 1 > env->e_maxpg)
			return MDB_MAP_RESIZED;
		txn->t_dbs[DL_FREE_DBI] = copy.m_dbs[DL_FREE_DBI];
		txn->t_dbs[DL_MAIN_DBI] = copy.m_dbs[DL_MAIN_DBI];
		txn->t_id = id;
		txn->t_next_pg = copy.m_last_pg + 1;
		return 0;
	}
	return MDB_PROBLEM;
}

/* A reader's snapshot: publish it in our slot first, then confirm.  Readers
 * of envs that publish no id choose the meta by the txnids stored in the
 * meta pages. */
static int txn_snapshot(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	if (dlmdb_meta_published(env)) {
		int rc = snapshot_published(txn);
		if (rc != 1)
			return rc;
	}
	int prev = (env->e_flags & MDB_PREVSNAPSHOT) != 0;
	for (int tries = 0; tries < 1000; tries++) {
		const dl_meta *m = dlmdb_meta_newest(env, prev);
		if (!m)
			return MDB_CORRUPTED;
		txnid_t id = __atomic_load_n(&m->m_txnid, __ATOMIC_ACQUIRE);
		if (txn->t_slot) {
			__atomic_store_n(&txn->t_slot->r_txnid, id, __ATOMIC_SEQ_CST);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		}
		txn->t_dbs[DL_FREE_DBI] = m->m_dbs[DL_FREE_DBI];
		txn->t_dbs[DL_MAIN_DBI] = m->m_dbs[DL_MAIN_DBI];
		pgno_t last = m->m_last_pg;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&m->m_txnid, __ATOMIC_ACQUIRE) != id ||
		    dlmdb_meta_newest(env, prev) != m)
			continue;
		if (last + 1 > env->e_maxpg)
			return MDB_MAP_RESIZED;
		txn->t_id = id;
		txn->t_next_pg = last + 1;
		return 0;
	}
	return MDB_PROBLEM;
}

/*
 * Start (or, for renew, restart) a reader.  A reset reader still owns its
 * slot, marked idle (no snapshot, so it pins no pages); renew announces the
 * new snapshot in that same slot, with no trip through the reader-table
 * mutex.  Only the owning txn ever writes r_txnid of a taken slot, so that
 * needs no lock.  On failure the slot (if any) is left idle but still owned:
 * the caller releases it (begin) or the later abort does (renew).
 */
static int read_begin(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	int rc;
	if (!txn->t_slot) {
		if ((rc = dlmdb_reader_acquire(env, &txn->t_slot)))
			return rc;
	} else {
		/* a renew may run on another thread than the reset did */
		txn->t_slot->r_tid = (uint64_t)pthread_self();
	}
	__atomic_store_n(&txn->t_intr_own, 0, __ATOMIC_RELAXED);	/* a renew starts afresh */
	txn->t_gen++;	/* nothing decoded from the old snapshot's pages is reused (dl_cur_key) */
	rc = txn_snapshot(txn);
	if (rc) {
		if (txn->t_slot)
			__atomic_store_n(&txn->t_slot->r_txnid, DL_SLOT_IDLE, __ATOMIC_RELEASE);
		return rc;
	}
	dlmdb_txn_enter(txn);
	txn_dbis_init(txn);
	txn->t_flags = DL_T_RDONLY;
	txn->t_err = 0;
	return 0;
}


/*
 * A top-level write txn borrows its first list buffers and the node blob
 * buffer (t_scratch[1], used by every insert) from the env's spare page
 * buffers and gives them back at its end, instead of a malloc and a free
 * of each per txn.  A borrowed list is marked by a capacity one short of a
 * page: lists grown from empty have 64 times a power of two, never odd.
 */
static size_t borrowed_cap(const MDB_env *env)
{
	return env->e_psize / sizeof(pgno_t) - 1;
}

static void lists_borrow(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	dl_pgl *ls[2] = {&txn->t_freed, &txn->t_reclaimed};
	for (int i = 0; i < 2; i++) {
		void *b = dlmdb_spare_take_or_new(env);
		if (!b)
			return;
		ls[i]->l_v = b;
		ls[i]->l_n = 0;
		ls[i]->l_cap = borrowed_cap(env);
	}
}

static void list_return(MDB_txn *txn, dl_pgl *l)
{
	if (l->l_v && l->l_cap == borrowed_cap(txn->t_env)) {
		/* still the borrowed page: all of it was written before */
		dlmdb_spare_give(txn->t_env, l->l_v);
		l->l_v = NULL;
		l->l_n = l->l_cap = 0;
	}
}

static int write_begin(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	int rc = dlmdb_wlock(env);
	if (rc)
		return rc;
	txn->t_slot = NULL;
	/* under the writer lock no meta page changes: no need to confirm.
	 * The structural check (dlmdb_meta_check) is skipped only for a meta
	 * equal byte for byte to the one our last commit wrote: that one was
	 * built from a checked meta's identity fields and this handle's own
	 * records and last page, which the check would only re-prove */
	const dl_meta *m = dlmdb_meta_pick(env, (env->e_flags & MDB_PREVSNAPSHOT) != 0);
	int ours = dlmdb_trust_begin(env, m);
	DL_ASSERT(!ours || dlmdb_meta_check(m, env->e_psize) == 0);
	if (!ours && dlmdb_meta_check(m, env->e_psize))
		rc = MDB_CORRUPTED;
	else if (m->m_last_pg + 1 > env->e_maxpg)
		rc = MDB_MAP_RESIZED;
	if (rc) {
		dlmdb_wunlock(env);
		return rc;
	}
	txn->t_dbs[DL_FREE_DBI] = m->m_dbs[DL_FREE_DBI];
	txn->t_dbs[DL_MAIN_DBI] = m->m_dbs[DL_MAIN_DBI];
	txn->t_id = m->m_txnid;
	txn->t_next_pg = m->m_last_pg + 1;
	if (dlmdb_meta_published(env) &&
	    __atomic_load_n(&env->e_lck->l_txnid, __ATOMIC_ACQUIRE) != txn->t_id) {
		/* the last writer died between its meta write and publishing
		 * it: publish that commit before this txn writes anything */
		__atomic_store_n(&env->e_lck->l_txnid, txn->t_id, __ATOMIC_SEQ_CST);
	}
	txn->t_id++;
	/* the blob buffer must hold initialised bytes only (it goes back to the
	 * spares at the end): a spare page, else a cleared one */
	char *blob = dlmdb_spare_take_or_new(env);
	if (!blob) {
		dlmdb_wunlock(env);
		return ENOMEM;
	}
	txn->t_scratch[1] = blob;
	dlmdb_dirty_adopt(&txn->t_dirty, env);
	lists_borrow(txn);
	dlmdb_txn_enter(txn);
	txn_dbis_init(txn);
	txn->t_flags = 0;
	env->e_wtxn = txn;
	return 0;
}

/* Record the state of every cursor of the enclosing txns (see dl_curbak). */
static int cursors_backup(MDB_txn *txn)
{
	size_t n = 0, i = 0;
	for (MDB_txn *a = txn->t_parent; a; a = a->t_parent)
		for (MDB_cursor *c = a->t_cursors; c; c = c->c_next)
			n++;
	if (!n)
		return 0;
	dl_curbak *b = malloc(n * sizeof *b);
	if (!b)
		return ENOMEM;
	for (MDB_txn *a = txn->t_parent; a; a = a->t_parent) {
		for (MDB_cursor *c = a->t_cursors; c; c = c->c_next, i++) {
			b[i].b_cur = c;
			b[i].b_flags = c->c_flags;
			b[i].b_savedlen = c->c_savedlen;
			memcpy(b[i].b_saved, c->c_saved, c->c_savedlen);
			b[i].b_xflags = 0;
			b[i].b_xsavedlen = 0;
			if (c->c_sub) {
				MDB_cursor *xc = &c->c_sub->x_c;
				b[i].b_xflags = xc->c_flags;
				b[i].b_xsavedlen = xc->c_savedlen;
				memcpy(b[i].b_xsaved, xc->c_saved, xc->c_savedlen);
			}
		}
	}
	txn->t_curbak = b;
	txn->t_ncurbak = n;
	return 0;
}

/* A child aborts: the enclosing txns' cursors get their old state back. */
static void cursors_restore(MDB_txn *txn)
{
	for (size_t i = 0; i < txn->t_ncurbak; i++) {
		dl_curbak *b = &txn->t_curbak[i];
		MDB_cursor *c = b->b_cur;
		if (!c)
			continue;
		c->c_flags = b->b_flags;
		c->c_savedlen = b->b_savedlen;
		memcpy(c->c_saved, b->b_saved, b->b_savedlen);
		if (c->c_sub) {
			MDB_cursor *xc = &c->c_sub->x_c;
			xc->c_flags = b->b_xflags;
			xc->c_savedlen = b->b_xsavedlen;
			memcpy(xc->c_saved, b->b_xsaved, b->b_xsavedlen);
		}
	}
}

static int child_begin(MDB_txn *txn, MDB_txn *parent)
{
	int rc;
	txn->t_parent = parent;
	txn->t_id = parent->t_id;
	txn->t_next_pg = parent->t_next_pg;
	txn->t_numdbs = parent->t_numdbs;
	memcpy(txn->t_dbs, parent->t_dbs, parent->t_numdbs * sizeof(dl_dbrec));
	memcpy(txn->t_dbseq, parent->t_dbseq, parent->t_numdbs * sizeof(unsigned));
	memcpy(txn->t_dbstate, parent->t_dbstate, parent->t_numdbs);
	for (unsigned i = 0; i < parent->t_numdbs; i++)
		txn->t_dbstate[i] &= (unsigned char)~DL_DBS_EMPTIED; /* the child's own events only */
	if ((rc = dlmdb_pgl_copy(&txn->t_freed, &parent->t_freed)) ||
	    (rc = dlmdb_pgl_copy(&txn->t_loose, &parent->t_loose)) ||
	    (rc = dlmdb_pgl_copy(&txn->t_reclaimed, &parent->t_reclaimed)))
		return rc;
	txn->t_last_reclaimed = parent->t_last_reclaimed;
	txn->t_nreclaimed = parent->t_nreclaimed;
	txn->t_flags = parent->t_flags & DL_T_DIRTY;
	/* the parent's cursors will have to re-seek once we are done, and
	 * forget which pages they made writable (the child's commit may
	 * replace those pages with its copies) */
	dlmdb_txn_changed(parent, NULL);
	for (MDB_cursor *c = parent->t_cursors; c; c = c->c_next) {
		c->c_tmask = 0;
		if (c->c_sub)
			c->c_sub->x_c.c_tmask = 0;
	}
	if ((rc = cursors_backup(txn)))
		return rc;
	parent->t_child = txn;
	parent->t_flags |= DL_T_CHILD;
	return 0;
}

/* Free the scratch buffers.  Most txns use no slot at all: one test of
 * all the pointers OR'ed together before the per-slot loop. */
static void scratch_free(MDB_txn *txn)
{
	uintptr_t any = 0;
	if (txn->t_pfxblks || txn->t_pfxitems || txn->t_outbuf || txn->t_vbytes)
		dlmdb_pfx_arena_free(txn);
	for (int i = 0; i < DL_NSCRATCH; i++)
		any |= (uintptr_t)txn->t_scratch[i];
	if (!any)
		return;
	for (int i = 0; i < DL_NSCRATCH; i++) {
		if (!txn->t_scratch[i])
			continue;
		free(txn->t_scratch[i]);
		txn->t_scratch[i] = NULL;
	}
}

static void txn_free_lists(MDB_txn *txn)
{
	/* usually all handed back already (list_return) or never made */
	if (!((uintptr_t)txn->t_vals | (uintptr_t)txn->t_curbak | (uintptr_t)txn->t_freed.l_v |
	      (uintptr_t)txn->t_loose.l_v | (uintptr_t)txn->t_reclaimed.l_v |
	      (uintptr_t)txn->t_dropped.l_v)) {
		scratch_free(txn);
		return;
	}
	if (txn->t_vals) {
		free(txn->t_vals);
		txn->t_vals = NULL;
	}
	dl_pgl *ls[4] = {&txn->t_freed, &txn->t_loose, &txn->t_reclaimed, &txn->t_dropped};
	for (int i = 0; i < 4; i++)
		if (ls[i]->l_v)
			dlmdb_pgl_free(ls[i]);
	if (txn->t_curbak) {
		free(txn->t_curbak);
		txn->t_curbak = NULL;
		txn->t_ncurbak = 0;
	}
	scratch_free(txn);
}

static int dl_u_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **out)
{
	if (!env || !out)
		return EINVAL;
	*out = NULL;
	if (!env->e_opened)
		return EINVAL;
	if (flags & ~(MDB_RDONLY | MDB_NOSYNC | MDB_NOMETASYNC))
		return EINVAL;
	if (DL_UNLIKELY(__atomic_load_n(&env->e_panic, __ATOMIC_ACQUIRE)))
		return MDB_PANIC;	/* a failed commit's meta may be in the file (meta.c) */
	if ((env->e_flags & MDB_RDONLY) && !(flags & MDB_RDONLY))
		return EACCES;
	if (parent) {
		if (parent->t_env != env)
			return EINVAL;
		if (parent->t_flags & DL_T_RDONLY)
			return EINVAL;
		if ((flags & MDB_RDONLY) || (env->e_flags & MDB_WRITEMAP) ||
		    (parent->t_flags & (DL_T_ERROR | DL_T_DONE | DL_T_CHILD)))
			return MDB_BAD_TXN;
	}
	MDB_txn *txn = txn_alloc(env, !parent);
	if (!txn)
		return ENOMEM;
	/* a nested txn shares its family's interrupt flag (interrupt.c) */
	txn->t_intr = parent ? parent->t_intr : &txn->t_intr_own;
	int rc;
	if (parent)
		rc = child_begin(txn, parent);
	else if (flags & MDB_RDONLY)
		rc = read_begin(txn);
	else
		rc = write_begin(txn);
	if (rc) {
		dlmdb_reader_park(env, txn->t_slot);
		txn->t_slot = NULL;
		txn_free_lists(txn);
		txn_free(txn);
		return rc;
	}
	if (!(txn->t_flags & DL_T_RDONLY))
		dlmdb_guard_bind(txn);
	*out = txn;
	return 0;
}

MDB_env *mdb_txn_env(MDB_txn *txn)
{
	return txn ? txn->t_env : NULL;
}

int mdb_txn_cause(MDB_txn *txn)
{
	return txn && (txn->t_flags & DL_T_ERROR) ? txn->t_err : 0;
}

mdb_size_t mdb_txn_id(MDB_txn *txn)
{
	if (!txn)
		return 0;
	if ((txn->t_flags & DL_T_RDONLY) && (txn->t_flags & DL_T_DONE))
		return 0;
	return txn->t_id;
}

/* Free cursors of a write txn and all per-txn memory (not the txn itself). */
static void txn_release(MDB_txn *txn)
{
	MDB_cursor *c = txn->t_cursors;
	while (c) {
		MDB_cursor *next = c->c_next;
		free(c);
		c = next;
	}
	txn->t_cursors = NULL;
	dlmdb_dirty_release(&txn->t_dirty, txn->t_env);
	if (!txn->t_parent) {
		/* only the top-level txn borrowed (see lists_borrow) */
		list_return(txn, &txn->t_freed);
		list_return(txn, &txn->t_loose);
		list_return(txn, &txn->t_reclaimed);
		list_return(txn, &txn->t_dropped);
		if (txn->t_scratch[1])
			dlmdb_spare_give(txn->t_env, txn->t_scratch[1]);
		txn->t_scratch[1] = NULL;
	}
	txn_free_lists(txn);
}

/* End a reader's snapshot.  keep_slot (reset): the slot stays ours but
 * shows idle, so writers no longer count it and reader_list prints no txnid;
 * otherwise (abort, commit, also of a reset reader) the slot is given back. */
static void read_end(MDB_txn *txn, int keep_slot)
{
	scratch_free(txn);
	if (!(txn->t_flags & DL_T_DONE)) {
		if (txn->t_slot)
			__atomic_store_n(&txn->t_slot->r_txnid, DL_SLOT_IDLE, __ATOMIC_RELEASE);
		dlmdb_txn_leave(txn);
	}
	if (!keep_slot && txn->t_slot) {
		dlmdb_reader_park(txn->t_env, txn->t_slot);
		txn->t_slot = NULL;
	}
	txn->t_flags |= DL_T_DONE;
}

/*
 * An aborted WRITEMAP txn leaves its page images in free pages of the map:
 * no snapshot reaches them, but the trusted-page table (page.c) may still
 * name some of those numbers from an earlier commit, and only images of
 * committed txns may be trusted.  Every page it built in the map came from
 * page allocation under a number that now is a live key of its dirty map
 * (alone, or at the head of an overflow run), or was freed again into
 * t_loose or t_reclaimed (a run into t_reclaimed, page by page): forget
 * exactly those numbers, and keep the trust in everything else.
 */
static void writemap_abort_untrust(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	const dl_dirty *d = &txn->t_dirty;
	for (size_t i = 0; i < d->d_cap; i++) {
		pgno_t k = d->d_keys[i];
		if (k >= ~(pgno_t)0 - 1)
			continue;
		if (k >= txn->t_next_pg)
			continue;
		const dl_page *p = d->d_pages[i];
		pgno_t n = (p->p_flags & DL_P_OVERFLOW) ? dl_pg_ovcount(p) : 1;
		if (n > txn->t_next_pg - k)
			n = txn->t_next_pg - k;	/* a run never passes the last page */
		for (pgno_t j = 0; j < n; j++)
			dl_trust_forget(env, k + j);
	}
	const dl_pgl *ls[2] = {&txn->t_loose, &txn->t_reclaimed};
	for (int l = 0; l < 2; l++)
		for (size_t i = 0; i < ls[l]->l_n; i++)
			dl_trust_forget(env, ls[l]->l_v[i]);
}

static void txn_end(MDB_txn *txn, int committed)
{
	MDB_env *env = txn->t_env;
	if (txn->t_numdbs > DL_CORE_DBS) {	/* else no named DB handle to look at */
		dlmdb_dbis_finish(txn, committed);
		if (!txn->t_parent || !committed)
			dlmdb_dbis_release(txn);	/* a committed child's go to its parent */
	}
	if (txn->t_flags & DL_T_RDONLY) {
		read_end(txn, 0);
		return;
	}
	if (txn->t_parent && !committed)
		cursors_restore(txn);
	if (!committed && dl_env_builds_in_map(env) && txn->t_fl_gen)
		writemap_abort_untrust(txn);
	txn_release(txn);
	if (txn->t_parent) {
		txn->t_parent->t_child = NULL;
		txn->t_parent->t_flags &= ~DL_T_CHILD;
	} else {
		env->e_wtxn = NULL;
		dlmdb_txn_leave(txn);
		dlmdb_wunlock(env);
	}
	txn->t_flags |= DL_T_DONE;
}

static void dl_u_txn_abort(MDB_txn *txn)
{
	if (!txn)
		return;
	if (txn->t_child)
		mdb_txn_abort(txn->t_child);
	txn_end(txn, 0);
	txn_free(txn);
}

void mdb_txn_reset(MDB_txn *txn)
{
	if (!txn || !(txn->t_flags & DL_T_RDONLY))
		return;
	dlmdb_dbis_finish(txn, 0);
	dlmdb_dbis_release(txn);
	read_end(txn, 1);
}

int mdb_txn_renew(MDB_txn *txn)
{
	if (!txn || !(txn->t_flags & DL_T_RDONLY) || !(txn->t_flags & DL_T_DONE))
		return EINVAL;
	MDB_env *env = txn->t_env;
	if (DL_UNLIKELY(__atomic_load_n(&env->e_panic, __ATOMIC_ACQUIRE)))
		return MDB_PANIC;
	memset(txn->t_dbstate, 0, env->e_maxdbs);
	int rc = read_begin(txn);
	if (rc)
		txn->t_flags = DL_T_RDONLY | DL_T_DONE;
	return rc;
}

/* Fold a committed child into its parent. */
static int child_merge(MDB_txn *txn)
{
	MDB_txn *p = txn->t_parent;
	int rc = 0;
	dl_dirty *d = &txn->t_dirty;
	/*
	 * Three passes, so that nothing the child hands over is discarded:
	 * 1. pages the child released: the parent's copies are dead (the child
	 *    may have reused the numbers for anything); the grandparent may hold
	 *    copies too, so the numbers travel up with the parent's own;
	 * 2. parent copies of pages lying inside one of the child's overflow
	 *    runs are dead as well (those pages were free to the child);
	 * 3. the child's pages replace the parent's under the same numbers.
	 */
	MDB_env *env = txn->t_env;
	for (size_t i = 0; i < txn->t_dropped.l_n; i++)
		dl_buf_release(env, dlmdb_dirty_remove(&p->t_dirty, txn->t_dropped.l_v[i]));
	for (size_t i = 0; p->t_parent && i < txn->t_dropped.l_n; i++)
		if ((rc = dlmdb_pgl_push(&p->t_dropped, txn->t_dropped.l_v[i])))
			goto broken;
	for (size_t i = 0; i < d->d_cap; i++) {
		pgno_t k = d->d_keys[i];
		if (k >= ~(pgno_t)0 - 1 || !(d->d_pages[i]->p_flags & DL_P_OVERFLOW))
			continue;
		uint32_t cnt = dl_pg_ovcount(d->d_pages[i]);
		for (uint32_t j = 1; j < cnt; j++)
			dl_buf_release(env, dlmdb_dirty_remove(&p->t_dirty, k + j));
	}
	for (size_t i = 0; i < d->d_cap; i++) {
		pgno_t k = d->d_keys[i];
		if (k >= ~(pgno_t)0 - 1)
			continue;
		dl_page *old = dlmdb_dirty_find(&p->t_dirty, k);
		if ((rc = dlmdb_dirty_put(&p->t_dirty, k, d->d_pages[i])))
			goto broken;
		if (old != d->d_pages[i])
			dl_buf_release(env, old);
		d->d_keys[i] = ~(pgno_t)0 - 1; /* now owned by the parent */
	}
	dl_pgl tmp;
#define SWAP_LIST(f) (tmp = p->f, p->f = txn->f, txn->f = tmp)
	SWAP_LIST(t_freed);
	SWAP_LIST(t_loose);
	SWAP_LIST(t_reclaimed);
#undef SWAP_LIST
	p->t_last_reclaimed = txn->t_last_reclaimed;
	p->t_nreclaimed = txn->t_nreclaimed;
	p->t_next_pg = txn->t_next_pg;
	p->t_numdbs = txn->t_numdbs;
	memcpy(p->t_dbs, txn->t_dbs, txn->t_numdbs * sizeof(dl_dbrec));
	memcpy(p->t_dbseq, txn->t_dbseq, txn->t_numdbs * sizeof(unsigned));
	for (unsigned i = 0; i < txn->t_numdbs; i++) {
		/* a DB the child emptied: the parent's cursors on it are unpositioned
		 * (as LMDB, whose cursors live on in the child); the parent keeps
		 * its own mark for its parent */
		if (txn->t_dbstate[i] & DL_DBS_EMPTIED)
			dlmdb_cursors_forget(p, i);
		if (i < p->t_numdbs)
			txn->t_dbstate[i] |= p->t_dbstate[i] & DL_DBS_EMPTIED;
	}
	memcpy(p->t_dbstate, txn->t_dbstate, txn->t_numdbs);
	p->t_flags |= txn->t_flags & DL_T_DIRTY;
	p->t_gen++;
#ifdef DLMDB_DEBUG
	/* after the passes above the parent holds no copy of a page that is
	 * free in the merged lists (such a copy could be written at commit) */
	for (size_t i = 0; i < p->t_loose.l_n; i++)
		DL_ASSERT(!dlmdb_dirty_find(&p->t_dirty, p->t_loose.l_v[i]));
	for (size_t i = 0; i < p->t_reclaimed.l_n; i++)
		DL_ASSERT(!dlmdb_dirty_find(&p->t_dirty, p->t_reclaimed.l_v[i]));
#endif
	return 0;
broken:
	/* the parent already lost pages it shared with the child */
	return dl_txn_fail(p, rc);
}

/*
 * WRITEMAP: the dirty pages that already are the map pages of their own
 * numbers need no write, they are in the page cache; drop them from the
 * list (the trusted-page note covers them) and widen [*lo, *hi), the page
 * span the commit must flush.  Returns how many pages remain to write
 * (none, unless some path built a heap copy).
 */
static size_t writemap_skip(MDB_env *env, dl_page **list, size_t n, pgno_t *lo, pgno_t *hi)
{
	size_t keep = 0, psize = env->e_psize;
	/* all of them: a failed write of a remaining one resets the table */
	dlmdb_trust_note(env, list, n);
	for (size_t j = 0; j < n; j++) {
		dl_page *p = list[j];
		pgno_t end = p->p_pgno + ((p->p_flags & DL_P_OVERFLOW) ? dl_pg_ovcount(p) : 1);
		if (p->p_pgno < *lo)
			*lo = p->p_pgno;
		if (end > *hi)
			*hi = end;
		if ((char *)p != env->e_map + (size_t)p->p_pgno * psize) {
			list[keep++] = p;
			continue;
		}
		p->p_flags &= ~DL_P_DIRTY;
	}
	return keep;
}

/* WRITEMAP: the pages of list l end this commit free, but this txn may have
 * rebuilt them in place (then freed them again): whatever the trusted-page
 * table says about their numbers is void. */
static void writemap_untrust(MDB_env *env, const dl_pgl *l)
{
	for (size_t i = 0; i < l->l_n; i++)
		dl_trust_forget(env, l->l_v[i]);
}

/*
 * Growing the data file ahead of need.
 *
 * A commit that writes past the end of the file changes the file's size,
 * and on a journalling file system its fdatasync then has to commit that
 * change (and the block allocation behind it) to the journal as well as
 * flush the data: on ext4 that costs roughly as much again as the flush
 * itself.  A database that grows by a page every few commits pays it on
 * each of those commits.  So when a synced commit extends the file, it
 * also writes zeros over the next stretch of page numbers, in the same
 * flush: later commits that land there overwrite blocks the file already
 * has, and their fdatasync is a data flush only.  (The zeros must really
 * be written: a hole, or space reserved with fallocate, still needs a
 * journalled change when it is first written.)
 *
 * The stretch is an eighth of the file, at least 16 pages, at most 8 MiB
 * (the commit that writes it takes that much longer: a bounded stall, once
 * per 8 MiB of growth in a big file), and never past the map.  Pages past the last page a meta names are free space nobody
 * reads; LMDB ignores how far the file reaches beyond them, and copies
 * stop at the last page.  Under NOSYNC commits flush nothing, so there is
 * nothing to save and the file grows only as pages are written.  Failing
 * to write the zeros loses nothing (the data went out before them), so
 * an error here is not the commit's: the file just grows later.
 */
#define DL_GROW_MIN 16	/* pages */
#define DL_GROW_MAX ((size_t)8 << 20)	/* bytes */

static void grow_ahead(MDB_env *env, pgno_t end)
{
	static char zeros[1 << 16];	/* never written */
	size_t psize = env->e_psize;
	pgno_t step = end / 8, most = DL_GROW_MAX / psize;
	if (step > most)
		step = most;
	pgno_t target = end + (step > DL_GROW_MIN ? step : DL_GROW_MIN);
	target = (target + DL_GROW_MIN - 1) / DL_GROW_MIN * DL_GROW_MIN;
	if (target > env->e_maxpg)
		target = env->e_maxpg;
	if (target <= end)
		return;
	off_t off = (off_t)(end * psize), stop = (off_t)(target * psize);
	struct iovec iov[64];
	while (off < stop) {
		int cnt = 0;
		size_t want = 0;
		for (; cnt < 64 && off + (off_t)want < stop; cnt++) {
			size_t len = (size_t)(stop - off) - want;
			if (len > sizeof zeros)
				len = sizeof zeros;
			iov[cnt].iov_base = (void *)zeros;
			iov[cnt].iov_len = len;
			want += len;
		}
		ssize_t w = DL_PWRITEV(DL_IO_GROW, env->e_fd, iov, cnt, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += w;
	}
	fpages_raise(env, (size_t)off / psize);
}

/* Append the page of dirty-map slot i (if it holds one) to list[0..n). */
static inline size_t list_slot(dl_dirty *d, size_t i, dl_page **list, size_t n)
{
	pgno_t k = d->d_keys[i];
	if (k >= ~(pgno_t)0 - 1)	/* empty or a tombstone */
		return n;
	d->d_pages[i]->p_pgno = k;
	list[n] = d->d_pages[i];
	return n + 1;
}

/* Write all dirty pages, in page order, coalescing neighbours.  [*lo, *hi)
 * gets the span of page numbers a WRITEMAP commit changed in the map. */
static int write_pages(MDB_txn *txn, pgno_t *lo, pgno_t *hi)
{
	MDB_env *env = txn->t_env;
	dl_dirty *d = &txn->t_dirty;
	size_t psize = env->e_psize;
	if (dl_env_builds_in_map(env)) {
		writemap_untrust(env, &txn->t_loose);
		writemap_untrust(env, &txn->t_reclaimed);
	}
	/* pages that ended up free need not (and must not) be written */
	for (size_t i = 0; i < txn->t_loose.l_n; i++)
		dl_buf_release(env, dlmdb_dirty_remove(d, txn->t_loose.l_v[i]));
	for (size_t i = 0; i < txn->t_reclaimed.l_n; i++)
		dl_buf_release(env, dlmdb_dirty_remove(d, txn->t_reclaimed.l_v[i]));
	size_t n = 0;
	dl_page *few[32];	/* short txns: no allocation for the order */
	dl_page **list = d->d_n < 32 ? few : malloc((d->d_n + 1) * sizeof(dl_page *));
	if (!list)
		return ENOMEM;
	if (d->d_cap <= 64) {
		/* small map: only the slots ever filled (d_used, idl.c) */
		for (uint64_t m = d->d_used; m; m &= m - 1)
			n = list_slot(d, (size_t)__builtin_ctzll(m), list, n);
	} else {
		for (size_t i = 0; i < d->d_cap; i++)
			n = list_slot(d, i, list, n);
	}
	if (dl_env_builds_in_map(env))
		n = writemap_skip(env, list, n, lo, hi);
	dlmdb_sort_pages(list, n);
#ifdef DLMDB_DEBUG
	for (size_t j = 1; j < n; j++) {
		dl_page *q = list[j - 1];
		pgno_t end = q->p_pgno + ((q->p_flags & DL_P_OVERFLOW) ? dl_pg_ovcount(q) : 1);
		if (list[j]->p_pgno < end) {
			fprintf(stderr, "dlmdb: dirty page %llu overlaps run %llu+%llu\n",
				(unsigned long long)list[j]->p_pgno, (unsigned long long)q->p_pgno,
				(unsigned long long)(end - q->p_pgno));
			DL_ASSERT(!"dirty pages overlap");
		}
	}
#endif
	/* does this commit extend the file? (see grow_ahead) */
	pgno_t end = 0;
	if (n && !(env->e_flags & (MDB_NOSYNC | MDB_WRITEMAP))) {
		dl_page *last = list[n - 1];
		end = last->p_pgno + ((last->p_flags & DL_P_OVERFLOW) ? dl_pg_ovcount(last) : 1);
		if (end <= __atomic_load_n(&env->e_fpages, __ATOMIC_RELAXED) || end <= file_pages(env))
			end = 0;
	}
	/* the page images are ours once written (page.c, trusted pages): the
	 * loop notes single pages in the table as it goes (a failure below
	 * resets the whole table, so an early note never outlives it);
	 * overflow runs, which need their numbers forgotten instead, and the
	 * first commit, which makes the table, take dlmdb_trust_note after */
	pgno_t *trusted = env->e_trusted;
	uint64_t tag = env->e_trust_epoch << DL_TRUST_PGBITS;
	int runs = 0;
	struct iovec iov[64];
	int rc = 0;
	size_t i = 0;
	while (i < n && !rc) {
		int cnt = 0;
		off_t off = (off_t)(list[i]->p_pgno * psize);
		pgno_t next = list[i]->p_pgno;
		size_t total = 0;
		while (i < n && cnt < 64 && list[i]->p_pgno == next) {
			dl_page *p = list[i];
			size_t np = 1;
			if (p->p_flags & DL_P_OVERFLOW) {
				np = dl_pg_ovcount(p);
				runs = 1;
			} else if (trusted && p->p_pgno <= DL_TRUST_PGMASK) {
				trusted[p->p_pgno & (DL_TRUST_SLOTS - 1)] = p->p_pgno | tag;
			}
			p->p_flags &= ~DL_P_DIRTY;
			iov[cnt].iov_base = p;
			iov[cnt].iov_len = np * psize;
			total += np * psize;
			next = p->p_pgno + np;
			cnt++;
			i++;
		}
		int done = dl_inmem(env);
		if (done) {
			/* the map is the store (inmem.c) */
			for (int j = 0; j < cnt; j++) {
				memcpy(env->e_map + off, iov[j].iov_base, iov[j].iov_len);
				off += (off_t)iov[j].iov_len;
			}
		}
		while (!done) {
			/* a lone page (the common case in small txns) takes the
			 * plain pwrite path, which skips the iovec import */
			ssize_t w = cnt == 1 ?
				DL_PWRITE(DL_IO_DATA, env->e_fd, iov[0].iov_base, iov[0].iov_len, off) :
				DL_PWRITEV(DL_IO_DATA, env->e_fd, iov, cnt, off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				rc = errno;
				break;
			}
			if ((size_t)w != total) {
				/* short write: finish piecewise */
				size_t left = (size_t)w;
				for (int j = 0; j < cnt && !rc; j++) {
					size_t len = iov[j].iov_len;
					if (left >= len) {
						left -= len;
						off += (off_t)len;
						continue;
					}
					char *b = (char *)iov[j].iov_base + left;
					size_t rem = len - left;
					off += (off_t)left;
					left = 0;
					while (rem) {
						ssize_t x = DL_PWRITE(DL_IO_DATA, env->e_fd, b, rem, off);
						if (x < 0 && errno == EINTR)
							continue;
						if (x <= 0) {
							rc = x < 0 ? errno : ENOSPC;
							break;
						}
						b += x;
						rem -= (size_t)x;
						off += x;
					}
				}
			}
			done = 1;
		}
	}
	/* after a failure a page may be half written: trust nothing */
	if (rc)
		dlmdb_trust_reset(env);
	else if (!trusted || runs)
		dlmdb_trust_note(env, list, n);
	if (!rc && end)
		grow_ahead(env, end);
	if (list != few)
		free(list);
	return rc;
}

/*
 * Make the data pages durable before the meta that names them is written.
 * Without WRITEMAP they went out by pwrite: fdatasync.  With WRITEMAP they
 * were changed through the shared map, pages [lo, hi): msync of that span,
 * MS_SYNC (MS_ASYNC under MAPASYNC, which only asks for the writeback to
 * start, as LMDB does).  On Linux fdatasync would also write pages dirtied
 * through a MAP_SHARED map, and an MS_SYNC msync of a file mapping is a
 * datasync of just that file range; msync is the call POSIX defines for a
 * shared mapping, and it limits the work to the span the txn touched.
 * NOSYNC: nothing.
 */
static int data_sync(MDB_env *env, pgno_t lo, pgno_t hi)
{
	if (env->e_flags & (MDB_NOSYNC | MDB_INMEMORY))
		return 0;
	if (!(env->e_flags & MDB_WRITEMAP))
		return DL_FDATASYNC(DL_IO_DSYNC, env->e_fd) ? errno : 0;
	if (lo >= hi)
		return 0;
	size_t os = (size_t)sysconf(_SC_PAGESIZE);
	size_t start = (size_t)lo * env->e_psize, end = (size_t)hi * env->e_psize;
	start -= start % os;	/* msync wants an address on an OS page boundary */
	int how = (env->e_flags & MDB_MAPASYNC) ? MS_ASYNC : MS_SYNC;
	return DL_MSYNC(DL_IO_DSYNC, env->e_map + start, end - start, how) ? errno : 0;
}

static int dl_u_txn_commit(MDB_txn *txn)
{
	if (!txn)
		return EINVAL;
	MDB_env *env = txn->t_env;
	int rc = 0;
	if (txn->t_child) {
		rc = mdb_txn_commit(txn->t_child);
		if (rc)
			goto fail;
	}
	if (txn->t_flags & DL_T_RDONLY) {
		if (txn->t_flags & DL_T_DONE) {
			/* committing a reset reader just ends it */
			dlmdb_dbis_finish(txn, 0);
			read_end(txn, 0);
			txn_free(txn);
			return 0;
		}
		txn_end(txn, 1);
		txn_free(txn);
		return 0;
	}
	if (txn->t_flags & (DL_T_ERROR | DL_T_DONE)) {
		rc = MDB_BAD_TXN;
		goto fail;
	}
	if (txn->t_parent) {
		if ((rc = child_merge(txn)))
			goto fail;
		txn_end(txn, 1);
		free(txn);
		return 0;
	}
	if (!(txn->t_flags & DL_T_DIRTY) && !txn->t_dirty.d_n)
		goto done;
	if (txn->t_numdbs > DL_CORE_DBS && (rc = dlmdb_dbrecs_flush(txn)))
		goto fail;
	if ((rc = dlmdb_freelist_save(txn)))
		goto fail;
	/*
	 * A commit that fails from here on must leave no trace (meta.c,
	 * meta_take_back): the pages go to numbers no snapshot uses, so a
	 * failed or short data write or data sync only fails the commit, and
	 * the previous meta stays the newest; a failure once the meta write
	 * has begun takes the meta back and marks the env panicked.
	 */
	pgno_t lo = DL_NO_PAGE, hi = 0;
	if ((rc = write_pages(txn, &lo, &hi)))
		goto fail;
	if ((rc = data_sync(env, lo, hi)) || (rc = dlmdb_meta_write(txn))) {
		/* the images this txn wrote are free pages again: trust none */
		dlmdb_trust_reset(env);
		goto fail;
	}
	/* publish the commit: readers choose the meta by this id (meta.c) */
	if (env->e_lck)
		__atomic_store_n(&env->e_lck->l_txnid, txn->t_id, __ATOMIC_RELEASE);
done:
	txn_end(txn, 1);
	txn_free(txn);
	return 0;
fail:
	mdb_txn_abort(txn);
	return rc;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **out)
{
	DL_GUARDED(parent, 0, dl_u_txn_begin(env, parent, flags, out));
}

int mdb_txn_commit(MDB_txn *txn)
{
	DL_GUARDED(txn, 1, dl_u_txn_commit(txn));
}

void mdb_txn_abort(MDB_txn *txn)
{
	DL_GUARDED_VOID(txn, dl_u_txn_abort(txn));
}
