package benchros

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

func TestParseArgs(t *testing.T) {
	c, err := ParseArgs([]string{"-sizes", "64K,1M", "-ns", "2,1", "-variants", "cyclone,rgaps,rgaps", "-rounds", "3", "-warmup", "0", "-q"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Options.Sizes; len(got) != 2 || got[0] != 64<<10 || got[1] != 1<<20 {
		t.Errorf("sizes %v", got)
	}
	if strings.Join(c.Variants, ",") != "cyclone,rgaps" || c.Options.Rounds != 3 || c.Options.Warmup != -1 || c.Options.Progress != nil {
		t.Errorf("config %+v", c)
	}
	if len(c.systems()) != 2 || c.systems()[0]().Name() != "cyclone" {
		t.Errorf("systems")
	}
	def, err := ParseArgs(nil, io.Discard)
	if err != nil || len(def.Variants) != 4 || len(def.Options.Sizes) != 3 || len(def.Options.Ns) != 4 {
		t.Errorf("defaults %+v %v", def, err)
	}
	for _, bad := range [][]string{{"-sizes", "1000"}, {"-variants", "fastdds"}, {"-wire", "verbs"}, {"-rounds", "0"}, {"extra"}} {
		if _, err := ParseArgs(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// cell is a cell whose every subscriber took avg µs.
func cell(size int64, n int, avg int64) benche2e.Cell {
	return benche2e.Cell{Size: size, N: n, Latency: benchutil.Summary{N: n, Avg: avg * 1000, P50: avg * 1000}}
}

func TestWriteMarkdown(t *testing.T) {
	const mib = 1 << 20
	run := func(name string, base int64) benche2e.SystemRun {
		s := benche2e.SystemRun{Name: name}
		for _, n := range []int{1, 8} {
			s.Cells = append(s.Cells, cell(64*mib, n, base+int64(n)))
		}
		return s
	}
	r := &benche2e.Result{
		Setup:   benche2e.Setup{Sizes: []int64{64 * mib}, Ns: []int{1, 8}, Rounds: 20, Warmup: 2, Wire: "shm"},
		Systems: []benche2e.SystemRun{run("rgaps", 10000), run("rgaps-2hosts", 20000), run("cyclone", 120000), run("go-api", 10000)},
	}
	r.Systems[1].Err = "round 1: no recv"
	var b strings.Builder
	WriteMarkdown(&b, r)
	out := b.String()
	for _, want := range []string{
		"| 64 MiB | 8 | 10,008 | 10,008 | 20,008 | 20,008 | 120,008 | 120,008 | 10,008 | 10,008 |",
		"| rclcpp rgaps / Go API, N=8 | 1.00× | ≤ 1.05 |",
		"| rgaps N=8 / N=1 | 1.00× | ≤ 1.05 |",
		"| Cyclone / rgaps, one host, N=8 | 11.99× |",
		"host-memory fallback",
		"**rgaps-2hosts stopped**: round 1: no recv",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestRun runs every variant with small sizes where ROS 2, rmw_rgaps and
// the examples are there (not in CI): go test builds no rgaps-bench, so
// the variants that need its child roles and daemon run from the binary
// named by RGAPS_BENCH.
func TestRun(t *testing.T) {
	bin, err := FindBin()
	if err != nil {
		t.Skipf("ROS 2 benchmark programs absent: %v", err)
	}
	exe := os.Getenv("RGAPS_BENCH")
	if exe == "" {
		t.Skip("RGAPS_BENCH (a built rgaps-bench) is not set")
	}
	if _, err := exec.LookPath("ros2"); err != nil {
		t.Skip("no sourced ROS 2 (ros2 not on PATH)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "ros", "-bin", bin, "-sizes", "64K", "-ns", "1,2", "-rounds", "3", "-warmup", "1", "-q", "-timeout", "20s")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
}
