module github.com/dlmdb/dlmdb-go

go 1.24.0

require (
	github.com/PowerDNS/lmdb-go v1.9.3
	golang.org/x/sys v0.40.0
)
