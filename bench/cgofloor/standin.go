//go:build !dlmdb_wip

package cgofloor

// Available reports whether the suite is compiled in. It needs our engine
// and binding; build with -tags dlmdb_wip while they are in progress.
const Available = false
