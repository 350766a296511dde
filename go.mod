module github.com/dlmdb/dlmdb-go

go 1.24

require (
	github.com/PowerDNS/lmdb-go v1.9.3 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
