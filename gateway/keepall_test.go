package gateway

import (
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

var keepAll = qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable,
	Durability: qos.DurabilityVolatile, Liveliness: qos.LivelinessAutomatic}

// keepAllCount is more messages than any queue on the way holds (the
// engine's KEEP_ALL queue is 1024, the old mirror depth 100).
const keepAllCount = 3000

// TestGatewayKeepAllToDDS: an rgaps publisher and a DDS reader, both
// RELIABLE KEEP_ALL, and a burst far larger than any queue: the mirror is
// KEEP_ALL too (its subscription holds the publisher back, its writer
// waits for the reader), so every message arrives, in order.
func TestGatewayKeepAllToDDS(t *testing.T) {
	g, e, _ := manualGateway(t, "/gw_keepall_out")
	const topic, typ = "/gw_keepall_out", "std_msgs/msg/String"
	p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typ, Node: "/gw_test", QoS: keepAll})
	must(t, err)
	defer p.Close()
	tp, err := e.part.Topic(topic, typ)
	must(t, err)
	r, err := tp.NewReader(dds.EndpointOptions{QoS: keepAll})
	must(t, err)
	defer r.Close()
	refreshUntil(t, g, "the mirror", func() bool { n, _ := r.Matched(); return n >= 1 && p.Matched() >= 1 })
	checkMirrorQoS(t, g.out[topic], qos.HistoryKeepAll)
	go func() {
		for i := range keepAllCount {
			if err := p.Publish(msg(i)); err != nil {
				t.Errorf("message %d: %v", i, err)
				return
			}
		}
	}()
	for i := 0; i < keepAllCount; {
		s, ok, err := r.Take()
		must(t, err)
		if !ok {
			if ready, err := r.Wait(10 * time.Second); err != nil || !ready {
				t.Fatalf("message %d of %d did not come: %v", i, keepAllCount, err)
			}
			continue
		}
		if want := msg(i); string(s.Data) != string(want) {
			t.Fatalf("message %d: got %q", i, s.Data[8:])
		}
		i++
	}
}

// TestGatewayKeepAllFromDDS: a DDS writer and an rgaps subscription, both
// RELIABLE KEEP_ALL, a burst far larger than the subscription's queue,
// and the subscription takes only once the writer is done: the mirror's
// publisher waits for room instead of dropping, so every message arrives,
// in order.
func TestGatewayKeepAllFromDDS(t *testing.T) {
	g, e, _ := manualGateway(t, "/gw_keepall_in")
	const topic, typ = "/gw_keepall_in", "std_msgs/msg/String"
	tp, err := e.part.Topic(topic, typ)
	must(t, err)
	w, err := tp.NewWriter(dds.EndpointOptions{QoS: keepAll})
	must(t, err)
	defer w.Close()
	s, err := e.dom.NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: typ, Node: "/gw_test", QoS: keepAll})
	must(t, err)
	defer s.Close()
	refreshUntil(t, g, "the mirror", func() bool { n, _ := w.Matched(); return n >= 1 && s.Matched() >= 1 })
	checkMirrorQoS(t, g.in[topic], qos.HistoryKeepAll)
	for i := range keepAllCount {
		must(t, w.Write(msg(i)))
	}
	// Longer than the engine's BlockTimeout (1 s), the wait after which a
	// publisher that kept failing on a full queue would have dropped.
	time.Sleep(1500 * time.Millisecond)
	for i := range keepAllCount {
		smp, err := s.TakeWait(10 * time.Second)
		if err != nil {
			t.Fatalf("message %d of %d: %v", i, keepAllCount, err)
		}
		if want := msg(i); string(smp.Bytes()) != string(want) {
			t.Fatalf("message %d: got %q", i, smp.Bytes()[8:])
		}
		smp.Return()
	}
}

// TestGatewayKeepAllSinks: the mirror is KEEP_ALL only while a reader on
// the other side is RELIABLE KEEP_ALL too (else nothing would be gained
// by holding the sources back): with a KEEP_LAST reader alone it is
// KEEP_LAST, and it is remade KEEP_ALL when a KEEP_ALL reader comes.
func TestGatewayKeepAllSinks(t *testing.T) {
	g, e, _ := manualGateway(t, "/gw_keepall_sink")
	const topic, typ = "/gw_keepall_sink", "std_msgs/msg/String"
	p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typ, Node: "/gw_test", QoS: keepAll})
	must(t, err)
	defer p.Close()
	tp, err := e.part.Topic(topic, typ)
	must(t, err)
	last := keepAll
	last.History, last.Depth = qos.HistoryKeepLast, 10
	r, err := tp.NewReader(dds.EndpointOptions{QoS: last})
	must(t, err)
	defer r.Close()
	refreshUntil(t, g, "the mirror", func() bool { n, _ := r.Matched(); return n >= 1 && p.Matched() >= 1 })
	checkMirrorQoS(t, g.out[topic], qos.HistoryKeepLast)
	r2, err := tp.NewReader(dds.EndpointOptions{QoS: keepAll})
	must(t, err)
	defer r2.Close()
	refreshUntil(t, g, "the mirror remade KEEP_ALL", func() bool {
		m := g.out[topic]
		return m != nil && m.base().w.q.History == qos.HistoryKeepAll
	})
}

func checkMirrorQoS(t *testing.T, m running, h qos.History) {
	t.Helper()
	if m == nil {
		t.Fatal("no mirror")
	}
	if got := m.base().w.q.History; got != h {
		t.Fatalf("mirror history %v, want %v", got, h)
	}
}
