package benchgpu

import (
	"fmt"
	"io"
	"strconv"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// The futex floor of data path 3's subscriber processes (FloorCell):
// measured after each cell pair, reported beside Pinned-Shared's wake-up.

// floorCell wakes n subscribers sleeping on the floor word, once all sleep
// and pause has passed since their acknowledgements (a spin: the waker's
// own sleep would add its wake-up), count times (FloorCell).
func (h *harness) floorCell(size, n, iters, warmup int, pause time.Duration) (c FloorCell, err error) {
	c = FloorCell{Size: size, Subs: n, Iters: iters, Warmup: warmup, Pause: int64(pause)}
	kids := h.procs.Kids()[:n]
	count := iters + warmup
	if err := h.startCell(kids, request{Op: "floor", Count: count, FloorBase: h.floor.Base()}); err != nil {
		return c, err
	}
	c.Lat = make([][]int64, n)
	for s := range c.Lat {
		c.Lat[s] = make([]int64, iters)
	}
	acked := time.Now()
	for i := range count {
		if err := h.ctx.Err(); err != nil {
			return c, err
		}
		if !settle(h.ctx, n, h.floor.Sleepers) {
			c.Unsettled++
		}
		h.floor.Wake(acked, pause)
		for s, k := range kids {
			a, err := h.readAck(k, i)
			if err != nil {
				return c, err
			}
			if j := i - warmup; j >= 0 {
				c.Lat[s][j] = a.Wake
			}
		}
		acked = time.Now()
	}
	if err := h.replies(kids); err != nil {
		return c, err
	}
	c.First, c.Last = summarize(minOver(c.Lat)), summarize(maxOver(c.Lat))
	return c, nil
}

// findFloor is the futex floor cell of (size, n), or nil.
func (r *Result) findFloor(size, n int) *FloorCell {
	for i := range r.Floors {
		if f := &r.Floors[i]; f.Size == size && f.Subs == n {
			return f
		}
	}
	return nil
}

// floorTable writes the futex floor of the subscriber processes beside
// Pinned-Shared's wake-up.
func (r *Result) floorTable(w io.Writer) {
	t := benchutil.Table{Head: []string{"size", "N", "pause: Pinned-Shared idle p50", "Pinned-Shared: last awake − queued (avg / p50)", "floor: first / last awake (avg)", "floor: last awake p50 / p99"},
		Align: "rrrrrr"}
	for _, size := range r.Settings.Sizes {
		for _, n := range r.Settings.Subs {
			f, c := r.findFloor(size, n), r.findDP3(PathShared, size, n)
			if f == nil || c == nil || c.Stats.Woke.N == 0 {
				continue
			}
			t.Rows = append(t.Rows, []string{benchutil.FormatSize(size), strconv.Itoa(n), benchutil.US(f.Pause),
				benchutil.US(c.Stats.Woke.Avg) + " / " + benchutil.US(c.Stats.Woke.P50),
				benchutil.US(f.First.Avg) + " / " + benchutil.US(f.Last.Avg), benchutil.US(f.Last.P50) + " / " + benchutil.US(f.Last.P99)})
		}
	}
	if len(t.Rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Pinned-Shared's wake-up against the futex floor of the same subscriber processes (µs)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "After each cell of data path 3 the same N subscriber processes sleep in futex(FUTEX_WAIT) on a word of their own, and once every one sleeps and as much time has passed since their acknowledgements as Pinned-Shared's publisher took from the acknowledgements to t0 (its loan, fill and wait: how long its subscribers slept; the waker spins), t0 is stamped and one FUTEX_WAKE wakes them all; each notes its wake − t0. No engine, no GPU: what waking these N processes after such a sleep costs. Pinned-Shared's comparable figure is the last subscriber's wake − Queued (the sample queued, just before the wake call).")
	fmt.Fprintln(w)
	writeTable(w, &t)
}
