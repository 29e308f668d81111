package tlsf

import "testing"

// BenchmarkAllocFree times Alloc+Free pairs per size class in a 1 GiB pool
// with about 100 live blocks of random sizes (see newMeasureAllocator).
// ns/op is the mean pair cost; p50-ns and p99-ns come from 20000 pairs
// timed individually after the main loop (and include reading the clock).
func BenchmarkAllocFree(b *testing.B) {
	for _, bc := range []struct {
		name string
		size uint64
	}{
		{"64B", 64},
		{"4KiB", 4 << 10},
		{"1MiB", 1 << 20},
		{"64MiB", 64 << 20},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a, err := newMeasureAllocator(1)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				blk, err := a.Alloc(bc.size, 0)
				if err != nil {
					b.Fatal(err)
				}
				if err := a.Free(blk.Index); err != nil {
					b.Fatal(err)
				}
			}
			p50, p99, err := measure(a, 20000, bc.size)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(p99.Nanoseconds()), "p99-ns")
		})
	}
}
