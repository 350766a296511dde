/*
 * leafstep_test.c - a walk from one DUPFIXED sub-tree leaf to the next
 * checks that the two leaves lie on either side of their separator
 * (cursor.c, dlmdb_cur_step_leaf).  8-byte values under the byte order
 * and under INTEGERDUP take an integer path for that check; this test
 * damages a leaf's edge value on disk and expects every walk that crosses
 * the damaged edge (NEXT_DUP, PREV_DUP, GET/NEXT_MULTIPLE, list_dup) to
 * answer MDB_CORRUPTED, and the same walks over the undamaged file to see
 * every value in order.
 */
#include "testutil.h"
#include <unistd.h>

#define DIR "build/leafstep_test.db"
enum { NVALS = 2000 };

/* Value i: i in the high half, ~i in the low one, so that reading the
 * bytes in the wrong order would order the values differently. */
static uint64_t val_of(uint64_t i)
{
	return i << 32 | (0xffffffffu - i);
}

static uint64_t enc_val(uint64_t x, int native)
{
	if (native)
		return x;
	uint64_t be = 0;
	for (int i = 0; i < 8; i++)
		((unsigned char *)&be)[i] = (unsigned char)(x >> (56 - 8 * i));
	return be;
}

static uint64_t dec_val(const void *p, int native)
{
	uint64_t x;
	memcpy(&x, p, 8);
	if (native)
		return x;
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | ((const unsigned char *)p)[i];
	return v;
}

static void build(unsigned flags, int native, unsigned *psize)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	tu_fresh_dir(DIR);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));
	MUST(mdb_env_open(env, DIR, 0, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "d", MDB_CREATE | flags, &dbi));
	MDB_val k = {1, "k"};
	for (uint64_t i = 0; i < NVALS; i++) {
		uint64_t v = enc_val(val_of(i), native);
		MDB_val d = {8, &v};
		MUST(mdb_put(txn, dbi, &k, &d, 0));
	}
	MUST(mdb_txn_commit(txn));
	MDB_stat st;
	MUST(mdb_env_stat(env, &st));
	*psize = st.ms_psize;
	mdb_env_close(env);
}

/* The sub-tree's LEAF2 leaves in the file, by first value: offsets of the
 * second and third (a walk checks the leaves at either end against their
 * path as it enters them; these two meet only in a step from one to the
 * other).  One write txn built the file, so every such page is live. */
static void two_leaves(const unsigned char *img, size_t len, unsigned psize, int native, size_t *a,
	size_t *b)
{
	size_t off[64];
	int n = 0;
	for (size_t o = 2 * (size_t)psize; o + psize <= len; o += psize) {
		uint16_t pad, flags, lower;
		memcpy(&pad, img + o + 8, 2);
		memcpy(&flags, img + o + 10, 2);
		memcpy(&lower, img + o + 12, 2);
		if ((flags & 0x20) && !(flags & 0x40) && pad == 8 && lower > 16 && n < 64)
			off[n++] = o;
	}
	if (n < 4) {
		fprintf(stderr, "leafstep_test: %d LEAF2 leaves, want a sub-tree of four or more\n", n);
		exit(2);
	}
	/* sort by first value (a handful of pages) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && dec_val(img + off[j] + 16, native) < dec_val(img + off[j - 1] + 16, native); j--) {
			size_t t = off[j];
			off[j] = off[j - 1];
			off[j - 1] = t;
		}
	*a = off[1];
	*b = off[2];
}

static void set_val(unsigned char *img, size_t pg, unsigned idx, uint64_t x, int native)
{
	uint64_t v = enc_val(x, native);
	memcpy(img + pg + 16 + (size_t)idx * 8, &v, 8);
}

static unsigned nvals(const unsigned char *img, size_t pg)
{
	uint16_t lower;
	memcpy(&lower, img + pg + 12, 2);
	return (lower - 16u) / 2;
}

/*
 * One walk over key "k" in its own read txn (a damaged page fails the txn):
 * mode 0 NEXT_DUP from the first value, 1 PREV_DUP from the last, 2
 * GET_MULTIPLE then NEXT_MULTIPLE, 3 list_dup.  Returns the code the walk
 * ended with (MDB_NOTFOUND at the end of the values, 0 for list_dup) and
 * the values it saw in *seen, checked to ascend (descend) on the way.
 */
static int walk(MDB_env *env, MDB_dbi dbi, int native, int mode, unsigned *seen)
{
	MDB_txn *txn;
	MDB_cursor *c;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_cursor_open(txn, dbi, &c));
	MDB_val k = {1, "k"}, d;
	uint64_t prev = 0;
	*seen = 0;
	int rc = mdb_cursor_get(c, &k, &d, MDB_SET_KEY);
	if (rc == 0 && mode == 1)
		rc = mdb_cursor_get(c, &k, &d, MDB_LAST_DUP);
	if (rc == 0 && mode == 2)
		rc = mdb_cursor_get(c, &k, &d, MDB_GET_MULTIPLE);
	if (rc == 0 && mode == 3) {
		const MDB_val *vals;
		mdb_size_t cnt = 0;
		rc = mdb_cursor_list_dup(c, &vals, &cnt);
		for (mdb_size_t i = 0; rc == 0 && i < cnt; i++) {
			uint64_t x = dec_val(vals[i].mv_data, native);
			EXPECT(i == 0 || x > prev);
			prev = x;
		}
		*seen = (unsigned)cnt;
	}
	while (rc == 0 && mode < 3) {
		if (mode == 2) {
			EXPECT(k.mv_size == 1 && !memcmp(k.mv_data, "k", 1) && d.mv_size % 8 == 0);
			for (size_t o = 0; o < d.mv_size; o += 8) {
				uint64_t x = dec_val((char *)d.mv_data + o, native);
				EXPECT(*seen == 0 || x > prev);
				prev = x;
				++*seen;
			}
		} else {
			uint64_t x = dec_val(d.mv_data, native);
			EXPECT(*seen == 0 || (mode == 0 ? x > prev : x < prev));
			prev = x;
			++*seen;
		}
		rc = mdb_cursor_get(c, &k, &d, mode == 0 ? MDB_NEXT_DUP : mode == 1 ? MDB_PREV_DUP :
			MDB_NEXT_MULTIPLE);
	}
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	return rc;
}

static void walks(unsigned flags, int native, int damaged, const char *what)
{
	static const char *mode_name[] = {"NEXT_DUP", "PREV_DUP", "GET/NEXT_MULTIPLE", "list_dup"};
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));
	MUST(mdb_env_open(env, DIR, MDB_RDONLY, 0644));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_dbi_open(txn, "d", flags, &dbi));
	MUST(mdb_txn_commit(txn));
	for (int mode = 0; mode < 4; mode++) {
		unsigned seen;
		int rc = walk(env, dbi, native, mode, &seen);
		int want = damaged ? MDB_CORRUPTED : mode == 3 ? 0 : MDB_NOTFOUND;
		if (rc != want)
			fprintf(stderr, "leafstep_test %s: %s walk ended with %s after %u values\n", what,
				mode_name[mode], mdb_strerror(rc), seen);
		EXPECT(rc == want);
		EXPECT(damaged || seen == NVALS);
	}
	mdb_env_close(env);
}

static void run(unsigned flags, int native, const char *name)
{
	unsigned psize;
	for (int kind = 0; kind < 3; kind++) {
		build(flags, native, &psize);
		size_t len, a, b;
		unsigned char *img = tu_read_file(DIR "/data.mdb", &len);
		two_leaves(img, len, psize, native, &a, &b);
		unsigned na = nvals(img, a);
		uint64_t sep = dec_val(img + b + 16, native);	/* B's first value is its separator */
		EXPECT(dec_val(img + a + 16 + (size_t)(na - 1) * 8, native) < sep);
		char what[96];
		switch (kind) {
		case 0:
			snprintf(what, sizeof what, "%s, undamaged", name);
			break;
		case 1:	/* A's last value at or past the separator: still in order within A */
			set_val(img, a, na - 1, sep, native);
			snprintf(what, sizeof what, "%s, left leaf's last value = separator", name);
			break;
		case 2:	/* B's first value below its separator (still above A's last) */
			set_val(img, b, 0, sep - 1, native);
			snprintf(what, sizeof what, "%s, right leaf's first value below separator", name);
			break;
		}
		tu_write_file(DIR "/data.mdb", img, len);
		free(img);
		walks(flags, native, kind != 0, what);
	}
}

int main(void)
{
	run(MDB_DUPSORT | MDB_DUPFIXED, 0, "DUPFIXED (byte order)");
	run(MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP, 1, "DUPFIXED|INTEGERDUP (native)");
	run(MDB_DUPSORT | MDB_DUPFIXED | MDB_COUNTED, 0, "DUPFIXED|COUNTED");
	return tu_finish("leafstep_test");
}
