//go:build cgo && !nofabric

package fabric

// #include "rgfabric.h"
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"golang.org/x/sys/unix"
)

// Listen implements transport.Provider. For tcp and verbs addr is
// host:port (port 0 picks one); for shm it is the listener's name ("" for
// a generated one), which Addr returns in the form Dial takes.
func (p *Provider) Listen(addr string) (transport.Listener, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, transport.ErrClosed
	}
	var l transport.Listener
	var err error
	if p.epType == epRdm {
		l, err = p.listenRDM(addr)
	} else {
		l, err = p.listenMSG(addr)
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		l.Close()
		return nil, transport.ErrClosed
	}
	p.listeners[l] = struct{}{}
	return l, nil
}

// Dial implements transport.Provider.
func (p *Provider) Dial(addr string) (transport.Endpoint, error) {
	if p.epType == epRdm {
		return p.dialRDM(addr)
	}
	return p.dialMSG(addr)
}

func (p *Provider) forgetListener(l transport.Listener) {
	p.mu.Lock()
	delete(p.listeners, l)
	p.mu.Unlock()
}

// acceptPause is the pause of an idle Accept loop: short at first, at most
// 2 ms (an idle daemon listener costs little).
func acceptPause(spins int) {
	if spins < 100 {
		transport.Backoff(spins)
		return
	}
	time.Sleep(min(time.Duration(spins-99)*20*time.Microsecond, 2*time.Millisecond))
}

// sockaddr encodes host:port as a struct sockaddr_in or sockaddr_in6.
func sockaddr(addr string, needPort bool) ([]byte, uint32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, 0, err
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, 0, fmt.Errorf("port %q: %w", port, err)
	}
	if needPort && pn == 0 {
		return nil, 0, errors.New("port 0")
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		ia, lerr := net.ResolveIPAddr("ip", host)
		if lerr != nil {
			return nil, 0, lerr
		}
		var ok bool
		if ip, ok = netip.AddrFromSlice(ia.IP); !ok {
			return nil, 0, fmt.Errorf("host %q: no usable address", host)
		}
	}
	ip = ip.Unmap()
	if ip.Is4() {
		b := make([]byte, unix.SizeofSockaddrInet4)
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], uint16(pn))
		a := ip.As4()
		copy(b[4:], a[:])
		return b, uint32(fmtSockaddrIn), nil
	}
	b := make([]byte, unix.SizeofSockaddrInet6)
	binary.NativeEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], uint16(pn))
	a := ip.As16()
	copy(b[8:], a[:])
	return b, uint32(fmtSockIn6), nil
}

// sockaddrString decodes what fi_getname returns for tcp.
func sockaddrString(b []byte) string {
	if len(b) < 4 {
		return ""
	}
	port := binary.BigEndian.Uint16(b[2:])
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) >= 8 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port).String()
		}
	case unix.AF_INET6:
		if len(b) >= 24 {
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), port).String()
		}
	}
	return ""
}

// withAddrs is a copy of the provider's info with src (or dest) replaced.
func (p *Provider) withAddrs(format uint32, src, dst []byte) (*C.struct_fi_info, error) {
	info := C.fi_dupinfo(p.info)
	if info == nil {
		return nil, errors.New("libfabric: fi_dupinfo failed")
	}
	var sp, dp unsafe.Pointer
	if src != nil {
		sp = C.CBytes(src)
		defer C.free(sp)
	}
	if dst != nil {
		dp = C.CBytes(dst)
		defer C.free(dp)
	}
	if r := C.rg_info_addrs(info, C.uint32_t(format), sp, C.size_t(len(src)), dp, C.size_t(len(dst))); r != 0 {
		C.fi_freeinfo(info)
		return nil, fiError("setting addresses", int(-r), "")
	}
	return info, nil
}

// waitConnected waits for FI_CONNECTED on a MSG endpoint's event queue.
// Must hold c.mu.
// waitConnected waits for the connection to come up, until deadline or
// until abort (when not nil) reports true.
func (c *core) waitConnected(deadline time.Time, abort func() bool) error {
	var msg [256]C.char
	for spins := 0; ; spins++ {
		var info *C.struct_fi_info
		var fid C.fid_t
		var iserr C.int
		ev := C.rg_eq_read(c.eq, &info, &fid, &iserr, &msg[0], C.size_t(len(msg)))
		if info != nil {
			C.fi_freeinfo(info)
		}
		switch {
		case iserr != 0:
			return fiError("connecting", int(-ev), C.GoString(&msg[0]))
		case ev == evConnected:
			return nil
		case ev == evShutdown:
			return fmt.Errorf("libfabric %s: connecting: %w", c.p.name, transport.ErrPeerClosed)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("libfabric %s: no connection within %v: %w", c.p.name, c.p.opts.Timeout, transport.ErrTimeout)
		}
		if abort != nil && abort() {
			return fmt.Errorf("libfabric %s: given up while connecting (listener or provider closing): %w", c.p.name, transport.ErrClosed)
		}
		if !c.pause(spins) {
			return transport.ErrClosed
		}
	}
}

// abandon closes an endpoint whose connection never came up (no bye).
func (e *Endpoint) abandon(cause error) error {
	e.mu.Lock()
	if e.c.err == nil {
		e.c.err = cause
	}
	e.mu.Unlock()
	e.Close()
	return cause
}

// msgListener is a passive endpoint (tcp, verbs).
type msgListener struct {
	p    *Provider
	addr string

	mu     sync.Mutex // guards the fields below
	pep    *C.struct_fid_pep
	eq     *C.struct_fid_eq
	closed bool

	// gone is closed, set by Close without the mutex: an accept waiting
	// for its connection to come up gives up at once (the dialer may be
	// gone), instead of holding a socket until the provider's timeout.
	gone atomic.Bool
}

func (p *Provider) listenMSG(addr string) (*msgListener, error) {
	sa, format, err := sockaddr(addr, false)
	if err != nil {
		return nil, fmt.Errorf("libfabric %s: listening at %q: %w", p.name, addr, err)
	}
	info, err := p.withAddrs(format, sa, nil)
	if err != nil {
		return nil, err
	}
	defer C.fi_freeinfo(info)
	l := &msgListener{p: p}
	if r := C.fi_passive_ep(p.fabric, info, &l.pep, nil); r != 0 {
		return nil, fmt.Errorf("libfabric %s: listening at %q: %w", p.name, addr, fiError("fi_passive_ep", int(-r), ""))
	}
	live.endpoints.Add(1)
	if r := C.rg_eq_open(p.fabric, &l.eq); r != 0 {
		l.destroy()
		return nil, fiError("fi_eq_open", int(-r), "")
	}
	if r := C.rg_pep_listen(l.pep, l.eq); r != 0 {
		l.destroy()
		return nil, fmt.Errorf("libfabric %s: listening at %q: %w", p.name, addr, fiError("fi_listen", int(-r), ""))
	}
	var buf [128]byte
	n := C.size_t(len(buf))
	if r := C.rg_getname(C.rg_pep_fid(l.pep), unsafe.Pointer(&buf[0]), &n); r != 0 {
		l.destroy()
		return nil, fiError("fi_getname", int(-r), "")
	}
	l.addr = sockaddrString(buf[:n])
	return l, nil
}

func (l *msgListener) Addr() string { return l.addr }

func (l *msgListener) Accept() (transport.Endpoint, error) {
	var msg [256]C.char
	for spins := 0; ; spins++ {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, transport.ErrClosed
		}
		var info *C.struct_fi_info
		var fid C.fid_t
		var iserr C.int
		ev := C.rg_eq_read(l.eq, &info, &fid, &iserr, &msg[0], C.size_t(len(msg)))
		l.mu.Unlock()
		switch {
		case iserr != 0:
			l.p.log.Debug("libfabric: listener event error", "err", C.GoString(&msg[0]))
		case ev == evConnReq && info != nil:
			e, err := l.p.acceptMSG(info, l.gone.Load, func() {
				l.mu.Lock()
				if !l.closed {
					C.fi_reject(l.pep, info.handle, nil, 0)
				}
				l.mu.Unlock()
			})
			C.fi_freeinfo(info)
			if err == nil {
				return e, nil
			}
			l.p.log.Debug("libfabric: accepting a connection failed", "err", err)
			spins = 0
			continue
		case info != nil:
			C.fi_freeinfo(info)
		}
		acceptPause(spins)
	}
}

// acceptMSG accepts the connection request info; reject turns it down
// when no endpoint could be made for it.
func (p *Provider) acceptMSG(info *C.struct_fi_info, abort func() bool, reject func()) (*Endpoint, error) {
	e, err := p.newEndpoint(info)
	if err != nil {
		reject()
		return nil, err
	}
	e.mu.Lock()
	c := e.c
	err = nil
	if r := C.fi_accept(c.ep, nil, 0); r != 0 {
		err = fiError("fi_accept", int(-r), "")
	} else {
		err = c.waitConnected(time.Now().Add(p.opts.Timeout), abort)
	}
	e.mu.Unlock()
	if err != nil {
		return nil, e.abandon(err)
	}
	return e, nil
}

func (l *msgListener) destroy() {
	if l.pep != nil {
		C.rg_close(C.rg_pep_fid(l.pep))
		live.endpoints.Add(-1)
	}
	if l.eq != nil {
		C.rg_close(C.rg_eq_fid(l.eq))
	}
	l.pep, l.eq = nil, nil
}

func (l *msgListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return transport.ErrClosed
	}
	l.closed = true
	l.gone.Store(true)
	l.rejectPending()
	l.destroy()
	l.mu.Unlock()
	l.p.forgetListener(l)
	return nil
}

// rejectPending turns down the connection requests still queued on the
// listener's event queue: closing the passive endpoint does not release
// them, and each would hold its socket (in CLOSE_WAIT once the dialer gives
// up) for the life of the process. Must hold l.mu.
func (l *msgListener) rejectPending() {
	if l.eq == nil {
		return
	}
	var msg [256]C.char
	for range 1024 { // bounded: the queue is finite, a broken one must not spin
		var info *C.struct_fi_info
		var fid C.fid_t
		var iserr C.int
		ev := C.rg_eq_read(l.eq, &info, &fid, &iserr, &msg[0], C.size_t(len(msg)))
		if info != nil {
			if ev == evConnReq {
				C.fi_reject(l.pep, info.handle, nil, 0)
			}
			C.fi_freeinfo(info)
		}
		if ev == -C.FI_EAGAIN || (iserr != 0 && ev == -C.FI_EOTHER) {
			return
		}
	}
}

func (p *Provider) dialMSG(addr string) (transport.Endpoint, error) {
	sa, format, err := sockaddr(addr, true)
	if err != nil {
		return nil, fmt.Errorf("libfabric %s: dialing %q: %w", p.name, addr, err)
	}
	info, err := p.withAddrs(format, nil, sa)
	if err != nil {
		return nil, err
	}
	e, err := p.newEndpoint(info)
	C.fi_freeinfo(info)
	if err != nil {
		return nil, fmt.Errorf("libfabric %s: dialing %q: %w", p.name, addr, err)
	}
	csa := C.CBytes(sa)
	defer C.free(csa)
	e.mu.Lock()
	c := e.c
	if r := C.fi_connect(c.ep, csa, nil, 0); r != 0 {
		err = fiError("fi_connect", int(-r), "")
	} else {
		err = c.waitConnected(time.Now().Add(p.opts.Timeout), p.interrupted.Load)
	}
	e.mu.Unlock()
	if err != nil {
		return nil, e.abandon(fmt.Errorf("libfabric %s: dialing %q: %w", p.name, addr, err))
	}
	return e, nil
}

// shmAddr turns a name into the FI_ADDR_STR form shm takes ("fi_ns://"
// names a unique endpoint: shm uses it as is, as its /dev/shm file name).
func shmAddr(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty address")
	}
	if !strings.Contains(name, "://") {
		name = "fi_ns://" + name
	}
	rest := name[strings.Index(name, "://")+3:]
	if rest == "" || strings.ContainsAny(rest, "/\x00") || len(rest) > 200 {
		return "", fmt.Errorf("bad shm endpoint name %q", rest)
	}
	return name, nil
}

// rdmInfo is the provider's info with name as the source address.
func (p *Provider) rdmInfo(name string) (*C.struct_fi_info, error) {
	a, err := shmAddr(name)
	if err != nil {
		return nil, err
	}
	return p.withAddrs(uint32(fmtAddrStr), append([]byte(a), 0), nil)
}

// newRDMCore is an endpoint core whose address is name.
func (p *Provider) newRDMCore(mu *sync.Mutex, name string, rx int) (*core, error) {
	info, err := p.rdmInfo(name)
	if err != nil {
		return nil, err
	}
	defer C.fi_freeinfo(info)
	return p.newCore(mu, info, rx)
}

// newRDMEndpoint is an endpoint whose address is name.
func (p *Provider) newRDMEndpoint(name string) (*Endpoint, error) {
	info, err := p.rdmInfo(name)
	if err != nil {
		return nil, err
	}
	defer C.fi_freeinfo(info)
	return p.newEndpoint(info)
}

// rdmListener is an RDM endpoint that answers hellos: each Accept creates
// a new endpoint for the dialer and welcomes it with its address.
type rdmListener struct {
	p    *Provider
	addr string

	mu     sync.Mutex // guards the fields below
	c      *core
	closed bool
}

func (p *Provider) listenRDM(name string) (*rdmListener, error) {
	if name == "" {
		name = p.newName("l")
	}
	l := &rdmListener{p: p}
	c, err := p.newRDMCore(&l.mu, name, 32)
	if err != nil {
		return nil, fmt.Errorf("libfabric %s: listening at %q: %w", p.name, name, err)
	}
	l.c, l.addr = c, c.name
	return l, nil
}

func (l *rdmListener) Addr() string { return l.addr }

func (l *rdmListener) Accept() (transport.Endpoint, error) {
	for spins := 0; ; spins++ {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return nil, transport.ErrClosed
		}
		l.c.progress()
		m, ok := l.c.takeCtl(ctlHello)
		err := l.c.err
		l.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("libfabric %s: listener: %w", l.p.name, err)
		}
		if ok {
			e, err := l.p.acceptRDM(m.payload)
			if err == nil {
				return e, nil
			}
			l.p.log.Debug("libfabric: accepting a connection failed", "dialer", m.payload, "err", err)
			spins = 0
			continue
		}
		acceptPause(spins)
	}
}

func (p *Provider) acceptRDM(dialer string) (*Endpoint, error) {
	e, err := p.newRDMEndpoint(p.newName("a"))
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	c := e.c
	fa, err := c.avInsert(dialer)
	if err == nil {
		c.peer, c.peerAddr = fa, dialer
		err = c.sendCtl(0, fa, ctlWelcome, c.name, time.Now().Add(p.opts.Timeout))
	}
	e.mu.Unlock()
	if err != nil {
		return nil, e.abandon(err)
	}
	return e, nil
}

func (l *rdmListener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return transport.ErrClosed
	}
	l.closed = true
	l.c.closed = true
	err := l.c.destroy()
	l.mu.Unlock()
	l.p.forgetListener(l)
	return err
}

func (p *Provider) dialRDM(addr string) (transport.Endpoint, error) {
	a, err := shmAddr(addr)
	if err != nil {
		return nil, fmt.Errorf("libfabric %s: dialing %q: %w", p.name, addr, err)
	}
	e, err := p.newRDMEndpoint(p.newName("d"))
	if err != nil {
		return nil, fmt.Errorf("libfabric %s: dialing %q: %w", p.name, addr, err)
	}
	e.mu.Lock()
	c := e.c
	deadline := time.Now().Add(p.opts.Timeout)
	err = func() error {
		fl, err := c.avInsert(a)
		if err != nil {
			return err
		}
		if err := c.sendCtl(0, fl, ctlHello, c.name, deadline); err != nil {
			if errors.Is(err, transport.ErrTimeout) {
				return fmt.Errorf("no listener answers: %w", err)
			}
			return err
		}
		for spins := 0; ; spins++ {
			c.progress()
			if c.err != nil {
				return c.err
			}
			if m, ok := c.takeCtl(ctlWelcome); ok {
				fa, err := c.avInsert(m.payload)
				if err != nil {
					return err
				}
				c.peer, c.peerAddr = fa, m.payload
				c.avRemove(a, fl)
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("not accepted within %v: %w", p.opts.Timeout, transport.ErrTimeout)
			}
			if !c.pause(spins) {
				return transport.ErrClosed
			}
		}
	}()
	e.mu.Unlock()
	if err != nil {
		return nil, e.abandon(fmt.Errorf("libfabric %s: dialing %q: %w", p.name, addr, err))
	}
	return e, nil
}
