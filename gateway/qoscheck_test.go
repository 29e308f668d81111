package gateway

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// logBuffer is a gateway log the test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// lines are the log lines that contain every one of want.
func (l *logBuffer) lines(want ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(l.b.String(), "\n") {
		ok := line != ""
		for _, w := range want {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// manualGateway is a gateway the test refreshes itself (no Serve), so it
// knows how many times the gateway looked at the graphs; beside it the
// test's own engine domain and DDS participant.
func manualGateway(t *testing.T, topics ...string) (*Gateway, *env, *logBuffer) {
	t.Helper()
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	cfg := zerocopy.Config{Prefix: testutil.Prefix(), Domain: testDomain, PoolSize: 64 << 20, SkipStaleClean: true}
	log := &logBuffer{}
	g, err := New(Options{Engine: cfg, Topics: topics, Log: slog.New(slog.NewTextHandler(log, nil))})
	must(t, err)
	dom, err := zerocopy.Open(cfg)
	must(t, err)
	part, err := dds.Open(dds.Config{Domain: testDomain})
	must(t, err)
	t.Cleanup(func() {
		part.Close()
		dom.Close()
		must(t, g.Close())
		if t.Failed() {
			t.Logf("gateway log:\n%s", log.b.String())
		}
	})
	return g, &env{dom: dom, part: part}, log
}

// refreshUntil refreshes the gateway until cond holds (10 s at most).
func refreshUntil(t *testing.T, g *Gateway, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, what, func() bool {
		g.Refresh()
		return cond()
	})
}

// TestGatewayQoSMismatch: a reader that asks more than the endpoints a
// mirror stands for offer gets nothing, and is told so where its user
// looks: a DDS reader asking RELIABLE (or TRANSIENT_LOCAL) of a topic
// whose rgaps publishers are BEST_EFFORT (VOLATILE) has it in its
// requested-incompatible-QoS status, an rgaps subscription asking RELIABLE
// (TRANSIENT_LOCAL) of BEST_EFFORT (VOLATILE) DDS writers in its
// IncompatibleQoS status; and the gateway logs each pair once, with the
// topic and the policy, however many times it refreshes and whatever is
// published. Compatible readers of the same topics get every message.
func TestGatewayQoSMismatch(t *testing.T) {
	g, e, log := manualGateway(t, "/gw_qos_*")
	const typ = "std_msgs/msg/String"
	be := qos.Profile{History: qos.HistoryKeepLast, Depth: 10, Reliability: qos.ReliabilityBestEffort, Durability: qos.DurabilityVolatile}
	rel, tl := be, be
	rel.Reliability = qos.ReliabilityReliable
	tl.Reliability, tl.Durability = qos.ReliabilityReliable, qos.DurabilityTransientLocal
	for _, c := range []struct {
		topic          string
		source, sink   qos.Profile // what the sources offer, what the incompatible reader asks
		pol            qos.Policy
		fromDDS        bool
		msg, compatDDS string
	}{
		{topic: "/gw_qos_out_rel", source: be, sink: rel, pol: qos.PolicyReliability, msg: "a DDS reader gets nothing from the rgaps publishers"},
		{topic: "/gw_qos_out_tl", source: rel, sink: tl, pol: qos.PolicyDurability, msg: "a DDS reader gets nothing from the rgaps publishers"},
		{topic: "/gw_qos_in_rel", source: be, sink: rel, pol: qos.PolicyReliability, fromDDS: true, msg: "an rgaps subscription gets nothing from the DDS writers"},
		{topic: "/gw_qos_in_tl", source: rel, sink: tl, pol: qos.PolicyDurability, fromDDS: true, msg: "an rgaps subscription gets nothing from the DDS writers"},
	} {
		t.Run(c.topic, func(t *testing.T) {
			tp, err := e.part.Topic(c.topic, typ)
			must(t, err)
			var send func([]byte) error
			var take func() ([]byte, bool)
			var status func() (int, qos.Policy)
			if c.fromDDS {
				w, err := tp.NewWriter(dds.EndpointOptions{QoS: c.source})
				must(t, err)
				defer w.Close()
				bad, err := e.dom.NewSubscription(zerocopy.EndpointSpec{Topic: c.topic, Type: typ, Node: "/gw_test", QoS: c.sink})
				must(t, err)
				defer bad.Close()
				good, err := e.dom.NewSubscription(zerocopy.EndpointSpec{Topic: c.topic, Type: typ, Node: "/gw_test", QoS: c.source})
				must(t, err)
				defer good.Close()
				refreshUntil(t, g, "the mirror", func() bool { n, _ := w.Matched(); return n >= 1 && good.Matched() >= 1 })
				send = w.Write
				take = func() ([]byte, bool) {
					s, err := good.TakeWait(10 * time.Second)
					if err != nil {
						return nil, false
					}
					defer s.Return()
					return bytes.Clone(s.Bytes()), true
				}
				status = func() (int, qos.Policy) { st := bad.TakeStatus(); return st.IncompatibleQoS, st.LastIncompatiblePolicy }
				defer func() {
					if s, err := bad.Take(); err == nil {
						s.Return()
						t.Error("the incompatible subscription got a message")
					}
				}()
			} else {
				p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: c.topic, Type: typ, Node: "/gw_test", QoS: c.source})
				must(t, err)
				defer p.Close()
				bad, err := tp.NewReader(dds.EndpointOptions{QoS: c.sink})
				must(t, err)
				defer bad.Close()
				good, err := tp.NewReader(dds.EndpointOptions{QoS: c.source})
				must(t, err)
				defer good.Close()
				refreshUntil(t, g, "the mirror", func() bool { n, _ := good.Matched(); return n >= 1 && p.Matched() >= 1 })
				send = p.Publish
				take = func() ([]byte, bool) {
					for end := time.Now().Add(10 * time.Second); time.Now().Before(end); good.Wait(100 * time.Millisecond) {
						if s, ok, _ := good.Take(); ok {
							return s.Data, true
						}
					}
					return nil, false
				}
				status = func() (int, qos.Policy) { st, _ := bad.Incompatible(); return st.Total, st.LastPolicy }
				defer func() {
					if _, ok, _ := bad.Take(); ok {
						t.Error("the incompatible DDS reader got a message")
					}
				}()
			}
			want := []string{"incompatible QoS: " + c.msg, "topic=" + c.topic, "policy=" + c.pol.String()}
			refreshUntil(t, g, "the gateway's report", func() bool { return len(log.lines(want...)) > 0 })
			testutil.Eventually(t, 10*time.Second, "the reader's own status", func() bool {
				n, pol := status()
				return n >= 1 && pol == c.pol
			})
			for i := range 5 {
				g.Refresh()
				msg := stringCDR(randomString(8))
				must(t, send(msg))
				if got, ok := take(); !ok || !bytes.Equal(got, msg) {
					t.Fatalf("message %d: the compatible reader got %q (%v)", i, got, ok)
				}
			}
			if got := log.lines(want...); len(got) != 1 {
				t.Errorf("the pair was reported %d times:\n%s", len(got), strings.Join(got, "\n"))
			}
		})
	}
}
