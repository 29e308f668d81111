package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// testDomain is the ROS domain (engine and DDS) of this test process: one
// of 200..231, away from package dds's tests (100..199).
var testDomain = uint32(200 + os.Getpid()%32)

// env is a running gateway with the test's own engine domain and DDS
// participant beside it.
type env struct {
	dom  *zerocopy.Domain
	part *dds.Participant
}

// startGateway runs the gateway in-process (skipping without libddsc).
func startGateway(t *testing.T, topics ...string) *env {
	t.Helper()
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	cfg := zerocopy.Config{Prefix: testutil.Prefix(), Domain: testDomain, PoolSize: 64 << 20, SkipStaleClean: true}
	log := slog.New(slog.NewTextHandler(testWriter{t}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Engine: cfg, Topics: topics, Interval: 50 * time.Millisecond, Log: log})
	}()
	dom, err := zerocopy.Open(cfg)
	must(t, err)
	part, err := dds.Open(dds.Config{Domain: testDomain})
	must(t, err)
	t.Cleanup(func() {
		part.Close()
		dom.Close()
		cancel()
		must(t, <-done)
	})
	return &env{dom: dom, part: part}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(b)))
	return len(b), nil
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// stringCDR is a std_msgs/msg/String as the rmw writes it (CDR, little endian).
func stringCDR(s string) []byte {
	b := []byte{0, 1, 0, 0}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)+1))
	return append(append(b, s...), 0)
}

// int32CDR is a std_msgs/msg/Int32's CDR.
func int32CDR(v int32) []byte { return binary.LittleEndian.AppendUint32([]byte{0, 1, 0, 0}, uint32(v)) }

var testQoS = qos.Profile{History: qos.HistoryKeepLast, Depth: 100, Reliability: qos.ReliabilityReliable,
	Durability: qos.DurabilityVolatile, Liveliness: qos.LivelinessAutomatic}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func matched(m func() (int, error), n int) func() bool {
	return func() bool { k, err := m(); return err == nil && k >= n }
}

func (e *env) publisher(t *testing.T, topic, typ string) *zerocopy.Publisher {
	p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typ, Node: "/gw_test", QoS: testQoS})
	must(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func (e *env) subscription(t *testing.T, topic, typ string) *zerocopy.Subscription {
	s, err := e.dom.NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: typ, Node: "/gw_test", QoS: testQoS})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func (e *env) reader(t *testing.T, topic, typ string) *dds.Reader {
	tp, err := e.part.Topic(topic, typ)
	must(t, err)
	r, err := tp.NewReader(dds.EndpointOptions{QoS: testQoS})
	must(t, err)
	return r
}

func (e *env) writer(t *testing.T, topic, typ string) *dds.Writer {
	tp, err := e.part.Topic(topic, typ)
	must(t, err)
	w, err := tp.NewWriter(dds.EndpointOptions{QoS: testQoS})
	must(t, err)
	return w
}

// take takes one message from a DDS reader within 10 s.
func take(t *testing.T, r *dds.Reader) []byte {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); {
		s, ok, err := r.Take()
		must(t, err)
		if ok {
			return s.Data
		}
		r.Wait(100 * time.Millisecond)
	}
	t.Fatal("no DDS message")
	return nil
}

// takeRgaps takes one message from an rgaps subscription within 10 s.
func takeRgaps(t *testing.T, s *zerocopy.Subscription) []byte {
	t.Helper()
	smp, err := s.TakeWait(10 * time.Second)
	must(t, err)
	defer smp.Return()
	return bytes.Clone(smp.Bytes())
}

func randomString(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(rand.IntN(26))
	}
	return string(b)
}

// TestGatewayToDDS: an rgaps publisher's CDR reaches a DDS reader of
// rt/<topic> as it is, small and 4 MiB.
func TestGatewayToDDS(t *testing.T) {
	e := startGateway(t, "/gw_out*")
	for _, n := range []int{5, 4 << 20} {
		topic := fmt.Sprintf("/gw_out%d", n)
		p := e.publisher(t, topic, "std_msgs/msg/String")
		r := e.reader(t, topic, "std_msgs/msg/String")
		eventually(t, "the gateway's DDS writer", matched(r.Matched, 1))
		eventually(t, "the gateway's subscription", func() bool { return p.Matched() >= 1 })
		msg := stringCDR(randomString(n))
		must(t, p.Publish(msg))
		if got := take(t, r); !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: DDS got %d bytes, not the message", len(msg), len(got))
		}
	}
}

// TestGatewayFromDDS: a DDS writer's CDR reaches an rgaps subscription as
// it is, small and 4 MiB.
func TestGatewayFromDDS(t *testing.T) {
	e := startGateway(t)
	for _, n := range []int{5, 4 << 20} {
		topic := fmt.Sprintf("/gw_in%d", n)
		w := e.writer(t, topic, "std_msgs/msg/String")
		s := e.subscription(t, topic, "std_msgs/msg/String")
		eventually(t, "the gateway's DDS reader", matched(w.Matched, 1))
		eventually(t, "the gateway's publisher", func() bool { return s.Matched() >= 1 })
		msg := stringCDR(randomString(n))
		must(t, w.Write(msg))
		if got := takeRgaps(t, s); !bytes.Equal(got, msg) {
			t.Fatalf("%d bytes: rgaps got %d bytes, not the message", len(msg), len(got))
		}
	}
}

// TestGatewayPlainType: a plain type's 4 reserved bytes are stripped on
// the way to DDS and added on the way in.
func TestGatewayPlainType(t *testing.T) {
	e := startGateway(t)
	const typ = "std_msgs/msg/Int32"
	p := e.publisher(t, "/gw_plain_out", typ)
	r := e.reader(t, "/gw_plain_out", typ)
	w := e.writer(t, "/gw_plain_in", typ)
	s := e.subscription(t, "/gw_plain_in", typ)
	eventually(t, "the mirrors", func() bool {
		a, _ := r.Matched()
		b, _ := w.Matched()
		return a >= 1 && b >= 1 && p.Matched() >= 1 && s.Matched() >= 1
	})
	must(t, p.Publish(append([]byte{0, 0, 0, 0}, int32CDR(7)...)))
	if got := take(t, r); !bytes.Equal(got, int32CDR(7)) {
		t.Fatalf("DDS got % x, want % x", got, int32CDR(7))
	}
	must(t, w.Write(int32CDR(-9)))
	if got, want := takeRgaps(t, s), append([]byte{0, 0, 0, 0}, int32CDR(-9)...); !bytes.Equal(got, want) {
		t.Fatalf("rgaps got % x, want % x", got, want)
	}
}

// TestGatewayNoLoop: with a publisher and a reader on each side of one
// topic, each reader gets each message exactly once.
func TestGatewayNoLoop(t *testing.T) {
	e := startGateway(t)
	const topic, typ, n = "/gw_loop", "std_msgs/msg/String", 20
	p := e.publisher(t, topic, typ)
	s := e.subscription(t, topic, typ)
	w := e.writer(t, topic, typ)
	r := e.reader(t, topic, typ)
	eventually(t, "the mirrors", func() bool {
		a, _ := r.Matched() // w and the gateway's writer
		return a >= 2 && s.Matched() >= 2 && p.Matched() >= 2
	})
	for i := range n {
		must(t, p.Publish(stringCDR(fmt.Sprint("rgaps ", i))))
		must(t, w.Write(stringCDR(fmt.Sprint("dds ", i))))
	}
	want := map[string]int{}
	for i := range n {
		want[string(stringCDR(fmt.Sprint("rgaps ", i)))] = 1
		want[string(stringCDR(fmt.Sprint("dds ", i)))] = 1
	}
	gotDDS, gotRgaps := map[string]int{}, map[string]int{}
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		if smp, ok, _ := r.Take(); ok {
			gotDDS[string(smp.Data)]++
			continue
		}
		if smp, err := s.Take(); err == nil {
			gotRgaps[string(smp.Bytes())]++
			smp.Return()
			continue
		}
		time.Sleep(10 * time.Millisecond)
	}
	for name, got := range map[string]map[string]int{"DDS": gotDDS, "rgaps": gotRgaps} {
		if len(got) != len(want) {
			t.Errorf("%s reader got %d distinct messages, want %d", name, len(got), len(want))
		}
		for m, k := range got {
			if want[m] != k {
				t.Errorf("%s reader got %q %d times", name, m[8:], k)
			}
		}
	}
}
