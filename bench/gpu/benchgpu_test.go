package benchgpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bench/util/benchtest"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func init() {
	testDevice = newFakeDevice
	testutil.Role(ChildCommand, func([]string) error { return ChildMain() })
	// The engine's daemon auto-start runs this test binary (RGAPS_DAEMON)
	// as `daemon`, for the run's private prefix (RGAPS_SHM_PREFIX).
	testutil.Daemon = func(ctx context.Context, args []string) error {
		cfg, err := zerocopy.Config{}.FromEnv()
		if err != nil {
			return err
		}
		return rgapsd.Main(ctx, args, cfg, os.Stderr)
	}
}

func tinyOptions(t *testing.T) Options {
	return Options{Sizes: []int{1 << 20}, Subs: []int{1, 2}, Iters: 3, Warmup: 1, Domain: 91, Child: benchtest.ChildCmd(t, ChildCommand)}
}

// checkResult checks the structure of a run's result: every cell there,
// every series full, the statistics consistent.
func checkResult(t *testing.T, o Options, res *Result, paths []string) {
	t.Helper()
	if res.Setup.Children != maxInt(o.Subs) {
		t.Errorf("%d subscriber processes, want %d", res.Setup.Children, maxInt(o.Subs))
	}
	if len(res.DP1) != len(o.Sizes) {
		t.Fatalf("%d data path 1 rows, want %d", len(res.DP1), len(o.Sizes))
	}
	total := 0
	for _, row := range res.DP1 {
		iters, warmup := ItersFor(row.Size, o.Iters, o.Warmup)
		total += iters + warmup
		if row.SubPath != "host-shm" {
			t.Errorf("DP1 %d: subscriber path %q", row.Size, row.SubPath)
		}
		if row.Iters != iters || row.Warmup != warmup {
			t.Errorf("DP1 %d: iters %d+%d, want %d+%d", row.Size, row.Iters, row.Warmup, iters, warmup)
		}
		for name, s := range map[string][]int64{"loan": row.Loan, "copy": row.Copy, "publish": row.Publish, "bare": row.Bare, "pageable": row.PageCopy, "uds": row.PageUDS} {
			if len(s) != iters {
				t.Errorf("DP1 %d %s: %d samples, want %d", row.Size, name, len(s), iters)
			}
			for _, v := range s {
				if v <= 0 {
					t.Errorf("DP1 %d %s: sample %d", row.Size, name, v)
				}
			}
		}
		st := row.Stats
		for name, s := range map[string]Summary{"loan": st.Loan, "copy": st.Copy, "publish": st.Publish, "total": st.Total, "bare": st.Bare, "pageable": st.PageCopy, "uds": st.PageUDS, "pageable total": st.PageTotal} {
			if s.N != iters || s.Min > s.P50 || s.P50 > s.P99 || s.P99 > s.Max || s.Avg < s.Min || s.Avg > s.Max {
				t.Errorf("DP1 %d %s: inconsistent %+v", row.Size, name, s)
			}
		}
		if st.Total.Min < st.Copy.Min {
			t.Errorf("DP1 %d: T1+T2+T3 %+v below T2 %+v", row.Size, st.Total, st.Copy)
		}
	}
	if res.Checks.DP1Messages != total {
		t.Errorf("%d data path 1 messages checked, want %d", res.Checks.DP1Messages, total)
	}
	if want := len(o.Sizes) * len(o.Subs) * len(paths); len(res.DP3) != want {
		t.Fatalf("%d data path 3 cells, want %d", len(res.DP3), want)
	}
	if want := len(o.Sizes) * len(o.Subs); len(res.Floors) != want {
		t.Fatalf("%d floor cells, want %d", len(res.Floors), want)
	}
	kernels := 0
	for _, size := range o.Sizes {
		iters, warmup := ItersFor(size, o.Iters, o.Warmup)
		for _, n := range o.Subs {
			for _, path := range paths {
				c := res.findDP3(path, size, n)
				if c == nil {
					t.Fatalf("no cell %s %d N=%d", path, size, n)
				}
				kernels += n * (iters + warmup)
				if want := map[string]string{PathShared: "gpu-pool", PathIceoryx: "host-shm"}[path]; c.SubPath != want {
					t.Errorf("cell %s %d N=%d: subscriber path %q, want %q", path, size, n, c.SubPath, want)
				}
				if c.Iters != iters || c.Warmup != warmup || len(c.Loan) != iters || len(c.Publish) != iters {
					t.Errorf("cell %s %d N=%d: %d+%d messages, %d loans, %d publishes", path, size, n, c.Iters, c.Warmup, len(c.Loan), len(c.Publish))
				}
				if len(c.Wake) != n || len(c.Ptr) != n || len(c.CheckAt) != n || len(c.Check) != n || (path == PathIceoryx) != (c.CopyStart != nil) {
					t.Fatalf("cell %s %d N=%d: per-subscriber series for %d/%d/%d subscribers", path, size, n, len(c.Wake), len(c.Ptr), len(c.Check))
				}
				for s := range n {
					for i := range iters {
						w, p, at := c.Wake[s][i], c.Ptr[s][i], c.CheckAt[s][i]
						// Wall clocks of two processes: a subscriber's steps
						// come in order, and after t0.
						if w <= 0 || p < w || c.Check[s][i] <= 0 {
							t.Errorf("cell %s %d N=%d sub %d msg %d: wake %d, ptr %d, check took %d", path, size, n, s, i, w, p, c.Check[s][i])
						}
						// No check begins before every subscriber of the
						// message holds its pointer.
						for o := range n {
							if at < c.Ptr[o][i] {
								t.Errorf("cell %s %d N=%d msg %d: subscriber %d began its check at %d, before subscriber %d held its pointer (%d)", path, size, n, i, s, at, o, c.Ptr[o][i])
							}
						}
						if path == PathIceoryx && (c.CopyStart[s][i] < w || c.CopyStart[s][i] > p) {
							t.Errorf("cell %s %d N=%d sub %d msg %d: copy started at %d, outside [%d, %d]", path, size, n, s, i, c.CopyStart[s][i], w, p)
						}
					}
				}
				st := c.Stats
				if st.Delivery.N != iters || st.Delivery.P50 > st.Delivery.P99 || st.Check.N != iters || st.Delivery.Min < st.Wake.Min {
					t.Errorf("cell %s %d N=%d: inconsistent stats %+v", path, size, n, st)
				}
				if (path == PathIceoryx) != (st.SubCopy.N == iters) {
					t.Errorf("cell %s %d N=%d: own-copy stats %+v", path, size, n, st.SubCopy)
				}
				if len(c.Idle) != iters || st.Idle.N != iters || st.Idle.Min <= 0 {
					t.Errorf("cell %s %d N=%d: idle %v, %+v", path, size, n, c.Idle, st.Idle)
				}
			}
			// The futex floor of the same processes, paused as long as the
			// cell's publisher (Pinned-Shared's, where it ran).
			f := res.findFloor(size, n)
			if f == nil {
				t.Fatalf("no floor cell %d N=%d", size, n)
			}
			if want := res.findDP3(paths[0], size, n).Stats.Idle.P50; f.Pause != want || f.Iters != iters || len(f.Lat) != n || f.Unsettled != 0 {
				t.Errorf("floor %d N=%d: pause %d (want %d), %d iters, %d rows, %d unsettled", size, n, f.Pause, want, f.Iters, len(f.Lat), f.Unsettled)
			}
			for s := range f.Lat {
				if len(f.Lat[s]) != iters || slices.Min(f.Lat[s]) <= 0 {
					t.Errorf("floor %d N=%d sub %d: %v", size, n, s, f.Lat[s])
				}
			}
			if f.First.N != iters || f.First.Min > f.Last.Min || f.First.Avg > f.Last.Avg {
				t.Errorf("floor %d N=%d: first %+v, last %+v", size, n, f.First, f.Last)
			}
		}
	}
	if res.Checks.DP3Kernels != kernels {
		t.Errorf("%d checksums compared, want %d", res.Checks.DP3Kernels, kernels)
	}
	if res.Checks.Patterns != 2*len(o.Sizes) {
		t.Errorf("%d patterns cross-checked, want %d", res.Checks.Patterns, 2*len(o.Sizes))
	}
	if len(res.Verdicts) != 3 {
		t.Errorf("%d goal verdicts, want 3", len(res.Verdicts))
	}

	var md bytes.Buffer
	res.WriteMarkdown(&md)
	tables := benchtest.MarkdownTables(t, md.String())
	wantTables := 3 + len(paths)
	if slices.Contains(paths, PathShared) {
		wantTables += 2 // Pinned-Shared's stage table and its futex floor
	}
	if len(tables) != wantTables {
		t.Errorf("%d tables, want %d:\n%s", len(tables), wantTables, md.String())
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.DP3) != len(res.DP3) || len(back.DP1) != len(res.DP1) {
		t.Errorf("JSON round trip lost cells")
	}
}

func maxInt(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// The whole benchmark with tiny sizes on the fake device: every process,
// message, acknowledgement, check and table of the paths that do not need
// the engine's GPU pools (all but Pinned-Shared and the pool registration).
func TestRunFakeDevice(t *testing.T) {
	o := tinyOptions(t)
	o.Sizes = []int{MinSize, 1 << 20}
	o.fake = true
	progress := &benchtest.SyncBuffer{}
	o.Progress = progress
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	benchtest.NoSegments(t, res.Settings.Prefix)
	if !res.Settings.Fake || len(res.Settings.Topics) != 2 {
		t.Errorf("settings %+v", res.Settings)
	}
	checkResult(t, o, res, []string{PathIceoryx})
	var md bytes.Buffer
	res.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "Fake device") {
		t.Error("the report does not say the device was fake")
	}
	if testing.Verbose() {
		t.Logf("progress:\n%s\nreport:\n%s", progress.String(), md.String())
	}
}

// With -busy-poll the subscribers spin in Wait (their engine says so),
// messages do not wait for them to sleep, no floor runs, and every byte is
// still checked.
func TestRunFakeDeviceBusyPoll(t *testing.T) {
	o := tinyOptions(t)
	o.fake = true
	o.DataPaths = []int{3}
	o.BusyPoll = 20 * time.Millisecond
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Settings.BusyPoll != o.BusyPoll || len(res.Floors) != 0 {
		t.Fatalf("busy-poll %v reported, %d floor cells", res.Settings.BusyPoll, len(res.Floors))
	}
	iters, warmup := ItersFor(o.Sizes[0], o.Iters, o.Warmup)
	want := 0
	for _, n := range o.Subs {
		want += n * (iters + warmup)
	}
	if res.Checks.DP3Kernels != want {
		t.Errorf("%d checksums compared, want %d", res.Checks.DP3Kernels, want)
	}
	var md bytes.Buffer
	res.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "busy-poll: each Wait spins up to 20ms") {
		t.Errorf("the report does not say the subscribers busy-poll:\n%s", md.String())
	}
}

// Data path 3's check still fails a run whose subscribers see wrong bytes,
// now that it runs after every subscriber answered.
func TestRunCatchesDamage(t *testing.T) {
	o := tinyOptions(t)
	o.fake = true
	o.DataPaths = []int{3}
	child := o.Child
	o.Child = func() *exec.Cmd { // the subscribers only: the parent's reference stays right
		cmd := child()
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, damageEnv+"=1")
		return cmd
	}
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "checksum kernel on its device pointer gave") {
		t.Fatalf("run with damaged data: %v", err)
	}
}

// Cancelling the context stops the run in the middle and cleans up.
func TestRunCancelCleansUp(t *testing.T) {
	o := tinyOptions(t)
	o.fake = true
	o.Iters = 1000
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Progress = cancelOn{"data path 1", func() { time.AfterFunc(50*time.Millisecond, cancel) }} // mid-cell
	res, err := Run(ctx, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("run returned %v, %v; want context.Canceled", res, err)
	}
	benchtest.NoSegments(t, fmt.Sprintf("%.20s-g%d", testutil.Prefix(), os.Getpid())) // the prefix Run made up
}

// cancelOn cancels when a progress line contains s.
type cancelOn struct {
	s      string
	cancel func()
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.s) {
		c.cancel()
	}
	return len(p), nil
}

// A subscriber process that cannot start fails the run with its words.
func TestChildFailure(t *testing.T) {
	o := tinyOptions(t)
	o.fake = true
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o.Child = func() *exec.Cmd { return exec.Command(exe, "-test.run=^$", "-no-such-flag") }
	_, err = Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "subscriber 0") {
		t.Fatalf("run with a broken subscriber: %v", err)
	}
}

// requireGPU skips without a GPU (saying why), or fails with
// RGAPS_REQUIRE_GPU=1. It holds device 0 open for the test, so the CUDA
// driver's process-lifetime descriptors exist before the leak check's
// baseline is widened to them.
func requireGPU(t *testing.T) {
	t.Helper()
	dev, err := cuda.Open(0)
	testutil.SkipWithoutGPU(t, err, cuda.ErrNotSupported)
	if err != nil {
		t.Fatal(err)
	}
	testutil.AllowCurrentFDs()
	t.Cleanup(func() {
		if err := dev.Close(); err != nil {
			t.Error(err)
		}
	})
	// Subscribers and the daemon are this test binary (testutil.Role,
	// testutil.Daemon).
	t.Setenv("RGAPS_DAEMON", os.Args[0])
	t.Setenv("RGAPS_DAEMON_IDLE", "2s")
}

// The whole benchmark on the GPU, tiny: 1 MiB, N = 1 and 2, 3 messages.
func TestRunGPU(t *testing.T) {
	requireGPU(t)
	o := tinyOptions(t)
	progress := &benchtest.SyncBuffer{}
	o.Progress = progress
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	benchtest.NoSegments(t, res.Settings.Prefix)
	if res.Machine.GPU == "" || res.Machine.PCIBusID == "" || res.Machine.GPUMemory == 0 {
		t.Errorf("machine %+v", res.Machine)
	}
	if res.Setup.RegisterPool <= 0 || res.Setup.GPUTopic <= 0 || res.Setup.ChildInitMax <= 0 {
		t.Errorf("setup %+v", res.Setup)
	}
	checkResult(t, o, res, []string{PathShared, PathIceoryx})
	// The daemon of the run's private prefix is gone.
	if c, err := gpupool.Dial(res.Settings.Prefix, res.Settings.Domain, false); err == nil {
		c.Close()
		t.Error("the run's GPU daemon still answers")
	}
	var md bytes.Buffer
	res.WriteMarkdown(&md)
	t.Logf("report:\n%s", md.String())
}

// Without a GPU the run stops at once with a typed, clear error.
func TestNoGPU(t *testing.T) {
	if _, err := cuda.Count(); err == nil {
		t.Skip("this machine has a GPU")
	}
	_, err := Run(context.Background(), tinyOptions(t))
	if !errors.Is(err, cuda.ErrNotSupported) || !strings.HasPrefix(err.Error(), "needs a GPU: ") {
		t.Fatalf("run without a GPU: %v", err)
	}
	var out, errOut bytes.Buffer
	err = Command(context.Background(), []string{"-sizes", "1M", "-subs", "1", "-q"}, &out, &errOut)
	if !IsNoGPU(err) || out.Len() != 0 {
		t.Fatalf("command without a GPU: %v, stdout %q", err, out.String())
	}
}

// Command writes the report on stdout and, as asked, the same report to
// -out DIR and the raw results to -json FILE.
func TestCommandWritesOutputs(t *testing.T) {
	testCommandOptions = func(o *Options) { o.fake, o.Child = true, benchtest.ChildCmd(t, ChildCommand) }
	defer func() { testCommandOptions = nil }()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"-sizes", "4K", "-subs", "1", "-iters", "2", "-domain", "92", "-json", dir + "/raw.json", "-out", dir + "/report"}
	if err := Command(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "# rgaps-bench gpu") || !strings.Contains(stderr.String(), "data path 1, 4 KiB: 2 timed + 3 warm-up messages") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	md, err := os.ReadFile(dir + "/report/" + MarkdownFile)
	if err != nil || string(md) != stdout.String() {
		t.Errorf("-out file (%v) differs from stdout", err)
	}
	b, err := os.ReadFile(dir + "/raw.json")
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.DP1) != 1 || len(res.DP1[0].Copy) != 2 || len(res.DP3) != 1 || res.Settings.Domain != 92 || len(res.Verdicts) != 3 || res.Elapsed <= 0 {
		t.Errorf("raw results: %d DP1 rows, %d DP3 cells, settings %+v", len(res.DP1), len(res.DP3), res.Settings)
	}
}
