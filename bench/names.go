package bench

// Column names and descriptions of the two adapters. The "ours" values live
// in ours_real.go / ours_standin.go so that a stand-in is always labelled.
const (
	stockName     = "lmdb-go"
	stockDescribe = "github.com/PowerDNS/lmdb-go/lmdb v1.9.3 (stock LMDB 0.9.33)"
	stockStandIn  = false
)
