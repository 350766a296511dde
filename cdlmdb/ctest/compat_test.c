/*
 * compat_test.c - file-format round trips between our engine and stock
 * LMDB 0.9.33 (linked into the same binary, see stockside.c).
 *
 *  1. we write (named DBs, overflow values, deletes, several commits so the
 *     free DB is used), stock LMDB reads: same items, same order, same count;
 *  2. stock LMDB writes into the same environment, we read and check it,
 *     our checker must accept the stock-written file (no leaks, counts ok);
 *  3. we write again on top of the stock-written file, stock reads again.
 */
#include "testutil.h"
#include <stdlib.h>

int stock_version(void);
int stock_digest(const char *dir, const char *name, unsigned flags, uint64_t *hash, size_t *count,
	int *errout);
int stock_scribble(const char *dir, const char *name, unsigned flags, uint64_t seed, int txns,
	int ops);
void *stock_hold(const char *dir);
void stock_release(void *h);
int stock_try_open(const char *dir);
void *stockd_open(const char *dir, unsigned dbflags);
int stockd_recommit(void *h);
void stockd_close(void *h);
int stockd_exec(void *h, int kind, int arg, const char *k, size_t kl, const char *v, size_t vl,
	char *ok, size_t *okl, char *ov, size_t *ovl);

#define PFX(x) ourd_##x
#include "diffops.inc"

static void our_digest(MDB_env *env, const char *name, uint64_t *hash, size_t *count);
static MDB_env *open_ours(const char *dir);

/* The same random cursor/put/del program on both engines: every return
 * code and every returned key/value must agree. */
static void cursor_differential(uint64_t seed, int nops, unsigned dbflags)
{
	tu_fresh_dir("build/diff_ours");
	tu_fresh_dir("build/diff_stock");
	void *a = ourd_open("build/diff_ours", dbflags), *b = stockd_open("build/diff_stock", dbflags);
	int dups = (dbflags & MDB_DUPSORT) != 0, fixed = (dbflags & MDB_DUPFIXED) != 0;
	EXPECT(a && b);
	if (!a || !b)
		return;
	static char v[20000], ok1[600], ok2[600], ov1[70000], ov2[70000];
	static const int ops[] = {MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_PREV, MDB_SET, MDB_SET_KEY,
		MDB_SET_RANGE, MDB_GET_CURRENT, MDB_NEXT_NODUP, MDB_PREV_NODUP, MDB_NEXT_DUP,
		MDB_PREV_DUP, MDB_NEXT, MDB_PREV, MDB_GET_BOTH, MDB_GET_BOTH_RANGE, MDB_FIRST_DUP,
		MDB_LAST_DUP, MDB_NEXT, MDB_PREV};
	int mismatches = 0, lost = 0, positioned = 0;
	for (int i = 0; i < nops && mismatches < 5; i++) {
		uint64_t r = tu_next(&seed);
		char k[64];
		size_t kl = (size_t)snprintf(k, sizeof k, "%03u", (unsigned)(r % (dups ? 12 : 400)));
		size_t vl = (r >> 20) % 50 == 0 ? 3000 + (r >> 30) % 9000 : (r >> 30) % 40;
		memset(v, 'a' + (int)(r % 26), vl);
		if (dups) {
			/* many distinct small values per key: sub-pages and sub-trees */
			vl = (size_t)snprintf(v, 80, "%0*u", (int)(1 + (r >> 50) % 60), (unsigned)((r >> 33) % 300));
			if (fixed)
				vl = (size_t)snprintf(v, 80, "%08u", (unsigned)((r >> 33) % 3000));
		}
		int kind, arg = 0;
		unsigned pick = (unsigned)((r >> 8) % 100);
		int multi = fixed && (r >> 58) % 8 == 0;
		if (lost) {
			/* DUPSORT: after a failed SET stock LMDB's sub-cursor is
			 * left half set up (see below): re-anchor before moving on */
			kind = 0;
			arg = MDB_SET_RANGE;
		} else if (multi) {
			static const int mops[] = {MDB_GET_MULTIPLE, MDB_NEXT_MULTIPLE, MDB_PREV_MULTIPLE};
			kind = 0;
			arg = mops[(r >> 40) % 3];
		} else if (pick < 45) {
			kind = 0;
			arg = ops[(r >> 40) % (sizeof ops / sizeof ops[0])];
		} else if (pick < 60) {
			kind = 1;
			arg = ((r >> 44) % 4 == 0) ? MDB_NOOVERWRITE : 0;
		} else if (pick < 65 && !dups) {
			/* MDB_CURRENT with the current key (with DUPSORT the value
			 * would have to sort into the same place: not generated) */
			size_t l1, l2;
			int g1 = ourd_exec(a, 0, MDB_GET_CURRENT, k, kl, v, 0, ok1, &l1, ov1, &l2);
			int g2 = stockd_exec(b, 0, MDB_GET_CURRENT, k, kl, v, 0, ok2, &l1, ov2, &l2);
			EXPECT(g1 == g2);
			if (g1 || g2)
				continue;
			kl = l1 < sizeof k ? l1 : 0;
			memcpy(k, ok2, kl);
			kind = 1;
			arg = MDB_CURRENT;
		} else if (dups && pick >= 88 && pick < 92) {
			kind = 5;
		} else if (dups && pick >= 92 && pick < 95 && positioned) {
			/* LMDB reads past the page end when unpositioned: skip that */
			kind = 6;
		} else if (pick < 75) {
			/* show what is about to be deleted (compared like any get) */
			size_t l1, l2, l3, l4;
			int g1 = ourd_exec(a, 0, MDB_GET_CURRENT, k, kl, v, 0, ok1, &l1, ov1, &l2);
			int g2 = stockd_exec(b, 0, MDB_GET_CURRENT, k, kl, v, 0, ok2, &l3, ov2, &l4);
			int eq = g1 == g2 && l1 == l3 && (l1 == (size_t)-1 || !memcmp(ok1, ok2, l1)) &&
				l2 == l4 && (l2 == (size_t)-1 || !memcmp(ov1, ov2, l2));
			EXPECT(eq);
			if (getenv("DIFF_TRACE"))
				fprintf(stderr, "  probe: %d %.*s=%.*s | %d %.*s=%.*s\n", g1, (int)(l1 == (size_t)-1 ? 0 : l1), ok1,
					(int)(l2 == (size_t)-1 || l2 > 40 ? 0 : l2), ov1, g2, (int)(l3 == (size_t)-1 ? 0 : l3), ok2,
					(int)(l4 == (size_t)-1 || l4 > 40 ? 0 : l4), ov2);
			if (!eq)
				fprintf(stderr, "op %d: before cursor_del ours %d %.*s, stock %d %.*s\n", i, g1,
					(int)(l1 == (size_t)-1 ? 0 : l1), ok1, g2, (int)(l3 == (size_t)-1 ? 0 : l3), ok2);
			kind = 2;
			arg = (dups && (r >> 45) % 6 == 0) ? MDB_NODUPDATA : 0;
		} else if (pick < 90) {
			kind = 3;
			arg = ((r >> 44) % 5 == 0) ? MDB_NOOVERWRITE : 0;
			if (dups && (r >> 47) % 4 == 0)
				arg = MDB_NODUPDATA;
			if (dups && (r >> 47) % 4 == 1)
				arg = MDB_APPENDDUP;
		} else {
			kind = 4;
		}
		size_t okl1, ovl1, okl2, ovl2;
		if (getenv("DIFF_TRACE"))
			fprintf(stderr, "  next: kind %d arg %d key %.*s vlen %zu\n", kind, arg, (int)kl, k, vl);
		int rc1 = ourd_exec(a, kind, arg, k, kl, v, vl, ok1, &okl1, ov1, &ovl1);
		int rc2 = stockd_exec(b, kind, arg, k, kl, v, vl, ok2, &okl2, ov2, &ovl2);
		if (kind == 0 && (arg == MDB_FIRST_DUP || arg == MDB_LAST_DUP))
			okl1 = okl2 = (size_t)-1; /* LMDB leaves the key alone on some nodes */
		int multiop = kind == 0 && (arg == MDB_GET_MULTIPLE || arg == MDB_NEXT_MULTIPLE ||
			arg == MDB_PREV_MULTIPLE);
		if (multiop) {
			/* page-sized chunks follow page boundaries, which differ:
			 * compare the outcome, check the chunk is whole values */
			EXPECT(rc1 != 0 || ovl1 % 8 == 0);
			EXPECT(rc2 != 0 || ovl2 % 8 == 0);
			okl1 = okl2 = ovl1 = ovl2 = (size_t)-1;
		}
		int same = rc1 == rc2 && okl1 == okl2 && ovl1 == ovl2 &&
			(okl1 == (size_t)-1 || !memcmp(ok1, ok2, okl1)) &&
			(ovl1 == (size_t)-1 || !memcmp(ov1, ov2, ovl1));
		EXPECT(same);
		/* plain DBs: our pages end where stock's do, so even the cursor
		 * state after a failed SET must match; DUPSORT: see below */
		lost = dups && kind == 0 && (arg == MDB_SET || arg == MDB_SET_KEY || arg == MDB_GET_BOTH ||
			arg == MDB_GET_BOTH_RANGE) && rc1 != 0;
		/* LMDB: a SET_RANGE past the last key on the cursor's current page
		 * may leave it one past the slot array without EOF; a following
		 * NEXT in a DUPSORT DB then reads beyond the slots */
		if (dups && kind == 0 && arg == MDB_SET_RANGE && rc1 != 0)
			lost = 1;
		/* stock LMDB 0.9.33 can leave a stale duplicate cursor after a
		 * cursor put into a DUPSORT DB (and crash on a following
		 * FIRST_DUP/LAST_DUP): re-anchor there too.  A delete through
		 * another cursor marks LMDB's sub-cursors of every cursor behind
		 * it on the same page as deleted-before, which depends on page
		 * boundaries: re-anchor after those as well.  And after deleting
		 * the last value of a key held in a one-value sub-page, LMDB's
		 * sub-cursor keeps the old key's count for the successor (a later
		 * delete then removes the wrong number of values): re-anchor after
		 * cursor deletes in DUPSORT DBs too.  Likewise LMDB does not move
		 * other cursors' sub-cursors when a put grows a sub-page. */
		if (dups && kind >= 1 && kind <= 5)
			lost = 1;
		if (multiop)
			lost = 1;
		if (kind == 0)
			positioned = rc1 == 0;
		else if (kind != 6)
			positioned = 0;
		if (getenv("DIFF_TRACE"))
			fprintf(stderr, "  %d: kind %d arg %d key %.*s val %.*s -> %d %.*s=%.*s | %d %.*s=%.*s\n", i, kind, arg,
				(int)kl, k, (int)(vl < 40 ? vl : 0), v,
				rc1, (int)(okl1 == (size_t)-1 ? 0 : okl1), ok1, (int)(ovl1 == (size_t)-1 || ovl1 > 40 ? 0 : ovl1), ov1,
				rc2, (int)(okl2 == (size_t)-1 ? 0 : okl2), ok2, (int)(ovl2 == (size_t)-1 || ovl2 > 40 ? 0 : ovl2), ov2);
		if (getenv("DIFF_DIGEST") || i % 100 == 99) {
			size_t h1, h2, z1, z2;
			int d1 = ourd_exec(a, 7, 0, k, kl, v, 0, ok1, &h1, ov1, &z1);
			int d2 = stockd_exec(b, 7, 0, k, kl, v, 0, ok2, &h2, ov2, &z2);
			EXPECT(d1 == 0 && d2 == 0 && h1 == h2);
			if (h1 != h2) {
				fprintf(stderr, "op %d: contents differ (build/dump_ours, build/dump_stock)\n", i);
				ourd_exec(a, 8, 0, "build/dump_ours", 15, v, 0, ok1, &h1, ov1, &z1);
				stockd_exec(b, 8, 0, "build/dump_stock", 16, v, 0, ok2, &h2, ov2, &z2);
				mismatches = 5;
			}
		}
		if (i % 500 == 499) {
			char msg[256];
			int crc = mdb_txn_check(((struct diffh *)a)->txn, msg, sizeof msg);
			EXPECT(crc == 0);
			if (crc)
				fprintf(stderr, "check after op %d: %s\n", i, msg);
			EXPECT_RC(ourd_recommit(a), 0);
			EXPECT_RC(stockd_recommit(b), 0);
		}
		if (!same) {
			mismatches++;
			fprintf(stderr, "op %d kind %d arg %d key %.*s: ours rc %d key %.*s, stock rc %d key %.*s\n",
				i, kind, arg, (int)kl, k, rc1, (int)(okl1 == (size_t)-1 ? 0 : okl1), ok1, rc2,
				(int)(okl2 == (size_t)-1 ? 0 : okl2), ok2);
		}
	}
	ourd_close(a);
	stockd_close(b);
	/* each engine reads the other's file: same items */
	const char *name = dups ? "dups" : NULL;
	uint64_t h_ours_by_stock = 0, h_stock_by_stock = 0, h_ours_by_ours = 0, h_stock_by_ours = 0;
	size_t n1 = 0, n2 = 0, n3 = 0, n4 = 0;
	int err;
	EXPECT_RC(stock_digest("build/diff_ours", name, 0, &h_ours_by_stock, &n1, &err), 0);
	EXPECT_RC(stock_digest("build/diff_stock", name, 0, &h_stock_by_stock, &n2, &err), 0);
	MDB_env *e = open_ours("build/diff_ours");
	our_digest(e, name, &h_ours_by_ours, &n3);
	mdb_env_close(e);
	e = open_ours("build/diff_stock");
	our_digest(e, name, &h_stock_by_ours, &n4);
	mdb_env_close(e);
	EXPECT(h_ours_by_stock == h_ours_by_ours && n1 == n3);
	EXPECT(h_stock_by_stock == h_stock_by_ours && n2 == n4);
	EXPECT(h_ours_by_ours == h_stock_by_ours && n3 == n4);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void our_digest(MDB_env *env, const char *name, uint64_t *hash, size_t *count)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_dbi_open(txn, name, 0, &dbi));
	MUST(mdb_cursor_open(txn, dbi, &c));
	uint64_t h = 1469598103934665603ull;
	size_t n = 0;
	int rc;
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		uint64_t ks = k.mv_size, vs = v.mv_size;
		h = fnv(h, &ks, 8);
		h = fnv(h, k.mv_data, k.mv_size);
		h = fnv(h, &vs, 8);
		h = fnv(h, v.mv_data, v.mv_size);
		n++;
	}
	EXPECT(rc == MDB_NOTFOUND);
	char msg[256];
	rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "check: %s\n", msg);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	*hash = h;
	*count = n;
}

static void our_scribble(MDB_env *env, const char *name, uint64_t seed, int txns, int ops)
{
	static unsigned char vb[30000];
	char kb[64];
	for (int t = 0; t < txns; t++) {
		MDB_txn *txn;
		MDB_dbi dbi;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, name, MDB_CREATE, &dbi));
		for (int i = 0; i < ops; i++) {
			uint64_t r = tu_next(&seed);
			unsigned id = (unsigned)(r % 4000);
			MDB_val k, v;
			/* odd and even key lengths, so data starts at odd offsets too */
			k.mv_size = (size_t)snprintf(kb, sizeof kb, "o%u%.*s", id, (int)(id % 23), "xxxxxxxxxxxxxxxxxxxxxxxxx");
			k.mv_data = kb;
			if ((r >> 20) % 5 == 0) {
				int rc = mdb_del(txn, dbi, &k, NULL);
				EXPECT(rc == 0 || rc == MDB_NOTFOUND);
			} else {
				v.mv_size = ((r >> 24) % 25 == 0) ? 2100 + (r >> 40) % 25000 : (r >> 32) % 301;
				for (size_t j = 0; j < v.mv_size; j++)
					vb[j] = (unsigned char)(r >> (j % 8)) ^ (unsigned char)j;
				v.mv_data = vb;
				EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
			}
		}
		EXPECT_RC(mdb_txn_commit(txn), 0);
	}
}

static MDB_env *open_ours(const char *dir)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 16));
	MUST(mdb_env_set_mapsize(env, (size_t)256 << 20));
	MUST(mdb_env_open(env, dir, 0, 0644));
	return env;
}

static void compare(const char *dir, MDB_env *env, const char *name)
{
	uint64_t h1 = 0, h2 = 0;
	size_t n1 = 0, n2 = 0;
	int err = 0;
	our_digest(env, name, &h1, &n1);
	mdb_env_close(env);
	int rc = stock_digest(dir, name, 0, &h2, &n2, &err);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "stock LMDB failed on %s/%s: %d\n", dir, name, rc);
	EXPECT(n1 == n2);
	EXPECT(h1 == h2);
}

int main(void)
{
	const char *dir = "build/compat_env";
	tu_fresh_dir(dir);
	EXPECT(stock_version() == 933);
	for (uint64_t sd = 1; sd <= (getenv("DIFF_SEEDS") ? strtoull(getenv("DIFF_SEEDS"), NULL, 0) : 4); sd++) {
		cursor_differential(sd, 4000 * tu_scale(), 0);
		cursor_differential(sd + 100, 4000 * tu_scale(), MDB_DUPSORT);
		cursor_differential(sd + 200, 4000 * tu_scale(), MDB_DUPSORT | MDB_DUPFIXED);
	}
	int scale = tu_scale();

	/* 0: big DUPFIXED and DUPSORT sub-trees written by us, read by stock */
	{
		tu_fresh_dir("build/compat_fixed");
		MDB_env *e = open_ours("build/compat_fixed");
		MDB_txn *txn;
		MDB_dbi df, ds;
		MUST(mdb_txn_begin(e, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, "fixed", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &df));
		MUST(mdb_dbi_open(txn, "sorted", MDB_CREATE | MDB_DUPSORT | MDB_REVERSEDUP, &ds));
		uint64_t s2 = 5;
		for (int i = 0; i < 6000; i++) {
			char kb[8], vb[40];
			uint64_t r = tu_next(&s2);
			MDB_val k = {(size_t)snprintf(kb, sizeof kb, "k%u", (unsigned)(r % 3)), kb};
			MDB_val v = {(size_t)snprintf(vb, sizeof vb, "%012u", (unsigned)((r >> 20) % 100000)), vb};
			EXPECT_RC(mdb_put(txn, df, &k, &v, 0), 0);
			v.mv_size = (size_t)snprintf(vb, sizeof vb, "v%u-%.*s", (unsigned)((r >> 40) % 5000), (int)(r % 17), "abcdefghijklmnopq");
			EXPECT_RC(mdb_put(txn, ds, &k, &v, 0), 0);
			if (i % 7 == 0) {
				v.mv_size = (size_t)snprintf(vb, sizeof vb, "%012u", (unsigned)((r >> 30) % 100000));
				int rc = mdb_del(txn, df, &k, &v);
				EXPECT(rc == 0 || rc == MDB_NOTFOUND);
			}
		}
		EXPECT_RC(mdb_txn_commit(txn), 0);
		const char *names[] = {"fixed", "sorted"};
		uint64_t hh[2];
		size_t nn[2];
		for (int j = 0; j < 2; j++)
			our_digest(e, names[j], &hh[j], &nn[j]);
		mdb_env_close(e);
		for (int j = 0; j < 2; j++) {
			uint64_t h2;
			size_t n2;
			int err;
			EXPECT_RC(stock_digest("build/compat_fixed", names[j], 0, &h2, &n2, &err), 0);
			EXPECT(hh[j] == h2 && nn[j] == n2 && n2 > 1000);
		}
		/* stock adds to both, we read and audit */
		EXPECT_RC(stock_scribble("build/compat_fixed", "sorted", MDB_DUPSORT | MDB_REVERSEDUP, 77, 3, 500), 0);
		e = open_ours("build/compat_fixed");
		uint64_t h1, h2;
		size_t n1, n2;
		int err;
		our_digest(e, "sorted", &h1, &n1);
		mdb_env_close(e);
		EXPECT_RC(stock_digest("build/compat_fixed", "sorted", 0, &h2, &n2, &err), 0);
		EXPECT(h1 == h2 && n1 == n2);
	}

	/* 1: ours writes, stock reads */
	MDB_env *env = open_ours(dir);
	our_scribble(env, "ours-a", 1, 12 * scale, 400);
	our_scribble(env, "ours-b", 2, 6 * scale, 300);
	compare(dir, env, "ours-a");
	env = open_ours(dir);
	compare(dir, env, "ours-b");

	/* 2: stock writes into the same env, we read and audit */
	EXPECT_RC(stock_scribble(dir, "stock-a", 0, 7, 10 * scale, 400), 0);
	EXPECT_RC(stock_scribble(dir, "ours-a", 0, 8, 5, 300), 0);
	env = open_ours(dir);
	compare(dir, env, "stock-a");
	env = open_ours(dir);
	compare(dir, env, "ours-a");

	/* 3: we write on top of the stock-written file (reusing its free pages) */
	env = open_ours(dir);
	our_scribble(env, "stock-a", 3, 8 * scale, 300);
	compare(dir, env, "stock-a");
	env = open_ours(dir);
	compare(dir, env, "ours-b");
	/* and stock again on top of that */
	EXPECT_RC(stock_scribble(dir, "stock-a", 0, 9, 4, 300), 0);
	env = open_ours(dir);
	compare(dir, env, "stock-a");

	/* 4: a live environment of one engine is refused by the other, both ways
	 * (the lock files differ in format, the first-opener lock keeps the
	 * live one from being re-initialised) */
	env = open_ours(dir);
	EXPECT_RC(stock_try_open(dir), MDB_VERSION_MISMATCH);
	mdb_env_close(env);
	void *h = stock_hold(dir);
	EXPECT(h != NULL);
	MDB_env *e2;
	MUST(mdb_env_create(&e2));
	EXPECT_RC(mdb_env_open(e2, dir, 0, 0644), MDB_VERSION_MISMATCH);
	mdb_env_close(e2);
	stock_release(h);
	/* closed again: either engine may open it */
	env = open_ours(dir);
	compare(dir, env, "stock-a");
	return tu_finish("compat_test");
}
