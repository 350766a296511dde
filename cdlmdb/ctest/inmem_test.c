/*
 * inmem_test.c - MDB_INMEMORY environments and interruption.
 *
 * In-memory envs: no file appears in the working directory, every DB kind
 * and nested txns work, readers on several threads beside a writer see
 * whole snapshots, a full map is MDB_MAP_FULL and can be grown, a copy is
 * an ordinary data file with the same contents, and mdb_env_load fills a
 * new in-memory env from any read txn.
 *
 * Interrupts: with the env flag or a txn's own flag set, walks, counts,
 * copies and writes stop with EINTR at their next page, the txn is failed,
 * work goes on once the flag is cleared, and committed data is intact.
 * One case sets the env flag from a real signal handler (SIGALRM).
 */
#include "testutil.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#define DIR_ "build/inmem_dir"

static int dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* Mappings of this process exactly size bytes long (/proc/self/maps). */
static int maps_of_size(size_t size)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && hi - lo == size)
			n++;
	}
	fclose(f);
	return n;
}

static MDB_env *open_mem(size_t mapsize, unsigned flags)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, mapsize));
	MUST(mdb_env_set_maxdbs(env, 8));
	MUST(mdb_env_open(env, NULL, MDB_INMEMORY | flags, 0644));
	return env;
}

static void key_of(char *b, size_t cap, unsigned i)
{
	snprintf(b, cap, "key-%08u-with-a-longer-tail", i);
}

/* n keys i -> value "v<i>" into DB name (created with flags) */
static MDB_dbi fill(MDB_env *env, const char *name, unsigned flags, unsigned n, unsigned dups)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	char kb[64], vb[64];
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, name, MDB_CREATE | flags, &dbi));
	for (unsigned i = 0; i < n; i++) {
		key_of(kb, sizeof kb, i);
		for (unsigned d = 0; d < dups; d++) {
			snprintf(vb, sizeof vb, "v%u-%04u", i, d);
			MDB_val k = {strlen(kb), kb}, v = {strlen(vb), vb};
			MUST(mdb_put(txn, dbi, &k, &v, 0));
		}
	}
	MUST(mdb_txn_commit(txn));
	return dbi;
}

/* Do the DBs name of a and b hold the same pairs?  Returns the count. */
static size_t same_contents(MDB_env *a, MDB_env *b, const char *name)
{
	MDB_txn *ta, *tb;
	MDB_dbi da, db;
	MDB_cursor *ca, *cb;
	MUST(mdb_txn_begin(a, NULL, MDB_RDONLY, &ta));
	MUST(mdb_txn_begin(b, NULL, MDB_RDONLY, &tb));
	MUST(mdb_dbi_open(ta, name, 0, &da));
	MUST(mdb_dbi_open(tb, name, 0, &db));
	unsigned fa, fb;
	MUST(mdb_dbi_flags(ta, da, &fa));
	MUST(mdb_dbi_flags(tb, db, &fb));
	EXPECT(fa == fb);
	MUST(mdb_cursor_open(ta, da, &ca));
	MUST(mdb_cursor_open(tb, db, &cb));
	size_t n = 0;
	MDB_val k1, v1, k2, v2;
	int r1 = mdb_cursor_get(ca, &k1, &v1, MDB_FIRST), r2 = mdb_cursor_get(cb, &k2, &v2, MDB_FIRST);
	while (r1 == 0 && r2 == 0) {
		EXPECT(k1.mv_size == k2.mv_size && !memcmp(k1.mv_data, k2.mv_data, k1.mv_size));
		EXPECT(v1.mv_size == v2.mv_size && !memcmp(v1.mv_data, v2.mv_data, v1.mv_size));
		n++;
		r1 = mdb_cursor_get(ca, &k1, &v1, MDB_NEXT);
		r2 = mdb_cursor_get(cb, &k2, &v2, MDB_NEXT);
	}
	EXPECT(r1 == MDB_NOTFOUND && r2 == MDB_NOTFOUND);
	char msg[256];
	EXPECT_RC(mdb_txn_check(ta, msg, sizeof msg), 0);
	EXPECT_RC(mdb_txn_check(tb, msg, sizeof msg), 0);
	mdb_cursor_close(ca);
	mdb_cursor_close(cb);
	mdb_txn_abort(ta);
	mdb_txn_abort(tb);
	return n;
}

static void test_refusals(void)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	EXPECT_RC(mdb_env_open(env, DIR_, MDB_INMEMORY, 0644), EINVAL);	/* a path */
	mdb_env_close(env);
	unsigned bad[] = {MDB_RDONLY, MDB_FIXEDMAP, MDB_PREVSNAPSHOT};
	for (unsigned i = 0; i < 3; i++) {
		MUST(mdb_env_create(&env));
		EXPECT_RC(mdb_env_open(env, NULL, MDB_INMEMORY | bad[i], 0644), EINVAL);
		mdb_env_close(env);
	}
	MUST(mdb_env_create(&env));
	EXPECT_RC(mdb_env_open(env, NULL, 0, 0644), EINVAL);	/* no path, not in memory */
	mdb_env_close(env);
}

static int count_lines(const char *msg, void *ctx)
{
	(void)msg;
	(*(int *)ctx)++;
	return 0;
}

static void test_basic(unsigned extra)
{
	int before = dir_entries(".");
	MDB_env *env = open_mem(64u << 20, extra);
	const char *path = "x";
	MUST(mdb_env_get_path(env, &path));
	EXPECT(path == NULL);
	mdb_filehandle_t fd = 0;
	MUST(mdb_env_get_fd(env, &fd));
	EXPECT(fd == -1);
	unsigned fl = 0;
	MUST(mdb_env_get_flags(env, &fl));
	EXPECT(fl & MDB_INMEMORY);
	fill(env, "plain", 0, 3000, 1);
	fill(env, "counted", MDB_COUNTED | MDB_PREFIX_COMPRESSION, 3000, 1);
	fill(env, "dups", MDB_DUPSORT | MDB_COUNTED | MDB_PREFIX_COMPRESSION, 300, 40);
	MDB_txn *txn, *child;
	MDB_dbi dbi;
	/* nested txns, unless WRITEMAP (refused there as for a file) */
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "plain", 0, &dbi));
	int rc = mdb_txn_begin(env, txn, 0, &child);
	if (extra & MDB_WRITEMAP) {
		EXPECT_RC(rc, MDB_BAD_TXN);
	} else {
		EXPECT_RC(rc, 0);
		MDB_val k = {5, "zzzzz"}, v = {1, "c"};
		MUST(mdb_put(child, dbi, &k, &v, 0));
		mdb_txn_abort(child);
		EXPECT_RC(mdb_get(txn, dbi, &k, &v), MDB_NOTFOUND);
		MUST(mdb_txn_begin(env, txn, 0, &child));
		MUST(mdb_put(child, dbi, &k, &v, 0));
		MUST(mdb_txn_commit(child));
	}
	MUST(mdb_txn_commit(txn));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == 3000u + !(extra & MDB_WRITEMAP));
	uint64_t total = 0;
	MDB_dbi dd;
	MUST(mdb_dbi_open(txn, "dups", 0, &dd));
	MUST(mdb_count_all(txn, dd, 0, &total));
	EXPECT(total == 300u * 40u);
	char kb[64];
	key_of(kb, sizeof kb, 1234);
	MDB_val k = {strlen(kb), kb}, v;
	MUST(mdb_get(txn, dbi, &k, &v));
	EXPECT(v.mv_size == 10 && !memcmp(v.mv_data, "v1234-0000", 10));
	int lines = 0;
	MUST(mdb_reader_list(env, count_lines, &lines));
	EXPECT(lines == ((extra & MDB_NOLOCK) ? 1 : 2));	/* NOLOCK: "(no reader locks)"; else header + us */
	char msg[256];
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	mdb_txn_abort(txn);
	int dead = -1;
	MUST(mdb_reader_check(env, &dead));
	EXPECT(dead == 0);
	MDB_envinfo info;
	MUST(mdb_env_info(env, &info));
	EXPECT(info.me_mapsize == 64u << 20);
	/* three fills and the txn above, which under WRITEMAP changed nothing */
	EXPECT(info.me_last_txnid == ((extra & MDB_WRITEMAP) ? 3u : 4u));
	EXPECT_RC(mdb_env_sync(env, 1), 0);
	mdb_env_close(env);
	EXPECT(dir_entries(".") == before);
}

/* The map is given back on close (ASan does not track mmap). */
static void test_memory_returned(void)
{
	size_t size = 123u * 4096u * 257u;	/* a length nothing else maps */
	int before = maps_of_size(size);
	MDB_env *env = open_mem(size, 0);
	fill(env, "plain", 0, 2000, 1);
	EXPECT(maps_of_size(size) == before + 1);
	mdb_env_close(env);
	EXPECT(maps_of_size(size) == before);
}

static void test_mapfull(void)
{
	MDB_env *env = open_mem(40 * 4096, 0);
	MDB_txn *txn;
	MDB_dbi dbi;
	char kb[64], vb[200];
	memset(vb, 'x', sizeof vb);
	unsigned i, stored = 0;
	int rc = 0;
	for (;;) {
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
		for (i = 0; i < 20 && !rc; i++) {
			key_of(kb, sizeof kb, stored + i);
			MDB_val k = {strlen(kb), kb}, v = {sizeof vb, vb};
			rc = mdb_put(txn, dbi, &k, &v, 0);
		}
		if (rc) {
			/* the put failed the txn and the cause is kept */
			EXPECT(mdb_txn_cause(txn) == rc);
			EXPECT_RC(mdb_put(txn, dbi, &(MDB_val){1, "a"}, &(MDB_val){1, "b"}, 0), MDB_BAD_TXN);
			EXPECT(mdb_txn_cause(txn) == rc);
			mdb_txn_abort(txn);
			break;
		}
		if ((rc = mdb_txn_commit(txn)))
			break;	/* a failed commit has ended its txn */
		stored += 20;
	}
	EXPECT_RC(rc, MDB_MAP_FULL);
	EXPECT(stored > 0);
	MUST(mdb_env_set_mapsize(env, 4u << 20));
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	for (i = 0; i < 2000; i++) {
		key_of(kb, sizeof kb, stored + i);
		MDB_val k = {strlen(kb), kb}, v = {sizeof vb, vb};
		MUST(mdb_put(txn, dbi, &k, &v, 0));
	}
	MUST(mdb_txn_commit(txn));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == stored + 2000);
	char msg[256];
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	mdb_txn_abort(txn);
	mdb_env_close(env);
}

/* ---- readers on threads beside a writer ---- */

static MDB_env *tenv;
static MDB_dbi tdbi;
static volatile int tstop;
static int tbad;

static void *reader(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&tstop, __ATOMIC_ACQUIRE)) {
		MDB_txn *txn;
		MUST(mdb_txn_begin(tenv, NULL, MDB_RDONLY, &txn));
		MDB_cursor *c;
		MUST(mdb_cursor_open(txn, tdbi, &c));
		MDB_val k, v;
		int gen = -1, n = 0, rc;
		for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
			int g;
			memcpy(&g, v.mv_data, sizeof g);
			if (gen < 0)
				gen = g;
			if (g != gen)
				__atomic_add_fetch(&tbad, 1, __ATOMIC_RELAXED);
			n++;
		}
		if (rc != MDB_NOTFOUND || (n != 0 && n != 500))
			__atomic_add_fetch(&tbad, 1, __ATOMIC_RELAXED);
		mdb_cursor_close(c);
		mdb_txn_abort(txn);
	}
	return NULL;
}

static void test_threads(void)
{
	tenv = open_mem(32u << 20, 0);
	MDB_txn *txn;
	MUST(mdb_txn_begin(tenv, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, 0, &tdbi));
	MUST(mdb_txn_commit(txn));
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	char kb[64], vb[300];
	for (int g = 1; g <= 60; g++) {
		MUST(mdb_txn_begin(tenv, NULL, 0, &txn));
		for (unsigned i = 0; i < 500; i++) {
			key_of(kb, sizeof kb, i);
			memset(vb, g, sizeof vb);
			memcpy(vb, &g, sizeof g);
			MDB_val k = {strlen(kb), kb}, v = {(i % 50) ? 16 : sizeof vb, vb};
			MUST(mdb_put(txn, tdbi, &k, &v, 0));
		}
		MUST(mdb_txn_commit(txn));
	}
	__atomic_store_n(&tstop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	EXPECT(tbad == 0);
	MUST(mdb_txn_begin(tenv, NULL, MDB_RDONLY, &txn));
	char msg[256];
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	mdb_txn_abort(txn);
	mdb_env_close(tenv);
}

/* ---- persist and load ---- */

static void test_persist_load(unsigned cpflags)
{
	tu_fresh_dir(DIR_);
	MDB_env *mem = open_mem(64u << 20, 0);
	fill(mem, "plain", 0, 4000, 1);
	fill(mem, "pc", MDB_COUNTED | MDB_PREFIX_COMPRESSION, 4000, 1);
	fill(mem, "dups", MDB_DUPSORT | MDB_PREFIX_COMPRESSION, 200, 300);	/* sub-trees */
	fill(mem, "fixed", MDB_DUPSORT | MDB_DUPFIXED | MDB_COUNTED, 50, 20);
	MUST(mdb_env_copy2(mem, DIR_, cpflags));
	MDB_env *file;
	MUST(mdb_env_create(&file));
	MUST(mdb_env_set_maxdbs(file, 8));
	MUST(mdb_env_open(file, DIR_, MDB_RDONLY, 0644));
	const char *names[] = {"plain", "pc", "dups", "fixed"};
	size_t want[] = {4000, 4000, 200 * 300, 50 * 20};
	for (int i = 0; i < 4; i++)
		EXPECT(same_contents(mem, file, names[i]) == want[i]);
	/* and back into memory, from the file and from the in-memory env */
	MDB_env *srcs[2] = {file, mem};
	for (int s = 0; s < 2; s++) {
		MDB_txn *rt;
		MUST(mdb_txn_begin(srcs[s], NULL, MDB_RDONLY, &rt));
		MDB_env *loaded;
		MUST(mdb_env_create(&loaded));
		MUST(mdb_env_set_maxdbs(loaded, 8));
		MUST(mdb_env_load(loaded, rt, 0, 0644));
		mdb_txn_abort(rt);
		for (int i = 0; i < 4; i++)
			EXPECT(same_contents(mem, loaded, names[i]) == want[i]);
		/* the loaded env is writable and goes on from there */
		fill(loaded, "plain", 0, 4100, 1);
		MDB_txn *txn;
		MDB_dbi dbi;
		MDB_stat st;
		MUST(mdb_txn_begin(loaded, NULL, MDB_RDONLY, &txn));
		MUST(mdb_dbi_open(txn, "plain", 0, &dbi));
		MUST(mdb_stat(txn, dbi, &st));
		EXPECT(st.ms_entries == 4100);
		mdb_txn_abort(txn);
		mdb_env_close(loaded);
	}
	/* an interrupted load leaves an env that can only be closed */
	{
		MDB_txn *rt, *t;
		MDB_env *half;
		MUST(mdb_txn_begin(file, NULL, MDB_RDONLY, &rt));
		MUST(mdb_txn_set_interrupt(rt, 1));
		MUST(mdb_env_create(&half));
		EXPECT_RC(mdb_env_load(half, rt, 0, 0644), EINTR);
		EXPECT_RC(mdb_txn_begin(half, NULL, MDB_RDONLY, &t), EINVAL);
		mdb_env_close(half);
		mdb_txn_abort(rt);
	}
	/* a reset txn is not a snapshot to load from */
	MDB_txn *rt;
	MDB_env *loaded;
	MUST(mdb_txn_begin(file, NULL, MDB_RDONLY, &rt));
	mdb_txn_reset(rt);
	MUST(mdb_env_create(&loaded));
	EXPECT_RC(mdb_env_load(loaded, rt, 0, 0644), MDB_BAD_TXN);
	mdb_env_close(loaded);
	mdb_txn_abort(rt);
	mdb_env_close(file);
	mdb_env_close(mem);
}

/* ---- interrupts ---- */

/* Walk the whole DB; returns the rc that ended the walk, *steps the count. */
static int walk(MDB_txn *txn, MDB_dbi dbi, long *steps)
{
	MDB_cursor *c;
	long n = 0;
	*steps = 0;
	int rc = mdb_cursor_open(txn, dbi, &c);	/* may visit a page: the DB's record */
	if (rc)
		return rc;
	MDB_val k, v;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT))
		n++;
	mdb_cursor_close(c);
	*steps = n;
	return rc;
}

static void test_interrupt_flags(MDB_env *env)
{
	MDB_dbi dbi = fill(env, "big", MDB_COUNTED, 20000, 1);
	MDB_txn *a, *b;
	long n;
	/* the env flag stops a walk at its first page */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &a));
	MUST(mdb_env_set_interrupt(env, 1));
	EXPECT_RC(walk(a, dbi, &n), EINTR);
	EXPECT(n == 0);
	MDB_val k = {3, "abc"}, v;
	EXPECT_RC(mdb_get(a, dbi, &k, &v), MDB_BAD_TXN);	/* the txn is failed */
	EXPECT(mdb_txn_cause(a) == EINTR);
	MUST(mdb_env_set_interrupt(env, 0));
	EXPECT_RC(mdb_get(a, dbi, &k, &v), MDB_BAD_TXN);	/* until reset */
	mdb_txn_reset(a);
	MUST(mdb_txn_renew(a));
	EXPECT(mdb_txn_cause(a) == 0);	/* a renewed txn starts afresh */
	EXPECT_RC(walk(a, dbi, &n), MDB_NOTFOUND);
	EXPECT(n == 20000);
	/* one txn's flag: b is stopped, a (and a new txn) are not */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &b));
	MUST(mdb_txn_set_interrupt(b, 1));
	EXPECT_RC(walk(b, dbi, &n), EINTR);
	EXPECT_RC(walk(a, dbi, &n), MDB_NOTFOUND);
	EXPECT(n == 20000);
	uint64_t cnt = 0;
	EXPECT_RC(mdb_count_all(b, dbi, 0, &cnt), MDB_BAD_TXN);
	mdb_txn_reset(b);
	MUST(mdb_txn_renew(b));	/* a renew clears the txn's flag */
	MUST(mdb_count_all(b, dbi, 0, &cnt));
	EXPECT(cnt == 20000);
	/* a count and a copy under the txn flag */
	MUST(mdb_txn_set_interrupt(b, 1));
	char lo[64], hi[64];
	key_of(lo, sizeof lo, 10);
	key_of(hi, sizeof hi, 19000);
	MDB_val l = {strlen(lo), lo}, h = {strlen(hi), hi};
	EXPECT_RC(mdb_count_range(b, dbi, &l, &h, 0, &cnt), EINTR);
	mdb_txn_abort(b);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &b));
	int fd = open("/dev/null", O_WRONLY);
	EXPECT(fd >= 0);
	MUST(mdb_txn_copyfd(b, fd, 0));
	MUST(mdb_txn_copyfd(b, fd, MDB_CP_COMPACT));
	MUST(mdb_txn_set_interrupt(b, 1));
	EXPECT_RC(mdb_txn_copyfd(b, fd, 0), EINTR);
	mdb_txn_abort(b);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &b));
	MUST(mdb_txn_set_interrupt(b, 1));
	EXPECT_RC(mdb_txn_copyfd(b, fd, MDB_CP_COMPACT), EINTR);
	mdb_txn_abort(b);
	close(fd);
	mdb_txn_abort(a);
	/* a write txn: stopped mid-way, its commit refused, nothing kept */
	MDB_txn *w;
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	char kb[64];
	int rc = 0;
	unsigned i;
	for (i = 0; i < 5000 && !rc; i++) {
		if (i == 2500)
			MUST(mdb_txn_set_interrupt(w, 1));
		key_of(kb, sizeof kb, 100000 + i);
		MDB_val kk = {strlen(kb), kb}, vv = {4, "new!"};
		rc = mdb_put(w, dbi, &kk, &vv, 0);
	}
	EXPECT_RC(rc, EINTR);
	EXPECT(i == 2501);
	EXPECT_RC(mdb_txn_commit(w), MDB_BAD_TXN);	/* commit also ends it */
	/* a nested txn's family shares the flag */
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MDB_txn *child;
	MUST(mdb_txn_begin(env, w, 0, &child));
	MUST(mdb_txn_set_interrupt(w, 1));
	MDB_val kk = {4, "kkkk"}, vv = {1, "v"};
	EXPECT_RC(mdb_put(child, dbi, &kk, &vv, 0), EINTR);
	mdb_txn_abort(w);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &a));
	MUST(mdb_count_all(a, dbi, 0, &cnt));
	EXPECT(cnt == 20000);
	char msg[256];
	EXPECT_RC(mdb_txn_check(a, msg, sizeof msg), 0);
	mdb_txn_abort(a);
}

static MDB_env *sig_env;
static volatile sig_atomic_t sig_seen;

static void on_alarm(int sig)
{
	(void)sig;
	sig_seen = 1;
	mdb_env_set_interrupt(sig_env, 1);
}

/* A real signal handler sets the env flag during repeated walks. */
static void test_interrupt_signal(MDB_env *env, MDB_dbi dbi)
{
	sig_env = env;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 0}, {0, 20000}};	/* once, in 20 ms */
	setitimer(ITIMER_REAL, &it, NULL);
	int rc = MDB_NOTFOUND;
	long n, rounds = 0;
	while (rc == MDB_NOTFOUND && rounds < 100000) {
		MDB_txn *txn;
		rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
		if (rc)
			break;
		rc = walk(txn, dbi, &n);
		if (rc == MDB_NOTFOUND)
			EXPECT(n == 20000);
		mdb_txn_abort(txn);
		rounds++;
	}
	EXPECT_RC(rc, EINTR);
	EXPECT(sig_seen);
	signal(SIGALRM, SIG_DFL);
	MUST(mdb_env_set_interrupt(env, 0));
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	EXPECT_RC(walk(txn, dbi, &n), MDB_NOTFOUND);
	EXPECT(n == 20000);
	mdb_txn_abort(txn);
}

static void test_interrupts(int inmem)
{
	MDB_env *env;
	if (inmem) {
		env = open_mem(256u << 20, 0);
	} else {
		tu_fresh_dir(DIR_);
		MUST(mdb_env_create(&env));
		MUST(mdb_env_set_mapsize(env, 256u << 20));
		MUST(mdb_env_set_maxdbs(env, 8));
		MUST(mdb_env_open(env, DIR_, MDB_NOSYNC, 0644));
	}
	test_interrupt_flags(env);
	MDB_txn *txn;
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_dbi_open(txn, "big", 0, &dbi));
	mdb_txn_abort(txn);
	test_interrupt_signal(env, dbi);
	mdb_env_close(env);
}

/* value of key i in round r, long enough that the pages fill up */
static void val_of(char *b, size_t cap, unsigned i, unsigned r)
{
	snprintf(b, cap, "r%u-value-of-%06u-padded-out-to-some-length", r, i);
}

static void put_round(MDB_txn *txn, MDB_dbi dbi, unsigned n, unsigned r)
{
	char kb[64], vb[64];
	for (unsigned i = 0; i < n; i++) {
		key_of(kb, sizeof kb, i);
		val_of(vb, sizeof vb, i, r);
		MDB_val k = {strlen(kb), kb}, v = {strlen(vb), vb};
		MUST(mdb_put(txn, dbi, &k, &v, 0));
	}
}

/* every key 0..n-1 holds its round-r value (and nothing else is there) */
static void expect_round(MDB_txn *txn, MDB_dbi dbi, unsigned n, unsigned r)
{
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == n);
	char kb[64], vb[64];
	for (unsigned i = 0; i < n; i++) {
		key_of(kb, sizeof kb, i);
		val_of(vb, sizeof vb, i, r);
		MDB_val k = {strlen(kb), kb}, v;
		EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
		EXPECT(v.mv_size == strlen(vb) && !memcmp(v.mv_data, vb, v.mv_size));
	}
}

/* The top txn of an in-memory env builds its pages in the map; a nested
 * txn copies them to the heap before it changes them.  A child that
 * rewrites every page its parent built and aborts leaves the parent's
 * pages as they were; one that commits hands its copies to the parent,
 * whose commit puts them in the map; an aborted top txn leaves nothing.
 * A reader on the last commit sees none of it until the commit. */
static void test_nested_over_map_pages(void)
{
	MDB_env *env = open_mem(64 << 20, 0);
	const unsigned n = 4000;
	MDB_txn *top, *child, *rd;
	MDB_dbi dbi;
	MUST(mdb_txn_begin(env, NULL, 0, &top));
	MUST(mdb_dbi_open(top, "n", MDB_CREATE, &dbi));
	put_round(top, dbi, n, 0);
	MUST(mdb_txn_commit(top));

	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rd));
	MUST(mdb_txn_begin(env, NULL, 0, &top));
	put_round(top, dbi, n, 1);	/* every leaf copied, in the map */
	MUST(mdb_txn_begin(env, top, 0, &child));
	put_round(child, dbi, n, 2);
	expect_round(child, dbi, n, 2);
	mdb_txn_abort(child);
	expect_round(top, dbi, n, 1);
	MUST(mdb_txn_begin(env, top, 0, &child));
	put_round(child, dbi, n, 3);
	MDB_txn *grand;
	MUST(mdb_txn_begin(env, child, 0, &grand));
	put_round(grand, dbi, n / 2, 4);
	mdb_txn_abort(grand);
	MUST(mdb_txn_commit(child));
	expect_round(top, dbi, n, 3);
	put_round(top, dbi, n / 3, 3);	/* the parent goes on over the child's copies */
	expect_round(rd, dbi, n, 0);
	MUST(mdb_txn_commit(top));
	expect_round(rd, dbi, n, 0);
	mdb_txn_abort(rd);

	MUST(mdb_txn_begin(env, NULL, 0, &top));
	put_round(top, dbi, n, 5);
	mdb_txn_abort(top);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rd));
	expect_round(rd, dbi, n, 3);
	char msg[256];
	EXPECT_RC(mdb_txn_check(rd, msg, sizeof msg), 0);
	mdb_txn_abort(rd);
	mdb_env_close(env);
}

int main(void)
{
	test_refusals();
	test_basic(0);
	test_basic(MDB_NOLOCK);
	test_basic(MDB_WRITEMAP);
	test_nested_over_map_pages();
	test_memory_returned();
	test_mapfull();
	test_threads();
	test_persist_load(0);
	test_persist_load(MDB_CP_COMPACT);
	test_interrupts(1);
	test_interrupts(0);
	return tu_finish("inmem_test");
}
