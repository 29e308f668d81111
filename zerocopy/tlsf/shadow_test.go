package tlsf

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// The shadow model runs an Allocator next to a plain-Go model of the live
// blocks and a simulated pool ([]byte) in which every live block is filled
// with its own byte pattern. Overlapping allocations are caught twice: by
// an interval check against the model, and by the memory itself (a new
// block must find only zeroed, free memory; a freed block must still hold
// its pattern). Guard bytes around the simulated pool catch blocks that
// leave it, and tail canaries in the slack between the requested size and
// Block.Size catch writes past the request.

const (
	poolGuard  = 64   // canary bytes before and after the simulated pool
	guardByte  = 0xEE // value of those bytes
	tailCanary = 0xFF // value of the slack after the requested bytes
)

type liveBlock struct {
	Block
	req  uint64
	fill byte
}

type shadow struct {
	t     testing.TB
	a     *Allocator
	meta  []byte
	pool  []byte
	live  map[uint32]liveBlock
	seq   int
	check bool // run Check after every operation
}

func newShadow(t testing.TB, poolSize uint64, maxBlocks uint32, granule uint64) *shadow {
	t.Helper()
	meta := make([]byte, MetaSize(maxBlocks))
	a, err := Init(meta, poolSize, maxBlocks, granule)
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	s := &shadow{t: t, a: a, meta: meta, live: map[uint32]liveBlock{}, check: true}
	s.pool = make([]byte, a.PoolSize()+2*poolGuard)
	fill(s.pool[:poolGuard], guardByte)
	fill(s.pool[poolGuard+a.PoolSize():], guardByte)
	return s
}

// fill sets every byte of b to v (by doubling copies, which is fast even
// under the race detector).
func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// allAre reports whether every byte of b is v.
func allAre(b []byte, v byte) bool {
	return len(b) == 0 || b[0] == v && bytes.Equal(b[1:], b[:len(b)-1])
}

func (s *shadow) mem(b Block) []byte {
	return s.pool[poolGuard+b.Offset : poolGuard+b.Offset+b.Size]
}

// gaps returns the free ranges implied by the live set, in order.
func (s *shadow) gaps() [][2]uint64 {
	blocks := s.sorted()
	var out [][2]uint64
	var at uint64
	for _, b := range blocks {
		if b.Offset > at {
			out = append(out, [2]uint64{at, b.Offset - at})
		}
		at = b.Offset + b.Size
	}
	if at < s.a.PoolSize() {
		out = append(out, [2]uint64{at, s.a.PoolSize() - at})
	}
	return out
}

func (s *shadow) sorted() []liveBlock {
	blocks := make([]liveBlock, 0, len(s.live))
	for _, b := range s.live {
		blocks = append(blocks, b)
	}
	slices.SortFunc(blocks, func(x, y liveBlock) int { return cmp.Compare(x.Offset, y.Offset) })
	return blocks
}

// anyFit reports whether some free range can hold size bytes at align.
func (s *shadow) anyFit(size, align uint64) bool {
	g := s.a.Granule()
	size = (size + g - 1) &^ (g - 1)
	align = max(align, g)
	for _, gap := range s.gaps() {
		if _, ok := fit(gap[0], gap[1], size, align); ok {
			return true
		}
	}
	return false
}

func (s *shadow) alloc(size, align uint64) (Block, error) {
	s.t.Helper()
	b, err := s.a.Alloc(size, align)
	if err != nil {
		s.checkAllocErr(size, align, err)
		s.after(fmt.Sprintf("failed Alloc(%d, %d)", size, align))
		return b, err
	}
	g := s.a.Granule()
	effAlign := max(align, g)
	switch {
	case b.Index == 0 || b.Index > s.a.MaxBlocks():
		s.t.Fatalf("Alloc(%d, %d) = %+v: index out of range", size, align, b)
	case b.Size < size || b.Size != (size+g-1)&^(g-1):
		s.t.Fatalf("Alloc(%d, %d) = %+v: wrong size", size, align, b)
	case b.Offset%effAlign != 0:
		s.t.Fatalf("Alloc(%d, %d) = %+v: misaligned", size, align, b)
	case b.Offset > s.a.PoolSize() || b.Size > s.a.PoolSize()-b.Offset:
		s.t.Fatalf("Alloc(%d, %d) = %+v: outside pool of %d", size, align, b, s.a.PoolSize())
	}
	if _, dup := s.live[b.Index]; dup {
		s.t.Fatalf("Alloc(%d, %d) = %+v: index already live", size, align, b)
	}
	for _, o := range s.live {
		if b.Offset < o.Offset+o.Size && o.Offset < b.Offset+b.Size {
			s.t.Fatalf("Alloc(%d, %d) = %+v overlaps live %+v", size, align, b, o.Block)
		}
	}
	m := s.mem(b)
	if !allAre(m, 0) {
		s.t.Fatalf("Alloc(%d, %d) = %+v: memory not free (overlapping allocation)", size, align, b)
	}
	s.seq++
	lb := liveBlock{Block: b, req: size, fill: byte(1 + s.seq%250)}
	fill(m[:size], lb.fill)
	fill(m[size:], tailCanary)
	s.live[b.Index] = lb
	s.after(fmt.Sprintf("Alloc(%d, %d) = %+v", size, align, b))
	return b, nil
}

func (s *shadow) checkAllocErr(size, align uint64, err error) {
	s.t.Helper()
	switch {
	case size == 0 || align&(align-1) != 0:
		if !errors.Is(err, ErrInvalid) {
			s.t.Fatalf("Alloc(%d, %d): got %v, want ErrInvalid", size, align, err)
		}
	case size > s.a.PoolSize():
		if !errors.Is(err, ErrTooLarge) {
			s.t.Fatalf("Alloc(%d, %d): got %v, want ErrTooLarge", size, align, err)
		}
	case errors.Is(err, ErrNoSpace):
		if s.anyFit(size, align) {
			s.t.Fatalf("Alloc(%d, %d): ErrNoSpace but a free range fits; gaps %v", size, align, s.gaps())
		}
	case errors.Is(err, ErrNoDescriptors):
		st := s.a.Stats()
		if st.MaxBlocks-st.FreeBlocks-st.UsedBlocks >= 2 {
			s.t.Fatalf("Alloc(%d, %d): ErrNoDescriptors with %d unused descriptors", size, align, st.MaxBlocks-st.FreeBlocks-st.UsedBlocks)
		}
		if !s.anyFit(size, align) {
			s.t.Fatalf("Alloc(%d, %d): ErrNoDescriptors but nothing fits (want ErrNoSpace)", size, align)
		}
	default:
		s.t.Fatalf("Alloc(%d, %d): unexpected error %v", size, align, err)
	}
}

func (s *shadow) free(idx uint32) error {
	s.t.Helper()
	lb, live := s.live[idx]
	err := s.a.Free(idx)
	if !live {
		if !errors.Is(err, ErrBadFree) {
			s.t.Fatalf("Free(%d) of a block not in use: got %v, want ErrBadFree", idx, err)
		}
		s.after(fmt.Sprintf("bad Free(%d)", idx))
		return err
	}
	if err != nil {
		s.t.Fatalf("Free(%d) of live %+v: %v", idx, lb.Block, err)
	}
	m := s.mem(lb.Block)
	if !allAre(m[:lb.req], lb.fill) {
		s.t.Fatalf("Free(%d): block %+v pattern damaged (overlapping allocation)", idx, lb.Block)
	}
	if !allAre(m[lb.req:], tailCanary) {
		s.t.Fatalf("Free(%d): block %+v tail canary damaged", idx, lb.Block)
	}
	clear(m)
	delete(s.live, idx)
	s.after(fmt.Sprintf("Free(%d)", idx))
	return nil
}

// after checks the allocator against the model.
func (s *shadow) after(op string) {
	s.t.Helper()
	if !s.check {
		return
	}
	s.verify(op)
}

func (s *shadow) verify(op string) {
	s.t.Helper()
	if err := s.a.Check(); err != nil {
		s.t.Fatalf("after %s: Check: %v", op, err)
	}
	var used uint64
	for _, b := range s.live {
		used += b.Size
	}
	var largest uint64
	gaps := s.gaps()
	for _, g := range gaps {
		largest = max(largest, g[1])
	}
	st := s.a.Stats()
	want := Stats{
		PoolSize: s.a.PoolSize(), FreeBytes: s.a.PoolSize() - used, UsedBytes: used, LargestFree: largest,
		FreeBlocks: uint32(len(gaps)), UsedBlocks: uint32(len(s.live)), MaxBlocks: s.a.MaxBlocks(),
	}
	if st != want {
		s.t.Fatalf("after %s: Stats = %+v, want %+v", op, st, want)
	}
	var walked []Block
	s.a.ForEachUsed(func(b Block) bool { walked = append(walked, b); return true })
	sorted := s.sorted()
	if len(walked) != len(sorted) {
		s.t.Fatalf("after %s: ForEachUsed saw %d blocks, want %d", op, len(walked), len(sorted))
	}
	for i, b := range walked {
		if b != sorted[i].Block {
			s.t.Fatalf("after %s: ForEachUsed[%d] = %+v, want %+v", op, i, b, sorted[i].Block)
		}
		if lb, err := s.a.Lookup(b.Index); err != nil || lb != b {
			s.t.Fatalf("after %s: Lookup(%d) = %+v, %v", op, b.Index, lb, err)
		}
	}
	if !allAre(s.pool[:poolGuard], guardByte) || !allAre(s.pool[poolGuard+s.a.PoolSize():], guardByte) {
		s.t.Fatalf("after %s: simulated pool guard bytes damaged", op)
	}
}

// freeAll frees every live block in index order and checks that the pool
// has coalesced back into one free block of the full size.
func (s *shadow) freeAll() {
	s.t.Helper()
	idx := make([]uint32, 0, len(s.live))
	for i := range s.live {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		s.free(i)
	}
	s.verify("freeing everything")
	st := s.a.Stats()
	if st.FreeBlocks != 1 || st.LargestFree != s.a.PoolSize() || st.UsedBlocks != 0 {
		s.t.Fatalf("after freeing everything: %+v, want one free block of %d", st, s.a.PoolSize())
	}
}
