package benchlocal

import (
	"fmt"
	"os"
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
		if r.LoanP50, r.LoanP99, err = measureLoan(pub, size, h.o.AllocSamples); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// loanWarmup is the untimed Loan+Discard pairs before the timed ones. Each
// Loan allocates a small object on the Go heap; until the heap has been
// through a collection, every ~100th allocation takes fresh pages from the
// kernel (12–20 µs each on a VM), which would show up as p99 here. The
// warm-up measures the steady state; the report says so.
const loanWarmup = 100_000

// measureLoan times n Loan(size)+Discard pairs individually (after
// loanWarmup untimed ones) and returns their median and 99th percentile in
// ns. Like MeasureAllocFree, the timings include reading the clock.
func measureLoan(pub *zerocopy.Publisher, size, n int) (p50, p99 int64, err error) {
	pair := func() error {
		l, err := pub.Loan(size)
		if err != nil {
			return err
		}
		return l.Discard()
	}
	for range loanWarmup {
		if err := pair(); err != nil {
			return 0, 0, fmt.Errorf("loan of %d bytes: %w", size, err)
		}
	}
	d := make([]int64, n)
	for i := range d {
		t0 := time.Now()
		if err := pair(); err != nil {
			return 0, 0, fmt.Errorf("loan of %d bytes: %w", size, err)
		}
		d[i] = int64(time.Since(t0))
	}
	slices.Sort(d)
	return benchutil.Percentile(d, 50), benchutil.Percentile(d, 99), nil
}
