package tlsf

import "fmt"

// bitset is a scratch set of descriptor indices for Check and Rebuild. It
// lives on the Go heap only for the duration of one call.
type bitset []uint64

func newBitset(n uint32) bitset    { return make(bitset, (uint64(n)+63)/64) }
func (b bitset) has(i uint32) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) add(i uint32)      { b[i/64] |= 1 << (i % 64) }

func corrupt(format string, args ...any) error {
	return fmt.Errorf("checking allocator: "+format+": %w", append(args, ErrCorrupt)...)
}

// checkHeader re-validates the immutable header against the cached values
// and verifies the guard words around the free-list head table.
func (a *Allocator) checkHeader() error {
	h, err := parseHeader(a.meta)
	if err != nil {
		return fmt.Errorf("checking allocator: %w", err)
	}
	if h.poolSize != a.poolSize || h.granule != a.granule || h.maxBlocks != a.maxBlocks {
		return corrupt("header changed since attach (pool %d granule %d capacity %d)", h.poolSize, h.granule, h.maxBlocks)
	}
	if g := a.get64(hGuardLo); g != guardLo {
		return corrupt("guard word before the list heads is %#x", g)
	}
	if g := a.get64(hGuardHi); g != guardHi {
		return corrupt("guard word after the list heads is %#x", g)
	}
	return nil
}

// Check verifies every invariant in O(formatted descriptors): the header
// and guard words; every formatted descriptor's canary and state; that the physical chain starts
// at descriptor 1, tiles [0, PoolSize) exactly in granule multiples with
// consistent back links and never holds two adjacent free blocks; that every
// free block is in exactly the list its size maps to and every list entry is
// a free chain block; that the bitmaps match the lists; that the
// free-descriptor list holds exactly the unused formatted descriptors; that the header
// counters match; and that no mutation was interrupted (the dirty flag).
// It returns ErrCorrupt, wrapped with the first problem found. It only
// reads the metadata.
func (a *Allocator) Check() error {
	if err := a.checkHeader(); err != nil {
		return err
	}
	if a.get32(hDirty) != 0 {
		return corrupt("dirty flag set: a mutation was interrupted")
	}
	maxIdx := a.get32(hFormatted)
	if maxIdx < 1 || maxIdx > a.maxBlocks {
		return corrupt("%d descriptors formatted, capacity %d", maxIdx, a.maxBlocks)
	}
	if a.get32(descOff(0)+dCanary) != canary(0) || a.get32(descOff(0)+dState) != stateNil {
		return corrupt("nil descriptor 0 damaged")
	}
	var nState [3]uint32
	for i := uint32(1); i <= maxIdx; i++ {
		o := descOff(i)
		if c := a.get32(o + dCanary); c != canary(i) {
			return corrupt("descriptor %d canary %#x, want %#x", i, c, canary(i))
		}
		st := a.get32(o + dState)
		if st > stateUsed {
			return corrupt("descriptor %d has state %d", i, st)
		}
		nState[st]++
	}

	// Physical chain.
	inChain := newBitset(maxIdx + 1)
	var expect, freeBytes uint64
	var nFree, nUsed uint32
	prev, prevState := uint32(0), uint32(stateUnused)
	for idx := uint32(1); idx != 0; {
		if idx > maxIdx {
			return corrupt("block after %d: index %d out of range", prev, idx)
		}
		if inChain.has(idx) {
			return corrupt("physical chain revisits block %d", idx)
		}
		inChain.add(idx)
		o := descOff(idx)
		st, off, size := a.get32(o+dState), a.get64(o+dOffset), a.get64(o+dSize)
		switch {
		case st != stateFree && st != stateUsed:
			return corrupt("block %d in the physical chain has state %d", idx, st)
		case off != expect:
			return corrupt("block %d at offset %d, want %d", idx, off, expect)
		case size == 0 || size&(a.granule-1) != 0 || size > a.poolSize-off:
			return corrupt("block %d at offset %d has bad size %d", idx, off, size)
		case a.get32(o+dPrevPhys) != prev:
			return corrupt("block %d back link is %d, want %d", idx, a.get32(o+dPrevPhys), prev)
		case st == stateFree && prevState == stateFree:
			return corrupt("free blocks %d and %d are adjacent (not coalesced)", prev, idx)
		}
		if st == stateFree {
			nFree++
			freeBytes += size
		} else {
			nUsed++
		}
		expect += size
		prev, prevState = idx, st
		idx = a.get32(o + dNextPhys)
	}
	if expect != a.poolSize {
		return corrupt("physical chain covers %d bytes of a %d-byte pool", expect, a.poolSize)
	}
	if nFree != nState[stateFree] || nUsed != nState[stateUsed] {
		return corrupt("chain has %d free and %d used blocks but %d and %d descriptors are marked so",
			nFree, nUsed, nState[stateFree], nState[stateUsed])
	}
	if hf, hu, hb := a.get32(hFreeBlocks), a.get32(hUsedBlocks), a.get64(hFreeBytes); hf != nFree || hu != nUsed || hb != freeBytes {
		return corrupt("counters say %d free, %d used blocks, %d free bytes; chain has %d, %d, %d",
			hf, hu, hb, nFree, nUsed, freeBytes)
	}

	// Segregated lists and bitmaps.
	inList := newBitset(maxIdx + 1)
	var listed uint32
	flMap := a.get64(hFLBitmap)
	for fl := uint(0); fl < flCount; fl++ {
		slMap := a.get32(hSLBitmaps + int(fl)*4)
		if (flMap>>fl&1 != 0) != (slMap != 0) {
			return corrupt("first-level bit %d is %d but second-level bitmap is %#x", fl, flMap>>fl&1, slMap)
		}
		for sl := uint(0); sl < slCount; sl++ {
			idx := a.get32(headOff(fl, sl))
			if (slMap>>sl&1 != 0) != (idx != 0) {
				return corrupt("bitmap bit (%d,%d) is %d but list head is %d", fl, sl, slMap>>sl&1, idx)
			}
			for prev := uint32(0); idx != 0; {
				if idx > maxIdx {
					return corrupt("list (%d,%d): index %d out of range", fl, sl, idx)
				}
				if inList.has(idx) {
					return corrupt("block %d listed twice or list (%d,%d) is cyclic", idx, fl, sl)
				}
				inList.add(idx)
				listed++
				o := descOff(idx)
				if !inChain.has(idx) || a.get32(o+dState) != stateFree {
					return corrupt("list (%d,%d) holds block %d, which is not a free chain block", fl, sl, idx)
				}
				if f, s := classOf(a.get64(o+dSize) >> a.shift); f != fl || s != sl {
					return corrupt("block %d of %d bytes is in list (%d,%d), belongs in (%d,%d)", idx, a.get64(o+dSize), fl, sl, f, s)
				}
				if p := a.get32(o + dPrevFree); p != prev {
					return corrupt("block %d free-list back link is %d, want %d", idx, p, prev)
				}
				prev, idx = idx, a.get32(o+dNextFree)
			}
		}
	}
	if listed != nFree {
		return corrupt("%d blocks listed, %d free", listed, nFree)
	}

	// Free-descriptor list.
	var unused uint32
	for idx := a.get32(hFreeDesc); idx != 0; idx = a.get32(descOff(idx) + dNextFree) {
		if idx > maxIdx {
			return corrupt("free-descriptor list: index %d out of range", idx)
		}
		if a.get32(descOff(idx)+dState) != stateUnused {
			return corrupt("free-descriptor list holds descriptor %d in state %d", idx, a.get32(descOff(idx)+dState))
		}
		if unused++; unused > nState[stateUnused] {
			return corrupt("free-descriptor list is cyclic or too long")
		}
	}
	if unused != nState[stateUnused] {
		return corrupt("free-descriptor list has %d entries, %d descriptors are unused", unused, nState[stateUnused])
	}
	return nil
}

// Rebuild recovers from a crash or a scribble. The physical chain is
// authoritative: the blocks reached from descriptor 1 through the nextPhys
// links, with their canaries, states and offsets. Everything else is derived
// and rewritten: free block sizes (from the offsets of consecutive blocks),
// back links, free lists, bitmaps, guard words, the free-descriptor list,
// the counters and the dirty flag. Adjacent free blocks are merged, and every
// descriptor not in the chain becomes unused. Used blocks keep their index,
// offset and size.
//
// Alloc and Free order their writes so that the metadata left by a process
// dying between any two of them passes this validation, and Rebuild then
// yields the state before or after the interrupted call (an interrupted
// Alloc allocated nothing; an interrupted Free freed the block). Rebuild
// itself may be interrupted and rerun.
//
// If the header or the chain is broken (a chain block with a bad canary or
// state, offsets that are not granule multiples strictly increasing from 0
// below the pool size, a used block whose size disagrees with the offsets
// or that the chain does not reach, a cycle or an index out of range),
// Rebuild returns ErrCorrupt without
// writing anything. After a nil return, Check passes.
func (a *Allocator) Rebuild() error {
	h, err := parseHeader(a.meta)
	if err != nil {
		return fmt.Errorf("rebuilding allocator: %w", err)
	}
	if h.poolSize != a.poolSize || h.granule != a.granule || h.maxBlocks != a.maxBlocks {
		return fmt.Errorf("rebuilding allocator: header changed since attach: %w", ErrCorrupt)
	}
	maxIdx := a.get32(hFormatted)
	if maxIdx < 1 || maxIdx > a.maxBlocks {
		return fmt.Errorf("rebuilding allocator: %d descriptors formatted, capacity %d: %w", maxIdx, a.maxBlocks, ErrCorrupt)
	}

	// Phase 1, read only: validate the chain and record it.
	kept := newBitset(maxIdx + 1)
	var chain []uint32
	var offs []uint64
	for idx := uint32(1); idx != 0; {
		if idx > maxIdx || kept.has(idx) {
			return fmt.Errorf("rebuilding allocator: physical chain reaches index %d twice or out of range: %w", idx, ErrCorrupt)
		}
		kept.add(idx)
		o := descOff(idx)
		st, off := a.get32(o+dState), a.get64(o+dOffset)
		if a.get32(o+dCanary) != canary(idx) || (st != stateFree && st != stateUsed) {
			return fmt.Errorf("rebuilding allocator: chain block %d has a damaged descriptor: %w", idx, ErrCorrupt)
		}
		n := len(offs)
		if off >= a.poolSize || off&(a.granule-1) != 0 || n == 0 && off != 0 || n > 0 && off <= offs[n-1] {
			return fmt.Errorf("rebuilding allocator: chain block %d at offset %d out of order: %w", idx, off, ErrCorrupt)
		}
		chain = append(chain, idx)
		offs = append(offs, off)
		idx = a.get32(o + dNextPhys)
	}
	// Interrupted calls only ever leave free descriptors outside the chain;
	// a used one there means the chain lost a live block.
	for i := uint32(1); i <= maxIdx; i++ {
		o := descOff(i)
		if !kept.has(i) && a.get32(o+dCanary) == canary(i) && a.get32(o+dState) == stateUsed {
			return fmt.Errorf("rebuilding allocator: used block %d is not in the physical chain: %w", i, ErrCorrupt)
		}
	}
	for i, idx := range chain {
		o := descOff(idx)
		end := a.poolSize
		if i+1 < len(chain) {
			end = offs[i+1]
		}
		if a.get32(o+dState) == stateUsed && a.get64(o+dSize) != end-offs[i] {
			return fmt.Errorf("rebuilding allocator: used block %d has size %d, chain says %d: %w",
				idx, a.get64(o+dSize), end-offs[i], ErrCorrupt)
		}
	}

	// Phase 2: rewrite all derived state.
	a.put32(hDirty, 1)
	a.put64(hGuardLo, guardLo)
	a.put64(hGuardHi, guardHi)
	clear(a.meta[hFLBitmap:hGuardLo])
	clear(a.meta[hHeads:hGuardHi])
	a.put32(descOff(0)+dCanary, canary(0))
	a.initDesc(0, stateNil, 0, 0, 0, 0)
	for i, idx := range chain {
		end := a.poolSize
		if i+1 < len(chain) {
			end = offs[i+1]
		}
		a.put64(descOff(idx)+dSize, end-offs[i])
	}

	// Merge runs of free blocks into their first block.
	merged := chain[:0]
	for _, idx := range chain {
		if n := len(merged); n > 0 && a.get32(descOff(idx)+dState) == stateFree {
			last := descOff(merged[n-1])
			if a.get32(last+dState) == stateFree {
				a.put64(last+dSize, a.get64(last+dSize)+a.get64(descOff(idx)+dSize))
				kept[idx/64] &^= 1 << (idx % 64)
				continue
			}
		}
		merged = append(merged, idx)
	}
	var freeBytes uint64
	var nFree, nUsed uint32
	for i, idx := range merged {
		o := descOff(idx)
		prev, next := uint32(0), uint32(0)
		if i > 0 {
			prev = merged[i-1]
		}
		if i+1 < len(merged) {
			next = merged[i+1]
		}
		a.put32(o+dPrevPhys, prev)
		a.put32(o+dNextPhys, next)
		a.put32(o+dPrevFree, 0)
		a.put32(o+dNextFree, 0)
		if a.get32(o+dState) == stateFree {
			size := a.get64(o + dSize)
			a.linkFree(idx, size)
			freeBytes += size
			nFree++
		} else {
			nUsed++
		}
	}
	// Everything else becomes unused, linked in increasing index order.
	head := uint32(0)
	for i := maxIdx; i >= 1; i-- {
		if kept.has(i) {
			continue
		}
		a.put32(descOff(i)+dCanary, canary(i))
		a.initDesc(i, stateUnused, 0, 0, 0, 0)
		a.put32(descOff(i)+dNextFree, head)
		head = i
	}
	a.put32(hFreeDesc, head)
	a.put64(hFreeBytes, freeBytes)
	a.put32(hFreeBlocks, nFree)
	a.put32(hUsedBlocks, nUsed)
	a.put32(hDirty, 0)
	return nil
}
