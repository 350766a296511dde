/*
 * trust_test.c - the trusted-page table (page.c) never vouches for a page
 * image that is not one this handle committed or validated.
 *
 * Each env handle keeps e_trusted: page numbers whose structural walk it
 * skips while their entry carries the current epoch.  An entry is only
 * honest while the map still holds, at that number, an image of committed
 * data that this handle produced or walked.  Three things can break that:
 * an aborted WRITEMAP txn that built pages in the map (txn.c must forget
 * their numbers), a WRITEMAP commit that rebuilt a page in place and freed
 * it again, and a commit by another handle or process (the next write txn
 * of this handle must start a new epoch).
 *
 * The test runs seeded random write txns (plain, DUPSORT, DUPFIXED and
 * COUNTED named DBs; small, large and overflow values; bulk runs that split,
 * range deletes that merge, drops, heavy txns that dirty hundreds of pages
 * and free many again, nested txns where allowed) on two handles A and B of
 * one environment, plus a forked child process that writes now and then.
 * Most txns commit, some abort.
 *
 * The model, built independently of the engine's map:
 *  - after every commit (by anyone) the committed snapshot is walked by
 *    reading the data file with pread (meta, free DB, main DB, named DBs,
 *    duplicate sub-trees, overflow runs): every reachable tree page's image
 *    is recorded as ref[pg], the last committed image of that number;
 *    pages of overflow runs are marked as not tree pages.
 *  - per handle, tr[pg]: the image the handle's current entry for pg was
 *    last confirmed against.
 * Checks, for every entry of the handle's table that carries the current
 * epoch:
 *  - right after the handle's own txn ended (commit or abort): the map
 *    image at pg equals ref[pg] (a committed tree image), and the page
 *    passes dlmdb_page_validate_walk with the table switched off;
 *  - right after the handle began a write txn: the image equals both
 *    tr[pg] (nothing changed under a trusted number since the handle last
 *    looked - catches a missed epoch change after a foreign commit) and
 *    ref[pg].
 * One exemption, counted and printed: a WRITEMAP txn of ANOTHER handle that
 * aborts may have built pages in free pages this handle still trusts, and
 * nothing can tell this handle (no commit happened).  Such a page is not
 * reachable from the committed snapshot, so no write txn reads it before it
 * is allocated and rewritten.  Right after such an abort the test marks the
 * other handle's current entries for unreachable pages whose image changed;
 * those are not compared until the handle confirms them again.  (The forked
 * child always commits before it aborts, so A and B must drop everything.)
 *
 * TRUST_TEST_SEED=<n> picks the seed (printed), DLMDB_TEST_SCALE scales the
 * number of txns.
 */
#include "../internal.h"
#include "testutil.h"
#include <sys/wait.h>

#define DIR_BASE "build/trust_env"
#define MAPSIZE ((size_t)64 << 20)
#define NDB 5

static const char *const db_names[NDB] = {"plain", "dups", "dfix", "cnt", "cntdup"};
static const unsigned db_flags[NDB] = {0, MDB_DUPSORT, MDB_DUPSORT | MDB_DUPFIXED, MDB_COUNTED,
	MDB_COUNTED | MDB_DUPSORT};

/* ---- the committed-state model (file walk) ------------------------------ */

enum { KIND_NONE, KIND_TREE, KIND_OVERFLOW };

static struct {
	int fd;
	unsigned psize;
	size_t cap;		/* pages the map can hold */
	pgno_t npages;		/* m_last_pg + 1 of the newest commit */
	unsigned char *ref;	/* cap pages: last committed image of each tree page */
	unsigned char *kind;	/* KIND_* at the last commit that reached the page */
	uint64_t *reach;	/* walk generation that last reached the page */
	uint64_t gen;
	long bad;		/* inconsistencies met by the walk itself */
} M;

static long n_fail, n_entries, n_exempt, n_walks, n_aborts, n_commits, n_foreign;
/* what the aborted WRITEMAP txns had done: coverage of the forgetting */
static long n_wm_aborts, n_wm_abort_loose, n_wm_abort_recl, n_wm_abort_big;
static size_t max_wm_abort_dirty;

static void fail_at(const char *what, const char *who, pgno_t pg)
{
	n_fail++;
	tu_failures++;
	if (n_fail <= 20)
		fprintf(stderr, "trust_test: %s: %s (page %llu)\n", who, what, (unsigned long long)pg);
}

static void read_at(void *buf, size_t len, off_t off)
{
	size_t got = 0;
	while (got < len) {
		ssize_t r = pread(M.fd, (char *)buf + got, len - got, off + (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fprintf(stderr, "trust_test: pread at %lld: %s\n", (long long)off,
				r < 0 ? strerror(errno) : "short file");
			exit(2);
		}
		got += (size_t)r;
	}
}

static void walk_page(pgno_t pg, int depth);

static void walk_record(const void *data, size_t len, int depth)
{
	dl_dbrec rec;
	if (len != sizeof rec) {
		M.bad++;
		return;
	}
	memcpy(&rec, data, sizeof rec);
	if (rec.d_root != DL_NO_PAGE)
		walk_page(rec.d_root, depth + 1);
}

static void walk_overflow(pgno_t pg)
{
	dl_page hdr;
	if (pg < DL_NMETAS || pg >= M.npages) {
		M.bad++;
		return;
	}
	read_at(&hdr, sizeof hdr, (off_t)(pg * M.psize));
	uint32_t n = dl_pg_ovcount(&hdr);
	if (!(hdr.p_flags & DL_P_OVERFLOW) || hdr.p_pgno != pg || !n || pg + n > M.npages) {
		M.bad++;
		return;
	}
	for (uint32_t k = 0; k < n; k++) {
		M.kind[pg + k] = KIND_OVERFLOW;
		M.reach[pg + k] = M.gen;
	}
}

static void walk_page(pgno_t pg, int depth)
{
	if (depth > 2 * DL_MAX_DEPTH || pg < DL_NMETAS || pg >= M.npages || M.reach[pg] == M.gen) {
		M.bad++;	/* out of range, or reached twice: the walk is wrong */
		return;
	}
	M.reach[pg] = M.gen;
	unsigned char *img = M.ref + pg * (size_t)M.psize;
	read_at(img, M.psize, (off_t)(pg * M.psize));
	M.kind[pg] = KIND_TREE;
	const dl_page *p = (const dl_page *)img;
	if (p->p_pgno != pg || !(p->p_flags & (DL_P_LEAF | DL_P_BRANCH))) {
		M.bad++;
		return;
	}
	if (dl_pg_is_leaf2(p))
		return;
	unsigned n = dl_pg_nkeys(p);
	for (unsigned i = 0; i < n; i++) {
		const dl_node *nd = dl_pg_node(p, i);
		if (dl_pg_is_branch(p)) {
			walk_page(dl_node_child(nd), depth + 1);
		} else if (nd->n_flags & DL_N_BIG) {
			walk_overflow(dl_node_bigpg(nd));
		} else if (nd->n_flags & DL_N_TREE) {
			walk_record(dl_node_data(nd), dl_node_dsize(nd), depth);
		}
	}
}

/* record the images of the newest commit (reading the file, not any map) */
static void walk_committed(void)
{
	dl_meta m[2];
	int best = -1;
	for (int i = 0; i < 2; i++) {
		read_at(&m[i], sizeof m[i], (off_t)i * M.psize + DL_PAGEHDR);
		if (m[i].m_magic == DL_MAGIC && (best < 0 || m[i].m_txnid > m[best].m_txnid))
			best = i;
	}
	if (best < 0 || m[best].m_last_pg + 1 > M.cap) {
		fprintf(stderr, "trust_test: no usable meta page\n");
		exit(2);
	}
	M.npages = m[best].m_last_pg + 1;
	M.gen++;
	n_walks++;
	for (int d = 0; d < DL_CORE_DBS; d++)
		if (m[best].m_dbs[d].d_root != DL_NO_PAGE)
			walk_page(m[best].m_dbs[d].d_root, 0);
}

/* ---- handles and the table check ---------------------------------------- */

typedef struct tt_handle {
	const char *name;
	MDB_env *env;
	MDB_dbi dbi[NDB];
	unsigned char *tr;	/* image each current entry was last confirmed against */
	uint64_t *tr_at;	/* when (check clock), 0 = never */
	/* 1: an aborted WRITEMAP txn of another handle rebuilt this free page
	 * while our entry for it stayed current (see the exemption above) */
	unsigned char *scribbled;
} tt_handle;

/* Does slot s of env's table hold an entry of the current epoch?  Then
 * *pg is its page number. */
static int current_entry(const MDB_env *env, size_t s, pgno_t *pg)
{
	uint64_t e = env->e_trusted[s];
	if (!e || (e >> DL_TRUST_PGBITS) != env->e_trust_epoch)
		return 0;
	*pg = e & DL_TRUST_PGMASK;
	return 1;
}

static uint64_t check_clock = 1;

/* at_begin: h just began a write txn; else h's txn just ended */
static void check_table(tt_handle *h, int at_begin)
{
	MDB_env *env = h->env;
	const char *who = at_begin ? (h->name[0] == 'A' ? "A at begin" : "B at begin")
		: (h->name[0] == 'A' ? "A after its txn" : "B after its txn");
	uint64_t now = ++check_clock;
	if (!env->e_trusted)
		return;
	size_t psize = M.psize;
	for (size_t s = 0; s < DL_TRUST_SLOTS; s++) {
		pgno_t pg;
		if (!current_entry(env, s, &pg))
			continue;
		n_entries++;
		if ((pg & (DL_TRUST_SLOTS - 1)) != s) {
			fail_at("entry in the wrong slot", who, pg);
			continue;
		}
		if (pg < DL_NMETAS || pg >= M.npages) {
			fail_at("trusted page outside the committed file", who, pg);
			continue;
		}
		int reachable = M.reach[pg] == M.gen;
		if (!reachable && h->scribbled[pg]) {
			n_exempt++;
			continue;
		}
		const unsigned char *img = (const unsigned char *)env->e_map + pg * psize;
		int ok = 1;
		if (M.kind[pg] != KIND_TREE) {
			fail_at(M.kind[pg] == KIND_OVERFLOW ? "trusted page is part of an overflow run"
				: "trusted page was never a committed tree page", who, pg);
			ok = 0;
		} else if (memcmp(img, M.ref + pg * psize, psize)) {
			fail_at(reachable ? "trusted page differs from the committed image"
				: "trusted free page differs from its last committed image", who, pg);
			ok = 0;
		}
		if (ok && at_begin && (!h->tr_at[pg] || memcmp(img, h->tr + pg * psize, psize))) {
			fail_at(h->tr_at[pg] ? "trusted page changed since this handle last confirmed it"
				: "entry appeared between txns", who, pg);
			ok = 0;
		}
		/* the structural walk the table lets the page skip must pass */
		pgno_t *save = env->e_trusted;
		env->e_trusted = NULL;
		int rc = dlmdb_page_validate_walk(env, (const dl_page *)img);
		env->e_trusted = save;
		if (rc) {
			fail_at("trusted page fails the structural walk", who, pg);
			ok = 0;
		}
		tu_checks++;
		if (ok) {
			memcpy(h->tr + pg * psize, img, psize);
			h->tr_at[pg] = now;
			h->scribbled[pg] = 0;
		} else {
			h->tr_at[pg] = 0;
		}
	}
}

/*
 * Another handle's WRITEMAP txn just aborted: it may have built pages in
 * free pages that h still trusts, and h cannot learn of it (no commit).
 * Those pages (unreachable, image no longer the one h confirmed) are
 * exempt until h confirms an entry for them again.
 */
static void mark_foreign_scribbles(tt_handle *h)
{
	MDB_env *env = h->env;
	if (!env->e_trusted)
		return;
	size_t psize = M.psize;
	for (size_t s = 0; s < DL_TRUST_SLOTS; s++) {
		pgno_t pg;
		if (!current_entry(env, s, &pg))
			continue;
		if (pg >= M.npages || M.reach[pg] == M.gen || !h->tr_at[pg])
			continue;
		if (memcmp((const char *)env->e_map + pg * psize, h->tr + pg * psize, psize))
			h->scribbled[pg] = 1;
	}
}

/* ---- the random workload ------------------------------------------------ */

static void fill(uint64_t *rng, unsigned char *buf, size_t len)
{
	uint64_t x = tu_next(rng);
	memset(buf, (int)(x & 0xff), len);
	for (size_t i = 0; i + 8 <= len && i < 64; i += 8) {
		x = tu_next(rng);
		memcpy(buf + i, &x, 8);
	}
	if (len >= 8) {
		x = tu_next(rng);
		memcpy(buf + len - 8, &x, 8);
	}
}

static void ok_or(int rc, int also, const char *what)
{
	if (rc && rc != also) {
		fprintf(stderr, "trust_test: %s: %s\n", what, mdb_strerror(rc));
		exit(2);
	}
}

static unsigned char vbuf[16000];

static void op_plain_put(MDB_txn *t, MDB_dbi dbi, uint64_t *rng, unsigned key)
{
	char kb[16];
	unsigned r = tu_below(rng, 100);
	size_t vs = r < 85 ? 8 + tu_below(rng, 500) : r < 95 ? 600 + tu_below(rng, 1300)
		: 2500 + tu_below(rng, 12000);
	fill(rng, vbuf, vs);
	MDB_val k = {(size_t)snprintf(kb, sizeof kb, "k%06u", key), kb}, v = {vs, vbuf};
	ok_or(mdb_put(t, dbi, &k, &v, 0), 0, "put plain");
}

static void op_del(MDB_txn *t, MDB_dbi dbi, const char *fmt, unsigned key)
{
	char kb[16];
	MDB_val k = {(size_t)snprintf(kb, sizeof kb, fmt, key), kb};
	ok_or(mdb_del(t, dbi, &k, NULL), MDB_NOTFOUND, "del");
}

static void op_dup_put(MDB_txn *t, MDB_dbi dbi, uint64_t *rng, unsigned key, int fixed)
{
	char kb[16];
	unsigned char d[64];
	size_t ds = fixed ? 8 : 8 + tu_below(rng, 50);
	fill(rng, d, ds);
	if (fixed) {	/* a smaller value range makes repeats (KEYEXIST) likely too */
		uint64_t x = tu_below(rng, 200000);
		memcpy(d, &x, 8);
	}
	MDB_val k = {(size_t)snprintf(kb, sizeof kb, "d%04u", key), kb}, v = {ds, d};
	ok_or(mdb_put(t, dbi, &k, &v, 0), MDB_KEYEXIST, "put dup");
}

/* delete up to n entries from a random key on, through a cursor */
static void op_range_del(MDB_txn *t, MDB_dbi dbi, uint64_t *rng, const char *fmt, unsigned key,
	unsigned n, int dupsort)
{
	MDB_cursor *c;
	char kb[16];
	ok_or(mdb_cursor_open(t, dbi, &c), 0, "cursor open");
	for (unsigned i = 0; i < n; i++) {
		MDB_val k = {(size_t)snprintf(kb, sizeof kb, fmt, key), kb}, d;
		int rc = mdb_cursor_get(c, &k, &d, MDB_SET_RANGE);
		if (rc == MDB_NOTFOUND)
			break;
		ok_or(rc, 0, "cursor seek");
		ok_or(mdb_cursor_del(c, dupsort && tu_below(rng, 2) ? MDB_NODUPDATA : 0), 0, "cursor del");
	}
	mdb_cursor_close(c);
}

static void random_ops(tt_handle *h, MDB_txn *t, uint64_t *rng, int heavy)
{
	unsigned nops = heavy ? 150 + tu_below(rng, 350) : 1 + tu_below(rng, 40);
	for (unsigned i = 0; i < nops; i++) {
		unsigned r = tu_below(rng, 1000);
		if (r < 330) {
			op_plain_put(t, h->dbi[0], rng, tu_below(rng, 2500));
		} else if (r < 450) {
			op_del(t, h->dbi[0], "k%06u", tu_below(rng, 2500));
		} else if (r < 560) {
			op_dup_put(t, h->dbi[1], rng, tu_below(rng, 30), 0);
		} else if (r < 600) {
			op_del(t, h->dbi[1], "d%04u", tu_below(rng, 30));
		} else if (r < 700) {
			op_dup_put(t, h->dbi[2], rng, tu_below(rng, 8), 1);
		} else if (r < 780) {
			op_plain_put(t, h->dbi[3], rng, tu_below(rng, 1500));
		} else if (r < 820) {
			op_del(t, h->dbi[3], "k%06u", tu_below(rng, 1500));
		} else if (r < 880) {
			op_dup_put(t, h->dbi[4], rng, tu_below(rng, 200), 0);
		} else if (r < 915) {	/* a sequential run: splits */
			unsigned at = tu_below(rng, 2500), len = 20 + tu_below(rng, heavy ? 200 : 80);
			for (unsigned j = 0; j < len; j++)
				op_plain_put(t, h->dbi[0], rng, at + j);
		} else if (r < 950) {	/* a range delete: merges */
			unsigned which = tu_below(rng, 3);
			MDB_dbi dbi = which == 0 ? h->dbi[0] : which == 1 ? h->dbi[3] : h->dbi[1];
			op_range_del(t, dbi, rng, which == 2 ? "d%04u" : "k%06u",
				tu_below(rng, which == 2 ? 30 : 2500),
				20 + tu_below(rng, heavy ? 300 : 120), which == 2);
		} else if (r < 997) {	/* a DUPFIXED key's whole sub-tree grows */
			unsigned key = tu_below(rng, 8), len = 50 + tu_below(rng, 200);
			for (unsigned j = 0; j < len; j++)
				op_dup_put(t, h->dbi[2], rng, key, 1);
		} else {	/* empty a DB: frees every page of it */
			static const int droppable[3] = {1, 2, 4};
			ok_or(mdb_drop(t, h->dbi[droppable[tu_below(rng, 3)]], 0), 0, "drop");
		}
	}
}

/* DB handles live on only if the txn that opened them commits: one txn
 * that opens (creates) them all and commits */
static void open_dbis(tt_handle *h)
{
	MDB_txn *t;
	MUST(mdb_txn_begin(h->env, NULL, 0, &t));
	for (int i = 0; i < NDB; i++)
		ok_or(mdb_dbi_open(t, db_names[i], db_flags[i] | MDB_CREATE, &h->dbi[i]), 0, "dbi open");
	MUST(mdb_txn_commit(t));
}

static MDB_env *open_env(const char *dir, unsigned flags)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_mapsize(env, MAPSIZE));
	MUST(mdb_env_set_maxdbs(env, 8));
	MUST(mdb_env_open(env, dir, flags | MDB_NOSYNC, 0644));
	return env;
}

/* one write txn of handle h; returns 1 if it committed */
static int run_txn(tt_handle *h, uint64_t *rng, int writemap)
{
	MDB_txn *t;
	MUST(mdb_txn_begin(h->env, NULL, 0, &t));
	check_table(h, 1);
	int heavy = tu_below(rng, 100) < 8;
	random_ops(h, t, rng, heavy);
	if (!writemap && tu_below(rng, 100) < 15) {
		/* nested txns (not allowed under WRITEMAP) */
		MDB_txn *child;
		MUST(mdb_txn_begin(h->env, t, 0, &child));
		random_ops(h, child, rng, tu_below(rng, 100) < 10);
		if (tu_below(rng, 2))
			MUST(mdb_txn_commit(child));
		else
			mdb_txn_abort(child);
		random_ops(h, t, rng, 0);
	}
	int commit = tu_below(rng, 100) >= (heavy ? 50u : 22u);
	if (commit) {
		MUST(mdb_txn_commit(t));
		walk_committed();
		n_commits++;
	} else {
		if (writemap) {
			n_wm_aborts++;
			n_wm_abort_loose += t->t_loose.l_n != 0;
			n_wm_abort_recl += t->t_reclaimed.l_n != 0;
			n_wm_abort_big += t->t_dirty.d_n >= 100;
			if (t->t_dirty.d_n > max_wm_abort_dirty)
				max_wm_abort_dirty = t->t_dirty.d_n;
		}
		mdb_txn_abort(t);
		n_aborts++;
	}
	check_table(h, 0);
	return commit;
}

/* a forked child process writes a few txns through its own handle */
static void foreign_process(const char *dir, unsigned flags, uint64_t seed)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(2);
	}
	if (pid == 0) {
		uint64_t rng = seed;
		tt_handle c = {.name = "child"};
		c.env = open_env(dir, flags);
		open_dbis(&c);
		/* the first txn commits (so the parent's handles must start a
		 * new epoch), the last one aborts, the others either way */
		unsigned n = 2 + tu_below(&rng, 6);
		for (unsigned i = 0; i < n; i++) {
			MDB_txn *t;
			if (mdb_txn_begin(c.env, NULL, 0, &t))
				_exit(3);
			random_ops(&c, t, &rng, tu_below(&rng, 100) < 20);
			if (i + 1 == n || (i && tu_below(&rng, 3) == 0)) {
				mdb_txn_abort(t);
			} else if (mdb_txn_commit(t)) {
				_exit(4);
			}
		}
		mdb_env_close(c.env);
		_exit(0);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	walk_committed();
	n_foreign++;
}

static void handle_init(tt_handle *h, const char *name, MDB_env *env)
{
	memset(h, 0, sizeof *h);
	h->name = name;
	h->env = env;
	h->tr = calloc(M.cap, M.psize);
	h->tr_at = calloc(M.cap, sizeof *h->tr_at);
	h->scribbled = calloc(M.cap, 1);
	if (!h->tr || !h->tr_at || !h->scribbled) {
		fprintf(stderr, "trust_test: out of memory\n");
		exit(2);
	}
}

static void handle_free(tt_handle *h)
{
	mdb_env_close(h->env);
	free(h->tr);
	free(h->tr_at);
	free(h->scribbled);
}

/*
 * One environment: handle A does most txns, handle B (same process, other
 * handle) and a forked child some.  flags_a/flags_b choose WRITEMAP.
 */
static void phase(const char *tag, unsigned flags_a, unsigned flags_b, unsigned rounds, uint64_t seed)
{
	char dir[128];
	snprintf(dir, sizeof dir, "%s_%s", DIR_BASE, tag);
	tu_fresh_dir(dir);
	long f0 = n_fail, e0 = n_entries, x0 = n_exempt, a0 = n_aborts, c0 = n_commits;
	uint64_t rng = seed;
	tt_handle a, b;
	MDB_env *ea = open_env(dir, flags_a);
	MDB_env *eb = open_env(dir, flags_b);
	MDB_envinfo info;
	MUST(mdb_env_info(ea, &info));
	memset(&M, 0, sizeof M);
	M.psize = ea->e_psize;
	M.cap = info.me_mapsize / M.psize;
	char path[160];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	M.fd = open(path, O_RDONLY);
	M.ref = calloc(M.cap, M.psize);
	M.kind = calloc(M.cap, 1);
	M.reach = calloc(M.cap, sizeof *M.reach);
	if (M.fd < 0 || !M.ref || !M.kind || !M.reach) {
		fprintf(stderr, "trust_test: cannot set up the model\n");
		exit(2);
	}
	handle_init(&a, "A", ea);
	handle_init(&b, "B", eb);
	walk_committed();
	open_dbis(&a);
	walk_committed();
	check_table(&a, 0);
	open_dbis(&b);
	walk_committed();
	check_table(&b, 0);
	for (unsigned i = 0; i < rounds; i++) {
		unsigned r = tu_below(&rng, 100);
		tt_handle *h = r < 80 ? &a : &b, *other = h == &a ? &b : &a;
		if (r >= 97) {	/* it commits: A and B start new epochs */
			foreign_process(dir, flags_a, tu_next(&rng));
			continue;
		}
		unsigned wm = (h == &a ? flags_a : flags_b) & MDB_WRITEMAP;
		int committed = run_txn(h, &rng, wm != 0);
		if (!committed && wm)
			mark_foreign_scribbles(other);
		if (i % 64 == 63) {
			MDB_txn *rt;
			char msg[256] = "";
			MUST(mdb_txn_begin(ea, NULL, MDB_RDONLY, &rt));
			int rc = mdb_txn_check(rt, msg, sizeof msg);
			if (rc)
				fprintf(stderr, "trust_test: %s: check: %s\n", tag, msg);
			EXPECT(rc == 0);
			mdb_txn_abort(rt);
		}
	}
	EXPECT(M.bad == 0);
	printf("trust_test: %-9s %u txns (%ld commits, %ld aborts), %ld trusted entries checked, "
		"%ld exempt, %ld failures\n", tag, rounds, n_commits - c0, n_aborts - a0,
		n_entries - e0, n_exempt - x0, n_fail - f0);
	handle_free(&a);
	handle_free(&b);
	close(M.fd);
	free(M.ref);
	free(M.kind);
	free(M.reach);
}

int main(void)
{
	uint64_t seed = 0x7a11e5ed;
	const char *es = getenv("TRUST_TEST_SEED");
	if (es)
		seed = strtoull(es, NULL, 0);
	unsigned rounds = 500 * (unsigned)tu_scale();
	printf("trust_test: seed %#llx (TRUST_TEST_SEED=%#llx reproduces), %u txns per phase\n",
		(unsigned long long)seed, (unsigned long long)seed, rounds);
	uint64_t s = seed;
	phase("writemap", MDB_WRITEMAP, MDB_WRITEMAP, rounds, tu_next(&s));
	phase("default", 0, 0, rounds, tu_next(&s));
	phase("mixed", MDB_WRITEMAP, 0, rounds / 2, tu_next(&s));
	printf("trust_test: %ld walks, %ld foreign-process runs; WRITEMAP aborts: %ld, %ld with loose "
		"pages, %ld with reclaimed pages, %ld with >= 100 dirty pages (max %zu)\n", n_walks,
		n_foreign, n_wm_aborts, n_wm_abort_loose, n_wm_abort_recl, n_wm_abort_big,
		max_wm_abort_dirty);
	/* the aborts this test is about did happen */
	EXPECT(n_entries > 0);
	EXPECT(n_wm_abort_loose > 0);
	EXPECT(n_wm_abort_recl > 0);
	EXPECT(n_wm_abort_big > 0);
	return tu_finish("trust_test");
}
