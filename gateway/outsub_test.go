package gateway

import (
	"bytes"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// gatewaySub is the QoS of the gateway's subscription of topic (false:
// none).
func gatewaySub(t *testing.T, e *env, topic string) (qos.Profile, bool) {
	eps, err := e.dom.Endpoints(topic)
	must(t, err)
	for _, ep := range eps {
		if ep.Republish && ep.Kind == zerocopy.KindSubscription && ep.Node == Node {
			return ep.QoS, true
		}
	}
	return qos.Profile{}, false
}

// TestGatewaySubscribesForReaders: a volatile topic's mirror has its DDS
// writer from the start (DDS nodes see the topic) but subscribes in rgaps
// only while a DDS reader is matched, no deeper than the readers keep:
// without one the publishers pay nothing for the gateway.
func TestGatewaySubscribesForReaders(t *testing.T) {
	g, e, _ := manualGateway(t, "/gw_lazy")
	const topic, typ = "/gw_lazy", "std_msgs/msg/String"
	pq := testQoS // KEEP_LAST 100, reliable, volatile
	p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typ, Node: "/gw_test", QoS: pq})
	must(t, err)
	defer p.Close()
	refreshUntil(t, g, "the mirror's DDS writer", func() bool {
		eps, err := e.part.Endpoints()
		must(t, err)
		for _, ep := range eps {
			if ep.Writer && ep.Topic == "rt"+topic {
				return true
			}
		}
		return false
	})
	if _, ok := gatewaySub(t, e, topic); ok || p.Matched() != 0 {
		t.Fatalf("the gateway subscribed with no DDS reader (publisher matched %d)", p.Matched())
	}
	tp, err := e.part.Topic(topic, typ)
	must(t, err)
	rq := pq
	rq.Depth = 7
	r, err := tp.NewReader(dds.EndpointOptions{QoS: rq})
	must(t, err)
	refreshUntil(t, g, "the gateway's subscription", func() bool { return p.Matched() == 1 })
	if q, ok := gatewaySub(t, e, topic); !ok || q.History != qos.HistoryKeepLast || q.Depth != 7 {
		t.Errorf("the gateway's subscription: %v %v, want KEEP_LAST 7 (the reader's depth)", q, ok)
	}
	msg := stringCDR("lazy")
	must(t, p.Publish(msg))
	if got := take(t, r); !bytes.Equal(got, msg) {
		t.Fatalf("DDS got %q", got)
	}
	must(t, r.Close())
	refreshUntil(t, g, "the gateway to unsubscribe", func() bool { return p.Matched() == 0 })
}
