/*
 * countfmt_test.c - the on-disk side of MDB_COUNTED (FORMAT.md "Counted
 * trees"), with stock LMDB 0.9.33 linked in (stockside.c).
 *
 *  1. Corruption detection: a committed env with counted DBs passes
 *     mdb_txn_check; then single stored values in the data file are patched
 *     (a branch node's entry count, a KEYCOUNT key count, a count inside a
 *     duplicate sub-tree, a branch page's COUNTED/KEYCOUNT flags, a named
 *     DB's node kind, the meta version, a record's entry total, a sub-tree
 *     record's counted flag) and the checker must answer MDB_CORRUPTED with a
 *     message naming the problem; the patch undone must pass again.
 *  2. Stock refusal (FORMAT.md "DLMDB extensions"): a file that holds a
 *     counted DB -- named or main, even after it was dropped -- carries meta
 *     version 0x444C4301 and stock LMDB's env open answers
 *     MDB_VERSION_MISMATCH (stock runs in a forked child: a crash would be
 *     a failure, not an answer); a file without one stays version 1 and
 *     stock reads it like ours.  Ours opens all of them.
 *  3. Random writes with nested txns (some aborted) on a counted and a
 *     counted DUPSORT DB, then on a counted DUPSORT main DB: the checker
 *     inside write txns and after commits, count_all / range_count_keys
 *     against a bitmap model (COUNTFMT_SEED picks another random stream).
 *
 * Locations inside the file are found through our engine's internals (the
 * cursor's page stack in a read txn maps the file), then the file itself is
 * edited with pwrite while no env is open.
 */
#include "../internal.h"
#include "testutil.h"
#include <sys/wait.h>

int stock_digest(const char *dir, const char *name, unsigned flags, uint64_t *hash, size_t *count,
	int *errout);
int stock_scribble(const char *dir, const char *name, unsigned flags, uint64_t seed, int txns,
	int ops);
int stock_try_open(const char *dir);

static const char *BASE = "build/countfmt_base";
static const char *WORK = "build/countfmt_work";

static MDB_env *open_ours(const char *dir)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 16));
	MUST(mdb_env_set_mapsize(env, (size_t)256 << 20));
	MUST(mdb_env_open(env, dir, 0, 0644));
	return env;
}

/* 0 if the checker passes; else its code, with the message in msg */
static int check_env(const char *dir, char *msg, size_t msglen)
{
	MDB_env *env = open_ours(dir);
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	int rc = mdb_txn_check(txn, msg, msglen);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return rc;
}

static void key_of(char *buf, size_t len, unsigned i) { snprintf(buf, len, "key-%06u", i); }

/* "plain": uncounted; "cnt": counted, deep enough for two branch levels;
 * "cdup": counted DUPSORT with small keys (sub-pages) and one key whose
 * duplicates form a sub-tree with branch pages. */
static void build_base(const char *dir, int scale)
{
	tu_fresh_dir(dir);
	MDB_env *env = open_ours(dir);
	MDB_txn *txn;
	MDB_dbi plain, cnt, cdup;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "plain", MDB_CREATE, &plain));
	MUST(mdb_dbi_open(txn, "cnt", MDB_CREATE | MDB_COUNTED, &cnt));
	MUST(mdb_dbi_open(txn, "cdup", MDB_CREATE | MDB_DUPSORT | MDB_COUNTED, &cdup));
	char kb[32], vb[64];
	uint64_t seed = 42;
	unsigned nkeys = 20000u * (unsigned)scale;
	for (unsigned i = 0; i < nkeys; i++) {
		key_of(kb, sizeof kb, i);
		MDB_val k = {strlen(kb), kb};
		MDB_val v = {(size_t)snprintf(vb, sizeof vb, "value-%u-%" PRIu64, i, tu_next(&seed) % 1000), vb};
		MUST(mdb_put(txn, cnt, &k, &v, 0));
		if (i % 10 == 0)
			MUST(mdb_put(txn, plain, &k, &v, 0));
		if (i % 4 == 0) {
			for (unsigned d = 0; d < 1 + i % 5; d++) {
				MDB_val dv = {(size_t)snprintf(vb, sizeof vb, "d%u", d), vb};
				MUST(mdb_put(txn, cdup, &k, &dv, 0));
			}
		}
	}
	MDB_val big = {3, "big"};
	for (unsigned d = 0; d < 3000; d++) {
		MDB_val dv = {(size_t)snprintf(vb, sizeof vb, "dup-%05u", d), vb};
		MUST(mdb_put(txn, cdup, &big, &dv, 0));
	}
	/* some deletes, so counts went down as well as up */
	for (unsigned i = 0; i < nkeys; i += 7) {
		key_of(kb, sizeof kb, i);
		MDB_val k = {strlen(kb), kb};
		int rc = mdb_del(txn, cnt, &k, NULL);
		EXPECT(rc == 0);
	}
	MUST(mdb_txn_commit(txn));
	mdb_env_close(env);
}

/* Byte offsets (in the data file) of things to patch. */
struct spots {
	size_t root_cnt;	/* entries of node 0 of "cnt"'s root */
	size_t low_cnt;		/* entries of the last node of "cnt"'s lowest branch on the last path */
	size_t root_flags;	/* p_flags of "cnt"'s root page */
	size_t leaf_flags;	/* p_flags of a leaf page of "cnt" */
	size_t plain_root_flags; /* p_flags of the (branch) root page of uncounted "plain" */
	size_t cdup_keys;	/* keys of node 1 of "cdup"'s root */
	size_t cdup_ent;	/* entries of node 1 of "cdup"'s root */
	size_t sub_cnt;		/* entries of node 0 of the root of "big"'s duplicate sub-tree */
	size_t sub_recflags;	/* d_flags of "big"'s sub-tree record */
	size_t cnt_nflags;	/* n_flags of "cnt"'s node in the main DB */
	size_t plain_nflags;	/* n_flags of "plain"'s node in the main DB */
	size_t cnt_recent;	/* d_entries of "cnt"'s record in the main DB */
	unsigned cnt_depth, sub_depth;
};

static size_t at(MDB_env *env, const void *p) { return (size_t)((const char *)p - env->e_map); }

static void find_spots(const char *dir, struct spots *s)
{
	memset(s, 0, sizeof *s);
	MDB_env *env = open_ours(dir);
	MDB_txn *txn;
	MDB_dbi cnt, cdup, mainh;
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_dbi_open(txn, "cnt", 0, &cnt));
	MUST(mdb_dbi_open(txn, "cdup", 0, &cdup));
	MUST(mdb_dbi_open(txn, NULL, 0, &mainh));

	MUST(mdb_cursor_open(txn, cnt, &c));
	MUST(mdb_cursor_get(c, &k, &v, MDB_LAST));
	s->cnt_depth = c->c_depth;
	EXPECT(c->c_depth >= 3);
	if (c->c_depth >= 3) {
		dl_page *root = c->c_pg[0], *low = c->c_pg[c->c_top - 1];
		EXPECT(root->p_flags & DL_P_COUNTED);
		EXPECT(!(root->p_flags & DL_P_KEYCOUNT));
		s->root_cnt = at(env, (char *)dl_pg_node(root, 0) + DL_NODEHDR + dl_pg_node(root, 0)->n_ksize);
		s->root_flags = at(env, &root->p_flags);
		dl_node *ln = dl_pg_node(low, c->c_ki[c->c_top - 1]);
		s->low_cnt = at(env, (char *)ln + DL_NODEHDR + ln->n_ksize);
		s->leaf_flags = at(env, &c->c_pg[c->c_top]->p_flags);
	}
	mdb_cursor_close(c);
	MDB_dbi plain;
	MUST(mdb_dbi_open(txn, "plain", 0, &plain));
	MUST(mdb_cursor_open(txn, plain, &c));
	MUST(mdb_cursor_get(c, &k, &v, MDB_FIRST));
	EXPECT(c->c_depth >= 2);
	if (c->c_depth >= 2) {
		EXPECT(!(c->c_pg[0]->p_flags & (DL_P_COUNTED | DL_P_KEYCOUNT)));
		s->plain_root_flags = at(env, &c->c_pg[0]->p_flags);
	}
	mdb_cursor_close(c);

	MUST(mdb_cursor_open(txn, cdup, &c));
	MUST(mdb_cursor_get(c, &k, &v, MDB_FIRST));
	EXPECT(c->c_depth >= 2);
	if (c->c_depth >= 2) {
		dl_page *root = c->c_pg[0];
		EXPECT((root->p_flags & (DL_P_COUNTED | DL_P_KEYCOUNT)) == (DL_P_COUNTED | DL_P_KEYCOUNT));
		dl_node *n1 = dl_pg_node(root, 1);
		s->cdup_ent = at(env, (char *)n1 + DL_NODEHDR + n1->n_ksize);
		s->cdup_keys = s->cdup_ent + 8;
	}
	MDB_val big = {3, "big"};
	MUST(mdb_cursor_get(c, &big, &v, MDB_SET));
	dl_node *bn = dl_pg_node(c->c_pg[c->c_top], c->c_ki[c->c_top]);
	EXPECT((bn->n_flags & (DL_N_TREE | DL_N_DUP)) == (DL_N_TREE | DL_N_DUP));
	s->sub_recflags = at(env, (char *)dl_node_data(bn) + offsetof(dl_dbrec, d_flags));
	MDB_cursor *sc = &c->c_sub->x_c;
	s->sub_depth = sc->c_depth;
	EXPECT(sc->c_depth >= 2);
	if (sc->c_depth >= 2) {
		dl_page *sroot = sc->c_pg[0];
		EXPECT((sroot->p_flags & (DL_P_COUNTED | DL_P_KEYCOUNT)) == DL_P_COUNTED);
		dl_node *n0 = dl_pg_node(sroot, 0);
		s->sub_cnt = at(env, (char *)n0 + DL_NODEHDR + n0->n_ksize);
	}
	mdb_cursor_close(c);

	MUST(mdb_cursor_open(txn, mainh, &c));
	MDB_val nm = {3, "cnt"};
	MUST(mdb_cursor_get(c, &nm, &v, MDB_SET));
	dl_node *mn = dl_pg_node(c->c_pg[c->c_top], c->c_ki[c->c_top]);
	/* named DB records are plain TREE nodes, extension or not (stock LMDB
	 * crashes on TREE|DUP in its main DB; the meta version keeps it out) */
	EXPECT(mn->n_flags == DL_N_TREE);
	s->cnt_nflags = at(env, &mn->n_flags);
	s->cnt_recent = at(env, (char *)dl_node_data(mn) + offsetof(dl_dbrec, d_entries));
	MDB_val np = {5, "plain"};
	MUST(mdb_cursor_get(c, &np, &v, MDB_SET));
	mn = dl_pg_node(c->c_pg[c->c_top], c->c_ki[c->c_top]);
	EXPECT(mn->n_flags == DL_N_TREE);
	s->plain_nflags = at(env, &mn->n_flags);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static uint32_t meta_version(const char *dir);

/* file offset of the body of the meta page with the larger txnid */
static size_t newest_meta_off(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	int fd = open(path, O_RDONLY);
	dl_meta m0, m1;
	if (fd < 0 || pread(fd, &m0, sizeof m0, DL_PAGEHDR) != sizeof m0 ||
	    pread(fd, &m1, sizeof m1, 4096 + DL_PAGEHDR) != sizeof m1) {
		perror(path);
		exit(2);
	}
	close(fd);
	return (m1.m_txnid > m0.m_txnid ? 4096u : 0u) + DL_PAGEHDR;
}

static void copy_env(const char *from, const char *to)
{
	char cmd[512];
	tu_fresh_dir(to);
	snprintf(cmd, sizeof cmd, "cp '%s/data.mdb' '%s/data.mdb'", from, to);
	if (system(cmd) != 0) {
		fprintf(stderr, "cannot copy %s\n", from);
		exit(2);
	}
}

/* Add delta to the little-endian integer of size len at off in dir's data
 * file (len 8 or 2); returns the old value. */
static uint64_t patch(const char *dir, size_t off, int len, int64_t delta, int xorbits)
{
	char path[512];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	int fd = open(path, O_RDWR);
	if (fd < 0) {
		perror(path);
		exit(2);
	}
	uint64_t v = 0;
	if (pread(fd, &v, (size_t)len, (off_t)off) != len) {
		perror("pread");
		exit(2);
	}
	uint64_t nv = xorbits ? (v ^ (uint64_t)xorbits) : v + (uint64_t)delta;
	if (pwrite(fd, &nv, (size_t)len, (off_t)off) != len) {
		perror("pwrite");
		exit(2);
	}
	close(fd);
	return v;
}

/* Patch one spot in a fresh copy of the base env; the checker must fail with
 * a message containing want; undoing the patch must make it pass again. */
static void expect_detect(const char *what, size_t off, int len, int64_t delta, int xorbits,
	const char *want)
{
	char msg[512];
	if (!off) {
		EXPECT(off != 0);
		fprintf(stderr, "%s: no location found\n", what);
		return;
	}
	copy_env(BASE, WORK);
	patch(WORK, off, len, delta, xorbits);
	int rc = check_env(WORK, msg, sizeof msg);
	EXPECT(rc == MDB_CORRUPTED);
	EXPECT(strstr(msg, want) != NULL);
	if (rc != MDB_CORRUPTED || !strstr(msg, want))
		fprintf(stderr, "%s: check returned %d (%s), wanted MDB_CORRUPTED mentioning \"%s\"\n", what,
			rc, msg, want);
	else if (getenv("COUNTFMT_VERBOSE"))
		fprintf(stderr, "%s -> %s\n", what, msg);
	patch(WORK, off, len, -delta, xorbits);
	rc = check_env(WORK, msg, sizeof msg);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "%s undone: check still fails: %s\n", what, msg);
}

/* The same inside a write txn: a dirty (copied) page's count is bumped in
 * memory; the checker, which reads the txn's dirty pages, must see it. */
static void dirty_detect(const char *dir)
{
	char msg[512];
	MDB_env *env = open_ours(dir);
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "cdup", 0, &dbi));
	MUST(mdb_cursor_open(txn, dbi, &c));
	MUST(mdb_cursor_get(c, &k, &v, MDB_LAST));
	MDB_val nv = {5, "zzzzz"};
	MUST(mdb_cursor_put(c, &k, &nv, 0)); /* copies the path to the leaf */
	MUST(mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT));
	EXPECT(c->c_depth >= 2);
	if (c->c_depth >= 2) {
		dl_page *root = c->c_pg[0];
		dl_node *n = dl_pg_node(root, c->c_ki[0]);
		EXPECT(dlmdb_page_is_dirty(txn, root->p_pgno));
		EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
		dl_node_set_keycount(n, dl_node_keycount(n) + 1);
		EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), MDB_CORRUPTED);
		EXPECT(strstr(msg, "keys stored") != NULL);
		dl_node_set_keycount(n, dl_node_keycount(n) - 1);
		dl_node_set_count(n, dl_node_count(n) - 1);
		EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), MDB_CORRUPTED);
		EXPECT(strstr(msg, "entries stored") != NULL);
		dl_node_set_count(n, dl_node_count(n) + 1);
		EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	}
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static void test_detection(int scale)
{
	char msg[512];
	build_base(BASE, scale);
	int rc = check_env(BASE, msg, sizeof msg);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "unpatched counted env fails the check: %s\n", msg);

	/* the counts agree with scans before anything is patched */
	MDB_env *env = open_ours(BASE);
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	const char *names[] = {"cnt", "cdup"};
	for (int j = 0; j < 2; j++) {
		MDB_dbi dbi;
		MDB_cursor *c;
		MDB_val k, v;
		MUST(mdb_dbi_open(txn, names[j], 0, &dbi));
		MUST(mdb_cursor_open(txn, dbi, &c));
		uint64_t n = 0, total = 0;
		while (mdb_cursor_get(c, &k, &v, n ? MDB_NEXT : MDB_FIRST) == 0)
			n++;
		mdb_cursor_close(c);
		EXPECT_RC(mdb_count_all(txn, dbi, 0, &total), 0);
		EXPECT(total == n && n > 1000);
		if (total != n)
			fprintf(stderr, "%s: count_all %" PRIu64 ", scan %" PRIu64 "\n", names[j], total, n);
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);

	dirty_detect(BASE);
	struct spots s;
	find_spots(BASE, &s);
	expect_detect("root entries +1", s.root_cnt, 8, 1, 0, "entries stored");
	expect_detect("root entries -1", s.root_cnt, 8, -1, 0, "entries stored");
	expect_detect("lowest branch entries +5", s.low_cnt, 8, 5, 0, "entries stored");
	expect_detect("DUPSORT root entries +1", s.cdup_ent, 8, 1, 0, "entries stored");
	expect_detect("DUPSORT root keys +1", s.cdup_keys, 8, 1, 0, "keys stored");
	expect_detect("sub-tree root entries -1", s.sub_cnt, 8, -1, 0, "entries stored");
	expect_detect("COUNTED page flag cleared", s.root_flags, 2, 0, DL_P_COUNTED, "count flags");
	expect_detect("KEYCOUNT flag set on a non-DUPSORT tree", s.root_flags, 2, 0, DL_P_KEYCOUNT,
		"count flags");
	expect_detect("COUNTED flag on a leaf", s.leaf_flags, 2, 0, DL_P_COUNTED, "count flags");
	expect_detect("COUNTED flag in an uncounted tree", s.plain_root_flags, 2, 0, DL_P_COUNTED, "count flags");
	expect_detect("counted named DB node with DUP", s.cnt_nflags, 2, 0, DL_N_DUP, "without DUPSORT");
	expect_detect("plain named DB node with DUP", s.plain_nflags, 2, 0, DL_N_DUP, "without DUPSORT");
	/* the snapshot's meta (the newer one) back at version 1: stock would read it */
	expect_detect("meta version 1 with counted DBs", newest_meta_off(BASE) + offsetof(dl_meta, m_version), 4,
		0, DL_DATA_VERSION_EXT ^ DL_DATA_VERSION, "version");
	expect_detect("record entries +1", s.cnt_recent, 8, 1, 0, "entries recorded");
	expect_detect("sub-tree record not counted", s.sub_recflags, 2, 0, MDB_COUNTED, "sub-tree");
}

/* ---- stock refusal --------------------------------------------------------- */

/* Stock LMDB runs in a forked child, so that a crash in it (a wrong refusal
 * signal can make stock dereference a NULL sub-cursor) is reported as a
 * failed expectation instead of ending the test. */
struct stock_res {
	int rc;
	uint64_t hash;
	size_t count;
};
#define STOCK_CRASHED 99999

enum { S_DIGEST, S_OPEN, S_SCRIBBLE };

static int stock_call(int what, const char *dir, const char *name, uint64_t seed, struct stock_res *out)
{
	int pfd[2];
	memset(out, 0, sizeof *out);
	fflush(NULL);
	if (pipe(pfd))
		exit(2);
	pid_t pid = fork();
	if (pid < 0)
		exit(2);
	if (pid == 0) {
		close(pfd[0]);
		struct stock_res r = {0, 0, 0};
		int err = 0;
		if (what == S_DIGEST)
			r.rc = stock_digest(dir, name, 0, &r.hash, &r.count, &err);
		else if (what == S_OPEN)
			r.rc = stock_try_open(dir);
		else
			r.rc = stock_scribble(dir, name, 0, seed, 4, 300);
		if (write(pfd[1], &r, sizeof r) != sizeof r)
			_exit(3);
		_exit(0);
	}
	close(pfd[1]);
	ssize_t got = read(pfd[0], out, sizeof *out);
	close(pfd[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (got != (ssize_t)sizeof *out) {
		fprintf(stderr, "stock LMDB crashed (%s %s/%s, wait status 0x%x)\n",
			what == S_DIGEST ? "reading" : what == S_OPEN ? "opening" : "writing", dir,
			name ? name : "(main)", st);
		out->rc = STOCK_CRASHED;
	}
	return out->rc;
}

static void our_digest(const char *dir, const char *name, uint64_t *hash, size_t *count, uint64_t *counted)
{
	MDB_env *env = open_ours(dir);
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_dbi_open(txn, name, 0, &dbi));
	MUST(mdb_cursor_open(txn, dbi, &c));
	uint64_t h = 1469598103934665603ull;
	size_t n = 0;
	while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
		uint64_t ks = k.mv_size, vs = v.mv_size;
		const unsigned char *parts[4] = {(void *)&ks, k.mv_data, (void *)&vs, v.mv_data};
		size_t lens[4] = {8, k.mv_size, 8, v.mv_size};
		for (int j = 0; j < 4; j++)
			for (size_t b = 0; b < lens[j]; b++)
				h = (h ^ parts[j][b]) * 1099511628211ull;
		n++;
	}
	mdb_cursor_close(c);
	*counted = ~(uint64_t)0;
	int rc = mdb_count_all(txn, dbi, 0, counted);
	EXPECT(rc == 0 || rc == MDB_INCOMPATIBLE);
	char msg[256];
	rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "%s: check: %s\n", dir, msg);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	*hash = h;
	*count = n;
}

static uint32_t meta_version(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	/* two metas at page 0 and 1; the one with the larger txnid is in use */
	unsigned char pg[2][4096];
	if (fread(pg, 1, sizeof pg, f) != sizeof pg) {
		fclose(f);
		return 0;
	}
	fclose(f);
	dl_meta m[2];
	memcpy(&m[0], pg[0] + DL_PAGEHDR, sizeof m[0]);
	memcpy(&m[1], pg[1] + DL_PAGEHDR, sizeof m[1]);
	return m[1].m_txnid > m[0].m_txnid ? m[1].m_version : m[0].m_version;
}

static void test_stock(int scale)
{
	/* a stock-made env with plain DBs: stock reads it; once ours adds a
	 * counted named DB the file is extended and stock refuses it as a whole
	 * (MDB_VERSION_MISMATCH from env open, never a crash or a misread) -- for
	 * good, even after that DB is dropped; ours reads everything */
	const char *dir = "build/countfmt_mixed";
	tu_fresh_dir(dir);
	uint64_t h1, c1;
	size_t n1;
	struct stock_res r;
	EXPECT_RC(stock_call(S_SCRIBBLE, dir, "plain", 9, &r), 0);
	EXPECT(meta_version(dir) == DL_DATA_VERSION);
	EXPECT_RC(stock_call(S_DIGEST, dir, "plain", 0, &r), 0);
	our_digest(dir, "plain", &h1, &n1, &c1);
	EXPECT(h1 == r.hash && n1 == r.count && n1 > 100);
	EXPECT(c1 == ~(uint64_t)0); /* uncounted: count_all refused, out untouched */
	uint64_t hplain = h1;
	size_t nplain = n1;

	MDB_env *env = open_ours(dir);
	MDB_txn *txn;
	MDB_dbi cnt, cdup;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "cnt", MDB_CREATE | MDB_COUNTED, &cnt));
	MUST(mdb_dbi_open(txn, "cdup", MDB_CREATE | MDB_COUNTED | MDB_DUPSORT, &cdup));
	char kb[32], vb[32];
	for (unsigned i = 0; i < 2000u * (unsigned)scale; i++) {
		key_of(kb, sizeof kb, i);
		MDB_val k = {strlen(kb), kb}, v = {(size_t)snprintf(vb, sizeof vb, "v%u", i), vb};
		MUST(mdb_put(txn, cnt, &k, &v, 0));
		k.mv_size = 8; /* 200 keys, 10 values each */
		MUST(mdb_put(txn, cdup, &k, &v, 0));
	}
	MUST(mdb_txn_commit(txn));
	mdb_env_close(env);
	EXPECT(meta_version(dir) == DL_DATA_VERSION_EXT);
	const char *names[] = {"plain", "cnt", "cdup", NULL};
	for (int j = 0; j < 4; j++)
		EXPECT_RC(stock_call(S_DIGEST, dir, names[j], 0, &r), MDB_VERSION_MISMATCH);
	EXPECT_RC(stock_call(S_OPEN, dir, NULL, 0, &r), MDB_VERSION_MISMATCH);
	our_digest(dir, "plain", &h1, &n1, &c1);
	EXPECT(h1 == hplain && n1 == nplain);
	our_digest(dir, "cnt", &h1, &n1, &c1);
	EXPECT(n1 == 2000u * (unsigned)scale && c1 == n1);
	our_digest(dir, "cdup", &h1, &n1, &c1);
	EXPECT(n1 == 2000u * (unsigned)scale && c1 == n1);

	/* dropping the counted DBs does not make the file stock-readable again */
	env = open_ours(dir);
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "cnt", 0, &cnt));
	MUST(mdb_dbi_open(txn, "cdup", 0, &cdup));
	EXPECT_RC(mdb_drop(txn, cnt, 1), 0);
	EXPECT_RC(mdb_drop(txn, cdup, 1), 0);
	MUST(mdb_txn_commit(txn));
	mdb_env_close(env);
	EXPECT(meta_version(dir) == DL_DATA_VERSION_EXT);
	EXPECT_RC(stock_call(S_OPEN, dir, NULL, 0, &r), MDB_VERSION_MISMATCH);
	our_digest(dir, "plain", &h1, &n1, &c1);
	EXPECT(h1 == hplain && n1 == nplain);

	/* counted main DB (plain and DUPSORT): stock refuses the whole env; a
	 * plain main DB is the control */
	const char *dirs[3] = {"build/countfmt_mainplain", "build/countfmt_main", "build/countfmt_maindup"};
	for (int mode = 0; mode < 3; mode++) {
		int counted = mode > 0;
		const char *d = dirs[mode];
		tu_fresh_dir(d);
		MDB_env *env = open_ours(d);
		MDB_txn *txn;
		MDB_dbi dbi;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		EXPECT_RC(mdb_dbi_open(txn, NULL, mode == 2 ? MDB_COUNTED | MDB_DUPSORT : counted ? MDB_COUNTED : 0,
			&dbi), 0);
		char kb[32];
		for (unsigned i = 0; i < 3000; i++) {
			/* DUPSORT: 300 keys with 10 values each */
			key_of(kb, sizeof kb, mode == 2 ? i / 10 : i);
			MDB_val k = {strlen(kb), kb}, v = {strlen(kb), kb};
			if (mode == 2)
				v.mv_size = (size_t)snprintf(kb + 16, 16, "v%u", i), v.mv_data = kb + 16;
			MUST(mdb_put(txn, dbi, &k, &v, 0));
		}
		if (mode == 2) {
			/* the main tree's branch pages carry KEYCOUNT */
			MDB_cursor *c;
			MDB_val k, v;
			MUST(mdb_cursor_open(txn, dbi, &c));
			MUST(mdb_cursor_get(c, &k, &v, MDB_FIRST));
			EXPECT(c->c_depth >= 2);
			EXPECT(c->c_depth >= 2 && (c->c_pg[0]->p_flags & (DL_P_COUNTED | DL_P_KEYCOUNT)) ==
				(DL_P_COUNTED | DL_P_KEYCOUNT));
			mdb_cursor_close(c);
			uint64_t nk = 0;
			EXPECT_RC(mdb_range_count_keys(txn, dbi, NULL, NULL, 0, &nk), 0);
			EXPECT(nk == 300);
		}
		MUST(mdb_txn_commit(txn));
		/* an extension cannot be added to a non-empty main DB */
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		EXPECT_RC(mdb_dbi_open(txn, NULL, MDB_COUNTED, &dbi), counted ? 0 : MDB_INCOMPATIBLE);
		mdb_txn_abort(txn);
		mdb_env_close(env);
		EXPECT(meta_version(d) == (counted ? DL_DATA_VERSION_EXT : DL_DATA_VERSION));
		EXPECT_RC(stock_call(S_OPEN, d, NULL, 0, &r), counted ? MDB_VERSION_MISMATCH : 0);
		/* ours opens it either way */
		our_digest(d, NULL, &h1, &n1, &c1);
		EXPECT(n1 == 3000);
		EXPECT(counted ? c1 == 3000 : c1 == ~(uint64_t)0);
		if (!counted) {
			EXPECT_RC(stock_call(S_DIGEST, d, NULL, 0, &r), 0);
			EXPECT(h1 == r.hash && n1 == r.count);
		}
	}
}

/* ---- random writes, every stored count checked ------------------------------ */

/* A counted DB and a counted DUPSORT DB take random puts, deletes (by key, by
 * pair, through cursors), big values and nested txns (some aborted); the
 * checker runs inside write txns and after each commit, and count_all /
 * range_count_keys must match a bitmap model. */
#define ST_KEYS 20000u
#define ST_DKEYS 1500u
#define ST_DVALS 400u

static void st_key(char *b, unsigned i) { snprintf(b, 16, "s%05u", i); }
static size_t st_val(char *b, unsigned j) { return (size_t)snprintf(b, 48, "dv%04u-%.*s", j, (int)(j % 29), "pppppppppppppppppppppppppppppp"); }

/* the number after a prefix of skip bytes in a (not NUL-terminated) item */
static unsigned st_num(const MDB_val *x, size_t skip)
{
	char b[16];
	size_t n = x->mv_size > skip ? x->mv_size - skip : 0;
	if (n > sizeof b - 1)
		n = sizeof b - 1;
	memcpy(b, (char *)x->mv_data + skip, n);
	b[n] = 0;
	return (unsigned)strtoul(b, NULL, 10);
}

static void st_checked(MDB_txn *txn, const char *where, int step)
{
	char msg[512];
	int rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "stress %s, step %d: %s\n", where, step, msg);
}

struct st_model {
	unsigned char have[ST_KEYS];
	unsigned char dhave[ST_DKEYS][ST_DVALS];
};

static void st_ops(MDB_txn *txn, MDB_dbi a, MDB_dbi d, struct st_model *m, uint64_t *seed, int n)
{
	static char big[9000];
	char kb[16], vb[48];
	for (int i = 0; i < n; i++) {
		uint64_t r = tu_next(seed);
		unsigned what = (unsigned)(r % 100);
		if (!a && (what < 45 || (what >= 90 && what < 95)))
			what = 45 + (unsigned)((r >> 50) % 45); /* no plain DB: duplicate ops only */
		if (what < 45) {
			unsigned k = (unsigned)((r >> 8) % ST_KEYS);
			st_key(kb, k);
			MDB_val key = {strlen(kb), kb}, v = {(r >> 40) % 200, big};
			if ((r >> 30) % 40 == 0)
				v.mv_size = 2500 + (r >> 40) % 6000;
			if ((r >> 20) % 3 == 0) {
				int rc = mdb_del(txn, a, &key, NULL);
				EXPECT(rc == (m->have[k] ? 0 : MDB_NOTFOUND));
				m->have[k] = 0;
			} else {
				EXPECT_RC(mdb_put(txn, a, &key, &v, 0), 0);
				m->have[k] = 1;
			}
		} else if (what < 90) {
			/* a few hot keys grow sub-trees, the rest stay in sub-pages */
			unsigned k = (unsigned)((r >> 8) % ST_DKEYS), j = (unsigned)((r >> 20) % ST_DVALS);
			if (k >= 4)
				j %= 12;
			st_key(kb, k);
			MDB_val key = {strlen(kb), kb}, v = {st_val(vb, j), vb};
			if ((r >> 40) % 5 < 2) {
				int rc = mdb_del(txn, d, &key, &v);
				EXPECT(rc == (m->dhave[k][j] ? 0 : MDB_NOTFOUND));
				m->dhave[k][j] = 0;
			} else if ((r >> 40) % 50 == 2) {
				/* all duplicates of a key */
				int any = 0;
				for (unsigned x = 0; x < ST_DVALS; x++)
					any |= m->dhave[k][x];
				int rc = mdb_del(txn, d, &key, NULL);
				EXPECT(rc == (any ? 0 : MDB_NOTFOUND));
				memset(m->dhave[k], 0, ST_DVALS);
			} else {
				EXPECT_RC(mdb_put(txn, d, &key, &v, 0), 0);
				m->dhave[k][j] = 1;
			}
		} else {
			/* a cursor walks a stretch and deletes some of what it sees */
			MDB_cursor *c;
			int dup = what >= 95;
			MUST(mdb_cursor_open(txn, dup ? d : a, &c));
			unsigned k = (unsigned)((r >> 8) % (dup ? ST_DKEYS : ST_KEYS));
			st_key(kb, k);
			MDB_val key = {strlen(kb), kb}, v;
			int rc = mdb_cursor_get(c, &key, &v, MDB_SET_RANGE);
			for (int step = 0; rc == 0 && step < 12; step++) {
				if (tu_below(seed, 8) == 0) {
					unsigned kk = st_num(&key, 1);
					if (dup) {
						unsigned jj = st_num(&v, 2);
						EXPECT_RC(mdb_cursor_del(c, 0), 0);
						m->dhave[kk][jj] = 0;
					} else {
						EXPECT_RC(mdb_cursor_del(c, 0), 0);
						m->have[kk] = 0;
					}
				}
				rc = mdb_cursor_get(c, &key, &v, MDB_NEXT);
			}
			EXPECT(rc == 0 || rc == MDB_NOTFOUND);
			mdb_cursor_close(c);
		}
	}
}

static void st_compare(MDB_txn *txn, MDB_dbi a, MDB_dbi d, const struct st_model *m, const char *where)
{
	uint64_t na = 0, nd = 0, nk = 0, got;
	for (unsigned k = 0; k < ST_KEYS; k++)
		na += m->have[k];
	for (unsigned k = 0; k < ST_DKEYS; k++) {
		unsigned any = 0;
		for (unsigned j = 0; j < ST_DVALS; j++)
			any += m->dhave[k][j];
		nd += any;
		nk += any != 0;
	}
	if (a) {
		EXPECT_RC(mdb_count_all(txn, a, 0, &got), 0);
		EXPECT(got == na);
		if (got != na)
			fprintf(stderr, "stress %s: count_all(a) %" PRIu64 ", model %" PRIu64 "\n", where, got, na);
	}
	EXPECT_RC(mdb_count_all(txn, d, 0, &got), 0);
	EXPECT(got == nd);
	if (got != nd)
		fprintf(stderr, "stress %s: count_all(d) %" PRIu64 ", model %" PRIu64 "\n", where, got, nd);
	EXPECT_RC(mdb_range_count_keys(txn, d, NULL, NULL, 0, &got), 0);
	EXPECT(got == nk);
}

/* main_dup: the main DB itself is counted DUPSORT (KEYCOUNT branch pages),
 * with no named DBs; else a counted DB "sa" and a counted DUPSORT DB "sd" */
static void test_stress(int scale, int main_dup)
{
	const char *dir = main_dup ? "build/countfmt_stressmain" : "build/countfmt_stress";
	tu_fresh_dir(dir);
	MDB_env *env = open_ours(dir);
	static struct st_model m, saved;
	memset(&m, 0, sizeof m);
	uint64_t seed = getenv("COUNTFMT_SEED") ? strtoull(getenv("COUNTFMT_SEED"), NULL, 0) : 9001;
	MDB_dbi a = 0, d;
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	if (main_dup) {
		MUST(mdb_dbi_open(txn, NULL, MDB_COUNTED | MDB_DUPSORT, &d));
	} else {
		MUST(mdb_dbi_open(txn, "sa", MDB_CREATE | MDB_COUNTED, &a));
		MUST(mdb_dbi_open(txn, "sd", MDB_CREATE | MDB_COUNTED | MDB_DUPSORT, &d));
	}
	MUST(mdb_txn_commit(txn));
	int rounds = 60 * scale;
	for (int t = 0; t < rounds; t++) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		st_ops(txn, a, d, &m, &seed, 800);
		if (t % 3 == 1) {
			/* a nested txn: aborted every other time, its counts must go */
			MDB_txn *child;
			MUST(mdb_txn_begin(env, txn, 0, &child));
			saved = m;
			st_ops(child, a, d, &m, &seed, 300);
			st_checked(child, "nested", t);
			if (t % 2) {
				mdb_txn_abort(child);
				m = saved;
			} else {
				EXPECT_RC(mdb_txn_commit(child), 0);
			}
		}
		st_checked(txn, "write txn", t);
		st_compare(txn, a, d, &m, "write txn");
		if (t % 10 == 9) {
			mdb_txn_abort(txn);
			MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
			/* the model ran ahead: rebuild it from the committed state */
			memset(&m, 0, sizeof m);
			MDB_cursor *c;
			MDB_val k, v;
			if (a) {
				MUST(mdb_cursor_open(txn, a, &c));
				while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0)
					m.have[st_num(&k, 1)] = 1;
				mdb_cursor_close(c);
			}
			MUST(mdb_cursor_open(txn, d, &c));
			while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0)
				m.dhave[st_num(&k, 1)][st_num(&v, 2)] = 1;
			mdb_cursor_close(c);
			mdb_txn_abort(txn);
			continue;
		}
		EXPECT_RC(mdb_txn_commit(txn), 0);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		st_checked(txn, "after commit", t);
		st_compare(txn, a, d, &m, "after commit");
		mdb_txn_abort(txn);
	}
	/* the tree got deep enough to exercise branch merges */
	MDB_stat st;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_stat(txn, main_dup ? d : a, &st));
	EXPECT(st.ms_depth >= (main_dup ? 2u : 3u));
	if (st.ms_depth < 3 || getenv("COUNTFMT_VERBOSE"))
		fprintf(stderr, "stress%s: depth %u, %zu entries, %zu leaves\n", main_dup ? " (main DB)" : "",
			st.ms_depth, (size_t)st.ms_entries, (size_t)st.ms_leaf_pages);
	if (main_dup)
		EXPECT(meta_version(dir) == DL_DATA_VERSION_EXT);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

int main(void)
{
	int scale = tu_scale();
	test_detection(scale);
	test_stock(1);
	test_stress(scale, 0);
	test_stress(scale, 1);
	return tu_finish("countfmt_test");
}
