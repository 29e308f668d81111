package zerocopy

import (
	"errors"
	"fmt"
	"time"

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
	off  uint64
	done bool
}

// Bytes is the loaned memory (host pools). Writes go straight to shared
// memory: there is no copy at publish time.
func (l *Loan) Bytes() []byte { return l.data }

// Offset is the loan's offset in the topic pool (what crosses processes).
func (l *Loan) Offset() uint64 { return l.off }

// Size is the size asked for.
func (l *Loan) Size() int { return len(l.data) }

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
func (p *Publisher) waitSpace(seen uint32, deadline time.Time) bool {
	left := time.Until(deadline)
	if left <= 0 {
		return false
	}
	t := p.t
	t.spaceWaiters.Add(1)
	err := shm.Wait(t.spaceSeq, seen, min(left, 50*time.Millisecond))
	t.spaceWaiters.Add(^uint32(0))
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
func (p *Publisher) Loan(size int) (*Loan, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	if size <= 0 {
		return nil, fmt.Errorf("%w: loan of %d bytes", ErrInvalid, size)
	}
	t := p.t
	var deadline time.Time
	for {
		seen := t.spaceSeq.Load()
		if err := t.lock(); err != nil {
			return nil, err
		}
		n, err := t.newSample(p.slot, uint64(size))
		t.unlock()
		if err == nil {
			off := t.u64(t.sampleOff(n) + sOffset).Load()
			l := &Loan{p: p, n: n, off: off}
			if t.pool != nil {
				l.data = t.pool[off : off+uint64(size) : off+uint64(size)]
			}
			return l, nil
		}
		if !errors.Is(err, ErrPoolExhausted) {
			return nil, err
		}
		if !p.reliable() {
			t.u64(t.slotOff(p.slot) + eLost).Add(1)
			t.u64(hDrops).Add(1)
			return nil, err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(t.d.cfg.BlockTimeout)
		}
		if !p.waitSpace(seen, deadline) {
			return nil, fmt.Errorf("%w (waited %v)", err, t.d.cfg.BlockTimeout)
		}
	}
}

// Discard returns an unpublished loan to the pool.
func (l *Loan) Discard() error {
	if l.done {
		return fmt.Errorf("%w: loan already published or discarded", ErrInvalid)
	}
	l.done = true
	t := l.p.t
	if err := t.lock(); err != nil {
		return err
	}
	defer t.unlock()
	if !t.dropHeld(l.p.slot, l.n) {
		return fmt.Errorf("%w: loan is not held by this publisher (reclaimed?)", ErrInvalid)
	}
	t.unref(l.n)
	return nil
}

// Publish publishes the loan to every matched subscription; the loan is
// consumed whatever the result. A RELIABLE publisher with a matched
// reliable KEEP_ALL subscription whose queue is full waits up to
// BlockTimeout and then returns ErrQueueFull; nothing is delivered then.
func (l *Loan) Publish() error {
	if l.done {
		return fmt.Errorf("%w: loan already published or discarded", ErrInvalid)
	}
	l.done = true
	return l.p.publish(l.n)
}

// Publish copies data into a loan and publishes it: for callers that do not
// write into the pool directly. Without matched subscriptions (and no
// transient-local history) nothing is copied. A BEST_EFFORT publisher whose
// pool is full drops the message, counts it, and returns nil.
func (p *Publisher) Publish(data []byte) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if len(data) == 0 {
		return fmt.Errorf("%w: empty message", ErrInvalid)
	}
	if p.capacityZero() && p.Matched() == 0 {
		p.t.u64(p.t.slotOff(p.slot) + eSeq).Add(1)
		p.noteData()
		return nil
	}
	l, err := p.Loan(len(data))
	if err != nil {
		if errors.Is(err, ErrPoolExhausted) && !p.reliable() {
			return nil
		}
		return err
	}
	copy(l.data, data)
	return l.Publish()
}

func (p *Publisher) capacityZero() bool { return p.t.u32(p.t.slotOff(p.slot)+eCap).Load() == 0 }

func (p *Publisher) noteData() {
	p.mu.Lock()
	p.checkDeadline(time.Now())
	p.lastData = time.Now()
	p.mu.Unlock()
}

func (p *Publisher) publish(n uint32) error {
	if p.closed.Load() {
		return ErrClosed
	}
	t := p.t
	so := t.slotOff(p.slot)
	var deadline time.Time
	for {
		seen := t.spaceSeq.Load()
		p.mu.Lock()
		p.refreshMatches()
		peers, gen := p.peers, p.matchGen
		p.mu.Unlock()
		if err := t.lock(); err != nil {
			return err
		}
		if t.generation.Load() != gen {
			t.unlock() // an endpoint came or went since the refresh
			continue
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
			if deadline.IsZero() {
				deadline = time.Now().Add(t.d.cfg.BlockTimeout)
			}
			if !p.waitSpace(seen, deadline) {
				if err := t.lock(); err == nil {
					if t.dropHeld(p.slot, n) {
						t.unref(n)
					}
					t.unlock()
				}
				return fmt.Errorf("topic %s: %w (waited %v)", t.name, ErrQueueFull, t.d.cfg.BlockTimeout)
			}
			continue
		}
		if !t.dropHeld(p.slot, n) {
			t.unlock()
			return fmt.Errorf("%w: loan is not held by this publisher (reclaimed?)", ErrInvalid)
		}
		now := time.Now()
		smp := t.sampleOff(n)
		t.u64(smp + sSeq).Store(t.u64(so + eSeq).Add(1))
		t.u64(smp + sStamp).Store(uint64(now.UnixNano()))
		var exp int64
		if p.qos.Lifespan > 0 {
			exp = now.Add(p.qos.Lifespan).UnixNano()
		}
		t.u64(smp + sExpires).Store(uint64(exp))
		copy(t.seg.Bytes(smp+sGID, 16), p.gid[:])
		t.u32(smp + sState).Store(uint32(samplePublished))
		for _, pi := range peers {
			t.pushRing(pi.slot, n, true)
		}
		if t.u32(so+eCap).Load() != 0 {
			t.pushRing(p.slot, n, false) // transient-local history
		}
		t.unref(n) // the publisher's own (held) reference
		t.unlock()
		t.wakeSubscribers()
		p.noteData()
		return nil
	}
}

// SequenceNumber is the last sequence number the publisher assigned.
func (p *Publisher) SequenceNumber() uint64 { return p.t.u64(p.t.slotOff(p.slot) + eSeq).Load() }

// Drops is how many messages this publisher dropped for lack of room.
func (p *Publisher) Drops() uint64 { return p.t.u64(p.t.slotOff(p.slot) + eLost).Load() }
