/*
 * page.c - editing the slot array and node area of one page.
 *
 * A page is a header, an array of uint16 slots growing upward (p_lower), and
 * nodes packed downward from the end of the page (p_upper).  Slot i holds the
 * byte offset of node i; slots are kept in key order, nodes are in no order.
 * Every node starts at an even offset and occupies an even number of bytes.
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
static dl_node *make_room(dl_page *p, unsigned i, size_t nbytes)
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
	dl_node *nd = make_room(p, i, dl_even(DL_NODEHDR + ks + inl));
	dl_node_set_dsize(nd, dsize);
	nd->n_flags = (uint16_t)nflags;
	nd->n_ksize = (uint16_t)ks;
	if (ks)
		memcpy(dl_node_key(nd), key->mv_data, ks);
	if (data && dcopy)
		memcpy(dl_node_data(nd), data, dcopy);
	return nd;
}

void dlmdb_pg_add_branch(dl_page *p, unsigned i, const MDB_val *key, pgno_t child)
{
	size_t ks = key ? key->mv_size : 0;
	dl_node *nd = make_room(p, i, dl_even(DL_NODEHDR + ks));
	dl_node_set_child(nd, child);
	nd->n_ksize = (uint16_t)ks;
	if (ks)
		memcpy(dl_node_key(nd), key->mv_data, ks);
}

void dlmdb_pg_add_raw(dl_page *p, unsigned i, const void *node, size_t len)
{
	dl_node *nd = make_room(p, i, dl_even(len));
	memcpy(nd, node, len);
}

void dlmdb_pg_del_node(dl_page *p, unsigned i)
{
	unsigned n = dl_pg_nkeys(p);
	indx_t *s = dl_pg_slots(p);
	indx_t off = s[i];
	dl_node *nd = (dl_node *)((char *)p + off);
	size_t sz = dl_node_bytes(p, nd) - sizeof(indx_t);
	/* nodes stored below the victim slide up over it */
	for (unsigned j = 0; j < n; j++)
		if (s[j] < off)
			s[j] = (indx_t)(s[j] + sz);
	memmove((char *)p + p->p_upper + sz, (char *)p + p->p_upper, off - p->p_upper);
	memmove(s + i, s + i + 1, (n - i - 1) * sizeof(indx_t));
	p->p_lower = (uint16_t)(p->p_lower - sizeof(indx_t));
	p->p_upper = (uint16_t)(p->p_upper + sz);
}

unsigned dlmdb_pg_used(const dl_page *p)
{
	/* node bytes plus slots; the caller knows the page size */
	return (unsigned)(p->p_lower - DL_PAGEHDR) + 0u;
}
