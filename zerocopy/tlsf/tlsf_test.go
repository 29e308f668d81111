package tlsf

import (
	"bytes"
	"errors"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

func randSize(r *rand.Rand, pool uint64) uint64 {
	switch r.IntN(40) {
	case 0:
		return 0
	case 1:
		return pool + 1 + r.Uint64N(4096)
	case 2, 3, 4:
		return pool - r.Uint64N(pool/8)
	}
	e := r.IntN(bits.Len64(pool))
	return 1 + r.Uint64N(1<<e)
}

func randAlign(r *rand.Rand) uint64 {
	switch n := r.IntN(20); {
	case n < 6:
		return 0
	case n == 6:
		return 1 + r.Uint64N(64)
	case n == 7:
		return 3 << r.IntN(10) // not a power of two
	default:
		return 1 << (6 + r.IntN(11)) // 64 B .. 64 KiB
	}
}

func liveIndices(s *shadow) []uint32 {
	idx := make([]uint32, 0, len(s.live))
	for i := range s.live {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	return idx
}

func TestConformance(t *testing.T) {
	cases := []struct {
		name      string
		pool      uint64
		maxBlocks uint32
		granule   uint64
		ops       int
	}{
		{"4MiB-granule64", 4 << 20, 256, 64, 3000},
		{"odd-pool-granule256", 4<<20 + 12345, 128, 256, 3000},
		{"few-descriptors", 1 << 20, 12, 64, 2000},
		{"granule4KiB", 8 << 20, 64, 4096, 2000},
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= 4; seed++ {
			t.Run(tc.name, func(t *testing.T) {
				ops := tc.ops
				if testing.Short() {
					ops /= 4
				}
				r := rand.New(rand.NewPCG(seed, 42))
				s := newShadow(t, tc.pool, tc.maxBlocks, tc.granule)
				pool := s.a.PoolSize()
				for range ops {
					switch n := r.IntN(100); {
					case n < 55 || len(s.live) == 0:
						s.alloc(randSize(r, pool), randAlign(r))
					case n < 60:
						s.free(r.Uint32N(tc.maxBlocks + 5)) // often not live
					default:
						live := liveIndices(s)
						s.free(live[r.IntN(len(live))])
					}
				}
				s.freeAll()
				if _, err := s.alloc(pool, 0); err != nil {
					t.Fatalf("Alloc(pool size) after freeing everything: %v", err)
				}
			})
		}
	}
}

func TestFullPool(t *testing.T) {
	s := newShadow(t, 1<<20, 300, 64)
	n := 0
	for {
		_, err := s.alloc(4096, 0)
		if errors.Is(err, ErrNoSpace) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 256 {
		t.Fatalf("allocated %d 4 KiB blocks from 1 MiB, want 256", n)
	}
	if _, err := s.alloc(64, 0); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("Alloc on a full pool: %v, want ErrNoSpace", err)
	}
	s.freeAll()
	b, err := s.alloc(1<<20, 1<<20)
	if err != nil || b.Offset != 0 || b.Size != 1<<20 {
		t.Fatalf("Alloc(pool, pool alignment) = %+v, %v", b, err)
	}
}

func TestDescriptorExhaustion(t *testing.T) {
	s := newShadow(t, 64<<10, 4, 64)
	for range 3 {
		if _, err := s.alloc(64, 0); err != nil {
			t.Fatal(err)
		}
	}
	// 3 used + 1 free remainder: the table is full.
	if _, err := s.alloc(64, 0); !errors.Is(err, ErrNoDescriptors) {
		t.Fatalf("Alloc needing a split with a full table: %v, want ErrNoDescriptors", err)
	}
	if _, err := s.alloc(64, 4096); !errors.Is(err, ErrNoDescriptors) {
		t.Fatalf("aligned Alloc needing a gap with a full table: %v, want ErrNoDescriptors", err)
	}
	// An exact fit needs no new descriptor.
	if _, err := s.alloc(64<<10-3*64, 0); err != nil {
		t.Fatalf("exact-fit Alloc with a full table: %v", err)
	}
	s.freeAll()
}

func TestBadInput(t *testing.T) {
	s := newShadow(t, 1<<20, 16, 64)
	b, err := s.alloc(100, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := bytes.Clone(s.meta)
	for _, tc := range []struct {
		name        string
		size, align uint64
		want        error
	}{
		{"size 0", 0, 0, ErrInvalid},
		{"align 3", 64, 3, ErrInvalid},
		{"align 96", 64, 96, ErrInvalid},
		{"oversize", 1<<20 + 1, 0, ErrTooLarge},
		{"max uint64", ^uint64(0), 0, ErrTooLarge},
		{"huge alignment", 64, 1 << 62, ErrNoSpace}, // only offset 0 qualifies and it is taken
	} {
		if _, err := s.a.Alloc(tc.size, tc.align); !errors.Is(err, tc.want) {
			t.Errorf("%s: Alloc(%d, %d) = %v, want %v", tc.name, tc.size, tc.align, err, tc.want)
		}
	}
	for _, idx := range []uint32{0, 2, 16, 17, 1 << 31, ^uint32(0)} {
		if err := s.a.Free(idx); !errors.Is(err, ErrBadFree) {
			t.Errorf("Free(%d) = %v, want ErrBadFree", idx, err)
		}
		if _, err := s.a.Lookup(idx); !errors.Is(err, ErrBadFree) {
			t.Errorf("Lookup(%d) = %v, want ErrBadFree", idx, err)
		}
	}
	if !bytes.Equal(before, s.meta) {
		t.Fatal("failed calls modified the metadata")
	}
	if err := s.free(b.Index); err != nil {
		t.Fatal(err)
	}
	before = bytes.Clone(s.meta)
	if err := s.a.Free(b.Index); !errors.Is(err, ErrBadFree) {
		t.Fatalf("double Free = %v, want ErrBadFree", err)
	}
	if !bytes.Equal(before, s.meta) {
		t.Fatal("double free modified the metadata")
	}
	if err := s.a.Check(); err != nil {
		t.Fatal(err)
	}
	// Alignment below the granule is raised to it.
	if b, err := s.alloc(1, 1); err != nil || b.Size != 64 {
		t.Fatalf("Alloc(1, 1) = %+v, %v", b, err)
	}
}

func TestInitErrors(t *testing.T) {
	meta := make([]byte, MetaSize(8))
	for _, tc := range []struct {
		name      string
		meta      []byte
		pool      uint64
		maxBlocks uint32
		granule   uint64
	}{
		{"granule 32", meta, 1 << 20, 8, 32},
		{"granule 96", meta, 1 << 20, 8, 96},
		{"granule 0", meta, 1 << 20, 8, 0},
		{"pool < granule", meta, 127, 8, 128},
		{"maxBlocks 1", meta, 1 << 20, 1, 64},
		{"maxBlocks huge", meta, 1 << 20, ^uint32(0), 64},
		{"meta short", meta[:len(meta)-1], 1 << 20, 8, 64},
		{"meta nil", nil, 1 << 20, 8, 64},
	} {
		if _, err := Init(tc.meta, tc.pool, tc.maxBlocks, tc.granule); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Init = %v, want ErrInvalid", tc.name, err)
		}
	}
	a, err := Init(meta, 1<<20+63, 8, 64)
	if err != nil {
		t.Fatal(err)
	}
	if a.PoolSize() != 1<<20 {
		t.Fatalf("pool size %d, want rounded down to %d", a.PoolSize(), 1<<20)
	}
}

// TestCoalescing frees blocks A B C D (followed by the free tail T) in
// orders that exercise each neighbour case and checks the resulting free
// ranges exactly.
func TestCoalescing(t *testing.T) {
	const k = 1024
	tail := [2]uint64{4 * k, 60 * k}
	for _, tc := range []struct {
		name  string
		order []int         // blocks to free, 0..3 = A..D
		each  [][][2]uint64 // free ranges after each step
	}{
		{"none then right then left then both", []int{1, 0, 2, 3}, [][][2]uint64{
			{{k, k}, tail},     // B: neighbours used, no merge
			{{0, 2 * k}, tail}, // A: merges with B on its right
			{{0, 3 * k}, tail}, // C: merges with A+B on its left
			{{0, 64 * k}},      // D: merges on both sides
		}},
		{"right neighbour is the tail", []int{3, 2, 1, 0}, [][][2]uint64{
			{{3 * k, 61 * k}},
			{{2 * k, 62 * k}},
			{{k, 63 * k}},
			{{0, 64 * k}},
		}},
		{"both sides", []int{0, 2, 1, 3}, [][][2]uint64{
			{{0, k}, tail},
			{{0, k}, {2 * k, k}, tail},
			{{0, 3 * k}, tail},
			{{0, 64 * k}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newShadow(t, 64*k, 16, 64)
			var blk [4]Block
			for i := range blk {
				b, err := s.alloc(k, 0)
				if err != nil {
					t.Fatal(err)
				}
				if b.Offset != uint64(i)*k {
					t.Fatalf("block %d at %d, want %d", i, b.Offset, i*k)
				}
				blk[i] = b
			}
			for step, i := range tc.order {
				if err := s.free(blk[i].Index); err != nil {
					t.Fatal(err)
				}
				if got := s.gaps(); !slices.Equal(got, tc.each[step]) {
					t.Fatalf("after freeing %c: free ranges %v, want %v", 'A'+i, got, tc.each[step])
				}
				// The model's gaps are maximal; matching FreeBlocks proves
				// the allocator merged exactly as much.
				if st := s.a.Stats(); st.FreeBlocks != uint32(len(tc.each[step])) {
					t.Fatalf("after freeing %c: %d free blocks, want %d", 'A'+i, st.FreeBlocks, len(tc.each[step]))
				}
			}
		})
	}
}

func TestAlignedCarvesLeadingGap(t *testing.T) {
	s := newShadow(t, 1<<20, 16, 64)
	if _, err := s.alloc(64, 0); err != nil {
		t.Fatal(err)
	}
	b, err := s.alloc(100, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if b.Offset != 64<<10 {
		t.Fatalf("aligned block at %d, want %d", b.Offset, 64<<10)
	}
	// [64, 64K) is the carved-off gap, then the tail after the block.
	if got, want := s.gaps(), [][2]uint64{{64, 64<<10 - 64}, {64<<10 + 128, 1<<20 - 64<<10 - 128}}; !slices.Equal(got, want) {
		t.Fatalf("free ranges %v, want %v", got, want)
	}
	// The gap is reusable.
	if c, err := s.alloc(1000, 0); err != nil || c.Offset != 64 {
		t.Fatalf("Alloc into the gap = %+v, %v", c, err)
	}
	s.freeAll()
}

// TestSharedMetadata checks that all state is in the metadata: a second
// Allocator attached to the same bytes sees and can undo the first's work.
func TestSharedMetadata(t *testing.T) {
	meta := make([]byte, MetaSize(64))
	a1, err := Init(meta, 1<<20, 64, 64)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := Attach(meta)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []Block
	for i := range 10 {
		b, err := a1.Alloc(uint64(100*i+1), 0)
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, b)
	}
	if a1.Stats() != a2.Stats() {
		t.Fatalf("stats differ: %+v vs %+v", a1.Stats(), a2.Stats())
	}
	for _, b := range blocks {
		if got, err := a2.Lookup(b.Index); err != nil || got != b {
			t.Fatalf("a2.Lookup(%d) = %+v, %v", b.Index, got, err)
		}
		if err := a2.Free(b.Index); err != nil {
			t.Fatal(err)
		}
	}
	// A copy of the bytes is an independent, equal allocator.
	cp := bytes.Clone(meta)
	a3, err := Attach(cp)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []*Allocator{a1, a2, a3} {
		if err := a.Check(); err != nil {
			t.Fatal(err)
		}
		if st := a.Stats(); st.FreeBlocks != 1 || st.LargestFree != 1<<20 {
			t.Fatalf("stats %+v", st)
		}
	}
}

// fragmented returns a shadow with a mix of used and free blocks.
func fragmented(t *testing.T, seed uint64) *shadow {
	s := newShadow(t, 4<<20, 128, 64)
	r := rand.New(rand.NewPCG(seed, 7))
	for range 300 {
		if r.IntN(3) > 0 || len(s.live) == 0 {
			s.alloc(1+r.Uint64N(64<<10), randAlign(r))
		} else {
			live := liveIndices(s)
			s.free(live[r.IntN(len(live))])
		}
	}
	if len(s.live) < 10 || s.a.Stats().FreeBlocks < 5 {
		t.Fatalf("not fragmented enough: %+v", s.a.Stats())
	}
	return s
}

func TestRebuild(t *testing.T) {
	firstFree := func(a *Allocator) uint32 {
		for i := uint32(1); i <= a.maxBlocks; i++ {
			if a.get32(descOff(i)+dState) == stateFree {
				return i
			}
		}
		t.Fatal("no free block")
		return 0
	}
	firstUnused := func(a *Allocator) uint32 {
		for i := uint32(1); i <= a.maxBlocks; i++ {
			if a.get32(descOff(i)+dState) == stateUnused {
				return i
			}
		}
		t.Fatal("no unused descriptor")
		return 0
	}
	for _, tc := range []struct {
		name    string
		corrupt func(a *Allocator)
	}{
		{"list heads cleared", func(a *Allocator) { clear(a.meta[hHeads:hGuardHi]) }},
		{"bitmaps cleared", func(a *Allocator) { clear(a.meta[hFLBitmap:hGuardLo]) }},
		{"bitmaps flipped", func(a *Allocator) {
			a.put64(hFLBitmap, ^a.get64(hFLBitmap))
			a.put32(hSLBitmaps+4*3, 0xDEADBEEF)
		}},
		{"counters", func(a *Allocator) {
			a.put64(hFreeBytes, 12345)
			a.put32(hFreeBlocks, 999)
			a.put32(hUsedBlocks, 0)
		}},
		{"free-descriptor list", func(a *Allocator) { a.put32(hFreeDesc, 0) }},
		{"free-descriptor list cycle", func(a *Allocator) {
			u := firstUnused(a)
			a.put32(descOff(u)+dNextFree, u)
		}},
		{"free-list links", func(a *Allocator) {
			f := firstFree(a)
			a.put32(descOff(f)+dNextFree, f)
			a.put32(descOff(f)+dPrevFree, 0xFFFFFFF0)
		}},
		{"back links", func(a *Allocator) { a.put32(descOff(1)+dPrevPhys, 7) }},
		{"guard words", func(a *Allocator) { a.put64(hGuardLo, 0); a.put64(hGuardHi, 1) }},
		{"dirty flag", func(a *Allocator) { a.put32(hDirty, 1) }},
		{"unused descriptor scribbled", func(a *Allocator) {
			u := firstUnused(a)
			a.put32(descOff(u)+dCanary, 0)
			a.put32(descOff(u)+dState, 77)
		}},
		{"orphan free descriptor", func(a *Allocator) {
			u := firstUnused(a)
			a.put32(descOff(u)+dState, stateFree)
			a.put64(descOff(u)+dSize, 64)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fragmented(t, 3)
			want := s.a.Stats()
			a, err := Attach(s.meta)
			if err != nil {
				t.Fatal(err)
			}
			tc.corrupt(a)
			if err := a.Check(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check after corruption = %v, want ErrCorrupt", err)
			}
			if err := a.Rebuild(); err != nil {
				t.Fatalf("Rebuild: %v", err)
			}
			if a.Dirty() {
				t.Fatal("dirty after Rebuild")
			}
			if got := a.Stats(); got != want {
				t.Fatalf("Stats after Rebuild = %+v, want %+v", got, want)
			}
			s.verify("Rebuild")
			// The rebuilt allocator keeps working.
			r := rand.New(rand.NewPCG(9, 9))
			for range 200 {
				if r.IntN(2) == 0 || len(s.live) == 0 {
					s.alloc(1+r.Uint64N(32<<10), randAlign(r))
				} else {
					live := liveIndices(s)
					s.free(live[r.IntN(len(live))])
				}
			}
			s.freeAll()
		})
	}
}

// TestRebuildMergesFreeNeighbours simulates a Free interrupted after the
// state was written but before coalescing.
func TestRebuildMergesFreeNeighbours(t *testing.T) {
	s := newShadow(t, 64<<10, 16, 64)
	var blk [3]Block
	for i := range blk {
		b, err := s.alloc(1024, 0)
		if err != nil {
			t.Fatal(err)
		}
		blk[i] = b
	}
	if err := s.free(blk[0].Index); err != nil {
		t.Fatal(err)
	}
	s.a.put32(descOff(blk[1].Index)+dState, stateFree)
	s.a.put32(hDirty, 1)
	if !s.a.Dirty() {
		t.Fatal("Dirty() = false")
	}
	if err := s.a.Check(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check = %v, want ErrCorrupt", err)
	}
	if err := s.a.Rebuild(); err != nil {
		t.Fatal(err)
	}
	delete(s.live, blk[1].Index)
	clear(s.mem(blk[1]))
	s.verify("Rebuild")
	if got, want := s.gaps(), [][2]uint64{{0, 2048}, {3072, 61 << 10}}; !slices.Equal(got, want) {
		t.Fatalf("free ranges %v, want %v", got, want)
	}
	s.freeAll()
}

func TestRebuildBrokenChain(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(a *Allocator, used uint32)
	}{
		{"next link out of range", func(a *Allocator, _ uint32) { a.put32(descOff(1)+dNextPhys, 1<<30) }},
		{"next link cycle", func(a *Allocator, _ uint32) { a.put32(descOff(1)+dNextPhys, 1) }},
		{"chain cut short", func(a *Allocator, u uint32) { a.put32(descOff(u)+dNextPhys, 0) }},
		{"size changed", func(a *Allocator, u uint32) { a.put64(descOff(u)+dSize, a.get64(descOff(u)+dSize)+64) }},
		{"size zero", func(a *Allocator, u uint32) { a.put64(descOff(u)+dSize, 0) }},
		{"offset changed", func(a *Allocator, u uint32) { a.put64(descOff(u)+dOffset, 1<<62) }},
		{"chain canary", func(a *Allocator, u uint32) { a.put32(descOff(u)+dCanary, 0) }},
		{"chain state", func(a *Allocator, u uint32) { a.put32(descOff(u)+dState, stateUnused) }},
		{"header", func(a *Allocator, _ uint32) { a.meta[hPoolSize]++ }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fragmented(t, 5)
			u := liveIndices(s)[len(s.live)/2]
			tc.corrupt(s.a, u)
			before := bytes.Clone(s.meta)
			if err := s.a.Rebuild(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Rebuild = %v, want ErrCorrupt", err)
			}
			if !bytes.Equal(before, s.meta) {
				t.Fatal("failed Rebuild modified the metadata")
			}
			if err := s.a.Check(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestAttach(t *testing.T) {
	s := fragmented(t, 11)
	meta := s.meta
	a, err := Attach(meta)
	if err != nil {
		t.Fatal(err)
	}
	if a.Stats() != s.a.Stats() || a.Check() != nil {
		t.Fatal("attached allocator differs")
	}
	for _, n := range []int{0, 1, 8, 47, 48, headerSize - 1, headerSize, len(meta) - 1} {
		if _, err := Attach(meta[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Attach of %d bytes = %v, want ErrCorrupt", n, err)
		}
	}
	// Larger metadata (a slice of a bigger mapping) is fine.
	if _, err := Attach(append(bytes.Clone(meta), make([]byte, 100)...)); err != nil {
		t.Errorf("Attach of oversized metadata: %v", err)
	}

	bad := bytes.Clone(meta)
	bad[hMagic] ^= 1
	if _, err := Attach(bad); !errors.Is(err, ErrCorrupt) {
		t.Errorf("wrong magic: %v, want ErrCorrupt", err)
	}
	bad = bytes.Clone(meta)
	le.PutUint32(bad[hVersion:], Version+1)
	if _, err := Attach(bad); !errors.Is(err, ErrVersion) {
		t.Errorf("wrong version: %v, want ErrVersion", err)
	}
	// Every single-bit flip in the immutable header is detected.
	for bit := range (hChecksum + 8) * 8 {
		bad = bytes.Clone(meta)
		bad[bit/8] ^= 1 << (bit % 8)
		_, err := Attach(bad)
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Fatalf("bit %d flipped: Attach = %v, want ErrCorrupt or ErrVersion", bit, err)
		}
	}
	// A consistent header with an impossible geometry is rejected too.
	for _, tc := range []struct {
		name string
		edit func(b []byte)
	}{
		{"granule 32", func(b []byte) { le.PutUint64(b[hGranule:], 32) }},
		{"granule 100", func(b []byte) { le.PutUint64(b[hGranule:], 100) }},
		{"pool 0", func(b []byte) { le.PutUint64(b[hPoolSize:], 0) }},
		{"pool unaligned", func(b []byte) { le.PutUint64(b[hPoolSize:], 1000) }},
		{"maxBlocks 1", func(b []byte) { le.PutUint32(b[hMaxBlocks:], 1) }},
		{"maxBlocks too many for meta", func(b []byte) { le.PutUint32(b[hMaxBlocks:], 1<<20) }},
		{"maxBlocks max", func(b []byte) { le.PutUint32(b[hMaxBlocks:], ^uint32(0)) }},
		{"lists", func(b []byte) { le.PutUint32(b[hSLCount:], 16) }},
	} {
		bad = bytes.Clone(meta)
		tc.edit(bad)
		le.PutUint64(bad[hChecksum:], fnv64a(bad[:checksummed]))
		if _, err := Attach(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Attach = %v, want ErrCorrupt", tc.name, err)
		}
	}
}

// TestCheckDetectsHeaderChange covers a re-Init with other parameters under
// an attached Allocator.
func TestCheckDetectsHeaderChange(t *testing.T) {
	meta := make([]byte, MetaSize(32))
	a, err := Init(meta, 1<<20, 32, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Init(meta, 1<<21, 32, 64); err != nil {
		t.Fatal(err)
	}
	if err := a.Check(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Check = %v, want ErrCorrupt", err)
	}
	if err := a.Rebuild(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Rebuild = %v, want ErrCorrupt", err)
	}
}

func TestClassMapping(t *testing.T) {
	// Lists partition the sizes: classOf is monotone, and the good-fit
	// class of u is the lowest class whose every member is >= u.
	lower := func(fl, sl uint) uint64 {
		if fl == 0 {
			return uint64(sl)
		}
		e := fl + slLog2 - 1
		return 1<<e + uint64(sl)<<(e-slLog2)
	}
	prevF, prevS := uint(0), uint(0)
	for u := uint64(1); u < 1<<14; u++ {
		f, s := classOf(u)
		if f < prevF || f == prevF && s < prevS {
			t.Fatalf("classOf not monotone at %d", u)
		}
		prevF, prevS = f, s
		if lo := lower(f, s); lo > u {
			t.Fatalf("classOf(%d) = (%d,%d) with lower bound %d", u, f, s, lo)
		}
		sf, ss := searchClassOf(u)
		if lo := lower(sf, ss); lo < u {
			t.Fatalf("searchClassOf(%d) = (%d,%d) with lower bound %d < %d", u, sf, ss, lo, u)
		}
	}
	for _, u := range []uint64{0, 1 << 57, 1<<58 - 1, 1<<59 + 12345} {
		if f, _ := searchClassOf(u); f >= flCount {
			t.Fatalf("searchClassOf(%d) first level %d out of range", u, f)
		}
	}
}

func TestMeasureAllocFree(t *testing.T) {
	for _, size := range []uint64{64, 64 << 20} {
		p50, p99, err := MeasureAllocFree(1000, size)
		if err != nil {
			t.Fatal(err)
		}
		if p50 <= 0 || p99 < p50 {
			t.Fatalf("p50 %v p99 %v", p50, p99)
		}
	}
	if _, _, err := MeasureAllocFree(0, 64); !errors.Is(err, ErrInvalid) {
		t.Fatalf("n=0: %v, want ErrInvalid", err)
	}
}

func TestNoHeapAllocations(t *testing.T) {
	a, err := newMeasureAllocator(1)
	if err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(1000, func() {
		b, err := a.Alloc(4096, 0)
		if err != nil {
			panic(err)
		}
		if err := a.Free(b.Index); err != nil {
			panic(err)
		}
		_ = a.Stats()
	})
	if n != 0 {
		t.Fatalf("%v heap allocations per Alloc+Free+Stats, want 0", n)
	}
}

// TestLazyDescriptors checks the contract of MetaBytes: an allocator reads
// and writes only the first MetaBytes(0) bytes of its metadata, an Alloc
// only MetaBytes(2) of them, so metadata committed on demand (a sparse
// shared-memory file) is never touched past what the caller committed. The
// bytes beyond are poisoned and must stay so; the allocator must still
// pass Check, after Rebuild too.
func TestLazyDescriptors(t *testing.T) {
	const maxBlocks = 512
	meta := make([]byte, MetaSize(maxBlocks))
	const poison = 0xA5
	for i := range meta {
		meta[i] = poison
	}
	a, err := Init(meta, 1<<20, maxBlocks, 64)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.MetaBytes(0), descOff(2); got != want {
		t.Fatalf("after Init, MetaBytes(0) = %d, want %d", got, want)
	}
	untouched := func(from int, what string) {
		t.Helper()
		for i := from; i < len(meta); i++ {
			if meta[i] != poison {
				t.Fatalf("%s: byte %d past the %d bytes in use was written", what, i, from)
			}
		}
	}
	untouched(a.MetaBytes(0), "Init")
	r := rand.New(rand.NewPCG(1, 2))
	var live []uint32
	for i := 0; i < 4000; i++ {
		if len(live) > 0 && r.IntN(3) == 0 {
			k := r.IntN(len(live))
			if err := a.Free(live[k]); err != nil {
				t.Fatal(err)
			}
			live = append(live[:k], live[k+1:]...)
			untouched(a.MetaBytes(0), "Free")
			continue
		}
		limit := a.MetaBytes(2)
		b, err := a.Alloc(uint64(1+r.IntN(4096)), 0)
		untouched(limit, "Alloc")
		if err == nil {
			live = append(live, b.Index)
		} else if !errors.Is(err, ErrNoSpace) && !errors.Is(err, ErrNoDescriptors) {
			t.Fatal(err)
		}
		if a.MetaBytes(0) > limit {
			t.Fatalf("Alloc formatted past MetaBytes(2): %d > %d", a.MetaBytes(0), limit)
		}
	}
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	inUse := a.MetaBytes(0)
	if err := a.Rebuild(); err != nil {
		t.Fatal(err)
	}
	untouched(inUse, "Rebuild")
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
}
