package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"time"
)

// SessionConfig configures a Session. Exactly one of Peer, Conn and
// Established says which side this is.
type SessionConfig struct {
	// Peer, on the dial side: the session dials it, and redials with
	// exponential backoff whenever the connection fails, until Close.
	Peer Peer
	// Conn, on the accepting side: a raw accepted connection; the session
	// runs the acceptor's handshake on it. It never redials (the peer
	// does): when the connection ends the session is over (Done).
	Conn net.Conn
	// Established, on the accepting side: a connection Listener.Accept
	// already authenticated, and the peer's Hello it returned.
	Established     *Conn
	EstablishedPeer Hello

	// Handshake is this side's handshake; the session sets Dialer.
	Handshake HandshakeConfig
	// Heartbeat is the interval of heartbeats (DefaultHeartbeat when 0).
	Heartbeat time.Duration
	// DeadAfter is how long the peer may stay silent before the
	// connection is declared dead (DefaultDeadAfter when 0). It must be
	// longer than the peer's heartbeat interval.
	DeadAfter time.Duration
	// BackoffMin and BackoffMax bound the redial backoff, which doubles
	// after each failed attempt (DefaultBackoffMin/Max when 0).
	BackoffMin, BackoffMax time.Duration
	// Log receives connection events; nil is silent.
	Log *slog.Logger

	// OnUp is called when a connection is authenticated, before any of its
	// messages is delivered; c may be used to send (Session.Send works
	// too). OnUp, OnMessage and OnDown of one session are called from one
	// goroutine, in order, never concurrently. They must not call Close
	// (it waits for them). All three may be nil.
	OnUp func(c *Conn, peer Hello)
	// OnMessage receives each message of a user type (≥ FirstUserType);
	// the payload is the raw JSON (see Decode) and stays valid. Nothing is
	// read while it runs: a short reply is fine, but long work or sends that
	// may block on a slow peer belong on another goroutine (both sides
	// blocked writing from their readers would stall until WriteTimeout).
	OnMessage func(t MsgType, payload []byte)
	// OnDown is called once for each connection OnUp announced, when it
	// ended: ErrDead after silence, ErrClosed after Close, the read error
	// otherwise (io.EOF when the peer closed it).
	OnDown func(err error)
}

// Session is a supervised control connection to one peer: handshake,
// heartbeats, death detection and, on the dial side, reconnection. It runs
// one goroutine (plus one for heartbeats while connected) from NewSession
// until Close, or until its accepted connection ends.
//
//	dial side:   dial ─► handshake ─► up ─► (read loop) ─► down ─┐
//	               ▲  failure: backoff, doubling to BackoffMax    │
//	               └──────────────── BackoffMin ◄─────────────────┘
//	accept side: (handshake) ─► up ─► (read loop) ─► down ─► Done
//
// All methods are safe for concurrent use.
type Session struct {
	cfg    SessionConfig
	log    *slog.Logger
	ctx    context.Context // cancelled by Close: stops dials, waits, I/O
	cancel context.CancelFunc
	done   chan struct{} // closed when the session goroutine has returned

	// mu guards the fields below.
	mu   sync.Mutex
	cur  *Conn // the live authenticated connection; nil while down
	peer Hello // the Hello of cur's peer
}

// NewSession checks cfg and starts the session.
func NewSession(cfg SessionConfig) (*Session, error) {
	sides := 0
	if cfg.Peer != (Peer{}) {
		sides++
	}
	if cfg.Conn != nil {
		sides++
	}
	if cfg.Established != nil {
		sides++
	}
	if sides != 1 {
		return nil, fmt.Errorf("%w: session needs exactly one of Peer, Conn, Established (got %d)", ErrConfig, sides)
	}
	if cfg.Peer != (Peer{}) && (cfg.Peer.Host == "" || cfg.Peer.Port < 1 || cfg.Peer.Port > 65535) {
		return nil, fmt.Errorf("%w: peer %q: want a host and a port in 1…65535", ErrConfig, cfg.Peer.String())
	}
	if cfg.Established == nil {
		if err := cfg.Handshake.check(); err != nil {
			return nil, err
		}
	}
	cfg.Handshake.Dialer = cfg.Peer != (Peer{})
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.DeadAfter <= 0 {
		cfg.DeadAfter = DefaultDeadAfter
	}
	if cfg.DeadAfter <= cfg.Heartbeat {
		return nil, fmt.Errorf("%w: DeadAfter (%v) must be longer than Heartbeat (%v)", ErrConfig, cfg.DeadAfter, cfg.Heartbeat)
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = DefaultBackoffMin
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffMin)
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Session{cfg: cfg, done: make(chan struct{})}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Handshake.Dialer {
		s.log = log.With("peer", cfg.Peer.String())
		go s.runDialer()
	} else {
		s.log = log
		go s.runAccepted()
	}
	return s, nil
}

// Send sends a message of a user type on the live connection; without one
// it returns ErrNotConnected. Types 1…15 belong to the package.
func (s *Session) Send(t MsgType, v any) error {
	if t <= MaxReservedType {
		return fmt.Errorf("%w: type %d is reserved for the control package", ErrProtocol, t)
	}
	s.mu.Lock()
	c := s.cur
	s.mu.Unlock()
	if c == nil {
		if s.ctx.Err() != nil {
			return ErrClosed
		}
		return ErrNotConnected
	}
	return c.Send(t, v)
}

// Peer returns the Hello of the live connection's peer, and whether there
// is a live connection.
func (s *Session) Peer() (Hello, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peer, s.cur != nil
}

// Conn returns the live connection, or nil.
func (s *Session) Conn() *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Done is closed when the session has stopped: after Close, or on the
// accept side when its one connection ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Close stops the session: it closes the connection (OnDown(ErrClosed) if
// it was up), stops dialing, and returns when every goroutine of the
// session has returned. It is idempotent and must not be called from the
// session's callbacks.
func (s *Session) Close() error {
	s.cancel()
	<-s.done
	return nil
}

func (s *Session) runDialer() {
	defer close(s.done)
	backoff := s.cfg.BackoffMin
	failures := 0
	for s.ctx.Err() == nil {
		c, peer, err := s.connect()
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			// The first failure in a row is worth a warning; a peer that is
			// down for a day is not worth one every two seconds.
			lvl := slog.LevelDebug
			if failures == 0 || !isDialError(err) {
				lvl = slog.LevelWarn
			}
			if errors.Is(err, ErrSelf) || errors.Is(err, ErrDuplicate) {
				// Dialing ourselves, or one host id claimed by two live
				// daemons (either side refusing), will not get better by
				// itself.
				backoff = s.cfg.BackoffMax
			}
			switch {
			case errors.Is(err, ErrDuplicate) && errors.Is(err, ErrRejected):
				// The peer knows another live daemon by our host id: a
				// configuration error to fix, said once per run of
				// refusals, not at every redial.
				lvl = slog.LevelDebug
				if failures == 0 {
					lvl = slog.LevelError
				}
			case errors.Is(err, ErrDuplicate):
				lvl = slog.LevelDebug // our Admit refused the peer, and said so
			}
			failures++
			s.log.Log(s.ctx, lvl, "control connection failed", "err", err, "attempt", failures, "retry_in", backoff)
			if !s.wait(backoff) {
				return
			}
			backoff = min(2*backoff, s.cfg.BackoffMax)
			continue
		}
		failures, backoff = 0, s.cfg.BackoffMin
		s.serve(c, peer)
		if !s.wait(s.cfg.BackoffMin) {
			return
		}
	}
}

func (s *Session) runAccepted() {
	defer close(s.done)
	c, peer := s.cfg.Established, s.cfg.EstablishedPeer
	if c == nil {
		c = NewConn(s.cfg.Conn)
		stop := context.AfterFunc(s.ctx, func() { c.Close() })
		var err error
		peer, err = Handshake(c, s.cfg.Handshake)
		stop()
		if err != nil {
			c.Close()
			if s.ctx.Err() == nil {
				s.log.Warn("control handshake failed", "remote", c.RemoteAddr().String(), "err", err)
			}
			return
		}
	}
	s.serve(c, peer)
}

// wait sleeps d (±20 %, so that daemons restarted together do not redial in
// lockstep) and reports false if the session was closed meanwhile.
func (s *Session) wait(d time.Duration) bool {
	d = time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// connect dials the peer and runs the dialer's handshake; Close aborts both.
func (s *Session) connect() (*Conn, Hello, error) {
	timeout := s.cfg.Handshake.Timeout
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(s.ctx, "tcp", s.cfg.Peer.String())
	if err != nil {
		return nil, Hello{}, err
	}
	c := NewConn(nc)
	stop := context.AfterFunc(s.ctx, func() { c.Close() })
	peer, err := Handshake(c, s.cfg.Handshake)
	stop()
	if err != nil {
		c.Close()
		return nil, Hello{}, err
	}
	return c, peer, nil
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// serve runs one authenticated connection until it fails or the session is
// closed, then closes it.
func (s *Session) serve(c *Conn, peer Hello) {
	log := s.log.With("host_id", peer.HostID, "remote", c.RemoteAddr().String())
	s.mu.Lock()
	s.cur, s.peer = c, peer
	s.mu.Unlock()
	stopClose := context.AfterFunc(s.ctx, func() { c.Close() })
	hbStop := make(chan struct{})
	hbErr := make(chan error, 1)
	var hb sync.WaitGroup
	hb.Go(func() { s.heartbeats(c, hbStop, hbErr) })

	log.Info("control connection up", "name", peer.Name)
	if s.cfg.OnUp != nil {
		s.cfg.OnUp(c, peer)
	}
	err := s.readLoop(c)

	s.mu.Lock()
	s.cur, s.peer = nil, Hello{}
	s.mu.Unlock()
	c.Close()
	close(hbStop)
	hb.Wait()
	stopClose()
	select {
	case herr := <-hbErr:
		if errors.Is(err, net.ErrClosed) {
			// The heartbeat sender closed the connection: its error is the
			// cause, the reader's "use of closed connection" only the effect.
			err = fmt.Errorf("sending heartbeat: %w", herr)
		}
	default:
	}
	if s.ctx.Err() != nil {
		err = ErrClosed
	}
	lvl := slog.LevelInfo
	if errors.Is(err, ErrDead) || errors.Is(err, ErrProtocol) {
		lvl = slog.LevelWarn
	}
	if errors.Is(err, ErrIntegrity) {
		lvl = slog.LevelError // someone on the path, or a broken peer
	}
	log.Log(context.Background(), lvl, "control connection down", "err", err)
	if s.cfg.OnDown != nil {
		s.cfg.OnDown(err)
	}
}

// readLoop delivers messages until the connection fails. Every frame, a
// heartbeat or not, proves the peer alive and renews the DeadAfter deadline.
func (s *Session) readLoop(c *Conn) error {
	for {
		if err := c.SetReadDeadline(time.Now().Add(s.cfg.DeadAfter)); err != nil {
			return err
		}
		t, payload, err := c.Recv()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return fmt.Errorf("%w: nothing from %s for %v", ErrDead, c.RemoteAddr(), s.cfg.DeadAfter)
		case err == io.EOF:
			return fmt.Errorf("peer closed the connection: %w", err)
		case err != nil:
			return err
		case t == TypeHeartbeat:
			var h Heartbeat
			if err := Decode(payload, &h); err != nil {
				return fmt.Errorf("heartbeat: %w", err)
			}
		case t <= MaxReservedType:
			return fmt.Errorf("%w: unexpected %v message after the handshake", ErrProtocol, t)
		case s.cfg.OnMessage != nil:
			s.cfg.OnMessage(t, payload)
		}
	}
}

// heartbeats sends one heartbeat per interval until stop. A failed send
// is reported on errc and closes the connection, which ends the read loop.
func (s *Session) heartbeats(c *Conn, stop <-chan struct{}, errc chan<- error) {
	tick := time.NewTicker(s.cfg.Heartbeat)
	defer tick.Stop()
	for seq := uint64(1); ; seq++ {
		if err := c.Send(TypeHeartbeat, Heartbeat{Seq: seq, UnixNano: time.Now().UnixNano()}); err != nil {
			errc <- err
			c.Close()
			return
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}
