package zerocopy

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// benchSizes are the message sizes of the engine benchmarks (the same as
// tlsf.BenchmarkAllocFree's).
var benchSizes = []struct {
	name string
	size int
}{
	{"64B", 64},
	{"4KiB", 4 << 10},
	{"1MiB", 1 << 20},
	{"64MiB", 64 << 20},
}

// benchPool holds two of the largest message plus slack.
const benchPool = 132 << 20

// timedPairs runs op n times, timing each call alone, and reports the
// median and 99th percentile (clock read included) as p50-ns and p99-ns.
// 100000 untimed calls come first: every Loan allocates a small object, and
// until the Go heap has been through a collection every ~100th allocation
// takes fresh pages from the kernel (12–20 µs on a VM), which is start-up,
// not steady state (`rgaps bench local` does the same).
func timedPairs(b *testing.B, n int, op func() error) {
	b.Helper()
	for range 100_000 {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	d := make([]time.Duration, n)
	for i := range d {
		t0 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		d[i] = time.Since(t0)
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[n/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(d[min(n-1, n*99/100)].Nanoseconds()), "p99-ns")
}

// BenchmarkLoanDiscard times Publisher.Loan + Loan.Discard: the topic lock,
// a sample record, a held entry and a TLSF alloc/free on the topic's pool.
// ns/op is the mean; p50-ns and p99-ns come from 20000 pairs timed one by
// one after the main loop (see timedPairs). `rgaps bench local` prints the
// same next to tlsf.MeasureAllocFree.
func BenchmarkLoanDiscard(b *testing.B) {
	for _, bc := range benchSizes {
		b.Run(bc.name, func(b *testing.B) {
			d := openDomain(b, func(c *Config) { c.PoolSize = benchPool })
			p := mustPub(b, d, "/bench/loan_discard", qos.Default())
			op := func() error {
				l, err := p.Loan(bc.size)
				if err != nil {
					return err
				}
				return l.Discard()
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
			timedPairs(b, 20000, op)
		})
	}
}

// BenchmarkPublishTakeInProcess times one message through the engine within
// one process: Loan, write a header (the payload is not filled: that is the
// application's work, and zero-copy means the engine never touches it),
// Publish, Take, Return. Cross-process wakeup latency is measured by
// `rgaps bench local` only.
func BenchmarkPublishTakeInProcess(b *testing.B) {
	for _, bc := range benchSizes {
		b.Run(bc.name, func(b *testing.B) {
			d := openDomain(b, func(c *Config) { c.PoolSize = benchPool })
			p := mustPub(b, d, "/bench/publish_take", qos.Default())
			s := mustSub(b, d, "/bench/publish_take", qos.Default())
			var seq uint64
			op := func() error {
				l, err := p.Loan(bc.size)
				if err != nil {
					return err
				}
				seq++
				binary.LittleEndian.PutUint64(l.Bytes(), seq)
				if err := l.Publish(); err != nil {
					return err
				}
				smp, err := s.Take()
				if err != nil {
					return err
				}
				if got := binary.LittleEndian.Uint64(smp.Bytes()); got != seq || len(smp.Bytes()) != bc.size {
					b.Fatalf("took message %d of %d bytes, want %d of %d", got, len(smp.Bytes()), seq, bc.size)
				}
				return smp.Return()
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := op(); err != nil {
					b.Fatal(err)
				}
			}
			timedPairs(b, 20000, op)
		})
	}
}
