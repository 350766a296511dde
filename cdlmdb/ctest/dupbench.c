/*
 * dupbench.c - a profiling driver for the DUPFIXED write and lookup paths
 * (not a test, not in `make run`): the leaf2_bench workload in C, on
 * DUPSORT|DUPFIXED|COUNTED|PREFIX_COMPRESSION.  `make build/dupbench`
 * builds it at -O2 without sanitizers, so that perf / callgrind see the
 * engine as cgo builds it.  Usage: [DUPBENCH_KEYS=n] dupbench [phase...], phases append,
 * getboth, insert, delete, multi (default: all, in that order).
 */
#include "../lmdb.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { DUPS = 4096, TXNVALS = 65536 };
/* DUPBENCH_KEYS=n: n keys instead of 256 (callgrind runs), the lookups and
 * inserts scaled along */
static int KEYS = 256, LOOKUPS = 100000, INSERTS = 65536;

#define CHECK(x) do { int _rc = (x); if (_rc) { fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, \
	__LINE__, #x, mdb_strerror(_rc)); exit(2); } } while (0)

static MDB_env *env;
static MDB_dbi dbi, mdbi;
static const unsigned FLAGS = MDB_DUPSORT | MDB_DUPFIXED | MDB_COUNTED | MDB_PREFIX_COMPRESSION;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void key(char *b, int k)
{
	/* "leaf2/key/%06x" without snprintf's cost in the profile */
	memcpy(b, "leaf2/key/", 10);
	for (int i = 0; i < 6; i++)
		b[10 + i] = "0123456789abcdef"[(k >> (20 - 4 * i)) & 15];
	b[16] = 0;
}

static void val(unsigned char *b, int k, int x)
{
	uint64_t v = (uint64_t)k << 32 | (uint32_t)x;
	for (int i = 7; i >= 0; i--, v >>= 8)
		b[i] = (unsigned char)v;
}

static uint64_t rng = 88172645463325252ull;
static unsigned below(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static void phase_append(void)
{
	char kb[17];
	unsigned char vb[8];
	double t = 0;
	for (int lo = 0; lo < KEYS * DUPS; lo += TXNVALS) {
		MDB_txn *txn;
		CHECK(mdb_txn_begin(env, NULL, 0, &txn));
		double t0 = now();
		for (int idx = lo; idx < lo + TXNVALS && idx < KEYS * DUPS; idx++) {
			key(kb, idx / DUPS);
			val(vb, idx / DUPS, 2 * (idx % DUPS));
			MDB_val k = {16, kb}, v = {8, vb};
			CHECK(mdb_put(txn, dbi, &k, &v, 0));
		}
		t += now() - t0;
		CHECK(mdb_txn_commit(txn));
	}
	printf("append: %.1f ns/value\n", t * 1e9 / (KEYS * DUPS));
}

static void phase_getboth(void)
{
	char kb[17];
	unsigned char vb[8];
	MDB_txn *txn;
	MDB_cursor *c;
	int found = 0;
	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	CHECK(mdb_cursor_open(txn, dbi, &c));
	double t0 = now();
	for (int j = 0; j < LOOKUPS; j++) {
		int idx = (int)below(KEYS * DUPS);
		key(kb, idx / DUPS);
		val(vb, idx / DUPS, 2 * (idx % DUPS) + (j % 8 == 7));
		MDB_val k = {16, kb}, v = {8, vb};
		found += mdb_cursor_get(c, &k, &v, MDB_GET_BOTH) == 0;
	}
	double t = now() - t0;
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	printf("getboth: %.1f ns/lookup (%d found)\n", t * 1e9 / LOOKUPS, found);
}

static int *plan;

static void phase_insert(int del)
{
	char kb[17];
	unsigned char vb[8];
	MDB_txn *txn;
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	double t0 = now();
	for (int j = 0; j < INSERTS; j++) {
		int idx = plan[del ? INSERTS - 1 - j : j];
		key(kb, idx / DUPS);
		val(vb, idx / DUPS, 2 * (idx % DUPS) + 1);
		MDB_val k = {16, kb}, v = {8, vb};
		if (del)
			CHECK(mdb_del(txn, dbi, &k, &v));
		else
			CHECK(mdb_put(txn, dbi, &k, &v, MDB_NODUPDATA));
	}
	double t = now() - t0;
	CHECK(mdb_txn_commit(txn));
	printf("%s: %.1f ns/value\n", del ? "delete" : "insert", t * 1e9 / INSERTS);
}

static void phase_multi(void)
{
	static unsigned char page[8 * DUPS];
	char kb[17];
	double t = 0;
	MDB_txn *dt;
	CHECK(mdb_txn_begin(env, NULL, 0, &dt));
	CHECK(mdb_drop(dt, mdbi, 0));	/* every run loads an empty DB */
	CHECK(mdb_txn_commit(dt));
	for (int lo = 0; lo < KEYS; lo += TXNVALS / DUPS) {
		MDB_txn *txn;
		MDB_cursor *c;
		CHECK(mdb_txn_begin(env, NULL, 0, &txn));
		CHECK(mdb_cursor_open(txn, mdbi, &c));
		for (int k = lo; k < lo + TXNVALS / DUPS && k < KEYS; k++) {
			for (int i = 0; i < DUPS; i++)
				val(page + 8 * i, k, 2 * i);
			key(kb, k);
			MDB_val kv = {16, kb}, m[2] = {{8, page}, {DUPS, NULL}};
			double t0 = now();
			CHECK(mdb_cursor_put(c, &kv, m, MDB_MULTIPLE));
			t += now() - t0;
			if (m[1].mv_size != DUPS)
				exit(3);
		}
		mdb_cursor_close(c);
		CHECK(mdb_txn_commit(txn));
	}
	printf("multi: %.1f M values/s\n", KEYS * DUPS / t / 1e6);
}

int main(int argc, char **argv)
{
	const char *dir = "build/dupbench_env";
	if (getenv("DUPBENCH_KEYS") && atoi(getenv("DUPBENCH_KEYS")) > 0) {
		int k = atoi(getenv("DUPBENCH_KEYS"));
		LOOKUPS = LOOKUPS / 256 * k;
		INSERTS = INSERTS / 256 * k;
		KEYS = k;
	}
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
	if (system(cmd))
		return 2;
	CHECK(mdb_env_create(&env));
	CHECK(mdb_env_set_mapsize(env, (size_t)1 << 30));
	CHECK(mdb_env_set_maxdbs(env, 2));
	CHECK(mdb_env_open(env, dir, MDB_NOSYNC | MDB_NOMETASYNC | MDB_NOLOCK, 0644));
	MDB_txn *txn;
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	CHECK(mdb_dbi_open(txn, "base", FLAGS | MDB_CREATE, &dbi));
	CHECK(mdb_dbi_open(txn, "multi", FLAGS | MDB_CREATE, &mdbi));
	CHECK(mdb_txn_commit(txn));
	/* distinct base positions for the interior inserts */
	plan = malloc(sizeof(int) * KEYS * DUPS);
	for (int i = 0; i < KEYS * DUPS; i++)
		plan[i] = i;
	for (int i = KEYS * DUPS - 1; i > 0; i--) {
		int j = (int)below((unsigned)i + 1), x = plan[i];
		plan[i] = plan[j];
		plan[j] = x;
	}
	static const char *all[] = {"append", "getboth", "insert", "delete", "multi"};
	const char **ph = argc > 1 ? (const char **)argv + 1 : all;
	int n = argc > 1 ? argc - 1 : 5;
	for (int i = 0; i < n; i++) {
		if (!strcmp(ph[i], "append"))
			phase_append();
		else if (!strcmp(ph[i], "getboth"))
			phase_getboth();
		else if (!strcmp(ph[i], "insert"))
			phase_insert(0);
		else if (!strcmp(ph[i], "delete"))
			phase_insert(1);
		else if (!strcmp(ph[i], "multi"))
			phase_multi();
	}
	mdb_env_close(env);
	free(plan);
	return 0;
}
