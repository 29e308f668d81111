package zerocopy

import (
	"errors"
	"fmt"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Publisher writes samples into a topic's pool and queues them for every
// matched subscription on this host. Its methods are safe for concurrent use.
// All methods return ErrClosed after Close.
type Publisher struct{ *endpoint }

// Loan is a writable block of a topic's pool lent to a publisher. Fill
// Bytes, then Publish it, or Discard it. A loan must not be used after
// either.
type Loan struct {
	p    *Publisher
	n    uint32
	data []byte
	size int
	off  uint64
	dev  bool // the block is in the device pool
	ptr  DevicePtr
	done bool
	// origin, when set (PublishAs), replaces the publisher's timestamp and
	// GID in the published sample.
	origin *Origin
	// copies are the copier copies into the block not known to be done
	// (the latest of each copier): Publish and Discard wait for them.
	copies []*Completion
	// untracked: the block's device address was handed out, so kernels
	// may write it on any stream: Publish synchronises the context, unless
	// the writer named the stream (WritesOn).
	untracked bool
	// syncCopy: a synchronous or device-to-device copy went into the block,
	// which may still run: Publish synchronises the context.
	syncCopy bool
	// stream, when onStream, is the application's stream the device writes
	// into the block were queued on (WritesOn).
	stream   uintptr
	onStream bool
	// trace, when set (PublishTraced), receives the publish's stages.
	trace *PublishTrace
}

// Bytes is the loaned host memory; nil for a device loan. Writes go straight
// to shared memory: there is no copy at publish time.
func (l *Loan) Bytes() []byte { return l.data }

// DevicePtr is the loan's device address: a block of the topic's GPU pool
// (LoanDevice on a GPU topic), or the mapped address of a host block, which
// kernels can write over PCIe. Valid in this process's context of
// Config.Device until Publish or Discard. Once it was asked for, Publish
// waits for all the device work of this process (cuCtxSynchronize): it
// cannot know which work writes the loan, unless WritesOn names the
// stream. A loan filled by a Copier only waits for the copier's
// completions.
func (l *Loan) DevicePtr() (DevicePtr, error) {
	l.untracked = true
	if l.ptr != 0 {
		return l.ptr, nil
	}
	if !l.p.enter() {
		return 0, ErrClosed
	}
	defer l.p.exit()
	return l.devicePtr()
}

func (l *Loan) devicePtr() (DevicePtr, error) {
	if l.ptr != 0 {
		return l.ptr, nil
	}
	base, err := l.p.t.hostDeviceBase()
	if err != nil {
		return 0, err
	}
	l.ptr = base + DevicePtr(l.off)
	return l.ptr, nil
}

// Offset is the loan's offset in its pool (what crosses processes).
func (l *Loan) Offset() uint64 { return l.off }

// Size is the size asked for.
func (l *Loan) Size() int { return l.size }

// OnDevice reports whether the loan is in the topic's device pool.
func (l *Loan) OnDevice() bool { return l.dev }

// NewPublisher creates a publisher on spec.Topic, creating the topic when
// it does not exist on this host.
func (d *Domain) NewPublisher(spec EndpointSpec) (*Publisher, error) {
	e, err := d.createEndpoint(spec, KindPublisher)
	if err != nil {
		return nil, err
	}
	if lg := d.cfg.Logger; lg != nil {
		lg.Info("publisher created", "topic", spec.Topic, "path", e.t.lay.poolKind.Path(), "qos", e.qos.String())
	}
	return &Publisher{e}, nil
}

// Close destroys the publisher; its unpublished loans are returned.
func (p *Publisher) Close() error { return p.close() }

func (p *Publisher) reliable() bool { return p.qos.Reliability == qos.ReliabilityReliable }

// waitSpace blocks until the topic frees something (a block, a sample, a
// queue slot) or the deadline passes, reclaiming dead endpoints meanwhile.
// The caller has counted itself in spaceWaiters before it read seen and
// found no room (announceSpace): whoever frees room after that check sees
// the count and moves spaceSeq (wakeSpace), so the wait cannot miss it.
func (p *Publisher) waitSpace(seen uint32, deadline time.Time) bool {
	left := time.Until(deadline)
	if left <= 0 || p.closed.Load() || p.t.check() != nil {
		return false // Close is waiting for this call, or the topic is lost: give up now
	}
	t := p.t
	err := shm.Wait(t.spaceSeq, seen, min(left, 50*time.Millisecond))
	if err == shm.ErrTimeout {
		t.reclaimDead()
	}
	return true
}

// Loan lends size bytes of the topic pool. When the pool is full, a
// RELIABLE publisher waits up to Config.BlockTimeout for room and then
// returns ErrPoolExhausted; a BEST_EFFORT one returns it at once and counts
// a drop. A size larger than the pool returns ErrTooLarge; zero returns
// ErrInvalid.
//
// Loan is small enough to be inlined, so a caller that publishes or
// discards the loan without keeping it has it on its own stack: the loan
// path allocates nothing on the Go heap.
func (p *Publisher) Loan(size int) (*Loan, error) {
	l := new(Loan)
	if err := p.loanInto(l, size); err != nil {
		return nil, err
	}
	return l, nil
}

func (p *Publisher) loanInto(l *Loan, size int) error {
	if !p.enter() {
		return ErrClosed
	}
	defer p.exit()
	return p.loan(l, size, false)
}

// LoanDevice lends size bytes of device memory: a block of the topic's GPU
// pool, or on a host topic a host block the device can write through its
// mapped address. Fill it with kernels (DevicePtr) or a Copier, then
// Publish: no subscriber sees the data before the writes completed (see
// Publish). Without a GPU it returns an error wrapping ErrNotSupported.
func (p *Publisher) LoanDevice(size int) (*Loan, error) {
	if !p.enter() {
		return nil, ErrClosed
	}
	defer p.exit()
	return p.loanDevice(size)
}

func (p *Publisher) loanDevice(size int) (*Loan, error) {
	if _, err := p.t.d.gpu(); err != nil {
		return nil, err
	}
	l := new(Loan)
	if err := p.loan(l, size, true); err != nil {
		return nil, err
	}
	if !l.dev {
		if _, err := l.devicePtr(); err != nil {
			l.done = true
			p.dropLoan(l.n)
			return nil, err
		}
	}
	return l, nil
}

// PublishFrom publishes size bytes from src, device memory of this process
// (the thesis' publisher_push): one device-to-device copy into a loan of the
// pool, then Publish.
func (p *Publisher) PublishFrom(src DevicePtr, size int) error {
	if !p.enter() {
		return ErrClosed
	}
	defer p.exit()
	l, err := p.loanDevice(size)
	if err != nil {
		return err
	}
	dev, _ := p.t.d.gpu()
	dst, _ := l.devicePtr()
	l.done, l.syncCopy = true, true // the copy is asynchronous
	if err := dev.MemcpyDtoD(cuda.DevicePtr(dst), cuda.DevicePtr(src), uint64(size)); err != nil {
		p.dropLoan(l.n)
		return fmt.Errorf("copying into the loan: %w", err)
	}
	return l.publishEntered()
}

// loan lends a block into l (zero); the caller has entered.
func (p *Publisher) loan(l *Loan, size int, dev bool) (err error) {
	if size <= 0 {
		return fmt.Errorf("%w: loan of %d bytes", ErrInvalid, size)
	}
	t := p.t
	defer t.unguard(guard(), &err)
	n, err := p.newSample(uint64(size), dev)
	if err != nil {
		return err
	}
	l.p, l.n, l.size, l.dev = p, n, size, dev && t.dalloc != nil
	if l.dev {
		base, err := t.deviceBase()
		if err != nil {
			l.done = true
			p.dropLoan(n)
			return err
		}
		l.off = t.u64(t.sampleOff(n) + sDevOffset).Load()
		l.ptr = base + DevicePtr(l.off)
	} else {
		l.off = t.u64(t.sampleOff(n) + sOffset).Load()
		l.data = t.pool[l.off : l.off+uint64(size) : l.off+uint64(size)]
	}
	return nil
}

// newSample makes a sample of size bytes held by the publisher, waiting for
// room as withSpace says.
func (p *Publisher) newSample(size uint64, dev bool) (uint32, error) {
	t := p.t
	if err := t.lock(); err != nil {
		return 0, err
	}
	n, err := t.newSample(p.slot, size, dev)
	t.unlock()
	if err == nil || !errors.Is(err, ErrPoolExhausted) {
		return n, err // the hot path: one lock, no closure, no clock
	}
	err = p.withSpace(func() (err error) {
		n, err = t.newSample(p.slot, size, dev)
		return err
	})
	return n, err
}

// withSpace runs alloc under the topic lock until it does not fail with
// ErrPoolExhausted: a RELIABLE publisher waits up to Config.BlockTimeout
// for room, a BEST_EFFORT one counts a drop and returns the error at once.
// The caller has entered.
func (p *Publisher) withSpace(alloc func() error) error {
	t := p.t
	t.spaceWaiters.Add(1) // before every check below (waitSpace)
	defer t.spaceWaiters.Add(^uint32(0))
	var deadline time.Time
	for {
		seen := t.spaceSeq.Load()
		if err := t.lock(); err != nil {
			return err
		}
		err := alloc()
		t.unlock()
		if err == nil || !errors.Is(err, ErrPoolExhausted) {
			return err
		}
		if !p.reliable() {
			t.u64(t.slotOff(p.slot) + eLost).Add(1)
			t.u64(hDrops).Add(1)
			return err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(t.d.cfg.BlockTimeout)
		}
		if !p.waitSpace(seen, deadline) {
			if cerr := t.check(); cerr != nil {
				return cerr
			}
			return fmt.Errorf("%w (waited %v)", err, t.d.cfg.BlockTimeout)
		}
	}
}

// Discard returns an unpublished loan to the pool, once the copier copies
// into it are done.
func (l *Loan) Discard() (err error) {
	if l.done {
		return fmt.Errorf("%w: loan already published or discarded", ErrInvalid)
	}
	l.done = true
	if !l.p.enter() {
		return ErrClosed // Close gave every loan back already
	}
	defer l.p.exit()
	werr := waitAll(l.copies) // a copy still running must not land in the block's next user
	l.copies = nil
	err = l.p.t.release(l.p.slot, l.n, "loan is not held by this publisher (reclaimed?)")
	if werr != nil {
		err = errors.Join(werr, err)
	}
	return err
}

// release gives back sample n, held by slot (a loan discarded, a sample
// returned), under the lock; notHeld describes the error when slot does
// not hold it. The caller has entered.
func (t *Topic) release(slot, n uint32, notHeld string) (err error) {
	defer t.unguard(guard(), &err)
	if err := t.lock(); err != nil {
		return err
	}
	defer t.unlock()
	if !t.dropHeld(slot, n) {
		return fmt.Errorf("%w: %s", ErrInvalid, notHeld)
	}
	t.unref(n)
	return nil
}

// Publish publishes the loan to every matched subscription; the loan is
// consumed whatever the result. A RELIABLE publisher with a matched
// reliable KEEP_ALL subscription whose queue is full waits up to
// BlockTimeout and then returns ErrQueueFull; nothing is delivered then.
//
// The sample is queued only once the device writes into the loan
// completed: the copies of Copiers into it, waited for by their own
// completions, and, if the loan's device address was handed out
// (DevicePtr) or a synchronous or device-to-device copy went into it
// (CopyIn on a device loan, PublishFrom), all the device work of this
// process (cuCtxSynchronize). A loan filled by Copiers alone never waits
// for the rest of the device; one whose writer named its stream
// (WritesOn) waits for an event recorded on that stream instead of the
// context.
func (l *Loan) Publish() error {
	if l.done {
		return fmt.Errorf("%w: loan already published or discarded", ErrInvalid)
	}
	l.done = true
	if !l.p.enter() {
		return ErrClosed // Close gave every loan back already
	}
	defer l.p.exit()
	return l.publishEntered()
}

// publishEntered publishes a loan already marked done; the caller entered.
func (l *Loan) publishEntered() error {
	// The device may still be writing: the data must be complete before
	// any subscriber can see the sample.
	err := waitAll(l.copies)
	l.copies = nil
	if err == nil {
		err = l.waitDevice()
	}
	if err != nil {
		l.p.dropLoan(l.n)
		return fmt.Errorf("waiting for the device writes: %w", err)
	}
	if tr := l.trace; tr != nil {
		tr.mark(&tr.Writes)
		tr.Forms = tr.Writes
	}
	return l.p.publish(l.n, l.origin, l.trace)
}

// Origin is where a message really comes from, for a republishing
// publisher (EndpointSpec.Republish) that carries it in from elsewhere
// (the bridge: from another host): subscribers see this source timestamp
// and publisher GID in MessageInfo instead of the republisher's.
type Origin struct {
	Timestamp time.Time
	GID       GID
}

// PublishAs publishes the loan like Publish (waiting for the same
// device writes, and no others), stamped with o.
func (l *Loan) PublishAs(o Origin) error {
	l.origin = &o
	return l.Publish()
}

// CopyIn copies src into the loan at byte offset off: a plain copy for a
// host loan, a host-to-device copy for a device loan (synchronous: src may
// be reused when it returns; Publish then synchronises the context, as the
// DMA from pageable memory may still run). For writers whose data is in
// host memory but whose loan may be on the GPU; Copier.CopyIn is the
// asynchronous form (the bridge placing messages from another host).
func (l *Loan) CopyIn(off int, src []byte) error {
	if l.done {
		return fmt.Errorf("%w: loan already published or discarded", ErrInvalid)
	}
	if off < 0 || off > l.size || len(src) > l.size-off {
		return fmt.Errorf("%w: %d bytes at offset %d of a %d-byte loan", ErrInvalid, len(src), off, l.size)
	}
	if !l.dev {
		if !l.p.enter() {
			return ErrClosed
		}
		defer l.p.exit()
		return l.p.t.copyGuarded(l.data[off:], src)
	}
	if !l.p.enter() {
		return ErrClosed
	}
	defer l.p.exit()
	dev, err := l.p.t.d.gpu()
	if err != nil {
		return err
	}
	l.syncCopy = true
	return dev.MemcpyHtoD(cuda.DevicePtr(l.ptr+DevicePtr(off)), src)
}

// Shrink reduces the size the loan will be published with to n bytes
// (0 < n ≤ Size), for a writer that reserved an upper bound; the block
// keeps its size until the sample is freed.
func (l *Loan) Shrink(n int) (err error) {
	if l.done {
		return fmt.Errorf("%w: loan already published or discarded", ErrInvalid)
	}
	if n <= 0 || n > l.size {
		return fmt.Errorf("%w: shrink a %d-byte loan to %d bytes", ErrInvalid, l.size, n)
	}
	if !l.p.enter() {
		return ErrClosed
	}
	defer l.p.exit()
	defer l.p.t.unguard(guard(), &err)
	l.size = n
	if l.data != nil {
		l.data = l.data[:n:n]
	}
	l.p.t.u64(l.p.t.sampleOff(l.n) + sSize).Store(uint64(n))
	return nil
}

// copyGuarded copies src into dst, a slice of t's pool, turning a fault on
// the pool (its file truncated) into t's error.
func (t *Topic) copyGuarded(dst, src []byte) (err error) {
	defer t.unguard(guard(), &err)
	copy(dst, src)
	return nil
}

// dropLoan returns a held sample (a loan that will not be published).
func (p *Publisher) dropLoan(n uint32) {
	t := p.t
	defer t.unguard(guard(), nil)
	if t.lock() != nil {
		return
	}
	if t.dropHeld(p.slot, n) {
		t.unref(n)
	}
	t.unlock()
}

// Publish copies data into a loan and publishes it: for callers that do not
// write into the pool directly. Without matched subscriptions (and no
// transient-local history) nothing is copied. A BEST_EFFORT publisher whose
// pool is full drops the message, counts it, and returns nil.
func (p *Publisher) Publish(data []byte) (err error) {
	if len(data) == 0 {
		return fmt.Errorf("%w: empty message", ErrInvalid)
	}
	if !p.enter() {
		return ErrClosed
	}
	defer p.exit()
	defer p.t.unguard(guard(), &err)
	if p.capacityZero() && p.matched() == 0 {
		p.t.u64(p.t.slotOff(p.slot) + eSeq).Add(1)
		p.noteData(time.Now())
		return nil
	}
	var l Loan // never leaves this call: on the stack
	if err := p.loan(&l, len(data), false); err != nil {
		if errors.Is(err, ErrPoolExhausted) && !p.reliable() {
			return nil
		}
		return err
	}
	l.done = true
	if err := p.t.copyGuarded(l.data, data); err != nil {
		return err
	}
	return l.publishEntered()
}

func (p *Publisher) capacityZero() bool { return p.t.u32(p.t.slotOff(p.slot)+eCap).Load() == 0 }

func (p *Publisher) noteData(now time.Time) {
	p.mu.Lock()
	p.checkDeadline(now)
	p.lastData = now
	p.mu.Unlock()
}

// publish queues held sample n for every matched subscription, recording
// its stages in tr unless nil; the caller has entered.
func (p *Publisher) publish(n uint32, origin *Origin, tr *PublishTrace) (err error) {
	t := p.t
	defer t.unguard(guard(), &err)
	so := t.slotOff(p.slot)
	var deadline time.Time
	// announced: counted in spaceWaiters, which a publish that has to
	// wait does before it checks again (waitSpace).
	announced := false
	defer func() {
		if announced {
			t.spaceWaiters.Add(^uint32(0))
		}
	}()
	for {
		seen := t.spaceSeq.Load()
		peers, gen := p.peersNow()
		if err := t.lock(); err != nil {
			return err
		}
		if tr != nil {
			tr.mark(&tr.Locked)
		}
		if t.generation.Load() != gen {
			t.unlock() // an endpoint came or went since the refresh
			continue
		}
		// Every ring this publish appends to must be sound first (so a
		// damaged one delivers to nobody, rather than to some).
		for _, pi := range peers {
			if err := t.ringOK(pi.slot); err != nil {
				t.unlock()
				return err
			}
		}
		if err := t.ringOK(p.slot); err != nil {
			t.unlock()
			return err
		}
		if st := sampleState(t.u32(t.sampleOff(n) + sState).Load()); st != sampleLoaned {
			t.unlock()
			return t.markCorrupt("loaned sample %d is in state %d", n, st)
		}
		blocked := false
		for _, pi := range peers {
			if pi.blocking && t.ringLen(pi.slot) >= uint64(t.u32(t.slotOff(pi.slot)+eCap).Load()) {
				blocked = true
				break
			}
		}
		if blocked {
			t.unlock()
			if !announced {
				announced = true
				t.spaceWaiters.Add(1)
				continue
			}
			if deadline.IsZero() {
				deadline = time.Now().Add(t.d.cfg.BlockTimeout)
			}
			if !p.waitSpace(seen, deadline) {
				if cerr := t.check(); cerr != nil {
					return cerr
				}
				p.dropLoan(n)
				return fmt.Errorf("topic %s: %w (waited %v)", t.name, ErrQueueFull, t.d.cfg.BlockTimeout)
			}
			continue
		}
		if dev, ok := t.missingForm(n, peers); ok {
			// Make the form some reader needs, once for all of them: the
			// block is attached under the lock, the copy runs outside it
			// (the sample is still only ours).
			err := t.addBlock(n, dev, t.u64(t.sampleOff(n)+sSize).Load())
			t.unlock()
			if errors.Is(err, ErrPoolExhausted) && p.reliable() {
				if !announced {
					announced = true
					t.spaceWaiters.Add(1)
					continue
				}
				if deadline.IsZero() {
					deadline = time.Now().Add(t.d.cfg.BlockTimeout)
				}
				if p.waitSpace(seen, deadline) {
					continue
				}
			}
			if err == nil {
				err = t.copyForm(n, dev, false)
			}
			if tr != nil {
				tr.mark(&tr.Forms)
			}
			if err != nil {
				p.dropLoan(n)
				if errors.Is(err, ErrPoolExhausted) && !p.reliable() {
					t.u64(so + eLost).Add(1)
					t.u64(hDrops).Add(1)
					return nil
				}
				return fmt.Errorf("topic %s: making the %s copy: %w", t.name, formName(dev), err)
			}
			continue
		}
		if !t.dropHeld(p.slot, n) {
			t.unlock()
			return fmt.Errorf("%w: loan is not held by this publisher (reclaimed?)", ErrInvalid)
		}
		now := time.Now()
		stamp, gid := now, p.gid
		if origin != nil {
			stamp, gid = origin.Timestamp, origin.GID
		}
		// The record is still only ours: plain stores (set64), which the
		// ring entries' atomic stores below publish.
		smp := t.sampleOff(n)
		t.set64(smp+sSeq, t.u64(so+eSeq).Add(1))
		t.set64(smp+sStamp, uint64(stamp.UnixNano()))
		var exp int64
		if p.qos.Lifespan > 0 {
			exp = now.Add(p.qos.Lifespan).UnixNano()
		}
		t.set64(smp+sExpires, uint64(exp))
		copy(t.seg.Bytes(smp+sGID, 16), gid[:])
		t.set32(smp+sState, uint32(samplePublished))
		for _, pi := range peers {
			t.pushRing(pi.slot, n, true)
		}
		if t.u32(so+eCap).Load() != 0 {
			t.pushRing(p.slot, n, false) // transient-local history
		}
		t.unref(n) // the publisher's own (held) reference
		t.unlock()
		if tr == nil {
			t.wakeSubscribers()
		} else {
			tr.mark(&tr.Queued)
			tr.Readers = len(peers)
			tr.Slept = t.wakeSubscribers()
			tr.mark(&tr.Woken)
		}
		p.noteData(now)
		return nil
	}
}

// SequenceNumber is the last sequence number the publisher assigned.
func (p *Publisher) SequenceNumber() uint64 {
	if !p.enter() {
		return 0
	}
	defer p.exit()
	defer p.t.unguard(guard(), nil)
	return p.t.u64(p.t.slotOff(p.slot) + eSeq).Load()
}

// Drops is how many messages this publisher dropped for lack of room.
func (p *Publisher) Drops() uint64 {
	if !p.enter() {
		return 0
	}
	defer p.exit()
	defer p.t.unguard(guard(), nil)
	return p.t.u64(p.t.slotOff(p.slot) + eLost).Load()
}
