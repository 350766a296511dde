/*
 * prefix.c - prefix-compressed leaves (MDB_PREFIX_COMPRESSION).
 *
 * The encoding is in FORMAT.md ("Prefix-compressed leaves"): a PREFIX page
 * keeps an anchor record (p_pad = its offset; a uint16 length, then the
 * bytes) at the top of its node area, and every leaf node stores how many
 * leading anchor bytes its key shares (in the high bits of n_flags) and
 * the rest of the key.  Three plug-in points use this file:
 *  - an insert encodes its node against the page's existing anchor
 *    (dlmdb_pfx_encode; the first key put into an empty page becomes the
 *    anchor), so no other node changes;
 *  - a node moved into another page (rebalancing) is re-encoded against
 *    that page's anchor (dlmdb_pfx_add_from);
 *  - a page rebuilt from a list of items (split halves, merges, sub-pages)
 *    chooses its anchor (dlmdb_pfx_build): among no anchor, the anchors it
 *    is offered and the middle key, the one that makes the page smallest,
 *    trimmed to the longest prefix a node uses.  "No anchor" costs exactly
 *    what the uncompressed page would, so a built page is never bigger.
 * Readers (search.c, cursor.c, dupsort.c) decode with dl_leaf_key.
 */
#include "internal.h"

static inline unsigned lcp(const unsigned char *a, size_t al, const unsigned char *b, size_t bl)
{
	size_t n = al < bl ? al : bl, i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return (unsigned)(i + ((unsigned)__builtin_ctzll(x ^ y) >> 3));
#else
			return (unsigned)(i + ((unsigned)__builtin_clzll(x ^ y) >> 3));
#endif
		}
	}
	while (i < n && a[i] == b[i])
		i++;
	return (unsigned)i;
}

/* Shared length of key k against the anchor of p (0 without one). */
static inline unsigned shared_with(const dl_page *p, const unsigned char *k, size_t kl)
{
	if (!p->p_pad)
		return 0;
	return lcp(dl_pg_anchor(p), dl_pg_anchor_len(p), k, kl);
}

void dlmdb_pfx_set_anchor(dl_page *p, const void *key, size_t len)
{
	unsigned rec = (unsigned)dl_even(sizeof(uint16_t) + len);
	uint16_t l = (uint16_t)len;
	DL_ASSERT(!p->p_pad && len <= DL_MAXKEY && dl_pg_room(p) >= rec);
	p->p_upper = (uint16_t)(p->p_upper - rec);
	p->p_pad = p->p_upper;
	char *a = (char *)p + p->p_upper;
	memcpy(a, &l, sizeof l);
	memcpy(a + sizeof l, key, len);
	if ((sizeof l + len) & 1)
		a[sizeof l + len] = 0;
}

size_t dlmdb_pfx_encode(const dl_page *p, const void *blob, size_t len, void *out)
{
	const dl_node *full = blob;
	dl_node *nd = out;
	size_t klen = full->n_ksize, dlen = len - DL_NODEHDR - klen;
	const unsigned char *key = (const unsigned char *)blob + DL_NODEHDR;
	unsigned s = shared_with(p, key, klen);
	memcpy(nd, full, DL_NODEHDR);
	nd->n_ksize = (uint16_t)(klen - s);
	nd->n_flags = (uint16_t)((full->n_flags & DL_N_KIND) | (s << DL_N_SHARED_SHIFT));
	memcpy((char *)out + DL_NODEHDR, key + s, klen - s);
	memcpy((char *)out + DL_NODEHDR + klen - s, key + klen, dlen);
	return len - s;
}

/* Stored bytes after the key of leaf node n (inline data, or a pgno). */
static inline size_t stored_data(const dl_node *n)
{
	return (n->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(n);
}

size_t dlmdb_pfx_moved_len(const dl_page *from, const dl_node *n, const dl_page *to)
{
	unsigned char kb[DL_MAXKEY];
	MDB_val k;
	dl_leaf_key(from, n, &k, kb);
	unsigned s = dl_pg_prefix(to) ? shared_with(to, k.mv_data, k.mv_size) : 0;
	return DL_NODEHDR + k.mv_size - s + stored_data(n);
}

void dlmdb_pfx_add_from(dl_page *to, unsigned i, const dl_page *from, const dl_node *n)
{
	unsigned char kb[DL_MAXKEY];
	MDB_val k;
	dl_leaf_key(from, n, &k, kb);
	unsigned s = dl_pg_prefix(to) ? shared_with(to, k.mv_data, k.mv_size) : 0;
	size_t dl = stored_data(n), len = DL_NODEHDR + k.mv_size - s + dl;
	dl_node *nd = dlmdb_pg_make_room(to, i, dl_even(len));
	memcpy(nd, n, DL_NODEHDR);
	nd->n_ksize = (uint16_t)(k.mv_size - s);
	nd->n_flags = (uint16_t)(dl_node_kind(n) | (s << DL_N_SHARED_SHIFT));
	memcpy(dl_node_key(nd), (const char *)k.mv_data + s, k.mv_size - s);
	memcpy(dl_node_data(nd), dl_node_data(n), dl);
	if (len & 1)
		((char *)nd)[len] = 0;
}

/* ---- building a page from items ---------------------------------------------- */

int dlmdb_pfx_gather(MDB_txn *txn, const dl_page *p, unsigned from, unsigned to,
	dl_pfx_item *out)
{
	for (unsigned i = from; i < to; i++) {
		dl_pfx_item *it = &out[i - from];
		if (dl_pg_is_leaf2(p)) {
			it->key = dl_pg_leaf2_key(p, i);
			it->klen = p->p_pad;
			it->kind = 0;
			it->dsize = 0;
			it->data = NULL;
			it->dlen = 0;
			continue;
		}
		const dl_node *n = dl_pg_node(p, i);
		unsigned s = dl_pg_prefix(p) ? dl_node_shared(n) : 0;
		it->klen = s + n->n_ksize;
		it->kind = dl_node_kind(n);
		it->dsize = dl_node_dsize(n);
		it->data = dl_node_data(n);
		it->dlen = stored_data(n);
		if (!s) {
			it->key = dl_node_key(n);
			continue;
		}
		unsigned char *k = dlmdb_pfx_arena(txn, it->klen);
		if (!k)
			return ENOMEM;
		dl_copy_short(k, dl_pg_anchor(p), s);
		dl_copy_short(k + s, dl_node_key(n), n->n_ksize);
		it->key = k;
	}
	return 0;
}

/* Bytes items take (nodes, slots, anchor record) under anchor a[0, alen);
 * *used gets the longest prefix a node shares with it. */
static size_t build_cost(const dl_pfx_item *it, unsigned n, const unsigned char *a, unsigned alen,
	unsigned *used)
{
	size_t sum = 0;
	unsigned u = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned s = alen ? lcp(a, alen, it[i].key, it[i].klen) : 0;
		if (s > u)
			u = s;
		sum += dl_even(DL_NODEHDR + it[i].klen - s + it[i].dlen) + sizeof(indx_t);
	}
	*used = u;
	return sum + (u ? dl_even(sizeof(uint16_t) + u) : 0);
}

size_t dlmdb_pfx_best(const dl_pfx_item *it, unsigned n, const dl_pfx_cand *cands, unsigned ncand,
	dl_pfx_cand *best)
{
	unsigned used;
	size_t cost = build_cost(it, n, NULL, 0, &used);
	best->a = NULL;
	best->len = 0;
	for (unsigned c = 0; c <= ncand; c++) {
		const unsigned char *a;
		unsigned alen;
		if (c < ncand) {
			a = cands[c].a;
			alen = cands[c].len;
		} else if (n) {
			a = it[n / 2].key;	/* the middle key */
			alen = it[n / 2].klen;
		} else {
			break;
		}
		if (!alen)
			continue;
		size_t k = build_cost(it, n, a, alen, &used);
		if (k < cost) {
			cost = k;
			best->a = a;
			best->len = used;
		}
	}
	return cost;
}

void dlmdb_pfx_build(dl_page *p, unsigned end, const dl_pfx_item *it, unsigned n,
	const dl_pfx_cand *anchor)
{
	/* the anchor may point into the page being rebuilt (a candidate taken
	 * from its old image is always copied out first by the callers) */
	p->p_lower = DL_PAGEHDR;
	p->p_upper = (uint16_t)end;
	p->p_pad = 0;
	if (anchor->len)
		dlmdb_pfx_set_anchor(p, anchor->a, anchor->len);
	for (unsigned i = 0; i < n; i++) {
		unsigned s = anchor->len ? lcp(anchor->a, anchor->len, it[i].key, it[i].klen) : 0;
		size_t len = DL_NODEHDR + it[i].klen - s + it[i].dlen;
		dl_node *nd = dlmdb_pg_make_room(p, i, dl_even(len));
		dl_node_set_dsize(nd, it[i].dsize);
		nd->n_ksize = (uint16_t)(it[i].klen - s);
		nd->n_flags = (uint16_t)(it[i].kind | (s << DL_N_SHARED_SHIFT));
		dl_copy_short(dl_node_key(nd), it[i].key + s, it[i].klen - s);
		if (it[i].dlen)
			memcpy(dl_node_data(nd), it[i].data, it[i].dlen);
		if (len & 1)
			((char *)nd)[len] = 0;
	}
}

/* ---- txn-owned work space ------------------------------------------------------ */

static int in_kbuf(const void *p, const MDB_cursor *c)
{
	return (const unsigned char *)p >= c->c_kbuf && (const unsigned char *)p < c->c_kbuf + sizeof c->c_kbuf;
}

int dlmdb_txn_keep(MDB_txn *txn, MDB_val *v, const MDB_cursor *c, int slot)
{
	if (!v || !v->mv_data || !(in_kbuf(v->mv_data, c) || (c->c_sub && in_kbuf(v->mv_data, &c->c_sub->x_c))))
		return 0;
	if (!txn->t_outbuf && !(txn->t_outbuf = malloc(2 * (size_t)DL_MAXKEY)))
		return ENOMEM;
	unsigned char *dst = txn->t_outbuf + (size_t)slot * DL_MAXKEY;
	memcpy(dst, v->mv_data, v->mv_size);
	v->mv_data = dst;
	return 0;
}

unsigned char *dlmdb_pfx_arena(MDB_txn *txn, size_t n)
{
	if (txn->t_pfxused + n > txn->t_pfxcap) {
		/* blocks never move: earlier items keep pointing into theirs */
		size_t cap = n > 65536 ? n : 65536;
		struct dl_pfxblk *b = malloc(sizeof *b + cap);
		if (!b)
			return NULL;
		b->b_next = txn->t_pfxblks;
		txn->t_pfxblks = b;
		txn->t_pfxcap = cap;
		txn->t_pfxused = 0;
	}
	unsigned char *r = txn->t_pfxblks->b_data + txn->t_pfxused;
	txn->t_pfxused += n;
	return r;
}

void dlmdb_pfx_arena_reset(MDB_txn *txn)
{
	/* keep the newest block for the next rebuild, free the rest */
	struct dl_pfxblk *b = txn->t_pfxblks;
	if (!b)
		return;
	while (b->b_next) {
		struct dl_pfxblk *o = b->b_next;
		b->b_next = o->b_next;
		free(o);
	}
	txn->t_pfxused = 0;
}

void dlmdb_pfx_arena_free(MDB_txn *txn)
{
	while (txn->t_pfxblks) {
		struct dl_pfxblk *o = txn->t_pfxblks;
		txn->t_pfxblks = o->b_next;
		free(o);
	}
	txn->t_pfxcap = txn->t_pfxused = 0;
	free(txn->t_pfxitems);
	txn->t_pfxitems = NULL;
	txn->t_pfxicap = 0;
	free(txn->t_outbuf);
	txn->t_outbuf = NULL;
	free(txn->t_vbytes);
	txn->t_vbytes = NULL;
	txn->t_vbcap = 0;
}

unsigned char *dlmdb_pfx_valbuf(MDB_txn *txn, size_t n)
{
	if (n > txn->t_vbcap) {
		unsigned char *b = realloc(txn->t_vbytes, n);
		if (!b)
			return NULL;
		txn->t_vbytes = b;
		txn->t_vbcap = n;
	}
	return txn->t_vbytes;
}

dl_pfx_item *dlmdb_pfx_items(MDB_txn *txn, unsigned n)
{
	if (n > txn->t_pfxicap) {
		dl_pfx_item *v = realloc(txn->t_pfxitems, (size_t)n * sizeof *v);
		if (!v)
			return NULL;
		txn->t_pfxitems = v;
		txn->t_pfxicap = n;
	}
	return txn->t_pfxitems;
}
