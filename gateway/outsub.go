package gateway

import (
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// An out mirror's rgaps subscription. A volatile mirror subscribes only
// while a DDS reader is matched to its writer: without one, a message
// would be taken to be written to nobody, and a subscription that takes
// costs the publishers (the gateway's wake-ups, and its queue holding
// pool blocks while it is behind). Its KEEP_LAST depth is then no deeper
// than the deepest DDS reader keeps (each sample it holds queued holds a
// block of the topic's pool; deeper would only keep what the readers
// would drop). A transient-local mirror subscribes from the start, at the
// sources' depth: its DDS writer keeps their history for readers to come.

// subPoll is how often a mirror without a subscription looks for a
// matched DDS reader.
const subPoll = 20 * time.Millisecond

// sinks is what the DDS readers of a mirror's topic keep, as Refresh last
// saw them: how many there are, and the depth of the deepest KEEP_LAST
// one, 0 when there is a KEEP_ALL one (no cap: the sources' depth).
type sinks struct {
	readers atomic.Int32
	depth   atomic.Uint32
}

// see records the DDS readers of the ROS topic name among the endpoints
// eps DDS discovery found (the gateway's own and other gateways' left
// out).
func (s *sinks) see(g *Gateway, eps []dds.Endpoint, name string) {
	own := g.part.GUID().Prefix()
	var n int32
	var depth uint32
	keepAll := false
	for _, ep := range eps {
		if ep.Writer || ep.Participant.Prefix() == own || ofGateway(ep.UserData) {
			continue
		}
		if r, kind := dds.ROSName(ep.Topic); kind != dds.KindTopic || r != name {
			continue
		}
		n++
		keepAll = keepAll || ep.QoS.History != qos.HistoryKeepLast
		depth = max(depth, ep.QoS.Depth, 1)
	}
	if keepAll {
		depth = 0
	}
	s.depth.Store(depth)
	s.readers.Store(n)
}

// subscribed reports whether the mirror has a subscription, making one
// when a DDS reader is matched; without, it waits subPoll (or until
// stopped) and says false.
func (m *outMirror) subscribed(g *Gateway) bool {
	if m.sub != nil {
		return true
	}
	// A reader Refresh has seen (so sinks are known) and matched.
	if n, err := m.wr.Matched(); err != nil || n == 0 || m.sinks.readers.Load() == 0 {
		m.pause(subPoll)
		return false
	}
	depth := m.w.q.Depth
	if d := m.sinks.depth.Load(); d > 0 {
		depth = min(depth, d)
	}
	sub, err := m.subscribe(g, depth)
	if err != nil {
		m.warnOnce(g.log, "subscribe", "subscribing in rgaps failed", "err", err)
		m.pause(waitPeriod)
		return false
	}
	m.sub = sub
	return true
}

// subscribe makes the mirror's republishing subscription, KEEP_LAST ones
// depth deep.
func (m *outMirror) subscribe(g *Gateway, depth uint32) (*zerocopy.Subscription, error) {
	q := m.w.q
	if q.History == qos.HistoryKeepLast {
		q.Depth = max(depth, 1)
	}
	// MemoryAny: publishers make no copy for the gateway; it copies a
	// device-only payload out itself, and only when it writes it.
	return g.dom.NewSubscription(zerocopy.EndpointSpec{Topic: m.name, Type: m.w.typ, TypeHash: m.w.hash, Node: Node, QoS: q,
		Memory: zerocopy.MemoryAny, Republish: true})
}

// unsubscribeIdle drops a volatile mirror's subscription once no DDS
// reader is matched.
func (m *outMirror) unsubscribeIdle() {
	if m.sub == nil || m.w.q.Durability == qos.DurabilityTransientLocal {
		return
	}
	if n, err := m.wr.Matched(); err == nil && n == 0 {
		m.sub.Close()
		m.sub = nil
	}
}

// pause waits d, or until the mirror is told to stop.
func (m *outMirror) pause(d time.Duration) {
	select {
	case <-m.quit:
	case <-time.After(d):
	}
}
