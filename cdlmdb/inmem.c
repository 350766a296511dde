/*
 * inmem.c - MDB_INMEMORY environments: the map is anonymous memory.
 *
 * Everything above the I/O layer is the file env's code.  What differs:
 *  - the map is a private anonymous mapping of the map size, reserved but
 *    not committed (MAP_NORESERVE): a page costs memory from its first
 *    write on, and mdb_env_close gives all of it back; it is advised for
 *    transparent huge pages (fewer faults and TLB misses);
 *  - the top write txn builds its pages in the map as a WRITEMAP txn
 *    does (freelist.c, dl_builds_in_map); nested txns use heap copies,
 *    which the top txn's commit copies into the map with memcpy where a
 *    file env writes them with pwrite (txn.c, write_pages); the meta is
 *    stored through the map as in a WRITEMAP env (meta.c); nothing is
 *    synced;
 *  - the lock header and the reader table are anonymous memory as well
 *    (lock.c, dlmdb_lock_open_mem), so readers on many threads and one
 *    writer at a time work as in a file env, without a lock file;
 *  - every page number below the map is backed, so page reads skip the
 *    file-size check (e_fpages is set to its maximum);
 *  - growing the map (mdb_env_set_mapsize) moves the contents along with
 *    mremap instead of mapping the file again.
 * Copies (copy.c) read the map as for a file env, so mdb_env_copy* persist
 * an in-memory env; mdb_env_load fills a new one from any read txn.
 */
#include "internal.h"

static size_t round_to(size_t x, size_t to)
{
	return (x + to - 1) / to * to;
}

/* Ask for transparent huge pages: the map is only ever used from its low
 * end up, so 2 MiB pages cost little memory and save most page faults on
 * commit and most TLB misses on reads.  Advice only: where THP is off or
 * unsupported the map keeps small pages. */
static void inmem_advise(void *m, size_t size)
{
#ifdef MADV_HUGEPAGE
	(void)madvise(m, size, MADV_HUGEPAGE);
#else
	(void)m, (void)size;
#endif
}

static int inmem_map(MDB_env *env)
{
	void *m = mmap(NULL, env->e_mapsize, PROT_READ | PROT_WRITE,
		MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return errno;
	env->e_map = m;
	env->e_maxpg = env->e_mapsize / env->e_psize;
	inmem_advise(m, env->e_mapsize);
	return 0;
}

int dlmdb_inmem_open(MDB_env *env, unsigned flags, unsigned psize)
{
	if (flags & (MDB_RDONLY | MDB_FIXEDMAP | MDB_PREVSNAPSHOT))
		return EINVAL;
	env->e_flags = (flags | MDB_INMEMORY) & ~MDB_NOSUBDIR;
	if (!psize) {
		long sp = sysconf(_SC_PAGESIZE);
		psize = (sp >= 4096 && sp <= 65536) ? (unsigned)sp : 4096u;
	}
	env->e_psize = psize;
	size_t size = env->e_mapsize ? env->e_mapsize : DL_DEFAULT_MAPSIZE;
	/* the metas and at least a root and a free DB page */
	if (size < (size_t)(DL_NMETAS + 2) * psize)
		size = (size_t)(DL_NMETAS + 2) * psize;
	env->e_mapsize = round_to(size, psize);
	int rc = inmem_map(env);
	if (rc)
		return rc;
	__atomic_store_n(&env->e_fpages, ~(size_t)0, __ATOMIC_RELAXED);
	if (flags & MDB_NOLOCK)
		env->e_lck = &env->e_nolock;
	else if ((rc = dlmdb_lock_open_mem(env)))
		return rc;
	dl_meta meta;
	memset(&meta, 0, sizeof meta);
	meta.m_magic = DL_MAGIC;
	meta.m_version = DL_DATA_VERSION;
	meta.m_dbs[DL_FREE_DBI].d_pad = psize;
	meta.m_dbs[DL_FREE_DBI].d_flags = MDB_INTEGERKEY;
	meta.m_dbs[DL_FREE_DBI].d_root = DL_NO_PAGE;
	meta.m_dbs[DL_MAIN_DBI].d_root = DL_NO_PAGE;
	meta.m_last_pg = DL_NMETAS - 1;
	meta.m_mapsize = env->e_mapsize;
	if ((rc = dlmdb_meta_init_file(env, &meta)))
		return rc;
	return dlmdb_env_finish_open(env, 0);
}

int dlmdb_inmem_resize(MDB_env *env, size_t size)
{
	if (size == env->e_mapsize)
		return 0;
	/* the contents move with the map; no txn of this handle is live
	 * (mdb_env_set_mapsize checked), so no pointer into it survives */
	void *m = mremap(env->e_map, env->e_mapsize, size, MREMAP_MAYMOVE);
	if (m == MAP_FAILED)
		return errno;	/* the old map is still in place */
	env->e_map = m;
	env->e_mapsize = size;
	env->e_maxpg = size / env->e_psize;
	inmem_advise(m, size);
	return 0;
}

int mdb_env_load(MDB_env *env, MDB_txn *src, unsigned int flags, mdb_mode_t mode)
{
	(void)mode;
	if (!env || !src || env->e_opened || env->e_path || env->e_map || (flags & ~DL_ENV_OPENFLAGS))
		return EINVAL;
	if (!(src->t_flags & DL_T_RDONLY) || (src->t_flags & (DL_T_DONE | DL_T_ERROR)))
		return MDB_BAD_TXN;
	MDB_env *from = src->t_env;
	if (env->e_mapsize < from->e_mapsize)
		env->e_mapsize = from->e_mapsize;
	int rc = dlmdb_inmem_open(env, flags | env->e_flags, from->e_psize);
	if (rc)
		return rc;
	txnid_t id;
	if ((rc = dlmdb_copy_to_map(src, env->e_map, env->e_mapsize, &id))) {
		env->e_opened = 0;	/* half filled: only mdb_env_close may follow */
		return rc;
	}
	/* the copied metas describe src's env: this one is anonymous memory */
	for (int i = 0; i < DL_NMETAS; i++) {
		dl_meta *m = (dl_meta *)(env->e_map + (size_t)i * env->e_psize + DL_PAGEHDR);
		m->m_address = 0;
		m->m_mapsize = env->e_mapsize;
	}
	if (env->e_lck != &env->e_nolock)
		__atomic_store_n(&env->e_lck->l_txnid, id, __ATOMIC_RELEASE);
	/* the main DB's flags came with the copy */
	const dl_meta *live = dlmdb_meta_newest(env, 0);
	if (!live) {
		env->e_opened = 0;
		return MDB_CORRUPTED;
	}
	dlmdb_env_main_cmp(env, live->m_dbs[DL_MAIN_DBI].d_flags);
	return 0;
}
