package benchdds

import (
	"fmt"
	"io"
	"strings"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// The goals.
const (
	LatencyGoal    = 1.3 // a gateway path's p50 over DDS→DDS's, at most
	ThroughputGoal = 0.9 // with a DDS subscriber over without, at least
)

// ratio is a/b, 0 when either is missing.
func ratio(a, b int64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func times(r float64) string {
	if r == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r)
}

// WriteMarkdown writes, for each layout, the setup, the latency table
// with the gateway paths' ratios to DDS→DDS, and the throughput table
// with the share of the rgaps-only rate kept with a DDS subscriber, each
// with its goal's verdict.
func WriteMarkdown(w io.Writer, r *Result) {
	s := r.Setup
	fmt.Fprintf(w, "## rgaps-bench dds: the DDS gateway against DDS\n\n")
	fmt.Fprintf(w, "%s, %d cores, Linux %s, %s, %s; ROS domain %d; %v.\n\n", s.CPU, s.Cores, s.Kernel, s.Go, s.DDSC, s.Domain,
		time.Duration(r.Elapsed).Round(time.Second))
	for _, layout := range s.Layouts {
		writeLayout(w, r, layout)
	}
}

// layoutNotes say what a layout's DDS→DDS baseline is.
var layoutNotes = map[string]string{
	LayoutProcs: "The gateway runs in a daemon process (rgapsd -dds), each DDS endpoint in a process of its own, the rgaps endpoints in the benchmark's process: DDS→DDS goes between two processes, as between DDS-based ROS nodes.",
	LayoutOne:   "Every endpoint and the gateway are in one process: Cyclone hands DDS→DDS samples over inside the write call, the fastest DDS can be, so the gateway's ratios here are upper bounds.",
}

func writeLayout(w io.Writer, r *Result, layout string) {
	s := r.Setup
	fmt.Fprintf(w, "### Layout: %s\n\n%s\n\n", layout, layoutNotes[layout])
	fmt.Fprintf(w, "Latency, publish → take, µs (%d timed rounds per cell, fewer above %s, after %d warm-up):\n\n",
		s.Rounds, benchutil.FormatSize(BigSize), s.Warmup)
	t := benchutil.Table{Head: []string{"size", "DDS→DDS p50", "p99", "rgaps→DDS p50", "p99", "× DDS", "DDS→rgaps p50", "p99", "× DDS"},
		Align: "lrrrrrrrr"}
	worst := map[string]float64{}
	for _, size := range s.Sizes {
		row := []string{benchutil.FormatSize(size)}
		base := r.Cell(layout, PathDDS, size)
		for _, p := range Paths {
			c := r.Cell(layout, p, size)
			if c == nil {
				row = append(row, "–", "–")
			} else {
				row = append(row, benchutil.US(c.Latency.P50), benchutil.US(c.Latency.P99))
			}
			if p == PathDDS {
				continue
			}
			var q float64
			if c != nil && base != nil {
				q = ratio(c.Latency.P50, base.Latency.P50)
			}
			row = append(row, times(q))
			worst[p] = max(worst[p], q)
		}
		t.Rows = append(t.Rows, row)
	}
	t.Write(w)
	fmt.Fprintf(w, "\nGoal (issue 14): a gateway path's p50 ≤ %.1f× DDS→DDS's: rgaps→DDS %s (worst %s), DDS→rgaps %s (worst %s).\n\n",
		LatencyGoal, benchutil.MetWord(worst[PathToDDS] > 0 && worst[PathToDDS] <= LatencyGoal), times(worst[PathToDDS]),
		benchutil.MetWord(worst[PathFromDDS] > 0 && worst[PathFromDDS] <= LatencyGoal), times(worst[PathFromDDS]))
	fmt.Fprintf(w, "Throughput, msgs/s: 1 publisher, %d engine subscriptions, RELIABLE KEEP_ALL, %v of publishing, until every engine subscription has every message:\n\n",
		s.Subs, time.Duration(s.Duration))
	cases := Cases
	if layout == LayoutProcs {
		cases = ProcsCases
	}
	tt := benchutil.Table{Head: []string{"size"}, Align: "l"}
	for _, k := range cases {
		tt.Head = append(tt.Head, k)
	}
	tt.Head = append(tt.Head, "KEEP_LAST sub / rgaps only", "KEEP_LAST sub received", "KEEP_ALL sub / rgaps only", "KEEP_ALL sub received")
	if layout == LayoutProcs {
		tt.Head = append(tt.Head, "KEEP_ALL sub / DDS→DDS")
	}
	tt.Align += strings.Repeat("r", len(tt.Head)-1)
	lowest := map[string]float64{}
	for _, size := range s.Sizes {
		row := []string{benchutil.FormatSize(size)}
		for _, k := range cases {
			if c := r.Rate(layout, k, size); c != nil {
				row = append(row, benchutil.Thousands(int64(c.Rate+0.5)))
			} else {
				row = append(row, "–")
			}
		}
		base := r.Rate(layout, CaseRgaps, size)
		for _, k := range []string{CaseGatewayL, CaseGatewayR} {
			a := r.Rate(layout, k, size)
			if a != nil && base != nil && base.Rate > 0 {
				q := a.Rate / base.Rate
				row = append(row, fmt.Sprintf("%.0f%%", 100*q))
				if l, ok := lowest[k]; !ok || q < l {
					lowest[k] = q
				}
			} else {
				row = append(row, "–")
			}
			if a != nil && a.Messages > 0 {
				row = append(row, fmt.Sprintf("%.1f%%", 100*float64(a.DDSGot)/float64(a.Messages)))
			} else {
				row = append(row, "–")
			}
		}
		if layout == LayoutProcs {
			a, b := r.Rate(layout, CaseGatewayR, size), r.Rate(layout, CaseDDSAll, size)
			if a != nil && b != nil && b.Rate > 0 {
				row = append(row, fmt.Sprintf("%.0f%%", 100*a.Rate/b.Rate))
			} else {
				row = append(row, "–")
			}
		}
		tt.Rows = append(tt.Rows, row)
	}
	tt.Write(w)
	verdict := func(k string) string {
		l, ok := lowest[k]
		return fmt.Sprintf("%s (lowest %.0f%%)", benchutil.MetWord(ok && l >= ThroughputGoal), 100*l)
	}
	fmt.Fprintf(w, "\nGoal (issue 14): with a DDS subscriber ≥ %.0f%% of the rgaps-only rate: KEEP_LAST 10 subscriber %s, KEEP_ALL subscriber %s.\n\n",
		100*ThroughputGoal, verdict(CaseGatewayL), verdict(CaseGatewayR))
	fmt.Fprint(w, "A KEEP_LAST subscriber's mirror is KEEP_LAST and does not hold the publisher back, so the subscriber gets what the gateway keeps up with; a KEEP_ALL subscriber's mirror is KEEP_ALL (package gateway), so it gets every message and the stream goes at its pace.")
	if layout == LayoutProcs {
		fmt.Fprint(w, " DDS→DDS KEEP_ALL: a DDS writer process writing as fast as a KEEP_ALL reader process takes, for as long, the pace no KEEP_ALL DDS subscriber can beat.")
	}
	fmt.Fprint(w, "\n\n")
}
