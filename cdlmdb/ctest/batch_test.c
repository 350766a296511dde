/*
 * batch_test.c - mdb_cursor_get_batch against the per-item path it stands
 * for: two cursors on the same DB, one reading a batch, the other the same
 * op and then MDB_NEXT (MDB_PREV) per item with the end bound applied by
 * hand.  After every batch the answers (rc, count, every key and value, and
 * where an item is a view into the map, its address) and the cursors'
 * states (flags, page stack, indexes, sub-cursor, saved key) must be the
 * same; a random follow-up step (NEXT, PREV, the DUP and NODUP steps,
 * GET_CURRENT) on both must then agree too, and the next trial goes on from
 * there.
 *
 * Every DB kind: plain, REVERSEKEY, counted, prefix-compressed (keys with
 * and without shared anchor bytes), DUPSORT with single values, inline
 * sub-pages and sub-trees of several leaves, DUPFIXED, REVERSEDUP, and the
 * compressed and counted DUPSORT kinds; values empty, small and big
 * (overflow pages).  Start ops FIRST, LAST, NEXT, PREV, GET_CURRENT,
 * SET_RANGE, SET_KEY; both directions; no end, an end key present or not,
 * inclusive or exclusive; batch sizes 1 to 300.  In a read txn and in a
 * write txn whose puts and deletes between trials leave both cursors to
 * re-seek.  BATCH_SEED picks another stream (the seed is printed).
 */
#include "../internal.h"
#include "testutil.h"

#define DIR "build/batch_env"
#define NKEYS 1500
#define MAXITEMS 20000

struct kind {
	const char *name;
	unsigned flags;
	int longer;	/* keys (DUPSORT: and values) of a few hundred bytes */
};

static const struct kind kinds[] = {
	{"plain", 0},
	{"reversekey", MDB_REVERSEKEY},
	{"counted", MDB_COUNTED},
	{"prefix", MDB_PREFIX_COMPRESSION},
	{"prefix+counted", MDB_PREFIX_COMPRESSION | MDB_COUNTED},
	{"dupsort", MDB_DUPSORT},
	{"dupsort+reversedup", MDB_DUPSORT | MDB_REVERSEDUP},
	{"dupsort+counted", MDB_DUPSORT | MDB_COUNTED},
	{"dupsort+prefix", MDB_DUPSORT | MDB_PREFIX_COMPRESSION},
	{"dupsort+prefix+counted", MDB_DUPSORT | MDB_PREFIX_COMPRESSION | MDB_COUNTED},
	{"dupfixed", MDB_DUPSORT | MDB_DUPFIXED},
	{"dupfixed+prefix+counted", MDB_DUPSORT | MDB_DUPFIXED | MDB_PREFIX_COMPRESSION | MDB_COUNTED},
	/* a batch's decoded keys and values outgrow its byte storage (which
	 * then moves) */
	{"prefix, long keys", MDB_PREFIX_COMPRESSION, 1},
	{"dupsort+prefix, long keys and values", MDB_DUPSORT | MDB_PREFIX_COMPRESSION, 1},
};

static unsigned g_flags;
static int g_long;
static const char g_pad[] = "a long common head of the keys and values in the long kinds, "
	"repeated: a long common head of the keys and values in the long kinds, repeated: a long "
	"common head of the keys and values in the long kinds, repeated: and then some more bytes";

/* key i: most share a long prefix (prefix pages then hold keys with shared
 * anchor bytes), every seventh does not */
static void key_of(unsigned i, char *buf, MDB_val *k)
{
	int n = i % 7 == 3 ? snprintf(buf, 400, "x%u/other", i * 2654435761u % 100000)
			   : snprintf(buf, 400, "common/key/prefix/%s%05u", g_long ? g_pad : "", i);
	k->mv_size = (size_t)n;
	k->mv_data = buf;
}

/* a value: DUPFIXED 8 bytes; DUPSORT short strings with a common head;
 * otherwise 0..40 bytes, now and then an overflow value */
static void val_of(uint64_t *s, unsigned char *buf, MDB_val *v)
{
	if (g_flags & MDB_DUPFIXED) {
		uint64_t x = tu_next(s) % 5000;
		memcpy(buf, &x, 8);
		v->mv_size = 8;
	} else if (g_flags & MDB_DUPSORT) {
		v->mv_size = (size_t)snprintf((char *)buf, 400, "shared/value/%s%06u", g_long ? g_pad : "",
			tu_below(s, 100000));
	} else if (tu_below(s, 60) == 0) {
		v->mv_size = 1500 + tu_below(s, 5000);
		for (size_t i = 0; i < v->mv_size; i++)
			buf[i] = (unsigned char)(i * 7 + v->mv_size);
	} else {
		v->mv_size = tu_below(s, 41);
		for (size_t i = 0; i < v->mv_size; i++)
			buf[i] = (unsigned char)('a' + tu_below(s, 26));
	}
	v->mv_data = buf;
}

/* a key to put: DUPSORT DBs pile values on a few hot keys (sub-trees of
 * several leaves) and a few on the rest (inline sub-pages) */
static unsigned put_key(uint64_t *s)
{
	if ((g_flags & MDB_DUPSORT) && tu_below(s, 3) == 0)
		return 10 + 97 * tu_below(s, 4);
	return tu_below(s, NKEYS);
}

static void fill(MDB_txn *txn, MDB_dbi dbi, uint64_t *s, unsigned n)
{
	static unsigned char vb[8192];
	char kb[400];
	for (unsigned i = 0; i < n; i++) {
		MDB_val k, v;
		key_of(put_key(s), kb, &k);
		val_of(s, vb, &v);
		MUST(mdb_put(txn, dbi, &k, &v, 0));
	}
}

/* ---- the per-item reference ---- */

typedef struct {
	size_t n;
	MDB_val k[300], v[300];	/* copies */
	const void *kp[300], *vp[300];	/* where the cursor returned them */
	unsigned char *mem;
	size_t used;
} items;

static void keep(items *it, MDB_val *dst, const MDB_val *src)
{
	dst->mv_size = src->mv_size;
	dst->mv_data = it->mem + it->used;
	memcpy(it->mem + it->used, src->mv_data, src->mv_size);
	it->used += src->mv_size;
}

static int past(MDB_txn *txn, MDB_dbi dbi, const MDB_val *k, const MDB_val *end, int back, int incl)
{
	int c = mdb_cmp(txn, dbi, k, end);
	if (back)
		c = -c;
	return c > 0 || (c == 0 && !incl);
}

static int ref_batch(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *mc, MDB_cursor_op op, const MDB_val *key,
	size_t max, const MDB_val *end, unsigned flags, items *out)
{
	int back = (flags & MDB_BATCH_BACKWARD) || op == MDB_LAST || op == MDB_PREV;
	MDB_cursor_op cur = op;
	MDB_val k = {0, NULL}, v;
	int rc = 0;
	if (key)
		k = *key;
	out->n = 0;
	out->used = 0;
	while (out->n < max) {
		rc = mdb_cursor_get(mc, &k, &v, cur);
		if (rc)
			break;
		if (end && past(txn, dbi, &k, end, back, (flags & MDB_BATCH_END_INCL) != 0)) {
			rc = MDB_NOTFOUND;
			break;
		}
		out->kp[out->n] = k.mv_data;
		out->vp[out->n] = v.mv_data;
		keep(out, &out->k[out->n], &k);
		keep(out, &out->v[out->n], &v);
		out->n++;
		cur = back ? MDB_PREV : MDB_NEXT;
	}
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	return out->n ? 0 : MDB_NOTFOUND;
}

/* ---- cursor states ---- */

static int in_kbufs(const MDB_cursor *mc, const void *p)
{
	const unsigned char *q = p;
	if (q >= mc->c_kbuf && q < mc->c_kbuf + sizeof mc->c_kbuf)
		return 1;
	if (mc->c_sub) {
		const MDB_cursor *x = &mc->c_sub->x_c;
		if (q >= x->c_kbuf && q < x->c_kbuf + sizeof x->c_kbuf)
			return 1;
	}
	return 0;
}

static int same_stack(const MDB_cursor *a, const MDB_cursor *b, int sub)
{
	if (a->c_flags != b->c_flags)
		return 0;
	if ((a->c_flags & DL_C_SAVED) &&
	    (a->c_savedlen != b->c_savedlen || memcmp(a->c_saved, b->c_saved, a->c_savedlen)))
		return 0;
	if (!(a->c_flags & DL_C_INIT) || (a->c_flags & DL_C_SAVED))
		return 1;
	if (a->c_depth != b->c_depth || a->c_top != b->c_top)
		return 0;
	if (sub && (!a->c_inline) != (!b->c_inline))
		return 0;
	for (unsigned l = 0; l < a->c_depth; l++) {
		if (a->c_ki[l] != b->c_ki[l])
			return 0;
		/* an inline sub-page is each cursor's own copy (compared by
		 * where it came from below) */
		if (!(sub && a->c_inline) && a->c_pg[l] != b->c_pg[l])
			return 0;
	}
	return 1;
}

static int same_state(MDB_cursor *a, MDB_cursor *b, const char **why)
{
	if (!same_stack(a, b, 0)) {
		*why = "main cursor";
		return 0;
	}
	if (!a->c_sub)
		return 1;
	dl_xcur *xa = a->c_sub, *xb = b->c_sub;
	if (!same_stack(&xa->x_c, &xb->x_c, 1)) {
		*why = "sub-cursor";
		return 0;
	}
	if ((xa->x_c.c_flags & DL_C_INIT) && !(xa->x_c.c_flags & DL_C_SAVED) &&
	    (xa->x_orig != xb->x_orig || memcmp(&xa->x_db, &xb->x_db, sizeof xa->x_db))) {
		*why = "sub-cursor's duplicates";
		return 0;
	}
	return 1;
}

static void dump_state(const char *who, MDB_cursor *c)
{
	fprintf(stderr, "  %s: flags %#x depth %u top %u ki", who, c->c_flags, c->c_depth, c->c_top);
	for (unsigned l = 0; l < c->c_depth && l < DL_MAX_DEPTH; l++)
		fprintf(stderr, " %u", c->c_ki[l]);
	if (c->c_sub) {
		MDB_cursor *x = &c->c_sub->x_c;
		fprintf(stderr, "; sub flags %#x depth %u inline %d ki", x->c_flags, x->c_depth, x->c_inline != NULL);
		for (unsigned l = 0; l < x->c_depth && l < DL_MAX_DEPTH; l++)
			fprintf(stderr, " %u", x->c_ki[l]);
	}
	fprintf(stderr, "\n");
}

/* ---- the trials ---- */

static unsigned long batches, items_read, follow_ups;

static int same_val(const MDB_val *a, const MDB_val *b)
{
	return a->mv_size == b->mv_size && !memcmp(a->mv_data, b->mv_data, a->mv_size);
}

/* the last batch on a: its items (in a's storage) and how many (0: none
 * to use) */
static const MDB_val *g_bk;
static size_t g_n;

/* one batch on a, its reference on b; 0 when they agree */
static int one_batch(MDB_txn *txn, MDB_dbi dbi, MDB_cursor *a, MDB_cursor *b, uint64_t *s,
	items *ref, const char *ctx, unsigned trial)
{
	static const MDB_cursor_op ops[] = {MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_PREV, MDB_GET_CURRENT,
		MDB_SET_RANGE, MDB_SET_KEY, MDB_NEXT, MDB_PREV, MDB_GET_CURRENT};
	MDB_cursor_op op = ops[tu_below(s, sizeof ops / sizeof ops[0])];
	char kb[400], eb[400];
	MDB_val key, endk, *end = NULL;
	key_of(tu_below(s, NKEYS), kb, &key);
	if (tu_below(s, 3) == 0)
		key.mv_size--;	/* mostly absent */
	unsigned flags = 0;
	if (tu_below(s, 2))
		flags |= MDB_BATCH_BACKWARD;
	const MDB_val *aend = NULL;
	if (tu_below(s, 2)) {
		key_of(tu_below(s, NKEYS), eb, &endk);
		if (tu_below(s, 4) == 0)
			endk.mv_size--;
		aend = end = &endk;
		if (tu_below(s, 2))
			flags |= MDB_BATCH_END_INCL;
		/* now and then a key of the last batch, where a keeps it (its
		 * storage, which this batch writes to; b gets a copy) */
		if (g_n && tu_below(s, 3) == 0) {
			aend = &g_bk[tu_below(s, (unsigned)g_n)];
			memcpy(eb, aend->mv_data, aend->mv_size);
			endk.mv_size = aend->mv_size;
		}
	}
	static const size_t sizes[] = {1, 2, 3, 7, 64, 255, 256, 257, 300};
	size_t max = tu_below(s, 2) ? sizes[tu_below(s, sizeof sizes / sizeof sizes[0])] : 1 + tu_below(s, 300);
	const MDB_val *bk = NULL, *bv = NULL;
	mdb_size_t n = 0;
	MDB_val akey = key;
	int rc = mdb_cursor_get_batch(a, op, &akey, max, aend, flags, &bk, &bv, &n);
	g_bk = bk;
	g_n = rc == 0 ? n : 0;
	int want = ref_batch(txn, dbi, b, op, &key, max, end, flags, ref);
	batches++;
	int bad = 0;
	if (rc != want || (rc == 0 && n != ref->n)) {
		fprintf(stderr, "%s trial %u: batch rc %d count %zu, per item rc %d count %zu\n", ctx, trial,
			rc, (size_t)n, want, ref->n);
		bad = 1;
	}
	for (size_t i = 0; !bad && rc == 0 && i < n; i++) {
		if (!same_val(&bk[i], &ref->k[i]) || !same_val(&bv[i], &ref->v[i])) {
			fprintf(stderr, "%s trial %u: item %zu of %zu differs (%.*s)\n", ctx, trial, i,
				(size_t)n, (int)ref->k[i].mv_size, (char *)ref->k[i].mv_data);
			bad = 1;
		}
		/* an item the map holds whole is handed out in place */
		if (ref->k[i].mv_size && !in_kbufs(b, ref->kp[i]) && bk[i].mv_data != ref->kp[i]) {
			fprintf(stderr, "%s trial %u: key %zu not a view into the map\n", ctx, trial, i);
			bad = 1;
		}
		if (ref->v[i].mv_size && !in_kbufs(b, ref->vp[i]) && bv[i].mv_data != ref->vp[i]) {
			fprintf(stderr, "%s trial %u: value %zu not a view into the map\n", ctx, trial, i);
			bad = 1;
		}
	}
	if (rc == 0)
		items_read += n;
	const char *why = "";
	if (!bad && !same_state(a, b, &why)) {
		fprintf(stderr, "%s trial %u: %s after the batch differs\n", ctx, trial, why);
		bad = 1;
	}
	if (bad) {
		fprintf(stderr, "  op %d max %zu flags %#x end %s\n", op, max, flags, end ? "set" : "none");
		dump_state("batch", a);
		dump_state("per item", b);
	}
	EXPECT(!bad);
	return bad;
}

/* mdb_cursor_get_many on a with the keys of its last batch (in its own
 * storage, which the call writes to), MDB_SET per key on b; 0 when they
 * agree */
static int many_from_batch(MDB_cursor *a, MDB_cursor *b, const items *ref, const char *ctx,
	unsigned trial)
{
	size_t m = g_n < 40 ? g_n : 40;
	const MDB_val *vals;
	mdb_size_t found = 0;
	int rc = mdb_cursor_get_many(a, g_bk, m, &vals, &found);
	g_n = 0;
	int bad = rc != 0;
	size_t hits = 0;
	for (size_t i = 0; !bad && i < m; i++) {
		MDB_val k = ref->k[i], v;
		int r = mdb_cursor_get(b, &k, &v, MDB_SET);
		if (r == 0)
			hits++;
		if (r == 0 ? !same_val(&vals[i], &v) : (r != MDB_NOTFOUND || vals[i].mv_data != NULL))
			bad = 1;
	}
	const char *why = "";
	if (bad || found != hits || !same_state(a, b, &why)) {
		fprintf(stderr, "%s trial %u: get_many with the batch's keys: rc %d found %zu/%zu %s\n", ctx,
			trial, rc, (size_t)found, hits, why);
		bad = 1;
	}
	EXPECT(!bad);
	return bad;
}

static int follow_up(MDB_cursor *a, MDB_cursor *b, uint64_t *s, const char *ctx, unsigned trial)
{
	static const MDB_cursor_op ops[] = {MDB_NEXT, MDB_PREV, MDB_GET_CURRENT, MDB_NEXT, MDB_PREV,
		MDB_NEXT_DUP, MDB_PREV_DUP, MDB_NEXT_NODUP, MDB_PREV_NODUP};
	unsigned nops = (g_flags & MDB_DUPSORT) ? sizeof ops / sizeof ops[0] : 5;
	MDB_cursor_op op = ops[tu_below(s, nops)];
	MDB_val ka = {0, NULL}, va = {0, NULL}, kb = {0, NULL}, vb = {0, NULL};
	int ra = mdb_cursor_get(a, &ka, &va, op), rb = mdb_cursor_get(b, &kb, &vb, op);
	follow_ups++;
	const char *why = "";
	int bad = ra != rb || (ra == 0 && (!same_val(&ka, &kb) || !same_val(&va, &vb))) ||
		!same_state(a, b, &why);
	if (bad) {
		fprintf(stderr, "%s trial %u: follow-up op %d: rc %d / %d %s\n", ctx, trial, op, ra, rb, why);
		dump_state("batch", a);
		dump_state("per item", b);
	}
	EXPECT(!bad);
	return bad;
}

/* a change between trials: a put, a delete of a key or of one value */
static void modify(MDB_txn *txn, MDB_dbi dbi, uint64_t *s)
{
	static unsigned char vb[8192];
	char kb[400];
	MDB_val k, v;
	key_of(put_key(s), kb, &k);
	switch (tu_below(s, 4)) {
	case 0:
	case 1:
		val_of(s, vb, &v);
		MUST(mdb_put(txn, dbi, &k, &v, 0));
		break;
	case 2: {
		int rc = mdb_del(txn, dbi, &k, NULL);
		if (rc && rc != MDB_NOTFOUND)
			MUST(rc);
		break;
	}
	default: {
		/* delete the key's first value (a duplicate of a DUPSORT key) */
		MDB_cursor *c;
		MUST(mdb_cursor_open(txn, dbi, &c));
		if (mdb_cursor_get(c, &k, &v, MDB_SET_RANGE) == 0)
			MUST(mdb_cursor_del(c, 0));
		mdb_cursor_close(c);
	}
	}
}

static int trials(MDB_txn *txn, MDB_dbi dbi, uint64_t *s, unsigned n, int writes, const char *ctx)
{
	static items ref;
	if (!ref.mem && !(ref.mem = malloc(300 * 2 * 8192))) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	MDB_cursor *a, *b;
	MUST(mdb_cursor_open(txn, dbi, &a));
	MUST(mdb_cursor_open(txn, dbi, &b));
	int bad = 0;
	for (unsigned t = 0; t < n && !bad; t++) {
		bad = one_batch(txn, dbi, a, b, s, &ref, ctx, t);
		if (!bad && g_n && tu_below(s, 8) == 0)
			bad = many_from_batch(a, b, &ref, ctx, t);
		else if (!bad && tu_below(s, 2))
			bad = follow_up(a, b, s, ctx, t);
		if (writes && tu_below(s, 4) == 0) {
			for (unsigned w = 1 + tu_below(s, 3); w; w--)
				modify(txn, dbi, s);
			g_n = 0;	/* (views into the map may be gone) */
		}
	}
	mdb_cursor_close(a);
	mdb_cursor_close(b);
	g_n = 0;
	return bad;
}

static void run(const struct kind *kd, uint64_t seed)
{
	printf("batch_test %s flags=%#x seed=%llu\n", kd->name, kd->flags, (unsigned long long)seed);
	g_flags = kd->flags;
	g_long = kd->longer;
	tu_fresh_dir(DIR);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	uint64_t s = seed;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));
	MUST(mdb_env_set_mapsize(env, (size_t)512 << 20));
	MUST(mdb_env_open(env, DIR, MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "b", kd->flags | MDB_CREATE, &dbi));
	fill(txn, dbi, &s, 6000);
	MUST(mdb_txn_commit(txn));
	unsigned n = 400 * (unsigned)tu_scale();
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	int bad = trials(txn, dbi, &s, n, 0, "read txn");
	mdb_txn_abort(txn);
	if (!bad) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		bad = trials(txn, dbi, &s, n, 1, "write txn");
		char msg[256];
		int rc = mdb_txn_check(txn, msg, sizeof msg);
		if (rc)
			fprintf(stderr, "check: %s\n", msg);
		EXPECT(rc == 0);
		mdb_txn_abort(txn);
	}
	mdb_env_close(env);
}

int main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	const char *e = getenv("BATCH_SEED");
	uint64_t seed = e ? strtoull(e, NULL, 0) : 20261202;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		run(&kinds[i], seed + i);
	printf("  %lu batches, %lu items, %lu follow-up steps\n", batches, items_read, follow_ups);
	/* the trials read something: batches of every kind were not all empty */
	EXPECT(items_read > batches);
	return tu_finish("batch_test");
}
