/*
 * copy.c - hot backups: mdb_env_copy*, plain and compacting.
 *
 * Both run inside a read transaction, so the snapshot is stable while
 * writers continue.  The plain copy writes two fresh meta pages describing
 * the snapshot followed by pages 2..last of the map.  The compacting copy
 * walks every tree (free DB excluded: the copy has no free pages) and
 * renumbers pages in post-order as it writes them, patching child pointers,
 * overflow page numbers and named-DB roots on the way.
 */
#include "internal.h"

static int write_at(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;
	while (len) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int write_metas(MDB_txn *txn, int fd, const dl_dbrec *freedb, const dl_dbrec *maindb,
	pgno_t last)
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
	m.m_version = DL_DATA_VERSION;
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
	int rc = write_at(fd, buf, 2 * ps, 0);
	free(buf);
	return rc;
}

struct compactor {
	MDB_txn *txn;
	int fd;
	pgno_t next;	/* next page number in the copy */
	size_t psize;
};

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
	if (pg + n > cp->txn->t_next_pg)
		return MDB_CORRUPTED;
	pgno_t np = cp->next;
	cp->next += n;
	/* header first (with the new number), then the rest verbatim */
	dl_page hdr = *ov;
	hdr.p_pgno = np;
	if ((rc = write_at(cp->fd, &hdr, sizeof hdr, (off_t)(np * cp->psize))))
		return rc;
	rc = write_at(cp->fd, (char *)ov + sizeof hdr, n * cp->psize - sizeof hdr,
		(off_t)(np * cp->psize + sizeof hdr));
	*out = np;
	return rc;
}

static int copy_tree(struct compactor *cp, pgno_t pg, int is_main, unsigned depth, pgno_t *out)
{
	dl_page *src;
	int rc;
	if (depth > DL_MAX_DEPTH * 2)
		return MDB_CORRUPTED;
	if ((rc = dlmdb_page_get(cp->txn, pg, &src)))
		return rc;
	dl_page *p = malloc(cp->psize);
	if (!p)
		return ENOMEM;
	memcpy(p, src, cp->psize);
	unsigned n = dl_pg_nkeys(p);
	for (unsigned i = 0; i < n && !rc; i++) {
		if (dl_pg_is_leaf2(p))
			break;
		dl_node *nd = dl_pg_node(p, i);
		pgno_t np;
		if (dl_pg_is_branch(p)) {
			if (!(rc = copy_tree(cp, dl_node_child(nd), is_main, depth + 1, &np)))
				dl_node_set_child(nd, np);
		} else if (nd->n_flags & DL_N_BIG) {
			if (!(rc = copy_overflow(cp, dl_node_bigpg(nd), &np)))
				memcpy(dl_node_data(nd), &np, sizeof np);
		} else if ((nd->n_flags & DL_N_TREE) && (is_main || (nd->n_flags & DL_N_DUP)) &&
			   dl_node_dsize(nd) == sizeof(dl_dbrec)) {
			dl_dbrec rec;
			memcpy(&rec, dl_node_data(nd), sizeof rec);
			if (rec.d_root != DL_NO_PAGE &&
			    !(rc = copy_tree(cp, rec.d_root, 0, depth + 1, &np))) {
				rec.d_root = np;
				memcpy(dl_node_data(nd), &rec, sizeof rec);
			}
		}
	}
	if (!rc) {
		p->p_pgno = cp->next++;
		*out = p->p_pgno;
		rc = write_at(cp->fd, p, cp->psize, (off_t)(p->p_pgno * cp->psize));
	}
	free(p);
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
	if (flags & MDB_CP_COMPACT) {
		struct compactor cp = {txn, fd, DL_NMETAS, env->e_psize};
		dl_dbrec freedb, maindb = txn->t_dbs[DL_MAIN_DBI];
		memset(&freedb, 0, sizeof freedb);
		freedb.d_flags = txn->t_dbs[DL_FREE_DBI].d_flags;
		freedb.d_root = DL_NO_PAGE;
		if (maindb.d_root != DL_NO_PAGE)
			rc = copy_tree(&cp, maindb.d_root, 1, 1, &maindb.d_root);
		if (!rc)
			rc = write_metas(txn, fd, &freedb, &maindb, cp.next - 1);
	} else {
		rc = write_metas(txn, fd, &txn->t_dbs[DL_FREE_DBI], &txn->t_dbs[DL_MAIN_DBI],
			txn->t_next_pg - 1);
		size_t ps = env->e_psize;
		size_t len = (size_t)(txn->t_next_pg - DL_NMETAS) * ps;
		if (!rc && len)
			rc = write_at(fd, env->e_map + DL_NMETAS * ps, len, (off_t)(DL_NMETAS * ps));
	}
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
	if (!rc && fsync(fd))
		rc = errno;
	if (close(fd) && !rc)
		rc = errno;
	return rc;
}

int mdb_env_copy(MDB_env *env, const char *path)
{
	return mdb_env_copy2(env, path, 0);
}
