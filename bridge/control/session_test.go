package control

import (
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// events records a session's callbacks.
type events struct {
	mu    sync.Mutex
	ups   []Hello
	downs []error
	msgs  []string // "type payload"
}

func (e *events) hook(cfg *SessionConfig) {
	cfg.OnUp = func(c *Conn, peer Hello) {
		e.mu.Lock()
		e.ups = append(e.ups, peer)
		e.mu.Unlock()
	}
	cfg.OnMessage = func(t MsgType, p []byte) {
		e.mu.Lock()
		e.msgs = append(e.msgs, strconv.Itoa(int(t))+" "+string(p))
		e.mu.Unlock()
	}
	cfg.OnDown = func(err error) {
		e.mu.Lock()
		e.downs = append(e.downs, err)
		e.mu.Unlock()
	}
}

func (e *events) counts() (ups, downs int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ups), len(e.downs)
}

func (e *events) has(msg string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, m := range e.msgs {
		if m == msg {
			return true
		}
	}
	return false
}

func (e *events) down(i int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i < 0 || i >= len(e.downs) {
		return nil
	}
	return e.downs[i]
}

// server accepts with a Listener and runs an accepted Session per
// connection, until stop.
type server struct {
	t        *testing.T
	ln       *Listener
	ev       events
	mu       sync.Mutex
	sessions []*Session
	wg       sync.WaitGroup
}

func startServer(t *testing.T, addr string) *server {
	t.Helper()
	var ln *Listener
	// Coming back on the same port: poll, in case the old socket lingers.
	eventually(t, "listening on "+addr, func() bool {
		var err error
		ln, err = Listen(addr, hsConfig("server", false), nil)
		return err == nil
	})
	s := &server{t: t, ln: ln}
	s.wg.Go(func() {
		for {
			c, peer, err := ln.Accept()
			if err != nil {
				return
			}
			cfg := SessionConfig{Established: c, EstablishedPeer: peer, Heartbeat: 20 * time.Millisecond, DeadAfter: 2 * time.Second}
			s.ev.hook(&cfg)
			sess, err := NewSession(cfg)
			if err != nil {
				t.Error(err)
				c.Close()
				return
			}
			s.mu.Lock()
			s.sessions = append(s.sessions, sess)
			s.mu.Unlock()
		}
	})
	return s
}

// stop closes the listener and every connection it accepted.
func (s *server) stop() {
	s.ln.Close()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sess := range s.sessions {
		sess.Close()
	}
}

func (s *server) session(i int) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[i]
}

func dialConfig(addr net.Addr, ev *events) SessionConfig {
	ta := addr.(*net.TCPAddr)
	cfg := SessionConfig{
		Peer:       Peer{Host: ta.IP.String(), Port: ta.Port},
		Handshake:  hsConfig("client", true),
		Heartbeat:  20 * time.Millisecond,
		DeadAfter:  2 * time.Second,
		BackoffMin: 5 * time.Millisecond,
		BackoffMax: 50 * time.Millisecond,
	}
	if ev != nil {
		ev.hook(&cfg)
	}
	return cfg
}

func TestSessionReconnect(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	addr := srv.ln.Addr()
	var ev events
	cli, err := NewSession(dialConfig(addr, &ev))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	eventually(t, "first connection up on both sides", func() bool {
		u, _ := ev.counts()
		su, _ := srv.ev.counts()
		return u == 1 && su == 1
	})
	if p, ok := cli.Peer(); !ok || p.HostID != "server" {
		t.Errorf("client's peer %+v %v", p, ok)
	}
	if err := cli.Send(16, blob{Data: "one"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.session(0).Send(17, blob{Data: "back"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "messages both ways", func() bool {
		return srv.ev.has(`16 {"data":"one"}`) && ev.has(`17 {"data":"back"}`)
	})

	// The listening side goes away with its connection...
	srv.stop()
	eventually(t, "the client to see the connection down", func() bool {
		_, d := ev.counts()
		return d == 1
	})
	if err := ev.down(0); errors.Is(err, ErrDead) || errors.Is(err, ErrClosed) {
		t.Errorf("down because %v, want the peer's close", err)
	}
	if err := cli.Send(16, blob{}); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Send while down: %v, want ErrNotConnected", err)
	}

	// ...and comes back on the same port: the client redials by itself.
	srv = startServer(t, addr.String())
	defer srv.stop()
	eventually(t, "second connection up", func() bool {
		u, _ := ev.counts()
		su, _ := srv.ev.counts()
		return u == 2 && su == 1
	})
	if err := cli.Send(16, blob{Data: "two"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a message on the new connection", func() bool { return srv.ev.has(`16 {"data":"two"}`) })

	cli.Close()
	if _, d := ev.counts(); d != 2 || !errors.Is(ev.down(1), ErrClosed) {
		t.Errorf("after Close: %d downs, last %v; want 2, ErrClosed", d, ev.down(d-1))
	}
	if err := cli.Send(16, blob{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	select {
	case <-cli.Done():
	default:
		t.Error("Done not closed after Close")
	}
}

// TestSessionHeartbeatsKeepAlive: with nothing else to say, heartbeats keep
// a connection alive well past DeadAfter, and never reach OnMessage.
func TestSessionHeartbeatsKeepAlive(t *testing.T) {
	srv := startServer(t, "127.0.0.1:0")
	defer srv.stop()
	var ev events
	cfg := dialConfig(srv.ln.Addr(), &ev)
	cfg.Heartbeat = 10 * time.Millisecond
	cfg.DeadAfter = time.Second
	cli, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	eventually(t, "connection up", func() bool { u, _ := ev.counts(); return u == 1 })
	c := cli.Conn()
	if c == nil {
		t.Fatal("no connection")
	}
	// The server sends every 20 ms: 150 frames span several DeadAfters.
	eventually(t, "150 heartbeats received", func() bool { return c.Stats().FramesReceived >= 150 })
	if u, d := ev.counts(); u != 1 || d != 0 {
		t.Errorf("%d ups, %d downs while heartbeats flowed", u, d)
	}
	if su, sd := srv.ev.counts(); su != 1 || sd != 0 {
		t.Errorf("server: %d ups, %d downs", su, sd)
	}
	ev.mu.Lock()
	n := len(ev.msgs)
	ev.mu.Unlock()
	srv.ev.mu.Lock()
	n += len(srv.ev.msgs)
	srv.ev.mu.Unlock()
	if n != 0 {
		t.Errorf("%d messages delivered; heartbeats must be consumed", n)
	}
}

// TestSessionDeadPeer: a peer that completes the handshake and then
// neither reads nor writes is declared dead (ErrDead), and the dialer
// redials.
func TestSessionDeadPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var zombies []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			zombies = append(zombies, nc)
			mu.Unlock()
			if _, err := Handshake(NewConn(nc), hsConfig("zombie", false)); err != nil {
				t.Error(err)
			}
			// From here on: silence, and nothing read.
		}
	})
	defer func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, z := range zombies {
			z.Close()
		}
		mu.Unlock()
	}()

	var ev events
	cfg := dialConfig(ln.Addr(), &ev)
	cfg.DeadAfter = 300 * time.Millisecond
	cli, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	eventually(t, "the silent peer declared dead and redialed", func() bool {
		u, d := ev.counts()
		return d >= 1 && u >= 2
	})
	if err := ev.down(0); !errors.Is(err, ErrDead) {
		t.Errorf("OnDown(%v), want ErrDead", err)
	}
}

// TestSessionAccepted: an accepted session runs the handshake itself, and
// when the peer goes it ends (Done) instead of redialing.
func TestSessionAccepted(t *testing.T) {
	dc, ac := tcpPair(t)
	var ev events
	cfg := SessionConfig{Conn: ac, Handshake: hsConfig("acceptor", false), Heartbeat: 20 * time.Millisecond}
	ev.hook(&cfg)
	s, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := NewConn(dc)
	peer, err := Handshake(d, hsConfig("dialer", true))
	if err != nil || peer.HostID != "acceptor" {
		t.Fatal(peer, err)
	}
	if err := d.Send(16, blob{Data: "x"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "message delivered", func() bool { return ev.has(`16 {"data":"x"}`) })
	// The session's heartbeats reach the raw peer as ordinary frames.
	typ, _, err := d.Recv()
	if err != nil || typ != TypeHeartbeat {
		t.Fatalf("peer got %v, %v; want a heartbeat", typ, err)
	}
	d.Close()
	select {
	case <-s.Done():
	case <-time.After(hangGuard):
		t.Fatal("accepted session did not end with its connection")
	}
	if u, dn := ev.counts(); u != 1 || dn != 1 || !errors.Is(ev.down(0), io.EOF) {
		t.Errorf("%d ups, %d downs (%v)", u, dn, ev.down(0))
	}
}

// TestSessionAcceptedBadHandshake: an accepted session whose handshake
// fails ends without OnUp or OnDown.
func TestSessionAcceptedBadHandshake(t *testing.T) {
	dc, ac := tcpPair(t)
	rec := &logRecorder{}
	var ev events
	cfg := SessionConfig{Conn: ac, Handshake: hsConfig("acceptor", false), Log: slogFor(rec)}
	ev.hook(&cfg)
	s, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dc.Write([]byte("garbage garbage garbage"))
	select {
	case <-s.Done():
	case <-time.After(hangGuard):
		t.Fatal("session hung on a garbage handshake")
	}
	if u, d := ev.counts(); u != 0 || d != 0 {
		t.Errorf("%d ups, %d downs", u, d)
	}
	if rec.count("WARN control handshake failed", "remote="+dc.LocalAddr().String()) != 1 {
		t.Errorf("handshake failure not logged: %v", rec.recs)
	}
}

// TestSessionProtocolViolation: a reserved type after the handshake drops
// the connection.
func TestSessionProtocolViolation(t *testing.T) {
	dc, ac := tcpPair(t)
	var ev events
	cfg := SessionConfig{Conn: ac, Handshake: hsConfig("acceptor", false)}
	ev.hook(&cfg)
	s, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d := NewConn(dc)
	if _, err := Handshake(d, hsConfig("dialer", true)); err != nil {
		t.Fatal(err)
	}
	d.Send(TypeHello, Hello{})
	<-s.Done()
	if _, n := ev.counts(); n != 1 || !errors.Is(ev.down(0), ErrProtocol) {
		t.Errorf("downs %d: %v", n, ev.down(0))
	}
}

// TestSessionNotConnected: a peer that is not there gives ErrNotConnected,
// one warning, then quiet retries.
func TestSessionNotConnected(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr()
	ln.Close() // nothing listens there now
	rec := &logRecorder{}
	cfg := dialConfig(addr, nil)
	cfg.Log = slogFor(rec)
	s, err := NewSession(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(16, blob{}); !errors.Is(err, ErrNotConnected) {
		t.Errorf("got %v, want ErrNotConnected", err)
	}
	if err := s.Send(TypeHeartbeat, Heartbeat{}); !errors.Is(err, ErrProtocol) {
		t.Errorf("reserved type: %v, want ErrProtocol", err)
	}
	eventually(t, "several redials", func() bool { return rec.count("control connection failed") >= 4 })
	if n := rec.count("WARN control connection failed"); n != 1 {
		t.Errorf("%d warnings for one unreachable peer, want 1", n)
	}
}

func TestSessionConfigChecked(t *testing.T) {
	c1, _ := tcpPair(t)
	for name, cfg := range map[string]SessionConfig{
		"no side":      {Handshake: hsConfig("h", true)},
		"no port":      {Peer: Peer{Host: "a"}, Handshake: hsConfig("h", true)},
		"no host":      {Peer: Peer{Port: 1}, Handshake: hsConfig("h", true)},
		"two sides":    {Peer: Peer{"a", 1}, Conn: c1, Handshake: hsConfig("h", true)},
		"short secret": {Peer: Peer{"a", 1}, Handshake: HandshakeConfig{HostID: "h", Secret: []byte("x")}},
		"dead < beat":  {Peer: Peer{"a", 1}, Handshake: hsConfig("h", true), Heartbeat: time.Second, DeadAfter: time.Millisecond},
	} {
		if s, err := NewSession(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", name, err)
			if s != nil {
				s.Close()
			}
		}
	}
}

// TestSessionCloseNoLeak: after Close of everything, the goroutine count
// returns to where it was (TestMain checks descriptors and goroutines for
// the whole run as well).
func TestSessionCloseNoLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	srv := startServer(t, "127.0.0.1:0")
	var clients []*Session
	var evs [3]events
	for i := range evs {
		s, err := NewSession(dialConfig(srv.ln.Addr(), &evs[i]))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, s)
	}
	eventually(t, "all connections up", func() bool {
		su, _ := srv.ev.counts()
		return su == len(clients)
	})
	// Close while a send may be in flight.
	for i, s := range clients {
		s.Send(16, blob{Data: strconv.Itoa(i)})
		s.Close()
	}
	srv.stop()
	eventually(t, "goroutines back to "+strconv.Itoa(base), func() bool { return runtime.NumGoroutine() <= base })
	for i := range evs {
		if u, d := evs[i].counts(); u != d {
			t.Errorf("client %d: %d ups, %d downs", i, u, d)
		}
	}
}
