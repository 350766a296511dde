/*
 * internal.h - private types and hot accessors shared by the engine files.
 *
 * Naming: every cross-file function is dlmdb_<area>_<verb>; struct members
 * carry a short prefix naming their struct (e_ env, t_ txn, c_ cursor,
 * p_ page, n_ node, r_ reader slot, l_ lock header, x_ db extras).
 * The on-disk layout these structs mirror is documented in FORMAT.md.
 */
#ifndef DLMDB_INTERNAL_H
#define DLMDB_INTERNAL_H

#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "lmdb.h"

#ifdef DLMDB_DEBUG
#include <assert.h>
#define DL_ASSERT(x) assert(x)
#else
#define DL_ASSERT(x) ((void)0)
#endif

#define DL_HIDDEN __attribute__((visibility("hidden")))
#define DL_LIKELY(x) __builtin_expect(!!(x), 1)
#define DL_UNLIKELY(x) __builtin_expect(!!(x), 0)

typedef uint64_t pgno_t;
typedef uint64_t txnid_t;
typedef uint16_t indx_t;

/* ---- on-disk constants (see FORMAT.md) ----------------------------------- */

#define DL_MAGIC 0xBEEFC0DEu
#define DL_DATA_VERSION 1u
#define DL_PAGEHDR 16u		/* bytes before the slot array */
#define DL_NODEHDR 8u		/* bytes before a node's key */
#define DL_NO_PAGE (~(pgno_t)0)	/* empty tree root */
#define DL_MAXKEY 511u
#define DL_NMETAS 2
#define DL_FREE_DBI 0
#define DL_MAIN_DBI 1
#define DL_CORE_DBS 2
#define DL_MAX_DEPTH 32
#define DL_NSCRATCH 5	/* MDB_txn.t_scratch */
#define DL_SCRATCH_PFXBLOB 4	/* an insert's node encoded for a PREFIX page */
#define DL_DEFAULT_MAPSIZE 1048576u
#define DL_DEFAULT_READERS 126u
#define DL_FILL_MIN(psize) ((psize) / 4u) /* merge pages below 25% use */

/* page kinds (p_flags) */
#define DL_P_BRANCH 0x01
#define DL_P_LEAF 0x02
#define DL_P_OVERFLOW 0x04
#define DL_P_META 0x08
#define DL_P_DIRTY 0x10
#define DL_P_LEAF2 0x20
#define DL_P_SUBP 0x40
#define DL_P_COUNTED 0x0100	/* branch of a counted tree: nodes carry an entry count */
#define DL_P_KEYCOUNT 0x0200	/* with COUNTED (DUPSORT main trees): and a distinct-key count */
#define DL_P_PREFIX 0x0400	/* leaf / sub-page of a prefix-compressed DB (FORMAT.md) */

/* node kinds (n_flags) */
#define DL_N_BIG 0x01	/* value lives in overflow pages */
#define DL_N_TREE 0x02	/* value is a database record (dl_dbrec) */
#define DL_N_DUP 0x04	/* value holds duplicates (sub-page or sub-tree) */
#define DL_N_KIND 0x07	/* the kind bits; on DL_P_PREFIX pages the flags word also
			 * holds the shared-prefix length: kind | shared << 7 */
#define DL_N_SHARED_SHIFT 7

/* flags a database record may carry on disk */
#define DL_DB_PERSIST 0x7fffu
#define DL_DB_USERFLAGS (MDB_REVERSEKEY | MDB_DUPSORT | MDB_INTEGERKEY | \
	MDB_DUPFIXED | MDB_INTEGERDUP | MDB_REVERSEDUP | MDB_COUNTED | MDB_PREFIX_COMPRESSION)
/* flags whose DBs use extended encodings stock LMDB must not read (FORMAT.md) */
#define DL_DB_EXTFLAGS (MDB_COUNTED | MDB_PREFIX_COMPRESSION)
/* meta version written while the main DB uses an extension */
#define DL_DATA_VERSION_EXT 0x444c4301u	/* "DLC" 1 */

/* ---- on-disk structs -------------------------------------------------------- */

/** One B+tree's record: in the meta page and as a named-DB value (48 bytes). */
typedef struct dl_dbrec {
	uint32_t d_pad;		/* page size for the free DB record in meta */
	uint16_t d_flags;
	uint16_t d_depth;
	uint64_t d_branch;
	uint64_t d_leaf;
	uint64_t d_overflow;
	uint64_t d_entries;
	uint64_t d_root;
} dl_dbrec;

/** Body of a meta page, right after the page header (136 bytes). */
typedef struct dl_meta {
	uint32_t m_magic;
	uint32_t m_version;
	uint64_t m_address;
	uint64_t m_mapsize;
	dl_dbrec m_dbs[2];
	uint64_t m_last_pg;
	uint64_t m_txnid;
} dl_meta;

/** Page header (16 bytes), followed by the uint16 slot array. */
typedef struct dl_page {
	uint64_t p_pgno;
	uint16_t p_pad;		/* key size on LEAF2 pages */
	uint16_t p_flags;
	uint16_t p_lower;	/* end of slot array; with p_upper: overflow count */
	uint16_t p_upper;	/* start of node area */
} dl_page;

/** Node header; key bytes follow, then (leaf) data bytes.  Alignment 1: a
 *  file stock LMDB edited may hold nodes at odd offsets (FORMAT.md, "What
 *  a file guarantees"), so every field access must be safe at any address;
 *  on x86-64 the loads and stores are the same instructions as aligned ones. */
typedef struct __attribute__((packed, aligned(1))) dl_node {
	uint16_t n_lo;		/* leaf: data size low; branch: child pgno bits 0-15 */
	uint16_t n_hi;		/* leaf: data size high; branch: bits 16-31 */
	uint16_t n_flags;	/* leaf: DL_N_*; branch: child pgno bits 32-47 */
	uint16_t n_ksize;
} dl_node;

_Static_assert(sizeof(dl_dbrec) == 48, "dbrec layout");
_Static_assert(sizeof(dl_meta) == 136, "meta layout");
_Static_assert(sizeof(dl_page) == DL_PAGEHDR, "page header layout");
_Static_assert(sizeof(dl_node) == DL_NODEHDR, "node header layout");
_Static_assert(_Alignof(dl_node) == 1, "node headers may sit at any address");

/* ---- page-number lists ------------------------------------------------------- */

/** Growable array of page numbers, kept sorted ascending where noted. */
typedef struct dl_pgl {
	pgno_t *l_v;
	size_t l_n, l_cap;
} dl_pgl;

DL_HIDDEN int dlmdb_pgl_push(dl_pgl *l, pgno_t pg);
DL_HIDDEN int dlmdb_pgl_reserve(dl_pgl *l, size_t want);	/* room for want entries */
DL_HIDDEN int dlmdb_pgl_push_run(dl_pgl *l, pgno_t pg, unsigned n);
DL_HIDDEN int dlmdb_pgl_copy(dl_pgl *dst, const dl_pgl *src);
DL_HIDDEN void dlmdb_pgl_sort(dl_pgl *l);
DL_HIDDEN int dlmdb_pgl_merge(dl_pgl *l, const pgno_t *v, size_t n);
DL_HIDDEN int dlmdb_pgl_take_run(dl_pgl *l, unsigned n, pgno_t *out);
DL_HIDDEN void dlmdb_pgl_free(dl_pgl *l);
/* sort.c: page numbers ascending; pages by p_pgno ascending.  Lists of up
 * to DL_SORT_SHORT take an insertion sort here, longer ones a radix sort. */
#define DL_SORT_SHORT 24
DL_HIDDEN void dlmdb_sort_pgnos_long(pgno_t *v, size_t n);
DL_HIDDEN void dlmdb_sort_pages_long(dl_page **list, size_t n);
static inline void dlmdb_sort_pgnos(pgno_t *v, size_t n)
{
	if (n > DL_SORT_SHORT) {
		dlmdb_sort_pgnos_long(v, n);
		return;
	}
	for (size_t j = 1; j < n; j++) {
		pgno_t x = v[j];
		size_t at = j;
		for (; at > 0 && v[at - 1] > x; at--)
			v[at] = v[at - 1];
		v[at] = x;
	}
}
static inline void dlmdb_sort_pages(dl_page **list, size_t n)
{
	if (n > DL_SORT_SHORT) {
		dlmdb_sort_pages_long(list, n);
		return;
	}
	for (size_t j = 1; j < n; j++) {
		dl_page *x = list[j];
		size_t at = j;
		for (; at > 0 && list[at - 1]->p_pgno > x->p_pgno; at--)
			list[at] = list[at - 1];
		list[at] = x;
	}
}
/* dlmdb_pgl_push with the common case (room left) inline */
static inline int dl_pgl_append(dl_pgl *l, pgno_t pg)
{
	if (DL_UNLIKELY(l->l_n == l->l_cap))
		return dlmdb_pgl_push(l, pg);
	l->l_v[l->l_n++] = pg;
	return 0;
}

/* ---- dirty page map (per write txn) ------------------------------------------- */

typedef struct dl_dirty {
	pgno_t *d_keys;
	dl_page **d_pages;
	size_t d_n, d_cap;	/* d_cap is a power of two or 0 */
	uint64_t d_used;	/* while d_cap <= 64: bit i set iff slot i was ever
				 * filled (holds a page or a tombstone; idl.c) */
} dl_dirty;

DL_HIDDEN dl_page *dlmdb_dirty_find(const dl_dirty *d, pgno_t pg);
DL_HIDDEN int dlmdb_dirty_put(dl_dirty *d, pgno_t pg, dl_page *p);
/* dlmdb_dirty_put that also hands back the page pg had (NULL if none) */
DL_HIDDEN int dlmdb_dirty_swap(dl_dirty *d, pgno_t pg, dl_page *p, dl_page **old);
DL_HIDDEN dl_page *dlmdb_dirty_remove(dl_dirty *d, pgno_t pg);
DL_HIDDEN void dlmdb_dirty_free(dl_dirty *d, int free_pages);
DL_HIDDEN void dlmdb_dirty_release(dl_dirty *d, MDB_env *env);
DL_HIDDEN void dlmdb_dirty_adopt(dl_dirty *d, MDB_env *env);
DL_HIDDEN void *dlmdb_spare_take(MDB_env *env);
DL_HIDDEN void *dlmdb_spare_take_or_new(MDB_env *env);
/* return a page-sized buffer to the env's spares (writer lock held) */
DL_HIDDEN void dlmdb_spare_give(MDB_env *env, void *b);
DL_HIDDEN void dlmdb_spare_drop_all(MDB_env *env);

/* ---- lock file ------------------------------------------------------------------ */

/** Reader slot in the lock file (one cache line). */
typedef struct dl_reader {
	volatile uint64_t r_txnid;	/* snapshot in use, or ~0 */
	volatile uint32_t r_pid;	/* owning process, 0 when free */
	uint32_t r_pad0;
	volatile uint64_t r_tid;
	char r_pad[40];
} dl_reader;

/** Lock file header; readers follow at DL_LCK_READERS_OFF. */
typedef struct dl_lockhdr {
	uint32_t l_magic;		/* DL_MAGIC (same place as LMDB) */
	uint32_t l_format;		/* DL_LOCK_FORMAT, distinct from LMDB's */
	volatile uint64_t l_txnid;	/* last committed txn */
	volatile uint32_t l_numreaders;	/* slots ever handed out */
	uint32_t l_pad0;
	/* 0, or the id of a commit whose meta write or sync failed and
	 * whose meta may still be in the data file (meta.c): no meta with
	 * this id or a later one is chosen until a commit of such an id
	 * succeeds.  Kept when a first opener initialises the file */
	volatile uint64_t l_failed;
	uint32_t l_pad[8];
	/* the writer lock (lock.c): pid of the process whose write txn runs,
	 * 0 when none, and how many waiters sleep on it */
	volatile uint32_t l_wowner __attribute__((aligned(64)));
	volatile uint32_t l_wwait;
	pthread_mutex_t l_rmutex __attribute__((aligned(64)));
} dl_lockhdr;

/* readers choose the meta by l_txnid (meta.c), parked slots can be
 * claimed (lock.c, since "DLK3"), l_failed hides a failed commit's meta
 * (since "DLK4"), and the writer lock is a pid word instead of a thread's
 * mutex (since "DLK5"): a process of an earlier protocol must not share a
 * live environment with us */
#define DL_LOCK_FORMAT 0x444c4b35u	/* "DLK5" */
#define DL_LCK_READERS_OFF 256u
_Static_assert(sizeof(dl_lockhdr) <= DL_LCK_READERS_OFF, "lock header fits");

/* ---- in-memory structs ------------------------------------------------------------- */

/** Per-database information that is not stored on disk. */
typedef struct dl_dbx {
	char *x_name;		/* NULL for free slots and core DBs */
	size_t x_namelen;
	MDB_cmp_func *x_cmp;	/* key order */
	MDB_cmp_func *x_dcmp;	/* duplicate order */
	MDB_rel_func *x_rel;
	void *x_relctx;
	unsigned x_seq;		/* bumped when the slot takes another name (dbi.c) */
	int x_used;		/* 0: free; x_name, if any, is the name it had last */
	int x_binders;		/* live txn families that resolved the slot's current
				 * handle (DL_DBS_COUNTED): it takes another name only at 0 */
	MDB_txn *x_owner;	/* top txn of the family that registered the handle, until
				 * that txn ends or another txn opens it too; NULL after */
} dl_dbx;

/* txn-level per-DBI state (t_dbstate) */
#define DL_DBS_VALID 0x01	/* handle usable in this txn */
#define DL_DBS_DIRTY 0x02	/* record changed, write back at commit */
#define DL_DBS_STALE 0x04	/* record must be reloaded from main DB */
#define DL_DBS_NEW 0x08		/* handle opened in this txn */
#define DL_DBS_EMPTIED 0x10	/* a delete in this txn emptied the DB: on a child's
				 * commit the parent's cursors lose their position */
#define DL_DBS_COUNTED 0x20	/* this txn family is counted in the slot's x_binders
				 * (dbi.c); kept when the handle is dropped or closed */

/* txn flags */
#define DL_T_RDONLY 0x01
#define DL_T_ERROR 0x02		/* a write failed: only abort is allowed */
#define DL_T_DONE 0x04		/* reset / committed / aborted */
#define DL_T_CHILD 0x08		/* has an active child txn */
#define DL_T_SAVING 0x10	/* freelist save in progress */
#define DL_T_DIRTY 0x20		/* something to commit */
#define DL_T_EXTFMT 0x40	/* wrote the record of a DB with an extension flag */
/* r_txnid of a reader slot that is taken but holds no snapshot (a reset
 * reader, or one still choosing its snapshot) */
#define DL_SLOT_IDLE (~(uint64_t)0)
/* r_tid of a parked slot: this bit | owner pid << 32 | handle number (a
 * thread id, a user-space address, never has the top bit set) */
#define DL_SLOT_PARKED (1ull << 63)

/* Saved state of an enclosing txn's cursor while a child runs: as in LMDB
 * such cursors follow the child's changes and get this state back if the
 * child aborts. */
typedef struct dl_curbak {
	MDB_cursor *b_cur;	/* NULL once the cursor is closed */
	unsigned b_flags, b_xflags;
	size_t b_savedlen, b_xsavedlen;
	unsigned char b_saved[DL_MAXKEY + 1], b_xsaved[DL_MAXKEY + 1];
} dl_curbak;

struct MDB_txn {
	/* write txns: guarded calls that got in (guard.c).  First, so that a
	 * binding copying a result after the call can read it at offset 0
	 * (mdb_txn_calls) */
	unsigned t_gcalls;
	MDB_env *t_env;
	MDB_txn *t_parent;
	MDB_txn *t_child;
	txnid_t t_id;
	unsigned t_flags;
	unsigned t_numdbs;
	pgno_t t_next_pg;	/* first never-used page number */
	dl_dbrec *t_dbs;
	unsigned char *t_dbstate;
	unsigned *t_dbseq;
	MDB_cursor *t_cursors;	/* open user cursors (linked by c_next) */
	dl_reader *t_slot;	/* read txns: our reader slot */
	uint64_t t_gen;		/* bumped on every tree change */
	/* write txns only */
	dl_dirty t_dirty;	/* pages copied or allocated by this txn */
	dl_pgl t_freed;		/* committed pages released by this txn */
	dl_pgl t_loose;		/* pages allocated in this txn family, now unused */
	dl_pgl t_reclaimed;	/* pages taken from free DB records, unused yet */
	dl_pgl t_dropped;	/* nested txns: dirty pages released here; an ancestor's
				 * copy of such a page is dead and goes when we merge */
	txnid_t t_last_reclaimed;	/* highest free DB key consumed */
	uint64_t t_nreclaimed;		/* free DB records consumed (the first ones) */
	uint64_t t_fl_gen;	/* changes to the free lists (save fixpoint) */
	/* page-sized work buffers, made on first use: 0 split (page snapshot,
	 * LEAF2 keys), 1 node blob of an insert, 2 aligned copy of a sub-page
	 * (DUPSORT reads), 3 rebuilt sub-page (DUPSORT writes), 4 encoded
	 * insert blob (PREFIX pages) */
	char *t_scratch[DL_NSCRATCH];
	MDB_val *t_vals;	/* value list for rebuilding a sub-page (DUPSORT) */
	/* prefix.c: decoded keys and item lists of pages being rebuilt */
	struct dl_pfxblk *t_pfxblks;
	size_t t_pfxcap, t_pfxused;
	struct dl_pfx_item *t_pfxitems;
	unsigned t_pfxicap;
	unsigned char *t_outbuf;	/* decoded key and value of mdb_get/mdb_get_rank */
	uint64_t t_pgen;	/* bumped when a PREFIX page gets another anchor (dl_cur_key) */
	unsigned char *t_vbytes;	/* decoded duplicates of a sub-page being rebuilt */
	size_t t_vbcap;
	struct dl_curbak *t_curbak;	/* child txn: enclosing txns' cursor states at begin */
	size_t t_ncurbak;
	/* mdb_txn_set_interrupt (interrupt.c): t_intr points at the flag of
	 * the txn family's top txn, t_intr_own for a top txn itself */
	int *t_intr;
	int t_intr_own;
	int t_err;	/* the code that set DL_T_ERROR (dl_txn_fail), else 0 */
	/* write txns: one thread inside at a time (guard.c) */
	uintptr_t t_gowner;	/* slot of the thread that called last, | DL_G_* bits */
	int t_glock;		/* serialises slow paths */
};

/* cursor flags */
#define DL_C_INIT 0x01		/* positioned */
#define DL_C_EOF 0x02		/* ran off the end */
#define DL_C_DEL 0x04		/* item under cursor was deleted */
#define DL_C_SAVED 0x08		/* c_saved holds the key to re-seek to */
#define DL_C_PAST 0x20		/* c_saved is the key just before the cursor */

struct MDB_cursor {
	MDB_txn *c_txn;
	MDB_dbi c_dbi;
	unsigned c_flags;
	dl_dbrec *c_db;
	dl_dbx *c_dbx;
	MDB_cursor *c_next;
	struct dl_xcur *c_sub;	/* duplicate sub-cursor (DUPSORT DBs), else NULL */
	MDB_cursor *c_owner;	/* for a sub-cursor: the cursor it belongs to */
	dl_page *c_inline;	/* sub-cursor on an inline sub-page: that page */
	unsigned c_bound;	/* bytes addressable from a page start (psize or sub-page size) */
	int c_tracked;		/* on the txn's cursor list (user cursor of a write txn) */
	uint64_t c_gen;		/* t_gen when the stack was last valid */
	/* c_kbuf starts with c_kvalid bytes of the anchor of page c_kpage as
	 * of t_gen c_kgen and t_pgen c_kpgen (dl_cur_key); c_kpage NULL:
	 * nothing.  Anchors change only when a page is laid out anew (splits,
	 * merges, a first key: t_pgen) or when the address holds another
	 * page (a new op: t_gen; another sub-page in the sub-cursor's copy:
	 * dlmdb_dup_setup clears c_kpage). */
	const dl_page *c_kpage;
	uint64_t c_kgen, c_kpgen;
	unsigned c_kvalid;
	/* in a read-only txn, and while c_kpage holds: c_kbuf holds the
	 * whole key (c_klen bytes) of node c_knode of that page, so asking
	 * again for the same node (a step through its duplicates) copies
	 * nothing.  Write txns never take this path: inside one write op a
	 * node's address may hold another key after the page changed. */
	const dl_node *c_knode;
	unsigned c_klen;
	unsigned c_kalen;	/* while c_kpage holds: its anchor's length (checked) */
	unsigned c_top;		/* index of the leaf level in c_pg */
	unsigned c_depth;	/* entries in c_pg (0 = not positioned) */
	/* cursor reuse (search.c, DL_NEAR...): where the last search through
	 * this cursor ended, which orders the next one's compares (a hint
	 * only: results never depend on it) */
	unsigned c_far;
	/* pages this cursor made writable in its txn: bit l of c_tmask says
	 * c_tpg[l] is one (dlmdb_cursor_touch; cleared by cursor setup).  A
	 * page of the txn's own stays its own until the txn ends, so a level
	 * whose c_pg still is that page needs no new touch. */
	unsigned c_tmask;
	dl_page *c_tpg[DL_MAX_DEPTH];
	dl_page *c_pg[DL_MAX_DEPTH];
	indx_t c_ki[DL_MAX_DEPTH];
	size_t c_savedlen;
	unsigned char c_saved[DL_MAXKEY + 1];
	/* keys (sub-cursor: values) of prefix-compressed pages handed out by
	 * this cursor are decoded here (FORMAT.md, "Views") */
	unsigned char c_kbuf[DL_MAXKEY + 1];
	/* counted DBs (counted.c): c_rank0[l] is the rank of the first entry
	 * under c_pg[l]; valid only while c_rkleaf == c_pg[c_top], c_rkgen ==
	 * t_gen and c_rkdepth == c_depth (cleared by cursor setup/renew) */
	struct dl_batch *c_batch;	/* user cursors: mdb_cursor_get_batch's results (batch.c) */
	const dl_page *c_rkleaf;
	uint64_t c_rkgen;
	unsigned c_rkdepth;
	uint64_t c_rank0[DL_MAX_DEPTH];
};

/** Sub-cursor over the duplicates of one key (inline sub-page or sub-tree). */
typedef struct dl_xcur {
	MDB_cursor x_c;
	dl_dbrec x_db;		/* the sub-tree's record (or a stand-in for a sub-page) */
	dl_dbx x_dbx;		/* x_cmp = the main DB's duplicate order */
	char *x_buf;		/* aligned copy of an inline sub-page (page-sized) */
	char *x_orig;		/* where that sub-page lives in the tree, or NULL */
	struct dl_ldbuf *x_ld;	/* user cursors: mdb_cursor_list_dup's results (listdup.c) */
} dl_xcur;

/** Translate a pointer into the sub-page copy back to the tree (a value of
 *  a compressed sub-page decoded into the sub-cursor's c_kbuf stays). */
static inline void dl_xcur_out(dl_xcur *x, MDB_val *v)
{
	if (x->x_orig && v->mv_data && (char *)v->mv_data >= x->x_buf &&
	    (char *)v->mv_data < x->x_buf + x->x_c.c_bound)
		v->mv_data = x->x_orig + ((char *)v->mv_data - x->x_buf);
}

struct MDB_env {
	int e_fd;		/* data file */
	int e_lfd;		/* lock file */
	char *e_path;
	unsigned e_flags;
	unsigned e_psize;
	size_t e_mapsize;
	pgno_t e_maxpg;
	size_t e_fpages;	/* pages the data file was last seen to hold (txn.c) */
	char *e_map;
	dl_lockhdr *e_lck;
	size_t e_lcksize;
	unsigned e_maxreaders;
	unsigned e_maxdbs;	/* including the two core DBs */
	unsigned e_numdbs;	/* slots in use (high-water mark) */
	dl_dbx *e_dbx;
	size_t e_nodemax;	/* largest leaf node kept inline */
	pid_t e_pid;
	int e_opened;
	/* top-level txns of this env currently open (mdb_env_set_mapsize) */
	int e_live_txns;
	MDB_txn *e_wtxn;	/* the top-level write txn, if any */
	/* set (never cleared) when a commit failed at a point where its meta
	 * may already be in the file (meta.c): every txn begin then answers
	 * MDB_PANIC until the env is closed and opened again */
	int e_panic;
	void *e_spare;		/* page-sized buffers kept for the next write txn */
	unsigned e_nspare;
	/* pages this handle wrote itself, direct-mapped by number (page.c):
	 * their full validation is skipped while e_trust_meta, the meta of
	 * our last commit, is still the newest one (nobody else wrote since) */
	pgno_t *e_trusted;
	uint64_t e_trust_epoch;
	dl_meta e_trust_meta;
	void *e_dirty_spare;	/* smallest dirty-map block, kept for the next write txn */
	MDB_txn *e_txn_spare;	/* a top-level write txn's struct, kept for the next one */
	/* a reader slot this handle keeps between read txns (lock.c): owned
	 * (our pid), idle, its thread id replaced by e_park_tag; taken and
	 * parked atomically, and claimable by a reader that finds the table
	 * full (see dlmdb_reader_park) */
	dl_reader *e_rslot_spare;
	uint64_t e_park_tag;
	pthread_mutex_t e_dbimutex;
	unsigned e_dbigen;	/* odd while a handle in e_dbx changes (dbi.c): txn begin
				 * copies the table unlocked if it stayed even and equal */
	void *e_userctx;
	MDB_assert_func *e_assert;
	dl_lockhdr e_nolock;	/* stand-in header when MDB_NOLOCK */
	/* mdb_env_set_interrupt (interrupt.c): nonzero while every page visit
	 * of every txn of this handle answers EINTR */
	int e_intr;
};

/* MDB_INMEMORY (inmem.c): the map is anonymous memory that the commit
 * writes with memcpy, there is no data file (e_fd < 0) and no lock file
 * (the lock header and reader table are anonymous memory too) */
static inline int dl_inmem(const MDB_env *env)
{
	return (env->e_flags & MDB_INMEMORY) != 0;
}

/* Is an interrupt pending for txn (its env's or its family's own)? */
static inline int dl_intr_pending(const MDB_txn *txn)
{
	return __atomic_load_n(&txn->t_env->e_intr, __ATOMIC_RELAXED) |
		__atomic_load_n(txn->t_intr, __ATOMIC_RELAXED);
}

/* env flags that are changeable at runtime */
#define DL_ENV_CHANGEABLE (MDB_NOSYNC | MDB_NOMETASYNC | MDB_MAPASYNC | MDB_NOMEMINIT)
#define DL_ENV_OPENFLAGS (MDB_FIXEDMAP | MDB_NOSUBDIR | MDB_NOSYNC | MDB_RDONLY | \
	MDB_NOMETASYNC | MDB_WRITEMAP | MDB_MAPASYNC | MDB_NOTLS | MDB_NOLOCK | \
	MDB_NORDAHEAD | MDB_NOMEMINIT | MDB_PREVSNAPSHOT | MDB_INMEMORY)

/* ---- hot accessors -------------------------------------------------------------- */

static inline unsigned dl_pg_nkeys(const dl_page *p)
{
	return (unsigned)(p->p_lower - DL_PAGEHDR) >> 1;
}
static inline indx_t *dl_pg_slots(dl_page *p)
{
	return (indx_t *)((char *)p + DL_PAGEHDR);
}
static inline indx_t dl_pg_slot(const dl_page *p, unsigned i)
{
	return ((const indx_t *)((const char *)p + DL_PAGEHDR))[i];
}
static inline dl_node *dl_pg_node(const dl_page *p, unsigned i)
{
	return (dl_node *)((char *)p + dl_pg_slot(p, i));
}
static inline unsigned dl_pg_room(const dl_page *p)
{
	return (unsigned)(p->p_upper - p->p_lower);
}
static inline int dl_pg_is_leaf(const dl_page *p) { return (p->p_flags & DL_P_LEAF) != 0; }
static inline int dl_pg_is_branch(const dl_page *p) { return (p->p_flags & DL_P_BRANCH) != 0; }
static inline int dl_pg_is_leaf2(const dl_page *p) { return (p->p_flags & DL_P_LEAF2) != 0; }
static inline uint32_t dl_pg_ovcount(const dl_page *p)
{
	uint32_t n;
	memcpy(&n, (const char *)p + 12, 4);
	return n;
}
static inline void dl_pg_set_ovcount(dl_page *p, uint32_t n)
{
	memcpy((char *)p + 12, &n, 4);
}
static inline void *dl_pg_leaf2_key(const dl_page *p, unsigned i)
{
	return (char *)p + DL_PAGEHDR + (size_t)i * p->p_pad;
}

static inline void *dl_node_key(const dl_node *n) { return (char *)n + DL_NODEHDR; }
static inline void *dl_node_data(const dl_node *n)
{
	return (char *)n + DL_NODEHDR + n->n_ksize;
}
static inline size_t dl_node_dsize(const dl_node *n)
{
	return (size_t)n->n_lo | ((size_t)n->n_hi << 16);
}
static inline void dl_node_set_dsize(dl_node *n, size_t sz)
{
	n->n_lo = (uint16_t)(sz & 0xffff);
	n->n_hi = (uint16_t)(sz >> 16);
}
static inline pgno_t dl_node_child(const dl_node *n)
{
	return (pgno_t)n->n_lo | ((pgno_t)n->n_hi << 16) | ((pgno_t)n->n_flags << 32);
}
static inline void dl_node_set_child(dl_node *n, pgno_t pg)
{
	n->n_lo = (uint16_t)(pg & 0xffff);
	n->n_hi = (uint16_t)((pg >> 16) & 0xffff);
	n->n_flags = (uint16_t)((pg >> 32) & 0xffff);
}
/** Overflow page number stored in a DL_N_BIG node (unaligned). */
static inline pgno_t dl_node_bigpg(const dl_node *n)
{
	pgno_t pg;
	memcpy(&pg, dl_node_data(n), sizeof pg);
	return pg;
}
static inline size_t dl_even(size_t x) { return (x + 1) & ~(size_t)1; }

/* ---- counted trees (FORMAT.md, "Counted branch nodes") ----
 * A branch node of a DL_P_COUNTED page stores, right after its key, the
 * number of entries (duplicates included) in the child's subtree as an
 * unaligned little-endian uint64; a DL_P_KEYCOUNT page adds a second one,
 * the number of distinct keys. */
static inline unsigned dl_pg_cntbytes(const dl_page *p)
{
	return ((p->p_flags & DL_P_COUNTED) ? 8u : 0u) + ((p->p_flags & DL_P_KEYCOUNT) ? 8u : 0u);
}
static inline uint64_t dl_node_count(const dl_node *n)
{
	uint64_t c;
	memcpy(&c, (const char *)n + DL_NODEHDR + n->n_ksize, sizeof c);
	return c;
}
static inline void dl_node_set_count(dl_node *n, uint64_t c)
{
	memcpy((char *)n + DL_NODEHDR + n->n_ksize, &c, sizeof c);
}
static inline uint64_t dl_node_keycount(const dl_node *n)
{
	uint64_t c;
	memcpy(&c, (const char *)n + DL_NODEHDR + n->n_ksize + 8, sizeof c);
	return c;
}
static inline void dl_node_set_keycount(dl_node *n, uint64_t c)
{
	memcpy((char *)n + DL_NODEHDR + n->n_ksize + 8, &c, sizeof c);
}
/** Page flags of a new leaf page (fixed: a LEAF2 page) of a tree with record db. */
static inline unsigned dl_db_leaf_flags(const dl_dbrec *db, int fixed)
{
	if (fixed)
		return DL_P_LEAF | DL_P_LEAF2;
	return DL_P_LEAF | ((db->d_flags & MDB_PREFIX_COMPRESSION) ? DL_P_PREFIX : 0);
}
/** Page flags of a new branch page of a tree with record db. */
static inline unsigned dl_db_branch_flags(const dl_dbrec *db)
{
	unsigned f = DL_P_BRANCH;
	if (db->d_flags & MDB_COUNTED)
		f |= DL_P_COUNTED | ((db->d_flags & MDB_DUPSORT) ? DL_P_KEYCOUNT : 0);
	return f;
}
/* Named DBs with an extension flag are stored like every named DB (node
 * kind TREE): a DUPDATA|SUBDATA node would crash stock LMDB's cursors.  The
 * meta version keeps stock LMDB out of such files instead. */
/** Meta version of a commit (FORMAT.md, "DLMDB extensions"): once a file
 *  holds a DB with an extension it keeps the extended version. */
static inline uint32_t dl_meta_version(uint32_t prev, const dl_dbrec *maindb, int ext_written)
{
	if (prev == DL_DATA_VERSION_EXT || ext_written || (maindb->d_flags & DL_DB_EXTFLAGS))
		return DL_DATA_VERSION_EXT;
	return DL_DATA_VERSION;
}
/** Entries an item with node flags nflags and value data stands for: its
 *  duplicates in a DUPSORT main tree (sub-page or sub-tree record), else 1. */
static inline uint64_t dl_value_items(unsigned nflags, const void *data, int dupsort)
{
	if (!dupsort || !(nflags & DL_N_DUP))
		return 1;
	if (nflags & DL_N_TREE) {
		uint64_t e;
		memcpy(&e, (const char *)data + offsetof(dl_dbrec, d_entries), sizeof e);
		return e;
	}
	uint16_t lower;
	memcpy(&lower, (const char *)data + offsetof(dl_page, p_lower), sizeof lower);
	return lower >= DL_PAGEHDR ? (uint64_t)(lower - DL_PAGEHDR) >> 1 : 0;
}
static inline uint64_t dl_leaf_items(const dl_node *n, int dupsort)
{
	return dl_value_items(n->n_flags, dl_node_data(n), dupsort);
}

/* ---- prefix-compressed leaves (FORMAT.md, "Prefix-compressed leaves") ----
 * A DL_P_PREFIX page keeps an anchor record at offset p_pad (0: none): a
 * uint16 length L, then L bytes.  A leaf node's flags word is kind | shared
 * << 7; its key is anchor[0, shared) + the n_ksize stored bytes. */
static inline int dl_pg_prefix(const dl_page *p) { return (p->p_flags & DL_P_PREFIX) != 0; }
static inline unsigned dl_node_kind(const dl_node *n) { return n->n_flags & DL_N_KIND; }
static inline unsigned dl_node_shared(const dl_node *n) { return n->n_flags >> DL_N_SHARED_SHIFT; }
static inline unsigned dl_pg_anchor_len(const dl_page *p)
{
	uint16_t l = 0;
	if (p->p_pad)
		memcpy(&l, (const char *)p + p->p_pad, sizeof l);
	return l;
}
static inline const unsigned char *dl_pg_anchor(const dl_page *p)
{
	return (const unsigned char *)p + p->p_pad + sizeof(uint16_t);
}
/** Bytes the anchor record takes (0 without one). */
static inline unsigned dl_pg_anchor_bytes(const dl_page *p)
{
	return p->p_pad ? (unsigned)dl_even(sizeof(uint16_t) + dl_pg_anchor_len(p)) : 0u;
}
/** Is the anchor record of PREFIX page p where our writers put it: at the
 *  top of the page (or sub-page) of bound bytes, at or above p_upper?
 *  (FORMAT.md; nodes must then end at or below p_pad, see dl_pg_node_lim.) */
static inline int dl_pg_anchor_ok(const dl_page *p, unsigned bound)
{
	unsigned a = p->p_pad;
	return !a || (a >= p->p_upper && a + sizeof(uint16_t) <= bound &&
		a + dl_pg_anchor_bytes(p) == bound);
}
/** Where the nodes of page p (of bound bytes) must end: below a PREFIX
 *  page's anchor record, else at the end. */
static inline unsigned dl_pg_node_lim(const dl_page *p, unsigned bound)
{
	return (dl_pg_prefix(p) && p->p_pad && p->p_pad < bound) ? p->p_pad : bound;
}
/** memcpy for the short copies of key decoding (anchor bytes, suffixes):
 *  8-byte words with an overlapping last word, never reading or writing
 *  past either end; gcc otherwise inlines a variable-length memcpy here as
 *  a `rep movsq`, slow for a few dozen bytes. */
static inline __attribute__((always_inline)) void dl_copy_short(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	if (n >= 8) {
		if (n > 64) {
			memcpy(d, s, n);
			return;
		}
		size_t i = 0;
		for (; i + 8 < n; i += 8) {
			uint64_t w;
			__builtin_memcpy(&w, s + i, 8);
			__builtin_memcpy(d + i, &w, 8);
		}
		uint64_t w;
		__builtin_memcpy(&w, s + n - 8, 8);
		__builtin_memcpy(d + n - 8, &w, 8);
		return;
	}
	if (n >= 4) {
		uint32_t a, b;
		__builtin_memcpy(&a, s, 4);
		__builtin_memcpy(&b, s + n - 4, 4);
		__builtin_memcpy(d, &a, 4);
		__builtin_memcpy(d + n - 4, &b, 4);
		return;
	}
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}
/** Index of the first byte where a[0, al) and b[0, bl) differ (the shorter
 *  length if one is a prefix of the other): 8-byte words, the last one
 *  overlapping the previous when the length is no multiple of 8. */
static inline unsigned dl_lcp(const unsigned char *a, size_t al, const unsigned char *b, size_t bl)
{
	size_t n = al < bl ? al : bl, i = 0;
	uint64_t x, y;
	if (n >= 8) {
		for (;;) {
			__builtin_memcpy(&x, a + i, 8);
			__builtin_memcpy(&y, b + i, 8);
			if (x != y)
				break;
			if (i + 8 == n)
				return (unsigned)n;
			/* the next word, or the last 8 bytes (they start past
			 * equal ones, so the first difference in them is real) */
			i = i + 16 <= n ? i + 8 : n - 8;
		}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		return (unsigned)(i + ((unsigned)__builtin_ctzll(x ^ y) >> 3));
#else
		return (unsigned)(i + ((unsigned)__builtin_clzll(x ^ y) >> 3));
#endif
	}
	while (i < n && a[i] == b[i])
		i++;
	return (unsigned)i;
}
/** Full length of the key of leaf node n of page p. */
static inline size_t dl_leaf_klen(const dl_page *p, const dl_node *n)
{
	return n->n_ksize + (dl_pg_prefix(p) ? dl_node_shared(n) : 0u);
}
/** Key of leaf node n of page p: in place, or decoded into buf (DL_MAXKEY
 *  bytes) when it shares anchor bytes.  n must have passed dl_node_in_page
 *  (or the page a validation walk). */
static inline void dl_leaf_key(const dl_page *p, const dl_node *n, MDB_val *k, unsigned char *buf)
{
	unsigned s = dl_pg_prefix(p) ? dl_node_shared(n) : 0u;
	if (!s) {
		k->mv_size = n->n_ksize;
		k->mv_data = dl_node_key(n);
		return;
	}
	dl_copy_short(buf, dl_pg_anchor(p), s);
	dl_copy_short(buf + s, dl_node_key(n), n->n_ksize);
	k->mv_size = s + n->n_ksize;
	k->mv_data = buf;
}
/** 1 and *k set when mc's c_kbuf holds the whole key of node n of page p
 *  (c_knode, read-only txns only): that node was read, and checked, by an
 *  earlier call on the same unchanged page, so nothing needs doing again. */
static inline __attribute__((always_inline)) int dl_cur_key_held(MDB_cursor *mc, const dl_page *p, const dl_node *n, MDB_val *k)
{
	const MDB_txn *txn = mc->c_txn;
	if (mc->c_knode != n || mc->c_kpage != p || !(txn->t_flags & DL_T_RDONLY) ||
	    mc->c_kgen != txn->t_gen || mc->c_kpgen != txn->t_pgen)
		return 0;
	k->mv_size = mc->c_klen;
	k->mv_data = mc->c_kbuf;
	return 1;
}
/** Key of leaf node n of PREFIX page p for cursor mc's caller: in place,
 *  or decoded into mc->c_kbuf.  A step to a neighbour on the same page
 *  copies only the anchor bytes the buffer does not hold yet and the
 *  suffix (O(suffix) for keys sharing alike).  n passed dl_pfx_node_ok. */
static inline __attribute__((always_inline)) void dl_cur_key(MDB_cursor *mc, const dl_page *p, const dl_node *n, MDB_val *k)
{
	unsigned s = dl_node_shared(n);
	if (!s) {
		k->mv_size = n->n_ksize;
		k->mv_data = dl_node_key(n);
		return;
	}
	if (dl_cur_key_held(mc, p, n, k))
		return;
	const MDB_txn *txn = mc->c_txn;
	unsigned have = 0;
	if (mc->c_kpage == p && mc->c_kgen == txn->t_gen && mc->c_kpgen == txn->t_pgen)
		have = mc->c_kvalid;
	else
		mc->c_kalen = dl_pg_anchor_len(p);	/* checked: s > 0 passed dl_pfx_node_ok */
	if (s > have)
		dl_copy_short(mc->c_kbuf + have, dl_pg_anchor(p) + have, s - have);
	dl_copy_short(mc->c_kbuf + s, dl_node_key(n), n->n_ksize);
	mc->c_kpage = p;
	mc->c_kgen = txn->t_gen;
	mc->c_kpgen = txn->t_pgen;
	mc->c_kvalid = s;
	mc->c_knode = n;
	mc->c_klen = s + n->n_ksize;
	k->mv_size = mc->c_klen;
	k->mv_data = mc->c_kbuf;
}
/** Does page p, reached by a cursor of a tree with record db, carry the
 *  PREFIX flag exactly when it must (a node leaf of a compressed tree)?  A
 *  damaged flag would make a compressed page read as a plain one (keys cut
 *  to their suffixes) or the other way round. */
static inline int dl_pg_prefix_ok(const dl_page *p, const dl_dbrec *db)
{
	int want = (p->p_flags & (DL_P_LEAF | DL_P_LEAF2)) == DL_P_LEAF &&
		(db->d_flags & MDB_PREFIX_COMPRESSION);
	return !(p->p_flags & DL_P_PREFIX) == !want;
}
/** The shared length and key size of a node of a PREFIX page are sane. */
static inline int dl_pfx_node_ok(const dl_page *p, const dl_node *n, unsigned bound)
{
	unsigned s = dl_node_shared(n), k = s + n->n_ksize;
	if (k == 0 || k > DL_MAXKEY || (n->n_flags & ~(DL_N_KIND | (0x1ffu << DL_N_SHARED_SHIFT))))
		return 0;
	return !s || (dl_pg_anchor_ok(p, bound) && s <= dl_pg_anchor_len(p));
}

/** dl_pfx_node_ok for a node of the page whose anchor cursor mc decoded
 *  last (c_kpage, unchanged since): that anchor was checked then, so only
 *  the node's own fields and its shared length against c_kalen are. */
static inline __attribute__((always_inline)) int dl_cur_node_ok(const MDB_cursor *mc, const dl_page *p,
	const dl_node *n)
{
	const MDB_txn *txn = mc->c_txn;
	if (mc->c_kpage != p || mc->c_kgen != txn->t_gen || mc->c_kpgen != txn->t_pgen)
		return dl_pfx_node_ok(p, n, mc->c_bound);
	unsigned s = dl_node_shared(n), k = s + n->n_ksize;
	return k != 0 && k <= DL_MAXKEY && !(n->n_flags & ~(DL_N_KIND | (0x1ffu << DL_N_SHARED_SHIFT))) &&
		s <= mc->c_kalen;
}
/** Cheap sanity check of node i before it is dereferenced (damaged files). */
static inline int dl_node_in_page(const dl_page *p, unsigned i, unsigned psize)
{
	unsigned off = dl_pg_slot(p, i);
	/* any parity: stock LMDB may move nodes by odd amounts (FORMAT.md) */
	if (off < p->p_upper || off + DL_NODEHDR > psize)
		return 0;
	const dl_node *n = (const dl_node *)((const char *)p + off);
	if (DL_UNLIKELY(dl_pg_prefix(p))) {
		if (!dl_pfx_node_ok(p, n, psize))
			return 0;
		psize = dl_pg_node_lim(p, psize);	/* below the anchor */
	}
	return off + DL_NODEHDR + n->n_ksize + (dl_pg_is_branch(p) ? dl_pg_cntbytes(p) : 0) <= psize;
}

/*
 * Largest leaf node a tree with record db keeps inline.  A PREFIX page's
 * anchor record (up to 514 bytes) leaves less room to split in: a new node
 * and the smaller half of a page under the old anchor fit one page when the
 * node is at most (psize - 16)/2 - 257 bytes with its slot, so compressed
 * trees move values to overflow pages 258 bytes sooner (prefix.c).
 */
#define DL_PFX_NODE_SLACK 258u
static inline size_t dl_db_nodemax(const MDB_env *env, const dl_dbrec *db)
{
	return env->e_nodemax - ((db->d_flags & MDB_PREFIX_COMPRESSION) ? DL_PFX_NODE_SLACK : 0);
}

/** Bytes a leaf node occupies in a page, including its slot. */
static inline size_t dl_leaf_need(const MDB_env *env, size_t ksize, size_t dsize)
{
	size_t sz = DL_NODEHDR + ksize + dsize;
	if (sz > env->e_nodemax)
		sz = DL_NODEHDR + ksize + sizeof(pgno_t);
	return dl_even(sz) + sizeof(indx_t);
}
static inline size_t dl_branch_need(const dl_page *p, size_t ksize)
{
	return dl_even(DL_NODEHDR + ksize + dl_pg_cntbytes(p)) + sizeof(indx_t);
}
/** Bytes a node currently occupies, including its slot. */
static inline size_t dl_node_bytes(const dl_page *p, const dl_node *n)
{
	size_t sz = DL_NODEHDR + n->n_ksize;
	if (dl_pg_is_leaf(p))
		sz += (n->n_flags & DL_N_BIG) ? sizeof(pgno_t) : dl_node_dsize(n);
	else
		sz += dl_pg_cntbytes(p);
	return dl_even(sz) + sizeof(indx_t);
}
static inline unsigned dl_ov_pages(const MDB_env *env, size_t dsize)
{
	return (unsigned)((DL_PAGEHDR + dsize + env->e_psize - 1) / env->e_psize);
}

/* ---- MDB_WRITEMAP (FORMAT.md, "WRITEMAP and FIXEDMAP") ----
 * The top-level write txn of a WRITEMAP env (there are no nested ones)
 * builds its pages in the shared map itself: its dirty-map entries point
 * into e_map, at the pages' own numbers, instead of at heap copies.  Every
 * place that lets go of a dirty buffer goes through dl_buf_release. */
/* Does the write txn build its pages in the map?  Under WRITEMAP (top
 * txns only, there are no nested ones), and in an in-memory env for its
 * top txn: a nested txn of an in-memory env uses heap copies, which its
 * abort can drop and its commit hands to the parent, whose commit copies
 * them into the map (txn.c, write_pages). */
static inline int dl_builds_in_map(const MDB_txn *txn, const MDB_env *env)
{
	return (env->e_flags & MDB_WRITEMAP) || ((env->e_flags & MDB_INMEMORY) && !txn->t_parent);
}
/* May a dirty page of a write txn of env lie in the map? */
static inline int dl_env_builds_in_map(const MDB_env *env)
{
	return (env->e_flags & (MDB_WRITEMAP | MDB_INMEMORY)) != 0;
}
static inline int dl_in_map(const MDB_env *env, const void *p)
{
	return env->e_map && (uintptr_t)p - (uintptr_t)env->e_map < env->e_mapsize;
}
/** Let go of a dirty page buffer: heap copies are freed, map pages stay. */
static inline void dl_buf_release(const MDB_env *env, void *p)
{
	if (p && !dl_in_map(env, p))
		free(p);
}

/* ---- the write and sync calls of a commit (fault injection) ----
 * Every pwrite, pwritev, fdatasync and msync a commit makes goes through
 * these macros, with the step of the commit that makes it.  A build with
 * -DDLMDB_FAULTS (the C tests only) routes them through fault.c, which a
 * test can tell to fail the Nth call of a kind; every other build calls
 * the system directly, so production code pays nothing for the hook. */
#define DL_IO_DATA 0	/* data pages */
#define DL_IO_GROW 1	/* the grow-ahead zero stretch (txn.c) */
#define DL_IO_DSYNC 2	/* sync of the data pages */
#define DL_IO_META 3	/* the meta page */
#define DL_IO_MSYNC 4	/* sync of the meta page */
#define DL_IO_UNDO 5	/* taking a failed meta back (meta.c) */
#define DL_IO_NSITES 6
#ifdef DLMDB_FAULTS
#include <sys/uio.h>
DL_HIDDEN ssize_t dlmdb_io_pwrite(int site, int fd, const void *buf, size_t len, off_t off);
DL_HIDDEN ssize_t dlmdb_io_pwritev(int site, int fd, const struct iovec *iov, int cnt, off_t off);
DL_HIDDEN int dlmdb_io_fdatasync(int site, int fd);
DL_HIDDEN int dlmdb_io_msync(int site, void *addr, size_t len, int how);
#define DL_PWRITE(site, fd, buf, len, off) dlmdb_io_pwrite(site, fd, buf, len, off)
#define DL_PWRITEV(site, fd, iov, cnt, off) dlmdb_io_pwritev(site, fd, iov, cnt, off)
#define DL_FDATASYNC(site, fd) dlmdb_io_fdatasync(site, fd)
#define DL_MSYNC(site, addr, len, how) dlmdb_io_msync(site, addr, len, how)
/* test control (fault.c): calls are counted per kind from the last reset;
 * armed, the nth call of kind fails with err (a write: writes nothing;
 * DL_FAULT_SHORT: writes up to a 4 KiB boundary of the file and returns
 * that length instead, if the write crosses one;
 * DL_FAULT_LEAVE: the nth writes it all, then fails), and with
 * DL_FAULT_STICKY so does every later call of that kind (writing nothing);
 * DL_FAULT_BREAK (syncs): from the nth sync on every write fails too */
#define DL_FAULT_WRITE 0
#define DL_FAULT_SYNC 1
#define DL_FAULT_STICKY 0x1
#define DL_FAULT_SHORT 0x2
#define DL_FAULT_LEAVE 0x4	/* a failed write still writes its bytes */
#define DL_FAULT_BREAK 0x8	/* a failed sync makes all later writes fail */
void dlmdb_fault_reset(void);
void dlmdb_fault_arm(int kind, unsigned long nth, int err, unsigned how);
/* the same, aimed at the first call of kind made at site (DL_IO_*) */
void dlmdb_fault_arm_at(int kind, int site, int err, unsigned how);
unsigned long dlmdb_fault_calls(int kind);
/* calls of site that were failed (or cut short) since the last reset */
unsigned long dlmdb_fault_hits(int site);
/* calls made at site, and writes cut short, since the last reset */
unsigned long dlmdb_fault_site_calls(int site);
unsigned long dlmdb_fault_shorts(void);
/* on: syncs that are not failed return at once without a syscall */
void dlmdb_fault_fake_sync(int on);
#else
#define DL_PWRITE(site, fd, buf, len, off) pwrite(fd, buf, len, off)
#define DL_PWRITEV(site, fd, iov, cnt, off) pwritev(fd, iov, cnt, off)
#define DL_FDATASYNC(site, fd) fdatasync(fd)
#define DL_MSYNC(site, addr, len, how) msync(addr, len, how)
#endif

/* ---- cross-file engine functions ------------------------------------------------ */

/* error.c */
DL_HIDDEN void dlmdb_assert_fail(MDB_env *env, const char *msg, const char *file, int line);

/* lock.c */
DL_HIDDEN int dlmdb_lock_open(MDB_env *env, const char *lpath, int mode, int *excl);
DL_HIDDEN void dlmdb_lock_close(MDB_env *env);
DL_HIDDEN int dlmdb_lock_share(MDB_env *env);
DL_HIDDEN int dlmdb_wlock(MDB_env *env);
DL_HIDDEN void dlmdb_wunlock(MDB_env *env);
DL_HIDDEN int dlmdb_reader_acquire(MDB_env *env, dl_reader **slot);
DL_HIDDEN void dlmdb_reader_release(dl_reader *slot);
DL_HIDDEN void dlmdb_reader_park(MDB_env *env, dl_reader *slot);
DL_HIDDEN txnid_t dlmdb_oldest_reader(MDB_env *env, txnid_t dflt);

/* meta.c */
/* failed: the lock file's l_failed (0: none), see dlmdb_meta_failed */
DL_HIDDEN int dlmdb_meta_read_file(int fd, dl_meta *out, unsigned *psize, int prev, txnid_t failed);
/* the failed commit id the meta choice must skip (l_failed), or 0 */
DL_HIDDEN txnid_t dlmdb_meta_failed(const MDB_env *env);
DL_HIDDEN const dl_meta *dlmdb_meta_newest(MDB_env *env, int prev);
/* the same choice without the structural check (the caller does it) */
DL_HIDDEN const dl_meta *dlmdb_meta_pick(MDB_env *env, int prev);
DL_HIDDEN int dlmdb_meta_init_file(MDB_env *env, dl_meta *m);
DL_HIDDEN int dlmdb_meta_write(MDB_txn *txn);
DL_HIDDEN int dlmdb_meta_check(const dl_meta *m, unsigned psize);
/* readers choose the meta by the lock file's txnid (else by the pages' own) */
DL_HIDDEN int dlmdb_meta_published(const MDB_env *env);
/* the meta page a commit of txn id writes (page id & 1), in the map */
DL_HIDDEN const dl_meta *dlmdb_meta_page(MDB_env *env, txnid_t id);

/* env.c */
/* map the data file (e_mapsize bytes); addr: the FIXEDMAP address the map
 * must get (EBUSY if the kernel puts it elsewhere), or NULL for anywhere */
DL_HIDDEN int dlmdb_env_map(MDB_env *env, void *addr);
DL_HIDDEN void dlmdb_env_main_cmp(MDB_env *env, unsigned flags);
DL_HIDDEN int dlmdb_env_finish_open(MDB_env *env, int excl);
/* inmem.c */
DL_HIDDEN int dlmdb_inmem_open(MDB_env *env, unsigned flags, unsigned psize);
DL_HIDDEN int dlmdb_inmem_resize(MDB_env *env, size_t size);
DL_HIDDEN int dlmdb_lock_open_mem(MDB_env *env);
DL_HIDDEN int dlmdb_copy_to_map(MDB_txn *src, char *map, size_t cap, txnid_t *id);
DL_HIDDEN int dlmdb_txn_intr_fail(MDB_txn *txn);
DL_HIDDEN int dlmdb_dbx_default_cmp(MDB_env *env, MDB_dbi dbi, unsigned flags);
DL_HIDDEN MDB_cmp_func *dlmdb_cmp_for(unsigned dbflags);
/* 1 if cmp is the byte order, 2 the native integer order, else 0: two
 * 8-byte keys then compare as the integers dl_key_u64 reads */
DL_HIDDEN int dlmdb_cmp_u64(MDB_cmp_func *cmp);
/* An 8-byte key as the integer it orders as under order (dlmdb_cmp_u64's
 * answer): the byte order reads it big-endian, the native order as stored. */
static inline uint64_t dl_key_u64(const void *p, int order)
{
	uint64_t x;
	memcpy(&x, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (order == 1)
		x = __builtin_bswap64(x);
#else
	(void)order;	/* big-endian host: both orders read it as stored */
#endif
	return x;
}

/* txn.c */
DL_HIDDEN int dlmdb_page_get(MDB_txn *txn, pgno_t pg, dl_page **out);
DL_HIDDEN int dlmdb_txn_usable(MDB_txn *txn, int write);
DL_HIDDEN void dlmdb_txn_cursors_save(MDB_txn *txn, MDB_cursor *except);
/* Whether mc's stack is current (positioned, not saved for a re-seek, not
 * on a deleted item: what dlmdb_search_key trusts) and ends on its tree's
 * last item, every level at its last entry (a run of appends through mc
 * finds it there and needs no descent). */
static inline int dlmdb_cur_on_last(const MDB_cursor *mc)
{
	if ((mc->c_flags & (DL_C_INIT | DL_C_SAVED | DL_C_DEL)) != DL_C_INIT || !mc->c_depth || mc->c_inline)
		return 0;
	for (unsigned l = 0; l <= mc->c_top; l++)
		if (mc->c_ki[l] + 1u != dl_pg_nkeys(mc->c_pg[l]))
			return 0;
	return 1;
}

/* A tree of txn changed: its other cursors (all but except and except's
 * owner) save their position, and t_gen moves on.  Inline: most txns have
 * no open cursor to save. */
static inline void dlmdb_txn_changed(MDB_txn *txn, MDB_cursor *except)
{
	if (txn->t_cursors)
		dlmdb_txn_cursors_save(txn, except);
	txn->t_gen++;
}
DL_HIDDEN int dlmdb_db_refresh(MDB_txn *txn, MDB_dbi dbi);
/* A top-level txn begins or ends: it joins or leaves the count of live
 * txns (mdb_env_set_mapsize refuses to resize under one). */
static inline void dlmdb_txn_enter(MDB_txn *txn)
{
	__atomic_add_fetch(&txn->t_env->e_live_txns, 1, __ATOMIC_SEQ_CST);
}
static inline void dlmdb_txn_leave(MDB_txn *txn)
{
	__atomic_sub_fetch(&txn->t_env->e_live_txns, 1, __ATOMIC_SEQ_CST);
}
/* dbi.c: a txn ends (top-level, or a child that aborts): it leaves the
 * binder counts it joined (that its parent, if any, has not) */
DL_HIDDEN void dlmdb_dbis_release(MDB_txn *txn);
DL_HIDDEN int dlmdb_dbi_ok(MDB_txn *txn, MDB_dbi dbi);

/* freelist.c */
DL_HIDDEN int dlmdb_page_alloc(MDB_txn *txn, unsigned n, dl_page **out);
DL_HIDDEN int dlmdb_page_free(MDB_txn *txn, pgno_t pg, unsigned n);
DL_HIDDEN int dlmdb_page_touch(MDB_txn *txn, dl_page *p, dl_page **out);
DL_HIDDEN int dlmdb_freelist_save(MDB_txn *txn);
DL_HIDDEN int dlmdb_page_is_dirty(MDB_txn *txn, pgno_t pg);

/* page.c */
DL_HIDDEN void dlmdb_pg_init(dl_page *p, pgno_t pg, unsigned flags, unsigned psize);
DL_HIDDEN void dlmdb_pg_del_node(dl_page *p, unsigned i);
DL_HIDDEN dl_node *dlmdb_pg_add_leaf(dl_page *p, unsigned i, const MDB_val *key, size_t dsize,
	unsigned nflags, const void *data, size_t dcopy);
DL_HIDDEN void dlmdb_pg_add_branch(dl_page *p, unsigned i, const MDB_val *key, pgno_t child,
	const void *counts);
/* the count bytes of branch node n (dl_pg_cntbytes of its page long) */
static inline const void *dl_node_counts(const dl_node *n)
{
	return (const char *)n + DL_NODEHDR + n->n_ksize;
}
DL_HIDDEN void dlmdb_pg_add_raw(dl_page *p, unsigned i, const void *node, size_t len);
/* open slot i for a node of nbytes (even) and return the node */
DL_HIDDEN dl_node *dlmdb_pg_make_room(dl_page *p, unsigned i, size_t nbytes);

/* ---- prefix.c ---- */
/** Page-sized work buffer i of txn (made on first use; NULL when out of memory). */
static inline char *dlmdb_txn_scratch(MDB_txn *txn, int i)
{
	if (!txn->t_scratch[i])
		txn->t_scratch[i] = malloc(txn->t_env->e_psize);
	return txn->t_scratch[i];
}
/** One item of a page being built: its whole key and its node's rest. */
typedef struct dl_pfx_item {
	const unsigned char *key;
	unsigned klen;
	unsigned kind;		/* DL_N_* kind bits */
	size_t dsize;		/* the node's data-size field */
	const void *data;	/* the stored bytes after the key (a pgno for BIG) */
	size_t dlen;
	unsigned sh;		/* anchor bytes the key shares: with the source page's
				 * anchor after gather, with the chosen one after best */
	unsigned adj;		/* bytes shared with the previous item (best's work) */
} dl_pfx_item;
/** A candidate anchor; known: every item's sh already holds its share. */
typedef struct dl_pfx_cand {
	const unsigned char *a;
	unsigned len;
	int known;
} dl_pfx_cand;
struct dl_pfxblk {
	struct dl_pfxblk *b_next;
	unsigned char b_data[];
};
/* anchor of the empty PREFIX page p := key (at the top of its node area) */
DL_HIDDEN void dlmdb_pfx_set_anchor(dl_page *p, const void *key, size_t len);
/* leaf node blob (whole key, kind-only flags) encoded against p's anchor into
 * out; returns its new length */
DL_HIDDEN size_t dlmdb_pfx_encode(const dl_page *p, const void *blob, size_t len, void *out);
/* bytes (without slot) leaf node n of page from takes once moved to page to */
DL_HIDDEN size_t dlmdb_pfx_moved_len(const dl_page *from, const dl_node *n, const dl_page *to);
/* add leaf node n of page from at slot i of page to, re-encoded for to */
DL_HIDDEN void dlmdb_pfx_add_from(dl_page *to, unsigned i, const dl_page *from, const dl_node *n);
/* items of nodes [from, to) of leaf p; decoded keys live in the txn arena */
DL_HIDDEN int dlmdb_pfx_gather(MDB_txn *txn, const dl_page *p, unsigned from, unsigned to,
	dl_pfx_item *out);
/* smallest layout of items among no anchor, cands and the middle key: its
 * bytes (nodes, slots, anchor record); *best gets the (trimmed) anchor and
 * every item's sh its share of it */
DL_HIDDEN size_t dlmdb_pfx_best(dl_pfx_item *it, unsigned n, const dl_pfx_cand *cands,
	unsigned ncand, dl_pfx_cand *best);
/* lay items out on p (pgno and flags kept) under anchor, node area ending at
 * end; shares: the items' sh are best's for this anchor (else computed) */
DL_HIDDEN void dlmdb_pfx_build(dl_page *p, unsigned end, const dl_pfx_item *it, unsigned n,
	const dl_pfx_cand *anchor, int shares);
/* a view call's own (stack) cursor c returned v: when v lies in c's decode
 * storage, move it into the txn's (slot 0 key, 1 value); ENOMEM or 0 */
DL_HIDDEN int dlmdb_txn_keep(MDB_txn *txn, MDB_val *v, const MDB_cursor *c, int slot);
DL_HIDDEN unsigned char *dlmdb_pfx_arena(MDB_txn *txn, size_t n);
DL_HIDDEN void dlmdb_listdup_free(dl_xcur *x);
DL_HIDDEN void dlmdb_batch_free(MDB_cursor *mc);
/* n bytes for decoded duplicate values being rebuilt into a sub-page */
DL_HIDDEN unsigned char *dlmdb_pfx_valbuf(MDB_txn *txn, size_t n);
/** Are the duplicates of mc's DB (a DUPSORT main cursor) compressed? */
static inline int dl_dup_prefix(const MDB_cursor *mc)
{
	return (mc->c_db->d_flags & (MDB_PREFIX_COMPRESSION | MDB_DUPFIXED)) == MDB_PREFIX_COMPRESSION;
}
DL_HIDDEN void dlmdb_pfx_arena_reset(MDB_txn *txn);
DL_HIDDEN void dlmdb_pfx_arena_free(MDB_txn *txn);
DL_HIDDEN dl_pfx_item *dlmdb_pfx_items(MDB_txn *txn, unsigned n);
DL_HIDDEN void dlmdb_pg_add_leaf2(dl_page *p, unsigned i, const void *key);
DL_HIDDEN unsigned dlmdb_pg_used(const dl_page *p);
/* np is a fresh copy of committed page p (validated): if p has a node at
 * an odd offset (stock LMDB's layouts) or an odd-sized LEAF2 sub-page, lay
 * np's nodes out again at even offsets (giving such sub-pages a byte of
 * slack), so that every edit of ours meets its own layout */
DL_HIDDEN int dlmdb_pg_relayout(dl_page *np, const dl_page *p, unsigned psize);
/* The trusted-page table (page.c): direct-mapped, entry = page number |
 * epoch << DL_TRUST_PGBITS */
/* 512 KiB, allocated at the first commit: covers a 256 MiB tree of 4 KiB
 * pages (a 1M-entry DB) without most pages evicting each other */
#define DL_TRUST_SLOTS 65536u
#define DL_TRUST_PGBITS 48
#define DL_TRUST_PGMASK ((1ull << DL_TRUST_PGBITS) - 1)
DL_HIDDEN int dlmdb_page_validate_walk(MDB_env *env, const dl_page *p);
/* Structural check of a committed page before a write copies it or edits
 * next to it (page.c).  A page in the trusted table passes at once (the
 * common case in a run of write txns by one handle); any other page gets
 * the full check. */
/* The trust table entry for p, or NULL when p is not a page of the map
 * (a txn's own copy) or there is no table yet; *tag is the entry's value
 * when p is trusted. */
static inline pgno_t *dl_trust_slot(const MDB_env *env, const dl_page *p, pgno_t *tag)
{
	size_t off = (size_t)((const char *)p - env->e_map);
	if (!env->e_trusted || off >= env->e_mapsize)
		return NULL;
	pgno_t pg = off >> __builtin_ctz(env->e_psize);	/* psize: a power of two */
	if (pg > DL_TRUST_PGMASK)
		return NULL;
	*tag = pg | env->e_trust_epoch << DL_TRUST_PGBITS;
	return &env->e_trusted[pg & (DL_TRUST_SLOTS - 1)];
}

/* Forget whatever trust the table has in page pg. */
static inline void dl_trust_forget(MDB_env *env, pgno_t pg)
{
	if (!env->e_trusted)
		return;
	pgno_t *slot = &env->e_trusted[pg & (DL_TRUST_SLOTS - 1)];
	if ((*slot & DL_TRUST_PGMASK) == pg)
		*slot = 0;
}

static inline int dlmdb_page_validate(MDB_env *env, const dl_page *p)
{
	/* the header, whatever the table says: a tree page, and the copy in
	 * dlmdb_page_touch is bounded by p_lower and p_upper */
	if (DL_UNLIKELY(!(p->p_flags & (DL_P_LEAF | DL_P_BRANCH)) ||
	    (p->p_flags & (DL_P_OVERFLOW | DL_P_META)) ||
	    p->p_lower < DL_PAGEHDR || p->p_lower > p->p_upper ||
	    p->p_upper > env->e_psize || (p->p_lower & 1)))
		return MDB_CORRUPTED;
	pgno_t tag = 0, *slot = dl_trust_slot(env, p, &tag);
	if (slot && *slot == tag)
		return 0;
	return dlmdb_page_validate_walk(env, p);
}
/* write txn start on meta cur: keep the trusted pages only if cur is the
 * meta of our own last commit; returns 1 when it is (and kept them) */
DL_HIDDEN int dlmdb_trust_begin(MDB_env *env, const dl_meta *cur);
/* pages list[0..n) were written from images this handle built */
DL_HIDDEN void dlmdb_trust_note(MDB_env *env, dl_page *const *list, size_t n);
/* forget every trusted page (failed write, foreign commit, close) */
DL_HIDDEN void dlmdb_trust_reset(MDB_env *env);

/* search.c */
DL_HIDDEN int dlmdb_search_root(MDB_cursor *mc, const MDB_val *key, int where);
DL_HIDDEN unsigned dlmdb_node_find(MDB_cursor *mc, const dl_page *p, const MDB_val *key, int *exact);
/* dlmdb_search_root(mc, key, DL_SEARCH_KEY) and dlmdb_node_find on the leaf
 * (c_ki[c_top] gets the index), from the cursor's own stack when it is
 * current (cursor reuse, search.c); MDB_NOTFOUND for an empty tree */
DL_HIDDEN int dlmdb_search_key(MDB_cursor *mc, const MDB_val *key, int *exact);
/* key of node i (LEAF2: slot i); a key of a PREFIX page that shares anchor
 * bytes is decoded into buf (DL_MAXKEY bytes) */
DL_HIDDEN void dlmdb_node_keyval(const dl_page *p, unsigned i, MDB_val *key, unsigned char *buf);
DL_HIDDEN int dlmdb_node_value(MDB_txn *txn, const dl_node *n, MDB_val *data);
/* leaf's first key >= lo and last key < hi under mc's order (either NULL),
 * else MDB_CORRUPTED: separators and leaves of a damaged file disagree */
DL_HIDDEN int dlmdb_leaf_in_bounds(const MDB_cursor *mc, const dl_page *leaf, const MDB_val *lo,
	const MDB_val *hi);
/* the same for mc's leaf and the separators of mc's stack */
DL_HIDDEN int dlmdb_leaf_check_path(MDB_cursor *mc);
#define DL_SEARCH_KEY 0
#define DL_SEARCH_FIRST 1
#define DL_SEARCH_LAST 2

/* cursor.c */
DL_HIDDEN void dlmdb_cursor_setup(MDB_cursor *mc, MDB_txn *txn, MDB_dbi dbi);
DL_HIDDEN int dlmdb_cursor_seek(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op);
DL_HIDDEN int dlmdb_seek_keeps_eof(MDB_cursor *mc, const MDB_val *key);
DL_HIDDEN int dlmdb_cursor_revalidate(MDB_cursor *mc);
DL_HIDDEN void dlmdb_cursor_save(MDB_cursor *mc);
DL_HIDDEN int dlmdb_cursor_touch(MDB_cursor *mc);
DL_HIDDEN int dlmdb_cur_fetch(MDB_cursor *mc, MDB_val *key, MDB_val *data);
DL_HIDDEN int dlmdb_cur_first(MDB_cursor *mc, MDB_val *key, MDB_val *data);
DL_HIDDEN int dlmdb_cur_last(MDB_cursor *mc, MDB_val *key, MDB_val *data);
DL_HIDDEN int dlmdb_cur_next(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op);
DL_HIDDEN int dlmdb_cur_prev(MDB_cursor *mc, MDB_val *key, MDB_val *data);
DL_HIDDEN int dlmdb_cur_step_leaf(MDB_cursor *mc, int dir);

/* put.c / split.c */
DL_HIDDEN int dlmdb_tree_put(MDB_cursor *mc, MDB_val *key, MDB_val *data, unsigned flags);
DL_HIDDEN int dlmdb_insert_at(MDB_cursor *mc, unsigned level, unsigned idx, const void *blob,
	size_t len, unsigned putflags, int *split);
DL_HIDDEN int dlmdb_put_dbrec(MDB_txn *txn, const char *name, size_t len, const dl_dbrec *rec);

/* del.c */
DL_HIDDEN int dlmdb_tree_del_current(MDB_cursor *mc, int allow_tree);
/* the same for a cursor that is discarded right after: mc is not re-seeked */
DL_HIDDEN int dlmdb_tree_del_discard(MDB_cursor *mc);
DL_HIDDEN int dlmdb_tree_free_all(MDB_txn *txn, dl_dbrec *db);
DL_HIDDEN void dlmdb_cursors_forget(MDB_txn *txn, MDB_dbi dbi);
DL_HIDDEN int dlmdb_past_cursors(const MDB_cursor *mc);
DL_HIDDEN void dlmdb_retarget_past(MDB_cursor *mc, const MDB_val *from, const MDB_val *to,
	unsigned pastflag);

/* dbi.c */
DL_HIDDEN int dlmdb_dbrecs_flush(MDB_txn *txn);
/* dlmdb_dbi_ok for a handle this txn has not resolved yet */
DL_HIDDEN int dlmdb_dbi_adopt(MDB_txn *txn, MDB_dbi dbi);
/* the record of named DB name in txn's view (MDB_NOTFOUND: none) */
DL_HIDDEN int dlmdb_dbrec_lookup(MDB_txn *txn, const char *name, size_t len, dl_dbrec *rec);
DL_HIDDEN void dlmdb_dbis_finish(MDB_txn *txn, int committed);

/* Fail txn with rc (DL_T_ERROR: only abort remains); the first such code
 * is kept in t_err, the cause a later MDB_BAD_TXN reports (mdb_txn_cause) */
static inline int dl_txn_fail(MDB_txn *txn, int rc)
{
	if (!(txn->t_flags & DL_T_ERROR))
		txn->t_err = rc;
	txn->t_flags |= DL_T_ERROR;
	return rc;
}
#define DL_TXN_FAIL(txn, rc) dl_txn_fail((txn), (rc))

/* ---- guard.c: a write txn is used by one thread at a time ---- */
typedef struct dl_gslot {
	MDB_txn *gs_active;	/* the write txn this thread is inside, or NULL */
	struct dl_gslot *gs_next;	/* free list */
} dl_gslot;

/* What a guarded call restores when it leaves. */
typedef struct {
	dl_gslot *g_slot;	/* NULL: nothing to restore */
	MDB_txn *g_prev;
} dl_gtok;

/* Low bits of t_gowner (slots are pointer-aligned).  Either bit sends
 * every call to the slow path. */
#define DL_G_CONTEND ((uintptr_t)1)	/* a slow path is looking at the txn */
#define DL_G_CONFLICT ((uintptr_t)2)	/* two calls overlapped: the txn cannot commit */
#define DL_G_BITS (DL_G_CONTEND | DL_G_CONFLICT)

extern DL_HIDDEN __thread dl_gslot *dlmdb_gs_mine;
extern DL_HIDDEN int dlmdb_gs_fence;
DL_HIDDEN dl_gslot *dlmdb_gslot_make(void);
DL_HIDDEN int dlmdb_guard_slow(MDB_txn *txn, dl_gtok *g, int end);
/* a new write txn belongs to the calling thread */
DL_HIDDEN void dlmdb_guard_bind(MDB_txn *txn);

/* A call got into txn: the outermost one of this thread bumps t_gcalls.
 * Only the thread inside writes it; the release fence orders the count
 * before the call's own stores, so a thread that copies out of the txn
 * after its call and then sees the count unchanged saw none of them. */
static inline void dl_guard_count(MDB_txn *txn, const dl_gtok *g)
{
	if (g->g_prev != txn) {
		__atomic_store_n(&txn->t_gcalls, txn->t_gcalls + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
	}
}

/* Enter a call on txn (any txn; only write txns are guarded).  0: go on,
 * and dl_guard_leave(g) on the way out.  EBUSY: another thread is inside
 * txn (the txn now fails); MDB_BAD_TXN: it failed so earlier; ENOMEM.
 * With end set (commit, abort) the call waits for the other thread to
 * leave instead and always returns 0. */
static inline int dl_guard_enter(MDB_txn *txn, dl_gtok *g, int end)
{
	g->g_slot = NULL;
	if (!txn || (txn->t_flags & DL_T_RDONLY))
		return 0;
	dl_gslot *s = dlmdb_gs_mine;
	if (DL_UNLIKELY(!s) && !(s = dlmdb_gslot_make()))
		return end ? 0 : ENOMEM;
	g->g_slot = s;
	g->g_prev = s->gs_active;
	__atomic_store_n(&s->gs_active, txn, __ATOMIC_RELAXED);
	/* the store above and the load below are ordered by the slow path's
	 * membarrier; without membarrier t_gowner always carries
	 * DL_G_CONTEND, so every call takes the slow path, which fences */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (DL_LIKELY(__atomic_load_n(&txn->t_gowner, __ATOMIC_RELAXED) == (uintptr_t)s)) {
		dl_guard_count(txn, g);
		return 0;
	}
	int rc = dlmdb_guard_slow(txn, g, end);
	if (!rc && g->g_slot)
		dl_guard_count(txn, g);
	return rc;
}

static inline void dl_guard_leave(dl_gtok *g)
{
	if (g->g_slot)
		__atomic_store_n(&g->g_slot->gs_active, g->g_prev, __ATOMIC_RELEASE);
}

/* The body of a public entry point: call, guarded on txn (guard.c). */
#define DL_GUARDED(txn, end, call) \
	do { \
		dl_gtok g_; \
		int rc_ = dl_guard_enter((txn), &g_, (end)); \
		if (rc_) \
			return rc_; \
		rc_ = (call); \
		dl_guard_leave(&g_); \
		return rc_; \
	} while (0)
/* The same for a call that returns nothing and must always run: it waits
 * for another thread inside txn to leave. */
#define DL_GUARDED_VOID(txn, call) \
	do { \
		dl_gtok g_; \
		(void)dl_guard_enter((txn), &g_, 1); \
		call; \
		dl_guard_leave(&g_); \
	} while (0)

/* internal tree_put flags (above every MDB_* write flag) */
#define DL_PUT_TREE 0x80000000u	/* node carries DL_N_TREE */
#define DL_PUT_DUP 0x40000000u	/* node carries DL_N_DUP; replaces any node kind */
#define DL_PUT_HERE 0x20000000u	/* a search for this key (not found) left mc at its
				 * insertion point, or (with MDB_APPEND) LAST and a
				 * compare left mc just past the last item: no
				 * search again */

/* counted.c: count maintenance (used by put/split/del/dupsort) */
/* add (entries, keys) to the branch nodes on mc's path above the leaf
 * (pages must be dirty); no-op for uncounted trees */
DL_HIDDEN void dlmdb_count_bump(MDB_cursor *mc, int64_t dent, int64_t dkeys);
/* entries and distinct keys under page p (branch: sum of its nodes) */
DL_HIDDEN void dlmdb_count_page(const dl_page *p, int dupsort, uint64_t *ent, uint64_t *keys);
/* set branch node n's counts to the totals of page child */
DL_HIDDEN void dlmdb_count_set_from(const dl_page *parent, dl_node *n, const dl_page *child, int dupsort);

/* dupsort.c */
DL_HIDDEN int dlmdb_dup_setup(MDB_cursor *mc);
DL_HIDDEN int dlmdb_dup_get(MDB_cursor *mc, MDB_val *key, MDB_val *data, MDB_cursor_op op);
/* data = the first (last) value of the key under mc, the sub-cursor aimed at
 * it (a single value: read as dlmdb_cur_fetch reads it) */
DL_HIDDEN int dlmdb_dup_edge(MDB_cursor *mc, MDB_val *data, int last);
DL_HIDDEN int dlmdb_dup_put(MDB_cursor *mc, MDB_val *key, MDB_val *data, unsigned flags);
DL_HIDDEN int dlmdb_dup_del(MDB_cursor *mc, unsigned flags);
DL_HIDDEN int dlmdb_dup_del_pair(MDB_cursor *mc, MDB_val *key, MDB_val *data);
DL_HIDDEN int dlmdb_dup_count(MDB_cursor *mc, mdb_size_t *count);
DL_HIDDEN void dlmdb_dup_bind(MDB_cursor *mc, dl_xcur *x);

#endif /* DLMDB_INTERNAL_H */
