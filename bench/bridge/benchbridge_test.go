package benchbridge

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bench/util/benchtest"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// quick runs the harness as -quick does, with the test's shm prefix.
func quick(t *testing.T, provider string, variants ...string) *Result {
	t.Helper()
	// Two rails for the rails variant, whatever the machine would choose;
	// latency rounds after a pause, so that they find the bridges idle.
	c, err := ParseArgs([]string{"-quick", "-provider", provider, "-rails", "2", "-gap", "2ms"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options
	o.Prefix = testutil.Prefix() + "-" + strings.NewReplacer(":", "").Replace(provider)
	o.Variants = variants
	if testing.Verbose() {
		o.Progress = os.Stderr
	}
	if os.Getenv("RGAPS_TEST_LOG") != "" {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		if provider != "tcp" && errors.Is(err, transport.ErrNotSupported) {
			if os.Getenv("RGAPS_REQUIRE_FABRIC") != "" {
				t.Fatalf("provider %s: %v (RGAPS_REQUIRE_FABRIC is set)", provider, err)
			}
			t.Skipf("provider %s: %v", provider, err)
		}
		t.Fatal(err)
	}
	checkNoSegments(t, o.Prefix)
	if c := fabric.Outstanding(); c != (fabric.Counts{}) {
		t.Errorf("libfabric objects left open: %+v", c)
	}
	return res
}

func checkNoSegments(t *testing.T, prefix string) {
	t.Helper()
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			t.Errorf("segment left in /dev/shm: %s", e.Name())
			os.Remove(filepath.Join("/dev/shm", e.Name()))
		}
	}
}

// Every message of every variant arrived intact (Run fails otherwise;
// the counts say it did check them), and the report is a well-formed
// Markdown document with a row per size and path.
func TestQuick(t *testing.T) {
	for _, prov := range []string{"tcp", "fabric:tcp"} {
		t.Run(strings.ReplaceAll(prov, ":", "-"), func(t *testing.T) {
			res := quick(t, prov)
			want := Variants(prov)
			if len(res.Variants) != len(want) {
				t.Fatalf("%d variants measured, want %d", len(res.Variants), len(want))
			}
			for _, v := range res.Variants {
				if len(v.Cells) != len(QuickSizes) {
					t.Fatalf("%s: %d cells, want %d", v.Key, len(v.Cells), len(QuickSizes))
				}
				for _, c := range v.Cells {
					if c.Sent == 0 || c.Received != c.Sent {
						t.Errorf("%s %d B: %d sent, %d received", v.Key, c.Size, c.Sent, c.Received)
					}
					if c.Messages < QuickN || c.Elapsed <= 0 {
						t.Errorf("%s %d B: %d timed messages in %v", v.Key, c.Size, c.Messages, c.Elapsed)
					}
					if v.Latency && c.Rounds != QuickRounds {
						t.Errorf("%s %d B: %d latency rounds, want %d", v.Key, c.Size, c.Rounds, QuickRounds)
					}
					if c.Links.Records < uint64(c.Messages) || c.Links.Dropped != 0 || c.Links.Dups != 0 {
						t.Errorf("%s %d B: link counters %+v", v.Key, c.Size, c.Links)
					}
				}
			}
			if len(res.Loop) != len(QuickSizes) {
				t.Errorf("%d transport-loop baselines, want %d", len(res.Loop), len(QuickSizes))
			}
			if prov == "fabric:tcp" && (len(res.Bare) != len(QuickSizes) || len(res.BareRails) != len(QuickSizes) || res.Rails != 2) {
				t.Errorf("%d bare-loop baselines, %d over %d endpoints, want %d each over 2", len(res.Bare), len(res.BareRails), res.Rails, len(QuickSizes))
			}
			var md strings.Builder
			res.WriteMarkdown(&md)
			checkMarkdown(t, md.String(), res)
			if !strings.Contains(md.String(), "published 2ms after the previous one was taken") {
				t.Error("the report does not say that latency rounds paused 2 ms")
			}
			base := filepath.Join(t.TempDir(), "bridge")
			if files, err := res.WritePlots(base); err != nil || len(files) != 2 {
				t.Fatalf("plots %v: %v", files, err)
			}
			benchtest.CheckPlot(t, base+"-throughput")
		})
	}
}

// checkMarkdown checks that every table has rows as wide as its header
// and that the throughput table has a row per (size, path).
func checkMarkdown(t *testing.T, md string, res *Result) {
	t.Helper()
	if !strings.HasPrefix(md, "# rgaps-bench bridge\n") {
		t.Errorf("report does not start with its title:\n%s", md)
	}
	for _, h := range []string{"\n## Throughput\n", "\n## Latency\n", "\n## Ratios"} {
		if !strings.Contains(md, h) {
			t.Errorf("report lacks %q", h)
		}
	}
	tables, cols := 0, 0
	rows := map[string]int{}
	for _, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			cols = 0
			continue
		}
		if !strings.HasSuffix(l, "|") {
			t.Errorf("table row not closed: %q", l)
		}
		n := strings.Count(l, " | ") + 1
		if cols == 0 {
			cols = n
			tables++
		} else if n != cols {
			t.Errorf("row has %d cells, header %d: %q", n, cols, l)
		}
		if strings.Contains(l, "—×") || strings.Contains(l, "NaN") || strings.Contains(l, "Inf") {
			t.Errorf("bad number in %q", l)
		}
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cells) > 1 {
			rows[cells[0]+"|"+cells[1]]++
		}
	}
	if tables != 4 {
		t.Errorf("%d tables, want 4 (machine, throughput, latency, ratios)", tables)
	}
	for _, v := range res.Variants {
		for _, c := range v.Cells {
			// Throughput, and latency for single-topic variants.
			want := 1
			if v.Latency {
				want = 2
			}
			if got := rows[sizeName(c.Size)+"|"+v.Name]; got != want {
				t.Errorf("%d rows for %s, %s; want %d", got, sizeName(c.Size), v.Name, want)
			}
		}
	}
	if !strings.Contains(md, "received intact") {
		t.Error("report does not say how many messages were checked")
	}
}

func sizeName(n int) string { return benchutil.FormatSize(n) }

// An empty result (nothing measured) still writes its tables.
func TestEmptyReport(t *testing.T) {
	var md strings.Builder
	(&Result{}).WriteMarkdown(&md)
	if !strings.Contains(md.String(), "## Throughput") {
		t.Errorf("empty report:\n%s", md.String())
	}
}

// Flags: -quick fills in what was not given; bad values are refused.
func TestParseArgs(t *testing.T) {
	c, err := ParseArgs([]string{"-quick", "-n", "3"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if c.Options.N != 3 || c.Options.Rounds != QuickRounds || c.Options.RingSize != QuickRing || len(c.Options.Sizes) != len(QuickSizes) {
		t.Errorf("-quick -n 3: %+v", c.Options)
	}
	c, err = ParseArgs([]string{"-sizes", "64K", "-ring", "16M", "-provider", "tcp", "-out", "x.md", "-plot", "x", "-gap", "33ms"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if c.Options.Sizes[0] != 64<<10 || c.Options.RingSize != 16<<20 || c.Out != "x.md" || c.Plot != "x" || c.Options.Gap != 33*time.Millisecond {
		t.Errorf("got %+v", c)
	}
	for _, bad := range [][]string{{"-sizes", "8"}, {"-ring", "100"}, {"-n", "-1"}, {"-variants", "nope"}, {"extra"}, {"-rounds", "0"}, {"-rails", "17"}, {"-rails", "-1"}, {"-gap", "-1ms"}} {
		if _, err := ParseArgs(bad, discard{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseArgs([]string{"-h"}, discard{}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// The rails goal is judged only where the rails variant has more than one
// rail: with one (the choice on a 2-core machine) it says it was not
// measured.
func TestRailsGoalLine(t *testing.T) {
	size := GoalRailsSize
	base := Baseline{Size: size, Iters: 10, Runs: []time.Duration{time.Second}}
	cell := Cell{Size: size, Messages: 10, Runs: []time.Duration{time.Second / 2}}
	for _, tc := range []struct {
		rails int
		want  string
	}{
		{1, "not measured (the rails variant has one rail in this run"},
		{4, "one topic over 4 rails at ≥ 1.5× the single-endpoint bare fi_writedata loop for 64 MiB messages: **met** (2.00×"},
	} {
		r := &Result{Rails: tc.rails, Bare: []Baseline{base},
			Variants: []VariantResult{{Variant: Variant{Key: KeyRails}, Cells: []Cell{cell}}}}
		var md strings.Builder
		r.writeRailsGoal(&md)
		if !strings.Contains(md.String(), tc.want) {
			t.Errorf("%d rails: %q lacks %q", tc.rails, md.String(), tc.want)
		}
	}
}
