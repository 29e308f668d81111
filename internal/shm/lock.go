package shm

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// LockSize is the number of bytes a Lock occupies in a segment (8-aligned).
const LockSize = 16

// Lock is a cross-process mutex over 16 bytes of shared memory that survives
// the death of its holder. Layout (little-endian):
//
//	@0 u32 holder pid (0 = free)
//	@4 u32 number of blocked waiters (so Unlock makes a syscall only when needed)
//	@8 u64 holder start time (0 = not yet recorded)
//
// A waiter blocks DeadCheck at a time and then judges the holder it sees;
// it takes the lock over (Lock reports recovered = true: the holder may have
// died mid-change, so the caller must repair or verify what the lock
// protects) when the holder word names
//   - a process that does not exist, or a pid whose start time differs
//     (the holder died and the pid was reused);
//   - a pid whose start time stays 0 for ZeroStartGrace (a holder records its
//     start time right after taking the word: it died in between, or the
//     word was never written by a holder);
//   - this process, which does not hold it (no goroutine of this process
//     took it), for ZeroStartGrace;
//   - a live process that, after ForeignCheck, does not even map the
//     segment (a foreign value: corruption, or a forged word).
//
// What is left is a live process that maps the segment and keeps the lock
// (stopped in a debugger, or SIGSTOPped): LockWith waits for it at most its
// limit and then fails with ErrLockTimeout naming it.
//
// The lock is not reentrant and carries no notion of goroutine: goroutines of
// one process exclude each other through it as processes do.
type Lock struct {
	holder  *atomic.Uint32
	waiters *atomic.Uint32
	start   *atomic.Uint64
	seg     *Segment
	// local counts the goroutines of this process holding this lock (0 or
	// 1), shared by every mapping of the segment in the process.
	local *atomic.Int32
}

// DeadCheck is how long a waiter blocks before it checks the holder's life.
var DeadCheck = 20 * time.Millisecond

// ZeroStartGrace is how long a holder word may name a pid without a start
// time, or this process while it does not hold the lock, before a waiter
// treats the word as left by a dead or foreign holder.
var ZeroStartGrace = time.Second

// ForeignCheck is how long one live holder may keep the lock before a
// waiter checks that the holder maps the segment at all.
var ForeignCheck = time.Second

// ErrLockTimeout is returned by LockWith when a live process that maps the
// segment held the lock for longer than the limit.
var ErrLockTimeout = errors.New("shared-memory lock held too long by a live process")

type lockKey struct {
	dev, ino, off uint64
}

var localHolders sync.Map // lockKey → *atomic.Int32

// LockAt returns the lock stored at off in s.
func LockAt(s *Segment, off uint64) Lock {
	c, _ := localHolders.LoadOrStore(lockKey{s.dev, s.ino, off}, new(atomic.Int32))
	return Lock{holder: s.Uint32(off), waiters: s.Uint32(off + 4), start: s.Uint64(off + 8), seg: s, local: c.(*atomic.Int32)}
}

// TryLock takes the lock if it is free.
func (l Lock) TryLock() bool {
	me := Self()
	if l.holder.CompareAndSwap(0, me.Pid) {
		l.setStart(me.Start)
		l.local.Add(1)
		return true
	}
	return false
}

// Lock takes the lock with no time limit: it blocks only as long as a live
// process that maps the segment holds it (see Lock's doc).
func (l Lock) Lock() (recovered bool) {
	r, _ := l.LockWith(0, nil)
	return r
}

// LockWith takes the lock. It fails with ErrLockTimeout when a live holder
// that maps the segment keeps it longer than limit (0: no limit), and with
// abort's error when abort (called after every DeadCheck wait) returns one:
// the caller's way to stop waiting on a segment it learnt is unusable.
func (l Lock) LockWith(limit time.Duration, abort func() error) (recovered bool, err error) {
	me := Self()
	var (
		seen    Owner     // holder judged last
		since   time.Time // when seen was first seen
		checked bool      // seen's mappings were checked
	)
	for spin := 0; ; spin++ {
		if l.holder.CompareAndSwap(0, me.Pid) {
			l.setStart(me.Start)
			l.local.Add(1)
			return false, nil
		}
		if spin < 64 {
			runtime.Gosched()
			continue
		}
		h := l.holder.Load()
		if h == 0 {
			continue
		}
		l.waiters.Add(1)
		Wait(l.holder, h, DeadCheck)
		l.waiters.Add(^uint32(0))
		if abort != nil {
			if err := abort(); err != nil {
				return false, err
			}
		}
		// Read the start time before re-reading the holder: if the holder
		// word still names the same pid afterwards, the start time belongs
		// to it or is 0 (a holder that has not yet recorded its own).
		st := l.start.Load()
		if l.holder.Load() != h {
			continue
		}
		o := Owner{Pid: h, Start: st}
		now := time.Now()
		if o != seen {
			seen, since, checked = o, now, false
		}
		held := now.Sub(since)
		dead := false
		switch {
		case !Alive(o):
			dead = true
		case st == 0 && held >= ZeroStartGrace:
			dead = true // no holder leaves its start time unrecorded that long
		case h == me.Pid && st == me.Start && l.local.Load() == 0 && held >= ZeroStartGrace:
			dead = true // names this process, which does not hold it
		case h != me.Pid && held >= ForeignCheck && !checked:
			checked = true
			if mapped, known := Maps(h, l.seg.dev, l.seg.ino); known && !mapped {
				dead = true // a live process that cannot be using the segment
			}
		case limit > 0 && held >= limit:
			return false, fmt.Errorf("%w: pid %d (%s) has held the lock of %q for %v (stopped? in a debugger?)",
				ErrLockTimeout, h, Comm(h), l.seg.name, held.Round(time.Millisecond))
		}
		if dead && l.holder.CompareAndSwap(h, me.Pid) {
			l.setStart(me.Start)
			l.local.Add(1)
			return true, nil
		}
	}
}

// Unlock releases the lock. It must be held by the calling process.
func (l Lock) Unlock() {
	l.local.Add(-1)
	l.setStart(0)
	// An atomic (sequentially consistent) store: the load of the waiter
	// count must not pass it, or a waiter that counted itself after the
	// load would sleep on a holder word it saw before the store.
	l.holder.Store(0)
	if l.waiters.Load() != 0 {
		Wake(l.holder, 1)
	}
}

// setStart writes the holder's start time with a plain store: only the
// holder writes it, and waiters read it before they re-read the holder
// word (LockWith), which the holder wrote atomically before it (taking
// the lock) or writes atomically after it (releasing it), so a waiter
// never pairs a holder with another holder's start time.
func (l Lock) setStart(v uint64) { *(*uint64)(unsafe.Pointer(l.start)) = v }

// HeldBy returns the current holder (Pid 0 when free).
func (l Lock) HeldBy() Owner { return Owner{Pid: l.holder.Load(), Start: l.start.Load()} }
