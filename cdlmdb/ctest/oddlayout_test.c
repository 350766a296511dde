/*
 * oddlayout_test.c - the layouts stock LMDB 0.9.33 (linked in, see
 * stockside.c) leaves in a file of ours: nodes of odd size at odd offsets,
 * packed without a pad byte, LEAF2 sub-pages with slack of any size.
 *
 * Our engine writes a DUPSORT|DUPFIXED DB of 13-byte values with LEAF2
 * sub-pages at their exact (often odd) size, as releases before the even
 * rule did (test hook dlmdb_debug_leaf2_exact).  Stock then deletes values
 * (never a key's last), shrinking sub-pages by odd amounts; the file must
 * then hold nodes at odd offsets.  Our engine must read it (both ways,
 * equal to stock's reading), check it, write over it, copy it (plain and
 * compacting) and check every result, under ASan+UBSan (node headers at
 * odd addresses are unaligned).
 */
#include "testutil.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int stock_digest(const char *dir, const char *name, unsigned flags, uint64_t *hash, size_t *count,
	int *errout);
int stock_thin_dups(const char *dir, const char *name, unsigned flags, uint64_t seed, int txns,
	size_t *deleted);
void dlmdb_debug_leaf2_exact(int on);

#define DIR "build/oddlayout"
#define DB "fixed13"
#define DBFLAGS (MDB_DUPSORT | MDB_DUPFIXED)
#define WIDTH 13
#define NKEYS 64

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* the digest stock_digest makes of one pair */
static uint64_t pair_hash(uint64_t h, const MDB_val *k, const MDB_val *v)
{
	uint64_t ks = k->mv_size, vs = v->mv_size;
	h = fnv(h, &ks, 8);
	h = fnv(h, k->mv_data, k->mv_size);
	h = fnv(h, &vs, 8);
	return fnv(h, v->mv_data, v->mv_size);
}

static MDB_env *open_env(const char *dir, unsigned flags)
{
	MDB_env *env;
	MUST(mdb_env_create(&env));
	MUST(mdb_env_set_maxdbs(env, 8));
	MUST(mdb_env_set_mapsize(env, (size_t)256 << 20));
	MUST(mdb_env_open(env, dir, flags, 0644));
	return env;
}

/* Our reading of the DB in dir: forward digest (as stock_digest), every
 * pair again walking backward, counts per key, and our checker. */
static void our_read(const char *dir, const char *what, uint64_t *hash, size_t *count)
{
	MDB_env *env = open_env(dir, MDB_RDONLY);
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_cursor *c;
	MDB_val k, v;
	MUST(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MUST(mdb_dbi_open(txn, DB, 0, &dbi));
	MUST(mdb_cursor_open(txn, dbi, &c));
	size_t cap = 1 << 16, n = 0;
	uint64_t *each = malloc(cap * sizeof *each), h = 1469598103934665603ull;
	int rc;
	while ((rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) == 0) {
		EXPECT(v.mv_size == WIDTH);
		if (n == cap)
			each = realloc(each, (cap *= 2) * sizeof *each);
		each[n++] = pair_hash(0, &k, &v);
		h = pair_hash(h, &k, &v);
	}
	EXPECT_RC(rc, MDB_NOTFOUND);
	size_t back = n, bad = 0;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_LAST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_PREV)) {
		if (back == 0 || each[--back] != pair_hash(0, &k, &v))
			bad++;
	}
	EXPECT_RC(rc, MDB_NOTFOUND);
	EXPECT(back == 0 && bad == 0);
	/* counts per key add up, GET_MULTIPLE pages hold them all */
	size_t total = 0, multi = 0;
	MDB_cursor *c2;
	MUST(mdb_cursor_open(txn, dbi, &c2));
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_NODUP)) {
		mdb_size_t cnt;
		MUST(mdb_cursor_count(c, &cnt));
		total += cnt;
		/* GET_MULTIPLE on a single value stored as a plain node
		 * succeeds without touching page, as stock's does */
		MDB_val page = {0, NULL}, kk = k;
		MUST(mdb_cursor_get(c2, &kk, &v, MDB_SET));
		if (mdb_cursor_get(c2, &kk, &page, MDB_GET_MULTIPLE) == 0 && page.mv_size) {
			multi += page.mv_size / WIDTH;
			while (mdb_cursor_get(c2, &kk, &page, MDB_NEXT_MULTIPLE) == 0)
				multi += page.mv_size / WIDTH;
		} else {
			multi += 1;	/* a single value in a plain node: no page */
			EXPECT(cnt == 1);
		}
	}
	EXPECT_RC(rc, MDB_NOTFOUND);
	if (total != n || multi != n)
		fprintf(stderr, "%s: %zu pairs, counts add up to %zu, GET_MULTIPLE pages to %zu\n", what, n, total, multi);
	EXPECT(total == n && multi == n);
	MDB_stat st;
	MUST(mdb_stat(txn, dbi, &st));
	EXPECT(st.ms_entries == n);
	char msg[512] = "";
	rc = mdb_txn_check(txn, msg, sizeof msg);
	if (rc)
		fprintf(stderr, "%s: check: %s\n", what, msg);
	EXPECT_RC(rc, 0);
	mdb_cursor_close(c2);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	mdb_env_close(env);
	free(each);
	*hash = h;
	*count = n;
}

/* Both engines read the DB in dir alike, and our checker passes. */
static void both_read(const char *dir, const char *what)
{
	uint64_t ho, hs;
	size_t no, ns;
	int err;
	our_read(dir, what, &ho, &no);
	EXPECT_RC(stock_digest(dir, DB, 0, &hs, &ns, &err), 0);
	if (ho != hs || no != ns)
		fprintf(stderr, "%s: ours read %zu pairs (%016llx), stock %zu (%016llx)\n", what, no,
			(unsigned long long)ho, ns, (unsigned long long)hs);
	EXPECT(ho == hs && no == ns);
	printf("%s: %zu pairs, both engines agree\n", what, no);
}

/* Leaf-page slots at odd offsets in the data file (4 KiB pages; pages
 * whose header names their own number); *oddsub: inline LEAF2 sub-pages
 * of an odd size on those pages. */
static size_t odd_scan(const char *dir, size_t *oddsub)
{
	char path[256];
	snprintf(path, sizeof path, "%s/data.mdb", dir);
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	unsigned char pg[4096];
	size_t odd = 0;
	*oddsub = 0;
	for (uint64_t no = 0; fread(pg, 1, sizeof pg, f) == sizeof pg; no++) {
		uint64_t pgno;
		uint16_t flags, lower, upper;
		memcpy(&pgno, pg, 8);
		memcpy(&flags, pg + 10, 2);
		memcpy(&lower, pg + 12, 2);
		memcpy(&upper, pg + 14, 2);
		if (no < 2 || pgno != no || (flags & ~0x10) != 0x02 || lower < 16 || lower > upper || upper > 4096)
			continue;
		for (unsigned i = 16; i < lower; i += 2) {
			uint16_t off;
			memcpy(&off, pg + i, 2);
			odd += off & 1;
			uint16_t lo, hi, nfl, ks, spfl;
			if (off + 8u > sizeof pg)
				continue;
			memcpy(&lo, pg + off, 2);
			memcpy(&hi, pg + off + 2, 2);
			memcpy(&nfl, pg + off + 4, 2);
			memcpy(&ks, pg + off + 6, 2);
			size_t ds = lo | (size_t)hi << 16;
			if (nfl != 4 || !(ds & 1) || off + 8u + ks + 16u > sizeof pg)
				continue;
			memcpy(&spfl, pg + off + 8 + ks + 10, 2);
			*oddsub += (spfl & 0x20) != 0;
		}
	}
	fclose(f);
	return odd;
}

static void put_value(MDB_txn *txn, MDB_dbi dbi, const char *key, uint64_t *seed)
{
	unsigned char b[WIDTH];
	for (int i = 0; i < WIDTH; i++)
		b[i] = (unsigned char)tu_next(seed);
	MDB_val k = {strlen(key), (void *)key}, v = {WIDTH, b};
	EXPECT_RC(mdb_put(txn, dbi, &k, &v, 0), 0);
}

/* Our writes: txns txns; in each, every key gets values added (fill) or a
 * random mix of added values, deleted values and (rarely) a deleted key;
 * fill 2: one value more for every even-numbered key, and a new key
 * (key + "+", one value) next to every odd-numbered one, which leaves the
 * odd-numbered keys' sub-pages as they are but copies their leaf page. */
static void our_write(const char *dir, uint64_t *seed, int txns, int fill)
{
	MDB_env *env = open_env(dir, 0);
	for (int t = 0; t < txns; t++) {
		MDB_txn *txn;
		MDB_dbi dbi;
		MUST(mdb_txn_begin(env, NULL, 0, &txn));
		MUST(mdb_dbi_open(txn, DB, DBFLAGS | MDB_CREATE, &dbi));
		for (int i = 0; i < NKEYS; i++) {
			char key[16];
			snprintf(key, sizeof key, "%0*d", 1 + i % 9, i);	/* odd and even lengths */
			if (fill == 2) {
				if (i % 2)
					strcat(key, "+");
				put_value(txn, dbi, key, seed);
				continue;
			}
			if (fill) {
				/* 1..300 values: inline sub-pages of every size, and sub-trees */
				for (unsigned n = 1 + tu_below(seed, 300); n > 0; n--)
					put_value(txn, dbi, key, seed);
				continue;
			}
			unsigned r = tu_below(seed, 10);
			MDB_val k = {strlen(key), key}, v;
			if (r < 4) {
				for (unsigned n = 1 + tu_below(seed, 6); n > 0; n--)
					put_value(txn, dbi, key, seed);
			} else if (r < 9) {
				MDB_cursor *c;
				MUST(mdb_cursor_open(txn, dbi, &c));
				int rc = mdb_cursor_get(c, &k, &v, MDB_SET);
				for (unsigned n = 1 + tu_below(seed, 6); n > 0 && rc == 0; n--) {
					EXPECT_RC(mdb_cursor_del(c, 0), 0);
					rc = mdb_cursor_get(c, &k, &v, MDB_SET);
				}
				EXPECT(rc == 0 || rc == MDB_NOTFOUND);
				mdb_cursor_close(c);
			} else {
				int rc = mdb_del(txn, dbi, &k, NULL);
				EXPECT(rc == 0 || rc == MDB_NOTFOUND);
			}
		}
		EXPECT_RC(mdb_txn_commit(txn), 0);
	}
	mdb_env_close(env);
}

int main(void)
{
	uint64_t seed = 0x0dd1a70u;
	printf("oddlayout_test: seed %llu\n", (unsigned long long)seed);
	tu_fresh_dir(DIR);
	dlmdb_debug_leaf2_exact(1);
	our_write(DIR, &seed, 1, 1);
	our_write(DIR, &seed, 3, 0);
	dlmdb_debug_leaf2_exact(0);
	both_read(DIR, "ours wrote exact-size sub-pages");
	size_t oddsub, deleted = 0;
	EXPECT(odd_scan(DIR, &oddsub) == 0);	/* our own layouts: even offsets only */
	printf("ours wrote %zu LEAF2 sub-pages of an odd size\n", oddsub);
	EXPECT(oddsub > 0);
	size_t before = oddsub;

	/* every leaf page copied by a write of ours: its odd-sized LEAF2
	 * sub-pages (those of the odd-numbered keys, which the write does not
	 * rebuild) get a byte of slack, as stock LMDB then needs; the
	 * compacting copy shows the reachable pages only */
	static const char *const pc = "build/oddlayout_pad", *const cc = "build/oddlayout_pad_compact";
	tu_fresh_dir(pc);
	MDB_env *env = open_env(DIR, MDB_RDONLY);
	EXPECT_RC(mdb_env_copy2(env, pc, 0), 0);
	mdb_env_close(env);
	uint64_t pseed = seed;
	our_write(pc, &pseed, 1, 2);
	both_read(pc, "ours wrote next to every key");
	tu_fresh_dir(cc);
	env = open_env(pc, MDB_RDONLY);
	EXPECT_RC(mdb_env_copy2(env, cc, MDB_CP_COMPACT), 0);
	mdb_env_close(env);
	both_read(cc, "its compacting copy");
	size_t oddoff = odd_scan(cc, &oddsub);
	printf("odd-sized LEAF2 sub-pages in use: %zu before, %zu after; %zu slots at odd offsets\n", before,
		oddsub, oddoff);
	EXPECT(oddsub == 0 && oddoff == 0);

	EXPECT_RC(stock_thin_dups(DIR, DB, DBFLAGS, seed, 4, &deleted), 0);
	size_t odd = odd_scan(DIR, &oddsub);
	printf("stock deleted %zu values; %zu nodes at odd offsets\n", deleted, odd);
	EXPECT(odd > 0);
	both_read(DIR, "stock shrank the sub-pages");

	/* copies of stock's layouts, plain and compacting */
	static const char *const cdirs[] = {"build/oddlayout_copy", "build/oddlayout_compact"};
	for (int compact = 0; compact < 2; compact++) {
		tu_fresh_dir(cdirs[compact]);
		MDB_env *env = open_env(DIR, MDB_RDONLY);
		EXPECT_RC(mdb_env_copy2(env, cdirs[compact], compact ? MDB_CP_COMPACT : 0), 0);
		mdb_env_close(env);
		both_read(cdirs[compact], compact ? "compacting copy" : "plain copy");
	}

	/* our writes over stock's layouts (the pages we copy get our layout) */
	our_write(DIR, &seed, 4, 0);
	both_read(DIR, "ours wrote over stock's layouts");
	printf("after our writes: %zu slots at odd offsets in the file (pages we did not copy keep "
		"theirs; freed pages keep their old images)\n", odd_scan(DIR, &oddsub));

	return tu_finish("oddlayout_test");
}
