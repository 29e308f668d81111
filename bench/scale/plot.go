package benchscale

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// WritePlots writes prefix-setup.png/.svg (set-up, discovery each way and
// first message, seconds, against topics) and prefix-memory.png/.svg
// (each daemon's RSS and PSS, MiB, against topics), a line per figure
// and, when the run had several, per subscriber process count. It
// returns the files' names.
func (r *Result) WritePlots(prefix string) ([]string, error) {
	var topics, subs []int
	for _, c := range r.Cells {
		if !slices.Contains(topics, c.Topics) {
			topics = append(topics, c.Topics)
		}
		if !slices.Contains(subs, c.SubProcs) {
			subs = append(subs, c.SubProcs)
		}
	}
	slices.Sort(topics)
	name := func(what string, n int) string {
		if len(subs) > 1 {
			return fmt.Sprintf("%s (%d sub procs)", what, n)
		}
		return what
	}
	secs := func(s benchutil.Seconds) float64 { return time.Duration(s).Seconds() }
	mib := func(kib int64) float64 { return float64(kib) / 1024 }
	series := func(figures []string, value func(c Cell, f int) float64) []benchutil.Series {
		var ss []benchutil.Series
		for _, n := range subs {
			for f, what := range figures {
				s := benchutil.Series{Name: name(what, n)}
				for _, c := range r.Cells {
					if c.SubProcs == n {
						s.Points = append(s.Points, benchutil.Point{X: float64(c.Topics), Y: value(c, f)})
					}
				}
				slices.SortFunc(s.Points, func(a, b benchutil.Point) int { return cmp.Compare(a.X, b.X) })
				ss = append(ss, s)
			}
		}
		return ss
	}
	plots := []struct {
		suffix string
		lp     benchutil.LinePlot
	}{
		{"setup", benchutil.LinePlot{
			Title:  "Set-up and discovery against topics",
			XLabel: "topics", YLabel: "seconds", XTicks: benchutil.IntTicks(topics),
			Series: series([]string{"sub set-up", "b → a discovery", "a → b discovery", "first message"}, func(c Cell, f int) float64 {
				return secs([]benchutil.Seconds{c.SubSetUp, c.DiscoveryBA, c.DiscoveryAB, c.FirstMessage}[f])
			}),
		}},
		{"memory", benchutil.LinePlot{
			Title:  "Daemon memory against topics",
			XLabel: "topics", YLabel: "MiB", XTicks: benchutil.IntTicks(topics),
			Series: series([]string{"RSS host a", "PSS host a", "RSS host b", "PSS host b"}, func(c Cell, f int) float64 {
				d := c.Daemons[f/2]
				if f%2 == 0 {
					return mib(d.Mem.RSS)
				}
				return mib(d.Mem.PSS)
			}),
		}},
	}
	var files []string
	for _, p := range plots {
		fs, err := p.lp.Save(prefix + "-" + p.suffix)
		files = append(files, fs...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}
