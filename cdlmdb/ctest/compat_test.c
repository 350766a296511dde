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

int stock_version(void);
int stock_digest(const char *dir, const char *name, unsigned flags, uint64_t *hash, size_t *count,
	int *errout);
int stock_scribble(const char *dir, const char *name, unsigned flags, uint64_t seed, int txns,
	int ops);
void *stock_hold(const char *dir);
void stock_release(void *h);
int stock_try_open(const char *dir);

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
	int scale = tu_scale();

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
