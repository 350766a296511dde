/*
 * cursem_test.c - regression tests for behaviour that must equal stock
 * LMDB 0.9.33 (found by the Go differential tests in internal/difftest):
 * cursor states after failed lookups, deletes through other cursors, EOF,
 * emptied databases (also across nested txns), lookups with oversized
 * keys, the free-page DB as a user handle, large handle limits and
 * damaged-meta handling lives in env_test.c.  Every expectation here was
 * checked by building this same file against stock LMDB 0.9.33 (mdb.c from
 * the lmdb-go module), where it passes unchanged.
 */
#include "testutil.h"

static MDB_env *env;

static void put(MDB_txn *t, MDB_dbi d, const char *k, const char *v)
{
	MDB_val kk = {strlen(k), (void *)k}, vv = {strlen(v), (void *)v};
	MUST(mdb_put(t, d, &kk, &vv, 0));
}

static int del(MDB_txn *t, MDB_dbi d, const char *k)
{
	MDB_val kk = {strlen(k), (void *)k};
	return mdb_del(t, d, &kk, NULL);
}

/* cursor op; on success the key must be `want` (NULL: do not check) */
static int cget(MDB_cursor *c, MDB_cursor_op op, const char *arg, const char *want)
{
	MDB_val k = {arg ? strlen(arg) : 0, (void *)arg}, v;
	int rc = mdb_cursor_get(c, &k, &v, op);
	if (!rc && want)
		EXPECT(k.mv_size == strlen(want) && !memcmp(k.mv_data, want, k.mv_size));
	return rc;
}

static MDB_txn *fresh(MDB_dbi *d)
{
	MDB_txn *t;
	MUST(mdb_txn_begin(env, NULL, 0, &t));
	MUST(mdb_dbi_open(t, NULL, 0, d));
	MUST(mdb_drop(t, *d, 0));
	return t;
}

static void test_failed_lookups(void)
{
	MDB_dbi d;
	MDB_txn *t = fresh(&d);
	MDB_cursor *c;
	MUST(mdb_cursor_open(t, d, &c));
	put(t, d, "d", "1");
	/* a failed SET leaves the cursor at the insertion point */
	EXPECT_RC(cget(c, MDB_SET, "b", NULL), MDB_NOTFOUND);
	EXPECT_RC(cget(c, MDB_GET_CURRENT, NULL, "d"), 0);
	put(t, d, "b", "2");
	EXPECT_RC(cget(c, MDB_SET_KEY, "z", NULL), MDB_NOTFOUND);
	EXPECT_RC(mdb_cursor_del(c, 0), MDB_NOTFOUND);
	EXPECT_RC(cget(c, MDB_SET_RANGE, "z", NULL), MDB_NOTFOUND);
	EXPECT_RC(cget(c, MDB_NEXT, NULL, NULL), MDB_NOTFOUND);
	EXPECT_RC(cget(c, MDB_PREV, NULL, "d"), 0);
	/* oversized keys: lookups just miss, writes are refused */
	char big[600];
	memset(big, 'z', sizeof big);
	MDB_val bk = {sizeof big, big}, v = {1, "x"};
	EXPECT_RC(mdb_get(t, d, &bk, &v), MDB_NOTFOUND);
	EXPECT_RC(mdb_del(t, d, &bk, NULL), MDB_NOTFOUND);
	EXPECT_RC(mdb_cursor_get(c, &bk, &v, MDB_SET), MDB_NOTFOUND);
	EXPECT_RC(mdb_cursor_get(c, &bk, &v, MDB_SET_RANGE), MDB_NOTFOUND);
	MDB_val sk = {sizeof big, big};
	memset(big, 'a', sizeof big);	/* below "b": SET_RANGE finds "b" */
	EXPECT_RC(mdb_cursor_get(c, &sk, &v, MDB_SET_RANGE), 0);
	EXPECT(sk.mv_size == 1 && *(char *)sk.mv_data == 'b');
	v.mv_size = 1;
	v.mv_data = "x";
	EXPECT_RC(mdb_put(t, d, &bk, &v, 0), MDB_BAD_VALSIZE);
	MDB_val ek = {0, ""};
	EXPECT_RC(mdb_get(t, d, &ek, &v), MDB_BAD_VALSIZE);
	mdb_txn_abort(t);
}

static void test_eof_and_delete(void)
{
	MDB_dbi d;
	MDB_txn *t = fresh(&d);
	MDB_cursor *c1, *c2;
	MUST(mdb_cursor_open(t, d, &c1));
	MUST(mdb_cursor_open(t, d, &c2));
	/* NEXT at the end keeps the cursor on the last item; a later insert
	 * behind it is what the next NEXT returns */
	put(t, d, "a", "1");
	EXPECT_RC(cget(c1, MDB_FIRST, NULL, "a"), 0);
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, NULL), MDB_NOTFOUND);
	put(t, d, "b", "2");
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, "b"), 0);
	/* delete the last item, NEXT fails, a second delete must not delete */
	EXPECT_RC(cget(c1, MDB_LAST, NULL, "b"), 0);
	EXPECT_RC(mdb_cursor_del(c1, 0), 0);
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, NULL), MDB_NOTFOUND);
	EXPECT_RC(mdb_cursor_del(c1, 0), MDB_NOTFOUND);
	MDB_val k = {1, "a"}, v;
	EXPECT_RC(mdb_get(t, d, &k, &v), 0);
	/* LAST marks EOF; the mark survives a delete of that item */
	MUST(mdb_drop(t, d, 0));
	put(t, d, "f", "1");
	EXPECT_RC(cget(c1, MDB_LAST, NULL, "f"), 0);
	put(t, d, "w", "2");
	EXPECT_RC(mdb_cursor_del(c1, 0), 0);
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, NULL), MDB_NOTFOUND);
	/* the EOF mark also survives a cursor put answered from the cursor's
	 * own (last) page; PREV on an unpositioned cursor gives the last item */
	MUST(mdb_drop(t, d, 0));
	put(t, d, "b", "1");
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, "b"), 0);
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, NULL), MDB_NOTFOUND);
	MDB_val pk = {1, "m"}, pv = {1, "2"};
	EXPECT_RC(mdb_cursor_put(c1, &pk, &pv, 0), 0);
	mdb_cursor_close(c2);
	MUST(mdb_cursor_open(t, d, &c2));
	EXPECT_RC(cget(c2, MDB_PREV, NULL, "m"), 0);
	put(t, d, "t", "3");
	EXPECT_RC(mdb_cursor_del(c2, 0), 0);
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, NULL), MDB_NOTFOUND);
	/* an item deleted through another cursor: the cursor keeps pointing at
	 * the successor, even when an item is inserted in between */
	MUST(mdb_drop(t, d, 0));
	put(t, d, "g", "1");
	put(t, d, "m", "2");
	EXPECT_RC(cget(c1, MDB_SET, "g", NULL), 0);
	EXPECT_RC(cget(c2, MDB_FIRST, NULL, "g"), 0);
	EXPECT_RC(mdb_cursor_del(c2, 0), 0);
	put(t, d, "j", "3");
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, "m"), 0);
	/* a failed append leaves the cursor on the last item, at EOF */
	EXPECT_RC(cget(c1, MDB_FIRST, NULL, "j"), 0);
	MDB_val ak = {1, "k"}, av = {1, "x"};
	EXPECT_RC(mdb_cursor_put(c1, &ak, &av, MDB_APPEND), MDB_KEYEXIST);
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, NULL), MDB_NOTFOUND);
	EXPECT_RC(cget(c1, MDB_PREV, NULL, "j"), 0);
	/* a delete that empties the DB unpositions every cursor on it */
	MUST(mdb_drop(t, d, 0));
	put(t, d, "x", "1");
	EXPECT_RC(cget(c1, MDB_FIRST, NULL, "x"), 0);
	EXPECT_RC(cget(c2, MDB_FIRST, NULL, "x"), 0);
	EXPECT_RC(mdb_cursor_del(c2, 0), 0);
	put(t, d, "y", "2");
	EXPECT_RC(cget(c1, MDB_GET_CURRENT, NULL, NULL), EINVAL);
	EXPECT_RC(cget(c2, MDB_GET_CURRENT, NULL, NULL), EINVAL);
	EXPECT_RC(cget(c1, MDB_NEXT, NULL, "y"), 0);
	mdb_txn_abort(t);
}

static void test_nested(void)
{
	for (int commit = 0; commit < 2; commit++) {
		MDB_dbi d;
		MDB_txn *t = fresh(&d), *ch;
		MDB_cursor *c1;
		MUST(mdb_cursor_open(t, d, &c1));
		/* the child empties the DB and refills it */
		put(t, d, "x", "1");
		EXPECT_RC(cget(c1, MDB_FIRST, NULL, "x"), 0);
		MUST(mdb_txn_begin(env, t, 0, &ch));
		EXPECT_RC(del(ch, d, "x"), 0);
		put(ch, d, "y", "2");
		if (commit) {
			MUST(mdb_txn_commit(ch));
			EXPECT_RC(cget(c1, MDB_GET_CURRENT, NULL, NULL), EINVAL);
		} else {
			mdb_txn_abort(ch);
			EXPECT_RC(cget(c1, MDB_GET_CURRENT, NULL, "x"), 0);
		}
		/* the child deletes the parent cursor's item and inserts before
		 * its successor */
		MUST(mdb_drop(t, d, 0));
		put(t, d, "g", "1");
		put(t, d, "m", "2");
		EXPECT_RC(cget(c1, MDB_SET, "g", NULL), 0);
		MUST(mdb_txn_begin(env, t, 0, &ch));
		EXPECT_RC(del(ch, d, "g"), 0);
		put(ch, d, "j", "3");
		if (commit) {
			MUST(mdb_txn_commit(ch));
			EXPECT_RC(cget(c1, MDB_NEXT, NULL, "m"), 0);
		} else {
			mdb_txn_abort(ch);
			EXPECT_RC(cget(c1, MDB_GET_CURRENT, NULL, "g"), 0);
		}
		/* closing a parent cursor while a child runs is safe */
		MDB_cursor *c2;
		MUST(mdb_cursor_open(t, d, &c2));
		EXPECT_RC(cget(c2, MDB_FIRST, NULL, NULL), 0);
		MUST(mdb_txn_begin(env, t, 0, &ch));
		mdb_cursor_close(c2);
		EXPECT_RC(del(ch, d, "m"), 0);
		mdb_txn_abort(ch);
		mdb_txn_abort(t);
	}
}

static void test_handles(void)
{
	MDB_txn *t;
	MDB_dbi d;
	MUST(mdb_txn_begin(env, NULL, 0, &t));
	MUST(mdb_dbi_open(t, NULL, 0, &d));
	MDB_val k = {8, "\0\0\0\0\0\0\0\0"}, v = {1, "x"};
	MDB_cursor *c;
	/* the free-page DB (handle 0) is not a user DB */
	EXPECT_RC(mdb_get(t, 0, &k, &v), EINVAL);
	EXPECT_RC(mdb_put(t, 0, &k, &v, 0), EINVAL);
	EXPECT_RC(mdb_del(t, 0, &k, NULL), EINVAL);
	EXPECT_RC(mdb_drop(t, 0, 0), EINVAL);
	EXPECT_RC(mdb_cursor_open(t, 0, &c), EINVAL);
	mdb_txn_abort(t);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
	EXPECT_RC(mdb_cursor_open(t, 0, &c), 0);	/* a reader may walk it */
	mdb_cursor_close(c);
	EXPECT_RC(mdb_get(t, 0, &k, &v), EINVAL);
	EXPECT_RC(mdb_drop(t, 0, 0), EINVAL);
	mdb_txn_abort(t);

	/* a large handle limit, and the file handle before open */
	MDB_env *e2;
	MUST(mdb_env_create(&e2));
	mdb_filehandle_t fd = 0;
	const char *path = "unset";
	EXPECT_RC(mdb_env_get_fd(e2, &fd), 0);
	EXPECT(fd == -1);
	EXPECT_RC(mdb_env_get_path(e2, &path), 0);
	EXPECT(path == NULL);
	EXPECT_RC(mdb_env_set_maxdbs(e2, 65536), 0);
	MUST(mdb_env_set_mapsize(e2, 16u << 20));
	tu_fresh_dir("build/cursem_big");
	MUST(mdb_env_open(e2, "build/cursem_big", 0, 0644));
	EXPECT_RC(mdb_env_set_maxdbs(e2, 4), EINVAL);	/* only before open */
	MUST(mdb_txn_begin(e2, NULL, 0, &t));
	char name[16];
	for (int i = 0; i < 300; i++) {
		snprintf(name, sizeof name, "db%d", i);
		MUST(mdb_dbi_open(t, name, MDB_CREATE, &d));
		put(t, d, name, "v");
	}
	MUST(mdb_txn_commit(t));
	MUST(mdb_txn_begin(e2, NULL, MDB_RDONLY, &t));
	MUST(mdb_dbi_open(t, "db299", 0, &d));
	MDB_val kk = {5, "db299"};
	EXPECT_RC(mdb_get(t, d, &kk, &v), 0);
	mdb_txn_abort(t);
	mdb_env_close(e2);
}

int main(void)
{
	tu_fresh_dir("build/cursem_env");
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 16u << 20));
	MUST(mdb_env_open(env, "build/cursem_env", 0, 0644));
	test_failed_lookups();
	test_eof_and_delete();
	test_nested();
	test_handles();
	mdb_env_close(env);
	return tu_finish("cursem_test");
}
