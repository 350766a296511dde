/*
 * lmdb.h - public C interface of the dlmdb-go storage engine.
 *
 * The API is the classic LMDB 0.9 interface in the flavour used by DLMDB and
 * LMDB's master branch (mdb_size_t, MDB_PRIy, MDB_PROBLEM).  Every public
 * function is renamed at compile time to dlmdb_* so that a program may link
 * this engine next to a stock LMDB without symbol clashes; source written
 * against DLMDB's or LMDB's lmdb.h compiles unchanged.
 *
 * Written for dlmdb-go.  The numeric values of constants are those of LMDB
 * (they are part of the on-disk and API contract); the text is our own.
 */
#ifndef DLMDB_LMDB_H
#define DLMDB_LMDB_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <limits.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- basic types ------------------------------------------------------ */

/** Unix permission bits for created files. */
typedef mode_t mdb_mode_t;

/** Size/count type used in statistics and page numbers (size_t on 64-bit). */
typedef size_t mdb_size_t;
#define MDB_SIZE_MAX SIZE_MAX
#define MDB_FMT_Z "z"
/** printf conversion for mdb_size_t: printf("%" MDB_PRIy(u), n). */
#define MDB_PRIy(t) MDB_FMT_Z #t
/** scanf conversion for mdb_size_t. */
#define MDB_SCNy(t) MDB_FMT_Z #t

/** A file descriptor. */
typedef int mdb_filehandle_t;

/* ---- version ------------------------------------------------------------ */

#define MDB_VERSION_MAJOR 0
#define MDB_VERSION_MINOR 9
#define MDB_VERSION_PATCH 33
#define MDB_VERINT(a, b, c) (((a) << 24) | ((b) << 16) | (c))
#define MDB_VERSION_FULL \
	MDB_VERINT(MDB_VERSION_MAJOR, MDB_VERSION_MINOR, MDB_VERSION_PATCH)
#define MDB_VERSION_DATE "May 21, 2024"
#define MDB_VERSTR(a, b, c, d) "DLMDB-GO " #a "." #b "." #c ": (" d ")"
#define MDB_VERFOO(a, b, c, d) MDB_VERSTR(a, b, c, d)
#define MDB_VERSION_STRING \
	MDB_VERFOO(MDB_VERSION_MAJOR, MDB_VERSION_MINOR, MDB_VERSION_PATCH, MDB_VERSION_DATE)

/** File names inside an environment directory. */
#define MDB_DATANAME "/data.mdb"
#define MDB_LOCKNAME "/lock.mdb"
/** Suffix of the lock file when MDB_NOSUBDIR is used. */
#define MDB_LOCKSUFF "-lock"

/* ---- opaque handles ------------------------------------------------------ */

/** An open environment: one data file, one lock file, one memory map. */
typedef struct MDB_env MDB_env;
/** A read-only or read-write transaction. */
typedef struct MDB_txn MDB_txn;
/** Index of a database (key space) inside an environment. */
typedef unsigned int MDB_dbi;
/** A position inside one database of one transaction. */
typedef struct MDB_cursor MDB_cursor;

/** A byte string handed in or out: length and pointer.  Returned values
 * point into the map and stay valid until the next update in the same
 * transaction or the end of the transaction. */
typedef struct MDB_val {
	size_t mv_size;
	void *mv_data;
} MDB_val;

/** Key or data comparison: negative, zero or positive like memcmp. */
typedef int(MDB_cmp_func)(const MDB_val *a, const MDB_val *b);

/** Relocation callback (accepted and stored, never called: FIXEDMAP
 * relocation is not implemented, as in LMDB). */
typedef void(MDB_rel_func)(MDB_val *item, void *oldptr, void *newptr, void *relctx);

/* ---- environment flags ------------------------------------------------- */

#define MDB_FIXEDMAP 0x01	     /* map at the address stored in the file */
#define MDB_NOSUBDIR 0x4000	     /* path names the data file itself */
#define MDB_NOSYNC 0x10000	     /* no fsync at commit */
#define MDB_RDONLY 0x20000	     /* read-only environment / transaction */
#define MDB_NOMETASYNC 0x40000	     /* no fsync after writing the meta page */
#define MDB_WRITEMAP 0x80000	     /* writable map */
#define MDB_MAPASYNC 0x100000	     /* asynchronous flushes with WRITEMAP */
#define MDB_NOTLS 0x200000	     /* reader slots belong to txns, not threads */
#define MDB_NOLOCK 0x400000	     /* caller does all locking */
#define MDB_NORDAHEAD 0x800000	     /* advise the kernel not to read ahead */
#define MDB_NOMEMINIT 0x1000000	     /* don't zero unused parts of new pages */
#define MDB_PREVSNAPSHOT 0x2000000   /* open using the older meta page */
#define MDB_INMEMORY 0x4000000	     /* DLMDB: no files, the map is process memory (path NULL) */

/* ---- database flags (mdb_dbi_open) -------------------------------------- */

#define MDB_REVERSEKEY 0x02	     /* compare keys from their last byte */
#define MDB_DUPSORT 0x04	     /* sorted duplicate values */
#define MDB_INTEGERKEY 0x08	     /* keys are native unsigned int / size_t */
#define MDB_DUPFIXED 0x10	     /* duplicates all have one size */
#define MDB_INTEGERDUP 0x20	     /* duplicates are native integers */
#define MDB_REVERSEDUP 0x40	     /* compare duplicates from their last byte */
#define MDB_COUNTED 0x80	     /* DLMDB: branch nodes count their subtree (rank/count APIs) */
#define MDB_PREFIX_COMPRESSION 0x100  /* DLMDB: leaf keys (and DUPSORT values) stored as shared prefix + suffix */
#define MDB_CREATE 0x40000	     /* create the named database if missing */

/* ---- write flags (mdb_put, mdb_cursor_put, mdb_cursor_del) ------------- */

#define MDB_NOOVERWRITE 0x10	     /* fail with MDB_KEYEXIST if key exists */
#define MDB_NODUPDATA 0x20	     /* DUPSORT: fail if key+data exists */
#define MDB_CURRENT 0x40	     /* replace the item under the cursor */
#define MDB_RESERVE 0x10000	     /* return space for the caller to fill */
#define MDB_APPEND 0x20000	     /* keys arrive in ascending order */
#define MDB_APPENDDUP 0x40000	     /* duplicates arrive in ascending order */
#define MDB_MULTIPLE 0x80000	     /* DUPFIXED: store an array of values */

/* ---- copy flags ----------------------------------------------------------- */

#define MDB_CP_COMPACT 0x01	     /* renumber pages, omit free space */

/* ---- cursor operations ------------------------------------------------- */

typedef enum MDB_cursor_op {
	MDB_FIRST,	   /* first item */
	MDB_FIRST_DUP,	   /* first duplicate of the current key */
	MDB_GET_BOTH,	   /* exact key and data */
	MDB_GET_BOTH_RANGE, /* exact key, first data >= given */
	MDB_GET_CURRENT,   /* item under the cursor */
	MDB_GET_MULTIPLE,  /* DUPFIXED: a page of duplicates */
	MDB_LAST,	   /* last item */
	MDB_LAST_DUP,	   /* last duplicate of the current key */
	MDB_NEXT,	   /* next item */
	MDB_NEXT_DUP,	   /* next duplicate of the current key */
	MDB_NEXT_MULTIPLE, /* DUPFIXED: next page of duplicates */
	MDB_NEXT_NODUP,	   /* first item of the next key */
	MDB_PREV,	   /* previous item */
	MDB_PREV_DUP,	   /* previous duplicate of the current key */
	MDB_PREV_NODUP,	   /* last item of the previous key */
	MDB_SET,	   /* exact key, data returned */
	MDB_SET_KEY,	   /* exact key, key and data returned */
	MDB_SET_RANGE,	   /* first key >= given */
	MDB_PREV_MULTIPLE  /* DUPFIXED: previous page of duplicates */
} MDB_cursor_op;

/* ---- return codes ---------------------------------------------------------- */

#define MDB_SUCCESS 0
#define MDB_KEYEXIST (-30799)	     /* key (or key+data) already present */
#define MDB_NOTFOUND (-30798)	     /* no such key, or end of data */
#define MDB_PAGE_NOTFOUND (-30797)   /* page number out of range */
#define MDB_CORRUPTED (-30796)	     /* page of an unexpected kind */
#define MDB_PANIC (-30795)	     /* fatal environment error */
#define MDB_VERSION_MISMATCH (-30794) /* file or lock format version differs */
#define MDB_INVALID (-30793)	     /* not a database file */
#define MDB_MAP_FULL (-30792)	     /* map size exhausted */
#define MDB_DBS_FULL (-30791)	     /* maxdbs reached */
#define MDB_READERS_FULL (-30790)    /* reader table full */
#define MDB_TLS_FULL (-30789)	     /* thread-local keys exhausted */
#define MDB_TXN_FULL (-30788)	     /* too many dirty pages */
#define MDB_CURSOR_FULL (-30787)     /* tree too deep */
#define MDB_PAGE_FULL (-30786)	     /* internal: no room in page */
#define MDB_MAP_RESIZED (-30785)     /* another process grew the map */
#define MDB_INCOMPATIBLE (-30784)    /* operation/flags don't fit the DB */
#define MDB_BAD_RSLOT (-30783)	     /* reader slot misuse */
#define MDB_BAD_TXN (-30782)	     /* transaction failed, ended or has a child */
#define MDB_BAD_VALSIZE (-30781)     /* key or value size not allowed */
#define MDB_BAD_DBI (-30780)	     /* database handle changed or invalid */
#define MDB_PROBLEM (-30779)	     /* unexpected internal problem */
#define MDB_LAST_ERRCODE MDB_PROBLEM

/* ---- statistics ------------------------------------------------------------ */

/** Shape of one B+tree. */
typedef struct MDB_stat {
	unsigned int ms_psize;	       /* page size in bytes */
	unsigned int ms_depth;	       /* levels in the tree, 0 if empty */
	mdb_size_t ms_branch_pages;    /* interior pages */
	mdb_size_t ms_leaf_pages;      /* leaf pages */
	mdb_size_t ms_overflow_pages;  /* pages holding large values */
	mdb_size_t ms_entries;	       /* key/data items */
} MDB_stat;

/** Environment-wide information. */
typedef struct MDB_envinfo {
	void *me_mapaddr;	       /* map address when FIXEDMAP */
	mdb_size_t me_mapsize;	       /* size of the map in bytes */
	mdb_size_t me_last_pgno;       /* highest page number in use */
	mdb_size_t me_last_txnid;      /* id of the last committed write */
	unsigned int me_maxreaders;    /* reader table capacity */
	unsigned int me_numreaders;    /* reader slots ever used */
} MDB_envinfo;

/** Assertion hook called before an internal invariant failure aborts. */
typedef void MDB_assert_func(MDB_env *env, const char *msg);

/** Output callback of mdb_reader_list; a negative return stops the listing. */
typedef int(MDB_msg_func)(const char *msg, void *ctx);

/* ---- link names ------------------------------------------------------------ */

#define mdb_version dlmdb_version
#define mdb_strerror dlmdb_strerror
#define mdb_env_create dlmdb_env_create
#define mdb_env_open dlmdb_env_open
#define mdb_env_copy dlmdb_env_copy
#define mdb_env_copyfd dlmdb_env_copyfd
#define mdb_env_copy2 dlmdb_env_copy2
#define mdb_env_copyfd2 dlmdb_env_copyfd2
#define mdb_env_stat dlmdb_env_stat
#define mdb_env_info dlmdb_env_info
#define mdb_env_sync dlmdb_env_sync
#define mdb_env_close dlmdb_env_close
#define mdb_env_set_flags dlmdb_env_set_flags
#define mdb_env_get_flags dlmdb_env_get_flags
#define mdb_env_get_path dlmdb_env_get_path
#define mdb_env_get_fd dlmdb_env_get_fd
#define mdb_env_set_mapsize dlmdb_env_set_mapsize
#define mdb_env_set_maxreaders dlmdb_env_set_maxreaders
#define mdb_env_get_maxreaders dlmdb_env_get_maxreaders
#define mdb_env_set_maxdbs dlmdb_env_set_maxdbs
#define mdb_env_get_maxkeysize dlmdb_env_get_maxkeysize
#define mdb_env_set_userctx dlmdb_env_set_userctx
#define mdb_env_get_userctx dlmdb_env_get_userctx
#define mdb_env_set_assert dlmdb_env_set_assert
#define mdb_txn_begin dlmdb_txn_begin
#define mdb_txn_env dlmdb_txn_env
#define mdb_txn_id dlmdb_txn_id
#define mdb_txn_commit dlmdb_txn_commit
#define mdb_txn_abort dlmdb_txn_abort
#define mdb_txn_reset dlmdb_txn_reset
#define mdb_txn_renew dlmdb_txn_renew
#define mdb_txn_check dlmdb_txn_check
#define mdb_dbi_open dlmdb_dbi_open
#define mdb_stat dlmdb_stat
#define mdb_dbi_flags dlmdb_dbi_flags
#define mdb_dbi_close dlmdb_dbi_close
#define mdb_drop dlmdb_drop
#define mdb_set_compare dlmdb_set_compare
#define mdb_set_dupsort dlmdb_set_dupsort
#define mdb_set_relfunc dlmdb_set_relfunc
#define mdb_set_relctx dlmdb_set_relctx
#define mdb_get dlmdb_get
#define mdb_put dlmdb_put
#define mdb_del dlmdb_del
#define mdb_cursor_open dlmdb_cursor_open
#define mdb_cursor_close dlmdb_cursor_close
#define mdb_cursor_renew dlmdb_cursor_renew
#define mdb_cursor_txn dlmdb_cursor_txn
#define mdb_cursor_dbi dlmdb_cursor_dbi
#define mdb_cursor_get dlmdb_cursor_get
#define mdb_cursor_put dlmdb_cursor_put
#define mdb_cursor_del dlmdb_cursor_del
#define mdb_cursor_count dlmdb_cursor_count
#define mdb_cmp dlmdb_cmp
#define mdb_count_all dlmdb_count_all
#define mdb_count_range dlmdb_count_range
#define mdb_range_count_keys dlmdb_range_count_keys
#define mdb_range_count_values dlmdb_range_count_values
#define mdb_get_rank dlmdb_get_rank
#define mdb_cursor_get_rank dlmdb_cursor_get_rank
#define mdb_get_key_rank dlmdb_get_key_rank
#define mdb_cursor_key_rank dlmdb_cursor_key_rank
#define mdb_dcmp dlmdb_dcmp
#define mdb_reader_list dlmdb_reader_list
#define mdb_reader_check dlmdb_reader_check
#define mdb_dbi_replace dlmdb_dbi_replace
#define mdb_cursor_list_dup dlmdb_cursor_list_dup
#define mdb_cursor_list_dup_fixed dlmdb_cursor_list_dup_fixed
#define mdb_cursor_get_batch dlmdb_cursor_get_batch
#define mdb_cursor_get_many dlmdb_cursor_get_many
#define mdb_footprint dlmdb_footprint
#define mdb_env_set_interrupt dlmdb_env_set_interrupt
#define mdb_txn_set_interrupt dlmdb_txn_set_interrupt
#define mdb_txn_copyfd dlmdb_txn_copyfd
#define mdb_env_load dlmdb_env_load
#define mdb_txn_cause dlmdb_txn_cause
#define mdb_txn_calls dlmdb_txn_calls
#define mdb_txn_fail_busy dlmdb_txn_fail_busy

/* ---- library ----------------------------------------------------------------- */

/** Version string; the numbers are stored through non-NULL pointers. */
char *mdb_version(int *major, int *minor, int *patch);
/** Message for an MDB_* code, or strerror() text for an errno value. */
char *mdb_strerror(int err);

/* ---- environment --------------------------------------------------------------- */

/** Allocate an unopened environment handle (1 MiB map, 126 readers, no named DBs). */
int mdb_env_create(MDB_env **env);
/** Open or create the environment at path (a directory unless MDB_NOSUBDIR).
 * On failure the handle must still be released with mdb_env_close. */
int mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mdb_mode_t mode);
/** Write a consistent copy into the (empty, existing) directory path. */
int mdb_env_copy(MDB_env *env, const char *path);
/** Write a consistent copy of the data file to fd. */
int mdb_env_copyfd(MDB_env *env, mdb_filehandle_t fd);
/** Like mdb_env_copy; MDB_CP_COMPACT renumbers pages and drops free space. */
int mdb_env_copy2(MDB_env *env, const char *path, unsigned int flags);
/** Like mdb_env_copyfd with copy flags. */
int mdb_env_copyfd2(MDB_env *env, mdb_filehandle_t fd, unsigned int flags);
/** Statistics of the main (unnamed) database. */
int mdb_env_stat(MDB_env *env, MDB_stat *stat);
/** Map size, last page, last transaction and reader counts. */
int mdb_env_info(MDB_env *env, MDB_envinfo *stat);
/** Flush buffers to disk; force also syncs under MDB_NOSYNC/MDB_MAPASYNC. */
int mdb_env_sync(MDB_env *env, int force);
/** Close the environment and free the handle. Open txns/cursors must be gone. */
void mdb_env_close(MDB_env *env);
/** Switch NOSYNC, NOMETASYNC, MAPASYNC or NOMEMINIT on or off. */
int mdb_env_set_flags(MDB_env *env, unsigned int flags, int onoff);
/** Current environment flags. */
int mdb_env_get_flags(MDB_env *env, unsigned int *flags);
/** The path given to mdb_env_open (owned by the handle). */
int mdb_env_get_path(MDB_env *env, const char **path);
/** File descriptor of the data file. */
int mdb_env_get_fd(MDB_env *env, mdb_filehandle_t *fd);
/** Set the map size; on an open env only while this process has no txn. */
int mdb_env_set_mapsize(MDB_env *env, mdb_size_t size);
/** Size of the reader table; before open only. */
int mdb_env_set_maxreaders(MDB_env *env, unsigned int readers);
/** Size of the reader table. */
int mdb_env_get_maxreaders(MDB_env *env, unsigned int *readers);
/** Number of named databases allowed; before open only. */
int mdb_env_set_maxdbs(MDB_env *env, MDB_dbi dbs);
/** Largest key size accepted (511). */
int mdb_env_get_maxkeysize(MDB_env *env);
/** Store an application pointer in the handle. */
int mdb_env_set_userctx(MDB_env *env, void *ctx);
/** The pointer stored by mdb_env_set_userctx. */
void *mdb_env_get_userctx(MDB_env *env);
/** Install a hook for internal assertion failures. */
int mdb_env_set_assert(MDB_env *env, MDB_assert_func *func);

/* ---- transactions ----------------------------------------------------------------- */

/** Start a transaction; parent non-NULL starts a nested write transaction;
 * MDB_RDONLY starts a snapshot reader. */
int mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn);
/** Environment of a transaction. */
MDB_env *mdb_txn_env(MDB_txn *txn);
/** Transaction id: the snapshot id of a reader, the new id of a writer. */
mdb_size_t mdb_txn_id(MDB_txn *txn);
/** Commit and free the transaction (freed even on error). */
int mdb_txn_commit(MDB_txn *txn);
/** Abandon and free the transaction. */
void mdb_txn_abort(MDB_txn *txn);
/** Release a read transaction's snapshot, keeping the handle for renew. */
void mdb_txn_reset(MDB_txn *txn);
/** Take a fresh snapshot with a reset read transaction. */
int mdb_txn_renew(MDB_txn *txn);
/** Verify every page reachable in txn's snapshot.  MDB_SUCCESS, or
 * MDB_CORRUPTED with a reason written to msg (NUL-terminated, msglen bytes). */
int mdb_txn_check(MDB_txn *txn, char *msg, size_t msglen);

#define mdb_open(txn, name, flags, dbi) mdb_dbi_open(txn, name, flags, dbi)
#define mdb_close(env, dbi) mdb_dbi_close(env, dbi)

/* ---- databases ---------------------------------------------------------------------- */

/** Open the main database (name NULL) or a named one. */
int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
/** Statistics of one database as seen by txn. */
int mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat);
/** Flags of a database handle. */
int mdb_dbi_flags(MDB_txn *txn, MDB_dbi dbi, unsigned int *flags);
/** Release a database handle (rarely needed). */
void mdb_dbi_close(MDB_env *env, MDB_dbi dbi);
/** Empty the database (del == 0) or delete it and close the handle (del == 1). */
int mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del);
/** Custom key order; must be set identically every time the DB is used. */
int mdb_set_compare(MDB_txn *txn, MDB_dbi dbi, MDB_cmp_func *cmp);
/** Custom duplicate order (DUPSORT). */
int mdb_set_dupsort(MDB_txn *txn, MDB_dbi dbi, MDB_cmp_func *cmp);
/** Store a relocation function (unused). */
int mdb_set_relfunc(MDB_txn *txn, MDB_dbi dbi, MDB_rel_func *rel);
/** Store a relocation context (unused). */
int mdb_set_relctx(MDB_txn *txn, MDB_dbi dbi, void *ctx);

/* ---- items ------------------------------------------------------------------------------- */

/** Look up key; data points into the map on success. */
int mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
/** Store key/data under the write flags above. */
int mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags);
/** Delete key (data is only consulted for DUPSORT databases). */
int mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);

/* ---- cursors ------------------------------------------------------------------------------ */

/** Open a cursor on dbi inside txn. */
int mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
/** Free a cursor. */
void mdb_cursor_close(MDB_cursor *cursor);
/** Attach a read-only cursor to another read transaction. */
int mdb_cursor_renew(MDB_txn *txn, MDB_cursor *cursor);
/** Transaction of a cursor. */
MDB_txn *mdb_cursor_txn(MDB_cursor *cursor);
/** Database of a cursor. */
MDB_dbi mdb_cursor_dbi(MDB_cursor *cursor);
/** Move the cursor and/or fetch the item under it. */
int mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op);
/** Store an item through the cursor, leaving it positioned on the item. */
int mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags);
/** Delete the item under the cursor. */
int mdb_cursor_del(MDB_cursor *cursor, unsigned int flags);
/** Number of duplicates of the current key (DUPSORT only). */
int mdb_cursor_count(MDB_cursor *cursor, mdb_size_t *countp);

/** Compare two keys with the database's key order. */
int mdb_cmp(MDB_txn *txn, MDB_dbi dbi, const MDB_val *a, const MDB_val *b);
/** Compare two data items with the database's duplicate order. */
int mdb_dcmp(MDB_txn *txn, MDB_dbi dbi, const MDB_val *a, const MDB_val *b);

/* ---- order statistics (DLMDB; databases opened with MDB_COUNTED) ----------------------
 *
 * Every function below answers in O(log n) page visits from the counts kept
 * in the branch nodes of a counted tree.  Entries are key/value pairs in the
 * database's sort order, duplicates included; ranks are zero-based.  On a
 * database without MDB_COUNTED they return MDB_INCOMPATIBLE.  A NULL bound
 * is open (unbounded); a bound is exclusive unless its flag is given. */

#define MDB_COUNT_LOWER_INCL 0x02    /* the lower bound itself is in the range */
#define MDB_COUNT_UPPER_INCL 0x04    /* the upper bound itself is in the range */
#define MDB_RANGE_INCLUDE_LOWER MDB_COUNT_LOWER_INCL /* DLMDB's README spelling */
#define MDB_RANGE_INCLUDE_UPPER MDB_COUNT_UPPER_INCL

/** Number of entries in the database (flags must be 0). */
int mdb_count_all(MDB_txn *txn, MDB_dbi dbi, unsigned flags, uint64_t *out);
/** Number of entries whose key lies between low and high. */
int mdb_count_range(MDB_txn *txn, MDB_dbi dbi, const MDB_val *low, const MDB_val *high,
	unsigned flags, uint64_t *out);
/** Number of distinct keys between key_low and key_high. */
int mdb_range_count_keys(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key_low,
	const MDB_val *key_high, unsigned flags, uint64_t *out);
/** Number of values (duplicates included) whose key lies between the bounds;
 *  the same number as mdb_count_range, named for DUPSORT callers. */
int mdb_range_count_values(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key_low,
	const MDB_val *key_high, unsigned key_flags, uint64_t *out);
/** Entry at a rank; MDB_NOTFOUND when rank >= the number of entries. */
int mdb_get_rank(MDB_txn *txn, MDB_dbi dbi, uint64_t rank, MDB_val *key, MDB_val *data);
/** Position the cursor on the entry at a rank (flags must be 0).  Successive
 *  calls continue from the cursor's position, so ascending ranks are cheap.
 *  On MDB_NOTFOUND the cursor keeps its position. */
int mdb_cursor_get_rank(MDB_cursor *cursor, uint64_t rank, MDB_val *key, MDB_val *data,
	unsigned flags);
/** Rank of key; MDB_NOTFOUND when absent.  data NULL: the key's (first) entry.
 *  data non-NULL, even of size 0 (the empty value): on a DUPSORT database the
 *  pair key/data, on any other the key only if its value equals data byte for
 *  byte, else MDB_NOTFOUND. */
int mdb_get_key_rank(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key, const MDB_val *data,
	uint64_t *rank);
/** mdb_get_key_rank through a cursor's txn and database; the cursor does not move
 *  (flags must be 0). */
int mdb_cursor_key_rank(MDB_cursor *cursor, const MDB_val *key, const MDB_val *data,
	unsigned flags, uint64_t *rank);

/* ---- bulk duplicate reads (DLMDB) --------------------------------------------------- */

/** Every duplicate of the key under cursor (a DUPSORT DB), in order.
 *
 *  *vals gets a read-only array of *count values owned by the cursor:
 *  valid until the cursor's next mdb_cursor_list_dup, its close or renew,
 *  the end of its txn, or (write txns) the next write in the txn.  Values
 *  the map holds whole point into it; values of prefix-compressed pages are
 *  decoded into the cursor's storage.  A key with a single value gives one
 *  element.  The cursor and its duplicate position do not move.
 *  Errors: MDB_INCOMPATIBLE for a DB without MDB_DUPSORT; EINVAL for an
 *  unpositioned cursor; MDB_NOTFOUND for a cursor past the last item;
 *  MDB_CORRUPTED when a page of the walk is damaged. */
int mdb_cursor_list_dup(MDB_cursor *cursor, const MDB_val **vals, mdb_size_t *count);

/** mdb_cursor_list_dup for values of one width (DLMDB-go): the duplicates
 *  as *nruns runs, each a read-only MDB_val of back-to-back values
 *  (mv_size a multiple of *width): a LEAF2 page's values (MDB_DUPFIXED) are
 *  one run, in the map, with no descriptor per value; other values one run
 *  each unless they touch.  *count gets the number of values.  The array is
 *  the one mdb_cursor_list_dup fills (valid as its results; either call
 *  overwrites it).  Errors as mdb_cursor_list_dup's, and MDB_INCOMPATIBLE
 *  when the values differ in size. */
int mdb_cursor_list_dup_fixed(MDB_cursor *cursor, const MDB_val **runs, mdb_size_t *nruns,
	size_t *width, mdb_size_t *count);

/* ---- batched cursor reads (DLMDB-go) ------------------------------------------------- */

#define MDB_BATCH_BACKWARD 0x01	/* step with MDB_PREV (implied by MDB_LAST and MDB_PREV) */
#define MDB_BATCH_END_INCL 0x02	/* the end bound is part of the batch */

/** Up to max items read through cursor in one call: the first with op
 *  (MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_PREV, MDB_GET_CURRENT, or
 *  MDB_SET_RANGE / MDB_SET_KEY with *key), the rest by MDB_NEXT (MDB_PREV
 *  going backward, see MDB_BATCH_BACKWARD), every duplicate counted; when
 *  end is given the batch stops before the first key past it (above it
 *  forward, below it backward; MDB_BATCH_END_INCL keeps a key equal to it).
 *
 *  *keys and *vals get arrays of *count items owned by the cursor, valid
 *  until its next batch, its close, the end of its txn, or (write txns) the
 *  next write.  Items the map holds whole point into it; keys and values
 *  decoded from prefix-compressed pages are copied into the cursor's
 *  storage.  *count < max means the data or the bound ended the batch; a
 *  batch that would hold nothing returns MDB_NOTFOUND.  Afterwards the
 *  cursor stands on the last item returned, or, when the bound ended the
 *  batch, on the first item past it.  The bound may be an item of the
 *  cursor's last batch.  Errors as mdb_cursor_get. */
int mdb_cursor_get_batch(MDB_cursor *cursor, MDB_cursor_op op, MDB_val *key, mdb_size_t max,
	const MDB_val *end, unsigned flags, const MDB_val **keys, const MDB_val **vals,
	mdb_size_t *count);

/** The values of n keys read through cursor (each as MDB_SET: a DUPSORT
 *  DB's first value) in one call: *vals gets an array of n values owned by
 *  the cursor, valid as a batch's (mdb_cursor_get_batch); an absent key's
 *  value is {0, NULL} (a present empty value points into the map).  *found
 *  counts the keys present.  The cursor ends on the last key found.  The
 *  keys may be items of the cursor's last batch.  Errors
 *  as mdb_cursor_get (a key of 0 or more than the maximum key size:
 *  MDB_BAD_VALSIZE). */
int mdb_cursor_get_many(MDB_cursor *cursor, const MDB_val *keys, mdb_size_t n, const MDB_val **vals,
	mdb_size_t *found);

/* ---- migration and footprint (DLMDB-go) ----------------------------------------------- */

/** Make named DB dst hold the tree of named DB src, atomically (write txn).
 *
 *  dst's record becomes src's: root, depth, page counts, entries and flags
 *  (so MDB_COUNTED and MDB_PREFIX_COMPRESSION may change).  dst's old
 *  pages are freed as mdb_drop frees them (readers of older snapshots keep
 *  seeing the old dst); src's name is deleted from the main DB and its
 *  handle closed for this txn, as mdb_drop(txn, src, 1) would, except that
 *  its pages, now dst's, stay.  The dst handle keeps its comparators.  A
 *  nested txn's abort restores both DBs (src's handle is then closed, as
 *  after an aborted mdb_drop: open it by name again to use it later).
 *
 *  Errors: EINVAL for a core DB (free or main) or dst == src; EACCES in a
 *  read txn; MDB_INCOMPATIBLE when the records differ in any flag other
 *  than MDB_COUNTED and MDB_PREFIX_COMPRESSION (key and duplicate order
 *  must be the same); EBUSY when a cursor of this txn (or of an enclosing
 *  txn) is open on dst or src: close them first. */
int mdb_dbi_replace(MDB_txn *txn, MDB_dbi dst, MDB_dbi src);

/** Stored against decoded bytes of one DB, filled by mdb_footprint.
 *  Zero the struct (memset) to start a walk; each call continues it. */
typedef struct MDB_footprint {
	mdb_size_t fp_branch_pages;	/* branch pages of the DB's tree */
	mdb_size_t fp_leaf_pages;	/* leaf pages of the DB's tree (progress: done) */
	mdb_size_t fp_leaf_total;	/* the DB record's leaf page count (progress: total) */
	mdb_size_t fp_overflow_pages;	/* pages of big values */
	mdb_size_t fp_dup_branch_pages;	/* branch pages of duplicate sub-trees (DUPSORT) */
	mdb_size_t fp_dup_leaf_pages;	/* leaf pages of duplicate sub-trees */
	mdb_size_t fp_subpages;		/* inline duplicate sub-pages */
	mdb_size_t fp_prefix_pages;	/* leaves and sub-pages stored prefix-compressed */
	mdb_size_t fp_keys;		/* distinct keys */
	mdb_size_t fp_entries;		/* key/value pairs, every duplicate counted */
	mdb_size_t fp_key_stored;	/* key bytes as stored (suffixes on compressed pages) */
	mdb_size_t fp_key_decoded;	/* key bytes as returned by reads */
	mdb_size_t fp_val_stored;	/* value bytes as stored (duplicates included) */
	mdb_size_t fp_val_decoded;	/* value bytes as returned by reads */
	mdb_size_t fp_anchor_bytes;	/* bytes the anchor records of compressed pages take */
	int fp_done;			/* set when the walk is complete */
	/* the walk's position: private */
	unsigned fp_state, fp_depth, fp_fresh;
	mdb_size_t fp_txnid, fp_gen, fp_root;
	unsigned short fp_ki[32];
} MDB_footprint;

/** Walk up to max_leaves more leaf pages of dbi's tree (with the duplicates
 *  and big values hanging off them) and add what they hold to *fp; sets
 *  fp_done at the end of the tree.  Key sizes are those of leaf keys (not
 *  branch separators); on a prefix-compressed page a key's stored size is
 *  its suffix and its decoded size shared prefix plus suffix, elsewhere the
 *  two are equal.  Every call of one walk must use the same txn, and the
 *  DB must not change in between (else EINVAL).  MDB_CORRUPTED on a page
 *  the walk cannot follow safely. */
int mdb_footprint(MDB_txn *txn, MDB_dbi dbi, MDB_footprint *fp, mdb_size_t max_leaves);

/* ---- in-memory environments and interruption ------------------------------------------------- */

/*
 * MDB_INMEMORY (DLMDB): mdb_env_open(env, NULL, MDB_INMEMORY | flags, mode)
 * opens an environment that lives in this process's memory only: no data
 * file, no lock file, nothing on disk.  The map size bounds the memory
 * (pages are taken from the system as they are first written and given
 * back by mdb_env_close); it may be grown with mdb_env_set_mapsize as for
 * a file.  Readers on many threads and one writer at a time, every DB flag
 * and extension, nested txns, copies (mdb_env_copy* write an ordinary data
 * file, so an in-memory env can be persisted) work as in a file env.
 * There is nothing to sync: commits are durable only until close, and
 * mdb_env_sync succeeds at once.  Not combinable with MDB_RDONLY,
 * MDB_FIXEDMAP or MDB_PREVSNAPSHOT (EINVAL); MDB_NOSUBDIR is ignored.
 * mdb_env_get_path gives NULL, mdb_env_get_fd -1.
 */

/** Open env (created, not yet opened) as an MDB_INMEMORY environment that
 *  holds a compacted copy of the snapshot of src, a live read txn of any
 *  environment (a file loaded into memory, or a clone of another in-memory
 *  env).  flags as for mdb_env_open (MDB_INMEMORY implied).  The map size
 *  is the larger of env's setting and src's environment's.  DLMDB-go
 *  extension. */
int mdb_env_load(MDB_env *env, MDB_txn *src, unsigned int flags, mdb_mode_t mode);

/** Write a copy of the snapshot of txn (a live read txn) to fd, as
 *  mdb_env_copyfd2 writes that of a new one (flags: MDB_CP_COMPACT); the
 *  copy follows txn's interrupt (mdb_txn_set_interrupt).  DLMDB-go
 *  extension. */
int mdb_txn_copyfd(MDB_txn *txn, mdb_filehandle_t fd, unsigned int flags);

/** Interrupt every txn of env (on != 0) or stop doing so (on == 0).
 *  While set, every operation of every txn of this handle that visits a
 *  page (a search step, a move to another leaf, a page of a copy) returns
 *  EINTR there and marks its txn failed: read txns must then be reset or
 *  aborted, write txns aborted (their changes are lost; nothing committed
 *  is).  A commit interrupted before it writes fails the same way; once
 *  its pages are being written it is not interrupted.  Async-signal-safe
 *  (one atomic store): may be called from a signal handler or any thread.
 *  Clear it before beginning new work.  DLMDB. */
int mdb_env_set_interrupt(MDB_env *env, int on);

/** The same for one txn family: txn (a top-level txn, read or write, or a
 *  nested one, which then stands for its whole family) and its nested
 *  txns, leaving every other txn running.  May be called from any thread,
 *  or a signal handler, as long as txn has not been ended (committed or
 *  aborted; a reset read txn may be flagged, a renew clears the flag).
 *  DLMDB-go extension. */
int mdb_txn_set_interrupt(MDB_txn *txn, int on);

/** The error that failed txn: the code the operation that left txn unable
 *  to commit (every later operation, and the commit, answer MDB_BAD_TXN)
 *  returned then, e.g. MDB_MAP_FULL, MDB_CORRUPTED or EINTR; 0 when txn has
 *  not failed.  Ask before mdb_txn_commit or mdb_txn_abort, which free the
 *  txn.  DLMDB-go extension. */
int mdb_txn_cause(MDB_txn *txn);

/** How many calls have got into write txn txn so far (read txns: 0).  A
 *  binding that copies a result out of the txn after the call returned
 *  reads this before the call and again after the copy: a count that grew
 *  by more than its own call means another thread was inside meanwhile,
 *  and the copy may be torn.  It then calls mdb_txn_fail_busy.  The count
 *  is an unsigned int at offset 0 of the txn, so a binding may also load
 *  it there (atomically) without a call.  DLMDB-go extension. */
unsigned mdb_txn_calls(MDB_txn *txn);

/** Mark write txn txn as used by two threads at once, from any thread,
 *  even while another is inside it: every later call answers MDB_BAD_TXN
 *  and mdb_txn_commit fails, cause EBUSY (as when the engine itself sees
 *  two calls overlap).  No-op on read txns.  DLMDB-go extension. */
int mdb_txn_fail_busy(MDB_txn *txn);

/* ---- reader table ------------------------------------------------------------------------- */

/** Print the reader table through func, one line per call. */
int mdb_reader_list(MDB_env *env, MDB_msg_func *func, void *ctx);
/** Clear slots of dead processes; *dead (if non-NULL) gets the number cleared. */
int mdb_reader_check(MDB_env *env, int *dead);

#ifdef __cplusplus
}
#endif
#endif /* DLMDB_LMDB_H */
