package bridge

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// fakePeer is an authenticated peer that speaks the real protocol through
// package control (it holds the cluster secret) and sends whatever a test
// tells it to: a broken or hostile daemon.
type fakePeer struct {
	s    *control.Session
	mu   sync.Mutex
	up   *control.Conn
	ring *ringOffer // the ring the daemon under test offered it
}

func dialFake(t *testing.T, addr, host string) *fakePeer {
	t.Helper()
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakePeer{}
	s, err := control.NewSession(control.SessionConfig{
		Peer:      control.Peer{Host: ta.IP.String(), Port: ta.Port},
		Handshake: control.HandshakeConfig{Secret: twoHostSecret, HostID: host},
		OnUp: func(c *control.Conn, _ control.Hello) {
			f.mu.Lock()
			f.up = c
			f.mu.Unlock()
		},
		OnMessage: func(typ control.MsgType, p []byte) {
			var o ringOffer
			if typ == msgRingOffer && control.Decode(p, &o) == nil {
				f.mu.Lock()
				f.ring = &o
				f.mu.Unlock()
			}
		},
		OnDown: func(error) {
			f.mu.Lock()
			f.up = nil
			f.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	t.Cleanup(func() { s.Close() })
	return f
}

func (f *fakePeer) conn() *control.Conn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.up
}

func (f *fakePeer) offered() *ringOffer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ring
}

func (f *fakePeer) send(t *testing.T, typ control.MsgType, v any) {
	t.Helper()
	if err := f.conn().Send(typ, v); err != nil {
		t.Fatalf("sending type %d: %v", typ, err)
	}
}

func countFDs(t *testing.T) int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func countLines(s, part string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, part) {
			n++
		}
	}
	return n
}

// An authenticated peer that floods the daemon with ring offers of
// distinct ids and sends every control message with hostile values
// (names with "..", NUL or 512 KiB, oversized tables, unknown rings and
// types) gets refusals, logged at a bounded rate; the daemon's
// goroutines and descriptors stay bounded by its limits; and a real peer
// keeps exchanging messages throughout.
func TestHostilePeerFlood(t *testing.T) {
	var logb syncBuffer
	a, b := pair(t, "tcp", func(o *Options) {
		if o.Control.HostID == "host-b" {
			o.Log = slog.New(slog.NewTextHandler(&logb, nil))
		}
	})
	exchange(t, a, b, "/before", reliable(), []int{10})

	evil := dialFake(t, b.ControlAddr(), "host-evil")
	testutil.Eventually(t, 10*time.Second, "the fake peer is up and offered a ring", func() bool {
		return evil.conn() != nil && evil.offered() != nil
	})
	refused := func() uint64 {
		for _, p := range b.Status().Peers {
			if p.Host == "host-evil" {
				return p.Refused
			}
		}
		return 0
	}
	// Hostile values for every message type: each is refused (counted),
	// one at a time.
	huge := "/" + strings.Repeat("a", 512<<10)
	bad := []string{"/a/../b", "/a\x00b", huge, "../etc/passwd", "", "/\x1b[31mred"}
	mine := evil.offered()
	var topics []topicInterest
	for i := 0; i < 5000; i++ {
		topics = append(topics, topicInterest{Topic: fmt.Sprintf("/t%d", i), Type: "a/msg/B"})
	}
	hostile := []struct {
		typ control.MsgType
		v   any
	}{
		{msgInterest, interestMsg{Topics: topics}},
		{msgInterest, interestMsg{Topics: []topicInterest{{Topic: "/ok", Type: "a/msg/B", Depth: 1 << 30}}}},
		{msgRingOffer, ringOffer{Ring: 1, ReaderEpoch: 1, Size: 1 << 20, Region: region{Len: 2 << 20}, TailOff: 1 << 20, Provider: "plaintcp", Addr: strings.Repeat("x", 512<<10), RingVersion: ring.Version}},
		{msgRingAccept, ringAccept{Ring: mine.Ring, ReaderEpoch: mine.ReaderEpoch, Offer: mine.Offer}},
		{msgRingAccept, ringAccept{Ring: 1 << 31}},
		{msgTopicMap, topicMap{Ring: mine.Ring, ReaderEpoch: mine.ReaderEpoch, ID: 0, Topic: "/m", Type: "a/msg/B", QoS: encodeQoS(reliable())}},
		{msgGraph, graphMsg{Endpoints: []graphEndpoint{{Topic: "/g", Type: "a/msg/B", Kind: "spy", QoS: encodeQoS(reliable())}}}},
		{99, map[string]any{"x": 1}},
	}
	for _, name := range bad {
		hostile = append(hostile, []struct {
			typ control.MsgType
			v   any
		}{
			{msgInterest, interestMsg{Topics: []topicInterest{{Topic: name, Type: "a/msg/B"}}}},
			{msgInterest, interestMsg{Topics: []topicInterest{{Topic: "/ok", Type: name}}}},
			{msgGraph, graphMsg{Nodes: []graphNode{{Name: name, Namespace: "/"}}}},
			{msgGraph, graphMsg{Endpoints: []graphEndpoint{{Topic: name, Type: "a/msg/B", Kind: "publisher", QoS: encodeQoS(reliable())}}}},
			{msgTopicMap, topicMap{Ring: mine.Ring, ReaderEpoch: mine.ReaderEpoch, ID: 1, Topic: name, Type: "a/msg/B", QoS: encodeQoS(reliable())}},
			{msgTopicMap, topicMap{Ring: mine.Ring, ReaderEpoch: mine.ReaderEpoch, ID: 1, Topic: "/ok", Type: name, QoS: encodeQoS(reliable())}},
		}...)
	}
	for _, name := range append(append([]string(nil), bad[:4]...), bad[5:]...) { // "" is the per-host ring: valid
		hostile = append(hostile, struct {
			typ control.MsgType
			v   any
		}{msgRingOffer, ringOffer{Ring: 1, Topic: name, ReaderEpoch: 1, Size: 1 << 20, Region: region{Len: 2 << 20}, TailOff: 1 << 20, Provider: "plaintcp", Addr: "127.0.0.1:1", RingVersion: ring.Version}})
	}
	for i, m := range hostile {
		before := refused()
		evil.send(t, m.typ, m.v)
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("hostile message %d (type %d) refused", i, m.typ), func() bool { return refused() > before })
	}
	for _, want := range []string{"interest in 5000 topics", "transport address of 524288 bytes", "head region", "unknown ring 2147483648", "unknown message type 99"} {
		if !strings.Contains(logb.String(), want) {
			t.Errorf("refusal not logged: %s", want)
		}
	}

	// A flood: 5,000 ring offers with distinct ids, each valid on its own
	// (the writer's connection to the named address fails), 6,000 topic
	// ids for the ring the daemon offered, long ring-down reasons, every
	// unknown message type.
	runtime.GC()
	goroutines, fds := runtime.NumGoroutine(), countFDs(t)
	const offers = 5000
	for i := 1; i <= offers; i++ {
		evil.send(t, msgRingOffer, ringOffer{Ring: uint32(i), ReaderEpoch: 1, Size: 1 << 20, Region: region{Len: 2 << 20}, TailOff: 1 << 20,
			Provider: "plaintcp", Addr: "127.0.0.1:1", Offer: 1, RingVersion: ring.Version})
	}
	for id := uint32(1); id <= 6000; id++ {
		evil.send(t, msgTopicMap, topicMap{Ring: mine.Ring, ReaderEpoch: mine.ReaderEpoch, ID: id, Topic: fmt.Sprintf("/m%d", id), Type: "a/msg/B", QoS: encodeQoS(reliable())})
	}
	for i := 0; i < 100; i++ {
		evil.send(t, msgRingDown, ringDown{Ring: uint32(i), FromReader: true, Reason: strings.Repeat("r", 900<<10)})
	}
	for typ := 22; typ < 256; typ++ {
		evil.send(t, control.MsgType(typ), map[string]any{"x": 1})
	}
	testutil.Eventually(t, 20*time.Second, "the flood refused", func() bool {
		return refused() >= uint64(len(hostile)+offers-DefaultMaxRingsPerPeer)
	})
	// Bounded: the writer links the peer could create are capped, each a
	// goroutine or two and a socket at most.
	var writers int
	for _, p := range b.Status().Peers {
		if p.Host == "host-evil" {
			for _, l := range p.Links {
				if l.Role == "writer" {
					writers++
				}
			}
		}
	}
	if writers > DefaultMaxRingsPerPeer {
		t.Errorf("the peer got %d writer links, limit %d", writers, DefaultMaxRingsPerPeer)
	}
	limit := 3*DefaultMaxRingsPerPeer + 64
	if g := runtime.NumGoroutine(); g > goroutines+limit {
		t.Errorf("%d goroutines after the flood, %d before: more than the limits allow (%d)", g, goroutines, limit)
	}
	if n := countFDs(t); n > fds+limit {
		t.Errorf("%d descriptors after the flood, %d before: more than the limits allow (%d)", n, fds, limit)
	}
	// The refusals are logged at a bounded rate, not once per message.
	if n := countLines(logb.String(), "control message refused"); n > offers/2 {
		t.Errorf("%d log lines for about %d refused messages", n, offers)
	}
	// The first refusal the rate allows again counts the ones suppressed
	// (the flood may end before it does: one more, once a token is back).
	if !strings.Contains(logb.String(), "suppressed=") {
		time.Sleep(250 * time.Millisecond)
		evil.send(t, 99, map[string]any{"x": 1})
		testutil.Eventually(t, 10*time.Second, "a log line counts the refusals it suppressed", func() bool {
			return strings.Contains(logb.String(), "suppressed=")
		})
	}
	if evil.conn() == nil {
		t.Error("the peer over its limits lost its session (it keeps it; its messages are refused)")
	}
	exchange(t, a, b, "/after", reliable(), []int{10, 3 << 20})
}

// Host ids beyond MaxPeers and connections beyond MaxConnsPerPeer are
// refused (logged); the peers within the limits keep working.
func TestPeerLimits(t *testing.T) {
	var logb syncBuffer
	a, b := pair(t, "tcp", func(o *Options) {
		o.MaxPeers = 3
		if o.Control.HostID == "host-b" {
			o.Log = slog.New(slog.NewTextHandler(&logb, nil))
		}
	})
	exchange(t, a, b, "/before", reliable(), []int{10})
	for i := 0; i < MaxConnsPerPeer+3; i++ {
		dialFake(t, b.ControlAddr(), "host-dup")
	}
	testutil.Eventually(t, 20*time.Second, "the connection limit refusal is logged", func() bool {
		return strings.Contains(logb.String(), "too many from one peer")
	})
	for i := 0; i < 5; i++ {
		dialFake(t, b.ControlAddr(), fmt.Sprintf("host-x%d", i))
	}
	testutil.Eventually(t, 20*time.Second, "refusals logged", func() bool {
		s := logb.String()
		return strings.Contains(s, "too many peers") && strings.Contains(s, "too many from one peer")
	})
	if n := len(b.Status().Peers); n > 3 {
		t.Errorf("%d peers known, MaxPeers 3", n)
	}
	exchange(t, a, b, "/after", reliable(), []int{10, 100000})
}
