/*
 * dlmdb.h - the header name DLMDB's own programs include.
 *
 * DLMDB ships its API as dlmdb.h; ours is lmdb.h (the LMDB 0.9 API plus
 * DLMDB's extensions, with the same names and values).  A C program written
 * against DLMDB includes this file and compiles unchanged.
 */
#ifndef DLMDB_H
#define DLMDB_H
#include "lmdb.h"
#endif /* DLMDB_H */
