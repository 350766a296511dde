#include "../lmdb.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CK(x) do { int _r = (x); if (_r) { printf("%s:%d %s -> %s\n", __FILE__, __LINE__, #x, mdb_strerror(_r)); exit(1);} } while (0)
int main(void) {
	MDB_env *env; MDB_txn *txn; MDB_dbi dbi; MDB_val k, v;
	system("rm -rf /tmp/smk && mkdir -p /tmp/smk");
	CK(mdb_env_create(&env));
	CK(mdb_env_set_mapsize(env, 64<<20));
	CK(mdb_env_open(env, "/tmp/smk", 0, 0664));
	char kb[32], vb[3000];
	for (int round = 0; round < 3; round++) {
	CK(mdb_txn_begin(env, NULL, 0, &txn));
	CK(mdb_dbi_open(txn, NULL, 0, &dbi));
	for (int i = 0; i < 20000; i++) {
		snprintf(kb, sizeof kb, "key%08d", (i * 7919) % 20000);
		k.mv_size = strlen(kb); k.mv_data = kb;
		v.mv_size = (i % 100 == 0) ? 2500 : 10 + round; memset(vb, 'a' + round, v.mv_size); v.mv_data = vb;
		CK(mdb_put(txn, dbi, &k, &v, 0));
	}
	CK(mdb_txn_commit(txn));
	}
	CK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	MDB_cursor *c; CK(mdb_cursor_open(txn, dbi, &c));
	int n = 0; char prev[32] = "";
	while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0) {
		if (memcmp(prev, k.mv_data, k.mv_size) >= 0 && n) { printf("order!\n"); return 1; }
		memcpy(prev, k.mv_data, k.mv_size); n++;
	}
	printf("count %d\n", n);
	MDB_stat st; CK(mdb_stat(txn, dbi, &st));
	printf("depth %u br %zu leaf %zu ov %zu ent %zu\n", st.ms_depth, st.ms_branch_pages, st.ms_leaf_pages, st.ms_overflow_pages, st.ms_entries);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	CK(mdb_txn_begin(env, NULL, 0, &txn));
	for (int i = 0; i < 20000; i += 2) {
		snprintf(kb, sizeof kb, "key%08d", i);
		k.mv_size = strlen(kb); k.mv_data = kb;
		CK(mdb_del(txn, dbi, &k, NULL));
	}
	CK(mdb_txn_commit(txn));
	CK(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn));
	CK(mdb_stat(txn, dbi, &st));
	printf("depth %u br %zu leaf %zu ov %zu ent %zu\n", st.ms_depth, st.ms_branch_pages, st.ms_leaf_pages, st.ms_overflow_pages, st.ms_entries);
	mdb_txn_abort(txn);
	MDB_envinfo ei; CK(mdb_env_info(env, &ei)); printf("last pg %zu txn %zu\n", ei.me_last_pgno, ei.me_last_txnid);
	mdb_env_close(env);
	return 0;
}
