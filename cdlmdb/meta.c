/*
 * meta.c - the two meta pages: validation, selection, creation and update.
 *
 * Page 0 and page 1 each hold a dl_meta after the page header.  A commit of
 * transaction t rewrites page (t & 1), so the other page always still holds
 * the previous commit: a crash while writing one meta page leaves the other
 * intact.
 *
 * How a commit becomes visible, and why one write of the meta is enough:
 *
 *  - With a lock file (the normal case) a commit is published by storing its
 *    id in the lock file's txnid after the meta write has returned.  Readers
 *    choose the meta page by that id (id & 1), copy it, and accept the copy
 *    only if the lock file's id is still the same afterwards.  The page a
 *    commit rewrites is never the one the published id points at: commit t
 *    writes page t & 1 while the published id is t - 1, and the writer of
 *    t + 1 starts only after t is published.  So a reader never accepts a
 *    meta that is being written, and the whole meta (body and txnid) goes
 *    out in one pwrite.  (A commit that is killed between its meta write and
 *    the publication leaves the lock file one commit behind: readers keep
 *    using the previous commit, which stays intact because pages are reused
 *    only once no reader holds a snapshot that still sees them, and the
 *    next writer, which chooses its base from the meta pages themselves,
 *    publishes the newest id before it writes anything.)
 *
 *  - Without a published id (MDB_NOLOCK, and MDB_PREVSNAPSHOT, whose readers
 *    want the older meta) readers choose by comparing the txnids stored in
 *    the two pages themselves, so they may look at the page a commit is
 *    rewriting.  There the body is written first and the 8-byte txnid by a
 *    second pwrite, so a reader that sees the new id also sees the new body.
 *
 * Crash safety does not depend on the number of writes: a killed process
 * cannot leave a single pwrite half done in the page cache, and ordering
 * against power loss comes from the fdatasync of the data pages that comes
 * before the meta write (unless NOSYNC) and the one after it (unless
 * NOMETASYNC); both writes land in the same file page either way.
 *
 * Under WRITEMAP the map is writable and the meta is stored through it,
 * always body first and txnid last (a release store), as the two-write
 * path does; the page a commit rewrites is still never the one readers of
 * the published id look at, so the rules above hold unchanged.  What a
 * store sequence cannot promise is the single-write atomicity against a
 * kill: a writer killed inside the copy leaves a page with a partly new
 * body under its old txnid.  That page is older than the other one, so it
 * is never chosen as the newest; only a PREVSNAPSHOT open right after such
 * a kill could pick it -- the same exposure the two-write path has (and
 * LMDB's WRITEMAP, which writes its meta the same way).  It is flushed by
 * msync of its page.  The meta's m_address is set once, when a FIXEDMAP
 * env is created (env.c), and every commit copies it on.
 */
#include "internal.h"

/* The fields a commit never changes: magic, version, page size. */
static int meta_identity(const dl_meta *m, unsigned psize)
{
	if (m->m_magic != DL_MAGIC)
		return MDB_INVALID;
	if (m->m_version != DL_DATA_VERSION && m->m_version != DL_DATA_VERSION_EXT)
		return MDB_VERSION_MISMATCH;
	unsigned ps = m->m_dbs[DL_FREE_DBI].d_pad;
	if (ps < 512 || ps > 65536 || (ps & (ps - 1)) || (psize && ps != psize))
		return MDB_INVALID;
	return 0;
}

int dlmdb_meta_check(const dl_meta *m, unsigned psize)
{
	int rc = meta_identity(m, psize);
	if (rc)
		return rc;
	if (m->m_last_pg < DL_NMETAS - 1)
		return MDB_CORRUPTED;
	for (int i = 0; i < 2; i++) {
		pgno_t r = m->m_dbs[i].d_root;
		if (r == DL_NO_PAGE)
			continue;
		if (r < DL_NMETAS || r > m->m_last_pg || m->m_dbs[i].d_depth == 0 ||
		    m->m_dbs[i].d_depth > DL_MAX_DEPTH)
			return MDB_CORRUPTED;
	}
	return 0;
}

/* Read one meta page header+body at off; returns 0, ENOENT (empty file) or an error. */
static int read_one(int fd, off_t off, dl_meta *m)
{
	unsigned char buf[DL_PAGEHDR + sizeof(dl_meta)];
	ssize_t n;
	do
		n = pread(fd, buf, sizeof buf, off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	if (n == 0 && off == 0)
		return ENOENT;
	if ((size_t)n < sizeof buf)
		return MDB_INVALID;
	dl_page hdr;
	memcpy(&hdr, buf, sizeof hdr);
	if (!(hdr.p_flags & DL_P_META))
		return MDB_INVALID;
	memcpy(m, buf + DL_PAGEHDR, sizeof *m);
	return 0;
}

txnid_t dlmdb_meta_failed(const MDB_env *env)
{
	return env->e_lck ? __atomic_load_n(&env->e_lck->l_failed, __ATOMIC_ACQUIRE) : 0;
}

/*
 * Which of two metas with ids ta, tb (0 or 1) is the newest, or with prev
 * the older.  failed (the lock file's l_failed, see meta_take_back): a
 * meta of that id or later is the failed commit's, or was written over
 * it by a commit that has not returned yet, and the other page holds the
 * last acknowledged commit; such a meta is never chosen while the other
 * is not one.  Both at failed or later: the record is not about this
 * file (say, a data file put in place later) and is ignored.
 */
static int meta_choose(txnid_t ta, txnid_t tb, int prev, txnid_t failed)
{
	if (DL_UNLIKELY(failed)) {
		int fa = ta >= failed, fb = tb >= failed;
		if (fa != fb)
			return fa;
	}
	if (prev)
		return ta < tb ? 0 : 1;
	return ta > tb ? 0 : 1;
}

/*
 * A damaged meta page is an error, never a reason to use the other one:
 * falling back would silently drop the newest commits (or, for the older
 * page, hide damage until the next commit overwrites the good one).  Both
 * pages must carry the unchanging identity fields, which a concurrent
 * commit rewrites with equal bytes; only the meta that will be used gets
 * the structural check, since the other may be mid-rewrite by a writer in
 * another process.
 */
int dlmdb_meta_read_file(int fd, dl_meta *out, unsigned *psize, int prev, txnid_t failed)
{
	dl_meta m[DL_NMETAS];
	unsigned ps = 0;
	for (int i = 0; i < DL_NMETAS; i++) {
		int rc = read_one(fd, (off_t)i * ps, &m[i]);
		if (!rc)
			rc = meta_identity(&m[i], ps);
		if (rc)
			return rc;
		ps = m[i].m_dbs[DL_FREE_DBI].d_pad;
	}
	const dl_meta *pick = &m[meta_choose(m[0].m_txnid, m[1].m_txnid, prev, failed)];
	int rc = dlmdb_meta_check(pick, ps);
	if (rc)
		return rc;
	*out = *pick;
	*psize = pick->m_dbs[DL_FREE_DBI].d_pad;
	return 0;
}

static inline dl_meta *meta_in_map(MDB_env *env, int i)
{
	return (dl_meta *)(env->e_map + (size_t)i * env->e_psize + DL_PAGEHDR);
}

int dlmdb_meta_published(const MDB_env *env)
{
	return !(env->e_flags & (MDB_NOLOCK | MDB_PREVSNAPSHOT));
}

const dl_meta *dlmdb_meta_page(MDB_env *env, txnid_t id)
{
	return meta_in_map(env, (int)(id & 1));
}

const dl_meta *dlmdb_meta_pick(MDB_env *env, int prev)
{
	dl_meta *a = meta_in_map(env, 0), *b = meta_in_map(env, 1);
	txnid_t ta = __atomic_load_n(&a->m_txnid, __ATOMIC_ACQUIRE);
	txnid_t tb = __atomic_load_n(&b->m_txnid, __ATOMIC_ACQUIRE);
	return meta_choose(ta, tb, prev, dlmdb_meta_failed(env)) ? b : a;
}

const dl_meta *dlmdb_meta_newest(MDB_env *env, int prev)
{
	const dl_meta *pick = dlmdb_meta_pick(env, prev);
	/* the choice is by txnid alone (the other page may be mid-rewrite);
	 * if the chosen one is damaged the caller fails: no fallback */
	return dlmdb_meta_check(pick, env->e_psize) == 0 ? pick : NULL;
}

static int pwrite_all(int site, int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = DL_PWRITE(site, fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (n == 0)
			return ENOSPC;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

int dlmdb_meta_init_file(MDB_env *env, dl_meta *m)
{
	size_t ps = env->e_psize;
	char *buf = calloc(DL_NMETAS, ps);
	if (!buf)
		return ENOMEM;
	for (int i = 0; i < DL_NMETAS; i++) {
		dl_page *p = (dl_page *)(buf + i * ps);
		p->p_pgno = (pgno_t)i;
		p->p_flags = DL_P_META;
		memcpy((char *)p + DL_PAGEHDR, m, sizeof *m);
	}
	int rc = 0;
	if (dl_inmem(env)) {
		memcpy(env->e_map, buf, DL_NMETAS * ps);	/* nothing to sync */
		free(buf);
		return 0;
	}
	rc = pwrite_all(DL_IO_META, env->e_fd, buf, DL_NMETAS * ps, 0);
	free(buf);
	if (!rc && !(env->e_flags & MDB_NOSYNC) && DL_FDATASYNC(DL_IO_MSYNC, env->e_fd))
		rc = errno;
	return rc;
}

/* Flush the meta page at base (offset of its body) to the disk; site:
 * the step of the commit it is for (internal.h, fault injection). */
static int meta_sync(MDB_env *env, off_t base, int site)
{
	if (dl_inmem(env))
		return 0;
	if (env->e_flags & MDB_WRITEMAP) {
		/* flush the meta's page (MAPASYNC: only start its writeback,
		 * like the data pages in txn.c's data_sync) */
		size_t os = (size_t)sysconf(_SC_PAGESIZE);
		size_t off = (size_t)base - DL_PAGEHDR;
		size_t start = off - off % os;
		int how = (env->e_flags & MDB_MAPASYNC) ? MS_ASYNC : MS_SYNC;
		return DL_MSYNC(site, env->e_map + start, off + env->e_psize - start, how) ? errno : 0;
	}
	return DL_FDATASYNC(site, env->e_fd) ? errno : 0;
}

/*
 * A commit that failed once its meta write had begun (the write or the
 * sync after it returned an error) must stay invisible, but the page may
 * hold the new meta: in the page cache, where every handle and process
 * reads the file, and perhaps already on the disk.  Readers of a published
 * env never look at it (the lock file's id was not moved on), but the next
 * writer of any handle, a reopen, and the readers that choose by the pages'
 * txnids would take it as the newest.  So the page gets back what it held
 * before, the meta of the commit before the last acknowledged one, whose
 * pages are all still intact (a commit reuses only pages freed before the
 * previous one); the txnid goes first, so that from the first byte written
 * back on the page counts as the older one again.  Then the env is marked
 * panicked: every txn begin answers MDB_PANIC until it is reopened, since
 * the engine cannot know what the disk holds.
 *
 * Before any of that the failed id goes into the lock file (l_failed), for
 * the case that the write back fails too: every choice of a meta (the
 * next writer of any handle, a reopen, readers choosing by the pages'
 * txnids, meta_choose) passes over a meta of that id or a later one while
 * the other page is older, and a first opener that initialises the lock
 * file keeps the record.  The page is the one the next commit writes (its
 * id is the failed one again, built on the last acknowledged meta), and
 * once that commit's meta is written and synced the record is cleared
 * (dlmdb_meta_write).  A writer killed between the two leaves the record
 * on its own good meta: the commit after it, never acknowledged, is then
 * passed over too, and the one after that writes the page once more.
 *
 * How far this reaches:
 *  - without WRITEMAP the new meta got into the page cache only if its
 *    pwrite did (the failed call was the sync, or a write that reported an
 *    error after copying some bytes); writing 136 bytes back into a cached
 *    page does not need the device, so the page cache ends up with the old
 *    meta and every handle, process and reopen sees the last acknowledged
 *    commit.  The write back is then synced (unless NOSYNC), best effort.
 *    If the write back itself fails and the failed write did leave its
 *    bytes behind, the record in the lock file keeps every handle and
 *    process from choosing the failed meta, and keeps a reopen from it as
 *    long as the lock file survives (it is msynced, best effort, unless
 *    NOSYNC).  Under NOLOCK there is no lock file: the record lives in
 *    this handle only, and other handles or a reopen can then find the
 *    failed commit.
 *  - under WRITEMAP the meta was stored through the shared map, which is
 *    the page cache: the kernel may write it to the disk at any moment
 *    after the store, before the msync that failed.  Stores cannot fail,
 *    so taking it back always works in memory: this and every other handle
 *    and process, and a reopen before the machine goes down, see the last
 *    acknowledged commit.  The page is then msynced, best effort; if that
 *    too fails (the device is failing) the disk may keep the failed
 *    commit's meta, and since its data pages were synced before it, a
 *    reopen after a crash or power loss can show the failed commit, unless
 *    the lock file with its record reached the disk too.
 *  - the same holds, without WRITEMAP, for a crash before the page written
 *    back reaches the disk: what survives a power loss after a failed sync
 *    is not in the engine's hands.
 */
static void meta_take_back(MDB_env *env, const dl_meta *old, off_t base, txnid_t id)
{
	size_t head = offsetof(dl_meta, m_txnid);
	int rc = 0;
	if (env->e_lck) {
		/* before the page is touched: from here on no handle chooses
		 * the failed meta, whatever the write back below achieves */
		__atomic_store_n(&env->e_lck->l_failed, id, __ATOMIC_SEQ_CST);
		if (env->e_lck != &env->e_nolock && !(env->e_flags & (MDB_NOSYNC | MDB_INMEMORY)))
			(void)DL_MSYNC(DL_IO_UNDO, env->e_lck, (size_t)sysconf(_SC_PAGESIZE), MS_SYNC);
	}
	if (env->e_flags & (MDB_WRITEMAP | MDB_INMEMORY)) {
		dl_meta *dst = (dl_meta *)(env->e_map + (size_t)base);
		__atomic_store_n(&dst->m_txnid, old->m_txnid, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		memcpy(dst, old, head);
	} else {
		rc = pwrite_all(DL_IO_UNDO, env->e_fd, &old->m_txnid, sizeof old->m_txnid,
			base + (off_t)head);
		if (!rc)
			rc = pwrite_all(DL_IO_UNDO, env->e_fd, old, head, base);
	}
	if (!rc && !(env->e_flags & MDB_NOSYNC))
		(void)meta_sync(env, base, DL_IO_UNDO);
	__atomic_store_n(&env->e_panic, 1, __ATOMIC_SEQ_CST);
}

/* Write the meta page for a committing top-level write txn. */
int dlmdb_meta_write(MDB_txn *txn)
{
	MDB_env *env = txn->t_env;
	/* built where the trusted-page table keeps the meta of our last
	 * commit (page.c): if the write fails, the reset below clears it */
	dl_meta *m = &env->e_trust_meta;
	/* the newest meta, for the fields a commit carries on (magic, version
	 * and page size, checked here as dlmdb_meta_check would; address, map
	 * size).  Its DB records and last page, the rest of that check, are
	 * all replaced below. */
	const dl_meta *cur = dlmdb_meta_pick(env, 0);
	if (meta_identity(cur, env->e_psize))
		return MDB_CORRUPTED;
	*m = *cur;
	m->m_mapsize = env->e_mapsize > m->m_mapsize ? env->e_mapsize : m->m_mapsize;
	m->m_dbs[DL_FREE_DBI] = txn->t_dbs[DL_FREE_DBI];
	m->m_dbs[DL_MAIN_DBI] = txn->t_dbs[DL_MAIN_DBI];
	m->m_version = dl_meta_version(cur->m_version, &m->m_dbs[DL_MAIN_DBI],
		(txn->t_flags & DL_T_EXTFMT) != 0);
	m->m_dbs[DL_FREE_DBI].d_pad = env->e_psize;
	m->m_last_pg = txn->t_next_pg - 1;
	m->m_txnid = txn->t_id;
	off_t base = (off_t)(txn->t_id & 1) * env->e_psize + DL_PAGEHDR;
	/* what the page holds now, to take the write back if it fails */
	dl_meta *dst = meta_in_map(env, (int)(txn->t_id & 1));
	dl_meta old = *dst;
	int rc = 0;
	if (env->e_flags & (MDB_WRITEMAP | MDB_INMEMORY)) {
		/* the map is writable: stores instead of a syscall, in the order
		 * the two-write path below uses (see the top of this file) */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		memcpy(dst, m, offsetof(dl_meta, m_txnid));
		__atomic_store_n(&dst->m_txnid, m->m_txnid, __ATOMIC_RELEASE);
	} else if (dlmdb_meta_published(env)) {
		/* readers follow the lock file's id (see the top of this file);
		 * the fence orders the earlier publication (ours, or the last
		 * writer's, seen through the writer lock) before the stores of
		 * this write on weakly ordered CPUs (on x86 it costs nothing) */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		rc = pwrite_all(DL_IO_META, env->e_fd, m, sizeof *m, base);
	} else {
		size_t head = offsetof(dl_meta, m_txnid);
		rc = pwrite_all(DL_IO_META, env->e_fd, m, head, base);
		if (!rc)
			rc = pwrite_all(DL_IO_META, env->e_fd, &m->m_txnid, sizeof m->m_txnid,
				base + (off_t)head);
	}
	/* e_trust_meta now is our commit, the newest: keep trusting our
	 * pages, unless the write or its sync fails */
	if (!rc && !(env->e_flags & (MDB_NOSYNC | MDB_NOMETASYNC)))
		rc = meta_sync(env, base, DL_IO_MSYNC);
	if (rc) {
		meta_take_back(env, &old, base, txn->t_id);
		dlmdb_trust_reset(env);
		return rc;
	}
	/* this commit wrote over the page of a failed one: its id is ours now */
	txnid_t failed = dlmdb_meta_failed(env);
	if (DL_UNLIKELY(failed) && txn->t_id >= failed)
		__atomic_store_n(&env->e_lck->l_failed, 0, __ATOMIC_SEQ_CST);
	return 0;
}
