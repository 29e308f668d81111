package benche2e

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Colours and markers per system, as in the thesis' Figure 4.6 (ours
// against the baseline), with the lower bound dashed.
var styles = map[string]struct {
	c    color.RGBA
	dash bool
}{
	NameBaseline:   {color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, false},
	NameLowerBound: {color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}, true},
}

var oursColour = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}

// WritePlots writes, per size, a plot of the average latency against N
// for every system (with p99 as a thin line above it) to
// prefix-<size>.png and .svg; it returns the file names per size.
func (r *Result) WritePlots(prefix string) (map[int64][]string, error) {
	out := map[int64][]string{}
	for k, size := range r.Setup.Sizes {
		p := plot.New()
		name := benchutil.FormatSize(int(size))
		p.Title.Text = fmt.Sprintf("(%c) %s: latency from publish on host A to a device pointer on host B", 'a'+k, name)
		p.X.Label.Text = "subscribers N"
		p.Y.Label.Text = "latency (ms)"
		p.Y.Min = 0
		var ticks plot.ConstantTicks
		for _, n := range r.Setup.Ns {
			ticks = append(ticks, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
		}
		p.X.Tick.Marker = ticks
		p.Legend.Top, p.Legend.Left = true, true
		any, top := false, 0.0
		for si, sys := range r.Systems {
			var avg, p99 plotter.XYs
			for _, n := range r.Setup.Ns {
				if c := sys.Cell(size, n); c != nil {
					avg = append(avg, plotter.XY{X: float64(n), Y: float64(c.Latency.Avg) / 1e6})
					p99 = append(p99, plotter.XY{X: float64(n), Y: float64(c.Latency.P99) / 1e6})
					top = max(top, float64(c.Latency.P99)/1e6)
				}
			}
			if len(avg) == 0 {
				continue
			}
			any = true
			st, ok := styles[sys.Name]
			if !ok {
				st.c = oursColour
			}
			l, pts, err := plotter.NewLinePoints(avg)
			if err != nil {
				return nil, err
			}
			l.Color, l.Width = st.c, vg.Points(1.5)
			if st.dash {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			pts.Color = st.c
			pts.Shape = draw.GlyphDrawer(markers[si%len(markers)])
			pl, err := plotter.NewLine(p99)
			if err != nil {
				return nil, err
			}
			pl.Color, pl.Width = st.c, vg.Points(0.5)
			pl.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
			p.Add(l, pts, pl)
			p.Legend.Add(sys.Name+" (avg)", l, pts)
			p.Legend.Add(sys.Name+" (p99)", pl)
		}
		if !any {
			continue
		}
		p.Y.Max = top * 1.4 // room for the legend
		if r.ours() == nil {
			p.Title.Text += "\n(ours not measured in this run)"
		}
		base := fmt.Sprintf("%s-%s", prefix, strings.ReplaceAll(name, " ", ""))
		for _, ext := range []string{".png", ".svg"} {
			if err := p.Save(8*vg.Inch, 5*vg.Inch, base+ext); err != nil {
				return nil, fmt.Errorf("writing %s: %w", base+ext, err)
			}
			out[size] = append(out[size], base+ext)
		}
	}
	return out, nil
}

var markers = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}}
