/*
 * page.c - editing the slot array and node area of one page.
 *
 * A page is a header, an array of uint16 slots growing upward (p_lower), and
 * nodes packed downward from the end of the page (p_upper).  Slot i holds the
 * byte offset of node i; slots are kept in key order, nodes are in no order.
 * Every node we place starts at an even offset and occupies an even number
 * of bytes.  Pages stock LMDB wrote may hold nodes at odd offsets, some
 * packed without a pad byte (FORMAT.md, "What a file guarantees"); a write
 * txn lays such a page out again when it copies it (dlmdb_pg_relayout), so
 * the edits here only ever meet our own layout.
 * Callers check the room (dl_pg_room) before adding.
 */
#include "internal.h"

void dlmdb_pg_init(dl_page *p, pgno_t pg, unsigned flags, unsigned psize)
{
	p->p_pgno = pg;
	p->p_pad = 0;
	p->p_flags = (uint16_t)flags;
	p->p_lower = DL_PAGEHDR;
	p->p_upper = (uint16_t)psize;
}

/* Open a slot at index i for a node of nbytes (even); returns the node. */
dl_node *dlmdb_pg_make_room(dl_page *p, unsigned i, size_t nbytes)
{
	unsigned n = dl_pg_nkeys(p);
	indx_t *s = dl_pg_slots(p);
	DL_ASSERT(dl_pg_room(p) >= nbytes + sizeof(indx_t));
	if (i < n)
		memmove(s + i + 1, s + i, (n - i) * sizeof(indx_t));
	p->p_upper = (uint16_t)(p->p_upper - nbytes);
	s[i] = p->p_upper;
	p->p_lower = (uint16_t)(p->p_lower + sizeof(indx_t));
	return (dl_node *)((char *)p + p->p_upper);
}

dl_node *dlmdb_pg_add_leaf(dl_page *p, unsigned i, const MDB_val *key, size_t dsize,
	unsigned nflags, const void *data, size_t dcopy)
{
	size_t ks = key ? key->mv_size : 0;
	size_t inl = (nflags & DL_N_BIG) ? sizeof(pgno_t) : dsize;
	dl_node *nd = dlmdb_pg_make_room(p, i, dl_even(DL_NODEHDR + ks + inl));
	dl_node_set_dsize(nd, dsize);
	nd->n_flags = (uint16_t)nflags;
	nd->n_ksize = (uint16_t)ks;
	if (ks)
		memcpy(dl_node_key(nd), key->mv_data, ks);
	if (data && dcopy)
		memcpy(dl_node_data(nd), data, dcopy);
	return nd;
}

/* On a counted page the node's counts are copied from counts (the count
 * bytes of another node of such a page), or zeroed when counts is NULL. */
void dlmdb_pg_add_branch(dl_page *p, unsigned i, const MDB_val *key, pgno_t child,
	const void *counts)
{
	size_t ks = key ? key->mv_size : 0, cb = dl_pg_cntbytes(p);
	dl_node *nd = dlmdb_pg_make_room(p, i, dl_even(DL_NODEHDR + ks + cb));
	dl_node_set_child(nd, child);
	nd->n_ksize = (uint16_t)ks;
	if (ks)
		memcpy(dl_node_key(nd), key->mv_data, ks);
	if (cb) {
		if (counts)
			memcpy((char *)dl_node_key(nd) + ks, counts, cb);
		else
			memset((char *)dl_node_key(nd) + ks, 0, cb);
	}
}

void dlmdb_pg_add_raw(dl_page *p, unsigned i, const void *node, size_t len)
{
	dl_node *nd = dlmdb_pg_make_room(p, i, dl_even(len));
	memcpy(nd, node, len);
}

/* LEAF2 pages: fixed-size keys packed from offset 16, no slots; lower and
 * upper move as if each key had a 2-byte slot and pad-2 bytes of node. */
void dlmdb_pg_add_leaf2(dl_page *p, unsigned i, const void *key)
{
	unsigned n = dl_pg_nkeys(p), ks = p->p_pad;
	char *base = (char *)p + DL_PAGEHDR;
	DL_ASSERT(dl_pg_room(p) >= ks);
	if (i < n)
		memmove(base + (size_t)(i + 1) * ks, base + (size_t)i * ks, (size_t)(n - i) * ks);
	memcpy(base + (size_t)i * ks, key, ks);
	p->p_lower = (uint16_t)(p->p_lower + sizeof(indx_t));
	p->p_upper = (uint16_t)(p->p_upper - (ks - sizeof(indx_t)));
}

/*
 * Slots s[0..n) that point below off move up by sz (the nodes they name
 * slide up over a removed node).  Whether a slot is below the victim is a
 * coin toss on a page filled in random order, so a branch per slot is
 * mispredicted about every other time: the compare becomes a mask instead,
 * eight slots at a time with GCC's generic vectors (SSE2 / NEON, or plain
 * words elsewhere), the rest one by one without a branch.
 */
typedef uint16_t dl_slot8 __attribute__((vector_size(16)));

static void slots_slide(indx_t *s, unsigned n, indx_t off, uint16_t sz)
{
	unsigned j = 0;
	if (n >= 8) {
		const dl_slot8 voff = {off, off, off, off, off, off, off, off};
		const dl_slot8 vsz = {sz, sz, sz, sz, sz, sz, sz, sz};
		for (; j + 8 <= n; j += 8) {
			dl_slot8 v;
			memcpy(&v, s + j, sizeof v);
			v += (dl_slot8)(v < voff) & vsz;
			memcpy(s + j, &v, sizeof v);
		}
	}
	for (; j < n; j++)
		s[j] = (indx_t)(s[j] + (uint16_t)(-(s[j] < off) & sz));
}

void dlmdb_pg_del_node(dl_page *p, unsigned i)
{
	unsigned n = dl_pg_nkeys(p);
	if (dl_pg_is_leaf2(p)) {
		unsigned ks = p->p_pad;
		char *base = (char *)p + DL_PAGEHDR;
		memmove(base + (size_t)i * ks, base + (size_t)(i + 1) * ks, (size_t)(n - i - 1) * ks);
		p->p_lower = (uint16_t)(p->p_lower - sizeof(indx_t));
		p->p_upper = (uint16_t)(p->p_upper + (ks - sizeof(indx_t)));
		return;
	}
	indx_t *s = dl_pg_slots(p);
	indx_t off = s[i];
	dl_node *nd = (dl_node *)((char *)p + off);
	size_t sz = dl_node_bytes(p, nd) - sizeof(indx_t);
	/* nodes stored below the victim slide up over it */
	slots_slide(s, n, off, (uint16_t)sz);
	memmove((char *)p + p->p_upper + sz, (char *)p + p->p_upper, off - p->p_upper);
	memmove(s + i, s + i + 1, (n - i - 1) * sizeof(indx_t));
	p->p_lower = (uint16_t)(p->p_lower - sizeof(indx_t));
	p->p_upper = (uint16_t)(p->p_upper + sz);
}

/* Exact bytes of node nd of page p (header, key, inline data or counts). */
static size_t node_extent(const dl_page *p, const dl_node *nd)
{
	size_t sz = DL_NODEHDR + nd->n_ksize;
	if (dl_pg_is_leaf(p))
		return sz + ((nd->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(nd));
	return sz + dl_pg_cntbytes(p);
}

/* 1 if leaf node nd holds an inline LEAF2 sub-page of an odd size (as our
 * releases before the even rule wrote them; FORMAT.md) */
static int odd_leaf2_subpage(const dl_node *nd)
{
	size_t ds = dl_node_dsize(nd);
	uint16_t spflags;
	if (dl_node_kind(nd) != DL_N_DUP || !(ds & 1) || ds < DL_PAGEHDR)
		return 0;
	memcpy(&spflags, (const char *)dl_node_data(nd) + offsetof(dl_page, p_flags), sizeof spflags);
	return (spflags & DL_P_LEAF2) != 0;
}

int dlmdb_pg_relayout(dl_page *np, const dl_page *p, unsigned psize)
{
	unsigned n = dl_pg_nkeys(p), odd = p->p_upper;
	int leaf = dl_pg_is_leaf(p);
	if (dl_pg_is_leaf2(p))
		return 0;
	for (unsigned i = 0; i < n; i++) {
		odd |= dl_pg_slot(p, i);
		if (leaf && odd_leaf2_subpage(dl_pg_node(p, i)))
			odd |= 1;
	}
	if (!(odd & 1))
		return 0;
	/* p passed dlmdb_page_validate: every node lies inside it.  The
	 * copy gets the nodes packed from the page end, each at an even
	 * offset with an even length, in slot order; an odd-sized LEAF2
	 * sub-page gets a byte of slack (so stock LMDB never shrinks it by an
	 * odd amount) if the page has room for all of those bytes. */
	size_t need = 0, needpad = 0;
	for (unsigned i = 0; i < n; i++) {
		const dl_node *nd = dl_pg_node(p, i);
		size_t len = node_extent(p, nd);
		need += dl_even(len);
		needpad += dl_even(len + (leaf && odd_leaf2_subpage(nd)));
	}
	if (need > psize - p->p_lower)
		return MDB_CORRUPTED;
	int pad = needpad <= psize - p->p_lower;
	indx_t *s = dl_pg_slots(np);
	unsigned upper = psize;
	for (unsigned i = 0; i < n; i++) {
		const dl_node *nd = dl_pg_node(p, i);
		size_t len = node_extent(p, nd);
		int grow = pad && leaf && odd_leaf2_subpage(nd);
		upper -= (unsigned)dl_even(len + grow);
		dl_node *nn = (dl_node *)((char *)np + upper);
		memcpy(nn, nd, len);
		if (grow) {
			/* the slack byte goes at the sub-page's end: its upper
			 * moves up by one, its values stay where they are */
			uint16_t spu;
			char *sp = dl_node_data(nn);
			memcpy(&spu, sp + offsetof(dl_page, p_upper), sizeof spu);
			spu++;
			memcpy(sp + offsetof(dl_page, p_upper), &spu, sizeof spu);
			dl_node_set_dsize(nn, dl_node_dsize(nn) + 1);
			((char *)np)[upper + len] = 0;
			len++;
		}
		if (len & 1)
			((char *)np)[upper + len] = 0;
		s[i] = (indx_t)upper;
	}
	np->p_upper = (uint16_t)upper;
	return 0;
}

unsigned dlmdb_pg_used(const dl_page *p)
{
	/* node bytes plus slots; the caller knows the page size */
	return (unsigned)(p->p_lower - DL_PAGEHDR) + 0u;
}

/*
 * Trusted pages.  The node walk below guards against damaged files: a page
 * this env handle wrote itself holds an image it built, so as long as no
 * other writer (another process or handle) has committed since, the map
 * still shows that image and the walk would only re-prove our own work.
 * The same holds for a committed page the walk has passed once: its image
 * stays until the page is freed and written again.
 * A direct-mapped table remembers the numbers of pages we wrote or walked, each entry
 * tagged with the table's epoch; every commit by someone else (detected at
 * write txn start by comparing the newest meta with the one we wrote last)
 * and any failed page write start a new epoch, which forgets them all.
 * The cheap header check runs on every page anyway (dlmdb_page_validate
 * in internal.h), so even a page that changed under us cannot send the
 * copy in dlmdb_page_touch outside it.
 */

void dlmdb_trust_reset(MDB_env *env)
{
	memset(&env->e_trust_meta, 0, sizeof env->e_trust_meta);
	if (!env->e_trusted)
		return;
	if (++env->e_trust_epoch >> (64 - DL_TRUST_PGBITS)) {
		/* epochs used up: clear the table for real and start over */
		memset(env->e_trusted, 0, DL_TRUST_SLOTS * sizeof(pgno_t));
		env->e_trust_epoch = 1;
	}
}

int dlmdb_trust_begin(MDB_env *env, const dl_meta *cur)
{
	if (!env->e_trusted)
		return 0;
	if (memcmp(cur, &env->e_trust_meta, sizeof *cur)) {
		dlmdb_trust_reset(env);
		return 0;
	}
	/* equal to the meta our last commit wrote (dlmdb_meta_write), unless
	 * both are the zeros a reset leaves: then the magic is 0 */
	return env->e_trust_meta.m_magic == DL_MAGIC;
}

void dlmdb_trust_note(MDB_env *env, dl_page *const *list, size_t n)
{
	if (DL_UNLIKELY(!env->e_trusted)) {
		/* zero entries carry epoch 0, which is never current */
		env->e_trusted = calloc(DL_TRUST_SLOTS, sizeof(pgno_t));
		if (!env->e_trusted)
			return;
		env->e_trust_epoch = 1;
	}
	uint64_t tag = env->e_trust_epoch << DL_TRUST_PGBITS;
	for (size_t i = 0; i < n; i++) {
		pgno_t pg = list[i]->p_pgno;
		if (list[i]->p_flags & DL_P_OVERFLOW) {
			/* an overflow run is never a tree page: forget any trust
			 * its pages had from an earlier life as tree pages, so a
			 * damaged branch pointing at one still gets the walk */
			for (pgno_t k = 0; k < dl_pg_ovcount(list[i]); k++)
				dl_trust_forget(env, pg + k);
		} else if (pg <= DL_TRUST_PGMASK) {
			env->e_trusted[pg & (DL_TRUST_SLOTS - 1)] = pg | tag;
		}
	}
}

/*
 * Structural check of a committed page before we modify a copy of it:
 * a damaged file then yields MDB_CORRUPTED instead of a wild write.
 * (dlmdb_page_validate in internal.h has already let trusted pages pass.)
 */
int dlmdb_page_validate_walk(MDB_env *env, const dl_page *p)
{
	unsigned psize = env->e_psize;
	if (!(p->p_flags & (DL_P_LEAF | DL_P_BRANCH)) || (p->p_flags & (DL_P_OVERFLOW | DL_P_META)))
		return MDB_CORRUPTED;
	if (p->p_lower < DL_PAGEHDR || p->p_lower > p->p_upper || p->p_upper > psize || (p->p_lower & 1))
		return MDB_CORRUPTED;
	unsigned n = dl_pg_nkeys(p);
	if ((p->p_flags & DL_P_PREFIX) && (p->p_flags & (DL_P_LEAF2 | DL_P_BRANCH)))
		return MDB_CORRUPTED;
	if (dl_pg_is_leaf2(p)) {
		if (!p->p_pad || p->p_pad > DL_MAXKEY || DL_PAGEHDR + (size_t)n * p->p_pad > psize)
			return MDB_CORRUPTED;
		return 0;
	}
	pgno_t tag = 0, *slot = dl_trust_slot(env, p, &tag);
	if (slot && *slot == tag)
		return 0;
	/* every node: an offset inside the node area, its header, key and
	 * (leaf) inline data or (branch) counts inside the page; the nodes'
	 * exact sizes together no larger than the node area.  Offsets and
	 * sizes of any parity: stock LMDB leaves odd ones (FORMAT.md, "What a
	 * file guarantees").  One tight loop: this runs on every page a write
	 * copies. */
	const indx_t *slots = (const indx_t *)((const char *)p + DL_PAGEHDR);
	unsigned upper = p->p_upper, odd = upper;
	size_t total = 0;
	/* a PREFIX page: a leaf, its anchor record inside the node area and
	 * counted with the nodes, and never an odd layout (only we write
	 * such pages, always even) */
	int pfx = dl_pg_prefix(p);
	if (pfx) {
		if (!dl_pg_is_leaf(p) || !dl_pg_anchor_ok(p, psize) || (p->p_pad & 1))
			return MDB_CORRUPTED;
		total = dl_pg_anchor_bytes(p);
	}
	if (dl_pg_is_leaf(p)) {
		unsigned lim = dl_pg_node_lim(p, psize);	/* (below a PREFIX page's anchor) */
		for (unsigned i = 0; i < n; i++) {
			unsigned off = slots[i];
			if (off < upper || off + DL_NODEHDR > lim)
				return MDB_CORRUPTED;
			const dl_node *nd = (const dl_node *)((const char *)p + off);
			if (nd->n_ksize > DL_MAXKEY)	/* keys get copied into buffers of that size */
				return MDB_CORRUPTED;
			size_t sz = DL_NODEHDR + nd->n_ksize +
				((nd->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(nd));
			if (off + sz > lim)
				return MDB_CORRUPTED;
			total += sz;
			/* an odd offset, or an inline sub-page of an odd size */
			odd |= off | (dl_node_kind(nd) == DL_N_DUP ? (unsigned)dl_node_dsize(nd) : 0u);
			if (pfx && !dl_pfx_node_ok(p, nd, psize))
				return MDB_CORRUPTED;
		}
	} else {
		unsigned cb = DL_NODEHDR + dl_pg_cntbytes(p);
		for (unsigned i = 0; i < n; i++) {
			unsigned off = slots[i];
			if (off < upper || off + DL_NODEHDR > psize)
				return MDB_CORRUPTED;
			const dl_node *nd = (const dl_node *)((const char *)p + off);
			if (nd->n_ksize > DL_MAXKEY)
				return MDB_CORRUPTED;
			size_t sz = cb + nd->n_ksize;
			if (off + sz > psize)
				return MDB_CORRUPTED;
			total += sz;
			odd |= off;
		}
	}
	if (total > psize - p->p_upper || (pfx && (odd & 1)))
		return MDB_CORRUPTED;
	/* a page with an odd offset (or an odd-sized sub-page) is not
	 * trusted: dlmdb_page_touch then finds it untrusted and lays its copy
	 * out again (dlmdb_pg_relayout) */
	if (odd & 1)
		return 0;
	/* the walk passed: remember it like a page we wrote.  A committed page
	 * keeps its image until it is freed and written again, and every way
	 * that can happen is covered by the rules above (our own write notes
	 * the new image, anyone else's commit or a failed write starts a new
	 * epoch).  Only write txns validate, so one thread at a time is here. */
	if (slot)
		*slot = tag;
	return 0;
}
