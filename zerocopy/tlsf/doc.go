// Package tlsf is a two-level segregated fit (TLSF) allocator over offsets.
//
// It owns the bookkeeping of one pool [0, PoolSize) of memory that it never
// touches: the pool may be host shared memory or GPU device memory, and the
// allocator only ever hands out (offset, size) pairs inside it. Every byte of
// allocator state lives in a caller-provided metadata slice, normally part of
// a POSIX shared-memory mapping that several processes attach to, so block
// headers are kept out of band in a fixed-capacity descriptor table inside
// that slice rather than inline in the pool. The layout is fixed,
// little-endian and versioned (see layout.go for the field offsets).
//
// Alloc and Free are O(1) in the normal case (Masmano et al.'s TLSF: a
// first-level bitmap over power-of-two size ranges, 32 second-level
// subdivisions per range, a good-fit search with math/bits, splitting on
// allocation and immediate coalescing with both physical neighbours on free)
// and do not allocate on the Go heap. Check validates every invariant in
// O(n), and Rebuild recovers the derived state (free lists, bitmaps, the
// free-descriptor list and counters) from the physical block chain after a
// crash or a scribble.
//
// What the package must not do:
//
//   - dereference the pool: it must work when the pool is device memory;
//   - keep mutable state outside the metadata slice: an *Allocator caches
//     only the slice and values copied from the immutable header, so any
//     number of processes (or Allocator values) attached to the same
//     metadata observe one allocator;
//   - lock: it is not safe for concurrent use, and the caller must hold a
//     cross-process lock around every call, including read-only ones;
//   - panic or loop forever on corrupt metadata: every index read from the
//     metadata is bounds-checked and every walk is bounded, and corruption
//     is reported as ErrCorrupt;
//   - use unsafe or cgo.
//
// Descriptor indices (Block.Index) are the handles that cross process
// boundaries: they stay valid until the block is freed, and a block's offset
// and size never change while it is in use. After Free the index may be
// reused for another block, so a stale index must not be freed again.
//
// Crash recovery: a dirty word in the header is set for the duration of
// every mutation, and the writes are ordered so that each structural change
// commits with one word. If a process dies holding the caller's lock, the
// next holder sees Dirty() == true (and Check fails); Rebuild then restores
// the state from before or after the interrupted call.
package tlsf
