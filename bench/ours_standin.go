//go:build dlmdb_standin

package bench

// With -tags dlmdb_standin, "ours" is stock lmdb-go under another name: an
// A/A run that shows how much two identical sides differ on this machine
// (the noise floor of every ratio). Every table built this way says so.

type oursStandInEngine struct{ stockEngine }

// Ours is the adapter for our drop-in package (here: a labelled stand-in).
var Ours Engine = oursStandInEngine{}

func (oursStandInEngine) Name() string { return "ours (STAND-IN)" }
func (oursStandInEngine) Describe() string {
	return "STAND-IN: stock lmdb-go v1.9.3 measured in place of github.com/dlmdb/dlmdb-go/lmdb (built with -tags dlmdb_standin)"
}
func (oursStandInEngine) StandIn() bool { return true }
