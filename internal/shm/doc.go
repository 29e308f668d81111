// Package shm owns every unsafe operation over shared memory in rmw_rgaps:
// creating and mapping POSIX shared-memory segments, turning offsets inside a
// mapping into typed atomic words and byte slices, futex waits and wakes on
// those words, the cross-process robust lock, and process identity (pid plus
// start time) used to tell a live owner from a dead one.
//
// Everything that crosses processes is an offset into a segment; only this
// package turns an offset into an address. Callers get typed values
// (*atomic.Uint32, *atomic.Uint64, []byte) and never do pointer arithmetic.
//
// The package knows nothing about topics, queues or allocators: formats live
// in package zerocopy.
package shm
