package benchdds

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bench/util/benchtest"
	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	// The test binary serves as the benchmark's processes: the daemon
	// (rgapsd, as rgaps-bench daemon runs it) and the DDS endpoints.
	testutil.Daemon = func(ctx context.Context, args []string) error {
		cfg, err := zerocopy.Config{}.FromEnv()
		if err != nil {
			return err
		}
		return rgapsd.Main(ctx, args, cfg, os.Stderr)
	}
	testutil.Role(ChildCommand, Child)
}

func TestMain(m *testing.M) { testutil.Main(m) }

// testCommand starts the test binary as one of the benchmark's processes.
func testCommand(t *testing.T) func(args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func(args ...string) *exec.Cmd {
		if args[0] == "daemon" {
			return exec.Command(exe, args...)
		}
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), testutil.ChildEnv+"="+strings.Join(args, "\x1f"))
		return cmd
	}
}

func TestParseArgs(t *testing.T) {
	c, err := ParseArgs([]string{"-sizes", "64,8M", "-rounds", "7", "-warmup", "0", "-duration", "150ms", "-subs", "3", "-domain", "17", "-json", "x.json", "-q", "-layouts", "one"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options
	if len(o.Sizes) != 2 || o.Sizes[0] != 64 || o.Sizes[1] != 8<<20 || o.Rounds != 7 || o.Warmup != 0 ||
		o.Duration != 150*time.Millisecond || o.Subs != 3 || o.Domain != 17 || o.Progress != nil || c.JSON != "x.json" ||
		len(o.Layouts) != 1 || o.Layouts[0] != LayoutOne {
		t.Errorf("config %+v", c)
	}
	def, err := ParseArgs(nil, io.Discard)
	if err != nil || len(def.Options.Sizes) != 4 || def.Options.Rounds != DefaultRounds || def.Options.Subs != DefaultSubs ||
		def.Options.Duration != DefaultDuration || def.Options.Domain != DefaultDomain || def.Options.Progress == nil ||
		len(def.Options.Layouts) != 2 {
		t.Errorf("defaults %+v %v", def, err)
	}
	for _, bad := range [][]string{{"-sizes", "8"}, {"-sizes", "x"}, {"-rounds", "0"}, {"-duration", "0s"}, {"-subs", "0"},
		{"-warmup", "-1"}, {"-domain", "233"}, {"extra"}, {"-layouts", "two"}} {
		if _, err := ParseArgs(bad, io.Discard); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestStringCDRAndRounds(t *testing.T) {
	for _, n := range []int{MinSize, 64, 4096} {
		b := StringCDR(n)
		if len(b) != n || binary.LittleEndian.Uint32(b[4:]) != uint32(n-8) || b[n-1] != 0 || b[1] != 1 {
			t.Errorf("StringCDR(%d) = % x…", n, b[:min(n, 12)])
		}
		at := time.Unix(12, 345)
		Stamp(b, 77, at)
		if seq, got := Stamped(b); seq != 77 || !got.Equal(at) || b[n-1] != 0 || binary.LittleEndian.Uint32(b[4:]) != uint32(n-8) {
			t.Errorf("Stamp in %d bytes: %d %v", n, seq, got)
		}
	}
	if RoundsFor(200, 64) != 200 || RoundsFor(200, 8<<20) != 50 || RoundsFor(20, 8<<20) != 10 || RoundsFor(5, 8<<20) != 5 {
		t.Error("RoundsFor")
	}
}

func lat(layout, path string, size int, p50us int64) LatencyCell {
	return LatencyCell{Layout: layout, Path: path, Size: size, Latency: benchutil.Summary{N: 10, P50: p50us * 1000, P99: 2 * p50us * 1000}}
}

func TestWriteMarkdown(t *testing.T) {
	r := &Result{
		Setup: Setup{Layouts: []string{LayoutProcs}, Sizes: []int{64, 1 << 20}, Rounds: 10, Warmup: 2, Duration: benchutil.Seconds(time.Second), Subs: 8, CPU: "cpu", Cores: 2},
		Latency: []LatencyCell{
			lat(LayoutProcs, PathDDS, 64, 10), lat(LayoutProcs, PathToDDS, 64, 12), lat(LayoutProcs, PathFromDDS, 64, 11),
			lat(LayoutProcs, PathDDS, 1<<20, 100), lat(LayoutProcs, PathToDDS, 1<<20, 150), // DDS→rgaps 1 MiB missing
			lat(LayoutOne, PathDDS, 64, 1), // another layout: not in this report
		},
		Throughput: []ThroughputCell{
			{Layout: LayoutProcs, Case: CaseRgaps, Size: 64, Rate: 100000}, {Layout: LayoutProcs, Case: CaseGateway, Size: 64, Rate: 90000},
			{Layout: LayoutProcs, Case: CaseGatewayL, Size: 64, Rate: 95000, Messages: 1000, DDSGot: 500},
			{Layout: LayoutProcs, Case: CaseGatewayR, Size: 64, Rate: 50000, Messages: 1000, DDSGot: 1000},
			{Layout: LayoutProcs, Case: CaseDDSAll, Size: 64, Rate: 40000, Messages: 1000, DDSGot: 1000},
		},
	}
	var b strings.Builder
	WriteMarkdown(&b, r)
	out := b.String()
	for _, want := range []string{
		"### Layout: processes",
		"| 64 B | 10.0 | 20.0 | 12.0 | 24.0 | 1.20× | 11.0 | 22.0 | 1.10× |",
		"| 1 MiB | 100 | 200 | 150 | 300 | 1.50× | – | – | – |",
		"rgaps→DDS NOT met (worst 1.50×), DDS→rgaps met (worst 1.10×)",
		"| 64 B | 100,000 | 90,000 | 95,000 | 50,000 | 40,000 | 95% | 50.0% | 50% | 100.0% | 125% |",
		"| 1 MiB | – | – | – | – | – | – | – | – | – | – |",
		"KEEP_LAST 10 subscriber met (lowest 95%), KEEP_ALL subscriber NOT met (lowest 50%)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "one process") {
		t.Errorf("report shows a layout not run:\n%s", out)
	}
	tables := benchtest.MarkdownTables(t, out)
	if len(tables) != 2 {
		t.Errorf("%d tables", len(tables))
	}
}

// TestRun runs the whole benchmark with tiny settings where libddsc
// loads: every path and case must have produced samples (no durations are
// checked), and the run's shared memory must be gone.
func TestRun(t *testing.T) {
	if err := dds.Load(); err != nil {
		t.Skipf("libddsc cannot be loaded: %v", err)
	}
	o := Options{Sizes: []int{64, 64 << 10}, Rounds: 3, Warmup: 1, Duration: 100 * time.Millisecond, Subs: 2, Domain: DefaultDomain,
		Command: testCommand(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if errors.Is(err, ErrNoDDS) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	benchtest.NoSegments(t, res.Setup.Prefix)
	for _, layout := range Layouts {
		for _, size := range o.Sizes {
			for _, p := range Paths {
				if c := res.Cell(layout, p, size); c == nil || len(c.Samples) != RoundsFor(o.Rounds, size) || c.Latency.N != len(c.Samples) {
					t.Errorf("latency %s %s %d: %+v", layout, p, size, c)
				}
			}
			for _, k := range Cases {
				c := res.Rate(layout, k, size)
				if c == nil || c.Messages == 0 || len(c.Delivered) != o.Subs {
					t.Errorf("throughput %s %s %d: %+v", layout, k, size, c)
					continue
				}
				for i, n := range c.Delivered {
					if n != c.Messages {
						t.Errorf("throughput %s %s %d: subscription %d got %d of %d", layout, k, size, i, n, c.Messages)
					}
				}
				// A KEEP_ALL DDS subscriber gets every message, a KEEP_LAST
				// one some, no subscriber none.
				switch {
				case k == CaseGatewayR && c.DDSGot != c.Messages,
					k == CaseGatewayL && (c.DDSGot == 0 || c.DDSGot > c.Messages),
					sinkQoS[k] == "" && c.DDSGot != 0:
					t.Errorf("throughput %s %s %d: DDS subscriber got %d of %d", layout, k, size, c.DDSGot, c.Messages)
				}
			}
		}
	}
	for _, size := range o.Sizes {
		if c := res.Rate(LayoutProcs, CaseDDSAll, size); c == nil || c.Messages == 0 || c.DDSGot != c.Messages {
			t.Errorf("throughput DDS→DDS %d: %+v", size, c)
		}
	}
	var b strings.Builder
	WriteMarkdown(&b, res)
	if !strings.Contains(b.String(), "### Layout: processes") || !strings.Contains(b.String(), "Throughput, msgs/s") {
		t.Errorf("report:\n%s", b.String())
	}
}
