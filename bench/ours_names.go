//go:build dlmdb_wip

package bench

const (
	oursName     = "ours"
	oursDescribe = "github.com/dlmdb/dlmdb-go/lmdb (DLMDB engine in cdlmdb/)"
	oursStandIn  = false
)
