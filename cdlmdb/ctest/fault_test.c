/*
 * fault_test.c - a commit whose write or sync fails is never visible.
 *
 * The engine is built with -DDLMDB_FAULTS here, so every pwrite, pwritev,
 * fdatasync and msync of a commit goes through fault.c, which counts the
 * calls by kind (write, sync) and by the step of the commit that makes
 * them, and fails the Nth call of a kind when armed.
 *
 * For each env mode (default, NOMETASYNC, WRITEMAP, NOSYNC, and NOLOCK,
 * whose readers choose the meta by the pages' txnids and whose meta goes
 * out in two writes, body then txnid) a run of small
 * commits (puts of small and overflow values and deletes in the main DB,
 * duplicate puts and deletes in a DUPSORT DB, and a "gen" key naming the
 * commit) is made once without faults, to count its calls.  Then the same
 * run is repeated with the Nth write, or the Nth sync, failing, for every
 * N up to one past that count: with EIO and ENOSPC, once and sticky, and
 * for writes also cut short (at a 4 KiB boundary of the file) once, cut
 * short and then
 * failing with ENOSPC for good, or failing with EIO once after writing
 * all their bytes (the meta then is in the file and must be taken back).  Every commit is checked:
 *  - it returns the injected error exactly when a call other than the
 *    grow-ahead zero write failed during it; a failed grow-ahead write and
 *    a short write that the engine can finish leave it successful;
 *  - the env refuses every txn begin (read and write) and the renew of a
 *    reset reader with MDB_PANIC exactly when the first failed call was
 *    the meta write or the meta sync (the meta may be in the file); a
 *    failed data write or data sync just fails the commit;
 *  - a write txn begun next sees the last acknowledged commit, and so do a
 *    read txn of the env and read and write txns of a second env handle on
 *    the same files, which holds no panic state: every key and value
 *    against the model, full walks of both DBs, and mdb_txn_check.
 * After the run the handles are closed, and a forked child process (after
 * every third run that panicked and every eighth other one; every run at
 * DLMDB_TEST_SCALE > 1) and then a fresh handle reopen the env and find
 * exactly the last acknowledged state; the fresh handle then commits once
 * more.
 *
 * Syncs that are not failed are skipped (fault.c's fake-sync switch): the
 * test is about what the engine does with an error, not about the disk,
 * and this keeps it fast on any file system.
 *
 * Two faults also break the writing back of a failed meta (then the page
 * cache keeps the failed commit's meta): a write failing with EIO for good
 * whose first failure still wrote its bytes, and a sync failing once after
 * which every write fails.  There the lock file's failed-commit record
 * (l_failed, meta.c) is what keeps the second handle, the fresh process
 * and the fresh handle on the last acknowledged commit; NOLOCK has no lock
 * file to keep it in and is left out of those two (README, "Failed
 * commits").  test_failed_record follows one such failure step by step.
 * FAULT_SEED picks another
 * random stream (the seed is printed); DLMDB_TEST_SCALE=n runs n seeds
 * from it.
 */
#include "../internal.h"
#include "testutil.h"
#include <sys/wait.h>
#include <unistd.h>

static const char *DIRF = "build/fault_env";

#define NK 40		/* main DB keys k00.. */
#define NDK 6		/* DUPSORT keys d0.. */
#define NCOMMITS 9

struct model {
	uint32_t gen;
	uint32_t ver[NK];	/* 0: absent */
	uint32_t len[NK];
	uint32_t dups[NDK];	/* bit v: value 'a'+v present */
};

static uint64_t g_seed;
static unsigned g_flags;
static char g_case[160];

static void fill_value(unsigned char *b, uint32_t ver, unsigned j, size_t len)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char)(ver * 131u + j * 7u + i);
}

static MDB_env *open_env(void)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, 8u << 20));
	MUST(mdb_env_set_maxdbs(env, 4));
	MUST(mdb_env_open(env, DIRF, g_flags, 0644));
	return env;
}

/* Everything txn sees against m; returns the failures found. */
static int check_txn(MDB_txn *txn, const struct model *m, const char *who)
{
	int before = tu_failures;
	MDB_dbi main, dup;
	static unsigned char want[16384];
	EXPECT_RC(mdb_dbi_open(txn, NULL, 0, &main), 0);
	MDB_val k = {3, "gen"}, v;
	EXPECT_RC(mdb_get(txn, main, &k, &v), 0);
	uint32_t gen = ~0u;
	if (v.mv_size == sizeof gen)
		memcpy(&gen, v.mv_data, sizeof gen);
	EXPECT(gen == m->gen);
	char kb[16];
	unsigned nkeys = 0;
	for (unsigned j = 0; j < NK; j++) {
		snprintf(kb, sizeof kb, "k%02u", j);
		MDB_val kk = {3, kb}, vv;
		int rc = mdb_get(txn, main, &kk, &vv);
		if (!m->ver[j]) {
			EXPECT_RC(rc, MDB_NOTFOUND);
			continue;
		}
		nkeys++;
		EXPECT_RC(rc, 0);
		fill_value(want, m->ver[j], j, m->len[j]);
		EXPECT(!rc && vv.mv_size == m->len[j] && !memcmp(vv.mv_data, want, m->len[j]));
	}
	/* a full walk: nothing but the model's keys, "gen" and the DB record */
	MDB_cursor *c;
	EXPECT_RC(mdb_cursor_open(txn, main, &c), 0);
	unsigned seen = 0;
	int rc;
	while ((rc = mdb_cursor_get(c, &k, &v, seen ? MDB_NEXT : MDB_FIRST)) == 0) {
		seen++;
		if ((k.mv_size == 3 && !memcmp(k.mv_data, "gen", 3)) ||
		    (k.mv_size == 3 && !memcmp(k.mv_data, "dup", 3)))
			continue;
		unsigned j = NK;
		if (k.mv_size == 3 && ((char *)k.mv_data)[0] == 'k')
			j = (unsigned)(((char *)k.mv_data)[1] - '0') * 10 + (unsigned)(((char *)k.mv_data)[2] - '0');
		EXPECT(j < NK && m->ver[j] && v.mv_size == m->len[j]);
	}
	EXPECT_RC(rc, MDB_NOTFOUND);
	EXPECT(seen == nkeys + 2);
	mdb_cursor_close(c);
	EXPECT_RC(mdb_dbi_open(txn, "dup", 0, &dup), 0);
	unsigned ndups = 0;
	for (unsigned d = 0; d < NDK; d++)
		ndups += (unsigned)__builtin_popcount(m->dups[d]);
	EXPECT_RC(mdb_cursor_open(txn, dup, &c), 0);
	seen = 0;
	while ((rc = mdb_cursor_get(c, &k, &v, seen ? MDB_NEXT : MDB_FIRST)) == 0) {
		seen++;
		unsigned d = k.mv_size == 2 ? (unsigned)(((char *)k.mv_data)[1] - '0') : NDK;
		unsigned b = v.mv_size == 1 ? (unsigned)(((char *)v.mv_data)[0] - 'a') : 32;
		EXPECT(d < NDK && b < 16 && (m->dups[d] >> b & 1));
	}
	EXPECT_RC(rc, MDB_NOTFOUND);
	EXPECT(seen == ndups);
	mdb_cursor_close(c);
	char msg[256];
	rc = mdb_txn_check(txn, msg, sizeof msg);
	EXPECT_RC(rc, 0);
	if (rc)
		fprintf(stderr, "check: %s\n", msg);
	if (tu_failures != before)
		fprintf(stderr, "  (%s, seen by %s: want gen %u, found %u)\n", g_case, who, m->gen, gen);
	return tu_failures - before;
}

/* A read txn and a write txn (aborted) of env both see m. */
static void check_env(MDB_env *env, const struct model *m, const char *who)
{
	MDB_txn *txn;
	int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	EXPECT_RC(rc, 0);
	if (!rc) {
		check_txn(txn, m, who);
		mdb_txn_abort(txn);
	}
	rc = mdb_txn_begin(env, NULL, 0, &txn);
	EXPECT_RC(rc, 0);
	if (!rc) {
		check_txn(txn, m, who);
		mdb_txn_abort(txn);
	}
}

/* The first commit: the DUPSORT DB and gen 0 (never faulted). */
static void setup(MDB_env *env, struct model *m)
{
	MDB_txn *txn;
	MDB_dbi dup, main;
	memset(m, 0, sizeof *m);
	MUST(mdb_txn_begin(env, NULL, 0, &txn));
	MUST(mdb_dbi_open(txn, "dup", MDB_CREATE | MDB_DUPSORT, &dup));
	MUST(mdb_dbi_open(txn, NULL, 0, &main));
	MDB_val k = {3, "gen"}, v = {sizeof m->gen, &m->gen};
	MUST(mdb_put(txn, main, &k, &v, 0));
	MUST(mdb_txn_commit(txn));
}

/* Commit attempt c: the same changes whatever happened before (the stream
 * depends on the seed and c only); applied to *m only if it commits.
 * Returns the commit's result, or -1 if the write txn did not begin (*brc). */
static int attempt(MDB_env *env, struct model *m, unsigned c, int *brc)
{
	static unsigned char val[16384];
	uint64_t s = g_seed * 1000003u + c;
	struct model next = *m;
	MDB_txn *txn;
	*brc = mdb_txn_begin(env, NULL, 0, &txn);
	if (*brc)
		return -1;
	MDB_dbi main, dup;
	MUST(mdb_dbi_open(txn, NULL, 0, &main));
	MUST(mdb_dbi_open(txn, "dup", 0, &dup));
	/* the txn builds on the last acknowledged commit */
	MDB_val k = {3, "gen"}, v;
	EXPECT_RC(mdb_get(txn, main, &k, &v), 0);
	uint32_t gen = ~0u;
	if (v.mv_size == sizeof gen)
		memcpy(&gen, v.mv_data, sizeof gen);
	EXPECT(gen == m->gen);
	if (gen != m->gen)
		fprintf(stderr, "  (%s: commit %u builds on gen %u, want %u)\n", g_case, c, gen, m->gen);
	char kb[16];
	for (unsigned op = 0; op < 6; op++) {
		unsigned j = tu_below(&s, NK), r = tu_below(&s, 10);
		snprintf(kb, sizeof kb, "k%02u", j);
		MDB_val kk = {3, kb};
		if (r < 2) {
			EXPECT_RC(mdb_del(txn, main, &kk, NULL), next.ver[j] ? 0 : MDB_NOTFOUND);
			next.ver[j] = 0;
			continue;
		}
		size_t len = r < 5 ? 4500 + tu_below(&s, 11000) : 1 + tu_below(&s, 200);
		uint32_t ver = c * 16 + op + 1;
		fill_value(val, ver, j, len);
		MDB_val vv = {len, val};
		MUST(mdb_put(txn, main, &kk, &vv, 0));
		next.ver[j] = ver;
		next.len[j] = (uint32_t)len;
	}
	for (unsigned op = 0; op < 3; op++) {
		unsigned d = tu_below(&s, NDK), b = tu_below(&s, 16);
		char dk[3] = {'d', (char)('0' + d), 0}, dv = (char)('a' + b);
		MDB_val kk = {2, dk}, vv = {1, &dv};
		if (next.dups[d] >> b & 1)
			EXPECT_RC(mdb_del(txn, dup, &kk, &vv), 0);
		else
			MUST(mdb_put(txn, dup, &kk, &vv, 0));
		next.dups[d] ^= 1u << b;
	}
	next.gen = c;
	MDB_val gv = {sizeof next.gen, &next.gen};
	MUST(mdb_put(txn, main, &k, &gv, 0));
	int rc = mdb_txn_commit(txn);
	if (!rc)
		*m = next;
	return rc;
}

/* A forked child opens the env afresh and finds m. */
static void check_fresh_process(const struct model *m)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		tu_failures = 0;
		MDB_env *e = open_env();
		check_env(e, m, "a fresh process");
		mdb_env_close(e);
		fflush(stderr);
		_exit(tu_failures ? 1 : 0);
	}
	int st = 0;
	EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid);
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		fprintf(stderr, "  (%s: the fresh process found a difference)\n", g_case);
}

struct tally {
	unsigned cases, failed_commits, panics, grow_only, shorts_ok;
};

/* One run with the given fault armed (kind < 0: none); returns the number
 * of write and sync calls it made in *calls. */
static void run(int kind, unsigned long nth, int err, unsigned how, struct tally *t,
	unsigned long calls[2], unsigned long grow_calls[1])
{
	struct model m;
	/* a new env each run (tu_fresh_dir once: a shell per run is slow) */
	unlink("build/fault_env/data.mdb");
	unlink("build/fault_env/lock.mdb");
	MDB_env *env = open_env();
	setup(env, &m);
	MDB_env *env2 = open_env();
	MDB_txn *rr;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &rr));
	mdb_txn_reset(rr);
	dlmdb_fault_reset();
	dlmdb_fault_fake_sync(1);
	if (kind >= 0)
		dlmdb_fault_arm(kind, nth, err, how);
	int panicked = 0;
	for (unsigned c = 1; c <= NCOMMITS && !panicked; c++) {
		unsigned long hit0[DL_IO_NSITES], shorts0 = dlmdb_fault_shorts();
		for (int i = 0; i < DL_IO_NSITES; i++)
			hit0[i] = dlmdb_fault_hits(i);
		int brc, rc = attempt(env, &m, c, &brc);
		EXPECT_RC(brc, 0);
		if (brc)
			break;
		int first = -1;
		for (int i = 0; i < DL_IO_NSITES; i++)
			if (i != DL_IO_GROW && dlmdb_fault_hits(i) != hit0[i] && first < 0)
				first = i;
		int grow_failed = dlmdb_fault_hits(DL_IO_GROW) != hit0[DL_IO_GROW];
		if (first >= 0) {
			EXPECT_RC(rc, err);
			t->failed_commits++;
		} else {
			EXPECT_RC(rc, 0);
			t->grow_only += grow_failed;
			t->shorts_ok += dlmdb_fault_shorts() != shorts0;
		}
		int want_panic = first == DL_IO_META || first == DL_IO_MSYNC;
		MDB_txn *txn;
		int prc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
		if (want_panic) {
			panicked = 1;
			t->panics++;
			EXPECT_RC(prc, MDB_PANIC);
			if (!prc)
				mdb_txn_abort(txn);
			prc = mdb_txn_begin(env, NULL, 0, &txn);
			EXPECT_RC(prc, MDB_PANIC);
			if (!prc)
				mdb_txn_abort(txn);
			prc = mdb_txn_renew(rr);
			EXPECT_RC(prc, MDB_PANIC);
			if (!prc)
				mdb_txn_reset(rr);
			prc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
			EXPECT_RC(prc, MDB_PANIC);
			if (!prc)
				mdb_txn_abort(txn);
		} else {
			EXPECT_RC(prc, 0);
			if (!prc) {
				check_txn(txn, &m, "the env");
				mdb_txn_abort(txn);
			}
		}
		if (rc)
			check_env(env2, &m, "a second handle");
	}
	if (calls) {
		calls[0] = dlmdb_fault_calls(DL_FAULT_WRITE);
		calls[1] = dlmdb_fault_calls(DL_FAULT_SYNC);
		grow_calls[0] = dlmdb_fault_site_calls(DL_IO_GROW);
	}
	dlmdb_fault_reset();
	dlmdb_fault_fake_sync(1);
	if (!panicked) {
		EXPECT_RC(mdb_txn_renew(rr), 0);
		check_env(env, &m, "the env after the run");
	}
	mdb_txn_abort(rr);
	mdb_env_close(env);
	check_env(env2, &m, "a second handle after close");
	mdb_env_close(env2);
	/* a fresh process: after every third run that panicked (the meta may
	 * have been in the file) and every eighth other one, and after every
	 * run at DLMDB_TEST_SCALE > 1 (a fork under ASan costs milliseconds;
	 * the fresh handle below reopens after every run) */
	if ((panicked ? nth % 3 == 1 : nth % 8 == 1) || tu_scale() > 1)
		check_fresh_process(&m);
	/* a fresh handle, which can commit again */
	env = open_env();
	check_env(env, &m, "a fresh handle");
	int brc;
	EXPECT_RC(attempt(env, &m, NCOMMITS + 1, &brc), 0);
	check_env(env, &m, "a fresh handle after one more commit");
	mdb_env_close(env);
	t->cases++;
}

/* 8 bytes at off of file path */
static uint64_t file_u64(const char *path, off_t off)
{
	uint64_t v = ~(uint64_t)0;
	int fd = open(path, O_RDONLY);
	EXPECT(fd >= 0);
	if (fd >= 0) {
		EXPECT(pread(fd, &v, sizeof v, off) == (ssize_t)sizeof v);
		close(fd);
	}
	return v;
}

static txnid_t last_txnid(MDB_env *env)
{
	MDB_envinfo info;
	MUST(mdb_env_info(env, &info));
	return info.me_last_txnid;
}

/*
 * The meta write of commit t fails after writing its bytes, and so does
 * writing the old meta back: the data file's page t & 1 holds the failed
 * meta.  The lock file records t; a second handle of this process, a
 * fresh process and a reopen (which initialises the lock file again and
 * keeps the record) all use commit t - 1, the last acknowledged one, and
 * the checker passes.  The next commit, whose id is t again, writes the
 * page over and clears the record, and a reopen then shows that commit.
 */
static void test_failed_record(void)
{
	const char *lck = "build/fault_env/lock.mdb", *dat = "build/fault_env/data.mdb";
	const off_t failed_off = offsetof(dl_lockhdr, l_failed);
	g_flags = 0;
	snprintf(g_case, sizeof g_case, "failed record");
	unlink(dat);
	unlink(lck);
	struct model m;
	MDB_env *env = open_env();
	setup(env, &m);
	int brc;
	dlmdb_fault_reset();
	dlmdb_fault_fake_sync(1);
	EXPECT_RC(attempt(env, &m, 1, &brc), 0);
	MDB_env *env2 = open_env();
	txnid_t t = last_txnid(env) + 1;
	EXPECT(file_u64(lck, failed_off) == 0);
	dlmdb_fault_reset();
	dlmdb_fault_fake_sync(1);
	/* the meta write fails after writing; later writes fail, writing nothing */
	dlmdb_fault_arm_at(DL_FAULT_WRITE, DL_IO_META, EIO, DL_FAULT_LEAVE | DL_FAULT_STICKY);
	struct model tried = m;
	EXPECT_RC(attempt(env, &tried, 2, &brc), EIO);
	EXPECT(tried.gen == m.gen);
	EXPECT(dlmdb_fault_hits(DL_IO_META) == 1);	/* the meta write failed */
	EXPECT(dlmdb_fault_hits(DL_IO_UNDO) >= 1);	/* and so did writing it back */
	dlmdb_fault_reset();
	dlmdb_fault_fake_sync(1);
	/* the failed meta is in the file, and recorded */
	MDB_stat st;
	MUST(mdb_env_stat(env2, &st));
	off_t page = (off_t)(t & 1) * (off_t)st.ms_psize;
	EXPECT(last_txnid(env2) == t - 1);
	EXPECT(file_u64(dat, page + DL_PAGEHDR + (off_t)offsetof(dl_meta, m_txnid)) == t);
	EXPECT(file_u64(lck, failed_off) == t);
	MDB_txn *txn;
	int prc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	EXPECT_RC(prc, MDB_PANIC);
	if (!prc)
		mdb_txn_abort(txn);
	check_env(env2, &m, "a second handle");
	mdb_env_close(env);
	check_env(env2, &m, "a second handle, the first closed");
	mdb_env_close(env2);
	check_fresh_process(&m);
	env = open_env();	/* the first opener again */
	EXPECT(file_u64(lck, failed_off) == t);
	EXPECT(last_txnid(env) == t - 1);
	check_env(env, &m, "a reopen");
	EXPECT_RC(attempt(env, &m, 4, &brc), 0);
	EXPECT(last_txnid(env) == t);	/* the failed id, now acknowledged */
	EXPECT(file_u64(lck, failed_off) == 0);
	check_env(env, &m, "after the next commit");
	mdb_env_close(env);
	env = open_env();
	EXPECT(last_txnid(env) == t);
	check_env(env, &m, "a reopen after the next commit");
	mdb_env_close(env);
}

int main(void)
{
	const char *es = getenv("FAULT_SEED");
	g_seed = es ? strtoull(es, NULL, 0) : 20261201;
	printf("fault_test: seed %llu (FAULT_SEED)\n", (unsigned long long)g_seed);
	tu_fresh_dir(DIRF);
	static const struct { unsigned flags; const char *name; } modes[] = {
		{0, "default"}, {MDB_NOMETASYNC, "NOMETASYNC"}, {MDB_WRITEMAP, "WRITEMAP"},
		{MDB_NOSYNC, "NOSYNC"}, {MDB_NOLOCK, "NOLOCK"},
	};
	static const struct { int kind, err; unsigned how; const char *name; } faults[] = {
		{DL_FAULT_WRITE, EIO, 0, "write EIO once"},
		{DL_FAULT_WRITE, ENOSPC, 0, "write ENOSPC once"},
		{DL_FAULT_WRITE, EIO, DL_FAULT_STICKY, "write EIO sticky"},
		{DL_FAULT_WRITE, ENOSPC, DL_FAULT_STICKY, "write ENOSPC sticky"},
		{DL_FAULT_WRITE, ENOSPC, DL_FAULT_SHORT, "write short once"},
		{DL_FAULT_WRITE, ENOSPC, DL_FAULT_SHORT | DL_FAULT_STICKY, "write short, then ENOSPC"},
		{DL_FAULT_WRITE, EIO, DL_FAULT_LEAVE, "write EIO once, bytes written"},
		{DL_FAULT_WRITE, EIO, DL_FAULT_LEAVE | DL_FAULT_STICKY, "write EIO sticky, first bytes written"},
		{DL_FAULT_SYNC, EIO, 0, "sync EIO once"},
		{DL_FAULT_SYNC, ENOSPC, 0, "sync ENOSPC once"},
		{DL_FAULT_SYNC, EIO, DL_FAULT_STICKY, "sync EIO sticky"},
		{DL_FAULT_SYNC, ENOSPC, DL_FAULT_STICKY, "sync ENOSPC sticky"},
		{DL_FAULT_SYNC, EIO, DL_FAULT_BREAK, "sync EIO once, then every write"},
	};
	uint64_t seed0 = g_seed;
	for (int round = 0; round < tu_scale(); round++)
	for (size_t mi = 0; mi < sizeof modes / sizeof modes[0]; mi++) {
		g_seed = seed0 + (uint64_t)round;
		g_flags = modes[mi].flags;
		struct tally t = {0};
		unsigned long calls[2], grow[1];
		snprintf(g_case, sizeof g_case, "seed %llu, %s, no fault", (unsigned long long)g_seed,
			modes[mi].name);
		run(-1, 0, 0, 0, &t, calls, grow);
		if (!(g_flags & (MDB_WRITEMAP | MDB_NOSYNC)))
			EXPECT(grow[0] > 0);	/* the run does reach the grow-ahead write */
		for (size_t fi = 0; fi < sizeof faults / sizeof faults[0]; fi++) {
			/* a failed write back: no lock file to record it in */
			if ((g_flags & MDB_NOLOCK) &&
			    ((faults[fi].how & (DL_FAULT_LEAVE | DL_FAULT_STICKY)) ==
				(DL_FAULT_LEAVE | DL_FAULT_STICKY) || (faults[fi].how & DL_FAULT_BREAK)))
				continue;
			for (unsigned long n = 1; n <= calls[faults[fi].kind] + 1; n++) {
				snprintf(g_case, sizeof g_case, "seed %llu, %s, %s at call %lu",
					(unsigned long long)g_seed, modes[mi].name,
					faults[fi].name, n);
				int before = tu_failures;
				run(faults[fi].kind, n, faults[fi].err, faults[fi].how, &t, NULL, NULL);
				if (tu_failures != before)
					fprintf(stderr, "FAILED CASE: %s\n", g_case);
			}
		}
		printf("seed %llu %-10s: %lu writes, %lu syncs (%lu grow-ahead) per run; %u runs, %u failed commits, "
			"%u panics, %u commits past a failed grow-ahead write, %u past a short write\n",
			(unsigned long long)g_seed, modes[mi].name, calls[0], calls[1], grow[0], t.cases, t.failed_commits, t.panics,
			t.grow_only, t.shorts_ok);
		/* every mode meets both kinds of failure */
		EXPECT(t.failed_commits > t.panics);
		EXPECT(t.panics > 0);
		if (!(g_flags & (MDB_WRITEMAP | MDB_NOSYNC)))
			EXPECT(t.grow_only > 0);
		if (!(g_flags & MDB_WRITEMAP))
			EXPECT(t.shorts_ok > 0);
	}
	test_failed_record();
	return tu_finish("fault_test");
}
