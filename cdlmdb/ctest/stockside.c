/*
 * stockside.c - the stock LMDB 0.9.33 half of the compatibility test.
 * Compiled against upstream's lmdb.h and linked with upstream mdb.c/midl.c
 * (symbols mdb_*), next to our engine (symbols dlmdb_*).  Only plain C
 * types cross between the halves.
 */
#include "lmdb.h" /* upstream header: -I points at the lmdb-go module */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

int stock_version(void)
{
	int maj, min, pat;
	mdb_version(&maj, &min, &pat);
	return maj * 10000 + min * 100 + pat;
}

/* FNV-1a over all (key, value) pairs of one DB in order. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

int stock_digest(const char *dir, const char *name, unsigned flags, uint64_t *hash, size_t *count,
	int *errout)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	int rc = mdb_env_create(&env);
	if (rc)
		return rc;
	mdb_env_set_maxdbs(env, 16);
	mdb_env_set_mapsize(env, (size_t)256 << 20);
	if ((rc = mdb_env_open(env, dir, MDB_RDONLY, 0644)))
		goto out;
	if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)))
		goto out;
	if ((rc = mdb_dbi_open(txn, name, flags, &dbi)) || (rc = mdb_cursor_open(txn, dbi, &c))) {
		mdb_txn_abort(txn);
		goto out;
	}
	uint64_t h = 1469598103934665603ull;
	size_t n = 0;
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		uint64_t ks = k.mv_size, vs = v.mv_size;
		h = fnv(h, &ks, 8);
		h = fnv(h, k.mv_data, k.mv_size);
		h = fnv(h, &vs, 8);
		h = fnv(h, v.mv_data, v.mv_size);
		n++;
	}
	if (rc == MDB_NOTFOUND)
		rc = 0;
	MDB_stat st;
	if (!rc && !(rc = mdb_stat(txn, dbi, &st)) && st.ms_entries != n)
		rc = -1;
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	*hash = h;
	*count = n;
out:
	*errout = rc;
	mdb_env_close(env);
	return rc;
}

/* Random writes by stock LMDB (same generator idea as ours, own copy). */
static uint64_t sm(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

int stock_scribble(const char *dir, const char *name, unsigned flags, uint64_t seed, int txns,
	int ops)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	static unsigned char vb[20000];
	char kb[64];
	int rc = mdb_env_create(&env);
	if (rc)
		return rc;
	mdb_env_set_maxdbs(env, 16);
	mdb_env_set_mapsize(env, (size_t)256 << 20);
	if ((rc = mdb_env_open(env, dir, 0, 0644)))
		goto out;
	for (int t = 0; t < txns && !rc; t++) {
		if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
			break;
		if ((rc = mdb_dbi_open(txn, name, flags | MDB_CREATE, &dbi))) {
			mdb_txn_abort(txn);
			break;
		}
		for (int i = 0; i < ops && !rc; i++) {
			uint64_t r = sm(&seed);
			unsigned id = (unsigned)(r % 3000);
			MDB_val k, v;
			k.mv_size = (size_t)snprintf(kb, sizeof kb, "s%u-%0*u", id, (int)(id % 40), id);
			k.mv_data = kb;
			if ((r >> 20) % 4 == 0) {
				rc = mdb_del(txn, dbi, &k, NULL);
				if (rc == MDB_NOTFOUND)
					rc = 0;
			} else {
				v.mv_size = ((r >> 24) % 20 == 0) ? 3000 + (r >> 40) % 9000 : (r >> 32) % 200;
				if (flags & MDB_DUPSORT)
					v.mv_size = 1 + (r >> 32) % 100;
				memset(vb, (int)(r & 0xff), v.mv_size);
				if (flags & MDB_DUPSORT)
					snprintf((char *)vb, v.mv_size + 1 < 20 ? v.mv_size + 1 : 20, "%u", (unsigned)(r >> 40));
				v.mv_data = vb;
				rc = mdb_put(txn, dbi, &k, &v, 0);
			}
		}
		if (rc)
			mdb_txn_abort(txn);
		else
			rc = mdb_txn_commit(txn);
	}
out:
	mdb_env_close(env);
	return rc;
}

/* Stock LMDB thins out the duplicates of a DUPSORT DB: in each of txns
 * txns, about a third of the keys lose 1..8 values each, never their last
 * one (so stock shrinks sub-pages but deletes no node of the leaf).
 * *deleted counts the values removed. */
int stock_thin_dups(const char *dir, const char *name, unsigned flags, uint64_t seed, int txns,
	size_t *deleted)
{
	MDB_env *env;
	int rc = mdb_env_create(&env);
	if (rc)
		return rc;
	mdb_env_set_maxdbs(env, 16);
	mdb_env_set_mapsize(env, (size_t)256 << 20);
	if ((rc = mdb_env_open(env, dir, 0, 0644)))
		goto out;
	for (int t = 0; t < txns && !rc; t++) {
		MDB_txn *txn;
		MDB_dbi dbi;
		MDB_cursor *c;
		MDB_val k, v;
		if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
			break;
		if ((rc = mdb_dbi_open(txn, name, flags, &dbi)) || (rc = mdb_cursor_open(txn, dbi, &c))) {
			mdb_txn_abort(txn);
			break;
		}
		for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP)) {
			size_t cnt;
			if ((rc = mdb_cursor_count(c, &cnt)))
				break;
			if (cnt < 2 || sm(&seed) % 3)
				continue;
			unsigned ndel = 1 + (unsigned)(sm(&seed) % (cnt - 1 < 8 ? cnt - 1 : 8));
			for (unsigned d = 0; d < ndel && !rc; d++, cnt--) {
				unsigned j = (unsigned)(sm(&seed) % cnt);
				rc = mdb_cursor_get(c, &k, &v, MDB_FIRST_DUP);
				for (unsigned s = 0; s < j && !rc; s++)
					rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP);
				if (!rc)
					rc = mdb_cursor_del(c, 0);
				if (!rc)
					(*deleted)++;
			}
			if (rc)
				break;
		}
		if (rc == MDB_NOTFOUND)
			rc = 0;
		mdb_cursor_close(c);
		if (rc)
			mdb_txn_abort(txn);
		else
			rc = mdb_txn_commit(txn);
	}
out:
	mdb_env_close(env);
	return rc;
}

/* Keep a stock environment open (for mixed-open detection). */
void *stock_hold(const char *dir)
{
	MDB_env *env;
	if (mdb_env_create(&env))
		return NULL;
	if (mdb_env_open(env, dir, 0, 0644)) {
		mdb_env_close(env);
		return NULL;
	}
	return env;
}

void stock_release(void *h)
{
	if (h)
		mdb_env_close(h);
}

/* Try to open with stock LMDB; returns its error code. */
int stock_try_open(const char *dir)
{
	MDB_env *env;
	int rc = mdb_env_create(&env);
	if (rc)
		return rc;
	rc = mdb_env_open(env, dir, 0, 0644);
	mdb_env_close(env);
	return rc;
}

#define PFX(x) stockd_##x
#include "diffops.inc"
