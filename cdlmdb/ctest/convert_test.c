/*
 * convert_test.c - mdb_dbi_replace (a named DB takes over another's tree in
 * one write txn) and mdb_footprint (stored vs decoded sizes of one DB).
 *
 * Replace: a plain DB replaced by a counted copy and back (unique keys,
 * DUPSORT with sub-pages and sub-trees, DUPFIXED), checked in the txn,
 * after commit, and from a reader that began before (it keeps the old DB);
 * a nested txn's abort restores both DBs; the checker (mdb_txn_check,
 * which also accounts for every free page) passes after each step; the
 * refusals (core DBs, same DB, read txn, other order flags, open cursors).
 *
 * Footprint: on uncompressed DBs stored == decoded and every total equals
 * what the test computes from the pairs it wrote and from mdb_stat; a walk
 * in chunks of one leaf gives the same totals as one call.
 */
#include "testutil.h"

static const char *DIR0 = "build/convert_env";

static MDB_env *open_env(void)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 32));
	MUST(mdb_env_set_mapsize(env, 64 << 20));
	MUST(mdb_env_open(env, DIR0, MDB_NOTLS, 0644));
	return env;
}

static void check_txn(MDB_txn *t, int line)
{
	char msg[256];
	int rc = mdb_txn_check(t, msg, sizeof msg);
	if (rc) {
		fprintf(stderr, "line %d: mdb_txn_check: %s (%s)\n", line, mdb_strerror(rc), msg);
		EXPECT(0);
	}
}

/* one pair of the test's data set: key i (with dups values j < ndup(i)) */
struct spec {
	unsigned flags;		/* DB flags of the source */
	unsigned nkeys;
	unsigned maxdup;	/* DUPSORT: up to this many values per key */
	unsigned vlen;		/* value size (DUPFIXED: fixed) */
};

static unsigned ndup(const struct spec *s, unsigned i)
{
	if (!(s->flags & MDB_DUPSORT))
		return 1;
	/* a few keys get many values (sub-trees), most a handful (sub-pages) */
	if (i % 17 == 3)
		return s->maxdup;
	return 1 + i % 5;
}

static size_t make_key(unsigned i, char *buf)
{
	/* varying lengths, shared prefixes, never empty */
	return (size_t)sprintf(buf, "key-%06u-%.*s", i, (int)(i % 13), "abcdefghijklm");
}

static size_t make_val(const struct spec *s, unsigned i, unsigned j, char *buf)
{
	size_t n = s->vlen;
	if (!(s->flags & MDB_DUPFIXED))
		n = 2 + (i * 7 + j * 3) % (s->vlen - 1);
	if (!(s->flags & MDB_DUPSORT) && i % 97 == 5)
		n = 3000 + i % 900;	/* a big value: overflow pages */
	/* j first so that values of one key are distinct */
	for (size_t b = 0; b < n; b++)
		buf[b] = (char)('a' + (b == 0 ? j % 26 : (b == 1 ? (j / 26) % 26 : (i + b) % 26)));
	return n;
}

/* fill DB name (created with flags) from spec in its own txn; the handle */
static MDB_dbi fill(MDB_env *env, const char *name, const struct spec *s)
{
	MDB_txn *w;
	MDB_dbi d;
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_dbi_open(w, name, s->flags | MDB_CREATE, &d));
	char kb[64], vb[4096];
	for (unsigned i = 0; i < s->nkeys; i++)
		for (unsigned j = 0; j < ndup(s, i); j++) {
			MDB_val k = {make_key(i, kb), kb}, v = {make_val(s, i, j, vb), vb};
			MUST(mdb_put(w, d, &k, &v, 0));
		}
	MUST(mdb_txn_commit(w));
	return d;
}

/* copy every pair of from into to (txn w) */
static void copy_db(MDB_txn *w, MDB_dbi from, MDB_dbi to)
{
	MDB_cursor *c;
	MUST(mdb_cursor_open(w, from, &c));
	MDB_val k, v;
	int rc;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		/* the put may move the map view: copy first */
		char kb[512], vb[4096];
		memcpy(kb, k.mv_data, k.mv_size);
		memcpy(vb, v.mv_data, v.mv_size);
		MDB_val k2 = {k.mv_size, kb}, v2 = {v.mv_size, vb};
		MUST(mdb_put(w, to, &k2, &v2, 0));
	}
	EXPECT_RC(rc, MDB_NOTFOUND);
	mdb_cursor_close(c);
}

/* DB d in txn t holds exactly the pairs of spec s */
static void expect_content(MDB_txn *t, MDB_dbi d, const struct spec *s, int line)
{
	MDB_cursor *c;
	MUST(mdb_cursor_open(t, d, &c));
	char kb[64], vb[4096];
	uint64_t want_entries = 0;
	int bad = 0;
	/* the values of a key in duplicate order: build, then sort them the
	 * DB's way through mdb_dcmp */
	MDB_val vals[64];
	char store[64][256];
	MDB_val k, v;
	int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	for (unsigned i = 0; i < s->nkeys && !bad; i++) {
		unsigned nd = ndup(s, i);
		for (unsigned j = 0; j < nd; j++) {
			size_t n = make_val(s, i, j, vb);
			if (nd > 1) {
				memcpy(store[j], vb, n);
				vals[j].mv_size = n;
				vals[j].mv_data = store[j];
			}
		}
		if (nd > 1) {	/* insertion sort by the duplicate order */
			for (unsigned a = 1; a < nd; a++)
				for (unsigned b = a; b > 0 && mdb_dcmp(t, d, &vals[b - 1], &vals[b]) > 0; b--) {
					MDB_val x = vals[b];
					vals[b] = vals[b - 1];
					vals[b - 1] = x;
				}
		}
		size_t kl = make_key(i, kb);
		for (unsigned j = 0; j < nd; j++) {
			MDB_val want = {0, vb};
			if (nd > 1)
				want = vals[j];
			else
				want.mv_size = make_val(s, i, 0, vb);
			if (rc || k.mv_size != kl || memcmp(k.mv_data, kb, kl) || v.mv_size != want.mv_size ||
			    memcmp(v.mv_data, want.mv_data, want.mv_size)) {
				fprintf(stderr, "line %d: pair %u/%u differs (rc %d)\n", line, i, j, rc);
				bad = 1;
				break;
			}
			want_entries++;
			rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
		}
	}
	EXPECT(!bad);
	if (!bad)
		EXPECT_RC(rc, MDB_NOTFOUND);
	mdb_cursor_close(c);
	MDB_stat st;
	MUST(mdb_stat(t, d, &st));
	EXPECT(st.ms_entries == want_entries);
}

static void expect_flags(MDB_txn *t, MDB_dbi d, unsigned want, int line)
{
	unsigned f = 0;
	int rc = mdb_dbi_flags(t, d, &f);
	if (rc || f != want) {
		fprintf(stderr, "line %d: flags rc %d 0x%x, want 0x%x\n", line, rc, f, want);
		EXPECT(0);
	}
	uint64_t n;
	rc = mdb_count_all(t, d, 0, &n);
	if (want & MDB_COUNTED) {
		MDB_stat st;
		MUST(mdb_stat(t, d, &st));
		EXPECT(rc == 0 && n == st.ms_entries);
	} else {
		EXPECT_RC(rc, MDB_INCOMPATIBLE);
	}
}

/* one round: src (flags s->flags) -> copy with the encoding flags ext ->
 * replace -> back */
static void round_trip(MDB_env *env, const char *name, struct spec s, unsigned ext)
{
	MDB_dbi d = fill(env, name, &s);
	unsigned plain = s.flags;
	for (int step = 0; step < 2; step++) {
		unsigned from = step == 0 ? plain : plain | ext;
		unsigned to = step == 0 ? plain | ext : plain;
		MDB_txn *r, *w;
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
		MUST(mdb_txn_begin(env, NULL, 0, &w));
		MDB_dbi tmp;
		MUST(mdb_dbi_open(w, "convert.tmp", to | MDB_CREATE, &tmp));
		copy_db(w, d, tmp);
		EXPECT_RC(mdb_dbi_replace(w, d, tmp), 0);
		expect_flags(w, d, to, __LINE__);
		expect_content(w, d, &s, __LINE__);
		/* the temporary DB is gone, by handle and by name */
		MDB_val k = {1, "x"}, v;
		EXPECT(mdb_get(w, tmp, &k, &v) != 0 && mdb_get(w, tmp, &k, &v) != MDB_NOTFOUND);
		MDB_dbi again;
		EXPECT_RC(mdb_dbi_open(w, "convert.tmp", 0, &again), MDB_NOTFOUND);
		check_txn(w, __LINE__);
		MUST(mdb_txn_commit(w));
		/* the reader that began before sees the old DB */
		expect_flags(r, d, from, __LINE__);
		expect_content(r, d, &s, __LINE__);
		check_txn(r, __LINE__);
		mdb_txn_abort(r);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
		expect_flags(r, d, to, __LINE__);
		expect_content(r, d, &s, __LINE__);
		check_txn(r, __LINE__);
		mdb_txn_abort(r);
	}
	/* drop it for the next round */
	MDB_txn *w;
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_drop(w, d, 1));
	MUST(mdb_txn_commit(w));
}

/* The round trips: each DB kind with each encoding switched on and back
 * off.  (DUPSORT with MDB_PREFIX_COMPRESSION joins once the engine
 * compresses duplicates; mdb_dbi_open refuses the pair until then.) */
static void test_round_trips(MDB_env *env)
{
	unsigned sc = (unsigned)tu_scale();
	static const struct {
		const char *name;
		unsigned flags, maxdup, vlen, ext;
	} rounds[] = {
		{"plain", 0, 1, 40, MDB_COUNTED},
		{"dups", MDB_DUPSORT, 60, 200, MDB_COUNTED},
		{"dupfix", MDB_DUPSORT | MDB_DUPFIXED, 64, 24, MDB_COUNTED},
		{"revdups", MDB_DUPSORT | MDB_REVERSEDUP, 40, 100, MDB_COUNTED},
		{"plain", 0, 1, 40, MDB_PREFIX_COMPRESSION},
		{"plain", 0, 1, 40, MDB_COUNTED | MDB_PREFIX_COMPRESSION},
		{"dups", MDB_DUPSORT, 60, 200, MDB_PREFIX_COMPRESSION},
		{"dupfix", MDB_DUPSORT | MDB_DUPFIXED, 64, 24, MDB_PREFIX_COMPRESSION},
		{"revdups", MDB_DUPSORT | MDB_REVERSEDUP, 40, 100, MDB_COUNTED | MDB_PREFIX_COMPRESSION},
	};
	for (size_t i = 0; i < sizeof rounds / sizeof rounds[0]; i++) {
		unsigned nkeys = (rounds[i].flags & MDB_DUPSORT ? 800 : 3000) * sc;
		struct spec s = {rounds[i].flags, nkeys, rounds[i].maxdup, rounds[i].vlen};
		round_trip(env, rounds[i].name, s, rounds[i].ext);
	}
}

/* a child's replace that aborts leaves the parent as it was */
static void test_nested_abort(MDB_env *env)
{
	struct spec s = {0, 1500, 1, 30};
	MDB_dbi d = fill(env, "nest", &s);
	MDB_txn *w, *c;
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MDB_dbi tmp;
	MUST(mdb_dbi_open(w, "nest.tmp", MDB_COUNTED | MDB_CREATE, &tmp));
	copy_db(w, d, tmp);
	MDB_stat before;
	MUST(mdb_stat(w, tmp, &before));
	MUST(mdb_txn_begin(env, w, 0, &c));
	EXPECT_RC(mdb_dbi_replace(c, d, tmp), 0);
	expect_flags(c, d, MDB_COUNTED, __LINE__);
	check_txn(c, __LINE__);
	mdb_txn_abort(c);
	expect_flags(w, d, 0, __LINE__);
	expect_content(w, d, &s, __LINE__);
	/* the temporary DB is still there in the parent: by handle and name */
	MDB_stat st;
	EXPECT_RC(mdb_stat(w, tmp, &st), 0);
	EXPECT(st.ms_entries == before.ms_entries && st.ms_leaf_pages == before.ms_leaf_pages);
	MDB_dbi again;
	EXPECT_RC(mdb_dbi_open(w, "nest.tmp", 0, &again), 0);
	EXPECT(again == tmp);
	expect_flags(w, tmp, MDB_COUNTED, __LINE__);
	expect_content(w, tmp, &s, __LINE__);
	check_txn(w, __LINE__);
	/* a child's replace that commits is the parent's */
	MUST(mdb_txn_begin(env, w, 0, &c));
	EXPECT_RC(mdb_dbi_replace(c, d, tmp), 0);
	MUST(mdb_txn_commit(c));
	expect_flags(w, d, MDB_COUNTED, __LINE__);
	expect_content(w, d, &s, __LINE__);
	EXPECT_RC(mdb_dbi_open(w, "nest.tmp", 0, &again), MDB_NOTFOUND);
	check_txn(w, __LINE__);
	MUST(mdb_txn_commit(w));
	MDB_txn *r;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	expect_flags(r, d, MDB_COUNTED, __LINE__);
	expect_content(r, d, &s, __LINE__);
	check_txn(r, __LINE__);
	mdb_txn_abort(r);
}

static void test_refusals(MDB_env *env)
{
	MDB_txn *w, *r;
	MDB_dbi a, b, dup, maindb;
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_dbi_open(w, "ref.a", MDB_CREATE, &a));
	MUST(mdb_dbi_open(w, "ref.b", MDB_CREATE | MDB_COUNTED, &b));
	MUST(mdb_dbi_open(w, "ref.dup", MDB_CREATE | MDB_DUPSORT, &dup));
	MUST(mdb_dbi_open(w, NULL, 0, &maindb));
	MDB_val k = {1, "k"}, v = {1, "v"};
	MUST(mdb_put(w, a, &k, &v, 0));
	MUST(mdb_put(w, b, &k, &v, 0));
	MUST(mdb_txn_commit(w));

	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	EXPECT_RC(mdb_dbi_replace(r, a, b), EACCES);
	mdb_txn_abort(r);

	MUST(mdb_txn_begin(env, NULL, 0, &w));
	EXPECT_RC(mdb_dbi_replace(w, a, a), EINVAL);
	EXPECT_RC(mdb_dbi_replace(w, maindb, a), EINVAL);
	EXPECT_RC(mdb_dbi_replace(w, a, maindb), EINVAL);
	EXPECT_RC(mdb_dbi_replace(w, 0, a), EINVAL);
	EXPECT_RC(mdb_dbi_replace(w, a, dup), MDB_INCOMPATIBLE);
	EXPECT_RC(mdb_dbi_replace(w, dup, b), MDB_INCOMPATIBLE);
	MDB_cursor *c;
	MUST(mdb_cursor_open(w, b, &c));
	EXPECT_RC(mdb_dbi_replace(w, a, b), EBUSY);
	mdb_cursor_close(c);
	MUST(mdb_cursor_open(w, a, &c));
	EXPECT_RC(mdb_dbi_replace(w, a, b), EBUSY);
	/* a parent's cursor counts too */
	MDB_txn *ch;
	MUST(mdb_txn_begin(env, w, 0, &ch));
	EXPECT_RC(mdb_dbi_replace(ch, a, b), EBUSY);
	mdb_txn_abort(ch);
	mdb_cursor_close(c);
	/* nothing changed by the refusals */
	expect_flags(w, a, 0, __LINE__);
	expect_flags(w, b, MDB_COUNTED, __LINE__);
	EXPECT_RC(mdb_dbi_replace(w, a, b), 0);
	EXPECT_RC(mdb_get(w, a, &k, &v), 0);
	expect_flags(w, a, MDB_COUNTED, __LINE__);
	check_txn(w, __LINE__);
	mdb_txn_abort(w);
}

/* meta version of the newer meta page of the env in dir (0: unreadable):
 * the u32 after the magic, 16 bytes into the page; txnid at 16 + 128 */
static uint32_t newest_version(const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	FILE *f = fopen(path, "rb");
	unsigned char pg[2 * 4096];
	size_t got = f ? fread(pg, 1, sizeof pg, f) : 0;
	if (f)
		fclose(f);
	if (got != sizeof pg)
		return 0;
	uint32_t v[2];
	uint64_t id[2];
	for (int i = 0; i < 2; i++) {
		memcpy(&v[i], pg + i * 4096 + 16 + 4, 4);
		memcpy(&id[i], pg + i * 4096 + 16 + 128, 8);
	}
	return id[1] > id[0] ? v[1] : v[0];
}

/* A file holding only plain DBs is LMDB version 1; once a replace gives a
 * DB the counted encoding it carries the extended version, and keeps it
 * after the DB is replaced by a plain one again (FORMAT.md). */
static void test_meta_version(void)
{
	const char *dir = "build/convert_env_ver";
	tu_fresh_dir(dir);
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, dir, MDB_NOTLS, 0644));
	struct spec s = {0, 300, 1, 20};
	MDB_dbi d = fill(env, "v", &s);
	EXPECT(newest_version(dir) == 1);
	for (int step = 0; step < 2; step++) {
		MDB_txn *w;
		MDB_dbi tmp;
		MUST(mdb_txn_begin(env, NULL, 0, &w));
		MUST(mdb_dbi_open(w, "v.tmp", MDB_CREATE | (step == 0 ? MDB_COUNTED : 0), &tmp));
		copy_db(w, d, tmp);
		EXPECT_RC(mdb_dbi_replace(w, d, tmp), 0);
		MUST(mdb_txn_commit(w));
		EXPECT(newest_version(dir) == 0x444C4301u);
	}
	MDB_txn *r;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	expect_flags(r, d, 0, __LINE__);
	expect_content(r, d, &s, __LINE__);
	check_txn(r, __LINE__);
	mdb_txn_abort(r);
	mdb_env_close(env);
}

/* ---- footprint ---- */

static void walk(MDB_txn *t, MDB_dbi d, MDB_footprint *fp, mdb_size_t chunk)
{
	memset(fp, 0, sizeof *fp);
	int calls = 0;
	while (!fp->fp_done) {
		int rc = mdb_footprint(t, d, fp, chunk);
		if (rc) {
			fprintf(stderr, "mdb_footprint: %s\n", mdb_strerror(rc));
			EXPECT(0);
			return;
		}
		if (++calls > 1000000) {
			EXPECT(0);
			return;
		}
	}
}

static void expect_same_fp(const MDB_footprint *a, const MDB_footprint *b)
{
	EXPECT(a->fp_branch_pages == b->fp_branch_pages);
	EXPECT(a->fp_leaf_pages == b->fp_leaf_pages);
	EXPECT(a->fp_overflow_pages == b->fp_overflow_pages);
	EXPECT(a->fp_dup_branch_pages == b->fp_dup_branch_pages);
	EXPECT(a->fp_dup_leaf_pages == b->fp_dup_leaf_pages);
	EXPECT(a->fp_subpages == b->fp_subpages);
	EXPECT(a->fp_keys == b->fp_keys);
	EXPECT(a->fp_entries == b->fp_entries);
	EXPECT(a->fp_key_stored == b->fp_key_stored);
	EXPECT(a->fp_key_decoded == b->fp_key_decoded);
	EXPECT(a->fp_val_stored == b->fp_val_stored);
	EXPECT(a->fp_val_decoded == b->fp_val_decoded);
	EXPECT(a->fp_anchor_bytes == b->fp_anchor_bytes);
}

static void footprint_case(MDB_env *env, const char *name, struct spec s, unsigned mindepth)
{
	MDB_dbi d = fill(env, name, &s);
	uint64_t keys = 0, entries = 0, kbytes = 0, vbytes = 0, bigpages = 0;
	int many = 0;
	char kb[64], vb[4096];
	MDB_stat envst;
	MUST(mdb_env_stat(env, &envst));
	for (unsigned i = 0; i < s.nkeys; i++) {
		keys++;
		kbytes += make_key(i, kb);
		unsigned nd = ndup(&s, i);
		size_t tot = 0;
		for (unsigned j = 0; j < nd; j++) {
			size_t n = make_val(&s, i, j, vb);
			vbytes += n;
			tot += n;
			entries++;
			if (!(s.flags & MDB_DUPSORT) && 8 + make_key(i, kb) + n > (envst.ms_psize - 16) / 2 - 2)
				bigpages += (16 + n + envst.ms_psize - 1) / envst.ms_psize;
		}
		if (tot > envst.ms_psize)
			many = 1;
	}
	MDB_txn *r;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	MDB_stat st;
	MUST(mdb_stat(r, d, &st));
	EXPECT(st.ms_depth >= mindepth);
	MDB_footprint one, small;
	walk(r, d, &one, ~(mdb_size_t)0 >> 1);
	walk(r, d, &small, 1);
	expect_same_fp(&one, &small);
	EXPECT(one.fp_leaf_pages == st.ms_leaf_pages && one.fp_leaf_total == st.ms_leaf_pages);
	EXPECT(one.fp_branch_pages == st.ms_branch_pages);
	EXPECT(one.fp_overflow_pages == st.ms_overflow_pages && one.fp_overflow_pages == bigpages);
	EXPECT(one.fp_entries == entries && one.fp_entries == st.ms_entries);
	EXPECT(one.fp_keys == keys);
	EXPECT(one.fp_key_stored == kbytes && one.fp_key_decoded == kbytes);
	EXPECT(one.fp_val_stored == vbytes && one.fp_val_decoded == vbytes);
	EXPECT(one.fp_anchor_bytes == 0 && one.fp_prefix_pages == 0);
	if (s.flags & MDB_DUPSORT) {
		EXPECT(one.fp_subpages > 0);
		EXPECT(!many || one.fp_dup_leaf_pages > 0);
	} else {
		EXPECT(one.fp_subpages == 0 && one.fp_dup_leaf_pages == 0 && one.fp_dup_branch_pages == 0);
	}
	/* a walk may be resumed in a reader of the same snapshot, not of
	 * another one (a commit in between), nor in a write txn */
	MDB_footprint part;
	memset(&part, 0, sizeof part);
	MUST(mdb_footprint(r, d, &part, 1));
	EXPECT(!part.fp_done);
	MDB_txn *r2, *w;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r2));
	EXPECT_RC(mdb_footprint(r2, d, &part, 1), 0);
	mdb_txn_abort(r2);
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	EXPECT_RC(mdb_footprint(w, d, &part, 1), EINVAL);
	MDB_dbi other;
	MUST(mdb_dbi_open(w, "fp.other", MDB_CREATE, &other));
	MDB_val k = {1, "k"}, v = {1, "v"};
	MUST(mdb_put(w, other, &k, &v, 0));
	MUST(mdb_txn_commit(w));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r2));
	EXPECT_RC(mdb_footprint(r2, d, &part, 1), EINVAL);
	mdb_txn_abort(r2);
	EXPECT_RC(mdb_footprint(r, d, &part, 0), EINVAL);
	mdb_txn_abort(r);

	/* in a write txn, over its own dirty pages: one pair more */
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MDB_val nk = {6, "zzzzzz"}, nv = {3, "new"};
	MUST(mdb_put(w, d, &nk, &nv, 0));
	MUST(mdb_stat(w, d, &st));
	walk(w, d, &one, 3);
	EXPECT(one.fp_entries == entries + 1 && one.fp_keys == keys + 1);
	EXPECT(one.fp_key_stored == kbytes + 6 && one.fp_val_decoded == vbytes + 3);
	EXPECT(one.fp_leaf_pages == st.ms_leaf_pages && one.fp_branch_pages == st.ms_branch_pages);
	mdb_txn_abort(w);
}

static void test_footprint(MDB_env *env)
{
	unsigned sc = (unsigned)tu_scale();
	footprint_case(env, "fp.plain", (struct spec){0, 4000 * sc, 1, 60}, 2);
	/* three levels: resuming passes through branch pages already counted */
	footprint_case(env, "fp.deep", (struct spec){0, 30000 * sc, 1, 60}, 3);
	footprint_case(env, "fp.counted", (struct spec){MDB_COUNTED, 4000 * sc, 1, 60}, 2);
	footprint_case(env, "fp.dups", (struct spec){MDB_DUPSORT, 600 * sc, 60, 200}, 2);
	footprint_case(env, "fp.dupfix", (struct spec){MDB_DUPSORT | MDB_DUPFIXED | MDB_COUNTED, 600 * sc, 64, 24}, 1);
	/* an empty DB */
	MDB_txn *w;
	MDB_dbi e;
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_dbi_open(w, "fp.empty", MDB_CREATE, &e));
	MDB_footprint fp;
	walk(w, e, &fp, 4);
	EXPECT(fp.fp_done && fp.fp_leaf_pages == 0 && fp.fp_entries == 0);
	mdb_txn_abort(w);
}

/* Damaged leaves: a slot pointing past the page, or a node whose key runs
 * past it, make the walk answer MDB_CORRUPTED (never a read outside the
 * page: ASan would abort).  Each leaf page of the file is damaged in turn
 * in a copy of the data file. */
static void test_footprint_damage(void)
{
	const char *dir = "build/convert_env_dmg";
	tu_fresh_dir(dir);
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, dir, MDB_NOTLS, 0644));
	struct spec s = {MDB_DUPSORT, 400, 40, 100};
	fill(env, "dmg", &s);
	mdb_env_close(env);
	char path[512];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	FILE *f = fopen(path, "rb");
	if (!f)
		exit(2);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *orig = malloc((size_t)len);
	if (!orig || fread(orig, 1, (size_t)len, f) != (size_t)len)
		exit(2);
	fclose(f);
	int corrupted = 0;
	for (long pg = 2; pg < len / 4096; pg++) {
		const unsigned char *p = orig + pg * 4096;
		uint16_t flags, lower;
		memcpy(&flags, p + 10, 2);
		memcpy(&lower, p + 12, 2);
		if (flags != 0x02 || lower <= 16)
			continue;	/* damage plain leaves with a node */
		for (int how = 0; how < 2; how++) {
			unsigned char page[4096];
			memcpy(page, p, sizeof page);
			if (how == 0) {
				uint16_t bad = 4095;
				memcpy(page + 16, &bad, 2);
			} else {
				uint16_t slot, big = 4000;
				memcpy(&slot, page + 16, 2);
				if (slot + 8 > 4096)
					continue;
				memcpy(page + slot + 6, &big, 2);
			}
			f = fopen(path, "r+b");
			if (!f)
				exit(2);
			fseek(f, pg * 4096, SEEK_SET);
			fwrite(page, 1, sizeof page, f);
			fclose(f);
			MUST(mdb_env_create(&env));
			MUST(mdb_env_set_maxdbs(env, 4));
			MUST(mdb_env_open(env, dir, MDB_NOTLS | MDB_RDONLY, 0644));
			MDB_txn *r;
			MDB_dbi d;
			MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
			if (mdb_dbi_open(r, "dmg", 0, &d) == 0) {
				MDB_footprint fp;
				memset(&fp, 0, sizeof fp);
				int rc = 0;
				while (rc == 0 && !fp.fp_done)
					rc = mdb_footprint(r, d, &fp, 2);
				EXPECT(rc == 0 || rc == MDB_CORRUPTED);
				corrupted += rc == MDB_CORRUPTED;
			}
			mdb_txn_abort(r);
			mdb_env_close(env);
			f = fopen(path, "r+b");
			if (!f)
				exit(2);
			fseek(f, pg * 4096, SEEK_SET);
			fwrite(p, 1, 4096, f);
			fclose(f);
		}
	}
	EXPECT(corrupted > 0);
	free(orig);
}

/* A prefix-compressed DB: every leaf is a compressed page with an anchor,
 * decoded key bytes are exactly the keys written while fewer are stored
 * (the keys share long prefixes), values are unchanged, and the page and
 * entry counts are Stat's; a one-leaf-chunk walk agrees. */
static void test_footprint_prefix(MDB_env *env)
{
	struct spec s = {MDB_PREFIX_COMPRESSION, 5000 * (unsigned)tu_scale(), 1, 30};
	MDB_dbi d = fill(env, "fp.prefix", &s);
	uint64_t kbytes = 0, vbytes = 0;
	char kb[64], vb[4096];
	for (unsigned i = 0; i < s.nkeys; i++) {
		kbytes += make_key(i, kb);
		vbytes += make_val(&s, i, 0, vb);
	}
	MDB_txn *r;
	MDB_stat st;
	MDB_footprint one, small;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	MUST(mdb_stat(r, d, &st));
	walk(r, d, &one, 1u << 30);
	walk(r, d, &small, 1);
	expect_same_fp(&one, &small);
	EXPECT(one.fp_prefix_pages == st.ms_leaf_pages && one.fp_leaf_pages == st.ms_leaf_pages);
	EXPECT(one.fp_branch_pages == st.ms_branch_pages && one.fp_entries == st.ms_entries);
	EXPECT(one.fp_key_decoded == kbytes && one.fp_val_stored == vbytes && one.fp_val_decoded == vbytes);
	EXPECT(one.fp_key_stored + one.fp_anchor_bytes < kbytes);
	printf("prefix DB: %zu key bytes stored + %zu anchor bytes for %zu decoded\n", one.fp_key_stored, one.fp_anchor_bytes, one.fp_key_decoded);
	EXPECT(one.fp_anchor_bytes > 0);
	mdb_txn_abort(r);
}

int main(void)
{
	tu_fresh_dir(DIR0);
	MDB_env *env = open_env();
	test_refusals(env);
	test_round_trips(env);
	test_nested_abort(env);
	test_footprint(env);
	test_footprint_prefix(env);
	mdb_env_close(env);
	test_meta_version();
	test_footprint_damage();
	return tu_finish("convert_test");
}
