package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// startGraphGateway is startGateway with the Gateway at hand (its Graph).
func startGraphGateway(t *testing.T, topics ...string) (*Gateway, *env) {
	t.Helper()
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	cfg := zerocopy.Config{Prefix: testutil.Prefix(), Domain: testDomain, PoolSize: 64 << 20, SkipStaleClean: true}
	g, err := New(Options{Engine: cfg, Topics: topics, Interval: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		g.Serve(ctx)
	}()
	dom, err := zerocopy.Open(cfg)
	must(t, err)
	part, err := dds.Open(dds.Config{Domain: testDomain})
	must(t, err)
	t.Cleanup(func() {
		part.Close()
		dom.Close()
		cancel()
		<-served
		must(t, g.Close())
	})
	return g, &env{dom: dom, part: part}
}

// rosNode plays a ROS 2 node on rmw_cyclonedds_cpp: a participant with
// the rmw's USER_DATA and a ros_discovery_info writer of the rmw's QoS.
type rosNode struct {
	part *dds.Participant
	info *dds.Writer
}

func newROSNode(t *testing.T, infoUserData string) *rosNode {
	t.Helper()
	p, err := dds.Open(dds.Config{Domain: testDomain, UserData: []byte("enclave=/;")})
	must(t, err)
	t.Cleanup(func() { p.Close() })
	tp, err := p.RawTopic("ros_discovery_info", "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_")
	must(t, err)
	w, err := tp.NewWriter(dds.EndpointOptions{QoS: infoWriterQoS, UserData: []byte(infoUserData)})
	must(t, err)
	return &rosNode{part: p, info: w}
}

// say writes the participant's state: its gid (its GUID) and nodes, as
// rmw_cyclonedds_cpp lays it out.
func (n *rosNode) say(t *testing.T, nodes ...nodeEntities) {
	t.Helper()
	must(t, n.info.Write(handInfo(binary.LittleEndian, gid(n.part.GUID()), nodes)))
}

func (n *rosNode) endpoint(t *testing.T, topic, typ string, writer bool) gid {
	t.Helper()
	tp, err := n.part.Topic(topic, typ)
	must(t, err)
	o := dds.EndpointOptions{QoS: testQoS, UserData: []byte("typehash=RIHS01_" + fmt.Sprintf("%064x", 7) + ";")}
	if writer {
		w, err := tp.NewWriter(o)
		must(t, err)
		return gid(w.GUID())
	}
	r, err := tp.NewReader(o)
	must(t, err)
	return gid(r.GUID())
}

// nodeNamed is the DDS node of that full name in gr, if any.
func nodeNamed(gr Graph, fq string) (DDSNode, bool) {
	i := slices.IndexFunc(gr.Nodes, func(n DDSNode) bool { return n.FullName() == fq })
	if i < 0 {
		return DDSNode{}, false
	}
	return gr.Nodes[i], true
}

// A ROS 2 node on DDS appears in the gateway's graph with the endpoints
// its ros_discovery_info claims (ROS names and types, its QoS and type
// hash), a service's endpoints under the rmw's service topics; a new
// sample replaces the participant's nodes; it is gone when its participant
// leaves. The gateway's own participant, and the rgaps node it speaks
// for, are not in it.
func TestGraphFromDDS(t *testing.T) {
	g, e := startGraphGateway(t)
	rgNode, err := e.dom.RegisterNode(fmt.Sprintf("gr_rgaps_%d", os.Getpid()), "/", "/")
	must(t, err)
	defer rgNode.Close()
	ros := newROSNode(t, "")
	talker := fmt.Sprintf("gr_talker_%d", os.Getpid())
	chatter := ros.endpoint(t, "/gr_chatter", "std_msgs/msg/String", true)
	cmd := ros.endpoint(t, "/gr_cmd", "std_msgs/msg/String", false)
	rqT, err := ros.part.RawTopic("rq/gr_addRequest", "example_interfaces::srv::dds_::AddTwoInts_Request_")
	must(t, err)
	rq, err := rqT.NewReader(dds.EndpointOptions{QoS: testQoS})
	must(t, err)
	ros.say(t, nodeEntities{namespace: "/gr_ns", name: talker, readers: []gid{cmd, gid(rq.GUID())}, writers: []gid{chatter}})

	fq := "/gr_ns/" + talker
	var gr Graph
	eventually(t, "the DDS node in the graph", func() bool {
		gr = g.Graph()
		_, ok := nodeNamed(gr, fq)
		return ok && len(endpointsOf(gr, fq)) == 3
	})
	// the graph conditions (the rmw's graph guard conditions) wake for a
	// change of the DDS graph alone
	gc := e.dom.NewGraphCondition()
	ros.say(t, nodeEntities{namespace: "/gr_ns", name: talker, readers: []gid{cmd, gid(rq.GUID())}, writers: []gid{chatter}},
		nodeEntities{namespace: "/", name: talker + "_wake"})
	eventually(t, "a graph condition woken by a DDS node", func() bool {
		_, ok := nodeNamed(g.Graph(), "/"+talker+"_wake")
		return ok && gc.Ready()
	})
	gr = g.Graph()
	if n, _ := nodeNamed(gr, fq); n.Participant != ros.part.GUID() {
		t.Errorf("node's participant %s, want %s", n.Participant, ros.part.GUID())
	}
	if gr.Participant != g.part.GUID() {
		t.Errorf("graph's participant %s, want the gateway's %s", gr.Participant, g.part.GUID())
	}
	wantHash, _ := zerocopy.ParseTypeHash("RIHS01_" + fmt.Sprintf("%064x", 7))
	want := []DDSEndpoint{
		{Participant: ros.part.GUID(), Topic: "/_rgaps_rq/gr_add", Type: "example_interfaces/srv/AddTwoInts_Request", Kind: zerocopy.KindSubscription, Node: fq, GID: zerocopy.GID(rq.GUID())},
		{Participant: ros.part.GUID(), Topic: "/gr_chatter", Type: "std_msgs/msg/String", TypeHash: wantHash, Kind: zerocopy.KindPublisher, Node: fq, GID: zerocopy.GID(chatter)},
		{Participant: ros.part.GUID(), Topic: "/gr_cmd", Type: "std_msgs/msg/String", TypeHash: wantHash, Kind: zerocopy.KindSubscription, Node: fq, GID: zerocopy.GID(cmd)},
	}
	for i, ep := range endpointsOf(gr, fq) {
		want[i].QoS = ep.QoS
		if ep != want[i] {
			t.Errorf("endpoint %d:\n%+v\nwant\n%+v", i, ep, want[i])
		}
		if ep.QoS.Reliability != qos.ReliabilityReliable || ep.QoS.Depth != testQoS.Depth {
			t.Errorf("endpoint %d QoS %v, want the DDS endpoint's %v", i, ep.QoS, testQoS)
		}
	}
	for _, n := range gr.Nodes {
		if n.Participant == g.part.GUID() || n.Name == rgNode.Info().Name {
			t.Errorf("the gateway's own participant is in its DDS graph: %+v", n)
		}
	}

	// a new sample is the participant's whole state
	ros.say(t, nodeEntities{namespace: "/", name: talker + "_2"})
	eventually(t, "the participant's new state", func() bool {
		gr = g.Graph()
		_, old := nodeNamed(gr, fq)
		_, renamed := nodeNamed(gr, "/"+talker+"_2")
		return !old && renamed && len(endpointsOf(gr, fq)) == 0
	})

	must(t, ros.part.Close())
	eventually(t, "the node gone with its participant", func() bool {
		_, ok := nodeNamed(g.Graph(), "/"+talker+"_2")
		return !ok
	})
}

func endpointsOf(gr Graph, fq string) []DDSEndpoint {
	var out []DDSEndpoint
	for _, ep := range gr.Endpoints {
		if ep.Node == fq {
			out = append(out, ep)
		}
	}
	return out
}

// Samples that do not decode, or that speak for another participant, are
// dropped and counted, the participant's last good state kept; the
// nodes of another rgaps gateway (its writer carries the mark) are not
// shown: they are rgaps nodes of its host, which the bridge reports.
func TestGraphMalformedAndOtherGateways(t *testing.T) {
	g, _ := startGraphGateway(t)
	ros := newROSNode(t, "")
	name := fmt.Sprintf("gr_kept_%d", os.Getpid())
	ros.say(t, nodeEntities{namespace: "/", name: name})
	eventually(t, "the DDS node", func() bool { _, ok := nodeNamed(g.Graph(), "/"+name); return ok })
	good := handInfo(binary.LittleEndian, gid(ros.part.GUID()), []nodeEntities{{namespace: "/", name: "gr_never"}})
	must(t, ros.info.Write(good[:len(good)-5]))
	foreign := handInfo(binary.LittleEndian, testGid(9), []nodeEntities{{namespace: "/", name: "gr_never"}})
	must(t, ros.info.Write(foreign))
	// its own prefix but not a participant's entity id: the participant
	// would be listed twice
	skewed := gid(ros.part.GUID())
	skewed[15] ^= 0xff
	must(t, ros.info.Write(handInfo(binary.LittleEndian, skewed, []nodeEntities{{namespace: "/", name: "gr_never"}})))
	eventually(t, "three samples counted malformed", func() bool { return g.Graph().Malformed >= 3 })
	gr := g.Graph()
	if _, ok := nodeNamed(gr, "/"+name); !ok {
		t.Errorf("the participant's last good state was lost: %+v", gr.Nodes)
	}
	if _, ok := nodeNamed(gr, "/gr_never"); ok {
		t.Errorf("a malformed sample's node is shown: %+v", gr.Nodes)
	}

	other := newROSNode(t, "typehash=RIHS01_"+fmt.Sprintf("%064x", 1)+";"+gatewayMark)
	other.say(t, nodeEntities{namespace: "/", name: "gr_other_host"})
	witness := newROSNode(t, "")
	witness.say(t, nodeEntities{namespace: "/", name: name + "_witness"})
	// the witness, written after, shows the other gateway's sample was
	// taken meanwhile (one reader, samples in order of arrival)
	eventually(t, "the witness node", func() bool { _, ok := nodeNamed(g.Graph(), "/"+name+"_witness"); return ok })
	time.Sleep(200 * time.Millisecond)
	if _, ok := nodeNamed(g.Graph(), "/gr_other_host"); ok {
		t.Error("another rgaps gateway's node is in the DDS graph")
	}
}

// The gateway speaks for this host's rgaps nodes on ros_discovery_info:
// a node with a publisher and a subscription is listed with the gids of
// the gateway's DDS writer and reader on those topics, as DDS discovery
// knows them (a presence reader while no DDS writer exists, the incoming
// mirror's reader after, never both); a DDS message then reaches the
// rgaps subscription once; the node's end is announced.
func TestGraphToDDS(t *testing.T) {
	g, e := startGraphGateway(t)
	pid := os.Getpid()
	nodeName := fmt.Sprintf("gr_node_%d", pid)
	out, in := fmt.Sprintf("/gr_out_%d", pid), fmt.Sprintf("/gr_in_%d", pid)
	nh, err := e.dom.RegisterNode(nodeName, "/gr", "/")
	must(t, err)
	fq := nh.Info().FullName()
	pub, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: out, Type: "std_msgs/msg/String", Node: fq, QoS: testQoS})
	must(t, err)
	defer pub.Close()
	sub, err := e.dom.NewSubscription(zerocopy.EndpointSpec{Topic: in, Type: "std_msgs/msg/String", Node: fq, QoS: testQoS})
	must(t, err)
	defer sub.Close()

	tp, err := e.part.RawTopic("ros_discovery_info", "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_")
	must(t, err)
	rd, err := tp.NewReader(dds.EndpointOptions{QoS: infoReaderQoS})
	must(t, err)
	gw := g.part.GUID()
	var last participantInfo
	// announced waits for the gateway's sample to list the node with
	// readers and writers that are, one each, the gateway's DDS endpoints
	// on the two topics as discovery knows them.
	announced := func(what string, wantIn func(dds.Endpoint) bool) {
		t.Helper()
		eventually(t, what, func() bool {
			for {
				s, ok, err := rd.Take()
				must(t, err)
				if !ok {
					break
				}
				if s.Writer.Prefix() != gw.Prefix() {
					continue
				}
				p, err := decodeInfo(s.Data)
				must(t, err)
				if p.gid != gid(gw) {
					t.Fatalf("the gateway's sample has gid %x, want its participant's %s", p.gid, gw)
				}
				last = p
			}
			i := slices.IndexFunc(last.nodes, func(n nodeEntities) bool { return n.namespace == "/gr" && n.name == nodeName })
			if i < 0 {
				return false
			}
			n := last.nodes[i]
			eps, err := e.part.Endpoints()
			must(t, err)
			var outW, inR []gid
			for _, ep := range eps {
				if ep.Participant.Prefix() != gw.Prefix() {
					continue
				}
				if ep.Writer && ep.Topic == "rt"+out {
					outW = append(outW, gid(ep.GUID))
				}
				if !ep.Writer && ep.Topic == "rt"+in && wantIn(ep) {
					inR = append(inR, gid(ep.GUID))
				}
			}
			return len(outW) == 1 && len(inR) == 1 && slices.Equal(n.writers, outW) && slices.Equal(n.readers, inR)
		})
	}
	// no DDS writer on in: a presence reader stands for the subscription
	announced("the node with the gateway's writer and presence reader", func(ep dds.Endpoint) bool {
		return ep.QoS.Depth == 1 && ep.QoS.Reliability == qos.ReliabilityReliable
	})
	for _, n := range last.nodes {
		if n.name == "_rgaps_dds_gateway" {
			t.Errorf("the gateway lists its own node")
		}
	}

	// a DDS writer: the incoming mirror's reader takes over, alone
	w := e.writer(t, in, "std_msgs/msg/String")
	announced("the node with the incoming mirror's reader", func(ep dds.Endpoint) bool { return ep.QoS.Depth == testQoS.Depth })
	eventually(t, "one reader of the gateway on "+in, func() bool {
		eps, err := e.part.Endpoints()
		must(t, err)
		n := 0
		for _, ep := range eps {
			if !ep.Writer && ep.Topic == "rt"+in && ep.Participant.Prefix() == gw.Prefix() {
				n++
			}
		}
		return n == 1
	})
	eventually(t, "the incoming mirror's publisher", func() bool { return sub.Matched() >= 1 })
	msg := stringCDR("once")
	must(t, w.Write(msg))
	if got := takeRgaps(t, sub); string(got) != string(msg) {
		t.Fatalf("rgaps got % x, want % x", got, msg)
	}
	if smp, err := sub.TakeWait(300 * time.Millisecond); err == nil {
		t.Errorf("a second delivery: % x", smp.Bytes())
		smp.Return()
	}

	must(t, nh.Close())
	eventually(t, "the node's end announced", func() bool {
		for {
			s, ok, _ := rd.Take()
			if !ok {
				break
			}
			if s.Writer.Prefix() == gw.Prefix() {
				last, _ = decodeInfo(s.Data)
			}
		}
		return !slices.ContainsFunc(last.nodes, func(n nodeEntities) bool { return n.name == nodeName })
	})
}
