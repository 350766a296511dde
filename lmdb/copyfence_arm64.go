package lmdb

// copyFence orders the plain loads of a copy out of engine memory before the
// load of the call count that follows it (Txn.copiedAlone). On arm64 an
// acquire load alone lets earlier loads pass it; a read-modify-write with
// acquire and release semantics (LDADDAL) does not. The word is the txn's
// own state, which only SetInterrupt touches from other goroutines, and
// adding 0 leaves it as it is.
func (txn *Txn) copyFence() {
	txn.state.Add(0)
}
