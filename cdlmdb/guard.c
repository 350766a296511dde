/*
 * guard.c - a write txn used from two threads at once is refused.
 *
 * The design is written down in FORMAT.md ("One thread inside a write txn
 * at a time").  In short: every thread that calls into a write txn owns a
 * slot (dl_gslot) whose gs_active names the txn it is inside.  A write txn
 * remembers the slot of the thread that used it last (t_gowner).  The
 * common call, from that same thread, stores gs_active, checks that
 * t_gowner is its slot with no flag bit set, and goes on: no locked
 * instruction.  A call from any other thread takes the slow path below: it
 * raises DL_G_CONTEND (which sends the owner's next call to the slow path
 * too), makes every thread of the process pass a full barrier
 * (membarrier), and then looks at the old owner's slot.  If the old owner
 * is inside the txn, the two calls overlap: the txn gets DL_G_CONFLICT for
 * good and the newcomer gets EBUSY.  Otherwise the newcomer becomes the
 * owner (a goroutine that moved to another thread between two calls).
 *
 * The pair "store my gs_active, then load t_gowner" on the fast
 * path and "set DL_G_CONTEND in t_gowner, barrier on every thread, load the owner's
 * gs_active" on the slow path is Dekker's: at least one side sees the
 * other.  Where membarrier is missing (old kernels, qemu-user, seccomp),
 * t_gowner always keeps DL_G_CONTEND set (dlmdb_gs_fence): every call
 * then takes the slow path, whose lock and fences order it.
 *
 * Slots are never freed: a thread's slot goes back to a free list when the
 * thread exits and is handed to the next new thread, so a slow path may
 * always read an old owner's slot, even after that thread is gone.
 */
#include "internal.h"

#include <pthread.h>
#include <stddef.h>
#include <sched.h>
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

DL_HIDDEN __thread dl_gslot *dlmdb_gs_mine;
DL_HIDDEN int dlmdb_gs_fence = 1;

static pthread_once_t gs_once = PTHREAD_ONCE_INIT;
static pthread_key_t gs_key;
static int gs_key_ok;
static pthread_mutex_t gs_free_mu = PTHREAD_MUTEX_INITIALIZER;
static dl_gslot *gs_free;

#if defined(__linux__) && defined(SYS_membarrier)
static int gs_membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}
#endif

/* A thread ends: its slot is idle (no call of it can be running) and goes
 * to the free list. */
static void gs_thread_exit(void *p)
{
	dl_gslot *s = p;
	__atomic_store_n(&s->gs_active, NULL, __ATOMIC_RELEASE);
	pthread_mutex_lock(&gs_free_mu);
	s->gs_next = gs_free;
	gs_free = s;
	pthread_mutex_unlock(&gs_free_mu);
}

static void gs_init(void)
{
	gs_key_ok = pthread_key_create(&gs_key, gs_thread_exit) == 0;
#if defined(__linux__) && defined(SYS_membarrier)
	/* DLMDB_GUARD_FENCE=1 takes the path of a system without membarrier
	 * (the tests run it both ways) */
	const char *force = getenv("DLMDB_GUARD_FENCE");
	if (force && *force == '1')
		return;
	int have = gs_membarrier(MEMBARRIER_CMD_QUERY);
	if (have > 0 && (have & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    gs_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
	    gs_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		__atomic_store_n(&dlmdb_gs_fence, 0, __ATOMIC_RELEASE);
#endif
}

dl_gslot *dlmdb_gslot_make(void)
{
	pthread_once(&gs_once, gs_init);
	dl_gslot *s;
	pthread_mutex_lock(&gs_free_mu);
	if ((s = gs_free))
		gs_free = s->gs_next;
	pthread_mutex_unlock(&gs_free_mu);
	if (!s && !(s = calloc(1, sizeof(*s))))
		return NULL;
	s->gs_next = NULL;
	if (gs_key_ok)
		pthread_setspecific(gs_key, s);
	dlmdb_gs_mine = s;
	return s;
}

/* Every running thread of the process passes a full barrier. */
static void gs_sync(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
	if (!__atomic_load_n(&dlmdb_gs_fence, __ATOMIC_ACQUIRE) &&
	    gs_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
		return;
#endif
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void gs_lock(MDB_txn *txn)
{
	while (__atomic_exchange_n(&txn->t_glock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void gs_unlock(MDB_txn *txn)
{
	__atomic_store_n(&txn->t_glock, 0, __ATOMIC_RELEASE);
}

/* The bits every store of t_gowner keeps: DL_G_CONTEND when there is no
 * membarrier, so that no call takes the fast path. */
static uintptr_t gs_keep(void)
{
	return __atomic_load_n(&dlmdb_gs_fence, __ATOMIC_ACQUIRE) ? DL_G_CONTEND : 0;
}

void dlmdb_guard_bind(MDB_txn *txn)
{
	dl_gslot *s = dlmdb_gs_mine;
	if (!s)
		s = dlmdb_gslot_make();
	/* 0 (no memory): the first call takes the slow path */
	txn->t_gowner = (uintptr_t)s | gs_keep();
	txn->t_glock = 0;
	txn->t_gcalls = 0;
}

_Static_assert(offsetof(struct MDB_txn, t_gcalls) == 0, "mdb_txn_calls: the count is the first word");

unsigned mdb_txn_calls(MDB_txn *txn)
{
	return txn ? __atomic_load_n(&txn->t_gcalls, __ATOMIC_ACQUIRE) : 0;
}

/* Any thread, while another may be inside: only t_gowner changes, under
 * t_glock, as in a slow path.  The thread that calls next finds
 * DL_G_CONFLICT and fails the txn itself (dlmdb_guard_slow). */
int mdb_txn_fail_busy(MDB_txn *txn)
{
	if (!txn)
		return EINVAL;
	if (txn->t_flags & DL_T_RDONLY)
		return 0;
	gs_lock(txn);
	__atomic_fetch_or(&txn->t_gowner, DL_G_CONFLICT, __ATOMIC_SEQ_CST);
	gs_unlock(txn);
	return 0;
}

static void gs_undo(dl_gtok *g)
{
	__atomic_store_n(&g->g_slot->gs_active, g->g_prev, __ATOMIC_RELEASE);
	g->g_slot = NULL;
}

/* Under t_glock: is a thread other than s's inside txn?  *old gets the
 * owner's slot. */
static int gs_overlap(MDB_txn *txn, dl_gslot *s, dl_gslot **old)
{
	uintptr_t w = __atomic_load_n(&txn->t_gowner, __ATOMIC_ACQUIRE);
	*old = (dl_gslot *)(w & ~DL_G_BITS);
	return *old && *old != s && __atomic_load_n(&(*old)->gs_active, __ATOMIC_ACQUIRE) == txn;
}

int dlmdb_guard_slow(MDB_txn *txn, dl_gtok *g, int end)
{
	dl_gslot *s = g->g_slot, *old;
	gs_lock(txn);
	__atomic_fetch_or(&txn->t_gowner, DL_G_CONTEND, __ATOMIC_SEQ_CST);
	gs_sync();
	int overlap = gs_overlap(txn, s, &old);
	uintptr_t conflict = (__atomic_load_n(&txn->t_gowner, __ATOMIC_RELAXED) & DL_G_CONFLICT) |
			     (overlap ? DL_G_CONFLICT : 0);
	/* only slow paths write t_gowner, all under t_glock; the store also
	 * drops DL_G_CONTEND (unless there is no membarrier) */
	__atomic_store_n(&txn->t_gowner, (uintptr_t)(overlap ? old : s) | conflict | gs_keep(),
			 __ATOMIC_SEQ_CST);
	gs_unlock(txn);

	if (end) {
		/* Commit, abort and the like must not give up: they wait until
		 * the overlapping call has left, then run alone.  DL_G_CONFLICT
		 * stays set, so no call takes the fast path any more: every
		 * newcomer passes the lock and finds us inside. */
		while (overlap) {
			sched_yield();
			gs_lock(txn);
			overlap = gs_overlap(txn, s, &old);
			if (!overlap)
				__atomic_store_n(&txn->t_gowner, (uintptr_t)s | DL_G_CONFLICT | gs_keep(),
						 __ATOMIC_RELEASE);
			gs_unlock(txn);
		}
		if (conflict)
			dl_txn_fail(txn, EBUSY);
		return 0;
	}
	if (overlap) {
		gs_undo(g);
		return EBUSY;
	}
	if (conflict) {
		/* we own the txn now: record why it cannot commit */
		dl_txn_fail(txn, EBUSY);
		gs_undo(g);
		return MDB_BAD_TXN;
	}
	return 0;
}
