/*
 * batch.c - mdb_cursor_get_batch: many cursor steps in one call (a
 * DLMDB-go extension for bindings whose per-call cost dominates a scan,
 * such as cgo).
 *
 * The results are two MDB_val arrays kept with the cursor (MDB_cursor.
 * c_batch), reused by its next batch.  Keys and values the map holds whole
 * point into it; those decoded from prefix-compressed pages (which a plain
 * cursor step leaves in the cursor's own one-key buffer) are decoded or
 * copied into byte storage kept beside the arrays.  When the storage grows
 * it moves, and the items already in the arrays that point into it move
 * along (bytes_grow); it keeps its size for the cursor's next batches, so
 * that happens in the first few only.
 *
 * After the first item a batch steps through the rest of the cursor's
 * current leaf (or its sub-cursor's, over a DUPSORT key's duplicates) in a
 * tight loop (leaf_run, dup_run) that leaves both cursors exactly as the
 * same MDB_NEXT (MDB_PREV) calls would; the steps between leaves, and
 * whatever such a loop does not take, go through mdb_cursor_get.
 */
#include "internal.h"

struct dl_batch {
	MDB_val *b_keys, *b_vals;
	size_t b_cap;
	unsigned char *b_bytes;
	size_t b_bcap, b_bused;
};

void dlmdb_batch_free(MDB_cursor *mc)
{
	struct dl_batch *b = mc->c_batch;
	if (!b)
		return;
	free(b->b_keys);
	free(b->b_vals);
	free(b->b_bytes);
	free(b);
	mc->c_batch = NULL;
}

static int batch_reserve(struct dl_batch *b, size_t n)
{
	if (n <= b->b_cap)
		return 0;
	MDB_val *k = realloc(b->b_keys, n * sizeof *k);
	if (!k)
		return ENOMEM;
	b->b_keys = k;
	MDB_val *v = realloc(b->b_vals, n * sizeof *v);
	if (!v)
		return ENOMEM;
	b->b_vals = v;
	b->b_cap = n;
	return 0;
}

/* Does v lie in one of the cursor's one-item decode buffers? */
static int in_cursor_buf(const MDB_cursor *mc, const MDB_val *v)
{
	const unsigned char *p = v->mv_data;
	if (p >= mc->c_kbuf && p < mc->c_kbuf + sizeof mc->c_kbuf)
		return 1;
	if (mc->c_sub) {
		const MDB_cursor *xc = &mc->c_sub->x_c;
		if (p >= xc->c_kbuf && p < xc->c_kbuf + sizeof xc->c_kbuf)
			return 1;
	}
	return 0;
}

/* The slow path of bytes_room: a bigger store, into which the first n
 * items of the arrays that point into the old one follow (values, and keys
 * when keys is set). */
__attribute__((noinline)) static int bytes_grow(struct dl_batch *b, size_t need, size_t n, int keys)
{
	size_t cap = b->b_bcap ? b->b_bcap : 8192;
	while (cap < b->b_bused + need)
		cap *= 2;
	unsigned char *p = malloc(cap);
	if (!p)
		return ENOMEM;
	uintptr_t lo = (uintptr_t)b->b_bytes;
	if (b->b_bused) {
		memcpy(p, b->b_bytes, b->b_bused);
		for (size_t i = 0; i < n; i++) {
			for (int j = keys ? 0 : 1; j < 2; j++) {
				MDB_val *v = j ? &b->b_vals[i] : &b->b_keys[i];
				uintptr_t at = (uintptr_t)v->mv_data - lo;
				if (v->mv_size && at < b->b_bused)
					v->mv_data = p + at;
			}
		}
	}
	free(b->b_bytes);
	b->b_bytes = p;
	b->b_bcap = cap;
	return 0;
}

/* Room for need more bytes in the byte storage past b_bused (see the file
 * comment; n, keys: as bytes_grow): 0, or ENOMEM. */
static inline int bytes_room(struct dl_batch *b, size_t need, size_t n, int keys)
{
	if (DL_LIKELY(b->b_bused + need <= b->b_bcap))
		return 0;
	return bytes_grow(b, need, n, keys);
}

/* Must item it be copied: does the cursor's next step overwrite it, or is
 * it the caller's own memory (callers)? */
static inline int needs_copy(const MDB_cursor *mc, const MDB_val *it, const void *callers)
{
	return it->mv_size && (in_cursor_buf(mc, it) || (callers && it->mv_data == callers));
}

/* Copy item it into the byte storage (room made). */
static inline void stash(struct dl_batch *b, MDB_val *it)
{
	unsigned char *d = b->b_bytes + b->b_bused;
	memcpy(d, it->mv_data, it->mv_size);
	it->mv_data = d;
	b->b_bused += it->mv_size;
}

/* Is item i past the end bound?  (forward: above it; backward: below) */
static int past_end(MDB_cursor *mc, const MDB_val *k, const MDB_val *end, int back, int incl)
{
	int c = mc->c_dbx->x_cmp(k, end);
	if (back)
		c = -c;
	return c > 0 || (c == 0 && !incl);
}

/* Room in the arrays for want more items after the n there are (never
 * beyond max): 0 or ENOMEM; *lim gets how far they may be filled. */
static int batch_room(struct dl_batch *b, size_t n, size_t want, size_t max, size_t *lim)
{
	if (b->b_cap < max && b->b_cap < n + want) {
		size_t c = b->b_cap * 2 > n + want ? b->b_cap * 2 : n + want;
		if (batch_reserve(b, c < max ? c : max))
			return ENOMEM;
	}
	*lim = b->b_cap < max ? b->b_cap : max;
	return 0;
}

/* The copies of decoded keys write whole 8-byte words, up to this many
 * bytes past a key's end (room is made for them; copy_words). */
#define DL_BATCH_SLACK 8u

/* n bytes (at least one word's worth read and written, whatever n) */
static inline void copy_words(unsigned char *d, const unsigned char *s, size_t n)
{
	uint64_t w;
	__builtin_memcpy(&w, s, 8);
	__builtin_memcpy(d, &w, 8);
	/* (keys' parts are mostly up to two words: no loop for those) */
	if (n > 8) {
		__builtin_memcpy(&w, s + 8, 8);
		__builtin_memcpy(d + 8, &w, 8);
		for (size_t i = 16; i < n; i += 8) {
			__builtin_memcpy(&w, s + i, 8);
			__builtin_memcpy(d + i, &w, 8);
		}
	}
}

/* What the steps over a PREFIX page (or sub-page) of bound bytes read of it
 * once: whether its anchor record is sound, its length, and its bytes in a
 * buffer that may be read past them by a word (copy_words). */
typedef struct {
	int a_ok;
	unsigned a_len;
	unsigned char a_bytes[DL_MAXKEY + 8];
} pfx_anchor;

static inline void anchor_read(pfx_anchor *a, const dl_page *p, unsigned bound)
{
	a->a_ok = dl_pg_anchor_ok(p, bound);
	a->a_len = a->a_ok ? dl_pg_anchor_len(p) : 0;
	if (a->a_len)
		memcpy(a->a_bytes, dl_pg_anchor(p), a->a_len);
	/* (what a word read past them sees; those bytes are overwritten) */
	memset(a->a_bytes + a->a_len, 0, 8);
}

/* dl_pfx_node_ok for node nd of a page whose anchor a describes, kind bits
 * allowed only where kinds says */
static inline int pfx_node_ok(const pfx_anchor *a, const dl_node *nd, unsigned kinds)
{
	unsigned s = dl_node_shared(nd), kl = s + nd->n_ksize;
	return !(nd->n_flags & ~(kinds | (0x1ffu << DL_N_SHARED_SHIFT))) && kl && kl <= DL_MAXKEY &&
		(!s || (a->a_ok && s <= a->a_len));
}

/* Key of node nd (at offset off of a PREFIX page of bound bytes, checked by
 * pfx_node_ok) as a batch item: in place when it shares no anchor bytes,
 * else decoded into the byte storage at b_bused, which the caller moves
 * past it once the item is kept (*dec set); n as for bytes_room. */
static inline __attribute__((always_inline)) int pfx_key(struct dl_batch *b, size_t n,
	const pfx_anchor *a, const dl_node *nd, unsigned off, unsigned bound, MDB_val *k, int *dec)
{
	unsigned s = dl_node_shared(nd), ks = nd->n_ksize;
	const unsigned char *sfx = dl_node_key(nd);
	k->mv_size = s + ks;
	if (!s) {
		k->mv_data = (void *)sfx;
		*dec = 0;
		return 0;
	}
	if (bytes_room(b, s + ks + DL_BATCH_SLACK, n, 1))
		return ENOMEM;
	unsigned char *d = b->b_bytes + b->b_bused;
	copy_words(d, a->a_bytes, s);
	/* the suffix by words when they stay inside the page */
	if (off + DL_NODEHDR + ks + 8u <= bound)
		copy_words(d + s, sfx, ks);
	else
		dl_copy_short(d + s, sfx, ks);
	k->mv_data = d;
	*dec = 1;
	return 0;
}

/*
 * The loops of leaf_run over steps nodes of the cursor's leaf from index
 * *ip, for a plain page and for a PREFIX page (back: a constant, so that
 * each direction gets its own loop).  They stop early before a node they do
 * not take, and with MDB_NOTFOUND on the first key past end (*ip on it).
 */
static inline __attribute__((always_inline)) int plain_steps(MDB_cursor *mc, struct dl_batch *b,
	size_t *np, unsigned *ip, size_t steps, const MDB_val *end, const int back, int incl)
{
	const dl_page *p = mc->c_pg[mc->c_top];
	unsigned bound = mc->c_bound, upper = p->p_upper, i = *ip;
	MDB_val *bk = b->b_keys + *np, *bv = b->b_vals + *np, *bk0 = bk;
	int rc = 0;
	for (; steps; steps--) {
		unsigned j = back ? i - 1 : i + 1;
		unsigned off = dl_pg_slot(p, j);
		if (off < upper || off + DL_NODEHDR > bound)
			break;
		const dl_node *nd = (const dl_node *)((const char *)p + off);
		size_t ds = dl_node_dsize(nd);
		if ((nd->n_flags & DL_N_KIND) || nd->n_ksize > DL_MAXKEY ||
		    off + DL_NODEHDR + nd->n_ksize + ds > bound)
			break;
		bk->mv_size = nd->n_ksize;
		bk->mv_data = dl_node_key(nd);
		i = j;
		if (end && past_end(mc, bk, end, back, incl)) {
			rc = MDB_NOTFOUND;
			break;
		}
		bv->mv_size = ds;
		bv->mv_data = dl_node_data(nd);
		bk++;
		bv++;
	}
	*np += (size_t)(bk - bk0);
	*ip = i;
	return rc;
}

static inline __attribute__((always_inline)) int pfx_steps(MDB_cursor *mc, struct dl_batch *b,
	size_t *np, unsigned *ip, size_t steps, const MDB_val *end, const int back, int incl)
{
	const dl_page *p = mc->c_pg[mc->c_top];
	unsigned bound = dl_pg_node_lim(p, mc->c_bound), upper = p->p_upper, i = *ip;
	pfx_anchor a;
	anchor_read(&a, p, mc->c_bound);
	size_t n = *np;
	int rc = 0;
	for (; steps; steps--) {
		unsigned j = back ? i - 1 : i + 1;
		unsigned off = dl_pg_slot(p, j);
		if (off < upper || off + DL_NODEHDR > bound)
			break;
		const dl_node *nd = (const dl_node *)((const char *)p + off);
		size_t ds = dl_node_dsize(nd);
		/* kind bits (a big value, duplicates): the general path */
		if (nd->n_ksize > DL_MAXKEY || off + DL_NODEHDR + nd->n_ksize + ds > bound ||
		    !pfx_node_ok(&a, nd, 0))
			break;
		MDB_val *bk = &b->b_keys[n];
		int dec;
		if ((rc = pfx_key(b, n, &a, nd, off, mc->c_bound, bk, &dec)))
			break;
		i = j;
		if (end && past_end(mc, bk, end, back, incl)) {
			rc = MDB_NOTFOUND;
			break;
		}
		if (dec)
			b->b_bused += bk->mv_size;
		b->b_vals[n].mv_size = ds;
		b->b_vals[n].mv_data = dl_node_data(nd);
		n++;
	}
	*np = n;
	*ip = i;
	return rc;
}

/*
 * The steps the cursor takes inside its current leaf (of a main tree) in
 * the batch's direction, in a tight loop: each node read with the checks
 * dlmdb_cur_fetch makes, straight into the arrays, the cursor (and a
 * DUPSORT DB's sub-cursor) left as those MDB_NEXT (MDB_PREV) steps leave
 * it.  Keys a PREFIX page shares with its anchor are decoded into the byte
 * storage.  The loop stops before a node it does not take (a big value, a
 * DUPSORT key's duplicates, a damaged node: the general path reads it), at
 * the edge of the leaf and at max.  MDB_NOTFOUND: the end bound stopped
 * the batch (the cursor on the first item past it); ENOMEM; else 0.
 */
static int leaf_run(MDB_cursor *mc, struct dl_batch *b, size_t *np, size_t max,
	const MDB_val *end, int back, int incl)
{
	const dl_page *p = mc->c_pg[mc->c_top];
	unsigned top = mc->c_top, nk = dl_pg_nkeys(p), i = mc->c_ki[top];
	/* a forward step from a deleted-before position reads the item there
	 * (not this loop's step) */
	if (dl_pg_is_leaf2(p) || i >= nk || (!back && (mc->c_flags & DL_C_DEL)))
		return 0;
	size_t left = back ? i : nk - 1 - i, n = *np, lim;
	if (!left)
		return 0;
	int dup = mc->c_sub != NULL;
	/* in a DUPSORT DB a step from a key with duplicates goes through them
	 * first */
	if (dup && (dl_pg_node(p, i)->n_flags & DL_N_DUP))
		return 0;
	int rc = batch_room(b, n, left, max, &lim);
	if (rc)
		return rc;
	unsigned i0 = i;
	size_t steps = lim - n < left ? lim - n : left;
	if (!dl_pg_prefix(p))
		rc = back ? plain_steps(mc, b, &n, &i, steps, end, 1, incl) :
			plain_steps(mc, b, &n, &i, steps, end, 0, incl);
	else
		rc = back ? pfx_steps(mc, b, &n, &i, steps, end, 1, incl) :
			pfx_steps(mc, b, &n, &i, steps, end, 0, incl);
	if (i != i0) {
		/* what the first step changes besides the index: NEXT ends a
		 * pending EOF mark (whose test passes inside the leaf), PREV
		 * both marks; in a DUPSORT DB the sub-cursor is unaimed at a
		 * single value */
		mc->c_ki[top] = (indx_t)i;
		mc->c_flags &= ~(back ? DL_C_EOF | DL_C_DEL : DL_C_EOF);
		if (dup)
			mc->c_sub->x_c.c_flags = 0;
	}
	*np = n;
	return rc;
}

/* The loops of dup_run over steps values of the sub-cursor's leaf p from
 * index *ip, the kind of page (0 plain, 1 PREFIX, 2 LEAF2) and back
 * constants; delta translates a value in place from the sub-cursor's copy
 * of an inline sub-page into the map (dl_xcur_out).  Items from *np on. */
static inline __attribute__((always_inline)) int dup_steps(MDB_cursor *xc, struct dl_batch *b,
	size_t *np, unsigned *ip, size_t steps, uintptr_t delta, const int kind, const int back)
{
	const dl_page *p = xc->c_pg[xc->c_top];
	unsigned i = *ip;
	size_t n = *np;
	int rc = 0;
	if (kind == 2) {
		/* (dlmdb_dup_setup and dlmdb_cur_step_leaf checked the page) */
		MDB_val key = b->b_keys[n - 1];
		size_t pad = p->p_pad;
		for (; steps; steps--) {
			i = back ? i - 1 : i + 1;
			b->b_vals[n].mv_size = pad;
			b->b_vals[n].mv_data = (void *)((uintptr_t)dl_pg_leaf2_key(p, i) + delta);
			b->b_keys[n++] = key;
		}
		*np = n;
		*ip = i;
		return 0;
	}
	unsigned bound = dl_pg_node_lim(p, xc->c_bound), upper = p->p_upper;
	pfx_anchor a;
	if (kind == 1)
		anchor_read(&a, p, xc->c_bound);
	MDB_val key = b->b_keys[n - 1];
	for (; steps; steps--) {
		unsigned j = back ? i - 1 : i + 1;
		unsigned off = dl_pg_slot(p, j);
		if (off < upper || off + DL_NODEHDR > bound)
			break;
		const dl_node *nd = (const dl_node *)((const char *)p + off);
		size_t after = (nd->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(nd);
		if (off + DL_NODEHDR + nd->n_ksize + after > bound || nd->n_ksize > DL_MAXKEY)
			break;
		MDB_val *v = &b->b_vals[n];
		if (kind == 1) {
			int dec;
			if (!pfx_node_ok(&a, nd, DL_N_KIND))
				break;
			if ((rc = pfx_key(b, n, &a, nd, off, xc->c_bound, v, &dec)))
				break;
			if (dec)
				b->b_bused += v->mv_size;
			else
				v->mv_data = (void *)((uintptr_t)v->mv_data + delta);
			/* (read after pfx_key: the store may have moved) */
			key = b->b_keys[n - 1];
		} else {
			v->mv_size = nd->n_ksize;
			v->mv_data = (void *)((uintptr_t)dl_node_key(nd) + delta);
		}
		i = j;
		b->b_keys[n++] = key;
	}
	*np = n;
	*ip = i;
	return rc;
}

/*
 * The same for the duplicates of a DUPSORT key: the sub-cursor's steps
 * inside its current leaf (an inline sub-page or a sub-tree leaf), each
 * value read with the checks of the sub-cursor's own step (dupsort.c), the
 * key the one of the item before, both cursors left as MDB_NEXT (MDB_PREV)
 * steps leave them.  Values of a compressed sub-page or sub-tree leaf
 * that share anchor bytes are decoded into the byte storage.  The key's
 * end test was made on its first item.  ENOMEM, else 0.
 */
static int dup_run(MDB_cursor *mc, struct dl_batch *b, size_t *np, size_t max, int back)
{
	dl_xcur *x = mc->c_sub;
	MDB_cursor *xc = &x->x_c;
	/* the states in which such steps stay inside the sub-cursor's leaf
	 * (the fast path of dlmdb_dup_get; PREV as in dup_get_op) */
	unsigned want = back ? DL_C_INIT : DL_C_INIT | DL_C_DEL | DL_C_EOF;
	if ((mc->c_flags & want) != DL_C_INIT || (xc->c_flags & want) != DL_C_INIT || !mc->c_depth ||
	    !xc->c_depth)
		return 0;
	const dl_page *p = xc->c_pg[xc->c_top];
	unsigned top = xc->c_top, nk = dl_pg_nkeys(p), i = xc->c_ki[top];
	if (i >= nk)
		return 0;
	size_t left = back ? i : nk - 1 - i, n = *np, lim;
	if (!left || !n)
		return 0;
	int rc = batch_room(b, n, left, max, &lim);
	if (rc)
		return rc;
	size_t steps = lim - n < left ? lim - n : left, n0 = n;
	/* values in place lie in the sub-page copy (checked bounds): all of
	 * them translate alike */
	uintptr_t delta = x->x_orig ? (uintptr_t)x->x_orig - (uintptr_t)x->x_buf : 0;
	int kind = dl_pg_is_leaf2(p) ? 2 : dl_pg_prefix(p) ? 1 : 0;
	switch (kind + 3 * back) {
	case 0: rc = dup_steps(xc, b, &n, &i, steps, delta, 0, 0); break;
	case 1: rc = dup_steps(xc, b, &n, &i, steps, delta, 1, 0); break;
	case 2: rc = dup_steps(xc, b, &n, &i, steps, delta, 2, 0); break;
	case 3: rc = dup_steps(xc, b, &n, &i, steps, delta, 0, 1); break;
	case 4: rc = dup_steps(xc, b, &n, &i, steps, delta, 1, 1); break;
	default: rc = dup_steps(xc, b, &n, &i, steps, delta, 2, 1); break;
	}
	if (n != n0) {
		/* a step backward clears both marks on both cursors
		 * (dlmdb_cur_prev, dup_get_op, the end of mdb_cursor_get) */
		if (back) {
			mc->c_flags &= ~(DL_C_DEL | DL_C_EOF);
			xc->c_flags &= ~(DL_C_DEL | DL_C_EOF);
		}
		xc->c_ki[top] = (indx_t)i;
	}
	*np = n;
	return rc;
}

/*
 * In a DUPSORT DB, the step to the next (previous) key inside the cursor's
 * leaf when the current key's duplicates are done: what MDB_NEXT (MDB_PREV)
 * does there (dup_get_op: the sub-cursor's step runs off its set, the key
 * cursor moves, the new key's first (last) value), without the per-call
 * work of mdb_cursor_get.  1 with *rc set when it applied, else 0.
 */
static int key_step(MDB_cursor *mc, MDB_val *k, MDB_val *v, int back, int *rc)
{
	MDB_cursor *xc = &mc->c_sub->x_c;
	const dl_page *p = mc->c_pg[mc->c_top];
	unsigned top = mc->c_top, i = mc->c_ki[top], nk = dl_pg_nkeys(p);
	if (!(mc->c_flags & DL_C_INIT) || !mc->c_depth || i >= nk || (back ? i == 0 : i + 1 >= nk))
		return 0;
	/* forward, a pending mark on the key cursor takes the general path */
	if (!back && (mc->c_flags & (DL_C_DEL | DL_C_EOF)))
		return 0;
	if (dl_pg_node(p, i)->n_flags & DL_N_DUP) {
		/* the sub-cursor stands on the edge of its set: its step finds
		 * no leaf further on at any level (dlmdb_cur_step_leaf) */
		if (!(xc->c_flags & DL_C_INIT) || !xc->c_depth || (!back && (xc->c_flags & (DL_C_DEL | DL_C_EOF))))
			return 0;
		for (unsigned l = 0; l <= xc->c_top; l++)
			if (back ? xc->c_ki[l] > 0 : xc->c_ki[l] + 1u < dl_pg_nkeys(xc->c_pg[l]))
				return 0;
		/* (NEXT runs off with the EOF mark, PREV clears both marks) */
		if (back)
			xc->c_flags &= ~(DL_C_DEL | DL_C_EOF);
		else
			xc->c_flags |= DL_C_EOF;
	} else {
		xc->c_flags = 0;
	}
	if (back)
		mc->c_flags &= ~(DL_C_DEL | DL_C_EOF);
	mc->c_ki[top] = (indx_t)(back ? i - 1 : i + 1);
	if (!(*rc = dlmdb_cur_fetch(mc, k, NULL)))
		*rc = dlmdb_dup_edge(mc, v, back);
	return 1;
}

static int batch_get(MDB_cursor *mc, MDB_cursor_op op, MDB_val *key, mdb_size_t max,
	const MDB_val *end, unsigned flags, const MDB_val **keys, const MDB_val **vals,
	mdb_size_t *count)
{
	if (!mc || !mc->c_txn || mc->c_owner || !keys || !vals || !count || max == 0 ||
	    (flags & ~(MDB_BATCH_BACKWARD | MDB_BATCH_END_INCL)))
		return EINVAL;
	*count = 0;
	int back = (flags & MDB_BATCH_BACKWARD) || op == MDB_LAST || op == MDB_PREV;
	switch (op) {
	case MDB_FIRST:
	case MDB_LAST:
	case MDB_NEXT:
	case MDB_PREV:
	case MDB_GET_CURRENT:
		break;
	case MDB_SET_RANGE:
	case MDB_SET_KEY:
		if (!key)
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (!mc->c_batch && !(mc->c_batch = calloc(1, sizeof *mc->c_batch)))
		return ENOMEM;
	struct dl_batch *b = mc->c_batch;
	b->b_bused = 0;
	size_t want = max > 4096 ? 4096 : (size_t)max;	/* grown below as needed */
	int rc = batch_reserve(b, want);
	if (rc)
		return rc;
	MDB_cursor_op step = back ? MDB_PREV : MDB_NEXT;
	MDB_val k, v;
	size_t n = 0;
	if (key && (op == MDB_SET_RANGE || op == MDB_SET_KEY))
		k = *key;
	const void *callers = key ? key->mv_data : NULL;
	int isdup = (mc->c_db->d_flags & MDB_DUPSORT) && mc->c_sub;
	int incl = (flags & MDB_BATCH_END_INCL) != 0;
	for (MDB_cursor_op cur = op; n < max; cur = step) {
		if (n) {
			/* after the first item (the cursor stands on the item before,
			 * nothing pending: the steps need none of mdb_cursor_get's
			 * per-call checks), the rest of the current leaf (of the
			 * sub-cursor, over a key's duplicates) in a tight loop */
			const dl_page *p = mc->c_pg[mc->c_top];
			unsigned i = mc->c_ki[mc->c_top];
			if (isdup && i < dl_pg_nkeys(p) && (dl_pg_node(p, i)->n_flags & DL_N_DUP))
				rc = dup_run(mc, b, &n, max, back);
			else
				rc = leaf_run(mc, b, &n, max, end, back, incl);
			if (rc)
				goto done;
			if (n >= max)
				break;
		}
		/* an item the loop left (a big value, say) inside a plain DB's
		 * leaf: straight to the fetch, as mdb_cursor_get's own fast path;
		 * everything else through mdb_cursor_get */
		unsigned top = mc->c_top;
		if (n && isdup && key_step(mc, &k, &v, back, &rc)) {
			/* (rc set) */
		} else if (n && !isdup && !(mc->c_flags & (back ? 0 : DL_C_DEL)) &&
		    (back ? mc->c_ki[top] > 0 : mc->c_ki[top] + 1u < dl_pg_nkeys(mc->c_pg[top]))) {
			mc->c_ki[top] = (indx_t)(mc->c_ki[top] + (back ? -1 : 1));
			mc->c_flags &= ~(back ? DL_C_EOF | DL_C_DEL : DL_C_EOF);
			rc = dlmdb_cur_fetch(mc, &k, &v);
		} else {
			rc = mdb_cursor_get(mc, &k, &v, cur);
		}
		if (rc)
			break;
		if (end && past_end(mc, &k, end, back, incl)) {
			rc = MDB_NOTFOUND;
			break;
		}
		if (n == b->b_cap && (rc = batch_reserve(b, b->b_cap * 2)))
			break;
		/* the next step decodes over an item in the cursor's buffer, and
		 * the caller's own key (a seek may hand it back) is not ours to
		 * keep pointing at: copy both */
		int kc = needs_copy(mc, &k, callers), vc = needs_copy(mc, &v, NULL);
		if (kc || vc) {
			if ((rc = bytes_room(b, (kc ? k.mv_size : 0) + (vc ? v.mv_size : 0), n, 1)))
				break;
			if (kc)
				stash(b, &k);
			if (vc)
				stash(b, &v);
		}
		b->b_keys[n] = k;
		b->b_vals[n] = v;
		n++;
	}
done:
	if (rc && rc != MDB_NOTFOUND)
		return rc;
	if (n == 0)
		return MDB_NOTFOUND;
	*keys = b->b_keys;
	*vals = b->b_vals;
	*count = n;
	return 0;
}

static int batch_get_many(MDB_cursor *mc, const MDB_val *keys, mdb_size_t n, const MDB_val **vals,
	mdb_size_t *found)
{
	if (!mc || !mc->c_txn || mc->c_owner || (!keys && n) || !vals || !found)
		return EINVAL;
	*found = 0;
	if (!mc->c_batch && !(mc->c_batch = calloc(1, sizeof *mc->c_batch)))
		return ENOMEM;
	struct dl_batch *b = mc->c_batch;
	b->b_bused = 0;
	int rc = batch_reserve(b, n ? (size_t)n : 1);
	if (rc)
		return rc;
	size_t hits = 0;
	for (size_t i = 0; i < n; i++) {
		MDB_val k = keys[i], v;
		rc = mdb_cursor_get(mc, &k, &v, MDB_SET);
		if (rc == MDB_NOTFOUND) {
			b->b_vals[i].mv_size = 0;
			b->b_vals[i].mv_data = NULL;
			continue;
		}
		if (rc)
			return rc;
		if (needs_copy(mc, &v, NULL)) {
			if ((rc = bytes_room(b, v.mv_size, i, 0)))
				return rc;
			stash(b, &v);
		}
		b->b_vals[i] = v;
		hits++;
	}
	*vals = b->b_vals;
	*found = hits;
	return 0;
}

/* Does v lie in the byte storage of b (an item of the cursor's last batch)? */
static int in_store(const struct dl_batch *b, const MDB_val *v)
{
	return b && b->b_bytes && v->mv_size && (uintptr_t)v->mv_data - (uintptr_t)b->b_bytes < b->b_bcap;
}

/* A call whose inputs (an end bound, keys to look up) lie in the storage
 * its results are written to would overwrite them: the storage is set
 * aside for the call (returned, freed after it) and a new one begun. */
static void *set_aside(struct dl_batch *b)
{
	void *old = b->b_bytes;
	b->b_bytes = NULL;
	b->b_bcap = 0;
	b->b_bused = 0;
	return old;
}

static int dl_u_cursor_get_batch(MDB_cursor *mc, MDB_cursor_op op, MDB_val *key, mdb_size_t max,
	const MDB_val *end, unsigned flags, const MDB_val **keys, const MDB_val **vals,
	mdb_size_t *count)
{
	void *old = NULL;
	/* the bound itself may be an item of the last batch (an element of
	 * the arrays this one fills), and its bytes lie in the storage then
	 * if it was decoded; a seek's key is read before anything is written */
	MDB_val e;
	if (end) {
		e = *end;
		end = &e;
		if (mc && in_store(mc->c_batch, end))
			old = set_aside(mc->c_batch);
	}
	int rc = batch_get(mc, op, key, max, end, flags, keys, vals, count);
	free(old);
	return rc;
}

static int dl_u_cursor_get_many(MDB_cursor *mc, const MDB_val *keys, mdb_size_t n, const MDB_val **vals,
	mdb_size_t *found)
{
	void *old = NULL;
	for (size_t i = 0; mc && keys && i < n && !old; i++)
		if (in_store(mc->c_batch, &keys[i]))
			old = set_aside(mc->c_batch);
	int rc = batch_get_many(mc, keys, n, vals, found);
	free(old);
	return rc;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_cursor_get_batch(MDB_cursor *mc, MDB_cursor_op op, MDB_val *key, mdb_size_t max, const MDB_val *end, unsigned flags, const MDB_val **keys, const MDB_val **vals, mdb_size_t *count)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_get_batch(mc, op, key, max, end, flags, keys, vals, count));
}

int mdb_cursor_get_many(MDB_cursor *mc, const MDB_val *keys, mdb_size_t n, const MDB_val **vals, mdb_size_t *found)
{
	DL_GUARDED(mc ? mc->c_txn : NULL, 0, dl_u_cursor_get_many(mc, keys, n, vals, found));
}
