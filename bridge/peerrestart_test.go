package bridge

import (
	"encoding/json"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// freezer is a TCP proxy for one control connection. Once frozen, it
// forwards nothing more and keeps its connection to the server open when
// the client goes: to the server the client's daemon died silently (a
// power cut, a cable pulled), found out only by heartbeats.
type freezer struct {
	ln        net.Listener
	frozen    atomic.Bool
	srvClosed atomic.Bool // the server closed its side
	mu        sync.Mutex
	conns     []net.Conn
	wg        sync.WaitGroup
}

func newFreezer(t *testing.T, server string) *freezer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			cli, err := ln.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", server)
			if err != nil {
				cli.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, cli, srv)
			f.mu.Unlock()
			f.wg.Add(2)
			go f.pipe(srv, cli, false)
			go f.pipe(cli, srv, true)
		}
	}()
	t.Cleanup(f.close)
	return f
}

// pipe copies from src to dst until frozen; fromServer marks the
// server's side, whose end is recorded.
func (f *freezer) pipe(dst, src net.Conn, fromServer bool) {
	defer f.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !f.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil && !f.frozen.Load() {
				src.Close()
				return
			}
		}
		if err != nil {
			if fromServer && err == io.EOF {
				f.srvClosed.Store(true)
			}
			if !f.frozen.Load() {
				dst.Close()
			}
			return
		}
	}
}

func (f *freezer) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// The publishing daemon dies silently and a new instance of it comes back
// before the heartbeats found the old connection dead: the subscribing
// daemon closes the old instance's connection when the new one's Hello
// arrives and brings the peer up again, so the new publisher's messages
// cross at once. It kept the dead connection as one of the peer's and
// offered its ring on it: the restarted peer never got the offer
// (TestSlowlorisDuringPeerRestart failed so, once in about 100 runs).
func TestPeerRestartBeforeOldConnectionFoundDead(t *testing.T) {
	mk := restartable(t, time.Minute) // a dead connection is found out only after a minute
	b := mk("b", "127.0.0.1:0", nil)
	fz := newFreezer(t, b.ControlAddr())
	port := func(addr string) control.Peer {
		return control.Peer{Host: "127.0.0.1", Port: addr2port(t, addr)}
	}
	a := mk("a", "", []control.Peer{port(fz.ln.Addr().String())})
	sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/silent", Type: "std_msgs/msg/String", Node: "/l", QoS: reliable()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sendFrom(t, a, sub, 1, 100000)
	fz.frozen.Store(true)
	a.Close()
	a = mk("a", "", []control.Peer{port(b.ControlAddr())})
	sendFrom(t, a, sub, 2, 100000)
	testutil.Eventually(t, 20*time.Second, "b closes the old instance's connection", fz.srvClosed.Load)
}

func addr2port(t *testing.T, addr string) int {
	t.Helper()
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return tcp.Port
}

// peerUp closes an older instance's connections; a message the old
// connection's session had read already (its read loop runs on its own
// goroutine, and frames that arrived before the close are still read) is
// not handled. Here the old instance's interest statement, delivered
// after the new instance's, must not replace it.
func TestStaleConnMessageAfterRestart(t *testing.T) {
	_, b := pair(t, "tcp", nil)
	conn := func() *control.Conn {
		x, y := net.Pipe()
		go io.Copy(io.Discard, y)
		t.Cleanup(func() { x.Close(); y.Close() })
		return control.NewConn(x)
	}
	interest := func(topic string) []byte {
		p, _ := json.Marshal(interestMsg{Topics: []topicInterest{{Topic: topic, Type: "std_msgs/msg/String", Depth: 1, Count: 1}}})
		return p
	}
	old := b.sessionConfig(control.SessionConfig{})
	old.OnUp(conn(), control.Hello{HostID: "host-z", Instance: 111, Features: []string{featureDoorbell}})
	nw := b.sessionConfig(control.SessionConfig{})
	nw.OnUp(conn(), control.Hello{HostID: "host-z", Instance: 222, Features: []string{featureDoorbell}})
	nw.OnMessage(msgInterest, interest("/new_instance"))
	// The old session's read loop delivers a frame it read before (or
	// buffered when) peerUp closed its connection.
	old.OnMessage(msgInterest, interest("/old_instance"))
	b.mu.Lock()
	_, hasNew := b.peers["host-z"].interest["/new_instance"]
	_, hasOld := b.peers["host-z"].interest["/old_instance"]
	b.mu.Unlock()
	if !hasNew || hasOld {
		t.Fatalf("the dead instance's statement, from a connection peerUp closed, replaced the new instance's interest (new %v, old %v)", hasNew, hasOld)
	}
}
