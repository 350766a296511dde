/*
 * env.c - environment handle: create, open, map, settings, stat/info, close.
 */
#include "internal.h"

int mdb_env_create(MDB_env **envp)
{
	if (!envp)
		return EINVAL;
	MDB_env *env = calloc(1, sizeof *env);
	if (!env)
		return ENOMEM;
	env->e_fd = -1;
	env->e_lfd = -1;
	env->e_maxreaders = DL_DEFAULT_READERS;
	env->e_maxdbs = DL_CORE_DBS;
	env->e_numdbs = DL_CORE_DBS;
	env->e_pid = getpid();
	pthread_mutex_init(&env->e_dbimutex, NULL);
	*envp = env;
	return 0;
}

static char *path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = malloc(la + lb + 1);
	if (s) {
		memcpy(s, a, la);
		memcpy(s + la, b, lb + 1);
	}
	return s;
}

int dlmdb_env_map(MDB_env *env, void *addr)
{
	int prot = PROT_READ;
	if ((env->e_flags & MDB_WRITEMAP) && !(env->e_flags & MDB_RDONLY))
		prot |= PROT_WRITE;
	/* FIXEDMAP: exactly there or not at all.  MAP_FIXED would silently
	 * unmap whatever the process has in the range; MAP_FIXED_NOREPLACE
	 * fails instead (EEXIST).  A bare hint is not enough on Linux: large
	 * file maps are placed with room for huge-page alignment, so even a
	 * hole of exactly the right size (the one our own munmap just left)
	 * is passed over.  Kernels before 4.17 take the flag as a hint: the
	 * address check below covers them. */
	int mflags = MAP_SHARED;
	if (addr) {
		if ((uintptr_t)addr % (uintptr_t)sysconf(_SC_PAGESIZE))
			return EBUSY;	/* no map can start there */
#ifdef MAP_FIXED_NOREPLACE
		mflags |= MAP_FIXED_NOREPLACE;
#endif
	}
	void *m = mmap(addr, env->e_mapsize, prot, mflags, env->e_fd, 0);
	if (m == MAP_FAILED)
		return addr && errno == EEXIST ? EBUSY : errno;
	if (addr && m != addr) {
		munmap(m, env->e_mapsize);
		return EBUSY;	/* as LMDB: the recorded address is taken */
	}
	if (env->e_flags & MDB_NORDAHEAD)
		madvise(m, env->e_mapsize, MADV_RANDOM);
	env->e_map = m;
	env->e_maxpg = env->e_mapsize / env->e_psize;
	return 0;
}

static size_t round_up(size_t x, size_t to)
{
	return (x + to - 1) / to * to;
}

/* The comparators of the main DB, whose flags are those of its record. */
void dlmdb_env_main_cmp(MDB_env *env, unsigned flags)
{
	env->e_dbx[DL_MAIN_DBI].x_cmp = dlmdb_cmp_for(flags);
	env->e_dbx[DL_MAIN_DBI].x_dcmp = dlmdb_cmp_for(MDB_DUPSORT |
		((flags & MDB_REVERSEDUP) ? MDB_REVERSEKEY : 0) |
		((flags & MDB_INTEGERDUP) ? MDB_INTEGERKEY : 0));
}

/*
 * The part of an open that follows the map and the metas, for file and
 * in-memory envs alike: DB handle table, comparators of the core DBs and,
 * for the first opener of a lock file (excl), the published txn id.
 */
int dlmdb_env_finish_open(MDB_env *env, int excl)
{
	env->e_nodemax = (((env->e_psize - DL_PAGEHDR) / 2) & ~(size_t)1) - sizeof(indx_t);
	env->e_dbx = calloc(env->e_maxdbs, sizeof(dl_dbx));
	if (!env->e_dbx)
		return ENOMEM;
	env->e_dbx[DL_FREE_DBI].x_cmp = dlmdb_cmp_for(MDB_INTEGERKEY);
	env->e_dbx[DL_FREE_DBI].x_used = 1;
	env->e_dbx[DL_MAIN_DBI].x_used = 1;
	const dl_meta *live = dlmdb_meta_newest(env, 0);
	if (!live)
		return MDB_INVALID;
	dlmdb_env_main_cmp(env, live->m_dbs[DL_MAIN_DBI].d_flags);
	if (excl && env->e_lck != &env->e_nolock) {
		env->e_lck->l_txnid = live->m_txnid;
		int rc = dlmdb_lock_share(env);
		if (rc)
			return rc;
	}
	env->e_opened = 1;
	return 0;
}

int mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mdb_mode_t mode)
{
	int rc, excl = 0;
	if (!env || env->e_opened || env->e_path || env->e_map)
		return EINVAL;
	if (flags & ~DL_ENV_OPENFLAGS)
		return EINVAL;
	flags |= env->e_flags;
	if (flags & MDB_INMEMORY)
		return path ? EINVAL : dlmdb_inmem_open(env, flags, 0);
	if (!path)
		return EINVAL;
	if (flags & MDB_RDONLY)
		flags &= ~(MDB_WRITEMAP | MDB_MAPASYNC);
	env->e_flags = flags;
	env->e_path = strdup(path);
	if (!env->e_path)
		return ENOMEM;
	char *dpath, *lpath;
	if (flags & MDB_NOSUBDIR) {
		dpath = strdup(path);
		lpath = path_join(path, MDB_LOCKSUFF);
	} else {
		dpath = path_join(path, MDB_DATANAME);
		lpath = path_join(path, MDB_LOCKNAME);
	}
	if (!dpath || !lpath) {
		rc = ENOMEM;
		goto out;
	}
	if (flags & MDB_NOLOCK) {
		env->e_lck = &env->e_nolock;
	} else {
		rc = dlmdb_lock_open(env, lpath, (int)mode, &excl);
		if (rc)
			goto out;
	}
	int oflags = (flags & MDB_RDONLY) ? O_RDONLY : (O_RDWR | O_CREAT);
	env->e_fd = open(dpath, oflags | O_CLOEXEC, mode);
	if (env->e_fd < 0) {
		rc = errno;
		goto out;
	}
	dl_meta meta;
	unsigned psize = 0;
	rc = dlmdb_meta_read_file(env->e_fd, &meta, &psize, 0, dlmdb_meta_failed(env));
	int fresh = 0;
	if (rc == ENOENT) {
		if (flags & MDB_RDONLY) {
			rc = ENOENT;
			goto out;
		}
		fresh = 1;
		long sp = sysconf(_SC_PAGESIZE);
		psize = (sp >= 4096 && sp <= 65536) ? (unsigned)sp : 4096u;
		memset(&meta, 0, sizeof meta);
		meta.m_magic = DL_MAGIC;
		meta.m_version = DL_DATA_VERSION;
		meta.m_dbs[DL_FREE_DBI].d_pad = psize;
		meta.m_dbs[DL_FREE_DBI].d_flags = (uint16_t)((flags & 0xffff) | MDB_INTEGERKEY);
		meta.m_dbs[DL_FREE_DBI].d_root = DL_NO_PAGE;
		meta.m_dbs[DL_MAIN_DBI].d_root = DL_NO_PAGE;
		meta.m_last_pg = DL_NMETAS - 1;
		meta.m_mapsize = env->e_mapsize ? env->e_mapsize : DL_DEFAULT_MAPSIZE;
	} else if (rc) {
		goto out;
	}
	env->e_psize = psize;
	if (!env->e_mapsize)
		env->e_mapsize = meta.m_mapsize;
	size_t minsz = (size_t)(meta.m_last_pg + 1) * psize;
	if (env->e_mapsize < minsz)
		env->e_mapsize = minsz;
	env->e_mapsize = round_up(env->e_mapsize, psize);
	if (fresh)
		meta.m_mapsize = env->e_mapsize;
	/* a new env gets its metas before the map, except under FIXEDMAP:
	 * there they record the map's address, known only once it exists */
	if (fresh && !(flags & MDB_FIXEDMAP)) {
		rc = dlmdb_meta_init_file(env, &meta);
		if (rc)
			goto out;
	}
	if ((flags & MDB_WRITEMAP) && !(flags & MDB_RDONLY)) {
		struct stat st;
		if (fstat(env->e_fd, &st) == 0 && (size_t)st.st_size < env->e_mapsize &&
		    ftruncate(env->e_fd, (off_t)env->e_mapsize)) {
			rc = errno;
			goto out;
		}
	}
	/* FIXEDMAP on an existing file: its recorded address (if it has one,
	 * i.e. it was created with FIXEDMAP), else anywhere, as LMDB */
	rc = dlmdb_env_map(env, (flags & MDB_FIXEDMAP) && !fresh ?
		(void *)(uintptr_t)meta.m_address : NULL);
	if (rc)
		goto out;
	if (fresh && (flags & MDB_FIXEDMAP)) {
		meta.m_address = (uint64_t)(uintptr_t)env->e_map;
		rc = dlmdb_meta_init_file(env, &meta);
		if (rc)
			goto out;
	}
	rc = dlmdb_env_finish_open(env, excl);
out:
	free(dpath);
	free(lpath);
	return rc;
}

void mdb_env_close(MDB_env *env)
{
	if (!env)
		return;
	/* closing with the write txn still open breaks the API contract; end
	 * the txn here (from any thread: lock.c, "The writer lock") */
	if (env->e_wtxn)
		mdb_txn_abort(env->e_wtxn);
	if (env->e_dbx) {
		for (unsigned i = DL_CORE_DBS; i < env->e_maxdbs; i++)
			free(env->e_dbx[i].x_name);
		free(env->e_dbx);
	}
	if (env->e_map)
		munmap(env->e_map, env->e_mapsize);
	if (env->e_fd >= 0)
		close(env->e_fd);
	dlmdb_lock_close(env);
	dlmdb_spare_drop_all(env);
	free(env->e_trusted);
	free(env->e_dirty_spare);
	free(env->e_txn_spare);
	pthread_mutex_destroy(&env->e_dbimutex);
	free(env->e_path);
	free(env);
}

int mdb_env_set_mapsize(MDB_env *env, mdb_size_t size)
{
	if (!env)
		return EINVAL;
	if (!env->e_opened) {
		env->e_mapsize = size;
		return 0;
	}
	if (__atomic_load_n(&env->e_live_txns, __ATOMIC_SEQ_CST))
		return EINVAL;
	const dl_meta *m = dlmdb_meta_newest(env, 0);
	if (!m)
		return MDB_CORRUPTED;
	if (!size)
		size = m->m_mapsize;
	size_t minsz = (size_t)(m->m_last_pg + 1) * env->e_psize;
	if (size < minsz)
		size = minsz;
	size = round_up(size, env->e_psize);
	if (dl_inmem(env))
		return dlmdb_inmem_resize(env, size);
	if ((env->e_flags & MDB_WRITEMAP) && !(env->e_flags & MDB_RDONLY)) {
		/* a WRITEMAP writer stores into any page below the map size: the
		 * file must reach that far first (a store past its end would be a
		 * SIGBUS); on failure nothing has changed yet */
		struct stat st;
		if (fstat(env->e_fd, &st))
			return errno;
		if ((size_t)st.st_size < size && ftruncate(env->e_fd, (off_t)size))
			return errno;
	}
	/* FIXEDMAP: the map stays where it is (LMDB does the same); the
	 * kernel may not be able to grow it there, then EBUSY */
	char *at = (env->e_flags & MDB_FIXEDMAP) ? env->e_map : NULL;
	munmap(env->e_map, env->e_mapsize);
	env->e_map = NULL;
	size_t old = env->e_mapsize;
	env->e_mapsize = size;
	int rc = dlmdb_env_map(env, at);
	if (rc) {
		/* back to the old map; if even that fails the handle is dead:
		 * every call but close reports EINVAL */
		env->e_mapsize = old;
		if (dlmdb_env_map(env, at)) {
			env->e_map = NULL;
			env->e_opened = 0;
		}
	}
	return rc;
}

int mdb_env_set_maxreaders(MDB_env *env, unsigned int readers)
{
	if (!env || !readers || env->e_opened)
		return EINVAL;
	env->e_maxreaders = readers;
	return 0;
}

int mdb_env_get_maxreaders(MDB_env *env, unsigned int *readers)
{
	if (!env || !readers)
		return EINVAL;
	*readers = env->e_maxreaders;
	return 0;
}

int mdb_env_set_maxdbs(MDB_env *env, MDB_dbi dbs)
{
	/* like LMDB, any count is accepted here (handle tables are sized at
	 * open); only one that would wrap the slot count is refused */
	if (!env || env->e_opened || dbs > ~(MDB_dbi)0 - DL_CORE_DBS)
		return EINVAL;
	env->e_maxdbs = dbs + DL_CORE_DBS;
	return 0;
}

int mdb_env_get_maxkeysize(MDB_env *env)
{
	(void)env;
	return DL_MAXKEY;
}

int mdb_env_set_flags(MDB_env *env, unsigned int flags, int onoff)
{
	if (!env || (flags & ~DL_ENV_CHANGEABLE))
		return EINVAL;
	if (onoff)
		env->e_flags |= flags;
	else
		env->e_flags &= ~flags;
	return 0;
}

int mdb_env_get_flags(MDB_env *env, unsigned int *flags)
{
	if (!env || !flags)
		return EINVAL;
	*flags = env->e_flags & DL_ENV_OPENFLAGS;
	return 0;
}

int mdb_env_get_path(MDB_env *env, const char **path)
{
	if (!env || !path)
		return EINVAL;
	*path = env->e_path;
	return 0;
}

int mdb_env_get_fd(MDB_env *env, mdb_filehandle_t *fd)
{
	if (!env || !fd)
		return EINVAL;
	/* as LMDB: before open there is no file, reported as an invalid handle */
	*fd = env->e_opened ? env->e_fd : -1;
	return 0;
}

int mdb_env_set_userctx(MDB_env *env, void *ctx)
{
	if (!env)
		return EINVAL;
	env->e_userctx = ctx;
	return 0;
}

void *mdb_env_get_userctx(MDB_env *env)
{
	return env ? env->e_userctx : NULL;
}

int mdb_env_set_assert(MDB_env *env, MDB_assert_func *func)
{
	if (!env)
		return EINVAL;
	env->e_assert = func;
	return 0;
}

int mdb_env_sync(MDB_env *env, int force)
{
	if (!env || !env->e_opened)
		return EINVAL;
	if (dl_inmem(env))
		return 0;	/* nothing is on a disk */
	if (env->e_flags & MDB_RDONLY)
		return EACCES;
	if (!force && (env->e_flags & MDB_NOSYNC))
		return 0;
	if (env->e_flags & MDB_WRITEMAP) {
		/* data and meta pages were changed through the map (meta.c):
		 * msync; a forced sync waits even under MAPASYNC */
		int how = (env->e_flags & MDB_MAPASYNC) && !force ? MS_ASYNC : MS_SYNC;
		return msync(env->e_map, env->e_mapsize, how) ? errno : 0;
	}
	return fdatasync(env->e_fd) ? errno : 0;
}

static void stat_from(const MDB_env *env, const dl_dbrec *db, MDB_stat *st)
{
	st->ms_psize = env->e_psize;
	st->ms_depth = db->d_depth;
	st->ms_branch_pages = db->d_branch;
	st->ms_leaf_pages = db->d_leaf;
	st->ms_overflow_pages = db->d_overflow;
	st->ms_entries = db->d_entries;
}

int mdb_env_stat(MDB_env *env, MDB_stat *st)
{
	if (!env || !st || !env->e_opened)
		return EINVAL;
	const dl_meta *m = dlmdb_meta_newest(env, 0);
	if (!m)
		return MDB_CORRUPTED;
	dl_dbrec db = m->m_dbs[DL_MAIN_DBI];
	stat_from(env, &db, st);
	return 0;
}

static int dl_u_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *st)
{
	if (!txn || !st)
		return EINVAL;
	int rc = dlmdb_dbi_ok(txn, dbi);
	if (rc)
		return rc;
	if (txn->t_flags & DL_T_CHILD)
		return MDB_BAD_TXN;
	if (txn->t_dbstate[dbi] & DL_DBS_STALE) {
		rc = dlmdb_db_refresh(txn, dbi);
		if (rc)
			return rc;
	}
	stat_from(txn->t_env, &txn->t_dbs[dbi], st);
	return 0;
}

int mdb_env_info(MDB_env *env, MDB_envinfo *info)
{
	if (!env || !info || !env->e_opened)
		return EINVAL;
	const dl_meta *m = dlmdb_meta_newest(env, 0);
	if (!m)
		return MDB_CORRUPTED;
	memset(info, 0, sizeof *info);
	/* as LMDB: the address the file records (FIXEDMAP envs), else NULL */
	info->me_mapaddr = (void *)(uintptr_t)m->m_address;
	info->me_mapsize = env->e_mapsize;
	info->me_last_pgno = m->m_last_pg;
	info->me_last_txnid = m->m_txnid;
	info->me_maxreaders = env->e_maxreaders;
	info->me_numreaders = (env->e_flags & MDB_NOLOCK) ? 0 : env->e_lck->l_numreaders;
	return 0;
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *st)
{
	DL_GUARDED(txn, 0, dl_u_stat(txn, dbi, st));
}
