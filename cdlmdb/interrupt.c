/*
 * interrupt.c - stopping long operations from another thread or a signal
 * handler: mdb_env_set_interrupt (every txn of a handle) and
 * mdb_txn_set_interrupt (one txn family).
 *
 * Both only store a flag.  The engine looks at the two flags at every page
 * visit (dlmdb_page_get, txn.c) and at every staging buffer of a plain
 * copy (copy.c), which bounds the work done after a flag is set to one
 * page's worth: an in-leaf cursor step, which reads no other page, goes on,
 * the next step onto another page stops.  A stopped operation returns
 * EINTR and fails its txn (DL_T_ERROR): later operations of that txn
 * answer MDB_BAD_TXN, a commit too; the txn must be aborted (or, read-only,
 * reset and renewed).  A write txn's changes are in its dirty pages only,
 * so nothing half-done reaches the map; once a commit has begun writing
 * its pages it visits no page any more and completes.
 *
 * The loads are relaxed atomics: no ordering is needed, only that a store
 * by another thread is seen within a bounded time, which every CPU the
 * engine runs on gives.  A store of an int is async-signal-safe.
 */
#include "internal.h"

int mdb_env_set_interrupt(MDB_env *env, int on)
{
	if (!env)
		return EINVAL;
	__atomic_store_n(&env->e_intr, on != 0, __ATOMIC_RELAXED);
	return 0;
}

int mdb_txn_set_interrupt(MDB_txn *txn, int on)
{
	if (!txn || !txn->t_intr)
		return EINVAL;
	__atomic_store_n(txn->t_intr, on != 0, __ATOMIC_RELAXED);
	return 0;
}

/* The page visit of txn found an interrupt: fail the txn. */
__attribute__((cold, noinline)) int dlmdb_txn_intr_fail(MDB_txn *txn)
{
	return dl_txn_fail(txn, EINTR);
}
