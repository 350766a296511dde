/*
 * growahead_test.c - a synced commit that extends the data file writes
 * zeros over the next stretch of pages too (txn.c, grow_ahead), so that
 * the commits after it overwrite blocks the file already has instead of
 * changing its size on every growth.
 *
 * Checks, for one-put commits that grow a database page by page:
 *  - with full sync the file changes size on few commits (each growth
 *    covers at least 16 pages), always ends on a page boundary, holds every
 *    page the meta names, and the pages past the last one are zeros;
 *  - under NOSYNC nothing is written ahead: the file never reaches past
 *    the last page;
 *  - the stretch stops at the map's end (a small map filled to MDB_MAP_FULL);
 *  - the file reopens, reads back everything and passes the checker, and a
 *    plain copy ends at the last page.
 */
#include "testutil.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define PSIZE 4096

static long long pages_of(const char *path)
{
	struct stat st;
	if (stat(path, &st))
		return -1;
	EXPECT(st.st_size % PSIZE == 0);
	return (long long)(st.st_size / PSIZE);
}

static mdb_size_t last_page(MDB_env *env)
{
	MDB_envinfo info;
	MUST(mdb_env_info(env, &info));
	return info.me_last_pgno;
}

static MDB_env *open_env(const char *dir, size_t mapsize, unsigned flags)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, mapsize));
	MUST(mdb_env_open(env, dir, flags, 0644));
	return env;
}

static void put_one(MDB_env *env, unsigned i, int *rc_out)
{
	MDB_txn *w;
	char kb[32], vb[200];
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MDB_dbi dbi;
	MUST(mdb_dbi_open(w, NULL, 0, &dbi));
	/* spread keys so splits happen all over the tree */
	MDB_val k = {(size_t)snprintf(kb, sizeof kb, "%010u", (i * 2654435761u) % 1000003u), kb};
	memset(vb, 'a' + (int)(i % 26), sizeof vb);
	MDB_val v = {sizeof vb, vb};
	int rc = mdb_put(w, dbi, &k, &v, 0);
	if (rc == 0)
		rc = mdb_txn_commit(w);
	else
		mdb_txn_abort(w);
	*rc_out = rc;
}

/* every byte of pages [from, to) of the file is zero */
static int zeros_from(const char *path, long long from, long long to)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	static unsigned char buf[PSIZE];
	int ok = 1;
	for (long long pg = from; pg < to && ok; pg++) {
		if (pread(fd, buf, PSIZE, (off_t)(pg * PSIZE)) != PSIZE) {
			ok = 0;
			break;
		}
		for (size_t j = 0; j < PSIZE; j++)
			if (buf[j]) {
				ok = 0;
				break;
			}
	}
	close(fd);
	return ok;
}

static void verify(const char *dir, unsigned n)
{
	MDB_txn *r;
	MDB_dbi dbi;
	MDB_stat st;
	char msg[256];
	MDB_env *env = open_env(dir, 64 << 20, MDB_RDONLY);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	MUST(mdb_dbi_open(r, NULL, 0, &dbi));
	MUST(mdb_stat(r, dbi, &st));
	EXPECT(st.ms_entries == n);
	for (unsigned i = 0; i < n; i++) {
		char kb[32];
		MDB_val k = {(size_t)snprintf(kb, sizeof kb, "%010u", (i * 2654435761u) % 1000003u), kb}, v;
		EXPECT_RC(mdb_get(r, dbi, &k, &v), 0);
	}
	EXPECT_RC(mdb_txn_check(r, msg, sizeof msg), 0);
	mdb_txn_abort(r);
	mdb_env_close(env);
}

/* n one-put commits on a fresh env; returns how many changed the file's
 * size and sets *grew to how many pages the database grew by */
static unsigned grow(const char *dir, unsigned flags, unsigned n, long long *grew)
{
	char data[256];
	snprintf(data, sizeof data, "%s/data.mdb", dir);
	tu_fresh_dir(dir);
	MDB_env *env = open_env(dir, 64 << 20, flags);
	mdb_size_t first = last_page(env);
	long long size = pages_of(data);
	unsigned changes = 0;
	for (unsigned i = 0; i < n; i++) {
		int rc;
		put_one(env, i, &rc);
		EXPECT_RC(rc, 0);
		long long now = pages_of(data);
		mdb_size_t last = last_page(env);
		if (now != size)
			changes++;
		size = now;
		if (flags & MDB_NOSYNC)
			EXPECT(now <= (long long)last + 1);
		else
			EXPECT(now >= (long long)last + 1);
	}
	mdb_size_t last = last_page(env);
	*grew = (long long)(last - first);
	if (!(flags & MDB_NOSYNC))
		EXPECT(zeros_from(data, (long long)last + 1, size));
	/* a plain copy ends at the last page */
	char copy[256];
	snprintf(copy, sizeof copy, "%s_copy", dir);
	tu_fresh_dir(copy);
	MUST(mdb_env_copy(env, copy));
	mdb_env_close(env);
	char cdata[300];
	snprintf(cdata, sizeof cdata, "%s/data.mdb", copy);
	EXPECT(pages_of(cdata) == (long long)last + 1);
	verify(dir, n);
	verify(copy, n);
	return changes;
}

/* a map of 48 pages filled until MDB_MAP_FULL: the file never passes it */
static void capped(void)
{
	const char *dir = "build/growahead_cap";
	char data[256];
	snprintf(data, sizeof data, "%s/data.mdb", dir);
	tu_fresh_dir(dir);
	MDB_env *env = open_env(dir, 48 * PSIZE, 0);
	int rc = 0;
	unsigned i;
	for (i = 0; i < 100000 && rc == 0; i++) {
		put_one(env, i, &rc);
		EXPECT(pages_of(data) <= 48);
	}
	EXPECT_RC(rc, MDB_MAP_FULL);
	mdb_env_close(env);
	verify(dir, i - 1);
}

/* a file of 80 MiB: its eighth would be 10 MiB, so the stretch a synced
 * commit writes past its last page is the 8 MiB cap (rounded up to 16
 * pages), not more */
static void big(void)
{
	const char *dir = "build/growahead_big";
	char data[256];
	snprintf(data, sizeof data, "%s/data.mdb", dir);
	tu_fresh_dir(dir);
	MDB_txn *w;
	MDB_dbi dbi;
	static char vb[3000];
	MDB_env *env = open_env(dir, 256u << 20, MDB_NOSYNC);
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_dbi_open(w, NULL, 0, &dbi));
	for (unsigned i = 0; i < 20000; i++) {	/* one overflow page each */
		char kb[16];
		MDB_val k = {(size_t)snprintf(kb, sizeof kb, "%08u", i), kb}, v = {sizeof vb, vb};
		MUST(mdb_put(w, dbi, &k, &v, MDB_APPEND));
	}
	MUST(mdb_txn_commit(w));
	mdb_env_close(env);
	env = open_env(dir, 256u << 20, 0);
	long long before = pages_of(data);
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_dbi_open(w, NULL, 0, &dbi));
	MDB_val k = {8, "zzzzzzzz"}, v = {sizeof vb, vb};
	MUST(mdb_put(w, dbi, &k, &v, 0));
	MUST(mdb_txn_commit(w));
	long long tail = pages_of(data) - ((long long)last_page(env) + 1);
	EXPECT(before >= 20000);
	EXPECT(tail >= (8 << 20) / PSIZE && tail < (8 << 20) / PSIZE + 16);
	fprintf(stderr, "growahead_test: big: %lld pages, %lld zero pages past the last\n", before, tail);
	MDB_txn *r;
	MDB_stat st;
	char msg[256];
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	MUST(mdb_stat(r, dbi, &st));
	EXPECT(st.ms_entries == 20001);
	EXPECT_RC(mdb_txn_check(r, msg, sizeof msg), 0);
	mdb_txn_abort(r);
	mdb_env_close(env);
}

int main(void)
{
	long long grew;
	unsigned changes = grow("build/growahead_sync", 0, 1500, &grew);
	/* each size change covers at least 16 pages of growth (and the very
	 * first commits, whose pages land past the two metas, one more) */
	EXPECT(grew >= 64);
	EXPECT(changes >= 1);
	EXPECT((long long)changes * 16 <= grew + 32);
	fprintf(stderr, "growahead_test: synced: %lld pages of growth, %u size changes\n", grew, changes);

	changes = grow("build/growahead_nometasync", MDB_NOMETASYNC, 800, &grew);
	EXPECT((long long)changes * 16 <= grew + 32);

	/* NOSYNC: the file follows the pages written, so it changes size on
	 * most commits that grow the database */
	changes = grow("build/growahead_nosync", MDB_NOSYNC, 3000, &grew);
	EXPECT(grew >= 64);
	EXPECT((long long)changes * 2 >= grew);
	fprintf(stderr, "growahead_test: nosync: %lld pages of growth, %u size changes\n", grew, changes);

	capped();
	big();
	return tu_finish("growahead_test");
}
