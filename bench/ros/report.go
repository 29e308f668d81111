package benchros

import (
	"fmt"
	"io"
	"strings"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// WriteMarkdown writes the latency table (avg and p50 per cell and
// system, µs) and the ratios against the goals.
func WriteMarkdown(w io.Writer, r *benche2e.Result) {
	s := r.Setup
	mem := "host-memory fallback (no GPU: a functional run, not a GPU measurement)"
	if s.GPU {
		mem = fmt.Sprintf("GPU %d (host a) / %d (host b)", s.DeviceA, s.DeviceB)
	}
	fmt.Fprintf(w, "## rgaps-bench ros: publish call → each subscriber holds a device pointer to the data, µs\n\n")
	fmt.Fprintf(w, "%s; %d timed rounds (fewer above 64 MiB) after %d warm-up per cell, averages over every subscriber of every round; rgaps-2hosts over libfabric %s; %v.\n\n",
		mem, s.Rounds, s.Warmup, s.Wire, r.Elapsed.Round(1e9))
	t := benchutil.Table{Head: []string{"size", "N"}, Align: "lr" + strings.Repeat("rr", len(r.Systems))}
	for _, sys := range r.Systems {
		t.Head = append(t.Head, sys.Name+" avg", sys.Name+" p50")
	}
	for _, size := range s.Sizes {
		for _, n := range s.Ns {
			row := []string{benchutil.FormatSize(int(size)), fmt.Sprint(n)}
			for i := range r.Systems {
				if c := r.Systems[i].Cell(size, n); c != nil {
					row = append(row, benchutil.US(c.Latency.Avg), benchutil.US(c.Latency.P50))
				} else {
					row = append(row, "–", "–")
				}
			}
			t.Rows = append(t.Rows, row)
		}
	}
	t.Write(w)
	fmt.Fprint(w, "\nRatios of the averages:\n\n")
	rt := ratios(r)
	rt.Write(w)
	for _, sys := range r.Systems {
		if sys.Err != "" {
			fmt.Fprintf(w, "\n**%s stopped**: %s\n", sys.Name, sys.Err)
		}
	}
}

// ratio is one row of the ratio table: the average of system num at N
// numN over that of den at denN, per size.
type ratio struct {
	label, goal string
	num, den    string
	numN, denN  int
}

func ratios(r *benche2e.Result) benchutil.Table {
	ns := r.Setup.Ns
	lo, hi := ns[0], ns[len(ns)-1]
	var rows []ratio
	for _, n := range ns {
		rows = append(rows, ratio{fmt.Sprintf("rclcpp rgaps / Go API, N=%d", n), "≤ 1.05", "rgaps", "go-api", n, n})
	}
	if hi != lo {
		for _, sys := range []string{"rgaps", "rgaps-2hosts"} {
			rows = append(rows, ratio{fmt.Sprintf("%s N=%d / N=%d", sys, hi, lo), "≤ 1.05", sys, sys, hi, lo})
		}
	}
	rows = append(rows, ratio{fmt.Sprintf("Cyclone / rgaps, one host, N=%d", hi), "≥ 10 (at 64 MiB, N=8)", "cyclone", "rgaps", hi, hi})
	t := benchutil.Table{Head: []string{""}, Align: "l" + strings.Repeat("r", len(r.Setup.Sizes))}
	for _, size := range r.Setup.Sizes {
		t.Head = append(t.Head, benchutil.FormatSize(int(size)))
	}
	t.Head = append(t.Head, "goal")
	for _, row := range rows {
		num, den := r.System(row.num), r.System(row.den)
		if num == nil || den == nil {
			continue
		}
		cells := []string{row.label}
		for _, size := range r.Setup.Sizes {
			a, b := num.Cell(size, row.numN), den.Cell(size, row.denN)
			if a == nil || b == nil || b.Latency.Avg <= 0 {
				cells = append(cells, "–")
				continue
			}
			cells = append(cells, fmt.Sprintf("%.2f×", float64(a.Latency.Avg)/float64(b.Latency.Avg)))
		}
		t.Rows = append(t.Rows, append(cells, row.goal))
	}
	return t
}
