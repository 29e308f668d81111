package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PlainTCPOptions configure a PlainTCP provider.
type PlainTCPOptions struct {
	// Timeout bounds Dial and the wait of a write for a full queue;
	// DefaultTimeout when zero.
	Timeout time.Duration
	// QueueDepth is the number of writes an endpoint queues before a post
	// waits (the emulated transmit queue); 256 when zero, like the
	// libfabric tcp provider.
	QueueDepth int
	// Logger receives connection-level events; nil is silent.
	Logger *slog.Logger
}

// PlainTCP is the baseline transport: libfabric's semantics over a
// net.TCPConn. A write is queued as a frame (header of type, key, offset,
// length, immediate; then the bytes, sent straight from src) and pushed
// with non-blocking sendmsg while the endpoint progresses; the receiver
// reads frames with non-blocking reads, copies the bytes into the region
// the key names, and only then queues the immediate. Like a manual-progress
// libfabric provider, nothing moves outside the endpoint's methods.
type PlainTCP struct {
	opts PlainTCPOptions

	// mu guards the fields below. Receivers read-hold it while bytes land
	// in a region, so Region.Close (write-holding it to deregister) never
	// unmaps memory under a copy.
	mu sync.RWMutex
	// regions by key: what incoming frames may write into.
	regions   map[uint64]*plainRegion
	nextKey   uint64
	endpoints map[*plainEndpoint]struct{}
	listeners map[*plainListener]struct{}
	closed    bool
}

// NewPlainTCP returns a plain TCP provider.
func NewPlainTCP(opts PlainTCPOptions) *PlainTCP {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.QueueDepth <= 0 {
		opts.QueueDepth = 256
	}
	return &PlainTCP{
		opts:      opts,
		regions:   map[uint64]*plainRegion{},
		nextKey:   1,
		endpoints: map[*plainEndpoint]struct{}{},
		listeners: map[*plainListener]struct{}{},
	}
}

// Name implements Provider.
func (p *PlainTCP) Name() string { return "plaintcp" }

func (p *PlainTCP) log() *slog.Logger {
	if p.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.opts.Logger
}

// Register implements Provider.
func (p *PlainTCP) Register(b []byte) (Region, error) {
	if len(b) == 0 {
		return nil, errors.New("plaintcp: registering an empty region")
	}
	return p.addRegion(b, false)
}

// Alloc implements Provider.
func (p *PlainTCP) Alloc(n int) (Region, error) {
	b, err := MapAnon(n)
	if err != nil {
		return nil, fmt.Errorf("plaintcp: %w", err)
	}
	r, err := p.addRegion(b, true)
	if err != nil {
		Unmap(b)
	}
	return r, err
}

func (p *PlainTCP) addRegion(b []byte, mapped bool) (*plainRegion, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	r := &plainRegion{p: p, b: b, key: p.nextKey, mapped: mapped}
	p.nextKey++
	p.regions[r.key] = r
	return r, nil
}

func (p *PlainTCP) region(key uint64) []byte {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if r := p.regions[key]; r != nil {
		return r.b
	}
	return nil
}

// Listen implements Provider: addr is host:port.
func (p *PlainTCP) Listen(addr string) (Listener, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("plaintcp: listening at %q: %w", addr, err)
	}
	l := &plainListener{p: p, ln: ln.(*net.TCPListener)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		ln.Close()
		return nil, ErrClosed
	}
	p.listeners[l] = struct{}{}
	return l, nil
}

// Dial implements Provider.
func (p *PlainTCP) Dial(addr string) (Endpoint, error) {
	d := net.Dialer{Timeout: p.opts.Timeout}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("plaintcp: dialing %q: %w", addr, err)
	}
	return p.newEndpoint(c.(*net.TCPConn))
}

func (p *PlainTCP) newEndpoint(c *net.TCPConn) (Endpoint, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("plaintcp: %w", err)
	}
	e := &plainEndpoint{
		p:     p,
		conn:  c,
		rc:    rc,
		fd:    -1,
		txq:   make([]plainFrame, 0, p.opts.QueueDepth),
		rxbuf: make([]byte, 256<<10),
	}
	rc.Control(func(fd uintptr) { e.fd = int(fd) }) // the socket's, until conn.Close
	if e.sl, err = NewSleeper(); err != nil {
		c.Close()
		return nil, fmt.Errorf("plaintcp: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		e.sl.Close()
		c.Close()
		return nil, ErrClosed
	}
	p.endpoints[e] = struct{}{}
	return e, nil
}

// Close implements Provider.
func (p *PlainTCP) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.closed = true
	var eps []*plainEndpoint
	for e := range p.endpoints {
		eps = append(eps, e)
	}
	var lns []*plainListener
	for l := range p.listeners {
		lns = append(lns, l)
	}
	var rs []*plainRegion
	for _, r := range p.regions {
		rs = append(rs, r)
	}
	p.mu.Unlock()
	for _, l := range lns {
		l.Close()
	}
	for _, e := range eps {
		e.Close()
	}
	var errs []error
	for _, r := range rs {
		if err := r.Close(); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

type plainRegion struct {
	p      *PlainTCP
	b      []byte
	key    uint64
	mapped bool
}

func (r *plainRegion) Bytes() []byte { return r.b }

func (r *plainRegion) Desc() RemoteRegion {
	return RemoteRegion{Addr: 0, Key: r.key, Len: uint64(len(r.b))}
}

func (r *plainRegion) Close() error {
	r.p.mu.Lock()
	if r.p.regions[r.key] != r {
		r.p.mu.Unlock()
		return ErrClosed
	}
	delete(r.p.regions, r.key)
	r.p.mu.Unlock()
	if r.mapped {
		return Unmap(r.b)
	}
	return nil
}

type plainListener struct {
	p  *PlainTCP
	ln *net.TCPListener
}

func (l *plainListener) Addr() string { return l.ln.Addr().String() }

func (l *plainListener) Accept() (Endpoint, error) {
	c, err := l.ln.AcceptTCP()
	if err != nil {
		if errors.Is(err, net.ErrClosed) {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("plaintcp: accepting: %w", err)
	}
	return l.p.newEndpoint(c)
}

func (l *plainListener) Close() error {
	l.p.mu.Lock()
	delete(l.p.listeners, l)
	l.p.mu.Unlock()
	if err := l.ln.Close(); err != nil {
		if errors.Is(err, net.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	return nil
}

// Frame header: type u8, 7 bytes zero, key, offset, length, immediate
// (little-endian u64 each).
const (
	plainHdrSize  = 40
	frameWrite    = 1
	frameWriteImm = 2
)

type plainFrame struct {
	hdr  [plainHdrSize]byte
	src  []byte
	sent int // bytes of hdr+src already written to the socket
}

type plainEndpoint struct {
	p    *PlainTCP
	conn *net.TCPConn
	rc   syscall.RawConn
	fd   int      // the socket's descriptor, for Sleep
	sl   *Sleeper // Sleep and Wake; closed before conn

	mu sync.Mutex // guards everything below; held across progress
	// txq holds posted frames not yet fully written, oldest first.
	txq []plainFrame
	// rxbuf[rxStart:rxEnd] are received bytes not yet parsed.
	rxbuf          []byte
	rxStart, rxEnd int
	// The frame being received: its header once complete (inFrame), the
	// region and range its bytes go to, and how many arrived.
	inFrame      bool
	rxHdr        [plainHdrSize]byte
	rxKey, rxOff uint64
	rxLen        int
	rxDone       int
	pending      []uint64 // received immediates not yet returned by Poll
	err          error    // sticky: the connection failed
	closed       bool

	writes, completions, imms, retries atomic.Uint64
}

func (e *plainEndpoint) Stats() Stats {
	return Stats{
		Writes:      e.writes.Load(),
		Completions: e.completions.Load(),
		Imms:        e.imms.Load(),
		Retries:     e.retries.Load(),
	}
}

func (e *plainEndpoint) WriteImm(src []byte, local Region, remote RemoteRegion, off uint64, imm uint64) error {
	return e.post(frameWriteImm, src, local, remote, off, imm)
}

func (e *plainEndpoint) Write(src []byte, local Region, remote RemoteRegion, off uint64) error {
	return e.post(frameWrite, src, local, remote, off, 0)
}

func (e *plainEndpoint) post(typ byte, src []byte, local Region, remote RemoteRegion, off, imm uint64) error {
	if local == nil {
		return errors.New("plaintcp: write without a local region")
	}
	if err := remote.CheckWrite(off, len(src)); err != nil {
		return fmt.Errorf("plaintcp: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.usable(); err != nil {
		return err
	}
	if len(e.txq) == cap(e.txq) {
		// The emulated -FI_EAGAIN: progress until the queue drains.
		e.retries.Add(1)
		deadline := time.Now().Add(e.p.opts.Timeout)
		for spins := 0; len(e.txq) == cap(e.txq); spins++ {
			e.progress()
			if err := e.usable(); err != nil {
				return err
			}
			if len(e.txq) < cap(e.txq) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("plaintcp: transmit queue full for %v: %w", e.p.opts.Timeout, ErrTimeout)
			}
			e.mu.Unlock()
			Backoff(spins)
			e.mu.Lock()
			if err := e.usable(); err != nil {
				return err
			}
		}
	}
	f := plainFrame{src: src}
	f.hdr[0] = typ
	binary.LittleEndian.PutUint64(f.hdr[8:], remote.Key)
	binary.LittleEndian.PutUint64(f.hdr[16:], remote.Addr+off)
	binary.LittleEndian.PutUint64(f.hdr[24:], uint64(len(src)))
	binary.LittleEndian.PutUint64(f.hdr[32:], imm)
	e.txq = append(e.txq, f)
	e.writes.Add(1)
	e.progress()
	return nil
}

// usable reports why the endpoint cannot post. Must hold e.mu.
func (e *plainEndpoint) usable() error {
	if e.closed {
		return ErrClosed
	}
	return e.err
}

func (e *plainEndpoint) Poll(imms []uint64) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, ErrClosed
	}
	e.progress()
	n := copy(imms, e.pending)
	e.pending = e.pending[:copy(e.pending, e.pending[n:])]
	if n == 0 && e.err != nil {
		return 0, e.err
	}
	return n, nil
}

func (e *plainEndpoint) Wait(imms []uint64, timeout time.Duration) (int, error) {
	return PollWait(e.Poll, imms, timeout)
}

func (e *plainEndpoint) Flush(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for spins := 0; ; spins++ {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return ErrClosed
		}
		e.progress()
		empty, err := len(e.txq) == 0, e.err
		e.mu.Unlock()
		if empty {
			return nil
		}
		if err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("plaintcp: flush: %w", ErrTimeout)
		}
		Backoff(spins)
	}
}

// Sleep implements Endpoint: it polls the socket for incoming bytes (and
// for room to send while frames are queued).
func (e *plainEndpoint) Sleep(timeout time.Duration) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	if len(e.pending) > 0 || e.err != nil {
		e.mu.Unlock()
		return nil // Poll has something to return
	}
	events := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
	if len(e.txq) > 0 {
		events |= unix.EPOLLOUT
	}
	e.mu.Unlock()
	return e.sl.Sleep(e.fd, events, timeout)
}

// Wake implements Endpoint.
func (e *plainEndpoint) Wake() { e.sl.Wake() }

func (e *plainEndpoint) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	e.closed = true
	e.txq = nil
	e.mu.Unlock()
	e.sl.Close() // before the socket closes
	e.p.mu.Lock()
	delete(e.p.endpoints, e)
	e.p.mu.Unlock()
	return e.conn.Close()
}

// fail records the connection's first error. Must hold e.mu.
func (e *plainEndpoint) fail(err error) {
	if e.err == nil {
		e.err = err
		e.p.log().Debug("plaintcp connection failed", "remote", e.conn.RemoteAddr().String(), "err", err)
	}
}

// progress pushes queued frames and lands incoming ones, without blocking.
// Must hold e.mu.
func (e *plainEndpoint) progress() {
	if e.err != nil {
		return
	}
	e.send()
	e.receive()
}

// send writes as much of the queue as the socket takes.
func (e *plainEndpoint) send() {
	for len(e.txq) > 0 && e.err == nil {
		var bufs [][]byte
		for i := range e.txq {
			if len(bufs) >= 128 {
				break
			}
			f := &e.txq[i]
			if f.sent < plainHdrSize {
				bufs = append(bufs, f.hdr[f.sent:])
				if len(f.src) > 0 {
					bufs = append(bufs, f.src)
				}
			} else {
				bufs = append(bufs, f.src[f.sent-plainHdrSize:])
			}
		}
		var n int
		var serr error
		err := e.rc.Write(func(fd uintptr) bool {
			n, serr = unix.SendmsgBuffers(int(fd), bufs, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
			return true // one attempt: never wait for the socket
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			if errors.Is(err, unix.EAGAIN) {
				return
			}
			e.fail(connErr("sending", err))
			return
		}
		done := 0
		for done < len(e.txq) && n > 0 {
			f := &e.txq[done]
			left := plainHdrSize + len(f.src) - f.sent
			if n < left {
				f.sent += n
				n = 0
				break
			}
			n -= left
			done++
		}
		if done > 0 {
			clear(e.txq[:done]) // drop references to src
			e.txq = e.txq[:copy(e.txq, e.txq[done:])]
			e.completions.Add(uint64(done))
		}
		if done == 0 {
			return // partial write: the socket is full
		}
	}
}

// receive reads what the socket holds, at most a few MiB per call, and
// applies complete frames.
func (e *plainEndpoint) receive() {
	for budget := 8 << 20; budget > 0 && e.err == nil; {
		// A large payload in progress goes straight into the region.
		if e.inFrame && e.rxStart == e.rxEnd && e.rxLen-e.rxDone >= len(e.rxbuf)/2 {
			var n int
			var err error
			e.land(func(dst []byte) int {
				n, err = e.read(dst)
				return max(n, 0)
			})
			if n <= 0 || err != nil {
				return
			}
			budget -= n
			e.finishFrame()
			continue
		}
		if e.rxStart == e.rxEnd {
			e.rxStart, e.rxEnd = 0, 0
		} else if e.rxStart > 0 && len(e.rxbuf)-e.rxEnd < plainHdrSize {
			e.rxEnd = copy(e.rxbuf, e.rxbuf[e.rxStart:e.rxEnd])
			e.rxStart = 0
		}
		n, err := e.read(e.rxbuf[e.rxEnd:])
		if n <= 0 || err != nil {
			return
		}
		budget -= n
		e.rxEnd += n
		e.parse()
	}
}

// read is one non-blocking read; it returns 0 when nothing is there and
// records EOF or a socket error.
func (e *plainEndpoint) read(b []byte) (int, error) {
	var n int
	var rerr error
	err := e.rc.Read(func(fd uintptr) bool {
		n, rerr = unix.Read(int(fd), b)
		return true
	})
	if err == nil {
		err = rerr
	}
	switch {
	case err != nil && errors.Is(err, unix.EAGAIN):
		return 0, nil
	case err != nil:
		e.fail(connErr("receiving", err))
		return 0, err
	case n == 0:
		e.fail(connErr("receiving", io.EOF))
		return 0, io.EOF
	}
	return n, nil
}

// parse applies the frames in rxbuf[rxStart:rxEnd].
func (e *plainEndpoint) parse() {
	for e.err == nil && e.rxStart < e.rxEnd {
		if !e.inFrame {
			if e.rxEnd-e.rxStart < plainHdrSize {
				return
			}
			copy(e.rxHdr[:], e.rxbuf[e.rxStart:])
			e.rxStart += plainHdrSize
			if err := e.startFrame(); err != nil {
				e.fail(err)
				e.conn.CloseWrite() // the peer sees the connection end
				return
			}
		}
		e.rxStart += e.land(func(dst []byte) int { return copy(dst, e.rxbuf[e.rxStart:e.rxEnd]) })
		e.finishFrame() // also completes zero-length frames
	}
}

// land calls put with the rest of the current frame's range in its region
// (read-holding the provider's lock, so the region stays mapped) and
// counts the bytes put says it wrote. A region closed meanwhile fails the
// connection.
func (e *plainEndpoint) land(put func(dst []byte) int) int {
	e.p.mu.RLock()
	defer e.p.mu.RUnlock()
	r := e.p.regions[e.rxKey]
	if r == nil {
		e.fail(fmt.Errorf("plaintcp: region key %d closed while a write to it arrived: %w", e.rxKey, ErrOutOfBounds))
		e.conn.CloseWrite()
		return 0
	}
	n := put(r.b[e.rxOff+uint64(e.rxDone) : e.rxOff+uint64(e.rxLen)])
	e.rxDone += n
	return n
}

// startFrame validates the header in rxHdr and aims the frame at its
// target.
func (e *plainEndpoint) startFrame() error {
	typ := e.rxHdr[0]
	key := binary.LittleEndian.Uint64(e.rxHdr[8:])
	off := binary.LittleEndian.Uint64(e.rxHdr[16:])
	n := binary.LittleEndian.Uint64(e.rxHdr[24:])
	if typ != frameWrite && typ != frameWriteImm {
		return fmt.Errorf("plaintcp: peer sent frame type %d", typ)
	}
	b := e.p.region(key)
	if b == nil {
		return fmt.Errorf("plaintcp: peer wrote to unknown region key %d: %w", key, ErrOutOfBounds)
	}
	if n > MaxMessage || off > uint64(len(b)) || n > uint64(len(b))-off {
		return fmt.Errorf("plaintcp: peer wrote %d bytes at %d into region key %d of %d: %w", n, off, key, len(b), ErrOutOfBounds)
	}
	e.inFrame = true
	e.rxKey, e.rxOff, e.rxLen, e.rxDone = key, off, int(n), 0
	return nil
}

// finishFrame reports the immediate of a frame whose bytes all landed.
func (e *plainEndpoint) finishFrame() {
	if !e.inFrame || e.rxDone < e.rxLen {
		return
	}
	if e.rxHdr[0] == frameWriteImm {
		e.pending = append(e.pending, binary.LittleEndian.Uint64(e.rxHdr[32:]))
		e.imms.Add(1)
	}
	e.inFrame = false
}

func connErr(op string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE) {
		return fmt.Errorf("plaintcp: %s: %w (%v)", op, ErrPeerClosed, err)
	}
	return fmt.Errorf("plaintcp: %s: %w", op, err)
}
