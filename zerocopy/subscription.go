package zerocopy

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// Subscription receives the samples published on a topic on this host. Its
// methods are safe for concurrent use. All methods return ErrClosed after
// Close.
type Subscription struct{ *endpoint }

// Sample is a taken message. Its bytes stay valid, in shared memory, until
// Return; they must not be modified (other subscriptions read the same
// bytes).
type Sample struct {
	s       *Subscription
	n       uint32
	data    []byte
	meta    []byte // Meta: the read-only view of the meta block, or nil
	size    uint64
	devOff  uint64
	hasDev  bool
	hasHost bool
	info    MessageInfo
	done    bool
	// copies are the copier copies out of the block not known to be done
	// (the latest of each copier): Return waits for them.
	copies []*Completion
}

// MessageInfo is what rmw_message_info_t carries.
type MessageInfo struct {
	SourceTimestamp   time.Time
	ReceivedTimestamp time.Time
	Sequence          uint64 // the publisher's sequence number
	Publisher         GID
	Offset            uint64 // offset of the payload in the topic pool
}

// Bytes is the payload, read in place from the host pool through a
// read-only mapping: writing to it faults. It is nil after Return, and nil
// for a GPU subscription's sample of a GPU topic that no host reader needed
// (use DevicePtr).
func (s *Sample) Bytes() []byte { return s.data }

// Size is the payload size.
func (s *Sample) Size() int { return int(s.size) }

// DevicePtr is the payload's device address, valid in this process's
// context of Config.Device until Return: a block of the topic's GPU pool,
// or on a host topic the mapped address of the host block (kernels read it
// in place over PCIe). The subscriber never sees a sample before the
// publisher's device writes completed (Loan.Publish waits for them first).
func (s *Sample) DevicePtr() (DevicePtr, error) {
	if s.done {
		return 0, fmt.Errorf("%w: sample already returned", ErrInvalid)
	}
	if !s.s.enter() {
		return 0, ErrClosed
	}
	defer s.s.exit()
	t := s.s.t
	if s.hasDev {
		base, err := t.deviceBase()
		if err != nil {
			return 0, err
		}
		return base + DevicePtr(s.devOff), nil
	}
	base, err := t.hostDeviceBase()
	if err != nil {
		return 0, err
	}
	return base + DevicePtr(s.info.Offset), nil
}

// Info describes the sample.
func (s *Sample) Info() MessageInfo { return s.info }

// NewSubscription creates a subscription on spec.Topic. A TRANSIENT_LOCAL
// subscription receives at once the last Depth samples of every matching
// transient-local publisher.
func (d *Domain) NewSubscription(spec EndpointSpec) (*Subscription, error) {
	e, err := d.createEndpoint(spec, KindSubscription)
	if err != nil {
		return nil, err
	}
	if lg := d.cfg.Logger; lg != nil {
		lg.Info("subscription created", "topic", spec.Topic, "path", e.t.lay.poolKind.Path(), "qos", e.qos.String())
	}
	return &Subscription{e}, nil
}

// Close destroys the subscription; queued samples are dropped and samples
// not yet returned are released.
func (s *Subscription) Close() error { return s.close() }

// Ready reports whether a sample is queued (without taking the lock).
func (s *Subscription) Ready() bool {
	if !s.enter() {
		return false
	}
	defer s.exit()
	return s.ready()
}

// ready reports a queued sample, or a damaged topic: either way Take has
// something to say (the damage as ErrCorrupt), so waits end.
func (s *Subscription) ready() (ok bool) {
	if s.closed.Load() {
		return false
	}
	t := s.t
	prev := guard()
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			t.d.recovered(t, r)
			ok = true
		}
	}()
	return t.check() != nil || t.ringLen(s.slot) > 0
}

// Take removes the oldest queued sample, or returns ErrNoData. Samples whose
// lifespan has passed are discarded on the way.
//
// Like Publisher.Loan, Take is inlined: a caller that returns the sample
// without keeping it has it on its own stack.
func (s *Subscription) Take() (*Sample, error) {
	smp := new(Sample)
	if err := s.takeInto(smp); err != nil {
		return nil, err
	}
	return smp, nil
}

func (s *Subscription) takeInto(smp *Sample) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.exit()
	return s.take(smp)
}

// HostPool is the topic's host pool as this process maps it for reading
// (read-only): every taken sample's Bytes lie inside it, at
// MessageInfo.Offset. A republishing subscription that carries samples
// out (the bridge) registers it once with its transport, so samples are
// sent from where they lie instead of copied first. Valid until Close.
func (s *Subscription) HostPool() []byte { return s.t.rpool }

// Return gives the sample back, once the copier copies out of it
// (StageOut) are done; its block is freed when no other subscription holds
// or queues it.
func (smp *Sample) Return() (err error) {
	if smp.done {
		return fmt.Errorf("%w: sample already returned", ErrInvalid)
	}
	smp.done = true
	smp.data, smp.meta = nil, nil
	if !smp.s.enter() {
		return ErrClosed // Close released every taken sample already
	}
	defer smp.s.exit()
	werr := waitAll(smp.copies) // a copy still reading the block
	smp.copies = nil
	err = smp.s.t.release(smp.s.slot, smp.n, "sample is not held by this subscription (closed?)")
	if werr != nil {
		err = errors.Join(werr, err)
	}
	return err
}

// Wait blocks until a sample is queued or the timeout passes (negative:
// forever); it returns ErrTimeout then. With Config.BusyPoll it spins first.
func (s *Subscription) Wait(timeout time.Duration) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.exit()
	return s.wait(timeout)
}

func (s *Subscription) wait(timeout time.Duration) (err error) {
	defer s.t.unguard(guard(), &err)
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	t := s.t
	if bp := t.d.cfg.BusyPoll; bp > 0 {
		end := time.Now().Add(bp)
		for i := 0; ; i++ {
			if s.ready() {
				return nil
			}
			if i&63 == 63 {
				if time.Now().After(end) {
					break
				}
				runtime.Gosched()
			}
		}
	}
	for {
		if s.closed.Load() {
			return ErrClosed
		}
		if err := t.check(); err != nil {
			return err
		}
		fenced := shm.Fences()
		seen := t.pubSeq.Load()
		if s.ready() {
			return nil
		}
		// Waits for data as long as asked: a topic whose file was
		// truncated under this process is noticed by the janitor, whose
		// wake cannot reach a futex on the lost pages; its fence wakes
		// the wait instead (shm.WaitFenced).
		left := time.Duration(-1)
		if timeout >= 0 {
			left = time.Until(deadline)
			if left <= 0 {
				return ErrTimeout
			}
		}
		t.pubWaiters.Add(1)
		shm.WaitFenced1(t.pubSeq, seen, fenced, left)
		t.pubWaiters.Add(^uint32(0))
	}
}

// TakeWait waits up to timeout for a sample and takes it.
func (s *Subscription) TakeWait(timeout time.Duration) (*Sample, error) {
	smp := new(Sample)
	if err := s.takeWaitInto(smp, timeout); err != nil {
		return nil, err
	}
	return smp, nil
}

func (s *Subscription) takeWaitInto(smp *Sample, timeout time.Duration) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.exit()
	deadline := time.Now().Add(timeout)
	for {
		err := s.take(smp)
		if err != ErrNoData {
			return err
		}
		left := time.Duration(-1)
		if timeout >= 0 {
			if left = time.Until(deadline); left <= 0 {
				return ErrTimeout
			}
		}
		if err := s.wait(left); err != nil {
			return err
		}
	}
}

// Lost is how many samples this subscription lost (KEEP_LAST overwrite, or
// a best-effort overflow).
func (s *Subscription) Lost() uint64 {
	if !s.enter() {
		return 0
	}
	defer s.exit()
	defer s.t.unguard(guard(), nil)
	return s.t.u64(s.t.slotOff(s.slot) + eLost).Load()
}

// DropMalformed counts a message the caller took and could not decode (a
// front end's deserialiser refused it): front ends drop such messages
// rather than fail a take, and graph queries report the count
// (EndpointInfo.Malformed) so that a bad publisher can be found. It
// returns the new count.
func (s *Subscription) DropMalformed() uint64 {
	if !s.enter() {
		return 0
	}
	defer s.exit()
	defer s.t.unguard(guard(), nil)
	return s.t.u64(s.t.slotOff(s.slot) + eMalformed).Add(1)
}
