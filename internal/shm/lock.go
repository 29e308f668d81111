package shm

import (
	"runtime"
	"sync/atomic"
	"time"
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
// A waiter that has been blocked for DeadCheck checks whether the holder is
// still alive; if not, it takes the lock over and Lock reports recovered =
// true: the holder may have died in the middle of a change, so the caller
// must repair or verify what the lock protects before using it.
//
// The lock is not reentrant and carries no notion of goroutine: goroutines of
// one process exclude each other through it as processes do.
type Lock struct {
	holder  *atomic.Uint32
	waiters *atomic.Uint32
	start   *atomic.Uint64
}

// DeadCheck is how long a waiter blocks before it checks the holder's life.
var DeadCheck = 20 * time.Millisecond

// LockAt returns the lock stored at off in s.
func LockAt(s *Segment, off uint64) Lock {
	return Lock{holder: s.Uint32(off), waiters: s.Uint32(off + 4), start: s.Uint64(off + 8)}
}

// TryLock takes the lock if it is free.
func (l Lock) TryLock() bool {
	me := Self()
	if l.holder.CompareAndSwap(0, me.Pid) {
		l.start.Store(me.Start)
		return true
	}
	return false
}

// Lock takes the lock, blocking as long as a live process holds it.
// recovered reports that the lock was taken over from a dead holder.
func (l Lock) Lock() (recovered bool) {
	me := Self()
	for spin := 0; ; spin++ {
		if l.holder.CompareAndSwap(0, me.Pid) {
			l.start.Store(me.Start)
			return false
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
		err := Wait(l.holder, h, DeadCheck)
		l.waiters.Add(^uint32(0))
		if err != ErrTimeout {
			continue
		}
		// Read the start time before re-reading the holder: if the holder
		// word still names the same pid afterwards, the start time belongs
		// to it or is 0 (a holder that has not yet recorded its own).
		st := l.start.Load()
		if l.holder.Load() != h || Alive(Owner{Pid: h, Start: st}) {
			continue
		}
		if l.holder.CompareAndSwap(h, me.Pid) {
			l.start.Store(me.Start)
			return true
		}
	}
}

// Unlock releases the lock. It must be held by the calling process.
func (l Lock) Unlock() {
	l.start.Store(0)
	l.holder.Store(0)
	if l.waiters.Load() != 0 {
		Wake(l.holder, 1)
	}
}

// HeldBy returns the current holder (Pid 0 when free).
func (l Lock) HeldBy() Owner { return Owner{Pid: l.holder.Load(), Start: l.start.Load()} }
