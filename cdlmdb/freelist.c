/*
 * freelist.c - page allocation, copy-on-write, and the free DB (dbi 0).
 *
 * Free pages come from, in order:
 *   t_loose      pages this transaction family allocated and released again;
 *   t_reclaimed  pages read from free DB records older than every reader;
 *   the end of the file (t_next_pg), bounded by the map size.
 * Released pages that were committed before go to t_freed and become a free
 * DB record keyed by this transaction's id at commit.  Record layout (LMDB's):
 * key = txnid (8 bytes, INTEGERKEY), data = count followed by that many page
 * numbers in descending order, all uint64.
 */
#include "internal.h"

static dl_page *dirty_in_family(MDB_txn *txn, pgno_t pg, int *own)
{
	for (MDB_txn *t = txn; t; t = t->t_parent) {
		if (!t->t_dirty.d_n)
			continue;	/* nothing in its map (not even a tombstone) */
		dl_page *p = dlmdb_dirty_find(&t->t_dirty, pg);
		if (p) {
			*own = (t == txn);
			return p;
		}
	}
	return NULL;
}

int dlmdb_page_is_dirty(MDB_txn *txn, pgno_t pg)
{
	int own;
	return dirty_in_family(txn, pg, &own) != NULL;
}

/* Pull the next usable free DB record into t_reclaimed. */
static int reclaim_next(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	if (txn->t_flags & DL_T_SAVING)
		return MDB_NOTFOUND;
	dl_dbrec *fdb = &txn->t_dbs[DL_FREE_DBI];
	if (fdb->d_root == DL_NO_PAGE)
		return MDB_NOTFOUND;
	txnid_t oldest = dlmdb_oldest_reader(env, txn->t_id - 1);
	uint64_t want = txn->t_last_reclaimed + 1;
	MDB_val k = {sizeof want, &want}, d;
	MDB_cursor mc;
	txnid_t id;
	int rc;
	int ranged = 1;
	dlmdb_cursor_setup(&mc, txn, DL_FREE_DBI);
	if (want == 1) {
		/* a txn's first record is the first key >= 1: the leftmost
		 * descent finds it without comparing keys.  A first key that is
		 * not a txnid >= 1 (0 is never written by a commit; other sizes
		 * only in a damaged file) is left to the range search. */
		rc = dlmdb_cur_first(&mc, &k, &d);
		if (rc)
			return rc;	/* MDB_NOTFOUND: no records, as the range search says */
		ranged = k.mv_size != sizeof id || (memcpy(&id, k.mv_data, sizeof id), id == 0);
	}
	if (ranged) {
		k.mv_size = sizeof want;
		k.mv_data = &want;
		dlmdb_cursor_setup(&mc, txn, DL_FREE_DBI);
		if ((rc = dlmdb_cursor_seek(&mc, &k, &d, MDB_SET_RANGE)))
			return rc;
	}
	if (k.mv_size != sizeof(txnid_t))
		return MDB_CORRUPTED;
	memcpy(&id, k.mv_data, sizeof id);
	if (id >= oldest)
		return MDB_NOTFOUND;
	uint64_t cnt;
	if (d.mv_size < sizeof cnt)
		return MDB_CORRUPTED;
	memcpy(&cnt, d.mv_data, sizeof cnt);
	if (cnt > (d.mv_size - sizeof cnt) / sizeof(pgno_t))
		return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	/* A damaged record must not hand out a page twice or one this txn
	 * already uses: the second allocation would take over a buffer that
	 * is still in the tree.  So each page is checked as it is read (the
	 * record is strictly descending, and no page of a committed record can
	 * be dirty in this txn family), and after the merge for a page that
	 * came in through two records.  (A page that is live in the committed
	 * tree cannot be told apart here; the checker finds that.) */
	dl_pgl *r = &txn->t_reclaimed;
	if ((rc = dlmdb_pgl_reserve(r, r->l_n + cnt)))
		return rc;
	/* the dirty lookups only where the family has dirty pages at all
	 * (a txn's first allocation comes before its first dirty page) */
	int anydirty = 0;
	for (MDB_txn *t = txn; t; t = t->t_parent)
		anydirty |= t->t_dirty.d_n != 0;
	size_t had = r->l_n;
	pgno_t prev = 0;
	/* last to first: the record is descending, so the appended run is
	 * ascending and the sort below finds it (nearly) in order */
	for (uint64_t i = cnt; i > 0; i--) {
		pgno_t pg;
		memcpy(&pg, (char *)d.mv_data + i * sizeof(pgno_t), sizeof pg);
		if (pg < DL_NMETAS || pg >= txn->t_next_pg || (i < cnt && pg <= prev) ||
		    (anydirty && dlmdb_page_is_dirty(txn, pg)))
			return DL_TXN_FAIL(txn, MDB_CORRUPTED);
		prev = pg;
		r->l_v[r->l_n++] = pg;
	}
	/* the run is strictly ascending: if it starts above what the list
	 * held, the list is sorted and free of repeats as it stands */
	if (had && cnt && r->l_v[had] <= r->l_v[had - 1]) {
		dlmdb_pgl_sort(r);
		for (size_t j = 1; j < r->l_n; j++)
			if (r->l_v[j] == r->l_v[j - 1])
				return DL_TXN_FAIL(txn, MDB_CORRUPTED);
	}
	txn->t_last_reclaimed = id;
	txn->t_nreclaimed++;
	return 0;
}

/* zero: DL_BUF_ZERO clears the new buffer; DL_BUF_RAW leaves it as it is
 * (the caller overwrites all of it); DL_BUF_PAGE clears only fresh memory:
 * a spare buffer still holds an old page image of this env, which is all
 * that can reach the file through the bytes the caller leaves alone (as in
 * LMDB, whose recycled pages are not cleared either). */
#define DL_BUF_RAW 0
#define DL_BUF_ZERO 1
#define DL_BUF_PAGE 2
static int page_alloc_buf(MDB_txn *txn, unsigned n, dl_page **out, int zero)
{
	MDB_env *env = txn->t_env;
	pgno_t pg = 0;
	int rc, found = 0;
	if (n == 1 && txn->t_loose.l_n) {
		pg = txn->t_loose.l_v[--txn->t_loose.l_n];
		found = 1;
	}
	dl_pgl *r = &txn->t_reclaimed;
	if (!found && n == 1 && r->l_n) {
		/* dlmdb_pgl_take_run's single page, inline: the lowest one */
		pg = r->l_v[0];
		memmove(r->l_v, r->l_v + 1, (r->l_n - 1) * sizeof(pgno_t));
		r->l_n--;
		found = 1;
	}
	while (!found) {
		if (dlmdb_pgl_take_run(r, n, &pg) == 0) {
			found = 1;
			break;
		}
		rc = reclaim_next(txn);
		if (rc == MDB_NOTFOUND)
			break;
		if (rc)
			return rc;
	}
	if (!found) {
		if (txn->t_next_pg + n > env->e_maxpg)
			return MDB_MAP_FULL;
		pg = txn->t_next_pg;
		txn->t_next_pg += n;
	}
	size_t bytes = (size_t)n * env->e_psize;
	dl_page *p;
	if (dl_builds_in_map(txn, env)) {
		/* build the page(s) where they live: the numbers are free (loose,
		 * from a record older than every reader, or past the last page),
		 * so no snapshot reads these bytes; like a spare buffer they hold
		 * an old page image of this file (or zeros past its old end) */
		p = (dl_page *)(env->e_map + (size_t)pg * env->e_psize);
		if (zero == DL_BUF_ZERO && !(env->e_flags & MDB_NOMEMINIT))
			memset(p, 0, bytes);
		goto have_buf;
	}
	/* two explicit calls: with malloc+memset gcc folds both paths to calloc */
	p = n == 1 ? dlmdb_spare_take(env) : NULL;
	if (p && zero == DL_BUF_ZERO && !(env->e_flags & MDB_NOMEMINIT))
		memset(p, 0, bytes);
	else if (!p)
		p = (zero && !(env->e_flags & MDB_NOMEMINIT)) ? calloc(1, bytes) : malloc(bytes);
	if (!p) {
		/* give the pages back so nothing leaks */
		if (n == 1)
			dlmdb_pgl_push(&txn->t_loose, pg);
		else
			dlmdb_pgl_push_run(&txn->t_reclaimed, pg, n), dlmdb_pgl_sort(&txn->t_reclaimed);
		return ENOMEM;
	}
have_buf:
	p->p_pgno = pg;
	p->p_flags = 0;
	/* pages of the range were free: any copy we still hold of them (left
	 * over from a nested txn that freed a run of ours) is stale */
	for (unsigned i = 1; i < n; i++)
		dl_buf_release(env, dlmdb_dirty_remove(&txn->t_dirty, pg + i));
	dl_page *old;
	if ((rc = dlmdb_dirty_swap(&txn->t_dirty, pg, p, &old))) {
		dl_buf_release(env, p);
		return rc;
	}
	if (old != p)
		dl_buf_release(env, old);
	txn->t_fl_gen++;
	*out = p;
	return 0;
}

int dlmdb_page_alloc(MDB_txn *txn, unsigned n, dl_page **out)
{
	/* every caller sets the header and writes the nodes it adds */
	return page_alloc_buf(txn, n, out, DL_BUF_PAGE);
}

int dlmdb_page_free(MDB_txn *txn, pgno_t pg, unsigned n)
{
	int own = 0, rc;
	txn->t_fl_gen++;
	if (dirty_in_family(txn, pg, &own)) {
		/* never committed: reusable right away */
		if (own)
			dl_buf_release(txn->t_env, dlmdb_dirty_remove(&txn->t_dirty, pg));
		/* an ancestor may still hold a copy under this number (its own
		 * page, or the original of one we copied); it must not outlive
		 * our commit: the page may be reused for anything meanwhile */
		if (txn->t_parent && (rc = dlmdb_pgl_push(&txn->t_dropped, pg)))
			return rc;
		if (n == 1)
			return dlmdb_pgl_push(&txn->t_loose, pg);
		if ((rc = dlmdb_pgl_push_run(&txn->t_reclaimed, pg, n)))
			return rc;
		dlmdb_pgl_sort(&txn->t_reclaimed);
		return 0;
	}
	return n == 1 ? dlmdb_pgl_push(&txn->t_freed, pg) : dlmdb_pgl_push_run(&txn->t_freed, pg, n);
}

/* Make page p writable in txn; *out is p itself or its fresh copy. */
int dlmdb_page_touch(MDB_txn *txn, dl_page *p, dl_page **out)
{
	int own = 0, rc;
	pgno_t pg = p->p_pgno;
	dl_page *d = dirty_in_family(txn, pg, &own);
	if (d && own) {
		*out = d;
		return 0;
	}
	size_t psize = txn->t_env->e_psize;
	dl_page *np;
	if (d) {
		/* dirty in an ancestor: private copy under the same number */
		np = malloc(psize);
		if (!np)
			return ENOMEM;
		memcpy(np, d, psize);
		if ((rc = dlmdb_dirty_put(&txn->t_dirty, pg, np))) {
			free(np);
			return rc;
		}
		*out = np;
		return 0;
	}
	if ((rc = dlmdb_page_validate(txn->t_env, p)))
		return rc;
	if ((rc = page_alloc_buf(txn, 1, &np, DL_BUF_PAGE)))
		return rc;
	pgno_t npg = np->p_pgno;
	if (dl_pg_is_leaf2(p)) {
		/* fixed-size keys run from the header past p_lower: all of it */
		memcpy(np, p, psize);
	} else {
		/* the header and slots, then the nodes: the free gap between
		 * them carries no meaning (validated: lower <= upper <= psize) */
		memcpy(np, p, p->p_lower);
		memcpy((char *)np + p->p_upper, (char *)p + p->p_upper, psize - p->p_upper);
		/* a page we trust is one of ours: even offsets only.  Any
		 * other may be stock LMDB's, with nodes at odd offsets */
		pgno_t tag = 0, *slot = dl_trust_slot(txn->t_env, p, &tag);
		if (!(slot && *slot == tag) && (rc = dlmdb_pg_relayout(np, p, (unsigned)psize)))
			return DL_TXN_FAIL(txn, rc);
	}
	np->p_pgno = npg;
	/* p is committed (not dirty anywhere in the family, checked above):
	 * its number goes straight to the freed list (dlmdb_page_free) */
	txn->t_fl_gen++;
	if ((rc = dl_pgl_append(&txn->t_freed, pg)))
		return rc;
	*out = np;
	return 0;
}

/* Build an LMDB free-list record (count, pages descending) from a sorted list. */
static int build_record(const dl_pgl *l, size_t slots, pgno_t **buf, size_t *cap)
{
	size_t need = (slots + 1) * sizeof(pgno_t);
	if (need > *cap) {
		pgno_t *nb = realloc(*buf, need);
		if (!nb)
			return ENOMEM;
		*buf = nb;
		*cap = need;
	}
	(*buf)[0] = l->l_n;
	for (size_t i = 0; i < l->l_n; i++)
		(*buf)[i + 1] = l->l_v[l->l_n - 1 - i];
	for (size_t i = l->l_n; i < slots; i++)
		(*buf)[i + 1] = 0;
	return 0;
}

/*
 * Store list l under key id.  *slots is the record capacity written by an
 * earlier pass: records never shrink during one save (spare slots stay
 * zero, after the count), otherwise a record hovering at the inline/overflow
 * boundary could make the save loop oscillate.
 */
static int put_record(MDB_txn *txn, txnid_t id, const dl_pgl *l, size_t *slots, pgno_t **buf,
	size_t *cap)
{
	MDB_cursor mc;
	dlmdb_cursor_setup(&mc, txn, DL_FREE_DBI);
	MDB_val k = {sizeof id, &id}, d;
	int rc;
	if (l->l_n == 0 && *slots == 0) {
		rc = dlmdb_cursor_seek(&mc, &k, NULL, MDB_SET);
		if (rc == MDB_NOTFOUND)
			return 0;
		if (rc)
			return rc;
		return dlmdb_tree_del_discard(&mc);
	}
	int fresh = *slots == 0;	/* not yet written by this save */
	if (l->l_n > *slots)
		*slots = l->l_n;
	if ((rc = build_record(l, *slots, buf, cap)))
		return rc;
	d.mv_size = (*slots + 1) * sizeof(pgno_t);
	d.mv_data = *buf;
	if (fresh && id == txn->t_id) {
		/* this txn's own record: its key is above every committed txnid,
		 * so it goes after the last record without a key search (only a
		 * damaged free DB can hold a key this high: then the plain put) */
		rc = dlmdb_tree_put(&mc, &k, &d, MDB_APPEND);
		if (rc != MDB_KEYEXIST)
			return rc;
		dlmdb_cursor_setup(&mc, txn, DL_FREE_DBI);
	}
	return dlmdb_tree_put(&mc, &k, &d, 0);
}


/* The save's working lists start in spare page buffers when there are
 * any; a capacity one short of a page (never reached by growing from
 * empty: 64 times a power of two) says the list still is in one. */
static void work_list_borrow(MDB_env *env, dl_pgl *l)
{
	void *b = dlmdb_spare_take_or_new(env);
	if (b) {
		l->l_v = b;
		l->l_cap = env->e_psize / sizeof(pgno_t) - 1;
	}
}

static void work_list_done(MDB_env *env, dl_pgl *l)
{
	if (l->l_v && l->l_cap == env->e_psize / sizeof(pgno_t) - 1) {
		dlmdb_spare_give(env, l->l_v);	/* every byte holds page data */
		l->l_v = NULL;
		l->l_n = l->l_cap = 0;
	} else if (l->l_v) {
		dlmdb_pgl_free(l);	/* grown past the page (realloc'd) */
	}
}

/*
 * Before the save: the pages it will copy come from t_loose/t_reclaimed, but
 * no free DB record can be consumed while the save rewrites the free DB
 * (reclaim_next would search a tree in mid-change), so a save that finds
 * them empty takes new pages from the end of the file.  Those pages are
 * freed again later, the records grow, and a workload whose commits reuse
 * exactly what they free then keeps extending the file while an ever longer
 * backlog of records waits (seen: 100k three-put commits, 98 MB instead of
 * 1 MB).  So pull records now until there are pages for the usual work of
 * the save: one root-to-leaf path of the free DB for the consumed records
 * (the first keys) and one for the new record (the last key), sharing the
 * root: 2 * depth - 1 pages (1 for an empty free DB).
 */
static int save_prefetch(MDB_txn *txn)
{
	unsigned depth = txn->t_dbs[DL_FREE_DBI].d_depth;
	size_t want = depth ? 2u * depth - 1 : 1;
	while (txn->t_loose.l_n + txn->t_reclaimed.l_n < want) {
		int rc = reclaim_next(txn);
		if (rc)
			return rc == MDB_NOTFOUND ? 0 : rc;
	}
	return 0;
}

/*
 * Write this transaction's free-list state into the free DB.  Writing the
 * records itself allocates and frees pages, so repeat until a pass leaves
 * the lists unchanged; the last pass then stored exactly the final lists.
 */
int dlmdb_freelist_save(MDB_txn *txn)
{
	int rc = 0;
	pgno_t *buf = NULL;
	size_t cap = 0;
	dl_pgl rlist = {0}, flist = {0};
	size_t fslots = 0, rslots = 0;
	if ((rc = save_prefetch(txn)))
		return rc;
	txn->t_flags |= DL_T_SAVING;
	/* the record buffer too: build_record writes every byte it reserves */
	if ((buf = dlmdb_spare_take_or_new(txn->t_env)))
		cap = txn->t_env->e_psize;

	/* records consumed into t_reclaimed go away: reclaim_next takes them
	 * in key order from the first, so they are the first t_nreclaimed
	 * records, all keyed up to t_last_reclaimed (no search past them) */
	if (txn->t_last_reclaimed) {
		for (uint64_t left = txn->t_nreclaimed; left > 0; left--) {
			MDB_cursor mc;
			MDB_val k;
			dlmdb_cursor_setup(&mc, txn, DL_FREE_DBI);
			rc = dlmdb_search_root(&mc, NULL, DL_SEARCH_FIRST);
			if (rc)
				break;
			dlmdb_node_keyval(mc.c_pg[mc.c_top], 0, &k, NULL);	/* never PREFIX */
			txnid_t id;
			if (k.mv_size != sizeof id) {
				rc = MDB_CORRUPTED;
				break;
			}
			memcpy(&id, k.mv_data, sizeof id);
			if (id > txn->t_last_reclaimed)
				break;
			if ((rc = dlmdb_tree_del_discard(&mc)))
				break;
		}
		if (rc == MDB_NOTFOUND)
			rc = 0;
		if (rc)
			goto out;
	}
	for (int pass = 0;; pass++) {
		if (pass > 64) {
			rc = MDB_PROBLEM;
			goto out;
		}
		uint64_t gen = txn->t_fl_gen;
		/* the working lists are borrowed only when there is something
		 * to put in them; the freed pages are stored straight from
		 * t_freed, sorted in place (nothing else cares for its order) */
		const dl_pgl *fl = &txn->t_freed;
		if (!rlist.l_v && txn->t_reclaimed.l_n + txn->t_loose.l_n)
			work_list_borrow(txn->t_env, &rlist);
		if ((rc = dlmdb_pgl_copy(&rlist, &txn->t_reclaimed)))
			goto out;
		if ((rc = dlmdb_pgl_merge(&rlist, txn->t_loose.l_v, txn->t_loose.l_n)))
			goto out;
		dlmdb_pgl_sort(&txn->t_freed);
		if (!txn->t_last_reclaimed) {
			if (!flist.l_v)
				work_list_borrow(txn->t_env, &flist);
			if ((rc = dlmdb_pgl_copy(&flist, &txn->t_freed)) ||
			    (rc = dlmdb_pgl_merge(&flist, rlist.l_v, rlist.l_n)))
				goto out;
			rlist.l_n = 0;
			fl = &flist;
		}
		if ((rc = put_record(txn, txn->t_id, fl, &fslots, &buf, &cap)))
			goto out;
		/* with no slots yet and nothing to store there is no record
		 * under t_last_reclaimed to delete: the loop above removed every
		 * key up to it, and only this call writes that key */
		if (txn->t_last_reclaimed && (rlist.l_n || rslots) &&
		    (rc = put_record(txn, txn->t_last_reclaimed, &rlist, &rslots, &buf, &cap)))
			goto out;
		if (gen == txn->t_fl_gen)
			break;
	}
out:
	txn->t_flags &= ~DL_T_SAVING;
	if (buf && cap == txn->t_env->e_psize)
		dlmdb_spare_give(txn->t_env, buf);	/* page-sized, all written */
	else
		free(buf);
	work_list_done(txn->t_env, &rlist);
	work_list_done(txn->t_env, &flist);
	return rc;
}
