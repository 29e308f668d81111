package bridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func TestMain(m *testing.M) {
	// About one run in three (under load, -race) a loopback TCP socket of
	// these tests is still open in CLOSE_WAIT at the end and closes 5–12 s
	// later (it passed every run with 12 s and 30 s). Which connection it
	// is remains to be found (docs/ARCHITECTURE.md §6); a socket that never
	// closes still fails the check.
	testutil.AtLeastLeakGrace(20 * time.Second)
	testutil.Main(m)
}

func testLog(t testing.TB) *slog.Logger {
	if os.Getenv("RGAPS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

// pair starts two bridges ("hosts" a and b: separate shm prefixes, as two
// hosts have separate /dev/shm) on loopback; a dials b.
func pair(t *testing.T, provider string, tune func(*Options)) (a, b *Bridge) {
	t.Helper()
	mk := func(host, listen string, peers []control.Peer) *Bridge {
		o := Options{
			Engine:   zerocopy.Config{Prefix: testutil.Prefix() + host, PoolSize: 128 << 20, SkipStaleClean: true},
			Control:  control.Config{Listen: listen, Peers: peers, Secret: twoHostSecret, HostID: "host-" + host, Heartbeat: 100 * time.Millisecond, DeadAfter: time.Second},
			Provider: provider,
			RingSize: 8 << 20,
			Log:      testLog(t),
		}
		if tune != nil {
			tune(&o)
		}
		br, err := New(o)
		if err != nil {
			if provider != "tcp" && errorsIsNotSupported(err) {
				t.Skipf("provider %s: %v", provider, err)
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { br.Close() })
		return br
	}
	b = mk("b", "127.0.0.1:0", nil)
	addr := b.ControlAddr()
	var peer control.Peer
	fmt.Sscanf(addr, "127.0.0.1:%d", &peer.Port)
	peer.Host = "127.0.0.1"
	a = mk("a", "", []control.Peer{peer})
	return a, b
}

func TestBridgeSmoke(t *testing.T) {
	for _, prov := range []string{"tcp", "fabric:tcp"} {
		for _, c := range []struct {
			mode  ring.Mode
			rails int
		}{{ring.WriteImm, 1}, {ring.WriteTwice, 1}, {ring.WriteImm, 3}} {
			t.Run(fmt.Sprintf("%s/%v/%d-rails", prov, c.mode, c.rails), func(t *testing.T) {
				a, b := pair(t, prov, func(o *Options) { o.Mode = c.mode; o.MaxChunk = 1 << 20; o.Rails = c.rails })
				q := qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable}
				sub, pub := endpoints(t, a, b, "/smoke", q)
				// Several messages in flight, one striped over the rails
				// (3 chunks of 1 MiB), small ones between.
				sizes := []int{100, 4096, 3 << 20, 1, 700 << 10, 64, 2 << 20, 5}
				for i, n := range sizes {
					msg := bytes.Repeat([]byte{byte(i + 1)}, n)
					if err := pub.Publish(msg); err != nil {
						t.Fatal(err)
					}
				}
				for i, n := range sizes {
					smp, err := sub.TakeWait(10 * time.Second)
					if err != nil {
						t.Fatalf("message %d: %v", i, err)
					}
					if smp.Size() != n || !bytes.Equal(smp.Bytes(), bytes.Repeat([]byte{byte(i + 1)}, n)) {
						t.Fatalf("message %d: %d bytes, want %d", i, smp.Size(), n)
					}
					if smp.Info().Publisher != pub.GID() {
						t.Errorf("message %d: publisher GID %v, want %v", i, smp.Info().Publisher, pub.GID())
					}
					smp.Return()
				}
			})
		}
	}
}

func errorsIsNotSupported(err error) bool {
	return errors.Is(err, transport.ErrNotSupported)
}

var twoHostSecret = []byte("0123456789abcdef-test-secret")

// syncBuffer is a log sink for tests.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exchange publishes n messages on a and checks that b's subscription gets
// them, intact and in order.
func exchange(t *testing.T, a, b *Bridge, topic string, q qos.Profile, sizes []int) {
	t.Helper()
	sub, pub := endpoints(t, a, b, topic, q)
	for i, n := range sizes {
		if err := pub.Publish(bytes.Repeat([]byte{byte(i + 1)}, n)); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range sizes {
		smp, err := sub.TakeWait(10 * time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if smp.Size() != n || !bytes.Equal(smp.Bytes(), bytes.Repeat([]byte{byte(i + 1)}, n)) {
			t.Fatalf("message %d: %d bytes, want %d", i, smp.Size(), n)
		}
		smp.Return()
	}
}

// endpoints makes a subscription on b and a publisher on a of topic (closed
// at the end of the test) and waits until the bridge's subscription on a
// matched the publisher.
func endpoints(t *testing.T, a, b *Bridge, topic string, q qos.Profile) (*zerocopy.Subscription, *zerocopy.Publisher) {
	t.Helper()
	sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: "std_msgs/msg/String", Node: "/l", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: "std_msgs/msg/String", Node: "/t", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	testutil.Eventually(t, 10*time.Second, "the bridge subscription matches", func() bool { return pub.Matched() > 0 })
	return sub, pub
}

func reliable() qos.Profile {
	return qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable}
}

// A peer with the wrong secret is refused and logged; garbage and
// truncated frames on the control port are refused; the daemon keeps
// serving its real peer throughout.
func TestControlPortAbuse(t *testing.T) {
	var logb syncBuffer
	log := slog.New(slog.NewTextHandler(&logb, nil))
	a, b := pair(t, "tcp", func(o *Options) {
		if o.Control.HostID == "host-b" {
			o.Log = log
		}
	})
	// Wrong secret.
	port := b.listener.Addr().(*net.TCPAddr).Port
	c, err := New(Options{
		Engine:   zerocopy.Config{Prefix: testutil.Prefix() + "c", PoolSize: 16 << 20, SkipStaleClean: true},
		Control:  control.Config{Peers: []control.Peer{{Host: "127.0.0.1", Port: port}}, Secret: []byte("a-wrong-secret-of-enough-length"), HostID: "host-c"},
		Provider: "tcp",
		RingSize: 1 << 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Garbage, then a frame header announcing more than it sends.
	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		{'R', 'G', 'C', 'P', 1, 1, 0, 0, 100, 0, 0, 0, '{'},
		bytes.Repeat([]byte{0xff}, 5000),
	} {
		nc, err := net.Dial("tcp", b.ControlAddr())
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(junk)
		nc.Close()
	}
	testutil.Eventually(t, 10*time.Second, "the refusals are logged", func() bool {
		s := logb.String()
		return strings.Contains(s, "authentication") || strings.Contains(s, "auth")
	})
	for _, p := range b.Status().Peers {
		if p.Host == "host-c" && p.Up {
			t.Fatal("a peer with the wrong secret was accepted")
		}
	}
	if st := c.Status(); len(st.Peers) != 0 {
		t.Fatalf("the peer with the wrong secret got a session: %+v", st.Peers)
	}
	exchange(t, a, b, "/abuse", reliable(), []int{10, 100000})
}

// Ring parameters that point outside the registered region, and other
// malformed control messages from an authenticated peer, are refused with
// a clear error; nothing crashes and the daemon goes on.
func TestBadRingOffer(t *testing.T) {
	var logb syncBuffer
	a, b := pair(t, "tcp", func(o *Options) {
		if o.Control.HostID == "host-a" {
			o.Log = slog.New(slog.NewTextHandler(&logb, nil))
		}
	})
	exchange(t, a, b, "/before", reliable(), []int{10})
	// A fake daemon, authenticated, connected to a.
	ln, err := control.Listen("127.0.0.1:0", control.HandshakeConfig{Secret: twoHostSecret, HostID: "host-fake"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	sent := make(chan error, 1)
	// An authenticated peer: a bridge a2 dials the fake daemon.
	a2, err := New(Options{
		Engine:   zerocopy.Config{Prefix: testutil.Prefix() + "f", PoolSize: 16 << 20, SkipStaleClean: true},
		Control:  control.Config{Peers: []control.Peer{{Host: "127.0.0.1", Port: port}}, Secret: twoHostSecret, HostID: "host-a2"},
		Provider: "tcp", RingSize: 1 << 20,
		Log: slog.New(slog.NewTextHandler(&logb, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	conn, hello, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if hello.HostID != "host-a2" {
		t.Fatalf("hello from %q", hello.HostID)
	}
	go func() {
		bad := []struct {
			t control.MsgType
			v any
		}{
			{msgRingOffer, ringOffer{Ring: 1, ReaderEpoch: 1, Size: 1 << 20, Base: 1 << 20, Region: region{Len: 1 << 20}, Provider: "plaintcp", Addr: "127.0.0.1:1", RingVersion: ring.Version}},
			{msgRingOffer, ringOffer{Ring: 2, ReaderEpoch: 1, Size: 1 << 20, Region: region{Len: 4096}, Provider: "plaintcp", Addr: "127.0.0.1:1", RingVersion: ring.Version}},
			{msgRingOffer, ringOffer{Ring: 3, ReaderEpoch: 1, Size: 1000, Region: region{Len: 1 << 20}, Provider: "plaintcp", Addr: "127.0.0.1:1", RingVersion: ring.Version}},
			{msgRingOffer, ringOffer{Ring: 4, ReaderEpoch: 1, Size: 1 << 16, Mode: uint8(ring.WriteTwice), TailOff: 1 << 16, Region: region{Len: 1 << 16}, Provider: "plaintcp", Addr: "127.0.0.1:1", RingVersion: ring.Version}},
			{msgRingOffer, ringOffer{Ring: 5, ReaderEpoch: 1, Size: 1 << 16, Region: region{Len: 1<<16 + 64}, TailOff: 1 << 16, Provider: "fabric:verbs", Addr: "127.0.0.1:1", RingVersion: ring.Version}},
			// A version 1 reader's offer: no ring_version.
			{msgRingOffer, ringOffer{Ring: 6, ReaderEpoch: 1, Size: 1 << 20, Region: region{Len: 1 << 20}, Provider: "plaintcp", Addr: "127.0.0.1:1"}},
			{msgRingAccept, ringAccept{Ring: 77}},
			{msgTopicMap, topicMap{Ring: 78, ID: 1, Topic: "/x", Type: "a/msg/B"}},
			{msgInterest, map[string]any{"topics": []map[string]any{{"topic": "", "type": ""}}}},
			{msgGraph, map[string]any{"host": "x", "endpoints": []map[string]any{{"topic": "/x", "qos": []byte{1, 2, 3}}}}},
			{99, map[string]any{}},
		}
		for _, m := range bad {
			if err := conn.Send(m.t, m.v); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"outside the 1048576-byte registered region", "outside the 4096-byte registered region",
		"not a multiple of 64", "tail slot", "uses provider fabric:verbs", "reads ring wire format version 0", "unknown ring 77", "unknown ring 78", "interest: ", "graph endpoint", "unknown message type 99"} {
		testutil.Eventually(t, 10*time.Second, "refusal logged: "+want, func() bool { return strings.Contains(logb.String(), want) })
	}
	// a2 is still alive and a/b still work.
	if st := a2.Status(); len(st.Peers) != 1 || !st.Peers[0].Up {
		t.Errorf("a2 lost its (fake) peer: %+v", st.Peers)
	}
	exchange(t, a, b, "/after", reliable(), []int{10, 3 << 20})
}

// A TRANSIENT_LOCAL subscription that joins on another host after the
// messages were published receives the history.
func TestTransientLocalAcrossHosts(t *testing.T) {
	a, b := pair(t, "tcp", nil)
	q := qos.Profile{History: qos.HistoryKeepLast, Depth: 5, Reliability: qos.ReliabilityReliable, Durability: qos.DurabilityTransientLocal}
	pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: "/tl", Type: "std_msgs/msg/String", Node: "/t", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	for i := 0; i < 10; i++ {
		if err := pub.Publish([]byte(fmt.Sprint("msg ", i))); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/tl", Type: "std_msgs/msg/String", Node: "/l", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for i := 5; i < 10; i++ {
		smp, err := sub.TakeWait(10 * time.Second)
		if err != nil {
			t.Fatalf("history message %d: %v", i, err)
		}
		if got, want := string(smp.Bytes()), fmt.Sprint("msg ", i); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		smp.Return()
	}
}

// BEST_EFFORT never blocks: with a ring too small for a burst, messages
// are dropped and counted, the rest arrive intact and in order.
func TestBestEffortDropsWhenRingFull(t *testing.T) {
	a, b := pair(t, "tcp", func(o *Options) { o.RingSize = 256 << 10 })
	q := qos.Profile{History: qos.HistoryKeepLast, Depth: 100, Reliability: qos.ReliabilityBestEffort}
	sub, pub := endpoints(t, a, b, "/be", q)
	const n = 400
	// BEST_EFFORT never blocks: a publish that waited for the bridge would
	// hang here until the test's timeout.
	for i := 0; i < n; i++ {
		msg := make([]byte, 60<<10)
		binary.LittleEndian.PutUint32(msg, uint32(i))
		if err := pub.Publish(msg); err != nil {
			t.Fatal(err)
		}
	}
	var got []uint32
	for {
		smp, err := sub.TakeWait(2 * time.Second)
		if err != nil {
			break
		}
		got = append(got, binary.LittleEndian.Uint32(smp.Bytes()))
		smp.Return()
	}
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("out of order: %d after %d", got[i], got[i-1])
		}
	}
	var dropped uint64
	for _, p := range a.Status().Peers {
		for _, l := range p.Links {
			dropped += l.Dropped
		}
	}
	t.Logf("received %d of %d, writer dropped %d", len(got), n, dropped)
	if dropped == 0 && len(got) < n {
		t.Errorf("%d messages missing but no drop counted", n-len(got))
	}
	if len(got) == 0 {
		t.Error("nothing arrived")
	}
}

// A message larger than a record with chunking disabled is refused with
// a clear error (logged, counted), never a hang; later messages flow.
func TestTooLargeRefused(t *testing.T) {
	var logb syncBuffer
	a, b := pair(t, "tcp", func(o *Options) {
		o.RingSize, o.NoChunking = 1<<20, true
		if o.Control.HostID == "host-a" {
			o.Log = slog.New(slog.NewTextHandler(&logb, nil))
		}
	})
	q := reliable()
	sub, pub := endpoints(t, a, b, "/big", q)
	if err := pub.Publish(make([]byte, 4<<20)); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish([]byte("small")); err != nil {
		t.Fatal(err)
	}
	smp, err := sub.TakeWait(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(smp.Bytes()) != "small" {
		t.Fatalf("got %d bytes, want the small message", smp.Size())
	}
	smp.Return()
	testutil.Eventually(t, 5*time.Second, "the refusal is logged", func() bool {
		return strings.Contains(logb.String(), "chunking is disabled")
	})
}

// One ring per topic, each with its own transfer goroutines; and the
// libfabric shm provider between two daemons of one host.
func TestPerTopicRingsAndShm(t *testing.T) {
	for _, prov := range []string{"tcp", "fabric:shm"} {
		t.Run(prov, func(t *testing.T) {
			a, b := pair(t, prov, func(o *Options) { o.PerTopic = true; o.RingSize = 4 << 20 })
			q := reliable()
			const topics, n = 4, 50
			var subs []*zerocopy.Subscription
			var pubs []*zerocopy.Publisher
			for k := 0; k < topics; k++ {
				name := fmt.Sprintf("/multi/t%d", k)
				sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: name, Type: "std_msgs/msg/String", Node: "/l", QoS: q})
				if err != nil {
					t.Fatal(err)
				}
				defer sub.Close()
				pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: name, Type: "std_msgs/msg/String", Node: "/t", QoS: q})
				if err != nil {
					t.Fatal(err)
				}
				defer pub.Close()
				subs, pubs = append(subs, sub), append(pubs, pub)
			}
			for _, pub := range pubs {
				testutil.Eventually(t, 10*time.Second, "matched", func() bool { return pub.Matched() > 0 })
			}
			for i := 0; i < n; i++ {
				for k, pub := range pubs {
					if err := pub.Publish(bytes.Repeat([]byte{byte(k*n + i)}, 1000+i*997)); err != nil {
						t.Fatal(err)
					}
				}
			}
			for k, sub := range subs {
				for i := 0; i < n; i++ {
					smp, err := sub.TakeWait(10 * time.Second)
					if err != nil {
						t.Fatalf("topic %d message %d: %v", k, i, err)
					}
					if !bytes.Equal(smp.Bytes(), bytes.Repeat([]byte{byte(k*n + i)}, 1000+i*997)) {
						t.Fatalf("topic %d message %d: wrong bytes", k, i)
					}
					smp.Return()
				}
			}
			rings := 0
			for _, p := range a.Status().Peers {
				for _, l := range p.Links {
					if l.Role == "writer" && l.Topic != "" {
						rings++
					}
				}
			}
			if rings != topics {
				t.Errorf("%d per-topic writer rings, want %d", rings, topics)
			}
			if prov == "fabric:shm" {
				// shm does not order writes: each record's header and
				// payload go as one gathered write, with no fence to wait
				// for between them (gatherParts).
				var st transport.Stats
				for _, s := range railsOf(a, true) {
					for _, r := range s.rails {
						x := r.ep.Stats()
						st.Writes += x.Writes
						st.Fences += x.Fences
					}
				}
				if st.Fences != 0 || st.Writes < topics*n {
					t.Errorf("writers' rails: %d writes, %d fences waited for; want at least %d writes and no fence", st.Writes, st.Fences, topics*n)
				}
			}
		})
	}
}

// Each daemon learns the other host's graph: nodes and endpoints (not the
// bridge's own), with the bridge's provider as their path; QueryStatus
// (what `rgaps topic info` and the rmw library read) returns it.
func TestRemoteGraph(t *testing.T) {
	a, b := pair(t, "tcp", nil)
	testutil.Eventually(t, 10*time.Second, "the peers are up", func() bool {
		st, err := QueryStatus(b.Domain().Config())
		return err == nil && len(st.Peers) == 1 && st.Peers[0].Up
	})
	// A change on host a alone wakes host b's graph conditions (what the
	// rmw's graph guard condition waits on), through b's daemon.
	gc := b.Domain().NewGraphCondition()
	waitGraph := func(what string) {
		t.Helper()
		ready := []bool{false}
		deadline := time.Now().Add(10 * time.Second)
		for !gc.Ready() && time.Now().Before(deadline) {
			zerocopy.Wait([]zerocopy.Waitable{gc}, ready, time.Second, 0)
		}
		if !gc.Ready() {
			t.Fatalf("host b's graph condition did not wake when %s on host a", what)
		}
	}
	time.Sleep(200 * time.Millisecond) // let the first graph exchange settle
	gc.Reset()
	nh, err := a.Domain().RegisterNode("camera", "/robot", "/")
	if err != nil {
		t.Fatal(err)
	}
	defer nh.Close()
	waitGraph("a node appeared")
	hash := zerocopy.TypeHash{1, 0xab, 0xcd}
	pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: "/robot/image", Type: "sensor_msgs/msg/Image", TypeHash: hash, Node: "/robot/camera", QoS: reliable()})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	var st Status
	testutil.Eventually(t, 10*time.Second, "host b sees host a's node and publisher", func() bool {
		st, err = QueryStatus(b.Domain().Config())
		if err != nil || len(st.Peers) != 1 {
			return false
		}
		p := st.Peers[0]
		node := slices.ContainsFunc(p.Nodes, func(n RemoteNode) bool { return n.Name == "camera" && n.Namespace == "/robot" })
		ep := slices.ContainsFunc(p.Endpoints, func(e RemoteEndpoint) bool {
			return e.Topic == "/robot/image" && e.Kind == "publisher" && e.GID == pub.GID().String() && e.Path == "tcp" && e.LocalPath == "host-shm" &&
				e.TypeHash == hash.String()
		})
		return p.Host == "host-a" && p.Up && node && ep
	})
	for _, e := range st.Peers[0].Endpoints {
		if e.Node == BridgeNode {
			t.Errorf("the bridge's own endpoint is reported: %+v", e)
		}
	}
}
