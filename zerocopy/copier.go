package zerocopy

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// Copier is a queue of asynchronous copies between host memory and the
// engine's device pools, for one user (the bridge gives one to each link):
// CopyIn copies host bytes into a loan, StageOut copies a sample's payload
// out to host memory. Each returns a Completion. The engine owns the CUDA
// side (a stream per copier, an event per copy in flight); the caller sees
// neither.
//
// A copier's copies run in the order queued and depend on nothing else:
// not on another copier's copies, nor on the rest of the process's device
// work (the stream does not synchronise with the legacy default stream).
// Waiting for a completion waits for that copy alone, never for the
// context, so users of different copiers never wait for each other.
//
// Host memory given to a copier (CopyIn's src, StageOut's dst) must lie
// outside the Go heap (mmap'd memory: a transport's registered region, a
// shared segment) and stay untouched until the copy's completion is done.
// Page-locked with Domain.PinHost, it is copied at full DMA speed and
// truly asynchronously.
//
// Host loans and samples with no device form need no device: their copies
// are plain copies, done when the call returns.
//
// A copy reads or writes a loan's or a sample's block until it is done:
// Publish, Discard and Sample.Return wait for the copies queued on them
// (their completions only) before giving the block to anyone else. Closing
// the endpoint, which takes its blocks back at once, must wait until the
// copies are done (Close the copier first).
//
// Its methods and its completions' are safe for concurrent use; the loans
// and samples they copy are not (one user at a time, as always). Close
// waits for every copy queued; later calls return ErrClosed.
type Copier struct {
	d   *Domain
	dev *cuda.Device // nil: host copies only (tests without a GPU)

	// mu guards the fields below. It is held while a copy is queued (a
	// short driver call that does not wait for the device), so the order
	// of pending is the stream's order.
	mu      sync.Mutex
	stream  *cuda.Stream
	pending []*Completion // queued, not known to be done, oldest first
	free    []*cuda.Event // events of retired completions, for reuse
	closed  bool
}

// Completion is the end of one copy queued on a Copier. Done reports
// whether it finished; Wait waits for it and returns its result. A nil
// *Completion, and the completion of a plain (host) copy, is done.
type Completion struct {
	cp *Copier // nil: done at creation (a host copy)

	// Guarded by cp.mu.
	ev      *cuda.Event // nil once retired with no Wait in flight on it
	done    bool
	err     error
	waiters int // Waits blocked on ev: it is not reused before they return
}

// doneCopy is the completion of a copy that ended before its call
// returned.
var doneCopy = &Completion{done: true}

// NewCopier creates a copier on the domain's GPU. Without a usable GPU it
// returns an error wrapping ErrNotSupported: then every loan and sample is
// host memory, and plain copies (Loan.CopyIn, Sample.Bytes) are what
// there is. Domain.Close closes the copiers still open.
func (d *Domain) NewCopier() (*Copier, error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	dev, err := d.gpu()
	if err != nil {
		return nil, err
	}
	s, err := dev.NewNonBlockingStream()
	if err != nil {
		return nil, fmt.Errorf("creating a copier's stream: %w", err)
	}
	c := &Copier{d: d, dev: dev, stream: s}
	if !d.addCopier(c) {
		s.Destroy()
		return nil, ErrClosed
	}
	return c, nil
}

// addCopier registers an open copier with the domain; false: the domain
// is closed.
func (d *Domain) addCopier(c *Copier) bool {
	d.gpuMu.Lock()
	defer d.gpuMu.Unlock()
	if d.closed.Load() {
		return false
	}
	if d.copiers == nil {
		d.copiers = map[*Copier]bool{}
	}
	d.copiers[c] = true
	return true
}

// closeCopiers closes the copiers still open (Domain.Close), the engine's
// own (copyForm's) included.
func (d *Domain) closeCopiers() {
	d.gpuMu.Lock()
	cs := make([]*Copier, 0, len(d.copiers))
	for c := range d.copiers {
		cs = append(cs, c)
	}
	d.gpuMu.Unlock()
	for _, c := range cs {
		c.Close()
	}
}

// CopyIn queues a copy of src into the loan dst at byte offset off: a
// host-to-device copy for a loan in the device pool, a plain copy (done on
// return) for a host loan. src must not change until the completion is
// done. The loan keeps the completion: Publish waits for it (and not for
// anything else on the device), Discard too.
func (c *Copier) CopyIn(dst *Loan, off int, src []byte) (*Completion, error) {
	if dst.done {
		return nil, fmt.Errorf("%w: loan already published or discarded", ErrInvalid)
	}
	if off < 0 || off > dst.size || len(src) > dst.size-off {
		return nil, fmt.Errorf("%w: %d bytes at offset %d of a %d-byte loan", ErrInvalid, len(src), off, dst.size)
	}
	p := dst.p
	if p.t.d != c.d {
		return nil, fmt.Errorf("%w: loan of another domain", ErrInvalid)
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	if !p.enter() {
		return nil, ErrClosed
	}
	defer p.exit()
	if !dst.dev {
		return doneCopy, p.t.copyGuarded(dst.data[off:], src)
	}
	if len(src) == 0 {
		return doneCopy, nil
	}
	to := dst.ptr + DevicePtr(off)
	x, err := c.queue(func(dev *cuda.Device, s *cuda.Stream) error { return dev.MemcpyHtoDAsync(cuda.DevicePtr(to), src, s) })
	if err != nil {
		return nil, fmt.Errorf("copying into the loan: %w", err)
	}
	dst.copies = track(dst.copies, x)
	return x, nil
}

// StageOut queues a copy of len(dst) bytes of the sample's payload, from
// byte offset off, into dst: a device-to-host copy when the sample has a
// device form, else a plain copy of its host bytes (done on return). The
// sample keeps the completion: Return waits for it.
func (c *Copier) StageOut(dst []byte, src *Sample, off int) (*Completion, error) {
	if src.done {
		return nil, fmt.Errorf("%w: sample already returned", ErrInvalid)
	}
	if off < 0 || uint64(off) > src.size || uint64(len(dst)) > src.size-uint64(off) {
		return nil, fmt.Errorf("%w: %d bytes at offset %d of a %d-byte sample", ErrInvalid, len(dst), off, src.size)
	}
	s := src.s
	t := s.t
	if t.d != c.d {
		return nil, fmt.Errorf("%w: sample of another domain", ErrInvalid)
	}
	if c.isClosed() {
		return nil, ErrClosed
	}
	if !s.enter() {
		return nil, ErrClosed
	}
	defer s.exit()
	if len(dst) == 0 {
		return doneCopy, nil
	}
	if !src.hasDev || c.dev == nil {
		if src.data == nil {
			if src.hasDev {
				return nil, fmt.Errorf("%w: a device sample needs a GPU copier", ErrNotSupported)
			}
			return nil, fmt.Errorf("%w: sample has no host bytes in this process", ErrInvalid)
		}
		return doneCopy, t.copyGuarded(dst, src.data[off:off+len(dst)])
	}
	base, err := t.deviceBase()
	if err != nil {
		return nil, err
	}
	from := base + DevicePtr(src.devOff) + DevicePtr(off)
	x, err := c.queue(func(dev *cuda.Device, s *cuda.Stream) error { return dev.MemcpyDtoHAsync(dst, cuda.DevicePtr(from), s) })
	if err != nil {
		return nil, fmt.Errorf("staging the sample out: %w", err)
	}
	src.copies = track(src.copies, x)
	return x, nil
}

func (c *Copier) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// track adds x to the copies a loan or sample waits for: one per copier,
// the latest (a copier's copies complete in order).
func track(cs []*Completion, x *Completion) []*Completion {
	for i, y := range cs {
		if y.cp == x.cp {
			cs[i] = x
			return cs
		}
	}
	return append(cs, x)
}

// waitAll waits for every completion of cs and returns the first error.
func waitAll(cs []*Completion) error {
	var first error
	for _, x := range cs {
		if err := x.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// queue queues op on the copier's stream and an event after it.
func (c *Copier) queue(op func(dev *cuda.Device, s *cuda.Stream) error) (*Completion, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.dev == nil {
		return nil, fmt.Errorf("%w: a host-only copier", ErrNotSupported)
	}
	var ev *cuda.Event
	if n := len(c.free); n > 0 {
		ev, c.free = c.free[n-1], c.free[:n-1]
	} else {
		var err error
		if ev, err = c.dev.NewEvent(); err != nil {
			return nil, err
		}
	}
	err := op(c.dev, c.stream)
	if err == nil {
		err = ev.Record(c.stream)
	}
	if err != nil {
		c.free = append(c.free, ev)
		return nil, err
	}
	x := &Completion{cp: c, ev: ev}
	c.pending = append(c.pending, x)
	return x, nil
}

// Done reports whether the copy finished (or failed: Wait returns its
// error at once). It does not wait.
func (x *Completion) Done() bool {
	if x == nil || x.cp == nil {
		return true
	}
	c := x.cp
	c.mu.Lock()
	defer c.mu.Unlock()
	if x.done {
		return true
	}
	ok, err := x.ev.Done()
	switch {
	case err != nil:
		c.fail(x, err)
		return true
	case ok:
		c.retire(x)
	}
	return ok
}

// Wait waits for the copy (cuEventSynchronize on its own event: nothing
// else on the device is waited for) and returns its error.
func (x *Completion) Wait() error {
	if x == nil || x.cp == nil {
		return nil
	}
	c := x.cp
	c.mu.Lock()
	if x.done {
		c.mu.Unlock()
		return x.err
	}
	ev := x.ev
	x.waiters++
	c.mu.Unlock()
	err := ev.Synchronize()
	c.mu.Lock()
	defer c.mu.Unlock()
	x.waiters--
	if !x.done {
		if err != nil {
			c.fail(x, err)
		} else {
			c.retire(x)
		}
	} else if x.waiters == 0 && x.ev != nil {
		c.release(x.ev)
		x.ev = nil
	}
	return x.err
}

// retire marks x and every copy queued before it done: the stream runs
// them in order. Must hold c.mu.
func (c *Copier) retire(x *Completion) {
	i := slices.Index(c.pending, x)
	if i < 0 {
		return
	}
	for _, y := range c.pending[:i+1] {
		y.done = true
		if y.waiters == 0 {
			c.release(y.ev)
			y.ev = nil
		}
	}
	c.pending = slices.Delete(c.pending, 0, i+1)
}

// fail marks x done with err; its event is not reused. Must hold c.mu.
func (c *Copier) fail(x *Completion, err error) {
	x.done, x.err = true, fmt.Errorf("device copy: %w", err)
	if i := slices.Index(c.pending, x); i >= 0 {
		c.pending = slices.Delete(c.pending, i, i+1)
	}
	if x.waiters == 0 {
		x.ev.Destroy()
		x.ev = nil
	}
}

// release keeps an event for reuse, or destroys it once the copier is
// closed. Must hold c.mu.
func (c *Copier) release(ev *cuda.Event) {
	if c.closed {
		ev.Destroy()
		return
	}
	c.free = append(c.free, ev)
}

// Close waits for every copy queued (their completions are done then) and
// releases the stream and the events. Later copies return ErrClosed; a
// second Close does nothing.
func (c *Copier) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	// No copy can be queued any more: once the stream is idle every
	// pending completion is done.
	var errs []error
	if c.stream != nil {
		if err := c.stream.Synchronize(); err != nil {
			errs = append(errs, fmt.Errorf("waiting for the copier's copies: %w", err))
		}
	}
	c.mu.Lock()
	for _, y := range c.pending {
		y.done = true
		if len(errs) > 0 {
			y.err = errs[0]
		}
		if y.waiters == 0 {
			y.ev.Destroy()
			y.ev = nil
		}
	}
	c.pending = nil
	for _, ev := range c.free {
		ev.Destroy()
	}
	c.free = nil
	c.mu.Unlock()
	if c.stream != nil {
		if err := c.stream.Destroy(); err != nil {
			errs = append(errs, err)
		}
	}
	c.d.gpuMu.Lock()
	delete(c.d.copiers, c)
	c.d.gpuMu.Unlock()
	return errors.Join(errs...)
}
