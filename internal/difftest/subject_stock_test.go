//go:build dlmdb_stockonly

package difftest

// With -tags dlmdb_stockonly the engine under test is lmdb-go as well: the
// harness then runs stock-vs-stock, which must always pass (a check of the
// harness itself). By default the engine under test is ours
// (adapter_ours_test.go).
var subject engine = stockEngine{}

// subjects: stock has no in-memory mode, so only the file one.
func subjects() []engine { return []engine{subject} }
