package benchlocal

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Goals this project sets itself, and what the thesis reports.
const (
	GoalAllocP99  = 1000 // ns: TLSF alloc+free p99
	GoalWakeupP50 = 5000 // ns: publish → subscriber wakeup p50
	// GoalFloorRatio: the wakeup p50 at the largest N stays within this
	// factor of the same run's futex floor of as many processes (issue 13).
	GoalFloorRatio = 1.5
	// FlatRatio: a latency counts as flat across N or size when the ratio
	// between the ends stays at or under this (our threshold; the thesis'
	// Table 4.4 calls 6 → 11 µs over N = 1 → 8 "stable").
	FlatRatio = 2.0
)

// thesisNotify is Table 4.4's notification through Iceoryx (average, µs)
// per subscriber count; the same for 4 MB, 64 MB and 1 GB.
var thesisNotify = map[int]int{1: 6, 2: 7, 4: 9, 8: 11}

// thesisUDS is Table 4.3's Unix-domain-socket IPC (µs), one receiver.
var thesisUDS = map[int]int{4 << 20: 1184, 64 << 20: 17810}

// us writes ns as microseconds with a precision that suits the magnitude
// (benchutil.US; a negative value keeps two decimals, as it always has
// here).
func us(ns int64) string {
	if ns < 0 {
		return strconv.FormatFloat(float64(ns)/1e3, 'f', 2, 64)
	}
	return benchutil.US(ns)
}

func ratio(a, b int64) string {
	if b <= 0 {
		return "—"
	}
	return benchutil.Times(float64(a) / float64(b))
}

// findCell returns the cell of (path, size, n), or nil. The futex floor
// is size 0; a futex cell of a size is the floor paused as long as rgaps'
// cell of that size (Cell.Pause).
func (r *Result) findCell(path string, size, n int) *Cell {
	for i := range r.Cells {
		c := &r.Cells[i]
		if c.Path == path && c.Size == size && c.Subs == n {
			return c
		}
	}
	return nil
}

// AllocTable writes section 1's table.
func (r *Result) AllocTable(w io.Writer) {
	t := benchutil.Table{
		Head: []string{"size", "pairs", "TLSF alloc+free p50", "TLSF p99", "Loan+Discard p50", "Loan+Discard p99", "Loan+Discard max",
			"GCs while timed", "heap allocs / pair", "goal p99 ≤ 1 µs (TLSF / engine)", "thesis TLSF malloc (Table 4.2)"},
		Align: "rrrrrrrrrlr",
	}
	for _, a := range r.Alloc {
		t.Rows = append(t.Rows, []string{
			benchutil.FormatSize(a.Size), benchutil.Thousands(int64(a.Samples)), us(a.TLSFP50), us(a.TLSFP99), us(a.LoanP50), us(a.LoanP99), us(a.LoanMax),
			strconv.Itoa(int(a.LoanGCs)), strconv.FormatFloat(a.LoanAllocs, 'f', 2, 64),
			benchutil.MetWord(a.TLSFP99 <= GoalAllocP99) + " / " + benchutil.MetWord(a.LoanP99 <= GoalAllocP99), "~1",
		})
	}
	t.Write(w)
}

// WakeupTable writes section 2's table: one row per size and subscriber
// count, the zero-copy path beside the futex floor of as many processes,
// with the stages of its latency.
func (r *Result) WakeupTable(w io.Writer) {
	t := benchutil.Table{
		Head: []string{"size", "N", "msgs", "floor p50 / p99", "rgaps p50 / p99", "rgaps / floor (p50)", "all-woke p50: floor / rgaps",
			"rgaps idle p50 · floor after that pause p50 / p99", "rgaps / paused floor (p50)",
			"rgaps stages p50: queued · woken · woke · took", "Publish call p50", "thesis notify (T4.4)"},
		Align: "rrrrrrrrrrrr",
	}
	for _, size := range r.Settings.Sizes {
		for _, n := range r.Settings.Subs {
			z := r.findCell(PathRgaps, size, n)
			if z == nil {
				continue
			}
			tn := "—"
			if v, ok := thesisNotify[n]; ok {
				tn = strconv.Itoa(v)
			}
			msgs := strconv.Itoa(z.Iters)
			if z.Iters != r.Settings.Iters {
				msgs += "*"
			}
			floor, q, allFloor := "—", "—", "—"
			if f := r.findCell(PathFutex, 0, n); f != nil {
				floor, q, allFloor = us(f.Stats.P50)+" / "+us(f.Stats.P99), ratio(z.Stats.P50, f.Stats.P50), us(f.Stats.AllP50)
			}
			st := z.Stats
			paused, pq := us(st.IdleP50)+" · —", "—"
			if f := r.findCell(PathFutex, size, n); f != nil {
				paused, pq = us(st.IdleP50)+" · "+us(f.Stats.P50)+" / "+us(f.Stats.P99), ratio(st.P50, f.Stats.P50)
			}
			t.Rows = append(t.Rows, []string{
				benchutil.FormatSize(size), strconv.Itoa(n), msgs, floor, us(st.P50) + " / " + us(st.P99), q, allFloor + " / " + us(st.AllP50),
				paused, pq,
				us(st.QueuedP50) + " · " + us(st.WokenP50) + " · " + us(st.WakeP50) + " · " + us(st.P50), us(st.SendP50), tn,
			})
		}
	}
	t.Write(w)
}

// UDSTable writes section 3's table: the thesis' baseline beside rgaps.
func (r *Result) UDSTable(w io.Writer) {
	t := benchutil.Table{
		Head:  []string{"size", "N", "msgs", "UDS p50", "UDS p99", "UDS all-read p50", "UDS/rgaps p50", "thesis UDS (T4.3)"},
		Align: "rrrrrrrr",
	}
	for _, size := range r.Settings.Sizes {
		for _, n := range r.Settings.Subs {
			z, u := r.findCell(PathRgaps, size, n), r.findCell(PathUDS, size, n)
			if u == nil {
				continue
			}
			tu := "—"
			if v, ok := thesisUDS[size]; ok && n == 1 {
				tu = benchutil.Thousands(int64(v))
			}
			vs := "—"
			if z != nil {
				vs = ratio(u.Stats.P50, z.Stats.P50)
			}
			msgs := strconv.Itoa(u.Iters)
			if u.Iters != r.Settings.Iters {
				msgs += "*"
			}
			t.Rows = append(t.Rows, []string{
				benchutil.FormatSize(size), strconv.Itoa(n), msgs, us(u.Stats.P50), us(u.Stats.P99), us(u.Stats.AllP50), vs, tu,
			})
		}
	}
	t.Write(w)
}

// Summary is one line per goal, with the numbers behind the verdict.
func (r *Result) Summary() []string {
	var out []string
	if len(r.Alloc) > 0 {
		wt, wl := r.Alloc[0], r.Alloc[0]
		for _, a := range r.Alloc {
			if a.TLSFP99 > wt.TLSFP99 {
				wt = a
			}
			if a.LoanP99 > wl.LoanP99 {
				wl = a
			}
		}
		var gcs uint32
		var allocs float64
		for _, a := range r.Alloc {
			gcs += a.LoanGCs
			allocs = max(allocs, a.LoanAllocs)
		}
		out = append(out, fmt.Sprintf("TLSF alloc+free p99 ≤ 1 µs: %s — worst p99 %s µs (%s); through the engine (Loan+Discard): %s — worst p99 %s µs (%s); %d garbage collections during the timed pairs, at most %s heap allocations per pair. Thesis: ~1 µs.",
			benchutil.MetWord(wt.TLSFP99 <= GoalAllocP99), us(wt.TLSFP99), benchutil.FormatSize(wt.Size),
			benchutil.MetWord(wl.LoanP99 <= GoalAllocP99), us(wl.LoanP99), benchutil.FormatSize(wl.Size), gcs, strconv.FormatFloat(allocs, 'f', 2, 64)))
	}
	var zs []*Cell
	for i := range r.Cells {
		if r.Cells[i].Path == PathRgaps {
			zs = append(zs, &r.Cells[i])
		}
	}
	if len(zs) == 0 {
		return out
	}
	met := 0
	best, worst, worstAll := zs[0], zs[0], zs[0]
	for _, c := range zs {
		if c.Stats.P50 <= GoalWakeupP50 {
			met++
		}
		if c.Stats.P50 < best.Stats.P50 {
			best = c
		}
		if c.Stats.P50 > worst.Stats.P50 {
			worst = c
		}
		if c.Stats.AllP50 > worstAll.Stats.AllP50 {
			worstAll = c
		}
	}
	where := func(c *Cell) string { return fmt.Sprintf("%s, N=%d", benchutil.FormatSize(c.Size), c.Subs) }
	out = append(out, fmt.Sprintf("Wakeup p50 ≤ 5 µs: %s — %d of %d cells; per-subscriber p50 from %s µs (%s) to %s µs (%s); all-woke p50 worst %s µs (%s). This machine's futex wakeup floor: p50 %s µs. Thesis notify: 6–11 µs (avg).",
		benchutil.MetWord(met == len(zs)), met, len(zs), us(best.Stats.P50), where(best), us(worst.Stats.P50), where(worst), us(worstAll.Stats.AllP50), where(worstAll), us(r.Machine.WakeP50)))

	subs, sizes := r.Settings.Subs, r.Settings.Sizes
	nLo, nHi := minOf(subs), maxOf(subs)
	sLo, sHi := minOf(sizes), maxOf(sizes)
	if f := r.findCell(PathFutex, 0, nHi); f != nil {
		var parts, twos []string
		ok := true
		for _, size := range sizes {
			z := r.findCell(PathRgaps, size, nHi)
			if z == nil {
				continue
			}
			q := float64(z.Stats.P50) / float64(max(f.Stats.P50, 1))
			ok = ok && q <= GoalFloorRatio
			parts = append(parts, fmt.Sprintf("%s %s µs = %s", benchutil.FormatSize(size), us(z.Stats.P50), ratio(z.Stats.P50, f.Stats.P50)))
			twos = append(twos, ratio(z.Stats.P50, r.Machine.WakeP50))
		}
		var floors []string
		for _, n := range subs {
			if fc := r.findCell(PathFutex, 0, n); fc != nil {
				floors = append(floors, fmt.Sprintf("N=%d %s", n, us(fc.Stats.P50)))
			}
		}
		out = append(out, fmt.Sprintf("Wakeup p50 at N=%d ≤ %.1f× this run's futex floor of %d processes (one FUTEX_WAKE of %d sleepers, p50 %s µs): %s — %s. Floors p50 by N: %s µs. Against the two-thread floor (p50 %s µs): %s.",
			nHi, GoalFloorRatio, nHi, nHi, us(f.Stats.P50), benchutil.MetWord(ok), strings.Join(parts, ", "), strings.Join(floors, ", "), us(r.Machine.WakeP50), strings.Join(twos, ", ")))
	}
	if line := r.pausedFloorLine(nHi); line != "" {
		out = append(out, line)
	}
	if nLo != nHi {
		var parts []string
		flat := true
		for _, size := range sizes {
			lo, hi := r.findCell(PathRgaps, size, nLo), r.findCell(PathRgaps, size, nHi)
			if lo == nil || hi == nil {
				continue
			}
			q := float64(hi.Stats.P50) / float64(max(lo.Stats.P50, 1))
			flat = flat && q <= FlatRatio
			parts = append(parts, fmt.Sprintf("%s %s (all-woke %s)", benchutil.FormatSize(size), ratio(hi.Stats.P50, lo.Stats.P50), ratio(hi.Stats.AllP50, lo.Stats.AllP50)))
		}
		out = append(out, fmt.Sprintf("Flat across N — p50(N=%d)/p50(N=%d): %s → %s (flat = ≤ %.0f×). Thesis Table 4.4: 11/6 = 1.8×.",
			nHi, nLo, strings.Join(parts, ", "), flatWord(flat), FlatRatio))
	}
	if sLo != sHi {
		var parts []string
		flat := true
		for _, n := range subs {
			lo, hi := r.findCell(PathRgaps, sLo, n), r.findCell(PathRgaps, sHi, n)
			if lo == nil || hi == nil {
				continue
			}
			q := float64(hi.Stats.P50) / float64(max(lo.Stats.P50, 1))
			flat = flat && q <= FlatRatio
			parts = append(parts, fmt.Sprintf("N=%d %s", n, ratio(hi.Stats.P50, lo.Stats.P50)))
		}
		out = append(out, fmt.Sprintf("Flat across size — p50(%s)/p50(%s): %s → %s (flat = ≤ %.0f×).",
			benchutil.FormatSize(sHi), benchutil.FormatSize(sLo), strings.Join(parts, ", "), flatWord(flat), FlatRatio))
	}
	var lo, hi *Cell
	var qlo, qhi float64
	for _, z := range zs {
		u := r.findCell(PathUDS, z.Size, z.Subs)
		if u == nil || z.Stats.P50 <= 0 {
			continue
		}
		q := float64(u.Stats.P50) / float64(z.Stats.P50)
		if lo == nil || q < qlo {
			lo, qlo = z, q
		}
		if hi == nil || q > qhi {
			hi, qhi = z, q
		}
	}
	if lo != nil {
		out = append(out, fmt.Sprintf("Baseline UDS/rgaps (p50): from %s (%s) to %s (%s).",
			ratio(int64(qlo*1000), 1000), where(lo), ratio(int64(qhi*1000), 1000), where(hi)))
	}
	unsettled := 0
	for _, c := range r.Cells {
		unsettled += c.Unsettled
	}
	switch {
	case !r.Settings.Settle:
		out = append(out, "Sleep before send: off (-settle=false or busy polling): each message went out right after the previous one's acknowledgements, whether or not every subscriber slept yet.")
	case unsettled > 0:
		out = append(out, fmt.Sprintf("Sleep before send: %d messages went out before every subscriber slept (waited up to %v each): their subscribers did not all wake from sleep.", unsettled, settleLimit))
	default:
		out = append(out, "Sleep before send: every futex and rgaps message went out once every subscriber slept in the kernel.")
	}
	bad, msgs := 0, 0
	for _, c := range r.Cells {
		if c.Path == PathFutex {
			continue // no bytes
		}
		for s := range c.Received {
			bad += c.Bad[s]
			msgs += c.Received[s]
		}
	}
	if bad == 0 {
		out = append(out, fmt.Sprintf("Bytes: every subscriber checked every message it got (%s deliveries, rgaps and UDS): all correct.", benchutil.Thousands(int64(msgs))))
	} else {
		out = append(out, fmt.Sprintf("Bytes: %d of %d deliveries had WRONG bytes (see first_bad in the JSON).", bad, msgs))
	}
	return out
}

// pausedFloorLine judges the wake-up at N=n against the floor of the same
// processes paused as long as rgaps' (Cell.Pause): "" without such cells.
func (r *Result) pausedFloorLine(n int) string {
	var parts []string
	ok := true
	for _, size := range r.Settings.Sizes {
		z, f := r.findCell(PathRgaps, size, n), r.findCell(PathFutex, size, n)
		if z == nil || f == nil {
			continue
		}
		q := float64(z.Stats.P50) / float64(max(f.Stats.P50, 1))
		ok = ok && q <= GoalFloorRatio
		parts = append(parts, fmt.Sprintf("%s %s µs = %s the floor after a %s µs pause (%s µs)", benchutil.FormatSize(size), us(z.Stats.P50), ratio(z.Stats.P50, f.Stats.P50), us(f.Pause), us(f.Stats.P50)))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Wakeup p50 at N=%d ≤ %.1f× the floor of the same %d processes when they sleep as long before the wake as rgaps' subscribers did (the waker pauses rgaps' idle p50 after the acknowledgements): %s — %s.",
		n, GoalFloorRatio, n, benchutil.MetWord(ok), strings.Join(parts, "; "))
}

func flatWord(ok bool) string {
	if ok {
		return "flat"
	}
	return "NOT flat"
}

func minOf(s []int) int {
	m := s[0]
	for _, v := range s {
		m = min(m, v)
	}
	return m
}

// WriteMarkdown writes the whole report: header, the tables, summary.
func (r *Result) WriteMarkdown(w io.Writer) {
	m, s := r.Machine, r.Settings
	fmt.Fprintf(w, "# rgaps-bench local\n\n")
	fmt.Fprintf(w, "- machine: %s, %d cores (GOMAXPROCS %d), kernel %s, clocksource %s (time.Now ≈ %d ns)\n", m.CPU, m.Cores, m.GOMAXPROCS, m.Kernel, m.Clocksource, m.ClockNs)
	fmt.Fprintf(w, "- two-thread wakeup floor of this machine (futex wake → woken thread running, two threads of one process, no engine): p50 %s µs, p99 %s µs; the floor of N processes is in section 2\n", us(m.WakeP50), us(m.WakeP99))
	fmt.Fprintf(w, "- go: %s; date: %s; run took %.1f s\n", m.Go, m.Date, time.Duration(r.Elapsed).Seconds())
	bp := "subscribers sleep in the kernel (futex), no busy polling"
	if s.BusyPoll > 0 {
		bp = fmt.Sprintf("subscribers busy-poll %v before sleeping (futex)", s.BusyPoll)
	}
	fmt.Fprintf(w, "- domain %d, shm prefix %s, topic %s (pool %s, %s); %s\n", s.Domain, s.Prefix, s.Topic, benchutil.FormatSize(int(s.PoolSize)), s.QoS, bp)
	fmt.Fprintf(w, "\n## 1. Pool allocation (µs; each pair timed alone, clock read included)\n\n")
	fmt.Fprintf(w, "TLSF = tlsf.MeasureAllocFree (1 GiB pool, ~100 live blocks); Loan+Discard = Publisher.Loan + Loan.Discard on an otherwise empty topic (topic lock + sample record + TLSF), after %s untimed pairs, on a locked OS thread that yields (untimed) every %s pairs; GCs and heap allocations counted over the timed pairs (runtime.MemStats).\n\n", benchutil.Thousands(loanWarmup), benchutil.Thousands(yieldEvery))
	r.AllocTable(w)
	fmt.Fprintf(w, "\n## 2. Publish → subscriber wakeup, N subscriber processes, against the futex floor of N processes (µs)\n\n")
	_, bw := ItersFor(BigSize+1, s.Iters, s.Warmup)
	bi, _ := ItersFor(BigSize+1, s.Iters, s.Warmup)
	settled := "waits (untimed) until every subscriber sleeps in Subscription.Wait (Topic.Waiting)"
	if !s.Settle {
		settled = "does not wait for the subscribers to sleep (-settle=false or busy polling)"
	}
	fmt.Fprintf(w, "rgaps: the publisher loans and fills the message, "+settled+", stamps t0 (wall clock) in the block and calls Publish; each subscriber notes when Wait returned (woke) and when it holds the sample (took), minus t0. "+
		"Stages (Loan.PublishTraced, from the start of Publish): queued = the sample is in every queue and the topic lock released, woken = the FUTEX_WAKE call returned. "+
		"Floor: the same subscriber processes sleep in futex(FUTEX_WAIT) on one word of a shared segment; the publisher (like rgaps' settled or not) stamps t0 and wakes them with one FUTEX_WAKE; each records now − t0 (no engine, no payload: what waking N processes costs here). "+
		"How soon a sleeper is back depends on how long it slept (an idle processor of a virtual machine polls a while, then halts, and a halted one takes longer to wake), and rgaps' subscribers sleep while the publisher loans and fills the next message: so the floor runs again after each rgaps cell with the waker pausing, after the acknowledgements, as long as that cell's publisher took from the acknowledgements to t0 (rgaps idle p50; a spin), and rgaps is also compared with that paused floor. "+
		"Paced: the next message goes after every subscriber acknowledged the previous one (not timed). "+
		"p50/p99 over all subscribers' samples; all-woke = p50 of the per-message maximum over subscribers. "+
		"msgs = timed messages per cell after %d warm-up (*: sizes above %s use %d after %d warm-up); the floor runs %d+%d per N, each paused floor as many as its rgaps cell. Thesis column: Table 4.4 notification via Iceoryx (avg, any size).\n\n",
		s.Warmup, benchutil.FormatSize(BigSize), bi, bw, s.Iters, s.Warmup)
	r.WakeupTable(w)
	fmt.Fprintf(w, "\n## 3. The thesis' Pageable-UDS baseline: the same bytes over Unix-domain sockets (µs)\n\n")
	fmt.Fprintf(w, "The same bytes written to each subscriber's SOCK_STREAM Unix socket in turn; a subscriber's latency ends when the whole message is in its own buffer (it is not made to sleep first). all-read = p50 of the per-message maximum. Thesis column: Table 4.3 UDS IPC (4 MB / 64 MB, one receiver).\n\n")
	r.UDSTable(w)
	fmt.Fprintf(w, "\n## Summary\n\n")
	for _, l := range r.Summary() {
		fmt.Fprintf(w, "- %s\n", l)
	}
}
