// Package benchgpu is `rgaps-bench gpu`: the thesis' GPU data-path
// measurements (RGAPS chapter 4, Tables 4.2–4.5) reproduced on this host,
// rgaps beside the thesis' baselines, in one run.
//
// Data path 1 (device → host, Tables 4.2/4.3) runs in the publisher
// process: "Pinned-SHM" is Publisher.Loan on a host topic (T1), a D2H copy
// from device memory into the loan, whose pool the engine registered with
// CUDA (T2), and Publish to one host subscriber process (T3); beside it, in
// the same run, a bare D2H copy into registered mmap'd memory (the goal:
// T2 within 5% of it) and the "Pageable-UDS" baseline: a D2H copy into
// pageable memory (T1) and a Unix-domain-socket send to another process
// until it holds the whole message (T2).
//
// Data path 3 (host → GPU of N subscriber processes, Tables 4.4/4.5)
// starts from a message in host memory of the publisher. "Pinned-Shared"
// publishes it on a GPU topic: the engine makes one H2D copy into the
// topic's shared GPU pool and every subscriber gets a device pointer into
// it. The "Pageable-Iceoryx" baseline publishes it on a host topic
// (zero-copy host delivery, the pool never registered with CUDA) and every
// subscriber makes its own H2D copy into private device memory,
// concurrently. The latency is until every subscriber holds a device
// pointer to complete data. Then, outside the timed interval and only once
// every subscriber of the message holds its pointer, each runs a checksum
// kernel on it, whose value the parent checks against cuda.ChecksumHost of
// the published bytes (a mismatch fails the run).
//
// Subscribers are separate processes, re-executions of a binary that runs
// ChildMain (Options.Child). Messages are paced: the next goes out after
// every subscriber acknowledged the last, over a control socket that is
// never inside a timed interval.
package benchgpu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// ChildCommand is the rgaps command that runs ChildMain.
const ChildCommand = "bench-gpu-child"

// The paths of data path 3.
const (
	PathShared  = "pinned-shared"    // rgaps: one H2D into the shared GPU pool
	PathIceoryx = "pageable-iceoryx" // baseline: each subscriber's own pageable H2D
)

// Defaults of Options and of the CLI's flags.
var (
	DefaultSizes = []int{4 << 20, 64 << 20, 1 << 30}
	DefaultSubs  = []int{1, 2, 4, 8}
)

const (
	DefaultIters  = 50
	DefaultWarmup = 3
	DefaultDomain = 90
	// MinSize is the smallest message size (data path 3 stamps three
	// 8-byte words into a message).
	MinSize = 4 << 10
	// MaxSize is the largest message size.
	MaxSize = 4 << 30
	// MaxSubs bounds the subscriber processes of a run.
	MaxSubs = 32
	// MaxIters bounds the messages of a cell.
	MaxIters = 1_000_000
)

// msgType is the message type of the benchmark topics.
const msgType = "rgaps_bench/msg/GpuBlob"

// ItersFor is the (timed, warm-up) message count of a cell of size bytes:
// iters up to 16 MiB, two fifths of it up to 256 MiB (at least 5), a tenth
// beyond (at least 3); never more than iters. At least one warm-up message
// is always sent, so that no subscriber maps a pool or allocates staging
// memory inside a timed message; above 256 MiB a third of warmup.
func ItersFor(size, iters, warmup int) (int, int) {
	switch {
	case size <= 16<<20:
		return iters, max(1, warmup)
	case size <= 256<<20:
		return max(iters*2/5, min(iters, 5)), max(1, warmup)
	}
	return max(iters/10, min(iters, 3)), max(1, warmup/3)
}

// PoolFor is the pool size of the benchmark topics for messages up to
// maxSize bytes: one message in flight at a time, plus half of one of
// slack, 2 MiB-aligned (the GPU pool's granularity), at least 64 MiB.
func PoolFor(maxSize int) uint64 {
	n := max(64<<20, uint64(maxSize)*5/2)
	return (n + 2<<20 - 1) &^ (2<<20 - 1)
}

// Options configure a run. Zero values take the defaults above (Domain
// excepted: zero is domain 0).
type Options struct {
	Sizes  []int // message sizes
	Subs   []int // subscriber process counts of data path 3
	Iters  int   // timed messages per cell (see ItersFor)
	Warmup int   // untimed messages before them (see ItersFor)
	// DataPaths to run: 1 and/or 3 (default both).
	DataPaths []int
	Domain    uint32
	// Device is the CUDA device (0: RGAPS_GPU_DEVICE, or device 0).
	Device int
	// PoolSize of every benchmark topic's pool, host and GPU (0: PoolFor
	// the largest size).
	PoolSize uint64
	// Prefix is the shared-memory prefix. "" (the default) means a private
	// one ("<RGAPS_SHM_PREFIX or rgaps>-g<pid>"), every segment of which is
	// removed at the end, and whose GPU daemon is this run's alone.
	Prefix string
	// Child returns the command that starts one subscriber process, which
	// must run ChildMain. nil: this executable with ChildCommand.
	Child func() *exec.Cmd
	// Progress receives one line per step; nil is silent.
	Progress io.Writer
	// SubSchedule is how the subscriber processes' threads wait for the
	// GPU in their synchronising calls (schedules: "auto", "spin",
	// "yield", "blocking"); "" leaves the driver's default (auto).
	SubSchedule string
	// BusyPoll > 0 makes data path 3's subscribers spin in Wait for up to
	// that long before they sleep in the kernel (zerocopy Config.BusyPoll),
	// and messages go out without waiting for every subscriber to sleep;
	// the futex floor, a floor of sleeping processes, is not run then. 0:
	// subscribers sleep, and each message waits until all of them do.
	BusyPoll time.Duration

	fake bool // tests: the host-memory fake device; Pinned-Shared is skipped
}

func (o Options) withDefaults() (Options, error) {
	if _, ok := schedules[o.SubSchedule]; !ok && o.SubSchedule != "" {
		return o, fmt.Errorf("subscriber schedule %q: want auto, spin, yield or blocking", o.SubSchedule)
	}
	if o.BusyPoll < 0 {
		return o, fmt.Errorf("busy-poll %v is negative", o.BusyPoll)
	}
	if len(o.Sizes) == 0 {
		o.Sizes = DefaultSizes
	}
	if len(o.Subs) == 0 {
		o.Subs = DefaultSubs
	}
	if o.Iters == 0 {
		o.Iters = DefaultIters
	}
	if o.Warmup == 0 {
		o.Warmup = DefaultWarmup
	} else if o.Warmup < 0 {
		o.Warmup = 0 // ItersFor still sends one
	}
	if len(o.DataPaths) == 0 {
		o.DataPaths = []int{1, 3}
	}
	o.Sizes, o.Subs, o.DataPaths = slices.Clone(o.Sizes), slices.Clone(o.Subs), slices.Clone(o.DataPaths)
	for _, s := range o.Sizes {
		if s < MinSize || s > MaxSize {
			return o, fmt.Errorf("message size %d outside [%s, %s]", s, benchutil.FormatSize(MinSize), benchutil.FormatSize(MaxSize))
		}
	}
	for _, n := range o.Subs {
		if n < 1 || n > MaxSubs {
			return o, fmt.Errorf("subscriber count %d outside [1, %d]", n, MaxSubs)
		}
	}
	for _, p := range o.DataPaths {
		if p != 1 && p != 3 {
			return o, fmt.Errorf("data path %d: only 1 and 3 run on one host", p)
		}
	}
	if o.Iters < 1 || o.Iters > MaxIters || o.Warmup < 0 || o.Warmup > MaxIters {
		return o, fmt.Errorf("iterations %d, warm-up %d: need 1 to %d and 0 to %d", o.Iters, o.Warmup, MaxIters, MaxIters)
	}
	if o.Device < 0 {
		return o, fmt.Errorf("device %d", o.Device)
	}
	if o.PoolSize == 0 {
		o.PoolSize = PoolFor(slices.Max(o.Sizes))
	}
	if o.PoolSize < uint64(slices.Max(o.Sizes)) {
		return o, fmt.Errorf("pool size %d is smaller than the largest message (%d)", o.PoolSize, slices.Max(o.Sizes))
	}
	if o.Prefix == "" {
		o.Prefix = benchutil.PrivatePrefix("g")
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

func (o Options) runs(dp int) bool { return slices.Contains(o.DataPaths, dp) }

// Result is everything a run measured (also what -json writes). Times are
// in ns.
type Result struct {
	Machine  Machine           `json:"machine"`
	Settings Settings          `json:"settings"`
	Setup    Setup             `json:"setup"`
	DP1      []DP1Row          `json:"dp1"`
	DP3      []DP3Cell         `json:"dp3"`
	Floors   []FloorCell       `json:"floors,omitempty"`
	Checks   Checks            `json:"checks"`
	Verdicts []Goal            `json:"goals"`
	Elapsed  benchutil.Seconds `json:"elapsed_s"`
}

// schedules are the values of Options.SubSchedule.
var schedules = map[string]cuda.Schedule{"auto": cuda.ScheduleAuto, "spin": cuda.ScheduleSpin, "yield": cuda.ScheduleYield, "blocking": cuda.ScheduleBlocking}

// Settings are the options in force.
type Settings struct {
	Sizes     []int          `json:"sizes"`
	Subs      []int          `json:"subs"`
	Iters     int            `json:"iters"`
	Warmup    int            `json:"warmup"`
	CellIters map[string]int `json:"cell_iters"` // size → timed messages
	CellWarm  map[string]int `json:"cell_warmup"`
	DataPaths []int          `json:"data_paths"`
	Domain    uint32         `json:"domain"`
	Prefix    string         `json:"prefix"`
	PoolSize  uint64         `json:"pool_size"`
	QoS       string         `json:"qos"`
	Topics    []string       `json:"topics"`
	Fake      bool           `json:"fake_device,omitempty"`
	// SubSchedule: Options.SubSchedule ("" is the driver's default).
	SubSchedule string `json:"sub_schedule,omitempty"`
	// BusyPoll: Options.BusyPoll, as the subscribers' engine reports it.
	BusyPoll time.Duration `json:"busy_poll_ns,omitempty"`
}

// Setup is what the run paid once, outside every timed interval.
type Setup struct {
	RegisterPool int64 `json:"register_pool_ns"` // data path 1's pool → cuMemHostRegister
	// GPUTopic: creating the GPU topic's publisher, which maps its GPU pool
	// (daemon start included) and registers its host staging pool.
	GPUTopic     int64 `json:"gpu_topic_ns"`
	ChildInitMax int64 `json:"child_cuda_init_max_ns"` // subscriber processes' CUDA context + kernels
	Children     int   `json:"children"`
}

// Checks counts the correctness checks that passed (any failure ends the
// run with an error).
type Checks struct {
	DP1Messages int `json:"dp1_messages_spot_checked"` // by the host subscriber and the UDS receiver each
	DP3Kernels  int `json:"dp3_checksums_compared"`    // subscriber kernels equal to cuda.ChecksumHost
	Patterns    int `json:"patterns_cross_checked"`    // device kernel = host reference on a whole pattern
}

// DP1Row is one size of data path 1. Series hold one value per timed
// message.
type DP1Row struct {
	Size    int    `json:"size"`
	Iters   int    `json:"iters"`
	Warmup  int    `json:"warmup"`
	SubPath string `json:"subscriber_path"` // as the engine reports it

	Loan    []int64 `json:"loan_ns"`    // T1: Publisher.Loan
	Copy    []int64 `json:"copy_ns"`    // T2: MemcpyDtoH into the loan (registered pool)
	Publish []int64 `json:"publish_ns"` // T3: Loan.Publish
	Bare    []int64 `json:"bare_ns"`    // MemcpyDtoH into registered mmap'd memory

	PageCopy []int64 `json:"pageable_copy_ns"` // baseline T1: MemcpyDtoH into Go heap memory
	PageUDS  []int64 `json:"uds_ns"`           // baseline T2: send until the receiver has it all

	Stats DP1Stats `json:"stats"`
}

// DP1Stats summarise a DP1Row.
type DP1Stats struct {
	Loan      Summary `json:"loan"`
	Copy      Summary `json:"copy"`
	Publish   Summary `json:"publish"`
	Total     Summary `json:"total"` // T1+T2+T3 per message
	Bare      Summary `json:"bare"`
	PageCopy  Summary `json:"pageable_copy"`
	PageUDS   Summary `json:"uds"`
	PageTotal Summary `json:"pageable_total"` // T1+T2 per message
}

func (r *DP1Row) summarize() {
	r.Stats = DP1Stats{
		Loan: summarize(r.Loan), Copy: summarize(r.Copy), Publish: summarize(r.Publish),
		Total: summarize(sumOf(r.Loan, r.Copy, r.Publish)), Bare: summarize(r.Bare),
		PageCopy: summarize(r.PageCopy), PageUDS: summarize(r.PageUDS),
		PageTotal: summarize(sumOf(r.PageCopy, r.PageUDS)),
	}
}

// DP3Cell is one (path, size, N) of data path 3. Per-subscriber series are
// [subscriber][message], in ns after t0 (the publisher's wall clock just
// before Publish).
type DP3Cell struct {
	Path    string `json:"path"`
	Size    int    `json:"size"`
	Subs    int    `json:"subs"`
	Iters   int    `json:"iters"`
	Warmup  int    `json:"warmup"`
	SubPath string `json:"subscriber_path"` // as the engine reports it: gpu-pool, host-shm

	Loan    []int64 `json:"loan_ns"`    // T1: Publisher.Loan (before t0)
	Publish []int64 `json:"publish_ns"` // the Publish call (Pinned-Shared: includes the H2D copy)
	// The Publish call's stages (zerocopy.PublishTrace), from its start:
	// Forms: the form readers need made (Pinned-Shared: the device block
	// allocated under the lock, the H2D copy and the wait for it; a host
	// topic: nothing, the device writes waited for); Queued: the sample
	// in every queue, the lock released; Woken: the wake-up call returned.
	Forms  []int64 `json:"forms_ns"`
	Queued []int64 `json:"queued_ns"`
	Woken  []int64 `json:"woken_ns"`
	// Idle: from the previous message's last acknowledgement (or the
	// cell's start) to t0: the loan, the fill and the wait for every
	// subscriber to sleep. The subscribers sleep about that long.
	Idle []int64 `json:"idle_ns"`
	// Unsettled counts messages published before every subscriber slept.
	Unsettled int `json:"unsettled,omitempty"`

	Wake      [][]int64 `json:"wake_ns"`       // Wait returned
	Taken     [][]int64 `json:"taken_ns"`      // Take returned the sample
	CopyStart [][]int64 `json:"copy_start_ns"` // Pageable-Iceoryx: its own H2D began
	Ptr       [][]int64 `json:"ptr_ns"`        // holds a device pointer to complete data
	// CheckAt: when it began its checksum kernel (− t0), on the parent's
	// "check", sent once every subscriber held its pointer; Check: how
	// long the kernel took. Both outside the timed interval.
	CheckAt [][]int64 `json:"check_at_ns"`
	Check   [][]int64 `json:"check_ns"`

	Stats DP3Stats `json:"stats"`
}

// DP3Stats summarise a DP3Cell; each is over messages of a per-message
// value.
type DP3Stats struct {
	Loan    Summary `json:"loan"`
	Publish Summary `json:"publish"`
	// Wake: average over subscribers of wake − t0.
	Wake Summary `json:"wake"`
	// Notify: average over subscribers of wake − Publish's return.
	Notify Summary `json:"notify"`
	// SubCopy: average over subscribers of their own copy (Pageable-Iceoryx).
	SubCopy Summary `json:"sub_copy"`
	// Delivery: the latest subscriber's device pointer − t0.
	Delivery Summary `json:"delivery"`
	// Check: average over subscribers of their checksum kernel's run
	// (DP3Cell.Check; untimed, after every subscriber held its pointer).
	Check Summary `json:"check"`

	// Where the delivery time goes, per message (see DP3Cell):
	// Forms (the H2D copy on Pinned-Shared), Enqueue (Queued − Forms),
	// WakeCall (Woken − Queued); the first and the last subscriber's wake
	// − t0; the take (Taken − Wake: average and largest over
	// subscribers); DevicePtr (Ptr − Taken, average); and Notify2 =
	// Delivery − Forms: everything after the copy, what N changes.
	Forms     Summary `json:"forms"`
	Enqueue   Summary `json:"enqueue"`
	WakeCall  Summary `json:"wake_call"`
	WakeFirst Summary `json:"wake_first"`
	WakeLast  Summary `json:"wake_last"`
	TakeAvg   Summary `json:"take_avg"`
	TakeMax   Summary `json:"take_max"`
	PtrAvg    Summary `json:"ptr_avg"`
	AfterCopy Summary `json:"after_copy"`
	// Idle (DP3Cell.Idle), and Woke: the last subscriber's wake − Queued,
	// the wake-up as the futex floor measures it (from just before the
	// wake call).
	Idle Summary `json:"idle"`
	Woke Summary `json:"woke"`
}

// FloorCell is the futex floor of the N subscriber processes of a
// Pinned-Shared cell (benchutil.Floor): they sleep on a word of their own,
// and once all sleep and Pause has passed since their acknowledgements
// (that cell's idle p50, so they sleep as long as they did there), one
// FUTEX_WAKE wakes them all. No engine, no GPU: what waking these N
// processes costs after such a sleep.
type FloorCell struct {
	Size   int   `json:"size"` // of the Pinned-Shared cell it follows
	Subs   int   `json:"subs"`
	Iters  int   `json:"iters"`
	Warmup int   `json:"warmup"`
	Pause  int64 `json:"pause_ns"`
	// Lat[s][i]: subscriber s's wake − t0 (just before the wake call) of
	// timed message i.
	Lat       [][]int64 `json:"lat_ns"`
	Unsettled int       `json:"unsettled,omitempty"`
	// First and Last: per message, the earliest and the latest wake.
	First Summary `json:"first"`
	Last  Summary `json:"last"`
}

func (c *DP3Cell) summarize() {
	n, m := len(c.Ptr), len(c.Publish)
	st := DP3Stats{Loan: summarize(c.Loan), Publish: summarize(c.Publish)}
	st.Wake = summarize(avgOver(n, m, func(s, i int) int64 { return c.Wake[s][i] }))
	st.Notify = summarize(avgOver(n, m, func(s, i int) int64 { return c.Wake[s][i] - c.Publish[i] }))
	if c.Path == PathIceoryx {
		st.SubCopy = summarize(avgOver(n, m, func(s, i int) int64 { return c.Ptr[s][i] - c.CopyStart[s][i] }))
	}
	st.Delivery = summarize(maxOver(c.Ptr))
	st.Check = summarize(avgOver(n, m, func(s, i int) int64 { return c.Check[s][i] }))
	if len(c.Forms) == m && len(c.Taken) == n {
		st.Forms = summarize(c.Forms)
		st.Enqueue = summarize(diffOf(c.Queued, c.Forms))
		st.WakeCall = summarize(diffOf(c.Woken, c.Queued))
		st.WakeFirst = summarize(minOver(c.Wake))
		st.WakeLast = summarize(maxOver(c.Wake))
		take := func(s, i int) int64 { return c.Taken[s][i] - c.Wake[s][i] }
		st.TakeAvg = summarize(avgOver(n, m, take))
		st.TakeMax = summarize(maxOf(n, m, take))
		st.PtrAvg = summarize(avgOver(n, m, func(s, i int) int64 { return c.Ptr[s][i] - c.Taken[s][i] }))
		st.AfterCopy = summarize(diffOf(maxOver(c.Ptr), c.Forms))
		st.Woke = summarize(diffOf(maxOver(c.Wake), c.Queued))
	}
	st.Idle = summarize(c.Idle)
	c.Stats = st
}

// Run measures everything once. It stops early, cleaning up, when ctx is
// cancelled. Whatever happens, every child process is gone and every
// segment of a private prefix removed on return, and a GPU daemon started
// for the private prefix is stopped. Without a usable GPU it returns an
// error wrapping cuda.ErrNotSupported ("needs a GPU: ...").
//
// Run sets RGAPS_DAEMON (to this executable, the rgaps binary, when unset)
// and RGAPS_DAEMON_IDLE (5s when unset) in the process environment: the
// engine starts the daemon that owns GPU pools from them.
func Run(ctx context.Context, opts Options) (res *Result, err error) {
	start := time.Now()
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", zerocopy.ErrInvalid, err)
	}
	if !o.fake {
		if _, err := cuda.Count(); err != nil {
			return nil, needsGPU(err)
		}
	} else if testDevice == nil {
		return nil, errors.New("fake device requested outside the package's tests")
	}
	if err := daemonEnv(); err != nil {
		return nil, err
	}
	h := &harness{o: o, ctx: ctx, private: opts.Prefix == "", procs: &benchutil.Procs{
		Ctx: ctx, Child: o.Child, Name: "bench-gpu", PeerTimeout: peerTimeout, MaxFrame: maxFrame,
	}}
	defer func() { err = benchutil.Finish(ctx, err, h.close) }()
	res = &Result{Settings: Settings{
		Sizes: o.Sizes, Subs: o.Subs, Iters: o.Iters, Warmup: o.Warmup,
		CellIters: map[string]int{}, CellWarm: map[string]int{},
		DataPaths: o.DataPaths, Domain: o.Domain, Prefix: o.Prefix, PoolSize: o.PoolSize,
		QoS: "reliable, keep_last(10), volatile", Fake: o.fake,
	}}
	for _, s := range o.Sizes {
		res.Settings.CellIters[strconv.Itoa(s)], res.Settings.CellWarm[strconv.Itoa(s)] = ItersFor(s, o.Iters, o.Warmup)
	}
	h.res = res
	if err := h.open(); err != nil {
		return nil, err
	}
	res.Machine = machineInfo(h.cdev)
	res.Settings.Topics = h.topics
	if !o.fake {
		res.Settings.SubSchedule = o.SubSchedule // the fake device has none
	}
	if err := h.spawnAll(); err != nil {
		return nil, err
	}
	for _, size := range o.Sizes {
		if err := h.size(size); err != nil {
			return nil, fmt.Errorf("%s: %w", benchutil.FormatSize(size), err)
		}
	}
	res.Elapsed = benchutil.Seconds(time.Since(start))
	res.Verdicts = res.Goals()
	return res, nil
}

func needsGPU(err error) error { return fmt.Errorf("needs a GPU: %w", err) }

// daemonEnv points the engine's daemon auto-start at this executable (the
// rgaps binary runs `rgaps daemon`) unless RGAPS_DAEMON says otherwise, and
// makes the daemon exit soon after the run.
func daemonEnv() error {
	if os.Getenv("RGAPS_DAEMON") == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the executable to run the GPU daemon: %w", err)
		}
		os.Setenv("RGAPS_DAEMON", exe)
	}
	if os.Getenv("RGAPS_DAEMON_IDLE") == "" {
		os.Setenv("RGAPS_DAEMON_IDLE", "5s")
	}
	return nil
}
