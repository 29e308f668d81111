package gateway

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The graph both ways (docs/ARCHITECTURE.md §3.13). DDS → rgaps: the
// gateway reads ros_discovery_info, keeps each DDS participant's latest
// sample while the participant's writer of it is alive in discovery, and
// turns the nodes and the DDS endpoints they claim into Graph, which
// rgapsd reports on its status socket. rgaps → DDS (announce.go): it
// writes its own sample listing this host's rgaps nodes.

// Graph is the part of the ROS graph the gateway sees on DDS: the nodes of
// ROS 2 participants on a DDS rmw, but for the gateway's own and other
// rgaps gateways' (whose nodes are rgaps nodes of other hosts), and the
// DDS endpoints those nodes claim on topics and services the gateway
// carries, named as rgaps names them.
type Graph struct {
	// Participant is the gateway's own participant.
	Participant dds.GUID
	Nodes       []DDSNode
	Endpoints   []DDSEndpoint
	// Malformed counts the ros_discovery_info samples dropped: not
	// ParticipantEntitiesInfo, bounds or names broken, or a participant
	// speaking for another.
	Malformed uint64
}

// DDSNode is a ROS 2 node on DDS.
type DDSNode struct {
	Participant     dds.GUID
	Name, Namespace string
}

// FullName is the node's fully qualified name.
func (n DDSNode) FullName() string { return names.FullNodeName(n.Name, n.Namespace) }

// DDSEndpoint is a DDS reader or writer of a ROS 2 node on DDS.
type DDSEndpoint struct {
	Participant dds.GUID
	// Topic is the rgaps topic: /chatter for rt/chatter, and for the
	// request and reply topics of a service /s (rq/sRequest, rr/sReply)
	// the rmw's /_rgaps_rq/s and /_rgaps_rr/s.
	Topic string
	// Type is the ROS type (pkg/srv/T_Request for a service's request).
	Type     string
	TypeHash zerocopy.TypeHash
	Kind     zerocopy.Kind // a writer is a publisher, a reader a subscription
	Node     string        // the node's fully qualified name
	GID      zerocopy.GID  // the DDS GUID
	QoS      qos.Profile
}

// Graph is the DDS graph as of the last refresh.
func (g *Gateway) Graph() Graph {
	d := g.dg
	d.snapMu.Lock()
	defer d.snapMu.Unlock()
	s := d.snap
	s.Nodes = append([]DDSNode(nil), s.Nodes...)
	s.Endpoints = append([]DDSEndpoint(nil), s.Endpoints...)
	return s
}

// ddsGraph is the gateway's graph state; all but snap is used under
// Gateway.mu (Refresh).
type ddsGraph struct {
	rd *dds.Reader // ros_discovery_info
	wr *dds.Writer
	// heard is each DDS participant's latest sample, by its gid.
	heard     map[gid]heard
	malformed uint64
	// sent is the sample last written (announce.go); presence the DDS
	// readers standing for local subscriptions of topics without DDS
	// writers, by topic.
	sent     []byte
	presence map[string]*presence

	snapMu sync.Mutex // after Gateway.mu
	snap   Graph
}

// heard is a participant's sample and the writer that wrote it.
type heard struct {
	info   participantInfo
	writer dds.GUID
}

// openGraph makes the ros_discovery_info reader and writer.
func (g *Gateway) openGraph() error {
	t, err := g.part.RawTopic(infoTopic, infoType)
	if err != nil {
		return err
	}
	ud := "typehash=" + infoTypeHash + ";"
	rd, err := t.NewReader(dds.EndpointOptions{QoS: infoReaderQoS, UserData: []byte(ud), IgnoreLocal: true})
	if err != nil {
		return err
	}
	wr, err := t.NewWriter(dds.EndpointOptions{QoS: infoWriterQoS, UserData: []byte(ud + gatewayMark)})
	if err != nil {
		rd.Close()
		return err
	}
	g.dg = &ddsGraph{rd: rd, wr: wr, heard: map[gid]heard{}, presence: map[string]*presence{}}
	g.dg.snap.Participant = g.part.GUID()
	return nil
}

// closeGraph closes what openGraph and announce made.
func (g *Gateway) closeGraph() {
	for topic, p := range g.dg.presence {
		p.rd.Close()
		delete(g.dg.presence, topic)
	}
	g.dg.rd.Close()
	g.dg.wr.Close()
}

// refreshGraph brings both directions of the graph up to date. When the
// DDS nodes or their endpoints changed, it wakes the domain's graph
// conditions (the rmw's graph guard conditions) as the bridge does for
// other hosts' changes, after the new graph is visible.
func (g *Gateway) refreshGraph() {
	g.announce()
	g.takeInfo()
	eps, err := g.part.Endpoints()
	if err != nil {
		g.log.Warn("reading DDS discovery for the graph", "err", err)
		return
	}
	snap := g.ddsGraphOf(eps)
	d := g.dg
	d.snapMu.Lock()
	changed := !slices.Equal(snap.Nodes, d.snap.Nodes) || !slices.Equal(snap.Endpoints, d.snap.Endpoints)
	d.snap = snap
	d.snapMu.Unlock()
	if changed {
		g.dom.NotifyGraphChanged()
	}
}

// takeInfo takes the ros_discovery_info samples that arrived. A sample
// that does not decode, or whose participant gid is not its writer's
// participant, is dropped and counted (the first, and every 100th,
// logged).
func (g *Gateway) takeInfo() {
	d := g.dg
	own := g.part.GUID().Prefix()
	for {
		s, ok, err := d.rd.Take()
		if err != nil || !ok {
			return
		}
		if s.Writer == (dds.GUID{}) || s.Writer.Prefix() == own {
			continue // its writer is gone already, or it is the gateway's own
		}
		info, err := decodeInfo(s.Data)
		if err == nil && ([12]byte(info.gid[:12]) != s.Writer.Prefix() || [4]byte(info.gid[12:]) != participantEntity) {
			err = fmt.Errorf("participant %s speaks for participant %s", dds.GUID(s.Writer).String(), dds.GUID(info.gid).String())
		}
		if err != nil {
			d.malformed++
			if d.malformed%100 == 1 {
				g.log.Warn("malformed ros_discovery_info sample dropped", "writer", s.Writer.String(), "dropped", d.malformed, "err", err)
			}
			continue
		}
		d.heard[info.gid] = heard{info: info, writer: s.Writer}
	}
}

// participantEntity is the DDSI entity id of a participant (0x000001c1):
// a participant's gid is its GUID, so a sample keyed by any other last 4
// bytes would list the same participant's nodes once more.
var participantEntity = [4]byte{0, 0, 1, 0xc1}

// ddsGraphOf forgets the participants whose ros_discovery_info writer is
// gone from discovery (the participant left, or its lease expired) and
// makes the Graph of the others, with the endpoints their nodes claim
// that discovery knows.
func (g *Gateway) ddsGraphOf(eps []dds.Endpoint) Graph {
	d := g.dg
	byGUID := make(map[dds.GUID]dds.Endpoint, len(eps))
	for _, ep := range eps {
		byGUID[ep.GUID] = ep
	}
	out := Graph{Participant: g.part.GUID(), Malformed: d.malformed}
	for pgid, h := range d.heard {
		w, alive := byGUID[h.writer]
		if !alive || !w.Writer {
			delete(d.heard, pgid)
			continue
		}
		if strings.Contains(string(w.UserData), gatewayMark) {
			continue // another host's gateway: its nodes are rgaps nodes, which the bridge reports
		}
		part := dds.GUID(pgid)
		for _, n := range h.info.nodes {
			node := DDSNode{Participant: part, Name: n.name, Namespace: n.namespace}
			out.Nodes = append(out.Nodes, node)
			for _, set := range [][]gid{n.readers, n.writers} {
				for _, id := range set {
					ep, ok := byGUID[dds.GUID(id)]
					if !ok || ep.Participant.Prefix() != part.Prefix() {
						continue // not discovered yet, or not the participant's
					}
					if e, ok := g.rgapsEndpoint(ep); ok {
						e.Participant, e.Node = part, node.FullName()
						out.Endpoints = append(out.Endpoints, e)
					}
				}
			}
		}
	}
	sort.Slice(out.Nodes, func(i, j int) bool {
		a, b := out.Nodes[i], out.Nodes[j]
		if a.FullName() != b.FullName() {
			return a.FullName() < b.FullName()
		}
		return a.Participant.String() < b.Participant.String()
	})
	sort.Slice(out.Endpoints, func(i, j int) bool {
		a, b := out.Endpoints[i], out.Endpoints[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.GID.String() < b.GID.String()
	})
	return out
}

// rgapsEndpoint is a discovered DDS endpoint as rgaps names it; false for
// a topic the gateway does not carry or a name or type that follows none
// of ROS 2's conventions.
func (g *Gateway) rgapsEndpoint(ep dds.Endpoint) (DDSEndpoint, bool) {
	typ, ok := dds.ROSTypeName(ep.Type)
	if !ok {
		return DDSEndpoint{}, false
	}
	name, kind := dds.ROSName(ep.Topic)
	var topic string
	switch {
	case kind == dds.KindTopic && g.carried(name):
		topic = name
	case kind == dds.KindRequest && g.carriedService(name):
		topic = reqTopic + name
	case kind == dds.KindReply && g.carriedService(name):
		topic = respTopic + name
	default:
		return DDSEndpoint{}, false
	}
	e := DDSEndpoint{Topic: topic, Type: typ, TypeHash: hashOf(ep.UserData), Kind: zerocopy.KindSubscription,
		GID: zerocopy.GID(ep.GUID), QoS: ep.QoS}
	if ep.Writer {
		e.Kind = zerocopy.KindPublisher
	}
	return e, true
}
