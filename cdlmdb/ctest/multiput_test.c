/*
 * multiput_test.c - MDB_MULTIPLE puts on DUPFIXED databases.
 *
 *  1. fixed cases with known answers: a bulk load of a new key (the
 *     page-wise path), batches that stop at a refused item (NODUPDATA,
 *     APPENDDUP) with the count and data[0] the caller gets back, batches
 *     that are not ascending, a batch that grows a sub-page into a sub-tree;
 *  2. the same random program on our engine and on stock LMDB 0.9.33 (linked
 *     in, see stockside.c): random batches (ascending above the key's last
 *     value, interleaved with the stored values, descending, with repeats,
 *     across page boundaries, with NODUPDATA / APPENDDUP / NOOVERWRITE /
 *     APPEND) mixed with single puts and deletes.  Every return code, count
 *     and data[0] must agree, and after every op the whole DB and the pages
 *     GET_MULTIPLE hands out for the key; our checker passes throughout.
 *     Ours runs with MDB_COUNTED and MDB_PREFIX_COMPRESSION in some rounds.
 */
#include "testutil.h"

void *stockd_open(const char *dir, unsigned dbflags);
int stockd_recommit(void *h);
void stockd_close(void *h);
int stockd_exec(void *h, int kind, int arg, const char *k, size_t kl, const char *v, size_t vl,
	char *ok, size_t *okl, char *ov, size_t *ovl);
/* test hook in dupsort.c (not in lmdb.h) */
void dlmdb_debug_demote_enable(int on);

#define PFX(x) ourd_##x
#include "diffops.inc"

/* ---- 1. fixed cases ------------------------------------------------------------ */

static void be64(unsigned char *b, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (unsigned char)v;
}

static uint64_t rd64(const void *p)
{
	const unsigned char *b = p;
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

static int multi(MDB_cursor *c, const char *key, const unsigned char *items, size_t n,
	unsigned flags, size_t *count, MDB_val *d0)
{
	MDB_val k = {strlen(key), (void *)key};
	MDB_val m[2] = {{8, (void *)items}, {n, NULL}};
	int rc = mdb_cursor_put(c, &k, m, flags | MDB_MULTIPLE);
	*count = m[1].mv_size;
	if (d0)
		*d0 = m[0];
	return rc;
}

/* the values of key as numbers (at most cap), their number */
static size_t values(MDB_txn *t, MDB_dbi d, const char *key, uint64_t *out, size_t cap)
{
	MDB_cursor *c;
	MDB_val k = {strlen(key), (void *)key}, v;
	size_t n = 0;
	MUST(mdb_cursor_open(t, d, &c));
	for (int rc = mdb_cursor_get(c, &k, &v, MDB_SET); !rc; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP)) {
		if (n < cap)
			out[n] = rd64(v.mv_data);
		n++;
	}
	mdb_cursor_close(c);
	return n;
}

static void fixed_cases(unsigned extra)
{
	static unsigned char items[8 * 5000];
	static uint64_t got[7000];
	char msg[256];
	MDB_env *env;
	MDB_txn *t;
	MDB_dbi d;
	MDB_cursor *c;
	MDB_stat st;
	MDB_val d0;
	size_t cnt;
	tu_fresh_dir("build/multi_fixed");
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_open(env, "build/multi_fixed", MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &t));
	MUST(mdb_dbi_open(t, "f", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED | extra, &d));
	MUST(mdb_cursor_open(t, d, &c));

	/* a bulk load of a new key: every value, in order, many leaves */
	for (int i = 0; i < 5000; i++)
		be64(items + 8 * i, 10 + 2 * (uint64_t)i);
	EXPECT_RC(multi(c, "bulk", items, 5000, 0, &cnt, &d0), 0);
	EXPECT(cnt == 5000);
	EXPECT(d0.mv_data == items + 8 * 4999);
	EXPECT(values(t, d, "bulk", got, 6000) == 5000);
	int ok = 1;
	for (int i = 0; i < 5000; i++)
		ok &= got[i] == 10 + 2 * (uint64_t)i;
	EXPECT(ok);
	/* the cursor stands on the last item */
	MDB_val k, v;
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT), 0);
	EXPECT(v.mv_size == 8 && rd64(v.mv_data) == 10 + 2 * 4999);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP), MDB_NOTFOUND);
	mdb_size_t n = 0;
	EXPECT_RC(mdb_cursor_count(c, &n), 0);
	EXPECT(n == 5000);
	EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), 0);

	/* more above the last value, then odd values in between: merged */
	for (int i = 0; i < 700; i++)
		be64(items + 8 * i, 20000 + (uint64_t)i);
	EXPECT_RC(multi(c, "bulk", items, 700, 0, &cnt, NULL), 0);
	EXPECT(cnt == 700);
	for (int i = 0; i < 300; i++)
		be64(items + 8 * i, 11 + 4 * (uint64_t)i);
	EXPECT_RC(multi(c, "bulk", items, 300, 0, &cnt, NULL), 0);
	EXPECT(cnt == 300);
	EXPECT(values(t, d, "bulk", got, 6000) == 6000);
	ok = 1;
	for (int i = 1; i < 6000; i++)
		ok &= got[i - 1] < got[i];
	EXPECT(ok);
	EXPECT(got[0] == 10 && got[5999] == 20699);
	EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), 0);

	/* NODUPDATA: the batch stops at the first value already there (in the
	 * batch or stored); data[0] is left at that item */
	for (int i = 0; i < 100; i++)
		be64(items + 8 * i, 30000 + (uint64_t)i);
	be64(items + 8 * 60, 30010);
	EXPECT_RC(multi(c, "bulk", items, 100, MDB_NODUPDATA, &cnt, &d0), MDB_KEYEXIST);
	EXPECT(cnt == 60);
	EXPECT(d0.mv_data == items + 8 * 60);
	EXPECT(values(t, d, "bulk", got, 7000) == 6060);
	EXPECT(got[6059] == 30059);
	be64(items, 10);
	EXPECT_RC(multi(c, "bulk", items, 3, MDB_NODUPDATA, &cnt, NULL), MDB_KEYEXIST);
	EXPECT(cnt == 0);

	/* APPENDDUP: stops at the first item not above the last value */
	for (int i = 0; i < 50; i++)
		be64(items + 8 * i, 40000 + (uint64_t)i);
	be64(items + 8 * 30, 39999);
	EXPECT_RC(multi(c, "bulk", items, 50, MDB_APPENDDUP, &cnt, &d0), MDB_KEYEXIST);
	EXPECT(cnt == 30);
	EXPECT(d0.mv_data == items + 8 * 30);
	EXPECT(values(t, d, "bulk", got, 7000) == 6090);

	/* without flags repeats are no-ops, descending batches merge */
	for (int i = 0; i < 400; i++)
		be64(items + 8 * i, 900 - (uint64_t)(i / 2));
	EXPECT_RC(multi(c, "desc", items, 400, 0, &cnt, NULL), 0);
	EXPECT(cnt == 400);
	EXPECT(values(t, d, "desc", got, 6000) == 200);
	EXPECT(got[0] == 701 && got[199] == 900);

	/* a sub-page outgrowing itself in one batch, then a second batch */
	for (int i = 0; i < 20; i++)
		be64(items + 8 * i, 100 + (uint64_t)i);
	EXPECT_RC(multi(c, "grow", items, 20, 0, &cnt, NULL), 0);
	EXPECT(cnt == 20);
	for (int i = 0; i < 2000; i++)
		be64(items + 8 * i, 200 + (uint64_t)i);
	EXPECT_RC(multi(c, "grow", items, 2000, MDB_APPENDDUP, &cnt, NULL), 0);
	EXPECT(cnt == 2000);
	EXPECT(values(t, d, "grow", got, 6000) == 2020);
	EXPECT(got[19] == 119 && got[20] == 200 && got[2019] == 2199);

	/* NOOVERWRITE and APPEND look at the key only, for the first item */
	be64(items, 1);
	be64(items + 8, 2);
	EXPECT_RC(multi(c, "grow", items, 2, MDB_NOOVERWRITE, &cnt, &d0), MDB_KEYEXIST);
	EXPECT(cnt == 0);
	EXPECT(d0.mv_size == 8 && rd64(d0.mv_data) == 100);	/* the key's first value */
	EXPECT_RC(multi(c, "new", items, 2, MDB_NOOVERWRITE, &cnt, NULL), 0);
	EXPECT(cnt == 2);
	EXPECT_RC(multi(c, "a", items, 2, MDB_APPEND, &cnt, NULL), MDB_KEYEXIST);
	EXPECT(cnt == 0);
	EXPECT_RC(multi(c, "zz", items, 2, MDB_APPEND, &cnt, NULL), 0);
	EXPECT(cnt == 2);

	/* a wrong item size is refused with nothing stored */
	MDB_val bk = {4, "bulk"};
	MDB_val bad[2] = {{4, items}, {2, NULL}};
	EXPECT_RC(mdb_cursor_put(c, &bk, bad, MDB_MULTIPLE), MDB_BAD_VALSIZE);
	EXPECT(bad[1].mv_size == 0);

	MUST(mdb_stat(t, d, &st));
	EXPECT(st.ms_entries == 6090 + 200 + 2020 + 2 + 2);
	EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), 0);
	mdb_cursor_close(c);
	MUST(mdb_txn_commit(t));
	mdb_env_close(env);
}

/* ---- 2. against stock LMDB ------------------------------------------------------ */

struct cfg {
	const char *name;
	unsigned flags;		/* both engines */
	unsigned ours;		/* ours only */
	unsigned isz;
};

/* v as an item of size isz that sorts as v does under the DB's order */
static void encode(const struct cfg *cf, uint64_t v, unsigned char *out)
{
	if (cf->flags & MDB_INTEGERDUP) {
		if (cf->isz == 4) {
			uint32_t w = (uint32_t)v;
			memcpy(out, &w, 4);
		} else {
			memcpy(out, &v, 8);
		}
		return;
	}
	for (unsigned i = 0; i < cf->isz; i++) {
		/* REVERSEDUP compares from the last byte: least significant first */
		unsigned sh = 8 * ((cf->flags & MDB_REVERSEDUP) ? i : cf->isz - 1 - i);
		out[i] = sh < 64 ? (unsigned char)(v >> sh) : 0;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct pair {
	void *ours, *stock;
	int mismatches;
	char ok1[600], ok2[600], ov1[600], ov2[600];
	size_t okl1, okl2, ovl1, ovl2;
};

/* run one op on both; returns the (equal) rc, records a mismatch */
static int both(struct pair *p, const char *what, int kind, int arg, const char *k, size_t kl,
	const void *v, size_t vl, int cmpdata)
{
	int r1 = ourd_exec(p->ours, kind, arg, k, kl, v, vl, p->ok1, &p->okl1, p->ov1, &p->ovl1);
	int r2 = stockd_exec(p->stock, kind, arg, k, kl, v, vl, p->ok2, &p->okl2, p->ov2, &p->ovl2);
	int bad = r1 != r2;
	if (cmpdata) {
		bad |= p->okl1 != p->okl2 || p->ovl1 != p->ovl2;
		if (!bad && p->ovl1 != (size_t)-1 && cmpdata > 1)
			bad |= memcmp(p->ov1, p->ov2, p->ovl1) != 0;
	}
	tu_checks++;
	if (bad) {
		tu_failures++;
		p->mismatches++;
		fprintf(stderr, "%s (%.*s): ours rc %d n %zu/%zu, stock rc %d n %zu/%zu\n", what, (int)kl, k,
			r1, p->okl1, p->ovl1, r2, p->okl2, p->ovl2);
	}
	return r1;
}

static void random_vs_stock(const struct cfg *cf, uint64_t seed, int nops)
{
	enum { NKEYS = 8, MAXN = 2500 };
	static unsigned char batch[MAXN * 16];
	static uint64_t nums[MAXN];
	uint64_t hw[NKEYS] = {0};	/* about the largest value put under each key */
	uint64_t lim = cf->isz >= 8 ? (uint64_t)1 << 40 : ((uint64_t)1 << (8 * cf->isz)) - 1;
	char msg[256];
	struct pair p = {0};
	tu_fresh_dir("build/multi_ours");
	tu_fresh_dir("build/multi_stock");
	p.ours = ourd_open("build/multi_ours", cf->flags | cf->ours);
	p.stock = stockd_open("build/multi_stock", cf->flags);
	EXPECT(p.ours && p.stock);
	if (!p.ours || !p.stock)
		return;
	int multis = 0, refused = 0, deep = 0;
	for (int op = 0; op < nops && p.mismatches < 3; op++) {
		unsigned ki = tu_below(&seed, NKEYS);
		char key[64];
		size_t kl = (size_t)snprintf(key, sizeof key, "tenant/0042/user/%04u", ki * 37);
		unsigned r = tu_below(&seed, 100);
		if (r < 65) {
			/* an MDB_MULTIPLE put */
			size_t n = 1 + tu_below(&seed, tu_below(&seed, 5) == 0 ? MAXN : 120);
			unsigned shape = tu_below(&seed, 6);
			uint64_t base = hw[ki] + 1 + tu_below(&seed, 3);
			for (size_t i = 0; i < n; i++) {
				switch (shape) {
				case 0: /* append-like: ascending above the last value */
				case 1:
					nums[i] = base + i * (1 + (shape == 1 ? tu_below(&seed, 3) : 0));
					break;
				case 2: /* ascending, interleaved with the stored values */
					nums[i] = tu_below(&seed, (unsigned)(hw[ki] + 200));
					break;
				case 3: /* descending */
					nums[i] = base + (n - i) * 2;
					break;
				case 4: /* random with repeats */
					nums[i] = i && tu_below(&seed, 4) == 0 ? nums[tu_below(&seed, (unsigned)i)] :
						tu_below(&seed, (unsigned)(hw[ki] + 50));
					break;
				default: /* two ascending runs with a dip between */
					nums[i] = i < n / 2 ? base + i : base + (i - n / 2) * 2 + 1;
					break;
				}
				if (nums[i] > lim)
					nums[i] = lim;
			}
			if (shape == 2)
				qsort(nums, n, sizeof nums[0], cmp_u64);
			unsigned fr = tu_below(&seed, 100), flags = fr < 50 ? 0 : fr < 70 ? MDB_NODUPDATA :
				fr < 90 ? MDB_APPENDDUP : fr < 95 ? MDB_NOOVERWRITE : MDB_APPEND;
			if (!(flags & (MDB_NODUPDATA | MDB_APPENDDUP))) {
				/* step around stock bug 4 (stockdup_test.go): while the key holds
				 * one value stored as a plain node, an item equal to it ends
				 * stock's put early.  Drop exactly those items (no-ops for a
				 * correct engine): for a new key the repeats of the first item
				 * right after it, for a key with one value the leading items
				 * equal to it */
				size_t cnt = 0, drop = 0;
				int src = both(&p, "set", 0, MDB_SET, key, kl, NULL, 0, 2);
				if (src == 0)
					both(&p, "count", 6, 0, key, kl, NULL, 0, 1);
				cnt = p.okl1;
				unsigned char one[16];
				if (src == MDB_NOTFOUND) {
					while (drop + 1 < n && nums[drop + 1] == nums[0])
						drop++;
					if (drop)
						memmove(nums + 1, nums + 1 + drop, (n - 1 - drop) * sizeof nums[0]);
					n -= drop;
				} else if (src == 0 && cnt == 1) {
					size_t lead = 0;
					for (; lead < n; lead++) {
						encode(cf, nums[lead], one);
						if (memcmp(one, p.ov1, cf->isz))
							break;
					}
					if (lead == n)
						continue;
					memmove(nums, nums + lead, (n - lead) * sizeof nums[0]);
					n -= lead;
				}
			}
			for (size_t i = 0; i < n; i++) {
				encode(cf, nums[i], batch + i * cf->isz);
				if (nums[i] > hw[ki])
					hw[ki] = nums[i];
			}
			int rc = both(&p, "multiple put", 9, (int)(flags | cf->isz << 21), key, kl, batch,
				n * cf->isz, 2);
			multis++;
			refused += rc != 0;
			/* stock bug 5: its putting cursor is not usable after the put */
			both(&p, "reopen", 10, 0, NULL, 0, NULL, 0, 0);
		} else if (r < 80) {
			unsigned char one[16];
			uint64_t v = tu_below(&seed, (unsigned)(hw[ki] + 20));
			encode(cf, v > lim ? lim : v, one);
			both(&p, "put", 1, 0, key, kl, one, cf->isz, 1);
		} else if (r < 93) {
			unsigned char one[16];
			uint64_t v = tu_below(&seed, (unsigned)(hw[ki] + 20));
			encode(cf, v > lim ? lim : v, one);
			both(&p, "del pair", 5, 0, key, kl, one, cf->isz, 0);
		} else if (r < 95) {
			both(&p, "del key", 4, 0, key, kl, NULL, 0, 0);
			hw[ki] = 0;
		} else {
			int r1 = ourd_recommit(p.ours), r2 = stockd_recommit(p.stock);
			EXPECT(r1 == 0 && r2 == 0);
			continue;
		}
		both(&p, "digest", 7, 0, NULL, 0, NULL, 0, 1);
		both(&p, "pages", 11, 0, key, kl, NULL, 0, 1);
		deep += p.ovl1 > 1 && p.ovl1 != (size_t)-1;
		if (op % 25 == 0) {
			struct diffh *h = p.ours;
			EXPECT_RC(mdb_txn_check(h->txn, msg, sizeof msg), 0);
		}
	}
	struct diffh *h = p.ours;
	EXPECT_RC(mdb_txn_check(h->txn, msg, sizeof msg), 0);
	printf("  %s: %d MULTIPLE puts (%d refused), %d ops on keys of several pages\n", cf->name, multis,
		refused, deep);
	EXPECT(multis > nops / 3 && refused > 0 && deep > 0);
	ourd_close(p.ours);
	stockd_close(p.stock);
	/* the committed file passes the checker too */
	MDB_env *env;
	MDB_txn *t;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_open(env, "build/multi_ours", MDB_RDONLY, 0644));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
	EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), 0);
	mdb_txn_abort(t);
	mdb_env_close(env);
}

int main(void)
{
	/* our engine moves shrunk sub-trees back inline, stock never does: off,
	 * so that GET_MULTIPLE's pages stay comparable after deletes */
	dlmdb_debug_demote_enable(0);
	fixed_cases(0);
	fixed_cases(MDB_COUNTED | MDB_PREFIX_COMPRESSION);
	static const struct cfg cfgs[] = {
		{"DUPFIXED 8", MDB_DUPSORT | MDB_DUPFIXED, 0, 8},
		{"DUPFIXED 8 +COUNTED", MDB_DUPSORT | MDB_DUPFIXED, MDB_COUNTED, 8},
		{"DUPFIXED 8 +COUNTED+PREFIX", MDB_DUPSORT | MDB_DUPFIXED, MDB_COUNTED | MDB_PREFIX_COMPRESSION, 8},
		{"INTEGERDUP 8 +PREFIX", MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP, MDB_PREFIX_COMPRESSION, 8},
		{"INTEGERDUP 4 +COUNTED", MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP, MDB_COUNTED, 4},
		{"REVERSEDUP 5 +COUNTED+PREFIX", MDB_DUPSORT | MDB_DUPFIXED | MDB_REVERSEDUP,
			MDB_COUNTED | MDB_PREFIX_COMPRESSION, 5},
		{"DUPFIXED 3", MDB_DUPSORT | MDB_DUPFIXED, 0, 3},
	};
	int scale = tu_scale();
	for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++)
		random_vs_stock(&cfgs[i], 0x6d756c7469ull + i * 7919, 300 * scale);
	return tu_finish("multiput_test");
}
