package tlsf

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Version is the metadata layout version stored in the header. Attach
// refuses any other value with ErrVersion.
const Version = 2

// MinGranule is the smallest granule. All offsets and sizes handed out are
// multiples of the granule, so it is also the minimum alignment.
const MinGranule = 64

// Metadata layout, version 2. All fields are little-endian.
//
// Header (headerSize = 8552 bytes):
//
//	off   size  field
//	0     8     magic "RGAPTLSF"
//	8     4     version (2)
//	12    4     maxBlocks: usable descriptors (indices 1..maxBlocks)
//	16    8     poolSize in bytes (multiple of granule)
//	24    8     granule in bytes (power of two >= 64)
//	32    4     first-level list count (64)
//	36    4     second-level list count (32)
//	40    8     FNV-1a 64 checksum of bytes [0, 40)
//	---- everything below is mutable ----
//	48    8     free bytes
//	56    4     free block count
//	60    4     used block count
//	64    4     head of the free-descriptor list (0 = empty)
//	68    4     dirty: non-zero while a mutation is in progress
//	72    4     formatted: descriptors 1..formatted have been written (>= 1)
//	76    4     zero
//	80    8     first-level bitmap (bit f set iff second-level bitmap f != 0)
//	88    256   second-level bitmaps [64]uint32 (bit s set iff list (f,s) non-empty)
//	344   8     guard word guardLo
//	352   8192  free-list heads [64][32]uint32 (descriptor index, 0 = empty)
//	8544  8     guard word guardHi
//
// Descriptor table at headerSize: maxBlocks+1 descriptors of descSize = 40
// bytes; descriptor 0 is a reserved nil so that index 0 can mean "none" in
// every link. Only descriptors 0..formatted are ever read or written: Init
// formats 0 and 1, and a descriptor is formatted (and formatted raised) the
// first time the free-descriptor list is empty and a split needs one. So
// the metadata in use is descOff(formatted+1) bytes, not MetaSize(maxBlocks):
// a caller whose metadata lives in memory committed on demand (a sparse
// shared-memory file) commits MetaBytes(2) before each Alloc and never
// touches the rest. Descriptor i:
//
//	off  size  field
//	0    4     canary: descMagic ^ i
//	4    4     state: 0 unused, 1 free block, 2 used block, 3 nil (index 0)
//	8    8     block offset in the pool
//	16   8     block size
//	24   4     previous block in physical order (0 = none)
//	28   4     next block in physical order (0 = none)
//	32   4     previous block in the same free list
//	36   4     next block in the same free list; for unused descriptors, the
//	           next unused descriptor
//
// MetaSize(n) = 8544 + 40*(n+1).
const (
	magic uint64 = 0x46534C5450414752 // "RGAPTLSF" read little-endian

	slLog2     = 5
	slCount    = 1 << slLog2 // second-level subdivisions per first-level range
	flCount    = 64          // first-level ranges; enough for any 64-bit pool
	smallUnits = slCount     // block sizes below this many granules map linearly

	hMagic      = 0
	hVersion    = 8
	hMaxBlocks  = 12
	hPoolSize   = 16
	hGranule    = 24
	hFLCount    = 32
	hSLCount    = 36
	hChecksum   = 40
	hFreeBytes  = 48
	hFreeBlocks = 56
	hUsedBlocks = 60
	hFreeDesc   = 64
	hDirty      = 68
	hFormatted  = 72
	hFLBitmap   = 80
	hSLBitmaps  = hFLBitmap + 8
	hGuardLo    = hSLBitmaps + flCount*4
	hHeads      = hGuardLo + 8
	hGuardHi    = hHeads + flCount*slCount*4
	headerSize  = hGuardHi + 8

	checksummed = hChecksum // the immutable fields covered by the checksum

	guardLo uint64 = 0x4F4C445241554721 // "!GUARDLO"
	guardHi uint64 = 0x4948445241554721 // "!GUARDHI"

	descSize    = 40
	dCanary     = 0
	dState      = 4
	dOffset     = 8
	dSize       = 16
	dPrevPhys   = 24
	dNextPhys   = 28
	dPrevFree   = 32
	dNextFree   = 36
	descMagic   = 0xB10C7D5A
	stateUnused = 0
	stateFree   = 1
	stateUsed   = 2
	stateNil    = 3

	// maxBlocksLimit bounds the descriptor table (about 2.5 GiB of
	// metadata) so that index arithmetic can never overflow a uint32.
	maxBlocksLimit = 1 << 26
)

var le = binary.LittleEndian

// MetaSize returns the number of metadata bytes needed for an allocator with
// room for maxBlocks descriptors (free plus used blocks at any one time).
func MetaSize(maxBlocks uint32) int {
	return headerSize + (int(maxBlocks)+1)*descSize
}

// MetaBytes returns how many bytes at the start of the metadata the
// allocator reads or writes once extra more descriptors are formatted:
// MetaBytes(0) is what it uses now, MetaBytes(2) what one Alloc may use
// (a split formats at most two). Free and Rebuild format none.
func (a *Allocator) MetaBytes(extra uint32) int {
	f := uint64(a.get32(hFormatted)) + uint64(extra)
	return descOff(uint32(min(f, uint64(a.maxBlocks)))) + descSize
}

// formatted is the number of formatted descriptors, bounded by maxBlocks so
// that a scribbled word never sends a reader past the metadata in use.
func (a *Allocator) formatted() uint32 { return min(a.get32(hFormatted), a.maxBlocks) }

// descOff returns the metadata offset of descriptor idx. Callers must have
// checked idx <= maxBlocks.
func descOff(idx uint32) int { return headerSize + int(idx)*descSize }

func canary(idx uint32) uint32 { return descMagic ^ idx }

// classOf maps a block of u granules to its free list. Below smallUnits the
// lists are exact (one size each); above, list (f, s) holds sizes in
// [2^e + s*2^(e-5), 2^e + (s+1)*2^(e-5)) with e = f+4. It never panics, even
// for u == 0, so that it is safe on corrupt sizes.
func classOf(u uint64) (fl, sl uint) {
	if u < smallUnits {
		return 0, uint(u)
	}
	e := uint(bits.Len64(u)) - 1
	return e - (slLog2 - 1), uint(u>>(e-slLog2)) & (slCount - 1)
}

// searchClassOf rounds u up to the next list boundary before mapping it, so
// that every block in the returned list or any higher one holds at least u
// granules (the TLSF good-fit search).
func searchClassOf(u uint64) (fl, sl uint) {
	if u >= smallUnits {
		e := uint(bits.Len64(u)) - 1
		u += (1 << (e - slLog2)) - 1
	}
	return classOf(u)
}

func headOff(fl, sl uint) int { return hHeads + int(fl*slCount+sl)*4 }

func (a *Allocator) get32(off int) uint32 { return le.Uint32(a.meta[off:]) }
func (a *Allocator) get64(off int) uint64 { return le.Uint64(a.meta[off:]) }

// testHookWrite, when non-nil, runs before every metadata write. Tests set
// it to simulate a process dying between two writes; it is nil otherwise.
var testHookWrite func()

func (a *Allocator) put32(off int, v uint32) {
	if testHookWrite != nil {
		testHookWrite()
	}
	le.PutUint32(a.meta[off:], v)
}

func (a *Allocator) put64(off int, v uint64) {
	if testHookWrite != nil {
		testHookWrite()
	}
	le.PutUint64(a.meta[off:], v)
}

// fnv64a hashes b without allocating.
func fnv64a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// header holds the immutable header fields.
type header struct {
	poolSize  uint64
	granule   uint64
	maxBlocks uint32
}

// parseHeader validates the immutable header of meta. It never panics.
func parseHeader(meta []byte) (header, error) {
	if len(meta) < headerSize {
		return header{}, fmt.Errorf("metadata is %d bytes, header needs %d: %w", len(meta), headerSize, ErrCorrupt)
	}
	if m := le.Uint64(meta[hMagic:]); m != magic {
		return header{}, fmt.Errorf("bad magic %#x: %w", m, ErrCorrupt)
	}
	if v := le.Uint32(meta[hVersion:]); v != Version {
		return header{}, fmt.Errorf("layout version %d, want %d: %w", v, Version, ErrVersion)
	}
	if sum, want := le.Uint64(meta[hChecksum:]), fnv64a(meta[:checksummed]); sum != want {
		return header{}, fmt.Errorf("header checksum %#x, computed %#x: %w", sum, want, ErrCorrupt)
	}
	h := header{
		poolSize:  le.Uint64(meta[hPoolSize:]),
		granule:   le.Uint64(meta[hGranule:]),
		maxBlocks: le.Uint32(meta[hMaxBlocks:]),
	}
	switch {
	case le.Uint32(meta[hFLCount:]) != flCount || le.Uint32(meta[hSLCount:]) != slCount:
		return header{}, fmt.Errorf("list geometry %dx%d, want %dx%d: %w",
			le.Uint32(meta[hFLCount:]), le.Uint32(meta[hSLCount:]), flCount, slCount, ErrCorrupt)
	case h.granule < MinGranule || h.granule&(h.granule-1) != 0:
		return header{}, fmt.Errorf("granule %d is not a power of two >= %d: %w", h.granule, MinGranule, ErrCorrupt)
	case h.poolSize < h.granule || h.poolSize&(h.granule-1) != 0:
		return header{}, fmt.Errorf("pool size %d is not a positive multiple of granule %d: %w", h.poolSize, h.granule, ErrCorrupt)
	case h.maxBlocks < 2 || h.maxBlocks > maxBlocksLimit:
		return header{}, fmt.Errorf("descriptor capacity %d outside [2, %d]: %w", h.maxBlocks, maxBlocksLimit, ErrCorrupt)
	case len(meta) < MetaSize(h.maxBlocks):
		return header{}, fmt.Errorf("metadata is %d bytes, %d descriptors need %d: %w",
			len(meta), h.maxBlocks, MetaSize(h.maxBlocks), ErrCorrupt)
	}
	return h, nil
}
