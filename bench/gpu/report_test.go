package benchgpu

import (
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bench/util/benchtest"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func TestItersFor(t *testing.T) {
	for _, c := range []struct{ size, iters, warmup, wantI, wantW int }{
		{4 << 20, 50, 3, 50, 3},
		{16 << 20, 50, 3, 50, 3},
		{64 << 20, 50, 3, 20, 3},
		{1 << 30, 50, 3, 5, 1},
		{1 << 30, 3, 0, 3, 1},
		{64 << 20, 3, 0, 3, 1},
		{1 << 30, 1, 9, 1, 3},
		{1 << 30, 100, 3, 10, 1},
		{1 << 20, 7, 0, 7, 1},
	} {
		i, w := ItersFor(c.size, c.iters, c.warmup)
		if i != c.wantI || w != c.wantW {
			t.Errorf("ItersFor(%d, %d, %d) = %d, %d; want %d, %d", c.size, c.iters, c.warmup, i, w, c.wantI, c.wantW)
		}
	}
}

func TestPoolFor(t *testing.T) {
	for _, c := range []struct {
		size int
		want uint64
	}{{1 << 30, 5 << 29}, {1 << 20, 64 << 20}, {64 << 20, 160 << 20}, {100<<20 + 1, 252 << 20}} {
		if got := PoolFor(c.size); got != c.want {
			t.Errorf("PoolFor(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}

func TestParseArgs(t *testing.T) {
	var stderr bytes.Buffer
	c, err := ParseArgs(nil, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options
	if !slices.Equal(o.Sizes, DefaultSizes) || !slices.Equal(o.Subs, DefaultSubs) || !slices.Equal(o.DataPaths, []int{1, 3}) ||
		o.Iters != DefaultIters || o.Warmup != DefaultWarmup || o.Domain != DefaultDomain || o.PoolSize != 0 || c.JSON != "" || c.OutDir != "" || c.Quiet {
		t.Errorf("defaults: %+v", c)
	}

	c, err = ParseArgs([]string{"-sizes", "1M, 8MiB,2G", "-subs", "1,3", "-iters", "7", "-warmup", "0", "-dp", "3",
		"-domain", "5", "-device", "1", "-pool", "6GiB", "-json", "r.json", "-out", "dir", "-q", "-sub-schedule", "blocking", "-busy-poll", "2ms"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	o = c.Options
	if !slices.Equal(o.Sizes, []int{1 << 20, 8 << 20, 2 << 30}) || !slices.Equal(o.Subs, []int{1, 3}) || !slices.Equal(o.DataPaths, []int{3}) ||
		o.Iters != 7 || o.Warmup != -1 || o.Domain != 5 || o.Device != 1 || o.PoolSize != 6<<30 || c.JSON != "r.json" || c.OutDir != "dir" || !c.Quiet || o.SubSchedule != "blocking" || o.BusyPoll != 2*time.Millisecond {
		t.Errorf("parsed: %+v", c)
	}
	if d, _ := o.withDefaults(); d.Warmup != 0 {
		t.Errorf("-warmup 0 resolves to %d, want 0 (ItersFor sends one)", d.Warmup)
	}

	for _, bad := range [][]string{
		{"-sizes", "1K"}, {"-sizes", "5G"}, {"-sizes", "x"}, {"-sizes", ""},
		{"-subs", "0"}, {"-subs", "1,99"}, {"-dp", "2"}, {"-iters", "0"}, {"-warmup", "-1"},
		{"-device", "-1"}, {"-pool", "lots"}, {"-pool", "1M"}, {"extra"}, {"-nope"}, {"-sub-schedule", "eager"}, {"-busy-poll", "-1ms"},
	} {
		if _, err := ParseArgs(bad, &stderr); err == nil {
			t.Errorf("ParseArgs(%q) accepted", bad)
		} else if bad[0] != "-nope" && !errors.Is(err, zerocopy.ErrInvalid) {
			t.Errorf("ParseArgs(%q): %v does not wrap ErrInvalid", bad, err)
		}
	}
	stderr.Reset()
	if _, err := ParseArgs([]string{"-h"}, &stderr); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr.String(), "usage: rgaps-bench gpu") {
		t.Errorf("-h: %v, usage %q", err, stderr.String())
	}
}

func TestPatternHelpers(t *testing.T) {
	for _, seed := range []uint32{0, 0xA5, 12345} {
		b := make([]byte, 4096+7)
		cuda.FillPatternHost(b, seed)
		for i := range b {
			if cuda.PatternByte(uint64(i), seed) != b[i] {
				t.Fatalf("cuda.PatternByte(%d, %d) differs from cuda.FillPatternHost", i, seed)
			}
		}
		if s := checkPattern(b, seed); s != "" {
			t.Fatalf("checkPattern of a good pattern: %s", s)
		}
		if checkPattern(b, seed+1) == "" {
			t.Fatal("checkPattern accepted another seed's pattern")
		}
		n := uint64(len(b))
		for _, i := range []uint64{0, 63, n - 64, n - 1, 7 * (n - 1) / (spotChecks + 1)} {
			b[i] ^= 0x10
			if checkPattern(b, seed) == "" {
				t.Errorf("checkPattern missed byte %d", i)
			}
			b[i] ^= 0x10
		}
	}
	a, b := dp3Seeds[0], dp3Seeds[1]
	for i := range uint64(256) {
		if cuda.PatternByte(i, a) == cuda.PatternByte(i, b) {
			t.Fatalf("the two data-path-3 patterns agree at byte %d", i)
		}
	}
}

func TestStampedChecksum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{MinSize, MinSize + 13, 1<<20 + 251*3 + 5} {
		pat := make([]byte, size)
		cuda.FillPatternHost(pat, 0x5A)
		base := cuda.ChecksumHost(pat)
		for range 5 {
			words := [3]uint64{r.Uint64(), r.Uint64(), r.Uint64()}
			msg := slices.Clone(pat)
			stamp(msg, words)
			if got, want := stampedChecksum(base, pat, words), cuda.ChecksumHost(msg); got != want {
				t.Fatalf("size %d: stampedChecksum %#x, ChecksumHost %#x", size, got, want)
			}
		}
		offs := stampOffsets(size)
		if offs[0] != 0 || offs[1]%8 != 0 || offs[2] != size-8 || offs[1] <= 8 || offs[1]+8 > offs[2] {
			t.Errorf("size %d: stamp offsets %v", size, offs)
		}
	}
}

func TestParallelChecksumAndCopy(t *testing.T) {
	b := make([]byte, 3*(251<<16)+12345)
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < len(b); i += 8 {
		v := r.Uint64()
		for k := 0; k < 8 && i+k < len(b); k++ {
			b[i+k] = byte(v >> (8 * k))
		}
	}
	if got, want := parallelChecksum(b), cuda.ChecksumHost(b); got != want {
		t.Fatalf("parallelChecksum %#x, ChecksumHost %#x", got, want)
	}
	if got, want := parallelChecksum(b[:1000]), cuda.ChecksumHost(b[:1000]); got != want {
		t.Fatalf("short: parallelChecksum %#x, ChecksumHost %#x", got, want)
	}
	dst := make([]byte, len(b))
	parallelCopy(dst, b)
	if !bytes.Equal(dst, b) {
		t.Fatal("parallelCopy")
	}
}

func TestStats(t *testing.T) {
	if s := summarize([]int64{5, 1, 3, 2, 4}); s != (Summary{N: 5, Avg: 3, P50: 3, P99: 5, Min: 1, Max: 5}) {
		t.Errorf("summary %+v", s)
	}
	var xs []int64
	for i := range 200 {
		xs = append(xs, int64(200-i))
	}
	if s := summarize(xs); s.P50 != 101 || s.P99 != 199 || s.Max != 200 || s.Min != 1 {
		t.Errorf("summary of 1..200: %+v", s)
	}
	if s := summarize(nil); s != (Summary{}) {
		t.Errorf("empty summary %+v", s)
	}
	rows := [][]int64{{1, 9, 3}, {4, 2, 6}}
	if got := maxOver(rows); !slices.Equal(got, []int64{4, 9, 6}) {
		t.Errorf("maxOver %v", got)
	}
	if got := avgOver(2, 3, func(s, i int) int64 { return rows[s][i] }); !slices.Equal(got, []int64{2, 5, 4}) {
		t.Errorf("avgOver %v", got)
	}
	if got := sumOf([]int64{1, 2}, []int64{10, 20}, []int64{100, 200}); !slices.Equal(got, []int64{111, 222}) {
		t.Errorf("sumOf %v", got)
	}
	c := DP3Cell{Path: PathIceoryx, Publish: []int64{10, 10},
		Wake: [][]int64{{20, 30}, {40, 50}}, CopyStart: [][]int64{{25, 35}, {45, 55}},
		Ptr: [][]int64{{100, 200}, {300, 100}}, Check: [][]int64{{10, 10}, {30, 20}}}
	c.summarize()
	st := c.Stats
	if st.Delivery.Avg != 250 || st.Delivery.Max != 300 || st.Check.Avg != 17 || st.Check.Max != 20 || st.Wake.Avg != 35 || st.Notify.Avg != 25 || st.SubCopy.Min != 105 {
		t.Errorf("cell stats %+v", st)
	}
	// The stages of a traced publish and the subscribers' steps.
	c = DP3Cell{Path: PathShared, Publish: []int64{10, 10}, Forms: []int64{5, 6}, Queued: []int64{7, 8}, Woken: []int64{9, 10},
		Wake: [][]int64{{20, 30}, {40, 50}}, Taken: [][]int64{{22, 33}, {41, 55}},
		Ptr: [][]int64{{25, 35}, {45, 60}}, Check: [][]int64{{5, 5}, {5, 10}}}
	c.summarize()
	st = c.Stats
	for _, x := range []struct {
		name      string
		got, want int64
	}{{"forms", st.Forms.Avg, 5}, {"enqueue", st.Enqueue.Avg, 2}, {"wake call", st.WakeCall.Avg, 2}, {"first awake", st.WakeFirst.Avg, 25},
		{"last awake", st.WakeLast.Avg, 45}, {"take avg", st.TakeAvg.Avg, 2}, {"take max", st.TakeMax.Avg, 3}, {"DevicePtr", st.PtrAvg.Avg, 3},
		{"after the copy", st.AfterCopy.Avg, 47}, {"delivery", st.Delivery.Avg, 52}} {
		if x.got != x.want {
			t.Errorf("%s: %d, want %d", x.name, x.got, x.want)
		}
	}
	if got := minOver([][]int64{{1, 9}, {4, 2}}); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("minOver %v", got)
	}
}

func TestFormat(t *testing.T) {
	if got := gbps(64<<20, 1_250_000); got != "53.7" {
		t.Errorf("gbps %q", got)
	}
}

// fakeResult is a complete result with made-up numbers shaped like an H100
// run: data path 1 within 1% of the bare copy, Pinned-Shared flat except at
// 4 MiB (+10% at N=8), the baseline 13× slower at N=8, 64 MiB.
func fakeResult() *Result {
	sizes, subs := []int{4 << 20, 64 << 20, 1 << 30}, []int{1, 2, 4, 8}
	r := &Result{
		Machine: Machine{GPU: "NVIDIA H100 80GB HBM3", PCIBusID: "00000000:00:05.0", GPUMemory: 85 << 30, Compute: "9.0", SMs: 132, VMM: true,
			NvidiaDriver: "580.159.04", CUDADriver: "13.0", CPU: "Intel(R) Xeon(R) Platinum 8480+", Cores: 16, Kernel: "6.8.0", OS: "Ubuntu 24.04 LTS",
			ShmSize: 128 << 30, Go: "go1.26.8 linux/amd64", Date: "2026-11-23T10:00:00Z"},
		Settings: Settings{Sizes: sizes, Subs: subs, Iters: 50, Warmup: 3, DataPaths: []int{1, 3}, Domain: 90, Prefix: "rgaps-g4242",
			PoolSize: 5 << 29, QoS: "reliable, keep_last(10), volatile",
			CellIters: map[string]int{"4194304": 50, "67108864": 20, "1073741824": 5}, CellWarm: map[string]int{"4194304": 3, "67108864": 3, "1073741824": 1}},
		Setup:   Setup{RegisterPool: 91e6, GPUTopic: 512e6, ChildInitMax: 1_050e6, Children: 8},
		Checks:  Checks{DP1Messages: 82, DP3Kernels: 1_230, Patterns: 6},
		Elapsed: 41_700e6,
	}
	sm := func(p50, p99 int64) Summary {
		return Summary{N: 50, Avg: (p50*9 + p99) / 10, P50: p50, P99: p99, Min: p50 * 9 / 10, Max: p99}
	}
	for k, size := range sizes {
		it, w := ItersFor(size, 50, 3)
		bw := []int64{85_000, 1_240_000, 19_600_000}[k] // ns at ~50 GB/s
		row := DP1Row{Size: size, Iters: it, Warmup: w}
		row.Stats = DP1Stats{
			Loan: sm(700, 1_900), Copy: sm(bw*1005/1000, bw*11/10), Publish: sm(1_600, 4_200),
			Total: sm(bw*1005/1000+2_300, bw*11/10+6_000), Bare: sm(bw, bw*108/100),
			PageCopy: sm(bw*4, bw*5), PageUDS: sm(bw*9, bw*11), PageTotal: sm(bw*13, bw*16),
		}
		r.DP1 = append(r.DP1, row)
		for _, n := range subs {
			h2d := bw * 101 / 100
			flat := int64(1000)
			if size == 4<<20 && n == 8 {
				flat = 1100
			}
			del := (h2d + 9_000) * flat / 1000
			c := DP3Cell{Path: PathShared, Size: size, Subs: n, Iters: it, Warmup: w, Forms: make([]int64, it)}
			c.Stats = DP3Stats{Loan: sm(800, 2_000), Publish: sm(h2d+3_000, h2d*11/10+3_000), Wake: sm(h2d+6_000, h2d*11/10+12_000),
				Notify: sm(4_000+int64(n)*500, 12_000), Delivery: sm(del, del*11/10), Check: sm(30_000, 36_000),
				Forms: sm(h2d, h2d*11/10), Enqueue: sm(1_000, 3_000), WakeCall: sm(1_000*int64(n), 3_000*int64(n)), WakeFirst: sm(h2d+5_000, h2d+9_000),
				WakeLast: sm(h2d+5_000+int64(n)*900, h2d+12_000), TakeAvg: sm(700, 2_000), TakeMax: sm(900, 3_000), PtrAvg: sm(400, 900), AfterCopy: sm(del-h2d, del-h2d+5_000),
				Idle: sm(300_000, 400_000), Woke: sm(5_000+int64(n)*900, 12_000)}
			r.DP3 = append(r.DP3, c)
			r.Floors = append(r.Floors, FloorCell{Size: size, Subs: n, Iters: it, Warmup: w, Pause: 300_000,
				First: sm(9_000, 20_000), Last: sm(9_000+int64(n)*800, 30_000)})
			own := bw * 5 * int64(10+(n-1)*3) / 10 // pageable ≈ 10 GB/s alone, contended beyond
			b := DP3Cell{Path: PathIceoryx, Size: size, Subs: n, Iters: it, Warmup: w}
			b.Stats = DP3Stats{Loan: sm(800, 2_000), Publish: sm(2_500, 6_000), Wake: sm(6_000, 14_000), Notify: sm(3_500, 9_000),
				SubCopy: sm(own, own*12/10), Delivery: sm(own+own/20, own*13/10), Check: sm(30_000, 36_000)}
			r.DP3 = append(r.DP3, b)
		}
	}
	r.Verdicts = r.Goals()
	return r
}

func TestMarkdownFromFakeNumbers(t *testing.T) {
	r := fakeResult()
	var b bytes.Buffer
	r.WriteMarkdown(&b)
	md := b.String()
	tables := benchtest.MarkdownTables(t, md)
	if len(tables) != 7 {
		t.Fatalf("%d tables, want 7:\n%s", len(tables), md)
	}
	for i, want := range []int{3, 3, 3, 12, 12, 12, 12} {
		if len(tables[i]) != want {
			t.Errorf("table %d has %d rows, want %d", i, len(tables[i]), want)
		}
	}
	for _, want := range []string{
		"NVIDIA H100 80GB HBM3", "PCI 00000000:00:05.0", "NVIDIA driver 580.159.04", "CUDA driver API 13.0", "Intel(R) Xeon(R) Platinum 8480+, 16 cores",
		"Linux 6.8.0", "4 MiB 50+3, 64 MiB 20+3, 1 GiB 5+1", "1 / 224 / 1", "1 / 47,905 / 1", "451 + 1,184", "85,806 + 208,318",
		"216 / 6 → 223", "43,677 / 11 → 43,689", "10 / 2,238 → 2,248", "12 / 382,018 → 382,030",
		"T2 vs bare (goal ≥ 95%)", "99.5% met", "where the delivery time goes", "delivery − H2D copy (avg / p99)",
		"against the futex floor of the same subscriber processes", "| 4 MiB | 8 | 300 | 12.2 / 12.2 | 10.1 / 16.9 | 15.4 / 30.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	g := r.Goals()
	if len(g) != 3 || g[0].Status != "met" || g[1].Status != "NOT met" || g[2].Status != "met" {
		t.Fatalf("goals %+v", g)
	}
	if !strings.Contains(g[1].Detail, "4 MiB 1.100") || !strings.Contains(g[1].Detail, "of which the H2D copy") || !strings.Contains(g[2].Detail, "Other sizes: 4 MiB N=8") ||
		!strings.Contains(g[1].Detail, "4 MiB: the last of N=8 awake 5.04 µs later than the only one at N=1") {
		t.Errorf("goal details: %q / %q", g[1].Detail, g[2].Detail)
	}
	for _, l := range []string{"**met** — 4 MiB 99.5%", "**NOT met** — 4 MiB 1.100", "≥ 8× at N=8, 64 MiB: **met**"} {
		if !strings.Contains(md, l) {
			t.Errorf("report lacks goal text %q", l)
		}
	}
	if testing.Verbose() {
		t.Logf("report from made-up numbers:\n%s", md)
	}
}

func TestGoalsNotMeasured(t *testing.T) {
	r := fakeResult()
	r.DP1 = nil
	var cells []DP3Cell
	for _, c := range r.DP3 {
		if c.Subs <= 2 && c.Size != 64<<20 {
			cells = append(cells, c)
		}
	}
	r.DP3 = cells
	r.Settings.Subs = []int{1, 2}
	g := r.Goals()
	for i, want := range []string{"not measured", "not measured", "not measured"} {
		if g[i].Status != want {
			t.Errorf("goal %d: %q, want %q (%s)", i, g[i].Status, want, g[i].Detail)
		}
	}
	if !strings.Contains(g[1].Detail, "measured N=2/N=1 only") {
		t.Errorf("flatness detail %q", g[1].Detail)
	}
	var b bytes.Buffer
	r.WriteMarkdown(&b)
	if n := len(benchtest.MarkdownTables(t, b.String())); n != 4 {
		t.Errorf("%d tables without data path 1, want 4 (Pinned-Shared, its stages, the futex floor, Pageable-Iceoryx)", n)
	}
}
