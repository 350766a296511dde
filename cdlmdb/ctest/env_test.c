/*
 * env_test.c - environment flags, file layout, and damaged files.
 */
#include "testutil.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/wait.h>

static int file_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* Write n items, reopen with the same flags, read them back, check. */
static void roundtrip(const char *path, unsigned flags, int n)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	char kb[32], vb[4000];
	for (int pass = 0; pass < 2; pass++) {
		MUST(mdb_env_create(&env));
		MUST(mdb_env_set_mapsize(env, 16u << 20));
		int rc = mdb_env_open(env, path, flags, 0644);
		EXPECT(rc == 0);
		if (rc) {
			fprintf(stderr, "open flags 0x%x: %s\n", flags, mdb_strerror(rc));
			mdb_env_close(env);
			return;
		}
		unsigned got;
		MUST(mdb_env_get_flags(env, &got));
		EXPECT((got & flags) == flags);
		if (pass == 0) {
			MUST(mdb_txn_begin(env, NULL, 0, &txn));
			MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
			for (int i = 0; i < n; i++) {
				snprintf(kb, sizeof kb, "f%06d", i);
				memset(vb, 'a' + i % 7, sizeof vb);
				MDB_val k = {strlen(kb), kb}, v = {(size_t)(i % 10 ? 30 : 3500), vb};
				MUST(mdb_put(txn, dbi, &k, &v, 0));
			}
			/* a nested txn unless WRITEMAP forbids it */
			MDB_txn *child;
			rc = mdb_txn_begin(env, txn, 0, &child);
			if (flags & MDB_WRITEMAP) {
				EXPECT(rc == MDB_BAD_TXN);
			} else {
				EXPECT(rc == 0);
				if (!rc) {
					MDB_val k = {5, "child"}, v = {2, "ok"};
					EXPECT_RC(mdb_put(child, dbi, &k, &v, 0), 0);
					EXPECT_RC(mdb_txn_commit(child), 0);
				}
			}
			EXPECT_RC(mdb_txn_commit(txn), 0);
			EXPECT_RC(mdb_env_sync(env, 1), 0);
		} else {
			MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
			MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
			MDB_stat st;
			MUST(mdb_stat(txn, dbi, &st));
			EXPECT(st.ms_entries == (size_t)n + ((flags & MDB_WRITEMAP) ? 0 : 1));
			for (int i = 0; i < n; i += 97) {
				snprintf(kb, sizeof kb, "f%06d", i);
				MDB_val k = {strlen(kb), kb}, v;
				EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
				EXPECT(v.mv_size == (size_t)(i % 10 ? 30 : 3500));
			}
			char msg[200];
			EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
			mdb_txn_abort(txn);
		}
		mdb_env_close(env);
	}
}

static void test_flags(void)
{
	const unsigned variants[] = {0, MDB_NOSYNC, MDB_NOMETASYNC, MDB_WRITEMAP, MDB_WRITEMAP | MDB_MAPASYNC,
		MDB_NOTLS, MDB_NORDAHEAD, MDB_NOMEMINIT, MDB_NOLOCK, MDB_FIXEDMAP};
	for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
		tu_fresh_dir("build/env_flags");
		roundtrip("build/env_flags", variants[i], 1500);
		EXPECT(file_exists("build/env_flags/data.mdb"));
		EXPECT(file_exists("build/env_flags/lock.mdb") == !(variants[i] & MDB_NOLOCK));
	}
	/* NOSUBDIR: the path is the data file, the lock file gets "-lock" */
	tu_fresh_dir("build/env_nosub");
	roundtrip("build/env_nosub/db", MDB_NOSUBDIR, 500);
	EXPECT(file_exists("build/env_nosub/db"));
	EXPECT(file_exists("build/env_nosub/db-lock"));
	/* RDONLY: reads fine, writes refused */
	MDB_env *env;
	MDB_txn *txn;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 2));
	EXPECT_RC(mdb_env_open(env, "build/env_nosub/db", MDB_NOSUBDIR | MDB_RDONLY, 0644), 0);
	EXPECT_RC(mdb_txn_begin(env, NULL, 0, &txn), EACCES);
	EXPECT_RC(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
	MDB_dbi dbi;
	EXPECT_RC(mdb_dbi_open(txn, NULL, 0, &dbi), 0);
	MDB_val k = {7, "f000000"}, v;
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
	EXPECT_RC(mdb_dbi_open(txn, "newdb", MDB_CREATE, &dbi), EACCES);
	mdb_txn_abort(txn);
	EXPECT_RC(mdb_env_sync(env, 1), EACCES);
	mdb_env_close(env);
	/* RDONLY on a missing env */
	MUST(mdb_env_create(&env));
	tu_fresh_dir("build/env_empty");
	EXPECT_RC(mdb_env_open(env, "build/env_empty", MDB_RDONLY, 0644), ENOENT);
	mdb_env_close(env);
}

static void write_bytes(const char *path, off_t off, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0 || pwrite(fd, b, n, off) != (ssize_t)n) {
		fprintf(stderr, "cannot patch %s\n", path);
		exit(2);
	}
	close(fd);
}

static int try_open(const char *dir)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	int rc = mdb_env_open(env, dir, 0, 0644);
	if (!rc) {
		MDB_txn *txn;
		rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
		if (!rc) {
			char msg[200];
			MDB_dbi dbi;
			MDB_val k = {7, "f000000"}, v;
			rc = mdb_dbi_open(txn, NULL, 0, &dbi);
			if (!rc)
				rc = mdb_get(txn, dbi, &k, &v);
			if (!rc)
				rc = mdb_txn_check(txn, msg, sizeof msg);
			mdb_txn_abort(txn);
		}
	}
	mdb_env_close(env);
	return rc;
}

static void make_db(const char *dir)
{
	tu_fresh_dir(dir);
	roundtrip(dir, 0, 300);
}

static void test_damage(void)
{
	const char *dir = "build/env_bad";
	char data[256];
	snprintf(data, sizeof data, "%s/data.mdb", dir);
	uint32_t junk = 0x12345678;

	make_db(dir);
	EXPECT_RC(try_open(dir), 0);

	/* both metas lose their magic */
	make_db(dir);
	write_bytes(data, 16, &junk, 4);
	write_bytes(data, 4096 + 16, &junk, 4);
	EXPECT_RC(try_open(dir), MDB_INVALID);

	/* version bump in both metas */
	make_db(dir);
	uint32_t ver = 2;
	write_bytes(data, 20, &ver, 4);
	write_bytes(data, 4096 + 20, &ver, 4);
	EXPECT_RC(try_open(dir), MDB_VERSION_MISMATCH);

	/* one damaged meta, either one: an error as in LMDB, never a silent
	 * switch to the other meta (which would lose or hide commits) */
	for (int pg = 0; pg < 2; pg++) {
		make_db(dir);
		write_bytes(data, 4096 * pg + 16, &junk, 4);
		EXPECT_RC(try_open(dir), MDB_INVALID);
		make_db(dir);
		write_bytes(data, 4096 * pg + 20, &ver, 4);
		EXPECT_RC(try_open(dir), MDB_VERSION_MISMATCH);
		make_db(dir);
		uint16_t notmeta = 0x02;
		write_bytes(data, 4096 * pg + 10, &notmeta, 2);
		EXPECT_RC(try_open(dir), MDB_INVALID);
	}
	/* impossible main root in the newest meta only: MDB_CORRUPTED, not the
	 * older commit; the same damage in the older (unused) meta is harmless */
	for (int newest = 0; newest < 2; newest++) {
		make_db(dir);
		uint64_t tx[2], zero = 0;
		int f1 = open(data, O_RDONLY);
		for (int i = 0; i < 2; i++)
			EXPECT(pread(f1, &tx[i], 8, 4096 * i + 16 + 128) == 8);
		close(f1);
		int pg = (tx[0] > tx[1]) == newest ? 0 : 1;
		EXPECT(tx[0] != tx[1]);
		write_bytes(data, 4096 * pg + 16 + 72 + 40, &zero, 8);
		EXPECT_RC(try_open(dir), newest ? MDB_CORRUPTED : 0);
	}

	/* not a meta page at all */
	make_db(dir);
	uint16_t fl = 0x02;
	write_bytes(data, 10, &fl, 2);
	write_bytes(data, 4096 + 10, &fl, 2);
	EXPECT_RC(try_open(dir), MDB_INVALID);

	/* main root pointing past the end of the file */
	make_db(dir);
	uint64_t badroot = 1u << 30;
	for (int i = 0; i < 2; i++)
		write_bytes(data, 4096 * i + 16 + 72 + 40, &badroot, 8);
	EXPECT_RC(try_open(dir), MDB_CORRUPTED);

	/* a garbage file */
	tu_fresh_dir(dir);
	int fd = open(data, O_WRONLY | O_CREAT, 0644);
	char g[9000];
	for (size_t i = 0; i < sizeof g; i++)
		g[i] = (char)(i * 131 + 7);
	EXPECT(write(fd, g, sizeof g) == (ssize_t)sizeof g);
	close(fd);
	EXPECT_RC(try_open(dir), MDB_INVALID);

	/* a truncated file */
	tu_fresh_dir(dir);
	fd = open(data, O_WRONLY | O_CREAT, 0644);
	EXPECT(write(fd, g, 100) == 100);
	close(fd);
	EXPECT_RC(try_open(dir), MDB_INVALID);

	/* a damaged page inside the tree: the checker reports it */
	make_db(dir);
	{
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi dbi;
		MUST(mdb_env_create(&env));
		MUST(mdb_env_open(env, dir, 0, 0644));
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
		MDB_stat st;
		MUST(mdb_stat(txn, dbi, &st));
		mdb_txn_abort(txn);
		mdb_env_close(env);
		EXPECT(st.ms_depth >= 2);
		/* find the root from meta: patch its first slot to point outside */
		uint64_t root[2], tx[2];
		int f2 = open(data, O_RDONLY);
		for (int i = 0; i < 2; i++) {
			EXPECT(pread(f2, &root[i], 8, 4096 * i + 16 + 72 + 40) == 8);
			EXPECT(pread(f2, &tx[i], 8, 4096 * i + 16 + 128) == 8);
		}
		close(f2);
		uint64_t r = tx[0] > tx[1] ? root[0] : root[1];
		uint16_t badslot = 3;
		write_bytes(data, (off_t)(r * 4096 + 16), &badslot, 2);
		MUST(mdb_env_create(&env));
		MUST(mdb_env_open(env, dir, 0, 0644));
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
		char msg[200];
		EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), MDB_CORRUPTED);
		EXPECT(strlen(msg) > 0);
		mdb_txn_abort(txn);
		mdb_env_close(env);
	}
}

static void test_lockfile_foreign(void)
{
	/* a live lock file of another format is refused, not shared */
	const char *dir = "build/env_lock";
	make_db(dir);
	MDB_env *a, *b;
	MUST(mdb_env_create(&a));
	MUST(mdb_env_open(a, dir, 0, 0644));
	char lpath[256];
	snprintf(lpath, sizeof lpath, "%s/lock.mdb", dir);
	uint32_t fmt = 0xdeadbeef, save = 0;
	int fd = open(lpath, O_RDWR);
	EXPECT(pread(fd, &save, 4, 4) == 4);
	EXPECT(pwrite(fd, &fmt, 4, 4) == 4);
	MUST(mdb_env_create(&b));
	/* the first opener still holds the lock file open: b must not re-init it */
	pid_t pid = fork();
	if (pid == 0) {
		int rc = mdb_env_open(b, dir, 0, 0644);
		_exit(rc == MDB_VERSION_MISMATCH ? 0 : 1);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT(pwrite(fd, &save, 4, 4) == 4);
	close(fd);
	mdb_env_close(b);
	mdb_env_close(a);
}

/* Flip random bytes in tree pages: reads and the checker must return
 * errors (or data), never crash. */
static void test_fuzz_pages(void)
{
	const char *dir = "build/env_fuzz";
	char data[256], pristine[256], cmd[600];
	snprintf(data, sizeof data, "%s/data.mdb", dir);
	snprintf(pristine, sizeof pristine, "build/env_fuzz.orig");
	make_db(dir);
	snprintf(cmd, sizeof cmd, "cp %s %s", data, pristine);
	EXPECT(system(cmd) == 0);
	struct stat st;
	EXPECT(stat(data, &st) == 0);
	size_t pages = (size_t)st.st_size / 4096;
	uint64_t s = 4711;
	int errors = 0, runs = 60 * tu_scale();
	for (int r = 0; r < runs; r++) {
		snprintf(cmd, sizeof cmd, "cp %s %s", pristine, data);
		EXPECT(system(cmd) == 0);
		for (int f = 0; f < 8; f++) {
			size_t pg = 2 + tu_below(&s, (unsigned)(pages - 2));
			off_t off = (off_t)(pg * 4096 + tu_below(&s, 4096));
			unsigned char b = (unsigned char)tu_next(&s);
			write_bytes(data, off, &b, 1);
		}
		MDB_env *env;
		MDB_txn *txn;
		MDB_dbi dbi;
		MUST(mdb_env_create(&env));
		if (mdb_env_open(env, dir, MDB_RDONLY, 0644) == 0 &&
		    mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) == 0) {
			if (mdb_dbi_open(txn, NULL, 0, &dbi) == 0) {
				MDB_cursor *c;
				MDB_val k, v;
				if (mdb_cursor_open(txn, dbi, &c) == 0) {
					int rc, n = 0;
					while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0 && n < 100000)
						n++;
					errors += rc != MDB_NOTFOUND;
					mdb_cursor_close(c);
				}
				char msg[200];
				errors += mdb_txn_check(txn, msg, sizeof msg) != 0;
			}
			mdb_txn_abort(txn);
		}
		mdb_env_close(env);
		/* writes on the damaged file: errors are fine, crashes are not */
		MUST(mdb_env_create(&env));
		if (mdb_env_open(env, dir, 0, 0644) == 0 && mdb_txn_begin(env, NULL, 0, &txn) == 0) {
			if (mdb_dbi_open(txn, NULL, 0, &dbi) == 0) {
				char kb[32];
				for (int i = 0; i < 300; i++) {
					snprintf(kb, sizeof kb, "f%06u", tu_below(&s, 400));
					MDB_val k = {strlen(kb), kb}, v = {5, "hello"};
					int rc = (i & 1) ? mdb_del(txn, dbi, &k, NULL) : mdb_put(txn, dbi, &k, &v, 0);
					if (rc && rc != MDB_NOTFOUND)
						break;
				}
			}
			if (mdb_txn_commit(txn) == 0)
				EXPECT(1);
		}
		mdb_env_close(env);
	}
	/* most runs hit something the checker notices */
	EXPECT(errors > 0);
}

int main(void)
{
	test_fuzz_pages();
	test_flags();
	test_damage();
	test_lockfile_foreign();
	return tu_finish("env_test");
}
