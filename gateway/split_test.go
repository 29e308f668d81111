package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// splitMsg is a message of a type with a byte field: its CDR whole, and
// split as the rmw splits it (the meta block, the field's bytes).
type splitMsg struct {
	typ         string
	def         *schema.Message
	field       int
	whole, data []byte
	rest, meta  []byte // rest: the CDR with the field empty; meta: RGDM header + rest
}

// makeSplitMsg builds a message of typ with n random bytes in its byte
// field and the other fields set by set (on the whole message).
func makeSplitMsg(t testing.TB, typ string, n int, set map[string]any) splitMsg {
	t.Helper()
	def, err := interfaces.Registry().Message(typ)
	must(t, err)
	field, err := schema.ByteField(def, "")
	must(t, err)
	v := schema.New(def)
	for path, x := range set {
		must(t, v.Set(path, x))
	}
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 7))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	v.Values[field] = data
	whole, err := schema.Encode(def, v)
	must(t, err)
	v.Values[field] = []byte{}
	rest, err := schema.Encode(def, v)
	must(t, err)
	return splitMsg{typ: typ, def: def, field: field, whole: whole, data: data, rest: rest,
		meta: append(schema.AppendMetaHeader(nil, field), rest...)}
}

// imageMsg is a 4 MiB sensor_msgs/Image (data last); pointCloudMsg a
// PointCloud2 of 4 MiB + 3 bytes, whose data is followed by is_dense, so
// the fields after the byte field land at another alignment when joined.
func imageMsg(t *testing.T) splitMsg {
	return makeSplitMsg(t, "sensor_msgs/msg/Image", 4<<20, map[string]any{"header.frame_id": "camera_optical",
		"height": uint32(1024), "width": uint32(1024), "encoding": "mono32", "step": uint32(4096)})
}

func pointCloudMsg(t *testing.T) splitMsg {
	return makeSplitMsg(t, "sensor_msgs/msg/PointCloud2", 4<<20+3, map[string]any{"header.frame_id": "lidar",
		"height": uint32(1), "width": uint32(4<<20 + 3), "point_step": uint32(1), "row_step": uint32(4<<20 + 3), "is_dense": true})
}

// publishSplit publishes m split, as the rmw publishes a device loan
// (here in host memory: a host loan, or the staging pool of a GPU topic).
func publishSplit(t *testing.T, p *zerocopy.Publisher, m splitMsg) {
	t.Helper()
	l, err := p.Loan(len(m.data))
	must(t, err)
	copy(l.Bytes(), m.data)
	must(t, l.SetMeta(m.meta))
	must(t, l.Publish())
}

// TestGatewaySplitToDDS: split messages of rgaps publishers (on a topic
// with a GPU pool and on a host topic) reach a DDS reader as the whole
// message's CDR, every byte as the rmw writes it unsplit.
func TestGatewaySplitToDDS(t *testing.T) {
	e := startGateway(t, "/gw_split_out*")
	for _, c := range []struct {
		topic string
		gpu   bool
		msg   splitMsg
	}{
		{"/gw_split_out_gpu", true, imageMsg(t)},
		{"/gw_split_out_host", false, pointCloudMsg(t)},
	} {
		p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: c.topic, Type: c.msg.typ, Node: "/gw_test", QoS: testQoS, GPUPool: c.gpu})
		must(t, err)
		t.Cleanup(func() { p.Close() })
		if c.gpu && p.Topic().PoolKind() != zerocopy.PoolGPU {
			t.Fatalf("%s has no GPU pool", c.topic)
		}
		r := e.reader(t, c.topic, c.msg.typ)
		eventually(t, "the gateway's DDS writer", matched(r.Matched, 1))
		eventually(t, "the gateway's subscription", func() bool { return p.Matched() >= 1 })
		publishSplit(t, p, c.msg)
		if got := take(t, r); !bytes.Equal(got, c.msg.whole) {
			t.Fatalf("%s: DDS got %d bytes, want the whole message's %d (first difference at %d)", c.topic, len(got), len(c.msg.whole), firstDiff(got, c.msg.whole))
		}
	}
}

// TestGatewaySplitFromDDS: a DDS writer's 4 MiB Image reaches a topic with
// a GPU pool split, the data in a block of the pool and the other fields
// in the meta block (what a device subscription reads), so a subscription
// finds both and a CPU reader joins them to the whole message; a topic
// without a GPU pool or device readers, and a type without a byte field,
// get the whole message as it was written.
func TestGatewaySplitFromDDS(t *testing.T) {
	e, logs := startGatewayLogged(t)
	img := imageMsg(t)
	spec := zerocopy.EndpointSpec{Topic: "/gw_split_in", Type: img.typ, Node: "/gw_test", QoS: testQoS, GPUPool: true}
	split, err := e.dom.NewSubscription(spec)
	must(t, err)
	t.Cleanup(func() { split.Close() })
	cpu := e.subscription(t, "/gw_split_in", img.typ)
	host := e.subscription(t, "/gw_split_in_host", img.typ) // a host topic, no device readers
	spec.Topic, spec.Type = "/gw_split_in_string", "std_msgs/msg/String"
	str, err := e.dom.NewSubscription(spec) // a GPU pool, a type without a byte field
	must(t, err)
	t.Cleanup(func() { str.Close() })
	w := e.writer(t, "/gw_split_in", img.typ)
	wHost := e.writer(t, "/gw_split_in_host", img.typ)
	wStr := e.writer(t, "/gw_split_in_string", "std_msgs/msg/String")
	eventually(t, "the mirrors", func() bool {
		a, _ := w.Matched()
		b, _ := wHost.Matched()
		c, _ := wStr.Matched()
		return a >= 1 && b >= 1 && c >= 1 && split.Matched() >= 1 && cpu.Matched() >= 1 && host.Matched() >= 1 && str.Matched() >= 1
	})
	must(t, w.Write(img.whole))
	must(t, wHost.Write(img.whole))
	msg := stringCDR(randomString(1000))
	must(t, wStr.Write(msg))

	smp, err := split.TakeWait(10 * time.Second)
	must(t, err)
	field, rest, err := schema.ParseMeta(smp.Meta())
	must(t, err)
	if field != img.field || !bytes.Equal(rest, img.rest) {
		t.Errorf("meta block names field %d with %x, want %d with %x", field, rest, img.field, img.rest)
	}
	if !bytes.Equal(smp.Bytes(), img.data) {
		t.Errorf("the block holds %d bytes, not the %d of the data (first difference at %d)", len(smp.Bytes()), len(img.data), firstDiff(smp.Bytes(), img.data))
	}
	smp.Return()
	smp, err = cpu.TakeWait(10 * time.Second)
	must(t, err)
	if joined, err := schema.Join(img.def, img.field, smp.Meta()[schema.MetaHeaderSize:], smp.Bytes()); err != nil || !bytes.Equal(joined, img.whole) {
		t.Errorf("the CPU reader's message joined: %d bytes, %v; want the whole %d", len(joined), err, len(img.whole))
	}
	smp.Return()
	for _, c := range []struct {
		s    *zerocopy.Subscription
		want []byte
	}{{host, img.whole}, {str, msg}} {
		smp, err := c.s.TakeWait(10 * time.Second)
		must(t, err)
		if smp.Meta() != nil || !bytes.Equal(smp.Bytes(), c.want) {
			t.Errorf("%s: meta %d bytes, payload %d bytes; want the whole %d-byte message", c.s.Topic().Name(), len(smp.Meta()), len(smp.Bytes()), len(c.want))
		}
		smp.Return()
	}
	if l := logs.String(); strings.Contains(l, fallbackLog) {
		t.Errorf("a fallback was logged:\n%s", l)
	}
}

// TestGatewaySplitFallback: a message that cannot be split (its other
// fields exceed a meta block) reaches the rgaps readers whole, and the
// fallback is logged once for the topic.
func TestGatewaySplitFallback(t *testing.T) {
	e, logs := startGatewayLogged(t)
	big := makeSplitMsg(t, "sensor_msgs/msg/Image", 1000, map[string]any{"encoding": strings.Repeat("x", zerocopy.MaxMeta)})
	spec := zerocopy.EndpointSpec{Topic: "/gw_split_fallback", Type: big.typ, Node: "/gw_test", QoS: testQoS, GPUPool: true}
	s, err := e.dom.NewSubscription(spec)
	must(t, err)
	t.Cleanup(func() { s.Close() })
	w := e.writer(t, spec.Topic, big.typ)
	eventually(t, "the mirror", func() bool { a, _ := w.Matched(); return a >= 1 && s.Matched() >= 1 })
	for range 2 {
		must(t, w.Write(big.whole))
	}
	for range 2 {
		smp, err := s.TakeWait(10 * time.Second)
		must(t, err)
		if smp.Meta() != nil || !bytes.Equal(smp.Bytes(), big.whole) {
			t.Errorf("meta %d bytes, payload %d bytes; want the whole %d-byte message", len(smp.Meta()), len(smp.Bytes()), len(big.whole))
		}
		smp.Return()
	}
	if n := strings.Count(logs.String(), fallbackLog); n != 1 {
		t.Errorf("the fallback was logged %d times:\n%s", n, logs.String())
	}
}

// fallbackLog is what the gateway logs (once per topic) when a message of
// a type with a device field could not be split.
const fallbackLog = "a message of a type with a device field was published whole"

// firstDiff is the index of the first byte where a and b differ.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// logBuf collects a gateway's log lines (and passes them to the test log).
type logBuf struct {
	t  testing.TB
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	l.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startGatewayLogged is startGateway with the gateway's log kept.
func startGatewayLogged(t *testing.T, topics ...string) (*env, *logBuf) {
	t.Helper()
	return startGatewayPool(t, 64<<20, topics...)
}

// startGatewayPool is startGatewayLogged with topics of poolSize bytes.
func startGatewayPool(t testing.TB, poolSize uint64, topics ...string) (*env, *logBuf) {
	t.Helper()
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	logs := &logBuf{t: t}
	cfg := zerocopy.Config{Prefix: testutil.Prefix(), Domain: testDomain, PoolSize: poolSize, SkipStaleClean: true}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Engine: cfg, Topics: topics, Interval: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(logs, nil))})
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
	return &env{dom: dom, part: part}, logs
}
