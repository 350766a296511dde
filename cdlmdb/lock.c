/*
 * lock.c - the lock file: first-opener detection, writer mutex, reader table.
 *
 * Protocol (compatible with LMDB's so mixed opens are noticed):
 *  - byte 0 of the lock file carries an fcntl lock.  An opener that gets it
 *    exclusively is alone and (re)initialises the file; afterwards everyone
 *    holds it shared while the environment is open.  We take it as an
 *    open-file-description (OFD) lock: those conflict with LMDB's classic
 *    record locks even inside one process, so a stock LMDB opening the same
 *    environment in our process is refused instead of wiping our lock file
 *    (and two of our own handles on one path share it correctly).
 *  - the header starts with LMDB's magic but a different format word, so a
 *    stock LMDB opening our live lock file fails with MDB_VERSION_MISMATCH and
 *    we fail the same way on theirs.
 *  - every open handle holds a shared OFD lock on the byte at offset <pid>;
 *    reader_check asks the kernel whether any lock is still held there to
 *    find slots of dead processes.
 *  - the writer mutex and the reader-table mutex are robust process-shared
 *    pthread mutexes, so a writer killed mid-transaction does not wedge the
 *    environment.
 */
#include "internal.h"
#include <linux/futex.h>
#include <sys/syscall.h>

static int fcntl_lock(int fd, int cmd, short type, off_t off)
{
	struct flock fl;
	memset(&fl, 0, sizeof fl);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = off;
	fl.l_len = 1;
	fl.l_pid = 0;
	int rc;
	while ((rc = fcntl(fd, cmd, &fl)) == -1 && errno == EINTR)
		;
	if (rc == -1)
		return errno;
	if (cmd == F_GETLK)
		return fl.l_type == F_UNLCK ? 0 : EBUSY;
	return 0;
}

static int mutex_setup(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int rc = pthread_mutexattr_init(&a);
	if (rc)
		return rc;
	memset(m, 0, sizeof *m);
	rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!rc)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!rc)
		rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	if (!rc)
		rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return rc;
}

static int mutex_take(pthread_mutex_t *m)
{
	int rc = pthread_mutex_lock(m);
	if (rc == EOWNERDEAD) {
		/* the previous owner died; the data it guarded is still sound:
		 * a dead writer never wrote a meta page, a dead reader-table
		 * editor only half-claimed a slot */
		rc = pthread_mutex_consistent(m);
	}
	return rc;
}

/* A lock header as a first opener leaves it, keeping the failed-commit
 * record failed. */
static int header_init(dl_lockhdr *h, uint64_t failed)
{
	int rc;
	memset(h, 0, sizeof *h);
	h->l_failed = failed;
	if ((rc = mutex_setup(&h->l_rmutex)))
		return rc;
	h->l_txnid = 0;
	h->l_numreaders = 0;
	h->l_format = DL_LOCK_FORMAT;
	__atomic_store_n(&h->l_magic, DL_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* The tag this handle's parked reader slot carries (dlmdb_reader_park). */
static void park_tag_init(MDB_env *env)
{
	static uint32_t handles;
	env->e_park_tag = DL_SLOT_PARKED | (uint64_t)(uint32_t)env->e_pid << 32 |
		__atomic_add_fetch(&handles, 1, __ATOMIC_RELAXED);
}

int dlmdb_lock_open(MDB_env *env, const char *lpath, int mode, int *excl)
{
	int rc;
	env->e_lfd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, mode);
	if (env->e_lfd < 0)
		return errno;
	rc = fcntl_lock(env->e_lfd, F_OFD_SETLK, F_WRLCK, 0);
	if (rc == 0) {
		*excl = 1;
	} else if (rc == EACCES || rc == EAGAIN) {
		*excl = 0;
		rc = fcntl_lock(env->e_lfd, F_OFD_SETLKW, F_RDLCK, 0);
		if (rc)
			return rc;
	} else {
		return rc;
	}
	size_t want = DL_LCK_READERS_OFF + (size_t)env->e_maxreaders * sizeof(dl_reader);
	struct stat st;
	if (*excl) {
		/* Alone: size the file but keep its pages.  Old reader slots need no
		 * wiping because l_numreaders is reset below and nothing looks past
		 * it; truncating to zero first would throw away the page cache and
		 * make every open fault in a freshly zeroed table. */
		if (fstat(env->e_lfd, &st))
			return errno;
		if ((size_t)st.st_size != want && ftruncate(env->e_lfd, (off_t)want))
			return errno;
	} else {
		if (fstat(env->e_lfd, &st))
			return errno;
		if ((size_t)st.st_size < DL_LCK_READERS_OFF + sizeof(dl_reader))
			return MDB_INVALID;
		want = (size_t)st.st_size;
		env->e_maxreaders = (unsigned)((want - DL_LCK_READERS_OFF) / sizeof(dl_reader));
	}
	void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED, env->e_lfd, 0);
	if (m == MAP_FAILED)
		return errno;
	env->e_lck = m;
	env->e_lcksize = want;
	dl_lockhdr *h = env->e_lck;
	if (*excl) {
		/* a failed commit's id outlives the handles that saw it fail: the
		 * data file may still hold its meta (meta.c, meta_take_back) */
		uint64_t failed = (h->l_magic == DL_MAGIC && h->l_format == DL_LOCK_FORMAT) ?
			h->l_failed : 0;
		if ((rc = header_init(h, failed)))
			return rc;
	} else {
		if (h->l_magic != DL_MAGIC)
			return MDB_INVALID;
		if (h->l_format != DL_LOCK_FORMAT)
			return MDB_VERSION_MISMATCH;
	}
	/* liveness marker for reader_check */
	fcntl_lock(env->e_lfd, F_OFD_SETLK, F_RDLCK, (off_t)env->e_pid);
	park_tag_init(env);
	return 0;
}

/* The lock header and reader table of an MDB_INMEMORY env: the same
 * structures in anonymous memory, seen by this handle only (inmem.c). */
int dlmdb_lock_open_mem(MDB_env *env)
{
	size_t want = DL_LCK_READERS_OFF + (size_t)env->e_maxreaders * sizeof(dl_reader);
	void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return errno;
	env->e_lck = m;
	env->e_lcksize = want;
	int rc = header_init(env->e_lck, 0);
	if (rc)
		return rc;
	park_tag_init(env);
	return 0;
}

int dlmdb_lock_share(MDB_env *env)
{
	if (env->e_lfd < 0)
		return 0;
	return fcntl_lock(env->e_lfd, F_OFD_SETLK, F_RDLCK, 0);
}

/* Take back a slot this handle parked; 0 when another reader has claimed
 * it meanwhile (then it is theirs, and we must not touch it). */
static int unpark(MDB_env *env, dl_reader *slot)
{
	uint64_t tag = env->e_park_tag;
	return __atomic_compare_exchange_n(&slot->r_tid, &tag, 0, 0,
		__ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

void dlmdb_lock_close(MDB_env *env)
{
	dl_reader *parked = __atomic_exchange_n(&env->e_rslot_spare, NULL, __ATOMIC_ACQ_REL);
	if (parked && unpark(env, parked))
		dlmdb_reader_release(parked);
	if (env->e_lck && env->e_lck != &env->e_nolock) {
		/* other slots with our pid are released by their txns (or, if we
		 * die, reclaimed by mdb_reader_check) */
		munmap((void *)env->e_lck, env->e_lcksize);
	}
	env->e_lck = NULL;
	if (env->e_lfd >= 0)
		close(env->e_lfd);
	env->e_lfd = -1;
}

/*
 * The writer lock: one word of the lock header, l_wowner, holding the pid of
 * the process whose write txn is running (0: none).  It belongs to that
 * process, not to a thread, so any thread of the process may end the txn
 * (a goroutine that moved to another OS thread, a finalizer): the commit or
 * abort clears the word.  Threads of one process and other processes meet
 * on the same word, taking it with a compare-and-swap and sleeping on it
 * with a futex (shared: the lock file is mapped by every process, and two
 * handles of one process map it twice).
 *
 * A holder that died leaves its pid in the word.  Every open handle holds a
 * lock on the byte of the lock file at the offset of its pid (lock_open),
 * which the kernel drops when the process exits: a waiter that finds nobody
 * holding the holder's byte takes the word over.  The dead writer never
 * wrote a meta page (or its commit is complete), so the data needs nothing.
 * A waiter checks before it sleeps and again at every timeout.
 *
 * An in-memory env's header is private: its writers are all ours.  Under
 * NOLOCK there is no lock at all: the caller serialises writers (LMDB).
 */
#define DL_WLOCK_RECHECK_NS 50000000L	/* a sleeping waiter's liveness check: 50 ms */

static long futex(uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, w, op, val, ts, NULL, 0);
}

/* Has process pid, holder of the writer lock, exited? */
static int holder_gone(MDB_env *env, uint32_t pid)
{
	if (pid == (uint32_t)env->e_pid || env->e_lfd < 0)
		return 0;	/* ourselves; an in-memory env has no other process */
	return fcntl_lock(env->e_lfd, F_GETLK, F_WRLCK, (off_t)pid) == 0;
}

int dlmdb_wlock(MDB_env *env)
{
	if (env->e_flags & MDB_NOLOCK)
		return 0;
	dl_lockhdr *h = env->e_lck;
	uint32_t me = (uint32_t)env->e_pid;
	for (;;) {
		uint32_t cur = 0;
		if (__atomic_compare_exchange_n(&h->l_wowner, &cur, me, 0, __ATOMIC_SEQ_CST,
			__ATOMIC_SEQ_CST))
			return 0;
		if (holder_gone(env, cur)) {
			/* take it from the dead holder (only one waiter wins) */
			if (__atomic_compare_exchange_n(&h->l_wowner, &cur, me, 0, __ATOMIC_SEQ_CST,
				__ATOMIC_SEQ_CST))
				return 0;
			continue;
		}
		struct timespec ts = {0, DL_WLOCK_RECHECK_NS};
		__atomic_add_fetch(&h->l_wwait, 1, __ATOMIC_SEQ_CST);
		long r = futex((uint32_t *)&h->l_wowner, FUTEX_WAIT, cur, &ts);
		int err = r ? errno : 0;
		__atomic_sub_fetch(&h->l_wwait, 1, __ATOMIC_SEQ_CST);
		if (r && err != EAGAIN && err != EINTR && err != ETIMEDOUT)
			return err;
	}
}

void dlmdb_wunlock(MDB_env *env)
{
	if (env->e_flags & MDB_NOLOCK)
		return;
	dl_lockhdr *h = env->e_lck;
	__atomic_store_n(&h->l_wowner, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&h->l_wwait, __ATOMIC_SEQ_CST))
		futex((uint32_t *)&h->l_wowner, FUTEX_WAKE, 1, NULL);
}

static inline dl_reader *reader_at(MDB_env *env, unsigned i)
{
	return (dl_reader *)((char *)env->e_lck + DL_LCK_READERS_OFF) + i;
}

int dlmdb_reader_acquire(MDB_env *env, dl_reader **slot)
{
	if (env->e_flags & MDB_NOLOCK) {
		*slot = NULL;
		return 0;
	}
	/* the slot the last read txn of this handle left behind, if any: it is
	 * ours already, so no trip through the reader-table mutex */
	if (__atomic_load_n(&env->e_rslot_spare, __ATOMIC_RELAXED)) {
		dl_reader *p = __atomic_exchange_n(&env->e_rslot_spare, NULL, __ATOMIC_ACQ_REL);
		if (p && unpark(env, p)) {
			p->r_tid = (uint64_t)pthread_self();
			*slot = p;
			return 0;
		}
		/* claimed by a reader that found the table full: take another */
	}
	dl_lockhdr *h = env->e_lck;
	int rc = mutex_take(&h->l_rmutex);
	if (rc)
		return rc;
	unsigned n = h->l_numreaders, i;
	for (i = 0; i < n; i++)
		if (reader_at(env, i)->r_pid == 0)
			break;
	if (i == n && n >= env->e_maxreaders) {
		/* Full.  A slot parked by some handle (of any process) pins
		 * nothing and would be free under LMDB's rules: claim it. */
		for (i = 0; i < n; i++) {
			dl_reader *r = reader_at(env, i);
			uint64_t tid = __atomic_load_n(&r->r_tid, __ATOMIC_ACQUIRE);
			if ((tid & DL_SLOT_PARKED) && __atomic_load_n(&r->r_pid, __ATOMIC_ACQUIRE) &&
			    __atomic_compare_exchange_n(&r->r_tid, &tid, (uint64_t)pthread_self(), 0,
				__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				break;
		}
		if (i == n) {
			pthread_mutex_unlock(&h->l_rmutex);
			return MDB_READERS_FULL;
		}
	} else if (i == n) {
		h->l_numreaders = n + 1;
	}
	dl_reader *r = reader_at(env, i);
	r->r_txnid = ~(uint64_t)0;
	r->r_tid = (uint64_t)pthread_self();
	__atomic_store_n(&r->r_pid, (uint32_t)env->e_pid, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&h->l_rmutex);
	*slot = r;
	return 0;
}

void dlmdb_reader_release(dl_reader *slot)
{
	if (!slot)
		return;
	__atomic_store_n(&slot->r_txnid, ~(uint64_t)0, __ATOMIC_RELEASE);
	__atomic_store_n(&slot->r_pid, 0, __ATOMIC_RELEASE);
}

/*
 * Give a slot back to this handle rather than to the table: it stays owned
 * by our pid, idle (pins nothing), with the handle's park tag in place of a
 * thread id (mdb_reader_list leaves it out), for the next reader of this
 * handle to take without the mutex.  One slot is kept; any other is
 * released.
 *
 * Under LMDB's rules (MDB_NOTLS, as lmdb-go opens) the slot would be free,
 * so a reader of any handle or process that finds the table full claims a
 * parked slot instead of failing.  Both sides swap the tag out of r_tid
 * with one compare-and-swap, so exactly one of them gets the slot; the tag
 * names the handle, so a slot claimed and later parked by someone else is
 * never mistaken for ours.  A dead process's parked slot is reclaimed by
 * mdb_reader_check like any other, and lock_close releases the parked slot
 * (if still ours) when the handle closes.
 */
void dlmdb_reader_park(MDB_env *env, dl_reader *slot)
{
	if (!slot)
		return;
	__atomic_store_n(&slot->r_txnid, DL_SLOT_IDLE, __ATOMIC_RELEASE);
	__atomic_store_n(&slot->r_tid, env->e_park_tag, __ATOMIC_RELEASE);
	dl_reader *none = NULL;
	if (!__atomic_compare_exchange_n(&env->e_rslot_spare, &none, slot, 0,
		__ATOMIC_ACQ_REL, __ATOMIC_RELAXED) && unpark(env, slot))
		dlmdb_reader_release(slot);
}

txnid_t dlmdb_oldest_reader(MDB_env *env, txnid_t dflt)
{
	if (env->e_flags & MDB_NOLOCK)
		return dflt;
	txnid_t oldest = dflt;
	unsigned n = __atomic_load_n(&env->e_lck->l_numreaders, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n; i++) {
		dl_reader *r = reader_at(env, i);
		if (!__atomic_load_n(&r->r_pid, __ATOMIC_ACQUIRE))
			continue;
		txnid_t t = __atomic_load_n(&r->r_txnid, __ATOMIC_ACQUIRE);
		if (t < oldest)
			oldest = t;
	}
	return oldest;
}

int mdb_reader_list(MDB_env *env, MDB_msg_func *func, void *ctx)
{
	char line[128];
	if (!env || !func)
		return EINVAL;
	if (!env->e_opened || (env->e_flags & MDB_NOLOCK))
		return func("(no reader locks)\n", ctx) < 0 ? -1 : 0;
	unsigned n = env->e_lck->l_numreaders;
	int any = 0, rc = 0;
	for (unsigned i = 0; i < n && rc >= 0; i++) {
		dl_reader *r = reader_at(env, i);
		uint32_t pid = r->r_pid;
		if (!pid)
			continue;
		txnid_t t = r->r_txnid;
		if (t == DL_SLOT_IDLE && (r->r_tid == 0 || (r->r_tid & DL_SLOT_PARKED)))
			continue;	/* parked for a later reader (reader_park) */
		if (!any) {
			any = 1;
			rc = func("    pid     thread     txnid\n", ctx);
			if (rc < 0)
				break;
		}
		if (t == ~(uint64_t)0)
			snprintf(line, sizeof line, "%10u %zx -\n", (unsigned)pid, (size_t)r->r_tid);
		else
			snprintf(line, sizeof line, "%10u %zx %" PRIu64 "\n", (unsigned)pid,
				(size_t)r->r_tid, (uint64_t)t);
		rc = func(line, ctx);
	}
	if (!any && rc >= 0)
		rc = func("(no active readers)\n", ctx);
	return rc < 0 ? rc : 0;
}

int mdb_reader_check(MDB_env *env, int *dead)
{
	if (!env)
		return EINVAL;
	if (dead)
		*dead = 0;
	if (!env->e_opened || (env->e_flags & MDB_NOLOCK))
		return 0;
	dl_lockhdr *h = env->e_lck;
	int rc = mutex_take(&h->l_rmutex);
	if (rc)
		return rc;
	int cleared = 0;
	unsigned n = h->l_numreaders;
	for (unsigned i = 0; i < n; i++) {
		dl_reader *r = reader_at(env, i);
		uint32_t pid = r->r_pid;
		if (!pid || pid == (uint32_t)env->e_pid)
			continue;
		/* does anybody still hold the liveness byte of this pid? */
		if (fcntl_lock(env->e_lfd, F_GETLK, F_WRLCK, (off_t)pid) == 0) {
			dlmdb_reader_release(r);
			cleared++;
		}
	}
	pthread_mutex_unlock(&h->l_rmutex);
	if (dead)
		*dead = cleared;
	return 0;
}
