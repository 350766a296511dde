//go:build !dlmdb_reuseswitch

package cdlmdb

// ReuseSwitch reports whether this build carries the run-time switch for
// cursor reuse; without the build tag dlmdb_reuseswitch it does not, and
// cursor reuse is always on.
const ReuseSwitch = false

// SetCursorReuse is a no-op in ordinary builds (see the dlmdb_reuseswitch
// build); it exists so that code comparing both paths compiles in either.
func SetCursorReuse(on bool) {}
