//go:build cgo && !nofabric

package fabric

// #include "rgfabric.h"
import "C"

import (
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// The Endpoint: transport.Endpoint over a core (endpoint.go), which it
// guards with its mutex. Sleep and Wake are in sleep.go.

// Endpoint is a connection to one peer; it implements transport.Endpoint.
type Endpoint struct {
	p  *Provider
	mu sync.Mutex
	c  *core // guarded by mu
	// sl sleeps on the completion queue's wait descriptor (sleep.go);
	// closed before the queue is. nil where the queue has none (shm): an
	// epoll instance and an eventfd less per endpoint.
	sl *transport.Sleeper
}

// newEndpoint creates an endpoint from info and tracks it in p.
func (p *Provider) newEndpoint(info *C.struct_fi_info) (*Endpoint, error) {
	e := &Endpoint{p: p}
	rx := 8 // control messages only
	if p.rxCQData {
		rx = min(p.rxSize, 1024) // every immediate consumes one
	}
	c, err := p.newCore(&e.mu, info, rx)
	if err != nil {
		return nil, err
	}
	if c.waitFD >= 0 {
		if e.sl, err = transport.NewSleeper(); err != nil {
			c.destroy()
			return nil, fmt.Errorf("libfabric: %w", err)
		}
	}
	e.c = c
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		e.closeSleeper()
		c.destroy()
		return nil, transport.ErrClosed
	}
	p.endpoints[e] = struct{}{}
	return e, nil
}

// WriteImm implements transport.Endpoint.
func (e *Endpoint) WriteImm(src []byte, local transport.Region, remote transport.RemoteRegion, off uint64, imm uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.write(src, local, remote, off, imm, true)
}

// Write implements transport.Endpoint.
func (e *Endpoint) Write(src []byte, local transport.Region, remote transport.RemoteRegion, off uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.write(src, local, remote, off, 0, false)
}

// Poll implements transport.Endpoint.
func (e *Endpoint) Poll(imms []uint64) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.c
	if c.closed {
		return 0, transport.ErrClosed
	}
	// Progress goes on after a failure: a peer that said bye waits for
	// our ack.
	c.progress()
	n := copy(imms, c.pending[c.head:])
	c.head += n
	if c.head == len(c.pending) {
		c.pending, c.head = c.pending[:0], 0
	}
	if n == 0 && c.err != nil {
		return 0, c.err
	}
	return n, nil
}

// Wait implements transport.Endpoint.
func (e *Endpoint) Wait(imms []uint64, timeout time.Duration) (int, error) {
	return transport.PollWait(e.Poll, imms, timeout)
}

// Flush implements transport.Endpoint.
func (e *Endpoint) Flush(timeout time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.c
	deadline := time.Now().Add(timeout)
	for spins := 0; ; spins++ {
		if c.closed {
			return transport.ErrClosed
		}
		c.progress()
		if c.inflight == 0 {
			return nil
		}
		if c.err != nil {
			return c.err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("libfabric %s: flush: %d writes not completed: %w", c.p.name, c.inflight, transport.ErrTimeout)
		}
		if !c.pause(spins) {
			return transport.ErrClosed
		}
	}
}

// Stats implements transport.Endpoint.
func (e *Endpoint) Stats() transport.Stats {
	c := e.c
	return transport.Stats{
		Writes:      c.writes.Load(),
		Completions: c.completions.Load(),
		Imms:        c.imms.Load(),
		Retries:     c.retries.Load(),
		Fences:      c.fences.Load(),
	}
}

// sendRaw sends src (inside local) as a plain message to the peer: tests
// use it to make the peer's receive fail for real (a message longer than
// its posted buffers: FI_ETRUNC through fi_cq_readerr).
func (e *Endpoint) sendRaw(src []byte, local *Region) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.c
	if err := c.usable(); err != nil {
		return err
	}
	buf, desc, err := local.span(src)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(c.p.opts.Timeout)
	i, err := c.slot(deadline, false)
	if err != nil {
		return err
	}
	n := C.size_t(len(src))
	return c.post(i, slotCtl, c.peer, deadline, func(ctx unsafe.Pointer) C.ssize_t {
		return C.rg_send(c.ep, buf, n, desc, c.peer, ctx)
	})
}

// ProviderEAgain counts the posts the provider refused with -FI_EAGAIN
// (Stats().Retries also counts waits for a free context slot).
func (e *Endpoint) ProviderEAgain() uint64 { return e.c.eagains.Load() }

// Close implements transport.Endpoint. A healthy endpoint says bye and
// waits (at most 2 s, progressing) until its operations completed and the
// peer acknowledged; one whose peer said bye first makes sure its ack left.
func (e *Endpoint) Close() error {
	e.mu.Lock()
	c := e.c
	if c.closed {
		e.mu.Unlock()
		return transport.ErrClosed
	}
	c.holdLock = true // nobody else may use the endpoint while it closes
	deadline := time.Now().Add(min(2*time.Second, c.p.opts.Timeout))
	sentBye := false
	if c.err == nil {
		if err := c.sendCtl(1, c.peer, ctlBye, "", deadline); err != nil {
			c.fail(err)
		} else {
			sentBye = true
		}
	}
	// Wait while the peer is still there to answer: until every operation
	// completed, the ack we owe is out, and our bye is acknowledged.
	for spins := 0; time.Now().Before(deadline); spins++ {
		if c.err != nil && !c.byeIn {
			break // a hard failure: nobody will answer
		}
		if len(c.free) == c.txSlots && (!c.byeIn || c.ackSent) && (!sentBye || c.ackIn) {
			break
		}
		if c.progress() == 0 {
			c.pause(spins)
		}
	}
	c.closed = true
	e.closeSleeper() // before the queue and its descriptor go
	err := c.release()
	e.mu.Unlock()
	c.p.mu.Lock()
	delete(c.p.endpoints, e)
	c.p.mu.Unlock()
	return err
}
