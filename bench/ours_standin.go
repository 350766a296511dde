//go:build !dlmdb_wip

package bench

// Until our drop-in package links, "ours" is stock lmdb-go under another
// name. Every table built with this file says so (StandIn reports true).
// Build with -tags dlmdb_wip to measure the real package.

type oursStandInEngine struct{ stockEngine }

// Ours is the adapter for our drop-in package (here: a labelled stand-in).
var Ours Engine = oursStandInEngine{}

func (oursStandInEngine) Name() string { return "ours (STAND-IN)" }
func (oursStandInEngine) Describe() string {
	return "STAND-IN: stock lmdb-go v1.9.3 measured in place of github.com/dlmdb/dlmdb-go/lmdb (build without -tags dlmdb_wip)"
}
func (oursStandInEngine) StandIn() bool { return true }
