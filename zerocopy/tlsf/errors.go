package tlsf

import "errors"

// ErrInvalid reports a bad argument: a zero size, an alignment or granule
// that is not a power of two, a metadata slice that is too small, and so on.
var ErrInvalid = errors.New("invalid argument")

// ErrTooLarge reports an allocation request larger than the whole pool; it
// can never succeed, unlike ErrNoSpace.
var ErrTooLarge = errors.New("request larger than the pool")

// ErrNoSpace reports that no free block can hold the request with its
// alignment. Freeing blocks may make a retry succeed.
var ErrNoSpace = errors.New("no free block large enough")

// ErrNoDescriptors reports that a fitting free block exists but the
// descriptor table has no room for the blocks that splitting it would
// create. Freeing blocks (which coalesces and releases descriptors) may make
// a retry succeed.
var ErrNoDescriptors = errors.New("descriptor table full")

// ErrBadFree reports a Free or Lookup of an index that is out of range or
// does not name a block in use (for example a double free). The metadata is
// left untouched.
var ErrBadFree = errors.New("not an allocated block")

// ErrCorrupt reports metadata that violates the allocator's invariants: a
// damaged header, a scribbled descriptor, inconsistent lists or counters.
// Rebuild can repair everything except the header and the physical chain.
var ErrCorrupt = errors.New("corrupt allocator metadata")

// ErrVersion reports metadata written with a different layout version.
var ErrVersion = errors.New("unsupported metadata version")
