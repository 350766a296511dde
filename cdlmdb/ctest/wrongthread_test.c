/*
 * wrongthread_test.c - write transactions ended on a thread that did not
 * begin them, and writers of other processes.
 *
 * The writer lock belongs to a process, not to a thread (lock.c, "The
 * writer lock"): a commit or abort on any thread ends the txn and frees the
 * lock, so the next writer on any thread of this or another process goes
 * on; a holder process that is killed leaves the lock to the next writer.
 * (A Go goroutine may move to another OS thread between BeginTxn and
 * Commit, and a finalizer aborts on a thread of its own.)
 *
 * Every case runs in a forked child, so a crash fails that case instead of
 * the whole program, and a watchdog alarm turns a hang into a failure.
 */
#include "testutil.h"
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a two-party step counter: "owner" thread and main thread ---- */

static pthread_mutex_t st_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t st_cv = PTHREAD_COND_INITIALIZER;
static int st_step;

static void step_to(int s)
{
	pthread_mutex_lock(&st_mu);
	st_step = s;
	pthread_cond_broadcast(&st_cv);
	pthread_mutex_unlock(&st_mu);
}

static void step_wait(int s)
{
	pthread_mutex_lock(&st_mu);
	while (st_step < s)
		pthread_cond_wait(&st_cv, &st_mu);
	pthread_mutex_unlock(&st_mu);
}

/* ---- small env helpers ---- */

static MDB_env *wt_open(const char *dir)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 4 << 20));
	MUST(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
	return env;
}

static int wt_put(MDB_txn *txn, const char *k, const char *v)
{
	MDB_dbi dbi;
	int rc = mdb_dbi_open(txn, NULL, 0, &dbi);
	if (rc)
		return rc;
	MDB_val key = {strlen(k), (void *)k}, val = {strlen(v), (void *)v};
	return mdb_put(txn, dbi, &key, &val, 0);
}

/* one whole write txn on the calling thread: begin, put, commit */
static int wt_write(MDB_env *env, const char *k, const char *v)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(env, NULL, 0, &txn);
	if (rc)
		return rc;
	rc = wt_put(txn, k, v);
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	return mdb_txn_commit(txn);
}

/* 0 and the value matches, MDB_NOTFOUND, or another error; the snapshot is
 * also run through the checker */
static int wt_lookup(MDB_env *env, const char *k, const char *want)
{
	MDB_txn *txn;
	MDB_dbi dbi;
	char msg[256];
	int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return rc;
	rc = mdb_txn_check(txn, msg, sizeof msg);
	if (rc)
		fprintf(stderr, "check: %s\n", msg);
	if (!rc)
		rc = mdb_dbi_open(txn, NULL, 0, &dbi);
	if (!rc) {
		MDB_val key = {strlen(k), (void *)k}, val;
		rc = mdb_get(txn, dbi, &key, &val);
		if (!rc && (val.mv_size != strlen(want) || memcmp(val.mv_data, want, val.mv_size)))
			rc = MDB_CORRUPTED;
	}
	mdb_txn_abort(txn);
	return rc;
}

/* ---- the owner thread: begins a write txn and hands it to main ---- */

enum { END_ABORT, END_COMMIT };

static struct {
	MDB_env *a, *b;		/* a: the env whose txn goes astray; b: another env */
	MDB_txn *txn;		/* begun by the owner */
	int close_a_here;	/* the owner (not main) closes a */
	int exit_early;		/* the owner exits right after handing over */
	int adopt;		/* the owner writes to a again after main ended its txn */
	int rc_begin, rc_b, rc_adopt;
} W;

static void *owner_main(void *arg)
{
	(void)arg;
	W.rc_begin = mdb_txn_begin(W.a, NULL, 0, &W.txn);
	if (!W.rc_begin)
		W.rc_begin = wt_put(W.txn, "stray", "value-from-owner");
	step_to(1);	/* main ends the txn */
	if (W.exit_early)
		return NULL;
	step_wait(2);
	if (W.adopt) {
		W.rc_adopt = wt_write(W.a, "adopted", "by-owner");
		step_to(3);
		step_wait(4);
	}
	if (W.close_a_here) {
		mdb_env_close(W.a);
		W.a = NULL;
	}
	/* a write txn of another env on this thread */
	W.rc_b = wt_write(W.b, "b-key", "b-value");
	return NULL;
}

static void wt_setup(const char *name)
{
	char da[128], db[128];
	snprintf(da, sizeof da, "build/wt_%s_a", name);
	snprintf(db, sizeof db, "build/wt_%s_b", name);
	tu_fresh_dir(da);
	tu_fresh_dir(db);
	memset(&W, 0, sizeof W);
	st_step = 0;
	/* both open before anything is unmapped, so b's lock file cannot land
	 * where a's was */
	W.a = wt_open(da);
	W.b = wt_open(db);
	EXPECT_RC(wt_write(W.a, "base", "base-value"), 0);
}

static MDB_env *wt_reopen_a(const char *name)
{
	char da[128];
	snprintf(da, sizeof da, "build/wt_%s_a", name);
	return wt_open(da);
}

/* Start the owner thread and wait until it has begun its write txn on a
 * (and put into it); the txn is then main's to end. */
static pthread_t owner_start(void)
{
	pthread_t t;
	MUST(pthread_create(&t, NULL, owner_main, NULL));
	step_wait(1);
	EXPECT_RC(W.rc_begin, 0);
	return t;
}

/* The txn ends on main (not its owner), main closes a, then the owner
 * writes to b.  The case the original crash report describes. */
static void case_end_then_close(const char *name, int how)
{
	wt_setup(name);
	pthread_t t = owner_start();
	if (how == END_COMMIT)
		EXPECT_RC(mdb_txn_commit(W.txn), 0);
	else
		mdb_txn_abort(W.txn);
	mdb_env_close(W.a);
	W.a = NULL;
	step_to(2);
	pthread_join(t, NULL);
	EXPECT_RC(W.rc_b, 0);
	EXPECT_RC(wt_lookup(W.b, "b-key", "b-value"), 0);

	/* a fresh handle on a sees exactly what was committed */
	MDB_env *a2 = wt_reopen_a(name);
	EXPECT_RC(wt_lookup(a2, "base", "base-value"), 0);
	EXPECT_RC(wt_lookup(a2, "stray", "value-from-owner"), how == END_COMMIT ? 0 : MDB_NOTFOUND);
	/* whoever ended the txn, writers get the lock again */
	EXPECT_RC(wt_write(a2, "after", "owner-gone"), 0);
	EXPECT_RC(wt_lookup(a2, "after", "owner-gone"), 0);
	mdb_env_close(a2);
	mdb_env_close(W.b);
}

/* The txn ends on main; the owner closes a itself, then writes to b. */
static void case_owner_closes(const char *name)
{
	wt_setup(name);
	W.close_a_here = 1;
	pthread_t t = owner_start();
	EXPECT_RC(mdb_txn_commit(W.txn), 0);
	step_to(2);
	pthread_join(t, NULL);
	EXPECT_RC(W.rc_b, 0);
	MDB_env *a2 = wt_reopen_a(name);
	EXPECT_RC(wt_lookup(a2, "stray", "value-from-owner"), 0);
	EXPECT_RC(wt_write(a2, "after", "x"), 0);
	mdb_env_close(a2);
	mdb_env_close(W.b);
}

/* Main closes a while the owner's txn is still open (close aborts it on the
 * wrong thread), then the owner writes to b. */
static void case_close_live_txn(const char *name)
{
	wt_setup(name);
	pthread_t t = owner_start();
	mdb_env_close(W.a);	/* also ends (aborts) W.txn */
	W.a = NULL;
	step_to(2);
	pthread_join(t, NULL);
	EXPECT_RC(W.rc_b, 0);
	MDB_env *a2 = wt_reopen_a(name);
	EXPECT_RC(wt_lookup(a2, "stray", "value-from-owner"), MDB_NOTFOUND);
	EXPECT_RC(wt_write(a2, "after", "x"), 0);
	mdb_env_close(a2);
	mdb_env_close(W.b);
}

/* A write txn of another process, after this one's txns ended on the
 * wrong thread: it neither waits nor fails. */
static int other_process_write(const char *name, const char *k, const char *v)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return errno;
	if (pid == 0) {
		MDB_env *env = wt_reopen_a(name);
		int rc = wt_write(env, k, v);
		mdb_env_close(env);
		_exit(rc ? 1 : 0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : MDB_PROBLEM;
}

/* The txn ends on main; right after, main and then the owner begin and
 * commit write txns of their own, another process writes too, and
 * everything committed is there. */
static void case_any_thread(const char *name)
{
	wt_setup(name);
	W.adopt = 1;
	pthread_t t = owner_start();
	mdb_txn_abort(W.txn);
	EXPECT_RC(wt_write(W.a, "main", "writes-again"), 0);
	/* readers are not affected */
	EXPECT_RC(wt_lookup(W.a, "base", "base-value"), 0);
	step_to(2);
	step_wait(3);
	EXPECT_RC(W.rc_adopt, 0);
	EXPECT_RC(other_process_write(name, "other", "process"), 0);
	EXPECT_RC(wt_write(W.a, "main2", "again"), 0);
	EXPECT_RC(wt_lookup(W.a, "adopted", "by-owner"), 0);
	EXPECT_RC(wt_lookup(W.a, "other", "process"), 0);
	EXPECT_RC(wt_lookup(W.a, "stray", "value-from-owner"), MDB_NOTFOUND);
	step_to(4);
	pthread_join(t, NULL);
	EXPECT_RC(W.rc_b, 0);
	mdb_env_close(W.a);
	MDB_env *a2 = wt_reopen_a(name);
	EXPECT_RC(wt_lookup(a2, "main", "writes-again"), 0);
	EXPECT_RC(wt_lookup(a2, "main2", "again"), 0);
	EXPECT_RC(wt_lookup(a2, "adopted", "by-owner"), 0);
	mdb_env_close(a2);
	mdb_env_close(W.b);
}

/* Another process holds the writer lock and is killed: our next write txn
 * takes the lock over, and the dead writer's changes are not there. */
static void case_killed_holder(const char *name)
{
	wt_setup(name);
	int fds[2];
	MUST(pipe(fds) ? errno : 0);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		MDB_env *env = wt_reopen_a(name);
		MDB_txn *txn;
		if (mdb_txn_begin(env, NULL, 0, &txn) || wt_put(txn, "dead", "writer"))
			_exit(1);
		char c = 1;
		if (write(fds[1], &c, 1) != 1)
			_exit(1);
		pause();	/* killed here, holding the lock */
		_exit(1);
	}
	close(fds[1]);
	char c = 0;
	EXPECT(read(fds[0], &c, 1) == 1 && c == 1);
	close(fds[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	EXPECT_RC(wt_write(W.a, "after", "kill"), 0);
	EXPECT_RC(wt_lookup(W.a, "after", "kill"), 0);
	EXPECT_RC(wt_lookup(W.a, "dead", "writer"), MDB_NOTFOUND);
	mdb_env_close(W.a);
	mdb_env_close(W.b);
}

/* The owner thread exits after main ended its txn: writers go on, and close
 * unmaps as usual. */
static void case_owner_exits(const char *name)
{
	wt_setup(name);
	W.exit_early = 1;
	pthread_t t = owner_start();
	EXPECT_RC(mdb_txn_commit(W.txn), 0);
	pthread_join(t, NULL);
	EXPECT_RC(wt_write(W.a, "later", "recovered"), 0);
	EXPECT_RC(wt_write(W.a, "later2", "recovered"), 0);
	EXPECT_RC(wt_lookup(W.a, "stray", "value-from-owner"), 0);
	mdb_env_close(W.a);
	EXPECT_RC(wt_write(W.b, "b-key", "b-value"), 0);
	MDB_env *a2 = wt_reopen_a(name);
	EXPECT_RC(wt_lookup(a2, "later", "recovered"), 0);
	mdb_env_close(a2);
	mdb_env_close(W.b);
}

/* Another handle of the same file in this process holds the lock for a
 * txn: a writer on the first handle waits for it and then succeeds.
 * (Whether it reaches the lock while the other txn is still open depends on
 * scheduling; either way its txn must succeed.) */
static MDB_env *nh_env;
static int nh_rc_hold, nh_rc_wait;

static void *nh_holder(void *arg)
{
	(void)arg;
	MDB_txn *txn;
	nh_rc_hold = mdb_txn_begin(nh_env, NULL, 0, &txn);
	if (!nh_rc_hold)
		nh_rc_hold = wt_put(txn, "held", "by-other-handle");
	step_to(5);
	step_wait(6);
	if (!nh_rc_hold)
		nh_rc_hold = mdb_txn_commit(txn);
	return NULL;
}

static void *nh_waiter(void *arg)
{
	(void)arg;
	nh_rc_wait = wt_write(W.a, "waited", "first-handle");
	return NULL;
}

static void case_new_holder(const char *name)
{
	wt_setup(name);
	W.exit_early = 1;
	pthread_t t, h, w;
	t = owner_start();
	mdb_txn_abort(W.txn);
	pthread_join(t, NULL);
	nh_env = wt_reopen_a(name);
	MUST(pthread_create(&h, NULL, nh_holder, NULL));
	step_wait(5);
	EXPECT_RC(nh_rc_hold, 0);
	MUST(pthread_create(&w, NULL, nh_waiter, NULL));
	sched_yield();
	step_to(6);
	pthread_join(h, NULL);
	pthread_join(w, NULL);
	EXPECT_RC(nh_rc_hold, 0);
	EXPECT_RC(nh_rc_wait, 0);
	EXPECT_RC(wt_lookup(nh_env, "held", "by-other-handle"), 0);
	EXPECT_RC(wt_lookup(nh_env, "waited", "first-handle"), 0);
	EXPECT_RC(wt_lookup(nh_env, "stray", "value-from-owner"), MDB_NOTFOUND);
	mdb_env_close(nh_env);
	mdb_env_close(W.a);
	mdb_env_close(W.b);
}

struct wt_case {
	const char *name;
	void (*run)(const char *name, int how);
	int how;
};

static void run_owner_closes(const char *n, int how) { (void)how; case_owner_closes(n); }
static void run_close_live(const char *n, int how) { (void)how; case_close_live_txn(n); }
static void run_any_thread(const char *n, int how) { (void)how; case_any_thread(n); }
static void run_killed_holder(const char *n, int how) { (void)how; case_killed_holder(n); }
static void run_owner_exits(const char *n, int how) { (void)how; case_owner_exits(n); }
static void run_new_holder(const char *n, int how) { (void)how; case_new_holder(n); }

int main(void)
{
	static const struct wt_case cases[] = {
		{"abort_close", case_end_then_close, END_ABORT},
		{"commit_close", case_end_then_close, END_COMMIT},
		{"owner_closes", run_owner_closes, 0},
		{"close_live", run_close_live, 0},
		{"any_thread", run_any_thread, 0},
		{"killed_holder", run_killed_holder, 0},
		{"owner_exits", run_owner_exits, 0},
		{"new_holder", run_new_holder, 0},
	};
	const char *only = getenv("WT_CASE");	/* run one case (debugging) */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (only && strcmp(only, cases[i].name))
			continue;
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			alarm(60);	/* a deadlock fails the case instead of hanging */
			tu_checks = tu_failures = 0;	/* the parent's tallies */
			cases[i].run(cases[i].name, cases[i].how);
			char label[64];
			snprintf(label, sizeof label, "wrongthread/%s", cases[i].name);
			int rc = tu_finish(label);
			fflush(NULL);
			_exit(rc);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		tu_checks++;
		if (WIFSIGNALED(st)) {
			tu_failures++;
			fprintf(stderr, "case %s: child killed by signal %d%s\n", cases[i].name,
				WTERMSIG(st), WTERMSIG(st) == SIGALRM ? " (deadlock)" : "");
		} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			tu_failures++;
			fprintf(stderr, "case %s: child failed (status %d)\n", cases[i].name,
				WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		}
	}
	return tu_finish("wrongthread_test");
}
