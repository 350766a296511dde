/* listdup_test.c - mdb_cursor_list_dup against a model and NEXT_DUP walks:
 * inline sub-pages, sub-trees of several pages, DUPFIXED both ways,
 * prefix-compressed and counted DBs, REVERSEDUP; from the first, a middle
 * and the last duplicate, with the cursor's position checked after the
 * call; after inserts and deletes in the same txn, across promotion and
 * demotion, and in read txns. */
#include "testutil.h"
#include "../dlmdb.h"	/* what DLMDB's own programs include */

unsigned long long dlmdb_debug_demotions(void);	/* dupsort.c, tests only */

#define DIR "build/listdup_env"
#define NKEYS 24
#define MAXV 3000

typedef struct {
	unsigned char v[MAXV][40];
	unsigned len[MAXV];
	unsigned n;
} kmodel;

static kmodel model[NKEYS];
static MDB_txn *g_txn;
static MDB_dbi g_dbi;

static int mcmp(unsigned k, unsigned i, const unsigned char *v, unsigned len)
{
	MDB_val a = {model[k].len[i], model[k].v[i]}, b = {len, (void *)v};
	return mdb_dcmp(g_txn, g_dbi, &a, &b);
}

/* index of v in key k's sorted model, *found set */
static unsigned mfind(unsigned k, const unsigned char *v, unsigned len, int *found)
{
	unsigned lo = 0, hi = model[k].n;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (mcmp(k, mid, v, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < model[k].n && mcmp(k, lo, v, len) == 0;
	return lo;
}

static unsigned make_val(uint64_t *s, unsigned fixed, unsigned char *out)
{
	if (fixed) {
		uint64_t x = tu_next(s) % 100000;
		memcpy(out, &x, 8);
		return 8;
	}
	/* long shared prefixes (compression has something to share) and
	 * varied lengths */
	unsigned id = tu_below(s, 5000);
	int n = snprintf((char *)out, 40, "value/shared/prefix/%05u", id);
	unsigned extra = id % 11;
	for (unsigned i = 0; i < extra; i++)
		out[n + i] = (unsigned char)('a' + i);
	return (unsigned)n + extra;
}

static void key_of(unsigned k, char *buf, MDB_val *kv)
{
	kv->mv_size = (size_t)snprintf(buf, 16, "key%03u", k);
	kv->mv_data = buf;
}

static unsigned long long g_runs, g_runvals;	/* list_dup_fixed on DUPFIXED keys */

/* list_dup_fixed of key k: runs that join to the model's values when they
 * all have one width, else MDB_INCOMPATIBLE */
static void check_fixed(MDB_cursor *c, unsigned k)
{
	unsigned w = model[k].len[0], same = 1;
	for (unsigned i = 1; i < model[k].n; i++)
		same &= model[k].len[i] == w;
	const MDB_val *runs = NULL;
	mdb_size_t nruns = 0, cnt = 0;
	size_t width = 0;
	int rc = mdb_cursor_list_dup_fixed(c, &runs, &nruns, &width, &cnt);
	if (!same) {
		EXPECT_RC(rc, MDB_INCOMPATIBLE);
		return;
	}
	EXPECT_RC(rc, 0);
	if (rc)
		return;
	EXPECT(width == w && cnt == model[k].n && nruns >= 1 && nruns <= cnt);
	unsigned v = 0;
	for (mdb_size_t r = 0; r < nruns; r++) {
		EXPECT(runs[r].mv_size && width && runs[r].mv_size % width == 0);
		for (size_t off = 0; width && off + width <= runs[r].mv_size; off += width, v++)
			EXPECT(v < model[k].n &&
				!memcmp((const char *)runs[r].mv_data + off, model[k].v[v], width));
	}
	EXPECT(v == model[k].n);
	if (w == 8 && model[k].n > 1) {
		g_runs += nruns;
		g_runvals += cnt;
	}
}

/* list_dup of key k from a cursor standing on duplicate `at` (0 first, 1
 * middle, 2 last): the model's values, and the cursor where it was */
static void check_key(MDB_cursor *c, unsigned k, int at)
{
	char kb[16];
	MDB_val key, val, k2, v2;
	key_of(k, kb, &key);
	if (model[k].n == 0) {
		EXPECT_RC(mdb_cursor_get(c, &key, &val, MDB_SET), MDB_NOTFOUND);
		return;
	}
	unsigned want = at == 0 ? 0 : at == 1 ? model[k].n / 2 : model[k].n - 1;
	val.mv_size = model[k].len[want];
	val.mv_data = model[k].v[want];
	EXPECT_RC(mdb_cursor_get(c, &key, &val, MDB_GET_BOTH), 0);
	const MDB_val *vals = NULL;
	mdb_size_t cnt = 0;
	EXPECT_RC(mdb_cursor_list_dup(c, &vals, &cnt), 0);
	EXPECT(cnt == model[k].n);
	for (unsigned i = 0; i < cnt && i < model[k].n; i++)
		EXPECT(vals[i].mv_size == model[k].len[i] && !memcmp(vals[i].mv_data, model[k].v[i], vals[i].mv_size));
	check_fixed(c, k);
	/* the cursor is where it was: the same value, and NEXT_DUP goes on */
	EXPECT_RC(mdb_cursor_get(c, &k2, &v2, MDB_GET_CURRENT), 0);
	EXPECT(v2.mv_size == model[k].len[want] && !memcmp(v2.mv_data, model[k].v[want], v2.mv_size));
	int rc = mdb_cursor_get(c, &k2, &v2, MDB_NEXT_DUP);
	if (want + 1 < model[k].n)
		EXPECT(rc == 0 && v2.mv_size == model[k].len[want + 1] &&
			!memcmp(v2.mv_data, model[k].v[want + 1], v2.mv_size));
	else
		EXPECT(rc == MDB_NOTFOUND);
	/* and a NEXT_DUP walk from the first value gives the same list */
	EXPECT_RC(mdb_cursor_get(c, &key, &val, MDB_SET), 0);
	EXPECT_RC(mdb_cursor_list_dup(c, &vals, &cnt), 0);
	unsigned i = 0;
	for (rc = mdb_cursor_get(c, &k2, &v2, MDB_FIRST_DUP); rc == 0; rc = mdb_cursor_get(c, &k2, &v2, MDB_NEXT_DUP), i++)
		EXPECT(i < cnt && v2.mv_size == vals[i].mv_size && !memcmp(v2.mv_data, vals[i].mv_data, v2.mv_size));
	EXPECT(i == cnt);
}

static void check_all(MDB_txn *txn, MDB_dbi dbi)
{
	MDB_cursor *c;
	MUST(mdb_cursor_open(txn, dbi, &c));
	for (unsigned k = 0; k < NKEYS; k++)
		for (int at = 0; at < 3; at++)
			check_key(c, k, at);
	mdb_cursor_close(c);
}

static void run(const char *name, unsigned flags, uint64_t seed)
{
	unsigned fixed = (flags & MDB_DUPFIXED) ? 8 : 0;
	printf("listdup_test %s flags=0x%x seed=%llu\n", name, flags, (unsigned long long)seed);
	tu_fresh_dir(DIR);
	memset(model, 0, sizeof model);
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));
	MUST(mdb_env_set_mapsize(env, (size_t)256 << 20));
	MUST(mdb_env_open(env, DIR, MDB_NOSYNC, 0644));
	uint64_t s = seed;
	unsigned long long dem0 = dlmdb_debug_demotions();
	/* key k grows to about (k + 1)^2 * 5 values (1 .. 3000): single
	 * values, inline sub-pages, sub-trees of one and of many leaves */
	for (int round = 0; round < 7; round++) {
		MDB_txn *txn;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, "d", flags | MDB_DUPSORT | MDB_CREATE, &g_dbi));
		g_txn = txn;
		for (unsigned k = 0; k < NKEYS; k++) {
			unsigned target = (k + 1) * (k + 1) * 5;
			if (target > MAXV - 10)
				target = MAXV - 10;
			unsigned ops = round < 3 ? target / 3 + 1 : target / 4 + 1;
			if (round == 6)	/* drain to a tenth: sub-trees come back inline */
				ops = model[k].n - model[k].n / 10;
			for (unsigned o = 0; o < ops; o++) {
				unsigned char v[40];
				unsigned len = make_val(&s, fixed, v);
				char kb[16];
				MDB_val key, val = {len, v};
				key_of(k, kb, &key);
				int found;
				unsigned at = mfind(k, v, len, &found);
				/* later rounds delete more than they add: sub-trees shrink
				 * and demote */
				int del = round >= 3 && model[k].n && (round == 6 || tu_below(&s, 3) != 0);
				if (del) {
					at = tu_below(&s, model[k].n);
					MDB_val dv = {model[k].len[at], model[k].v[at]};
					EXPECT_RC(mdb_del(txn, g_dbi, &key, &dv), 0);
					memmove(&model[k].v[at], &model[k].v[at + 1], (model[k].n - at - 1) * sizeof model[k].v[0]);
					memmove(&model[k].len[at], &model[k].len[at + 1], (model[k].n - at - 1) * sizeof model[k].len[0]);
					model[k].n--;
					continue;
				}
				EXPECT_RC(mdb_put(txn, g_dbi, &key, &val, MDB_NODUPDATA), found ? MDB_KEYEXIST : 0);
				if (found || model[k].n >= MAXV)
					continue;
				memmove(&model[k].v[at + 1], &model[k].v[at], (model[k].n - at) * sizeof model[k].v[0]);
				memmove(&model[k].len[at + 1], &model[k].len[at], (model[k].n - at) * sizeof model[k].len[0]);
				memcpy(model[k].v[at], v, len);
				model[k].len[at] = len;
				model[k].n++;
			}
		}
		/* inside the write txn, after its inserts and deletes */
		check_all(txn, g_dbi);
		MUST(mdb_txn_commit(txn));
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		g_txn = txn;
		check_all(txn, g_dbi);
		char msg[256];
		int rc = mdb_txn_check(txn, msg, sizeof msg);
		if (rc)
			fprintf(stderr, "check: %s\n", msg);
		EXPECT(rc == 0);
		mdb_txn_abort(txn);
	}
	/* the deleting rounds brought some sub-trees back inline */
	EXPECT(dlmdb_debug_demotions() > dem0);
	/* LEAF2 pages came back as runs of many values, not one each */
	if (fixed) {
		EXPECT(g_runs > 0 && g_runs * 20 < g_runvals);
		printf("  list_dup_fixed: %llu values in %llu runs\n", g_runvals, g_runs);
		g_runs = g_runvals = 0;
	}
	printf("  demotions: %llu\n", dlmdb_debug_demotions() - dem0);
	mdb_env_close(env);
}

static void test_errors(void)
{
	tu_fresh_dir(DIR);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi plain, dup;
	MDB_cursor *c;
	const MDB_val *vals;
	mdb_size_t n;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, DIR, 0, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "plain", MDB_CREATE, &plain));
	MUST(mdb_dbi_open(txn, "dup", MDB_CREATE | MDB_DUPSORT, &dup));
	MDB_val k = {1, "k"}, v = {1, "v"};
	MUST(mdb_put(txn, plain, &k, &v, 0));
	MUST(mdb_put(txn, dup, &k, &v, 0));
	MUST(mdb_cursor_open(txn, plain, &c));
	MUST(mdb_cursor_get(c, &k, &v, MDB_FIRST));
	EXPECT_RC(mdb_cursor_list_dup(c, &vals, &n), MDB_INCOMPATIBLE);
	mdb_cursor_close(c);
	MUST(mdb_cursor_open(txn, dup, &c));
	EXPECT_RC(mdb_cursor_list_dup(c, &vals, &n), EINVAL);	/* not positioned */
	EXPECT_RC(mdb_cursor_list_dup(c, NULL, &n), EINVAL);
	MUST(mdb_cursor_get(c, &k, &v, MDB_FIRST));
	EXPECT_RC(mdb_cursor_list_dup(c, &vals, &n), 0);	/* one plain value */
	EXPECT(n == 1 && vals[0].mv_size == 1 && !memcmp(vals[0].mv_data, "v", 1));
	mdb_size_t nv = 0;
	size_t w = 0;
	EXPECT_RC(mdb_cursor_list_dup_fixed(c, &vals, &n, NULL, &nv), EINVAL);
	EXPECT_RC(mdb_cursor_list_dup_fixed(c, &vals, &n, &w, &nv), 0);
	EXPECT(n == 1 && nv == 1 && w == 1 && vals[0].mv_size == 1 && !memcmp(vals[0].mv_data, "v", 1));
	MDB_val v2 = {2, "vv"};
	MUST(mdb_put(txn, dup, &k, &v2, 0));	/* widths 1 and 2 */
	MUST(mdb_cursor_get(c, &k, &v, MDB_FIRST));
	EXPECT_RC(mdb_cursor_list_dup_fixed(c, &vals, &n, &w, &nv), MDB_INCOMPATIBLE);
	EXPECT_RC(mdb_cursor_list_dup(c, &vals, &n), 0);
	EXPECT(n == 2);
	mdb_cursor_close(c);
	MUST(mdb_cursor_open(txn, plain, &c));
	MUST(mdb_cursor_get(c, &k, &v, MDB_FIRST));
	EXPECT_RC(mdb_cursor_list_dup_fixed(c, &vals, &n, &w, &nv), MDB_INCOMPATIBLE);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 4711;
	test_errors();
	run("dupsort", 0, seed);
	run("dupfixed", MDB_DUPFIXED, seed + 1);
	run("prefix", MDB_PREFIX_COMPRESSION, seed + 2);
	run("prefix-counted", MDB_PREFIX_COMPRESSION | MDB_COUNTED, seed + 3);
	run("dupfixed-prefix-counted", MDB_DUPFIXED | MDB_PREFIX_COMPRESSION | MDB_COUNTED, seed + 4);
	run("reversedup-prefix", MDB_REVERSEDUP | MDB_PREFIX_COMPRESSION, seed + 5);
	run("counted", MDB_COUNTED, seed + 6);
	return tu_finish("listdup_test");
}
