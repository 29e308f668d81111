package benche2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bench/iceoryx"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
)

// Options configure a run.
type Options struct {
	Sizes  []int64 // default 4 MiB, 64 MiB, 1 GiB
	Ns     []int   // default 1, 2, 4, 8
	Rounds int     // timed rounds per cell; 0: DefaultRounds (fewer for big sizes, see RoundsFor)
	Warmup int     // untimed rounds per cell; 0: DefaultWarmup, -1: none
	Wire   string  // "shm" (default on one host) or "tcp" (default, and the only choice, with Netns)
	Netns  bool    // two network namespaces (root needed)
	// HostOnly forces the host-memory fallback even where a GPU exists.
	HostOnly bool
	// Exe, ChildArgs and ChildEnv start the child processes (Env); Exe
	// "" : this executable.
	Exe       string
	ChildArgs []string
	ChildEnv  []string
	// Systems overrides the systems run (tests); nil: the baseline, the
	// lower bound and, when registered, Ours.
	Systems []func() System
	// Progress, unless nil, receives a progress bar (a terminal's stderr).
	Progress io.Writer
	// PeerTimeout bounds each wait for a child (default 5 minutes).
	PeerTimeout time.Duration
}

// Defaults.
const (
	DefaultRounds = 20
	DefaultWarmup = 2
)

// RoundsFor is the number of timed rounds for size: rounds up to 64 MiB,
// then a quarter (at least 5) up to 256 MiB, a tenth (at least 3) beyond,
// never more than rounds, so a run at 1 GiB stays within minutes.
func RoundsFor(size int64, rounds int) int {
	switch {
	case size <= 64<<20:
		return rounds
	case size <= 256<<20:
		return min(rounds, max(5, rounds/4))
	}
	return min(rounds, max(3, rounds/10))
}

// Result is a run.
type Result struct {
	Machine Machine       `json:"machine"`
	Setup   Setup         `json:"setup"`
	Systems []SystemRun   `json:"systems"`
	Missing []string      `json:"missing,omitempty"` // what was not measured, and why
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Setup is what the run measured on.
type Setup struct {
	Sizes   []int64 `json:"sizes"`
	Ns      []int   `json:"ns"`
	Rounds  int     `json:"rounds"`
	Warmup  int     `json:"warmup"`
	GPU     bool    `json:"gpu"`
	DeviceA int     `json:"device_a"`
	DeviceB int     `json:"device_b"`
	Netns   bool    `json:"netns"`
	AddrA   string  `json:"addr_a"`
	AddrB   string  `json:"addr_b"`
	Wire    string  `json:"wire"`
	IoxLib  string  `json:"iceoryx_lib,omitempty"`
}

// SystemRun is one system's results.
type SystemRun struct {
	Name   string   `json:"name"`
	Stages []string `json:"stages"`
	Cells  []Cell   `json:"cells"`
	// Err is why the system stopped ("" : every cell measured).
	Err string `json:"error,omitempty"`
}

// Cell is one (size, n) of one system: every timed round's values.
type Cell struct {
	Size   int64              `json:"size"`
	N      int                `json:"n"`
	PerSub [][]int64          `json:"per_sub_ns"` // [round][subscriber]
	Stages map[string][]int64 `json:"stages_ns"`  // stage → per round
	// Summaries of PerSub (every subscriber of every round: the
	// thesis' per-subscriber average) and of the slowest subscriber of
	// each round.
	Latency Summary            `json:"latency"`
	Slowest Summary            `json:"slowest"`
	Stage   map[string]Summary `json:"stage"`
}

// Run measures every system over sizes × N × rounds.
func Run(ctx context.Context, o Options) (*Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	env, cleanup, err := newEnv(ctx, o)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res := &Result{
		Machine: describe(env),
		Setup: Setup{Sizes: o.Sizes, Ns: o.Ns, Rounds: o.Rounds, Warmup: o.Warmup, GPU: env.GPU,
			DeviceA: env.DeviceA, DeviceB: env.DeviceB, Netns: env.Netns, AddrA: env.A.Addr, AddrB: env.B.Addr,
			Wire: env.Wire, IoxLib: env.IoxLibDir},
	}
	systems := o.Systems
	if systems == nil {
		systems = []func() System{NewBaseline, NewLowerBound}
		if k := bridge.AutoRails("fabric:"+env.Wire, ring.WriteImm, runtime.NumCPU()); k > 1 {
			systems = append(systems, NewLowerBoundRails(k))
		}
		if Ours != nil {
			systems = append(systems, Ours)
		} else {
			res.Missing = append(res.Missing, "ours (the rgaps bridge): no System is registered in benche2e.Ours in this build, so this run shows no numbers for it")
		}
	}
	bar := newProgress(o.Progress, len(systems)*totalRounds(o))
	defer bar.finish()
	// An interrupt kills the children, so a round waiting on one ends now
	// rather than after PeerTimeout; the system then closes as after any
	// failure.
	defer context.AfterFunc(ctx, killAll)()
	for _, mk := range systems {
		sys := mk()
		run := runSystem(env, o, sys, bar)
		res.Systems = append(res.Systems, run)
		if err := ctx.Err(); err != nil {
			if run.Err != "" {
				return nil, fmt.Errorf("%w (%s: %s)", err, run.Name, run.Err)
			}
			return nil, err
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// newEnv makes the run's environment: its work directory, the GPUs or the
// fallback, the namespaces, iceoryx's whereabouts. cleanup undoes it.
func newEnv(ctx context.Context, o Options) (env *Env, cleanup func(), err error) {
	work, err := os.MkdirTemp("", "rgaps-e2e-")
	if err != nil {
		return nil, nil, err
	}
	env = &Env{
		Ctx: ctx, Sizes: o.Sizes, Ns: o.Ns, Rounds: o.Rounds, Warmup: o.Warmup,
		Wire: o.Wire, WorkDir: work, Exe: o.Exe, ChildArgs: o.ChildArgs,
		ChildEnv: slices.Clone(o.ChildEnv), PeerTimeout: o.PeerTimeout,
		A: Host{Name: "A", Addr: "127.0.0.1"}, B: Host{Name: "B", Addr: "127.0.0.1"},
	}
	if !o.HostOnly {
		if n := haveGPUs(); n > 0 {
			env.GPU = true
			if n > 1 {
				env.DeviceB = 1
			}
		}
	}
	cleanup = func() { os.RemoveAll(work) }
	if o.Netns {
		ns, err := newNetns()
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		cleanup = func() {
			ns.Close()
			os.RemoveAll(work)
		}
		env.Netns = true
		env.A = Host{Name: "A", Netns: ns.NS[0], Addr: ns.Addr[0]}
		env.B = Host{Name: "B", Netns: ns.NS[1], Addr: ns.Addr[1]}
	}
	if p, err := iceoryx.FindRouDi(); err == nil {
		env.IoxRouDi = p
	}
	env.IoxLibDir = iceoryx.RouDiLibDir()
	if env.IoxLibDir != "" {
		env.ChildEnv = append(env.ChildEnv, "RGAPS_IOX_LIB="+env.IoxLibDir)
	}
	return env, cleanup, nil
}

func (o Options) withDefaults() (Options, error) {
	if len(o.Sizes) == 0 {
		o.Sizes = []int64{4 << 20, 64 << 20, 1 << 30}
	}
	if len(o.Ns) == 0 {
		o.Ns = []int{1, 2, 4, 8}
	}
	o.Sizes, o.Ns = slices.Clone(o.Sizes), slices.Clone(o.Ns)
	slices.Sort(o.Sizes)
	slices.Sort(o.Ns)
	o.Sizes, o.Ns = slices.Compact(o.Sizes), slices.Compact(o.Ns)
	if o.Sizes[0] < 64 || o.Sizes[len(o.Sizes)-1] > 1<<32-1-hdrSize-iceoryx.ChunkOverhead {
		return o, fmt.Errorf("sizes from 64 B to 4 GiB - 256 B")
	}
	if o.Ns[0] < 1 || o.Ns[len(o.Ns)-1] > 64 {
		return o, fmt.Errorf("subscriber counts from 1 to 64")
	}
	if o.Rounds == 0 {
		o.Rounds = DefaultRounds
	}
	switch {
	case o.Warmup == 0:
		o.Warmup = DefaultWarmup
	case o.Warmup < 0:
		o.Warmup = 0
	}
	if o.Rounds < 1 {
		return o, fmt.Errorf("rounds must be positive")
	}
	switch o.Wire {
	case "":
		o.Wire = "shm" // one host: the provider for it
		if o.Netns {
			o.Wire = "tcp"
		}
	case "tcp":
	case "shm":
		if o.Netns {
			return o, fmt.Errorf("-wire shm needs one host: not with -netns")
		}
	default:
		return o, fmt.Errorf("wire %q: tcp or shm", o.Wire)
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, err
		}
		o.Exe = exe
		if o.ChildArgs == nil {
			o.ChildArgs = []string{ChildCommand}
		}
	}
	if o.PeerTimeout == 0 {
		o.PeerTimeout = 5 * time.Minute
	}
	return o, nil
}

func totalRounds(o Options) int {
	t := 0
	for _, s := range o.Sizes {
		t += RoundsFor(s, o.Rounds) + o.Warmup
	}
	return t * len(o.Ns)
}

// runSystem runs one system over every cell; an error ends it (the cells
// measured so far are kept) and is recorded.
func runSystem(env *Env, o Options, sys System, bar *progress) (run SystemRun) {
	run.Name = sys.Name()
	if so, ok := sys.(StageOrder); ok {
		run.Stages = so.StageOrder()
	}
	skipped := totalRounds(o)
	defer func() { bar.add(skipped) }() // what a failure left undone
	err := sys.Start(env)
	for _, n := range env.Ns {
		for _, size := range env.Sizes {
			if err != nil {
				break
			}
			rounds := RoundsFor(size, o.Rounds)
			cell := Cell{Size: size, N: n, Stages: map[string][]int64{}}
			for i := range o.Warmup + rounds {
				if err = env.Ctx.Err(); err != nil {
					break
				}
				bar.show(fmt.Sprintf("%s %s N=%d", run.Name, fmtSize(size), n))
				var r Round
				if r, err = sys.Round(size, n); err != nil {
					err = fmt.Errorf("%s N=%d round %d: %w", fmtSize(size), n, i+1, err)
					break
				}
				skipped--
				bar.add(1)
				if len(r.PerSub) != n {
					err = fmt.Errorf("%s N=%d: round returned %d subscriber times, want %d", fmtSize(size), n, len(r.PerSub), n)
					break
				}
				if i < o.Warmup {
					continue
				}
				ps := make([]int64, n)
				for k, d := range r.PerSub {
					ps[k] = int64(d)
				}
				cell.PerSub = append(cell.PerSub, ps)
				for st, d := range r.Stages {
					cell.Stages[st] = append(cell.Stages[st], int64(d))
				}
			}
			if err == nil {
				cell.summarize()
				run.Cells = append(run.Cells, cell)
			}
		}
	}
	if cerr := sys.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("closing: %w", cerr)
	}
	if err != nil {
		run.Err = err.Error()
	}
	// Stages the system did not order: alphabetically after those it did.
	seen := map[string]bool{}
	for _, s := range run.Stages {
		seen[s] = true
	}
	var extra []string
	for _, c := range run.Cells {
		for s := range c.Stages {
			if !seen[s] {
				seen[s] = true
				extra = append(extra, s)
			}
		}
	}
	sort.Strings(extra)
	run.Stages = append(run.Stages, extra...)
	return run
}

func (c *Cell) summarize() {
	var all, slowest []int64
	for _, r := range c.PerSub {
		all = append(all, r...)
		slowest = append(slowest, slices.Max(r))
	}
	c.Latency, c.Slowest = summarize(all), summarize(slowest)
	c.Stage = map[string]Summary{}
	for s, v := range c.Stages {
		c.Stage[s] = summarize(v)
	}
}

// Failed lists the systems that did not finish, with why.
func (r *Result) Failed() error {
	var errs []error
	for _, s := range r.Systems {
		if s.Err != "" {
			errs = append(errs, fmt.Errorf("%s: %s", s.Name, s.Err))
		}
	}
	return errors.Join(errs...)
}

// System returns the run of the system named name, or nil.
func (r *Result) System(name string) *SystemRun {
	for i := range r.Systems {
		if r.Systems[i].Name == name {
			return &r.Systems[i]
		}
	}
	return nil
}

// Cell returns the cell (size, n), or nil.
func (s *SystemRun) Cell(size int64, n int) *Cell {
	if s == nil {
		return nil
	}
	for i := range s.Cells {
		if s.Cells[i].Size == size && s.Cells[i].N == n {
			return &s.Cells[i]
		}
	}
	return nil
}

func fmtSize(n int64) string { return benchutil.FormatSize(int(n)) }
