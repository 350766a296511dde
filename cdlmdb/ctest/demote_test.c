/*
 * demote_test.c - duplicates moving back from a sub-tree to an inline
 * sub-page (FORMAT.md, "When duplicates move").
 *
 * For each flavour of duplicate DB (DUPSORT, DUPFIXED, DUPFIXED+INTEGERDUP,
 * REVERSEDUP, COUNTED+DUPSORT):
 *  1. boundaries: one key grows a value at a time until its node becomes a
 *     sub-tree, then shrinks until it is a sub-page again; the node kind is
 *     read through the engine's internals after every step and both
 *     switching points must be the documented ones (promote when the inline
 *     node would exceed nodemax, demote when a delete leaves a one-leaf
 *     sub-tree whose inline node is <= nodemax / 2), the demotion counter
 *     moves by exactly one, the sub-tree's leaf is no longer in use (the
 *     pages reachable from the DB drop by one) and mdb_txn_check (which
 *     also finds leaked and doubly used pages) passes;
 *  2. hysteresis: put/delete alternation right at either boundary changes
 *     nothing after the first switch;
 *  3. cursors: a deleting cursor, cursors parked on other duplicates of the
 *     key and on the neighbouring keys read the same items after the
 *     demoting delete as an A/B twin env that runs the same calls with
 *     demotion switched off, and the items the model expects;
 *  4. nested txns: a child demotes; abort brings the parent's sub-tree back
 *     (kind, values, page accounting); commit keeps the sub-page;
 *  5. random puts/deletes (txn and cursor forms, MDB_CURRENT replacements,
 *     commits, aborts, nested txns) against a bitmap model and against the
 *     demotion-off twin, checking the demotion rule after every delete
 *     (DEMOTE_SEED picks another stream; the seed is printed).
 */
#include "../internal.h"
#include "testutil.h"

/* test hooks of dupsort.c (not part of lmdb.h) */
unsigned long long dlmdb_debug_demotions(void);
void dlmdb_debug_demote_enable(int on);

enum { K_NONE, K_SINGLE, K_SUBPAGE, K_SUBTREE };

struct flavour {
	const char *name;
	unsigned flags;
	unsigned vsize;		/* fixed value size, 0 = variable */
};

static const struct flavour FLAV[] = {
	{"dupsort", MDB_DUPSORT, 0},
	{"dupfixed", MDB_DUPSORT | MDB_DUPFIXED, 8},
	{"intdup", MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP, 4},
	{"revdup", MDB_DUPSORT | MDB_REVERSEDUP, 0},
	{"counted", MDB_DUPSORT | MDB_COUNTED, 0},
};
#define NFLAV (sizeof FLAV / sizeof FLAV[0])

#define MAXVAL 24

/* Value number id of a flavour (distinct ids give distinct values). */
static size_t value_of(const struct flavour *f, unsigned id, unsigned char *buf)
{
	if (f->vsize == 8) {
		uint64_t v = (uint64_t)id * 2654435761u + 17;
		memcpy(buf, &v, 8);
		return 8;
	}
	if (f->vsize == 4) {
		uint32_t v = id * 7919u + 3;
		memcpy(buf, &v, 4);
		return 4;
	}
	size_t len = 5 + id % 17;
	snprintf((char *)buf, 6, "%05u", id);
	for (size_t j = 5; j < len; j++)
		buf[j] = (unsigned char)('a' + (id * 7 + j) % 26);
	return len;
}

static size_t nodemax_of(MDB_env *env)
{
	MDB_stat st;
	MUST(mdb_env_stat(env, &st));
	return ((st.ms_psize - 16) / 2 & ~1u) - 2;
}

/* Inline node size (8 + key + exact sub-page) of a key holding these values. */
static size_t inline_size(const struct flavour *f, size_t ksize, const unsigned *ids, unsigned n)
{
	size_t sz = 8 + ksize + 16;
	unsigned char b[MAXVAL];
	for (unsigned i = 0; i < n; i++) {
		if (f->vsize)
			sz += f->vsize;
		else
			sz += 2 + ((8 + value_of(f, ids[i], b) + 1) & ~(size_t)1);
	}
	return sz;
}

/* Kind of the node of key (engine internals: the cursor's leaf slot); for a
 * sub-tree its record goes to *rec. */
static int key_kind(MDB_txn *txn, MDB_dbi dbi, const char *key, dl_dbrec *rec)
{
	MDB_cursor *c;
	MUST(mdb_cursor_open(txn, dbi, &c));
	MDB_val k = {strlen(key), (void *)key}, d;
	int kind = K_NONE;
	if (mdb_cursor_get(c, &k, &d, MDB_SET) == 0) {
		dl_node *n = dl_pg_node(c->c_pg[c->c_top], c->c_ki[c->c_top]);
		if (!(n->n_flags & DL_N_DUP)) {
			kind = K_SINGLE;
		} else if (n->n_flags & DL_N_TREE) {
			kind = K_SUBTREE;
			if (rec)
				memcpy(rec, dl_node_data(n), sizeof *rec);
		} else {
			kind = K_SUBPAGE;
		}
	}
	mdb_cursor_close(c);
	return kind;
}

/* Pages in use by the DB: its own counts plus those of every sub-tree. */
static uint64_t db_pages(MDB_txn *txn, MDB_dbi dbi)
{
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	uint64_t total = st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
	MDB_cursor *c;
	MUST(mdb_cursor_open(txn, dbi, &c));
	MDB_val k, d;
	for (int rc = mdb_cursor_get(c, &k, &d, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_NODUP)) {
		dl_node *n = dl_pg_node(c->c_pg[c->c_top], c->c_ki[c->c_top]);
		if ((n->n_flags & (DL_N_DUP | DL_N_TREE)) == (DL_N_DUP | DL_N_TREE)) {
			dl_dbrec rec;
			memcpy(&rec, dl_node_data(n), sizeof rec);
			total += rec.d_branch + rec.d_leaf + rec.d_overflow;
		}
	}
	mdb_cursor_close(c);
	return total;
}

static void expect_check(MDB_txn *txn, const char *where)
{
	char msg[256];
	int rc = mdb_txn_check(txn, msg, sizeof msg);
	tu_checks++;
	if (rc) {
		tu_failures++;
		fprintf(stderr, "%s: mdb_txn_check: %s\n", where, msg);
	}
}

static MDB_env *open_env(const char *dir)
{
	MDB_env *env;
	tu_fresh_dir(dir);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 8));
	MUST(mdb_env_set_mapsize(env, (size_t)128 << 20));
	MUST(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
	return env;
}

static int put_id(MDB_txn *txn, MDB_dbi dbi, const struct flavour *f, const char *key, unsigned id)
{
	unsigned char b[MAXVAL];
	MDB_val k = {strlen(key), (void *)key}, d = {value_of(f, id, b), b};
	return mdb_put(txn, dbi, &k, &d, MDB_NODUPDATA);
}

static int del_id(MDB_txn *txn, MDB_dbi dbi, const struct flavour *f, const char *key, unsigned id)
{
	unsigned char b[MAXVAL];
	MDB_val k = {strlen(key), (void *)key}, d = {value_of(f, id, b), b};
	return mdb_del(txn, dbi, &k, &d);
}

/* ---- 1 + 2: boundaries and hysteresis ------------------------------------------ */

static void test_boundaries(const struct flavour *f)
{
	MDB_env *env = open_env("build/demote_b");
	size_t nodemax = nodemax_of(env);
	MDB_txn *txn;
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, f->name, MDB_CREATE | f->flags, &dbi));
	const char *key = "boundary";
	/* neighbours so the main tree has more than this key */
	MUST(put_id(txn, dbi, f, "a-before", 1));
	MUST(put_id(txn, dbi, f, "z-after", 2));
	MUST(put_id(txn, dbi, f, "z-after", 3));
	unsigned ids[4096], n = 0;
	/* grow until promoted */
	while (key_kind(txn, dbi, key, NULL) != K_SUBTREE && n < 4000) {
		size_t before = inline_size(f, strlen(key), ids, n);
		ids[n] = n + 100;
		MUST(put_id(txn, dbi, f, key, ids[n]));
		n++;
		int kind = key_kind(txn, dbi, key, NULL);
		if (kind == K_SUBTREE) {
			/* promoted exactly when the inline node would exceed nodemax */
			EXPECT(before <= nodemax);
			EXPECT(inline_size(f, strlen(key), ids, n) > nodemax);
		} else {
			EXPECT(kind == (n == 1 ? K_SINGLE : K_SUBPAGE));
			EXPECT(inline_size(f, strlen(key), ids, n) <= nodemax);
		}
	}
	unsigned npromote = n;
	EXPECT(npromote > 2 && npromote < 4000);
	expect_check(txn, "after promotion");
	/* hysteresis at the promotion boundary: delete the newest value, put it
	 * back, several times: it stays a sub-tree and nothing is demoted */
	unsigned long long d0 = dlmdb_debug_demotions();
	for (int r = 0; r < 4; r++) {
		MUST(del_id(txn, dbi, f, key, ids[n - 1]));
		EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBTREE);
		MUST(put_id(txn, dbi, f, key, ids[n - 1]));
		EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBTREE);
	}
	EXPECT(dlmdb_debug_demotions() == d0);
	MUST(mdb_txn_commit(txn));
	/* shrink from the front until demoted (a new txn: the leaf is a committed page) */
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	unsigned first = 0, ndemote = 0;
	for (;;) {
		dl_dbrec rec;
		uint64_t pages = db_pages(txn, dbi);
		int was = key_kind(txn, dbi, key, &rec);
		EXPECT(was == K_SUBTREE);
		MUST(del_id(txn, dbi, f, key, ids[first]));
		first++;
		size_t now = inline_size(f, strlen(key), ids + first, n - first);
		dl_dbrec rec2;
		int kind = key_kind(txn, dbi, key, &rec2);
		if (kind == K_SUBPAGE) {
			EXPECT(rec.d_depth == 1 || rec.d_depth == 2);
			EXPECT(now <= nodemax / 2);
			EXPECT(dlmdb_debug_demotions() == d0 + 1);
			/* the sub-tree's pages left the DB (one leaf, unless this
			 * delete also merged a two-level sub-tree) */
			if (rec.d_depth == 1)
				EXPECT(db_pages(txn, dbi) == pages - 1);
			else
				EXPECT(db_pages(txn, dbi) < pages);
			ndemote = n - first;
			break;
		}
		EXPECT(kind == K_SUBTREE);
		/* still a sub-tree: the rule did not apply */
		EXPECT(rec2.d_depth > 1 || now > nodemax / 2);
		EXPECT(dlmdb_debug_demotions() == d0);
		if (first >= n - 1)
			break;
	}
	EXPECT(ndemote > 0 && ndemote < npromote);
	expect_check(txn, "after demotion");
	/* contents intact, in the duplicate order */
	{
		MDB_cursor *c;
		MUST(mdb_cursor_open(txn, dbi, &c));
		MDB_val k = {strlen(key), (void *)key}, d, prev = {0, NULL};
		mdb_size_t cnt = 0;
		unsigned seen = 0;
		int rc = mdb_cursor_get(c, &k, &d, MDB_SET);
		EXPECT(rc == 0);
		EXPECT(mdb_cursor_count(c, &cnt) == 0 && cnt == ndemote);
		for (; rc == 0; rc = mdb_cursor_get(c, &k, &d, MDB_NEXT_DUP), seen++) {
			if (prev.mv_data)
				EXPECT(mdb_dcmp(txn, dbi, &prev, &d) < 0);
			prev = d;
		}
		EXPECT(seen == ndemote);
		mdb_cursor_close(c);
	}
	if (f->flags & MDB_COUNTED) {
		uint64_t all = 0;
		MUST(mdb_count_all(txn, dbi, 0, &all));
		EXPECT(all == ndemote + 3);
	}
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == ndemote + 3);
	/* hysteresis at the demotion boundary: put/delete alternation keeps it
	 * inline, and a put never promotes before nodemax */
	d0 = dlmdb_debug_demotions();
	for (int r = 0; r < 4; r++) {
		MUST(put_id(txn, dbi, f, key, ids[first - 1]));
		EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBPAGE);
		MUST(del_id(txn, dbi, f, key, ids[first - 1]));
		EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBPAGE);
	}
	EXPECT(dlmdb_debug_demotions() == d0);
	/* and it grows again up to the promotion point before moving out */
	unsigned back = first;
	while (key_kind(txn, dbi, key, NULL) == K_SUBPAGE && back > 0) {
		EXPECT(inline_size(f, strlen(key), ids + back, n - back) <= nodemax);
		MUST(put_id(txn, dbi, f, key, ids[--back]));
	}
	EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBTREE);
	EXPECT(inline_size(f, strlen(key), ids + back, n - back) > nodemax);
	expect_check(txn, "regrown");
	MUST(mdb_txn_commit(txn));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	expect_check(txn, "committed");
	mdb_txn_abort(txn);
	printf("  %s: promoted at %u values, demoted at %u (nodemax %zu)\n", f->name, npromote, ndemote,
		nodemax);
	mdb_env_close(env);
}

/* ---- 3: cursors across the demoting delete (A/B twin) ------------------------------ */

struct twin {
	MDB_env *env[2];
	MDB_txn *txn[2];
	MDB_dbi dbi[2];
};

static int same_val(const MDB_val *a, const MDB_val *b)
{
	return a->mv_size == b->mv_size && (!a->mv_size || !memcmp(a->mv_data, b->mv_data, a->mv_size));
}

/* Run a cursor read on both sides; the results must agree. */
static void same_get(MDB_cursor *a, MDB_cursor *b, MDB_cursor_op op, const char *what)
{
	MDB_val ka = {0, NULL}, da = {0, NULL}, kb = {0, NULL}, db = {0, NULL};
	dlmdb_debug_demote_enable(1);
	int ra = mdb_cursor_get(a, &ka, &da, op);
	dlmdb_debug_demote_enable(0);
	int rb = mdb_cursor_get(b, &kb, &db, op);
	dlmdb_debug_demote_enable(1);
	tu_checks++;
	int same = ra == rb && (ra != 0 || (same_val(&ka, &kb) && same_val(&da, &db)));
	if (!same) {
		tu_failures++;
		fprintf(stderr, "%s op %d: demoting side rc %d (%.*s), twin rc %d (%.*s)\n", what, (int)op, ra,
			(int)ka.mv_size, ka.mv_size ? (char *)ka.mv_data : "", rb, (int)kb.mv_size,
			kb.mv_size ? (char *)kb.mv_data : "");
	}
}

static void expect_at(MDB_cursor *c, const struct flavour *f, const char *key, unsigned id)
{
	unsigned char b[MAXVAL];
	MDB_val k, d;
	size_t len = value_of(f, id, b);
	int rc = mdb_cursor_get(c, &k, &d, MDB_GET_CURRENT);
	EXPECT(rc == 0);
	if (rc == 0) {
		EXPECT(k.mv_size == strlen(key) && !memcmp(k.mv_data, key, k.mv_size));
		EXPECT(d.mv_size == len && !memcmp(d.mv_data, b, len));
	}
}

static void park(MDB_cursor *c, const struct flavour *f, const char *key, unsigned id)
{
	unsigned char b[MAXVAL];
	MDB_val k = {strlen(key), (void *)key}, d = {value_of(f, id, b), b};
	MUST(mdb_cursor_get(c, &k, &d, MDB_GET_BOTH));
}

/* positions of the deleting cursor: on a middle value, the first, the last */
static void test_cursors(const struct flavour *f, int where)
{
	struct twin t;
	const char *dirs[2] = {"build/demote_ca", "build/demote_cb"};
	const char *key = "middle";
	unsigned n = 0, ids[2048];
	for (int s = 0; s < 2; s++) {
		t.env[s] = open_env(dirs[s]);
		dlmdb_debug_demote_enable(s == 0);
		MUST(mdb_txn_begin(t.env[s], NULL, 0, &t.txn[s]));
		MUST(mdb_dbi_open(t.txn[s], f->name, MDB_CREATE | f->flags, &t.dbi[s]));
		MUST(put_id(t.txn[s], t.dbi[s], f, "lower", 7));
		MUST(put_id(t.txn[s], t.dbi[s], f, "lower", 8));
		MUST(put_id(t.txn[s], t.dbi[s], f, "upper", 9));
		MUST(put_id(t.txn[s], t.dbi[s], f, "upper", 10));
		n = 0;
		while (key_kind(t.txn[s], t.dbi[s], key, NULL) != K_SUBTREE) {
			ids[n] = 1000 + n;
			MUST(put_id(t.txn[s], t.dbi[s], f, key, ids[n]));
			n++;
		}
	}
	dlmdb_debug_demote_enable(1);
	size_t nodemax = nodemax_of(t.env[0]);
	/* delete from the end (txn-level) until one more delete demotes */
	while (inline_size(f, strlen(key), ids, n - 1) > nodemax / 2) {
		for (int s = 0; s < 2; s++) {
			dlmdb_debug_demote_enable(s == 0);
			MUST(del_id(t.txn[s], t.dbi[s], f, key, ids[n - 1]));
		}
		n--;
	}
	dlmdb_debug_demote_enable(1);
	EXPECT(key_kind(t.txn[0], t.dbi[0], key, NULL) == K_SUBTREE);
	/* the values in duplicate order (REVERSEDUP/INTEGERDUP sort differently) */
	unsigned order[2048];
	memcpy(order, ids, n * sizeof *order);
	for (unsigned i = 1; i < n; i++) {
		for (unsigned j = i; j > 0; j--) {
			unsigned char x[MAXVAL], y[MAXVAL];
			MDB_val vx = {value_of(f, order[j - 1], x), x}, vy = {value_of(f, order[j], y), y};
			if (mdb_dcmp(t.txn[0], t.dbi[0], &vx, &vy) <= 0)
				break;
			unsigned tmp = order[j];
			order[j] = order[j - 1];
			order[j - 1] = tmp;
		}
	}
	unsigned victim = where == 0 ? n / 2 : where == 1 ? 0 : n - 1;
	MDB_cursor *del[2], *other[2], *lo[2], *up[2], *last[2];
	for (int s = 0; s < 2; s++) {
		MUST(mdb_cursor_open(t.txn[s], t.dbi[s], &del[s]));
		MUST(mdb_cursor_open(t.txn[s], t.dbi[s], &other[s]));
		MUST(mdb_cursor_open(t.txn[s], t.dbi[s], &lo[s]));
		MUST(mdb_cursor_open(t.txn[s], t.dbi[s], &up[s]));
		MUST(mdb_cursor_open(t.txn[s], t.dbi[s], &last[s]));
		park(del[s], f, key, order[victim]);
		park(other[s], f, key, order[victim == 0 ? n - 1 : 0]);
		park(lo[s], f, "lower", 8);
		park(up[s], f, "upper", 9);
		park(last[s], f, key, order[n - 1]);
	}
	unsigned long long d0 = dlmdb_debug_demotions();
	dlmdb_debug_demote_enable(1);
	MUST(mdb_cursor_del(del[0], 0));
	dlmdb_debug_demote_enable(0);
	MUST(mdb_cursor_del(del[1], 0));
	dlmdb_debug_demote_enable(1);
	EXPECT(dlmdb_debug_demotions() == d0 + 1);
	EXPECT(key_kind(t.txn[0], t.dbi[0], key, NULL) == K_SUBPAGE);
	EXPECT(key_kind(t.txn[1], t.dbi[1], key, NULL) == K_SUBTREE);
	expect_check(t.txn[0], "cursor demotion");
	/* the model: parked cursors still on their items */
	expect_at(other[0], f, key, order[victim == 0 ? n - 1 : 0]);
	expect_at(lo[0], f, "lower", 8);
	expect_at(up[0], f, "upper", 9);
	if (victim != n - 1)
		expect_at(last[0], f, key, order[n - 1]);
	/* the deleting cursor: GET_CURRENT shows the successor (the next
	 * value, or the next key's first after the last one) */
	if (victim + 1 < n)
		expect_at(del[0], f, key, order[victim + 1]);
	/* A/B: every cursor reads the same sequences on both sides */
	static const MDB_cursor_op walk[] = {MDB_GET_CURRENT, MDB_NEXT, MDB_PREV, MDB_PREV, MDB_NEXT_DUP,
		MDB_PREV_DUP, MDB_LAST_DUP, MDB_NEXT, MDB_PREV_NODUP, MDB_NEXT_NODUP, MDB_FIRST_DUP};
	MDB_cursor **sets[] = {del, other, lo, up, last};
	for (unsigned c = 0; c < 5; c++)
		for (unsigned i = 0; i < sizeof walk / sizeof walk[0]; i++)
			same_get(sets[c][0], sets[c][1], walk[i], "cursor walk");
	/* the deleting cursor straight after the delete, for NEXT / PREV / count */
	for (int op = 0; op < 3; op++) {
		MDB_cursor *c2[2];
		for (int s = 0; s < 2; s++) {
			dlmdb_debug_demote_enable(s == 0);
			MUST(mdb_cursor_open(t.txn[s], t.dbi[s], &c2[s]));
			park(c2[s], f, key, order[victim == 0 ? 1 + op : op]);
			MUST(mdb_cursor_del(c2[s], 0));
		}
		dlmdb_debug_demote_enable(1);
		if (op == 2) {
			mdb_size_t ca = 0, cb = 0;
			EXPECT(mdb_cursor_count(c2[0], &ca) == 0 && mdb_cursor_count(c2[1], &cb) == 0 && ca == cb);
		}
		same_get(c2[0], c2[1], op == 0 ? MDB_NEXT : op == 1 ? MDB_PREV : MDB_GET_CURRENT, "after 2nd delete");
		same_get(c2[0], c2[1], MDB_NEXT_DUP, "after 2nd delete");
		for (int s = 0; s < 2; s++)
			mdb_cursor_close(c2[s]);
	}
	for (int s = 0; s < 2; s++) {
		mdb_cursor_close(del[s]);
		mdb_cursor_close(other[s]);
		mdb_cursor_close(lo[s]);
		mdb_cursor_close(up[s]);
		mdb_cursor_close(last[s]);
		MUST(mdb_txn_commit(t.txn[s]));
		mdb_env_close(t.env[s]);
	}
}

/* ---- 4: nested txns ------------------------------------------------------------- */

static void test_nested(const struct flavour *f)
{
	MDB_env *env = open_env("build/demote_n");
	size_t nodemax = nodemax_of(env);
	MDB_txn *txn, *child;
	MDB_dbi dbi;
	const char *key = "nest";
	unsigned ids[2048], n = 0;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, f->name, MDB_CREATE | f->flags, &dbi));
	MUST(put_id(txn, dbi, f, "a", 1));
	while (key_kind(txn, dbi, key, NULL) != K_SUBTREE) {
		ids[n] = 500 + n;
		MUST(put_id(txn, dbi, f, key, ids[n]));
		n++;
	}
	while (inline_size(f, strlen(key), ids, n - 1) > nodemax / 2)
		MUST(del_id(txn, dbi, f, key, ids[--n]));
	/* the parent's own dirty sub-tree (round 0), then a committed one (round 1) */
	for (int round = 0; round < 2; round++) {
		if (round == 1) {
			MUST(mdb_txn_commit(txn));
			MUST(mdb_txn_begin(env, NULL, 0, &txn));
		}
		MDB_cursor *pc;
		MUST(mdb_cursor_open(txn, dbi, &pc));
		park(pc, f, key, ids[1]);
		uint64_t pages = db_pages(txn, dbi);
		EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBTREE);
		unsigned long long d0 = dlmdb_debug_demotions();
		MUST(mdb_txn_begin(env, txn, 0, &child));
		MUST(del_id(child, dbi, f, key, ids[n - 1]));
		EXPECT(dlmdb_debug_demotions() == d0 + 1);
		EXPECT(key_kind(child, dbi, key, NULL) == K_SUBPAGE);
		EXPECT(db_pages(child, dbi) == pages - 1);
		expect_check(child, "nested demotion");
		mdb_txn_abort(child);
		/* the parent's view is back: sub-tree, all values, same pages */
		EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBTREE);
		EXPECT(db_pages(txn, dbi) == pages);
		expect_at(pc, f, key, ids[1]);
		MDB_val k = {strlen(key), (void *)key}, d;
		mdb_size_t cnt = 0;
		MDB_cursor *c;
		MUST(mdb_cursor_open(txn, dbi, &c));
		EXPECT(mdb_cursor_get(c, &k, &d, MDB_SET) == 0 && mdb_cursor_count(c, &cnt) == 0 && cnt == n);
		mdb_cursor_close(c);
		expect_check(txn, "after nested abort");
		/* now a child that commits the demotion */
		MUST(mdb_txn_begin(env, txn, 0, &child));
		MUST(del_id(child, dbi, f, key, ids[n - 1]));
		MUST(mdb_txn_commit(child));
		EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBPAGE);
		expect_at(pc, f, key, ids[1]);
		expect_check(txn, "after nested commit");
		/* grow it back into a sub-tree for the next round */
		MUST(put_id(txn, dbi, f, key, ids[n - 1]));
		unsigned extra = 0;
		for (; key_kind(txn, dbi, key, NULL) != K_SUBTREE; extra++)
			MUST(put_id(txn, dbi, f, key, 9000 + extra));
		for (unsigned i = 0; i < extra; i++)
			MUST(del_id(txn, dbi, f, key, 9000 + i));
		EXPECT(key_kind(txn, dbi, key, NULL) == K_SUBTREE);
		mdb_cursor_close(pc);
	}
	MUST(mdb_txn_commit(txn));
	mdb_env_close(env);
}

/* ---- 5: random operations against a model and the demotion-off twin ------------ */

#define RKEYS 5
#define RIDS 1400

struct model {
	unsigned char has[RKEYS][RIDS];
};

static const char *rkey(unsigned i)
{
	static const char *names[RKEYS] = {"k0", "k1-longer-key", "k2", "k3-x", "k4"};
	return names[i];
}

/* qsort context: the duplicate order of the DB under test */
static MDB_txn *sort_txn;
static MDB_dbi sort_dbi;
static const struct flavour *sort_f;

static int by_dup_order(const void *a, const void *b)
{
	unsigned char x[MAXVAL], y[MAXVAL];
	MDB_val vx = {value_of(sort_f, *(const unsigned *)a, x), x};
	MDB_val vy = {value_of(sort_f, *(const unsigned *)b, y), y};
	return mdb_dcmp(sort_txn, sort_dbi, &vx, &vy);
}

/* Compare both sides' full contents with the model. */
static void compare_all(struct twin *t, const struct flavour *f, const struct model *m, const char *where)
{
	MDB_cursor *c[2];
	int rc[2];
	MDB_val k[2], d[2];
	for (int s = 0; s < 2; s++) {
		MUST(mdb_cursor_open(t->txn[s], t->dbi[s], &c[s]));
		rc[s] = mdb_cursor_get(c[s], &k[s], &d[s], MDB_FIRST);
	}
	sort_txn = t->txn[0];
	sort_dbi = t->dbi[0];
	sort_f = f;
	int bad = 0;
	/* key names are listed in byte order */
	for (unsigned key = 0; key < RKEYS && !bad; key++) {
		unsigned vals[RIDS], nv = 0;
		for (unsigned id = 0; id < RIDS; id++)
			if (m->has[key][id])
				vals[nv++] = id;
		qsort(vals, nv, sizeof vals[0], by_dup_order);
		for (unsigned i = 0; i < nv && !bad; i++) {
			unsigned char b[MAXVAL];
			size_t len = value_of(f, vals[i], b);
			for (int s = 0; s < 2; s++) {
				if (rc[s] || k[s].mv_size != strlen(rkey(key)) ||
				    memcmp(k[s].mv_data, rkey(key), k[s].mv_size) || d[s].mv_size != len ||
				    memcmp(d[s].mv_data, b, len)) {
					fprintf(stderr, "%s (%s): side %d differs from the model at key %s value #%u\n",
						where, f->name, s, rkey(key), i);
					bad = 1;
					break;
				}
				rc[s] = mdb_cursor_get(c[s], &k[s], &d[s], MDB_NEXT);
			}
		}
	}
	if (!bad && (rc[0] != MDB_NOTFOUND || rc[1] != MDB_NOTFOUND)) {
		fprintf(stderr, "%s (%s): extra items (rc %d/%d)\n", where, f->name, rc[0], rc[1]);
		bad = 1;
	}
	tu_checks++;
	tu_failures += bad;
	for (int s = 0; s < 2; s++)
		mdb_cursor_close(c[s]);
}

/* Begin/commit/abort on both sides alike; the model follows. */
static void txn_control(struct twin *t, MDB_txn *stack[2][4], int *depth, struct model *m,
	struct model saved[4], unsigned what)
{
	int d = *depth;
	for (int s = 0; s < 2; s++) {
		dlmdb_debug_demote_enable(s == 0);
		if (what == 0 && d < 3) {
			MUST(mdb_txn_begin(t->env[s], stack[s][d], 0, &stack[s][d + 1]));
		} else if (what == 1 && d > 0) {
			MUST(mdb_txn_commit(stack[s][d]));
		} else if (what == 2 && d > 0) {
			mdb_txn_abort(stack[s][d]);
		} else if (what == 3 && d == 0) {
			MUST(mdb_txn_commit(stack[s][0]));
			MUST(mdb_txn_begin(t->env[s], NULL, 0, &stack[s][0]));
		} else if (what == 4 && d == 0) {
			mdb_txn_abort(stack[s][0]);
			MUST(mdb_txn_begin(t->env[s], NULL, 0, &stack[s][0]));
		}
	}
	dlmdb_debug_demote_enable(1);
	if (what == 0 && d < 3) {
		saved[++d] = *m;
	} else if (what == 1 && d > 0) {
		d--;
	} else if (what == 2 && d > 0) {
		*m = saved[d--];
	} else if (what == 3 && d == 0) {
		saved[0] = *m;
	} else if (what == 4 && d == 0) {
		*m = saved[0];
	}
	*depth = d;
	for (int s = 0; s < 2; s++)
		t->txn[s] = stack[s][d];
}

static void test_random(const struct flavour *f, uint64_t seed, unsigned nops)
{
	struct twin t;
	const char *dirs[2] = {"build/demote_ra", "build/demote_rb"};
	static struct model m, saved[4];	/* saved[d]: model when txn level d began */
	memset(&m, 0, sizeof m);
	MDB_txn *stack[2][4];
	int depth = 0;
	for (int s = 0; s < 2; s++) {
		t.env[s] = open_env(dirs[s]);
		MUST(mdb_txn_begin(t.env[s], NULL, 0, &stack[s][0]));
		MUST(mdb_dbi_open(stack[s][0], f->name, MDB_CREATE | f->flags, &t.dbi[s]));
		MUST(mdb_txn_commit(stack[s][0]));
		MUST(mdb_txn_begin(t.env[s], NULL, 0, &stack[s][0]));
		t.txn[s] = stack[s][0];
	}
	saved[0] = m;
	size_t nodemax = nodemax_of(t.env[0]);
	/* a phase long enough for keys to cross the promotion point: about
	 * nodemax bytes of values per key */
	unsigned unit = f->vsize ? f->vsize : 24;
	unsigned phase = (unsigned)(nodemax / unit) * RKEYS * 3;
	if (nops < 6 * phase)
		nops = 6 * phase;
	uint64_t rs = seed;
	unsigned long long d0 = dlmdb_debug_demotions();
	unsigned promotions = 0, ops_done = 0;
	for (unsigned step = 0; step < nops; step++) {
		int grow = (step / phase) % 2 == 0;
		unsigned key = tu_below(&rs, RKEYS);
		unsigned id = tu_below(&rs, RIDS);
		unsigned r = tu_below(&rs, 100);
		if (r < 2) {
			/* begin 30%, commit child 30%, abort child 8%, commit 30%, abort 2%
			 * (aborts undo whole phases of growing or shrinking) */
			unsigned w = tu_below(&rs, 100);
			unsigned what = w < 30 ? 0 : w < 60 ? 1 : w < 68 ? 2 : w < 98 ? 3 : 4;
			txn_control(&t, stack, &depth, &m, saved, what);
			expect_check(t.txn[0], "after txn control");
			continue;
		}
		int kind_before = key_kind(t.txn[0], t.dbi[0], rkey(key), NULL);
		int rc[2] = {0, 0};
		int wrote = 0, deleted = 0;
		int put = grow ? r < 92 : r < 12;
		unsigned char b[MAXVAL];
		if (!put && !m.has[key][id]) {
			/* delete something that exists, if anything */
			unsigned start = id;
			do {
				id = (id + 1) % RIDS;
			} while (id != start && !m.has[key][id]);
		}
		MDB_val k = {strlen(rkey(key)), (void *)rkey(key)}, d = {value_of(f, id, b), b};
		unsigned form = tu_below(&rs, 3);
		for (int s = 0; s < 2; s++) {
			dlmdb_debug_demote_enable(s == 0);
			MDB_val kk = k, dd = d;
			if (put) {
				rc[s] = mdb_put(t.txn[s], t.dbi[s], &kk, &dd, MDB_NODUPDATA);
			} else if (form == 0) {
				rc[s] = mdb_del(t.txn[s], t.dbi[s], &kk, &dd);
			} else {
				/* cursor delete after GET_BOTH; a second cursor parked
				 * on the key's first value must stay on it */
				MDB_cursor *c, *c2;
				MUST(mdb_cursor_open(t.txn[s], t.dbi[s], &c));
				MUST(mdb_cursor_open(t.txn[s], t.dbi[s], &c2));
				MDB_val k2 = k, d2;
				int p2 = mdb_cursor_get(c2, &k2, &d2, MDB_SET_KEY);
				unsigned char keep[MAXVAL];
				size_t keeplen = p2 == 0 ? d2.mv_size : 0;
				if (p2 == 0)
					memcpy(keep, d2.mv_data, keeplen);
				rc[s] = mdb_cursor_get(c, &kk, &dd, MDB_GET_BOTH);
				if (rc[s] == 0)
					rc[s] = mdb_cursor_del(c, 0);
				if (rc[s] == 0 && form == 2) {
					/* the deleting cursor moves on from its DEL state */
					MDB_val k3, d3;
					int x = mdb_cursor_get(c, &k3, &d3, MDB_NEXT);
					EXPECT(x == 0 || x == MDB_NOTFOUND);
				}
				if (rc[s] == 0 && p2 == 0 && (keeplen != d.mv_size || memcmp(keep, d.mv_data, keeplen))) {
					MDB_val k3, d3;
					int x = mdb_cursor_get(c2, &k3, &d3, MDB_GET_CURRENT);
					EXPECT(x == 0 && d3.mv_size == keeplen && !memcmp(d3.mv_data, keep, keeplen));
				}
				mdb_cursor_close(c);
				mdb_cursor_close(c2);
			}
		}
		dlmdb_debug_demote_enable(1);
		EXPECT(rc[0] == rc[1]);
		if (put) {
			EXPECT(rc[0] == (m.has[key][id] ? MDB_KEYEXIST : 0));
			wrote = !m.has[key][id];
			m.has[key][id] = 1;
		} else {
			EXPECT(rc[0] == (m.has[key][id] ? 0 : MDB_NOTFOUND));
			deleted = m.has[key][id];
			m.has[key][id] = 0;
		}
		ops_done++;
		/* the rule, checked on the demoting side */
		unsigned cur[RIDS], n = 0;
		for (unsigned i = 0; i < RIDS; i++)
			if (m.has[key][i])
				cur[n++] = i;
		dl_dbrec rec;
		int kind = key_kind(t.txn[0], t.dbi[0], rkey(key), &rec);
		size_t isz = inline_size(f, strlen(rkey(key)), cur, n);
		EXPECT((n == 0) == (kind == K_NONE));
		if (n == 1 && kind_before == K_NONE)
			EXPECT(kind == K_SINGLE);
		if (kind == K_SUBPAGE)
			EXPECT(isz <= nodemax);
		if (deleted && kind_before == K_SUBTREE && kind == K_SUBTREE)
			EXPECT(rec.d_depth > 1 || isz > nodemax / 2);
		if (deleted && kind_before == K_SUBTREE && kind == K_SUBPAGE)
			EXPECT(isz <= nodemax / 2);
		if (wrote && kind_before == K_SUBPAGE && kind == K_SUBTREE) {
			EXPECT(isz > nodemax);
			promotions++;
		}
		if (wrote && kind_before == K_SUBTREE)
			EXPECT(kind == K_SUBTREE);
		if (step % 400 == 0) {
			compare_all(&t, f, &m, "random");
			expect_check(t.txn[0], "random");
		}
	}
	compare_all(&t, f, &m, "random end");
	expect_check(t.txn[0], "random end");
	unsigned long long dem = dlmdb_debug_demotions() - d0;
	for (int s = 0; s < 2; s++) {
		for (int lv = depth; lv > 0; lv--)
			MUST(mdb_txn_commit(stack[s][lv]));
		MUST(mdb_txn_commit(stack[s][0]));
		MUST(mdb_txn_begin(t.env[s], NULL, MDB_RDONLY, &t.txn[s]));
	}
	expect_check(t.txn[0], "random committed");
	compare_all(&t, f, &m, "random committed");
	for (int s = 0; s < 2; s++) {
		mdb_txn_abort(t.txn[s]);
		mdb_env_close(t.env[s]);
	}
	printf("  %s: seed %llu, %u ops, %u promotions, %llu demotions (some may be undone by aborts)\n",
		f->name, (unsigned long long)seed, ops_done, promotions, dem);
	EXPECT(dem > 0);
	EXPECT(promotions > 0);
}

/* ---- a refused APPENDDUP on a single value, as stock ---------------------------
 * Stock 0.9.33 turns the key's single value into a one-value sub-page before
 * it refuses an APPENDDUP of a value below it, and the key keeps that
 * sub-page (its FIRST_DUP then leaves the key alone, as on any sub-page); an
 * equal value is refused before that, and the node stays plain.  Ours does
 * the same (internal/difftest TestDupStockLeftovers compares with stock). */
static void test_refused_appenddup(const struct flavour *f)
{
	MDB_env *env = open_env("build/demote_appenddup");
	MDB_txn *txn;
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "a", MDB_CREATE | f->flags, &dbi));
	unsigned char b1[MAXVAL], b2[MAXVAL], b3[MAXVAL];
	MDB_val v1 = {value_of(f, 1, b1), b1}, v2 = {value_of(f, 2, b2), b2}, v3 = {value_of(f, 3, b3), b3};
	/* order the three values under the DB's own comparator */
	MDB_val *v[3] = {&v1, &v2, &v3};
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (mdb_dcmp(txn, dbi, v[j], v[i]) < 0) {
				MDB_val *t = v[i];
				v[i] = v[j];
				v[j] = t;
			}
	MDB_val k = {3, "key"}, got;
	MUST(mdb_put(txn, dbi, &k, v[1], 0));
	EXPECT(key_kind(txn, dbi, "key", NULL) == K_SINGLE);
	EXPECT_RC(mdb_put(txn, dbi, &k, v[1], MDB_APPENDDUP), MDB_KEYEXIST);	/* equal */
	EXPECT(key_kind(txn, dbi, "key", NULL) == K_SINGLE);
	EXPECT_RC(mdb_put(txn, dbi, &k, v[0], MDB_APPENDDUP), MDB_KEYEXIST);	/* below */
	EXPECT(key_kind(txn, dbi, "key", NULL) == K_SUBPAGE);
	MDB_cursor *c;
	MUST(mdb_cursor_open(txn, dbi, &c));
	mdb_size_t n = 0;
	EXPECT_RC(mdb_cursor_get(c, &k, &got, MDB_SET_KEY), 0);
	EXPECT(same_val(&got, v[1]));
	EXPECT_RC(mdb_cursor_count(c, &n), 0);
	EXPECT(n == 1);
	/* the count and the record stay one value */
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == 1);
	EXPECT_RC(mdb_put(txn, dbi, &k, v[0], MDB_APPENDDUP), MDB_KEYEXIST);	/* below, on the sub-page */
	EXPECT(key_kind(txn, dbi, "key", NULL) == K_SUBPAGE);
	/* a value above goes in, and the key now has a sub-page */
	EXPECT_RC(mdb_put(txn, dbi, &k, v[2], MDB_APPENDDUP), 0);
	EXPECT(key_kind(txn, dbi, "key", NULL) == K_SUBPAGE);
	k.mv_size = 3, k.mv_data = "key";	/* the last SET_KEY pointed it into the page */
	EXPECT_RC(mdb_cursor_get(c, &k, &got, MDB_SET_KEY), 0);
	EXPECT_RC(mdb_cursor_count(c, &n), 0);
	EXPECT(n == 2);
	mdb_cursor_close(c);
	expect_check(txn, "refused appenddup");
	MUST(mdb_txn_commit(txn));
	mdb_env_close(env);
}

int main(void)
{
	uint64_t seed = 20261130;
	const char *s = getenv("DEMOTE_SEED");
	if (s)
		seed = strtoull(s, NULL, 10);
	printf("demote_test: seed %llu (DEMOTE_SEED=%llu reproduces)\n", (unsigned long long)seed,
		(unsigned long long)seed);
	for (unsigned i = 0; i < NFLAV; i++) {
		test_boundaries(&FLAV[i]);
		for (int w = 0; w < 3; w++)
			test_cursors(&FLAV[i], w);
		test_nested(&FLAV[i]);
		test_refused_appenddup(&FLAV[i]);
		test_random(&FLAV[i], seed + i, 6000u * (unsigned)tu_scale());
	}
	dlmdb_debug_demote_enable(1);
	printf("demote_test: %llu demotions in all\n", dlmdb_debug_demotions());
	return tu_finish("demote_test");
}
