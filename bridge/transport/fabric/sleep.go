//go:build cgo && !nofabric

package fabric

// #include "rgfabric.h"
import "C"

import (
	"fmt"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"golang.org/x/sys/unix"
)

// openCQ opens the endpoint's completion queue, with a file descriptor
// as its wait object where the provider offers one (Sleep polls it),
// without one otherwise.
func (c *core) openCQ() error {
	size := C.size_t(c.txSlots + c.rxDepth + 1024)
	r := C.rg_cq_open(c.p.domain, size, 1, &c.cq)
	if r == 0 {
		var fd C.int
		if r := C.rg_cq_wait_fd(c.cq, &fd); r == 0 && fd >= 0 {
			c.waitFD = int(fd)
			return nil
		} else {
			c.p.log.Debug("libfabric: no wait descriptor of the completion queue", "provider", c.p.name, "err", fiError("fi_control(FI_GETWAIT)", int(-r), ""))
		}
		C.rg_close(C.rg_cq_fid(c.cq))
		c.cq = nil
	} else {
		c.p.log.Debug("libfabric: no completion queue with a wait descriptor", "provider", c.p.name, "err", fiError("fi_cq_open(FI_WAIT_FD)", int(-r), ""))
	}
	if r := C.rg_cq_open(c.p.domain, size, 0, &c.cq); r != 0 {
		return fiError("fi_cq_open", int(-r), "")
	}
	return nil
}

// Sleep implements transport.Endpoint: fi_trywait, then a wait for the
// completion queue's wait descriptor (transport.Sleeper).
func (e *Endpoint) Sleep(timeout time.Duration) error {
	e.mu.Lock()
	c := e.c
	if c.closed {
		e.mu.Unlock()
		return transport.ErrClosed
	}
	if c.waitFD < 0 {
		e.mu.Unlock()
		return fmt.Errorf("libfabric %s: %w: its completion queue has no wait descriptor", c.p.name, transport.ErrNotSupported)
	}
	if c.head < len(c.pending) || c.err != nil || (c.byeIn && !c.ackSent) || len(c.unposted) > 0 {
		e.mu.Unlock()
		return nil // Poll has something to do
	}
	unlock := c.rlock()
	c.p.landMu.RLock()
	r := C.rg_trywait(c.p.fabric, c.cq)
	c.p.landMu.RUnlock()
	unlock()
	fd := c.waitFD
	e.mu.Unlock()
	switch r {
	case 0:
	case -fiEAGAIN:
		return nil // completions to read
	default:
		return fiError("fi_trywait", int(-r), "")
	}
	return e.sl.Sleep(fd, unix.EPOLLIN, timeout)
}

// Wake implements transport.Endpoint.
func (e *Endpoint) Wake() {
	if e.sl != nil {
		e.sl.Wake()
	}
}

// closeSleeper closes the Sleeper, if the endpoint has one.
func (e *Endpoint) closeSleeper() {
	if e.sl != nil {
		e.sl.Close()
	}
}
