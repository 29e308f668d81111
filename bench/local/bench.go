// Package benchlocal is the measurement logic of `rgaps-bench local`: the cost of
// a pool allocation (TLSF alone and through the engine), the latency from
// Publish to the wakeup of subscriber processes, and the thesis' baseline of
// copying the same bytes to each subscriber through a Unix domain socket,
// all in one run, printed as Markdown tables.
//
// Subscribers are separate processes: re-executions of a binary that runs
// ChildMain (Options.Child says how to start one). The publisher paces the
// messages: it sends the next one only after every subscriber acknowledged
// the previous, over a control socket that is not part of the timed
// interval. Timestamps are wall-clock (time.Now().UnixNano()), comparable
// across processes on one host.
package benchlocal

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// The paths a cell measures.
const (
	PathRgaps = "rgaps" // zero-copy: Loan, Publish; subscribers Wait, Take
	PathUDS   = "uds"   // baseline: the message written to each subscriber's socket
	// PathFutex is the floor: the subscriber processes sleep on one futex
	// word and one FUTEX_WAKE wakes them all (floor.go). It carries no
	// payload, so it runs once per N (with the first size).
	PathFutex = "futex"
)

// Defaults of Options (and of the CLI's flags).
var (
	DefaultSizes      = []int{64, 4 << 10, 1 << 20, 4 << 20, 64 << 20}
	DefaultSubs       = []int{1, 2, 4, 8}
	DefaultAllocSizes = []int{64, 4 << 10, 1 << 20, 64 << 20}
)

const (
	DefaultIters        = 300
	DefaultWarmup       = 50
	DefaultAllocSamples = 20000
	// BigSize: cells of messages larger than this run a tenth of the
	// iterations (at least 10) and of the warm-up (at least 2).
	BigSize = 16 << 20
	// MaxSubs bounds the subscriber processes of one run.
	MaxSubs = 256
	// MaxIters bounds iterations, warm-up and samples (memory: 8 bytes each
	// per subscriber).
	MaxIters = 10_000_000
)

// Options configure a run. Zero values take the defaults above.
type Options struct {
	Sizes  []int // message sizes of the wakeup cells (at least MinSize)
	Subs   []int // subscriber process counts
	Iters  int   // timed messages per cell
	Warmup int   // untimed messages before them (negative: none)

	AllocSizes   []int // sizes of the allocation measurement
	AllocSamples int   // timed pairs per size

	// NoSettle sends each futex and rgaps message right after the previous
	// one's acknowledgements, as runs before 2026-11-28 did, instead of
	// once every subscriber sleeps (a subscriber then may not be asleep
	// yet, or only just, which makes its wake-up cheaper than from a
	// longer sleep). With BusyPoll there is no waiting either.
	NoSettle bool
	// BusyPoll > 0 makes subscribers spin that long before sleeping in the
	// kernel (Config.BusyPoll); 0 means no spinning, whatever
	// RGAPS_BUSY_POLL says.
	BusyPoll time.Duration
	Domain   uint32
	// Prefix is the shared-memory prefix. "" (the default) means a private
	// one for this run ("<RGAPS_SHM_PREFIX or rgaps>-b<pid>"), every segment
	// of which is removed at the end, graph included: the benchmark never
	// shows up in, nor disturbs, the user's ROS graph.
	Prefix string

	// Child returns the command that starts one subscriber process, which
	// must run ChildMain. nil: this executable with the argument
	// ChildCommand.
	Child func() *exec.Cmd
	// Progress receives one line per step; nil is silent.
	Progress io.Writer

	paths []string // tests: the paths to run (default both)
}

// Result is everything a run measured (also what -json writes).
type Result struct {
	Machine  Machine           `json:"machine"`
	Settings Settings          `json:"settings"`
	Alloc    []AllocRow        `json:"alloc"`
	Cells    []Cell            `json:"cells"`
	Elapsed  benchutil.Seconds `json:"elapsed_s"`
}

// Settings are the options in force.
type Settings struct {
	Sizes        []int         `json:"sizes"`
	Subs         []int         `json:"subs"`
	Iters        int           `json:"iters"`
	Warmup       int           `json:"warmup"`
	AllocSizes   []int         `json:"alloc_sizes"`
	AllocSamples int           `json:"alloc_samples"`
	Floor        string        `json:"floor_segment"` // PathFutex's
	BusyPoll     time.Duration `json:"busy_poll_ns"`  // as the subscribers' engine reports it
	Settle       bool          `json:"settle"`        // messages sent once every subscriber slept
	Domain       uint32        `json:"domain"`
	Prefix       string        `json:"prefix"`
	Topic        string        `json:"topic"`
	PoolSize     uint64        `json:"pool_size"`
	QoS          string        `json:"qos"`
}

// AllocRow is one size of the allocation measurement, in ns.
type AllocRow struct {
	Size    int   `json:"size"`
	Samples int   `json:"samples"`
	TLSFP50 int64 `json:"tlsf_p50_ns"` // tlsf.MeasureAllocFree: Alloc+Free
	TLSFP99 int64 `json:"tlsf_p99_ns"`
	LoanP50 int64 `json:"loan_p50_ns"` // Publisher.Loan + Loan.Discard
	LoanP99 int64 `json:"loan_p99_ns"`
	LoanMax int64 `json:"loan_max_ns"`
	// LoanGCs: garbage collections that ran during the timed pairs;
	// LoanAllocs: Go heap allocations per pair (runtime.MemStats).
	LoanGCs    uint32  `json:"loan_gcs"`
	LoanAllocs float64 `json:"loan_allocs_per_pair"`
}

// Cell is one (path, size, subscriber count) of the wakeup measurement
// (PathFutex: size 0 for the floor, the rgaps cell's size for the floor
// paused as long as it idled).
type Cell struct {
	Path   string `json:"path"`
	Size   int    `json:"size"`
	Subs   int    `json:"subs"`
	Iters  int    `json:"iters"`
	Warmup int    `json:"warmup"`
	// Lat[s][i] is subscriber s's latency of timed message i in ns: from t0
	// to the sample taken (rgaps), the message read whole (uds) or the
	// wait returned (futex).
	Lat [][]int64 `json:"lat_ns"`
	// Wake[s][i] (rgaps): from t0 until subscriber s's Wait returned.
	Wake [][]int64 `json:"wake_ns,omitempty"`
	// Send[i] is the publisher's side of message i in ns: the Publish call
	// (rgaps), the writes to every socket (uds), the wake call (futex).
	Send []int64 `json:"send_ns"`
	// Idle[i] (rgaps): from the previous message's last acknowledgement
	// (or the cell's start) to t0: the publisher's loan and fill, and the
	// wait for every subscriber to sleep. The subscribers sleep about that
	// long before the message wakes them.
	Idle []int64 `json:"idle_ns,omitempty"`
	// Pause (futex cells of a size, Size > 0): how long the waker waited
	// after the acknowledgements before each wake (once every subscriber
	// slept): the rgaps cell's IdleP50 at that size and N, so that the
	// floor's sleepers sleep as long as rgaps' did.
	Pause int64 `json:"pause_ns,omitempty"`
	// Queued[i], Woken[i] (rgaps): when Publish had queued the sample and
	// released the lock, and when its wake-up call returned, from the
	// start of the call (zerocopy.PublishTrace).
	Queued []int64 `json:"queued_ns,omitempty"`
	Woken  []int64 `json:"woken_ns,omitempty"`
	// Unsettled counts messages sent before every subscriber slept
	// (waited for up to a second; rgaps and futex).
	Unsettled int `json:"unsettled,omitempty"`
	// Received[s] counts every message subscriber s got, warm-up included;
	// Bad[s] those whose bytes were wrong.
	Received []int  `json:"received"`
	Bad      []int  `json:"bad"`
	FirstBad string `json:"first_bad,omitempty"`
	Stats    Stats  `json:"stats"`
}

// Stats summarise a cell, in ns.
type Stats struct {
	P50 int64 `json:"p50_ns"` // over every subscriber's samples
	P99 int64 `json:"p99_ns"`
	Max int64 `json:"max_ns"`
	// AllP50, AllP99: of the per-message maximum over subscribers (the
	// "every subscriber has it" latency).
	AllP50  int64 `json:"all_p50_ns"`
	AllP99  int64 `json:"all_p99_ns"`
	SendP50 int64 `json:"send_p50_ns"`
	// rgaps stages, p50: subscribers' Wait returned (over every
	// subscriber's samples); Publish queued; its wake call returned.
	WakeP50   int64 `json:"wake_p50_ns,omitempty"`
	QueuedP50 int64 `json:"queued_p50_ns,omitempty"`
	WokenP50  int64 `json:"woken_p50_ns,omitempty"`
	IdleP50   int64 `json:"idle_p50_ns,omitempty"`
}

// ItersFor is the (timed, warm-up) message count of a cell of size bytes.
func ItersFor(size, iters, warmup int) (int, int) {
	if size <= BigSize {
		return iters, warmup
	}
	i := iters / 10
	if i < 10 {
		i = min(iters, 10)
	}
	w := warmup / 10
	if w < 2 {
		w = min(warmup, 2)
	}
	return i, w
}

func (o Options) withDefaults() (Options, error) {
	if len(o.Sizes) == 0 {
		o.Sizes = DefaultSizes
	}
	if len(o.Subs) == 0 {
		o.Subs = DefaultSubs
	}
	if len(o.AllocSizes) == 0 {
		o.AllocSizes = DefaultAllocSizes
	}
	if o.Iters == 0 {
		o.Iters = DefaultIters
	}
	if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	} else if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.AllocSamples == 0 {
		o.AllocSamples = DefaultAllocSamples
	}
	o.Sizes, o.Subs, o.AllocSizes = slices.Clone(o.Sizes), slices.Clone(o.Subs), slices.Clone(o.AllocSizes)
	for _, s := range o.Sizes {
		if s < MinSize || s > 1<<32 {
			return o, fmt.Errorf("message size %d outside [%d B, 4 GiB]", s, MinSize)
		}
	}
	for _, s := range o.AllocSizes {
		if s <= 0 || s > 1<<32 {
			return o, fmt.Errorf("allocation size %d outside [1 B, 4 GiB]", s)
		}
	}
	for _, n := range o.Subs {
		if n < 1 || n > MaxSubs {
			return o, fmt.Errorf("subscriber count %d outside [1, %d]", n, MaxSubs)
		}
	}
	if o.Iters < 1 || o.Iters > MaxIters || o.Warmup > MaxIters || o.AllocSamples < 1 || o.AllocSamples > MaxIters {
		return o, fmt.Errorf("iterations %d, warm-up %d, allocation samples %d: need 1 to %d", o.Iters, o.Warmup, o.AllocSamples, MaxIters)
	}
	if len(o.paths) == 0 {
		o.paths = []string{PathFutex, PathRgaps, PathUDS}
	}
	if o.BusyPoll < 0 {
		return o, fmt.Errorf("busy-poll %v is negative", o.BusyPoll)
	}
	if o.Prefix == "" {
		o.Prefix = benchutil.PrivatePrefix("b")
	}
	if o.Child == nil {
		child, err := benchutil.SelfCommand(ChildCommand)
		if err != nil {
			return o, err
		}
		o.Child = child
	}
	return o, nil
}

func (o Options) private() bool { return o.Prefix == "" }

// Run measures everything once. It stops early, cleaning up, when ctx is
// cancelled (then it returns ctx's error). Whatever happens, every child
// process is gone and every segment of a private prefix removed on return.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	start := time.Now()
	private := opts.private()
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", zerocopy.ErrInvalid, err)
	}
	h := &harness{o: o, ctx: ctx, private: private, procs: &benchutil.Procs{
		Ctx: ctx, Child: o.Child, Name: "bench", PeerTimeout: peerTimeout, MaxFrame: maxFrame,
	}}
	defer func() { err = benchutil.Finish(ctx, err, h.close) }()
	res = &Result{Machine: machineInfo(), Settings: Settings{
		Sizes: o.Sizes, Subs: o.Subs, Iters: o.Iters, Warmup: o.Warmup,
		AllocSizes: o.AllocSizes, AllocSamples: o.AllocSamples,
		BusyPoll: o.BusyPoll, Settle: !o.NoSettle && o.BusyPoll == 0, Domain: o.Domain, Prefix: o.Prefix,
		QoS: "reliable, keep_last(10), volatile",
	}}
	if err := h.open(); err != nil {
		return nil, err
	}
	res.Settings.Topic, res.Settings.PoolSize, res.Settings.Floor = h.topic, h.poolSize, h.floorName
	if res.Alloc, err = h.measureAlloc(); err != nil {
		return nil, err
	}
	if res.Settings.BusyPoll, err = h.spawnAll(slices.Max(o.Subs)); err != nil {
		return nil, err
	}
	total := 0
	for _, path := range o.paths {
		if path == PathFutex {
			total += len(o.Subs)
		} else {
			total += len(o.Sizes) * len(o.Subs)
		}
	}
	matched := slices.Contains(o.paths, PathFutex) && slices.Contains(o.paths, PathRgaps)
	if matched {
		total += len(o.Sizes) * len(o.Subs) // a floor per rgaps cell, paused as long
	}
	k := 0
	for si, size := range o.Sizes {
		for _, n := range o.Subs {
			for _, path := range o.paths {
				csize, what := size, benchutil.FormatSize(size)
				iters, warmup := ItersFor(size, o.Iters, o.Warmup)
				if path == PathFutex {
					if si > 0 {
						continue // no payload: once per N
					}
					csize, what, iters, warmup = 0, "(no payload)", o.Iters, o.Warmup
				}
				k++
				h.progress("[%d/%d] %s %s N=%d: %d+%d messages", k, total, path, what, n, warmup, iters)
				c, err := h.cell(path, csize, n, iters, warmup, 0)
				if err != nil {
					return nil, fmt.Errorf("%s %s N=%d: %w", path, what, n, err)
				}
				res.Cells = append(res.Cells, c)
				if path != PathRgaps || !matched {
					continue
				}
				// The floor of the same processes sleeping as long as
				// this cell's did before each wake.
				k++
				pause := time.Duration(c.Stats.IdleP50)
				h.progress("[%d/%d] %s after a pause of %v (as %s %s) N=%d: %d+%d messages", k, total, PathFutex, pause.Round(time.Microsecond), path, what, n, warmup, iters)
				f, err := h.cell(PathFutex, size, n, iters, warmup, pause)
				if err != nil {
					return nil, fmt.Errorf("%s paused as %s N=%d: %w", PathFutex, what, n, err)
				}
				res.Cells = append(res.Cells, f)
			}
		}
	}
	res.Elapsed = benchutil.Seconds(time.Since(start))
	return res, nil
}
