package gateway

import (
	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// checkQoS reports the readers a topic mirror cannot serve: a mirror's
// endpoints offer only what every endpoint it stands for offers (merge),
// so a reader on the other side that asks more (RELIABLE of BEST_EFFORT
// sources, TRANSIENT_LOCAL of VOLATILE ones, a deadline or lease they do
// not promise) does not match it, as it would not match those sources
// themselves. Each side's own status says so too (the DDS reader's
// requested-incompatible-QoS status, the rgaps subscription's
// IncompatibleQoS); the gateway logs the pair once, with the topic and
// the policy, and again only after the pair went away and came back.
// eps are the endpoints DDS discovery found. Must hold g.mu.
func (g *Gateway) checkQoS(eps []dds.Endpoint) {
	seen := map[string]bool{}
	report := func(key string, msg, topic string, pol qos.Policy, args ...any) {
		seen[key] = true
		if g.incompat[key] {
			return
		}
		g.incompat[key] = true
		g.log.Warn(msg, append([]any{"topic", topic, "policy", pol.String()}, args...)...)
	}
	if len(g.out) > 0 {
		own := g.part.GUID().Prefix()
		for _, ep := range eps {
			if ep.Writer || ep.Participant.Prefix() == own || ofGateway(ep.UserData) {
				continue
			}
			name, kind := dds.ROSName(ep.Topic)
			m := g.out[name]
			if kind != dds.KindTopic || m == nil {
				continue
			}
			offered := m.base().w.q
			if pol := qos.FirstIncompatiblePolicy(offered, ep.QoS); pol != qos.PolicyNone {
				_, reason := qos.CheckCompatible(offered, ep.QoS)
				report("dds "+ep.GUID.String()+" "+pol.String(), "incompatible QoS: a DDS reader gets nothing from the rgaps publishers", name, pol,
					"reader", ep.GUID.String(), "requested", ep.QoS.String(), "offered", offered.String(), "reason", reason)
			}
		}
	}
	for name, m := range g.in {
		eps, err := g.dom.Endpoints(name)
		if err != nil {
			continue
		}
		offered := m.base().w.q
		for _, ep := range eps {
			if ep.Republish || ep.Kind != zerocopy.KindSubscription {
				continue
			}
			if pol := qos.FirstIncompatiblePolicy(offered, ep.QoS); pol != qos.PolicyNone {
				_, reason := qos.CheckCompatible(offered, ep.QoS)
				report("rgaps "+ep.GID.String()+" "+pol.String(), "incompatible QoS: an rgaps subscription gets nothing from the DDS writers", name, pol,
					"subscription", ep.GID.String(), "node", ep.Node, "requested", ep.QoS.String(), "offered", offered.String(), "reason", reason)
			}
		}
	}
	for k := range g.incompat {
		if !seen[k] {
			delete(g.incompat, k)
		}
	}
}
