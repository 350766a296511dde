//go:build asan

package lmdb

// Under -asan the compiler moves every address-taken local to the heap so
// the sanitizer can watch it; a key kept in a local array then costs one
// allocation whatever the C helper's annotations say.
const stackArrayAllocs = 1
