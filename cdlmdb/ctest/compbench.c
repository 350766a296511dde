/*
 * compbench.c - a profiling driver for the unique-key rows of
 * compress_bench (not a test, not in `make run`): 32-byte keys (16 'p'
 * then 16 hex digits), 64-byte values, shuffled inserts, random same-size
 * updates, shuffled deletes of half the keys and their reinsert, then
 * random gets, each phase one write (or read) txn, on a plain DBI or one
 * with MDB_PREFIX_COMPRESSION.  `make build/compbench` builds it at -O2
 * without sanitizers, as cgo builds the engine, so that callgrind and
 * cachegrind (--branch-sim=yes) see what the Go benchmark runs.
 *
 * Usage: compbench plain|prefix [entries] [reps]
 * Prints one line per phase: the median, min and max of reps fresh runs
 * in ns per operation.
 */
#include "../lmdb.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x) do { int _rc = (x); if (_rc) { fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, \
	__LINE__, #x, mdb_strerror(_rc)); exit(2); } } while (0)

enum { KLEN = 32, VLEN = 64, PHASES = 5 };
static const char *phase_name[PHASES] = {"insert", "update", "delete", "reinsert", "get"};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void shuffle(uint32_t *a, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = rng() % i;
		uint32_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

static void make_key(unsigned char *b, uint32_t k)
{
	memset(b, 'p', 16);
	for (int i = 31; i >= 16; i--, k >>= 4)
		b[i] = "0123456789abcdef"[k & 15];
}

static void make_val(unsigned char *b, uint32_t idx, unsigned gen)
{
	for (int i = 0; i < VLEN; i++)
		b[i] = (unsigned char)(idx + (uint32_t)i + gen * 0x55u);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* one fresh run of every phase; ns per op into out[PHASES] */
static void run(unsigned dbflags, uint32_t n, double *out)
{
	char dir[] = "/tmp/compbenchXXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(2);
	}
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *txn;
	CHECK(mdb_env_create(&env));
	CHECK(mdb_env_set_mapsize(env, (size_t)4 << 30));
	CHECK(mdb_env_set_maxdbs(env, 2));
	CHECK(mdb_env_open(env, dir, MDB_NOLOCK | MDB_NOSYNC | MDB_NOMETASYNC, 0644));
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	CHECK(mdb_dbi_open(txn, "d", MDB_CREATE | dbflags, &dbi));
	CHECK(mdb_txn_commit(txn));

	uint32_t *order = malloc(n * sizeof *order), *del = malloc(n * sizeof *del);
	uint32_t *upd = malloc((n / 2) * sizeof *upd);
	for (uint32_t i = 0; i < n; i++)
		order[i] = del[i] = i;
	shuffle(order, n);
	shuffle(del, n);
	for (uint32_t i = 0; i < n / 2; i++)
		upd[i] = (uint32_t)(rng() % n);
	unsigned char kb[KLEN], vb[VLEN];
	MDB_val k = {KLEN, kb}, v = {VLEN, vb};
	for (int ph = 0; ph < PHASES; ph++) {
		uint32_t *list = ph == 0 ? order : ph == 1 ? upd : del;
		uint32_t cnt = ph == 0 ? n : n / 2;
		if (ph == 4)
			list = upd;
		CHECK(mdb_txn_begin(env, NULL, ph == 4 ? MDB_RDONLY : 0, &txn));
		double t0 = now();
		for (uint32_t i = 0; i < cnt; i++) {
			make_key(kb, list[i]);
			switch (ph) {
			case 0: case 1: case 3:
				make_val(vb, list[i], ph == 0 ? 0 : ph == 1 ? 1 : 2);
				CHECK(mdb_put(txn, dbi, &k, &v, 0));
				break;
			case 2:
				CHECK(mdb_del(txn, dbi, &k, NULL));
				break;
			case 4: {
				MDB_val got;
				CHECK(mdb_get(txn, dbi, &k, &got));
				if (got.mv_size != VLEN) {
					fprintf(stderr, "get: %zu bytes\n", got.mv_size);
					exit(2);
				}
				break;
			}
			}
		}
		out[ph] = (now() - t0) * 1e9 / cnt;
		if (ph == 4)
			mdb_txn_abort(txn);
		else
			CHECK(mdb_txn_commit(txn));
	}
	MDB_stat st;
	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	CHECK(mdb_stat(txn, dbi, &st));
	mdb_txn_abort(txn);
	if (st.ms_entries != n) {
		fprintf(stderr, "%zu entries, want %u\n", st.ms_entries, n);
		exit(2);
	}
	mdb_env_close(env);
	char path[64];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	unlink(path);
	rmdir(dir);
	free(order);
	free(del);
	free(upd);
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "plain") && strcmp(argv[1], "prefix"))) {
		fprintf(stderr, "usage: compbench plain|prefix [entries] [reps]\n");
		return 2;
	}
	unsigned flags = strcmp(argv[1], "prefix") ? 0 : MDB_PREFIX_COMPRESSION;
	uint32_t n = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 10) : 1000000;
	int reps = argc > 3 ? atoi(argv[3]) : 1;
	double *r = malloc(sizeof(double) * PHASES * reps);
	for (int i = 0; i < reps; i++) {
		rng_state = 0x9e3779b97f4a7c15u;	/* the same operations every run */
		run(flags, n, r + i * PHASES);
	}
	for (int ph = 0; ph < PHASES; ph++) {
		double col[reps];
		for (int i = 0; i < reps; i++)
			col[i] = r[i * PHASES + ph];
		qsort(col, (size_t)reps, sizeof col[0], cmp_double);
		printf("%s %-8s %8.1f ns/op [%.1f, %.1f]\n", argv[1], phase_name[ph], col[reps / 2], col[0],
			col[reps - 1]);
	}
	free(r);
	return 0;
}
