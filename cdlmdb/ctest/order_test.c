/*
 * order_test.c - separators and leaves that disagree (damaged files).
 *
 * A branch node's key bounds every key below it (FORMAT.md); a file whose
 * separators and leaves disagree would let a cursor walk return keys out
 * of order, or a lookup miss a key, without any error.  The engine holds a
 * leaf's edge keys against its separators where a cursor could go wrong
 * (a step into the neighbouring leaf, a FIRST or LAST descent, a lookup
 * that misses; search.c dlmdb_leaf_in_bounds).
 *
 * Each case writes a database with several leaves, closes the env, edits
 * the data file where the on-disk format (walked here by hand) puts a
 * separator or a child pointer, reopens it and expects:
 *  - a forward walk (FIRST/NEXT) and a backward walk (LAST/PREV) to end in
 *    MDB_CORRUPTED before their last item, every key they returned before
 *    that in order (no silent disorder);
 *  - a lookup of a key whose leaf moved to be MDB_CORRUPTED too;
 *  - a write txn that meets the damage to be failed (MDB_BAD_TXN after);
 * and the untouched file to walk completely, in order, under the DB's own
 * order (a custom comparator, a reverse key order, duplicates under the
 * duplicate order) -- no false alarm.
 * Damage: two child pointers of the root swapped; a separator raised above
 * the first key of its leaf; a separator lowered to the last key of the
 * leaf before it; the last key of a leaf raised above the next separator
 * (each leaf stays in order by itself).  Trees: the main DB (default
 * order), a named DB under a custom descending comparator
 * (mdb_set_compare), a REVERSEKEY DB, and a duplicate sub-tree (the walk
 * of one key's values, FIRST_DUP/NEXT_DUP and LAST_DUP/PREV_DUP; lookups
 * by GET_BOTH).
 */
#include "testutil.h"
#include <unistd.h>

#define PS 4096u
#define NKEYS 1500
#define NDUPS 1200

static char dir[128];

/* ---- the file, walked by hand ------------------------------------------- */

static unsigned char *img;
static size_t imglen;

static void load(void)
{
	char path[300];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	free(img);
	img = tu_read_file(path, &imglen);
}

static void save(void)
{
	char path[300];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	tu_write_file(path, img, imglen);
}

static uint16_t get16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint64_t get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static unsigned char *page(uint64_t pg)
{
	if ((pg + 1) * PS > imglen) {
		fprintf(stderr, "page %llu outside the file\n", (unsigned long long)pg);
		exit(2);
	}
	return img + pg * PS;
}
static unsigned pflags(const unsigned char *p) { return get16(p + 10); }
static unsigned nkeys(const unsigned char *p) { return (get16(p + 12) - 16u) / 2u; }
static unsigned char *node(unsigned char *p, unsigned i) { return p + get16(p + 16 + 2 * i); }
static unsigned ksize(const unsigned char *n) { return get16(n + 6); }
static uint64_t child(const unsigned char *n)
{
	return (uint64_t)get16(n) | (uint64_t)get16(n + 2) << 16 | (uint64_t)get16(n + 4) << 32;
}

/* the main DB's root in the newer meta */
static uint64_t main_root(void)
{
	const unsigned char *m0 = img + 16, *m1 = img + PS + 16;
	const unsigned char *m = get64(m1 + 128) > get64(m0 + 128) ? m1 : m0;
	return get64(m + 72 + 40);
}

/* The 48-byte record stored as the value of key name in the tree at root
 * (named DBs; a duplicate sub-tree's record in a DUPSORT DB). */
static unsigned char *record_of(uint64_t root, const char *name)
{
	size_t nl = strlen(name);
	unsigned char *p = page(root);
	while (pflags(p) & 0x01) {	/* branch: last node whose key <= name */
		unsigned i, n = nkeys(p), pick = 0;
		for (i = 1; i < n; i++) {
			unsigned char *nd = node(p, i);
			size_t kl = ksize(nd);
			int c = memcmp(nd + 8, name, kl < nl ? kl : nl);
			if (c > 0 || (c == 0 && kl > nl))
				break;
			pick = i;
		}
		p = page(child(node(p, pick)));
	}
	for (unsigned i = 0; i < nkeys(p); i++) {
		unsigned char *nd = node(p, i);
		if (ksize(nd) == nl && !memcmp(nd + 8, name, nl))
			return nd + 8 + nl;
	}
	fprintf(stderr, "no record for %s\n", name);
	exit(2);
}

/* ---- writing and reading through the engine -------------------------------- */

enum { DB_MAIN, DB_DESC, DB_REV, DB_DUPS };

/* descending byte order: a custom comparator */
static int cmp_desc(const MDB_val *a, const MDB_val *b)
{
	size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
	int c = memcmp(a->mv_data, b->mv_data, n);
	if (!c)
		c = (a->mv_size > b->mv_size) - (a->mv_size < b->mv_size);
	return -c;
}

static MDB_env *open_env(void)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_set_maxdbs(env, 8));
	MUST(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
	return env;
}

static int open_db(MDB_txn *txn, int kind, unsigned extra, MDB_dbi *dbi)
{
	int rc;
	switch (kind) {
	case DB_MAIN:
		return mdb_dbi_open(txn, NULL, extra, dbi);
	case DB_DESC:
		if ((rc = mdb_dbi_open(txn, "desc", extra, dbi)))
			return rc;
		return mdb_set_compare(txn, *dbi, cmp_desc);
	case DB_REV:
		return mdb_dbi_open(txn, "rev", MDB_REVERSEKEY | extra, dbi);
	default:
		return mdb_dbi_open(txn, "dups", MDB_DUPSORT | extra, dbi);
	}
}

static void key_of(unsigned i, char *buf) { snprintf(buf, 16, "k%06u", i * 7); }

/* a fresh env holding the DB of kind: NKEYS keys (DB_DUPS: NDUPS values
 * of key "big" between a few single keys) */
static void build(int kind)
{
	tu_fresh_dir(dir);
	MDB_env *env = open_env();
	MDB_txn *txn;
	MDB_dbi dbi;
	char k[16], v[64];
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(open_db(txn, kind, MDB_CREATE, &dbi));
	if (kind == DB_DUPS) {
		MDB_val key = {3, "big"};
		for (unsigned i = 0; i < NDUPS; i++) {
			snprintf(v, sizeof v, "value-%08u", i * 3);
			MDB_val val = {strlen(v), v};
			MUST(mdb_put(txn, dbi, &key, &val, 0));
		}
		for (unsigned i = 0; i < 4; i++) {
			key_of(i, k);
			MDB_val key2 = {strlen(k), k}, val = {1, "x"};
			MUST(mdb_put(txn, dbi, &key2, &val, 0));
		}
	} else {
		memset(v, 'v', sizeof v);
		for (unsigned i = 0; i < NKEYS; i++) {
			key_of(i, k);
			MDB_val key = {strlen(k), k}, val = {40, v};
			MUST(mdb_put(txn, dbi, &key, &val, 0));
		}
	}
	MUST(mdb_txn_commit(txn));
	mdb_env_close(env);
}

/* The root of the tree the case edits: the DB's own, or the sub-tree of
 * key "big" (DB_DUPS). */
static uint64_t tree_root(int kind)
{
	uint64_t root = main_root();
	switch (kind) {
	case DB_MAIN:
		return root;
	case DB_DESC:
		return get64(record_of(root, "desc") + 40);
	case DB_REV:
		return get64(record_of(root, "rev") + 40);
	default:
		return get64(record_of(get64(record_of(root, "dups") + 40), "big") + 40);
	}
}

struct walk {
	int rc;		/* how the walk ended (MDB_NOTFOUND: completely) */
	unsigned n;	/* items returned */
	int disorder;	/* a returned item not after the previous one */
};

/*
 * Walk the DB (DB_DUPS: the values of "big") forward or backward, checking
 * each item against the previous one under the order the DB uses.
 */
static struct walk walk(MDB_txn *txn, int kind, int backward)
{
	struct walk w = {0, 0, 0};
	MDB_dbi dbi;
	MDB_cursor *c;
	char prev[64];
	size_t plen = 0;
	if ((w.rc = open_db(txn, kind, 0, &dbi)))
		return w;
	if ((w.rc = mdb_cursor_open(txn, dbi, &c)))
		return w;
	MDB_val k = {3, "big"}, d;
	MDB_cursor_op first, next;
	if (kind == DB_DUPS) {
		w.rc = mdb_cursor_get(c, &k, &d, MDB_SET);
		first = backward ? MDB_LAST_DUP : MDB_FIRST_DUP;
		next = backward ? MDB_PREV_DUP : MDB_NEXT_DUP;
	} else {
		first = backward ? MDB_LAST : MDB_FIRST;
		next = backward ? MDB_PREV : MDB_NEXT;
	}
	for (MDB_cursor_op op = first; w.rc == 0; op = next) {
		if ((w.rc = mdb_cursor_get(c, &k, &d, op)))
			break;
		MDB_val item = kind == DB_DUPS ? d : k;
		if (item.mv_size > sizeof prev) {
			w.disorder = 1;
			break;
		}
		if (w.n) {
			MDB_val pv = {plen, prev};
			int c2 = kind == DB_DUPS ? mdb_dcmp(txn, dbi, &pv, &item) : mdb_cmp(txn, dbi, &pv, &item);
			if (backward ? c2 <= 0 : c2 >= 0)
				w.disorder = 1;
		}
		memcpy(prev, item.mv_data, item.mv_size);
		plen = item.mv_size;
		w.n++;
	}
	mdb_cursor_close(c);
	return w;
}

static unsigned items(int kind) { return kind == DB_DUPS ? NDUPS : NKEYS; }

/* both walks of the pristine file: complete and in order */
static void expect_intact(int kind, const char *what)
{
	MDB_env *env = open_env();
	MDB_txn *txn;
	for (int back = 0; back < 2; back++) {
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		struct walk w = walk(txn, kind, back);
		if (w.rc != MDB_NOTFOUND || w.n != items(kind) || w.disorder)
			fprintf(stderr, "%s (%s walk): rc %d n %u disorder %d\n", what, back ? "backward" : "forward",
				w.rc, w.n, w.disorder);
		EXPECT(w.rc == MDB_NOTFOUND);
		EXPECT(w.n == items(kind));
		EXPECT(!w.disorder);
		mdb_txn_abort(txn);
	}
	char msg[256];
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(open_db(txn, kind, 0, &dbi));	/* the checker uses its order */
	int rc = mdb_txn_check(txn, msg, sizeof msg);
	if (rc)
		fprintf(stderr, "%s: check: %s\n", what, msg);
	EXPECT_RC(rc, MDB_SUCCESS);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

/* both walks of the damaged file: MDB_CORRUPTED before the end, and no
 * disorder on the way; then the same in a write txn, which fails */
static void expect_caught(int kind, const char *what)
{
	MDB_env *env = open_env();
	MDB_txn *txn;
	for (int back = 0; back < 2; back++) {
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		struct walk w = walk(txn, kind, back);
		if (w.rc != MDB_CORRUPTED || w.disorder)
			fprintf(stderr, "%s (%s walk): rc %d (%s) after %u items, disorder %d\n", what,
				back ? "backward" : "forward", w.rc, mdb_strerror(w.rc), w.n, w.disorder);
		EXPECT(w.rc == MDB_CORRUPTED);
		EXPECT(w.n < items(kind));
		EXPECT(!w.disorder);
		mdb_txn_abort(txn);
	}
	/* the checker agrees that the file is damaged */
	char msg[256];
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(open_db(txn, kind, 0, &dbi));
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), MDB_CORRUPTED);
	mdb_txn_abort(txn);
	/* a write txn's walk fails it */
	MDB_val k = {5, "zzzzz"}, d = {1, "z"};
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(open_db(txn, kind, 0, &dbi));
	struct walk w = walk(txn, kind, 0);
	EXPECT(w.rc == MDB_CORRUPTED);
	EXPECT_RC(mdb_put(txn, dbi, &k, &d, 0), MDB_BAD_TXN);
	EXPECT(mdb_txn_commit(txn) != 0);
	mdb_env_close(env);
}

/* A lookup of key (DB_DUPS: of value key under "big") whose leaf the edit
 * moved: MDB_CORRUPTED, not MDB_NOTFOUND. */
static void expect_lookup_caught(int kind, const char *key, const char *what)
{
	MDB_env *env = open_env();
	MDB_txn *txn;
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(open_db(txn, kind, 0, &dbi));
	MDB_val k = {strlen(key), (void *)key}, d;
	int rc;
	if (kind == DB_DUPS) {
		MDB_cursor *c;
		MUST(mdb_cursor_open(txn, dbi, &c));
		MDB_val big = {3, "big"};
		rc = mdb_cursor_get(c, &big, &k, MDB_GET_BOTH);
		mdb_cursor_close(c);
	} else {
		rc = mdb_get(txn, dbi, &k, &d);
	}
	if (rc != MDB_CORRUPTED)
		fprintf(stderr, "%s: lookup of %s: rc %d (%s)\n", what, key, rc, mdb_strerror(rc));
	EXPECT_RC(rc, MDB_CORRUPTED);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

/* The leaf at the left (last = 0) or right edge of the subtree under child
 * node i of branch page p. */
static unsigned char *edge_leaf(unsigned char *p, unsigned i, int last)
{
	unsigned char *q = page(child(node(p, i)));
	while (pflags(q) & 0x01)
		q = page(child(node(q, last ? nkeys(q) - 1 : 0)));
	if (nkeys(q) < 2) {
		fprintf(stderr, "a leaf of fewer than 2 keys\n");
		exit(2);
	}
	return q;
}

/* The root of the case's tree, which must be a branch of >= 3 children. */
static unsigned char *root_branch(int kind, const char *what)
{
	unsigned char *r = page(tree_root(kind));
	if (!(pflags(r) & 0x01) || nkeys(r) < 3) {
		fprintf(stderr, "%s: the tree's root is not a branch of 3+ children (flags %#x, %u)\n", what,
			pflags(r), nkeys(r));
		exit(2);
	}
	return r;
}

/* Overwrite the key of node dst with the key of node src (equal sizes:
 * every key of a case's tree has the same length). */
static void copy_key(unsigned char *dst, const unsigned char *src)
{
	if (ksize(dst) != ksize(src)) {
		fprintf(stderr, "keys of %u and %u bytes\n", ksize(dst), ksize(src));
		exit(2);
	}
	memcpy(dst + 8, src + 8, ksize(src));
}

/* swap the child pointers of nodes 1 and 2 of the tree's root */
static void case_swap(int kind, const char *what)
{
	build(kind);
	expect_intact(kind, what);
	load();
	unsigned char *r = root_branch(kind, what);
	/* a key of the leaf node 1 names now (looked up after the swap) */
	unsigned char *nd = node(edge_leaf(r, 1, 0), 1);
	char k1[64];
	size_t kl = ksize(nd) < sizeof k1 - 1 ? ksize(nd) : sizeof k1 - 1;
	memcpy(k1, nd + 8, kl);
	k1[kl] = 0;
	unsigned char *a = node(r, 1), *b = node(r, 2), t[6];
	memcpy(t, a, 6);
	memcpy(a, b, 6);
	memcpy(b, t, 6);
	save();
	expect_caught(kind, what);
	expect_lookup_caught(kind, k1, what);
}

/* separator 2 of the root raised to the second key of the leaf it names
 * (above that leaf's first key), or lowered to the last key of the leaf
 * before (not above it any more): wrong in any key order */
static void case_separator(int kind, int raise, const char *what)
{
	build(kind);
	load();
	unsigned char *r = root_branch(kind, what);
	if (raise)
		copy_key(node(r, 2), node(edge_leaf(r, 2, 0), 1));
	else {
		unsigned char *left = edge_leaf(r, 1, 1);
		copy_key(node(r, 2), node(left, nkeys(left) - 1));
	}
	save();
	expect_caught(kind, what);
}

/* the last key of the leaf left of separator 2 raised to the second key of
 * the leaf right of it: that leaf alone is still in order */
static void case_leaf_edge(int kind, const char *what)
{
	build(kind);
	load();
	unsigned char *r = root_branch(kind, what);
	unsigned char *left = edge_leaf(r, 1, 1);
	copy_key(node(left, nkeys(left) - 1), node(edge_leaf(r, 2, 0), 1));
	save();
	expect_caught(kind, what);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/dlmdb-order-%d", (int)getpid());
	static const struct {
		int kind;
		const char *name;
	} dbs[] = {
		{DB_MAIN, "main DB"},
		{DB_DESC, "custom descending comparator"},
		{DB_REV, "REVERSEKEY"},
		{DB_DUPS, "duplicate sub-tree"},
	};
	char what[128];
	for (unsigned i = 0; i < sizeof dbs / sizeof dbs[0]; i++) {
		snprintf(what, sizeof what, "%s, swapped children", dbs[i].name);
		case_swap(dbs[i].kind, what);
		snprintf(what, sizeof what, "%s, separator raised", dbs[i].name);
		case_separator(dbs[i].kind, 1, what);
		snprintf(what, sizeof what, "%s, separator lowered", dbs[i].name);
		case_separator(dbs[i].kind, 0, what);
		snprintf(what, sizeof what, "%s, leaf edge raised", dbs[i].name);
		case_leaf_edge(dbs[i].kind, what);
	}
	free(img);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return tu_finish("order_test");
}
