/*
 * rand_test.c - seeded random operations against an in-memory oracle.
 *
 * Four databases (main-named byte keys, a REVERSEKEY one, an INTEGERKEY one
 * and a second byte-key one) receive random puts (small, medium and
 * overflow-sized values; NOOVERWRITE, APPEND, RESERVE, cursor CURRENT),
 * deletes (by key and through a cursor), point reads and cursor walks.
 * Transactions commit or abort at random, some contain nested children that
 * commit or abort; the oracle snapshots and restores accordingly.  After
 * each commit mdb_txn_check must pass and periodically every DB is compared
 * in full, also after closing and reopening the environment.
 * Usage: rand_test [seed] [steps]
 */
#include "testutil.h"

static int tracing; /* debugging aid, see RAND_STEP */

#define NDB 4
#define KMAX 400

typedef struct { uint16_t klen; char key[KMAX]; uint32_t vlen; uint32_t vseed; } ent;
typedef struct { ent *v; size_t n, cap; int kind; } oracle; /* kind 0 bytes, 1 reverse, 2 integer */

static const char *dbnames[NDB] = {"alpha", "reverse", "ints", "omega"};
static const unsigned dbflags[NDB] = {0, MDB_REVERSEKEY, MDB_INTEGERKEY, 0};
static const int dbkind[NDB] = {0, 1, 2, 0};
static unsigned char vbuf[70000];

static int ocmp(int kind, const char *a, size_t al, const char *b, size_t bl)
{
	if (kind == 2) {
		uint64_t x, y;
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		return (x > y) - (x < y);
	}
	size_t n = al < bl ? al : bl;
	if (kind == 1) {
		for (size_t i = 1; i <= n; i++) {
			int d = (int)(unsigned char)a[al - i] - (int)(unsigned char)b[bl - i];
			if (d)
				return d;
		}
	} else {
		int r = memcmp(a, b, n);
		if (r)
			return r;
	}
	return (al > bl) - (al < bl);
}

static size_t ofind(oracle *o, const char *k, size_t kl, int *exact)
{
	size_t lo = 0, hi = o->n;
	*exact = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = ocmp(o->kind, o->v[mid].key, o->v[mid].klen, k, kl);
		if (r < 0)
			lo = mid + 1;
		else {
			if (r == 0)
				*exact = 1;
			hi = mid;
		}
	}
	return lo;
}

static void fill_value(unsigned char *b, uint32_t len, uint32_t seed)
{
	uint64_t s = seed;
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t r = tu_next(&s);
		uint32_t m = len - i < 8 ? len - i : 8;
		memcpy(b + i, &r, m);
	}
}

static int value_ok(const MDB_val *v, const ent *e)
{
	if (v->mv_size != e->vlen)
		return 0;
	fill_value(vbuf, e->vlen, e->vseed);
	return e->vlen == 0 || memcmp(v->mv_data, vbuf, e->vlen) == 0;
}

static void oput(oracle *o, const char *k, size_t kl, uint32_t vlen, uint32_t vseed)
{
	int ex;
	size_t i = ofind(o, k, kl, &ex);
	if (!ex) {
		if (o->n == o->cap) {
			o->cap = o->cap ? o->cap * 2 : 256;
			o->v = realloc(o->v, o->cap * sizeof(ent));
		}
		memmove(o->v + i + 1, o->v + i, (o->n - i) * sizeof(ent));
		o->n++;
		o->v[i].klen = (uint16_t)kl;
		memcpy(o->v[i].key, k, kl);
	}
	o->v[i].vlen = vlen;
	o->v[i].vseed = vseed;
}

static void odel(oracle *o, size_t i)
{
	memmove(o->v + i, o->v + i + 1, (o->n - i - 1) * sizeof(ent));
	o->n--;
}

static void ocopy(oracle *dst, const oracle *src)
{
	if (dst->cap < src->n) {
		dst->cap = src->n + 16;
		dst->v = realloc(dst->v, dst->cap * sizeof(ent));
	}
	if (src->n)
		memcpy(dst->v, src->v, src->n * sizeof(ent));
	dst->n = src->n;
	dst->kind = src->kind;
}

/* ---- the DUPSORT database: an oracle of (key, value) pairs ---- */
typedef struct { uint8_t klen, vlen; char key[16]; char val[120]; } pair;
typedef struct { pair *v; size_t n, cap; } poracle;

static int pcmp(const pair *a, const char *k, size_t kl, const char *v, size_t vl)
{
	int r = ocmp(0, a->key, a->klen, k, kl);
	if (r)
		return r;
	return ocmp(0, a->val, a->vlen, v, vl);
}

static size_t pfind(poracle *o, const char *k, size_t kl, const char *v, size_t vl, int *exact)
{
	size_t lo = 0, hi = o->n;
	*exact = 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		int r = pcmp(&o->v[mid], k, kl, v, vl);
		if (r < 0)
			lo = mid + 1;
		else {
			if (r == 0)
				*exact = 1;
			hi = mid;
		}
	}
	return lo;
}

static void pcopy(poracle *dst, const poracle *src)
{
	if (dst->cap < src->n) {
		dst->cap = src->n + 16;
		dst->v = realloc(dst->v, dst->cap * sizeof(pair));
	}
	if (src->n)
		memcpy(dst->v, src->v, src->n * sizeof(pair));
	dst->n = src->n;
}

/* first and one-past-last index of key k */
static void prange(poracle *o, const char *k, size_t kl, size_t *b, size_t *e)
{
	int ex;
	*b = pfind(o, k, kl, "", 0, &ex);
	size_t i = *b;
	while (i < o->n && ocmp(0, o->v[i].key, o->v[i].klen, k, kl) == 0)
		i++;
	*e = i;
}

static void dup_op(uint64_t *s, MDB_txn *txn, MDB_dbi dbi, poracle *o, MDB_cursor *cur)
{
	char k[16], v[120];
	unsigned kid = tu_below(s, 30), vid = tu_below(s, 400);
	size_t kl = (size_t)snprintf(k, sizeof k, "d%02u", kid);
	size_t vl = (size_t)snprintf(v, sizeof v, "%u:", vid);
	size_t want = 1 + vid % 97;
	while (vl < want) {
		v[vl] = (char)('a' + (vid + vl) % 26);
		vl++;
	}
	MDB_val key = {kl, k}, val = {vl, v};
	int ex;
	size_t pos = pfind(o, k, kl, v, vl, &ex), b, e;
	unsigned r = tu_below(s, 100);
	if (tracing)
		fprintf(stderr, "  dup kid %u vid %u r %u ex %d\n", kid, vid, r, ex);
	if (r < 45) {
		unsigned fl = tu_below(s, 6) == 0 ? MDB_NODUPDATA : 0;
		int rc = mdb_put(txn, dbi, &key, &val, fl);
		EXPECT(rc == ((ex && fl) ? MDB_KEYEXIST : 0));
		if (!ex) {
			if (o->n == o->cap) {
				o->cap = o->cap ? o->cap * 2 : 256;
				o->v = realloc(o->v, o->cap * sizeof(pair));
			}
			memmove(o->v + pos + 1, o->v + pos, (o->n - pos) * sizeof(pair));
			o->n++;
			o->v[pos].klen = (uint8_t)kl;
			o->v[pos].vlen = (uint8_t)vl;
			memcpy(o->v[pos].key, k, kl);
			memcpy(o->v[pos].val, v, vl);
		}
	} else if (r < 65) {
		int rc = mdb_del(txn, dbi, &key, &val);
		EXPECT(rc == (ex ? 0 : MDB_NOTFOUND));
		if (ex) {
			memmove(o->v + pos, o->v + pos + 1, (o->n - pos - 1) * sizeof(pair));
			o->n--;
		}
	} else if (r < 70) {
		prange(o, k, kl, &b, &e);
		int rc = mdb_del(txn, dbi, &key, NULL);
		EXPECT(rc == (e > b ? 0 : MDB_NOTFOUND));
		if (e > b) {
			memmove(o->v + b, o->v + e, (o->n - e) * sizeof(pair));
			o->n -= e - b;
		}
	} else if (r < 80) {
		/* delete through the cursor, positioned with GET_BOTH */
		MDB_val kk = key, vv = val;
		int rc = mdb_cursor_get(cur, &kk, &vv, MDB_GET_BOTH);
		EXPECT(rc == (ex ? 0 : MDB_NOTFOUND));
		if (ex && rc == 0) {
			EXPECT_RC(mdb_cursor_del(cur, 0), 0);
			memmove(o->v + pos, o->v + pos + 1, (o->n - pos - 1) * sizeof(pair));
			o->n--;
			/* the next item is the pair after the deleted one */
			rc = mdb_cursor_get(cur, &kk, &vv, MDB_NEXT);
			if (pos < o->n) {
				EXPECT(rc == 0 && kk.mv_size == o->v[pos].klen && vv.mv_size == o->v[pos].vlen &&
					!memcmp(vv.mv_data, o->v[pos].val, vv.mv_size));
			} else {
				EXPECT(rc == MDB_NOTFOUND);
			}
		}
	} else {
		/* first value and count of a key, then walk its duplicates */
		prange(o, k, kl, &b, &e);
		MDB_val kk = key, vv;
		int rc = mdb_cursor_get(cur, &kk, &vv, MDB_SET);
		EXPECT(rc == (e > b ? 0 : MDB_NOTFOUND));
		if (rc)
			return;
		mdb_size_t cnt = 0;
		EXPECT_RC(mdb_cursor_count(cur, &cnt), 0);
		EXPECT(cnt == e - b);
		size_t i = b;
		do {
			EXPECT(vv.mv_size == o->v[i].vlen && !memcmp(vv.mv_data, o->v[i].val, vv.mv_size));
			i++;
		} while (mdb_cursor_get(cur, &kk, &vv, MDB_NEXT_DUP) == 0);
		EXPECT(i == e);
		MDB_val gv;
		EXPECT_RC(mdb_get(txn, dbi, &key, &gv), 0);
		EXPECT(gv.mv_size == o->v[b].vlen && !memcmp(gv.mv_data, o->v[b].val, gv.mv_size));
	}
}

static void compare_all(MDB_txn *txn, MDB_dbi dbi, oracle *o);
static void compare_dups(MDB_txn *txn, MDB_dbi dbi, poracle *o);
static void trace_check(MDB_txn *txn, const char *where);
static void trace_all(MDB_txn *txn, MDB_dbi *dbi, oracle *orc, poracle *pd, const char *where)
{
	int before = tu_failures;
	trace_check(txn, where);
	for (int d = 0; d < NDB; d++)
		compare_all(txn, dbi[d], &orc[d]);
	compare_dups(txn, dbi[NDB], pd);
	if (tu_failures != before) {
		fprintf(stderr, "  DIVERGED %s\n", where);
		exit(1);
	}
}

static void compare_dups(MDB_txn *txn, MDB_dbi dbi, poracle *o)
{
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_cursor_open(txn, dbi, &c));
	size_t i = 0;
	int rc;
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0 && i < o->n) {
		EXPECT(k.mv_size == o->v[i].klen && !memcmp(k.mv_data, o->v[i].key, k.mv_size));
		EXPECT(v.mv_size == o->v[i].vlen && !memcmp(v.mv_data, o->v[i].val, v.mv_size));
		if (tracing && !(v.mv_size == o->v[i].vlen && !memcmp(v.mv_data, o->v[i].val, v.mv_size)))
			fprintf(stderr, "  dup %zu: got %.*s=%.*s want %.*s=%.*s\n", i, (int)k.mv_size, (char *)k.mv_data,
				(int)v.mv_size, (char *)v.mv_data, o->v[i].klen, o->v[i].key, o->v[i].vlen, o->v[i].val);
		i++;
	}
	EXPECT(i == o->n && (rc == MDB_NOTFOUND || o->n == 0));
	i = o->n;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_LAST); rc == 0 && i > 0; rc = mdb_cursor_get(c, &k, &v, MDB_PREV)) {
		i--;
		EXPECT(v.mv_size == o->v[i].vlen && !memcmp(v.mv_data, o->v[i].val, v.mv_size));
	}
	EXPECT(i == 0);
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == o->n);
	mdb_cursor_close(c);
}

static size_t make_key(int kind, unsigned id, char *out)
{
	if (kind == 2) {
		uint64_t x = (uint64_t)id * 2654435761u;
		memcpy(out, &x, 8);
		return 8;
	}
	int n = snprintf(out, KMAX, "%u/", id);
	unsigned pad = (id % 13) * 23 + (id % 3);
	for (unsigned i = 0; i < pad && n < 380; i++)
		out[n++] = (char)('a' + (id + i) % 26);
	return (size_t)n;
}

static uint32_t pick_vlen(uint64_t *s)
{
	unsigned r = tu_below(s, 100);
	if (r < 75)
		return tu_below(s, 120);
	if (r < 95)
		return 100 + tu_below(s, 1900);
	return 2000 + tu_below(s, 30000);
}

static MDB_env *open_env(const char *dir)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 8));
	MUST(mdb_env_set_mapsize(env, (size_t)256 << 20));
	MUST(mdb_env_open(env, dir, 0, 0644));
	return env;
}

/* flags added to the non-DUPSORT DBs: each seed runs plain, prefix
 * compressed and compressed+counted (argv[3] picks one mode for a rerun) */
static unsigned extra_flags;
static const unsigned extra_modes[] = {0, MDB_PREFIX_COMPRESSION, MDB_PREFIX_COMPRESSION | MDB_COUNTED};

static void open_dbs(MDB_env *env, MDB_dbi *dbi)
{
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	for (int d = 0; d < NDB; d++)
		MUST(mdb_dbi_open(txn, dbnames[d], dbflags[d] | extra_flags | MDB_CREATE, &dbi[d]));
	MUST(mdb_dbi_open(txn, "dups", MDB_DUPSORT | MDB_CREATE, &dbi[NDB]));
	MUST(mdb_txn_commit(txn));
}

/* Full comparison of one DB with its oracle, forwards and backwards. */
static void compare_all(MDB_txn *txn, MDB_dbi dbi, oracle *o)
{
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_cursor_open(txn, dbi, &c));
	size_t i = 0;
	int rc;
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		if (i >= o->n) {
			EXPECT(!"more items than the oracle");
			break;
		}
		EXPECT(k.mv_size == o->v[i].klen && !memcmp(k.mv_data, o->v[i].key, k.mv_size));
		EXPECT(value_ok(&v, &o->v[i]));
		if (!value_ok(&v, &o->v[i]))
			fprintf(stderr, "  key %.*s: got %zu bytes, want %u (seed %u)\n", (int)(k.mv_size > 20 ? 20 : k.mv_size),
				(char *)k.mv_data, v.mv_size, o->v[i].vlen, o->v[i].vseed);
		i++;
	}
	EXPECT(rc == MDB_NOTFOUND);
	EXPECT(i == o->n);
	/* after running off the end the cursor still sits on the last item,
	 * so PREV yields the one before it (LMDB semantics) */
	if (o->n >= 2) {
		EXPECT_RC(mdb_cursor_get(c, &k, &v, MDB_PREV), 0);
		EXPECT(k.mv_size == o->v[o->n - 2].klen && !memcmp(k.mv_data, o->v[o->n - 2].key, k.mv_size));
	}
	i = o->n;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_LAST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_PREV)) {
		if (i == 0) {
			EXPECT(!"more items backwards than the oracle");
			break;
		}
		i--;
		EXPECT(k.mv_size == o->v[i].klen && !memcmp(k.mv_data, o->v[i].key, k.mv_size));
	}
	EXPECT(rc == MDB_NOTFOUND);
	EXPECT(i == 0);
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == o->n);
	mdb_cursor_close(c);
}

static void run_check(MDB_txn *txn)
{
	char msg[256];
	int rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "check: %s\n", msg);
}

static long ops_done;

/* debugging aid (RAND_STEP=n): audit the tree after every operation */
static void trace_check(MDB_txn *txn, const char *where)
{
	char msg[256];
	if (mdb_txn_check(txn, msg, sizeof msg))
		fprintf(stderr, "  CHECK FAILED %s: %s\n", where, msg);
}

/* One random operation inside txn. */
static void random_op(uint64_t *s, MDB_txn *txn, MDB_dbi *dbi, oracle *orc, MDB_cursor **curs)
{
	int d = (int)tu_below(s, NDB);
	oracle *o = &orc[d];
	char key[KMAX];
	unsigned space = 1500;
	unsigned id = tu_below(s, space);
	size_t kl = make_key(o->kind, id, key);
	MDB_val k = {kl, key}, v;
	int ex;
	size_t pos = ofind(o, key, kl, &ex);
	unsigned r = tu_below(s, 100);
	ops_done++;
	if (tracing)
		fprintf(stderr, "  op db %d id %u r %u ex %d txn %p\n", d, id, r, ex, (void *)txn);
	if (r < 50) {
		uint32_t vlen = pick_vlen(s), vseed = (uint32_t)tu_next(s);
		unsigned how = tu_below(s, 20);
		fill_value(vbuf, vlen, vseed);
		v.mv_size = vlen;
		v.mv_data = vbuf;
		if (how == 0) {
			int rc = mdb_put(txn, dbi[d], &k, &v, MDB_NOOVERWRITE);
			if (ex) {
				EXPECT(rc == MDB_KEYEXIST);
				EXPECT(value_ok(&v, &o->v[pos]));
			} else {
				EXPECT(rc == 0);
				oput(o, key, kl, vlen, vseed);
			}
		} else if (how == 1) {
			int after = o->n == 0 || ocmp(o->kind, key, kl, o->v[o->n - 1].key, o->v[o->n - 1].klen) > 0;
			int rc = mdb_put(txn, dbi[d], &k, &v, MDB_APPEND);
			EXPECT(rc == (after ? 0 : MDB_KEYEXIST));
			if (after && rc == 0)
				oput(o, key, kl, vlen, vseed);
		} else if (how == 2) {
			MDB_val rv = {vlen, NULL};
			int rc = mdb_put(txn, dbi[d], &k, &rv, MDB_RESERVE);
			EXPECT(rc == 0);
			if (rc == 0) {
				EXPECT(rv.mv_data != NULL);
				if (vlen)
					memcpy(rv.mv_data, vbuf, vlen);
				oput(o, key, kl, vlen, vseed);
			}
		} else if (how == 3 && ex) {
			/* replace through a positioned cursor */
			MDB_val kk = k, cv;
			EXPECT_RC(mdb_cursor_get(curs[d], &kk, &cv, MDB_SET), 0);
			EXPECT_RC(mdb_cursor_put(curs[d], &kk, &v, MDB_CURRENT), 0);
			oput(o, key, kl, vlen, vseed);
			MDB_val gk, gv;
			EXPECT_RC(mdb_cursor_get(curs[d], &gk, &gv, MDB_GET_CURRENT), 0);
			EXPECT(gk.mv_size == kl && !memcmp(gk.mv_data, key, kl));
			EXPECT(value_ok(&gv, &o->v[pos]));
		} else {
			EXPECT_RC(mdb_put(txn, dbi[d], &k, &v, 0), 0);
			oput(o, key, kl, vlen, vseed);
		}
	} else if (r < 75) {
		if (tu_below(s, 3) == 0 && o->n) {
			/* delete through a cursor, then check what NEXT returns */
			size_t at = tu_below(s, (unsigned)o->n);
			MDB_val kk = {o->v[at].klen, o->v[at].key}, cv;
			EXPECT_RC(mdb_cursor_get(curs[d], &kk, &cv, MDB_SET_KEY), 0);
			EXPECT_RC(mdb_cursor_del(curs[d], 0), 0);
			odel(o, at);
			int rc = mdb_cursor_get(curs[d], &kk, &cv, MDB_NEXT);
			if (at < o->n) {
				EXPECT(rc == 0);
				EXPECT(rc || (kk.mv_size == o->v[at].klen && !memcmp(kk.mv_data, o->v[at].key, kk.mv_size)));
			} else {
				EXPECT(rc == MDB_NOTFOUND);
			}
		} else {
			int rc = mdb_del(txn, dbi[d], &k, NULL);
			EXPECT(rc == (ex ? 0 : MDB_NOTFOUND));
			if (ex)
				odel(o, pos);
		}
	} else if (r < 88) {
		int rc = mdb_get(txn, dbi[d], &k, &v);
		EXPECT(rc == (ex ? 0 : MDB_NOTFOUND));
		if (ex && !rc)
			EXPECT(value_ok(&v, &o->v[pos]));
	} else {
		/* range seek, then a short walk in a random direction */
		MDB_val kk = k, cv;
		int rc = mdb_cursor_get(curs[d], &kk, &cv, MDB_SET_RANGE);
		if (pos >= o->n) {
			EXPECT(rc == MDB_NOTFOUND);
			return;
		}
		EXPECT(rc == 0);
		if (rc)
			return;
		EXPECT(kk.mv_size == o->v[pos].klen && !memcmp(kk.mv_data, o->v[pos].key, kk.mv_size));
		EXPECT(value_ok(&cv, &o->v[pos]));
		int fwd = (int)tu_below(s, 2);
		unsigned steps = tu_below(s, 30);
		size_t i = pos;
		for (unsigned st = 0; st < steps; st++) {
			rc = mdb_cursor_get(curs[d], &kk, &cv, fwd ? MDB_NEXT : MDB_PREV);
			if (fwd ? i + 1 >= o->n : i == 0) {
				EXPECT(rc == MDB_NOTFOUND);
				break;
			}
			i = fwd ? i + 1 : i - 1;
			EXPECT(rc == 0);
			if (rc)
				break;
			EXPECT(kk.mv_size == o->v[i].klen && !memcmp(kk.mv_data, o->v[i].key, kk.mv_size));
		}
	}
}

static void run_seed(uint64_t seed, long steps);

int main(int argc, char **argv)
{
	if (argc > 1) {
		extra_flags = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 0;
		run_seed(strtoull(argv[1], NULL, 0), argc > 2 ? atol(argv[2]) : 400L * tu_scale());
	} else {
		const uint64_t seeds[] = {12345, 777, 4242};
		for (int m = 0; m < 3 && !tu_failures; m++) {
			extra_flags = extra_modes[m];
			for (int i = 0; i < 3 && !tu_failures; i++)
				run_seed(seeds[i], 400L * tu_scale());
		}
	}
	printf("rand_test: %ld operations\n", ops_done);
	return tu_finish("rand_test");
}

static void run_seed(uint64_t seed, long steps)
{
	const char *dir = "build/rand_env";
	printf("rand_test seed=%llu steps=%ld flags=0x%x (rerun: ./build/rand_test %llu %ld 0x%x)\n",
		(unsigned long long)seed, steps, extra_flags, (unsigned long long)seed, steps, extra_flags);
	tu_fresh_dir(dir);
	uint64_t s = seed;
	MDB_env *env = open_env(dir);
	MDB_dbi dbi[NDB + 1];
	open_dbs(env, dbi);
	poracle pd = {0}, pdsaved = {0}, pdcsaved = {0};
	oracle orc[NDB], saved[NDB], csaved[NDB];
	memset(orc, 0, sizeof orc);
	memset(saved, 0, sizeof saved);
	memset(csaved, 0, sizeof csaved);
	for (int d = 0; d < NDB; d++)
		orc[d].kind = saved[d].kind = csaved[d].kind = dbkind[d];
	for (long step = 0; step < steps && !tu_failures; step++) {
		if (getenv("RAND_FULL"))
			fprintf(stderr, "step %ld\n", step);
		tracing = getenv("RAND_STEP") && step >= atol(getenv("RAND_STEP"));
		if (tracing)
			fprintf(stderr, "step %ld\n", step);
		for (int d = 0; d < NDB; d++)
			ocopy(&saved[d], &orc[d]);
		pcopy(&pdsaved, &pd);
		MDB_txn *txn;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MDB_cursor *curs[NDB], *dcur;
		for (int d = 0; d < NDB; d++)
			MUST(mdb_cursor_open(txn, dbi[d], &curs[d]));
		MUST(mdb_cursor_open(txn, dbi[NDB], &dcur));
		unsigned nops = 1 + tu_below(&s, 150);
		int with_child = tu_below(&s, 4) == 0 && !getenv("RAND_NOCHILD");
		/* The DUPSORT workload runs in every step, nested txns included.
		 * (It was opt-in while a divergence after nested commits was
		 * open; seeds 1-3, 37, 38, 41 and 100-130 at 400 steps pass since
		 * the session-2 engine.)  RAND_NODUPS=1 turns it off,
		 * RAND_NOCHILD=1 disables nested txns. */
		int dups_here = !getenv("RAND_NODUPS");
		for (unsigned i = 0; i < nops; i++) {
			random_op(&s, txn, dbi, orc, curs);
			if (tracing)
				trace_all(txn, dbi, orc, &pd, "after random_op");
			if (dups_here)
				dup_op(&s, txn, dbi[NDB], &pd, dcur);
			if (tracing)
				trace_all(txn, dbi, orc, &pd, "after dup_op");
		}
		if (with_child) {
			/* nested child */
			MDB_txn *child;
			MUST(mdb_txn_begin(env, txn, 0, &child));
			for (int d = 0; d < NDB; d++)
				ocopy(&csaved[d], &orc[d]);
			pcopy(&pdcsaved, &pd);
			MDB_cursor *cc[NDB], *cdc;
			for (int d = 0; d < NDB; d++)
				MUST(mdb_cursor_open(child, dbi[d], &cc[d]));
			MUST(mdb_cursor_open(child, dbi[NDB], &cdc));
			unsigned cops = 1 + tu_below(&s, 100);
			for (unsigned i = 0; i < cops; i++) {
				random_op(&s, child, dbi, orc, cc);
				if (dups_here)
					dup_op(&s, child, dbi[NDB], &pd, cdc);
			}
			if (tu_below(&s, 2) == 0) {
				run_check(child);
				EXPECT_RC(mdb_txn_commit(child), 0);
			} else {
				mdb_txn_abort(child);
				for (int d = 0; d < NDB; d++)
					ocopy(&orc[d], &csaved[d]);
				pcopy(&pd, &pdcsaved);
			}
			/* the parent's cursors must still work after the child */
			for (int d = 0; d < NDB; d++) {
				MDB_val k, v;
				int rc = mdb_cursor_get(curs[d], &k, &v, MDB_FIRST);
				EXPECT(rc == (orc[d].n ? 0 : MDB_NOTFOUND));
			}
			for (unsigned i = 0; i < 10; i++)
				random_op(&s, txn, dbi, orc, curs);
		}
		if (step % 7 == 0)
			run_check(txn);
		if (tu_below(&s, 8) == 0) {
			mdb_txn_abort(txn);
			for (int d = 0; d < NDB; d++)
				ocopy(&orc[d], &saved[d]);
			pcopy(&pd, &pdsaved);
		} else {
			EXPECT_RC(mdb_txn_commit(txn), 0);
		}
		if (step % 5 == 0 || step == steps - 1 || getenv("RAND_FULL")) {
			MDB_txn *rt;
			MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
			run_check(rt);
			if (step % 25 == 0 || step == steps - 1 || getenv("RAND_FULL")) {
				for (int d = 0; d < NDB; d++)
					compare_all(rt, dbi[d], &orc[d]);
				compare_dups(rt, dbi[NDB], &pd);
			}
			mdb_txn_abort(rt);
		}
		if (step % 60 == 59) {
			if (tracing) {
				MDB_txn *rt;
				MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
				int before = tu_failures;
				compare_dups(rt, dbi[NDB], &pd);
				fprintf(stderr, "  before close: %s\n", before == tu_failures ? "ok" : "BAD");
				mdb_txn_abort(rt);
			}
			mdb_env_close(env);
			env = open_env(dir);
			open_dbs(env, dbi);
			if (tracing) {
				MDB_txn *rt;
				MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
				int before = tu_failures;
				compare_dups(rt, dbi[NDB], &pd);
				MDB_stat st2;
				mdb_stat(rt, dbi[NDB], &st2);
				unsigned fl2 = 0;
				mdb_dbi_flags(rt, dbi[NDB], &fl2);
				fprintf(stderr, "  after reopen: %s entries %zu want %zu flags %x dbi %u\n", before == tu_failures ? "ok" : "BAD",
					st2.ms_entries, pd.n, fl2, dbi[NDB]);
				mdb_txn_abort(rt);
			}
		}
	}
	MDB_txn *rt;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
	run_check(rt);
	for (int d = 0; d < NDB; d++)
		compare_all(rt, dbi[d], &orc[d]);
	compare_dups(rt, dbi[NDB], &pd);
	mdb_txn_abort(rt);
	mdb_env_close(env);
	free(pd.v);
	free(pdsaved.v);
	free(pdcsaved.v);
	for (int d = 0; d < NDB; d++) {
		free(orc[d].v);
		free(saved[d].v);
		free(csaved[d].v);
	}
}
