/*
 * sort_test.c - the commit-time sorts (sort.c) against a reference: page
 * number lists and page lists of every short length and of long lengths,
 * random, ascending, descending, all equal, few distinct values, numbers
 * near the 48-bit limit; pages must keep their own addresses.
 */
#include "testutil.h"
#include "../internal.h"

static int cmp_u64(const void *a, const void *b)
{
	pgno_t x = *(const pgno_t *)a, y = *(const pgno_t *)b;
	return (x > y) - (x < y);
}

/* fill v[0..n) by shape s */
static void fill(pgno_t *v, size_t n, int shape, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++) {
		switch (shape) {
		case 0: v[i] = tu_next(seed) % 1000000; break;		/* random */
		case 1: v[i] = 2 + i * 3; break;			/* ascending */
		case 2: v[i] = 5 * (n - i); break;			/* descending */
		case 3: v[i] = 77; break;				/* all equal */
		case 4: v[i] = tu_next(seed) % 5; break;		/* few values */
		case 5: v[i] = ((pgno_t)1 << 47) + tu_next(seed) % 100000; break;
		default: v[i] = tu_next(seed) & (((pgno_t)1 << 48) - 1); break;
		}
	}
}

int main(void)
{
	uint64_t seed = 20261130;
	static const size_t lens[] = {0, 1, 2, 3, 23, 24, 25, 26, 100, 255, 256, 257, 1000, 4096, 50000};
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
		size_t n = lens[li];
		for (int shape = 0; shape < 7; shape++) {
			pgno_t *v = malloc((n + 1) * sizeof *v), *want = malloc((n + 1) * sizeof *want);
			fill(v, n, shape, &seed);
			memcpy(want, v, n * sizeof *v);
			qsort(want, n, sizeof *want, cmp_u64);
			dlmdb_sort_pgnos(v, n);
			EXPECT(memcmp(v, want, n * sizeof *v) == 0);

			/* pages: headers carry the numbers; each must keep its
			 * own address (its index i is in p_pad) */
			dl_page *pages = calloc(n + 1, sizeof *pages);
			dl_page **list = malloc((n + 1) * sizeof *list);
			fill(v, n, shape, &seed);
			for (size_t i = 0; i < n; i++) {
				pages[i].p_pgno = v[i];
				list[i] = &pages[i];
			}
			memcpy(want, v, n * sizeof *v);
			qsort(want, n, sizeof *want, cmp_u64);
			dlmdb_sort_pages(list, n);
			int ok = 1;
			for (size_t i = 0; i < n && ok; i++)
				ok = list[i]->p_pgno == want[i] && list[i] >= pages && list[i] < pages + n;
			EXPECT(ok);
			/* a permutation: every page exactly once */
			unsigned char *seen = calloc(n + 1, 1);
			for (size_t i = 0; i < n && ok; i++) {
				size_t at = (size_t)(list[i] - pages);
				ok = !seen[at];
				seen[at] = 1;
			}
			EXPECT(ok);
			free(seen);
			free(list);
			free(pages);
			free(v);
			free(want);
		}
	}
	return tu_finish("sort_test");
}
