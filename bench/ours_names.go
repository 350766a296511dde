//go:build !dlmdb_standin

package bench

const (
	oursName     = "ours"
	oursDescribe = "github.com/dlmdb/dlmdb-go/lmdb (DLMDB engine in cdlmdb/)"
	oursStandIn  = false
)
