package benche2e

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Names of the systems this package provides.
const (
	NameBaseline   = "baseline"
	NameLowerBound = "lower-bound"
	// NameLowerBoundRails is the lower bound whose wire stage runs over
	// as many endpoint pairs as the bridge's rails (only when more than 1).
	NameLowerBoundRails = "lower-bound-rails"
)

// ours is the run of the system that is neither the baseline nor the
// lower bound (the rgaps bridge), or nil.
func (r *Result) ours() *SystemRun {
	for i := range r.Systems {
		if n := r.Systems[i].Name; n != NameBaseline && n != NameLowerBound && n != NameLowerBoundRails {
			return &r.Systems[i]
		}
	}
	return nil
}

// thesis holds the thesis' Figure 4.6 averages (µs) for N = 1, 2, 4, 8 where
// its text gives them (N = 1 and 8; RGAPS: its range).
var thesis = map[int64]struct{ ours, baseline string }{
	4 << 20:  {"754–759", "5,402 (N=1) … 7,248 (N=8)"},
	64 << 20: {"10,407–10,412", "68,985 (N=1) … 87,720 (N=8)"},
	1 << 30:  {"164,706–164,711", "982,299 (N=1) … 1,279,148 (N=8)"},
}

// WriteMarkdown writes the report. plots maps a size to the file names
// of its plots (relative to the report), listed under the tables.
func (r *Result) WriteMarkdown(w io.Writer, plots map[int64][]string) {
	us := func(ns int64) string { return benchutil.US(ns) }
	fmt.Fprintf(w, "# rgaps-bench e2e: host A publisher → N GPU subscribers on host B\n\n")
	fmt.Fprintf(w, "The thesis' end-to-end measurement (Figure 4.6; stage breakdowns like Tables 4.2–4.5): a message resident in GPU memory on host A, published to N subscriber processes on host B, each of which must hold a device pointer to the complete data. Latency runs from the start of the publish call on A to that moment, per subscriber; all systems below ran in this one run. Times in µs.\n\n")

	fmt.Fprintf(w, "## Machine\n\n")
	m := r.Machine
	t := benchutil.Table{Head: []string{"what", "value"}}
	for _, kv := range [][2]string{
		{"GPU of host A", m.GPUA}, {"GPU of host B", m.GPUB},
		{"NVIDIA driver / CUDA driver API", m.NvidiaDriver + " / " + m.CUDADriver},
		{"CUDA MPS (the GPU's processes in one context)", m.MPS},
		{"CPU", fmt.Sprintf("%s (%d logical CPUs)", m.CPU, m.Cores)},
		{"OS / kernel", m.OS + " / " + m.Kernel},
		{"/dev/shm", fmt.Sprintf("%.1f GiB", float64(m.ShmSize)/(1<<30))},
		{"iceoryx", m.Iceoryx}, {"Go", m.Go}, {"date", m.Date},
	} {
		t.Rows = append(t.Rows, []string{kv[0], cell(kv[1])})
	}
	t.Write(w)

	s := r.Setup
	fmt.Fprintf(w, "\n## Setup\n\n")
	if s.Netns {
		fmt.Fprintf(w, "- Hosts: two network namespaces joined by a veth pair, A = %s, B = %s (one machine: one clock, so times taken on A and B compare directly).\n", s.AddrA, s.AddrB)
	} else {
		fmt.Fprintf(w, "- Hosts: one network namespace, A and B over loopback (%s).\n", s.AddrA)
	}
	if s.GPU {
		fmt.Fprintf(w, "- GPUs: host A publishes from CUDA device %d, host B's subscribers use device %d", s.DeviceA, s.DeviceB)
		if s.DeviceA == s.DeviceB {
			fmt.Fprintf(w, " (one GPU for both hosts: its copy engines serve A's D2H and B's H2D copies, one after the other within a round)")
		}
		fmt.Fprintf(w, ".\n")
	} else {
		fmt.Fprintf(w, "- **No GPU: host-memory fallback.** \"Device memory\" is host memory and every D2H/H2D copy is a memcpy from or to a separate buffer: every process, socket, iceoryx chunk and byte is real, but the times say nothing about a GPU.\n")
	}
	fmt.Fprintf(w, "- Wire between the hosts: libfabric `%s` for the lower bound (and ours); the baseline uses kernel TCP, as the thesis' did.\n", s.Wire)
	fmt.Fprintf(w, "- Rounds per (size, N): %d warm-up, then timed: %s.\n", s.Warmup, roundsNote(s))
	fmt.Fprintf(w, "- avg and p99 are over every subscriber of every timed round (the thesis averages over subscribers); \"slowest\" is, per round, the last subscriber to hold its pointer.\n")
	fmt.Fprintf(w, "- Every subscriber checks the bytes it got (a checksum kernel on its device data; on host memory, a checksum on the CPU), untimed, once every subscriber of the round answered: a check run at once would hold its process's CPU while others of the round are still being woken.\n")
	fmt.Fprintf(w, "- Baseline (thesis §3.3, §3.5, §3.6): publisher `cuMemcpyDtoH` into pageable memory → Unix socket → manager A → TCP → manager B, which receives into a loaned iceoryx 2.0 chunk and publishes it through RouDi → each subscriber its own pageable `cuMemcpyHtoD` into its own `cuMemAlloc` buffer, synchronised.\n")
	fmt.Fprintf(w, "- Lower bound: bare `cuMemcpyDtoH` into pinned memory + bare `fi_writedata` of the same bytes A → B + bare `cuMemcpyHtoD` from pinned memory, each measured, summed (one device copy whatever N; serial, so a pipelined design may go below it for large messages).\n")
	for _, miss := range r.Missing {
		fmt.Fprintf(w, "- **Not measured**: %s\n", miss)
	}
	for _, sys := range r.Systems {
		if sys.Err != "" {
			fmt.Fprintf(w, "- **%s stopped**: %s (cells it did not finish are shown as —)\n", sys.Name, cell(sys.Err))
		}
	}

	fmt.Fprintf(w, "\n## End-to-end latency (Figure 4.6)\n\n")
	head := []string{"size", "N"}
	align := "lr"
	for _, sys := range r.Systems {
		head = append(head, sys.Name+" avg", sys.Name+" p99", sys.Name+" slowest avg")
		align += "rrr"
	}
	ours, lb, bl := r.ours(), r.System(NameLowerBound), r.System(NameBaseline)
	lbk := r.System(NameLowerBoundRails)
	if ours != nil {
		head = append(head, ours.Name+" / lower bound")
		align += "r"
	}
	if ours != nil && lbk != nil {
		head = append(head, ours.Name+" / "+NameLowerBoundRails)
		align += "r"
	}
	if ours != nil && bl != nil {
		head = append(head, "baseline / "+ours.Name)
		align += "r"
	}
	t = benchutil.Table{Head: head, Align: align}
	for _, size := range s.Sizes {
		for _, n := range s.Ns {
			row := []string{benchutil.FormatSize(int(size)), fmt.Sprint(n)}
			for i := range r.Systems {
				if c := r.Systems[i].Cell(size, n); c != nil {
					row = append(row, us(c.Latency.Avg), us(c.Latency.P99), us(c.Slowest.Avg))
				} else {
					row = append(row, "—", "—", "—")
				}
			}
			if ours != nil {
				row = append(row, ratio(ours.Cell(size, n), lb.Cell(size, n)))
			}
			if ours != nil && lbk != nil {
				row = append(row, ratio(ours.Cell(size, n), lbk.Cell(size, n)))
			}
			if ours != nil && bl != nil {
				row = append(row, ratio(bl.Cell(size, n), ours.Cell(size, n)))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	t.Write(w)

	nMin, nMax := s.Ns[0], s.Ns[len(s.Ns)-1]
	fmt.Fprintf(w, "\n## Ratios (averages)\n\n")
	ratioHead := []string{"size",
		fmt.Sprintf("ours / lower bound (N=%d)", nMax),
		fmt.Sprintf("baseline / ours (N=%d)", nMax),
		fmt.Sprintf("ours N=%d / N=%d", nMax, nMin),
		fmt.Sprintf("baseline N=%d / N=%d", nMax, nMin),
		fmt.Sprintf("baseline / lower bound (N=%d)", nMax)}
	if lbk != nil {
		ratioHead = append(ratioHead, fmt.Sprintf("ours / %s (N=%d)", NameLowerBoundRails, nMax))
	}
	t = benchutil.Table{Head: ratioHead, Align: "l" + strings.Repeat("r", len(ratioHead)-1)}
	for _, size := range s.Sizes {
		var oMax, oMin *Cell
		if ours != nil {
			oMax, oMin = ours.Cell(size, nMax), ours.Cell(size, nMin)
		}
		row := []string{benchutil.FormatSize(int(size)),
			ratio(oMax, lb.Cell(size, nMax)), ratio(bl.Cell(size, nMax), oMax), ratio(oMax, oMin),
			ratio(bl.Cell(size, nMax), bl.Cell(size, nMin)), ratio(bl.Cell(size, nMax), lb.Cell(size, nMax))}
		if lbk != nil {
			row = append(row, ratio(oMax, lbk.Cell(size, nMax)))
		}
		t.Rows = append(t.Rows, row)
	}
	t.Write(w)
	if ours == nil {
		fmt.Fprintf(w, "\n(— : ours was not measured.)\n")
	}

	if rows := thesisRows(s.Sizes); len(rows) > 0 {
		fmt.Fprintf(w, "\n### The thesis' Figure 4.6 (RTX 3090, PCIe Gen4, ConnectX-7 NDR; average µs)\n\n")
		t = benchutil.Table{Head: []string{"size", "RGAPS (N=1…8)", "baseline"}, Align: "lrr", Rows: rows}
		t.Write(w)
	}

	fmt.Fprintf(w, "\n## Stage breakdown (average per round; per-subscriber stages averaged over subscribers)\n")
	for _, sys := range r.Systems {
		if len(sys.Cells) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n### %s\n\n", sys.Name)
		head := append([]string{"size", "N"}, sys.Stages...)
		head = append(head, "sum of stages", "latency avg")
		t = benchutil.Table{Head: head, Align: "lr" + strings.Repeat("r", len(sys.Stages)+2)}
		cells := slices.Clone(sys.Cells)
		slices.SortStableFunc(cells, func(a, b Cell) int { return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.N, b.N)) })
		for _, c := range cells {
			row := []string{benchutil.FormatSize(int(c.Size)), fmt.Sprint(c.N)}
			var sum int64
			for _, st := range sys.Stages {
				if v, ok := c.Stage[st]; ok {
					row = append(row, us(v.Avg))
					sum += v.Avg
				} else {
					row = append(row, "—")
				}
			}
			row = append(row, us(sum), us(c.Latency.Avg))
			t.Rows = append(t.Rows, row)
		}
		t.Write(w)
		if note, ok := stageNotes[sys.Name]; ok {
			fmt.Fprintf(w, "\n%s\n", note)
		}
	}

	if len(plots) > 0 {
		fmt.Fprintf(w, "\n## Plots (average latency vs N, per size)\n\n")
		for _, size := range s.Sizes {
			for _, f := range plots[size] {
				if strings.HasSuffix(f, ".png") {
					fmt.Fprintf(w, "![%s](%s)\n", benchutil.FormatSize(int(size)), f)
				}
			}
			var links []string
			for _, f := range plots[size] {
				links = append(links, fmt.Sprintf("[%s](%s)", f, f))
			}
			if len(links) > 0 {
				fmt.Fprintf(w, "\n%s: %s\n\n", benchutil.FormatSize(int(size)), strings.Join(links, ", "))
			}
		}
	}
	fmt.Fprintf(w, "\nRun took %s.\n", r.Elapsed.Round(1e9))
}

// stageNotes relate the stages to the thesis' tables.
var stageNotes = map[string]string{
	NameBaseline: "Thesis: D2H pageable and UDS are Table 4.3's T1 and T2 (Pageable-UDS); TCP is Figure 4.2's TCP/IP baseline; " +
		"iceoryx publish → take and H2D pageable are Table 4.5's T1 and T2 (Pageable-Iceoryx, H2D averaged over the N concurrent subscribers).",
	NameLowerBound: "Thesis: D2H pinned is Table 4.2's T2 (cudaMemcpy into pinned memory), fi_writedata Figure 4.2's RDMA write (here over a " +
		"libfabric software provider, not an RDMA NIC), H2D pinned Table 4.4's T2 (one copy whatever N).",
	NameLowerBoundRails: "The lower bound with its fi_writedata stage cut into equal parts written side by side over as many endpoint pairs as the bridge " +
		"has rails on this machine (bridge.AutoRails), each polled by a goroutine of its own: the bound for a design that stripes a message over K connections.",
}

func roundsNote(s Setup) string {
	var parts []string
	for _, size := range s.Sizes {
		parts = append(parts, fmt.Sprintf("%s: %d", benchutil.FormatSize(int(size)), RoundsFor(size, s.Rounds)))
	}
	return strings.Join(parts, ", ")
}

func thesisRows(sizes []int64) [][]string {
	var rows [][]string
	for _, size := range sizes {
		if th, ok := thesis[size]; ok {
			rows = append(rows, []string{benchutil.FormatSize(int(size)), th.ours, th.baseline})
		}
	}
	return rows
}

// ratio is a.avg / b.avg, or — when either is missing.
func ratio(a, b *Cell) string {
	if a == nil || b == nil || b.Latency.Avg <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", float64(a.Latency.Avg)/float64(b.Latency.Avg))
}

// cell makes s safe inside a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}
