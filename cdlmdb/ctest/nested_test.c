/*
 * nested_test.c - nested write transactions that free and reuse pages.
 *
 * A nested txn may release pages its ancestors made dirty (overflow runs,
 * touched leaves) and hand them out again at once.  These tests pin down
 * that the committed file then holds exactly the values the txns wrote:
 *   - the sequence the Go differential tests found (two overflow values
 *     dirty in the parent, replaced by small ones in a child which then
 *     stores a third overflow value in the released pages);
 *   - a three-level variant where the middle txn ends up with a released
 *     run of its own while a grandchild reused part of that run;
 *   - a randomized walk: up to four levels of nesting, overflow values of
 *     many sizes, commit/abort at every level, checked against an oracle
 *     inside the txns, after every top-level commit (plus mdb_txn_check)
 *     and after reopening the environment; half of the runs use only eight
 *     keys so that children keep overwriting their ancestors' values; a
 *     DUPSORT DB (sub-pages growing into sub-trees) changes alongside.
 * Usage: nested_test [seed] [steps]
 */
#include "testutil.h"

#define NKEYS 48
#define MAXNEST 4
#define VMAX 48000
#define DIR "build/nested_env"

typedef struct { uint8_t live; uint32_t len, seed; } slot;

static unsigned char wbuf[VMAX], rbuf[VMAX];

static void make_value(unsigned char *b, uint32_t len, uint32_t seed)
{
	uint64_t s = ((uint64_t)seed << 32) | len;
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t r = tu_next(&s);
		uint32_t m = len - i < 8 ? len - i : 8;
		memcpy(b + i, &r, m);
	}
}

/* Decimal digits at p[0..n) (stored data: not NUL-terminated), or ~0u. */
static unsigned digits(const void *p, size_t n)
{
	const unsigned char *c = p;
	unsigned v = 0;
	for (size_t i = 0; i < n; i++) {
		if (c[i] < '0' || c[i] > '9')
			return ~0u;
		v = v * 10 + (c[i] - '0');
	}
	return v;
}

static MDB_env *open_env(int fresh)
{
	MDB_env *env;
	if (fresh)
		tu_fresh_dir(DIR);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, DIR, MDB_NOSYNC, 0644));
	return env;
}

static MDB_dbi open_db(MDB_env *env)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "nest", MDB_CREATE, &dbi));
	MUST(mdb_txn_commit(txn));
	return dbi;
}

static void check_txn(MDB_txn *txn, const char *where)
{
	char msg[256];
	int rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "mdb_txn_check %s: %s (%s)\n", where, msg, mdb_strerror(rc));
}

static void put_sized(MDB_txn *txn, MDB_dbi dbi, const char *key, uint32_t len, uint32_t seed)
{
	MDB_val k = {strlen(key), (void *)key}, v = {len, wbuf};
	make_value(wbuf, len, seed);
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
}

/* Does key hold exactly the value (len, seed)? */
static int value_is(MDB_txn *txn, MDB_dbi dbi, const char *key, uint32_t len, uint32_t seed)
{
	MDB_val k = {strlen(key), (void *)key}, v;
	if (mdb_get(txn, dbi, &k, &v) != 0 || v.mv_size != len)
		return 0;
	make_value(rbuf, len, seed);
	return memcmp(v.mv_data, rbuf, len) == 0;
}

static int value_in_read_txn(MDB_env *env, MDB_dbi dbi, const char *key, uint32_t len, uint32_t seed)
{
	MDB_txn *rt;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
	int ok = value_is(rt, dbi, key, len, seed);
	check_txn(rt, "read txn");
	mdb_txn_abort(rt);
	return ok;
}

/* The sequence from the Go differential test TestNestedTxnOverflowReuse. */
static void test_found_sequence(int commit_child)
{
	MDB_env *env = open_env(1);
	MDB_dbi dbi = open_db(env);
	MDB_txn *txn, *child;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	put_sized(txn, dbi, "A", 16129, 1);
	put_sized(txn, dbi, "B", 19802, 2);
	MUST(mdb_txn_begin(env, txn, 0, &child));
	put_sized(child, dbi, "B", 184, 3);
	put_sized(child, dbi, "A", 184, 4);
	put_sized(child, dbi, "C", 18152, 5);
	EXPECT(value_is(child, dbi, "C", 18152, 5));
	check_txn(child, "child before its end");
	if (commit_child)
		EXPECT_RC(mdb_txn_commit(child), 0);
	else
		mdb_txn_abort(child);
	check_txn(txn, "parent after the child");
	if (commit_child) {
		EXPECT(value_is(txn, dbi, "A", 184, 4));
		EXPECT(value_is(txn, dbi, "B", 184, 3));
		EXPECT(value_is(txn, dbi, "C", 18152, 5));
	} else {
		EXPECT(value_is(txn, dbi, "A", 16129, 1));
		EXPECT(value_is(txn, dbi, "B", 19802, 2));
		MDB_val k = {1, "C"}, v;
		EXPECT_RC(mdb_get(txn, dbi, &k, &v), MDB_NOTFOUND);
	}
	EXPECT_RC(mdb_txn_commit(txn), 0);
	if (commit_child) {
		EXPECT(value_in_read_txn(env, dbi, "A", 184, 4));
		EXPECT(value_in_read_txn(env, dbi, "B", 184, 3));
		EXPECT(value_in_read_txn(env, dbi, "C", 18152, 5));
	} else {
		EXPECT(value_in_read_txn(env, dbi, "A", 16129, 1));
		EXPECT(value_in_read_txn(env, dbi, "B", 19802, 2));
	}
	mdb_env_close(env);
}

/*
 * Three levels.  The middle txn stores a 4-page value; the grandchild
 * replaces it by a small one (its pages are released but the middle txn
 * still holds a copy of the run), then stores two 1-page values in the
 * first two released pages and replaces the first by a small one.  After
 * both commits the second 1-page value must still be intact: the middle
 * txn's leftover copy of the released run must not hide or overwrite it.
 * Run with a few filler sizes so the page numbers (and the order in which
 * the engine walks its dirty pages) vary.
 */
static void test_three_levels(unsigned filler)
{
	MDB_env *env = open_env(1);
	MDB_dbi dbi = open_db(env);
	MDB_txn *top, *mid, *low;
	MUST(mdb_txn_begin(env, NULL, 0, &top));
	for (unsigned i = 0; i < filler; i++) {
		char key[16];
		snprintf(key, sizeof key, "f%03u", i);
		put_sized(top, dbi, key, 100 + 37 * i, 100 + i);
	}
	put_sized(top, dbi, "g", 9000, 7);
	MUST(mdb_txn_begin(env, top, 0, &mid));
	put_sized(mid, dbi, "r", 14000, 8);	/* 4 pages */
	MUST(mdb_txn_begin(env, mid, 0, &low));
	put_sized(low, dbi, "r", 10, 9);	/* releases the run */
	put_sized(low, dbi, "s", 3000, 10);	/* 1 page */
	put_sized(low, dbi, "t", 3500, 11);	/* 1 page */
	put_sized(low, dbi, "s", 10, 12);	/* releases the first again */
	EXPECT(value_is(low, dbi, "t", 3500, 11));
	check_txn(low, "grandchild");
	EXPECT_RC(mdb_txn_commit(low), 0);
	EXPECT(value_is(mid, dbi, "t", 3500, 11));
	check_txn(mid, "middle txn");
	EXPECT_RC(mdb_txn_commit(mid), 0);
	EXPECT(value_is(top, dbi, "t", 3500, 11));
	EXPECT(value_is(top, dbi, "g", 9000, 7));
	check_txn(top, "top txn");
	EXPECT_RC(mdb_txn_commit(top), 0);
	EXPECT(value_in_read_txn(env, dbi, "r", 10, 9));
	EXPECT(value_in_read_txn(env, dbi, "s", 10, 12));
	EXPECT(value_in_read_txn(env, dbi, "t", 3500, 11));
	EXPECT(value_in_read_txn(env, dbi, "g", 9000, 7));
	mdb_env_close(env);
}

/* ---- randomized nesting against an oracle ------------------------------------ */

/* DUPSORT side: key d<i> holds duplicate number j (0..63) when bit j of dup[i] is set */
#define DKEYS 4

typedef struct { slot kv[NKEYS]; uint64_t dup[DKEYS]; } level;
static level lvl[MAXNEST + 2];	/* [0] committed, [1] top txn, [d+1] depth-d child */

static MDB_dbi open_dupdb(MDB_env *env)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dbi));
	MUST(mdb_txn_commit(txn));
	return dbi;
}

/* Duplicate j: "%02u:" then filler up to 4..400 bytes, so byte order = j order. */
static size_t dup_value(char *b, unsigned key, unsigned j)
{
	size_t len = 4 + (j * 37u + key * 11u) % 397u;
	snprintf(b, 4, "%02u:", j);
	b[3] = ':';
	for (size_t i = 4; i < len; i++)
		b[i] = (char)('a' + (i * 7 + j + key) % 26);
	return len;
}

static void dup_op(uint64_t *s, MDB_txn *txn, MDB_dbi dbi, uint64_t *dup)
{
	char kb[8], vb[512];
	unsigned ki = tu_below(s, DKEYS), j = tu_below(s, 64), r = tu_below(s, 40);
	snprintf(kb, sizeof kb, "d%u", ki);
	MDB_val k = {2, kb}, v = {dup_value(vb, ki, j), vb};
	uint64_t bit = 1ull << j;
	if (r < 28) {
		EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
		dup[ki] |= bit;
	} else if (r < 39) {
		EXPECT_RC(mdb_del(txn, dbi, &k, &v), (dup[ki] & bit) ? 0 : MDB_NOTFOUND);
		dup[ki] &= ~bit;
	} else {
		EXPECT_RC(mdb_del(txn, dbi, &k, NULL), dup[ki] ? 0 : MDB_NOTFOUND);
		dup[ki] = 0;
	}
}

/* Walk every (key, duplicate) pair and compare with the bit sets. */
static void compare_dups(MDB_txn *txn, MDB_dbi dbi, const uint64_t *dup, const char *where)
{
	MDB_cursor *c;
	MDB_val k, v;
	uint64_t seen[DKEYS] = {0};
	unsigned bad = 0, lastk = 0, lastj = 0, n = 0;
	char vb[512];
	MUST(mdb_cursor_open(txn, dbi, &c));
	int rc;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		unsigned ki, j;
		if (k.mv_size != 2 || ((const char *)k.mv_data)[0] != 'd' ||
		    (ki = (unsigned)(((const char *)k.mv_data)[1] - '0')) >= DKEYS || v.mv_size < 4 ||
		    (j = digits(v.mv_data, 2)) >= 64) {
			bad++;
			continue;
		}
		size_t len = dup_value(vb, ki, j);
		if (v.mv_size != len || memcmp(v.mv_data, vb, len) != 0 || (seen[ki] >> j & 1) ||
		    (n && (ki < lastk || (ki == lastk && j <= lastj))))
			bad++;
		seen[ki] |= 1ull << j;
		lastk = ki;
		lastj = j;
		n++;
	}
	EXPECT(rc == MDB_NOTFOUND);
	mdb_cursor_close(c);
	for (unsigned i = 0; i < DKEYS; i++)
		if (seen[i] != dup[i])
			bad++;
	EXPECT(bad == 0);
	if (bad)
		fprintf(stderr, "compare dups %s: %u problems\n", where, bad);
}

static uint32_t random_len(uint64_t *s)
{
	switch (tu_below(s, 8)) {
	case 0: return tu_below(s, 64);
	case 1: return 200 + tu_below(s, 1800);		/* inline */
	case 2: return 2040 + tu_below(s, 2040);	/* one overflow page */
	case 3: return 4081 + tu_below(s, 8192);	/* 2-3 pages */
	case 4: return 12000 + tu_below(s, 12000);
	case 5: return 24000 + tu_below(s, VMAX - 24000);
	default: return 8000 + tu_below(s, 24000);
	}
}

static void key_name(char *b, size_t n, unsigned i)
{
	snprintf(b, n, "key%03u", i);
}

/* Compare the whole DB with oracle level o through a cursor and by key. */
static void compare_all(MDB_txn *txn, MDB_dbi dbi, const slot *o, const char *where)
{
	MDB_cursor *c;
	MDB_val k, v;
	unsigned seen = 0, live = 0, bad = 0;
	MUST(mdb_cursor_open(txn, dbi, &c));
	int rc;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		unsigned idx;
		char name[16];
		seen++;
		if (k.mv_size != 6 || (idx = digits((const char *)k.mv_data + 3, 3)) >= NKEYS) {
			bad++;
			continue;
		}
		key_name(name, sizeof name, idx);
		if (memcmp(name, k.mv_data, 6) != 0 || !o[idx].live || v.mv_size != o[idx].len) {
			bad++;
			continue;
		}
		make_value(rbuf, o[idx].len, o[idx].seed);
		if (memcmp(v.mv_data, rbuf, v.mv_size) != 0)
			bad++;
	}
	EXPECT(rc == MDB_NOTFOUND);
	mdb_cursor_close(c);
	for (unsigned i = 0; i < NKEYS; i++)
		live += o[i].live;
	EXPECT(seen == live);
	EXPECT(bad == 0);
	if (bad || seen != live)
		fprintf(stderr, "compare %s: %u items, %u expected, %u wrong\n", where, seen, live, bad);
}

/*
 * A cursor of an enclosing txn, positioned before a child began, is used
 * after the child ended: whatever item it reports must be a live key with
 * its current value (the child may have freed the pages it stood on).
 */
static void probe_cursor(MDB_cursor *c, const slot *o, const char *where)
{
	MDB_val k, v;
	MDB_cursor_op ops[2] = {MDB_GET_CURRENT, MDB_NEXT};
	for (int i = 0; i < 2; i++) {
		int rc = mdb_cursor_get(c, &k, &v, ops[i]);
		EXPECT(rc == 0 || rc == MDB_NOTFOUND || rc == EINVAL);
		if (rc)
			continue;
		unsigned idx = k.mv_size == 6 ? digits((const char *)k.mv_data + 3, 3) : ~0u;
		int ok = idx < NKEYS && o[idx].live && v.mv_size == o[idx].len;
		if (ok) {
			make_value(rbuf, o[idx].len, o[idx].seed);
			ok = memcmp(v.mv_data, rbuf, v.mv_size) == 0;
		}
		EXPECT(ok);
		if (!ok)
			fprintf(stderr, "cursor %s, op %d: stale or wrong item\n", where, (int)ops[i]);
	}
}

static void test_random(uint64_t seed, long steps, unsigned nkeys)
{
	uint64_t s = seed;
	MDB_env *env = open_env(1);
	MDB_dbi dbi = open_db(env), ddbi = open_dupdb(env);
	MDB_txn *stack[MAXNEST + 1];
	MDB_cursor *pcur[MAXNEST + 1];	/* one per level, freed with its txn */
	int depth = -1;	/* -1: no write txn; 0: top txn; d: child level d */
	unsigned commits = 0, nested_commits = 0, nested_aborts = 0;
	memset(lvl, 0, sizeof lvl);
	for (long step = 0; step < steps; step++) {
		if (depth < 0) {
			MUST(mdb_txn_begin(env, NULL, 0, &stack[0]));
			MUST(mdb_cursor_open(stack[0], dbi, &pcur[0]));
			lvl[1] = lvl[0];
			depth = 0;
		}
		MDB_txn *txn = stack[depth];
		slot *o = lvl[depth + 1].kv;
		unsigned r = tu_below(&s, 1000);
		char key[16];
		unsigned ki = tu_below(&s, nkeys);
		key_name(key, sizeof key, ki);
		MDB_val k = {6, key}, v;
		if (r < 120) {
			dup_op(&s, txn, ddbi, lvl[depth + 1].dup);
		} else if (r < 500) {
			uint32_t len = random_len(&s), vs = (uint32_t)tu_next(&s);
			put_sized(txn, dbi, key, len, vs);
			o[ki].live = 1;
			o[ki].len = len;
			o[ki].seed = vs;
		} else if (r < 640) {
			int rc = mdb_del(txn, dbi, &k, NULL);
			EXPECT(rc == (o[ki].live ? 0 : MDB_NOTFOUND));
			o[ki].live = 0;
		} else if (r < 760) {
			int rc = mdb_get(txn, dbi, &k, &v);
			EXPECT(rc == (o[ki].live ? 0 : MDB_NOTFOUND));
			if (rc == 0 && o[ki].live) {
				EXPECT(v.mv_size == o[ki].len);
				make_value(rbuf, o[ki].len, o[ki].seed);
				EXPECT(v.mv_size == o[ki].len && memcmp(v.mv_data, rbuf, v.mv_size) == 0);
			}
		} else if (r < 800) {
			compare_all(txn, dbi, o, "inside txn");
			compare_dups(txn, ddbi, lvl[depth + 1].dup, "inside txn");
			if (tu_below(&s, 4) == 0)
				check_txn(txn, "inside txn");
		} else if (r < 880) {
			if (depth < MAXNEST) {
				MDB_val pk = k, pv;
				int prc = mdb_cursor_get(pcur[depth], &pk, &pv, MDB_SET_RANGE);
				EXPECT(prc == 0 || prc == MDB_NOTFOUND);
				MUST(mdb_txn_begin(env, txn, 0, &stack[depth + 1]));
				MUST(mdb_cursor_open(stack[depth + 1], dbi, &pcur[depth + 1]));
				lvl[depth + 2] = lvl[depth + 1];
				depth++;
			}
		} else if (r < 940) {
			if (depth > 0) {
				EXPECT_RC(mdb_txn_commit(txn), 0);
				lvl[depth] = lvl[depth + 1];
				depth--;
				nested_commits++;
				probe_cursor(pcur[depth], lvl[depth + 1].kv, "after child commit");
				compare_all(stack[depth], dbi, lvl[depth + 1].kv, "after child commit");
				compare_dups(stack[depth], ddbi, lvl[depth + 1].dup, "after child commit");
			}
		} else if (r < 970) {
			if (depth > 0) {
				mdb_txn_abort(txn);
				depth--;
				nested_aborts++;
				probe_cursor(pcur[depth], lvl[depth + 1].kv, "after child abort");
				compare_all(stack[depth], dbi, lvl[depth + 1].kv, "after child abort");
				compare_dups(stack[depth], ddbi, lvl[depth + 1].dup, "after child abort");
			}
		} else if (r < 990) {
			/* commit the whole family (a pending child commits with it) */
			EXPECT_RC(mdb_txn_commit(stack[0]), 0);
			lvl[0] = lvl[depth + 1];
			depth = -1;
			commits++;
			MDB_txn *rt;
			MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
			compare_all(rt, dbi, lvl[0].kv, "after commit");
			compare_dups(rt, ddbi, lvl[0].dup, "after commit");
			check_txn(rt, "after commit");
			mdb_txn_abort(rt);
		} else {
			mdb_txn_abort(stack[0]);
			depth = -1;
		}
		if (depth < 0 && tu_below(&s, 20) == 0) {
			mdb_env_close(env);
			env = open_env(0);
			dbi = open_db(env);
			ddbi = open_dupdb(env);
			MDB_txn *rt;
			MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rt));
			compare_all(rt, dbi, lvl[0].kv, "after reopen");
			compare_dups(rt, ddbi, lvl[0].dup, "after reopen");
			check_txn(rt, "after reopen");
			mdb_txn_abort(rt);
		}
		if (tu_failures) {
			fprintf(stderr, "seed %llu: first failure at step %ld (depth %d)\n",
				(unsigned long long)seed, step, depth);
			break;
		}
	}
	if (depth >= 0)
		mdb_txn_abort(stack[0]);
	mdb_env_close(env);
	printf("seed %llu, %u keys: %u commits, %u nested commits, %u nested aborts\n",
		(unsigned long long)seed, nkeys, commits, nested_commits, nested_aborts);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 20261129;
	long steps = argc > 2 ? atol(argv[2]) : 20000L * tu_scale();
	test_found_sequence(1);
	test_found_sequence(0);
	for (unsigned f = 0; f < 24 && !tu_failures; f += 3)
		test_three_levels(f);
	/* a small key space makes children overwrite their ancestors' values
	 * (and so release the ancestors' dirty pages) far more often */
	for (int i = 0; i < 8 && !tu_failures; i++)
		test_random(seed + (uint64_t)i * 7919, steps / 8, (i & 1) ? 8 : NKEYS);
	return tu_finish("nested_test");
}
