package benchutil

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point is one (x, y) of a Series.
type Point struct{ X, Y float64 }

// Series is one line of a LinePlot.
type Series struct {
	Name   string
	Points []Point
	Color  color.Color // nil: Palette, by the series' index
	// Dashed: long dashes (a bound or baseline). Thin: a thin dotted
	// line without points (a secondary figure, such as a p99 above its
	// average).
	Dashed, Thin bool
	// Marker is 1 + the index of the series' shape in Markers (0: by
	// the series' index); a Thin series has none.
	Marker int
}

// Palette holds the colours of series that name none (matplotlib's).
var Palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
}

// Markers are the point shapes of the series.
var Markers = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}, draw.RingGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}}

// Tick is a labelled mark on the x axis.
type Tick struct {
	Value float64
	Label string
}

// LinePlot is a figure of lines: y against x, one line per series, with
// a legend in the top left corner.
type LinePlot struct {
	Title, XLabel, YLabel string
	// LogX: a logarithmic x axis (points with x ≤ 0 are left out).
	LogX bool
	// XTicks, when given, are the only ticks of the x axis.
	XTicks []Tick
	// Headroom multiplies the largest y for the top of the y axis (room
	// for the legend); 0: 1.4. The y axis starts at 0.
	Headroom float64
	Series   []Series
}

// Empty says whether no series has a point.
func (lp *LinePlot) Empty() bool {
	for _, s := range lp.Series {
		if len(s.Points) > 0 {
			return false
		}
	}
	return true
}

// IntTicks returns a tick per value, labelled with it.
func IntTicks(vs []int) []Tick {
	var ts []Tick
	for _, v := range vs {
		ts = append(ts, Tick{Value: float64(v), Label: fmt.Sprint(v)})
	}
	return ts
}

// Save writes the plot to base.png and base.svg (8 × 5 inches) and
// returns their names.
func (lp *LinePlot) Save(base string) ([]string, error) {
	p := plot.New()
	p.Title.Text = lp.Title
	p.X.Label.Text, p.Y.Label.Text = lp.XLabel, lp.YLabel
	p.Legend.Top, p.Legend.Left = true, true
	if lp.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{}
	}
	if len(lp.XTicks) > 0 {
		var ticks plot.ConstantTicks
		for _, t := range lp.XTicks {
			ticks = append(ticks, plot.Tick{Value: t.Value, Label: t.Label})
		}
		p.X.Tick.Marker = ticks
	}
	top := 0.0
	for i, s := range lp.Series {
		var xys plotter.XYs
		for _, pt := range s.Points {
			if lp.LogX && pt.X <= 0 || math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) {
				continue
			}
			xys = append(xys, plotter.XY{X: pt.X, Y: pt.Y})
			top = max(top, pt.Y)
		}
		if len(xys) == 0 {
			continue
		}
		c := s.Color
		if c == nil {
			c = Palette[i%len(Palette)]
		}
		if s.Thin {
			l, err := plotter.NewLine(xys)
			if err != nil {
				return nil, err
			}
			l.Color, l.Width = c, vg.Points(0.5)
			l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
			p.Add(l)
			p.Legend.Add(s.Name, l)
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = c, vg.Points(1.5)
		if s.Dashed {
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		}
		m := s.Marker - 1
		if m < 0 {
			m = i
		}
		pts.Color = c
		pts.Shape = Markers[m%len(Markers)]
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
	}
	p.Y.Min = 0
	h := lp.Headroom
	if h == 0 {
		h = 1.4
	}
	if top > 0 {
		p.Y.Max = top * h
	} else {
		p.Y.Max = 1
	}
	var files []string
	for _, ext := range []string{".png", ".svg"} {
		if err := p.Save(8*vg.Inch, 5*vg.Inch, base+ext); err != nil {
			return files, fmt.Errorf("writing %s: %w", base+ext, err)
		}
		files = append(files, base+ext)
	}
	return files, nil
}
