package tlsf

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Parameters of the allocator MeasureAllocFree and the benchmarks time.
const (
	measurePool      = 1 << 30
	measureMaxBlocks = 4096
	measureLive      = 100
)

// newMeasureAllocator returns an allocator over a fresh 1 GiB pool with 4096
// descriptors and a 64-byte granule, holding about measureLive live blocks
// of log-uniform random sizes (64 B to 4 MiB) separated by free holes, so
// that several lists are non-empty and Alloc has real neighbours to split
// and Free real neighbours to coalesce with.
func newMeasureAllocator(seed uint64) (*Allocator, error) {
	a, err := Init(make([]byte, MetaSize(measureMaxBlocks)), measurePool, measureMaxBlocks, MinGranule)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	idx := make([]uint32, 0, 2*measureLive)
	for range 2 * measureLive {
		size := uint64(64) << r.IntN(17) // 64 B .. 4 MiB
		size += r.Uint64N(size)
		b, err := a.Alloc(size, 0)
		if err != nil {
			return nil, fmt.Errorf("building measurement allocator: %w", err)
		}
		idx = append(idx, b.Index)
	}
	// Free every other block: leaves holes between the live ones.
	for i := 0; i < len(idx); i += 2 {
		if err := a.Free(idx[i]); err != nil {
			return nil, fmt.Errorf("building measurement allocator: %w", err)
		}
	}
	return a, nil
}

// measure times n Alloc(size)+Free pairs on a individually and returns the
// median and 99th percentile.
func measure(a *Allocator, n int, size uint64) (p50, p99 time.Duration, err error) {
	if n <= 0 {
		return 0, 0, fmt.Errorf("measuring alloc/free: %d samples: %w", n, ErrInvalid)
	}
	d := make([]time.Duration, n)
	for i := range d {
		t0 := time.Now()
		b, err := a.Alloc(size, 0)
		if err != nil {
			return 0, 0, fmt.Errorf("measuring alloc/free of %d bytes: %w", size, err)
		}
		if err := a.Free(b.Index); err != nil {
			return 0, 0, fmt.Errorf("measuring alloc/free of %d bytes: %w", size, err)
		}
		d[i] = time.Since(t0)
	}
	slices.Sort(d)
	return d[n/2], d[min(n-1, n*99/100)], nil
}

// MeasureAllocFree times n Alloc(size)+Free pairs, each individually with
// time.Now, on a fresh allocator (1 GiB pool, 4096 descriptors, 64-byte
// granule, about 100 live blocks of random sizes already allocated) and
// returns the median and 99th-percentile pair latency. The timings include
// the cost of reading the clock.
func MeasureAllocFree(n int, size uint64) (p50, p99 time.Duration, err error) {
	a, err := newMeasureAllocator(1)
	if err != nil {
		return 0, 0, err
	}
	return measure(a, n, size)
}
