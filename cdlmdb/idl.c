/*
 * idl.c - page-number lists and the dirty-page hash map.
 *
 * Lists are plain growable arrays; callers sort them when order matters.
 * The dirty map is an open-addressing table keyed by page number, used by
 * write transactions to find their private copy of a page.
 */
#include "internal.h"

static int pgl_reserve(dl_pgl *l, size_t want)
{
	if (want <= l->l_cap)
		return 0;
	size_t cap = l->l_cap ? l->l_cap : 64;
	while (cap < want)
		cap *= 2;
	pgno_t *v = realloc(l->l_v, cap * sizeof(pgno_t));
	if (!v)
		return ENOMEM;
	l->l_v = v;
	l->l_cap = cap;
	return 0;
}

int dlmdb_pgl_reserve(dl_pgl *l, size_t want)
{
	return pgl_reserve(l, want);
}

int dlmdb_pgl_push(dl_pgl *l, pgno_t pg)
{
	if (l->l_n == l->l_cap && pgl_reserve(l, l->l_n + 1))
		return ENOMEM;
	l->l_v[l->l_n++] = pg;
	return 0;
}

int dlmdb_pgl_push_run(dl_pgl *l, pgno_t pg, unsigned n)
{
	if (pgl_reserve(l, l->l_n + n))
		return ENOMEM;
	for (unsigned i = 0; i < n; i++)
		l->l_v[l->l_n++] = pg + i;
	return 0;
}

int dlmdb_pgl_copy(dl_pgl *dst, const dl_pgl *src)
{
	dst->l_n = 0;
	if (pgl_reserve(dst, src->l_n))
		return ENOMEM;
	if (src->l_n)
		memcpy(dst->l_v, src->l_v, src->l_n * sizeof(pgno_t));
	dst->l_n = src->l_n;
	return 0;
}

void dlmdb_pgl_sort(dl_pgl *l)
{
	dlmdb_sort_pgnos(l->l_v, l->l_n);
}

/* Append n numbers and re-sort ascending. */
int dlmdb_pgl_merge(dl_pgl *l, const pgno_t *v, size_t n)
{
	if (!n)
		return 0;
	if (pgl_reserve(l, l->l_n + n))
		return ENOMEM;
	memcpy(l->l_v + l->l_n, v, n * sizeof(pgno_t));
	l->l_n += n;
	dlmdb_pgl_sort(l);
	return 0;
}

/*
 * Remove a run of n consecutive page numbers from a list sorted ascending.
 * Returns 0 and the first page in *out, or MDB_NOTFOUND.
 */
int dlmdb_pgl_take_run(dl_pgl *l, unsigned n, pgno_t *out)
{
	if (l->l_n < n || n == 0)
		return MDB_NOTFOUND;
	if (n == 1) {
		/* take the lowest page: keeps the file compact */
		*out = l->l_v[0];
		memmove(l->l_v, l->l_v + 1, (l->l_n - 1) * sizeof(pgno_t));
		l->l_n--;
		return 0;
	}
	for (size_t i = 0; i + n <= l->l_n; i++) {
		if (l->l_v[i + n - 1] == l->l_v[i] + n - 1) {
			*out = l->l_v[i];
			memmove(l->l_v + i, l->l_v + i + n, (l->l_n - i - n) * sizeof(pgno_t));
			l->l_n -= n;
			return 0;
		}
	}
	return MDB_NOTFOUND;
}

void dlmdb_pgl_free(dl_pgl *l)
{
	free(l->l_v);
	l->l_v = NULL;
	l->l_n = l->l_cap = 0;
}

/* ---- dirty map ---------------------------------------------------------------- */

static inline size_t dirty_hash(pgno_t pg)
{
	uint64_t h = pg * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 17);
}

#define DIRTY_EMPTY (~(pgno_t)0)
#define DIRTY_GONE (~(pgno_t)0 - 1)
#define DIRTY_MIN_CAP 16	/* a short txn dirties a handful of pages */

dl_page *dlmdb_dirty_find(const dl_dirty *d, pgno_t pg)
{
	if (!d->d_cap)
		return NULL;
	size_t mask = d->d_cap - 1, i = dirty_hash(pg) & mask;
	for (;;) {
		pgno_t k = d->d_keys[i];
		if (k == pg)
			return d->d_pages[i];
		if (k == DIRTY_EMPTY)
			return NULL;
		i = (i + 1) & mask;
	}
}

static int dirty_grow(dl_dirty *d)
{
	/* start small: a short txn dirties a handful of pages, and commit and
	 * txn end scan every slot */
	size_t ncap = d->d_cap ? d->d_cap * 2 : DIRTY_MIN_CAP;
	/* one block: the keys, then the page pointers (freed through d_keys) */
	pgno_t *keys = malloc(ncap * (sizeof(pgno_t) + sizeof(dl_page *)));
	if (!keys)
		return ENOMEM;
	dl_page **pages = (dl_page **)(keys + ncap);
	uint64_t used = 0;
	for (size_t i = 0; i < ncap; i++)
		keys[i] = DIRTY_EMPTY;
	for (size_t j = 0; j < d->d_cap; j++) {
		pgno_t k = d->d_keys[j];
		if (k == DIRTY_EMPTY || k == DIRTY_GONE)
			continue;
		size_t i = dirty_hash(k) & (ncap - 1);
		while (keys[i] != DIRTY_EMPTY)
			i = (i + 1) & (ncap - 1);
		keys[i] = k;
		pages[i] = d->d_pages[j];
		if (ncap <= 64)
			used |= 1ull << i;
	}
	d->d_used = used;
	free(d->d_keys);
	d->d_keys = keys;
	d->d_pages = pages;
	d->d_cap = ncap;
	return 0;
}

/* Insert or replace pg; *old gets the page it had (NULL if none), which
 * is not freed. */
static inline int dirty_store(dl_dirty *d, pgno_t pg, dl_page *p, dl_page **old)
{
	/* tombstones count as used so the table never fills up */
	if ((d->d_n + 1) * 4 >= d->d_cap * 3 && dirty_grow(d))
		return ENOMEM;
	size_t mask = d->d_cap - 1, i = dirty_hash(pg) & mask;
	size_t slot = (size_t)-1;
	for (;;) {
		pgno_t k = d->d_keys[i];
		if (k == pg) {
			*old = d->d_pages[i];
			d->d_pages[i] = p;
			return 0;
		}
		if (k == DIRTY_GONE && slot == (size_t)-1)
			slot = i;
		if (k == DIRTY_EMPTY)
			break;
		i = (i + 1) & mask;
	}
	if (slot == (size_t)-1) {
		slot = i;
		d->d_n++;
		if (d->d_cap <= 64)
			d->d_used |= 1ull << slot;
	}
	d->d_keys[slot] = pg;
	d->d_pages[slot] = p;
	*old = NULL;
	return 0;
}

int dlmdb_dirty_put(dl_dirty *d, pgno_t pg, dl_page *p)
{
	dl_page *old;
	return dirty_store(d, pg, p, &old);
}

int dlmdb_dirty_swap(dl_dirty *d, pgno_t pg, dl_page *p, dl_page **old)
{
	return dirty_store(d, pg, p, old);
}

dl_page *dlmdb_dirty_remove(dl_dirty *d, pgno_t pg)
{
	if (!d->d_cap)
		return NULL;
	size_t mask = d->d_cap - 1, i = dirty_hash(pg) & mask;
	for (;;) {
		pgno_t k = d->d_keys[i];
		if (k == pg) {
			d->d_keys[i] = DIRTY_GONE;
			return d->d_pages[i];
		}
		if (k == DIRTY_EMPTY)
			return NULL;
		i = (i + 1) & mask;
	}
}

/*
 * Spare page buffers: a write txn ends by freeing a few page-sized
 * buffers and the next one mallocs the same number again.  Writers of one
 * env never run at the same time, so the buffers are chained through
 * their first word in the env and handed out again by page_alloc.
 */
#define DL_SPARE_MAX 128u

void *dlmdb_spare_take(MDB_env *env)
{
	void *b = env->e_spare;
	if (b) {
		memcpy(&env->e_spare, b, sizeof(void *));
		env->e_nspare--;
	}
	return b;
}

/* A spare buffer, or a new cleared one when there is none (it joins the
 * spares when given back, every byte written).  Under WRITEMAP the dirty
 * pages live in the map and never refill the spares, so the buffers the
 * write path borrows (page-number lists, the node blob) are the only ones
 * that circulate. */
void *dlmdb_spare_take_or_new(MDB_env *env)
{
	void *b = dlmdb_spare_take(env);
	return b ? b : calloc(1, env->e_psize);
}

/*
 * Hand a page-sized buffer back to the env (caller holds the writer lock).
 * Only buffers whose every byte was written are accepted: page images of
 * this env or page-number lists (see dlmdb_spare_take's users), since a
 * page copy may reach the file with parts of an old buffer left in it.
 */
void dlmdb_spare_give(MDB_env *env, void *b)
{
	if (env->e_nspare >= DL_SPARE_MAX) {
		free(b);
		return;
	}
	memcpy(b, &env->e_spare, sizeof(void *));
	env->e_spare = b;
	env->e_nspare++;
}

void dlmdb_spare_drop_all(MDB_env *env)
{
	void *b;
	while ((b = dlmdb_spare_take(env)))
		free(b);
}

/* Let go of one dirty page buffer of a map being released: a spare if it
 * is a single page, else freed; under WRITEMAP map pages stay. */
static inline void release_page(MDB_env *env, int wmap, dl_page *p)
{
	if (wmap && dl_in_map(env, p))
		return;	/* WRITEMAP: the page itself, not a copy */
	/* branch and leaf copies are exactly one page; overflow runs vary */
	if (env->e_nspare < DL_SPARE_MAX && !(p->p_flags & DL_P_OVERFLOW) &&
	    (p->p_flags & (DL_P_BRANCH | DL_P_LEAF))) {
		memcpy((void *)p, &env->e_spare, sizeof(void *));
		env->e_spare = p;
		env->e_nspare++;
	} else {
		free(p);
	}
}

/* dlmdb_dirty_free(d, 1), keeping single-page buffers as spares. */
void dlmdb_dirty_release(dl_dirty *d, MDB_env *env)
{
	/* without WRITEMAP no dirty page lies in the map */
	int wmap = dl_env_builds_in_map(env);
	if (d->d_cap <= 64) {
		/* small map: only the slots ever filled (d_used) */
		for (uint64_t m = d->d_used; m; m &= m - 1) {
			size_t i = (size_t)__builtin_ctzll(m);
			if (d->d_keys[i] != DIRTY_GONE)
				release_page(env, wmap, d->d_pages[i]);
		}
	} else {
		for (size_t i = 0; i < d->d_cap; i++)
			if (d->d_keys[i] < DIRTY_GONE)	/* neither DIRTY_GONE nor DIRTY_EMPTY */
				release_page(env, wmap, d->d_pages[i]);
	}
	if (d->d_cap == DIRTY_MIN_CAP && !env->e_dirty_spare) {
		/* keep the block, emptied, for the next write txn (dirty_adopt) */
		for (size_t i = 0; i < DIRTY_MIN_CAP; i++)
			d->d_keys[i] = DIRTY_EMPTY;
		env->e_dirty_spare = d->d_keys;
		memset(d, 0, sizeof(*d));
		return;
	}
	dlmdb_dirty_free(d, 0);
}

/* Start an empty dirty map in the block the last write txn left, if any
 * (writer lock held). */
void dlmdb_dirty_adopt(dl_dirty *d, MDB_env *env)
{
	pgno_t *keys = env->e_dirty_spare;
	if (!keys || d->d_cap)
		return;
	env->e_dirty_spare = NULL;
	d->d_keys = keys;
	d->d_pages = (dl_page **)(keys + DIRTY_MIN_CAP);
	d->d_cap = DIRTY_MIN_CAP;
	d->d_n = 0;
	d->d_used = 0;
}

/* free_pages: heap copies only (no caller passes a WRITEMAP txn's map) */
void dlmdb_dirty_free(dl_dirty *d, int free_pages)
{
	if (free_pages) {
		for (size_t i = 0; i < d->d_cap; i++) {
			pgno_t k = d->d_keys[i];
			if (k != DIRTY_EMPTY && k != DIRTY_GONE)
				free(d->d_pages[i]);
		}
	}
	free(d->d_keys);	/* d_pages lives in the same block */
	memset(d, 0, sizeof(*d));
}
