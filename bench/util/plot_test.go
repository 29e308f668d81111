package benchutil

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/bench/util/benchtest"
)

// A log-x plot with a thin, a dashed and an empty series, points a log
// axis cannot show and a NaN: both files are written and well formed.
func TestLinePlot(t *testing.T) {
	lp := LinePlot{Title: "t", XLabel: "size", YLabel: "GB/s", LogX: true,
		XTicks: []Tick{{4096, "4 KiB"}, {1 << 20, "1 MiB"}},
		Series: []Series{
			{Name: "a", Points: []Point{{0, 1}, {4096, 1}, {1 << 20, 3}}},
			{Name: "b", Points: []Point{{4096, math.NaN()}, {1 << 20, 2}}, Dashed: true},
			{Name: "c", Points: []Point{{4096, 2}, {1 << 20, 4}}, Thin: true, Marker: 3},
			{Name: "empty"},
		}}
	if lp.Empty() || !(&LinePlot{Series: []Series{{Name: "x"}}}).Empty() {
		t.Error("Empty")
	}
	base := filepath.Join(t.TempDir(), "p")
	files, err := lp.Save(base)
	if err != nil || len(files) != 2 {
		t.Fatalf("%v %v", files, err)
	}
	benchtest.CheckPlot(t, base)
	// Nothing to draw still makes a figure.
	if _, err := (&LinePlot{Title: "none"}).Save(base + "-empty"); err != nil {
		t.Fatal(err)
	}
}
