/*
 * The few stock LMDB 0.9 entry points the cgo-floor loop needs, declared
 * here because stock lmdb.h is not on our include path. The definitions come
 * from github.com/PowerDNS/lmdb-go/lmdb, linked into the same binary (its C
 * symbols are the unprefixed mdb_* names). Constant values are LMDB's
 * public ones.
 */
#include <stddef.h>
#include <sys/types.h>

typedef struct MDB_env MDB_env;
typedef struct MDB_txn MDB_txn;
typedef struct MDB_cursor MDB_cursor;
typedef unsigned int MDB_dbi;
typedef struct MDB_val {
	size_t mv_size;
	void *mv_data;
} MDB_val;

#define MDB_RDONLY 0x20000
#define MDB_NOTLS 0x200000
#define MDB_NOTFOUND (-30798)
#define MDB_FIRST 0
#define MDB_NEXT 8

int mdb_env_create(MDB_env **env);
int mdb_env_set_mapsize(MDB_env *env, size_t size);
int mdb_env_open(MDB_env *env, const char *path, unsigned int flags, mode_t mode);
void mdb_env_close(MDB_env *env);
int mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn);
void mdb_txn_abort(MDB_txn *txn);
int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi);
int mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data);
int mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor);
void mdb_cursor_close(MDB_cursor *cursor);
int mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, int op);
char *mdb_strerror(int err);
