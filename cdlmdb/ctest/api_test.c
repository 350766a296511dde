/*
 * api_test.c - API semantics and error paths, one small scenario each.
 */
#include "testutil.h"
#include <sys/stat.h>

static const char *DIR0 = "build/api_env";

static MDB_env *fresh_env(const char *dir, size_t mapsize, unsigned maxdbs, unsigned flags)
{
	MDB_env *env;
	tu_fresh_dir(dir);
	MUST(mdb_env_create(&env));
	if (mapsize)
		MUST(mdb_env_set_mapsize(env, mapsize));
	MUST(mdb_env_set_maxdbs(env, maxdbs));
	MUST(mdb_env_open(env, dir, flags, 0644));
	return env;
}

static MDB_val sv(const char *s)
{
	MDB_val v = {strlen(s), (void *)s};
	return v;
}

static int val_is(const MDB_val *v, const char *s)
{
	return v->mv_size == strlen(s) && !memcmp(v->mv_data, s, v->mv_size);
}

static void test_library(void)
{
	int a = -1, b = -1, c = -1;
	const char *s = mdb_version(&a, &b, &c);
	EXPECT(a == 0 && b == 9 && c == 33);
	EXPECT(s && strstr(s, "0.9.33"));
	EXPECT(strstr(mdb_strerror(MDB_NOTFOUND), "NOTFOUND") != NULL);
	EXPECT(strstr(mdb_strerror(MDB_PROBLEM), "PROBLEM") != NULL);
	EXPECT(strcmp(mdb_strerror(ENOENT), strerror(ENOENT)) == 0);
	EXPECT(mdb_env_get_maxkeysize(NULL) == 511);
	EXPECT_RC(mdb_env_create(NULL), EINVAL);
	MDB_env *env;
	MUST(mdb_env_create(&env));
	EXPECT_RC(mdb_env_open(env, NULL, 0, 0644), EINVAL);
	EXPECT_RC(mdb_env_open(env, "build/does/not/exist", 0, 0644), ENOENT);
	mdb_env_close(env);
	MUST(mdb_env_create(&env));
	EXPECT_RC(mdb_env_open(env, "build", 0xdead0000u, 0644), EINVAL);
	mdb_env_close(env);
}

static void test_env_settings(void)
{
	MDB_env *env = fresh_env(DIR0, 0, 4, 0);
	unsigned r = 0, f = 0;
	EXPECT_RC(mdb_env_get_maxreaders(env, &r), 0);
	EXPECT(r == 126);
	EXPECT_RC(mdb_env_set_maxreaders(env, 10), EINVAL);
	EXPECT_RC(mdb_env_set_maxdbs(env, 10), EINVAL);
	const char *p = NULL;
	EXPECT_RC(mdb_env_get_path(env, &p), 0);
	EXPECT(p && !strcmp(p, DIR0));
	int fd = -1;
	EXPECT_RC(mdb_env_get_fd(env, &fd), 0);
	EXPECT(fd >= 0);
	int ctx = 7;
	EXPECT_RC(mdb_env_set_userctx(env, &ctx), 0);
	EXPECT(mdb_env_get_userctx(env) == &ctx);
	EXPECT_RC(mdb_env_set_flags(env, MDB_NOSYNC, 1), 0);
	EXPECT_RC(mdb_env_get_flags(env, &f), 0);
	EXPECT(f & MDB_NOSYNC);
	EXPECT_RC(mdb_env_set_flags(env, MDB_NOSYNC, 0), 0);
	EXPECT_RC(mdb_env_get_flags(env, &f), 0);
	EXPECT(!(f & MDB_NOSYNC));
	EXPECT_RC(mdb_env_set_flags(env, MDB_RDONLY, 1), EINVAL);
	MDB_envinfo info;
	EXPECT_RC(mdb_env_info(env, &info), 0);
	EXPECT(info.me_mapsize == 1048576);
	EXPECT(info.me_last_pgno == 1);
	EXPECT(info.me_last_txnid == 0);
	MDB_stat st;
	EXPECT_RC(mdb_env_stat(env, &st), 0);
	EXPECT(st.ms_psize >= 4096 && st.ms_entries == 0 && st.ms_depth == 0);
	EXPECT_RC(mdb_env_sync(env, 1), 0);
	/* grow the map of an open env without txns */
	EXPECT_RC(mdb_env_set_mapsize(env, 8u << 20), 0);
	EXPECT_RC(mdb_env_info(env, &info), 0);
	EXPECT(info.me_mapsize == 8u << 20);
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	EXPECT_RC(mdb_env_set_mapsize(env, 16u << 20), EINVAL);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static void test_put_get_flags(void)
{
	MDB_env *env = fresh_env(DIR0, 0, 4, 0);
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
	EXPECT(mdb_txn_id(txn) == 1);
	k = sv("");
	v = sv("x");
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), MDB_BAD_VALSIZE);
	char big[600];
	memset(big, 'k', sizeof big);
	k.mv_data = big;
	k.mv_size = 512;
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), MDB_BAD_VALSIZE);
	k.mv_size = 511;
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
	EXPECT_RC(mdb_put(txn, dbi, NULL, &v, 0), EINVAL);
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_CURRENT), EINVAL);
	EXPECT_RC(mdb_put(txn, 77, &k, &v, 0), EINVAL);
	k = sv("apple");
	v = sv("red");
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
	v = sv("green");
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE), MDB_KEYEXIST);
	EXPECT(val_is(&v, "red"));
	k = sv("banana");
	v = sv("yellow");
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_APPEND), MDB_KEYEXIST); /* 'k...' is last */
	k.mv_data = "zzz";
	k.mv_size = 3;
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_APPEND), 0);
	k = sv("apple");
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_APPEND), MDB_KEYEXIST);
	MDB_val r = {5, NULL};
	k = sv("cherry");
	EXPECT_RC(mdb_put(txn, dbi, &k, &r, MDB_RESERVE), 0);
	EXPECT(r.mv_data != NULL);
	memcpy(r.mv_data, "dark!", 5);
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
	EXPECT(val_is(&v, "dark!"));
	k = sv("nothere");
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), MDB_NOTFOUND);
	EXPECT_RC(mdb_del(txn, dbi, &k, NULL), MDB_NOTFOUND);
	EXPECT_RC(mdb_get(txn, dbi, NULL, &v), EINVAL);
	/* the free DB is not writable */
	k = sv("apple");
	EXPECT_RC(mdb_put(txn, 0, &k, &v, 0), EINVAL);
	EXPECT_RC(mdb_txn_commit(txn), 0);

	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	EXPECT(mdb_txn_id(txn) == 1);
	k = sv("apple");
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
	EXPECT(val_is(&v, "red"));
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), EACCES);
	EXPECT_RC(mdb_del(txn, dbi, &k, NULL), EACCES);
	mdb_txn_reset(txn);
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), MDB_BAD_TXN);
	EXPECT_RC(mdb_txn_renew(txn), 0);
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static void test_cursor_semantics(void)
{
	MDB_env *env = fresh_env(DIR0, 0, 4, 0);
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	const char *keys[] = {"a", "b", "c", "d", "e"};
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
	for (int i = 0; i < 5; i++) {
		k = sv(keys[i]);
		v = sv(keys[i]);
		MUST(mdb_put(txn, dbi, &k, &v, 0));
	}
	MUST(mdb_cursor_open(txn, dbi, &c));
	EXPECT(mdb_cursor_txn(c) == txn && mdb_cursor_dbi(c) == dbi);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT), EINVAL);
	EXPECT_RC(mdb_cursor_get(c, NULL, &v, MDB_SET), EINVAL);
	EXPECT_RC(mdb_cursor_get(c, NULL, &v, MDB_SET_RANGE), EINVAL);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT), 0); /* unpositioned NEXT = FIRST */
	EXPECT(val_is(&k, "a"));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP), 0); /* non-dup DB: like NEXT */
	EXPECT(val_is(&k, "b"));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP), 0);
	EXPECT(val_is(&k, "c"));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_PREV_NODUP), 0);
	EXPECT(val_is(&k, "b"));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_FIRST_DUP), MDB_INCOMPATIBLE);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_BOTH), MDB_INCOMPATIBLE);
	EXPECT_RC(mdb_cursor_get(c, &k, NULL, MDB_GET_BOTH), EINVAL);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_MULTIPLE), MDB_INCOMPATIBLE);
	size_t cnt;
	EXPECT_RC(mdb_cursor_count(c, &cnt), MDB_INCOMPATIBLE);
	k = sv("bb");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET_RANGE), 0);
	EXPECT(val_is(&k, "c"));
	k = sv("zz");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET_RANGE), MDB_NOTFOUND);
	k = sv("c");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET), 0);
	EXPECT(val_is(&v, "c"));
	/* delete under the cursor: NEXT gives the successor, PREV the predecessor */
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT), 0);
	EXPECT(val_is(&k, "d"));
	k = sv("b");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET), 0);
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT), 0);
	EXPECT(val_is(&k, "d"));
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_PREV), 0);
	EXPECT(val_is(&k, "a"));
	/* a second cursor stays valid while the first one changes the tree */
	MDB_cursor *c2;
	MUST(mdb_cursor_open(txn, dbi, &c2));
	k = sv("e");
	EXPECT_RC(mdb_cursor_get(c2, &k, &v, MDB_SET), 0);
	for (int i = 0; i < 300; i++) {
		char kb[16];
		snprintf(kb, sizeof kb, "m%04d", i);
		k = sv(kb);
		v = sv("filler-filler-filler-filler");
		MUST(mdb_put(txn, dbi, &k, &v, 0));
	}
	EXPECT_RC(mdb_cursor_get(c2, &k, &v, MDB_GET_CURRENT), 0);
	EXPECT(val_is(&k, "e"));
	EXPECT_RC(mdb_cursor_get(c2, &k, &v, MDB_NEXT), 0);
	EXPECT(val_is(&k, "m0000"));
	/* MDB_CURRENT replaces in place, with a bigger value too */
	char bigv[5000];
	memset(bigv, 'q', sizeof bigv);
	MDB_val bv = {sizeof bigv, bigv};
	EXPECT_RC(mdb_cursor_put(c2, &k, &bv, MDB_CURRENT), 0);
	EXPECT_RC(mdb_cursor_get(c2, &k, &v, MDB_GET_CURRENT), 0);
	EXPECT(val_is(&k, "m0000") && v.mv_size == sizeof bigv && !memcmp(v.mv_data, bigv, sizeof bigv));
	EXPECT_RC(mdb_cursor_put(c2, NULL, &bv, MDB_CURRENT), EINVAL);
	mdb_cursor_close(c2);
	MDB_stat st;
	EXPECT_RC(mdb_stat(txn, dbi, &st), 0);
	EXPECT(st.ms_entries == 302 && st.ms_overflow_pages == 2 && st.ms_depth == 2);
	char msg[200];
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	/* read cursor renew across read txns */
	MDB_txn *r1;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r1));
	MUST(mdb_cursor_open(r1, dbi, &c));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_LAST), 0);
	EXPECT(val_is(&k, "m0299"));
	mdb_txn_abort(r1);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r1));
	EXPECT_RC(mdb_cursor_renew(r1, c), 0);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_FIRST), 0);
	EXPECT(val_is(&k, "a"));
	mdb_cursor_close(c);
	mdb_txn_abort(r1);
	mdb_env_close(env);
}

static void test_map_full(void)
{
	MDB_env *env = fresh_env(DIR0, 64 * 4096, 4, 0);
	MDB_txn *txn;
	MDB_dbi dbi;
	char kb[32], vb[1000];
	memset(vb, 'v', sizeof vb);
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
	int rc = 0, i;
	for (i = 0; i < 100000 && !rc; i++) {
		snprintf(kb, sizeof kb, "key%06d", i);
		MDB_val k = sv(kb), v = {sizeof vb, vb};
		rc = mdb_put(txn, dbi, &k, &v, 0);
	}
	EXPECT(rc == MDB_MAP_FULL);
	MDB_val k = sv("key000001"), v;
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), MDB_BAD_TXN);
	EXPECT_RC(mdb_txn_commit(txn), MDB_BAD_TXN);
	/* the env is still fine: a smaller txn commits, a bigger map helps */
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	v.mv_size = 10;
	v.mv_data = vb;
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	EXPECT_RC(mdb_env_set_mapsize(env, 4u << 20), 0);
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	rc = 0;
	for (int j = 0; j < i && !rc; j++) {
		snprintf(kb, sizeof kb, "key%06d", j);
		MDB_val kk = sv(kb), vv = {sizeof vb, vb};
		rc = mdb_put(txn, dbi, &kk, &vv, 0);
	}
	EXPECT(rc == 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void test_named_dbs(void)
{
	MDB_env *env = fresh_env(DIR0, 0, 2, 0);
	MDB_txn *txn;
	MDB_dbi a, b, c, m;
	MDB_val k, v;
	unsigned fl;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	EXPECT_RC(mdb_dbi_open(txn, "nope", 0, &a), MDB_NOTFOUND);
	EXPECT_RC(mdb_dbi_open(txn, "a", MDB_CREATE, &a), 0);
	EXPECT_RC(mdb_dbi_open(txn, "b", MDB_CREATE | MDB_INTEGERKEY, &b), 0);
	EXPECT_RC(mdb_dbi_open(txn, "c", MDB_CREATE, &c), MDB_DBS_FULL);
	EXPECT_RC(mdb_dbi_open(txn, "x", 0x8000000, &c), EINVAL);
	EXPECT_RC(mdb_dbi_flags(txn, b, &fl), 0);
	EXPECT(fl == MDB_INTEGERKEY);
	MUST(mdb_dbi_open(txn, NULL, 0, &m));
	k = sv("a");
	v = sv("clobber");
	EXPECT_RC(mdb_put(txn, m, &k, &v, 0), MDB_INCOMPATIBLE);
	EXPECT_RC(mdb_del(txn, m, &k, NULL), MDB_INCOMPATIBLE);
	/* integer keys sort numerically */
	uint64_t nums[] = {300, 2, 70000, 1};
	for (int i = 0; i < 4; i++) {
		MDB_val ik = {8, &nums[i]};
		v = sv("n");
		MUST(mdb_put(txn, b, &ik, &v, 0));
	}
	MDB_cursor *cur;
	MUST(mdb_cursor_open(txn, b, &cur));
	uint64_t prev = 0, x;
	int n = 0;
	while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
		memcpy(&x, k.mv_data, 8);
		EXPECT(x > prev);
		prev = x;
		n++;
	}
	EXPECT(n == 4);
	mdb_cursor_close(cur);
	k = sv("key");
	v = sv("val");
	MUST(mdb_put(txn, a, &k, &v, 0));
	EXPECT_RC(mdb_txn_commit(txn), 0);

	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MDB_stat st;
	EXPECT_RC(mdb_stat(txn, a, &st), 0);
	EXPECT(st.ms_entries == 1);
	EXPECT_RC(mdb_drop(txn, a, 0), 0);
	EXPECT_RC(mdb_stat(txn, a, &st), 0);
	EXPECT(st.ms_entries == 0 && st.ms_depth == 0);
	EXPECT_RC(mdb_drop(txn, b, 1), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	EXPECT_RC(mdb_dbi_open(txn, "b", 0, &b), MDB_NOTFOUND);
	EXPECT_RC(mdb_dbi_open(txn, "a", 0, &a), 0);
	EXPECT_RC(mdb_stat(txn, a, &st), 0);
	EXPECT(st.ms_entries == 0);
	char msg[200];
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	mdb_txn_abort(txn);
	/* the main DB lists exactly one named DB now */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	EXPECT_RC(mdb_stat(txn, m, &st), 0);
	EXPECT(st.ms_entries == 1);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static void test_nested(void)
{
	MDB_env *env = fresh_env(DIR0, 0, 4, 0);
	MDB_txn *txn, *child;
	MDB_dbi dbi, d2;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
	k = sv("p");
	v = sv("parent");
	MUST(mdb_put(txn, dbi, &k, &v, 0));
	MUST(mdb_txn_begin(env, txn, 0, &child));
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), MDB_BAD_TXN); /* parent blocked */
	EXPECT_RC(mdb_get(child, dbi, &k, &v), 0);
	EXPECT(val_is(&v, "parent"));
	k = sv("c");
	v = sv("child");
	MUST(mdb_put(child, dbi, &k, &v, 0));
	EXPECT_RC(mdb_dbi_open(child, "sub", MDB_CREATE, &d2), 0);
	mdb_txn_abort(child);
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), MDB_NOTFOUND);
	EXPECT_RC(mdb_dbi_open(txn, "sub", 0, &d2), MDB_NOTFOUND);
	MUST(mdb_txn_begin(env, txn, 0, &child));
	MUST(mdb_put(child, dbi, &k, &v, 0));
	k = sv("p");
	MUST(mdb_del(child, dbi, &k, NULL));
	EXPECT_RC(mdb_txn_commit(child), 0);
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), MDB_NOTFOUND);
	k = sv("c");
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
	EXPECT(val_is(&v, "child"));
	/* committing the parent with an open child commits the child first */
	MUST(mdb_txn_begin(env, txn, 0, &child));
	k = sv("g");
	v = sv("grandchild-era");
	MUST(mdb_put(child, dbi, &k, &v, 0));
	EXPECT_RC(mdb_txn_commit(txn), 0);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
	EXPECT(val_is(&v, "grandchild-era"));
	EXPECT_RC(mdb_txn_begin(env, txn, 0, &child), EINVAL);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static int cmp_len_then_bytes(const MDB_val *a, const MDB_val *b)
{
	if (a->mv_size != b->mv_size)
		return a->mv_size < b->mv_size ? -1 : 1;
	return memcmp(a->mv_data, b->mv_data, a->mv_size);
}

static void test_compare_and_reverse(void)
{
	MDB_env *env = fresh_env(DIR0, 0, 4, 0);
	MDB_txn *txn;
	MDB_dbi c1, r1;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "custom", MDB_CREATE, &c1));
	MUST(mdb_set_compare(txn, c1, cmp_len_then_bytes));
	MUST(mdb_dbi_open(txn, "rev", MDB_CREATE | MDB_REVERSEKEY, &r1));
	const char *ks[] = {"bbb", "a", "cc", "ab", "ba"};
	for (int i = 0; i < 5; i++) {
		k = sv(ks[i]);
		v = sv(ks[i]);
		MUST(mdb_put(txn, c1, &k, &v, 0));
		MUST(mdb_put(txn, r1, &k, &v, 0));
	}
	const char *want_c[] = {"a", "ab", "ba", "cc", "bbb"};
	const char *want_r[] = {"a", "ba", "ab", "bbb", "cc"};
	MDB_cursor *cur;
	MUST(mdb_cursor_open(txn, c1, &cur));
	for (int i = 0; i < 5; i++) {
		EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_NEXT), 0);
		EXPECT(val_is(&k, want_c[i]));
	}
	mdb_cursor_close(cur);
	MUST(mdb_cursor_open(txn, r1, &cur));
	for (int i = 0; i < 5; i++) {
		EXPECT_RC(mdb_cursor_get(cur, &k, &v, MDB_NEXT), 0);
		EXPECT(val_is(&k, want_r[i]));
	}
	mdb_cursor_close(cur);
	MDB_val a = sv("ab"), b = sv("ba");
	EXPECT(mdb_cmp(txn, r1, &a, &b) > 0);
	EXPECT(mdb_cmp(txn, c1, &a, &b) < 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static int count_lines(const char *msg, void *ctx)
{
	(void)msg;
	(*(int *)ctx)++;
	return 0;
}

static void test_readers_and_copy(void)
{
	MDB_env *env = fresh_env(DIR0, 8u << 20, 4, 0);
	MDB_txn *txn, *r1;
	MDB_dbi dbi;
	char kb[32], vb[3000];
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "data", MDB_CREATE, &dbi));
	for (int i = 0; i < 2000; i++) {
		snprintf(kb, sizeof kb, "k%05d", i);
		memset(vb, 'a' + i % 26, sizeof vb);
		MDB_val k = sv(kb), v = {(i % 50) ? 40u : 2900u, vb};
		MUST(mdb_put(txn, dbi, &k, &v, 0));
	}
	MUST(mdb_txn_commit(txn));
	/* a reader pins its snapshot while a writer deletes half */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r1));
	int lines = 0;
	EXPECT_RC(mdb_reader_list(env, count_lines, &lines), 0);
	EXPECT(lines == 2); /* header + one reader */
	int dead = -1;
	EXPECT_RC(mdb_reader_check(env, &dead), 0);
	EXPECT(dead == 0);
	for (int round = 0; round < 3; round++) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (int i = round; i < 2000; i += 3) {
			snprintf(kb, sizeof kb, "k%05d", i);
			MDB_val k = sv(kb), v = sv("new");
			MUST(mdb_put(txn, dbi, &k, &v, 0));
		}
		MUST(mdb_txn_commit(txn));
	}
	MDB_val k = sv("k00050"), v;
	EXPECT_RC(mdb_get(r1, dbi, &k, &v), 0);
	EXPECT(v.mv_size == 2900);
	char msg[200];
	EXPECT_RC(mdb_txn_check(r1, msg, sizeof msg), 0);
	mdb_txn_abort(r1);
	/* copies */
	tu_fresh_dir("build/api_copy");
	tu_fresh_dir("build/api_copyc");
	EXPECT_RC(mdb_env_copy(env, "build/api_copy"), 0);
	EXPECT_RC(mdb_env_copy2(env, "build/api_copyc", MDB_CP_COMPACT), 0);
	EXPECT_RC(mdb_env_copy(env, "build/api_copy"), EEXIST);
	mdb_env_close(env);
	const char *dirs[] = {"build/api_copy", "build/api_copyc"};
	size_t sizes[2];
	for (int i = 0; i < 2; i++) {
		MDB_env *e2;
		MUST(mdb_env_create(&e2));
		MUST(mdb_env_set_maxdbs(e2, 4));
		EXPECT_RC(mdb_env_open(e2, dirs[i], MDB_RDONLY, 0644), 0);
		MUST(mdb_txn_begin(e2, NULL, MDB_RDONLY, &txn));
		MUST(mdb_dbi_open(txn, "data", 0, &dbi));
		MDB_stat st;
		EXPECT_RC(mdb_stat(txn, dbi, &st), 0);
		EXPECT(st.ms_entries == 2000);
		k = sv("k00001");
		EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
		EXPECT(val_is(&v, "new"));
		EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
		MDB_envinfo info;
		mdb_env_info(e2, &info);
		sizes[i] = info.me_last_pgno;
		mdb_txn_abort(txn);
		mdb_env_close(e2);
	}
	EXPECT(sizes[1] < sizes[0]);
}

/* Without readers, rewriting the same data must not grow the file. */
static void test_page_reuse(void)
{
	MDB_env *env = fresh_env(DIR0, 16u << 20, 4, MDB_NOSYNC);
	MDB_txn *txn;
	MDB_dbi dbi;
	char kb[16], vb[3000];
	memset(vb, 'r', sizeof vb);
	size_t after5 = 0;
	MDB_envinfo info;
	for (int g = 1; g <= 40; g++) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
		for (int i = 0; i < 400; i++) {
			snprintf(kb, sizeof kb, "t%04d", i);
			MDB_val k = sv(kb), v = {(i % 40 == 0) ? sizeof vb : 16u, vb};
			MUST(mdb_put(txn, dbi, &k, &v, 0));
		}
		MUST(mdb_txn_commit(txn));
		MUST(mdb_env_info(env, &info));
		if (g == 5)
			after5 = info.me_last_pgno;
	}
	EXPECT(info.me_last_pgno == after5);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	char msg[200];
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

/* Sorted duplicates: sub-page, growth into a sub-tree, ordering, deletes. */
static void test_dupsort(void)
{
	MDB_env *env = fresh_env(DIR0, 32u << 20, 4, 0);
	MDB_txn *txn;
	MDB_dbi dbi, fx;
	MDB_cursor *c;
	MDB_val k, v;
	char vb[64];
	mdb_size_t cnt = 0;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	EXPECT_RC(mdb_dbi_open(txn, "fixed", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP, &fx), 0);
	{
		/* MDB_MULTIPLE put of 3000 fixed-size values, read back page-wise */
		uint32_t *arr = malloc(3000 * sizeof(uint32_t));
		for (uint32_t i = 0; i < 3000; i++)
			arr[i] = i * 2 + 1;
		MDB_cursor *fc;
		MUST(mdb_cursor_open(txn, fx, &fc));
		MDB_val mk = sv("ints"), mv[2] = {{sizeof(uint32_t), arr}, {3000, NULL}};
		EXPECT_RC(mdb_cursor_put(fc, &mk, mv, MDB_MULTIPLE), 0);
		EXPECT(mv[1].mv_size == 3000);
		MDB_val bad = {5, "12345"};
		mk = sv("ints");
		EXPECT_RC(mdb_put(txn, fx, &mk, &bad, 0), MDB_BAD_VALSIZE);
		mk = sv("ints");
		MDB_val fv;
		EXPECT_RC(mdb_cursor_get(fc, &mk, &fv, MDB_SET), 0);
		size_t seen = 0;
		int inorder = 1, rc2;
		uint32_t expect = 1;
		for (rc2 = mdb_cursor_get(fc, &mk, &fv, MDB_GET_MULTIPLE); rc2 == 0;
		     rc2 = mdb_cursor_get(fc, &mk, &fv, MDB_NEXT_MULTIPLE)) {
			EXPECT(fv.mv_size % 4 == 0 && fv.mv_size > 0);
			for (size_t j = 0; j < fv.mv_size / 4; j++) {
				uint32_t got;
				memcpy(&got, (char *)fv.mv_data + j * 4, 4);
				if (got != expect)
					inorder = 0;
				expect += 2;
				seen++;
			}
		}
		EXPECT(rc2 == MDB_NOTFOUND);
		EXPECT(seen == 3000 && inorder);
		/* the same values come back one by one, and PREV_MULTIPLE walks back */
		EXPECT_RC(mdb_cursor_get(fc, &mk, &fv, MDB_LAST_DUP), 0);
		uint32_t lastv;
		memcpy(&lastv, fv.mv_data, 4);
		EXPECT(lastv == 5999);
		size_t back = 0;
		while (mdb_cursor_get(fc, &mk, &fv, MDB_PREV_MULTIPLE) == 0)
			back += fv.mv_size / 4;
		EXPECT(back > 0 && back < 3000);
		mdb_size_t fcnt = 0;
		EXPECT_RC(mdb_cursor_count(fc, &fcnt), 0);
		EXPECT(fcnt == 3000);
		/* delete a third, through the cursor */
		mk = sv("ints");
		EXPECT_RC(mdb_cursor_get(fc, &mk, &fv, MDB_SET), 0);
		for (int j = 0; j < 1000; j++)
			EXPECT_RC(mdb_cursor_del(fc, 0), 0);
		EXPECT_RC(mdb_cursor_count(fc, &fcnt), 0);
		EXPECT(fcnt == 2000);
		EXPECT_RC(mdb_cursor_get(fc, &mk, &fv, MDB_GET_CURRENT), 0);
		memcpy(&lastv, fv.mv_data, 4);
		EXPECT(lastv == 2001);
		mdb_cursor_close(fc);
		free(arr);
		char cmsg[200];
		EXPECT_RC(mdb_txn_check(txn, cmsg, sizeof cmsg), 0);
	}
	MUST(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dbi));
	/* 600 values for one key, inserted in a scrambled order */
	for (int i = 0; i < 600; i++) {
		int n = (i * 7919) % 600;
		snprintf(vb, sizeof vb, "value-%05d-padding-padding", n);
		k = sv("multi");
		v = sv(vb);
		EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
		if (i == 3)
			EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_NODUPDATA), MDB_KEYEXIST);
	}
	k = sv("single");
	v = sv("only");
	MUST(mdb_put(txn, dbi, &k, &v, 0));
	k = sv("multi");
	v = sv("zzz");
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, MDB_NOOVERWRITE), MDB_KEYEXIST);
	EXPECT(val_is(&v, "value-00000-padding-padding"));
	MUST(mdb_cursor_open(txn, dbi, &c));
	k = sv("multi");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET), 0);
	EXPECT_RC(mdb_cursor_count(c, &cnt), 0);
	EXPECT(cnt == 600);
	int n = 1, ordered = 1;
	char prev[64];
	memcpy(prev, v.mv_data, v.mv_size);
	size_t plen = v.mv_size;
	while (mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP) == 0) {
		MDB_val pv = {plen, prev};
		if (mdb_dcmp(txn, dbi, &pv, &v) >= 0)
			ordered = 0;
		memcpy(prev, v.mv_data, v.mv_size);
		plen = v.mv_size;
		n++;
	}
	EXPECT(n == 600 && ordered);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT), 0);
	EXPECT(val_is(&k, "single") && val_is(&v, "only"));
	EXPECT_RC(mdb_cursor_count(c, &cnt), 0);
	EXPECT(cnt == 1);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_PREV_NODUP), 0);
	EXPECT(val_is(&k, "multi") && val_is(&v, "value-00599-padding-padding"));
	k = sv("multi");
	v = sv("value-00300-padding-padding");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_BOTH), 0);
	v = sv("value-00300-x");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_BOTH_RANGE), 0);
	EXPECT(val_is(&v, "value-00301-padding-padding"));
	v = sv("value-00300-x");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_BOTH), MDB_NOTFOUND);
	/* delete every other value: through mdb_del and through the cursor */
	for (int i = 0; i < 600; i += 2) {
		snprintf(vb, sizeof vb, "value-%05d-padding-padding", i);
		k = sv("multi");
		v = sv(vb);
		if (i % 4 == 0) {
			EXPECT_RC(mdb_del(txn, dbi, &k, &v), 0);
		} else {
			EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_BOTH), 0);
			EXPECT_RC(mdb_cursor_del(c, 0), 0);
		}
	}
	k = sv("multi");
	v = sv("value-00002-padding-padding");
	EXPECT_RC(mdb_del(txn, dbi, &k, &v), MDB_NOTFOUND);
	k = sv("multi");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET), 0);
	EXPECT(val_is(&v, "value-00001-padding-padding"));
	EXPECT_RC(mdb_cursor_count(c, &cnt), 0);
	EXPECT(cnt == 300);
	MDB_stat st;
	EXPECT_RC(mdb_stat(txn, dbi, &st), 0);
	EXPECT(st.ms_entries == 301);
	char msg[200];
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	/* compact copy keeps the sub-tree */
	tu_fresh_dir("build/api_dupcopy");
	EXPECT_RC(mdb_env_copy2(env, "build/api_dupcopy", MDB_CP_COMPACT), 0);
	/* the rest goes with one delete, the sub-tree's pages are freed */
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	k = sv("multi");
	EXPECT_RC(mdb_del(txn, dbi, &k, NULL), 0);
	EXPECT_RC(mdb_stat(txn, dbi, &st), 0);
	EXPECT(st.ms_entries == 1);
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
	MDB_env *e2;
	MUST(mdb_env_create(&e2));
	MUST(mdb_env_set_maxdbs(e2, 4));
	MUST(mdb_env_open(e2, "build/api_dupcopy", MDB_RDONLY, 0644));
	MUST(mdb_txn_begin(e2, NULL, MDB_RDONLY, &txn));
	MUST(mdb_dbi_open(txn, "dups", 0, &dbi));
	EXPECT_RC(mdb_stat(txn, dbi, &st), 0);
	EXPECT(st.ms_entries == 301);
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	MUST(mdb_cursor_open(txn, dbi, &c));
	k = sv("multi");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET), 0);
	EXPECT_RC(mdb_cursor_count(c, &cnt), 0);
	EXPECT(cnt == 300);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(e2);
	/* INTEGERDUP and REVERSEDUP orders */
	env = fresh_env(DIR0, 0, 4, 0);
	MDB_dbi di, dr;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "int", MDB_CREATE | MDB_DUPSORT | MDB_INTEGERDUP, &di));
	MUST(mdb_dbi_open(txn, "rev", MDB_CREATE | MDB_DUPSORT | MDB_REVERSEDUP, &dr));
	unsigned ints[] = {300, 2, 70000, 1};
	const char *strs[] = {"ab", "ba", "cc", "a"};
	for (int i = 0; i < 4; i++) {
		k = sv("k");
		MDB_val iv = {sizeof(unsigned), &ints[i]};
		MUST(mdb_put(txn, di, &k, &iv, 0));
		v = sv(strs[i]);
		MUST(mdb_put(txn, dr, &k, &v, 0));
	}
	MUST(mdb_cursor_open(txn, di, &c));
	unsigned last = 0, x;
	int cntd = 0;
	while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
		memcpy(&x, v.mv_data, sizeof x);
		EXPECT(x > last);
		last = x;
		cntd++;
	}
	EXPECT(cntd == 4);
	mdb_cursor_close(c);
	MUST(mdb_cursor_open(txn, dr, &c));
	const char *want[] = {"a", "ba", "ab", "cc"};
	for (int i = 0; i < 4; i++) {
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT), 0);
		EXPECT(val_is(&v, want[i]));
	}
	mdb_cursor_close(c);
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

int main(void)
{
	test_dupsort();
	test_page_reuse();
	test_library();
	test_env_settings();
	test_put_get_flags();
	test_cursor_semantics();
	test_map_full();
	test_named_dbs();
	test_nested();
	test_compare_and_reverse();
	test_readers_and_copy();
	return tu_finish("api_test");
}
