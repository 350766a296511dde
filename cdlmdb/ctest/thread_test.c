/*
 * thread_test.c - snapshot isolation under concurrent readers and a writer.
 *
 * A writer thread commits generations: every commit rewrites all keys with
 * the generation number (and some large values).  Reader threads open read
 * transactions (some via reset/renew) and require every key they see in one
 * snapshot to carry the same generation as the "gen" key of that snapshot.
 */
#include "testutil.h"
#include <pthread.h>

#define NKEYS 400
static MDB_env *env;
static MDB_dbi dbi;
static volatile int stop;
static int gens;
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;
static long reads_done;

static void *writer(void *arg)
{
	(void)arg;
	char kb[16], vb[3000];
	for (int g = 1; g <= gens; g++) {
		MDB_txn *txn;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		for (int i = 0; i < NKEYS; i++) {
			snprintf(kb, sizeof kb, "t%04d", i);
			memset(vb, 0, sizeof vb);
			memcpy(vb, &g, sizeof g);
			MDB_val k = {strlen(kb), kb}, v = {(i % 40 == 0) ? sizeof vb : 16, vb};
			MUST(mdb_put(txn, dbi, &k, &v, 0));
		}
		MDB_val gk = {3, "gen"}, gv = {sizeof g, &g};
		MUST(mdb_put(txn, dbi, &gk, &gv, 0));
		MUST(mdb_txn_commit(txn));
	}
	stop = 1;
	return NULL;
}

static void *reader(void *arg)
{
	uint64_t s = (uint64_t)(uintptr_t)arg;
	MDB_txn *txn = NULL;
	char kb[16];
	long local = 0;
	int bad = 0;
	while (!stop) {
		int rc = txn ? mdb_txn_renew(txn) : mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
		if (rc) {
			bad++;
			break;
		}
		MDB_val gk = {3, "gen"}, v;
		int g = 0;
		if (mdb_get(txn, dbi, &gk, &v) == 0)
			memcpy(&g, v.mv_data, sizeof g);
		for (int i = 0; i < 50 && g; i++) {
			snprintf(kb, sizeof kb, "t%04d", tu_below(&s, NKEYS));
			MDB_val k = {strlen(kb), kb};
			int vg = -1;
			if (mdb_get(txn, dbi, &k, &v) == 0)
				memcpy(&vg, v.mv_data, sizeof vg);
			if (vg != g)
				bad++;
			local++;
		}
		if (tu_below(&s, 3) == 0) {
			mdb_txn_abort(txn);
			txn = NULL;
		} else {
			mdb_txn_reset(txn);
		}
	}
	if (txn)
		mdb_txn_abort(txn);
	pthread_mutex_lock(&fail_mu);
	tu_checks++;
	if (bad) {
		tu_failures++;
		fprintf(stderr, "reader saw %d inconsistent values\n", bad);
	}
	reads_done += local;
	pthread_mutex_unlock(&fail_mu);
	return NULL;
}

int main(void)
{
	gens = 60 * tu_scale();
	tu_fresh_dir("build/thread_env");
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 64u << 20));
	MUST(mdb_env_open(env, "build/thread_env", MDB_NOSYNC, 0644));
	MDB_txn *txn;
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, NULL, 0, &dbi));
	MUST(mdb_txn_commit(txn));
	pthread_t w, r[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&r[i], NULL, reader, (void *)(uintptr_t)(i + 1));
	pthread_create(&w, NULL, writer, NULL);
	pthread_join(w, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(r[i], NULL);
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	char msg[200];
	EXPECT_RC(mdb_txn_check(txn, msg, sizeof msg), 0);
	MDB_envinfo info;
	MUST(mdb_env_info(env, &info));
	EXPECT(info.me_last_txnid == (size_t)gens); /* the empty first txn wrote nothing */
	mdb_txn_abort(txn);
	mdb_env_close(env);
	printf("thread_test: %ld snapshot reads\n", reads_done);
	return tu_finish("thread_test");
}
