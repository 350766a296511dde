/*
 * pipecopy_test.c - mdb_env_copyfd2 into descriptors that cannot seek.
 *
 * A pipe only accepts bytes in order, so a copy that positions its writes
 * fails there with ESPIPE.  Here the copy (plain and compacting) is sent
 * through pipes - a blocking one with a tiny kernel buffer and a
 * non-blocking one - while a thread drains the pipe into a file.  The
 * drained file must equal a copy made into a regular file, open as a
 * single-file environment, hold every record, and pass mdb_txn_check.
 */
#include "testutil.h"
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRC "build/pipecopy_src"
#define NKEYS 3000
#define NDUPKEYS 40
#define NDUPS 300

/* Value of main-DB key i: size varies so some values need overflow pages. */
static size_t val_len(int i)
{
	return i % 97 == 0 ? 9000 + (size_t)i : 20 + (size_t)(i % 50);
}

static void fill_val(char *buf, int i, size_t len)
{
	for (size_t j = 0; j < len; j++)
		buf[j] = (char)('A' + (i * 7 + (int)j) % 26);
}

static int kept(int i) { return i % 3 != 1; }	/* others are deleted to leave free pages */

static void build_source(MDB_env **envp)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi, named, dups;
	char kb[32], vb[13000];
	tu_fresh_dir(SRC);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, SRC, 0, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
	MUST(mdb_dbi_open(txn, "named", MDB_CREATE, &named));
	MUST(mdb_dbi_open(txn, "dups", MDB_CREATE | MDB_DUPSORT, &dups));
	for (int i = 0; i < NKEYS; i++) {
		snprintf(kb, sizeof kb, "key%06d", i);
		size_t n = val_len(i);
		fill_val(vb, i, n);
		MDB_val k = {strlen(kb), kb}, v = {n, vb};
		MUST(mdb_put(txn, dbi, &k, &v, 0));
		snprintf(vb, sizeof vb, "named-%d", i * 3);
		MDB_val v2 = {strlen(vb), vb};
		MUST(mdb_put(txn, named, &k, &v2, 0));
	}
	for (int i = 0; i < NDUPKEYS; i++) {
		snprintf(kb, sizeof kb, "d%03d", i);
		int nd = i % 2 ? NDUPS : 3;	/* some keys get a dup sub-tree */
		for (int j = 0; j < nd; j++) {
			snprintf(vb, sizeof vb, "dupval-%05d-%d", j, i);
			MDB_val k = {strlen(kb), kb}, v = {strlen(vb), vb};
			MUST(mdb_put(txn, dups, &k, &v, 0));
		}
	}
	MUST(mdb_txn_commit(txn));
	/* delete a third of the main DB so the plain copy carries free pages */
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	for (int i = 0; i < NKEYS; i++) {
		if (kept(i))
			continue;
		snprintf(kb, sizeof kb, "key%06d", i);
		MDB_val k = {strlen(kb), kb};
		MUST(mdb_del(txn, dbi, &k, NULL));
	}
	MUST(mdb_txn_commit(txn));
	*envp = env;
}

struct drain {
	int rfd;
	const char *path;
	int err;
	long long bytes;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	int out = open(d->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		d->err = errno;
		return NULL;
	}
	char buf[3000];	/* odd size: reads do not line up with pages */
	for (;;) {
		ssize_t n = read(d->rfd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			d->err = errno;
			break;
		}
		if (n == 0)
			break;
		if (write(out, buf, (size_t)n) != n) {
			d->err = EIO;
			break;
		}
		d->bytes += n;
	}
	close(out);
	return NULL;
}

/* Copy env through a pipe into path; returns mdb_env_copyfd2's result. */
static int copy_via_pipe(MDB_env *env, unsigned flags, const char *path, int nonblock)
{
	int p[2];
	MUST(pipe(p) ? errno : 0);
#ifdef F_SETPIPE_SZ
	fcntl(p[1], F_SETPIPE_SZ, 4096);	/* many short/blocked writes */
#endif
	if (nonblock)
		MUST(fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK) ? errno : 0);
	struct drain d = {p[0], path, 0, 0};
	pthread_t th;
	MUST(pthread_create(&th, NULL, drain_main, &d));
	int rc = mdb_env_copyfd2(env, p[1], flags);
	close(p[1]);
	pthread_join(th, NULL);
	close(p[0]);
	EXPECT(d.err == 0);
	EXPECT(d.bytes > 0);
	return rc;
}

static int copy_to_file(MDB_env *env, unsigned flags, const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	MUST(fd < 0 ? errno : 0);
	int rc = mdb_env_copyfd2(env, fd, flags);
	close(fd);
	return rc;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return b;
}

static int same_file(const char *a, const char *b)
{
	size_t la = 0, lb = 0;
	char *x = slurp(a, &la), *y = slurp(b, &lb);
	int same = x && y && la == lb && memcmp(x, y, la) == 0;
	free(x);
	free(y);
	return same;
}

/* Open a streamed copy and compare it with what build_source wrote. */
static void verify_copy(const char *path, int compact)
{
	char lock[256];
	snprintf(lock, sizeof lock, "%s-lock", path);
	unlink(lock);
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi, named, dups;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 4));
	int rc = mdb_env_open(env, path, MDB_NOSUBDIR | MDB_RDONLY, 0644);
	EXPECT_RC(rc, 0);
	if (rc) {
		mdb_env_close(env);
		return;
	}
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	char msg[256] = "";
	rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT_RC(rc, 0);
	if (rc)
		fprintf(stderr, "%s: %s\n", path, msg);
	MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
	EXPECT_RC(mdb_dbi_open(txn, "named", 0, &named), 0);
	EXPECT_RC(mdb_dbi_open(txn, "dups", 0, &dups), 0);

	char kb[32], want[13000];
	int live = 0;
	for (int i = 0; i < NKEYS; i++) {
		snprintf(kb, sizeof kb, "key%06d", i);
		MDB_val k = {strlen(kb), kb}, v;
		rc = mdb_get(txn, dbi, &k, &v);
		if (!kept(i)) {
			EXPECT_RC(rc, MDB_NOTFOUND);
			continue;
		}
		live++;
		EXPECT_RC(rc, 0);
		if (rc)
			continue;
		size_t n = val_len(i);
		fill_val(want, i, n);
		EXPECT(v.mv_size == n && memcmp(v.mv_data, want, n) == 0);
		rc = mdb_get(txn, named, &k, &v);
		EXPECT_RC(rc, 0);
		snprintf(want, sizeof want, "named-%d", i * 3);
		EXPECT(!rc && v.mv_size == strlen(want) && memcmp(v.mv_data, want, v.mv_size) == 0);
	}
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == (mdb_size_t)live + 2);	/* + the two named-DB records */
	MUST(mdb_stat(txn, named, &st));
	EXPECT(st.ms_entries == NKEYS);

	/* every duplicate, in order */
	MDB_cursor *cur;
	MUST(mdb_cursor_open(txn, dups, &cur));
	for (int i = 0; i < NDUPKEYS; i++) {
		snprintf(kb, sizeof kb, "d%03d", i);
		MDB_val k = {strlen(kb), kb}, v;
		int nd = i % 2 ? NDUPS : 3;
		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY);
		EXPECT_RC(rc, 0);
		mdb_size_t cnt = 0;
		if (!rc && mdb_cursor_count(cur, &cnt) == 0)
			EXPECT(cnt == (mdb_size_t)nd);
		/* dup values sort as strings; walk them and compare the set */
		int seen = 0;
		for (; !rc; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP)) {
			int j, owner;
			char tmp[64];
			size_t n = v.mv_size < sizeof tmp - 1 ? v.mv_size : sizeof tmp - 1;
			memcpy(tmp, v.mv_data, n);
			tmp[n] = 0;
			EXPECT(sscanf(tmp, "dupval-%d-%d", &j, &owner) == 2 && owner == i && j < nd);
			seen++;
		}
		EXPECT(rc == MDB_NOTFOUND);
		EXPECT(seen == nd);
	}
	mdb_cursor_close(cur);

	if (compact) {
		/* a compacted copy has no free pages at all */
		MUST(mdb_stat(txn, 0, &st));
		EXPECT(st.ms_entries == 0);
	}
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

static long long file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : (long long)st.st_size;
}

int main(void)
{
	MDB_env *env;
	build_source(&env);

	static const struct {
		unsigned flags;
		int nonblock;
		const char *piped, *plain;
	} cases[] = {
		{0, 0, "build/pipecopy_plain_pipe.mdb", "build/pipecopy_plain_file.mdb"},
		{MDB_CP_COMPACT, 0, "build/pipecopy_compact_pipe.mdb", "build/pipecopy_compact_file.mdb"},
		{0, 1, "build/pipecopy_plain_nbpipe.mdb", NULL},
		{MDB_CP_COMPACT, 1, "build/pipecopy_compact_nbpipe.mdb", NULL},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		int compact = (cases[c].flags & MDB_CP_COMPACT) != 0;
		EXPECT_RC(copy_via_pipe(env, cases[c].flags, cases[c].piped, cases[c].nonblock), 0);
		if (cases[c].plain) {
			EXPECT_RC(copy_to_file(env, cases[c].flags, cases[c].plain), 0);
			/* no writer ran in between: same snapshot, same bytes */
			EXPECT(same_file(cases[c].piped, cases[c].plain));
		} else {
			EXPECT(same_file(cases[c].piped, cases[c - 2].piped));
		}
		verify_copy(cases[c].piped, compact);
	}
	EXPECT(file_size("build/pipecopy_compact_pipe.mdb") <
	       file_size("build/pipecopy_plain_pipe.mdb"));

	/* a reader that went away: the copy reports the broken pipe */
	signal(SIGPIPE, SIG_IGN);
	for (int compact = 0; compact < 2; compact++) {
		int p[2];
		MUST(pipe(p) ? errno : 0);
		close(p[0]);
		EXPECT_RC(mdb_env_copyfd2(env, p[1], compact ? MDB_CP_COMPACT : 0), EPIPE);
		close(p[1]);
	}

	/* the one-argument variant streams too */
	{
		int p[2];
		MUST(pipe(p) ? errno : 0);
		struct drain d = {p[0], "build/pipecopy_fd1_pipe.mdb", 0, 0};
		pthread_t th;
		MUST(pthread_create(&th, NULL, drain_main, &d));
		EXPECT_RC(mdb_env_copyfd(env, p[1]), 0);
		close(p[1]);
		pthread_join(th, NULL);
		close(p[0]);
		EXPECT(d.err == 0);
		EXPECT(same_file("build/pipecopy_fd1_pipe.mdb", "build/pipecopy_plain_file.mdb"));
	}

	mdb_env_close(env);

	/* an environment that never saw a write streams to metas only */
	tu_fresh_dir("build/pipecopy_empty");
	MUST(mdb_env_create(&env));
	MUST(mdb_env_open(env, "build/pipecopy_empty", 0, 0644));
	for (int compact = 0; compact < 2; compact++) {
		const char *out = compact ? "build/pipecopy_empty_c.mdb" : "build/pipecopy_empty_p.mdb";
		EXPECT_RC(copy_via_pipe(env, compact ? MDB_CP_COMPACT : 0, out, 0), 0);
		MDB_stat est;
		MUST(mdb_env_stat(env, &est));
		EXPECT(file_size(out) == 2LL * est.ms_psize);
		MDB_env *e2;
		MDB_txn *t2;
		MUST(mdb_env_create(&e2));
		int rc = mdb_env_open(e2, out, MDB_NOSUBDIR | MDB_RDONLY, 0644);
		EXPECT_RC(rc, 0);
		if (!rc) {
			MUST(mdb_txn_begin(e2, NULL, MDB_RDONLY, &t2));
			char msg[200] = "";
			EXPECT_RC(mdb_txn_check(t2, msg, sizeof msg), 0);
			MDB_stat st;
			MUST(mdb_stat(t2, 1, &st));
			EXPECT(st.ms_entries == 0 && st.ms_depth == 0);
			mdb_txn_abort(t2);
		}
		mdb_env_close(e2);
	}
	mdb_env_close(env);
	return tu_finish("pipecopy_test");
}
