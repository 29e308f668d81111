// Package benchdds is `rgaps-bench dds` (issue 14): the cost of the DDS
// gateway (package gateway), measured against a DDS baseline taken in the
// same run, in two layouts:
//
//   - processes (LayoutProcs, what the goals are about: DDS-based
//     ROS nodes are processes of their own): the gateway runs in a daemon
//     process (`rgaps-bench daemon -dds`, rgapsd), each DDS endpoint in a
//     child process (ChildCommand), the rgaps endpoints in this process;
//     DDS→DDS goes from a writer process to a reader process;
//   - one process (LayoutOne): the gateway in-process (gateway.New, Serve
//     in a goroutine) and the DDS endpoints on participants of this
//     process, so Cyclone hands DDS→DDS samples over inside the write
//     call: the fastest DDS can be, a baseline no DDS node in another
//     process gets.
//
// Both use this process's own engine domain (a private shared-memory
// prefix); only the run's topics are carried. Payloads are
// std_msgs/msg/String CDR of the given total sizes.
//
//   - latency, one message at a time, publish → take: DDS→DDS (the
//     baseline), rgaps→DDS (engine publisher → gateway → DDS reader) and
//     DDS→rgaps (DDS writer → gateway → engine subscription); the gateway
//     paths as ratios to DDS→DDS (goal ≤ 1.3×). Across processes the
//     receiver subtracts the send time stamped into the message;
//   - throughput: one engine publisher and 8 engine subscriptions,
//     RELIABLE KEEP_ALL, publishing as fast as the stream allows for a
//     fixed time, until every reader has every message: on a topic the
//     gateway does not carry, on one it carries with no DDS subscriber,
//     and on one with a DDS subscriber through the gateway, RELIABLE
//     KEEP_LAST 10 (ROS's default: the gateway's mirror is KEEP_LAST and
//     does not hold the publisher back) or RELIABLE KEEP_ALL (the mirror
//     is KEEP_ALL: the DDS subscriber gets every message, so the stream
//     goes at its pace); with the subscriber as a share of without (goal
//     ≥ 90%), and the share of the messages the DDS subscriber received.
package benchdds

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/gateway"
	"github.com/rmw-rgaps/rmw_rgaps/internal/daemonproc"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Defaults of the command line.
const (
	DefaultRounds   = 200
	DefaultWarmup   = 5
	DefaultDuration = 2 * time.Second
	DefaultSubs     = 8
	DefaultDomain   = 232 // the last ROS domain: away from the dds (100..199) and gateway (200..231) tests
	// BigSize: sizes above it get a quarter of the rounds (at least 10).
	BigSize = 1 << 20
	// ddsIdle: a throughput cell's DDS reader stops after this long
	// without a message once the publisher has stopped.
	ddsIdle = 500 * time.Millisecond
	// MinSize is the smallest payload: a String CDR with room for the send
	// time and a sequence number (Stamp).
	MinSize = 32
	// poolSize is the topics' pool size (1 GiB: a few hundred 8 MiB
	// messages queued for the slowest reader).
	poolSize = 1 << 30
)

// ErrNoDDS wraps the reason the benchmark cannot run: libddsc cannot be loaded.
var ErrNoDDS = errors.New("libddsc cannot be loaded")

// Latency paths and throughput cases, in report order.
const (
	PathDDS      = "DDS→DDS"
	PathToDDS    = "rgaps→DDS"
	PathFromDDS  = "DDS→rgaps"
	CaseRgaps    = "rgaps only"
	CaseGateway  = "gateway, no DDS subscriber"
	CaseGatewayL = "gateway + DDS subscriber KEEP_LAST 10"
	CaseGatewayR = "gateway + DDS subscriber KEEP_ALL"
	CaseDDSAll   = "DDS→DDS KEEP_ALL"
	LayoutProcs  = "processes"
	LayoutOne    = "one process"
)

var (
	Paths   = []string{PathDDS, PathToDDS, PathFromDDS}
	Cases   = []string{CaseRgaps, CaseGateway, CaseGatewayL, CaseGatewayR}
	Layouts = []string{LayoutProcs, LayoutOne}
	// ProcsCases are the processes layout's: DDS→DDS KEEP_ALL between two
	// processes too, what a KEEP_ALL subscriber's stream cannot beat.
	ProcsCases = append(slices.Clone(Cases), CaseDDSAll)
	// sinkQoS is the DDS subscriber of a case (a childQoS kind).
	sinkQoS = map[string]string{CaseGatewayL: "last", CaseGatewayR: "all"}
)

const (
	typeName  = "std_msgs/msg/String"
	benchNode = "/rgaps_bench_dds"
)

// Options configure Run.
type Options struct {
	Sizes    []int
	Rounds   int           // timed latency rounds per (path, size); fewer above BigSize
	Warmup   int           // untimed rounds before them
	Duration time.Duration // publishing time of a throughput cell
	Subs     int           // engine subscriptions of the throughput cells
	Domain   uint32        // ROS domain (engine and DDS)
	Layouts  []string      // LayoutProcs, LayoutOne (none: both)
	Progress io.Writer     // progress lines (nil: none)
	// Command makes the command of a process of the processes layout
	// from its arguments: "daemon" and rgapsd's flags, or ChildCommand
	// and a child's. nil: this executable (rgaps-bench) with them.
	Command func(args ...string) *exec.Cmd
}

// RoundsFor is the number of timed rounds of a latency cell of size.
func RoundsFor(rounds, size int) int {
	if size > BigSize {
		return min(rounds, max(rounds/4, 10))
	}
	return rounds
}

// LatencyCell is one (path, size) of the latency table.
type LatencyCell struct {
	Layout  string            `json:"layout"`
	Path    string            `json:"path"`
	Size    int               `json:"size"`
	Latency benchutil.Summary `json:"latency"`
	Samples []int64           `json:"samples_ns"`
}

// ThroughputCell is one (case, size) of the throughput table.
type ThroughputCell struct {
	Layout    string            `json:"layout"`
	Case      string            `json:"case"`
	Size      int               `json:"size"`
	Messages  int64             `json:"messages"`
	Elapsed   benchutil.Seconds `json:"elapsed_s"` // first publish → last reader has every message
	Rate      float64           `json:"msgs_per_s"`
	DDSGot    int64             `json:"dds_received,omitempty"` // of Messages (a KEEP_LAST subscriber may miss some)
	Subs      int               `json:"subs"`
	Delivered []int64           `json:"delivered"` // per engine subscription
}

// Setup is what a run measured with.
type Setup struct {
	Layouts  []string          `json:"layouts"`
	Sizes    []int             `json:"sizes"`
	Rounds   int               `json:"rounds"`
	Warmup   int               `json:"warmup"`
	Duration benchutil.Seconds `json:"duration_s"`
	Subs     int               `json:"subs"`
	Domain   uint32            `json:"domain"`
	Prefix   string            `json:"prefix"`
	CPU      string            `json:"cpu"`
	Cores    int               `json:"cores"`
	Kernel   string            `json:"kernel"`
	Go       string            `json:"go"`
	DDSC     string            `json:"ddsc"`
}

// Result is a run's measurements.
type Result struct {
	Setup      Setup             `json:"setup"`
	Latency    []LatencyCell     `json:"latency"`
	Throughput []ThroughputCell  `json:"throughput"`
	Elapsed    benchutil.Seconds `json:"elapsed_s"`
}

// Cell is the latency cell of layout, path and size (nil: not measured).
func (r *Result) Cell(layout, path string, size int) *LatencyCell {
	for i := range r.Latency {
		if c := &r.Latency[i]; c.Layout == layout && c.Path == path && c.Size == size {
			return c
		}
	}
	return nil
}

// Rate is the throughput cell of layout, kase and size (nil: not
// measured).
func (r *Result) Rate(layout, kase string, size int) *ThroughputCell {
	for i := range r.Throughput {
		if c := &r.Throughput[i]; c.Layout == layout && c.Case == kase && c.Size == size {
			return c
		}
	}
	return nil
}

// StringCDR is a std_msgs/msg/String of size bytes in all (CDR, little
// endian, encapsulation header included; size ≥ MinSize).
func StringCDR(size int) []byte {
	b := make([]byte, size)
	copy(b, []byte{0, 1, 0, 0})
	binary.LittleEndian.PutUint32(b[4:], uint32(size-8))
	for i := 8; i < size-1; i++ {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

var latQoS = qos.Profile{History: qos.HistoryKeepLast, Depth: 10, Reliability: qos.ReliabilityReliable,
	Durability: qos.DurabilityVolatile, Liveliness: qos.LivelinessAutomatic}

// lastQoS is ROS's default profile: what a DDS subscriber of the
// throughput cells asks when it may miss messages.
var lastQoS = qos.Profile{History: qos.HistoryKeepLast, Depth: 10, Reliability: qos.ReliabilityReliable,
	Durability: qos.DurabilityVolatile, Liveliness: qos.LivelinessAutomatic}

var tpQoS = qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable,
	Durability: qos.DurabilityVolatile, Liveliness: qos.LivelinessAutomatic}

// harness is a run's engine domain, gateway and DDS participants.
type harness struct {
	o      Options
	topic  string // topic name stem: /rgaps_bench_dds_<pid>
	dom    *zerocopy.Domain
	pw, pr *dds.Participant // DDS writers' and readers' participants
	gwStop context.CancelFunc
	gwDone chan struct{}
	gw     *gateway.Gateway
	prefix string
	daemon *daemonproc.Daemon // the processes layout's gateway
	dir    string             // the daemon's log directory
}

// tag is what names the topics of a layout: those the layout's gateway
// carries (carried) or not.
func (h *harness) tag(layout string, carried bool) string {
	switch {
	case layout == LayoutProcs && carried:
		return "pg"
	case layout == LayoutProcs:
		return "pd"
	case carried:
		return "gw"
	}
	return "dd"
}

func (h *harness) progress(format string, args ...any) {
	if h.o.Progress != nil {
		fmt.Fprintf(h.o.Progress, "rgaps-bench dds: "+format+"\n", args...)
	}
}

// Run measures every path and case; it fails at once, wrapping ErrNoDDS,
// when libddsc cannot be loaded.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	if err := dds.Load(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDDS, err)
	}
	if o.Rounds <= 0 || o.Subs <= 0 || o.Duration <= 0 || len(o.Sizes) == 0 {
		return nil, fmt.Errorf("%w: rounds, subs, duration and sizes must be positive", zerocopy.ErrInvalid)
	}
	for _, s := range o.Sizes {
		if s < MinSize {
			return nil, fmt.Errorf("%w: size %d below %d", zerocopy.ErrInvalid, s, MinSize)
		}
	}
	if len(o.Layouts) == 0 {
		o.Layouts = Layouts
	}
	if o.Command == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("finding the executable to run processes: %w", err)
		}
		o.Command = func(args ...string) *exec.Cmd { return exec.Command(exe, args...) }
	}
	start := time.Now()
	h := &harness{o: o, topic: fmt.Sprintf("/rgaps_bench_dds_%d", os.Getpid()), prefix: benchutil.PrivatePrefix("d")}
	defer func() {
		if cerr := h.close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	if err := h.open(); err != nil {
		return nil, err
	}
	res = &Result{Setup: Setup{Layouts: o.Layouts, Sizes: o.Sizes, Rounds: o.Rounds, Warmup: o.Warmup, Duration: benchutil.Seconds(o.Duration),
		Subs: o.Subs, Domain: o.Domain, Prefix: h.prefix, CPU: benchutil.CPUModel(), Cores: runtime.NumCPU(),
		Kernel: benchutil.KernelRelease(), Go: benchutil.GoVersion(), DDSC: dds.LoadedFrom()}}
	for _, layout := range o.Layouts {
		if err := h.runLayout(ctx, layout, res); err != nil {
			return nil, err
		}
	}
	res.Elapsed = benchutil.Seconds(time.Since(start))
	return res, nil
}

// runLayout measures every latency path and throughput case of a layout
// into res; the processes layout's daemon runs meanwhile.
func (h *harness) runLayout(ctx context.Context, layout string, res *Result) error {
	if layout == LayoutProcs {
		if err := h.startDaemon(); err != nil {
			return err
		}
		defer h.stopDaemon()
	}
	for _, size := range h.o.Sizes {
		for _, p := range Paths {
			if err := ctx.Err(); err != nil {
				return err
			}
			lat := h.latency
			if layout == LayoutProcs {
				lat = h.latencyProcs
			}
			c, err := lat(ctx, p, size)
			if err != nil {
				return fmt.Errorf("latency (%s) %s %s: %w", layout, p, benchutil.FormatSize(size), err)
			}
			h.progress("%s: latency %-10s %8s: p50 %s µs, p99 %s µs (%d rounds)", layout, p, benchutil.FormatSize(size),
				benchutil.US(c.Latency.P50), benchutil.US(c.Latency.P99), c.Latency.N)
			res.Latency = append(res.Latency, c)
		}
	}
	cases := Cases
	if layout == LayoutProcs {
		cases = ProcsCases
	}
	for _, size := range h.o.Sizes {
		for _, k := range cases {
			if err := ctx.Err(); err != nil {
				return err
			}
			tp := h.throughput
			if k == CaseDDSAll {
				tp = h.throughputDDS
			}
			c, err := tp(ctx, layout, k, size)
			if err != nil {
				return fmt.Errorf("throughput (%s) %s %s: %w", layout, k, benchutil.FormatSize(size), err)
			}
			h.progress("%s: throughput %-38s %8s: %.0f msgs/s", layout, k, benchutil.FormatSize(size), c.Rate)
			res.Throughput = append(res.Throughput, c)
		}
	}
	return nil
}

func (h *harness) open() error {
	cfg := zerocopy.Config{Prefix: h.prefix, Domain: h.o.Domain, PoolSize: poolSize, SkipStaleClean: true}
	g, err := gateway.New(gateway.Options{Engine: cfg, Topics: []string{h.topic + "_" + h.tag(LayoutOne, true) + "*"}, Interval: 20 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return fmt.Errorf("starting the gateway: %w", err)
	}
	h.gw = g
	ctx, cancel := context.WithCancel(context.Background())
	h.gwStop, h.gwDone = cancel, make(chan struct{})
	go func() { defer close(h.gwDone); g.Serve(ctx) }()
	if h.dom, err = zerocopy.Open(cfg); err != nil {
		return err
	}
	if h.pw, err = dds.Open(dds.Config{Domain: h.o.Domain}); err != nil {
		return err
	}
	h.pr, err = dds.Open(dds.Config{Domain: h.o.Domain})
	return err
}

// close stops the gateway, closes everything and removes the prefix's
// shared memory.
func (h *harness) close() error {
	errs := []error{h.stopDaemon()}
	for _, p := range []*dds.Participant{h.pr, h.pw} {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	if h.dom != nil {
		errs = append(errs, h.dom.Close())
	}
	if h.gw != nil {
		h.gwStop()
		<-h.gwDone
		errs = append(errs, h.gw.Close())
	}
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), h.prefix+"_") {
			errs = append(errs, os.Remove(filepath.Join("/dev/shm", e.Name())))
		}
	}
	return errors.Join(errs...)
}

// waitFor polls cond for up to 10 s.
func waitFor(ctx context.Context, what string, cond func() bool) error {
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(end) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
	}
	return nil
}

func matched(m func() (int, error), n int) bool { k, err := m(); return err == nil && k >= n }

// takeDDS takes one sample of at least size bytes from r within 10 s.
func takeDDS(r *dds.Reader, size int) error {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		s, ok, err := r.Take()
		if err != nil {
			return err
		}
		if ok {
			if len(s.Data) < size {
				return fmt.Errorf("DDS sample of %d bytes, want %d", len(s.Data), size)
			}
			return nil
		}
		if _, err := r.Wait(100 * time.Millisecond); err != nil {
			return err
		}
	}
	return errors.New("no DDS sample within 10 s")
}

// takeRgaps takes one sample of size bytes from s within 10 s.
func takeRgaps(s *zerocopy.Subscription, size int) error {
	smp, err := s.TakeWait(10 * time.Second)
	if err != nil {
		return err
	}
	n := smp.Size()
	smp.Return()
	if n != size {
		return fmt.Errorf("rgaps sample of %d bytes, want %d", n, size)
	}
	return nil
}

// latency measures one (path, size) cell of the one-process layout on
// topics of its own.
func (h *harness) latency(ctx context.Context, path string, size int) (LatencyCell, error) {
	c := LatencyCell{Layout: LayoutOne, Path: path, Size: size}
	topic := fmt.Sprintf("%s_%s_lat_%d_%d", h.topic, h.tag(LayoutOne, path != PathDDS), size, slices.Index(Paths, path))
	from, to := h.rgapsPublisher, h.ddsReader
	switch path {
	case PathDDS:
		from = h.ddsWriter
	case PathFromDDS:
		from, to = h.ddsWriter, h.rgapsSubscription
	}
	src, err := from(topic, size)
	if err != nil {
		return c, err
	}
	defer src.close()
	dst, err := to(topic, size)
	if err != nil {
		return c, err
	}
	defer dst.close()
	if err := waitFor(ctx, path+" endpoints to match", func() bool { return src.ready() && dst.ready() }); err != nil {
		return c, err
	}
	round := func() error {
		if err := src.io(); err != nil {
			return err
		}
		return dst.io()
	}
	for range h.o.Warmup {
		if err := round(); err != nil {
			return c, fmt.Errorf("warm-up: %w", err)
		}
	}
	n := RoundsFor(h.o.Rounds, size)
	c.Samples = make([]int64, 0, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		t0 := time.Now()
		if err := round(); err != nil {
			return c, fmt.Errorf("round %d: %w", i, err)
		}
		c.Samples = append(c.Samples, time.Since(t0).Nanoseconds())
	}
	c.Latency = benchutil.Summarize(c.Samples)
	return c, nil
}

// end is one end of a latency path: io sends or takes one message, ready
// says whether it has matched the other end (through the gateway).
type end struct {
	io    func() error
	ready func() bool
	close func() error
}

func (h *harness) ddsWriter(topic string, size int) (end, error) {
	t, err := h.pw.Topic(topic, typeName)
	if err != nil {
		return end{}, err
	}
	w, err := t.NewWriter(dds.EndpointOptions{QoS: latQoS})
	if err != nil {
		return end{}, err
	}
	msg := StringCDR(size)
	return end{io: func() error { return w.Write(msg) }, ready: func() bool { return matched(w.Matched, 1) }, close: w.Close}, nil
}

func (h *harness) ddsReader(topic string, size int) (end, error) {
	r, err := h.reader(topic, latQoS)
	if err != nil {
		return end{}, err
	}
	return end{io: func() error { return takeDDS(r, size) }, ready: func() bool { return matched(r.Matched, 1) }, close: r.Close}, nil
}

func (h *harness) rgapsPublisher(topic string, size int) (end, error) {
	p, err := h.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typeName, Node: benchNode, QoS: latQoS})
	if err != nil {
		return end{}, err
	}
	msg := StringCDR(size)
	return end{io: func() error { return p.Publish(msg) }, ready: func() bool { return p.Matched() >= 1 }, close: p.Close}, nil
}

func (h *harness) rgapsSubscription(topic string, size int) (end, error) {
	s, err := h.dom.NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: typeName, Node: benchNode, QoS: latQoS})
	if err != nil {
		return end{}, err
	}
	return end{io: func() error { return takeRgaps(s, size) }, ready: func() bool { return s.Matched() >= 1 }, close: s.Close}, nil
}

func (h *harness) reader(topic string, q qos.Profile) (*dds.Reader, error) {
	t, err := h.pr.Topic(topic, typeName)
	if err != nil {
		return nil, err
	}
	return t.NewReader(dds.EndpointOptions{QoS: q})
}
