/*
 * guard_test.c - one write txn used by two threads at once (guard.c).
 *
 * A call that overlaps another thread's call on the same write txn gets
 * EBUSY, and the txn can no longer commit (MDB_BAD_TXN, cause EBUSY);
 * calls that only follow each other from different threads (a goroutine
 * that moved) work.  To make calls overlap for sure, a comparator parks
 * the first thread inside mdb_put until the second thread has tried.
 *
 * Every case checks the file afterwards: the data of a refused txn is
 * absent, the next writer works, and the checker is clean.
 */
#include "testutil.h"
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

static const char *dir = "build/guard_env";

/* ---- a step counter shared by two threads ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int step;

static void step_to(int s)
{
	pthread_mutex_lock(&mu);
	step = s;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

static void step_wait(int s)
{
	pthread_mutex_lock(&mu);
	while (step < s)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

/* The comparator parks its caller once when park_armed is set: it
 * announces step 1 and waits for step 2. */
static int park_armed;

static int parking_cmp(const MDB_val *a, const MDB_val *b)
{
	if (__atomic_exchange_n(&park_armed, 0, __ATOMIC_ACQ_REL)) {
		step_to(1);
		step_wait(2);
	}
	size_t n = a->mv_size < b->mv_size ? a->mv_size : b->mv_size;
	int c = memcmp(a->mv_data, b->mv_data, n);
	return c ? c : (a->mv_size < b->mv_size ? -1 : a->mv_size > b->mv_size);
}

static MDB_env *env;
static MDB_dbi dbi;

static void setup(void)
{
	tu_fresh_dir(dir);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 64 << 20));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, dir, MDB_NOSYNC, 0644));
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "d", MDB_CREATE, &dbi));
	MUST(mdb_txn_commit(txn));
}

static MDB_txn *begin_w(void)
{
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_set_compare(txn, dbi, parking_cmp));
	return txn;
}

static int put_s(MDB_txn *txn, const char *k, const char *v)
{
	MDB_val key = { strlen(k), (void *)k }, val = { strlen(v), (void *)v };
	return mdb_put(txn, dbi, &key, &val, 0);
}

/* 1 if k is present in the committed state */
static int present(const char *k)
{
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_set_compare(txn, dbi, parking_cmp));
	MDB_val key = { strlen(k), (void *)k }, val;
	int rc = mdb_get(txn, dbi, &key, &val);
	mdb_txn_abort(txn);
	EXPECT(rc == 0 || rc == MDB_NOTFOUND);
	return rc == 0;
}

static void check_clean(void)
{
	MDB_txn *txn;
	char msg[256] = "";
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_set_compare(txn, dbi, parking_cmp));
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	if (msg[0])
		fprintf(stderr, "checker: %s\n", msg);
	mdb_txn_abort(txn);
}

/* ---- the thread that is parked inside a put ---- */
struct parked {
	MDB_txn *txn;
	const char *key;
	int rc;
};

static void *parked_put(void *p)
{
	struct parked *pp = p;
	__atomic_store_n(&park_armed, 1, __ATOMIC_RELEASE);
	pp->rc = put_s(pp->txn, pp->key, "parked");
	return NULL;
}

/* Start a thread that parks inside mdb_put on txn. */
static pthread_t park_in(struct parked *pp)
{
	pthread_t th;
	step = 0;
	if (pthread_create(&th, NULL, parked_put, pp))
		exit(2);
	step_wait(1);
	return th;
}

/* A put from a second thread while the first is inside: EBUSY for the
 * newcomer, the first put completes, the commit fails with cause EBUSY. */
static void overlapping_put(void)
{
	MDB_txn *txn = begin_w();
	MUST(put_s(txn, "k0", "before"));	/* the tree has a page to compare against */
	struct parked pp = { txn, "k1", -1 };
	pthread_t th = park_in(&pp);
	EXPECT_RC(put_s(txn, "k2", "intruder"), EBUSY);
	MDB_val key = { 2, "k0" }, val;
	EXPECT_RC(mdb_get(txn, dbi, &key, &val), EBUSY);
	step_to(2);
	pthread_join(th, NULL);
	EXPECT_RC(pp.rc, 0);
	/* from now on the txn is failed for everybody, the owner too */
	EXPECT_RC(put_s(txn, "k3", "late"), MDB_BAD_TXN);
	EXPECT_RC(mdb_txn_cause(txn), EBUSY);
	EXPECT_RC(mdb_txn_commit(txn), MDB_BAD_TXN);
	EXPECT(!present("k0") && !present("k1") && !present("k2") && !present("k3"));
	/* the writer lock was released: the next writer goes on */
	txn = begin_w();
	EXPECT_RC(put_s(txn, "after", "x"), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	EXPECT(present("after"));
	check_clean();
}

/* A commit from a second thread while the first is inside a put waits for
 * the put, then fails the txn (nothing committed, the lock is free). */
struct ender {
	MDB_txn *txn;
	int rc;
	int done;
};

static void *commit_it(void *p)
{
	struct ender *e = p;
	e->rc = mdb_txn_commit(e->txn);
	__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void overlapping_commit(void)
{
	MDB_txn *txn = begin_w();
	MUST(put_s(txn, "c0", "before"));
	struct parked pp = { txn, "c1", -1 };
	pthread_t th = park_in(&pp);
	struct ender e = { txn, -1, 0 };
	pthread_t te;
	if (pthread_create(&te, NULL, commit_it, &e))
		exit(2);
	/* the commit cannot finish while the put is parked */
	for (int i = 0; i < 50; i++) {
		usleep(1000);
		EXPECT(!__atomic_load_n(&e.done, __ATOMIC_ACQUIRE));
	}
	step_to(2);
	pthread_join(th, NULL);
	pthread_join(te, NULL);
	EXPECT_RC(pp.rc, 0);
	EXPECT_RC(e.rc, MDB_BAD_TXN);
	EXPECT(!present("c0") && !present("c1"));
	txn = begin_w();
	EXPECT_RC(put_s(txn, "c2", "x"), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	EXPECT(present("c2"));
	check_clean();
}

/* An abort from another thread waits for the parked put and then ends the
 * txn; the next writer goes on. */
static void *abort_it(void *p)
{
	struct ender *e = p;
	mdb_txn_abort(e->txn);
	__atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void overlapping_abort(void)
{
	MDB_txn *txn = begin_w();
	MUST(put_s(txn, "a0", "before"));
	struct parked pp = { txn, "a1", -1 };
	pthread_t th = park_in(&pp);
	struct ender e = { txn, 0, 0 };
	pthread_t te;
	if (pthread_create(&te, NULL, abort_it, &e))
		exit(2);
	usleep(20000);
	EXPECT(!__atomic_load_n(&e.done, __ATOMIC_ACQUIRE));
	step_to(2);
	pthread_join(th, NULL);
	pthread_join(te, NULL);
	EXPECT(!present("a0") && !present("a1"));
	txn = begin_w();
	EXPECT_RC(put_s(txn, "a2", "x"), 0);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	check_clean();
}

/* Calls that follow each other from three threads (a goroutine that
 * moved): all work, and the commit keeps every write. */
struct seq {
	MDB_txn *txn;
	const char *key;
	int rc;
};

static void *seq_put(void *p)
{
	struct seq *s = p;
	s->rc = put_s(s->txn, s->key, "moved");
	return NULL;
}

static void handed_over(void)
{
	MDB_txn *txn = begin_w();
	EXPECT_RC(put_s(txn, "h0", "x"), 0);
	const char *keys[] = { "h1", "h2", "h3" };
	for (int i = 0; i < 3; i++) {
		struct seq s = { txn, keys[i], -1 };
		pthread_t th;
		if (pthread_create(&th, NULL, seq_put, &s))
			exit(2);
		pthread_join(th, NULL);
		EXPECT_RC(s.rc, 0);
		/* and back on this thread */
		EXPECT_RC(put_s(txn, "h0", keys[i]), 0);
	}
	MDB_cursor *mc;
	EXPECT_RC(mdb_cursor_open(txn, dbi, &mc), 0);
	MDB_val k, v;
	int n = 0;
	for (int rc = mdb_cursor_get(mc, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(mc, &k, &v, MDB_NEXT))
		n += k.mv_size == 2 && ((char *)k.mv_data)[0] == 'h';
	EXPECT(n == 4);
	mdb_cursor_close(mc);
	EXPECT_RC(mdb_txn_commit(txn), 0);
	EXPECT(present("h0") && present("h1") && present("h2") && present("h3"));
	check_clean();
}

/* ---- many rounds of two threads writing into one txn with no parking:
 * each round either commits both threads' writes in full or fails and
 * commits none of them ---- */
struct hammer {
	MDB_txn *txn;
	int id, round, n;
	int ok, busy, other;
};

static void *hammer_run(void *p)
{
	struct hammer *h = p;
	char k[32], v[32];
	for (int i = 0; i < h->n; i++) {
		snprintf(k, sizeof k, "r%04d-%d-%04d", h->round, h->id, i);
		snprintf(v, sizeof v, "v%d", i);
		int rc = put_s(h->txn, k, v);
		if (rc == 0)
			h->ok++;
		else if (rc == EBUSY || rc == MDB_BAD_TXN)
			h->busy++;
		else
			h->other++;
	}
	return NULL;
}

static int count_round(int round)
{
	MDB_txn *txn;
	MDB_cursor *mc;
	char pfx[16];
	int n = 0;
	snprintf(pfx, sizeof pfx, "r%04d-", round);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_set_compare(txn, dbi, parking_cmp));
	MUST(mdb_cursor_open(txn, dbi, &mc));
	MDB_val k = { strlen(pfx), pfx }, v;
	for (int rc = mdb_cursor_get(mc, &k, &v, MDB_SET_RANGE);
	     rc == 0 && k.mv_size > 6 && memcmp(k.mv_data, pfx, 6) == 0;
	     rc = mdb_cursor_get(mc, &k, &v, MDB_NEXT))
		n++;
	mdb_cursor_close(mc);
	mdb_txn_abort(txn);
	return n;
}

static void hammered(void)
{
	int rounds = 40 * tu_scale(), failed = 0, clean = 0;
	for (int r = 0; r < rounds; r++) {
		MDB_txn *txn = begin_w();
		struct hammer h[2] = { { txn, 0, r, 300, 0, 0, 0 }, { txn, 1, r, 300, 0, 0, 0 } };
		pthread_t th[2];
		for (int i = 0; i < 2; i++)
			if (pthread_create(&th[i], NULL, hammer_run, &h[i]))
				exit(2);
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		EXPECT(h[0].other == 0 && h[1].other == 0);
		int rc = mdb_txn_commit(txn);
		int busy = h[0].busy + h[1].busy;
		int got = count_round(r);
		if (busy) {
			EXPECT_RC(rc, MDB_BAD_TXN);
			EXPECT(got == 0);
			failed++;
		} else {
			EXPECT_RC(rc, 0);
			EXPECT(got == 600);
			clean++;
		}
	}
	printf("guard_test: %d rounds overlapped and failed, %d ran one after the other\n", failed, clean);
	check_clean();
}

/* Read txns are not guarded: two threads read through one read txn with
 * a cursor each. */
struct reader {
	MDB_txn *txn;
	int n, rc;
};

static void *read_all(void *p)
{
	struct reader *r = p;
	MDB_cursor *mc;
	r->rc = mdb_cursor_open(r->txn, dbi, &mc);
	if (r->rc)
		return NULL;
	MDB_val k, v;
	for (int pass = 0; pass < 20; pass++) {
		int rc;
		for (rc = mdb_cursor_get(mc, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(mc, &k, &v, MDB_NEXT))
			r->n++;
		if (rc != MDB_NOTFOUND)
			r->rc = rc;
	}
	mdb_cursor_close(mc);
	return NULL;
}

static void shared_reader(void)
{
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_set_compare(txn, dbi, parking_cmp));
	struct reader r[2] = { { txn, 0, 0 }, { txn, 0, 0 } };
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, read_all, &r[i]))
			exit(2);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	EXPECT(r[0].rc == 0 && r[1].rc == 0);
	EXPECT(r[0].n == r[1].n && r[0].n > 0);
	mdb_txn_abort(txn);
}

/* ---- the call count a binding reads around its copies ---- */
static void *fail_busy_run(void *p)
{
	EXPECT_RC(mdb_txn_fail_busy(p), 0);
	return NULL;
}

static void call_count(void)
{
	MDB_txn *txn = begin_w();
	unsigned c0 = mdb_txn_calls(txn);
	EXPECT(c0 == *(const unsigned *)txn);	/* the first word, as documented */
	EXPECT_RC(put_s(txn, "c1", "x"), 0);
	EXPECT(mdb_txn_calls(txn) == c0 + 1);
	MDB_val k = { 2, "c1" }, v;
	EXPECT_RC(mdb_get(txn, dbi, &k, &v), 0);
	EXPECT(mdb_txn_calls(txn) == c0 + 2);
	MDB_cursor *mc;
	EXPECT_RC(mdb_cursor_open(txn, dbi, &mc), 0);
	unsigned c1 = mdb_txn_calls(txn);
	EXPECT_RC(mdb_cursor_get(mc, &k, &v, MDB_FIRST), 0);
	EXPECT(mdb_txn_calls(txn) == c1 + 1);
	/* a call that gets in and then fails counts once too */
	MDB_val empty = { 0, "" };
	EXPECT(mdb_put(txn, dbi, &empty, &v, 0) != 0);
	EXPECT(mdb_txn_calls(txn) == c1 + 2);
	mdb_cursor_close(mc);
	/* marked from another thread: the next call is refused, the commit
	 * fails with cause EBUSY, nothing is written */
	pthread_t th;
	if (pthread_create(&th, NULL, fail_busy_run, txn))
		exit(2);
	pthread_join(th, NULL);
	EXPECT_RC(put_s(txn, "c2", "x"), MDB_BAD_TXN);
	EXPECT_RC(mdb_txn_cause(txn), EBUSY);
	EXPECT_RC(mdb_txn_commit(txn), MDB_BAD_TXN);
	EXPECT(!present("c1"));
	/* read txns count nothing and ignore the mark */
	MDB_txn *r;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	EXPECT_RC(mdb_txn_fail_busy(r), 0);
	k.mv_size = 2, k.mv_data = "h0";
	EXPECT_RC(mdb_get(r, dbi, &k, &v), 0);
	EXPECT(mdb_txn_calls(r) == 0);
	mdb_txn_abort(r);
	check_clean();
}

int main(void)
{
	setup();
	overlapping_put();
	overlapping_commit();
	overlapping_abort();
	handed_over();
	hammered();
	shared_reader();
	call_count();
	mdb_env_close(env);
	return tu_finish("guard_test");
}
