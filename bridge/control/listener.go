package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"
)

// maxPendingHandshakes bounds the handshakes a Listener runs at once, so a
// flood of silent connections costs at most this many goroutines and
// sockets for HandshakeConfig.Timeout each.
const maxPendingHandshakes = 64

// Listener accepts authenticated control connections. Handshakes run
// concurrently, so a silent or slow client delays nobody else; failed ones
// are logged at Warn with the remote address and closed, and the listener
// goes on.
type Listener struct {
	ln     net.Listener
	cfg    HandshakeConfig
	log    *slog.Logger
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	ready  chan accepted  // authenticated connections for Accept
	slots  chan struct{}  // one token per running handshake
	wg     sync.WaitGroup // the accept loop and the handshakes
}

type accepted struct {
	c    *Conn
	peer Hello
}

// Listen listens on addr (host:port) and starts accepting. cfg is the
// acceptor's side of every handshake (Dialer is ignored); a bad cfg is
// ErrConfig before anything is opened. log may be nil.
func Listen(addr string, cfg HandshakeConfig, log *slog.Logger) (*Listener, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Dialer = false
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for control connections on %s: %w", addr, err)
	}
	l := &Listener{
		ln:    ln,
		cfg:   cfg,
		log:   log,
		ready: make(chan accepted),
		slots: make(chan struct{}, maxPendingHandshakes),
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

// Close stops listening, aborts running handshakes, closes authenticated
// connections nobody accepted, and returns when all its goroutines have.
// Connections already returned by Accept are the caller's.
func (l *Listener) Close() error {
	l.cancel()
	err := l.ln.Close()
	l.wg.Wait()
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
			l.log.Warn("accepting control connection", "err", err)
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.ctx.Done():
			nc.Close()
			return
		}
		l.wg.Go(func() {
			defer func() { <-l.slots }()
			l.handshake(nc)
		})
	}
}

func (l *Listener) handshake(nc net.Conn) {
	c := NewConn(nc)
	stop := context.AfterFunc(l.ctx, func() { c.Close() })
	peer, err := Handshake(c, l.cfg)
	if !stop() || err != nil {
		c.Close()
		if l.ctx.Err() == nil {
			l.log.Warn("control handshake failed", "remote", nc.RemoteAddr().String(), "err", err)
		}
		return
	}
	select {
	case l.ready <- accepted{c, peer}:
	case <-l.ctx.Done():
		c.Close()
	}
}
