/*
 * crash_test.c - writers and readers killed with SIGKILL at random moments.
 *
 * The parent keeps the environment open (so the lock file and its robust
 * mutexes persist), forks a writer that commits numbered transactions and
 * reports each finished commit through a pipe, and kills it after a random
 * delay.  Afterwards: a new write transaction must start (the dead writer's
 * mutex is recovered), the last reported commit must be present in full,
 * nothing from a later, unfinished commit may be half visible, and
 * mdb_txn_check must pass.  A killed reader's slot must be reclaimed by
 * mdb_reader_check.  The writer rounds run twice: on a plain main DB and on
 * a prefix-compressed one (MDB_PREFIX_COMPRESSION, set while it is empty).
 */
#include "testutil.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *DIRC = "build/crash_env";
static unsigned g_flags;	/* the main DB's flags: 0, then MDB_PREFIX_COMPRESSION */

static MDB_env *open_env(void)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_open(env, DIRC, 0, 0644));
	return env;
}

/* Transaction n writes "gen" = n and rewrites keys k(j) for j in a window to
 * value "n:j", plus an overflow value every few commits. */
static void writer(int fd, uint64_t seed, int start)
{
	MDB_env *env = open_env();
	MDB_dbi dbi;
	char kb[32], vb[6000];
	for (int n = start;; n++) {
		MDB_txn *txn;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, NULL, g_flags, &dbi));
		int count = 50 + (int)tu_below(&seed, 200);
		for (int i = 0; i < count; i++) {
			unsigned j = tu_below(&seed, 3000);
			snprintf(kb, sizeof kb, "k%05u", j);
			int vl = snprintf(vb, sizeof vb, "%d:%u", n, j);
			if (j % 97 == 0) {
				memset(vb + vl, '#', 4000);
				vl += 4000;
			}
			MDB_val k = {strlen(kb), kb}, v = {(size_t)vl, vb};
			if (tu_below(&seed, 5) == 0)
				mdb_del(txn, dbi, &k, NULL);
			else
				MUST(mdb_put(txn, dbi, &k, &v, 0));
		}
		MDB_val gk = {3, "gen"}, gv = {sizeof n, &n};
		MUST(mdb_put(txn, dbi, &gk, &gv, 0));
		MUST(mdb_txn_commit(txn));
		if (write(fd, &n, sizeof n) != sizeof n)
			_exit(3);
	}
}

/* Every value must name a generation <= gen and its own key. */
static void verify(MDB_env *env, int reported)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, 0, &txn)); /* must not hang on a dead writer's mutex */
	MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
	unsigned fl = 0;
	MUST(mdb_dbi_flags(txn, dbi, &fl));
	EXPECT((fl & MDB_PREFIX_COMPRESSION) == g_flags);
	MDB_val gk = {3, "gen"};
	int gen = -1;
	if (mdb_get(txn, dbi, &gk, &v) == 0 && v.mv_size == sizeof gen)
		memcpy(&gen, v.mv_data, sizeof gen);
	EXPECT(gen >= reported);
	MUST(mdb_cursor_open(txn, dbi, &c));
	while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
		if (k.mv_size != 6 || ((char *)k.mv_data)[0] != 'k')
			continue;
		char kbuf[8];
		memcpy(kbuf, k.mv_data, 6);
		kbuf[6] = 0;
		int g = -1;
		unsigned j = 0, kj = 0;
		char tmp[32];
		size_t l = v.mv_size < 31 ? v.mv_size : 31;
		memcpy(tmp, v.mv_data, l);
		tmp[l] = 0;
		EXPECT(sscanf(tmp, "%d:%u", &g, &j) == 2);
		EXPECT(sscanf(kbuf + 1, "%05u", &kj) == 1);
		EXPECT(g <= gen && j == kj);
	}
	mdb_cursor_close(c);
	char msg[256];
	int rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT(rc == 0);
	if (rc)
		fprintf(stderr, "check: %s\n", msg);
	/* and the env keeps working */
	MDB_val xk = {5, "after"}, xv = {2, "ok"};
	EXPECT_RC(mdb_put(txn, dbi, &xk, &xv, 0), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
}

/* Rounds of a writer killed at a random moment, each verified. */
static void writer_rounds(MDB_env *env, uint64_t *sp, int rounds)
{
	uint64_t s = *sp;
	int next = 1;
	for (int r = 0; r < rounds; r++) {
		int p[2];
		if (pipe(p)) {
			EXPECT(0);
			return;
		}
		pid_t pid = fork();
		if (pid == 0) {
			close(p[0]);
			writer(p[1], tu_next(&s) ^ (uint64_t)r, next);
			_exit(0);
		}
		close(p[1]);
		/* let it commit a few, then kill it at a random moment */
		int want = 1 + (int)tu_below(&s, 6), got = 0, n, last = 0;
		while (got < want && read(p[0], &n, sizeof n) == sizeof n) {
			last = n;
			got++;
		}
		usleep(tu_below(&s, 20000));
		kill(pid, SIGKILL);
		while (read(p[0], &n, sizeof n) == sizeof n)
			last = n;
		close(p[0]);
		int st;
		waitpid(pid, &st, 0);
		EXPECT(WIFSIGNALED(st));
		EXPECT(last >= next);
		verify(env, last);
		next = last + 1000; /* generations of later rounds are larger */
	}
	*sp = s;
}

int main(void)
{
	alarm(150);
	uint64_t s = 99, s2 = 199;
	int rounds = 8 * tu_scale();
	/* a prefix-compressed main DB first, in an env of its own */
	g_flags = MDB_PREFIX_COMPRESSION;
	tu_fresh_dir(DIRC);
	MDB_env *env = open_env();
	writer_rounds(env, &s2, rounds);
	mdb_env_close(env);
	g_flags = 0;
	tu_fresh_dir(DIRC);
	env = open_env();
	writer_rounds(env, &s, rounds);
	/* a reader dies holding its slot */
	pid_t pid = fork();
	if (pid == 0) {
		MDB_env *e2 = open_env();
		MDB_txn *rt;
		MUST(mdb_txn_begin(e2, NULL, MDB_RDONLY, &rt));
		pause();
		_exit(0);
	}
	int dead = -1;
	for (int tries = 0; tries < 500; tries++) {
		MDB_envinfo info;
		MUST(mdb_env_info(env, &info));
		if (info.me_numreaders >= 1)
			break;
		usleep(2000);
	}
	usleep(50000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	EXPECT_RC(mdb_reader_check(env, &dead), 0);
	EXPECT(dead == 1);
	EXPECT_RC(mdb_reader_check(env, &dead), 0);
	EXPECT(dead == 0);
	mdb_env_close(env);
	return tu_finish("crash_test");
}
