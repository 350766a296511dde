//go:build !dlmdb_wip

package difftest

// Until our lmdb package links, the harness is validated stock-vs-stock: the
// engine under test is lmdb-go as well. Build with -tags dlmdb_wip to wire in
// our package (adapter_ours_test.go).
var subject engine = stockEngine{}
