/*
 * check.c - mdb_txn_check: a structural audit of one transaction's view.
 *
 * Every tree (free DB, main DB, each named DB found in the main DB) is walked
 * from its root.  Checked: page kind and header bounds, slot offsets, node
 * extents (exact, of any parity; no two nodes of a page or sub-page sharing
 * a byte: FORMAT.md, "What a file guarantees"), page numbers below the snapshot's next free page, key order inside
 * a page and against the separator range inherited from the parents, equal
 * leaf depth, no page reached twice, overflow runs in range, and the stored
 * per-DB counts (depth, branch/leaf/overflow pages, entries).  Counted trees
 * (MDB_COUNTED, FORMAT.md "Counted trees") also get their branch-node counts
 * compared with what the child subtree really holds, their page flags
 * (COUNTED, plus KEYCOUNT for DUPSORT main trees; neither in other trees) and
 * the counted flag of their duplicate sub-trees checked; a snapshot holding a
 * DB with an extension flag must carry the extended meta version (that is
 * what keeps stock LMDB out of the file).  Then the free list (free DB
 * records, plus a write txn's pending lists) must not overlap
 * the reachable pages nor repeat a page.  Finally every page number below
 * the snapshot's end must be either reachable, free, or a meta page: an
 * unaccounted ("leaked") page is reported as corruption, because our engine
 * never leaks pages, and neither does stock LMDB in committed states.
 */
#include "internal.h"
#include <stdarg.h>

struct audit {
	MDB_txn *txn;
	MDB_env *env;
	uint8_t *state;		/* per page: 0 unseen, 1 reachable, 2 free */
	pgno_t npages;
	char *msg;
	size_t msglen;
	int failed;
	/* per-tree tallies */
	uint64_t branch, leaf, overflow, entries;
	uint64_t keys;		/* distinct keys met in leaves (KEYCOUNT checks) */
	unsigned leafdepth;
	unsigned cntflags;	/* COUNTED|KEYCOUNT bits every branch page must carry */
	int prefix;		/* a PREFIX_COMPRESSION tree: its node leaves carry DL_P_PREFIX */
	int dupsort;		/* DUP nodes of this tree hold duplicates */
	int extdbs;		/* named DBs seen with an extension flag */
	MDB_cmp_func *cmp;
	MDB_cmp_func *dcmp;	/* duplicate order of the DB being walked */
	const char *dbname;
	char *subbuf;		/* aligned copy of an inline sub-page */
	uint64_t *spans;	/* node extents of one page (check_spans) */
	unsigned fixed;		/* walking a DUPFIXED sub-tree: the value size */
};

static int audit_tree(struct audit *a, const dl_dbrec *db, MDB_cmp_func *cmp, const char *name);
static int audit_tree_as(struct audit *a, const dl_dbrec *db, MDB_cmp_func *cmp, const char *name,
	int kind);
#define TREE_USER 0	/* named DB or duplicate sub-tree */
#define TREE_FREE 1	/* the free DB: never counted */
#define TREE_MAIN 2	/* the main DB (counted like a user DB; its TREE nodes are named DBs) */
static int fail(struct audit *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int check_spans(struct audit *a, pgno_t pg, const dl_page *p, unsigned lim, const char *what);

/* Duplicates of one key: an inline sub-page or a sub-tree. */
static int audit_dups(struct audit *a, pgno_t pg, const dl_node *nd)
{
	size_t ds = dl_node_dsize(nd);
	if (nd->n_flags & DL_N_BIG)
		return fail(a, "page %" PRIu64 ": duplicate node with overflow data", pg);
	if (nd->n_flags & DL_N_TREE) {
		dl_dbrec rec;
		if (ds != sizeof rec)
			return fail(a, "page %" PRIu64 ": duplicate sub-tree record of %zu bytes", pg, ds);
		memcpy(&rec, dl_node_data(nd), sizeof rec);
		if (rec.d_entries < 1)
			return fail(a, "page %" PRIu64 ": empty duplicate sub-tree", pg);
		/* the duplicates of a counted DB are counted too, else not */
		if (!!(rec.d_flags & MDB_COUNTED) != !!a->cntflags)
			return fail(a, "page %" PRIu64 ": duplicate sub-tree record flags 0x%x in a%s tree", pg,
				(unsigned)rec.d_flags, a->cntflags ? " counted" : "n uncounted");
		/* ... and a compressed one's compressed, unless DUPFIXED */
		if (!!(rec.d_flags & MDB_PREFIX_COMPRESSION) != (a->prefix && !(rec.d_flags & MDB_DUPFIXED)))
			return fail(a, "page %" PRIu64 ": duplicate sub-tree record flags 0x%x in a%s tree", pg,
				(unsigned)rec.d_flags, a->prefix ? " compressed" : "n uncompressed");
		if (rec.d_flags & MDB_DUPSORT)
			return fail(a, "page %" PRIu64 ": duplicate sub-tree record flags 0x%x include DUPSORT", pg,
				(unsigned)rec.d_flags);
		struct audit save = *a;
		a->fixed = (rec.d_flags & MDB_DUPFIXED) ? rec.d_pad : 0;
		if ((rec.d_flags & MDB_DUPFIXED) && (rec.d_pad == 0 || rec.d_pad > DL_MAXKEY))
			return fail(a, "page %" PRIu64 ": DUPFIXED sub-tree with value size %u", pg, rec.d_pad);
		int rc = audit_tree(a, &rec, a->dcmp, "duplicate sub-tree");
		uint64_t subentries = rec.d_entries;
		const char *failed_name = a->dbname;
		int failed = a->failed;
		*a = save;
		a->failed = failed;
		if (rc) {
			a->dbname = failed_name;
			return rc;
		}
		a->entries += subentries;
		return 0;
	}
	if (ds < DL_PAGEHDR || ds > a->env->e_psize)
		return fail(a, "page %" PRIu64 ": sub-page of %zu bytes", pg, ds);
	memcpy(a->subbuf, dl_node_data(nd), ds);
	dl_page *sp = (dl_page *)a->subbuf;
	/* LMDB 0.9 writers copy-and-free (assert) a sub-page lacking SUBP|DIRTY */
	unsigned spf = sp->p_flags & ~(DL_P_LEAF2 | DL_P_PREFIX);
	int sppfx = dl_pg_prefix(sp);
	if (spf != (DL_P_LEAF | DL_P_SUBP | DL_P_DIRTY) || (sppfx && dl_pg_is_leaf2(sp)))
		return fail(a, "page %" PRIu64 ": sub-page flags 0x%x (want LEAF|SUBP|DIRTY[|LEAF2 or PREFIX])", pg,
			(unsigned)sp->p_flags);
	if (sppfx != (a->prefix && !dl_pg_is_leaf2(sp)))
		return fail(a, "page %" PRIu64 ": sub-page flags 0x%x in a%s tree", pg, (unsigned)sp->p_flags,
			a->prefix ? " compressed" : "n uncompressed");
	if ((sp->p_flags & (DL_P_LEAF | DL_P_LEAF2 | DL_P_BRANCH)) == (DL_P_LEAF | DL_P_LEAF2)) {
		unsigned n2 = dl_pg_nkeys(sp);
		if (!sp->p_pad || sp->p_lower < DL_PAGEHDR || sp->p_lower > sp->p_upper ||
		    DL_PAGEHDR + (size_t)n2 * sp->p_pad > ds || n2 == 0)
			return fail(a, "page %" PRIu64 ": bad LEAF2 sub-page", pg);
		for (unsigned i = 1; i < n2; i++) {
			MDB_val x1 = {sp->p_pad, dl_pg_leaf2_key(sp, i - 1)}, x2 = {sp->p_pad, dl_pg_leaf2_key(sp, i)};
			if (a->dcmp(&x1, &x2) >= 0)
				return fail(a, "page %" PRIu64 ": duplicates out of order", pg);
		}
		a->entries += n2;
		return 0;
	}
	if ((sp->p_flags & (DL_P_LEAF | DL_P_LEAF2 | DL_P_BRANCH)) != DL_P_LEAF || sp->p_lower < DL_PAGEHDR ||
	    sp->p_lower > sp->p_upper || sp->p_upper > ds || (sp->p_lower & 1))
		return fail(a, "page %" PRIu64 ": bad sub-page header", pg);
	unsigned n = dl_pg_nkeys(sp);
	if (n == 0)
		return fail(a, "page %" PRIu64 ": empty sub-page", pg);
	int rc = check_spans(a, pg, sp, (unsigned)ds, " sub-page");
	if (rc)
		return rc;
	MDB_val prev = {0, NULL};
	unsigned char vbuf[2][DL_MAXKEY];
	for (unsigned i = 0; i < n; i++) {
		dl_node *sn = dl_pg_node(sp, i);
		MDB_val v;
		if (sppfx && !dl_pfx_node_ok(sp, sn, (unsigned)ds))
			return fail(a, "page %" PRIu64 ": sub-page node %u: shared length %u, suffix %u, anchor %u",
				pg, i, dl_node_shared(sn), sn->n_ksize, dl_pg_anchor_len(sp));
		dl_leaf_key(sp, sn, &v, vbuf[i & 1]);
		if (prev.mv_data && a->dcmp(&prev, &v) >= 0)
			return fail(a, "page %" PRIu64 ": duplicates out of order", pg);
		prev = v;
	}
	a->entries += n;
	return 0;
}

static int span_order(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

/*
 * The nodes of page p (a tree page, or a sub-page of lim bytes): each one
 * inside the node area [upper, lim) with its exact extent (header, key,
 * inline data or a big value's page number, or a branch node's counts),
 * and no two sharing a byte.  Offsets and extents may be odd, nodes may
 * lie in any order and with gaps between them (stock LMDB's layouts,
 * FORMAT.md "What a file guarantees"); only real overlap is damage.
 */
static int check_spans(struct audit *a, pgno_t pg, const dl_page *p, unsigned lim, const char *what)
{
	unsigned n = dl_pg_nkeys(p), upper = p->p_upper;
	int leaf = dl_pg_is_leaf(p);
	for (unsigned i = 0; i < n; i++) {
		unsigned off = dl_pg_slot(p, i);
		if (off < upper || off + DL_NODEHDR > lim)
			return fail(a, "page %" PRIu64 "%s slot %u offset %u invalid", pg, what, i, off);
		const dl_node *nd = dl_pg_node(p, i);
		size_t extent = DL_NODEHDR + nd->n_ksize;
		if (leaf)
			extent += (nd->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(nd);
		else
			extent += dl_pg_cntbytes(p);
		if (off + extent > lim)
			return fail(a, "page %" PRIu64 "%s node %u runs past the page end", pg, what, i);
		a->spans[i] = (uint64_t)off << 32 | (off + extent);
	}
	if (dl_pg_prefix(p) && p->p_pad) {
		/* the anchor record is part of no node */
		if (!dl_pg_anchor_ok(p, lim))
			return fail(a, "page %" PRIu64 "%s anchor at %u runs past the page end", pg, what,
				p->p_pad);
		a->spans[n++] = (uint64_t)p->p_pad << 32 | (p->p_pad + sizeof(uint16_t) + dl_pg_anchor_len(p));
	}
	qsort(a->spans, n, sizeof *a->spans, span_order);
	for (unsigned i = 1; i < n; i++) {
		unsigned prev_end = (unsigned)a->spans[i - 1], off = (unsigned)(a->spans[i] >> 32);
		if (off < prev_end)
			return fail(a, "page %" PRIu64 "%s: nodes overlap (one at %u ends at %u, the next starts at %u)",
				pg, what, (unsigned)(a->spans[i - 1] >> 32), prev_end, off);
	}
	return 0;
}

static MDB_cmp_func *dup_order(unsigned f)
{
	return dlmdb_cmp_for(((f & MDB_REVERSEDUP) ? MDB_REVERSEKEY : 0) |
		((f & MDB_INTEGERDUP) ? MDB_INTEGERKEY : 0));
}

static int fail(struct audit *a, const char *fmt, ...)
{
	if (!a->failed && a->msg && a->msglen) {
		va_list ap;
		va_start(ap, fmt);
		int n = snprintf(a->msg, a->msglen, "%s: ", a->dbname ? a->dbname : "?");
		if (n >= 0 && (size_t)n < a->msglen)
			vsnprintf(a->msg + n, a->msglen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	a->failed = 1;
	return MDB_CORRUPTED;
}

static int claim(struct audit *a, pgno_t pg, unsigned n, const char *what)
{
	if (pg < DL_NMETAS || pg + n > a->npages || pg + n < pg)
		return fail(a, "%s page %" PRIu64 " (+%u) outside 2..%" PRIu64, what, pg, n, a->npages - 1);
	for (unsigned i = 0; i < n; i++) {
		if (a->state[pg + i])
			return fail(a, "%s page %" PRIu64 " reached twice", what, pg + i);
		a->state[pg + i] = 1;
	}
	return 0;
}

static int walk(struct audit *a, pgno_t pg, unsigned depth, const MDB_val *lo, const MDB_val *hi)
{
	MDB_env *env = a->env;
	dl_page *p;
	if (depth > DL_MAX_DEPTH)
		return fail(a, "tree deeper than %d", DL_MAX_DEPTH);
	if (pg < DL_NMETAS || pg >= a->npages)
		return fail(a, "child page %" PRIu64 " out of range", pg);
	int rc = dlmdb_page_get(a->txn, pg, &p);
	if (rc)
		return fail(a, "page %" PRIu64 ": %s", pg, mdb_strerror(rc));
	if ((rc = claim(a, pg, 1, "tree")))
		return rc;
	if (p->p_pgno != pg)
		return fail(a, "page %" PRIu64 " header says %" PRIu64, pg, p->p_pgno);
	int branch = dl_pg_is_branch(p), leaf = dl_pg_is_leaf(p);
	if (branch == leaf || (p->p_flags & (DL_P_OVERFLOW | DL_P_META)))
		return fail(a, "page %" PRIu64 " has kind flags 0x%x", pg, p->p_flags);
	int pf = dl_pg_prefix(p), wantpf = leaf && !dl_pg_is_leaf2(p) && a->prefix;
	if (pf != wantpf)
		return fail(a, "%s page %" PRIu64 " %s the PREFIX flag (%s tree)", branch ? "branch" :
			dl_pg_is_leaf2(p) ? "LEAF2" : "leaf", pg, pf ? "has" : "lacks",
			a->prefix ? "compressed" : "uncompressed");
	unsigned cf = p->p_flags & (DL_P_COUNTED | DL_P_KEYCOUNT), wantcf = branch ? a->cntflags : 0;
	if (cf != wantcf)
		return fail(a, "%s page %" PRIu64 " has count flags 0x%x, want 0x%x (%s tree)",
			branch ? "branch" : "leaf", pg, cf, wantcf, a->cntflags ? "counted" : "uncounted");
	if (p->p_lower < DL_PAGEHDR || p->p_lower > p->p_upper || p->p_upper > env->e_psize ||
	    (p->p_lower & 1))
		return fail(a, "page %" PRIu64 " bad bounds lower %u upper %u", pg, p->p_lower, p->p_upper);
	unsigned n = dl_pg_nkeys(p);
	if (n == 0)
		return fail(a, "page %" PRIu64 " is empty", pg);
	if (branch)
		a->branch++;
	else
		a->leaf++;
	if (leaf && dl_pg_is_leaf2(p)) {
		if (!a->fixed || p->p_pad != a->fixed)
			return fail(a, "page %" PRIu64 ": LEAF2 page outside a DUPFIXED sub-tree", pg);
		if (DL_PAGEHDR + (size_t)n * p->p_pad > env->e_psize ||
		    p->p_upper != env->e_psize - (size_t)n * (p->p_pad - sizeof(indx_t)))
			return fail(a, "page %" PRIu64 ": LEAF2 bounds", pg);
		MDB_val lprev = {0, NULL};
		for (unsigned i = 0; i < n; i++) {
			MDB_val k = {p->p_pad, dl_pg_leaf2_key(p, i)};
			if (i && a->cmp(&lprev, &k) >= 0)
				return fail(a, "page %" PRIu64 " keys out of order at %u", pg, i);
			if ((lo && a->cmp(&k, lo) < 0) || (hi && a->cmp(&k, hi) >= 0))
				return fail(a, "page %" PRIu64 " key %u outside its separators", pg, i);
			lprev = k;
		}
		a->entries += n;
		a->keys += n;
		if (!a->leafdepth)
			a->leafdepth = depth;
		else if (a->leafdepth != depth)
			return fail(a, "leaves at depths %u and %u", a->leafdepth, depth);
		return 0;
	}
	if (leaf)
		a->keys += n;
	/* every node inside the page, no two overlapping */
	if ((rc = check_spans(a, pg, p, env->e_psize, "")))
		return rc;
	MDB_val prev = {0, NULL};
	unsigned char kbuf[2][DL_MAXKEY];
	for (unsigned i = 0; i < n; i++) {
		dl_node *nd = dl_pg_node(p, i);
		MDB_val k;
		if (pf) {
			/* a shared length within the anchor, a key of 1..511 bytes */
			if (!dl_pfx_node_ok(p, nd, env->e_psize))
				return fail(a, "page %" PRIu64 " node %u: shared length %u, suffix %u, anchor %u "
					"(flags 0x%x)", pg, i, dl_node_shared(nd), nd->n_ksize,
					dl_pg_anchor_len(p), (unsigned)nd->n_flags);
			dl_leaf_key(p, nd, &k, kbuf[i & 1]);
		} else {
			if (nd->n_ksize > DL_MAXKEY || (nd->n_ksize == 0 && (leaf || i > 0)))
				return fail(a, "page %" PRIu64 " node %u key size %u", pg, i, nd->n_ksize);
			if (leaf && (nd->n_flags & ~DL_N_KIND))
				return fail(a, "page %" PRIu64 " node %u flags 0x%x", pg, i, (unsigned)nd->n_flags);
			k.mv_size = nd->n_ksize;
			k.mv_data = dl_node_key(nd);
		}
		int haskey = leaf || i > 0;
		if (haskey) {
			if (prev.mv_data && a->cmp(&prev, &k) >= 0)
				return fail(a, "page %" PRIu64 " keys out of order at %u", pg, i);
			if (lo && a->cmp(&k, lo) < 0)
				return fail(a, "page %" PRIu64 " key %u below its separator", pg, i);
			if (hi && a->cmp(&k, hi) >= 0)
				return fail(a, "page %" PRIu64 " key %u not below next separator", pg, i);
			prev = k;
		}
		if (branch) {
			MDB_val clo, chi;
			const MDB_val *plo = lo, *phi = hi;
			if (i > 0) {
				clo = k;
				plo = &clo;
			}
			if (i + 1 < n) {
				/* the next separator bounds this child: check that
				 * node before its key is read (its turn comes later) */
				if (!dl_node_in_page(p, i + 1, env->e_psize) ||
				    dl_pg_node(p, i + 1)->n_ksize > DL_MAXKEY)
					return fail(a, "page %" PRIu64 " slot %u offset %u invalid", pg, i + 1,
						dl_pg_slot(p, i + 1));
				dl_node *nx = dl_pg_node(p, i + 1);
				chi.mv_size = nx->n_ksize;
				chi.mv_data = dl_node_key(nx);
				phi = &chi;
			}
			uint64_t ent0 = a->entries, keys0 = a->keys;
			if ((rc = walk(a, dl_node_child(nd), depth + 1, plo, phi)))
				return rc;
			if (cf && dl_node_count(nd) != a->entries - ent0)
				return fail(a, "page %" PRIu64 " node %u (child %" PRIu64 "): entries stored %"
					PRIu64 ", subtree holds %" PRIu64, pg, i, dl_node_child(nd),
					dl_node_count(nd), a->entries - ent0);
			if ((cf & DL_P_KEYCOUNT) && dl_node_keycount(nd) != a->keys - keys0)
				return fail(a, "page %" PRIu64 " node %u (child %" PRIu64 "): keys stored %"
					PRIu64 ", subtree holds %" PRIu64, pg, i, dl_node_child(nd),
					dl_node_keycount(nd), a->keys - keys0);
			continue;
		}
		if (nd->n_flags & DL_N_DUP) {
			if (!a->dupsort)
				return fail(a, "page %" PRIu64 " node %u: duplicates (flags 0x%x) in a tree "
					"without DUPSORT", pg, i, (unsigned)nd->n_flags);
			if ((rc = audit_dups(a, pg, nd)))
				return rc;
			continue;
		}
		a->entries++;
		if (nd->n_flags & DL_N_BIG) {
			pgno_t opg = dl_node_bigpg(nd);
			dl_page *ov;
			if (opg < DL_NMETAS || opg >= a->npages)
				return fail(a, "overflow page %" PRIu64 " out of range", opg);
			if ((rc = dlmdb_page_get(a->txn, opg, &ov)))
				return fail(a, "overflow page %" PRIu64 ": %s", opg, mdb_strerror(rc));
			unsigned cnt = dl_pg_ovcount(ov);
			if (!(ov->p_flags & DL_P_OVERFLOW) || cnt < dl_ov_pages(env, dl_node_dsize(nd)))
				return fail(a, "overflow page %" PRIu64 " flags 0x%x count %u too small", opg,
					ov->p_flags, cnt);
			if ((rc = claim(a, opg, cnt, "overflow")))
				return rc;
			a->overflow += cnt;
		}
	}
	if (leaf) {
		if (!a->leafdepth)
			a->leafdepth = depth;
		else if (a->leafdepth != depth)
			return fail(a, "leaves at depths %u and %u", a->leafdepth, depth);
	}
	return 0;
}

static int audit_tree(struct audit *a, const dl_dbrec *db, MDB_cmp_func *cmp, const char *name)
{
	return audit_tree_as(a, db, cmp, name, TREE_USER);
}

static int audit_tree_as(struct audit *a, const dl_dbrec *db, MDB_cmp_func *cmp, const char *name,
	int kind)
{
	a->branch = a->leaf = a->overflow = a->entries = a->keys = 0;
	a->leafdepth = 0;
	a->dupsort = kind != TREE_FREE && (db->d_flags & MDB_DUPSORT);
	a->cntflags = 0;
	a->prefix = kind != TREE_FREE && (db->d_flags & MDB_PREFIX_COMPRESSION);
	if (kind != TREE_FREE && (db->d_flags & MDB_COUNTED))
		a->cntflags = dl_db_branch_flags(db) & (DL_P_COUNTED | DL_P_KEYCOUNT);
	a->cmp = cmp;
	a->dbname = name;
	int rc = 0;
	if (db->d_root != DL_NO_PAGE) {
		rc = walk(a, db->d_root, 1, NULL, NULL);
		if (rc)
			return rc;
	}
	if (a->leafdepth != db->d_depth)
		return fail(a, "depth %u recorded, %u found", db->d_depth, a->leafdepth);
	if (a->branch != db->d_branch || a->leaf != db->d_leaf || a->overflow != db->d_overflow)
		return fail(a, "pages recorded b/l/o %" PRIu64 "/%" PRIu64 "/%" PRIu64
			", found %" PRIu64 "/%" PRIu64 "/%" PRIu64, db->d_branch, db->d_leaf,
			db->d_overflow, a->branch, a->leaf, a->overflow);
	if (a->entries != db->d_entries)
		return fail(a, "entries recorded %" PRIu64 ", found %" PRIu64 "%s", db->d_entries, a->entries,
			a->cntflags ? " (counted tree: the record holds the root total)" : "");
	return 0;
}

static int mark_free(struct audit *a, pgno_t pg, const char *from)
{
	if (pg < DL_NMETAS || pg >= a->npages)
		return fail(a, "%s lists page %" PRIu64 " out of range", from, pg);
	if (a->state[pg] == 1)
		return fail(a, "page %" PRIu64 " is both in use and free (%s)", pg, from);
	if (a->state[pg] == 2)
		return fail(a, "page %" PRIu64 " listed free twice (%s)", pg, from);
	a->state[pg] = 2;
	return 0;
}

/*
 * Pages past the end of the data file cannot be read, so every one of them
 * must be free.  A damaged meta may claim billions of pages: before the
 * per-page state array is sized by the snapshot, compare the pages the
 * file lacks with the number of page numbers the free lists hold at most.
 * Returns 0 when that is possible, else MDB_CORRUPTED (message set).
 * Read txns only: a write txn's new pages reach the file at its commit.
 */
static int audit_file_end(struct audit *a)
{
	MDB_txn *txn = a->txn;
	MDB_env *env = a->env;
	struct stat st;
	if (!(txn->t_flags & DL_T_RDONLY) || env->e_fd < 0 || fstat(env->e_fd, &st))
		return 0;	/* nothing to compare with: the walk decides */
	uint64_t have = (uint64_t)st.st_size / env->e_psize;
	if (txn->t_next_pg <= have)
		return 0;
	uint64_t missing = txn->t_next_pg - have, listed = 0;
	MDB_cursor mc;
	MDB_val k, d;
	dlmdb_cursor_setup(&mc, txn, DL_FREE_DBI);
	int rc;
	for (rc = mdb_cursor_get(&mc, &k, &d, MDB_FIRST); rc == 0 && listed < missing;
	     rc = mdb_cursor_get(&mc, &k, &d, MDB_NEXT)) {
		uint64_t cnt;
		if (d.mv_size < 8)
			break;	/* audit_free reports it */
		memcpy(&cnt, d.mv_data, 8);
		listed += cnt < (d.mv_size - 8) / 8 ? cnt : (d.mv_size - 8) / 8;
	}
	if (listed >= missing)
		return 0;
	a->dbname = "meta";
	return fail(a, "the snapshot ends at page %" PRIu64 " but the file holds %" PRIu64
		" pages and the free lists at most %" PRIu64 " more", txn->t_next_pg - 1, have, listed);
}

/* The free DB's records, then (write txns) the pending lists. */
static int audit_free(struct audit *a)
{
	MDB_txn *txn = a->txn;
	int write = !(txn->t_flags & DL_T_RDONLY);
	MDB_cursor mc;
	MDB_val k, d;
	a->dbname = "free list";
	dlmdb_cursor_setup(&mc, txn, DL_FREE_DBI);
	int rc;
	for (rc = mdb_cursor_get(&mc, &k, NULL, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(&mc, &k, NULL, MDB_NEXT)) {
		dl_page *p = mc.c_pg[mc.c_top];
		dl_node *nd = dl_pg_node(p, mc.c_ki[mc.c_top]);
		if (k.mv_size != sizeof(txnid_t))
			return fail(a, "record key of %zu bytes", k.mv_size);
		txnid_t id;
		memcpy(&id, k.mv_data, sizeof id);
		if ((rc = dlmdb_node_value(txn, nd, &d)))
			return fail(a, "record %" PRIu64 ": %s", id, mdb_strerror(rc));
		uint64_t cnt;
		/* (cnt + 1) * 8 would wrap for a huge damaged count */
		if (d.mv_size < 8 || (memcpy(&cnt, d.mv_data, 8), cnt > (d.mv_size - 8) / 8))
			return fail(a, "record %" PRIu64 " has bad size %zu", id, d.mv_size);
		if (write && id <= txn->t_last_reclaimed)
			continue;
		pgno_t last = ~(pgno_t)0;
		for (uint64_t i = 0; i < cnt; i++) {
			pgno_t pg;
			memcpy(&pg, (char *)d.mv_data + 8 * (i + 1), 8);
			if (pg >= last)
				return fail(a, "record %" PRIu64 " not in descending order", id);
			last = pg;
			if ((rc = mark_free(a, pg, "free DB")))
				return rc;
		}
	}
	if (rc && rc != MDB_NOTFOUND)
		return fail(a, "walking records: %s", mdb_strerror(rc));
	if (write) {
		const dl_pgl *lists[3] = {&txn->t_freed, &txn->t_loose, &txn->t_reclaimed};
		const char *names[3] = {"pending freed", "loose", "reclaimed"};
		for (int j = 0; j < 3; j++)
			for (size_t i = 0; i < lists[j]->l_n; i++)
				if ((rc = mark_free(a, lists[j]->l_v[i], names[j])))
					return rc;
	}
	return 0;
}

/* Visit each named DB record stored in the main DB. */
static int audit_named(struct audit *a)
{
	MDB_txn *txn = a->txn;
	MDB_env *env = a->env;
	MDB_cursor mc;
	char name[DL_MAXKEY + 1];
	dlmdb_cursor_setup(&mc, txn, DL_MAIN_DBI);
	MDB_val k;
	int rc;
	for (rc = mdb_cursor_get(&mc, &k, NULL, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(&mc, &k, NULL, MDB_NEXT)) {
		dl_node *nd = dl_pg_node(mc.c_pg[mc.c_top], mc.c_ki[mc.c_top]);
		/* named DB records are TREE nodes, whatever their flags;
		 * TREE|DUP is a duplicate sub-tree (DUPSORT main DB; walk()
		 * rejects DUP nodes in any other tree) */
		if ((nd->n_flags & (DL_N_TREE | DL_N_DUP)) != DL_N_TREE)
			continue;
		dl_dbrec rec;
		if (dl_node_dsize(nd) != sizeof rec || (nd->n_flags & DL_N_BIG))
			return fail(a, "named DB record of %zu bytes", dl_node_dsize(nd));
		memcpy(&rec, dl_node_data(nd), sizeof rec);
		memcpy(name, k.mv_data, k.mv_size);	/* whole, also from a PREFIX page */
		name[k.mv_size] = 0;
		if (rec.d_flags & DL_DB_EXTFLAGS)
			a->extdbs++;
		/* a write txn may hold a newer copy of the record */
		const dl_dbrec *use = &rec;
		MDB_cmp_func *cmp = dlmdb_cmp_for(rec.d_flags);
		a->dcmp = dup_order(rec.d_flags);
		/* the mutex: a slot nobody counts may take another name meanwhile */
		pthread_mutex_lock(&env->e_dbimutex);
		for (unsigned i = DL_CORE_DBS; i < txn->t_numdbs; i++) {
			dl_dbx *x = &env->e_dbx[i];
			if (!x->x_used || x->x_namelen != k.mv_size ||
			    memcmp(x->x_name, name, x->x_namelen))
				continue;
			if ((txn->t_dbstate[i] & (DL_DBS_VALID | DL_DBS_STALE)) == DL_DBS_VALID)
				use = &txn->t_dbs[i];
			if (x->x_cmp)
				cmp = x->x_cmp;
			if (x->x_dcmp)
				a->dcmp = x->x_dcmp;
		}
		pthread_mutex_unlock(&env->e_dbimutex);
		dl_dbrec copy = *use;
		if ((rc = audit_tree(a, &copy, cmp, name)))
			return rc;
	}
	if (rc && rc != MDB_NOTFOUND)
		return fail(a, "walking main DB: %s", mdb_strerror(rc));
	return 0;
}

/* Stock LMDB must not open a file holding a DB with an extension flag: the
 * meta page of this snapshot must carry the extended version (FORMAT.md).
 * Only a read txn has a committed meta of its own (a write txn's is written
 * at commit); if that meta was rewritten meanwhile there is nothing to check. */
static int audit_version(struct audit *a)
{
	MDB_txn *txn = a->txn;
	if (!(txn->t_flags & DL_T_RDONLY))
		return 0;
	if (!a->extdbs && !(txn->t_dbs[DL_MAIN_DBI].d_flags & DL_DB_EXTFLAGS))
		return 0;
	for (int i = 0; i < DL_NMETAS; i++) {
		dl_meta m;
		memcpy(&m, a->env->e_map + (size_t)i * a->env->e_psize + DL_PAGEHDR, sizeof m);
		if (m.m_txnid != txn->t_id || m.m_version == DL_DATA_VERSION_EXT)
			continue;
		a->dbname = "meta";
		return fail(a, "meta page %d (txn %" PRIu64 ") has version 0x%x, but the snapshot holds %s "
			"with an extension flag: want 0x%x", i, m.m_txnid, m.m_version,
			a->extdbs ? "named DBs" : "a main DB", DL_DATA_VERSION_EXT);
	}
	return 0;
}

static int dl_u_txn_check(MDB_txn *txn, char *msg, size_t msglen)
{
	if (!txn)
		return EINVAL;
	if (msg && msglen)
		msg[0] = 0;
	int rc = dlmdb_txn_usable(txn, 0);
	if (rc)
		return rc;
	struct audit a;
	memset(&a, 0, sizeof a);
	a.txn = txn;
	a.env = txn->t_env;
	a.msg = msg;
	a.msglen = msglen;
	a.npages = txn->t_next_pg;
	if ((rc = audit_file_end(&a)))
		return rc;
	a.state = calloc(a.npages ? a.npages : 1, 1);
	a.subbuf = malloc(a.env->e_psize);
	a.spans = malloc(a.env->e_psize / 2 * sizeof *a.spans);
	if (!a.state || !a.subbuf || !a.spans) {
		free(a.state);
		free(a.subbuf);
		free(a.spans);
		return ENOMEM;
	}
	a.dcmp = dup_order(0);
	a.state[0] = a.state[1] = 1;
	rc = audit_tree_as(&a, &txn->t_dbs[DL_FREE_DBI], dlmdb_cmp_for(MDB_INTEGERKEY), "free DB", TREE_FREE);
	if (!rc) {
		unsigned mf = txn->t_dbs[DL_MAIN_DBI].d_flags;
		a.dcmp = a.env->e_dbx[DL_MAIN_DBI].x_dcmp ? a.env->e_dbx[DL_MAIN_DBI].x_dcmp : dup_order(mf);
	}
	if (!rc)
		rc = audit_tree_as(&a, &txn->t_dbs[DL_MAIN_DBI], a.env->e_dbx[DL_MAIN_DBI].x_cmp ?
			a.env->e_dbx[DL_MAIN_DBI].x_cmp : dlmdb_cmp_for(txn->t_dbs[DL_MAIN_DBI].d_flags),
			"main DB", TREE_MAIN);
	if (!rc)
		rc = audit_named(&a);
	if (!rc)
		rc = audit_version(&a);
	if (!rc)
		rc = audit_free(&a);
	if (!rc) {
		uint64_t leaked = 0;
		pgno_t first = 0;
		for (pgno_t pg = DL_NMETAS; pg < a.npages; pg++)
			if (!a.state[pg] && !leaked++)
				first = pg;
		if (leaked) {
			a.dbname = "pages";
			rc = fail(&a, "%" PRIu64 " page(s) neither in use nor free (leaked), first %" PRIu64,
				leaked, first);
		}
	}
	free(a.state);
	free(a.subbuf);
	free(a.spans);
	return rc ? MDB_CORRUPTED : 0;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_txn_check(MDB_txn *txn, char *msg, size_t msglen)
{
	DL_GUARDED(txn, 0, dl_u_txn_check(txn, msg, msglen));
}
