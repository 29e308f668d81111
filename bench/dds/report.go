package benchdds

import (
	"fmt"
	"io"
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

// WriteMarkdown writes the setup, the latency table with the gateway
// paths' ratios to DDS→DDS, and the throughput table with the share kept
// with a DDS subscriber, each with its goal's verdict.
func WriteMarkdown(w io.Writer, r *Result) {
	s := r.Setup
	fmt.Fprintf(w, "## rgaps-bench dds: the DDS gateway against DDS, one process\n\n")
	fmt.Fprintf(w, "%s, %d cores, Linux %s, %s, %s; ROS domain %d; %v.\n\n", s.CPU, s.Cores, s.Kernel, s.Go, s.DDSC, s.Domain,
		time.Duration(r.Elapsed).Round(time.Second))
	fmt.Fprintf(w, "### Latency, publish → take, µs (%d timed rounds per cell, fewer above %s, after %d warm-up)\n\n",
		s.Rounds, benchutil.FormatSize(BigSize), s.Warmup)
	t := benchutil.Table{Head: []string{"size", "DDS→DDS p50", "p99", "rgaps→DDS p50", "p99", "× DDS", "DDS→rgaps p50", "p99", "× DDS"},
		Align: "lrrrrrrrr"}
	worst := map[string]float64{}
	for _, size := range s.Sizes {
		row := []string{benchutil.FormatSize(size)}
		base := r.Cell(PathDDS, size)
		for _, p := range Paths {
			c := r.Cell(p, size)
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
	fmt.Fprintf(w, "### Throughput, msgs/s: 1 publisher, %d engine subscriptions, RELIABLE KEEP_ALL, %v of publishing, until every engine subscription has every message\n\n",
		s.Subs, time.Duration(s.Duration))
	tt := benchutil.Table{Head: []string{"size"}, Align: "lrrrr"}
	for _, k := range Cases {
		tt.Head = append(tt.Head, k)
	}
	tt.Head = append(tt.Head, "with / without DDS subscriber", "DDS subscriber received")
	tt.Align += "r"
	lowest := 0.0
	for _, size := range s.Sizes {
		row := []string{benchutil.FormatSize(size)}
		for _, k := range Cases {
			if c := r.Rate(k, size); c != nil {
				row = append(row, benchutil.Thousands(int64(c.Rate+0.5)))
			} else {
				row = append(row, "–")
			}
		}
		a, b := r.Rate(CaseGatewayR, size), r.Rate(CaseGateway, size)
		if a != nil && b != nil && b.Rate > 0 {
			q := a.Rate / b.Rate
			row = append(row, fmt.Sprintf("%.0f%%", 100*q))
			if lowest == 0 || q < lowest {
				lowest = q
			}
		} else {
			row = append(row, "–")
		}
		if a != nil && a.Messages > 0 {
			row = append(row, fmt.Sprintf("%.1f%%", 100*float64(a.DDSGot)/float64(a.Messages)))
		} else {
			row = append(row, "–")
		}
		tt.Rows = append(tt.Rows, row)
	}
	tt.Write(w)
	fmt.Fprintf(w, "\nGoal (issue 14): with a DDS subscriber ≥ %.0f%% of the rate without: %s (lowest %.0f%%).\n\n",
		100*ThroughputGoal, benchutil.MetWord(lowest >= ThroughputGoal), 100*lowest)
	fmt.Fprint(w, "The gateway's engine subscription is KEEP_LAST 100 even for a KEEP_ALL publisher (package gateway), so it does not slow the stream and the DDS subscriber gets only what the gateway keeps up with (last column).\n\n")
	fmt.Fprint(w, "Every DDS endpoint is in this process (Cyclone delivers without the network), so DDS→DDS is the fastest DDS can be and the gateway's latency ratios are upper bounds for DDS nodes in other processes.\n")
}
