// Package benchdds is `rgaps-bench dds` (issue 14): the cost of the DDS
// gateway (package gateway), measured in one process against a DDS
// baseline taken in the same run.
//
// The process opens its own engine domain (a private shared-memory
// prefix) and runs the gateway in-process (gateway.New, Serve in a
// goroutine) on it, carrying only this run's topics; its DDS endpoints
// are raw-CDR writers and readers of package dds on two participants of
// their own. Payloads are std_msgs/msg/String CDR of the given total sizes.
//
//   - latency, one message at a time, publish → take: DDS→DDS (raw writer
//     → raw reader, the baseline), rgaps→DDS (engine publisher → gateway
//     → raw reader) and DDS→rgaps (raw writer → gateway → engine
//     subscription); the gateway paths as ratios to DDS→DDS (goal ≤ 1.3×);
//   - throughput: one engine publisher and 8 engine subscriptions,
//     RELIABLE KEEP_ALL, publishing as fast as the stream allows for a
//     fixed time, until every reader has every message: on a topic the
//     gateway does not carry, on one it carries with no DDS subscriber,
//     and on one with a raw DDS reader through the gateway; the last as a
//     share of the second (goal ≥ 90%), with the share of the messages
//     the DDS reader received (the gateway's engine subscription is
//     KEEP_LAST 100 even for KEEP_ALL publishers, so it may drop).
//
// All DDS endpoints live in this process, so Cyclone delivers between
// them without the network: the DDS baseline is the fastest DDS can be,
// and the gateway's ratios are upper bounds of what it adds to DDS nodes
// in other processes.
package benchdds

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/gateway"
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
	// MinSize is the smallest payload: a String CDR with one character.
	MinSize = 16
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
	CaseGatewayR = "gateway + 1 DDS subscriber"
)

var (
	Paths = []string{PathDDS, PathToDDS, PathFromDDS}
	Cases = []string{CaseRgaps, CaseGateway, CaseGatewayR}
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
	Progress io.Writer     // progress lines (nil: none)
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
	Path    string            `json:"path"`
	Size    int               `json:"size"`
	Latency benchutil.Summary `json:"latency"`
	Samples []int64           `json:"samples_ns"`
}

// ThroughputCell is one (case, size) of the throughput table.
type ThroughputCell struct {
	Case      string            `json:"case"`
	Size      int               `json:"size"`
	Messages  int64             `json:"messages"`
	Elapsed   benchutil.Seconds `json:"elapsed_s"` // first publish → last reader has every message
	Rate      float64           `json:"msgs_per_s"`
	DDSGot    int64             `json:"dds_received,omitempty"` // of Messages: the gateway keeps up to 100 behind, dropping older ones
	Subs      int               `json:"subs"`
	Delivered []int64           `json:"delivered"` // per engine subscription
}

// Setup is what a run measured with.
type Setup struct {
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

// Cell is the latency cell of path and size (nil: not measured).
func (r *Result) Cell(path string, size int) *LatencyCell {
	for i := range r.Latency {
		if c := &r.Latency[i]; c.Path == path && c.Size == size {
			return c
		}
	}
	return nil
}

// Rate is the throughput cell of kase and size (nil: not measured).
func (r *Result) Rate(kase string, size int) *ThroughputCell {
	for i := range r.Throughput {
		if c := &r.Throughput[i]; c.Case == kase && c.Size == size {
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
	res = &Result{Setup: Setup{Sizes: o.Sizes, Rounds: o.Rounds, Warmup: o.Warmup, Duration: benchutil.Seconds(o.Duration),
		Subs: o.Subs, Domain: o.Domain, Prefix: h.prefix, CPU: benchutil.CPUModel(), Cores: runtime.NumCPU(),
		Kernel: benchutil.KernelRelease(), Go: benchutil.GoVersion(), DDSC: dds.LoadedFrom()}}
	for _, size := range o.Sizes {
		for _, p := range Paths {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			c, err := h.latency(ctx, p, size)
			if err != nil {
				return nil, fmt.Errorf("latency %s %s: %w", p, benchutil.FormatSize(size), err)
			}
			h.progress("latency %-10s %8s: p50 %s µs, p99 %s µs (%d rounds)", p, benchutil.FormatSize(size),
				benchutil.US(c.Latency.P50), benchutil.US(c.Latency.P99), c.Latency.N)
			res.Latency = append(res.Latency, c)
		}
	}
	for _, size := range o.Sizes {
		for _, k := range Cases {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			c, err := h.throughput(ctx, k, size)
			if err != nil {
				return nil, fmt.Errorf("throughput %s %s: %w", k, benchutil.FormatSize(size), err)
			}
			h.progress("throughput %-27s %8s: %.0f msgs/s", k, benchutil.FormatSize(size), c.Rate)
			res.Throughput = append(res.Throughput, c)
		}
	}
	res.Elapsed = benchutil.Seconds(time.Since(start))
	return res, nil
}

func (h *harness) open() error {
	cfg := zerocopy.Config{Prefix: h.prefix, Domain: h.o.Domain, PoolSize: 1 << 30, SkipStaleClean: true}
	g, err := gateway.New(gateway.Options{Engine: cfg, Topics: []string{h.topic + "_gw*"}, Interval: 20 * time.Millisecond,
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
	var errs []error
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

// latency measures one (path, size) cell on topics of its own.
func (h *harness) latency(ctx context.Context, path string, size int) (LatencyCell, error) {
	c := LatencyCell{Path: path, Size: size}
	topic := fmt.Sprintf("%s_gw_lat_%d_%d", h.topic, size, slices.Index(Paths, path))
	from, to := h.rgapsPublisher, h.ddsReader
	switch path {
	case PathDDS:
		topic = fmt.Sprintf("%s_dd_lat_%d", h.topic, size) // not carried by the gateway
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

// throughput measures one (case, size) cell on a topic of its own: the
// publisher publishes for Duration, then the cell ends when every reader
// has every message.
func (h *harness) throughput(ctx context.Context, kase string, size int) (ThroughputCell, error) {
	c := ThroughputCell{Case: kase, Size: size, Subs: h.o.Subs}
	topic := fmt.Sprintf("%s_tp_%d", h.topic, size) // not carried
	if kase != CaseRgaps {
		topic = fmt.Sprintf("%s_gw_tp_%d_%d", h.topic, size, slices.Index(Cases, kase))
	}
	var subs []*zerocopy.Subscription
	defer func() {
		for _, s := range subs {
			s.Close()
		}
	}()
	for range h.o.Subs {
		s, err := h.dom.NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: typeName, Node: benchNode, QoS: tpQoS})
		if err != nil {
			return c, err
		}
		subs = append(subs, s)
	}
	var r *dds.Reader
	if kase == CaseGatewayR {
		var err error
		if r, err = h.reader(topic, tpQoS); err != nil {
			return c, err
		}
		defer r.Close()
	}
	p, err := h.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typeName, Node: benchNode, QoS: tpQoS})
	if err != nil {
		return c, err
	}
	defer p.Close()
	want := h.o.Subs
	if kase != CaseRgaps {
		want++ // the gateway's republishing subscription
	}
	if err := waitFor(ctx, "the subscriptions to match", func() bool {
		return p.Matched() >= want && (r == nil || matched(r.Matched, 1))
	}); err != nil {
		return c, err
	}

	var published atomic.Int64
	done := make(chan struct{}) // closed when the publisher has stopped; published is final
	got := make([]atomic.Int64, h.o.Subs+1)
	lastAt := make([]atomic.Int64, h.o.Subs+1) // ns since start of the reader's last message
	var wg sync.WaitGroup
	start := time.Now()
	finished := func(k int) bool {
		select {
		case <-done:
			return got[k].Load() >= published.Load()
		default:
			return false
		}
	}
	errc := make(chan error, h.o.Subs+2)
	deadline := start.Add(h.o.Duration + 30*time.Second)
	for k, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !finished(k) {
				if time.Now().After(deadline) {
					errc <- fmt.Errorf("subscription %d got %d of %d messages", k, got[k].Load(), published.Load())
					return
				}
				smp, err := s.TakeWait(50 * time.Millisecond)
				if errors.Is(err, zerocopy.ErrTimeout) || errors.Is(err, zerocopy.ErrNoData) {
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				smp.Return()
				got[k].Add(1)
				lastAt[k].Store(int64(time.Since(start)))
			}
		}()
	}
	if r != nil {
		k := h.o.Subs
		wg.Add(1)
		go func() {
			defer wg.Done()
			idle := time.Now()
			for !finished(k) {
				s, ok, err := r.Take()
				if err != nil {
					errc <- err
					return
				}
				if !ok {
					// The gateway's subscription is KEEP_LAST (package
					// gateway maps KEEP_ALL to a depth of 100), so the DDS
					// reader may miss messages: it stops once idle
					// after the publisher has.
					select {
					case <-done:
						if time.Since(idle) > ddsIdle || time.Now().After(deadline) {
							return
						}
					default:
					}
					r.Wait(50 * time.Millisecond)
					continue
				}
				idle = time.Now()
				if len(s.Data) < size {
					errc <- fmt.Errorf("DDS sample of %d bytes, want %d", len(s.Data), size)
					return
				}
				got[k].Add(1)
				lastAt[k].Store(int64(time.Since(start)))
			}
		}()
	}
	msg := StringCDR(size)
	var perr error
	for end := start.Add(h.o.Duration); time.Now().Before(end) && ctx.Err() == nil; {
		if err := p.Publish(msg); err != nil {
			if errors.Is(err, zerocopy.ErrQueueFull) || errors.Is(err, zerocopy.ErrPoolExhausted) {
				continue // a reader is behind: the stream's pace
			}
			perr = err
			break
		}
		published.Add(1)
	}
	close(done)
	wg.Wait()
	close(errc)
	if perr != nil {
		return c, perr
	}
	if err := ctx.Err(); err != nil {
		return c, err
	}
	if err := <-errc; err != nil {
		return c, err
	}
	c.Messages = published.Load()
	var last int64
	for k := range got {
		last = max(last, lastAt[k].Load())
	}
	for k := range h.o.Subs {
		c.Delivered = append(c.Delivered, got[k].Load())
	}
	if r != nil {
		c.DDSGot = got[h.o.Subs].Load()
	}
	c.Elapsed = benchutil.Seconds(last)
	if last > 0 {
		c.Rate = float64(c.Messages) / time.Duration(last).Seconds()
	}
	return c, nil
}
