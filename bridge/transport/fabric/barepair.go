//go:build cgo && !nofabric

package fabric

/*
#include "rgfabric.h"
#include <time.h>

// The two halves of MeasureBare's loop, for two processes (two network
// namespaces, say): the sender posts iters fi_writedata of len bytes back
// to back (retrying -FI_EAGAIN while reading its CQ) and then keeps
// reading its CQ, so the transfer progresses, until told to stop; the
// receiver reads its CQ until it has seen iters immediates. Both in C, no
// Go in the loop; times are CLOCK_MONOTONIC, which both processes share.
typedef struct {
	struct fid_ep *ep;
	struct fid_cq *cq;
	fi_addr_t dest;
	void *src, *desc, *ctx;
	size_t len, nctx;
	uint64_t addr, key;
	long iters;
	int stop;
	long long timeout_ns;
	char err[256]; // the completion error's text, when there was one
} rg_pair_tx;

static long long rg_pair_now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

// rg_pair_cqerr turns -FI_EAVAIL into the error entry's code and text.
static long long rg_pair_cqerr(struct fid_cq *cq, ssize_t n, char *msg, size_t msglen) {
	if (n != -FI_EAVAIL)
		return n;
	void *ctx;
	uint64_t flags;
	return -rg_cq_readerr(cq, &ctx, &flags, msg, msglen);
}

// rg_pair_send returns the time of the first post, or a negative
// libfabric error code (-FI_ETIMEDOUT when the timeout passed).
static long long rg_pair_send(rg_pair_tx *b) {
	struct fi_cq_data_entry e[64];
	long long t0 = rg_pair_now(), deadline = t0 + b->timeout_ns;
	for (long posted = 0; posted < b->iters;) {
		void *ctx = (char *)b->ctx + (posted % b->nctx) * sizeof(struct fi_context2);
		ssize_t r = fi_writedata(b->ep, b->src, b->len, b->desc, (uint64_t)posted, b->dest, b->addr, b->key, ctx);
		if (r == 0) {
			posted++;
			continue;
		}
		if (r != -FI_EAGAIN)
			return r;
		ssize_t n = fi_cq_read(b->cq, e, 64);
		if (n < 0 && n != -FI_EAGAIN)
			return rg_pair_cqerr(b->cq, n, b->err, sizeof b->err);
		if (rg_pair_now() > deadline)
			return -FI_ETIMEDOUT;
	}
	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE)) {
		ssize_t n = fi_cq_read(b->cq, e, 64);
		if (n < 0 && n != -FI_EAGAIN)
			return rg_pair_cqerr(b->cq, n, b->err, sizeof b->err);
		if (rg_pair_now() > deadline)
			return -FI_ETIMEDOUT;
	}
	// Reap the remaining completions so no context is in use.
	for (int i = 0; i < 1000; i++)
		if (fi_cq_read(b->cq, e, 64) == -FI_EAGAIN)
			break;
	return t0;
}

// rg_pair_recv returns the time the last of iters immediates was read,
// or a negative libfabric error code (its text in msg).
static long long rg_pair_recv(struct fid_cq *cq, long iters, long long timeout_ns, char *msg, size_t msglen) {
	struct fi_cq_data_entry e[64];
	long got = 0;
	long long last = 0, deadline = rg_pair_now() + timeout_ns;
	while (got < iters) {
		ssize_t n = fi_cq_read(cq, e, 64);
		if (n > 0) {
			for (ssize_t i = 0; i < n; i++)
				if (e[i].flags & FI_REMOTE_CQ_DATA)
					got++;
			last = rg_pair_now();
		} else if (n != -FI_EAGAIN) {
			return rg_pair_cqerr(cq, n, msg, msglen);
		} else if (rg_pair_now() > deadline) {
			return -FI_ETIMEDOUT;
		}
	}
	return last;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// BareReceiver is the receiving half of a bare fi_writedata loop whose
// sender is another process (BareSender): MeasureBare's baseline between
// two network namespaces. Its region takes every write (size bytes, as
// MeasureBare's). Methods must not be called concurrently.
type BareReceiver struct {
	p   *Provider
	ln  transport.Listener
	dst *Region
	ep  *Endpoint // the sender's connection, once accepted
}

// ListenBare opens provider (tcp; opts.Node the local address) and
// listens for a BareSender; the sender needs Addr and Region.
func ListenBare(provider string, size int, opts Options) (_ *BareReceiver, err error) {
	if size <= 0 || size > transport.MaxMessage {
		return nil, fmt.Errorf("bare loop of %d-byte writes: bad size", size)
	}
	p, err := Open(provider, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.epType != epMsg {
		return nil, fmt.Errorf("libfabric %s: a bare loop between processes needs a connected (MSG) provider such as tcp: %w", provider, transport.ErrNotSupported)
	}
	ln, err := p.Listen(p.opts.Node + ":0")
	if err != nil {
		return nil, err
	}
	dst, err := p.Alloc(size)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &BareReceiver{p: p, ln: ln, dst: dst.(*Region)}, nil
}

// Addr is where the sender dials.
func (r *BareReceiver) Addr() string { return r.ln.Addr() }

// Region is where the sender writes.
func (r *BareReceiver) Region() transport.RemoteRegion { return r.dst.Desc() }

// Receive accepts the sender and reads immediates until iters arrived; it
// returns the CLOCK_MONOTONIC time (ns) the last one was read. Close the
// receiver only once the sender's Send returned: the sender's last
// completions need the connection.
func (r *BareReceiver) Receive(iters int) (int64, error) {
	if r.ep != nil {
		return 0, errors.New("bare loop: the receiver took its sender already")
	}
	a, err := r.ln.Accept()
	if err != nil {
		return 0, err
	}
	e := a.(*Endpoint)
	r.ep = e // closed by Close: the sender's last completions need it
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := drainSetUp(e.c, r.p); err != nil {
		return 0, err
	}
	var msg [256]C.char
	ns := C.rg_pair_recv(e.c.cq, C.long(iters), C.longlong(max(time.Duration(iters)*r.p.opts.Timeout/8, r.p.opts.Timeout)), &msg[0], C.size_t(len(msg)))
	if ns < 0 {
		return 0, fiError("bare fi_writedata loop (receiver)", int(-ns), C.GoString(&msg[0]))
	}
	return int64(ns), nil
}

// Close closes the connection, the listener, the region and the provider.
func (r *BareReceiver) Close() error {
	var err error
	if r.ep != nil {
		err = r.ep.Close()
	}
	return errors.Join(err, r.ln.Close(), r.dst.Close(), r.p.Close())
}

// drainSetUp retires the operations of c's connection set-up (shm's
// welcome) before a bare loop reads its completion queue itself.
func drainSetUp(c *core, p *Provider) error {
	deadline := time.Now().Add(p.opts.Timeout)
	for c.inUse() > 0 {
		c.progress()
		if time.Now().After(deadline) {
			return fmt.Errorf("libfabric %s: set-up operations did not complete: %w", p.name, transport.ErrTimeout)
		}
	}
	return nil
}

// BareSender is the sending half of a bare fi_writedata loop whose
// receiver (BareReceiver) is another process.
type BareSender struct {
	p   *Provider
	e   *Endpoint
	src *Region
	ctx unsafe.Pointer // contexts of the writes: freed after the endpoint
}

// DialBare opens provider (opts.Node the local address) and connects to
// a BareReceiver at addr; its writes will be size bytes.
func DialBare(provider, addr string, size int, opts Options) (_ *BareSender, err error) {
	if size <= 0 || size > transport.MaxMessage {
		return nil, fmt.Errorf("bare loop of %d-byte writes: bad size", size)
	}
	p, err := Open(provider, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	ep, err := p.Dial(addr)
	if err != nil {
		return nil, err
	}
	src, err := p.Alloc(size)
	if err != nil {
		ep.Close()
		return nil, err
	}
	return &BareSender{p: p, e: ep.(*Endpoint), src: src.(*Region)}, nil
}

// Send posts iters writes with immediates into remote (each at its start)
// and then keeps the transfer progressing until stop is closed (the
// receiver has them all). It returns the CLOCK_MONOTONIC time (ns) of the
// first post.
func (s *BareSender) Send(iters int, remote transport.RemoteRegion, stop <-chan struct{}) (int64, error) {
	if iters <= 0 || uint64(len(s.src.b)) > remote.Len {
		return 0, fmt.Errorf("bare loop of %d writes of %d bytes into a %d-byte region: bad count or size", iters, len(s.src.b), remote.Len)
	}
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	if err := drainSetUp(s.e.c, s.p); err != nil {
		return 0, err
	}
	nctx := s.e.c.txSlots
	if s.ctx == nil {
		if s.ctx = C.calloc(C.size_t(nctx), ctxSize); s.ctx == nil {
			return 0, errors.New("libfabric: out of C memory")
		}
	}
	b := (*C.rg_pair_tx)(C.calloc(1, C.sizeof_rg_pair_tx))
	if b == nil {
		return 0, errors.New("libfabric: out of C memory")
	}
	defer C.free(unsafe.Pointer(b))
	*b = C.rg_pair_tx{
		ep: s.e.c.ep, cq: s.e.c.cq, dest: s.e.c.peer,
		src: unsafe.Pointer(unsafe.SliceData(s.src.b)), desc: s.src.descFor(), ctx: s.ctx,
		len: C.size_t(len(s.src.b)), nctx: C.size_t(nctx),
		addr: C.uint64_t(remote.Addr), key: C.uint64_t(remote.Key),
		iters:      C.long(iters),
		timeout_ns: C.longlong(max(time.Duration(iters)*s.p.opts.Timeout/8, s.p.opts.Timeout)),
	}
	stopped, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-stop:
			atomic.StoreInt32((*int32)(unsafe.Pointer(&b.stop)), 1)
		case <-stopped:
		}
	}()
	ns := C.rg_pair_send(b)
	close(stopped)
	<-exited // b is freed on return
	if ns < 0 {
		return 0, fiError("bare fi_writedata loop (sender)", int(-ns), C.GoString(&b.err[0]))
	}
	return int64(ns), nil
}

// Close closes the endpoint, the region and the provider.
func (s *BareSender) Close() error {
	err := errors.Join(s.e.Close(), s.src.Close(), s.p.Close())
	C.free(s.ctx)
	return err
}
