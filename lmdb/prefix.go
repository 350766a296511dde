package lmdb

// PrefixCompression is a DBI flag (DLMDB's MDB_PREFIX_COMPRESSION, 0x100):
// the keys of each leaf page are stored as the length of the prefix they
// share with the page's anchor key plus the rest (cdlmdb/FORMAT.md,
// "Prefix-compressed leaves"). Lookups, cursor steps, puts and deletes work
// as on any DB and return whole keys. It takes effect when the DB is created
// (OpenDBI with Create) or, for the main DB, while it is empty; a DB keeps
// the flags it was created with. A file holding such a DB cannot be opened
// by stock LMDB (it reports a version mismatch instead of misreading it).
//
// Views. A key that shares bytes with its page's anchor is not stored whole
// in the map, so the engine decodes it into memory owned by the cursor that
// returned it. With RawRead set, such a key returned by Cursor.Get is valid
// only until the next operation on that cursor (or its Close, or the end of
// the transaction), not until the transaction ends as map views are;
// without RawRead every key is copied and nothing changes. Keys whose page
// shares nothing with them, and all values, remain views into the map.
//
// Not yet: combined with DupSort it is refused with Incompatible.
//
// See mdb_dbi_open and MDB_PREFIX_COMPRESSION.
const PrefixCompression = 0x100
