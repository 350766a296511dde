/*
 * overlap_test.c - the checker finds nodes that overlap: a damaged size
 * that makes one node's bytes run into its neighbour's while staying
 * inside the page, so every single-node bound still holds and reads just
 * return wrong bytes.  Once in a leaf page (a value size), once in an
 * inline duplicate sub-page (a duplicate's size).  The undamaged file
 * passes; each damaged copy must give MDB_CORRUPTED with a reason.
 */
#include "testutil.h"
#include "../internal.h"
#include <fcntl.h>
#include <unistd.h>

#define DIR0 "build/overlap_env"

static void build(void)
{
	MDB_env *env;
	MDB_txn *w;
	MDB_dbi plain, dups;
	tu_fresh_dir(DIR0);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, DIR0, 0, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_dbi_open(w, "plain", MDB_CREATE, &plain));
	MUST(mdb_dbi_open(w, "dups", MDB_CREATE | MDB_DUPSORT, &dups));
	for (unsigned i = 0; i < 20; i++) {
		char kb[16], vb[24];
		MDB_val k = {(size_t)snprintf(kb, sizeof kb, "key%02u", i), kb};
		MDB_val v = {(size_t)snprintf(vb, sizeof vb, "value-%02u-xxxx", i), vb};
		MUST(mdb_put(w, plain, &k, &v, 0));
		for (unsigned j = 0; j < 3; j++) {
			MDB_val d = {(size_t)snprintf(vb, sizeof vb, "dup%u", j), vb};
			MUST(mdb_put(w, dups, &k, &d, 0));
		}
	}
	MUST(mdb_txn_commit(w));
	mdb_env_close(env);
}

/* the file offset of the first place in the data file where pat (len
 * bytes) starts, or -1 */
static off_t find(const void *pat, size_t len)
{
	static char buf[1 << 20];
	int fd = open(DIR0 "/data.mdb", O_RDONLY);
	EXPECT(fd >= 0);
	ssize_t n = pread(fd, buf, sizeof buf, 0);
	close(fd);
	for (ssize_t i = 0; n > 0 && i + (ssize_t)len <= n; i++)
		if (!memcmp(buf + i, pat, len))
			return (off_t)i;
	return -1;
}

static int check_env(char *msg, size_t len)
{
	MDB_env *env;
	MDB_txn *r;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, DIR0, MDB_RDONLY, 0644));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	msg[0] = 0;
	int rc = mdb_txn_check(r, msg, len);
	mdb_txn_abort(r);
	mdb_env_close(env);
	return rc;
}

static void patch16(off_t off, uint16_t v)
{
	int fd = open(DIR0 "/data.mdb", O_RDWR);
	EXPECT(fd >= 0);
	EXPECT(pwrite(fd, &v, sizeof v, off) == (ssize_t)sizeof v);
	close(fd);
}

static uint16_t read16(off_t off)
{
	uint16_t v = 0;
	int fd = open(DIR0 "/data.mdb", O_RDONLY);
	EXPECT(fd >= 0);
	EXPECT(pread(fd, &v, sizeof v, off) == (ssize_t)sizeof v);
	close(fd);
	return v;
}

int main(void)
{
	char msg[256];

	build();
	EXPECT_RC(check_env(msg, sizeof msg), 0);

	/* a value 6 bytes longer than stored: it runs into the next node's
	 * header, still inside the page.  The node: header, "key05", value. */
	off_t at = find("key05value-05-xxxx", 18);
	EXPECT(at >= (off_t)DL_NODEHDR);
	at -= (off_t)DL_NODEHDR;
	uint16_t lo = read16(at + (off_t)offsetof(dl_node, n_lo));
	EXPECT(lo == 13);	/* "value-05-xxxx" */
	patch16(at + (off_t)offsetof(dl_node, n_lo), (uint16_t)(lo + 6));
	EXPECT_RC(check_env(msg, sizeof msg), MDB_CORRUPTED);
	EXPECT(strstr(msg, "overlap") != NULL);
	printf("overlap_test: leaf: %s\n", msg);

	/* the last-added duplicate of an inline sub-page (its lowest node:
	 * the others lie above it) claims 4 more bytes.  Its node:
	 * no data size, no flags, key size 4, then "dup2". */
	build();
	static const unsigned char dup2[] = {0, 0, 0, 0, 0, 0, 4, 0, 'd', 'u', 'p', '2'};
	at = find(dup2, sizeof dup2);
	EXPECT(at > 0);
	uint16_t ks = read16(at + (off_t)offsetof(dl_node, n_ksize));
	EXPECT(ks == 4);
	patch16(at + (off_t)offsetof(dl_node, n_ksize), (uint16_t)(ks + 4));
	EXPECT_RC(check_env(msg, sizeof msg), MDB_CORRUPTED);
	EXPECT(strstr(msg, "overlap") != NULL);
	printf("overlap_test: sub-page: %s\n", msg);
	return tu_finish("overlap_test");
}
