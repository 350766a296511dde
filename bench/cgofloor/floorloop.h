/*
 * The C side of the cgo-floor benchmark, written once against the LMDB API
 * and included twice: by floor.go after our cdlmdb/lmdb.h (mdb_* renamed to
 * dlmdb_*) and by stock.go after stockapi.h (stock LMDB's mdb_* symbols
 * from lmdb-go). The includer defines FLOOR_RESULT, FLOOR_RUN and
 * FLOOR_ERR, the names Go sees, so the two copies do not collide.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Outcome of one C loop: rc is 0 or the first failing LMDB code, where says
 * which step failed, ns is the loop time, sum an order-sensitive checksum of
 * the values' first 8 bytes and count the number of entries read. */
typedef struct {
	int rc;
	int where;
	uint64_t ns;
	uint64_t sum;
	uint64_t count;
} FLOOR_RESULT;

/* The engine's message for an error code. */
static const char *FLOOR_ERR(int rc) {
	return mdb_strerror(rc);
}

static uint64_t floor_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t floor_tag(const MDB_val *v) {
	uint64_t t = 0;
	if (v->mv_size >= 8)
		memcpy(&t, v->mv_data, 8); /* little-endian hosts, as the Go side */
	return t;
}

/* Opens the environment at path read-only (no TLS, as the Go bindings do),
 * starts a read txn on the main DB and then times either nops random gets
 * of the keys selected by order (passes == 0) or that many full cursor
 * passes over the database (passes > 0). */
static FLOOR_RESULT FLOOR_RUN(const char *path, size_t mapsize,
		const unsigned char *keys, size_t keysize,
		const int32_t *order, size_t nops, int passes) {
	FLOOR_RESULT res = {0, 0, 0, 0, 0};
	MDB_env *env = NULL;
	MDB_txn *txn = NULL;
	MDB_cursor *cur = NULL;
	MDB_dbi dbi;
	MDB_val k, v;
	uint64_t t0, sum = 0, count = 0;
	size_t i;
	int rc;

	if ((rc = mdb_env_create(&env)) != 0) { res.where = 1; goto done; }
	if ((rc = mdb_env_set_mapsize(env, mapsize)) != 0) { res.where = 2; goto done; }
	if ((rc = mdb_env_open(env, path, MDB_NOTLS | MDB_RDONLY, 0644)) != 0) { res.where = 3; goto done; }
	if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) != 0) { res.where = 4; goto done; }
	if ((rc = mdb_dbi_open(txn, NULL, 0, &dbi)) != 0) { res.where = 5; goto done; }
	if (passes > 0) {
		if ((rc = mdb_cursor_open(txn, dbi, &cur)) != 0) { res.where = 6; goto done; }
		t0 = floor_now_ns();
		for (; passes > 0 && rc == 0; passes--) {
			rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
			while (rc == 0) {
				sum = sum * 31 + floor_tag(&v);
				count++;
				rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
			}
			if (rc == MDB_NOTFOUND)
				rc = 0;
		}
		res.ns = floor_now_ns() - t0;
		if (rc != 0)
			res.where = 7;
	} else {
		t0 = floor_now_ns();
		for (i = 0; i < nops; i++) {
			k.mv_size = keysize;
			k.mv_data = (void *)(keys + (size_t)order[i] * keysize);
			if ((rc = mdb_get(txn, dbi, &k, &v)) != 0) { res.where = 8; break; }
			sum = sum * 31 + floor_tag(&v);
			count++;
		}
		res.ns = floor_now_ns() - t0;
	}
done:
	res.rc = rc;
	res.sum = sum;
	res.count = count;
	if (cur) mdb_cursor_close(cur);
	if (txn) mdb_txn_abort(txn);
	if (env) mdb_env_close(env);
	return res;
}
