// Package dlmdb is the idiomatic face of dlmdb-go: small, documented helpers
// over the drop-in binding in package lmdb for the features DLMDB adds to
// LMDB.
//
// Package lmdb (github.com/dlmdb/dlmdb-go/lmdb) offers the whole LMDB API in
// the shape of github.com/PowerDNS/lmdb-go, plus the DLMDB extensions as
// plain methods. This package builds on it and never hides it: every helper
// takes an *lmdb.Txn and an lmdb.DBI, so it mixes freely with direct calls.
//
// # Order statistics
//
// A database created with the lmdb.Counted flag keeps subtree sizes in its
// branch pages. On such a database
//
//   - Count, CountKeys and CountValues count the entries (or distinct keys) of
//     a key Range in O(log n), without scanning it;
//   - Rank gives the position of a key or key/value pair and At the entry at
//     a position;
//   - Bounds turns a Range into the positions it covers;
//   - Sample and SampleRange yield n entries spread evenly over a database or
//     a range, as a Go 1.23 iterator (iter.Seq2), reading them through one
//     cursor so that the whole sample costs about as much as n lookups in a
//     row.
//
// Positions (ranks) count from zero and include every value of a DupSort key.
// A Range is built with All, Between, AtLeast, GreaterThan, AtMost, LessThan
// or Prefix, and its ends switched between inclusive and exclusive with
// IncludeLow, ExcludeLow, IncludeHigh and ExcludeHigh:
//
//	r := dlmdb.Between([]byte("2024-01"), []byte("2024-07")).ExcludeHigh() // [2024-01, 2024-07)
//	n, err := dlmdb.Count(txn, dbi, r)
//
// On a database without lmdb.Counted these helpers fail with an error for
// which errors.Is(err, lmdb.Incompatible) holds. Errors otherwise carry the
// engine's codes exactly as package lmdb reports them (*lmdb.OpError, with
// errors.Is(err, lmdb.NotFound) and friends working).
//
// # In-memory environments and interruption
//
// OpenInMemory opens an environment that lives in process memory only (no
// data or lock file); Persist writes any environment to a directory as an
// ordinary data.mdb, crash-safely and never over an existing one, and
// LoadInMemory reads a data file back into a new in-memory environment.
//
// View, Update and RunTxn run a transaction that a context.Context can stop:
// when the context is done, the work in progress fails at its next page
// visit with EINTR (lmdb.Txn.SetInterrupt) and the transaction is aborted,
// never committed; the error matches both the context's error and
// syscall.EINTR. CopyContext copies an environment to any io.Writer under
// the same rule. lmdb.Env.SetInterrupt stops every transaction of an
// environment at once, for instance from an os/signal handler goroutine.
package dlmdb
