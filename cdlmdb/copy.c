/*
 * copy.c - hot backups: mdb_env_copy*, plain and compacting.
 *
 * Both run inside a read transaction, so the snapshot is stable while
 * writers continue.  The plain copy writes two fresh meta pages describing
 * the snapshot followed by pages 2..last of the map.  The compacting copy
 * walks every tree (free DB excluded: the copy has no free pages) and
 * renumbers pages in post-order as it writes them, patching child pointers,
 * overflow page numbers and named-DB roots on the way.
 *
 * The output is produced strictly front to back with plain write(2): no
 * seeks, no positioned writes, so the destination may be a pipe, a socket
 * or a terminal as well as a file.  For the compacting copy that means the
 * metas (which name the new root and last page) must be known before any
 * tree page is emitted; a first, write-free walk over the snapshot computes
 * them, and the second walk emits the pages in the same order.
 */
#include "internal.h"
#include <poll.h>

/* Push len bytes to fd in order, riding out short writes, EINTR and (for
 * a non-blocking descriptor) EAGAIN. */
static int emit_raw(int fd, const char *p, size_t len)
{
	while (len) {
		size_t chunk = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
		ssize_t n = write(fd, p, chunk);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct pollfd pf = {.fd = fd, .events = POLLOUT};
				if (poll(&pf, 1, -1) < 0 && errno != EINTR)
					return errno;
				continue;
			}
			return errno;
		}
		if (n == 0)
			return EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A small staging buffer in front of the descriptor, so the compacting
 * copy does not issue one syscall per page.  With mem set the output goes
 * to memory instead (mdb_env_load): mem[0, cap) of the new env's map, filled
 * from the front as the file would be. */
struct outstream {
	int fd;
	char *buf;
	size_t fill, cap;
	char *mem;
	size_t pos, memcap;
};

static int out_emit(struct outstream *o, const char *p, size_t len)
{
	if (!o->mem)
		return emit_raw(o->fd, p, len);
	if (len > o->memcap - o->pos)
		return MDB_MAP_FULL;
	memcpy(o->mem + o->pos, p, len);
	o->pos += len;
	return 0;
}

static int out_flush(struct outstream *o)
{
	int rc = out_emit(o, o->buf, o->fill);
	o->fill = 0;
	return rc;
}

static int out_put(struct outstream *o, const void *data, size_t len)
{
	if (o->fill + len > o->cap) {
		int rc = out_flush(o);
		if (rc)
			return rc;
		if (len >= o->cap)	/* big run: hand it to the kernel as is */
			return out_emit(o, data, len);
	}
	memcpy(o->buf + o->fill, data, len);
	o->fill += len;
	return 0;
}

/* fsync the finished copy; descriptors that cannot be synced (pipes,
 * sockets, some special files) are not an error. */
static int sync_dest(int fd)
{
	while (fsync(fd)) {
		if (errno == EINTR)
			continue;
		if (errno == EINVAL || errno == EROFS || errno == ENOTSUP)
			return 0;
		return errno;
	}
	return 0;
}

static int write_metas(MDB_txn *txn, struct outstream *o, const dl_dbrec *freedb,
	const dl_dbrec *maindb, pgno_t last)
{
	MDB_env *env = txn->t_env;
	size_t ps = env->e_psize;
	char *buf = calloc(2, ps);
	if (!buf)
		return ENOMEM;
	const dl_meta *cur = dlmdb_meta_newest(env, 0);
	dl_meta m;
	memset(&m, 0, sizeof m);
	m.m_magic = DL_MAGIC;
	m.m_version = dl_meta_version(cur ? cur->m_version : DL_DATA_VERSION, maindb, 0);
	m.m_address = cur ? cur->m_address : 0;
	m.m_mapsize = env->e_mapsize;
	m.m_dbs[DL_FREE_DBI] = *freedb;
	m.m_dbs[DL_FREE_DBI].d_pad = (uint32_t)ps;
	m.m_dbs[DL_MAIN_DBI] = *maindb;
	m.m_last_pg = last;
	m.m_txnid = txn->t_id;
	for (int i = 0; i < 2; i++) {
		dl_page *p = (dl_page *)(buf + i * ps);
		p->p_pgno = (pgno_t)i;
		p->p_flags = DL_P_META;
		memcpy((char *)p + DL_PAGEHDR, &m, sizeof m);
	}
	int rc = out_put(o, buf, 2 * ps);
	free(buf);
	return rc;
}

/* State of one compacting walk.  With out == NULL the walk only assigns
 * page numbers (the sizing pass); otherwise it also emits every page. */
struct compactor {
	MDB_txn *txn;
	struct outstream *out;
	pgno_t next;	/* next page number in the copy */
	size_t psize;
	pgno_t visits;	/* pages read so far: more than the snapshot holds means a
			 * damaged tree reaches some page twice (stop: a cycle of
			 * branches could otherwise take exponential time) */
};

/* A tree page as the walk below reads it: the header, and every node
 * with what the walk follows (a branch's child, a big value's page
 * number, a sub-tree record) inside the page. */
static int copy_page_ok(const dl_page *p, size_t psize)
{
	if (!(p->p_flags & (DL_P_BRANCH | DL_P_LEAF)) || (p->p_flags & (DL_P_OVERFLOW | DL_P_META)) ||
	    p->p_lower < DL_PAGEHDR || p->p_lower > p->p_upper || p->p_upper > psize)
		return 0;
	unsigned n = dl_pg_nkeys(p);
	if (dl_pg_is_leaf2(p))
		return dl_pg_is_leaf(p) && p->p_pad && DL_PAGEHDR + (size_t)n * p->p_pad <= psize;
	for (unsigned i = 0; i < n; i++) {
		if (!dl_node_in_page(p, i, (unsigned)psize))
			return 0;
		const dl_node *nd = dl_pg_node(p, i);
		size_t end = dl_pg_slot(p, i) + DL_NODEHDR + nd->n_ksize;
		if (dl_pg_is_leaf(p) && end + ((nd->n_flags & DL_N_BIG) ? sizeof(pgno_t) :
		    dl_node_dsize(nd)) > psize)
			return 0;
	}
	return 1;
}

static int copy_tree(struct compactor *cp, pgno_t pg, int is_main, unsigned depth, pgno_t *out);

static int copy_overflow(struct compactor *cp, pgno_t pg, pgno_t *out)
{
	dl_page *ov;
	int rc = dlmdb_page_get(cp->txn, pg, &ov);
	if (rc)
		return rc;
	if (!(ov->p_flags & DL_P_OVERFLOW))
		return MDB_CORRUPTED;
	uint32_t n = dl_pg_ovcount(ov);
	if (n == 0 || pg + n > cp->txn->t_next_pg || (cp->visits += n) > cp->txn->t_next_pg)
		return MDB_CORRUPTED;
	/* the whole run is read from the map: its last page must exist */
	dl_page *tail;
	if (n > 1 && (rc = dlmdb_page_get(cp->txn, pg + n - 1, &tail)))
		return rc;
	pgno_t np = cp->next;
	cp->next += n;
	*out = np;
	if (!cp->out)
		return 0;
	/* header first (with the new number), then the rest verbatim */
	dl_page hdr = *ov;
	hdr.p_pgno = np;
	if ((rc = out_put(cp->out, &hdr, sizeof hdr)))
		return rc;
	return out_put(cp->out, (char *)ov + sizeof hdr, n * cp->psize - sizeof hdr);
}

static int copy_tree(struct compactor *cp, pgno_t pg, int is_main, unsigned depth, pgno_t *out)
{
	dl_page *src;
	int rc;
	if (depth > DL_MAX_DEPTH * 2 || ++cp->visits > cp->txn->t_next_pg)
		return MDB_CORRUPTED;
	if ((rc = dlmdb_page_get(cp->txn, pg, &src)))
		return rc;
	if (!copy_page_ok(src, cp->psize))
		return MDB_CORRUPTED;
	/* the sizing pass only reads; the emitting pass patches a private copy */
	dl_page *p = src;
	if (cp->out) {
		if (!(p = malloc(cp->psize)))
			return ENOMEM;
		memcpy(p, src, cp->psize);
	}
	unsigned n = dl_pg_nkeys(p);
	for (unsigned i = 0; i < n && !rc; i++) {
		if (dl_pg_is_leaf2(p))
			break;
		dl_node *nd = dl_pg_node(p, i);
		pgno_t np;
		if (dl_pg_is_branch(p)) {
			if (!(rc = copy_tree(cp, dl_node_child(nd), is_main, depth + 1, &np)) && cp->out)
				dl_node_set_child(nd, np);
		} else if (nd->n_flags & DL_N_BIG) {
			if (!(rc = copy_overflow(cp, dl_node_bigpg(nd), &np)) && cp->out)
				memcpy(dl_node_data(nd), &np, sizeof np);
		} else if ((nd->n_flags & DL_N_TREE) && (is_main || (nd->n_flags & DL_N_DUP)) &&
			   dl_node_dsize(nd) == sizeof(dl_dbrec)) {
			dl_dbrec rec;
			memcpy(&rec, dl_node_data(nd), sizeof rec);
			if (rec.d_root != DL_NO_PAGE &&
			    !(rc = copy_tree(cp, rec.d_root, 0, depth + 1, &np)) && cp->out) {
				rec.d_root = np;
				memcpy(dl_node_data(nd), &rec, sizeof rec);
			}
		}
	}
	if (!rc) {
		*out = cp->next++;
		if (cp->out) {
			p->p_pgno = *out;
			rc = out_put(cp->out, p, cp->psize);
		}
	}
	if (cp->out)
		free(p);
	return rc;
}

/* Compacting copy: size the result, emit the metas, then the pages. */
static int copy_compact(MDB_txn *txn, struct outstream *o)
{
	MDB_env *env = txn->t_env;
	dl_dbrec freedb, maindb = txn->t_dbs[DL_MAIN_DBI];
	memset(&freedb, 0, sizeof freedb);
	freedb.d_flags = txn->t_dbs[DL_FREE_DBI].d_flags;
	freedb.d_root = DL_NO_PAGE;
	pgno_t oldroot = maindb.d_root;
	struct compactor sizing = {txn, NULL, DL_NMETAS, env->e_psize};
	int rc = 0;
	if (oldroot != DL_NO_PAGE)
		rc = copy_tree(&sizing, oldroot, 1, 1, &maindb.d_root);
	if (!rc)
		rc = write_metas(txn, o, &freedb, &maindb, sizing.next - 1);
	if (rc || oldroot == DL_NO_PAGE)
		return rc;
	struct compactor emit = {txn, o, DL_NMETAS, env->e_psize};
	pgno_t newroot;
	rc = copy_tree(&emit, oldroot, 1, 1, &newroot);
	/* the snapshot cannot change, so both walks must agree exactly */
	if (!rc && (newroot != maindb.d_root || emit.next != sizing.next))
		rc = MDB_PROBLEM;
	return rc;
}

/*
 * The plain copy: metas for the snapshot, then pages 2..last as the map
 * holds them, a staging buffer's worth at a time so that an interrupt
 * (mdb_env_set_interrupt, mdb_txn_set_interrupt) stops it within one.
 */
static int copy_plain(MDB_txn *txn, struct outstream *o)
{
	MDB_env *env = txn->t_env;
	size_t ps = env->e_psize;
	int rc = write_metas(txn, o, &txn->t_dbs[DL_FREE_DBI], &txn->t_dbs[DL_MAIN_DBI],
		txn->t_next_pg - 1);
	size_t len = (size_t)(txn->t_next_pg - DL_NMETAS) * ps;
	/* The file may end before the snapshot's last page: pages a commit
	 * freed before they were ever written are not on disk (and a damaged
	 * meta may claim any last page).  The map past the end of the file is
	 * not readable (SIGBUS), so copy what the file holds; the copy then
	 * ends early just as the source does.  A file shorter than its tree
	 * pages is caught by the readers of the copy, as of the source.  An
	 * in-memory env has every page of its map. */
	struct stat st;
	if (!rc && env->e_fd >= 0) {
		if (fstat(env->e_fd, &st))
			rc = errno;
		else if ((uint64_t)st.st_size < (uint64_t)DL_NMETAS * ps)
			len = 0;
		else if ((uint64_t)st.st_size - (uint64_t)DL_NMETAS * ps < len)
			len = (size_t)((uint64_t)st.st_size - (uint64_t)DL_NMETAS * ps) / ps * ps;
	}
	if (!rc && len > env->e_mapsize - DL_NMETAS * ps)
		rc = MDB_CORRUPTED;	/* last page past the map */
	const char *p = env->e_map + DL_NMETAS * ps;
	while (!rc && len) {
		if (DL_UNLIKELY(dl_intr_pending(txn)))
			return dlmdb_txn_intr_fail(txn);
		size_t n = len < o->cap ? len : o->cap;
		rc = out_put(o, p, n);
		p += n;
		len -= n;
	}
	return rc;
}

/* Copy the snapshot of read txn txn to o. */
static int copy_snapshot(MDB_txn *txn, struct outstream *o, unsigned flags)
{
	int rc = (flags & MDB_CP_COMPACT) ? copy_compact(txn, o) : copy_plain(txn, o);
	if (!rc)
		rc = out_flush(o);
	return rc;
}

static int stream_init(struct outstream *o, MDB_env *env, int fd)
{
	size_t ps = env->e_psize;
	size_t per = ((size_t)1 << 20) / ps;
	memset(o, 0, sizeof *o);
	o->fd = fd;
	o->cap = (per ? per : 1) * ps;
	return (o->buf = malloc(o->cap)) ? 0 : ENOMEM;
}

static int txn_readable(MDB_txn *txn)
{
	if (!txn || !(txn->t_flags & DL_T_RDONLY))
		return EINVAL;
	return (txn->t_flags & (DL_T_DONE | DL_T_ERROR)) ? MDB_BAD_TXN : 0;
}

static int dl_u_txn_copyfd(MDB_txn *txn, mdb_filehandle_t fd, unsigned int flags)
{
	int rc = txn_readable(txn);
	if (rc)
		return rc;
	if (fd < 0 || (flags & ~MDB_CP_COMPACT))
		return EINVAL;
	struct outstream o;
	if ((rc = stream_init(&o, txn->t_env, fd)))
		return rc;
	rc = copy_snapshot(txn, &o, flags);
	free(o.buf);
	return rc;
}

int dlmdb_copy_to_map(MDB_txn *src, char *map, size_t cap, txnid_t *id)
{
	int rc = txn_readable(src);
	if (rc)
		return rc;
	struct outstream o;
	if ((rc = stream_init(&o, src->t_env, -1)))
		return rc;
	o.mem = map;
	o.memcap = cap;
	rc = copy_snapshot(src, &o, MDB_CP_COMPACT);
	free(o.buf);
	*id = src->t_id;
	return rc;
}

int mdb_env_copyfd2(MDB_env *env, mdb_filehandle_t fd, unsigned int flags)
{
	if (!env || fd < 0 || (flags & ~MDB_CP_COMPACT))
		return EINVAL;
	MDB_txn *txn;
	int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
	if (rc)
		return rc;
	rc = mdb_txn_copyfd(txn, fd, flags);
	mdb_txn_abort(txn);
	return rc;
}

int mdb_env_copyfd(MDB_env *env, mdb_filehandle_t fd)
{
	return mdb_env_copyfd2(env, fd, 0);
}

int mdb_env_copy2(MDB_env *env, const char *path, unsigned int flags)
{
	if (!env || !path)
		return EINVAL;
	char *file;
	size_t lp = strlen(path);
	if (env->e_flags & MDB_NOSUBDIR) {
		file = strdup(path);
	} else {
		file = malloc(lp + sizeof(MDB_DATANAME));
		if (file) {
			memcpy(file, path, lp);
			memcpy(file + lp, MDB_DATANAME, sizeof(MDB_DATANAME));
		}
	}
	if (!file)
		return ENOMEM;
	int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	free(file);
	if (fd < 0)
		return errno;
	int rc = mdb_env_copyfd2(env, fd, flags);
	if (!rc)
		rc = sync_dest(fd);
	if (close(fd) && !rc)
		rc = errno;
	return rc;
}

int mdb_env_copy(MDB_env *env, const char *path)
{
	return mdb_env_copy2(env, path, 0);
}

/* ---- the public entry points, one thread inside a write txn at a time (guard.c) ---- */

int mdb_txn_copyfd(MDB_txn *txn, mdb_filehandle_t fd, unsigned int flags)
{
	DL_GUARDED(txn, 0, dl_u_txn_copyfd(txn, fd, flags));
}
