package bridge

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// slowloris holds silent, unauthenticated connections open against addr
// from several loopback addresses: each worker connects, sends nothing,
// waits until the daemon closes the connection, and connects again.
type slowloris struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns int
}

func startSlowloris(t *testing.T, addr string, sources []string, workers int) *slowloris {
	s := &slowloris{stop: make(chan struct{})}
	for _, src := range sources {
		for w := 0; w < workers; w++ {
			s.wg.Go(func() { s.worker(addr, src) })
		}
	}
	t.Cleanup(s.halt)
	return s
}

func (s *slowloris) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.wg.Wait()
}

func (s *slowloris) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

func (s *slowloris) worker(addr, src string) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: time.Second}
	buf := make([]byte, 512)
	for {
		if nc, err := d.Dial("tcp", addr); err == nil {
			s.mu.Lock()
			s.conns++
			s.mu.Unlock()
			done := make(chan struct{})
			go func() {
				select {
				case <-s.stop:
				case <-done:
				}
				nc.Close()
			}()
			for {
				if _, err := nc.Read(buf); err != nil {
					break
				}
			}
			close(done)
		}
		select {
		case <-s.stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// A peer's daemon restarts while strangers hold hundreds of silent
// connections to this daemon's control port: the restarted peer
// reconnects and messages flow, and the failed handshakes leave a few
// log lines with a count of the rest.
// floodWorkers per source address: 160 silent connections, more than the
// 64 handshakes the listener used to run at once.
const floodWorkers = 40

func TestSlowlorisDuringPeerRestart(t *testing.T) {
	var logb syncBuffer
	mk := func(host, listen string, peers []control.Peer, log *slog.Logger) *Bridge {
		br, err := New(Options{
			Engine:   zerocopy.Config{Prefix: testutil.Prefix() + host, PoolSize: 64 << 20, SkipStaleClean: true},
			Control:  control.Config{Listen: listen, Peers: peers, Secret: twoHostSecret, HostID: "host-" + host, Heartbeat: 100 * time.Millisecond, DeadAfter: time.Second},
			Provider: "tcp", RingSize: 4 << 20, Log: log,
		})
		if err != nil {
			t.Fatal(err)
		}
		return br
	}
	b := mk("b", "127.0.0.1:0", nil, slog.New(slog.NewTextHandler(&logb, nil)))
	defer b.Close()
	peer := control.Peer{Host: "127.0.0.1", Port: b.listener.Addr().(*net.TCPAddr).Port}
	a := mk("a", "", []control.Peer{peer}, testLog(t))
	t.Cleanup(func() { a.Close() }) // the current a, when the test fails
	// Endpoints on a are closed before a is (a restart closes it).
	exchangeClose := func(topic string) {
		t.Helper()
		sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: "std_msgs/msg/String", Node: "/l", QoS: reliable()})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: "std_msgs/msg/String", Node: "/t", QoS: reliable()})
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		testutil.Eventually(t, 30*time.Second, "the bridge subscription matches", func() bool { return pub.Matched() > 0 })
		for _, n := range []int{10, 100000} {
			if err := pub.Publish(make([]byte, n)); err != nil {
				t.Fatal(err)
			}
			smp, err := sub.TakeWait(30 * time.Second)
			if err != nil {
				t.Fatalf("%s: %v", topic, err)
			}
			if smp.Size() != n {
				t.Fatalf("%s: %d bytes, want %d", topic, smp.Size(), n)
			}
			smp.Return()
		}
	}
	exchangeClose("/before")

	flood := startSlowloris(t, b.ControlAddr(), []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}, floodWorkers)
	testutil.Eventually(t, 20*time.Second, "the flood holds connections", func() bool { return flood.count() >= 4*floodWorkers })

	for restart := 0; restart < 2; restart++ {
		a.Close()
		a = mk("a", "", []control.Peer{peer}, testLog(t))
		testutil.Eventually(t, 30*time.Second, fmt.Sprintf("the restarted peer (restart %d) reconnects during the flood", restart+1), func() bool {
			for _, p := range b.Status().Peers {
				if p.Host == "host-a" && p.Up {
					return true
				}
			}
			return false
		})
		exchangeClose(fmt.Sprintf("/during%d", restart))
	}
	a.Close()
	flood.halt()
	b.Close() // writes the count of what the rate limit suppressed
	lines := countLines(logb.String(), "control handshake")
	t.Logf("flood: %d connections; %d log lines about handshakes", flood.count(), lines)
	if lines*4 > flood.count() {
		t.Errorf("%d log lines about handshakes for %d flood connections: not rate-limited", lines, flood.count())
	}
	if !strings.Contains(logb.String(), "suppressed=") {
		t.Error("no log line counts the suppressed ones")
	}
}
