/*
 * freerec_test.c - a damaged free-page record must not make a writer hand
 * out one page twice (the second owner would take over a buffer that is
 * still in the tree: a use-after-free under ASan, or silent damage).
 *
 * Build an env whose free DB holds records, patch one record in the data
 * file (a page listed twice; a page of the record repeated from another
 * record; a count larger than the record), and write until the writer
 * consumes it: it must answer MDB_CORRUPTED, and the env must still open
 * and read the last good commit.
 */
#include "testutil.h"
#include <fcntl.h>
#include <unistd.h>

#define DIR0 "build/freerec_env"

/* one commit that rewrites n values (frees pages, leaves a record) */
static void churn(MDB_env *env, MDB_dbi dbi, unsigned round)
{
	MDB_txn *w;
	char kb[16], vb[300];
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	for (unsigned i = 0; i < 60; i++) {
		memset(vb, 'a' + (int)((i + round) % 26), sizeof vb);
		MDB_val k = {(size_t)snprintf(kb, sizeof kb, "k%05u", i), kb}, v = {sizeof vb, vb};
		MUST(mdb_put(w, dbi, &k, &v, 0));
	}
	MUST(mdb_txn_commit(w));
}

/* the value of the first free DB record with at least two pages */
static int first_record(MDB_env *env, uint64_t *buf, size_t cap, size_t *len)
{
	MDB_txn *r;
	MDB_cursor *c;
	MDB_val k, d;
	int found = 0;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	MUST(mdb_cursor_open(r, 0, &c));
	int rc = mdb_cursor_get(c, &k, &d, MDB_FIRST);
	while (rc == 0) {
		uint64_t cnt;
		memcpy(&cnt, d.mv_data, sizeof cnt);
		if (cnt >= 2 && d.mv_size <= cap * sizeof(uint64_t)) {
			memcpy(buf, d.mv_data, d.mv_size);
			*len = d.mv_size;
			found = 1;
			break;
		}
		rc = mdb_cursor_get(c, &k, &d, MDB_NEXT);
	}
	mdb_cursor_close(c);
	mdb_txn_abort(r);
	return found;
}

/* replace the bytes old[0..len) by new wherever they are in the data file
 * (older copies of the free DB's leaf may hold the record too); returns
 * how many places were patched */
static int patch_file(const char *path, const void *old, const void *new, size_t len)
{
	int fd = open(path, O_RDWR);
	if (fd < 0)
		return 0;
	off_t size = lseek(fd, 0, SEEK_END);
	char *all = malloc((size_t)size);
	int done = 0;
	if (all && pread(fd, all, (size_t)size, 0) == size) {
		for (off_t off = 0; off + (off_t)len <= size; off += 2)
			if (!memcmp(all + off, old, len))
				done += pwrite(fd, new, len, off) == (ssize_t)len;
	}
	free(all);
	close(fd);
	return done;
}

static void damaged(int how)
{
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *w;
	tu_fresh_dir(DIR0);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 8u << 20));
	MUST(mdb_env_set_maxreaders(env, 4));
	MUST(mdb_env_open(env, DIR0, MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_dbi_open(w, NULL, 0, &dbi));
	MUST(mdb_txn_commit(w));
	/* keep a reader so the records pile up instead of being reused */
	MDB_txn *pin;
	churn(env, dbi, 0);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &pin));
	for (unsigned r = 1; r <= 6; r++)
		churn(env, dbi, r);
	uint64_t rec[512], bad[512];
	size_t len = 0;
	EXPECT(first_record(env, rec, 512, &len));
	mdb_txn_abort(pin);
	mdb_env_close(env);
	if (!len)
		return;
	memcpy(bad, rec, len);
	switch (how) {
	case 0:	/* a page listed twice (the record is descending) */
		bad[2] = bad[1];
		break;
	case 1:	/* out of order */
		bad[1] = rec[2], bad[2] = rec[1];
		break;
	case 2:	/* a count past the end of the record */
		bad[0] = ~(uint64_t)0 / 4;
		break;
	}
	EXPECT(patch_file(DIR0 "/data.mdb", rec, bad, len) > 0);

	/* the writer reaches the record within a few commits */
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 8u << 20));
	MUST(mdb_env_open(env, DIR0, MDB_NOSYNC, 0644));
	int corrupted = 0;
	for (unsigned r = 10; r < 40 && !corrupted; r++) {
		char kb[16], vb[300];
		int rc = mdb_txn_begin(env, NULL, 0, &w);
		EXPECT(rc == 0);
		if (rc)
			break;
		for (unsigned i = 0; i < 60 && !rc; i++) {
			memset(vb, 'a' + (int)((i + r) % 26), sizeof vb);
			MDB_val k = {(size_t)snprintf(kb, sizeof kb, "k%05u", i), kb}, v = {sizeof vb, vb};
			rc = mdb_put(w, dbi, &k, &v, 0);
		}
		if (rc) {
			mdb_txn_abort(w);
		} else {
			rc = mdb_txn_commit(w);
		}
		if (rc) {
			EXPECT_RC(rc, MDB_CORRUPTED);
			corrupted = 1;
		}
	}
	EXPECT(corrupted);
	/* nothing committed was lost: the last good values are all there */
	MDB_txn *r;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	MDB_stat st;
	MUST(mdb_stat(r, dbi, &st));
	EXPECT(st.ms_entries == 60);
	mdb_txn_abort(r);
	mdb_env_close(env);
}

int main(void)
{
	for (int how = 0; how < 3; how++)
		damaged(how);
	return tu_finish("freerec_test");
}
