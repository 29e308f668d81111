package benchlocal

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/tlsf"
)

// measureAlloc times, per size, TLSF Alloc+Free pairs on their own
// (tlsf.MeasureAllocFree: a 1 GiB pool with about 100 live blocks) and
// Publisher.Loan + Loan.Discard through the engine (topic lock, sample
// record, held entry, TLSF on the topic's pool) on a topic of its own.
func (h *harness) measureAlloc() ([]AllocRow, error) {
	topic := fmt.Sprintf("/rgaps_bench/p%d/alloc", os.Getpid())
	pub, err := h.node.NewPublisher(topic, msgType, qos.Default())
	if err != nil {
		return nil, err
	}
	defer pub.Close()
	var rows []AllocRow
	for _, size := range h.o.AllocSizes {
		if err := h.ctx.Err(); err != nil {
			return nil, err
		}
		h.progress("allocation: %s, %d pairs", benchutil.FormatSize(size), h.o.AllocSamples)
		r := AllocRow{Size: size, Samples: h.o.AllocSamples}
		p50, p99, err := tlsf.MeasureAllocFree(h.o.AllocSamples, uint64(size))
		if err != nil {
			return nil, err
		}
		r.TLSFP50, r.TLSFP99 = int64(p50), int64(p99)
		ls, err := measureLoan(pub, size, h.o.AllocSamples)
		if err != nil {
			return nil, err
		}
		r.LoanP50, r.LoanP99, r.LoanMax, r.LoanGCs, r.LoanAllocs = ls.p50, ls.p99, ls.max, ls.gcs, ls.allocs
		rows = append(rows, r)
	}
	return rows, nil
}

// loanWarmup is the untimed Loan+Discard pairs before the timed ones:
// caches, the allocator's lists and the topic's committed pages settle
// (and, should a Loan allocate, the Go heap goes through a collection
// first: the report's allocations column says whether one does).
const loanWarmup = 100_000

// yieldEvery: the timed loop yields (untimed) every so many pairs. The Go
// runtime preempts a goroutine that ran 10 ms without yielding with a
// signal; a loop of 20,000 pairs runs longer than that, and real callers
// yield far more often than every 10 ms.
const yieldEvery = 1000

type loanStats struct {
	p50, p99, max int64
	gcs           uint32
	allocs        float64
}

// measureLoan times n Loan(size)+Discard pairs individually (after
// loanWarmup untimed ones) on a thread of its own, and returns their
// median, 99th percentile and maximum in ns, the collections that ran
// meanwhile and the heap allocations per pair. Like MeasureAllocFree, the
// timings include reading the clock (Machine.ClockNs).
func measureLoan(pub *zerocopy.Publisher, size, n int) (loanStats, error) {
	var st loanStats
	pair := func() error {
		l, err := pub.Loan(size)
		if err != nil {
			return err
		}
		return l.Discard()
	}
	for range loanWarmup {
		if err := pair(); err != nil {
			return st, fmt.Errorf("loan of %d bytes: %w", size, err)
		}
	}
	d := make([]int64, n)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range d {
		if i%yieldEvery == yieldEvery-1 {
			runtime.Gosched()
		}
		t0 := time.Now()
		if err := pair(); err != nil {
			return st, fmt.Errorf("loan of %d bytes: %w", size, err)
		}
		d[i] = int64(time.Since(t0))
	}
	runtime.ReadMemStats(&after)
	st.gcs = after.NumGC - before.NumGC
	st.allocs = float64(after.Mallocs-before.Mallocs) / float64(n)
	slices.Sort(d)
	st.p50, st.p99, st.max = benchutil.Percentile(d, 50), benchutil.Percentile(d, 99), d[n-1]
	return st, nil
}
