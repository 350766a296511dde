/*
 * dlmdbgo.h - the thin C layer between package lmdb and the engine.
 *
 * Every helper here is static inline, so no symbol of this file reaches the
 * linker (one binary may also contain github.com/PowerDNS/lmdb-go and its
 * own helpers).  The helpers exist for three reasons:
 *
 *   - Go passes byte strings as (char *, size_t).  A char has no pointers
 *     inside, so cgo does not have to inspect the Go memory at call time,
 *     and with "#cgo noescape" the Go slices need not move to the heap.
 *   - The MDB_val structs the engine reads and writes live on the C stack;
 *     results come back to Go as small structs returned by value, which
 *     costs no Go allocation.
 *   - A key or value the engine did not replace (it still points at the
 *     caller's Go memory) is reported with a flag instead of a pointer, so no
 *     Go pointer ever travels back through C.
 *   - The helpers on hot paths take the engine's handles as dlmdbgo_h, an
 *     integer: cgo checks every pointer-typed argument for Go pointers at
 *     run time, and a transaction or cursor handle is never Go memory.
 */
#ifndef DLMDBGO_H
#define DLMDBGO_H

#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <stdint.h>
#include "lmdb.h"

/* An engine handle (MDB_env *, MDB_txn *, MDB_cursor *) passed as an integer. */
typedef uintptr_t dlmdbgo_h;
#define DLMDBGO_TXN(h) ((MDB_txn *)(h))
#define DLMDBGO_CUR(h) ((MDB_cursor *)(h))

/* Address used for zero-length byte strings: never NULL, never Go memory. */
static char dlmdbgo_empty[1];

static inline void *dlmdbgo_bytes(char *p, size_t n)
{
	return n ? (void *)p : (void *)dlmdbgo_empty;
}

/* A single returned byte string. */
typedef struct {
	int rc;
	size_t len;
	char *data;
} dlmdbgo_item;

/* Flags of dlmdbgo_pair.same: the engine left that side untouched. */
enum { DLMDBGO_SAME_KEY = 1, DLMDBGO_SAME_VAL = 2 };

/* A returned key/value pair. */
typedef struct {
	int rc;
	int same;
	size_t klen;
	char *kdata;
	size_t vlen;
	char *vdata;
} dlmdbgo_pair;

/* ---- items through a transaction ---- */

static inline dlmdbgo_item dlmdbgo_get(dlmdbgo_h txn, MDB_dbi dbi, char *kp, size_t kn)
{
	MDB_val k, v;
	dlmdbgo_item out;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	v.mv_size = 0;
	v.mv_data = NULL;
	out.rc = mdb_get(DLMDBGO_TXN(txn), dbi, &k, &v);
	out.len = out.rc ? 0 : v.mv_size;
	out.data = out.rc ? NULL : (char *)v.mv_data;
	return out;
}

static inline int dlmdbgo_put(dlmdbgo_h txn, MDB_dbi dbi, char *kp, size_t kn,
			      char *vp, size_t vn, unsigned int flags)
{
	MDB_val k, v;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	v.mv_size = vn;
	v.mv_data = dlmdbgo_bytes(vp, vn);
	return mdb_put(DLMDBGO_TXN(txn), dbi, &k, &v, flags);
}

static inline dlmdbgo_item dlmdbgo_reserve(dlmdbgo_h txn, MDB_dbi dbi, char *kp, size_t kn,
					   size_t n, unsigned int flags)
{
	MDB_val k, v;
	dlmdbgo_item out;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	v.mv_size = n;
	v.mv_data = NULL;
	out.rc = mdb_put(DLMDBGO_TXN(txn), dbi, &k, &v, flags | MDB_RESERVE);
	out.len = out.rc ? 0 : v.mv_size;
	out.data = out.rc ? NULL : (char *)v.mv_data;
	return out;
}

/* The value is always handed over (possibly empty), as lmdb-go does. */
static inline int dlmdbgo_del(dlmdbgo_h txn, MDB_dbi dbi, char *kp, size_t kn,
			      char *vp, size_t vn)
{
	MDB_val k, v;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	v.mv_size = vn;
	v.mv_data = dlmdbgo_bytes(vp, vn);
	return mdb_del(DLMDBGO_TXN(txn), dbi, &k, &v);
}

/* ---- handles ---- */

typedef struct {
	int rc;
	MDB_txn *txn;
} dlmdbgo_txn_res;

static inline dlmdbgo_txn_res dlmdbgo_txn_begin(dlmdbgo_h env, dlmdbgo_h parent, unsigned int flags)
{
	dlmdbgo_txn_res out;
	out.txn = NULL;
	out.rc = mdb_txn_begin((MDB_env *)env, DLMDBGO_TXN(parent), flags, &out.txn);
	return out;
}

/* Ending, parking and resuming a transaction; closing and rebinding a
 * cursor: the plain engine calls, with integer handles. */
/* The commit's code, and the code that had failed the txn before (its
 * cause when the commit answers MDB_BAD_TXN), read before the commit frees
 * the txn. */
typedef struct {
	int rc, cause;
} dlmdbgo_commit_res;

static inline dlmdbgo_commit_res dlmdbgo_txn_commit(dlmdbgo_h txn)
{
	dlmdbgo_commit_res r;
	r.cause = mdb_txn_cause(DLMDBGO_TXN(txn));
	r.rc = mdb_txn_commit(DLMDBGO_TXN(txn));
	return r;
}

static inline void dlmdbgo_txn_abort(dlmdbgo_h txn)
{
	mdb_txn_abort(DLMDBGO_TXN(txn));
}

static inline void dlmdbgo_txn_reset(dlmdbgo_h txn)
{
	mdb_txn_reset(DLMDBGO_TXN(txn));
}

static inline int dlmdbgo_txn_renew(dlmdbgo_h txn)
{
	return mdb_txn_renew(DLMDBGO_TXN(txn));
}

static inline void dlmdbgo_txn_fail_busy(dlmdbgo_h txn)
{
	mdb_txn_fail_busy(DLMDBGO_TXN(txn));
}

static inline size_t dlmdbgo_txn_id(dlmdbgo_h txn)
{
	return (size_t)mdb_txn_id(DLMDBGO_TXN(txn));
}

static inline int dlmdbgo_cursor_renew(dlmdbgo_h txn, dlmdbgo_h cur)
{
	return mdb_cursor_renew(DLMDBGO_TXN(txn), DLMDBGO_CUR(cur));
}

static inline void dlmdbgo_cursor_close(dlmdbgo_h cur)
{
	mdb_cursor_close(DLMDBGO_CUR(cur));
}

static inline int dlmdbgo_cursor_del(dlmdbgo_h cur, unsigned int flags)
{
	return mdb_cursor_del(DLMDBGO_CUR(cur), flags);
}

typedef struct {
	int rc;
	MDB_cursor *cur;
} dlmdbgo_cursor_res;

static inline dlmdbgo_cursor_res dlmdbgo_cursor_open(dlmdbgo_h txn, MDB_dbi dbi)
{
	dlmdbgo_cursor_res out;
	out.cur = NULL;
	out.rc = mdb_cursor_open(DLMDBGO_TXN(txn), dbi, &out.cur);
	return out;
}

typedef struct {
	int rc;
	MDB_dbi dbi;
} dlmdbgo_dbi_res;

static inline dlmdbgo_dbi_res dlmdbgo_dbi_open(dlmdbgo_h txn, const char *name, unsigned int flags)
{
	dlmdbgo_dbi_res out;
	out.dbi = 0;
	out.rc = mdb_dbi_open(DLMDBGO_TXN(txn), name, flags, &out.dbi);
	return out;
}

typedef struct {
	int rc;
	unsigned long long n;
} dlmdbgo_num;

static inline dlmdbgo_num dlmdbgo_dbi_flags(dlmdbgo_h txn, MDB_dbi dbi)
{
	dlmdbgo_num out;
	unsigned int f = 0;
	out.rc = mdb_dbi_flags(DLMDBGO_TXN(txn), dbi, &f);
	out.n = f;
	return out;
}

/* ---- cursors ---- */

static inline dlmdbgo_pair dlmdbgo_cursor_get(dlmdbgo_h cur, char *kp, size_t kn,
					      char *vp, size_t vn, int op)
{
	MDB_val k, v;
	void *kin, *vin;
	dlmdbgo_pair out;
	k.mv_size = kn;
	k.mv_data = kin = dlmdbgo_bytes(kp, kn);
	v.mv_size = vn;
	v.mv_data = vin = dlmdbgo_bytes(vp, vn);
	out.rc = mdb_cursor_get(DLMDBGO_CUR(cur), &k, &v, (MDB_cursor_op)op);
	out.same = 0;
	out.klen = out.vlen = 0;
	out.kdata = out.vdata = NULL;
	if (out.rc)
		return out;
	if (k.mv_data == kin)
		out.same |= DLMDBGO_SAME_KEY;
	else {
		out.klen = k.mv_size;
		out.kdata = (char *)k.mv_data;
	}
	if (v.mv_data == vin)
		out.same |= DLMDBGO_SAME_VAL;
	else {
		out.vlen = v.mv_size;
		out.vdata = (char *)v.mv_data;
	}
	return out;
}

static inline int dlmdbgo_cursor_put(dlmdbgo_h cur, char *kp, size_t kn,
				     char *vp, size_t vn, unsigned int flags)
{
	MDB_val k, v;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	v.mv_size = vn;
	v.mv_data = dlmdbgo_bytes(vp, vn);
	return mdb_cursor_put(DLMDBGO_CUR(cur), &k, &v, flags);
}

static inline dlmdbgo_item dlmdbgo_cursor_reserve(dlmdbgo_h cur, char *kp, size_t kn,
						  size_t n, unsigned int flags)
{
	MDB_val k, v;
	dlmdbgo_item out;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	v.mv_size = n;
	v.mv_data = NULL;
	out.rc = mdb_cursor_put(DLMDBGO_CUR(cur), &k, &v, flags | MDB_RESERVE);
	out.len = out.rc ? 0 : v.mv_size;
	out.data = out.rc ? NULL : (char *)v.mv_data;
	return out;
}

/* MDB_MULTIPLE takes two MDB_vals: element size + first element, then the
 * element count (which the engine overwrites with the number stored). */
static inline dlmdbgo_num dlmdbgo_cursor_put_multiple(dlmdbgo_h cur, char *kp, size_t kn,
						      char *page, size_t count, size_t stride,
						      unsigned int flags)
{
	MDB_val k, v[2];
	dlmdbgo_num out;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	v[0].mv_size = stride;
	v[0].mv_data = dlmdbgo_bytes(page, count * stride);
	v[1].mv_size = count;
	v[1].mv_data = NULL;
	out.rc = mdb_cursor_put(DLMDBGO_CUR(cur), &k, v, flags | MDB_MULTIPLE);
	out.n = v[1].mv_size;
	return out;
}

static inline dlmdbgo_num dlmdbgo_cursor_count(dlmdbgo_h cur)
{
	dlmdbgo_num out;
	mdb_size_t n = 0;
	out.rc = mdb_cursor_count(DLMDBGO_CUR(cur), &n);
	out.n = n;
	return out;
}

/* ---- environment ---- */

typedef struct {
	int rc;
	MDB_env *env;
} dlmdbgo_env_res;

static inline dlmdbgo_env_res dlmdbgo_env_create(void)
{
	dlmdbgo_env_res out;
	out.env = NULL;
	out.rc = mdb_env_create(&out.env);
	return out;
}

static inline dlmdbgo_num dlmdbgo_env_fd(MDB_env *env)
{
	dlmdbgo_num out;
	mdb_filehandle_t fd = (mdb_filehandle_t)-1;
	out.rc = mdb_env_get_fd(env, &fd);
	out.n = (unsigned long long)(long long)fd;
	return out;
}

static inline dlmdbgo_num dlmdbgo_env_flags(MDB_env *env)
{
	dlmdbgo_num out;
	unsigned int f = 0;
	out.rc = mdb_env_get_flags(env, &f);
	out.n = f;
	return out;
}

static inline dlmdbgo_num dlmdbgo_env_maxreaders(MDB_env *env)
{
	dlmdbgo_num out;
	unsigned int n = 0;
	out.rc = mdb_env_get_maxreaders(env, &n);
	out.n = n;
	return out;
}

static inline dlmdbgo_num dlmdbgo_reader_check(MDB_env *env)
{
	dlmdbgo_num out;
	int dead = 0;
	out.rc = mdb_reader_check(env, &dead);
	out.n = (unsigned long long)dead;
	return out;
}

typedef struct {
	int rc;
	const char *path;
} dlmdbgo_path_res;

static inline dlmdbgo_path_res dlmdbgo_env_path(MDB_env *env)
{
	dlmdbgo_path_res out;
	out.path = NULL;
	out.rc = mdb_env_get_path(env, &out.path);
	return out;
}

/* The reader table is gathered into one malloc'd buffer: each line the
 * engine reports is stored followed by a NUL, so Go can hand the lines to
 * the user's function one by one without a callback into Go. */
typedef struct {
	char *buf;
	size_t len, cap;
	int nomem;
} dlmdbgo_lines;

static int dlmdbgo_lines_add(const char *msg, void *ctx)
{
	dlmdbgo_lines *l = (dlmdbgo_lines *)ctx;
	size_t n = strlen(msg) + 1;
	if (l->len + n > l->cap) {
		size_t cap = l->cap ? l->cap : 256;
		char *nb;
		while (cap < l->len + n)
			cap *= 2;
		nb = (char *)realloc(l->buf, cap);
		if (nb == NULL) {
			l->nomem = 1;
			return -1;
		}
		l->buf = nb;
		l->cap = cap;
	}
	memcpy(l->buf + l->len, msg, n);
	l->len += n;
	return 0;
}

typedef struct {
	int rc;
	size_t len;
	char *buf;
} dlmdbgo_text;

static inline dlmdbgo_text dlmdbgo_reader_list(MDB_env *env)
{
	dlmdbgo_lines l = { NULL, 0, 0, 0 };
	dlmdbgo_text out;
	out.rc = mdb_reader_list(env, dlmdbgo_lines_add, &l);
	if (l.nomem)
		out.rc = ENOMEM;
	out.len = l.len;
	out.buf = l.buf;
	return out;
}

/* ---- library ---- */

typedef struct {
	int major, minor, patch;
	const char *text;
} dlmdbgo_version_res;

static inline dlmdbgo_version_res dlmdbgo_version(void)
{
	dlmdbgo_version_res out;
	out.text = mdb_version(&out.major, &out.minor, &out.patch);
	return out;
}

/* Structure check: the reason for a failure comes back inline. */
typedef struct {
	int rc;
	char why[400];
} dlmdbgo_check_res;

static inline dlmdbgo_check_res dlmdbgo_txn_check(MDB_txn *txn)
{
	dlmdbgo_check_res out;
	out.why[0] = '\0';
	out.rc = mdb_txn_check(txn, out.why, sizeof(out.why));
	out.why[sizeof(out.why) - 1] = '\0';
	return out;
}

/* ---- order statistics (MDB_COUNTED) ---- */

/* A bound of a counted range: a NULL pointer with has == 0 is open.  The
 * MDB_val lives on the C stack of the helper; only (char *, size_t) cross
 * from Go. */
static inline const MDB_val *dlmdbgo_bound(MDB_val *v, char *p, size_t n, int has)
{
	if (!has)
		return NULL;
	v->mv_size = n;
	v->mv_data = dlmdbgo_bytes(p, n);
	return v;
}

/* which: 0 mdb_count_range, 1 mdb_range_count_keys, 2 mdb_range_count_values,
 * 3 mdb_count_all (bounds unused, flags passed as given). */
static inline dlmdbgo_num dlmdbgo_count(dlmdbgo_h htxn, MDB_dbi dbi, int which,
					char *lp, size_t ln, int haslow,
					char *hp, size_t hn, int hashigh, unsigned int flags)
{
	MDB_txn *txn = DLMDBGO_TXN(htxn);
	MDB_val lo, hi;
	const MDB_val *plo, *phi;
	uint64_t n = 0;
	dlmdbgo_num out;
	plo = dlmdbgo_bound(&lo, lp, ln, haslow);
	phi = dlmdbgo_bound(&hi, hp, hn, hashigh);
	switch (which) {
	case 0:
		out.rc = mdb_count_range(txn, dbi, plo, phi, flags, &n);
		break;
	case 1:
		out.rc = mdb_range_count_keys(txn, dbi, plo, phi, flags, &n);
		break;
	case 2:
		out.rc = mdb_range_count_values(txn, dbi, plo, phi, flags, &n);
		break;
	default:
		out.rc = mdb_count_all(txn, dbi, flags, &n);
		break;
	}
	out.n = out.rc ? 0 : (unsigned long long)n;
	return out;
}

/* The pair at a rank: through the transaction (cur NULL) or moving cur. */
static inline dlmdbgo_pair dlmdbgo_get_rank(dlmdbgo_h htxn, MDB_dbi dbi, dlmdbgo_h hcur,
					    unsigned long long rank)
{
	MDB_txn *txn = DLMDBGO_TXN(htxn);
	MDB_cursor *cur = DLMDBGO_CUR(hcur);
	MDB_val k, v;
	dlmdbgo_pair out;
	k.mv_size = v.mv_size = 0;
	k.mv_data = v.mv_data = NULL;
	if (cur)
		out.rc = mdb_cursor_get_rank(cur, (uint64_t)rank, &k, &v, 0);
	else
		out.rc = mdb_get_rank(txn, dbi, (uint64_t)rank, &k, &v);
	out.same = 0;
	out.klen = out.rc ? 0 : k.mv_size;
	out.kdata = out.rc ? NULL : (char *)k.mv_data;
	out.vlen = out.rc ? 0 : v.mv_size;
	out.vdata = out.rc ? NULL : (char *)v.mv_data;
	return out;
}

/* The rank of a key (hasval == 0: no data argument, NULL) or of a pair,
 * through the transaction (cur NULL) or a cursor. */
static inline dlmdbgo_num dlmdbgo_key_rank(dlmdbgo_h htxn, MDB_dbi dbi, dlmdbgo_h hcur,
					   char *kp, size_t kn, char *vp, size_t vn, int hasval)
{
	MDB_txn *txn = DLMDBGO_TXN(htxn);
	MDB_cursor *cur = DLMDBGO_CUR(hcur);
	MDB_val k, v;
	const MDB_val *pv;
	uint64_t r = 0;
	dlmdbgo_num out;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	pv = dlmdbgo_bound(&v, vp, vn, hasval);
	if (cur)
		out.rc = mdb_cursor_key_rank(cur, &k, pv, 0, &r);
	else
		out.rc = mdb_get_key_rank(txn, dbi, &k, pv, &r);
	out.n = out.rc ? 0 : (unsigned long long)r;
	return out;
}


/* ---- bulk duplicate reads (listdup.go) ---- */
typedef struct {
	int rc;
	const MDB_val *vals;
	size_t count;
	size_t total;	/* bytes of all values together */
} dlmdbgo_dups;

/* Every duplicate of the key under the cursor (mdb_cursor_list_dup), with
 * the sum of their sizes so Go can copy them into one allocation. */
static inline dlmdbgo_dups dlmdbgo_list_dup(dlmdbgo_h hcur)
{
	dlmdbgo_dups out;
	mdb_size_t n = 0;
	out.vals = NULL;
	out.total = 0;
	out.rc = mdb_cursor_list_dup(DLMDBGO_CUR(hcur), &out.vals, &n);
	out.count = out.rc ? 0 : (size_t)n;
	for (size_t i = 0; i < out.count; i++)
		out.total += out.vals[i].mv_size;
	return out;
}

/* The duplicates as runs of one width (mdb_cursor_list_dup_fixed): vals
 * holds count runs, total their bytes, nvals the number of values. */
typedef struct {
	int rc;
	const MDB_val *vals;
	size_t count;
	size_t total;
	size_t width;
	size_t nvals;
} dlmdbgo_runs;

static inline dlmdbgo_runs dlmdbgo_list_dup_fixed(dlmdbgo_h hcur)
{
	dlmdbgo_runs out;
	mdb_size_t n = 0, nv = 0;
	size_t w = 0;
	out.vals = NULL;
	out.total = 0;
	out.rc = mdb_cursor_list_dup_fixed(DLMDBGO_CUR(hcur), &out.vals, &n, &w, &nv);
	out.count = out.rc ? 0 : (size_t)n;
	out.width = out.rc ? 0 : w;
	out.nvals = out.rc ? 0 : (size_t)nv;
	for (size_t i = 0; i < out.count; i++)
		out.total += out.vals[i].mv_size;
	return out;
}

/* ---- batched cursor reads (scan.go) ---- */
typedef struct {
	int rc;
	const MDB_val *keys, *vals;
	size_t count;
	size_t total;	/* bytes of all keys and values together (get_batch: when asked) */
} dlmdbgo_batch;

static inline dlmdbgo_batch dlmdbgo_get_batch(dlmdbgo_h hcur, int op, char *kp, size_t kn,
					      size_t max, char *ep, size_t en, int hasend, unsigned flags,
					      int total)
{
	dlmdbgo_batch out;
	mdb_size_t n = 0;
	MDB_val k, e;
	k.mv_size = kn;
	k.mv_data = dlmdbgo_bytes(kp, kn);
	e.mv_size = en;
	e.mv_data = dlmdbgo_bytes(ep, en);
	out.keys = out.vals = NULL;
	out.total = 0;
	out.rc = mdb_cursor_get_batch(DLMDBGO_CUR(hcur), (MDB_cursor_op)op, &k, max, hasend ? &e : NULL,
		flags, &out.keys, &out.vals, &n);
	out.count = out.rc ? 0 : (size_t)n;
	for (size_t i = 0; total && i < out.count; i++)
		out.total += out.keys[i].mv_size + out.vals[i].mv_size;
	return out;
}


/* The values of n keys given as one buffer of their bytes and their lengths
 * (Go memory holding no pointers), through mdb_cursor_get_many. */
static inline dlmdbgo_batch dlmdbgo_get_many(dlmdbgo_h hcur, char *flat, size_t *lens, size_t n)
{
	dlmdbgo_batch out;
	mdb_size_t found = 0;
	out.keys = NULL;
	out.vals = NULL;
	out.count = 0;
	out.total = 0;
	MDB_val *ks = malloc((n ? n : 1) * sizeof *ks);
	if (!ks) {
		out.rc = ENOMEM;
		return out;
	}
	for (size_t i = 0, off = 0; i < n; off += lens[i], i++) {
		ks[i].mv_size = lens[i];
		ks[i].mv_data = flat + off;
	}
	out.rc = mdb_cursor_get_many(DLMDBGO_CUR(hcur), ks, n, &out.vals, &found);
	free(ks);
	if (out.rc)
		return out;
	out.count = (size_t)found;
	for (size_t i = 0; i < n; i++)
		out.total += out.vals[i].mv_size;
	return out;
}

#endif /* DLMDBGO_H */
