/*
 * dbisnap_test.c - a named-DB handle answers from the calling txn's
 * snapshot.  mdb_dbi_open finds a DB exactly when it exists in the txn's
 * view (its snapshot, or what the write txn and its parents changed), and
 * then the handle works there; otherwise MDB_NOTFOUND.  Handles registered
 * in the environment by other txns (open, committed after this one began,
 * aborted, nested) change nothing about that, nor do drops by later txns,
 * nor reset/renew of a reader, nor a freed slot taken by another name
 * (that waits for the txns that resolved its handle, and for no other).
 * All txns run on this thread (MDB_NOTLS).
 */
#include "testutil.h"

static const char *DIR0 = "build/dbisnap_env";

static MDB_env *open_env(void)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 8));
	MUST(mdb_env_set_mapsize(env, 1 << 22));
	MUST(mdb_env_open(env, DIR0, MDB_NOTLS, 0644));
	return env;
}

static MDB_txn *rd(MDB_env *env)
{
	MDB_txn *t;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
	return t;
}

static MDB_txn *wr(MDB_env *env, MDB_txn *parent)
{
	MDB_txn *t;
	MUST(mdb_txn_begin(env, parent, 0, &t));
	return t;
}

/* create DB name holding key "k" = val in txn w; its handle */
static MDB_dbi make_db(MDB_txn *w, const char *name, const char *val)
{
	MDB_dbi d;
	MUST(mdb_dbi_open(w, name, MDB_CREATE, &d));
	MDB_val k = {1, "k"}, v = {strlen(val), (void *)val};
	MUST(mdb_put(w, d, &k, &v, 0));
	return d;
}

/* The handle of name in t works there and holds "k" = want: get, cursor,
 * stat (one entry) and flags all answer. */
static void expect_db(MDB_txn *t, MDB_dbi d, const char *want, int line)
{
	MDB_val k = {1, "k"}, v;
	int rc = mdb_get(t, d, &k, &v);
	if (rc || v.mv_size != strlen(want) || memcmp(v.mv_data, want, v.mv_size)) {
		fprintf(stderr, "line %d: get on handle %u: rc %d (%s)\n", line, d, rc, mdb_strerror(rc));
		EXPECT(0);
		return;
	}
	MDB_cursor *c;
	EXPECT_RC(mdb_cursor_open(t, d, &c), 0);
	MDB_val ck, cv;
	EXPECT_RC(mdb_cursor_get(c, &ck, &cv, MDB_FIRST), 0);
	EXPECT(cv.mv_size == strlen(want) && !memcmp(cv.mv_data, want, cv.mv_size));
	mdb_cursor_close(c);
	MDB_stat st;
	EXPECT_RC(mdb_stat(t, d, &st), 0);
	EXPECT(st.ms_entries == 1);
	unsigned f = 99;
	EXPECT_RC(mdb_dbi_flags(t, d, &f), 0);
	EXPECT(f == 0);
}

/* open name in t without CREATE and check it holds want; want NULL: the
 * open answers MDB_NOTFOUND */
static void expect_open(MDB_txn *t, const char *name, const char *want, int line)
{
	MDB_dbi d = 12345;
	int rc = mdb_dbi_open(t, name, 0, &d);
	if (!want) {
		if (rc != MDB_NOTFOUND) {
			fprintf(stderr, "line %d: open %s: rc %d (%s), wanted MDB_NOTFOUND\n", line,
				name, rc, mdb_strerror(rc));
			EXPECT(0);
		}
		return;
	}
	if (rc) {
		fprintf(stderr, "line %d: open %s: rc %d (%s)\n", line, name, rc, mdb_strerror(rc));
		EXPECT(0);
		return;
	}
	expect_db(t, d, want, line);
}
#define OPEN_OK(t, name, want) expect_open(t, name, want, __LINE__)
#define OPEN_NONE(t, name) expect_open(t, name, NULL, __LINE__)

/* a DB created by a write txn that is open, commits later, or aborts */
static void test_concurrent_create(MDB_env *env)
{
	MDB_txn *r0 = rd(env);
	MDB_txn *w = wr(env, NULL);
	MDB_dbi dx = make_db(w, "x", "1");
	OPEN_NONE(r0, "x");
	MDB_val k = {1, "k"}, v;
	/* the writer's handle, used directly: not a DB of r0's snapshot */
	EXPECT_RC(mdb_get(r0, dx, &k, &v), EINVAL);
	MUST(mdb_txn_commit(w));
	OPEN_NONE(r0, "x");
	EXPECT_RC(mdb_get(r0, dx, &k, &v), EINVAL);
	MDB_txn *r1 = rd(env);
	OPEN_OK(r1, "x", "1");
	expect_db(r1, dx, "1", __LINE__);
	OPEN_NONE(r0, "x");	/* still not, now that r1 resolved it */
	mdb_txn_abort(r1);
	mdb_txn_abort(r0);

	/* aborted create: nobody finds it, and the name can be created again */
	r0 = rd(env);
	w = wr(env, NULL);
	make_db(w, "y", "1");
	OPEN_NONE(r0, "y");
	mdb_txn_abort(w);
	OPEN_NONE(r0, "y");
	w = wr(env, NULL);
	OPEN_NONE(w, "y");
	mdb_txn_abort(w);
	MDB_txn *r2 = rd(env);
	OPEN_NONE(r2, "y");
	mdb_txn_abort(r2);
	mdb_txn_abort(r0);
}

static void test_nested(MDB_env *env)
{
	MDB_txn *r0 = rd(env);
	MDB_txn *w = wr(env, NULL);
	MDB_txn *c = wr(env, w);
	make_db(c, "n", "1");
	OPEN_NONE(r0, "n");
	mdb_txn_abort(c);
	OPEN_NONE(w, "n");
	OPEN_NONE(r0, "n");
	c = wr(env, w);
	make_db(c, "n", "2");
	MUST(mdb_txn_commit(c));
	OPEN_OK(w, "n", "2");
	OPEN_NONE(r0, "n");
	mdb_txn_abort(w);	/* the parent drops what the child made */
	OPEN_NONE(r0, "n");
	MDB_txn *r1 = rd(env);
	OPEN_NONE(r1, "n");
	mdb_txn_abort(r1);

	w = wr(env, NULL);
	c = wr(env, w);
	MDB_txn *g = wr(env, c);
	make_db(g, "n", "3");
	MUST(mdb_txn_commit(g));
	MUST(mdb_txn_commit(c));
	OPEN_NONE(r0, "n");
	MUST(mdb_txn_commit(w));
	OPEN_NONE(r0, "n");
	r1 = rd(env);
	OPEN_OK(r1, "n", "3");
	mdb_txn_abort(r1);
	mdb_txn_abort(r0);
}

/* mdb_drop(del=1): readers of earlier snapshots keep the DB, whether they
 * opened it before the drop or after; readers of later ones do not see it */
static void test_drop(MDB_env *env)
{
	MDB_txn *w = wr(env, NULL);
	make_db(w, "d", "old");
	MUST(mdb_txn_commit(w));
	MDB_txn *r1 = rd(env), *r2 = rd(env), *r3 = rd(env);
	MDB_dbi d1;
	MUST(mdb_dbi_open(r1, "d", 0, &d1));
	expect_db(r1, d1, "old", __LINE__);	/* r1 has read it, r2 and r3 not */
	MDB_dbi d3;
	MUST(mdb_dbi_open(r3, "d", 0, &d3));	/* r3 opened it, read nothing yet */
	w = wr(env, NULL);
	MDB_dbi dw;
	MUST(mdb_dbi_open(w, "d", 0, &dw));
	MUST(mdb_drop(w, dw, 1));
	OPEN_NONE(w, "d");
	expect_db(r1, d1, "old", __LINE__);
	OPEN_OK(r2, "d", "old");
	expect_db(r3, d3, "old", __LINE__);
	MUST(mdb_txn_commit(w));
	expect_db(r1, d1, "old", __LINE__);
	OPEN_OK(r1, "d", "old");
	OPEN_OK(r2, "d", "old");
	MDB_txn *r4 = rd(env);
	OPEN_NONE(r4, "d");
	/* recreated: the old readers keep the old DB, r4 still has none */
	w = wr(env, NULL);
	make_db(w, "d", "new");
	MUST(mdb_txn_commit(w));
	OPEN_OK(r1, "d", "old");
	OPEN_OK(r2, "d", "old");
	expect_db(r3, d3, "old", __LINE__);
	OPEN_NONE(r4, "d");
	MDB_txn *r5 = rd(env);
	OPEN_OK(r5, "d", "new");
	mdb_txn_abort(r5);
	mdb_txn_abort(r4);
	mdb_txn_abort(r3);
	mdb_txn_abort(r2);
	mdb_txn_abort(r1);

	/* a drop that aborts: the DB is still there for everyone */
	w = wr(env, NULL);
	MUST(mdb_dbi_open(w, "d", 0, &dw));
	MUST(mdb_drop(w, dw, 1));
	mdb_txn_abort(w);
	r1 = rd(env);
	OPEN_OK(r1, "d", "new");
	mdb_txn_abort(r1);
	w = wr(env, NULL);
	OPEN_OK(w, "d", "new");
	mdb_txn_abort(w);
}

/* a reader reset and renewed across the commit that creates (or drops) */
static void test_renew(MDB_env *env)
{
	MDB_txn *r = rd(env);
	OPEN_NONE(r, "p");
	mdb_txn_reset(r);
	MDB_txn *w = wr(env, NULL);
	make_db(w, "p", "1");
	MUST(mdb_txn_commit(w));
	MUST(mdb_txn_renew(r));
	OPEN_OK(r, "p", "1");
	mdb_txn_reset(r);
	w = wr(env, NULL);
	MDB_dbi dp;
	MUST(mdb_dbi_open(w, "p", 0, &dp));
	MUST(mdb_drop(w, dp, 1));
	MUST(mdb_txn_commit(w));
	MUST(mdb_txn_renew(r));
	OPEN_NONE(r, "p");
	MDB_val k = {1, "k"}, v;
	EXPECT_RC(mdb_get(r, dp, &k, &v), EINVAL);
	mdb_txn_abort(r);
}

/* A handle registered by a reader that aborts stays usable by the other
 * txns that opened it meanwhile (here: a writer that then commits). */
static void test_shared_handle(MDB_env *env)
{
	MDB_txn *w = wr(env, NULL);
	MDB_dbi ds = make_db(w, "s", "1");
	MUST(mdb_txn_commit(w));
	mdb_dbi_close(env, ds);	/* no handle left for "s" */
	MDB_txn *r = rd(env);
	MDB_dbi d1, d2;
	MUST(mdb_dbi_open(r, "s", 0, &d1));	/* registered by the reader */
	w = wr(env, NULL);
	MUST(mdb_dbi_open(w, "s", 0, &d2));
	EXPECT(d1 == d2);
	mdb_txn_abort(r);
	MDB_val k = {1, "k"}, v = {1, "2"};
	EXPECT_RC(mdb_put(w, d2, &k, &v, 0), 0);
	EXPECT_RC(mdb_txn_commit(w), 0);
	r = rd(env);
	OPEN_OK(r, "s", "2");
	mdb_txn_abort(r);
}


/* A child drops a DB the parent changed, then aborts: the parent's open by
 * name gives its own record back (stock LMDB re-reads the main DB's and
 * loses the parent's puts). */
static void test_child_drop_abort(MDB_env *env)
{
	MDB_txn *w = wr(env, NULL);
	make_db(w, "q", "1");
	MUST(mdb_txn_commit(w));
	w = wr(env, NULL);
	MDB_dbi d;
	MUST(mdb_dbi_open(w, "q", 0, &d));
	MDB_val k = {1, "k"}, v = {1, "2"};
	MUST(mdb_put(w, d, &k, &v, 0));
	MDB_txn *c = wr(env, w);
	MUST(mdb_drop(c, d, 1));
	OPEN_NONE(c, "q");
	mdb_txn_abort(c);
	OPEN_OK(w, "q", "2");
	expect_db(w, d, "2", __LINE__);
	MUST(mdb_txn_commit(w));
	MDB_txn *r = rd(env);
	OPEN_OK(r, "q", "2");
	mdb_txn_abort(r);
}

/* Few slots: a reader of an old snapshot keeps its DB while the writer
 * drops it and creates others; the slot takes another name only once that
 * reader has ended, and until then a registration that finds no slot
 * answers MDB_DBS_FULL. */
static void test_slot_reuse(void)
{
	static const char *dir = "build/dbisnap_env2";
	tu_fresh_dir(dir);
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));	/* two named DBs */
	MUST(mdb_env_open(env, dir, MDB_NOTLS, 0644));
	MDB_txn *w = wr(env, NULL);
	make_db(w, "t1", "1");
	make_db(w, "t2", "2");
	MUST(mdb_txn_commit(w));
	MDB_txn *r = rd(env);
	MDB_dbi d1;
	MUST(mdb_dbi_open(r, "t1", 0, &d1));
	w = wr(env, NULL);
	MDB_dbi wd;
	MUST(mdb_dbi_open(w, "t1", 0, &wd));
	MUST(mdb_drop(w, wd, 1));
	MUST(mdb_txn_commit(w));
	for (int i = 0; i < 3; i++) {	/* other txns come and go */
		MDB_txn *r2 = rd(env);
		OPEN_NONE(r2, "t1");
		OPEN_OK(r2, "t2", "2");
		mdb_txn_abort(r2);
	}
	w = wr(env, NULL);
	MDB_dbi d3;
	EXPECT_RC(mdb_dbi_open(w, "t3", MDB_CREATE, &d3), MDB_DBS_FULL);
	mdb_txn_abort(w);
	expect_db(r, d1, "1", __LINE__);	/* the reader still has t1 */
	mdb_txn_abort(r);
	w = wr(env, NULL);
	MUST(mdb_dbi_open(w, "t3", MDB_CREATE, &d3));
	EXPECT(d3 == d1);	/* t1's slot, now free for any name */
	MDB_val k = {1, "k"}, v = {1, "3"};
	MUST(mdb_put(w, d3, &k, &v, 0));
	MUST(mdb_txn_commit(w));
	r = rd(env);
	OPEN_OK(r, "t3", "3");
	OPEN_OK(r, "t2", "2");
	MDB_dbi dn;	/* every slot in use: as stock, before looking the name up */
	EXPECT_RC(mdb_dbi_open(r, "t1", 0, &dn), MDB_DBS_FULL);
	mdb_txn_abort(r);
	/* with no other txn about, a slot freed by the last commit takes
	 * another name in the very next txn */
	w = wr(env, NULL);
	MUST(mdb_drop(w, d3, 1));
	MUST(mdb_txn_commit(w));
	w = wr(env, NULL);
	MDB_dbi d4;
	EXPECT_RC(mdb_dbi_open(w, "t4", MDB_CREATE, &d4), 0);
	EXPECT(d4 == d3);
	MUST(mdb_txn_commit(w));
	mdb_env_close(env);
}

/* The pattern of mdb_stat -a and our tools: one txn opens, uses and closes
 * each named DB in turn, with fewer slots than DBs.  The txn gives up its
 * own binding of a closed slot, so the slot takes the next name at once;
 * a slot another live txn has bound, a DB this txn changed, or one a write
 * txn's cursor still stands on is not taken (MDB_DBS_FULL instead). */
static void test_close_reopen_one_txn(void)
{
	static const char *dir = "build/dbisnap_env3";
	static const char *names[] = {"a", "bb", "ccc", "dddd", "eeeee"};
	tu_fresh_dir(dir);
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 6));
	MUST(mdb_env_open(env, dir, MDB_NOTLS, 0644));
	MDB_txn *w = wr(env, NULL);
	for (int i = 0; i < 5; i++)
		make_db(w, names[i], names[i]);
	MUST(mdb_txn_commit(w));
	mdb_env_close(env);

	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 1));	/* one slot for five DBs */
	MUST(mdb_env_open(env, dir, MDB_NOTLS, 0644));
	for (int pass = 0; pass < 2; pass++) {	/* a read txn, then a write txn */
		MDB_txn *t = pass ? wr(env, NULL) : rd(env);
		for (int i = 0; i < 5; i++) {
			MDB_dbi d;
			EXPECT_RC(mdb_dbi_open(t, names[i], 0, &d), 0);
			expect_db(t, d, names[i], __LINE__);
			mdb_dbi_close(env, d);
		}
		mdb_txn_abort(t);
	}
	/* another live txn has the slot bound: not renamed under it */
	MDB_txn *r = rd(env), *t;
	MDB_dbi d, d2;
	MUST(mdb_dbi_open(r, "a", 0, &d));
	expect_db(r, d, "a", __LINE__);
	t = rd(env);
	mdb_dbi_close(env, d);
	EXPECT_RC(mdb_dbi_open(t, "bb", 0, &d2), MDB_DBS_FULL);
	expect_db(r, d, "a", __LINE__);	/* r still reads its own DB */
	mdb_txn_abort(t);
	mdb_txn_abort(r);
	/* a write txn that changed the closed DB, or has a cursor on it */
	w = wr(env, NULL);
	MUST(mdb_dbi_open(w, "a", 0, &d));
	MDB_val k = {1, "k"}, v = {2, "a2"};
	MUST(mdb_put(w, d, &k, &v, 0));
	mdb_dbi_close(env, d);
	EXPECT_RC(mdb_dbi_open(w, "bb", 0, &d2), MDB_DBS_FULL);
	mdb_txn_abort(w);
	w = wr(env, NULL);
	MDB_cursor *c;
	MUST(mdb_dbi_open(w, "a", 0, &d));
	MUST(mdb_cursor_open(w, d, &c));
	mdb_dbi_close(env, d);
	EXPECT_RC(mdb_dbi_open(w, "bb", 0, &d2), MDB_DBS_FULL);
	mdb_cursor_close(c);
	EXPECT_RC(mdb_dbi_open(w, "bb", 0, &d2), 0);	/* the cursor is gone */
	expect_db(w, d2, "bb", __LINE__);
	mdb_txn_abort(w);
	r = rd(env);
	OPEN_OK(r, "a", "a");	/* the aborted put left nothing */
	mdb_txn_abort(r);
	mdb_env_close(env);
}

/* A closed slot takes another name as soon as no live txn resolved its
 * handle, whatever other txns live (as stock, which reuses it at once):
 * with two slots and long-lived readers, one that bound nothing and one
 * that began while the handle was open but never used it, a loop of
 * write txns opens a fresh name, uses it and closes it, many times; each
 * registration takes the freed slot.  A reader's unused begin-time binding
 * of a renamed slot answers MDB_BAD_DBI; a reader, a reset reader and a
 * child txn that did resolve the handle keep the slot until they end. */
static void test_rename_live_readers(void)
{
	static const char *dir = "build/dbisnap_env4";
	tu_fresh_dir(dir);
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));
	MUST(mdb_env_open(env, dir, MDB_NOTLS, 0644));
	MDB_txn *w = wr(env, NULL);
	MDB_dbi keep = make_db(w, "keep", "K");
	MUST(mdb_txn_commit(w));
	MDB_txn *idle = rd(env);	/* binds "keep" at begin, resolves nothing */
	OPEN_OK(idle, "keep", "K");
	MDB_txn *late = NULL;
	MDB_dbi lastd = 0;
	char name[16], val[16];
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof name, "n%d", i);
		snprintf(val, sizeof val, "v%d", i);
		w = wr(env, NULL);
		MDB_dbi d;
		int rc = mdb_dbi_open(w, name, MDB_CREATE, &d);
		EXPECT_RC(rc, 0);
		if (rc) {
			mdb_txn_abort(w);
			break;
		}
		EXPECT(d != keep);
		MDB_val k = {1, "k"}, v = {strlen(val), val};
		MUST(mdb_put(w, d, &k, &v, 0));
		MUST(mdb_txn_commit(w));
		if (i == 0) {
			late = rd(env);	/* has n0 bound at begin, never uses it */
			lastd = d;
		}
		mdb_dbi_close(env, d);
	}
	/* late's handle of n0 names another DB now: never used, so not counted,
	 * and its first use finds the slot renamed */
	MDB_val k = {1, "k"}, v;
	EXPECT_RC(mdb_get(late, lastd, &k, &v), MDB_BAD_DBI);
	MDB_dbi d0;	/* by name n0 is found in late's snapshot */
	MUST(mdb_dbi_open(late, "n0", 0, &d0));
	expect_db(late, d0, "v0", __LINE__);
	mdb_dbi_close(env, d0);
	OPEN_NONE(late, "n1");	/* late gives up its own binding of the slot */
	mdb_txn_abort(late);
	OPEN_OK(idle, "keep", "K");
	OPEN_NONE(idle, "n5");

	/* a reader that resolved the closed handle keeps the slot */
	MDB_txn *r = rd(env);
	MDB_dbi dr;
	MUST(mdb_dbi_open(r, "n39", 0, &dr));
	expect_db(r, dr, "v39", __LINE__);
	mdb_dbi_close(env, dr);
	w = wr(env, NULL);
	MDB_dbi d2;
	EXPECT_RC(mdb_dbi_open(w, "x1", MDB_CREATE, &d2), MDB_DBS_FULL);
	expect_db(r, dr, "v39", __LINE__);
	/* a reset gives the slot up, before the renew or the end */
	mdb_txn_reset(r);
	EXPECT_RC(mdb_dbi_open(w, "x1", MDB_CREATE, &d2), 0);
	EXPECT(d2 == dr);
	mdb_dbi_close(env, d2);	/* aborted and closed: free, nobody counts it */
	mdb_txn_abort(w);
	MUST(mdb_txn_renew(r));
	OPEN_OK(r, "n39", "v39");	/* registered again in the same slot */
	MUST(mdb_dbi_open(r, "n39", 0, &dr));
	mdb_dbi_close(env, dr);
	mdb_txn_abort(r);

	/* a child's resolution: released when the child aborts, kept by the
	 * parent when it commits */
	w = wr(env, NULL);
	MDB_txn *c = wr(env, w);
	MUST(mdb_dbi_open(c, "n39", 0, &dr));
	expect_db(c, dr, "v39", __LINE__);
	mdb_txn_abort(c);
	mdb_dbi_close(env, dr);
	r = rd(env);
	EXPECT_RC(mdb_dbi_open(r, "n38", 0, &d2), 0);	/* the slot was free to take */
	EXPECT(d2 == dr);
	expect_db(r, d2, "v38", __LINE__);
	mdb_dbi_close(env, d2);
	mdb_txn_abort(r);
	c = wr(env, w);
	MUST(mdb_dbi_open(c, "n37", 0, &dr));
	MUST(mdb_txn_commit(c));
	mdb_dbi_close(env, dr);
	r = rd(env);
	EXPECT_RC(mdb_dbi_open(r, "n36", 0, &d2), MDB_DBS_FULL);	/* w counts it */
	expect_db(w, dr, "v37", __LINE__);
	mdb_txn_abort(w);
	EXPECT_RC(mdb_dbi_open(r, "n36", 0, &d2), 0);
	expect_db(r, d2, "v36", __LINE__);
	mdb_txn_abort(r);
	mdb_txn_abort(idle);
	mdb_env_close(env);
}

int main(void)
{
	tu_fresh_dir(DIR0);
	MDB_env *env = open_env();
	test_concurrent_create(env);
	test_nested(env);
	test_drop(env);
	test_renew(env);
	test_shared_handle(env);
	test_child_drop_abort(env);
	mdb_env_close(env);
	test_slot_reuse();
	test_close_reopen_one_txn();
	test_rename_live_readers();
	return tu_finish("dbisnap_test");
}
