/*
 * writemap_test.c - MDB_WRITEMAP writes pages in place; MDB_FIXEDMAP keeps
 * the map at the address the file records.
 *
 * The WRITEMAP workload runs one random sequence (printed seed) on two
 * environments side by side: the subject, opened with WRITEMAP (plus
 * MAPASYNC or NOSYNC in some rounds), and a twin opened without it.  Every
 * operation must give the same answer on both; write txns commit or abort
 * at random, and after each one both environments must hold the same items
 * and pass mdb_txn_check.  The subject is closed and reopened now and then,
 * alternately without WRITEMAP and with it.  Then: a small WRITEMAP map
 * filled up to MDB_MAP_FULL, grown with mdb_env_set_mapsize while open, and
 * written on; and the proof that a WRITEMAP txn's pages are the map itself
 * (a value read back in the txn that put it points into the data file's
 * mapping, and without WRITEMAP it does not).  FIXEDMAP: the address is
 * recorded where stock LMDB keeps it (stock, linked in, reads it back),
 * the map lands on it again, EBUSY when something else is there.
 * Usage: writemap_test [seed]
 */
#include "testutil.h"
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#define DIR_SUB "build/wmap_sub"
#define DIR_TWIN "build/wmap_twin"
#define DIR_FIX "build/wmap_fix"
#define DIR_FIXCOPY "build/wmap_fixcopy"
#define DIR_GROW "build/wmap_grow"
#define DIR_PROOF "build/wmap_proof"
#define NKEYS 700

static unsigned char vbuf[40000];

/* Stock LMDB 0.9.33 is linked in too (its symbols are the plain mdb_*
 * names, ours are dlmdb_*): a few of its entry points under names of
 * their own.  Only opaque handles and MDB_envinfo, laid out alike in both
 * headers, cross over. */
int stock_env_create(MDB_env **env) __asm__("mdb_env_create");
int stock_env_set_mapsize(MDB_env *env, size_t size) __asm__("mdb_env_set_mapsize");
int stock_env_open(MDB_env *env, const char *path, unsigned flags, mdb_mode_t mode) __asm__("mdb_env_open");
int stock_env_info(MDB_env *env, MDB_envinfo *info) __asm__("mdb_env_info");
void stock_env_close(MDB_env *env) __asm__("mdb_env_close");

/* ---- helpers -------------------------------------------------------------------- */

/* Does [p, p+len) lie inside a mapping of the file at path (per /proc)? */
static int in_file_mapping(const char *path, const void *p, size_t len)
{
	char want[PATH_MAX];
	if (!realpath(path, want))
		return 0;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 0;
	char line[PATH_MAX + 256];
	int found = 0;
	uintptr_t a = (uintptr_t)p;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		int off = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) < 2 || !off)
			continue;
		char *name = line + off;
		name[strcspn(name, "\n")] = 0;
		if (strcmp(name, want) == 0 && a >= lo && a + len <= hi)
			found = 1;
	}
	fclose(f);
	return found;
}

/* Is any byte of [addr, addr+len) mapped by anything (per /proc)? */
static int range_occupied(uintptr_t addr, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 1;
	char line[PATH_MAX + 256];
	int hit = 0;
	while (!hit && fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo < addr + len && hi > addr)
			hit = 1;
	}
	fclose(f);
	return hit;
}

/* The 8-byte map address field (offset 24) of meta page i of a data file. */
static uint64_t file_meta_address(const char *datafile, int i, unsigned psize)
{
	uint64_t v = ~0ull;
	int fd = open(datafile, O_RDONLY);
	if (fd < 0)
		return v;
	if (pread(fd, &v, sizeof v, (off_t)i * psize + 24) != (ssize_t)sizeof v)
		v = ~0ull;
	close(fd);
	return v;
}

static void fill_value(unsigned char *b, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t r = tu_next(&seed);
		size_t m = len - i < 8 ? len - i : 8;
		memcpy(b + i, &r, m);
	}
}

static size_t make_key(char *k, unsigned id)
{
	return (size_t)snprintf(k, 32, "key%05u", id);
}

static size_t pick_vlen(uint64_t *s)
{
	unsigned r = tu_below(s, 100);
	if (r < 70)
		return tu_below(s, 120);
	if (r < 90)
		return 200 + tu_below(s, 1600);
	return 2100 + tu_below(s, 30000);	/* overflow pages */
}

static MDB_env *open_env(const char *dir, unsigned flags, size_t mapsize)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_set_mapsize(env, mapsize));
	int rc = mdb_env_open(env, dir, flags, 0644);
	if (rc) {
		fprintf(stderr, "open %s (flags %#x): %s\n", dir, flags, mdb_strerror(rc));
		exit(2);
	}
	return env;
}

typedef struct side {
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi plain, dups;
} side;

static void side_dbis(side *s)
{
	MDB_txn *t;
	MUST(mdb_txn_begin(s->env, NULL, 0, &t));
	MUST(mdb_dbi_open(t, "plain", MDB_CREATE, &s->plain));
	MUST(mdb_dbi_open(t, "dups", MDB_CREATE | MDB_DUPSORT, &s->dups));
	MUST(mdb_txn_commit(t));
}

/* Both sides hold the same items (compared in a read txn each), and the
 * checker is happy with both. */
static int same_contents(side *a, side *b, const char *when)
{
	MDB_txn *ta, *tb;
	int ok = 1;
	MUST(mdb_txn_begin(a->env, NULL, MDB_RDONLY, &ta));
	MUST(mdb_txn_begin(b->env, NULL, MDB_RDONLY, &tb));
	char msg[256];
	int rc = mdb_txn_check(ta, msg, sizeof msg);
	EXPECT_RC(rc, 0);
	if (rc) {
		fprintf(stderr, "%s: check of the WRITEMAP env: %s\n", when, msg);
		ok = 0;
	}
	EXPECT_RC(mdb_txn_check(tb, msg, sizeof msg), 0);
	MDB_dbi da[2] = {a->plain, a->dups}, db[2] = {b->plain, b->dups};
	for (int d = 0; d < 2; d++) {
		MDB_cursor *ca, *cb;
		MUST(mdb_cursor_open(ta, da[d], &ca));
		MUST(mdb_cursor_open(tb, db[d], &cb));
		MDB_val ka, va, kb, vb;
		size_t n = 0;
		for (;;) {
			int ra = mdb_cursor_get(ca, &ka, &va, MDB_NEXT);
			int rb = mdb_cursor_get(cb, &kb, &vb, MDB_NEXT);
			if (ra != rb) {
				fprintf(stderr, "%s: db %d item %zu: cursor rc %d vs %d\n", when, d, n, ra, rb);
				ok = 0;
				break;
			}
			if (ra)
				break;
			if (ka.mv_size != kb.mv_size || memcmp(ka.mv_data, kb.mv_data, ka.mv_size) ||
			    va.mv_size != vb.mv_size || memcmp(va.mv_data, vb.mv_data, va.mv_size)) {
				fprintf(stderr, "%s: db %d item %zu differs\n", when, d, n);
				ok = 0;
				break;
			}
			n++;
		}
		mdb_cursor_close(ca);
		mdb_cursor_close(cb);
	}
	MDB_stat sa, sb;
	MUST(mdb_stat(ta, a->plain, &sa));
	MUST(mdb_stat(tb, b->plain, &sb));
	EXPECT(sa.ms_entries == sb.ms_entries);
	mdb_txn_abort(ta);
	mdb_txn_abort(tb);
	EXPECT(ok);
	return ok;
}

/* One random operation on both sides inside their write txns; the answers
 * must agree.  Returns 0, or an error code both sides gave that fails the
 * txn (never expected here). */
static void random_op(side *a, side *b, uint64_t *s, unsigned step)
{
	char key[32];
	size_t kl = make_key(key, tu_below(s, NKEYS));
	MDB_val k = {kl, key};
	unsigned what = tu_below(s, 100);
	side *sd[2] = {a, b};
	int rc[2];
	if (what < 35) {	/* put, sometimes NOOVERWRITE or RESERVE */
		size_t vl = pick_vlen(s);
		uint64_t vs = tu_next(s);
		unsigned fl = tu_below(s, 6) == 0 ? MDB_NOOVERWRITE : 0;
		int reserve = tu_below(s, 8) == 0;
		fill_value(vbuf, vl, vs);
		for (int i = 0; i < 2; i++) {
			MDB_val v = {vl, vbuf};
			rc[i] = mdb_put(sd[i]->txn, sd[i]->plain, &k, &v, fl | (reserve ? MDB_RESERVE : 0));
			if (!rc[i] && reserve)
				memcpy(v.mv_data, vbuf, vl);
		}
	} else if (what < 50) {	/* delete */
		for (int i = 0; i < 2; i++)
			rc[i] = mdb_del(sd[i]->txn, sd[i]->plain, &k, NULL);
	} else if (what < 62) {	/* cursor: seek, then overwrite the current value or delete it */
		size_t vl = pick_vlen(s);
		fill_value(vbuf, vl, tu_next(s));
		int del = tu_below(s, 3) == 0;
		for (int i = 0; i < 2; i++) {
			MDB_cursor *c;
			MUST(mdb_cursor_open(sd[i]->txn, sd[i]->plain, &c));
			MDB_val ck = k, cv;
			rc[i] = mdb_cursor_get(c, &ck, &cv, MDB_SET_RANGE);
			if (!rc[i]) {
				MDB_val v = {vl, vbuf};
				rc[i] = del ? mdb_cursor_del(c, 0) : mdb_cursor_put(c, &ck, &v, MDB_CURRENT);
			}
			mdb_cursor_close(c);
		}
	} else if (what < 72) {	/* cursor put of a new key */
		size_t vl = pick_vlen(s);
		fill_value(vbuf, vl, tu_next(s));
		for (int i = 0; i < 2; i++) {
			MDB_cursor *c;
			MUST(mdb_cursor_open(sd[i]->txn, sd[i]->plain, &c));
			MDB_val v = {vl, vbuf};
			rc[i] = mdb_cursor_put(c, &k, &v, 0);
			mdb_cursor_close(c);
		}
	} else if (what < 84) {	/* duplicates: put or delete one pair */
		char dv[24];
		MDB_val v = {(size_t)snprintf(dv, sizeof dv, "d%u", tu_below(s, 300)), dv};
		int del = tu_below(s, 3) == 0;
		for (int i = 0; i < 2; i++)
			rc[i] = del ? mdb_del(sd[i]->txn, sd[i]->dups, &k, &v)
				    : mdb_put(sd[i]->txn, sd[i]->dups, &k, &v, 0);
	} else {	/* read back */
		MDB_val v[2];
		for (int i = 0; i < 2; i++)
			rc[i] = mdb_get(sd[i]->txn, sd[i]->plain, &k, &v[i]);
		if (!rc[0] && !rc[1]) {
			EXPECT(v[0].mv_size == v[1].mv_size && !memcmp(v[0].mv_data, v[1].mv_data, v[0].mv_size));
		}
	}
	if (rc[0] != rc[1]) {
		fprintf(stderr, "step %u: op %u: WRITEMAP rc %d, twin rc %d\n", step, what, rc[0], rc[1]);
		EXPECT(rc[0] == rc[1]);
	}
	if (rc[0] && rc[0] != MDB_NOTFOUND && rc[0] != MDB_KEYEXIST) {
		fprintf(stderr, "step %u: unexpected %s\n", step, mdb_strerror(rc[0]));
		EXPECT(0);
	}
}

/* The random twin workload in one flag variant of the subject. */
static void twin_run(uint64_t seed, unsigned subflags, unsigned txns)
{
	uint64_t s = seed;
	tu_fresh_dir(DIR_SUB);
	tu_fresh_dir(DIR_TWIN);
	side a = {0}, b = {0};
	a.env = open_env(DIR_SUB, subflags, 64u << 20);
	b.env = open_env(DIR_TWIN, MDB_NOSYNC, 64u << 20);
	side_dbis(&a);
	side_dbis(&b);
	unsigned step = 0, commits = 0, aborts = 0, reopens = 0;
	int writemap_now = 1;
	for (unsigned t = 0; t < txns && !tu_failures; t++) {
		MUST(mdb_txn_begin(a.env, NULL, 0, &a.txn));
		MUST(mdb_txn_begin(b.env, NULL, 0, &b.txn));
		if (writemap_now) {
			/* no nested txns under WRITEMAP (as LMDB) */
			MDB_txn *child;
			EXPECT_RC(mdb_txn_begin(a.env, a.txn, 0, &child), MDB_BAD_TXN);
		}
		unsigned nops = 1 + tu_below(&s, tu_below(&s, 5) == 0 ? 400 : 40);
		for (unsigned i = 0; i < nops; i++)
			random_op(&a, &b, &s, step++);
		if (tu_below(&s, 5) == 0) {
			mdb_txn_abort(a.txn);
			mdb_txn_abort(b.txn);
			aborts++;
		} else {
			EXPECT_RC(mdb_txn_commit(a.txn), 0);
			EXPECT_RC(mdb_txn_commit(b.txn), 0);
			commits++;
		}
		a.txn = b.txn = NULL;
		char when[64];
		snprintf(when, sizeof when, "after txn %u", t);
		if (!same_contents(&a, &b, when))
			break;
		if (tu_below(&s, 12) == 0) {
			/* reopen the subject, alternately without WRITEMAP and with it */
			mdb_env_close(a.env);
			writemap_now = !writemap_now;
			a.env = open_env(DIR_SUB, writemap_now ? subflags : (subflags & ~(MDB_WRITEMAP | MDB_MAPASYNC)),
				64u << 20);
			side_dbis(&a);
			reopens++;
			snprintf(when, sizeof when, "after reopen %u", reopens);
			same_contents(&a, &b, when);
		}
	}
	if (subflags & MDB_NOSYNC)
		EXPECT_RC(mdb_env_sync(a.env, 1), 0);
	mdb_env_close(a.env);
	mdb_env_close(b.env);
	/* and once more from the files alone */
	a.env = open_env(DIR_SUB, 0, 64u << 20);
	b.env = open_env(DIR_TWIN, 0, 64u << 20);
	side_dbis(&a);
	side_dbis(&b);
	same_contents(&a, &b, "final reopen");
	mdb_env_close(a.env);
	mdb_env_close(b.env);
	printf("  flags %#x: %u txns (%u commits, %u aborts), %u ops, %u reopens\n", subflags,
		commits + aborts, commits, aborts, step, reopens);
	EXPECT(commits > 0 && aborts > 0);
}

/* ---- pages are written in place ----------------------------------------------- */

static void in_place_proof(void)
{
	const unsigned variants[2] = {MDB_WRITEMAP, 0};
	for (int w = 0; w < 2; w++) {
		tu_fresh_dir(DIR_PROOF);
		MDB_env *env = open_env(DIR_PROOF, variants[w] | MDB_NOSYNC, 8u << 20);
		MDB_txn *t;
		MDB_dbi dbi;
		MUST(mdb_txn_begin(env, NULL, 0, &t));
		MUST(mdb_dbi_open(t, NULL, 0, &dbi));
		char kb[16];
		for (unsigned i = 0; i < 50; i++) {
			MDB_val k = {make_key(kb, i), kb}, v = {9, "in-place!"};
			MUST(mdb_put(t, dbi, &k, &v, 0));
		}
		MDB_val big = {12000, vbuf}, bk = {3, "big"};
		fill_value(vbuf, big.mv_size, 42);
		MUST(mdb_put(t, dbi, &bk, &big, 0));
		/* read back in the same txn: the dirty leaf / overflow run */
		MDB_val k = {make_key(kb, 7), kb}, v, bv;
		MUST(mdb_get(t, dbi, &k, &v));
		MUST(mdb_get(t, dbi, &bk, &bv));
		MDB_cursor *c;
		MDB_val ck, cv;
		MUST(mdb_cursor_open(t, dbi, &c));
		MUST(mdb_cursor_get(c, &k, &cv, MDB_SET));
		MUST(mdb_cursor_get(c, &ck, &cv, MDB_GET_CURRENT));
		int want = variants[w] != 0;
		EXPECT(in_file_mapping(DIR_PROOF "/data.mdb", v.mv_data, v.mv_size) == want);
		EXPECT(in_file_mapping(DIR_PROOF "/data.mdb", cv.mv_data, cv.mv_size) == want);
		EXPECT(in_file_mapping(DIR_PROOF "/data.mdb", bv.mv_data, bv.mv_size) == want);
		EXPECT(bv.mv_size == big.mv_size && !memcmp(bv.mv_data, vbuf, bv.mv_size));
		mdb_cursor_close(c);
		MUST(mdb_txn_commit(t));
		/* after the commit every reader sees the map (both variants) */
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
		MUST(mdb_get(t, dbi, &k, &v));
		EXPECT(in_file_mapping(DIR_PROOF "/data.mdb", v.mv_data, v.mv_size));
		EXPECT(v.mv_size == 9 && !memcmp(v.mv_data, "in-place!", 9));
		mdb_txn_abort(t);
		mdb_env_close(env);
	}
}

/* ---- map full, then a bigger map on the open env ------------------------------------ */

static void grow_run(uint64_t seed)
{
	uint64_t s = seed;
	tu_fresh_dir(DIR_GROW);
	size_t small = 256u << 10;
	MDB_env *env = open_env(DIR_GROW, MDB_WRITEMAP, small);
	struct stat st;
	EXPECT(stat(DIR_GROW "/data.mdb", &st) == 0 && (size_t)st.st_size >= small);
	MDB_dbi dbi;
	MDB_txn *t;
	MUST(mdb_txn_begin(env, NULL, 0, &t));
	MUST(mdb_dbi_open(t, NULL, 0, &dbi));
	MUST(mdb_txn_commit(t));
	/* fill in txns of a few items until one fails with MAP_FULL */
	unsigned next = 0, committed = 0;
	int full = 0;
	char kb[32];
	for (int round = 0; round < 1000 && !full; round++) {
		MUST(mdb_txn_begin(env, NULL, 0, &t));
		for (int i = 0; i < 5; i++) {
			size_t vl = 100 + tu_below(&s, 3000);
			fill_value(vbuf, vl, next);
			MDB_val k = {make_key(kb, next), kb}, v = {vl, vbuf};
			int rc = mdb_put(t, dbi, &k, &v, 0);
			if (rc == MDB_MAP_FULL) {
				full = 1;
				break;
			}
			EXPECT_RC(rc, 0);
			next++;
		}
		if (full) {
			mdb_txn_abort(t);
			next = committed;	/* the aborted puts are gone */
			break;
		}
		int rc = mdb_txn_commit(t);
		if (rc == MDB_MAP_FULL) {
			full = 1;
			next = committed;
			break;
		}
		EXPECT_RC(rc, 0);
		committed = next;
	}
	EXPECT(full);
	/* the failed txn left nothing behind; the committed items are intact */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
	MDB_stat ms;
	MUST(mdb_stat(t, dbi, &ms));
	EXPECT(ms.ms_entries == committed);
	char msg[256];
	EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), 0);
	mdb_txn_abort(t);
	/* grow the open env: the file follows at once, then writes go on */
	size_t big = 4u << 20;
	EXPECT_RC(mdb_env_set_mapsize(env, big), 0);
	EXPECT(stat(DIR_GROW "/data.mdb", &st) == 0 && (size_t)st.st_size >= big);
	MDB_envinfo info;
	MUST(mdb_env_info(env, &info));
	EXPECT(info.me_mapsize == big);
	for (int round = 0; round < 40; round++) {
		MUST(mdb_txn_begin(env, NULL, 0, &t));
		for (int i = 0; i < 10; i++) {
			size_t vl = 100 + tu_below(&s, 3000);
			fill_value(vbuf, vl, next);
			MDB_val k = {make_key(kb, next), kb}, v = {vl, vbuf};
			EXPECT_RC(mdb_put(t, dbi, &k, &v, 0), 0);
			next++;
		}
		EXPECT_RC(mdb_txn_commit(t), 0);
	}
	EXPECT(next > committed);
	/* every value is there and right, from the WRITEMAP env and after a
	 * reopen without WRITEMAP */
	for (int pass = 0; pass < 2; pass++) {
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
		MUST(mdb_stat(t, dbi, &ms));
		EXPECT(ms.ms_entries == next);
		EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), 0);
		for (unsigned i = 0; i < next; i++) {
			MDB_val k = {make_key(kb, i), kb}, v;
			int rc = mdb_get(t, dbi, &k, &v);
			EXPECT_RC(rc, 0);
			if (rc)
				break;
			fill_value(vbuf, v.mv_size, i);
			EXPECT(!memcmp(v.mv_data, vbuf, v.mv_size));
		}
		mdb_txn_abort(t);
		mdb_env_close(env);
		env = open_env(DIR_GROW, pass == 0 ? 0 : MDB_WRITEMAP, 0);
	}
	/* setting a size on the open env below the data rounds up, never
	 * cutting committed pages */
	EXPECT_RC(mdb_env_set_mapsize(env, 4096), 0);
	MUST(mdb_env_info(env, &info));
	EXPECT(info.me_mapsize >= (info.me_last_pgno + 1) * 4096u);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
	EXPECT_RC(mdb_txn_check(t, msg, sizeof msg), 0);
	mdb_txn_abort(t);
	mdb_env_close(env);
	printf("  map full after %u items in a %zu KiB map, %u items after growing\n", committed,
		small >> 10, next);
}

/* ---- FIXEDMAP --------------------------------------------------------------------- */

static void fixedmap_run(void)
{
	tu_fresh_dir(DIR_FIX);
	tu_fresh_dir(DIR_FIXCOPY);
	size_t msz = 8u << 20;
	MDB_env *env = open_env(DIR_FIX, MDB_FIXEDMAP | MDB_WRITEMAP, msz);
	MDB_envinfo info;
	MUST(mdb_env_info(env, &info));
	void *addr = info.me_mapaddr;
	EXPECT(addr != NULL);
	MDB_stat st;
	MUST(mdb_env_stat(env, &st));
	unsigned psize = st.ms_psize;
	/* the address is in both metas of the file, where LMDB keeps it */
	EXPECT(file_meta_address(DIR_FIX "/data.mdb", 0, psize) == (uint64_t)(uintptr_t)addr);
	EXPECT(file_meta_address(DIR_FIX "/data.mdb", 1, psize) == (uint64_t)(uintptr_t)addr);
	MDB_txn *t;
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, 0, &t));
	MUST(mdb_dbi_open(t, NULL, 0, &dbi));
	char kb[32];
	for (unsigned i = 0; i < 300; i++) {
		fill_value(vbuf, 50 + i, i);
		MDB_val k = {make_key(kb, i), kb}, v = {50 + i, vbuf};
		MUST(mdb_put(t, dbi, &k, &v, 0));
	}
	MDB_val k = {make_key(kb, 9), kb}, v;
	MUST(mdb_get(t, dbi, &k, &v));
	/* the map really is at the recorded address (and written in place) */
	EXPECT((char *)v.mv_data >= (char *)addr && (char *)v.mv_data + v.mv_size <= (char *)addr + msz);
	MUST(mdb_txn_commit(t));
	/* commits keep the address, in both metas */
	MUST(mdb_txn_begin(env, NULL, 0, &t));
	MDB_val k2 = {3, "zzz"}, v2 = {3, "abc"};
	MUST(mdb_put(t, dbi, &k2, &v2, 0));
	MUST(mdb_txn_commit(t));
	EXPECT(file_meta_address(DIR_FIX "/data.mdb", 0, psize) == (uint64_t)(uintptr_t)addr);
	EXPECT(file_meta_address(DIR_FIX "/data.mdb", 1, psize) == (uint64_t)(uintptr_t)addr);
	/* so do copies, plain and compacting */
	EXPECT_RC(mdb_env_copy2(env, DIR_FIXCOPY, MDB_CP_COMPACT), 0);
	EXPECT(file_meta_address(DIR_FIXCOPY "/data.mdb", 0, psize) == (uint64_t)(uintptr_t)addr);
	EXPECT(file_meta_address(DIR_FIXCOPY "/data.mdb", 1, psize) == (uint64_t)(uintptr_t)addr);
	/* growing the open env keeps the map where it is, or says EBUSY and
	 * keeps the old one */
	int grc = mdb_env_set_mapsize(env, 2 * msz);
	if (grc)
		fprintf(stderr, "  growing the FIXEDMAP env: %s\n", mdb_strerror(grc));
	EXPECT(grc == 0 || grc == EBUSY);
	MUST(mdb_env_info(env, &info));
	EXPECT(info.me_mapaddr == addr);
	size_t cur = grc == 0 ? 2 * msz : msz;
	EXPECT(info.me_mapsize == cur);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &t));
	MUST(mdb_get(t, dbi, &k, &v));
	EXPECT((char *)v.mv_data >= (char *)addr && (char *)v.mv_data + v.mv_size <= (char *)addr + cur);
	mdb_txn_abort(t);
	mdb_env_close(env);

	/* reopen in this process: the address is normally free again, and the
	 * map must land on it (EBUSY only if something else took it) */
	MDB_env *e2;
	MUST(mdb_env_create(&e2));
	MUST(mdb_env_set_mapsize(e2, msz));
	int rc = mdb_env_open(e2, DIR_FIX, MDB_FIXEDMAP, 0644);
	if (rc == EBUSY) {
		EXPECT(range_occupied((uintptr_t)addr, msz));
		printf("  reopen: address %p was taken meanwhile (EBUSY, as it should)\n", addr);
	} else {
		EXPECT_RC(rc, 0);
		MUST(mdb_env_info(e2, &info));
		EXPECT(info.me_mapaddr == addr);
		MUST(mdb_txn_begin(e2, NULL, MDB_RDONLY, &t));
		MUST(mdb_dbi_open(t, NULL, 0, &dbi));
		MUST(mdb_get(t, dbi, &k, &v));
		EXPECT((char *)v.mv_data >= (char *)addr && (char *)v.mv_data < (char *)addr + msz);
		fill_value(vbuf, 59, 9);
		EXPECT(v.mv_size == 59 && !memcmp(v.mv_data, vbuf, 59));
		mdb_txn_abort(t);
	}
	mdb_env_close(e2);

	/* something else sits at the address: EBUSY, and nothing was clobbered */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *blocker = mmap(addr, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (blocker != MAP_FAILED && blocker == (char *)addr) {
		memset(blocker, 0x5a, pg);
		MUST(mdb_env_create(&e2));
		MUST(mdb_env_set_mapsize(e2, msz));
		EXPECT_RC(mdb_env_open(e2, DIR_FIX, MDB_FIXEDMAP, 0644), EBUSY);
		mdb_env_close(e2);
		EXPECT(blocker[0] == 0x5a && blocker[pg - 1] == 0x5a);
		/* without FIXEDMAP the same file opens anywhere, and still
		 * reports the recorded address (as LMDB's mdb_env_info does) */
		MUST(mdb_env_create(&e2));
		MUST(mdb_env_set_mapsize(e2, msz));
		EXPECT_RC(mdb_env_open(e2, DIR_FIX, 0, 0644), 0);
		MUST(mdb_env_info(e2, &info));
		EXPECT(info.me_mapaddr == addr);
		mdb_env_close(e2);
		munmap(blocker, pg);
	} else {
		/* the kernel would not give us that page: the range is in use,
		 * which must make the FIXEDMAP open fail the same way */
		if (blocker != MAP_FAILED)
			munmap(blocker, pg);
		MUST(mdb_env_create(&e2));
		EXPECT_RC(mdb_env_open(e2, DIR_FIX, MDB_FIXEDMAP, 0644), EBUSY);
		mdb_env_close(e2);
	}
	/* stock LMDB finds the address where it keeps it: opened without
	 * FIXEDMAP (mapped anywhere) it reports the recorded one */
	MDB_env *se;
	MUST(stock_env_create(&se));
	MUST(stock_env_set_mapsize(se, msz));
	EXPECT_RC(stock_env_open(se, DIR_FIX, MDB_RDONLY, 0644), 0);
	memset(&info, 0, sizeof info);
	EXPECT_RC(stock_env_info(se, &info), 0);
	EXPECT(info.me_mapaddr == addr);
	stock_env_close(se);
	/* and a FIXEDMAP env stock LMDB creates reports, with ours, the
	 * address stock recorded */
	tu_fresh_dir(DIR_FIXCOPY);
	MUST(stock_env_create(&se));
	MUST(stock_env_set_mapsize(se, msz));
	EXPECT_RC(stock_env_open(se, DIR_FIXCOPY, MDB_FIXEDMAP, 0644), 0);
	memset(&info, 0, sizeof info);
	EXPECT_RC(stock_env_info(se, &info), 0);
	void *saddr = info.me_mapaddr;
	EXPECT(saddr != NULL);
	stock_env_close(se);
	EXPECT(file_meta_address(DIR_FIXCOPY "/data.mdb", 0, psize) == (uint64_t)(uintptr_t)saddr);
	env = open_env(DIR_FIXCOPY, 0, msz);
	MUST(mdb_env_info(env, &info));
	EXPECT(info.me_mapaddr == saddr);
	mdb_env_close(env);

	/* an env created without FIXEDMAP records no address */
	tu_fresh_dir(DIR_PROOF);
	env = open_env(DIR_PROOF, 0, msz);
	MUST(mdb_env_info(env, &info));
	EXPECT(info.me_mapaddr == NULL);
	mdb_env_close(env);
	EXPECT(file_meta_address(DIR_PROOF "/data.mdb", 0, psize) == 0);
	/* and opening it with FIXEDMAP maps it anywhere, recording nothing */
	env = open_env(DIR_PROOF, MDB_FIXEDMAP, msz);
	MUST(mdb_env_info(env, &info));
	EXPECT(info.me_mapaddr == NULL);
	mdb_env_close(env);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 0x57a1e5eedull;
	printf("writemap_test seed %#llx\n", (unsigned long long)seed);
	int scale = tu_scale();
	in_place_proof();
	twin_run(seed, MDB_WRITEMAP | MDB_NOSYNC, 150u * scale);
	twin_run(seed + 1, MDB_WRITEMAP | MDB_MAPASYNC, 40u * scale);
	twin_run(seed + 2, MDB_WRITEMAP, 25u * scale);
	grow_run(seed + 3);
	fixedmap_run();
	return tu_finish("writemap_test");
}
