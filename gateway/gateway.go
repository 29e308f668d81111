package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Node is the node name the gateway's rgaps endpoints carry.
const Node = "/_rgaps_dds_gateway"

// Options configure Run.
type Options struct {
	// Engine is the engine configuration; its Domain is the ROS domain,
	// the DDS domain the gateway's participant joins too.
	Engine zerocopy.Config
	// Topics are glob patterns (path.Match) of the ROS topic names carried;
	// none: every topic but /rosout and /parameter_events. The rmw's
	// service topics are never carried.
	Topics []string
	// Discovery is how the DDS participant finds others.
	Discovery dds.Discovery
	// Interval is how often the graphs are re-read (default 200 ms).
	Interval time.Duration
	// Log receives the gateway's log (nil: silent).
	Log *slog.Logger
	// Ledger is the file of the delivery ledger (ledger.go): what the
	// gateway delivered from each source, so that a restarted gateway
	// does not deliver again what a transient-local source sends it
	// again. "": kept in memory, for this gateway's life only.
	Ledger string
}

// Gateway is an open gateway (New): Serve runs it, Close ends it. Run
// does all three.
type Gateway struct {
	o     Options
	log   *slog.Logger
	dom   *zerocopy.Domain
	part  *dds.Participant
	types *plainness
	led   *ledger

	mu  sync.Mutex
	out map[string]running // rgaps → DDS (outMirror), by ROS topic
	in  map[string]running // DDS → rgaps (inMirror), by ROS topic
	bad map[string]string  // topics refused, and why (logged once)
	// noted are the topics (by direction) passed over with an info line,
	// logged once
	noted map[string]bool
	// incompat are the pairs of a mirror and an endpoint it cannot serve
	// for their QoS, logged once (checkQoS)
	incompat map[string]bool

	svcIn     map[string]running // DDS clients → rgaps services (svcToRgaps), by service
	svcOut    map[string]running // rgaps clients → DDS services (svcToDDS), by service
	svcSerial int                // service mirrors made (their DDS client and service ids)

	dg *ddsGraph // the graph both ways (graph.go, announce.go)
}

// Run runs the gateway until ctx is done. It fails at once when libddsc
// cannot be loaded or the participant or engine domain cannot be opened.
func Run(ctx context.Context, o Options) error {
	g, err := New(o)
	if err != nil {
		return err
	}
	defer g.Close()
	g.Serve(ctx)
	return nil
}

// Serve refreshes the mirrors every Options.Interval until ctx is done.
func (g *Gateway) Serve(ctx context.Context) {
	t := time.NewTicker(g.o.Interval)
	defer t.Stop()
	for {
		g.Refresh()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// New opens the gateway's engine domain and DDS participant; Refresh
// makes its mirrors.
func New(o Options) (*Gateway, error) {
	if o.Interval <= 0 {
		o.Interval = 200 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if err := checkPatterns(o.Topics); err != nil {
		return nil, err
	}
	if err := dds.Load(); err != nil {
		return nil, err
	}
	led, err := openLedger(o.Ledger)
	if err != nil {
		return nil, err
	}
	dom, err := zerocopy.Open(o.Engine)
	if err != nil {
		led.close()
		return nil, err
	}
	// USER_DATA as rmw_cyclonedds_cpp's participants have it: DDS nodes
	// take a participant with an enclave for a ROS one.
	part, err := dds.Open(dds.Config{Domain: dom.Config().Domain, Discovery: o.Discovery, UserData: []byte("enclave=/;")})
	if err != nil {
		dom.Close()
		led.close()
		return nil, err
	}
	g := &Gateway{o: o, log: o.Log, dom: dom, part: part, types: newPlainness(), led: led,
		out: map[string]running{}, in: map[string]running{}, bad: map[string]string{}, noted: map[string]bool{}, incompat: map[string]bool{},
		svcIn: map[string]running{}, svcOut: map[string]running{}}
	if err := g.openGraph(); err != nil {
		return nil, errors.Join(fmt.Errorf("gateway: ros_discovery_info: %w", err), part.Close(), dom.Close(), led.close())
	}
	o.Log.Info("DDS gateway running", "domain", part.Domain(), "participant", part.GUID().String(), "topics", o.Topics, "ddsc", dds.LoadedFrom(), "ledger", o.Ledger)
	return g, nil
}

// Close stops every mirror and closes the participant and the domain.
func (g *Gateway) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	// Every direction's mirrors drain side by side (apply with nothing
	// wanted only stops, each direction in its own map).
	var stopping sync.WaitGroup
	for dir, have := range map[string]map[string]running{"to DDS": g.out, "from DDS": g.in, dirSvcIn: g.svcIn, dirSvcOut: g.svcOut} {
		stopping.Go(func() { g.apply(dir, have, nil, nil) })
	}
	stopping.Wait()
	g.closeGraph()
	return errors.Join(g.part.Close(), g.dom.Close(), g.led.close())
}

// Refresh re-reads both graphs, makes the mirrors that are missing and
// tears down those whose endpoints went away (or changed type or QoS).
func (g *Gateway) Refresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	eps, epsErr := g.part.Endpoints()
	if epsErr != nil {
		g.log.Warn("reading DDS discovery", "err", epsErr)
	}
	if want, err := g.localWants(); err != nil {
		g.log.Warn("reading the rgaps graph", "err", err)
	} else if epsErr == nil {
		keepAllFor(want, func(topic string) bool { return g.ddsReaderHoldsBack(eps, topic) })
		g.apply("to DDS", g.out, want, g.startOut)
		for name, m := range g.out {
			m.(*outMirror).sinks.see(g, eps, name)
		}
	}
	if epsErr == nil {
		want := g.ddsWants(eps)
		keepAllFor(want, g.rgapsReaderHoldsBack)
		g.apply("from DDS", g.in, want, g.startIn)
	}
	if epsErr == nil {
		g.checkQoS(eps)
	}
	if toRgaps, toDDS, err := g.serviceWants(); err != nil {
		g.log.Warn("reading the graphs for services", "err", err)
	} else {
		g.apply(dirSvcIn, g.svcIn, toRgaps, g.startSvcToRgaps)
		g.apply(dirSvcOut, g.svcOut, toDDS, g.startSvcToDDS)
	}
	g.refreshGraph()
}

// The directions of service mirrors, as logged.
const (
	dirSvcIn  = "service: DDS clients to rgaps"
	dirSvcOut = "service: rgaps clients to DDS"
)

// refuse logs once that topic cannot be carried in a direction.
func (g *Gateway) refuse(dir, topic string, err error) {
	key := dir + " " + topic
	msg := err.Error()
	if g.bad[key] == msg {
		return
	}
	g.bad[key] = msg
	g.log.Warn("DDS gateway cannot carry a topic", "direction", dir, "topic", topic, "err", err)
}

// note logs once an info line about a topic of a direction. Must hold g.mu.
func (g *Gateway) note(dir, topic, msg string) {
	if key := dir + " " + topic + " " + msg; !g.noted[key] {
		g.noted[key] = true
		g.log.Info(msg, "direction", dir, "topic", topic)
	}
}

// accepted forgets a refusal once the topic is carried.
func (g *Gateway) accepted(dir, topic string) { delete(g.bad, dir+" "+topic) }
