/*
 * dupfix_test.c - DUPSORT regressions: the duplicate cursor after a
 * refused MDB_APPEND (it once kept the previous key's half-saved state and
 * the cursor delete that followed crashed), and the duplicate ops on a
 * cursor whose exact SET failed (no duplicate position to step from),
 * MDB_CURRENT on a one-value sub-page, MULTIPLE outside DUPFIXED, Del after
 * Del, the cursor after a refused NODUPDATA/APPENDDUP; check_db's
 * mdb_txn_check also audits the sub-page flags LMDB needs.
 * Where stock LMDB 0.9.33 is sane the expectations are its behaviour (all
 * but failed_set_then_dup_ops pass against stock, which crashes there).
 */
#include "testutil.h"

static MDB_env *env;

static MDB_val sv(const char *s)
{
	MDB_val v = {strlen(s), (void *)s};
	return v;
}

static int same(MDB_val v, const char *s)
{
	return v.mv_size == strlen(s) && (v.mv_size == 0 || !memcmp(v.mv_data, s, v.mv_size));
}

static void put(MDB_txn *t, MDB_dbi d, const char *k, const char *v)
{
	MDB_val kk = sv(k), vv = sv(v);
	MUST(mdb_put(t, d, &kk, &vv, 0));
}

static MDB_txn *fresh(MDB_dbi *d)
{
	MDB_txn *t;
	MUST(mdb_txn_begin(env, NULL, 0, &t));
	MUST(mdb_dbi_open(t, "dups", MDB_CREATE | MDB_DUPSORT, d));
	MUST(mdb_drop(t, *d, 0));
	return t;
}

/* the whole DB as "k=v;" pairs */
static void dump(MDB_txn *t, MDB_dbi d, char *out, size_t cap)
{
	MDB_cursor *c;
	MDB_val k, v;
	size_t n = 0;
	out[0] = 0;
	MUST(mdb_cursor_open(t, d, &c));
	for (int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); !rc; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
		n += (size_t)snprintf(out + n, cap - n, "%.*s=%.*s;", (int)k.mv_size, (char *)k.mv_data,
			(int)v.mv_size, (char *)v.mv_data);
	mdb_cursor_close(c);
}

static void check_db(MDB_txn *t, MDB_dbi d, const char *want, size_t entries)
{
	char got[512], msg[256];
	MDB_stat st;
	dump(t, d, got, sizeof got);
	EXPECT(!strcmp(got, want));
	if (strcmp(got, want))
		fprintf(stderr, "  got %s want %s\n", got, want);
	MUST(mdb_stat(t, d, &st));
	EXPECT(st.ms_entries == entries);
	EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), MDB_SUCCESS);
}

/*
 * The refused APPEND leaves the cursor on the last key's last duplicate;
 * `how` selects how the cursor's own sub-cursor state got stale before:
 * 0 none, 1 another handle wrote while it stood on a single value, 2 the
 * same through a committed child txn (the original crash).
 */
static void failed_append(int how, unsigned aflags)
{
	MDB_dbi d;
	MDB_txn *t = fresh(&d), *child;
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_cursor_open(t, d, &c));
	put(t, d, "c", "ba");
	k = sv("a");
	v = sv("cac");
	EXPECT_RC(mdb_cursor_put(c, &k, &v, 0), 0);
	if (how == 2) {
		MUST(mdb_txn_begin(env, t, 0, &child));
		put(child, d, "c", "bbc");
		MUST(mdb_txn_commit(child));
	} else {
		put(t, d, "c", "bbc");
	}
	if (how == 0) {
		k = sv("a");
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET_KEY), 0);
	}
	k = sv("aaa");
	v = sv("ca");
	EXPECT_RC(mdb_cursor_put(c, &k, &v, aflags), MDB_KEYEXIST);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT), 0);
	EXPECT(same(k, "c") && same(v, "bbc"));
	mdb_size_t n = 0;
	EXPECT_RC(mdb_cursor_count(c, &n), 0);
	EXPECT(n == 2);
	/* it stands on the last duplicate: PREV_DUP reaches the first one */
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_PREV_DUP), 0);
	EXPECT(same(k, "c") && same(v, "ba"));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP), 0);
	EXPECT(same(v, "bbc"));
	k = sv("b");
	v = sv("q");
	EXPECT_RC(mdb_cursor_put(c, &k, &v, aflags), MDB_KEYEXIST);
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	check_db(t, d, "a=cac;c=ba;", 2);
	mdb_cursor_close(c);
	MUST(mdb_txn_commit(t));
}

/* The last key holds one value: its sub-cursor must not stay aimed. */
static void failed_append_single_last(void)
{
	MDB_dbi d;
	MDB_txn *t = fresh(&d);
	MDB_cursor *c;
	MDB_val k, v;
	put(t, d, "a", "1");
	put(t, d, "a", "2");
	put(t, d, "m", "z");
	MUST(mdb_cursor_open(t, d, &c));
	k = sv("a");
	v = sv("2");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_BOTH), 0);
	k = sv("b");
	v = sv("0");
	EXPECT_RC(mdb_cursor_put(c, &k, &v, MDB_APPEND), MDB_KEYEXIST);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT), 0);
	EXPECT(same(k, "m") && same(v, "z"));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_PREV_DUP), MDB_NOTFOUND);
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	check_db(t, d, "a=1;a=2;", 2);
	/* APPEND of a key equal to the (now) last one is refused as well */
	k = sv("a");
	v = sv("9");
	EXPECT_RC(mdb_cursor_put(c, &k, &v, MDB_APPEND), MDB_KEYEXIST);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT), 0);
	EXPECT(same(k, "a") && same(v, "2"));
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	check_db(t, d, "a=1;", 1);
	mdb_cursor_close(c);
	MUST(mdb_txn_commit(t));
}

/* After an exact SET missed, the key cursor stands at the insertion point
 * but no duplicate is aimed: every duplicate-relative op is refused. */
static void failed_set_then_dup_ops(void)
{
	static const MDB_cursor_op ops[] = {MDB_NEXT_DUP, MDB_PREV_DUP, MDB_FIRST_DUP, MDB_LAST_DUP,
		MDB_GET_CURRENT};
	MDB_dbi d;
	MDB_txn *t = fresh(&d);
	MDB_cursor *c;
	MDB_val k, v;
	put(t, d, "ab", "b");
	put(t, d, "ab", "a");
	put(t, d, "zz", "q");
	put(t, d, "zz", "r");
	MUST(mdb_txn_commit(t));
	for (int probe = 0; probe < 2; probe++) {
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
		MUST(mdb_cursor_open(t, d, &c));
		if (probe) {
			/* a cursor that already stood on other duplicates */
			EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_LAST), 0);
			EXPECT(same(k, "zz") && same(v, "r"));
		}
		for (unsigned i = 0; i < sizeof ops / sizeof ops[0]; i++) {
			k = sv("aa");
			EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET_KEY), MDB_NOTFOUND);
			k = sv("aa");
			v.mv_size = 0;
			v.mv_data = NULL;
			EXPECT_RC(mdb_cursor_get(c, &k, &v, ops[i]), EINVAL);
		}
		/* a successful SET aims the duplicates again */
		k = sv("ab");
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET_KEY), 0);
		EXPECT(same(v, "a"));
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP), 0);
		EXPECT(same(k, "ab") && same(v, "b"));
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP), MDB_NOTFOUND);
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_PREV_DUP), 0);
		EXPECT(same(v, "a"));
		mdb_cursor_close(c);
		mdb_txn_abort(t);
	}
}

/* MDB_CURRENT on a key whose sub-page holds one value keeps it a sub-page
 * (a fresh cursor's NEXT_MULTIPLE then still finds it, as in LMDB). */
static void put_current_one_value_subpage(void)
{
	MDB_dbi d;
	MDB_txn *t;
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t one = 1, two = 2, five = 5;
	MUST(mdb_txn_begin(env, NULL, 0, &t));
	MUST(mdb_dbi_open(t, "fixed", MDB_CREATE | MDB_DUPSORT | MDB_DUPFIXED, &d));
	k = sv("k");
	v.mv_size = 8;
	v.mv_data = &one;
	MUST(mdb_put(t, d, &k, &v, 0));
	v.mv_data = &two;
	MUST(mdb_put(t, d, &k, &v, 0));
	MUST(mdb_cursor_open(t, d, &c));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_BOTH), 0);
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	k = sv("k");
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET_KEY), 0);
	EXPECT(v.mv_size == 8 && !memcmp(v.mv_data, &one, 8));
	v.mv_size = 8;
	v.mv_data = &five;
	EXPECT_RC(mdb_cursor_put(c, &k, &v, MDB_CURRENT), 0);
	mdb_cursor_close(c);
	MUST(mdb_cursor_open(t, d, &c));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_MULTIPLE), 0);
	EXPECT(same(k, "k") && v.mv_size == 8 && !memcmp(v.mv_data, &five, 8));
	mdb_size_t n = 0;
	EXPECT_RC(mdb_cursor_count(c, &n), 0);
	EXPECT(n == 1);
	char msg[256];
	EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), MDB_SUCCESS);
	mdb_cursor_close(c);
	mdb_txn_abort(t);
}

/* MULTIPLE outside DUPFIXED is refused before the key size is looked at,
 * and the written-items count is zero. */
static void multiple_incompatible_first(void)
{
	MDB_dbi d;
	MDB_txn *t = fresh(&d);
	MDB_cursor *c;
	char big[600];
	memset(big, 'k', sizeof big);
	uint64_t items[2] = {1, 2};
	MDB_val k = {sizeof big, big}, m[2] = {{8, items}, {2, NULL}};
	MUST(mdb_cursor_open(t, d, &c));
	EXPECT_RC(mdb_cursor_put(c, &k, m, MDB_MULTIPLE), MDB_INCOMPATIBLE);
	EXPECT(m[1].mv_size == 0);
	k.mv_size = 3;
	m[1].mv_size = 2;
	EXPECT_RC(mdb_cursor_put(c, &k, m, MDB_MULTIPLE), MDB_INCOMPATIBLE);
	EXPECT(m[1].mv_size == 0);
	check_db(t, d, "", 0);
	mdb_cursor_close(c);
	mdb_txn_abort(t);
}

/* A cursor Del after a Del: the second removes the successor's first
 * duplicate and the pending deleted-before mark survives, so NEXT_NODUP
 * returns that key (with its remaining value) before moving on. */
static void del_del_next_nodup(void)
{
	MDB_dbi d;
	MDB_txn *t = fresh(&d);
	MDB_cursor *c;
	MDB_val k, v;
	put(t, d, "m", "v1");
	put(t, d, "m", "v2");
	MUST(mdb_cursor_open(t, d, &c));
	k = sv("a");
	v = sv("x");
	EXPECT_RC(mdb_cursor_put(c, &k, &v, 0), 0);
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	EXPECT_RC(mdb_cursor_del(c, 0), 0);
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP), 0);
	EXPECT(same(k, "m") && same(v, "v2"));
	EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP), MDB_NOTFOUND);
	check_db(t, d, "m=v2;", 1);
	mdb_cursor_close(c);
	mdb_txn_abort(t);
}

/* A refused NODUPDATA put leaves the duplicate cursor on the value found,
 * a refused APPENDDUP on the last value (sub-page and sub-tree), so the
 * cursor Del that follows removes that one. */
static void refused_dup_put_position(void)
{
	for (int big = 0; big < 2; big++) {
		MDB_dbi d;
		MDB_txn *t = fresh(&d);
		MDB_cursor *c;
		MDB_val k, v;
		char buf[16];
		unsigned n = big ? 300 : 3;
		for (unsigned i = 1; i <= n; i++) {
			snprintf(buf, sizeof buf, "v%03u", i);
			put(t, d, "k", buf);
		}
		snprintf(buf, sizeof buf, "v%03u", n);
		MUST(mdb_cursor_open(t, d, &c));
		static const struct { unsigned flags; const char *val; int last; } cases[] = {
			{MDB_NODUPDATA, "v002", 0}, {MDB_APPENDDUP, "v001", 1}, {MDB_APPENDDUP, "v0015", 1}};
		for (unsigned i = 0; i < 3; i++) {
			EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_FIRST), 0);
			k = sv("k");
			v = sv(cases[i].val);
			EXPECT_RC(mdb_cursor_put(c, &k, &v, cases[i].flags), MDB_KEYEXIST);
			EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT), 0);
			EXPECT(same(k, "k") && same(v, cases[i].last ? buf : cases[i].val));
		}
		/* the cursor stands on the last value: delete it */
		EXPECT_RC(mdb_cursor_del(c, 0), 0);
		k = sv("k");
		v = sv(buf);
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_GET_BOTH), MDB_NOTFOUND);
		mdb_size_t cnt = 0;
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_SET), 0);
		EXPECT_RC(mdb_cursor_count(c, &cnt), 0);
		EXPECT(cnt == n - 1);
		char msg[256];
		EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), MDB_SUCCESS);
		mdb_cursor_close(c);
		mdb_txn_abort(t);
	}
}

int main(void)
{
	tu_fresh_dir("build/dupfix_env");
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_set_mapsize(env, 16u << 20));
	MUST(mdb_env_open(env, "build/dupfix_env", 0, 0644));
	for (int how = 0; how < 3; how++) {
		failed_append(how, MDB_APPEND);
		failed_append(how, MDB_APPEND | MDB_APPENDDUP);
	}
	failed_append_single_last();
	put_current_one_value_subpage();
	multiple_incompatible_first();
	del_del_next_nodup();
	refused_dup_put_position();
	failed_set_then_dup_ops();	/* last: stock LMDB crashes in it */
	mdb_env_close(env);
	return tu_finish("dupfix_test");
}
