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

/* Shared length of key k against the anchor of p (0 without one). */
static inline unsigned shared_with(const dl_page *p, const unsigned char *k, size_t kl)
{
	if (!p->p_pad)
		return 0;
	return dl_lcp(dl_pg_anchor(p), dl_pg_anchor_len(p), k, kl);
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
			it->sh = 0;
			continue;
		}
		const dl_node *n = dl_pg_node(p, i);
		unsigned s = dl_pg_prefix(p) ? dl_node_shared(n) : 0;
		it->sh = s;
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

/* Bytes item i takes (node and slot) when its key shares s anchor bytes. */
static inline size_t item_cost(const dl_pfx_item *i, unsigned s)
{
	return dl_even(DL_NODEHDR + i->klen - s + i->dlen) + sizeof(indx_t);
}

/* Bytes of the anchor record of a used-byte anchor (none for 0). */
static inline size_t anchor_cost(unsigned used)
{
	return used ? dl_even(sizeof(uint16_t) + used) : 0;
}

/* Bytes under anchor a[0, alen), each key's share compared byte by byte
 * (store: into its sh); *used gets the longest share. */
static size_t lcp_cost(dl_pfx_item *it, unsigned n, const unsigned char *a, unsigned alen,
	int store, unsigned *used)
{
	size_t sum = 0;
	unsigned u = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned s = dl_lcp(a, alen, it[i].key, it[i].klen);
		if (s > u)
			u = s;
		sum += item_cost(&it[i], s);
		if (store)
			it[i].sh = s;
	}
	*used = u;
	return sum + anchor_cost(u);
}

/*
 * Bytes under the middle item's key as the anchor.  Its share with item i
 * is the least adj between them: for any strings lcp(x, z) >= min(lcp(x, y),
 * lcp(y, z)), so this never claims a byte the key lacks, and for keys in
 * byte order it is exactly their common prefix.  No key byte is read.
 */
static size_t mid_cost(dl_pfx_item *it, unsigned n, int store, unsigned *used)
{
	unsigned m = n / 2, s = it[m].klen;
	size_t sum = item_cost(&it[m], s);
	if (store)
		it[m].sh = s;
	for (unsigned i = m; i-- > 0;) {
		if (it[i + 1].adj < s)
			s = it[i + 1].adj;
		sum += item_cost(&it[i], s);
		if (store)
			it[i].sh = s;
	}
	s = it[m].klen;
	for (unsigned i = m + 1; i < n; i++) {
		if (it[i].adj < s)
			s = it[i].adj;
		sum += item_cost(&it[i], s);
		if (store)
			it[i].sh = s;
	}
	*used = it[m].klen;
	return sum + anchor_cost(*used);
}

size_t dlmdb_pfx_best(dl_pfx_item *it, unsigned n, const dl_pfx_cand *cands, unsigned ncand,
	dl_pfx_cand *best)
{
	/* the first known candidate: the items' sh are shares of it */
	unsigned kc = ncand, klen = 0, ku = 0, used;
	for (unsigned c = 0; c < ncand && kc == ncand; c++)
		if (cands[c].known && cands[c].len)
			kc = c, klen = cands[c].len;
	/* one pass for the cost without an anchor, the known candidate's and
	 * every item's adj; two neighbours sharing bytes of one anchor agree
	 * on the first of them, so their compare starts past those */
	size_t none = 0, known = 0;
	for (unsigned i = 0; i < n; i++) {
		dl_pfx_item *x = &it[i];
		none += item_cost(x, 0);
		if (kc < ncand) {
			if (x->sh > klen)
				x->sh = klen;
			if (x->sh > ku)
				ku = x->sh;
			known += item_cost(x, x->sh);
		}
		x->adj = 0;
		if (i) {
			const dl_pfx_item *w = x - 1;
			unsigned from = kc < ncand ? (w->sh < x->sh ? w->sh : x->sh) : 0;
			x->adj = from + dl_lcp(w->key + from, w->klen - from, x->key + from, x->klen - from);
		}
	}
	known += anchor_cost(ku);
	/* choose: no anchor, each candidate in turn, the middle key */
	size_t cost = none, k;
	unsigned win = ncand + 1;	/* ncand + 1: none, ncand: the middle key */
	best->a = NULL;
	best->len = 0;
	best->known = 1;
	for (unsigned c = 0; c < ncand; c++) {
		if (!cands[c].len)
			continue;
		if (c == kc)
			k = known, used = ku;
		else
			k = lcp_cost(it, n, cands[c].a, cands[c].len, 0, &used);
		if (k < cost) {
			cost = k;
			win = c;
			best->a = cands[c].a;
			best->len = used;
		}
	}
	if (n && it[n / 2].klen && (k = mid_cost(it, n, 0, &used)) < cost) {
		cost = k;
		win = ncand;
		best->a = it[n / 2].key;
		best->len = used;
	}
	/* the winner's shares into the items, for dlmdb_pfx_build (the known
	 * candidate's are there already) */
	if (win == ncand + 1)
		for (unsigned i = 0; i < n; i++)
			it[i].sh = 0;
	else if (win == ncand)
		mid_cost(it, n, 1, &used);
	else if (win != kc)
		lcp_cost(it, n, cands[win].a, cands[win].len, 1, &used);
	return cost;
}

void dlmdb_pfx_build(dl_page *p, unsigned end, const dl_pfx_item *it, unsigned n,
	const dl_pfx_cand *anchor, int shares)
{
	/* the anchor may point into the page being rebuilt (a candidate taken
	 * from its old image is always copied out first by the callers) */
	p->p_lower = DL_PAGEHDR;
	p->p_upper = (uint16_t)end;
	p->p_pad = 0;
	if (anchor->len)
		dlmdb_pfx_set_anchor(p, anchor->a, anchor->len);
	for (unsigned i = 0; i < n; i++) {
		unsigned s = !anchor->len ? 0 : shares ? it[i].sh :
			dl_lcp(anchor->a, anchor->len, it[i].key, it[i].klen);
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
