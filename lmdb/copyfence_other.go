//go:build !arm64

package lmdb

// copyFence: amd64 keeps loads in program order (TSO), so the copy's loads
// already come before the load of the call count; nothing to do. Other
// architectures are not supported (README).
func (txn *Txn) copyFence() {}
