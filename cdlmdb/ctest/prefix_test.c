/* prefix_test.c - MDB_PREFIX_COMPRESSION: key shapes against a model,
 * the encoding actually saving space, views decoded into cursor storage
 * fed back to the same cursor, copies, and the checker on each result. */
#include "testutil.h"
#include "../internal.h"
#include <sys/stat.h>

#define DIR "build/prefix_env"
#define KMAX 511

typedef struct {
	unsigned char k[KMAX];
	unsigned kl;
	unsigned v;	/* value seed */
} ent;

static int ecmp_bytes(const void *x, const void *y)
{
	const ent *a = x, *b = y;
	unsigned n = a->kl < b->kl ? a->kl : b->kl;
	int r = memcmp(a->k, b->k, n);
	return r ? r : (a->kl > b->kl) - (a->kl < b->kl);
}

/* key shapes: 0 long shared prefix + counter, 1 all but the last byte
 * shared, 2 prefixes of each other, 3 nothing shared (random), 4 1-byte
 * and 511-byte keys mixed */
static unsigned make_key(int shape, uint64_t *s, unsigned id, unsigned char *out)
{
	switch (shape) {
	case 0: {
		int n = snprintf((char *)out, KMAX, "user/profile/settings/%08u/", id);
		return (unsigned)n;
	}
	case 1:
		memset(out, 'q', 300);
		out[300] = (unsigned char)(id & 0xff);
		out[299] = (unsigned char)(id >> 8);
		return 301;
	case 2: {
		unsigned len = 1 + id % KMAX;
		memset(out, 'a', len);
		out[len - 1] = (unsigned char)('a' + (id / KMAX) % 20);
		return len;
	}
	case 3: {
		unsigned len = 1 + tu_below(s, 40);
		for (unsigned i = 0; i < len; i++)
			out[i] = (unsigned char)tu_next(s);
		return len;
	}
	default:
		if (id & 1) {
			out[0] = (unsigned char)(id >> 1);
			return 1;
		}
		memset(out, 0xee, KMAX);
		memcpy(out + KMAX - 4, &id, 4);
		return KMAX;
	}
}

static void fill(unsigned char *b, unsigned len, unsigned seed)
{
	for (unsigned i = 0; i < len; i++)
		b[i] = (unsigned char)(seed * 31 + i);
}

static unsigned vlen_of(unsigned seed) { return seed % 7 == 0 ? 3000 + seed % 500 : seed % 90; }

/* A fresh environment in DIR (maxdbs 4), map of mapmb MiB. */
static MDB_env *fresh_env(unsigned mapmb)
{
	MDB_env *env;
	tu_fresh_dir(DIR);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_set_mapsize(env, (size_t)mapmb << 20));
	MUST(mdb_env_open(env, DIR, 0, 0644));
	return env;
}

static size_t mfind(ent *m, size_t n, const unsigned char *k, unsigned kl, int *exact)
{
	size_t lo = 0, hi = n;
	ent probe;
	memcpy(probe.k, k, kl);
	probe.kl = kl;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = ecmp_bytes(&m[mid], &probe);
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*exact = lo < n && !ecmp_bytes(&m[lo], &probe);
	return lo;
}

/* every pair of the DB in order, forward and backward, equals the model */
static void compare(MDB_txn *txn, MDB_dbi dbi, ent *m, size_t n)
{
	MDB_cursor *c;
	MDB_val k, v;
	unsigned char want[4000];
	MUST(mdb_cursor_open(txn, dbi, &c));
	size_t i = 0;
	int rc;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT), i++) {
		if (i >= n) {
			EXPECT(i < n);
			break;
		}
		EXPECT(k.mv_size == m[i].kl && !memcmp(k.mv_data, m[i].k, k.mv_size));
		unsigned vl = vlen_of(m[i].v);
		fill(want, vl, m[i].v);
		EXPECT(v.mv_size == vl && !memcmp(v.mv_data, want, vl));
	}
	EXPECT(rc == MDB_NOTFOUND);
	EXPECT(i == n);
	i = n;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_LAST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_PREV)) {
		i--;
		EXPECT(k.mv_size == m[i].kl && !memcmp(k.mv_data, m[i].k, k.mv_size));
	}
	EXPECT(i == 0);
	/* every key found by get and by SET_RANGE from a key just below it */
	for (i = 0; i < n; i++) {
		MDB_val q = {m[i].kl, m[i].k};
		EXPECT_RC(mdb_get(txn, dbi, &q, &v), 0);
		EXPECT(v.mv_size == vlen_of(m[i].v));
		if (m[i].kl < 2)
			continue;	/* no shorter key to start from */
		unsigned char lowk[KMAX];
		memcpy(lowk, m[i].k, m[i].kl);
		MDB_val lk = {m[i].kl - 1, lowk};
		int ex;
		size_t j = mfind(m, n, lowk, (unsigned)lk.mv_size, &ex);
		rc = mdb_cursor_get(c, &lk, &v, MDB_SET_RANGE);
		EXPECT(rc == 0 && j < n);
		if (rc == 0 && j < n)
			EXPECT(lk.mv_size == m[j].kl && !memcmp(lk.mv_data, m[j].k, lk.mv_size));
	}
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == n);
	mdb_cursor_close(c);
}

static void check(MDB_env *env)
{
	MDB_txn *t;
	char msg[256];
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
	int rc = mdb_txn_check(t, msg, sizeof msg);
	if (rc)
		fprintf(stderr, "check: %s\n", msg);
	EXPECT(rc == 0);
	mdb_txn_abort(t);
}

/* random puts/deletes of one key shape, in several txns (one aborted
 * nested child per txn), against the model */
static void run_shape(int shape, unsigned flags, uint64_t seed, unsigned steps)
{
	MDB_env *env = fresh_env(512);
	ent *m = calloc(steps + 1, sizeof *m), *saved = calloc(steps + 1, sizeof *m);
	size_t n = 0;
	uint64_t s = seed;
	unsigned char kb[KMAX], vb[4000];
	MDB_dbi dbi;
	printf("prefix_test shape=%d flags=0x%x seed=%llu steps=%u\n", shape, flags,
		(unsigned long long)seed, steps);
	for (unsigned done = 0; done < steps;) {
		MDB_txn *txn;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, "p", flags | MDB_CREATE, &dbi));
		for (unsigned j = 0; j < 300 && done < steps; j++, done++) {
			int child = j == 150;
			MDB_txn *ct = NULL;
			size_t nsaved = n;
			if (child) {
				memcpy(saved, m, n * sizeof *m);
				MUST(mdb_txn_begin(env, txn, 0, &ct));
				for (int q = 0; q < 40; q++) {
					unsigned kl = make_key(shape, &s, tu_below(&s, steps), kb);
					MDB_val k = {kl, kb}, v = {5, "child"};
					int rc = mdb_put(ct, dbi, &k, &v, 0);
					EXPECT(rc == 0);
				}
				mdb_txn_abort(ct);
				memcpy(m, saved, nsaved * sizeof *m);
				n = nsaved;
			}
			unsigned id = tu_below(&s, steps);
			unsigned kl = make_key(shape, &s, id, kb);
			int exact;
			size_t at = mfind(m, n, kb, kl, &exact);
			MDB_val k = {kl, kb};
			if (exact && tu_below(&s, 3) == 0) {
				EXPECT_RC(mdb_del(txn, dbi, &k, NULL), 0);
				memmove(m + at, m + at + 1, (n - at - 1) * sizeof *m);
				n--;
				continue;
			}
			unsigned vs = (unsigned)tu_next(&s);
			unsigned vl = vlen_of(vs);
			fill(vb, vl, vs);
			MDB_val v = {vl, vb};
			unsigned pf = tu_below(&s, 4) == 0 ? MDB_NOOVERWRITE : 0;
			int rc = mdb_put(txn, dbi, &k, &v, pf);
			if (exact && pf) {
				EXPECT(rc == MDB_KEYEXIST);
				continue;
			}
			EXPECT(rc == 0);
			if (!exact) {
				memmove(m + at + 1, m + at, (n - at) * sizeof *m);
				n++;
				memcpy(m[at].k, kb, kl);
				m[at].kl = kl;
			}
			m[at].v = vs;
		}
		compare(txn, dbi, m, n);
		MUST(mdb_txn_commit(txn));
		check(env);
	}
	/* reopen, compare, copy both ways and compare the copies */
	mdb_env_close(env);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_set_mapsize(env, (size_t)512 << 20));
	MUST(mdb_env_open(env, DIR, 0, 0644));
	check(env);
	for (int compact = 0; compact < 2; compact++) {
		tu_fresh_dir(DIR "_copy");
		MUST(mdb_env_copy2(env, DIR "_copy", compact ? MDB_CP_COMPACT : 0));
		MDB_env *e2;
		MUST(mdb_env_create(&e2));
		MUST(mdb_env_set_maxdbs(e2, 4));
		MUST(mdb_env_open(e2, DIR "_copy", MDB_RDONLY, 0644));
		MDB_txn *t;
		MUST(mdb_txn_begin(e2, NULL, MDB_RDONLY, &t));
		MUST(mdb_dbi_open(t, "p", 0, &dbi));
		compare(t, dbi, m, n);
		mdb_txn_abort(t);
		check(e2);
		mdb_env_close(e2);
	}
	mdb_env_close(env);
	free(m);
	free(saved);
}

/* Stored size: the same keys take fewer leaf pages compressed. */
static void test_saves_space(void)
{
	size_t leaves[2];
	for (int pf = 0; pf < 2; pf++) {
		tu_fresh_dir(DIR);
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi dbi;
		MUST(mdb_env_create(&env));
		MUST(mdb_env_set_mapsize(env, (size_t)256 << 20));
		MUST(mdb_env_open(env, DIR, 0, 0644));
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, NULL, pf ? MDB_PREFIX_COMPRESSION : 0, &dbi));
		for (unsigned i = 0; i < 20000; i++) {
			char key[64];
			/* 16 shared bytes and a hex counter, as DLMDB's compress_bench */
			int kl = snprintf(key, sizeof key, "pppppppppppppppp%016x", i * 7919u % 20000u);
			MDB_val k = {(size_t)kl, key}, v = {16, "0123456789abcdef"};
			MUST(mdb_put(txn, dbi, &k, &v, 0));
		}
		MDB_stat st;
		MUST(mdb_stat(txn, dbi, &st));
		leaves[pf] = st.ms_leaf_pages;
		EXPECT(st.ms_entries == 20000);
		MUST(mdb_txn_commit(txn));
		check(env);
		mdb_env_close(env);
	}
	printf("prefix_test: 20000 keys of 32 bytes: %zu leaf pages plain, %zu compressed\n", leaves[0],
		leaves[1]);
	/* 32-byte keys sharing about 30 bytes with their page's anchor: each
	 * node of 8 + 32 + 16 bytes shrinks to about 8 + 3 + 16 */
	EXPECT(leaves[1] * 3 < leaves[0] * 2);
}

/* A key handed out from cursor storage, fed back to the same cursor. */
static void test_views_fed_back(void)
{
	tu_fresh_dir(DIR);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_open(env, DIR, 0, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, MDB_PREFIX_COMPRESSION, &dbi));
	for (unsigned i = 0; i < 300; i++) {
		char key[64];
		int kl = snprintf(key, sizeof key, "shared-prefix-for-all/%05u", i);
		MDB_val k = {(size_t)kl, key}, v = {4, &i};
		MUST(mdb_put(txn, dbi, &k, &v, 0));
	}
	MUST(mdb_cursor_open(txn, dbi, &c));
	MDB_val k, v;
	unsigned seen = 0;
	for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		unsigned val;
		memcpy(&val, v.mv_data, 4);
		EXPECT(val == seen);
		char want[64];
		int wl = snprintf(want, sizeof want, "shared-prefix-for-all/%05u", seen);
		EXPECT(k.mv_size == (size_t)wl && !memcmp(k.mv_data, want, (size_t)wl));
		/* the key view (cursor storage when decoded) as the input of
		 * SET_KEY and of a CURRENT-less overwrite on the same cursor */
		MDB_val k2 = k, v2;
		EXPECT_RC(mdb_cursor_get(c, &k2, &v2, MDB_SET_KEY), 0);
		EXPECT(k2.mv_size == (size_t)wl && !memcmp(k2.mv_data, want, (size_t)wl));
		unsigned nv = val + 1000;
		MDB_val nvv = {4, &nv};
		EXPECT_RC(mdb_cursor_put(c, &k2, &nvv, 0), 0);
		EXPECT_RC(mdb_cursor_get(c, &k2, &v2, MDB_GET_CURRENT), 0);
		EXPECT(k2.mv_size == (size_t)wl && !memcmp(k2.mv_data, want, (size_t)wl));
		memcpy(&val, v2.mv_data, 4);
		EXPECT(val == seen + 1000);
		seen++;
	}
	EXPECT(seen == 300);
	mdb_cursor_close(c);
	MUST(mdb_txn_commit(txn));
	check(env);
	mdb_env_close(env);
}

/* MDB_APPEND of ascending keys, RESERVE, and MDB_CURRENT replacing values
 * of other sizes (the node is rebuilt against the page's anchor). */
static void test_append_reserve_current(void)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_env *env = fresh_env(64);
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, MDB_PREFIX_COMPRESSION | MDB_COUNTED, &dbi));
	MUST(mdb_cursor_open(txn, dbi, &c));
	for (unsigned i = 0; i < 5000; i++) {
		char key[64];
		int kl = snprintf(key, sizeof key, "append/%08u", i);
		MDB_val k = {(size_t)kl, key}, v = {i % 50, NULL};
		MUST(mdb_cursor_put(c, &k, &v, MDB_APPEND | MDB_RESERVE));
		memset(v.mv_data, (int)(i & 0xff), v.mv_size);
	}
	char key[64];
	int kl = snprintf(key, sizeof key, "append/%08u", 10u);
	MDB_val k = {(size_t)kl, key}, v = {1, "x"};
	EXPECT_RC(mdb_cursor_put(c, &k, &v, MDB_APPEND), MDB_KEYEXIST);
	unsigned i = 0;
	MDB_val ck, cv;
	for (int rc = mdb_cursor_get(c, &ck, &cv, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &ck, &cv, MDB_NEXT), i++) {
		EXPECT(cv.mv_size == i % 50);
		if (cv.mv_size)
			EXPECT(((unsigned char *)cv.mv_data)[0] == (i & 0xff));
		unsigned char big[700];
		memset(big, 0x5a, sizeof big);
		MDB_val nv = {(i * 37) % 700, big};
		EXPECT_RC(mdb_cursor_put(c, &ck, &nv, MDB_CURRENT), 0);
	}
	EXPECT(i == 5000);
	mdb_size_t cnt = 0;
	MUST(mdb_count_all(txn, dbi, 0, &cnt));
	EXPECT(cnt == 5000);
	mdb_cursor_close(c);
	MUST(mdb_txn_commit(txn));
	check(env);
	mdb_env_close(env);
}

/* A 510-byte first key becomes the root's anchor (a 512-byte record) and
 * is deleted again, so no key shares it; 66 small nodes fill the page,
 * half below and half above "c"; then a 2009-byte node "c" goes between
 * them.  No cut of the page plus that node leaves both halves fitting
 * under the old anchor (each side holds 1782 bytes of small nodes), and
 * the split found none (MDB_PAGE_FULL) before compressed trees moved such
 * values to overflow pages 258 bytes sooner (dl_db_nodemax; FORMAT.md says
 * why that always leaves a cut). */
static void test_big_anchor_split(void)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_env *env = fresh_env(64);
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, MDB_PREFIX_COMPRESSION, &dbi));
	unsigned char big[510], val[3000];
	memset(big, 'a', sizeof big);
	memset(val, 'v', sizeof val);
	MDB_val k = {sizeof big, big}, v = {16, val};
	MUST(mdb_put(txn, dbi, &k, &v, 0));
	for (unsigned i = 0; i < 66; i++) {
		char key[8];
		snprintf(key, sizeof key, "%c%02u", i < 33 ? 'b' : 'd', i % 33);
		MDB_val k2 = {3, key}, v2 = {40, val};
		EXPECT_RC(mdb_put(txn, dbi, &k2, &v2, 0), 0);
		if (i == 0)	/* the anchor stays, nothing shares it */
			EXPECT_RC(mdb_del(txn, dbi, &k, NULL), 0);
	}
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_leaf_pages == 1);	/* the case needs them on one page */
	MDB_val k3 = {1, "c"}, v3 = {2000, val};
	EXPECT_RC(mdb_put(txn, dbi, &k3, &v3, 0), 0);
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == 67);
	MDB_val g;
	EXPECT_RC(mdb_get(txn, dbi, &k3, &g), 0);
	EXPECT(g.mv_size == 2000);
	MUST(mdb_txn_commit(txn));
	check(env);
	mdb_env_close(env);
}

/* Orders other than bytes (the probe decodes each key it compares):
 * REVERSEKEY, INTEGERKEY, a custom comparator; and the duplicate orders
 * REVERSEDUP, INTEGERDUP and a custom one for compressed values. */
static int cmp_desc(const MDB_val *a, const MDB_val *b)
{
	size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
	int r = memcmp(b->mv_data, a->mv_data, n);
	return r ? r : (b->mv_size > a->mv_size) - (b->mv_size < a->mv_size);
}

static MDB_cmp_func *sort_cmp;
static int sort_vals(const void *x, const void *y) { return sort_cmp(x, y); }

static void orders_one(unsigned flags, MDB_cmp_func *custom, int dupcustom, MDB_cmp_func *model)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_env *env = fresh_env(64);
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "o", flags | MDB_PREFIX_COMPRESSION | MDB_CREATE, &dbi));
	if (custom && !dupcustom)
		MUST(mdb_set_compare(txn, dbi, custom));
	if (custom && dupcustom)
		MUST(mdb_set_dupsort(txn, dbi, custom));
	int dup = (flags & MDB_DUPSORT) != 0, ints = (flags & (dup ? MDB_INTEGERDUP : MDB_INTEGERKEY)) != 0;
	enum { N = 3000 };
	static unsigned char store[N][24];
	static MDB_val items[N];
	uint64_t s = 99 + flags;
	unsigned n = 0;
	for (unsigned i = 0; i < N; i++) {
		unsigned char *b = store[i];
		size_t len;
		if (ints) {
			uint64_t x = 0x1234000000ull + i * 7ull;
			memcpy(b, &x, 8);
			len = 8;
		} else {
			len = (size_t)snprintf((char *)b, 24, "common-head/%06u", (unsigned)(i * 7919u % 100000u));
		}
		items[n].mv_data = b;
		items[n].mv_size = len;
		n++;
	}
	/* insert in a shuffled order: keys of one DB, or values of two keys */
	for (unsigned i = n; i > 1; i--) {
		unsigned j = tu_below(&s, i);
		MDB_val t = items[i - 1];
		items[i - 1] = items[j];
		items[j] = t;
	}
	for (unsigned i = 0; i < n; i++) {
		MDB_val k = items[i], v = {4, "data"};
		if (dup) {
			k.mv_data = (i & 1) ? "key-one" : "key-two";
			k.mv_size = 7;
			v = items[i];
		}
		EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
	}
	sort_cmp = model;
	qsort(items, n, sizeof items[0], sort_vals);
	MUST(mdb_cursor_open(txn, dbi, &c));
	MDB_val k, v;
	unsigned i = 0;
	int rc;
	if (!dup) {
		for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT), i++)
			EXPECT(i < n && k.mv_size == items[i].mv_size && !memcmp(k.mv_data, items[i].mv_data, k.mv_size));
		EXPECT(i == n);
		for (i = 0; i < n; i += 3) {
			MDB_val q = items[i];
			EXPECT_RC(mdb_cursor_get(c, &q, &v, MDB_SET_KEY), 0);
			EXPECT(q.mv_size == items[i].mv_size && !memcmp(q.mv_data, items[i].mv_data, q.mv_size));
		}
	} else {
		/* each key's values in the model's order (the model list
		 * holds both keys' values, alternating by insertion) */
		for (int key = 0; key < 2; key++) {
			MDB_val kk = {7, key ? "key-one" : "key-two"};
			const MDB_val *prev = NULL;
			unsigned cnt = 0;
			for (rc = mdb_cursor_get(c, &kk, &v, MDB_SET_KEY); rc == 0;
			     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP), cnt++) {
				static unsigned char pb[64];
				static MDB_val pv;
				if (prev)
					EXPECT(model(prev, &v) < 0);
				memcpy(pb, v.mv_data, v.mv_size);
				pv.mv_data = pb;
				pv.mv_size = v.mv_size;
				prev = &pv;
			}
			EXPECT(cnt == n / 2);
		}
		for (i = 0; i < n; i += 5) {
			MDB_val q = items[i];
			MDB_val k1 = {7, "key-one"}, k2 = {7, "key-two"};
			int a = mdb_cursor_get(c, &k1, &q, MDB_GET_BOTH);
			q = items[i];
			int b = mdb_cursor_get(c, &k2, &q, MDB_GET_BOTH);
			EXPECT((a == 0) != (b == 0));
		}
	}
	mdb_cursor_close(c);
	MUST(mdb_txn_commit(txn));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	char msg[256];
	MUST(mdb_dbi_open(txn, "o", 0, &dbi));
	if (custom && !dupcustom)
		MUST(mdb_set_compare(txn, dbi, custom));
	if (custom && dupcustom)
		MUST(mdb_set_dupsort(txn, dbi, custom));
	rc = mdb_txn_check(txn, msg, sizeof msg);
	if (rc)
		fprintf(stderr, "orders 0x%x: %s\n", flags, msg);
	EXPECT(rc == 0);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static int cmp_bytes_model(const MDB_val *a, const MDB_val *b) { return -cmp_desc(a, b); }
static int cmp_rev_model(const MDB_val *a, const MDB_val *b)
{
	const unsigned char *x = (const unsigned char *)a->mv_data + a->mv_size;
	const unsigned char *y = (const unsigned char *)b->mv_data + b->mv_size;
	size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
	while (n--) {
		int d = (int)*--x - (int)*--y;
		if (d)
			return d;
	}
	return (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
}
static int cmp_u64_model(const MDB_val *a, const MDB_val *b)
{
	uint64_t x, y;
	memcpy(&x, a->mv_data, 8);
	memcpy(&y, b->mv_data, 8);
	return (x > y) - (x < y);
}

static void test_orders(void)
{
	orders_one(MDB_REVERSEKEY, NULL, 0, cmp_rev_model);
	orders_one(MDB_INTEGERKEY, NULL, 0, cmp_u64_model);
	orders_one(0, cmp_desc, 0, cmp_desc);
	orders_one(MDB_COUNTED, cmp_desc, 0, cmp_desc);
	orders_one(MDB_DUPSORT, NULL, 0, cmp_bytes_model);
	orders_one(MDB_DUPSORT | MDB_REVERSEDUP, NULL, 0, cmp_rev_model);
	orders_one(MDB_DUPSORT | MDB_INTEGERDUP | MDB_DUPFIXED, NULL, 0, cmp_u64_model);
	orders_one(MDB_DUPSORT | MDB_INTEGERDUP, NULL, 0, cmp_u64_model);
	orders_one(MDB_DUPSORT | MDB_COUNTED, cmp_desc, 1, cmp_desc);
}

/* dl_lcp (the shared-length scan of encoding, page builds and probes)
 * against a byte loop: every pair of lengths to 40, the first difference
 * planted at every position, each buffer allocated to its exact length so
 * ASan catches a read past either end. */
static void test_lcp(void)
{
	uint64_t s = 99;
	for (unsigned al = 0; al <= 40; al++) {
		for (unsigned bl = 0; bl <= 40; bl++) {
			unsigned n = al < bl ? al : bl;
			for (unsigned d = 0; d <= n; d++) {
				unsigned char *a = malloc(al ? al : 1), *b = malloc(bl ? bl : 1);
				for (unsigned i = 0; i < al; i++)
					a[i] = (unsigned char)tu_next(&s);
				for (unsigned i = 0; i < bl; i++)
					b[i] = i < al ? a[i] : (unsigned char)tu_next(&s);
				if (d < n)	/* differ at d (any bit of the byte) */
					b[d] = (unsigned char)(a[d] ^ (1u << tu_below(&s, 8)));
				unsigned want = 0;
				while (want < n && a[want] == b[want])
					want++;
				EXPECT(want == d);
				EXPECT(dl_lcp(a, al, b, bl) == want);
				EXPECT(dl_lcp(b, bl, a, al) == want);
				free(a);
				free(b);
			}
		}
	}
}

/* A read-only cursor hands back a prefix-compressed key it already holds
 * in full when asked for the same node again (steps through one key's
 * duplicates).  Random cursor ops on a DUPSORT prefix DBI in read txns,
 * each answer against the model; the txn is reset and renewed around
 * writers that rewrite every key, so a node address the cursor read last
 * holds another key afterwards. */
#define HK_KEYS 400
static unsigned hk_dups(unsigned round, unsigned k) { (void)round; return 1 + k * 7 % 6; }
static int hk_key(unsigned round, unsigned k, char *out)
{
	return snprintf(out, 64, "held/key/with/a/long/shared/prefix/%05u", k + 10000 * round);
}
static int hk_val(unsigned round, unsigned k, unsigned d, char *out)
{
	return snprintf(out, 80, "value-prefix-shared-by-all-duplicates-%u-%05u-%02u", round, k, d);
}
static void hk_write(MDB_env *env, MDB_dbi dbi, unsigned round)
{
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_drop(txn, dbi, 0));
	for (unsigned k = 0; k < HK_KEYS; k++)
		for (unsigned d = 0; d < hk_dups(round, k); d++) {
			char kb[64], vb[80];
			MDB_val kv = {(size_t)hk_key(round, k, kb), kb}, vv = {(size_t)hk_val(round, k, d, vb), vb};
			MUST(mdb_put(txn, dbi, &kv, &vv, 0));
		}
	MUST(mdb_txn_commit(txn));
}
static int hk_is(unsigned round, unsigned k, unsigned d, const MDB_val *kv, const MDB_val *vv)
{
	char kb[64], vb[80];
	int kl = hk_key(round, k, kb), vl = hk_val(round, k, d, vb);
	return kv->mv_size == (size_t)kl && !memcmp(kv->mv_data, kb, (size_t)kl) &&
		vv->mv_size == (size_t)vl && !memcmp(vv->mv_data, vb, (size_t)vl);
}
static void test_held_key(uint64_t seed)
{
	tu_fresh_dir(DIR);
	MDB_env *env;
	MDB_txn *txn, *rtx;
	MDB_dbi dbi;
	MDB_cursor *c;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_set_maxdbs(env, 2));
	MUST(mdb_env_open(env, DIR, MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "held", MDB_CREATE | MDB_DUPSORT | MDB_PREFIX_COMPRESSION, &dbi));
	MUST(mdb_txn_commit(txn));
	hk_write(env, dbi, 0);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rtx));
	MUST(mdb_cursor_open(rtx, dbi, &c));
	uint64_t s = seed;
	unsigned mismatches = 0;
	for (unsigned round = 0; round < 6; round++) {
		unsigned k = 0, d = 0;
		MDB_val kv, vv;
		EXPECT_RC(mdb_cursor_get(c, &kv, &vv, MDB_FIRST), 0);
		for (unsigned step = 0; step < 4000; step++) {
			unsigned nd = hk_dups(round, k);
			int op = (int)tu_below(&s, 8), rc;
			switch (op) {
			case 0: case 1: case 2:	/* mostly steps through duplicates */
				rc = mdb_cursor_get(c, &kv, &vv, MDB_NEXT);
				if (d + 1 < nd) d++;
				else if (k + 1 < HK_KEYS) k++, d = 0;
				else { EXPECT_RC(rc, MDB_NOTFOUND); rc = mdb_cursor_get(c, &kv, &vv, MDB_FIRST); k = d = 0; }
				break;
			case 3:
				rc = mdb_cursor_get(c, &kv, &vv, MDB_PREV);
				if (d > 0) d--;
				else if (k > 0) k--, d = hk_dups(round, k) - 1;
				else { EXPECT_RC(rc, MDB_NOTFOUND); rc = mdb_cursor_get(c, &kv, &vv, MDB_LAST);
					k = HK_KEYS - 1; d = hk_dups(round, k) - 1; }
				break;
			case 4:
				rc = mdb_cursor_get(c, &kv, &vv, MDB_GET_CURRENT);
				break;
			case 5:
			{
				int last = (int)tu_below(&s, 2);
				rc = mdb_cursor_get(c, &kv, &vv, last ? MDB_LAST_DUP : MDB_FIRST_DUP);
				d = last ? nd - 1 : 0;
				break;
			}
			case 6: {
				char kb[64];
				k = tu_below(&s, HK_KEYS);
				d = 0;
				kv.mv_size = (size_t)hk_key(round, k, kb);
				kv.mv_data = kb;
				rc = mdb_cursor_get(c, &kv, &vv, MDB_SET_KEY);
				break;
			}
			default:
				rc = mdb_cursor_get(c, &kv, &vv, MDB_NEXT_NODUP);
				if (k + 1 < HK_KEYS) k++, d = 0;
				else { EXPECT_RC(rc, MDB_NOTFOUND); rc = mdb_cursor_get(c, &kv, &vv, MDB_FIRST); k = d = 0; }
				break;
			}
			EXPECT_RC(rc, 0);
			if (!hk_is(round, k, d, &kv, &vv) && mismatches++ < 5)
				fprintf(stderr, "held key round %u step %u op %d: want key %u dup %u, got %.*s / %.*s\n",
					round, step, op, k, d, (int)kv.mv_size, (char *)kv.mv_data,
					(int)vv.mv_size, (char *)vv.mv_data);
		}
		/* the reader lets go; writers rewrite every key three times, so
		 * the page the cursor read last holds other keys of the same
		 * sizes at the same offsets (this layout reuses the first leaf's
		 * page number every third write) */
		EXPECT_RC(mdb_cursor_get(c, &kv, &vv, MDB_FIRST), 0);
		EXPECT(hk_is(round, 0, 0, &kv, &vv));
		mdb_txn_reset(rtx);
		for (int w = 0; w < 3; w++)
			hk_write(env, dbi, round + 1);
		MUST(mdb_txn_renew(rtx));
		MUST(mdb_cursor_renew(rtx, c));
	}
	EXPECT(mismatches == 0);
	mdb_cursor_close(c);
	mdb_txn_abort(rtx);
	check(env);
	mdb_env_close(env);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261202;
	test_lcp();
	unsigned steps = 1500u * (unsigned)tu_scale();
	test_saves_space();
	test_views_fed_back();
	test_append_reserve_current();
	test_big_anchor_split();
	test_orders();
	test_held_key(seed);
	const unsigned fl[] = {MDB_PREFIX_COMPRESSION, MDB_PREFIX_COMPRESSION | MDB_COUNTED};
	for (int shape = 0; shape < 5 && !tu_failures; shape++)
		for (int f = 0; f < 2 && !tu_failures; f++)
			run_shape(shape, fl[f], seed + (uint64_t)shape, steps);
	return tu_finish("prefix_test");
}
