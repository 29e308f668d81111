package gateway

import (
	"bytes"
	"slices"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// rgaps → DDS: the gateway speaks for this host's rgaps nodes on
// ros_discovery_info, as rmw_cyclonedds_cpp speaks for its nodes: one
// sample with the gateway participant's gid listing every rgaps node
// registered on this host (the shared-memory graph: no node of another
// host, and neither the gateway nor the bridge registers one), each with
// the gids of the gateway's DDS endpoints that stand for the node's
// endpoints:
//
//   - a publisher on a carried topic: the topic's outgoing mirror's writer;
//   - a subscription: the incoming mirror's reader when DDS writers
//     exist, else a presence reader (below);
//   - a service's request subscription and reply publisher, a client's
//     request publisher and reply subscription: the service mirror's
//     reader and writer, while a mirror exists.
//
// A presence reader is a DDS reader on the topic of local subscriptions
// that have no incoming mirror (no DDS writer yet): without it, DDS nodes
// would not see the topic (`ros2 topic list`) nor the node's subscription
// (`ros2 node info`). It is KEEP_LAST 1 with the subscriptions' merged
// reliability and durability, ignores the gateway's own writers, and is
// never read: it carries nothing, so it can make no loop and no second
// delivery. It is closed when an incoming mirror takes over (the next
// refresh after a DDS writer appears) or the subscriptions leave.
//
// The sample is written when it differs from the last one written.

// presence is a presence reader and the want it was made for.
type presence struct {
	rd *dds.Reader
	w  want
}

// epKey names the endpoints of one kind on one rgaps topic.
type epKey struct {
	topic string
	kind  zerocopy.Kind
}

// announce updates the presence readers and writes the gateway's
// ros_discovery_info sample when it changed.
func (g *Gateway) announce() {
	nodes, err := g.dom.Nodes()
	if err != nil {
		g.log.Warn("reading the rgaps nodes", "err", err)
		return
	}
	topics, err := g.dom.Topics()
	if err != nil {
		g.log.Warn("reading the rgaps graph", "err", err)
		return
	}
	byNode := map[string][]epKey{}
	subs := map[string]want{}
	for _, ti := range topics {
		if ti.Publishers+ti.Subscriptions == 0 {
			continue
		}
		eps, err := g.dom.Endpoints(ti.Name)
		if err != nil {
			continue // the topic went away meanwhile
		}
		for _, ep := range eps {
			if ep.Republish {
				continue
			}
			byNode[ep.Node] = append(byNode[ep.Node], epKey{ep.Topic, ep.Kind})
			if ep.Kind == zerocopy.KindSubscription && g.carried(ep.Topic) {
				w, seen := subs[ep.Topic]
				if seen && w.typ != ep.Type {
					continue
				}
				merge(&w, !seen, ep.QoS)
				w.typ, w.q.Depth = ep.Type, 1
				if w.hash == (zerocopy.TypeHash{}) {
					w.hash = ep.TypeHash
				}
				subs[ep.Topic] = w
			}
		}
	}
	g.updatePresence(subs)
	stand := g.standIns()
	info := participantInfo{gid: gid(g.part.GUID())}
	for _, n := range nodes {
		fq := n.FullName()
		if fq == Node {
			continue
		}
		ne := nodeEntities{namespace: n.Namespace, name: n.Name}
		for _, k := range byNode[fq] {
			for _, id := range stand[k] {
				if k.kind == zerocopy.KindPublisher {
					ne.writers = append(ne.writers, id)
				} else {
					ne.readers = append(ne.readers, id)
				}
			}
		}
		ne.readers, ne.writers = sortedGids(ne.readers), sortedGids(ne.writers)
		info.nodes = append(info.nodes, ne)
	}
	b := info.encode()
	if bytes.Equal(b, g.dg.sent) {
		return
	}
	if err := g.dg.wr.Write(b); err != nil {
		g.log.Warn("writing ros_discovery_info", "err", err)
		return
	}
	g.dg.sent = b
	g.log.Debug("ros_discovery_info written", "nodes", len(info.nodes))
}

// updatePresence makes a presence reader for each topic of subs that has
// no incoming mirror, and closes those no longer wanted or made for
// another type or QoS.
func (g *Gateway) updatePresence(subs map[string]want) {
	d := g.dg
	for topic, p := range d.presence {
		w, ok := subs[topic]
		if !ok || g.in[topic] != nil || changed(p.w, w) {
			p.rd.Close()
			delete(d.presence, topic)
		}
	}
	for topic, w := range subs {
		if d.presence[topic] != nil || g.in[topic] != nil {
			continue
		}
		t, err := g.part.Topic(topic, w.typ)
		if err == nil {
			var rd *dds.Reader
			rd, err = t.NewReader(dds.EndpointOptions{QoS: w.q, UserData: userData(w.hash), IgnoreLocal: true})
			if err == nil {
				d.presence[topic] = &presence{rd: rd, w: w}
				g.accepted("presence", topic)
				continue
			}
		}
		g.refuse("presence", topic, err)
	}
}

// standIns maps rgaps topics and endpoint kinds to the gids of the
// gateway's DDS endpoints that stand for them.
func (g *Gateway) standIns() map[epKey][]gid {
	out := map[epKey][]gid{}
	add := func(topic string, kind zerocopy.Kind, e interface{ GUID() dds.GUID }) {
		k := epKey{topic, kind}
		out[k] = append(out[k], gid(e.GUID()))
	}
	for topic, m := range g.out {
		if o, ok := m.(*outMirror); ok {
			add(topic, zerocopy.KindPublisher, o.wr)
		}
	}
	for topic, m := range g.in {
		if i, ok := m.(*inMirror); ok {
			add(topic, zerocopy.KindSubscription, i.rd)
		}
	}
	for topic, p := range g.dg.presence {
		add(topic, zerocopy.KindSubscription, p.rd)
	}
	for name, m := range g.svcIn { // DDS clients, an rgaps service
		if s, ok := m.(*svcToRgaps); ok {
			add(reqTopic+name, zerocopy.KindSubscription, s.rd)
			add(respTopic+name, zerocopy.KindPublisher, s.wr)
		}
	}
	for name, m := range g.svcOut { // an rgaps client, a DDS service
		if s, ok := m.(*svcToDDS); ok {
			add(reqTopic+name, zerocopy.KindPublisher, s.wr)
			add(respTopic+name, zerocopy.KindSubscription, s.rd)
		}
	}
	return out
}

// sortedGids sorts and dedups gids (a node with two publishers on one
// topic has one stand-in).
func sortedGids(s []gid) []gid {
	slices.SortFunc(s, func(a, b gid) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(s)
}
