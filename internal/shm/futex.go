package shm

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	futexWait = 0
	futexWake = 1

	sysFutexWaitv = 449 // x86-64 and arm64 (Linux 5.16+)
	futex2U32     = 0x02
	// MaxWaitMany is the most words one WaitMany call covers (a kernel limit).
	MaxWaitMany = 128
)

// ErrTimeout is returned by waits that reached their timeout.
var ErrTimeout = errors.New("timed out")

// Wait blocks while *w == val, until a Wake on the word, a timeout
// (negative: none) or a spurious wake-up. Callers re-check their condition.
// It returns ErrTimeout on timeout and nil otherwise.
func Wait(w *atomic.Uint32, val uint32, timeout time.Duration) error {
	var tsp unsafe.Pointer
	var ts unix.Timespec
	if timeout >= 0 {
		ts = unix.NsecToTimespec(int64(timeout))
		tsp = unsafe.Pointer(&ts)
	}
	_, _, e := unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWait, uintptr(val), uintptr(tsp), 0, 0)
	if e == unix.ETIMEDOUT {
		return ErrTimeout
	}
	return nil
}

// Wake wakes up to n waiters blocked on w (in any process).
func Wake(w *atomic.Uint32, n int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWake, uintptr(n), 0, 0, 0)
}

// WakeAll wakes every waiter blocked on w.
func WakeAll(w *atomic.Uint32) { Wake(w, 1<<31-1) }

type futexWaitv struct {
	val   uint64
	uaddr uint64
	flags uint32
	_     uint32
}

// Waiter is one word and the value it was seen with, for WaitMany.
type Waiter struct {
	Word *atomic.Uint32
	Val  uint32
}

var waitvUnsupported atomic.Bool

// fences counts this process's fences (FenceView). WaitFenced includes it
// among its words: a sleeper on a word of a mapping that was fenced since
// can no longer be woken through that word (the wake reaches the new
// zero pages, not the futex it sleeps on), so it is woken through this
// one and re-checks.
var fences atomic.Uint32

// Fences is the fence count now: read it before checking the conditions
// a WaitFenced waits for, and pass it.
func Fences() uint32 { return fences.Load() }

// FenceSlice is the longest WaitFenced sleeps where the kernel has no
// futex_waitv (a single futex cannot include the fence word): its caller
// then notices a fence at its next check.
const FenceSlice = 500 * time.Millisecond

// WaitFenced is WaitMany over ws and the fence count, with seen its value
// from Fences before the caller checked its conditions: it also returns
// when this process fenced a mapping since, so a wait needs no slices to
// notice one (an idle waiter makes no wake-ups). Without futex_waitv it
// waits at most FenceSlice, whatever timeout is (then ErrTimeout).
// Callers re-check their conditions and their own deadline.
func WaitFenced(ws []Waiter, seen uint32, timeout time.Duration) error {
	probeWaitv.Do(probe)
	if waitvUnsupported.Load() {
		if timeout < 0 || timeout > FenceSlice {
			timeout = FenceSlice
		}
		return WaitMany(ws, timeout)
	}
	if len(ws) >= MaxWaitMany {
		all := append(ws[:len(ws):len(ws)], Waiter{Word: &fences, Val: seen})
		return WaitMany(all, timeout)
	}
	return waitvFor(ws, Waiter{Word: &fences, Val: seen}, timeout)
}

// WaitFenced1 is WaitFenced on one word, without allocating (a subscriber
// waits once for each message it sleeps for).
func WaitFenced1(w *atomic.Uint32, val, seen uint32, timeout time.Duration) error {
	probeWaitv.Do(probe)
	if waitvUnsupported.Load() {
		if timeout < 0 || timeout > FenceSlice {
			timeout = FenceSlice
		}
		return Wait(w, val, timeout)
	}
	ws := [1]Waiter{{Word: w, Val: val}}
	return waitvFor(ws[:], Waiter{Word: &fences, Val: seen}, timeout)
}

// waitvFor is one futex_waitv over ws and extra (len(ws) < MaxWaitMany)
// for timeout (negative: none).
func waitvFor(ws []Waiter, extra Waiter, timeout time.Duration) error {
	var ts unix.Timespec
	var deadline *unix.Timespec
	if timeout >= 0 {
		// futex_waitv takes an absolute CLOCK_MONOTONIC deadline.
		var now unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
		ts = unix.NsecToTimespec(now.Nano() + int64(timeout))
		deadline = &ts
	}
	return waitv(ws, &extra, deadline)
}

var probeWaitv sync.Once

// probe finds out once whether the kernel has futex_waitv, with a wait
// that returns at once where it has (the word differs from the value).
func probe() {
	var w atomic.Uint32
	if errors.Is(waitv([]Waiter{{Word: &w, Val: 1}}, nil, nil), errNoWaitv) {
		waitvUnsupported.Store(true)
	}
}

// WaitMany blocks until any of the words differs from its value (checked
// atomically by the kernel, so a wake between the caller's check and the
// wait is not lost), a wake on one of them, or the timeout (negative: none).
// It uses futex_waitv. More than MaxWaitMany words are waited on in
// batches, each in a futex_waitv of its own on its own thread, together
// with a cancel word that the first batch to return bumps to end the
// others: no polling, however many words. On kernels without futex_waitv
// it falls back to waiting on the first word with short timeouts and
// polling the rest, which is correct but slower. It returns ErrTimeout on
// timeout, nil otherwise (callers re-check every condition).
func WaitMany(ws []Waiter, timeout time.Duration) error {
	if len(ws) == 0 {
		if timeout < 0 {
			return errors.New("waiting on nothing forever")
		}
		time.Sleep(timeout)
		return ErrTimeout
	}
	if len(ws) == 1 {
		return Wait(ws[0].Word, ws[0].Val, timeout)
	}
	if !waitvUnsupported.Load() {
		var deadline *unix.Timespec
		if timeout >= 0 {
			// futex_waitv takes an absolute CLOCK_MONOTONIC deadline.
			var now unix.Timespec
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &now)
			ts := unix.NsecToTimespec(now.Nano() + int64(timeout))
			deadline = &ts
		}
		var err error
		if len(ws) <= MaxWaitMany {
			err = waitv(ws, nil, deadline)
		} else {
			err = waitBatches(ws, deadline)
		}
		if !errors.Is(err, errNoWaitv) {
			return err
		}
	}
	return pollMany(ws, timeout)
}

// errNoWaitv: the kernel (or a seccomp profile) has no futex_waitv.
var errNoWaitv = errors.New("no futex_waitv")

// waitv is one futex_waitv over ws and, unless nil, extra (len(ws) <
// MaxWaitMany then), until deadline (nil: none).
func waitv(ws []Waiter, extra *Waiter, deadline *unix.Timespec) error {
	var arr [MaxWaitMany]futexWaitv
	for i, w := range ws {
		arr[i] = futexWaitv{val: uint64(w.Val), uaddr: uint64(uintptr(unsafe.Pointer(w.Word))), flags: futex2U32}
	}
	n := len(ws)
	if extra != nil {
		arr[n] = futexWaitv{val: uint64(extra.Val), uaddr: uint64(uintptr(unsafe.Pointer(extra.Word))), flags: futex2U32}
		n++
	}
	_, _, e := unix.Syscall6(sysFutexWaitv, uintptr(unsafe.Pointer(&arr[0])), uintptr(n), 0, uintptr(unsafe.Pointer(deadline)), unix.CLOCK_MONOTONIC, 0)
	switch e {
	case 0, unix.EAGAIN, unix.EINTR:
		return nil // woken, a value already changed, or a signal
	case unix.ETIMEDOUT:
		return ErrTimeout
	case unix.ENOSYS, unix.EPERM, unix.EACCES:
		// Poll from now on rather than spin on the error.
		waitvUnsupported.Store(true)
		return errNoWaitv
	}
	return fmt.Errorf("futex_waitv: %w", e)
}

// waitBatches waits on more than MaxWaitMany words: batches of
// MaxWaitMany-1 words plus a cancel word each, all but the last on
// goroutines of their own (each blocks a thread in the kernel), the last
// on the caller's. The first batch to return raises the cancel word, which
// wakes the others, and its result is the wait's; it returns when all
// batches have.
func waitBatches(ws []Waiter, deadline *unix.Timespec) error {
	const per = MaxWaitMany - 1
	cancel := new(atomic.Uint32) // futex_waitv's words need no special memory
	var first error
	done := make(chan struct{})
	run := func(batch []Waiter) {
		err := waitv(batch, &Waiter{Word: cancel}, deadline)
		if cancel.CompareAndSwap(0, 1) {
			first = err // read after every batch is done
			WakeAll(cancel)
		}
		done <- struct{}{}
	}
	n := (len(ws) + per - 1) / per
	for i := 0; i < n-1; i++ {
		go run(ws[i*per : (i+1)*per])
	}
	go run(ws[(n-1)*per:])
	for range n {
		<-done
	}
	return first
}

func pollMany(ws []Waiter, timeout time.Duration) error {
	const slice = 2 * time.Millisecond
	deadline := time.Now().Add(timeout)
	for {
		for _, w := range ws {
			if w.Word.Load() != w.Val {
				return nil
			}
		}
		d := slice
		if timeout >= 0 {
			left := time.Until(deadline)
			if left <= 0 {
				return ErrTimeout
			}
			d = min(d, left)
		}
		if Wait(ws[0].Word, ws[0].Val, d) == nil {
			return nil
		}
	}
}
