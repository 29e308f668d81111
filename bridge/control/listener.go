package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Limits on connections that have not authenticated yet (defaults of
// ListenOptions).
const (
	// DefaultMaxPending bounds the handshakes a Listener runs at once, so
	// a flood of silent connections costs at most this many goroutines and
	// sockets.
	DefaultMaxPending = 256
	// DefaultMaxPendingPerAddr bounds the handshakes from one source
	// address: a single host cannot take all of DefaultMaxPending.
	DefaultMaxPendingPerAddr = 16
	// Failed handshakes are logged at most DefaultLogBurst at once, then
	// one per DefaultLogEvery; the rest are counted.
	DefaultLogBurst = 10
	DefaultLogEvery = time.Second
)

// ListenOptions tune a Listener's defences; zero values are the defaults.
type ListenOptions struct {
	// MaxPending and MaxPendingPerAddr bound the connections in their
	// handshake, in all and per source address. A connection beyond a
	// bound does not wait: the oldest pending handshake (of that address,
	// or of all) is dropped to make room for it, so a real peer, whose
	// handshake takes a few round trips, gets through while strangers
	// hold connections open.
	MaxPending, MaxPendingPerAddr int
	// LogBurst and LogEvery rate-limit the log of failed and dropped
	// handshakes (see LogLimiter).
	LogBurst int
	LogEvery time.Duration
}

// Listener accepts authenticated control connections. The accept loop
// never waits for a handshake: each runs on its own goroutine, bounded by
// HandshakeConfig.Timeout (DefaultPreAuthTimeout when zero) and by the
// limits of ListenOptions, so the kernel's backlog is drained as fast as
// connections arrive and a silent or slow client delays nobody. Failed
// handshakes are logged at Warn with the remote address, rate-limited,
// and closed; the listener goes on.
type Listener struct {
	ln     net.Listener
	cfg    HandshakeConfig
	opts   ListenOptions
	lim    *LogLimiter
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	ready  chan accepted  // authenticated connections for Accept
	wg     sync.WaitGroup // the accept loop and the handshakes

	// mu guards the pending handshakes.
	mu      sync.Mutex
	pending []*pendingConn // oldest first
	perAddr map[netip.Addr]int
	dropped uint64 // handshakes dropped for newer ones
}

// pendingConn is a connection in its handshake.
type pendingConn struct {
	nc      net.Conn
	addr    netip.Addr
	dropped bool // closed to make room; guarded by Listener.mu
}

type accepted struct {
	c    *Conn
	peer Hello
}

// Listen listens on addr (host:port) with the default ListenOptions.
func Listen(addr string, cfg HandshakeConfig, log *slog.Logger) (*Listener, error) {
	return ListenWith(addr, cfg, ListenOptions{}, log)
}

// ListenWith listens on addr (host:port) and starts accepting. cfg is the
// acceptor's side of every handshake (Dialer is ignored; Timeout zero means
// DefaultPreAuthTimeout); a bad cfg is ErrConfig before anything is
// opened. log may be nil.
func ListenWith(addr string, cfg HandshakeConfig, opts ListenOptions, log *slog.Logger) (*Listener, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Dialer = false
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultPreAuthTimeout
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxPendingPerAddr <= 0 {
		opts.MaxPendingPerAddr = DefaultMaxPendingPerAddr
	}
	opts.MaxPendingPerAddr = min(opts.MaxPendingPerAddr, opts.MaxPending)
	if opts.LogBurst <= 0 {
		opts.LogBurst = DefaultLogBurst
	}
	if opts.LogEvery <= 0 {
		opts.LogEvery = DefaultLogEvery
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for control connections on %s: %w", addr, err)
	}
	l := &Listener{
		ln:      ln,
		cfg:     cfg,
		opts:    opts,
		lim:     NewLogLimiter(log, opts.LogBurst, opts.LogEvery),
		ready:   make(chan accepted),
		perAddr: map[netip.Addr]int{},
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Go(l.acceptLoop)
	return l, nil
}

// Addr is the address listened on (with the port chosen for ":0").
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Accept returns the next authenticated connection and its peer's Hello,
// or ErrClosed after Close.
func (l *Listener) Accept() (*Conn, Hello, error) {
	select {
	case a := <-l.ready:
		return a.c, a.peer, nil
	case <-l.ctx.Done():
		return nil, Hello{}, ErrClosed
	}
}

// Pending returns the number of connections in their handshake now, and
// how many handshakes were dropped to make room for newer ones so far.
func (l *Listener) Pending() (pending int, dropped uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pending), l.dropped
}

// Close stops listening, aborts running handshakes, closes authenticated
// connections nobody accepted, and returns when all its goroutines have.
// Connections already returned by Accept are the caller's.
func (l *Listener) Close() error {
	l.cancel()
	err := l.ln.Close()
	l.wg.Wait()
	l.lim.Flush("control handshakes failed (not logged one by one)")
	if errors.Is(err, net.ErrClosed) {
		err = nil // closed twice
	}
	return err
}

func (l *Listener) acceptLoop() {
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors and the like: pause instead of spinning.
			l.lim.Log(slog.LevelWarn, "accepting control connection", "err", err)
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		p := &pendingConn{nc: nc}
		if ap, err := netip.ParseAddrPort(nc.RemoteAddr().String()); err == nil {
			p.addr = ap.Addr().Unmap()
		}
		if victim := l.admit(p); victim != nil {
			victim.nc.Close()
			l.lim.Log(slog.LevelWarn, "control handshake dropped for a newer connection (too many unauthenticated connections)",
				"remote", victim.nc.RemoteAddr().String())
		}
		l.wg.Go(func() { l.handshake(p) })
	}
}

// admit registers p as pending and returns the handshake to drop for it,
// if a limit is reached: the oldest of p's address when that address is at
// its limit, else the oldest of all.
func (l *Listener) admit(p *pendingConn) (victim *pendingConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	vi := -1
	if l.perAddr[p.addr] >= l.opts.MaxPendingPerAddr {
		for i, q := range l.pending {
			if q.addr == p.addr {
				vi = i
				break
			}
		}
	} else if len(l.pending) >= l.opts.MaxPending {
		vi = 0
	}
	if vi >= 0 {
		victim = l.pending[vi]
		victim.dropped = true
		l.removeLocked(vi)
		l.dropped++
	}
	l.pending = append(l.pending, p)
	l.perAddr[p.addr]++
	return victim
}

// removeLocked forgets pending[i]. Must hold mu.
func (l *Listener) removeLocked(i int) {
	p := l.pending[i]
	l.pending = append(l.pending[:i], l.pending[i+1:]...)
	if l.perAddr[p.addr]--; l.perAddr[p.addr] <= 0 {
		delete(l.perAddr, p.addr)
	}
}

// done forgets p once its handshake ended; it reports whether p was
// dropped for a newer connection meanwhile.
func (l *Listener) done(p *pendingConn) (dropped bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.dropped {
		return true
	}
	for i, q := range l.pending {
		if q == p {
			l.removeLocked(i)
			break
		}
	}
	return false
}

func (l *Listener) handshake(p *pendingConn) {
	c := NewConn(p.nc)
	stop := context.AfterFunc(l.ctx, func() { c.Close() })
	peer, err := Handshake(c, l.cfg)
	dropped := l.done(p)
	if !stop() || err != nil || dropped {
		c.Close()
		if l.ctx.Err() == nil && !dropped {
			lvl := slog.LevelWarn
			// A Reject reaching an acceptor is not authenticated (anyone
			// may send one first), so a "duplicate" from the peer stays a
			// Warn; our own Admit's refusal was logged by its owner.
			if errors.Is(err, ErrDuplicate) && !errors.Is(err, ErrRejected) {
				lvl = slog.LevelDebug
			}
			l.lim.Log(lvl, "control handshake failed", "remote", p.nc.RemoteAddr().String(), "err", err)
		}
		return
	}
	select {
	case l.ready <- accepted{c, peer}:
	case <-l.ctx.Done():
		c.Close()
	}
}
