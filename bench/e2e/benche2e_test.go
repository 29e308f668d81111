package benche2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bench/iceoryx"
	"github.com/rmw-rgaps/rmw_rgaps/bench/util/benchtest"
	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// childRole runs this package's child roles in a re-executed test binary:
// Env.Command puts the role and its arguments in argv (os.Args[1:]).
const childRole = "benche2e-child"

func init() {
	testutil.Role(childRole, func([]string) error { return ChildMain(os.Args[1:]) })
	if os.Getenv("RGAPS_E2E_TEST_CORRUPT") == "1" {
		testCorrupt = func(b []byte) { b[len(b)/2] ^= 0x40 }
	}
}

// testOptions run the test binary as every child, on host memory.
func testOptions(t *testing.T) Options {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Sizes: []int64{64 << 10}, Ns: []int{1, 2}, Rounds: 3, Warmup: 1, HostOnly: true,
		Exe: exe, ChildArgs: []string{}, ChildEnv: []string{testutil.ChildEnv + "=" + childRole},
		PeerTimeout: time.Minute,
	}
}

// needBaseline skips without iceoryx (RGAPS_REQUIRE_IOX=1: fails), and
// needFabric without libfabric.
func needBaseline(t *testing.T) {
	t.Helper()
	_, err := iceoryx.FindRouDi()
	if err == nil {
		err = iceoryx.Load()
	}
	if err != nil {
		if errors.Is(err, iceoryx.ErrNotSupported) && os.Getenv("RGAPS_REQUIRE_IOX") != "1" {
			t.Skip("the baseline needs iceoryx (scripts/setup.sh installs it): ", err)
		}
		t.Fatal(err)
	}
}

func needFabric(t *testing.T, wire string) {
	t.Helper()
	if !fabric.Available {
		t.Skip("this build has no libfabric")
	}
	p, err := fabric.Open(wire, fabric.Options{})
	if errors.Is(err, transport.ErrNotSupported) {
		t.Skip("libfabric provider not available: ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}

// checkRun checks a whole run: every cell of both systems, the report's
// tables, the plots and the JSON.
func checkRun(t *testing.T, o Options) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress benchtest.SyncBuffer
	o.Progress = &progress
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Failed(); err != nil {
		t.Fatal(err)
	}
	// The K-endpoint bound runs where the bridge would have several rails.
	want := []string{NameBaseline, NameLowerBound}
	if k := bridge.AutoRails("fabric:"+o.Wire, ring.WriteImm, runtime.NumCPU()); k > 1 {
		want = append(want, NameLowerBoundRails)
	}
	if len(res.Systems) != len(want) {
		t.Fatalf("systems %+v, want %v", res.Systems, want)
	}
	for i, name := range want {
		if res.Systems[i].Name != name {
			t.Fatalf("system %d is %q, want %q", i, res.Systems[i].Name, name)
		}
	}
	for _, sys := range res.Systems {
		if len(sys.Cells) != len(o.Sizes)*len(o.Ns) {
			t.Errorf("%s: %d cells, want %d", sys.Name, len(sys.Cells), len(o.Sizes)*len(o.Ns))
		}
		for _, c := range sys.Cells {
			if len(c.PerSub) != o.Rounds || c.Latency.N != o.Rounds*c.N || c.Slowest.N != o.Rounds {
				t.Errorf("%s %d N=%d: %d rounds, %d/%d samples", sys.Name, c.Size, c.N, len(c.PerSub), c.Latency.N, c.Slowest.N)
			}
			for _, r := range c.PerSub {
				if len(r) != c.N {
					t.Errorf("%s N=%d: a round with %d subscriber times", sys.Name, c.N, len(r))
				}
			}
			for _, st := range sys.Stages {
				if len(c.Stages[st]) != o.Rounds {
					t.Errorf("%s N=%d: stage %q has %d values", sys.Name, c.N, st, len(c.Stages[st]))
				}
			}
			if c.Latency.Min > c.Latency.P50 || c.Latency.P50 > c.Latency.P99 || c.Latency.P99 > c.Latency.Max {
				t.Errorf("%s: inconsistent summary %+v", sys.Name, c.Latency)
			}
		}
	}
	if !strings.Contains(progress.String(), "100%") {
		t.Errorf("progress bar did not reach 100%%: %q", progress.String())
	}

	dir := t.TempDir()
	prefix := filepath.Join(dir, "e2e")
	var stdout, stderr bytes.Buffer
	if err := res.Write(prefix, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(prefix + ".md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md, stdout.Bytes()) {
		t.Error("the report file differs from stdout")
	}
	tables := benchtest.MarkdownTables(t, string(md))
	// machine, latency, ratios, thesis (only for its sizes), one per system
	if len(tables) != 5 {
		t.Errorf("%d tables, want 5:\n%s", len(tables), md)
	} else if n := len(tables[1]); n != len(o.Sizes)*len(o.Ns) {
		t.Errorf("latency table has %d rows, want %d", n, len(o.Sizes)*len(o.Ns))
	}
	for _, want := range []string{"host-memory fallback", "**Not measured**: ours", "## End-to-end latency", "### baseline", "### lower-bound"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, size := range o.Sizes {
		base := fmt.Sprintf("%s-%s", prefix, strings.ReplaceAll(fmtSize(size), " ", ""))
		benchtest.CheckPlot(t, base)
		if !strings.Contains(string(md), filepath.Base(base)+".png") {
			t.Errorf("report does not show %s.png", filepath.Base(base))
		}
	}
	raw, err := os.ReadFile(prefix + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Systems) != len(want) || len(back.Systems[0].Cells) != len(res.Systems[0].Cells) {
		t.Errorf("JSON round trip lost cells")
	}
}

// TestRunLoopback: the harness end to end with the baseline and the lower
// bound (libfabric shm), host memory, one namespace.
func TestRunLoopback(t *testing.T) {
	needBaseline(t)
	needFabric(t, "shm")
	o := testOptions(t)
	o.Wire = "shm"
	checkRun(t, o)
}

// TestRunNetns: the same with hosts A and B in two network namespaces and
// libfabric tcp between them.
func TestRunNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	needBaseline(t)
	needFabric(t, "tcp")
	o := testOptions(t)
	o.Netns = true
	o.Wire = "tcp"
	checkRun(t, o)
}

// TestLowerBoundRails: the lower bound over 1 and over 3 endpoint pairs
// moves every byte (each round's device copy on B is checksummed against
// the message, or the round fails) for sizes that split unevenly, and
// names itself apart.
func TestLowerBoundRails(t *testing.T) {
	needFabric(t, "shm")
	o := testOptions(t)
	o.Wire = "shm"
	o.Sizes = []int64{5<<20 + 4097, 64 << 10}
	o.Ns = []int{1}
	o.Systems = []func() System{NewLowerBound, NewLowerBoundRails(3)}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Failed(); err != nil {
		t.Fatal(err)
	}
	if len(res.Systems) != 2 || res.Systems[0].Name != NameLowerBound || res.Systems[1].Name != NameLowerBoundRails {
		t.Fatalf("systems %+v", res.Systems)
	}
	for _, sys := range res.Systems {
		if len(sys.Cells) != len(o.Sizes) {
			t.Errorf("%s: %d cells", sys.Name, len(sys.Cells))
		}
		for _, c := range sys.Cells {
			if len(c.Stages[StageWrite]) != o.Rounds {
				t.Errorf("%s %d: %d write stages", sys.Name, c.Size, len(c.Stages[StageWrite]))
			}
		}
	}
	for _, c := range []struct {
		size int64
		k    int
	}{{5<<20 + 4097, 3}, {64 << 10, 3}, {200 << 20, 2}, {1 << 30, 4}, {1, 4}} {
		part := lbPart(c.size, c.k)
		n := (c.size + part - 1) / part
		if part > transport.MaxMessage || part%4096 != 0 || n < int64(min(c.k, int((c.size+4095)/4096))) {
			t.Errorf("lbPart(%d, %d) = %d: %d parts", c.size, c.k, part, n)
		}
	}
}

// startBaseline starts the baseline on host memory for the test.
func startBaseline(t *testing.T, extraEnv ...string) (System, func()) {
	needBaseline(t)
	o, err := testOptions(t).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	o.ChildEnv = append(o.ChildEnv, extraEnv...)
	env, cleanup, err := newEnv(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	sys := NewBaseline()
	if err := sys.Start(env); err != nil {
		sys.Close()
		cleanup()
		t.Fatal(err)
	}
	return sys, cleanup
}

// TestBaselineBytes: every subscriber's device copy has the right
// checksum in every round, as the subscriber count changes (processes
// replaced), for sizes that are not multiples of pages; and a byte
// damaged on the way is caught.
func TestBaselineBytes(t *testing.T) {
	sys, cleanup := startBaseline(t)
	defer cleanup()
	for _, step := range []struct {
		size int64
		n    int
	}{{64 << 10, 1}, {64<<10 - 8, 1}, {64 << 10, 2}, {1000, 2}, {64 << 10, 1}} {
		r, err := sys.Round(step.size, step.n)
		if err != nil {
			sys.Close()
			t.Fatalf("size %d N=%d: %v", step.size, step.n, err)
		}
		if len(r.PerSub) != step.n {
			t.Errorf("%d subscriber times, want %d", len(r.PerSub), step.n)
		}
	}
	if err := sys.Close(); err != nil {
		t.Fatal(err)
	}

	bad, cleanup2 := startBaseline(t, "RGAPS_E2E_TEST_CORRUPT=1")
	defer cleanup2()
	_, err := bad.Round(64<<10, 2)
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("damaged payload: %v, want a checksum error", err)
	}
	if err := bad.Close(); err != nil {
		t.Error(err)
	}
}

// fakeOurs stands in for the bridge (which is not built yet): its
// numbers are made up, so this test checks only that a registered system
// is run and reported with its ratios.
type fakeOurs struct{ fail bool }

func (f *fakeOurs) Name() string         { return "rgaps" }
func (f *fakeOurs) Start(env *Env) error { return nil }
func (f *fakeOurs) Close() error         { return nil }
func (f *fakeOurs) Round(size int64, n int) (Round, error) {
	if f.fail {
		return Round{}, errors.New("bridge broke")
	}
	r := Round{PerSub: make([]time.Duration, n), Stages: map[string]time.Duration{"copy": time.Microsecond}}
	for i := range r.PerSub {
		r.PerSub[i] = time.Duration(size/1000+1) * time.Microsecond
	}
	return r, nil
}

// fakeSlow is a second made-up system in the baseline's place.
type fakeSlow struct{ fakeOurs }

func (f *fakeSlow) Name() string { return NameBaseline }
func (f *fakeSlow) Round(size int64, n int) (Round, error) {
	r, err := f.fakeOurs.Round(size, n)
	for i := range r.PerSub {
		r.PerSub[i] *= time.Duration(n + 1)
	}
	return r, err
}

func TestReportWithOurs(t *testing.T) {
	o := testOptions(t)
	o.Ns = []int{1, 2, 4}
	o.Systems = []func() System{
		func() System { return &fakeSlow{} },
		func() System { return &fakeOurs{} },
		func() System { return &fakeOurs{fail: true} },
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Failed(); err == nil || !strings.Contains(err.Error(), "bridge broke") {
		t.Errorf("Failed: %v", err)
	}
	var md bytes.Buffer
	res.WriteMarkdown(&md, nil)
	tables := benchtest.MarkdownTables(t, md.String())
	if len(tables) < 3 {
		t.Fatalf("%d tables:\n%s", len(tables), md.String())
	}
	// ours / lower bound is "—" (no lower bound ran); baseline / ours at
	// N=4 is (4+1)× by construction.
	latency := tables[1]
	last := latency[len(latency)-1]
	if last[len(last)-1] != "5.00×" {
		t.Errorf("baseline / ours at N=4: %q\n%s", last[len(last)-1], md.String())
	}
	for _, want := range []string{"**rgaps stopped**", "bridge broke"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(md.String(), "**Not measured**") {
		t.Error("report says ours was not measured")
	}
}

func TestParseArgs(t *testing.T) {
	var errOut bytes.Buffer
	c, err := ParseArgs([]string{"-quick"}, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.Options.Sizes, c.Options.Ns, c.Options.Rounds, c.Options.Warmup) != "[4194304 67108864] [1 8] 3 1" {
		t.Errorf("-quick: %v %v %d %d", c.Options.Sizes, c.Options.Ns, c.Options.Rounds, c.Options.Warmup)
	}
	c, err = ParseArgs([]string{"-sizes", "4MiB,64MiB,1GiB", "-n", "1,2,4,8", "-rounds", "7", "-wire", "shm", "-out", "x"}, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Options.Sizes) != 3 || c.Options.Sizes[2] != 1<<30 || c.Options.Rounds != 7 || c.Options.Wire != "shm" || c.Out != "x" {
		t.Errorf("parsed %+v", c)
	}
	for _, bad := range [][]string{{"-wire", "shm", "-netns"}, {"-wire", "udp"}, {"-sizes", "x"}, {"-n", "0"}, {"-rounds", "0"}, {"extra"}} {
		if _, err := ParseArgs(bad, &errOut); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestHeaderAndRounds(t *testing.T) {
	h := header{Seed: 0xA5, Seq: 7, Size: 1 << 20, T0: 1, T1: 2, T2: 3, T3: -4}
	var b [hdrSize]byte
	h.put(b[:])
	var g header
	if err := g.get(b[:]); err != nil || g != h {
		t.Fatalf("header round trip: %+v %v", g, err)
	}
	b[0] ^= 1
	if err := g.get(b[:]); err == nil {
		t.Error("bad magic accepted")
	}
	for _, c := range []struct {
		size         int64
		rounds, want int
	}{{4 << 20, 20, 20}, {64 << 20, 20, 20}, {256 << 20, 20, 5}, {1 << 30, 20, 3}, {1 << 30, 100, 10}, {1 << 30, 2, 2}, {128 << 20, 1, 1}} {
		if got := RoundsFor(c.size, c.rounds); got != c.want {
			t.Errorf("RoundsFor(%d, %d) = %d, want %d", c.size, c.rounds, got, c.want)
		}
	}
	if err := ChildMain([]string{"no-such-role"}); err == nil {
		t.Error("unknown role accepted")
	}
}

// TestInterrupt: cancelling a run ends it promptly, children and RouDi
// stopped (the leak check of TestMain then finds nothing left).
func TestInterrupt(t *testing.T) {
	needBaseline(t)
	o := testOptions(t)
	o.Rounds = 100000
	ctx, cancel := context.WithCancel(context.Background())
	var progress benchtest.SyncBuffer
	started := make(chan struct{})
	var once sync.Once
	progress.Hook = func(line string) {
		if strings.Contains(line, "baseline") && strings.Contains(line, "rounds") {
			once.Do(func() { close(started) })
		}
	}
	o.Progress = &progress
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, o)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatal("no round started")
	}
	time.Sleep(500 * time.Millisecond)
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run after cancel: %v", err)
		}
		t.Logf("stopped %v after the cancel", time.Since(t0).Round(time.Millisecond))
	case <-time.After(time.Minute):
		t.Fatal("Run did not return within a minute of the cancel")
	}
	live.Lock()
	n := len(live.m)
	live.Unlock()
	if n != 0 {
		t.Errorf("%d children still running", n)
	}
}
