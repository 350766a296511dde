/*
 * renewslot_test.c - a reset reader keeps its reader slot, marked idle:
 * it pins no pages, shows no txnid in mdb_reader_list, renew takes the
 * newest commit in the same slot, and abort/commit give the slot back.
 * A handle also keeps the slot of its last reader for its next one.
 * Run with the default (TLS) open flags and with MDB_NOTLS.
 */
#include "testutil.h"
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *DIR0 = "build/renewslot_env";

/* counts of the reader-list lines: with a txnid, idle ("-"), and whether
 * the list said there are no readers */
struct tally {
	int busy, idle, none;
};

static int tally_line(const char *msg, void *ctx)
{
	struct tally *t = ctx;
	size_t n = strlen(msg);
	if (strstr(msg, "no active readers"))
		t->none++;
	else if (strstr(msg, "txnid"))
		return 0;
	else if (n >= 2 && msg[n - 2] == '-' && msg[n - 1] == '\n')
		t->idle++;
	else
		t->busy++;
	return 0;
}

static struct tally readers(MDB_env *env)
{
	struct tally t = {0, 0, 0};
	EXPECT_RC(mdb_reader_list(env, tally_line, &t), 0);
	return t;
}

static MDB_envinfo info(MDB_env *env)
{
	MDB_envinfo in;
	MUST(mdb_env_info(env, &in));
	return in;
}

/* one commit that rewrites the value of key "k" */
/* one txn storing v under "k"; its result */
static int try_put_num(MDB_env *env, MDB_dbi dbi, unsigned v)
{
	MDB_txn *w;
	char buf[64];
	memset(buf, 'a' + (int)(v % 26), sizeof buf);
	memcpy(buf, &v, sizeof v);
	MDB_val k = {1, "k"}, d = {sizeof buf, buf};
	int e = mdb_txn_begin(env, NULL, 0, &w);
	if (e)
		return e;
	e = mdb_put(w, dbi, &k, &d, 0);
	if (e) {
		mdb_txn_abort(w);
		return e;
	}
	return mdb_txn_commit(w);
}

static void put_num(MDB_env *env, MDB_dbi dbi, unsigned v)
{
	MUST(try_put_num(env, dbi, v));
}

static unsigned get_num(MDB_txn *r, MDB_dbi dbi)
{
	MDB_val k = {1, "k"}, d;
	unsigned v = ~0u;
	EXPECT_RC(mdb_get(r, dbi, &k, &d), 0);
	if (d.mv_size >= sizeof v)
		memcpy(&v, d.mv_data, sizeof v);
	return v;
}

/* how far the file grows over n commits */
static size_t growth(MDB_env *env, MDB_dbi dbi, unsigned *next, int n)
{
	size_t before = info(env).me_last_pgno;
	for (int i = 0; i < n; i++)
		put_num(env, dbi, (*next)++);
	return info(env).me_last_pgno - before;
}

static void run(unsigned flags)
{
	MDB_env *env;
	MDB_dbi dbi;
	MDB_txn *w, *r, *r2, *r3;
	unsigned next = 1;
	tu_fresh_dir(DIR0);
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxreaders(env, 3));
	MUST(mdb_env_open(env, DIR0, flags, 0644));
	MUST(mdb_txn_begin(env, NULL, 0, &w));
	MUST(mdb_dbi_open(w, NULL, 0, &dbi));
	MUST(mdb_txn_commit(w));
	put_num(env, dbi, next++);

	/* a live reader shows its txnid; reset turns the same slot idle */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	struct tally t = readers(env);
	EXPECT(t.busy == 1 && t.idle == 0 && t.none == 0);
	unsigned slots = info(env).me_numreaders;
	EXPECT(slots == 1);
	mdb_txn_reset(r);
	t = readers(env);
	EXPECT(t.busy == 0 && t.idle == 1 && t.none == 0);
	EXPECT(mdb_txn_id(r) == 0);

	/* an idle slot pins nothing: pages freed after the reset are reused,
	 * while a live reader keeps them (and the file grows) */
	for (int i = 0; i < 4; i++)
		put_num(env, dbi, next++);	/* let the freelist settle */
	size_t idle_growth = growth(env, dbi, &next, 40);
	MUST(mdb_txn_renew(r));
	size_t pinned_growth = growth(env, dbi, &next, 40);
	EXPECT(pinned_growth >= 40);
	EXPECT(idle_growth * 4 <= pinned_growth);

	/* renew sees the newest commit, in the same slot */
	unsigned seen = get_num(r, dbi);
	EXPECT(seen < next - 40);	/* still the snapshot from before */
	mdb_txn_reset(r);
	put_num(env, dbi, next++);
	MUST(mdb_txn_renew(r));
	EXPECT(get_num(r, dbi) == next - 1);
	EXPECT(mdb_txn_id(r) == info(env).me_last_txnid);
	t = readers(env);
	EXPECT(t.busy == 1 && t.idle == 0);

	/* many cycles, interleaved with other readers, do not grow the table */
	for (int i = 0; i < 500; i++) {
		mdb_txn_reset(r);
		if (i % 50 == 0)
			put_num(env, dbi, next++);
		MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r2));
		MUST(mdb_txn_renew(r));
		EXPECT(get_num(r, dbi) == get_num(r2, dbi));
		mdb_txn_abort(r2);
	}
	EXPECT(info(env).me_numreaders <= 2);
	t = readers(env);
	EXPECT(t.busy == 1 && t.idle == 0);

	/* reset readers keep their slots: with all three taken a fourth
	 * reader is refused until one of them is given up */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r2));
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r3));
	mdb_txn_reset(r);
	mdb_txn_reset(r2);
	t = readers(env);
	EXPECT(t.busy == 1 && t.idle == 2);
	MDB_txn *r4 = NULL;
	EXPECT_RC(mdb_txn_begin(env, NULL, MDB_RDONLY, &r4), MDB_READERS_FULL);
	/* abort of a reset reader releases its slot */
	mdb_txn_abort(r2);
	t = readers(env);
	EXPECT(t.busy == 1 && t.idle == 1);
	EXPECT_RC(mdb_txn_begin(env, NULL, MDB_RDONLY, &r4), 0);
	if (r4)
		mdb_txn_abort(r4);
	/* so does commit of a reset reader */
	EXPECT_RC(mdb_txn_commit(r), 0);
	t = readers(env);
	EXPECT(t.busy == 1 && t.idle == 0);
	mdb_txn_abort(r3);
	t = readers(env);
	EXPECT(t.busy == 0 && t.idle == 0 && t.none == 1);

	/* renew of a live reader is refused; abort still gives the slot back */
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &r));
	mdb_txn_reset(r);
	EXPECT_RC(mdb_txn_renew(r), 0);
	EXPECT_RC(mdb_txn_renew(r), EINVAL);	/* not reset */
	t = readers(env);
	EXPECT(t.busy == 1 && t.idle == 0);
	mdb_txn_abort(r);
	t = readers(env);
	EXPECT(t.none == 1);
	EXPECT(info(env).me_numreaders <= 3);
	mdb_env_close(env);
}

/* A handle keeps the slot of its last reader for the next one: hidden from
 * the reader list, reused (the table does not grow) and given back to the
 * table when the handle closes, so another handle can then take it. */
static void parked(unsigned flags)
{
	MDB_env *a, *b;
	MDB_txn *r, *r2;
	tu_fresh_dir(DIR0);
	MUST(mdb_env_create(&a));
	MUST(mdb_env_set_maxreaders(a, 2));
	MUST(mdb_env_open(a, DIR0, flags, 0644));
	MUST(mdb_txn_begin(a, NULL, 0, &r));
	MUST(mdb_txn_commit(r));
	MUST(mdb_env_create(&b));
	MUST(mdb_env_open(b, DIR0, flags, 0644));
	for (int i = 0; i < 100; i++) {
		MUST(mdb_txn_begin(a, NULL, MDB_RDONLY, &r));
		struct tally t = readers(b);
		EXPECT(t.busy == 1 && t.idle == 0);
		mdb_txn_abort(r);
	}
	struct tally t = readers(b);
	EXPECT(t.busy == 0 && t.idle == 0 && t.none == 1);
	EXPECT(info(a).me_numreaders == 1);
	MUST(mdb_txn_begin(b, NULL, MDB_RDONLY, &r));
	mdb_txn_abort(r);
	EXPECT(info(b).me_numreaders == 2);
	mdb_env_close(a);
	/* both slots are free for b now */
	EXPECT_RC(mdb_txn_begin(b, NULL, MDB_RDONLY, &r), 0);
	EXPECT_RC(mdb_txn_begin(b, NULL, MDB_RDONLY, &r2), 0);
	t = readers(b);
	EXPECT(t.busy == 2);
	mdb_txn_abort(r2);
	mdb_txn_abort(r);
	EXPECT(info(b).me_numreaders == 2);
	mdb_env_close(b);
}

/* A parked slot pins nothing, so a reader that finds the table full takes
 * it over, whichever handle or process parked it; the owner then finds its
 * slot gone and takes a free one (or is refused if none is free). */
static void claimed(unsigned flags)
{
	MDB_env *a, *b;
	MDB_dbi dbi;
	MDB_txn *w, *r, *r2;
	unsigned next = 1;
	tu_fresh_dir(DIR0);
	MUST(mdb_env_create(&a));
	MUST(mdb_env_set_maxreaders(a, 1));
	MUST(mdb_env_open(a, DIR0, flags, 0644));
	MUST(mdb_txn_begin(a, NULL, 0, &w));
	MUST(mdb_dbi_open(w, NULL, 0, &dbi));
	MUST(mdb_txn_commit(w));
	put_num(a, dbi, next++);
	MUST(mdb_env_create(&b));
	MUST(mdb_env_open(b, DIR0, flags, 0644));

	/* a parks the only slot; b's reader claims it and holds a snapshot
	 * that survives commits (the claim really pins its pages) */
	MUST(mdb_txn_begin(a, NULL, MDB_RDONLY, &r));
	mdb_txn_abort(r);
	EXPECT(info(a).me_numreaders == 1);
	EXPECT_RC(mdb_txn_begin(b, NULL, MDB_RDONLY, &r), 0);
	unsigned seen = get_num(r, dbi);
	for (int i = 0; i < 30; i++)
		put_num(a, dbi, next++);
	EXPECT(get_num(r, dbi) == seen);
	struct tally t = readers(a);
	EXPECT(t.busy == 1);
	/* the slot is b's now: a's reader is refused while b's is live */
	r2 = NULL;
	EXPECT_RC(mdb_txn_begin(a, NULL, MDB_RDONLY, &r2), MDB_READERS_FULL);
	mdb_txn_abort(r);
	/* b parked it in turn: a claims it back and sees the newest commit */
	EXPECT_RC(mdb_txn_begin(a, NULL, MDB_RDONLY, &r2), 0);
	if (r2) {
		EXPECT(get_num(r2, dbi) == next - 1);
		mdb_txn_abort(r2);
	}
	EXPECT(info(a).me_numreaders == 1);

	/* another process claims the slot a parked, then closes */
	pid_t pid = fork();
	if (pid == 0) {
		MDB_env *c;
		MDB_txn *cr;
		int ok = mdb_env_create(&c) == 0 && mdb_env_open(c, DIR0, flags, 0644) == 0 &&
			mdb_txn_begin(c, NULL, MDB_RDONLY, &cr) == 0;
		if (ok) {
			MDB_val k = {1, "k"}, d;
			unsigned v = 0;
			ok = mdb_get(cr, dbi, &k, &d) == 0 && d.mv_size >= sizeof v;
			if (ok)
				memcpy(&v, d.mv_data, sizeof v);
			ok = ok && v == next - 1;
			mdb_txn_abort(cr);
			mdb_env_close(c);
		}
		_exit(ok ? 0 : 3);
	}
	int status = 0;
	EXPECT(pid > 0 && waitpid(pid, &status, 0) == pid);
	EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* a's parked slot went to the child, which gave it back on close */
	EXPECT_RC(mdb_txn_begin(a, NULL, MDB_RDONLY, &r), 0);
	if (r) {
		EXPECT(get_num(r, dbi) == next - 1);
		mdb_txn_abort(r);
	}
	t = readers(b);
	EXPECT(t.busy == 0 && t.none == 1);
	mdb_env_close(b);
	mdb_env_close(a);
}

/* Readers on two handles race for two slots while a writer commits: no
 * two live readers may share a slot (each checks that its snapshot stays
 * put), and the table never grows past its two slots. */
struct race {
	MDB_env *env[2];
	MDB_dbi dbi;
	int stop;
	int live;
	long reads, refused, moved;
};

static void *race_reader(void *arg)
{
	struct race *rc = arg;
	unsigned x = (unsigned)(uintptr_t)pthread_self();
	for (int i = 0; i < 3000; i++) {
		x = x * 1103515245u + 12345u;
		MDB_txn *r;
		int e = mdb_txn_begin(rc->env[(x >> 16) & 1], NULL, MDB_RDONLY, &r);
		if (e == MDB_READERS_FULL) {
			__atomic_add_fetch(&rc->refused, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (e) {
			__atomic_add_fetch(&rc->moved, 1000000, __ATOMIC_RELAXED);
			break;
		}
		__atomic_add_fetch(&rc->live, 1, __ATOMIC_SEQ_CST);
		MDB_val k = {1, "k"}, d1, d2;
		unsigned v1 = 0, v2 = 1;
		if (mdb_get(r, rc->dbi, &k, &d1) == 0)
			memcpy(&v1, d1.mv_data, sizeof v1);
		for (int j = 0; j < 20; j++)
			sched_yield();
		if (mdb_get(r, rc->dbi, &k, &d2) == 0)
			memcpy(&v2, d2.mv_data, sizeof v2);
		if (v1 != v2)
			__atomic_add_fetch(&rc->moved, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&rc->reads, 1, __ATOMIC_RELAXED);
		__atomic_sub_fetch(&rc->live, 1, __ATOMIC_SEQ_CST);
		mdb_txn_abort(r);
	}
	return NULL;
}

/* Commits as fast as it can.  A reader that the scheduler parks while it
 * holds a snapshot (a loaded machine) keeps every page freed since then in
 * use, and thousands of commits can pass meanwhile: a full map is then no
 * error of the engine, so the writer backs off and tries again. */
static void *race_writer(void *arg)
{
	struct race *rc = arg;
	unsigned v = 100;
	while (!__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE)) {
		int e = try_put_num(rc->env[0], rc->dbi, v);
		if (e == MDB_MAP_FULL) {
			usleep(1000);
			continue;
		}
		MUST(e);
		v++;
		sched_yield();
	}
	return NULL;
}

static void race(unsigned flags)
{
	struct race rc;
	memset(&rc, 0, sizeof rc);
	MDB_txn *w;
	tu_fresh_dir(DIR0);
	MUST(mdb_env_create(&rc.env[0]));
	MUST(mdb_env_set_maxreaders(rc.env[0], 2));
	MUST(mdb_env_set_mapsize(rc.env[0], 64u << 20));
	MUST(mdb_env_open(rc.env[0], DIR0, flags | MDB_NOSYNC, 0644));
	MUST(mdb_env_create(&rc.env[1]));
	MUST(mdb_env_open(rc.env[1], DIR0, flags | MDB_NOSYNC, 0644));
	MUST(mdb_txn_begin(rc.env[0], NULL, 0, &w));
	MUST(mdb_dbi_open(w, NULL, 0, &rc.dbi));
	MUST(mdb_txn_commit(w));
	put_num(rc.env[0], rc.dbi, 99);
	pthread_t wt, rt[4];
	MUST(pthread_create(&wt, NULL, race_writer, &rc));
	for (int i = 0; i < 4; i++)
		MUST(pthread_create(&rt[i], NULL, race_reader, &rc));
	for (int i = 0; i < 4; i++)
		pthread_join(rt[i], NULL);
	__atomic_store_n(&rc.stop, 1, __ATOMIC_RELEASE);
	pthread_join(wt, NULL);
	EXPECT(rc.moved == 0);
	EXPECT(rc.reads > 0);
	EXPECT(info(rc.env[0]).me_numreaders <= 2);
	struct tally t = readers(rc.env[1]);
	EXPECT(t.busy == 0 && t.none == 1);
	mdb_env_close(rc.env[1]);
	mdb_env_close(rc.env[0]);
	printf("renewslot_test: race(%s): %ld reads, %ld refused\n",
		(flags & MDB_NOTLS) ? "NOTLS" : "TLS", rc.reads, rc.refused);
}

int main(void)
{
	run(0);
	run(MDB_NOTLS);
	parked(0);
	parked(MDB_NOTLS);
	claimed(0);
	claimed(MDB_NOTLS);
	race(0);
	race(MDB_NOTLS);
	return tu_finish("renewslot_test");
}
