package benche2e

import (
	"fmt"
	"image/color"
	"strings"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Colours and markers per system, as in the thesis' Figure 4.6 (ours
// against the baseline), with the lower bound dashed.
var styles = map[string]struct {
	c    color.RGBA
	dash bool
}{
	NameBaseline:        {color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, false},
	NameLowerBound:      {color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, true},
	NameLowerBoundRails: {color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, true},
}

var oursColour = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}

// WritePlots writes, per size, a plot of the average latency against N
// for every system (with p99 as a thin line above it) to
// prefix-<size>.png and .svg; it returns the file names per size.
func (r *Result) WritePlots(prefix string) (map[int64][]string, error) {
	out := map[int64][]string{}
	for k, size := range r.Setup.Sizes {
		name := benchutil.FormatSize(int(size))
		lp := benchutil.LinePlot{
			Title:  fmt.Sprintf("(%c) %s: latency from publish on host A to a device pointer on host B", 'a'+k, name),
			XLabel: "subscribers N", YLabel: "latency (ms)",
			XTicks: benchutil.IntTicks(r.Setup.Ns),
		}
		for si, sys := range r.Systems {
			var avg, p99 []benchutil.Point
			for _, n := range r.Setup.Ns {
				if c := sys.Cell(size, n); c != nil {
					avg = append(avg, benchutil.Point{X: float64(n), Y: float64(c.Latency.Avg) / 1e6})
					p99 = append(p99, benchutil.Point{X: float64(n), Y: float64(c.Latency.P99) / 1e6})
				}
			}
			if len(avg) == 0 {
				continue
			}
			st, ok := styles[sys.Name]
			if !ok {
				st.c = oursColour
			}
			lp.Series = append(lp.Series,
				benchutil.Series{Name: sys.Name + " (avg)", Points: avg, Color: st.c, Dashed: st.dash, Marker: 1 + si},
				benchutil.Series{Name: sys.Name + " (p99)", Points: p99, Color: st.c, Thin: true})
		}
		if lp.Empty() {
			continue
		}
		if r.ours() == nil {
			lp.Title += "\n(ours not measured in this run)"
		}
		files, err := lp.Save(fmt.Sprintf("%s-%s", prefix, strings.ReplaceAll(name, " ", "")))
		if err != nil {
			return nil, err
		}
		out[size] = files
	}
	return out, nil
}
