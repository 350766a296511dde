//go:build !asan

package lmdb

// A key kept in a local array stays on the stack: the C helpers are
// declared noescape/nocallback, so passing it costs no allocation.
const stackArrayAllocs = 0
