package tlsf

import (
	"fmt"
	"math/bits"
)

// Allocator manages one pool through its metadata slice. It caches only the
// slice and values copied from the immutable header, so several Allocators
// (in one or many processes) attached to the same metadata are the same
// allocator. It is not safe for concurrent use: the caller serialises every
// call, across processes, with its own lock.
type Allocator struct {
	meta      []byte
	poolSize  uint64
	granule   uint64
	shift     uint // log2(granule)
	maxBlocks uint32
}

// Block is an allocated range of the pool.
type Block struct {
	// Index is the descriptor index, the handle passed to Free and Lookup.
	Index uint32
	// Offset is the start of the block in the pool.
	Offset uint64
	// Size is the usable size: the request rounded up to the granule.
	Size uint64
}

// Stats is a snapshot of the allocator's occupancy.
type Stats struct {
	PoolSize    uint64 // bytes managed
	FreeBytes   uint64 // bytes in free blocks
	UsedBytes   uint64 // bytes in used blocks
	LargestFree uint64 // size of the largest free block
	FreeBlocks  uint32 // number of free blocks
	UsedBlocks  uint32 // number of used blocks
	MaxBlocks   uint32 // descriptor capacity (free plus used blocks)
}

// Init formats meta for a pool of poolSize bytes (rounded down to the
// granule) with room for maxBlocks descriptors, and returns an Allocator
// whose whole pool is one free block. granule must be a power of two of at
// least MinGranule, meta must hold at least MetaSize(maxBlocks) bytes, and
// maxBlocks must be in [2, 1<<26]; otherwise Init returns ErrInvalid and
// leaves meta untouched. Init writes only the first MetaBytes(0) bytes of
// meta; the rest of the descriptor table is formatted as blocks are split
// (see MetaBytes), and bytes past MetaSize(maxBlocks) are never used.
func Init(meta []byte, poolSize uint64, maxBlocks uint32, granule uint64) (*Allocator, error) {
	if granule < MinGranule || granule&(granule-1) != 0 {
		return nil, fmt.Errorf("formatting allocator: granule %d is not a power of two >= %d: %w", granule, MinGranule, ErrInvalid)
	}
	poolSize &^= granule - 1
	if poolSize < granule {
		return nil, fmt.Errorf("formatting allocator: pool smaller than granule %d: %w", granule, ErrInvalid)
	}
	if maxBlocks < 2 || maxBlocks > maxBlocksLimit {
		return nil, fmt.Errorf("formatting allocator: descriptor capacity %d outside [2, %d]: %w", maxBlocks, maxBlocksLimit, ErrInvalid)
	}
	if n := MetaSize(maxBlocks); len(meta) < n {
		return nil, fmt.Errorf("formatting allocator: metadata is %d bytes, need %d: %w", len(meta), n, ErrInvalid)
	}
	a := &Allocator{
		meta:      meta,
		poolSize:  poolSize,
		granule:   granule,
		shift:     uint(bits.TrailingZeros64(granule)),
		maxBlocks: maxBlocks,
	}
	// Only the header and descriptors 0 and 1 are written: the rest of the
	// table is formatted on first use (takeDesc), so it costs no memory
	// while unused.
	clear(meta[:descOff(2)])
	a.put64(hMagic, magic)
	a.put32(hVersion, Version)
	a.put32(hMaxBlocks, maxBlocks)
	a.put64(hPoolSize, poolSize)
	a.put64(hGranule, granule)
	a.put32(hFLCount, flCount)
	a.put32(hSLCount, slCount)
	a.put64(hChecksum, fnv64a(meta[:checksummed]))
	a.put64(hGuardLo, guardLo)
	a.put64(hGuardHi, guardHi)
	a.put32(descOff(0)+dCanary, canary(0))
	a.put32(descOff(0)+dState, stateNil)
	// Descriptor 1 is the whole pool. It stays the physically first block
	// forever: splits keep the front part in the original descriptor and
	// merges keep the front descriptor, which Check relies on.
	a.put32(descOff(1)+dCanary, canary(1))
	a.put32(descOff(1)+dState, stateFree)
	a.put64(descOff(1)+dSize, poolSize)
	a.linkFree(1, poolSize)
	a.put32(hFormatted, 1)
	a.put32(hFreeDesc, 0)
	a.put64(hFreeBytes, poolSize)
	a.put32(hFreeBlocks, 1)
	return a, nil
}

// Attach returns an Allocator over metadata formatted by Init, possibly in
// another process. It validates the immutable header (magic, version,
// checksum, geometry, and that meta is large enough) and returns ErrVersion
// or ErrCorrupt, wrapped, on mismatch. It does not validate the mutable
// state; call Check for that. Attach never panics.
func Attach(meta []byte) (*Allocator, error) {
	h, err := parseHeader(meta)
	if err != nil {
		return nil, fmt.Errorf("attaching allocator: %w", err)
	}
	return &Allocator{
		meta:      meta,
		poolSize:  h.poolSize,
		granule:   h.granule,
		shift:     uint(bits.TrailingZeros64(h.granule)),
		maxBlocks: h.maxBlocks,
	}, nil
}

// PoolSize returns the number of bytes managed (a multiple of the granule).
func (a *Allocator) PoolSize() uint64 { return a.poolSize }

// Granule returns the allocation granule.
func (a *Allocator) Granule() uint64 { return a.granule }

// MaxBlocks returns the descriptor capacity.
func (a *Allocator) MaxBlocks() uint32 { return a.maxBlocks }

// Dirty reports whether a mutation was interrupted (the dirty flag is set),
// typically because a process died while holding the caller's lock. The
// derived state may then be inconsistent; Rebuild repairs it.
func (a *Allocator) Dirty() bool { return a.get32(hDirty) != 0 }

// fit reports whether a block [off, off+bsize) can hold size bytes at an
// offset aligned to align, and the padding needed in front.
func fit(off, bsize, size, align uint64) (pad uint64, ok bool) {
	pad = (align - off&(align-1)) & (align - 1)
	return pad, bsize >= pad && bsize-pad >= size
}

// Alloc returns a block of at least size bytes whose offset is a multiple of
// align. align 0 means the granule, and alignments below the granule are
// raised to it. Errors: ErrInvalid for size 0 or an align that is not a
// power of two, ErrTooLarge for size > PoolSize, ErrNoSpace when no free
// block fits, ErrNoDescriptors when one fits but the descriptors needed to
// split it are not available, ErrCorrupt if corrupt metadata is found. On
// any error the metadata is unchanged, except after ErrCorrupt.
//
// The search is TLSF good-fit: the request (plus align-granule bytes of
// worst-case padding) is rounded up to the next list boundary so that the
// head of the first non-empty list at or above it always fits, found with
// two bit scans. Only when that finds nothing are the lists between the
// exact size class and the rounded one scanned block by block, so Alloc
// fails with ErrNoSpace only when no free block can hold the request.
func (a *Allocator) Alloc(size, align uint64) (Block, error) {
	if size == 0 {
		return Block{}, fmt.Errorf("allocating 0 bytes: %w", ErrInvalid)
	}
	if align&(align-1) != 0 {
		return Block{}, fmt.Errorf("allocating %d bytes: alignment %d is not a power of two: %w", size, align, ErrInvalid)
	}
	if size > a.poolSize {
		return Block{}, fmt.Errorf("allocating %d bytes from a pool of %d: %w", size, a.poolSize, ErrTooLarge)
	}
	if align < a.granule {
		align = a.granule
	}
	size = (size + a.granule - 1) &^ (a.granule - 1)
	units := size >> a.shift
	need := units + align>>a.shift - 1 // enough for any padding

	var idx uint32
	fl, sl := searchClassOf(need)
	fl, sl, ok, err := a.findFrom(fl, sl)
	if err != nil {
		return Block{}, err
	}
	if ok {
		idx = a.get32(headOff(fl, sl))
	} else {
		// Every list at or above the rounded class is empty, so scanning
		// from the exact class upwards visits exactly the candidates the
		// good-fit search skipped.
		fl, sl = classOf(units)
		if idx, err = a.scanFit(size, align, fl, sl); err != nil {
			return Block{}, err
		}
		if idx == 0 {
			return Block{}, fmt.Errorf("allocating %d bytes aligned to %d: %w", size, align, ErrNoSpace)
		}
	}

	// Validate the candidate before writing anything: a corrupt list must
	// never hand out a range outside the pool.
	if idx == 0 || idx > a.formatted() {
		return Block{}, fmt.Errorf("allocating: free list (%d,%d) head %d out of range: %w", fl, sl, idx, ErrCorrupt)
	}
	o := descOff(idx)
	off, bsize := a.get64(o+dOffset), a.get64(o+dSize)
	next := a.get32(o + dNextPhys)
	if a.get32(o+dCanary) != canary(idx) || a.get32(o+dState) != stateFree ||
		off > a.poolSize || bsize > a.poolSize-off || next > a.formatted() {
		return Block{}, fmt.Errorf("allocating: free-list block %d is damaged: %w", idx, ErrCorrupt)
	}
	pad, ok := fit(off, bsize, size, align)
	if !ok {
		return Block{}, fmt.Errorf("allocating: block %d of %d bytes in list (%d,%d) does not fit %d: %w", idx, bsize, fl, sl, size, ErrCorrupt)
	}
	rem := bsize - pad - size
	var newDescs uint32
	if pad > 0 {
		newDescs++
	}
	if rem > 0 {
		newDescs++
	}
	freeBlocks, usedBlocks := a.get32(hFreeBlocks), a.get32(hUsedBlocks)
	if newDescs > 0 && (uint64(freeBlocks)+uint64(usedBlocks)+uint64(newDescs) > uint64(a.maxBlocks) || a.get32(hFreeDesc) == 0 && a.formatted() >= a.maxBlocks) {
		return Block{}, fmt.Errorf("allocating %d bytes: %d blocks exist: %w", size, freeBlocks+usedBlocks, ErrNoDescriptors)
	}

	// Crash safety: every structural change below has a single-word commit
	// point (a nextPhys link or a state word), and Rebuild derives free
	// block sizes from the offsets of the chain, so a process dying
	// between any two writes leaves metadata that Rebuild turns into the
	// state before or after this call. The block turns used last, so an
	// interrupted Alloc allocates nothing.
	a.put32(hDirty, 1)
	if err := a.unlinkFree(idx, bsize); err != nil {
		return Block{}, err
	}
	blk := idx
	if pad > 0 {
		// The leading gap stays free in the original descriptor, so the
		// physically first block keeps descriptor 1.
		j, err := a.takeDesc()
		if err != nil {
			return Block{}, err
		}
		a.initDesc(j, stateFree, off+pad, bsize-pad, idx, next)
		a.put32(o+dNextPhys, j) // commit: split off the gap
		if next != 0 {
			a.put32(descOff(next)+dPrevPhys, j)
		}
		a.put64(o+dSize, pad)
		a.linkFree(idx, pad)
		blk, off = j, off+pad
	}
	bo := descOff(blk)
	if rem > 0 {
		k, err := a.takeDesc()
		if err != nil {
			return Block{}, err
		}
		a.initDesc(k, stateFree, off+size, rem, blk, next)
		a.put32(bo+dNextPhys, k) // commit: split off the remainder
		if next != 0 {
			a.put32(descOff(next)+dPrevPhys, k)
		}
		a.put64(bo+dSize, size)
		a.linkFree(k, rem)
	}
	a.put32(bo+dPrevFree, 0)
	a.put32(bo+dNextFree, 0)
	a.put32(bo+dState, stateUsed) // commit: allocated
	a.put64(hFreeBytes, a.get64(hFreeBytes)-size)
	a.put32(hFreeBlocks, freeBlocks-1+newDescs)
	a.put32(hUsedBlocks, usedBlocks+1)
	a.put32(hDirty, 0)
	return Block{Index: blk, Offset: off, Size: size}, nil
}

// Free releases block idx and coalesces it at once with a free physical
// neighbour on either side. An index out of range or not naming a block in
// use (a double free) returns ErrBadFree and leaves the metadata untouched.
func (a *Allocator) Free(idx uint32) error {
	if idx == 0 || idx > a.formatted() {
		return fmt.Errorf("freeing block %d: index outside [1, %d]: %w", idx, a.formatted(), ErrBadFree)
	}
	o := descOff(idx)
	if a.get32(o+dCanary) != canary(idx) {
		return fmt.Errorf("freeing block %d: descriptor canary damaged: %w", idx, ErrCorrupt)
	}
	if st := a.get32(o + dState); st != stateUsed {
		return fmt.Errorf("freeing block %d: not in use (state %d): %w", idx, st, ErrBadFree)
	}
	prev, next := a.get32(o+dPrevPhys), a.get32(o+dNextPhys)
	size := a.get64(o + dSize)
	if prev > a.formatted() || next > a.formatted() {
		return fmt.Errorf("freeing block %d: neighbour link out of range: %w", idx, ErrCorrupt)
	}
	freeBlocks := a.get32(hFreeBlocks)

	// As in Alloc, each step commits with one word: the state first (an
	// interrupted Free has freed the block), then each merge by the
	// nextPhys link that drops the absorbed block from the chain.
	a.put32(hDirty, 1)
	a.put32(o+dState, stateFree) // commit: released
	b, bsize := idx, size
	if prev != 0 && a.get32(descOff(prev)+dState) == stateFree {
		po := descOff(prev)
		psize := a.get64(po + dSize)
		if err := a.unlinkFree(prev, psize); err != nil {
			return err
		}
		a.put32(po+dNextPhys, next) // commit: prev absorbs idx
		if next != 0 {
			a.put32(descOff(next)+dPrevPhys, prev)
		}
		a.put64(po+dSize, psize+bsize)
		a.releaseDesc(idx)
		freeBlocks--
		b, bsize = prev, psize+bsize
	}
	if next != 0 && a.get32(descOff(next)+dState) == stateFree {
		no := descOff(next)
		nsize, nn := a.get64(no+dSize), a.get32(no+dNextPhys)
		if nn > a.formatted() {
			return fmt.Errorf("freeing block %d: neighbour %d link out of range: %w", idx, next, ErrCorrupt)
		}
		if err := a.unlinkFree(next, nsize); err != nil {
			return err
		}
		bo := descOff(b)
		a.put32(bo+dNextPhys, nn) // commit: b absorbs next
		if nn != 0 {
			a.put32(descOff(nn)+dPrevPhys, b)
		}
		a.put64(bo+dSize, bsize+nsize)
		a.releaseDesc(next)
		freeBlocks--
		bsize += nsize
	}
	a.linkFree(b, bsize)
	a.put64(hFreeBytes, a.get64(hFreeBytes)+size)
	a.put32(hFreeBlocks, freeBlocks+1)
	a.put32(hUsedBlocks, a.get32(hUsedBlocks)-1)
	a.put32(hDirty, 0)
	return nil
}

// Lookup returns the in-use block with descriptor index idx, or ErrBadFree
// if idx is out of range or not in use.
func (a *Allocator) Lookup(idx uint32) (Block, error) {
	if idx == 0 || idx > a.formatted() {
		return Block{}, fmt.Errorf("looking up block %d: index outside [1, %d]: %w", idx, a.formatted(), ErrBadFree)
	}
	o := descOff(idx)
	if a.get32(o+dCanary) != canary(idx) {
		return Block{}, fmt.Errorf("looking up block %d: descriptor canary damaged: %w", idx, ErrCorrupt)
	}
	if st := a.get32(o + dState); st != stateUsed {
		return Block{}, fmt.Errorf("looking up block %d: not in use (state %d): %w", idx, st, ErrBadFree)
	}
	return Block{Index: idx, Offset: a.get64(o + dOffset), Size: a.get64(o + dSize)}, nil
}

// Stats returns the allocator's occupancy. Sizes and counts come from the
// header in O(1). LargestFree is exact: the highest non-empty list is found
// from the bitmaps in O(1) and then scanned, because blocks within one
// second-level list differ in size by up to 1/32 of its range; the cost is
// the length of that one list.
func (a *Allocator) Stats() Stats {
	free := a.get64(hFreeBytes)
	s := Stats{
		PoolSize:   a.poolSize,
		FreeBytes:  free,
		FreeBlocks: a.get32(hFreeBlocks),
		UsedBlocks: a.get32(hUsedBlocks),
		MaxBlocks:  a.maxBlocks,
	}
	if free <= a.poolSize {
		s.UsedBytes = a.poolSize - free
	}
	flMap := a.get64(hFLBitmap)
	if flMap == 0 {
		return s
	}
	fl := uint(63 - bits.LeadingZeros64(flMap))
	slMap := a.get32(hSLBitmaps + int(fl)*4)
	if slMap == 0 {
		return s // corrupt bitmaps; Check reports it
	}
	sl := uint(31 - bits.LeadingZeros32(slMap))
	idx := a.get32(headOff(fl, sl))
	for n, f := uint32(0), a.formatted(); idx != 0 && idx <= f && n < f; n++ {
		o := descOff(idx)
		s.LargestFree = max(s.LargestFree, a.get64(o+dSize))
		idx = a.get32(o + dNextFree)
	}
	return s
}

// ForEachUsed calls fn for every block in use, in increasing offset order,
// until fn returns false. fn must not call Alloc or Free (collect the
// indices and free them after the walk). On corrupt metadata the walk stops
// early; Check reports why.
func (a *Allocator) ForEachUsed(fn func(Block) bool) {
	idx := uint32(1)
	for n, f := uint32(0), a.formatted(); idx != 0 && idx <= f && n < f; n++ {
		o := descOff(idx)
		if a.get32(o+dState) == stateUsed {
			if !fn(Block{Index: idx, Offset: a.get64(o + dOffset), Size: a.get64(o + dSize)}) {
				return
			}
		}
		idx = a.get32(o + dNextPhys)
	}
}

// findFrom returns the first non-empty list at or above (fl, sl) in
// (first-level, second-level) order, using the bitmaps only.
func (a *Allocator) findFrom(fl, sl uint) (uint, uint, bool, error) {
	if fl >= flCount {
		return 0, 0, false, nil
	}
	slMap := a.get32(hSLBitmaps+int(fl)*4) & (^uint32(0) << sl)
	if slMap == 0 {
		flMap := a.get64(hFLBitmap) & (^uint64(0) << (fl + 1)) // fl+1 == 64 yields 0
		if flMap == 0 {
			return 0, 0, false, nil
		}
		fl = uint(bits.TrailingZeros64(flMap))
		slMap = a.get32(hSLBitmaps + int(fl)*4)
		if slMap == 0 {
			return 0, 0, false, fmt.Errorf("first-level bit %d set over an empty second-level bitmap: %w", fl, ErrCorrupt)
		}
	}
	return fl, uint(bits.TrailingZeros32(slMap)), true, nil
}

// scanFit walks every non-empty list from (fl, sl) upwards and returns the
// first block that holds size bytes at alignment align, or 0. It is the
// slow path behind the good-fit search, bounded by the descriptor count.
func (a *Allocator) scanFit(size, align uint64, fl, sl uint) (uint32, error) {
	budget := a.formatted()
	for {
		var ok bool
		var err error
		fl, sl, ok, err = a.findFrom(fl, sl)
		if err != nil || !ok {
			return 0, err
		}
		for idx := a.get32(headOff(fl, sl)); idx != 0; {
			if idx > a.formatted() || budget == 0 {
				return 0, fmt.Errorf("free list (%d,%d) is broken or cyclic: %w", fl, sl, ErrCorrupt)
			}
			budget--
			o := descOff(idx)
			off, bsize := a.get64(o+dOffset), a.get64(o+dSize)
			if off <= a.poolSize && bsize <= a.poolSize-off {
				if _, ok := fit(off, bsize, size, align); ok {
					return idx, nil
				}
			}
			idx = a.get32(o + dNextFree)
		}
		if sl++; sl == slCount {
			sl = 0
			if fl++; fl == flCount {
				return 0, nil
			}
		}
	}
}

// linkFree pushes free block idx of bsize bytes onto the front of its list
// and sets the bitmap bits. The caller sets the descriptor state.
func (a *Allocator) linkFree(idx uint32, bsize uint64) {
	fl, sl := classOf(bsize >> a.shift)
	ho := headOff(fl, sl)
	head := a.get32(ho)
	o := descOff(idx)
	a.put32(o+dPrevFree, 0)
	a.put32(o+dNextFree, head)
	if head != 0 && head <= a.formatted() {
		a.put32(descOff(head)+dPrevFree, idx)
	}
	a.put32(ho, idx)
	so := hSLBitmaps + int(fl)*4
	a.put32(so, a.get32(so)|1<<sl)
	a.put64(hFLBitmap, a.get64(hFLBitmap)|1<<fl)
}

// unlinkFree removes free block idx of bsize bytes from its list, clearing
// the bitmap bits when the list becomes empty.
func (a *Allocator) unlinkFree(idx uint32, bsize uint64) error {
	o := descOff(idx)
	prev, next := a.get32(o+dPrevFree), a.get32(o+dNextFree)
	if prev > a.formatted() || next > a.formatted() {
		return fmt.Errorf("unlinking block %d: free-list link out of range: %w", idx, ErrCorrupt)
	}
	if prev == 0 {
		fl, sl := classOf(bsize >> a.shift)
		ho := headOff(fl, sl)
		if a.get32(ho) != idx {
			return fmt.Errorf("unlinking block %d: not the head of its list (%d,%d): %w", idx, fl, sl, ErrCorrupt)
		}
		a.put32(ho, next)
		if next == 0 {
			so := hSLBitmaps + int(fl)*4
			slMap := a.get32(so) &^ (1 << sl)
			a.put32(so, slMap)
			if slMap == 0 {
				a.put64(hFLBitmap, a.get64(hFLBitmap)&^(1<<fl))
			}
		}
	} else {
		a.put32(descOff(prev)+dNextFree, next)
	}
	if next != 0 {
		a.put32(descOff(next)+dPrevFree, prev)
	}
	a.put32(o+dPrevFree, 0)
	a.put32(o+dNextFree, 0)
	return nil
}

// takeDesc pops an unused descriptor, or formats the next one when none is
// unused. The caller has checked the counters.
func (a *Allocator) takeDesc() (uint32, error) {
	idx := a.get32(hFreeDesc)
	if idx == 0 {
		f := a.get32(hFormatted)
		if f >= a.maxBlocks {
			return 0, fmt.Errorf("no descriptor left to format (%d of %d): %w", f, a.maxBlocks, ErrCorrupt)
		}
		// Format, then commit with the counter: a death in between leaves
		// an unformatted-looking tail that the next take formats again.
		idx = f + 1
		a.put32(descOff(idx)+dCanary, canary(idx))
		a.initDesc(idx, stateUnused, 0, 0, 0, 0)
		a.put32(hFormatted, idx)
		return idx, nil
	}
	if idx > a.formatted() {
		return 0, fmt.Errorf("free-descriptor list head %d out of range: %w", idx, ErrCorrupt)
	}
	o := descOff(idx)
	if a.get32(o+dCanary) != canary(idx) || a.get32(o+dState) != stateUnused {
		return 0, fmt.Errorf("free-descriptor list entry %d is not an unused descriptor: %w", idx, ErrCorrupt)
	}
	a.put32(hFreeDesc, a.get32(o+dNextFree))
	return idx, nil
}

// initDesc fills a descriptor just taken from the free-descriptor list.
func (a *Allocator) initDesc(idx, state uint32, off, size uint64, prevPhys, nextPhys uint32) {
	o := descOff(idx)
	a.put32(o+dState, state)
	a.put64(o+dOffset, off)
	a.put64(o+dSize, size)
	a.put32(o+dPrevPhys, prevPhys)
	a.put32(o+dNextPhys, nextPhys)
	a.put32(o+dPrevFree, 0)
	a.put32(o+dNextFree, 0)
}

// releaseDesc clears a descriptor and pushes it on the free-descriptor list.
func (a *Allocator) releaseDesc(idx uint32) {
	a.initDesc(idx, stateUnused, 0, 0, 0, 0)
	a.put32(descOff(idx)+dNextFree, a.get32(hFreeDesc))
	a.put32(hFreeDesc, idx)
}
