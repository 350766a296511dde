/*
 * batchbench.c - a profiling driver for mdb_cursor_get_batch (not a test,
 * not in `make run`): full scans of a 1,000,000-entry DB, batched or one
 * mdb_cursor_get per entry, for callgrind's instruction counts.
 * `make build/batchbench` builds it at -O2 as cgo builds the engine.
 *
 *   batchbench load KIND DIR          make the DB (run natively)
 *   batchbench scan KIND DIR HOW DIR2 scan it: HOW is batch or get, DIR2 fwd
 *                                     or back
 *
 * KIND: plain (16-byte keys, 100-byte values), prefix (the same,
 * prefix-compressed), dupsort (100,000 keys of 10 values of 16 bytes:
 * inline sub-pages), dupsub (1,000 keys of 1,000 values: sub-trees),
 * dupfixed (dupsub with 8-byte DUPFIXED values), dupprefix (dupsort,
 * prefix-compressed).  Only scan() does the work callgrind should count:
 *   valgrind --tool=callgrind --toggle-collect=scan build/batchbench scan ...
 */
#include "../lmdb.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x) do { int _rc = (x); if (_rc) { fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, \
	__LINE__, #x, mdb_strerror(_rc)); exit(2); } } while (0)

#define ENTRIES 1000000u

struct kind {
	const char *name;
	unsigned flags, keys, vsize;
};

static const struct kind kinds[] = {
	{"plain", 0, ENTRIES, 100},
	{"prefix", MDB_PREFIX_COMPRESSION, ENTRIES, 100},
	{"dupsort", MDB_DUPSORT, ENTRIES / 10, 16},
	{"dupsub", MDB_DUPSORT, ENTRIES / 1000, 16},
	{"dupfixed", MDB_DUPSORT | MDB_DUPFIXED, ENTRIES / 1000, 8},
	{"dupprefix", MDB_DUPSORT | MDB_PREFIX_COMPRESSION, ENTRIES / 10, 16},
};

static void put_num(char *b, unsigned len, uint64_t x)
{
	for (unsigned i = len; i-- > 0; x /= 10)
		b[i] = (char)('0' + x % 10);
}

static void load(const struct kind *k, MDB_env *env)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	CHECK(mdb_txn_begin(env, NULL, 0, &txn));
	CHECK(mdb_dbi_open(txn, "b", k->flags | MDB_CREATE, &dbi));
	unsigned per = ENTRIES / k->keys;
	char kb[16], vb[100];
	for (unsigned i = 0; i < k->keys; i++) {
		put_num(kb, 16, i);
		for (unsigned j = 0; j < per; j++) {
			memset(vb, 'v', sizeof vb);
			put_num(vb, k->vsize < 16 ? k->vsize : 16, (uint64_t)j * 7919 + i);
			MDB_val key = {16, kb}, val = {k->vsize, vb};
			CHECK(mdb_put(txn, dbi, &key, &val, (k->flags & MDB_DUPSORT) ? 0 : MDB_APPEND));
		}
	}
	CHECK(mdb_txn_commit(txn));
}

__attribute__((noinline)) static uint64_t scan(MDB_cursor *c, int batch, int back, uint64_t *count)
{
	uint64_t sum = 0, n = 0;
	if (batch) {
		const MDB_val *ks, *vs;
		mdb_size_t got;
		MDB_cursor_op op = back ? MDB_LAST : MDB_FIRST;
		for (;;) {
			int rc = mdb_cursor_get_batch(c, op, NULL, 256, NULL, 0, &ks, &vs, &got);
			if (rc == MDB_NOTFOUND)
				break;
			CHECK(rc);
			for (mdb_size_t i = 0; i < got; i++)
				sum = sum * 31 + ((const unsigned char *)vs[i].mv_data)[vs[i].mv_size - 1] +
					((const unsigned char *)ks[i].mv_data)[ks[i].mv_size - 1];
			n += got;
			if (got < 256)
				break;
			op = back ? MDB_PREV : MDB_NEXT;
		}
	} else {
		MDB_val k, v;
		MDB_cursor_op op = back ? MDB_LAST : MDB_FIRST;
		int rc;
		while ((rc = mdb_cursor_get(c, &k, &v, op)) == 0) {
			sum = sum * 31 + ((const unsigned char *)v.mv_data)[v.mv_size - 1] +
				((const unsigned char *)k.mv_data)[k.mv_size - 1];
			n++;
			op = back ? MDB_PREV : MDB_NEXT;
		}
		if (rc != MDB_NOTFOUND)
			CHECK(rc);
	}
	*count = n;
	return sum;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: batchbench load|scan KIND DIR [batch|get fwd|back]\n");
		return 2;
	}
	const struct kind *k = NULL;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strcmp(argv[2], kinds[i].name))
			k = &kinds[i];
	if (!k) {
		fprintf(stderr, "unknown kind %s\n", argv[2]);
		return 2;
	}
	MDB_env *env;
	CHECK(mdb_env_create(&env));
	CHECK(mdb_env_set_maxdbs(env, 2));
	CHECK(mdb_env_set_mapsize(env, (size_t)1 << 30));
	CHECK(mdb_env_open(env, argv[3], MDB_NOSYNC, 0644));
	if (!strcmp(argv[1], "load")) {
		load(k, env);
		mdb_env_close(env);
		return 0;
	}
	int batch = argc > 4 && !strcmp(argv[4], "batch");
	int back = argc > 5 && !strcmp(argv[5], "back");
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	CHECK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	CHECK(mdb_dbi_open(txn, "b", 0, &dbi));
	CHECK(mdb_cursor_open(txn, dbi, &c));
	uint64_t n, sum = scan(c, batch, back, &n);
	printf("%s %s %s: %llu entries, checksum %016llx\n", k->name, batch ? "batch" : "get",
		back ? "back" : "fwd", (unsigned long long)n, (unsigned long long)sum);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	return n == ENTRIES ? 0 : 1;
}
