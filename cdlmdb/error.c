/*
 * error.c - error strings, version, assertion hook.
 */
#include "internal.h"

static const char *const dl_errtext[] = {
	/* indexed by code - MDB_KEYEXIST */
	"MDB_KEYEXIST: the key (or key/data pair) is already stored",
	"MDB_NOTFOUND: no matching key/data pair",
	"MDB_PAGE_NOTFOUND: a page number points outside the database",
	"MDB_CORRUPTED: a page has an unexpected type or layout",
	"MDB_PANIC: fatal error in the environment",
	"MDB_VERSION_MISMATCH: data or lock file has another format version",
	"MDB_INVALID: the file is not a database of this format",
	"MDB_MAP_FULL: the map size limit has been reached",
	"MDB_DBS_FULL: no more named databases can be opened (maxdbs)",
	"MDB_READERS_FULL: the reader table is full (maxreaders)",
	"MDB_TLS_FULL: thread-local storage keys exhausted",
	"MDB_TXN_FULL: the transaction has too many dirty pages",
	"MDB_CURSOR_FULL: the tree is too deep for a cursor",
	"MDB_PAGE_FULL: internal error, a page ran out of room",
	"MDB_MAP_RESIZED: the database grew beyond this process's map size",
	"MDB_INCOMPATIBLE: operation or flags do not fit this database",
	"MDB_BAD_RSLOT: reader slot used incorrectly",
	"MDB_BAD_TXN: the transaction has failed, ended or has an active child",
	"MDB_BAD_VALSIZE: key or data size is out of range",
	"MDB_BAD_DBI: the database handle is invalid or was changed",
	"MDB_PROBLEM: unexpected internal problem, the transaction must abort",
};

char *mdb_strerror(int err)
{
	if (err == MDB_SUCCESS)
		return (char *)"Successful return: 0";
	if (err >= MDB_KEYEXIST && err <= MDB_LAST_ERRCODE)
		return (char *)dl_errtext[err - MDB_KEYEXIST];
	if (err < 0)
		return (char *)"Unknown MDB error code";
	return strerror(err);
}

char *mdb_version(int *major, int *minor, int *patch)
{
	if (major)
		*major = MDB_VERSION_MAJOR;
	if (minor)
		*minor = MDB_VERSION_MINOR;
	if (patch)
		*patch = MDB_VERSION_PATCH;
	return (char *)MDB_VERSION_STRING;
}

void dlmdb_assert_fail(MDB_env *env, const char *msg, const char *file, int line)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s:%d: assertion failed: %s", file, line, msg);
	if (env && env->e_assert)
		env->e_assert(env, buf);
	fprintf(stderr, "%s\n", buf);
	abort();
}
