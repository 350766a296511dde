/*
 * count_test.c - order statistics of MDB_COUNTED databases against a
 * brute-force model.
 *
 * Three counted DBs are driven by random operation sequences (each in its
 * own environment): a plain one (keys of 4..204 bytes, values up to 150
 * bytes and some overflow values), a DUPSORT one (variable-size values;
 * a few "hot" keys collect hundreds of duplicates, so their values live in
 * sub-trees with branch pages) and a DUPSORT|DUPFIXED one.  Operations:
 * puts (also NOOVERWRITE refusals), deletes of single pairs and whole keys,
 * cursor deletes (also MDB_NODUPDATA) on cursors placed by rank, MDB_APPEND
 * and MDB_APPENDDUP, nested txns that commit or abort, commits and periodic
 * close/reopen of the environment.
 *
 * The model is a sorted array of (key id, value id) pairs; the bytes of a
 * key or value are a function of its id that starts with the id in
 * big-endian order, so the engine's default byte orders sort the pairs the
 * way the model does.  After most operations (inside the write txn, in
 * nested txns, and in read txns after commits) every query is compared
 * with the model: mdb_count_all, the three range counts on random bounds
 * (existing keys, missing keys, prefixes and extensions of keys, bounds
 * below and above everything, NULL, equal bounds under all four
 * inclusive/exclusive combinations), mdb_get_rank at 0, n-1, n, beyond and
 * random ranks, key ranks with and without data (present and absent), and
 * mdb_cursor_get_rank sequences (ascending, descending, random) followed by
 * MDB_GET_CURRENT / MDB_NEXT / MDB_PREV / MDB_NEXT_DUP / MDB_FIRST_DUP /
 * mdb_cursor_count.  The model's range counts are cross-checked by a plain
 * scan now and then, the whole DB is compared by iteration, and
 * mdb_txn_check runs at intervals.
 *
 * Each configuration runs twice: as above, and with MDB_PREFIX_COMPRESSION
 * and keys (and DUPSORT values) that start with a long common prefix
 * (PFX_LONG), so that the leaves really are compressed; at the end of such a
 * run its pairs are loaded into a compressed and a plain DB side by side and
 * the compressed one must take fewer pages.
 *
 * Also: uncounted DBs answer MDB_INCOMPATIBLE; argument errors; a counted
 * INTEGERKEY/INTEGERDUP DB (native number order, not byte order); zeroed
 * branch counts in the file give MDB_CORRUPTED, random counts and random
 * bytes in branch pages give answers or errors but never a crash.
 *
 * Usage: count_test [seed] [rounds]   (or COUNT_TEST_SEED=...; COUNT_TEST_DIR=dir
 * moves the environment from build/count_env; COUNT_TEST_VERBOSE=1 prints
 * the model's size per round)
 */
#include "testutil.h"

#define VMAX 6700
#define KMAX 512

enum { CFG_PLAIN, CFG_DUPS, CFG_FIXED, NCFG };
static const char *cfg_name[NCFG] = {"plain", "dupsort", "dupfixed"};
static const unsigned cfg_flags[NCFG] = {
	MDB_COUNTED, MDB_COUNTED | MDB_DUPSORT, MDB_COUNTED | MDB_DUPSORT | MDB_DUPFIXED};

/* the prefix-compressed rerun: flag, and the prefix every key (and DUPSORT
 * value) starts with; it keeps the byte order of the ids */
static unsigned g_pfx;
static const char PFX_LONG[] = "urn:dlmdb:count-test/a-long-shared-prefix/0123456789/";
#define PFX_LEN (sizeof PFX_LONG - 1)

static const char *DIR = "build/count_env";	/* COUNT_TEST_DIR overrides */
static int cfg;			/* current configuration */
static uint64_t g_seed;		/* seed of the whole run (printed on failure) */
static uint64_t rng;
static int g_round, g_op;
static int reported;

static unsigned rnd(unsigned n) { return n ? tu_below(&rng, n) : 0; }
static uint64_t rnd64(uint64_t n) { return n ? tu_next(&rng) % n : 0; }

/* ---- key and value bytes --------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
	uint64_t s = x * 0x2545F4914F6CDD1Dull + 77;
	return tu_next(&s);
}

static size_t key_bytes_raw(uint32_t kid, unsigned char *b);

static size_t key_bytes(uint32_t kid, unsigned char *b)
{
	if (!g_pfx)
		return key_bytes_raw(kid, b);
	memcpy(b, PFX_LONG, PFX_LEN);
	return PFX_LEN + key_bytes_raw(kid, b + PFX_LEN);
}

static size_t key_bytes_raw(uint32_t kid, unsigned char *b)
{
	unsigned pad = (unsigned)(mix(kid) % (cfg == CFG_PLAIN ? 201 : 160));
	b[0] = (unsigned char)(kid >> 24);
	b[1] = (unsigned char)(kid >> 16);
	b[2] = (unsigned char)(kid >> 8);
	b[3] = (unsigned char)kid;
	for (unsigned j = 0; j < pad; j++)
		b[4 + j] = (unsigned char)(kid * 131u + j * 29u + 1);
	return 4 + pad;
}

static size_t val_bytes_raw(uint32_t vid, unsigned char *b);

static size_t val_bytes(uint32_t vid, unsigned char *b)
{
	if (!g_pfx || cfg != CFG_DUPS)
		return val_bytes_raw(vid, b);
	memcpy(b, PFX_LONG, PFX_LEN);
	return PFX_LEN + val_bytes_raw(vid, b + PFX_LEN);
}

static size_t val_bytes_raw(uint32_t vid, unsigned char *b)
{
	uint64_t h = mix((uint64_t)vid + 0x1000000000ull);
	unsigned pad;
	if (cfg == CFG_FIXED)
		pad = 8;
	else if (cfg == CFG_DUPS)
		pad = (unsigned)(h % 60);
	else
		pad = (h % 61 == 0) ? 2500 + (unsigned)((h >> 8) % 4000) : (unsigned)(h % 150);
	b[0] = (unsigned char)(vid >> 24);
	b[1] = (unsigned char)(vid >> 16);
	b[2] = (unsigned char)(vid >> 8);
	b[3] = (unsigned char)vid;
	for (unsigned j = 0; j < pad; j++)
		b[4 + j] = (unsigned char)(vid * 17u + j * 3u);
	return 4 + pad;
}

/* The engine's default order: bytes, then the shorter first. */
static int cmp_bytes(const void *a, size_t an, const void *b, size_t bn)
{
	size_t n = an < bn ? an : bn;
	int r = n ? memcmp(a, b, n) : 0;
	if (r)
		return r;
	return (an > bn) - (an < bn);
}

static int val_eq_bytes(const MDB_val *v, const unsigned char *b, size_t n)
{
	return v->mv_size == n && (n == 0 || memcmp(v->mv_data, b, n) == 0);
}

/* ---- the model ------------------------------------------------------------------------- */

typedef struct { uint32_t k, v; } pair;
typedef struct { pair *a; size_t n, cap; } model;

static model M;
/* distinct keys of M, rebuilt lazily: U[i] key id, UF[i] index of its first pair */
static uint32_t *U;
static size_t *UF, Un, Ucap;
static int Udirty = 1;
static uint32_t next_vid = 1;

static int pair_cmp(pair a, pair b)
{
	if (a.k != b.k)
		return a.k < b.k ? -1 : 1;
	return (a.v > b.v) - (a.v < b.v);
}

static size_t m_lower(pair p)
{
	size_t lo = 0, hi = M.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pair_cmp(M.a[mid], p) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
static size_t m_key_first(uint32_t k) { return m_lower((pair){k, 0}); }
static size_t m_key_end(uint32_t k) { return k == UINT32_MAX ? M.n : m_lower((pair){k + 1, 0}); }
static int m_has(pair p)
{
	size_t i = m_lower(p);
	return i < M.n && pair_cmp(M.a[i], p) == 0;
}
static int m_has_key(uint32_t k) { return m_key_end(k) > m_key_first(k); }

static void m_insert(size_t i, pair p)
{
	if (M.n == M.cap) {
		M.cap = M.cap ? M.cap * 2 : 1024;
		M.a = realloc(M.a, M.cap * sizeof(pair));
		if (!M.a)
			exit(2);
	}
	memmove(M.a + i + 1, M.a + i, (M.n - i) * sizeof(pair));
	M.a[i] = p;
	M.n++;
	Udirty = 1;
}
static void m_erase(size_t i, size_t cnt)
{
	memmove(M.a + i, M.a + i + cnt, (M.n - i - cnt) * sizeof(pair));
	M.n -= cnt;
	Udirty = 1;
}
static void m_copy(model *dst, const model *src)
{
	if (dst->cap < src->n + 1) {
		dst->cap = src->n + 1024;
		dst->a = realloc(dst->a, dst->cap * sizeof(pair));
		if (!dst->a)
			exit(2);
	}
	if (src->n)
		memcpy(dst->a, src->a, src->n * sizeof(pair));
	dst->n = src->n;
}

static void u_rebuild(void)
{
	if (!Udirty)
		return;
	if (Ucap < M.n + 1) {
		Ucap = M.n + 1024;
		U = realloc(U, Ucap * sizeof *U);
		UF = realloc(UF, (Ucap + 1) * sizeof *UF);
		if (!U || !UF)
			exit(2);
	}
	Un = 0;
	for (size_t i = 0; i < M.n; i++) {
		if (i == 0 || M.a[i].k != M.a[i - 1].k) {
			U[Un] = M.a[i].k;
			UF[Un++] = i;
		}
	}
	UF[Un] = M.n;
	Udirty = 0;
}

typedef struct {
	int null;
	size_t len;
	unsigned char b[KMAX + 8];
} bound;

/* Does key kid lie below b (or at b when incl)? */
static int key_before(uint32_t kid, const bound *b, int incl)
{
	unsigned char kb[KMAX];
	size_t kn = key_bytes(kid, kb);
	int c = cmp_bytes(kb, kn, b->b, b->len);
	return incl ? c <= 0 : c < 0;
}

/* Distinct keys of the model below b (or at/below when incl). */
static size_t u_below(const bound *b, int incl)
{
	size_t lo = 0, hi = Un;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (key_before(U[mid], b, incl))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void model_range(const bound *lo, const bound *hi, unsigned flags, uint64_t *ent, uint64_t *keys)
{
	size_t ua = lo->null ? 0 : u_below(lo, !(flags & MDB_COUNT_LOWER_INCL));
	size_t ub = hi->null ? Un : u_below(hi, (flags & MDB_COUNT_UPPER_INCL) != 0);
	if (ub <= ua) {
		*ent = *keys = 0;
		return;
	}
	*ent = UF[ub] - UF[ua];
	*keys = ub - ua;
}

/* The same by definition, one key at a time (slow; cross-check). */
static void brute_range(const bound *lo, const bound *hi, unsigned flags, uint64_t *ent, uint64_t *keys)
{
	unsigned char kb[KMAX];
	*ent = *keys = 0;
	for (size_t i = 0; i < Un; i++) {
		size_t kn = key_bytes(U[i], kb);
		if (!lo->null) {
			int c = cmp_bytes(kb, kn, lo->b, lo->len);
			if (c < 0 || (c == 0 && !(flags & MDB_COUNT_LOWER_INCL)))
				continue;
		}
		if (!hi->null) {
			int c = cmp_bytes(kb, kn, hi->b, hi->len);
			if (c > 0 || (c == 0 && !(flags & MDB_COUNT_UPPER_INCL)))
				continue;
		}
		*ent += UF[i + 1] - UF[i];
		*keys += 1;
	}
}

/* ---- failure context -------------------------------------------------------------------- */

static void context(const char *where)
{
	if (tu_failures && reported != tu_failures) {
		if (!reported)
			fprintf(stderr, "count_test: FIRST FAILURE with seed %llu, db %s%s, round %d, op %d (%s); "
				"rerun: ./build/count_test %llu\n", (unsigned long long)g_seed, cfg_name[cfg],
				g_pfx ? "+prefix" : "",
				g_round, g_op, where, (unsigned long long)g_seed);
		reported = tu_failures;
		if (tu_failures > 40) {
			fprintf(stderr, "count_test: too many failures, seed %llu\n", (unsigned long long)g_seed);
			tu_finish("count_test");
			exit(1);
		}
	}
}

/* ---- checks ---------------------------------------------------------------------------------- */

static void expect_entry(size_t r, const MDB_val *k, const MDB_val *d, const char *what)
{
	unsigned char kb[KMAX], vb[VMAX];
	if (r >= M.n) {
		EXPECT(r < M.n);
		return;
	}
	size_t kn = key_bytes(M.a[r].k, kb), vn = val_bytes(M.a[r].v, vb);
	int okk = val_eq_bytes(k, kb, kn), okd = val_eq_bytes(d, vb, vn);
	EXPECT(okk);
	EXPECT(okd);
	if (!okk || !okd)
		fprintf(stderr, "  %s: rank %zu of %zu: wrong %s%s\n", what, r, M.n, okk ? "" : "key ",
			okd ? "" : "data");
}

static void random_bound(bound *b)
{
	unsigned char kb[KMAX];
	b->null = 0;
	unsigned t = rnd(10);
	if (M.n == 0 && t < 5)
		t = 5 + rnd(5);
	switch (t) {
	case 0:
	case 1:
	case 2: {	/* an existing key */
		uint32_t k = M.a[rnd64(M.n)].k;
		b->len = key_bytes(k, b->b);
		break;
	}
	case 3: {	/* a prefix of an existing key */
		uint32_t k = M.a[rnd64(M.n)].k;
		size_t kn = key_bytes(k, kb);
		b->len = 1 + rnd((unsigned)kn - 1);	/* 1 .. kn-1 bytes */
		memcpy(b->b, kb, b->len);
		break;
	}
	case 4: {	/* an existing key plus a byte */
		uint32_t k = M.a[rnd64(M.n)].k;
		size_t kn = key_bytes(k, b->b);
		b->b[kn] = (unsigned char)rnd(256);
		b->len = kn + 1;
		break;
	}
	case 5:
	case 6: {	/* any key id, present or not */
		uint32_t k = M.n ? (uint32_t)rnd64((uint64_t)M.a[M.n - 1].k + 20) : rnd(1000);
		b->len = key_bytes(k, b->b);
		break;
	}
	case 7:		/* below everything */
		b->len = rnd(2);
		b->b[0] = 0;
		break;
	case 8:		/* above everything */
		b->len = 5;
		memset(b->b, 0xff, 5);
		break;
	default:
		b->null = 1;
		b->len = 0;
		break;
	}
}

static MDB_val bval(const bound *b) { return (MDB_val){b->len, (void *)b->b}; }

static void check_ranges(MDB_txn *txn, MDB_dbi dbi, int nranges, int brute)
{
	u_rebuild();
	for (int i = 0; i < nranges; i++) {
		bound lo, hi;
		random_bound(&lo);
		if (rnd(4) == 0)
			hi = lo;	/* equal bounds */
		else
			random_bound(&hi);
		if (rnd(3) == 0 && !lo.null && !hi.null) {
			/* put them in order most of the time, not always */
			if (cmp_bytes(lo.b, lo.len, hi.b, hi.len) > 0) {
				bound t = lo;
				lo = hi;
				hi = t;
			}
		}
		int equal = !lo.null && !hi.null && cmp_bytes(lo.b, lo.len, hi.b, hi.len) == 0;
		for (unsigned f = 0; f < 8; f += 2) {
			if (!equal && f != 2 * rnd(4))
				continue;	/* all four combos for equal bounds, one otherwise */
			uint64_t we, wk, ge = ~0ull, gv = ~0ull, gk = ~0ull;
			model_range(&lo, &hi, f, &we, &wk);
			if (brute) {
				uint64_t be, bk;
				brute_range(&lo, &hi, f, &be, &bk);
				EXPECT(be == we && bk == wk);
			}
			MDB_val l = bval(&lo), h = bval(&hi);
			const MDB_val *lp = lo.null ? NULL : &l, *hp = hi.null ? NULL : &h;
			EXPECT_RC(mdb_count_range(txn, dbi, lp, hp, f, &ge), 0);
			EXPECT_RC(mdb_range_count_values(txn, dbi, lp, hp, f, &gv), 0);
			EXPECT_RC(mdb_range_count_keys(txn, dbi, lp, hp, f, &gk), 0);
			EXPECT(ge == we);
			EXPECT(gv == we);
			EXPECT(gk == wk);
			if (ge != we || gk != wk)
				fprintf(stderr, "  range lo %s(%zu) hi %s(%zu) flags %u: entries %llu want %llu, "
					"keys %llu want %llu (n %zu)\n", lo.null ? "NULL" : "", lo.len,
					hi.null ? "NULL" : "", hi.len, f, (unsigned long long)ge,
					(unsigned long long)we, (unsigned long long)gk, (unsigned long long)wk, M.n);
		}
	}
}

static void check_get_rank(MDB_txn *txn, MDB_dbi dbi, int nrand)
{
	MDB_val k, d;
	uint64_t n = M.n, c = ~0ull;
	EXPECT_RC(mdb_count_all(txn, dbi, 0, &c), 0);
	EXPECT(c == n);
	if (c != n)
		fprintf(stderr, "  count_all %llu, model %llu\n", (unsigned long long)c, (unsigned long long)n);
	EXPECT_RC(mdb_get_rank(txn, dbi, n, &k, &d), MDB_NOTFOUND);
	EXPECT_RC(mdb_get_rank(txn, dbi, n + 1 + rnd(5), &k, &d), MDB_NOTFOUND);
	EXPECT_RC(mdb_get_rank(txn, dbi, UINT64_MAX, &k, &d), MDB_NOTFOUND);
	if (!n)
		return;
	for (int i = -2; i < nrand; i++) {
		uint64_t r = i == -2 ? 0 : i == -1 ? n - 1 : rnd64(n);
		int rc = mdb_get_rank(txn, dbi, r, &k, &d);
		EXPECT_RC(rc, 0);
		if (rc == 0)
			expect_entry(r, &k, &d, "get_rank");
	}
}

/* Key ranks, through the txn (cur == NULL) or a cursor. */
static int key_rank(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *cur, const MDB_val *k, const MDB_val *d, uint64_t *r)
{
	return cur ? mdb_cursor_key_rank(cur, k, d, 0, r) : mdb_get_key_rank(txn, dbi, k, d, r);
}

static void check_key_ranks(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *cur, int nrand)
{
	unsigned char kb[KMAX], vb[VMAX];
	int dup = cfg != CFG_PLAIN;
	for (int i = 0; i < nrand && M.n; i++) {
		size_t idx = (size_t)rnd64(M.n);
		pair p = M.a[idx];
		MDB_val k = {key_bytes(p.k, kb), kb}, d = {val_bytes(p.v, vb), vb};
		uint64_t r = ~0ull;
		EXPECT_RC(key_rank(txn, dbi, cur, &k, NULL, &r), 0);
		EXPECT(r == m_key_first(p.k));
		r = ~0ull;
		EXPECT_RC(key_rank(txn, dbi, cur, &k, &d, &r), 0);
		EXPECT(r == idx);
		if (r != idx)
			fprintf(stderr, "  key rank with data: %llu, want %zu\n", (unsigned long long)r, idx);
		if (dup) {
			/* a value the key does not have */
			uint32_t v = p.v + 1 + rnd(3);
			if (!m_has((pair){p.k, v})) {
				MDB_val d2 = {val_bytes(v, vb), vb};
				EXPECT_RC(key_rank(txn, dbi, cur, &k, &d2, &r), MDB_NOTFOUND);
			}
		} else {
			/* without DUPSORT, data must be the stored value exactly:
			 * one byte changed, one short, one long, empty, junk */
			unsigned char alt[VMAX + 1];
			size_t n = d.mv_size;
			memcpy(alt, vb, n);
			alt[n] = 0;
			MDB_val bad[5] = {{n, alt}, {n - 1, alt}, {n + 1, alt}, {0, NULL}, {3, "zzz"}};
			alt[rnd((unsigned)n)] ^= (unsigned char)(1 + rnd(255));
			for (int b = 0; b < 5; b++) {
				if (b == 1)
					memcpy(alt, vb, n);	/* the others: exact bytes */
				r = ~0ull;
				EXPECT_RC(key_rank(txn, dbi, cur, &k, &bad[b], &r), MDB_NOTFOUND);
			}
		}
	}
	/* absent keys: a missing id, a prefix, an extension */
	uint32_t top = M.n ? M.a[M.n - 1].k : 100;
	for (int i = 0; i < 3; i++) {
		uint32_t kid = (uint32_t)rnd64((uint64_t)top + 10);
		if (m_has_key(kid))
			continue;
		MDB_val k = {key_bytes(kid, kb), kb};
		uint64_t r;
		EXPECT_RC(key_rank(txn, dbi, cur, &k, NULL, &r), MDB_NOTFOUND);
	}
	if (M.n) {
		pair p = M.a[rnd64(M.n)];
		size_t kn = key_bytes(p.k, kb);
		uint64_t r;
		MDB_val k = {kn + 1, kb};
		kb[kn] = 7;
		EXPECT_RC(key_rank(txn, dbi, cur, &k, NULL, &r), MDB_NOTFOUND);
		if (kn > 1) {
			k.mv_size = kn - 1;
			EXPECT_RC(key_rank(txn, dbi, cur, &k, NULL, &r), MDB_NOTFOUND);
		}
	}
}

/* Dups of the key of pair idx: [first, end). */
static void key_span(size_t idx, size_t *first, size_t *end)
{
	*first = m_key_first(M.a[idx].k);
	*end = m_key_end(M.a[idx].k);
}

/*
 * Rank sequences on a cursor, each followed by a movement or read that
 * must continue from that entry.  pos tracks where the cursor stands
 * (SIZE_MAX: unknown).
 */
static void check_cursor_ranks(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *cur, int len)
{
	MDB_val k, d;
	size_t n = M.n, pos = SIZE_MAX;
	int dup = cfg != CFG_PLAIN;
	(void)txn;
	(void)dbi;
	if (!n) {
		EXPECT_RC(mdb_cursor_get_rank(cur, 0, &k, &d, 0), MDB_NOTFOUND);
		return;
	}
	unsigned mode = rnd(5);	/* 0,1 ascending, 2 descending, 3 random, 4 in one key's values */
	uint64_t stride = 1 + rnd64(n / (2 + rnd(12)) + 1);
	uint64_t r = mode == 2 ? n - 1 - rnd64(n < 8 ? n : 8) : rnd64(n < 16 ? n : n / 4 + 1);
	if (mode == 4) {
		/* the key with the most values among a few picks (a sub-tree, mostly) */
		size_t f = 0, e = 0;
		for (int i = 0; i < 6; i++) {
			size_t f2, e2;
			key_span((size_t)rnd64(n), &f2, &e2);
			if (e2 - f2 > e - f) {
				f = f2;
				e = e2;
			}
		}
		r = f + rnd64((e - f) / 4 + 1);
		stride = 1 + rnd64((e - f) / 6 + 1);
		mode = 0;
	}
	for (int s = 0; s < len; s++) {
		if (r >= n)
			break;
		int rc = mdb_cursor_get_rank(cur, r, &k, &d, 0);
		EXPECT_RC(rc, 0);
		if (rc)
			return;
		expect_entry(r, &k, &d, "cursor_get_rank");
		pos = r;
		switch (rnd(8)) {
		case 0:
			rc = mdb_cursor_get(cur, &k, &d, MDB_GET_CURRENT);
			EXPECT_RC(rc, 0);
			if (!rc)
				expect_entry(pos, &k, &d, "GET_CURRENT after rank");
			break;
		case 1:
		case 2:
			rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT);
			if (pos + 1 < n) {
				EXPECT_RC(rc, 0);
				if (!rc)
					expect_entry(++pos, &k, &d, "NEXT after rank");
			} else {
				EXPECT_RC(rc, MDB_NOTFOUND);
				pos = SIZE_MAX;
			}
			break;
		case 3:
			rc = mdb_cursor_get(cur, &k, &d, MDB_PREV);
			if (pos > 0) {
				EXPECT_RC(rc, 0);
				if (!rc)
					expect_entry(--pos, &k, &d, "PREV after rank");
			} else {
				EXPECT_RC(rc, MDB_NOTFOUND);
				pos = SIZE_MAX;
			}
			break;
		case 4:
			if (dup) {
				size_t f, e;
				key_span(pos, &f, &e);
				mdb_size_t cnt = 0;
				EXPECT_RC(mdb_cursor_count(cur, &cnt), 0);
				EXPECT(cnt == e - f);
				rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT_DUP);
				if (pos + 1 < e) {
					EXPECT_RC(rc, 0);
					if (!rc)
						expect_entry(++pos, &k, &d, "NEXT_DUP after rank");
				} else {
					EXPECT_RC(rc, MDB_NOTFOUND);
					pos = SIZE_MAX;
				}
			}
			break;
		case 5:
			if (dup) {
				size_t f, e;
				key_span(pos, &f, &e);
				int last = rnd(2);
				rc = mdb_cursor_get(cur, &k, &d, last ? MDB_LAST_DUP : MDB_FIRST_DUP);
				EXPECT_RC(rc, 0);
				pos = last ? e - 1 : f;
				/* FIRST/LAST_DUP return only the value */
				if (!rc) {
					unsigned char vb[VMAX];
					EXPECT(val_eq_bytes(&d, vb, val_bytes(M.a[pos].v, vb)));
				}
				rc = mdb_cursor_get(cur, &k, &d, MDB_GET_CURRENT);
				EXPECT_RC(rc, 0);
				if (!rc && pos != SIZE_MAX)
					expect_entry(pos, &k, &d, "GET_CURRENT after FIRST/LAST_DUP");
			}
			break;
		default:
			break;
		}
		if (mode <= 1)
			r += stride;
		else if (mode == 2)
			r = r >= stride ? r - stride : n;
		else
			r = rnd64(n);
	}
	/* out of range: the cursor keeps its position */
	EXPECT_RC(mdb_cursor_get_rank(cur, n + rnd(3), &k, &d, 0), MDB_NOTFOUND);
	if (pos != SIZE_MAX) {
		int rc = mdb_cursor_get(cur, &k, &d, MDB_GET_CURRENT);
		EXPECT_RC(rc, 0);
		if (!rc)
			expect_entry(pos, &k, &d, "GET_CURRENT after NOTFOUND rank");
		/* and cursor_key_rank does not move it */
		unsigned char kb[KMAX];
		MDB_val kk = {key_bytes(M.a[rnd64(n)].k, kb), kb};
		uint64_t kr;
		EXPECT_RC(mdb_cursor_key_rank(cur, &kk, NULL, 0, &kr), 0);
		rc = mdb_cursor_get(cur, &k, &d, MDB_GET_CURRENT);
		EXPECT_RC(rc, 0);
		if (!rc)
			expect_entry(pos, &k, &d, "GET_CURRENT after cursor_key_rank");
	}
}

/* Walk the whole DB (from rank 0) and compare it with the model. */
static void check_scan(MDB_txn *txn, MDB_dbi dbi)
{
	MDB_cursor *c;
	MDB_val k, d;
	MUST(mdb_cursor_open(txn, dbi, &c));
	size_t i = 0;
	int rc = mdb_cursor_get_rank(c, 0, &k, &d, 0);
	while (rc == 0 && i < M.n) {
		unsigned char kb[KMAX], vb[VMAX];
		size_t kn = key_bytes(M.a[i].k, kb), vn = val_bytes(M.a[i].v, vb);
		if (!val_eq_bytes(&k, kb, kn) || !val_eq_bytes(&d, vb, vn)) {
			EXPECT(!"scan differs from model");
			fprintf(stderr, "  scan: entry %zu of %zu differs\n", i, M.n);
			break;
		}
		i++;
		rc = mdb_cursor_get(c, &k, &d, MDB_NEXT);
	}
	if (M.n == 0) {
		EXPECT_RC(rc, MDB_NOTFOUND);
	} else {
		EXPECT(i == M.n);
		EXPECT_RC(rc, MDB_NOTFOUND);
	}
	mdb_cursor_close(c);
}

static void check_txn(MDB_txn *txn, const char *where)
{
	char msg[512];
	int rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT_RC(rc, 0);
	if (rc)
		fprintf(stderr, "  mdb_txn_check (%s): %s\n", where, msg);
}

static unsigned n_checks;

static void check_all(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *cur, int full, const char *where)
{
	n_checks++;
	check_get_rank(txn, dbi, full ? 8 : 3);
	check_ranges(txn, dbi, full ? 5 : 2, n_checks % 37 == 0);
	check_key_ranks(txn, dbi, n_checks % 2 ? cur : NULL, full ? 4 : 1);
	if (cur)
		check_cursor_ranks(txn, dbi, cur, full ? 10 : 4);
	if (full && n_checks % 5 == 0)
		check_scan(txn, dbi);
	if (full && n_checks % 11 == 0)
		check_txn(txn, where);
	context(where);
}

/* ---- operations ----------------------------------------------------------------------------------- */

static MDB_env *env;
static MDB_dbi dbi;
static int target;	/* pairs to grow to */
static int phase;	/* 0 grow, 1 churn, 2 shrink */

static uint32_t hot_key(void)
{
	/* a handful of keys that collect many duplicates */
	return 1000u + 7919u * rnd(3);
}

static uint32_t any_key(void)
{
	uint32_t top = M.n ? M.a[M.n - 1].k : 0;
	return (uint32_t)rnd64((uint64_t)top + 60 > 40000 ? (uint64_t)top + 60 : 40000);
}

static int want_insert(void)
{
	if (phase == 0)
		return M.n < (size_t)target ? rnd(10) < 8 : rnd(2);
	if (phase == 2)
		return rnd(10) < 2;
	return rnd(2);
}

static int do_put(MDB_txn *txn, uint32_t k, uint32_t v, unsigned flags)
{
	unsigned char kb[KMAX], vb[VMAX];
	MDB_val kv = {key_bytes(k, kb), kb}, dv = {val_bytes(v, vb), vb};
	return mdb_put(txn, dbi, &kv, &dv, flags);
}

/* One random write through txn (cur: a cursor of txn). */
static void random_op(MDB_txn *txn, MDB_cursor *cur)
{
	int dup = cfg != CFG_PLAIN;
	unsigned char kb[KMAX], vb[VMAX];
	unsigned t = rnd(20);
	g_op++;
	if (want_insert()) {
		if (t < 2) {
			/* APPEND a new key above the last */
			uint32_t k = (M.n ? M.a[M.n - 1].k : 0) + 1 + rnd(5);
			uint32_t v = next_vid++;
			EXPECT_RC(do_put(txn, k, v, MDB_APPEND), 0);
			m_insert(M.n, (pair){k, v});
		} else if (t < 4 && dup && M.n) {
			/* APPENDDUP a value above the key's last one */
			size_t f, e;
			key_span((size_t)rnd64(M.n), &f, &e);
			pair p = {M.a[e - 1].k, M.a[e - 1].v + 1 + rnd(4)};
			EXPECT_RC(do_put(txn, p.k, p.v, MDB_APPENDDUP), 0);
			m_insert(e, p);
		} else if (t < 5 && M.n) {
			/* NOOVERWRITE / NODUPDATA refusals change nothing */
			pair p = M.a[rnd64(M.n)];
			if (dup)
				EXPECT_RC(do_put(txn, p.k, p.v, MDB_NODUPDATA), MDB_KEYEXIST);
			else
				EXPECT_RC(do_put(txn, p.k, next_vid++, MDB_NOOVERWRITE), MDB_KEYEXIST);
		} else if (dup && t < 14) {
			/* many values for a few keys: sub-trees */
			pair p = {hot_key(), (uint32_t)rnd(1u << 20)};
			int had = m_has(p);
			EXPECT_RC(do_put(txn, p.k, p.v, 0), 0);
			if (!had)
				m_insert(m_lower(p), p);
		} else if (dup && t < 16 && M.n) {
			/* another value for an existing key */
			pair p = {M.a[rnd64(M.n)].k, (uint32_t)rnd(1u << 20)};
			int had = m_has(p);
			EXPECT_RC(do_put(txn, p.k, p.v, 0), 0);
			if (!had)
				m_insert(m_lower(p), p);
		} else {
			uint32_t k = any_key(), v = dup ? (uint32_t)rnd(1u << 20) : next_vid++;
			EXPECT_RC(do_put(txn, k, v, 0), 0);
			if (dup) {
				if (!m_has((pair){k, v}))
					m_insert(m_lower((pair){k, v}), (pair){k, v});
			} else {
				size_t i = m_key_first(k);
				if (i < M.n && M.a[i].k == k)
					M.a[i].v = v;
				else
					m_insert(i, (pair){k, v});
			}
		}
		return;
	}
	if (!M.n) {
		uint32_t k = any_key();
		MDB_val kv = {key_bytes(k, kb), kb};
		EXPECT_RC(mdb_del(txn, dbi, &kv, NULL), MDB_NOTFOUND);
		return;
	}
	size_t idx = (size_t)rnd64(M.n);
	pair p = M.a[idx];
	size_t f, e;
	key_span(idx, &f, &e);
	MDB_val kv = {key_bytes(p.k, kb), kb}, dv = {val_bytes(p.v, vb), vb};
	if (t < 6 && (e - f < 40 || rnd(80) == 0)) {
		/* whole key (rarely one with many values: those make the sub-trees) */
		EXPECT_RC(mdb_del(txn, dbi, &kv, NULL), 0);
		m_erase(f, e - f);
	} else if (t < 12 && dup) {
		/* one pair; sometimes a pair that is not there */
		if (rnd(6) == 0) {
			pair q = {p.k, p.v + 1};
			if (!m_has(q)) {
				MDB_val qv = {val_bytes(q.v, vb), vb};
				EXPECT_RC(mdb_del(txn, dbi, &kv, &qv), MDB_NOTFOUND);
				return;
			}
		}
		EXPECT_RC(mdb_del(txn, dbi, &kv, &dv), 0);
		m_erase(idx, 1);
	} else if (t < 14 && dup && e - f > 1) {
		/* run of one hot key's values through a cursor */
		MDB_val k2, d2;
		int rc = mdb_cursor_get_rank(cur, f + (e - f) / 3, &k2, &d2, 0);
		EXPECT_RC(rc, 0);
		size_t at = f + (e - f) / 3;
		for (unsigned j = 0; rc == 0 && j < 1 + rnd(20) && at < M.n && M.a[at].k == p.k; j++) {
			EXPECT_RC(mdb_cursor_del(cur, 0), 0);
			m_erase(at, 1);
			if (at < M.n && M.a[at].k == p.k) {
				rc = mdb_cursor_get(cur, &k2, &d2, MDB_GET_CURRENT);
				EXPECT_RC(rc, 0);
				if (rc == 0)
					expect_entry(at, &k2, &d2, "GET_CURRENT after cursor_del");
			} else {
				break;
			}
		}
	} else {
		/* cursor delete at a rank (NODUPDATA: the whole key) */
		MDB_val k2, d2;
		int rc = mdb_cursor_get_rank(cur, idx, &k2, &d2, 0);
		EXPECT_RC(rc, 0);
		if (rc)
			return;
		expect_entry(idx, &k2, &d2, "cursor_get_rank before del");
		if (dup && rnd(3) == 0 && (e - f < 40 || rnd(80) == 0)) {
			EXPECT_RC(mdb_cursor_del(cur, MDB_NODUPDATA), 0);
			m_erase(f, e - f);
		} else {
			EXPECT_RC(mdb_cursor_del(cur, 0), 0);
			m_erase(idx, 1);
		}
	}
}

static model saved[4];

/* A write txn (child of parent if given) doing nops random writes. */
static void run_txn(MDB_txn *parent, int depth, int nops)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MUST(mdb_txn_begin(env, parent, 0, &txn));
	MUST(mdb_cursor_open(txn, dbi, &cur));
	m_copy(&saved[depth], &M);
	for (int i = 0; i < nops; i++) {
		random_op(txn, cur);
		context("write");
		if (rnd(3) == 0)
			check_all(txn, dbi, cur, rnd(4) == 0, depth ? "nested txn" : "write txn");
		if (depth < 2 && rnd(40) == 0) {
			run_txn(txn, depth + 1, 1 + rnd(30));
			check_all(txn, dbi, cur, 1, "after child");
		}
	}
	check_all(txn, dbi, cur, 1, "end of txn");
	mdb_cursor_close(cur);
	if (depth && rnd(2) == 0) {
		mdb_txn_abort(txn);
		m_copy(&M, &saved[depth]);
		Udirty = 1;
	} else {
		EXPECT_RC(mdb_txn_commit(txn), 0);
	}
}

static void env_open(int fresh)
{
	MDB_txn *txn;
	if (fresh)
		tu_fresh_dir(DIR);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 256u << 20));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, DIR, MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "cnt", MDB_CREATE | cfg_flags[cfg] | g_pfx, &dbi));
	unsigned fl = 0;
	MUST(mdb_dbi_flags(txn, dbi, &fl));
	EXPECT((fl & (cfg_flags[cfg] | g_pfx)) == (cfg_flags[cfg] | g_pfx));
	MUST(mdb_txn_commit(txn));
}

static void read_check(const char *where)
{
	MDB_txn *rt;
	MDB_cursor *c;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
	MUST(mdb_cursor_open(rt, dbi, &c));
	check_all(rt, dbi, c, 1, where);
	check_cursor_ranks(rt, dbi, c, 20);
	mdb_cursor_close(c);
	mdb_txn_abort(rt);
	context(where);
}

/* Depth of the counted DB (for the report: the runs must reach >= 3). */
static unsigned db_depth(void)
{
	MDB_txn *rt;
	MDB_stat st;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
	MUST(mdb_stat(rt, dbi, &st));
	mdb_txn_abort(rt);
	return st.ms_depth;
}

/* Most values any key has in the model. */
static size_t most_dups(void)
{
	size_t best = 0;
	u_rebuild();
	for (size_t i = 0; i < Un; i++)
		if (UF[i + 1] - UF[i] > best)
			best = UF[i + 1] - UF[i];
	return best;
}

/* The model's pairs put, in order, into a compressed and a plain DB of
 * the current configuration in a scratch env: the compressed one must take
 * fewer pages (leaf, branch and overflow, sub-trees included) and hold the
 * same pairs. Only meaningful for the long-prefix keys of a g_pfx run. */
static void compare_sizes(void)
{
	char dir[256];
	snprintf(dir, sizeof dir, "%s-size", DIR);
	tu_fresh_dir(dir);
	MDB_env *e;
	MDB_txn *txn;
	MDB_dbi d[2];
	MDB_stat st[2];
	unsigned char kb[KMAX], vb[VMAX];
	MUST(mdb_env_create(&e));
	MUST(mdb_env_set_mapsize(e, 256u << 20));
	MUST(mdb_env_set_maxdbs(e, 4));
	MUST(mdb_env_open(e, dir, MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(e, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "pfx", MDB_CREATE | cfg_flags[cfg] | MDB_PREFIX_COMPRESSION, &d[0]));
	MUST(mdb_dbi_open(txn, "plain", MDB_CREATE | cfg_flags[cfg], &d[1]));
	for (size_t i = 0; i < M.n; i++) {
		MDB_val k = {key_bytes(M.a[i].k, kb), kb}, v = {val_bytes(M.a[i].v, vb), vb};
		/* plain puts in order (MDB_APPEND loads are pinned separately, by
		 * TestPrefixAppendCompresses in internal/difftest) */
		for (int j = 0; j < 2; j++)
			MUST(mdb_put(txn, d[j], &k, &v, 0));
	}
	for (int j = 0; j < 2; j++)
		MUST(mdb_stat(txn, d[j], &st[j]));
	EXPECT_RC(mdb_txn_check(txn, NULL, 0), 0);
	MUST(mdb_txn_commit(txn));
	mdb_env_close(e);
	size_t pg[2];
	for (int j = 0; j < 2; j++)
		pg[j] = st[j].ms_branch_pages + st[j].ms_leaf_pages + st[j].ms_overflow_pages;
	EXPECT(st[0].ms_entries == M.n && st[1].ms_entries == M.n);
	EXPECT(pg[0] < pg[1]);
	printf("count_test: %s+prefix: %zu pairs in %zu pages compressed (%zu leaf), %zu plain (%zu leaf)\n",
		cfg_name[cfg], M.n, pg[0], (size_t)st[0].ms_leaf_pages, pg[1], (size_t)st[1].ms_leaf_pages);
	context("compare_sizes");
}

static void run_cfg(int c, int rounds)
{
	cfg = c;
	rng = g_seed * 1000003u + (uint64_t)c;
	M.n = 0;
	Udirty = 1;
	next_vid = 1;
	reported = tu_failures;
	target = c == CFG_PLAIN ? 5000 : c == CFG_DUPS ? 7000 : 9000;
	env_open(1);
	unsigned maxdepth = 0;
	size_t maxdups = 0;
	int first_shrink = rounds * 7 / 10, regrow = rounds * 9 / 10;
	for (g_round = 0; g_round < rounds; g_round++) {
		phase = g_round < rounds / 3 ? 0 : g_round < first_shrink ? 1 : g_round < regrow ? 2 : 0;
		int nops = phase == 0 && M.n < (size_t)target ? 400 + rnd(400) : 1 + rnd(60);
		run_txn(NULL, 0, nops);
		read_check("read txn after commit");
		size_t md = most_dups();
		if (getenv("COUNT_TEST_VERBOSE"))
			fprintf(stderr, "round %d phase %d: %zu pairs, %zu keys, most values %zu\n", g_round, phase, M.n, Un, md);
		if (md > maxdups)
			maxdups = md;
		unsigned dd = db_depth();
		if (dd > maxdepth)
			maxdepth = dd;
		if (g_round % 9 == 8) {
			mdb_env_close(env);
			env_open(0);
			read_check("after reopen");
		}
	}
	{
		MDB_txn *rt;
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
		check_txn(rt, "final");
		u_rebuild();
		check_scan(rt, dbi);
		mdb_txn_abort(rt);
	}
	if (g_pfx)
		compare_sizes();
	printf("count_test: %s%s: %d rounds, %zu pairs (at most %zu per key) at the end, max depth %u, "
		"max values per key %zu, %u checks so far\n", cfg_name[c], g_pfx ? "+prefix" : "", rounds, M.n, most_dups(), maxdepth,
		maxdups, n_checks);
	if (rounds >= 40)
		EXPECT(maxdepth >= 3);	/* the default run must build deep trees */
	context("end");
	mdb_env_close(env);
}

/* ---- fixed scenarios ----------------------------------------------------------------------------- */

/*
 * Key rank with data on a plain counted DB: data NULL asks for the key,
 * data non-NULL (size 0 included) for the key holding exactly that value;
 * DUPSORT keeps its meaning (the pair; size 0 is the empty duplicate).
 * Through the txn and through a cursor, which does not move.
 */
static void test_rank_with_data(void)
{
	MDB_txn *txn;
	MDB_dbi pl, du;
	MDB_cursor *c;
	static char big[5000], big2[5000];
	memset(big, 'q', sizeof big);
	memcpy(big2, big, sizeof big2);
	big2[sizeof big2 - 1] = 'r';
	MDB_val ka = {1, "a"}, kb = {1, "b"}, kc = {1, "c"}, kd = {1, "d"};
	MDB_val empty = {0, NULL}, empty2 = {0, "x"}, x = {1, "x"}, y = {1, "y"}, x0 = {2, "x\0"};
	MDB_val vbig = {sizeof big, big}, vbig2 = {sizeof big2, big2}, vshort = {sizeof big - 1, big};
	tu_fresh_dir(DIR);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, DIR, MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "pl", MDB_CREATE | MDB_COUNTED, &pl));
	MUST(mdb_dbi_open(txn, "du", MDB_CREATE | MDB_COUNTED | MDB_DUPSORT, &du));
	/* pl: a = "" (empty), b = "x", c = 5000 bytes (an overflow value) */
	MUST(mdb_put(txn, pl, &ka, &empty, 0));
	MUST(mdb_put(txn, pl, &kb, &x, 0));
	MUST(mdb_put(txn, pl, &kc, &vbig, 0));
	/* du: a = {"", "x", "y"}, b = {"x"} */
	MUST(mdb_put(txn, du, &ka, &x, 0));
	MUST(mdb_put(txn, du, &ka, &empty, 0));
	MUST(mdb_put(txn, du, &ka, &y, 0));
	MUST(mdb_put(txn, du, &kb, &x, 0));
	MUST(mdb_txn_commit(txn));
	struct {
		MDB_dbi *dbi;
		MDB_val *k, *d;
		int rc;
		uint64_t rank;
	} cases[] = {
		{&pl, &ka, NULL, 0, 0},
		{&pl, &ka, &empty, 0, 0},	/* the empty value, however pointed at */
		{&pl, &ka, &empty2, 0, 0},
		{&pl, &ka, &x, MDB_NOTFOUND, 0},
		{&pl, &kb, NULL, 0, 1},
		{&pl, &kb, &x, 0, 1},
		{&pl, &kb, &y, MDB_NOTFOUND, 0},
		{&pl, &kb, &empty, MDB_NOTFOUND, 0},
		{&pl, &kb, &x0, MDB_NOTFOUND, 0},	/* longer, same prefix */
		{&pl, &kc, &vbig, 0, 2},
		{&pl, &kc, &vbig2, MDB_NOTFOUND, 0},	/* last byte differs */
		{&pl, &kc, &vshort, MDB_NOTFOUND, 0},
		{&pl, &kd, NULL, MDB_NOTFOUND, 0},	/* missing key */
		{&pl, &kd, &x, MDB_NOTFOUND, 0},
		{&du, &ka, NULL, 0, 0},
		{&du, &ka, &empty, 0, 0},	/* DUPSORT: the empty duplicate */
		{&du, &ka, &x, 0, 1},
		{&du, &ka, &y, 0, 2},
		{&du, &ka, &x0, MDB_NOTFOUND, 0},
		{&du, &kb, NULL, 0, 3},
		{&du, &kb, &x, 0, 3},
		{&du, &kb, &empty, MDB_NOTFOUND, 0},
		{&du, &kd, &x, MDB_NOTFOUND, 0},
	};
	for (int ro = 0; ro < 2; ro++) {
		MUST(mdb_txn_begin(env, NULL, ro ? MDB_RDONLY : 0, &txn));
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			for (int via = 0; via < 2; via++) {
				uint64_t r = ~0ull;
				int rc;
				if (via) {
					/* the cursor stands on pl/du's last entry and stays */
					MDB_val gk, gd;
					MUST(mdb_cursor_open(txn, *cases[i].dbi, &c));
					MUST(mdb_cursor_get(c, &gk, &gd, MDB_LAST));
					rc = mdb_cursor_key_rank(c, cases[i].k, cases[i].d, 0, &r);
					MDB_val ck, cd;
					EXPECT_RC(mdb_cursor_get(c, &ck, &cd, MDB_GET_CURRENT), 0);
					EXPECT(ck.mv_size == gk.mv_size && !memcmp(ck.mv_data, gk.mv_data, gk.mv_size));
					mdb_cursor_close(c);
				} else {
					rc = mdb_get_key_rank(txn, *cases[i].dbi, cases[i].k, cases[i].d, &r);
				}
				EXPECT_RC(rc, cases[i].rc);
				if (rc == 0)
					EXPECT(r == cases[i].rank);
				if (rc != cases[i].rc || (rc == 0 && r != cases[i].rank))
					fprintf(stderr, "  rank case %zu (%s): rc %d rank %llu\n", i, via ? "cursor" : "txn",
						rc, (unsigned long long)r);
			}
		}
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
}

/* Uncounted DBs, argument errors. */
#define CQ_BOTH (MDB_COUNT_LOWER_INCL | MDB_COUNT_UPPER_INCL)

static void test_api_errors(void)
{
	MDB_txn *txn;
	MDB_dbi plain, cnt, pdup;
	MDB_cursor *c;
	uint64_t out;
	MDB_val k = {3, "abc"}, d = {1, "x"};
	tu_fresh_dir(DIR);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 10));
	MUST(mdb_env_open(env, DIR, MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "plain", MDB_CREATE, &plain));
	MUST(mdb_dbi_open(txn, "pdup", MDB_CREATE | MDB_DUPSORT, &pdup));
	MUST(mdb_dbi_open(txn, "cnt", MDB_CREATE | MDB_COUNTED, &cnt));
	MUST(mdb_put(txn, plain, &k, &d, 0));
	MUST(mdb_put(txn, pdup, &k, &d, 0));
	MUST(mdb_put(txn, cnt, &k, &d, 0));
	MUST(mdb_txn_commit(txn));

	for (int ro = 0; ro < 2; ro++) {
		MUST(mdb_txn_begin(env, NULL, ro ? MDB_RDONLY : 0, &txn));
		MDB_dbi un[2] = {plain, pdup};
		for (int i = 0; i < 2; i++) {
			MDB_dbi u = un[i];
			EXPECT_RC(mdb_count_all(txn, u, 0, &out), MDB_INCOMPATIBLE);
			EXPECT_RC(mdb_count_range(txn, u, &k, &k, 0, &out), MDB_INCOMPATIBLE);
			EXPECT_RC(mdb_range_count_keys(txn, u, NULL, NULL, 0, &out), MDB_INCOMPATIBLE);
			EXPECT_RC(mdb_range_count_values(txn, u, NULL, &k, 0, &out), MDB_INCOMPATIBLE);
			EXPECT_RC(mdb_get_rank(txn, u, 0, &k, &d), MDB_INCOMPATIBLE);
			EXPECT_RC(mdb_get_key_rank(txn, u, &k, NULL, &out), MDB_INCOMPATIBLE);
			MUST(mdb_cursor_open(txn, u, &c));
			EXPECT_RC(mdb_cursor_get_rank(c, 0, &k, &d, 0), MDB_INCOMPATIBLE);
			EXPECT_RC(mdb_cursor_key_rank(c, &k, NULL, 0, &out), MDB_INCOMPATIBLE);
			mdb_cursor_close(c);
		}
		/* the main DB is not counted either */
		EXPECT_RC(mdb_count_all(txn, 1, 0, &out), MDB_INCOMPATIBLE);
		/* argument errors on a counted DB */
		EXPECT_RC(mdb_count_all(NULL, cnt, 0, &out), EINVAL);
		EXPECT_RC(mdb_count_all(txn, cnt, 0, NULL), EINVAL);
		EXPECT_RC(mdb_count_all(txn, cnt, 1, &out), EINVAL);
		EXPECT_RC(mdb_count_all(txn, cnt, MDB_COUNT_LOWER_INCL, &out), EINVAL);
		EXPECT_RC(mdb_count_range(txn, cnt, NULL, NULL, 0x08, &out), EINVAL);
		EXPECT_RC(mdb_count_range(txn, cnt, NULL, NULL, 1, &out), EINVAL);
		EXPECT_RC(mdb_count_range(txn, cnt, NULL, NULL, 0, NULL), EINVAL);
		EXPECT_RC(mdb_range_count_keys(txn, cnt, NULL, NULL, 0x10, &out), EINVAL);
		EXPECT_RC(mdb_range_count_values(txn, cnt, NULL, NULL, 0x100, &out), EINVAL);
		EXPECT_RC(mdb_get_key_rank(txn, cnt, NULL, NULL, &out), EINVAL);
		EXPECT_RC(mdb_get_key_rank(txn, cnt, &k, NULL, NULL), EINVAL);
		EXPECT_RC(mdb_count_all(txn, 77, 0, &out), EINVAL);
		EXPECT_RC(mdb_get_rank(txn, 77, 0, &k, &d), EINVAL);
		out = 9;
		EXPECT_RC(mdb_count_all(txn, cnt, 0, &out), 0);
		EXPECT(out == 1);
		EXPECT_RC(mdb_count_range(txn, cnt, NULL, NULL, MDB_COUNT_LOWER_INCL | MDB_COUNT_UPPER_INCL, &out), 0);
		EXPECT(out == 1);
		EXPECT_RC(mdb_count_range(txn, cnt, &k, &k, MDB_COUNT_LOWER_INCL | MDB_COUNT_UPPER_INCL, &out), 0);
		EXPECT(out == 1);
		EXPECT_RC(mdb_count_range(txn, cnt, &k, &k, MDB_COUNT_LOWER_INCL, &out), 0);
		EXPECT(out == 0);
		MDB_val e = {0, NULL};
		EXPECT_RC(mdb_count_range(txn, cnt, &e, NULL, 0, &out), 0);	/* empty bound: below all */
		EXPECT(out == 1);
		MUST(mdb_cursor_open(txn, cnt, &c));
		EXPECT_RC(mdb_cursor_get_rank(NULL, 0, &k, &d, 0), EINVAL);
		EXPECT_RC(mdb_cursor_get_rank(c, 0, &k, &d, 1), EINVAL);
		EXPECT_RC(mdb_cursor_key_rank(c, &k, NULL, 1, &out), EINVAL);
		EXPECT_RC(mdb_cursor_key_rank(c, NULL, NULL, 0, &out), EINVAL);
		EXPECT_RC(mdb_cursor_key_rank(c, &k, NULL, 0, NULL), EINVAL);
		EXPECT_RC(mdb_cursor_key_rank(NULL, &k, NULL, 0, &out), EINVAL);
		MDB_val gk, gd;
		EXPECT_RC(mdb_cursor_get_rank(c, 1, &gk, &gd, 0), MDB_NOTFOUND);
		EXPECT_RC(mdb_cursor_get_rank(c, 0, &gk, &gd, 0), 0);
		EXPECT(gk.mv_size == 3 && memcmp(gk.mv_data, "abc", 3) == 0);
		EXPECT(gd.mv_size == 1 && memcmp(gd.mv_data, "x", 1) == 0);
		EXPECT_RC(mdb_cursor_key_rank(c, &k, &d, 0, &out), 0);
		EXPECT(out == 0);
		mdb_cursor_close(c);
		mdb_txn_abort(txn);
	}

	/* empty counted DBs (never filled; filled and emptied again) */
	for (int emptied = 0; emptied < 2; emptied++) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MDB_dbi e1, e2;
		MUST(mdb_dbi_open(txn, emptied ? "e1b" : "e1", MDB_CREATE | MDB_COUNTED, &e1));
		MUST(mdb_dbi_open(txn, emptied ? "e2b" : "e2", MDB_CREATE | MDB_COUNTED | MDB_DUPSORT, &e2));
		if (emptied) {
			MUST(mdb_put(txn, e1, &k, &d, 0));
			MUST(mdb_put(txn, e2, &k, &d, 0));
			MUST(mdb_txn_commit(txn));
			MUST(mdb_txn_begin(env, NULL, 0, &txn));
			MUST(mdb_del(txn, e1, &k, NULL));
			MUST(mdb_del(txn, e2, &k, NULL));
		}
		MDB_dbi es[2] = {e1, e2};
		for (int i = 0; i < 2; i++) {
			MDB_val gk, gd;
			out = 5;
			EXPECT_RC(mdb_count_all(txn, es[i], 0, &out), 0);
			EXPECT(out == 0);
			out = 5;
			EXPECT_RC(mdb_count_range(txn, es[i], &k, &k, CQ_BOTH, &out), 0);
			EXPECT(out == 0);
			out = 5;
			EXPECT_RC(mdb_range_count_keys(txn, es[i], NULL, NULL, 0, &out), 0);
			EXPECT(out == 0);
			out = 5;
			EXPECT_RC(mdb_range_count_values(txn, es[i], NULL, &k, CQ_BOTH, &out), 0);
			EXPECT(out == 0);
			EXPECT_RC(mdb_get_rank(txn, es[i], 0, &gk, &gd), MDB_NOTFOUND);
			EXPECT_RC(mdb_get_key_rank(txn, es[i], &k, NULL, &out), MDB_NOTFOUND);
			EXPECT_RC(mdb_get_key_rank(txn, es[i], &k, &d, &out), MDB_NOTFOUND);
			MUST(mdb_cursor_open(txn, es[i], &c));
			EXPECT_RC(mdb_cursor_get_rank(c, 0, &gk, &gd, 0), MDB_NOTFOUND);
			EXPECT_RC(mdb_cursor_key_rank(c, &k, NULL, 0, &out), MDB_NOTFOUND);
			mdb_cursor_close(c);
		}
		MUST(mdb_txn_commit(txn));
	}

	/* a finished txn */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	mdb_txn_reset(txn);
	EXPECT_RC(mdb_count_all(txn, cnt, 0, &out), MDB_BAD_TXN);
	EXPECT_RC(mdb_get_rank(txn, cnt, 0, &k, &d), MDB_BAD_TXN);
	mdb_txn_abort(txn);

	/* an existing uncounted DB opened with MDB_COUNTED keeps its flags */
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MDB_dbi again;
	MUST(mdb_dbi_open(txn, "plain", MDB_COUNTED, &again));
	EXPECT_RC(mdb_count_all(txn, again, 0, &out), MDB_INCOMPATIBLE);
	MUST(mdb_txn_commit(txn));
	mdb_env_close(env);
	context("api errors");
}

/* Overwrite the counts of every COUNTED branch page of the file: with 0
 * (garbage == 0), or (garbage) a third of them with random numbers. */
static unsigned damage_counts(const char *path, int garbage)
{
	FILE *f = fopen(path, "r+b");
	unsigned pages = 0;
	if (!f) {
		EXPECT(!"open data file");
		return 0;
	}
	unsigned char pg[4096];
	for (long pno = 2;; pno++) {
		if (fseek(f, pno * 4096L, SEEK_SET) || fread(pg, 1, 4096, f) != 4096)
			break;
		uint16_t flags, lower;
		memcpy(&flags, pg + 10, 2);
		memcpy(&lower, pg + 12, 2);
		if ((flags & 0x101) != 0x101 || lower < 16 || lower > 4096)
			continue;
		if (garbage == 2) {
			/* scribble: random bytes anywhere in the page */
			for (int j = 0; j < 6; j++)
				pg[rnd(4096)] = (unsigned char)rnd(256);
			pages++;
			if (fseek(f, pno * 4096L, SEEK_SET) || fwrite(pg, 1, 4096, f) != 4096)
				break;
			continue;
		}
		for (unsigned i = 0; i < (lower - 16u) / 2; i++) {
			uint16_t off, ks;
			memcpy(&off, pg + 16 + 2 * i, 2);
			if (off + 8u > 4096)
				continue;
			memcpy(&ks, pg + off + 6, 2);
			if (off + 8u + ks + 8 > 4096)
				continue;
			if (!garbage) {
				memset(pg + off + 8 + ks, 0, 8);
			} else if (rnd(3) == 0) {
				uint64_t v = rnd(4) == 0 ? tu_next(&rng) : rnd64(1u << (4 * rnd(6)));
				unsigned second = (flags & 0x200) && off + 8u + ks + 16 <= 4096 && rnd(2);
				memcpy(pg + off + 8 + ks + 8 * second, &v, 8);	/* entries or keys */
			}
		}
		pages++;
		if (fseek(f, pno * 4096L, SEEK_SET) || fwrite(pg, 1, 4096, f) != 4096)
			break;
	}
	fclose(f);
	return pages;
}

/* Damaged counts: MDB_CORRUPTED (or, for range counts, some number), never a crash. */
static void test_corrupt_counts(void)
{
	uint64_t out;
	MDB_val k = {0, NULL}, d;
	for (int c = 0; c < NCFG; c++) {
		cfg = c;
		rng = g_seed + 99 + (uint64_t)c;
		M.n = 0;
		Udirty = 1;
		env_open(1);
		MDB_txn *txn;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		/* plain: 3000 keys; DUPSORT: 800 values of key 5 (a sub-tree), then 600 keys */
		for (uint32_t i = 0; i < 3000; i++)
			MUST(do_put(txn, c == CFG_PLAIN ? i : i < 800 ? 5 : i % 600 + 10, i + 1, 0));
		MUST(mdb_txn_commit(txn));
		unsigned depth = db_depth();
		mdb_env_close(env);
		char path[512];
		snprintf(path, sizeof path, "%s/data.mdb", DIR);
		unsigned zeroed = damage_counts(path, 0);
		EXPECT(zeroed > 0);
		EXPECT(depth >= 2);
		env_open(0);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		EXPECT_RC(mdb_get_rank(txn, dbi, 1, &k, &d), MDB_CORRUPTED);
		mdb_txn_abort(txn);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		MDB_cursor *cur;
		MUST(mdb_cursor_open(txn, dbi, &cur));
		EXPECT_RC(mdb_cursor_get_rank(cur, 2, &k, &d, 0), MDB_CORRUPTED);
		mdb_cursor_close(cur);
		mdb_txn_abort(txn);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		unsigned char kb[KMAX];
		MDB_val kv = {key_bytes(c == CFG_PLAIN ? 2000 : 300, kb), kb};
		/* each call in its own txn: a detected corruption fails the txn */
		int rc = mdb_count_range(txn, dbi, NULL, &kv, 0, &out);
		EXPECT(rc == 0 || rc == MDB_CORRUPTED);
		mdb_txn_abort(txn);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		rc = mdb_range_count_keys(txn, dbi, &kv, NULL, MDB_COUNT_LOWER_INCL, &out);
		EXPECT(rc == 0 || rc == MDB_CORRUPTED);
		mdb_txn_abort(txn);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		rc = mdb_get_key_rank(txn, dbi, &kv, NULL, &out);
		EXPECT(rc == 0 || rc == MDB_CORRUPTED);
		mdb_txn_abort(txn);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		char msg[256];
		EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), MDB_CORRUPTED);
		mdb_txn_abort(txn);
		mdb_env_close(env);
		context("corrupt counts");

		/* random garbage in the counts, then anywhere in branch pages:
		 * any answer or an error for damaged files, but no crash */
		for (int garbage = 1; garbage <= 2; garbage++) {
		EXPECT(damage_counts(path, garbage) > 0);
		env_open(0);
		for (int i = 0; i < 300; i++) {
			MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
			MUST(mdb_cursor_open(txn, dbi, &cur));
			MDB_val lo = {key_bytes(rnd(700), kb), kb};
			unsigned char kb2[KMAX];
			MDB_val hi = {key_bytes(rnd(3000), kb2), kb2};
			switch (rnd(6)) {
			case 0:
				rc = mdb_get_rank(txn, dbi, rnd(3100), &k, &d);
				break;
			case 1:
				rc = mdb_cursor_get_rank(cur, rnd(3100), &k, &d, 0);
				if (rc == 0)
					rc = mdb_cursor_get_rank(cur, rnd(3100), &k, &d, 0);
				if (rc == 0)
					rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT);
				break;
			case 2:
				rc = mdb_count_range(txn, dbi, &lo, &hi, rnd(8) & 6, &out);
				break;
			case 3:
				rc = mdb_range_count_keys(txn, dbi, rnd(2) ? &lo : NULL, &hi, rnd(8) & 6, &out);
				break;
			case 4:
				rc = mdb_get_key_rank(txn, dbi, &lo, NULL, &out);
				break;
			default: {
				unsigned char vb[VMAX];
				MDB_val dv = {val_bytes(1 + rnd(3000), vb), vb};
				rc = mdb_cursor_key_rank(cur, &lo, &dv, 0, &out);
				break;
			}
			}
			int ok = rc == 0 || rc == MDB_NOTFOUND || rc == MDB_CORRUPTED ||
				(garbage == 2 && (rc == MDB_PAGE_NOTFOUND || rc == MDB_CURSOR_FULL));
			EXPECT(ok);
			if (!ok)
				fprintf(stderr, "  damaged counts (%d): rc %d\n", garbage, rc);
			if (rc == 0 && k.mv_size) {
				/* what came back must be readable */
				volatile unsigned char sum = 0;
				for (size_t j = 0; j < k.mv_size; j++)
					sum ^= ((unsigned char *)k.mv_data)[j];
				(void)sum;
			}
			k.mv_size = 0;
			mdb_cursor_close(cur);
			mdb_txn_abort(txn);
		}
		mdb_env_close(env);
		}
		context("garbage counts");
	}
}

/* Native integer keys and values (INTEGERKEY, INTEGERDUP): the counts
 * follow the DB's comparators, not byte order. */
typedef struct { uint64_t k; uint32_t v; } ipair;

static int ipair_cmp(const void *a, const void *b)
{
	const ipair *x = a, *y = b;
	if (x->k != y->k)
		return x->k < y->k ? -1 : 1;
	return (x->v > y->v) - (x->v < y->v);
}

static void test_integer_keys(void)
{
	enum { NP = 2500 };
	static ipair P[NP];
	size_t n = 0;
	MDB_txn *txn;
	MDB_dbi idb;
	rng = g_seed + 4242;
	tu_fresh_dir(DIR);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_open(env, DIR, MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "ik", MDB_CREATE | MDB_COUNTED | MDB_INTEGERKEY | MDB_DUPSORT |
		MDB_DUPFIXED | MDB_INTEGERDUP, &idb));
	for (int i = 0; i < NP; i++) {
		/* big and small numbers, so byte order and numeric order disagree */
		ipair p = {rnd(3) ? rnd64(400) : rnd64(1ull << 40), rnd(2) ? rnd(300) : (uint32_t)tu_next(&rng)};
		MDB_val k = {8, &p.k}, v = {4, &p.v};
		EXPECT_RC(mdb_put(txn, idb, &k, &v, 0), 0);
		P[n++] = p;
	}
	qsort(P, n, sizeof *P, ipair_cmp);
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (m == 0 || ipair_cmp(&P[m - 1], &P[i]) != 0)
			P[m++] = P[i];
	n = m;
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			MUST(mdb_txn_commit(txn));
			MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		}
		uint64_t out = 0;
		EXPECT_RC(mdb_count_all(txn, idb, 0, &out), 0);
		EXPECT(out == n);
		MDB_val k, d;
		for (size_t r = 0; r < n; r += 1 + rnd(9)) {
			int rc = mdb_get_rank(txn, idb, r, &k, &d);
			EXPECT_RC(rc, 0);
			if (rc)
				continue;
			uint64_t kk = 0;
			uint32_t vv = 0;
			EXPECT(k.mv_size == 8 && d.mv_size == 4);
			memcpy(&kk, k.mv_data, 8);
			memcpy(&vv, d.mv_data, 4);
			EXPECT(kk == P[r].k && vv == P[r].v);
			MDB_val qk = {8, &P[r].k}, qv = {4, &P[r].v};
			EXPECT_RC(mdb_get_key_rank(txn, idb, &qk, &qv, &out), 0);
			EXPECT(out == r);
		}
		for (int i = 0; i < 200; i++) {
			uint64_t lo = rnd(2) ? P[rnd64(n)].k : rnd64(500), hi = rnd(2) ? P[rnd64(n)].k : rnd64(1ull << 40);
			unsigned f = 2 * rnd(4);
			uint64_t we = 0, wk = 0;
			for (size_t j = 0; j < n; j++) {
				int in = (f & MDB_COUNT_LOWER_INCL ? P[j].k >= lo : P[j].k > lo) &&
					(f & MDB_COUNT_UPPER_INCL ? P[j].k <= hi : P[j].k < hi);
				we += in;
				wk += in && (j == 0 || P[j - 1].k != P[j].k);
			}
			MDB_val l = {8, &lo}, h = {8, &hi};
			uint64_t ge = ~0ull, gk = ~0ull;
			EXPECT_RC(mdb_count_range(txn, idb, &l, &h, f, &ge), 0);
			EXPECT_RC(mdb_range_count_keys(txn, idb, &l, &h, f, &gk), 0);
			EXPECT(ge == we);
			EXPECT(gk == wk);
		}
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
	context("integer keys");
}

int main(int argc, char **argv)
{
	const char *es = getenv("COUNT_TEST_SEED");
	if (getenv("COUNT_TEST_DIR"))
		DIR = getenv("COUNT_TEST_DIR");
	g_seed = argc > 1 ? strtoull(argv[1], NULL, 0) : es ? strtoull(es, NULL, 0) : 20261129;
	int rounds = argc > 2 ? atoi(argv[2]) : 60 * tu_scale();
	printf("count_test: seed %llu, %d rounds per DB\n", (unsigned long long)g_seed, rounds);
	test_api_errors();
	test_rank_with_data();
	test_integer_keys();
	for (int c = 0; c < NCFG; c++)
		run_cfg(c, rounds);
	/* the rerun on compressed+counted DBs with long shared prefixes */
	g_pfx = MDB_PREFIX_COMPRESSION;
	for (int c = 0; c < NCFG; c++)
		run_cfg(c, rounds * 2 / 3);
	g_pfx = 0;
	test_corrupt_counts();
	for (int i = 0; i < 4; i++)
		free(saved[i].a);
	free(M.a);
	free(U);
	free(UF);
	if (tu_failures)
		fprintf(stderr, "count_test: FAILED with seed %llu\n", (unsigned long long)g_seed);
	return tu_finish("count_test");
}
