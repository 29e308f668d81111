package benchgpu

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Goals this project sets itself for the GPU data paths.
const (
	// GoalCopyVsBare: data path 1's copy into the pool runs at this
	// fraction of a bare pinned copy's bandwidth or better.
	GoalCopyVsBare = 0.95
	// GoalFlatN: Pinned-Shared delivery at N=8 over N=1 (averages) stays at
	// or under this.
	GoalFlatN = 1.05
	// GoalFanout: Pageable-Iceoryx over Pinned-Shared delivery (averages)
	// at N = GoalFanoutSubs and GoalFanoutSize reaches this.
	GoalFanout     = 8.0
	GoalFanoutSubs = 8
	GoalFanoutSize = 64 << 20
)

// The thesis' numbers (µs), by message size (4 MB, 64 MB, 1 GB, read as
// MiB and GiB) and subscriber count.
var (
	// Table 4.2, Pinned-SHM: T1 TLSF malloc, T2 cudaMemcpy, T3 notification.
	thesisT42 = map[int][3]int{4 << 20: {1, 224, 1}, 64 << 20: {1, 2906, 1}, 1 << 30: {1, 47905, 1}}
	// Table 4.3, Pageable-UDS: T1 cudaMemcpy, T2 IPC (UDS).
	thesisT43 = map[int][2]int{4 << 20: {451, 1184}, 64 << 20: {5709, 17810}, 1 << 30: {85806, 208318}}
	// Table 4.4, Pinned-Shared: T1 TLSF malloc and T2 cudaMemcpy per size,
	// T3 notification (average) per N.
	thesisT44   = map[int][2]int{4 << 20: {1, 216}, 64 << 20: {1, 2872}, 1 << 30: {1, 43677}}
	thesisT44T3 = map[int]int{1: 6, 2: 7, 4: 9, 8: 11}
	// Table 4.5, Pageable-Iceoryx: T1 publish via Iceoryx, T2 cudaMemcpy
	// (average), per size and N.
	thesisT45 = map[int]map[int][2]int{
		4 << 20:  {1: {6, 396}, 2: {7, 520}, 4: {7, 866}, 8: {10, 2238}},
		64 << 20: {1: {9, 5625}, 2: {9, 7439}, 4: {11, 12468}, 8: {12, 24357}},
		1 << 30:  {1: {9, 85172}, 2: {10, 118273}, 4: {11, 191378}, 8: {12, 382018}},
	}
)

// thesisShared is Table 4.4's T1+T2+T3 for (size, n), or false.
func thesisShared(size, n int) (int, bool) {
	t, ok := thesisT44[size]
	t3, ok3 := thesisT44T3[n]
	if !ok || !ok3 {
		return 0, false
	}
	return t[0] + t[1] + t3, true
}

// thesisIceoryx is Table 4.5's T1+T2 for (size, n), or false.
func thesisIceoryx(size, n int) (int, bool) {
	t, ok := thesisT45[size][n]
	return t[0] + t[1], ok
}

// p50p99 writes "p50 / p99".
func p50p99(s Summary) string { return benchutil.US(s.P50) + " / " + benchutil.US(s.P99) }

// avgp99 writes "avg / p99".
func avgp99(s Summary) string { return benchutil.US(s.Avg) + " / " + benchutil.US(s.P99) }

// gbps is size bytes in ns as GB/s (10^9 bytes per second).
func gbps(size int, ns int64) string {
	if ns <= 0 {
		return "—"
	}
	return strconv.FormatFloat(float64(size)/float64(ns), 'f', 1, 64)
}

func pct(r float64) string { return strconv.FormatFloat(100*r, 'f', 1, 64) + "%" }

func quotient(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// writeTable writes t and a blank line.
func writeTable(w io.Writer, t *benchutil.Table) {
	t.Write(w)
	fmt.Fprintln(w)
}

func intOr(m map[int]int, k int) string {
	if v, ok := m[k]; ok {
		return benchutil.Thousands(int64(v))
	}
	return "—"
}

// findDP3 returns the cell of (path, size, n), or nil.
func (r *Result) findDP3(path string, size, n int) *DP3Cell {
	for i := range r.DP3 {
		c := &r.DP3[i]
		if c.Path == path && c.Size == size && c.Subs == n {
			return c
		}
	}
	return nil
}

func (r *Result) findDP1(size int) *DP1Row {
	for i := range r.DP1 {
		if r.DP1[i].Size == size {
			return &r.DP1[i]
		}
	}
	return nil
}

// msgs writes a cell's message counts: timed+warm-up.
func msgs(iters, warmup int) string { return fmt.Sprintf("%d+%d", iters, warmup) }

func (r *Result) writeHeader(w io.Writer) {
	m := r.Machine
	fmt.Fprintln(w, "# rgaps-bench gpu: the thesis' GPU data paths on this host")
	fmt.Fprintln(w)
	gpu := m.GPU
	if m.PCIBusID != "" {
		gpu += fmt.Sprintf(" (device %d, PCI %s, %s, compute %s, %d SMs, VMM %v)", m.GPUOrdinal, m.PCIBusID, gib(m.GPUMemory), m.Compute, m.SMs, m.VMM)
	}
	fmt.Fprintf(w, "- GPU: %s; NVIDIA driver %s, CUDA driver API %s; MPS %s\n", gpu, m.NvidiaDriver, m.CUDADriver, m.MPS)
	fmt.Fprintf(w, "- Host: %s, %d cores; Linux %s; %s; /dev/shm %s; %s\n", m.CPU, m.Cores, m.Kernel, m.OS, gib(m.ShmSize), m.Go)
	s := r.Settings
	var per []string
	for _, size := range s.Sizes {
		k := strconv.Itoa(size)
		per = append(per, fmt.Sprintf("%s %d+%d", benchutil.FormatSize(size), s.CellIters[k], s.CellWarm[k]))
	}
	sizes := make([]string, len(s.Sizes))
	for i, v := range s.Sizes {
		sizes[i] = benchutil.FormatSize(v)
	}
	subs := make([]string, len(s.Subs))
	for i, v := range s.Subs {
		subs[i] = strconv.Itoa(v)
	}
	fmt.Fprintf(w, "- Run: %s, %.1f s; sizes %s; N = %s; messages per cell, timed+warm-up: %s; domain %d, shared-memory prefix %s; every topic's pool %s (GPU topic: GPU pool and host staging pool); QoS %s\n",
		m.Date, float64(r.Elapsed)/1e9, strings.Join(sizes, ", "), strings.Join(subs, ", "), strings.Join(per, ", "), s.Domain, s.Prefix, gib(s.PoolSize), s.QoS)
	if s.SubSchedule != "" {
		fmt.Fprintf(w, "- Subscriber processes wait for the GPU with CUDA schedule %q (-sub-schedule; their kernels' synchronisation)\n", s.SubSchedule)
	}
	if s.BusyPoll > 0 {
		fmt.Fprintf(w, "- Data path 3's subscribers busy-poll: each Wait spins up to %v before it sleeps in the kernel (-busy-poll; one CPU per subscriber while it spins), and messages go out without waiting for them to sleep; no futex floor (a floor of sleeping processes)\n", s.BusyPoll)
	}
	su := r.Setup
	fmt.Fprintf(w, "- Paid once before any timed message (not in any table): registering data path 1's pool with CUDA %s ms; creating the GPU topic's publisher (maps the GPU pool, daemon start included, and registers the host staging pool) %s ms; %d subscriber processes' CUDA context + kernel load: up to %s ms\n",
		ms(su.RegisterPool), ms(su.GPUTopic), su.Children, ms(su.ChildInitMax))
	if s.Fake {
		fmt.Fprintln(w, "- **Fake device (package tests): the numbers measure host memory copies, not a GPU; Pinned-Shared was not run.**")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Times in µs. \"a / b\" is p50 / p99, or avg / p99 where the column says so (with fewer than 100 messages, p99 is the maximum). Thesis numbers (RGAPS, RTX 3090, PCIe Gen4) are for 4 MB / 64 MB / 1 GB; they sit beside our 4 MiB / 64 MiB / 1 GiB.")
	fmt.Fprintln(w)
}

func gib(n uint64) string {
	if n == 0 {
		return "?"
	}
	return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
}

func ms(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 1, 64) }

// DP1Tables writes data path 1's three tables.
func (r *Result) DP1Tables(w io.Writer) {
	fmt.Fprintln(w, "## Data path 1: device → host in the publishing process (thesis Tables 4.2, 4.3)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Pinned-SHM (rgaps): Loan on a host topic, D2H copy into the loan (pool registered with CUDA), Publish to a host subscriber process")
	fmt.Fprintln(w)
	t := benchutil.Table{
		Head:  []string{"size", "msgs", "T1 Loan (TLSF)", "T2 D2H into pool", "T2 GB/s", "T3 Publish (enqueue + notify)", "T1+T2+T3", "thesis T1 / T2 / T3 (Table 4.2)"},
		Align: "lrrrrrrr",
	}
	for _, row := range r.DP1 {
		st := row.Stats
		th := "—"
		if v, ok := thesisT42[row.Size]; ok {
			th = fmt.Sprintf("%d / %s / %d", v[0], benchutil.Thousands(int64(v[1])), v[2])
		}
		t.Rows = append(t.Rows, []string{benchutil.FormatSize(row.Size), msgs(row.Iters, row.Warmup),
			p50p99(st.Loan), p50p99(st.Copy), gbps(row.Size, st.Copy.P50), p50p99(st.Publish), p50p99(st.Total), th})
	}
	writeTable(w, &t)

	fmt.Fprintln(w, "### The same copy, bare, in the same run: D2H into mmap'd memory registered with cuMemHostRegister")
	fmt.Fprintln(w)
	t = benchutil.Table{
		Head:  []string{"size", "bare pinned D2H", "bare GB/s", "T2 vs bare (goal ≥ 95%)", "T1+T2+T3 vs bare"},
		Align: "lrrrr",
	}
	for _, row := range r.DP1 {
		st := row.Stats
		c, tot := quotient(st.Bare.P50, st.Copy.P50), quotient(st.Bare.P50, st.Total.P50)
		t.Rows = append(t.Rows, []string{benchutil.FormatSize(row.Size), p50p99(st.Bare), gbps(row.Size, st.Bare.P50),
			pct(c) + " " + benchutil.MetWord(c >= GoalCopyVsBare), pct(tot)})
	}
	writeTable(w, &t)

	fmt.Fprintln(w, "### Pageable-UDS baseline: D2H into pageable memory, then a Unix-domain-socket send to another process")
	fmt.Fprintln(w)
	t = benchutil.Table{
		Head:  []string{"size", "T1 D2H pageable", "T1 GB/s", "T2 UDS until received", "T1+T2", "thesis T1 + T2 (Table 4.3)", "baseline / rgaps (T1+T2 / T1+T2+T3)"},
		Align: "lrrrrrr",
	}
	for _, row := range r.DP1 {
		st := row.Stats
		th := "—"
		if v, ok := thesisT43[row.Size]; ok {
			th = fmt.Sprintf("%s + %s", benchutil.Thousands(int64(v[0])), benchutil.Thousands(int64(v[1])))
		}
		t.Rows = append(t.Rows, []string{benchutil.FormatSize(row.Size), p50p99(st.PageCopy), gbps(row.Size, st.PageCopy.P50),
			p50p99(st.PageUDS), p50p99(st.PageTotal), th, benchutil.Times(quotient(st.PageTotal.P50, st.Total.P50))})
	}
	writeTable(w, &t)
}

// DP3Tables writes data path 3's two tables.
func (r *Result) DP3Tables(w io.Writer) {
	fmt.Fprintln(w, "## Data path 3: host memory → GPU of N subscriber processes (thesis Tables 4.4, 4.5)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Delivery: from the start of Publish until every subscriber holds a device pointer to complete data (per message the latest subscriber). Check: a subscriber's checksum kernel on that data, run once every subscriber of the message held its pointer (untimed; average over subscribers).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Pinned-Shared (rgaps): GPU topic; Publish makes one H2D copy into the shared GPU pool; subscribers take device pointers")
	fmt.Fprintln(w)
	t := benchutil.Table{
		Head: []string{"size", "N", "msgs", "T1 Loan p50", "T2 Publish incl. H2D (avg / p99)", "T2 GB/s (avg)", "T3 notify (avg / p99)",
			"delivery (avg / p99)", "delivery p50", "check kernel (avg / p99)", "thesis T2 / T3 → total (Table 4.4)"},
		Align: "lrrrrrrrrrr",
	}
	for _, size := range r.Settings.Sizes {
		for _, n := range r.Settings.Subs {
			c := r.findDP3(PathShared, size, n)
			if c == nil {
				continue
			}
			st := c.Stats
			th := "—"
			if tot, ok := thesisShared(size, n); ok {
				th = fmt.Sprintf("%s / %d → %s", benchutil.Thousands(int64(thesisT44[size][1])), thesisT44T3[n], benchutil.Thousands(int64(tot)))
			}
			t.Rows = append(t.Rows, []string{benchutil.FormatSize(size), strconv.Itoa(n), msgs(c.Iters, c.Warmup),
				benchutil.US(st.Loan.P50), avgp99(st.Publish), gbps(size, st.Publish.Avg), avgp99(st.Notify),
				avgp99(st.Delivery), benchutil.US(st.Delivery.P50), avgp99(st.Check), th})
		}
	}
	if len(t.Rows) > 0 {
		writeTable(w, &t)
	} else {
		fmt.Fprintln(w, "(not run)")
		fmt.Fprintln(w)
	}

	r.stagesTable(w)

	fmt.Fprintln(w, "### Pageable-Iceoryx baseline: host topic (zero-copy host delivery, pool not registered); each subscriber copies H2D into its own device memory")
	fmt.Fprintln(w)
	t = benchutil.Table{
		Head: []string{"size", "N", "msgs", "T1 Publish + wake (avg / p99)", "T2 own H2D (avg / p99)", "T2 GB/s (avg)",
			"delivery (avg / p99)", "delivery p50", "check kernel (avg / p99)", "thesis T1 / T2 → total (Table 4.5)", "baseline / rgaps delivery (avg)"},
		Align: "lrrrrrrrrrr",
	}
	for _, size := range r.Settings.Sizes {
		for _, n := range r.Settings.Subs {
			c := r.findDP3(PathIceoryx, size, n)
			if c == nil {
				continue
			}
			st := c.Stats
			th := "—"
			if tot, ok := thesisIceoryx(size, n); ok {
				v := thesisT45[size][n]
				th = fmt.Sprintf("%d / %s → %s", v[0], benchutil.Thousands(int64(v[1])), benchutil.Thousands(int64(tot)))
			}
			vs := "—"
			if o := r.findDP3(PathShared, size, n); o != nil {
				vs = benchutil.Times(quotient(st.Delivery.Avg, o.Stats.Delivery.Avg))
			}
			t.Rows = append(t.Rows, []string{benchutil.FormatSize(size), strconv.Itoa(n), msgs(c.Iters, c.Warmup),
				avgp99(st.Wake), avgp99(st.SubCopy), gbps(size, st.SubCopy.Avg),
				avgp99(st.Delivery), benchutil.US(st.Delivery.P50), avgp99(st.Check), th, vs})
		}
	}
	if len(t.Rows) > 0 {
		writeTable(w, &t)
	} else {
		fmt.Fprintln(w, "(not run)")
		fmt.Fprintln(w)
	}
}

// stagesTable writes where Pinned-Shared's delivery time goes.
func (r *Result) stagesTable(w io.Writer) {
	t := benchutil.Table{
		Head: []string{"size", "N", "H2D copy: device block + copy + wait (avg / p99)", "queue: lock + rings (avg)", "wake call (avg)",
			"first / last subscriber awake (avg)", "take: avg / slowest subscriber (avg)", "DevicePtr (avg)", "delivery (avg)", "delivery − H2D copy (avg / p99)", "sent before all slept"},
		Align: "lrrrrrrrrrr",
	}
	for _, size := range r.Settings.Sizes {
		for _, n := range r.Settings.Subs {
			c := r.findDP3(PathShared, size, n)
			if c == nil || len(c.Forms) == 0 {
				continue
			}
			st := c.Stats
			t.Rows = append(t.Rows, []string{benchutil.FormatSize(size), strconv.Itoa(n), avgp99(st.Forms), benchutil.US(st.Enqueue.Avg), benchutil.US(st.WakeCall.Avg),
				benchutil.US(st.WakeFirst.Avg) + " / " + benchutil.US(st.WakeLast.Avg), benchutil.US(st.TakeAvg.Avg) + " / " + benchutil.US(st.TakeMax.Avg),
				benchutil.US(st.PtrAvg.Avg), benchutil.US(st.Delivery.Avg), avgp99(st.AfterCopy), strconv.Itoa(c.Unsettled)})
		}
	}
	if len(t.Rows) == 0 {
		return
	}
	fmt.Fprintln(w, "### Pinned-Shared: where the delivery time goes (µs from the start of Publish; zerocopy.PublishTrace and each subscriber's clock)")
	fmt.Fprintln(w)
	if r.Settings.BusyPoll > 0 {
		fmt.Fprintf(w, "Subscribers busy-poll (up to %v per Wait), so a message finds them spinning, not asleep. ", r.Settings.BusyPoll)
	} else {
		fmt.Fprint(w, "Each message is published once every subscriber sleeps in Wait (Topic.Waiting). ")
	}
	fmt.Fprintln(w, "The H2D copy is the part of Publish before the sample is queued: the device block allocated under the topic lock, cuMemcpyHtoDAsync from the staging pool and the wait for its event. Queue: the lock taken again, the sample put in every subscriber's ring, the lock released. Wake call: the FUTEX_WAKE that wakes every sleeping subscriber. Awake: when a subscriber's Wait returned. Take: Wait returned → Take returned (no topic lock: the subscription's own ring). DevicePtr: Take → Sample.DevicePtr. Delivery − H2D copy is everything after the copy: the part that grows with N.")
	fmt.Fprintln(w)
	writeTable(w, &t)
	r.floorTable(w)
}

// Goal is one goal's verdict.
type Goal struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "met", "NOT met", "not measured"
	Detail string `json:"detail"`
}

// Goals judges the run against the project's goals, with the numbers
// behind each verdict and the thesis' beside them.
func (r *Result) Goals() []Goal {
	var out []Goal

	// Data path 1: T2 against the bare pinned copy.
	g := Goal{Name: fmt.Sprintf("Data path 1: T2 (D2H into the pool) bandwidth ≥ %.0f%% of a bare pinned copy", 100*GoalCopyVsBare), Status: "not measured"}
	if len(r.DP1) > 0 {
		ok, okTot := true, true
		var parts, tots []string
		for _, row := range r.DP1 {
			c, tot := quotient(row.Stats.Bare.P50, row.Stats.Copy.P50), quotient(row.Stats.Bare.P50, row.Stats.Total.P50)
			ok = ok && c >= GoalCopyVsBare
			okTot = okTot && tot >= GoalCopyVsBare
			parts = append(parts, fmt.Sprintf("%s %s", benchutil.FormatSize(row.Size), pct(c)))
			tots = append(tots, fmt.Sprintf("%s %s", benchutil.FormatSize(row.Size), pct(tot)))
		}
		g.Status = benchutil.MetWord(ok)
		g.Detail = fmt.Sprintf("%s (bare p50 / T2 p50). The whole publish, T1+T2+T3, against the bare copy: %s (≥ %.0f%%: %s).",
			strings.Join(parts, ", "), strings.Join(tots, ", "), 100*GoalCopyVsBare, benchutil.MetWord(okTot))
	}
	out = append(out, g)

	// Data path 3: flat in N.
	g = Goal{Name: fmt.Sprintf("Data path 3: Pinned-Shared delivery flat in N, avg(N=8) / avg(N=1) ≤ %.2f", GoalFlatN), Status: "not measured"}
	if bp := r.Settings.BusyPoll; bp > 0 {
		g.Name += fmt.Sprintf(" (subscribers busy-polling up to %v)", bp)
	}
	subs := r.Settings.Subs
	if len(subs) > 0 {
		lo, hi := slices.Min(subs), slices.Max(subs)
		ok, have := true, false
		var parts []string
		for _, size := range r.Settings.Sizes {
			a, b := r.findDP3(PathShared, size, lo), r.findDP3(PathShared, size, hi)
			if a == nil || b == nil || lo == hi {
				continue
			}
			have = true
			q := quotient(b.Stats.Delivery.Avg, a.Stats.Delivery.Avg)
			ok = ok && q <= GoalFlatN
			part := fmt.Sprintf("%s %.3f (p50 %.3f; %s → %s µs", benchutil.FormatSize(size), q,
				quotient(b.Stats.Delivery.P50, a.Stats.Delivery.P50), benchutil.US(a.Stats.Delivery.Avg), benchutil.US(b.Stats.Delivery.Avg))
			if len(a.Forms) > 0 && len(b.Forms) > 0 {
				part += fmt.Sprintf("; of which the H2D copy %s → %s µs, after it %s → %s µs", benchutil.US(a.Stats.Forms.Avg), benchutil.US(b.Stats.Forms.Avg),
					benchutil.US(a.Stats.AfterCopy.Avg), benchutil.US(b.Stats.AfterCopy.Avg))
			}
			parts = append(parts, part+")")
		}
		switch {
		case !have:
		case lo != 1 || hi != 8:
			g.Detail = fmt.Sprintf("measured N=%d/N=%d only: %s", hi, lo, strings.Join(parts, ", "))
		default:
			g.Status = benchutil.MetWord(ok)
			g.Detail = strings.Join(parts, ", ") + "."
		}
		if have {
			g.Detail += " Thesis Table 4.4 (T1+T2+T3, N=8 / N=1): 4 MB 228/223 = 1.022, 64 MB 2,884/2,879 = 1.002, 1 GB 43,689/43,684 = 1.000."
			var fl []string
			for _, size := range r.Settings.Sizes {
				a, b := r.findFloor(size, lo), r.findFloor(size, hi)
				ca, cb := r.findDP3(PathShared, size, lo), r.findDP3(PathShared, size, hi)
				if a == nil || b == nil || ca == nil || cb == nil || lo == hi {
					continue
				}
				fl = append(fl, fmt.Sprintf("%s: the last of N=%d awake %s µs later than the only one at N=%d (%s → %s µs), Pinned-Shared's %s µs later (%s → %s µs, wake − queued)",
					benchutil.FormatSize(size), hi, benchutil.US(b.Last.Avg-a.Last.Avg), lo, benchutil.US(a.Last.Avg), benchutil.US(b.Last.Avg),
					benchutil.US(cb.Stats.Woke.Avg-ca.Stats.Woke.Avg), benchutil.US(ca.Stats.Woke.Avg), benchutil.US(cb.Stats.Woke.Avg)))
			}
			if len(fl) > 0 {
				g.Detail += " The futex floor of the same processes after as long a sleep (averages): " + strings.Join(fl, "; ") + "."
			}
		}
	}
	out = append(out, g)

	// Data path 3: the baseline's cost at N=8.
	g = Goal{Name: fmt.Sprintf("Data path 3: Pageable-Iceoryx / Pinned-Shared delivery (avg) ≥ %.0f× at N=%d, %s", GoalFanout, GoalFanoutSubs, benchutil.FormatSize(GoalFanoutSize)), Status: "not measured"}
	if o, b := r.findDP3(PathShared, GoalFanoutSize, GoalFanoutSubs), r.findDP3(PathIceoryx, GoalFanoutSize, GoalFanoutSubs); o != nil && b != nil {
		q := quotient(b.Stats.Delivery.Avg, o.Stats.Delivery.Avg)
		g.Status = benchutil.MetWord(q >= GoalFanout)
		g.Detail = fmt.Sprintf("%s (%s / %s µs).", benchutil.Times(q), benchutil.US(b.Stats.Delivery.Avg), benchutil.US(o.Stats.Delivery.Avg))
	}
	var others []string
	for _, size := range r.Settings.Sizes {
		for _, n := range r.Settings.Subs {
			if size == GoalFanoutSize && n == GoalFanoutSubs {
				continue
			}
			o, b := r.findDP3(PathShared, size, n), r.findDP3(PathIceoryx, size, n)
			if o == nil || b == nil || n != slices.Max(r.Settings.Subs) {
				continue
			}
			others = append(others, fmt.Sprintf("%s N=%d %s", benchutil.FormatSize(size), n, benchutil.Times(quotient(b.Stats.Delivery.Avg, o.Stats.Delivery.Avg))))
		}
	}
	if len(others) > 0 {
		g.Detail = strings.TrimSpace(g.Detail + " Other sizes: " + strings.Join(others, ", ") + ".")
	}
	g.Detail = strings.TrimSpace(g.Detail + " Thesis (Table 4.5 T1+T2 / Table 4.4 T1+T2+T3, N=8): 4 MB 2,248/228 = 9.9×, 64 MB 24,369/2,884 = 8.4×, 1 GB 382,030/43,689 = 8.7×.")
	out = append(out, g)
	return out
}

// WriteMarkdown writes the whole report.
func (r *Result) WriteMarkdown(w io.Writer) {
	r.writeHeader(w)
	if len(r.DP1) > 0 {
		r.DP1Tables(w)
	}
	if len(r.DP3) > 0 {
		r.DP3Tables(w)
	}
	fmt.Fprintln(w, "## Goals")
	fmt.Fprintln(w)
	for _, g := range r.Goals() {
		line := fmt.Sprintf("- %s: **%s**", g.Name, g.Status)
		if g.Detail != "" {
			line += " — " + g.Detail
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Correctness (checked in the run; any failure ends it with an error)")
	fmt.Fprintln(w)
	c := r.Checks
	fmt.Fprintf(w, "- Data path 1: %d messages checked by the host subscriber (Pinned-SHM) and by the UDS receiver, each at the first and last 64 bytes and %d places between, against the fill kernel's pattern.\n", c.DP1Messages, spotChecks)
	fmt.Fprintln(w, "- Data paths: before each cell the run reads from the graph the path the engine says every subscription uses: host-shm for data path 1 and Pageable-Iceoryx (host pool, not registered in the subscriber), gpu-pool for Pinned-Shared (device pointers into the shared GPU pool).")
	fmt.Fprintf(w, "- Data path 3: %d checksum-kernel results on subscribers' device pointers, every one equal to cuda.ChecksumHost of the bytes published (pattern + t0 and message index stamped at the start, middle and end); %d patterns cross-checked, kernel against host, whole.\n", c.DP3Kernels, c.Patterns)
	fmt.Fprintln(w)
	fmt.Fprintln(w, methodNotes)
}

const methodNotes = `## Method

- Data path 1 runs in the publishing process. The source is cuMemAlloc'd device memory, refilled by the fill-pattern kernel with a new seed before every message (untimed, synchronised).
  - T1 = Publisher.Loan(size) on a host topic (TLSF allocation in the shared-memory pool). T2 = cuMemcpyDtoH into Loan.Bytes(). The engine registers the whole pool with cuMemHostRegister (portable, device-mapped) once per process, on the first Loan.DevicePtr(); the run calls it once on a warm-up loan before timing, so registration is not in T2 (its cost is in the header). T3 = Loan.Publish(): enqueue for one host subscriber in another process and wake it (the subscriber takes the sample and checks it, untimed).
  - Bare: the same cuMemcpyDtoH into MAP_SHARED|MAP_ANONYMOUS memory registered with the same flags. Bare and Pinned-SHM alternate which goes first every message.
  - Pageable-UDS: T1 = the same copy into a Go heap buffer (pageable, touched beforehand). T2 = write(2) of the whole message on a SOCK_STREAM socket pair (default buffer sizes) until the receiving process has read all of it into its own buffer and its one-byte acknowledgement is back: the acknowledgement's trip (a few µs) is included, nothing is subtracted.
- Data path 3: the message starts in host memory of the publishing process (the subscribe manager's buffer after an RDMA receive): a host Loan (T1, timed separately), filled by the CPU (untimed). The publisher then waits (untimed) until every subscriber sleeps in Subscription.Wait (Topic.Waiting: the subscriber waits blocked on the topic); with -busy-poll the subscribers spin in Wait instead and the publisher does not wait for them. t0 = the publisher's wall clock just before Publish, written into the message's first 8 bytes; Publish is Loan.PublishTraced, which records when its stages ended (the stage table). Subscribers note the wall clock when Wait returns ("wake"), when Take returns and when they hold the device pointer; t0 and the subscribers' clocks are the same CLOCK_REALTIME on one host.
  - Pinned-Shared: a GPU topic (publisher and subscribers created with rgaps.OnGPU()). T2 = the Publish call: the engine sees GPU readers, allocates a block in the topic's shared GPU pool, copies the host block into it (cuMemcpyHtoDAsync from the registered staging pool on the engine's own copy stream, then cuEventSynchronize of that copy's event), enqueues and wakes. T3 = wake − Publish's return, averaged over subscribers (negative when a subscriber woke before Publish returned). A subscriber holds its pointer after Take and Sample.DevicePtr() (no copy).
  - Pageable-Iceoryx: a host topic whose pool no process registers with CUDA: zero-copy host delivery, then each subscriber copies Sample.Bytes() with cuMemcpyHtoD into its own cuMemAlloc'd buffer and synchronises, all subscribers at once. T1 = wake − t0 (Publish + notification), T2 = its own copy, both averaged over subscribers.
  - Check: once every subscriber of a message has acknowledged holding its pointer, the parent asks each to run the checksum kernel on it; the value is checked against the host reference. (Until 2026-11-29 each subscriber ran it as soon as it held its pointer: with the driver's default schedule a process spins on a CPU while it waits for its kernel, and the first subscribers' checks delayed the later ones' wake-ups; those reports have a "consumption" column, the latest kernel end − t0.)
- Pacing: one message at a time; the next leaves after every subscriber acknowledged the last (the acknowledgements are not timed). Every cell starts with warm-up messages (at least one). Subscriber processes open their CUDA context and load the kernels at start-up, before any cell; pool mappings and driver staging buffers are made in the warm-up.`
