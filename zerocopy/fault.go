package zerocopy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// Damage to a topic, and how every process learns of it.
//
// Two kinds of damage are told apart:
//
//   - The segment's contents are not a valid state (a word written by
//     something other than this engine, or a repair that could not undo a
//     death). markCorrupt sets the header's state word to topicCorrupt and
//     wakes every waiter of every process: each operation of each process on
//     the topic then fails with ErrCorrupt (lock, and the lock-free waits,
//     check the word).
//   - The mapping itself is gone: the file was truncated under it (touching
//     the lost pages raises SIGBUS), or its name now names another file.
//     This process notices it on a fault, or in the janitor's audit (fstat
//     every JanitorPeriod), and breaks the topic locally (broken): its pages
//     are replaced by private zero pages (shm.Segment.Fence), so slices still
//     held by callers stop faulting, and every later call fails with
//     ErrCorrupt. Other processes find out the same way.
//
// Faults: every call that touches a mapping runs with the goroutine's
// panic-on-fault flag set (guard, then unguard deferred), so a SIGBUS or
// SIGSEGV on a topic's mapping becomes a panic that unguard turns into the
// topic's error; a fault anywhere else is re-raised. Index checks that
// shared values defeated (a slice bound, a segment access outside the
// mapping) are turned into corruption of the topic the same way.

// guard sets the calling goroutine's panic-on-fault flag and returns its
// previous value, for unguard.
func guard() bool { return debug.SetPanicOnFault(true) }

// unguard must be deferred directly, with guard's result: it restores the
// flag and turns a fault (or a failed bounds check) on one of the domain's
// topics into that topic's error, stored in *err when err is not nil. Any
// other panic goes on.
func (t *Topic) unguard(prev bool, err *error) {
	debug.SetPanicOnFault(prev)
	r := recover()
	if r == nil {
		return
	}
	e := t.d.recovered(t, r)
	if err != nil {
		*err = e
	}
}

// recovered handles a panic caught while working on t (nil: any of the
// domain's topics): a fault on a mapping of one of them, or a bounds check
// that shared values defeated. It re-panics with anything else.
func (d *Domain) recovered(t *Topic, r any) error {
	if fe, ok := r.(interface{ Addr() uintptr }); ok {
		addr := fe.Addr()
		target := t
		if target == nil || !target.contains(addr) {
			target = d.topicAt(addr)
		}
		if target == nil {
			panic(r)
		}
		return target.faulted(addr)
	}
	if t != nil && boundsPanic(r) {
		if lg := d.cfg.Logger; lg != nil {
			lg.Error("index check failed on shared memory", "topic", t.name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
		return t.markCorrupt("a value read from the segment failed an index check (%v)", r)
	}
	panic(r)
}

func boundsPanic(r any) bool {
	if re, ok := r.(runtime.Error); ok {
		s := re.Error()
		return strings.Contains(s, "out of range") || strings.Contains(s, "slice bounds")
	}
	_, ok := r.(*shm.AccessError)
	return ok
}

// contains reports whether addr lies in one of t's mappings.
func (t *Topic) contains(addr uintptr) bool {
	return t.seg.Contains(addr) || shm.InRange(t.rpool, addr)
}

// topicAt finds the open topic whose mapping holds addr.
func (d *Domain) topicAt(addr uintptr) *Topic {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, t := range d.topics {
		if t.contains(addr) {
			return t
		}
	}
	return nil
}

// faulted handles a fault at addr in t's mappings: a truncated or replaced
// file breaks the topic in this process; an intact file means a page above
// a commit word was touched on a full /dev/shm (a damaged commit word).
func (t *Topic) faulted(addr uintptr) error {
	if err := t.audit(); err != nil {
		return err
	}
	return t.markCorrupt("fault at %#x although the file is intact: a damaged commit word let a page that was never committed be touched, and /dev/shm is full", addr)
}

// breakLocal makes every later call on t in this process fail with cause
// (the first cause wins).
func (t *Topic) breakLocal(cause error) error {
	e := fmt.Errorf("%w: topic %s: %v", ErrCorrupt, t.name, cause)
	if t.broken.CompareAndSwap(nil, &e) {
		if lg := t.d.cfg.Logger; lg != nil {
			lg.Error("topic unusable in this process", "topic", t.name, "segment", t.seg.Name(), "cause", cause.Error())
		}
	}
	return *t.broken.Load()
}

// audit checks that t's file still backs its mapping and that the static
// header is unchanged, breaking or marking the topic when not. The janitor
// runs it every period; a fault runs it at once.
func (t *Topic) audit() (err error) {
	if b := t.broken.Load(); b != nil {
		return *b
	}
	defer t.unguard(guard(), &err)
	switch herr := t.seg.Health(); {
	case errors.Is(herr, shm.ErrTruncated):
		// Pages are gone under the mapping: fence it (callers' slices stop
		// faulting) and stop using it.
		e := t.breakLocal(herr)
		t.seg.Fence()
		shm.FenceView(t.rpool)
		return e
	case errors.Is(herr, shm.ErrReplaced) && topicState(t.state.Load()) == topicLive:
		// Unlinked or replaced by something else than its last user (who
		// marks it removed first): this mapping is orphaned. Tell every
		// process that still maps it.
		t.markCorrupt("%v", herr)
		return t.breakLocal(herr)
	}
	h := t.seg.Bytes(0, hStaticEnd)
	// The CRC of the static header with its CRC field zero, computed in
	// three parts rather than over a copy (a copy escaped to the heap: the
	// janitor audits tens of topics a second).
	crc := crc32.Update(0, castagnoli, h[:hCRC])
	crc = crc32.Update(crc, castagnoli, zeroCRC[:])
	crc = crc32.Update(crc, castagnoli, h[hCRC+4:])
	if crc != binary.LittleEndian.Uint32(h[hCRC:]) ||
		binary.LittleEndian.Uint64(h[hInstance:]) != t.instance {
		return t.markCorrupt("the static header changed since the topic was opened")
	}
	return nil
}

// zeroCRC stands for the CRC field in the static header's checksum.
var zeroCRC [4]byte

// markCorrupt records in the segment that t is beyond repair, wakes every
// waiter of every process so that each learns it, and returns the error
// (ErrCorrupt, naming the topic and why).
func (t *Topic) markCorrupt(format string, args ...any) error {
	why := fmt.Sprintf(format, args...)
	err := fmt.Errorf("%w: topic %s: %s; remove it with `rgaps shm clean` once its processes are gone", ErrCorrupt, t.name, why)
	func() {
		// The header may be unreachable (truncated): then this process
		// learns it from the fault, and so will the others.
		prev := guard()
		defer func() { debug.SetPanicOnFault(prev); recover() }()
		if t.state.Swap(uint32(topicCorrupt)) != uint32(topicCorrupt) {
			if lg := t.d.cfg.Logger; lg != nil {
				lg.Error("topic marked corrupt", "topic", t.name, "segment", t.seg.Name(), "why", why)
			}
		}
		t.spaceSeq.Add(1)
		shm.WakeAll(t.spaceSeq)
		t.pubSeq.Add(1)
		shm.WakeAll(t.pubSeq)
	}()
	t.d.graphChanged()
	return err
}

// check returns the error every operation on t fails with, or nil while t
// is usable.
func (t *Topic) check() error {
	if b := t.broken.Load(); b != nil {
		return *b
	}
	if st := topicState(t.state.Load()); st != topicLive && st != topicRemoved {
		return fmt.Errorf("%w: topic %s is marked corrupt (state %d: damage found by a process on it); remove it with `rgaps shm clean` once its processes are gone", ErrCorrupt, t.name, st)
	}
	return nil
}

// unusable reports, without faulting, whether t should no longer be
// handed to new endpoints.
func (t *Topic) unusable() (bad bool) {
	prev := guard()
	defer func() {
		debug.SetPanicOnFault(prev)
		if recover() != nil {
			bad = true
		}
	}()
	st := topicState(t.state.Load())
	return t.broken.Load() != nil || (st != topicLive && st != topicRemoved)
}
