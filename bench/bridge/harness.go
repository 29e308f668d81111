package benchbridge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Defaults.
const (
	DefaultProvider = "fabric:tcp"
	DefaultRingSize = bridge.DefaultRingSize
	DefaultRounds   = 200
	// Topics is the topic count of the one-ring and per-topic variants.
	Topics = 4
	// MinSize is the smallest message: its first 16 bytes carry the
	// sequence number and size the subscriber checks.
	MinSize = 16
	// bigSize: latency rounds above it are a tenth (at least 10).
	bigSize = 16 << 20
	// takeTimeout bounds the wait for one message; setUpTimeout the
	// bridges' connection and a topic's first match.
	takeTimeout  = 60 * time.Second
	setUpTimeout = 30 * time.Second
)

// DefaultSizes are the message sizes of a run without -sizes.
var DefaultSizes = []int{4 << 10, 1 << 20, 4 << 20, 64 << 20}

// Options configure Run. Zero values take the defaults.
type Options struct {
	Sizes []int
	// N is the number of timed messages per size in the throughput phase
	// (all topics together); 0: 1 GiB worth, at least 50, at most 10,000.
	N int
	// Rounds is the number of latency samples per size (sizes above
	// 16 MiB: a tenth, at least 10).
	Rounds int
	// Window is the number of messages in flight (published and not yet
	// taken) in the throughput phase, split over the topics; 0: 128 MiB
	// worth, at least 2, at most 128.
	Window int
	// RingSize is the size of every ring (bridge.DefaultRingSize).
	RingSize uint64
	// Provider is the bridge's data transport of the default path
	// ("fabric:tcp"); the plain TCP comparison always uses "tcp".
	Provider string
	// NoVerify skips the subscriber's CRC of every payload (the sequence
	// number and size are still checked).
	NoVerify bool
	// Prefix is the base of the run's shared-memory prefixes (its hosts
	// are Prefix+"a" and Prefix+"b"); "" makes a private one. Every segment
	// of the hosts' prefixes is removed at the end of the run.
	Prefix string
	// Variants selects variants by key (nil: all); see Variants.
	Variants []string
	// Reps is how often every throughput measurement (baselines too) is
	// repeated; the report shows the median (0: 1).
	Reps int
	// Fill makes the timed runs' publisher write whole payloads (a producer
	// that writes its data with the CPU: it is in the cache when the bridge
	// sends it), not only each message's stamp.
	Fill bool
	// Gap is the pause before each latency round (0: none): messages
	// that come that far apart, as a camera's frames do, find the
	// bridges idle, where back-to-back rounds find them polling.
	Gap time.Duration
	// Rails is K of the rails variant (one topic striped over K
	// connections) and of its K-endpoint bare loop; 0 is what the bridge
	// chooses on this machine (bridge.AutoRails).
	Rails int
	// Log receives the bridges' events; nil is silent.
	Log *slog.Logger
	// Progress receives a line per step; nil is silent.
	Progress io.Writer
}

func (o Options) withDefaults() (Options, error) {
	if len(o.Sizes) == 0 {
		o.Sizes = DefaultSizes
	}
	for _, s := range o.Sizes {
		if s < MinSize {
			return o, fmt.Errorf("message size %d: at least %d bytes", s, MinSize)
		}
	}
	if o.Rounds == 0 {
		o.Rounds = DefaultRounds
	}
	if o.Reps == 0 {
		o.Reps = 1
	}
	if o.RingSize == 0 {
		o.RingSize = DefaultRingSize
	}
	if o.Provider == "" {
		o.Provider = DefaultProvider
	}
	if o.N < 0 || o.Rounds < 0 || o.Window < 0 || o.Reps < 0 {
		return o, errors.New("counts must not be negative")
	}
	cfg := ring.Config{Size: o.RingSize}
	if _, err := cfg.Validate(); err != nil {
		return o, fmt.Errorf("ring size %d: %v", o.RingSize, err)
	}
	for _, k := range o.Variants {
		if !slices.ContainsFunc(Variants(o.Provider), func(v Variant) bool { return v.Key == k }) {
			return o, fmt.Errorf("unknown variant %q", k)
		}
	}
	return o, nil
}

// messages is the timed message count for size.
func (o Options) messages(size int) int {
	if o.N > 0 {
		return o.N
	}
	return min(max((1<<30)/size, 50), 10000)
}

// rounds is the latency sample count for size.
func (o Options) rounds(size int) int {
	if size > bigSize {
		return max(o.Rounds/10, min(o.Rounds, 10))
	}
	return o.Rounds
}

// window is the per-topic window for size with topics topics.
func (o Options) window(size, topics int) int {
	w := o.Window
	if w == 0 {
		w = min(max((128<<20)/size, 2), 128)
	}
	return max(1, w/topics)
}

// Variant is one bridge configuration measured.
type Variant struct {
	Key       string `json:"key"`
	Name      string `json:"name"`
	Provider  string `json:"provider"`
	Mode      ring.Mode
	Watermark ring.Watermark
	PerTopic  bool `json:"per_topic"`
	Topics    int  `json:"topics"`
	// Rails: connections per ring (0: the run's Options.Rails, resolved).
	Rails int `json:"rails"`
	// Latency: the variant's latency is measured too (single-topic ones).
	Latency bool `json:"latency"`
}

// Variant keys.
const (
	KeyDefault   = "default"
	KeyPlainTCP  = "tcp"
	KeyTwice     = "write-twice"
	KeyQuarter   = "watermark-1/4"
	KeyOneRing4  = "one-ring-x4"
	KeyPerTopic4 = "per-topic-x4"
)

// Variants are the configurations a run measures, default first.
func Variants(provider string) []Variant {
	vs := []Variant{
		{Key: KeyDefault, Name: "bridge " + provider + " (default, 1 rail)", Provider: provider, Topics: 1, Latency: true, Rails: 1},
		{Key: KeyPlainTCP, Name: "bridge tcp (plain TCP transport)", Provider: "tcp", Topics: 1, Latency: true, Rails: 1},
		{Key: KeyTwice, Name: "write-twice", Provider: provider, Mode: ring.WriteTwice, Topics: 1, Latency: true, Rails: 1},
		{Key: KeyQuarter, Name: "watermark 1/4", Provider: provider, Watermark: ring.Quarter, Topics: 1, Latency: true, Rails: 1},
		{Key: KeyOneRing4, Name: fmt.Sprintf("%d topics, one ring", Topics), Provider: provider, Topics: Topics, Rails: 1},
		{Key: KeyPerTopic4, Name: fmt.Sprintf("%d topics, per-topic rings", Topics), Provider: provider, PerTopic: true, Topics: Topics, Rails: 1},
		railsVariant(provider),
	}
	if isPlainTCP(provider) {
		vs = slices.DeleteFunc(vs, func(v Variant) bool { return v.Key == KeyPlainTCP })
	}
	if provider == "fabric:shm" {
		// shm does not order RMA writes: the bridge refuses write-twice.
		vs = slices.DeleteFunc(vs, func(v Variant) bool { return v.Key == KeyTwice })
	}
	return vs
}

func isPlainTCP(p string) bool { return p == "tcp" || p == "plaintcp" }

func (o Options) variants() []Variant {
	all := Variants(o.Provider)
	if o.Variants == nil {
		return all
	}
	return slices.DeleteFunc(all, func(v Variant) bool { return !slices.Contains(o.Variants, v.Key) })
}

// Run measures everything Options ask for, baselines first, and returns
// the results. It fails on the first error, on a lost, duplicated,
// reordered or corrupted message, and when ctx is cancelled; bridges and
// shared memory are closed and removed either way.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Prefix == "" {
		o.Prefix = benchutil.PrivatePrefix("bb")
	}
	defer func() {
		if rerr := removeSegments(o.Prefix); err == nil && rerr != nil {
			err = rerr
		}
	}()
	start := time.Now()
	res = &Result{Machine: machineInfo(), Provider: o.Provider, RingSize: o.RingSize, Verify: !o.NoVerify, Reps: o.Reps, GapNs: int64(o.Gap),
		Sizes: o.Sizes, Prefix: o.Prefix, Rails: o.railsK(), Fill: o.Fill}
	vs := o.variants()
	k := o.resolveRails(vs)
	bareK := k > 1 && slices.ContainsFunc(vs, func(v Variant) bool { return v.Key == KeyRails })
	steps := o.Reps * len(o.Sizes) * (3 + len(vs))
	if bareK {
		steps += o.Reps * len(o.Sizes)
	}
	pr := &progress{w: o.Progress, total: steps, start: start}
	defer pr.finish()
	res.Bare = make([]Baseline, len(o.Sizes))
	res.Loop = make([]Baseline, len(o.Sizes))
	res.BareStream = make([]Baseline, len(o.Sizes))
	if bareK {
		res.BareRails = make([]Baseline, len(o.Sizes))
	}
	res.Variants = make([]VariantResult, len(vs))
	for i, v := range vs {
		res.Variants[i] = VariantResult{Variant: v, ModeName: v.Mode.String(), WatermarkName: v.Watermark.String(),
			Cells: make([]Cell, len(o.Sizes))}
	}
	// Every repetition measures everything once, size by size, the
	// baselines right before the bridge at the same size and the variants
	// in an order rotated by one each repetition, so that a slow spell of
	// a shared machine hits baselines and variants alike; ratios are taken
	// per repetition, then the median. Every cell gets a fresh pair of
	// bridges with pools sized for its messages.
	var resubs atomic.Int64
	defer func() {
		if res != nil {
			res.Resubscribes = int(resubs.Load())
		}
	}()
	for rep := range o.Reps {
		for i, size := range o.Sizes {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			n := o.messages(size)
			err := res.bareStep(pr, i, size, fmt.Sprintf("bare fi_writedata loop, %s × %d", benchutil.FormatSize(size), n), func() (Baseline, error) {
				return measureBare(o.Provider, size, n, o.Prefix)
			})
			if err != nil {
				return nil, err
			}
			if res.BareNote == "" {
				// The bridge's working set: the publisher's window of pool
				// blocks, and the ring the reader lands them in.
				src, dst := o.window(size, 1)*size, int(o.RingSize)
				pr.step(fmt.Sprintf("bare fi_writedata loop, streaming (%s → %s), %s × %d", benchutil.FormatSize(src), benchutil.FormatSize(dst), benchutil.FormatSize(size), n))
				b, err := measureBareStream(o.Provider, size, n, src, dst, o.Prefix)
				if err != nil {
					return nil, fmt.Errorf("streaming bare loop, %s: %w", benchutil.FormatSize(size), err)
				}
				res.BareStream[i].add(b)
			}
			if bareK {
				pr.step(fmt.Sprintf("bare fi_writedata loop over %d endpoints, %s × %d", k, benchutil.FormatSize(size), n))
				if res.BareNote == "" {
					b, err := measureBareRails(o.Provider, size, n, k, o.Prefix)
					if err != nil {
						return nil, fmt.Errorf("bare loop over %d endpoints, %s: %w", k, benchutil.FormatSize(size), err)
					}
					res.BareRails[i].add(b)
				}
			}
			if uint64(size) <= o.RingSize {
				pr.step(fmt.Sprintf("transport WriteImm loop, %s × %d", benchutil.FormatSize(size), n))
				l, err := measureLoop(o.Provider, size, n, o.RingSize)
				if err != nil {
					return nil, fmt.Errorf("transport loop, %s: %w", benchutil.FormatSize(size), err)
				}
				res.Loop[i].add(l)
			} else {
				pr.step("no transport loop: messages larger than the ring")
			}
			for k := range vs {
				vr := &res.Variants[(k+rep)%len(vs)]
				pr.step(fmt.Sprintf("%s, %s", vr.Name, benchutil.FormatSize(size)))
				if err := runVariant(ctx, o, vr, &vr.Cells[i], size, rep, &resubs); err != nil {
					return nil, fmt.Errorf("%s, %s: %w", vr.Name, benchutil.FormatSize(size), err)
				}
			}
		}
	}
	if res.BareNote != "" {
		res.BareRails, res.BareStream = nil, nil
	}
	res.finish(start)
	return res, nil
}

// bareStep measures a bare loop into res.Bare[i] with measure, unless an
// earlier one found that the provider has none (res.BareNote, set here
// then: the run goes on without the baseline).
func (res *Result) bareStep(pr *progress, i, size int, what string, measure func() (Baseline, error)) error {
	if res.BareNote != "" {
		pr.step("no bare loop")
		return nil
	}
	pr.step(what)
	b, err := measure()
	if err != nil {
		if !notSupported(err) {
			return fmt.Errorf("bare loop, %s: %w", benchutil.FormatSize(size), err)
		}
		res.BareNote = err.Error()
		return nil
	}
	res.Bare[i].add(b)
	return nil
}

// removeSegments removes what the run's hosts left in /dev/shm (graph
// segments are persistent by design; topics are gone already after a
// clean close).
func removeSegments(prefix string) error {
	ents, _ := os.ReadDir("/dev/shm")
	var errs []error
	for _, e := range ents {
		for _, h := range []string{"a", "b"} {
			if strings.HasPrefix(e.Name(), prefix+h+"_") {
				if err := os.Remove(filepath.Join("/dev/shm", e.Name())); err != nil && !os.IsNotExist(err) {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// pair is the two hosts.
type pair struct {
	a, b *bridge.Bridge
	// resubscribes counts subscriptions opened again because host a's
	// bridge had not subscribed after a second: its peer-up announcement
	// of host b's (then empty) interest can overtake the update that
	// follows the subscription (bridge.peerUp and refreshLocal send
	// without ordering), leaving host a with a stale interest.
	resubscribes *atomic.Int64
}

// poolSize is the topic pool of variant v at size: its window
// plus one message (on host a, a sample the bridge has not seen
// acknowledged yet) and some room. A fuller pool only makes a publisher
// (ours on host a, the bridge's on host b) wait for a returned sample;
// the run's memory is what a shared 2-core machine can spare.
func poolSize(o Options, v Variant, size int) uint64 {
	p := max(16<<20, uint64(o.window(size, v.Topics)+1)*uint64(size)+4<<20)
	return (p + 1<<20 - 1) &^ (1<<20 - 1)
}

// openPair starts host b (listening on 127.0.0.1) and host a (dialling
// b) and waits until each sees the other.
func openPair(o Options, v Variant, size int, resubs *atomic.Int64) (*pair, error) {
	secret := make([]byte, 32)
	rand.Read(secret)
	pool := poolSize(o, v, size)
	mk := func(host, listen string, peers []control.Peer) (*bridge.Bridge, error) {
		return bridge.New(bridge.Options{
			Engine:    zerocopy.Config{Prefix: o.Prefix + host, PoolSize: pool, SkipStaleClean: true},
			Control:   control.Config{Listen: listen, Peers: peers, Secret: secret, HostID: "bench-" + host},
			Provider:  v.Provider,
			DataHost:  "127.0.0.1",
			RingSize:  o.RingSize,
			Mode:      v.Mode,
			Watermark: v.Watermark,
			PerTopic:  v.PerTopic,
			Rails:     v.Rails,
			Log:       o.Log,
		})
	}
	b, err := mk("b", "127.0.0.1:0", nil)
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(b.ControlAddr())
	pn, _ := strconv.Atoi(port)
	a, err := mk("a", "", []control.Peer{{Host: "127.0.0.1", Port: pn}})
	if err != nil {
		b.Close()
		return nil, err
	}
	p := &pair{a: a, b: b, resubscribes: resubs}
	deadline := time.Now().Add(setUpTimeout)
	for !peerUp(a) || !peerUp(b) {
		if time.Now().After(deadline) {
			p.close()
			return nil, errors.New("the two bridges did not connect")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return p, nil
}

func peerUp(b *bridge.Bridge) bool {
	for _, p := range b.Status().Peers {
		if p.Up {
			return true
		}
	}
	return false
}

func (p *pair) close() error {
	// Close both at once: each side's data endpoints say goodbye to the
	// other, which must still be progressing.
	ch := make(chan error, 1)
	go func() { ch <- p.b.Close() }()
	return errors.Join(p.a.Close(), <-ch)
}

// counters sums the writer links of a and the reader links of b.
type counters struct {
	Records, WriteBacks, Resent, Dropped, Dups, Failures uint64
	// Acked counts messages the writer saw acknowledged (all records
	// behind the reader's head): once it has reached the messages sent,
	// the other counters have settled.
	Acked uint64
}

func (p *pair) counters() counters {
	var c counters
	for _, ps := range p.a.Status().Peers {
		for _, l := range ps.Links {
			if l.Role == "writer" {
				c.Acked += l.Messages
				c.Records += l.Records
				c.Resent += l.Resent
				c.Dropped += l.Dropped
				c.Failures += l.Failures
			}
		}
	}
	for _, ps := range p.b.Status().Peers {
		for _, l := range ps.Links {
			if l.Role == "reader" {
				c.WriteBacks += l.WriteBacks
				c.Dups += l.Dups
				c.Dropped += l.Dropped
				c.Failures += l.Failures
			}
		}
	}
	return c
}

func (c *counters) add(d counters) {
	c.Records += d.Records
	c.WriteBacks += d.WriteBacks
	c.Resent += d.Resent
	c.Dropped += d.Dropped
	c.Dups += d.Dups
	c.Failures += d.Failures
	c.Acked += d.Acked
}

func (c counters) minus(d counters) counters {
	return counters{c.Records - d.Records, c.WriteBacks - d.WriteBacks, c.Resent - d.Resent, c.Dropped - d.Dropped, c.Dups - d.Dups, c.Failures - d.Failures, c.Acked - d.Acked}
}

// settled returns the counters once the writer has seen every one of
// sent messages acknowledged (the subscriber can take a message before
// the writer has counted its last record), or after a second anyway.
func (p *pair) settled(sent int) counters {
	deadline := time.Now().Add(time.Second)
	for {
		c := p.counters()
		if c.Acked >= uint64(sent) || time.Now().After(deadline) {
			return c
		}
		time.Sleep(time.Millisecond)
	}
}

// runVariant measures one repetition of a variant at a size into c, on
// a pair of bridges of its own.
func runVariant(ctx context.Context, o Options, vr *VariantResult, c *Cell, size, rep int, resubs *atomic.Int64) (err error) {
	p, err := openPair(o, vr.Variant, size, resubs)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.close()) }()
	vr.ProviderName = p.a.ProviderName()
	return runCell(ctx, o, vr.Variant, p, c, size, rep)
}

// runCell measures one repetition of a variant at a size into c: a
// throughput run, and a share of the latency rounds.
func runCell(ctx context.Context, o Options, v Variant, p *pair, c *Cell, size, rep int) (err error) {
	pat := newPattern(size)
	var ss []*stream
	defer func() {
		for _, s := range ss {
			c.Sent += s.sent
			c.Received += s.received
			err = errors.Join(err, s.close())
		}
		if err == nil && c.Sent != c.Received {
			err = fmt.Errorf("%d messages published, %d received", c.Sent, c.Received)
		}
	}()
	for t := range v.Topics {
		s, err := openStream(p, fmt.Sprintf("/bench_bridge/t%d", t), t, pat, !o.NoVerify)
		if err != nil {
			return err
		}
		ss = append(ss, s)
	}
	for _, s := range ss {
		if err := s.warm(2); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	c.Size, c.Window = size, o.window(size, v.Topics)
	per := (o.messages(size) + v.Topics - 1) / v.Topics
	c.Messages = per * v.Topics
	// One untimed lap first, at the same window: every pool block the
	// timed run uses and every page of the ring are then in memory, as the
	// bare loops fault their regions in before their clocks start (a
	// fresh pool's first lap pays a page fault per page on both hosts).
	if _, err := throughput(ctx, ss, warmLap(o, size, c.Window, per), c.Window, false, false); err != nil {
		return fmt.Errorf("warm-up lap: %w", err)
	}
	sent := func() int {
		n := 0
		for _, s := range ss {
			n += s.sent
		}
		return n
	}
	before := p.settled(sent())
	elapsed, err := throughput(ctx, ss, per, c.Window, o.Fill, false)
	if err != nil {
		return err
	}
	c.Runs = append(c.Runs, elapsed)
	d := p.settled(sent()).minus(before)
	c.Links.add(d)
	if d.Dropped != 0 || d.Failures != 0 || d.Dups != 0 {
		return fmt.Errorf("the bridge dropped %d messages, suppressed %d duplicates and had %d link failures", d.Dropped, d.Dups, d.Failures)
	}
	if !o.NoVerify {
		// Untimed: whole payloads written and CRC-checked, at the same
		// window, through the same bridges.
		if _, err := throughput(ctx, ss, verifyCount(per), c.Window, true, true); err != nil {
			return fmt.Errorf("verification pass: %w", err)
		}
	}
	if v.Latency {
		// The rounds are spread over the repetitions.
		r := o.rounds(size)
		share := r / o.Reps
		if rep < r%o.Reps {
			share++
		}
		if share > 0 {
			lat, err := latency(ctx, ss[0], share, o.Gap)
			if err != nil {
				return fmt.Errorf("latency: %w", err)
			}
			c.lat = append(c.lat, lat...)
		}
	}
	return nil
}

// warmLap is the untimed messages per topic that go round the pool
// blocks of a window and the ring once (at most the timed run's count).
func warmLap(o Options, size, window, per int) int {
	return min(per, window+int((o.RingSize+uint64(size)-1)/uint64(size))+1)
}

// throughput publishes per messages on every stream at once, each with
// at most window messages published and not yet taken, and returns the
// time from the first publish until the last take. The publisher writes
// each message's whole pattern with fill, else only its 16-byte stamp
// (timed runs: a user's own production of the data lies outside what the
// bridge does); the subscriber checks the stamp (sequence, size, topic)
// and, with crc (and verification on), a CRC-32C of the payload.
func throughput(ctx context.Context, ss []*stream, per, window int, fill, crc bool) (time.Duration, error) {
	stop := make(chan struct{})
	var once sync.Once
	var firstErr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil && !errors.Is(err, errStopped) {
			firstErr = err
		}
		mu.Unlock()
		once.Do(func() { close(stop) })
	}
	go func() {
		select {
		case <-ctx.Done():
			fail(ctx.Err())
		case <-stop:
		}
	}()
	var wg sync.WaitGroup
	ends := make([]time.Time, len(ss))
	start := time.Now()
	for i, s := range ss {
		sem := make(chan struct{}, window)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range per {
				select {
				case sem <- struct{}{}:
				case <-stop:
					return
				}
				if err := s.publishAs(!fill); err != nil {
					fail(fmt.Errorf("publish: %w", err))
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range per {
				if err := s.takeAs(stop, s.verify && crc); err != nil {
					fail(err)
					return
				}
				<-sem
			}
			ends[i] = time.Now()
		}()
	}
	wg.Wait()
	once.Do(func() { close(stop) })
	if firstErr != nil {
		return 0, firstErr
	}
	end := start
	for _, e := range ends {
		if e.After(end) {
			end = e
		}
	}
	return end.Sub(start), nil
}

// latency sends one message at a time: each sample is the time from the
// publish call until the subscription's Take returned it (same process,
// same clock), with the message already written into its loan, after a
// pause of gap.
func latency(ctx context.Context, s *stream, rounds int, gap time.Duration) ([]int64, error) {
	if err := s.warm(2); err != nil {
		return nil, err
	}
	out := make([]int64, 0, rounds)
	for range rounds {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := s.loan(false)
		if err != nil {
			return nil, err
		}
		if gap > 0 {
			time.Sleep(gap)
		}
		t0 := time.Now()
		if err := l.Publish(); err != nil {
			return nil, err
		}
		s.sent++
		smp, err := s.sub.TakeWait(takeTimeout)
		t1 := time.Now()
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", s.expect, err)
		}
		if err := s.check(smp); err != nil {
			return nil, err
		}
		out = append(out, t1.Sub(t0).Nanoseconds())
	}
	return out, nil
}

// add records one repetition; Elapsed becomes the median so far.
func (b *Baseline) add(r Baseline) {
	b.Size, b.Iters = r.Size, r.Iters
	b.Runs = append(b.Runs, r.Elapsed)
	b.Elapsed = median(b.Runs)
}

// finish computes the cell's medians and latency percentiles.
func (c *Cell) finish() {
	c.Elapsed = median(c.Runs)
	if n := uint64(len(c.Runs)); n > 1 {
		c.Links.Records /= n
		c.Links.WriteBacks /= n
	}
	if len(c.lat) == 0 {
		return
	}
	lat := slices.Clone(c.lat)
	slices.Sort(lat)
	c.Rounds = len(lat)
	c.P50, c.P99 = benchutil.Percentile(lat, 50), benchutil.Percentile(lat, 99)
	var sum int64
	for _, x := range lat {
		sum += x
	}
	c.Mean = sum / int64(len(lat))
}

// medianRatio is the median over repetitions of the throughput ratio of
// run i of a (msgsA messages) to run i of b (msgsB messages), both of
// the same size; 0 when either is missing.
func medianRatio(a []time.Duration, msgsA int, b []time.Duration, msgsB int) float64 {
	n := min(len(a), len(b))
	if n == 0 {
		return 0
	}
	rs := make([]float64, 0, n)
	for i := range n {
		if a[i] <= 0 || b[i] <= 0 {
			return 0
		}
		rs = append(rs, (float64(msgsA)/a[i].Seconds())/(float64(msgsB)/b[i].Seconds()))
	}
	slices.Sort(rs)
	if n%2 == 1 {
		return rs[n/2]
	}
	return (rs[n/2-1] + rs[n/2]) / 2
}

// median of durations (the lower middle one of an even count).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
