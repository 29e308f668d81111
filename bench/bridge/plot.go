package benchbridge

import (
	"fmt"
	"image/color"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// WritePlots writes prefix-throughput.png/.svg: throughput (GB/s)
// against the message size (log scale), a line per variant and a dashed
// one per baseline loop. It returns the files' names.
func (r *Result) WritePlots(prefix string) ([]string, error) {
	lp := benchutil.LinePlot{
		Title:  "Throughput through the bridge (" + r.Provider + ")",
		XLabel: "message size", YLabel: "GB/s (payload, 1e9 bytes/s)",
		LogX: true,
	}
	for _, size := range r.Sizes {
		lp.XTicks = append(lp.XTicks, benchutil.Tick{Value: float64(size), Label: benchutil.FormatSize(size)})
	}
	baseline := func(name string, bs []Baseline, c color.Color) {
		s := benchutil.Series{Name: name, Color: c, Dashed: true}
		for _, b := range bs {
			if bps := b.BytesPerSecond(); bps > 0 {
				s.Points = append(s.Points, benchutil.Point{X: float64(b.Size), Y: bps / 1e9})
			}
		}
		lp.Series = append(lp.Series, s)
	}
	grey := color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	baseline("bare fi_writedata loop", r.Bare, grey)
	if len(r.BareStream) > 0 {
		baseline("bare loop, streaming", r.BareStream, color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff})
	}
	if len(r.BareRails) > 0 {
		baseline(fmt.Sprintf("bare loop over %d endpoints", r.Rails), r.BareRails, color.Black)
	}
	baseline("transport WriteImm loop", r.Loop, color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff})
	for i, v := range r.Variants {
		s := benchutil.Series{Name: v.Name, Color: benchutil.Palette[i%len(benchutil.Palette)]}
		for _, c := range v.Cells {
			if bps := c.BytesPerSecond(); bps > 0 {
				s.Points = append(s.Points, benchutil.Point{X: float64(c.Size), Y: bps / 1e9})
			}
		}
		lp.Series = append(lp.Series, s)
	}
	return lp.Save(prefix + "-throughput")
}
