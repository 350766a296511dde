/*
 * sort.c - sorting page numbers.
 *
 * A commit sorts two lists that can be long after a big txn: its dirty
 * pages by number (txn.c, written in file order) and the page numbers it
 * frees (idl.c, stored ascending in its free-DB record).  Page numbers are
 * small integers, so a least-significant-digit radix sort does it in a few
 * linear passes, where a comparison sort through a callback costs a call
 * per compare and n log n of them.  Digits are bytes; a byte on which every
 * key agrees (the high ones, mostly) costs one counting pass and no moves.
 * The sort is stable, which nothing relies on.
 *
 * Short lists (the common case: a small txn dirties a handful of pages)
 * take an insertion sort inline at the call (internal.h); if the scratch
 * buffer for a long one cannot be had, the C library's qsort does the job.
 */
#include "internal.h"

/* A record to sort: its key first.  Page lists sort bare keys (width 8),
 * dirty pages a key and the page's address (width 16). */
typedef struct dl_keyed {
	pgno_t k_pg;
	dl_page *k_page;
} dl_keyed;

static inline pgno_t rec_key(const char *r)
{
	pgno_t k;
	memcpy(&k, r, sizeof k);
	return k;
}

/* Radix sort n records of w bytes (key: the first 8) from v, using tmp (as
 * large as v) as the other buffer.  Inlined per width so the moves are
 * fixed-size copies. */
static inline __attribute__((always_inline)) void radix(char *v, char *tmp, size_t n, size_t w)
{
	pgno_t any = 0;
	for (size_t i = 0; i < n; i++)
		any |= rec_key(v + i * w);
	char *src = v, *dst = tmp;
	size_t count[256];
	for (unsigned shift = 0; shift < 64 && (any >> shift); shift += 8) {
		memset(count, 0, sizeof count);
		for (size_t i = 0; i < n; i++)
			count[(rec_key(src + i * w) >> shift) & 0xff]++;
		if (count[(rec_key(src) >> shift) & 0xff] == n)
			continue;	/* every key has this byte: nothing moves */
		size_t at = 0;
		for (unsigned d = 0; d < 256; d++) {
			size_t c = count[d];
			count[d] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++) {
			const char *r = src + i * w;
			memcpy(dst + count[(rec_key(r) >> shift) & 0xff]++ * w, r, w);
		}
		char *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * w);
}

static int pgno_cmp(const void *a, const void *b)
{
	pgno_t x = *(const pgno_t *)a, y = *(const pgno_t *)b;
	return (x > y) - (x < y);
}

static int page_cmp(const void *a, const void *b)
{
	return pgno_cmp(&(*(dl_page *const *)a)->p_pgno, &(*(dl_page *const *)b)->p_pgno);
}

void dlmdb_sort_pgnos_long(pgno_t *v, size_t n)
{
	pgno_t *tmp = malloc(n * sizeof *tmp);
	if (!tmp) {
		qsort(v, n, sizeof *v, pgno_cmp);
		return;
	}
	radix((char *)v, (char *)tmp, n, sizeof *v);
	free(tmp);
}

void dlmdb_sort_pages_long(dl_page **list, size_t n)
{
	/* sort (number, address) pairs: the radix passes then read no page */
	dl_keyed *recs = malloc(2 * n * sizeof *recs);
	if (!recs) {
		qsort(list, n, sizeof *list, page_cmp);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		recs[i].k_pg = list[i]->p_pgno;
		recs[i].k_page = list[i];
	}
	radix((char *)recs, (char *)(recs + n), n, sizeof *recs);
	for (size_t i = 0; i < n; i++)
		list[i] = recs[i].k_page;
	free(recs);
}
