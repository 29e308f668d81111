package gateway

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// want is what a mirror of one topic needs: the type, the type hash when
// known, and a QoS every endpoint it stands for is compatible with.
type want struct {
	typ  string
	hash zerocopy.TypeHash
	q    qos.Profile
	// resp and rhash are a service's response type and its hash (typ and
	// hash are the request's); empty for topics.
	resp  string
	rhash zerocopy.TypeHash
}

// defaultExcluded are the topics not carried unless a pattern of
// Options.Topics names them: every ROS node has them on each side.
var defaultExcluded = []string{"/rosout", "/parameter_events"}

// checkPatterns reports a malformed pattern.
func checkPatterns(pats []string) error {
	for _, p := range pats {
		if _, err := path.Match(p, "/"); err != nil {
			return fmt.Errorf("gateway: topic pattern %q: %w", p, err)
		}
	}
	return nil
}

// carried reports whether the gateway carries the ROS topic name.
func (g *Gateway) carried(topic string) bool {
	if strings.HasPrefix(topic, "/_rgaps_rq") || strings.HasPrefix(topic, "/_rgaps_rr") {
		return false // the rmw's service topics (§3.10's service layout)
	}
	if len(g.o.Topics) == 0 {
		for _, x := range defaultExcluded {
			if topic == x {
				return false
			}
		}
		return true
	}
	for _, p := range g.o.Topics {
		if ok, _ := path.Match(p, topic); ok {
			return true
		}
	}
	return false
}

// merge folds the QoS of one more endpoint into w: reliable and transient
// local only while every endpoint offers them, KEEP_ALL while every
// endpoint is RELIABLE KEEP_ALL (keepAllFor decides with the readers),
// else KEEP_LAST with the deepest history (100 for KEEP_ALL), and no
// deadline, lifespan or liveliness lease, automatic liveliness: what both
// of a mirror's endpoints use, compatible with every endpoint it serves.
func merge(w *want, first bool, q qos.Profile) {
	depth := q.Depth
	if q.History == qos.HistoryKeepAll || depth == 0 {
		depth = max(depth, 100)
	}
	if first {
		w.q = qos.Profile{History: qos.HistoryKeepLast, Depth: depth, Reliability: q.Reliability,
			Durability: q.Durability, Liveliness: qos.LivelinessAutomatic}
		if holdsBack(q) {
			w.q.History = qos.HistoryKeepAll
		}
		return
	}
	if !holdsBack(q) {
		w.q.History = qos.HistoryKeepLast
	}
	if q.Reliability != qos.ReliabilityReliable {
		w.q.Reliability = q.Reliability
	}
	if q.Durability != qos.DurabilityTransientLocal {
		w.q.Durability = q.Durability
	}
	w.q.Depth = max(w.q.Depth, depth)
}

// holdsBack reports whether an endpoint of QoS q, RELIABLE KEEP_ALL, never
// loses a message to a full queue: its publisher waits instead.
func holdsBack(q qos.Profile) bool {
	return q.History == qos.HistoryKeepAll && q.Reliability == qos.ReliabilityReliable
}

// keepAllFor leaves KEEP_ALL only the wants for whose topic a reader on
// the other side holds back too (reader reports it): a KEEP_ALL mirror
// holds its sources back while it cannot forward, which only a KEEP_ALL
// reader asks for. The others become KEEP_LAST (their Depth is set).
func keepAllFor(wants map[string]want, reader func(topic string) bool) {
	for name, w := range wants {
		if w.q.History == qos.HistoryKeepAll && !reader(name) {
			w.q.History = qos.HistoryKeepLast
			wants[name] = w
		}
	}
}

// ddsReaderHoldsBack reports whether eps has a RELIABLE KEEP_ALL DDS
// reader of the ROS topic name (not the gateway's nor another gateway's).
func (g *Gateway) ddsReaderHoldsBack(eps []dds.Endpoint, name string) bool {
	own := g.part.GUID().Prefix()
	for _, ep := range eps {
		if ep.Writer || ep.Participant.Prefix() == own || ofGateway(ep.UserData) || !holdsBack(ep.QoS) {
			continue
		}
		if n, kind := dds.ROSName(ep.Topic); kind == dds.KindTopic && n == name {
			return true
		}
	}
	return false
}

// rgapsReaderHoldsBack reports whether the topic has a local RELIABLE
// KEEP_ALL subscription that is not republishing.
func (g *Gateway) rgapsReaderHoldsBack(name string) bool {
	eps, err := g.dom.Endpoints(name)
	if err != nil {
		return false
	}
	for _, ep := range eps {
		if ep.Kind == zerocopy.KindSubscription && !ep.Republish && holdsBack(ep.QoS) {
			return true
		}
	}
	return false
}

// localWants lists the rgaps topics to carry out: those with local
// publishers that are not republishing endpoints.
func (g *Gateway) localWants() (map[string]want, error) {
	topics, err := g.dom.Topics()
	if err != nil {
		return nil, err
	}
	out := map[string]want{}
	for _, ti := range topics {
		if _, seen := out[ti.Name]; seen || ti.Publishers == 0 || !g.carried(ti.Name) {
			continue
		}
		eps, err := g.dom.Endpoints(ti.Name)
		if err != nil {
			continue // the topic went away meanwhile
		}
		for _, ep := range eps {
			if ep.Republish || ep.Kind != zerocopy.KindPublisher {
				continue
			}
			w, ok := out[ep.Topic]
			if ok && w.typ != ep.Type {
				continue // a type clash: the engine refuses one of them
			}
			merge(&w, !ok, ep.QoS)
			w.typ = ep.Type
			if w.hash == (zerocopy.TypeHash{}) {
				w.hash = ep.TypeHash
			}
			out[ep.Topic] = w
		}
	}
	return out, nil
}

// ddsWants lists, of the endpoints DDS discovery found, the DDS topics to carry in: rt/ topics with writers of
// other participants that are not other gateways' (rgaps hosts exchange
// their own messages through their bridges: what another gateway writes
// reaches this host's subscribers that way, once).
func (g *Gateway) ddsWants(eps []dds.Endpoint) map[string]want {
	own := g.part.GUID().Prefix()
	in := map[string]want{}
	for _, ep := range eps {
		if !ep.Writer || ep.Participant.Prefix() == own {
			continue
		}
		name, kind := dds.ROSName(ep.Topic)
		typ, ok := dds.ROSTypeName(ep.Type)
		if kind != dds.KindTopic || !ok || !g.carried(name) {
			continue
		}
		if ofGateway(ep.UserData) {
			g.note("from DDS", name, "not carried in from DDS: written by another rgaps gateway (its messages come through the bridge)")
			continue
		}
		w, seen := in[name]
		if seen && w.typ != typ {
			continue
		}
		merge(&w, !seen, ep.QoS)
		w.typ = typ
		if w.hash == (zerocopy.TypeHash{}) {
			w.hash = hashOf(ep.UserData)
		}
		in[name] = w
	}
	return in
}

// hashOf reads the type hash ROS 2's DDS rmws put in USER_DATA
// ("typehash=RIHS01_<64 hex>;"); zero when there is none.
func hashOf(ud []byte) zerocopy.TypeHash {
	_, v, ok := bytes.Cut(ud, []byte("typehash="))
	if !ok {
		return zerocopy.TypeHash{}
	}
	v, _, _ = bytes.Cut(v, []byte(";"))
	h, err := zerocopy.ParseTypeHash(string(v))
	if err != nil {
		return zerocopy.TypeHash{}
	}
	return h
}

// userData is the USER_DATA of a gateway's DDS endpoint of type hash h:
// what ROS 2's DDS rmws give it (the hash when known) and gatewayMark
// (discoveryinfo.go), which every DDS endpoint of a gateway carries, so
// gateways leave each other's endpoints alone (ddsWants, serviceWants).
// ROS 2's DDS rmws read only the keys they know.
func userData(h zerocopy.TypeHash) []byte {
	if s := h.String(); s != "" {
		return []byte("typehash=" + s + ";" + gatewayMark)
	}
	return []byte(gatewayMark)
}

// ofGateway reports whether USER_DATA ud is that of a gateway's endpoint.
func ofGateway(ud []byte) bool { return bytes.Contains(ud, []byte(gatewayMark)) }
