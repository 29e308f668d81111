package pause

import (
	"container/heap"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Timers.
//
// Go's own timers are checked by the scheduler at every goroutine switch,
// so they fire on time while the process's processors are busy. When every
// processor is idle, one thread waits in the network poller's epoll_wait,
// whose timeout the runtime rounds up to whole milliseconds: a 10 µs
// time.Sleep, or a 10 µs timer in a select, then ends after about 1.1 ms
// on Linux. A bridge's pump backing off between polls is exactly such a
// wait in exactly such a process, and a message that lands meanwhile is
// found up to a millisecond late.
//
// A Timer here is armed twice: on a Go runtime timer (on time while the
// processors are busy) and on one timerfd per process that a goroutine of
// this package reads through the network poller (on time while they are
// idle: a timerfd that expires makes epoll_wait return at once). Whichever
// comes first fires it. Without timerfd (a seccomp profile that refuses
// it) only the Go timer is armed, which is what the callers had before.

// Timer sends one value on C, d after Reset, unless stopped or reset
// before. A Timer is meant for one goroutine (Reset, Stop and receiving
// on C from several need the caller's own ordering), and must be stopped
// when no longer needed, or the service holds it until its deadline.
type Timer struct {
	c chan struct{}
	// mu guards when and the send on c against Reset and Stop, so that
	// no stale tick lands after either returned. Lock order: Timer.mu,
	// then the service's mu.
	mu   sync.Mutex
	when int64 // deadline on the service's clock (clock); 0: not armed
	rt   *time.Timer
	// Under the service's mu: the deadline the heap orders by and the
	// place in it (-1: not in the heap).
	hwhen int64
	idx   int
}

// New returns a stopped Timer.
func New() *Timer {
	t := &Timer{c: make(chan struct{}, 1), idx: -1}
	t.rt = time.AfterFunc(time.Hour, func() { t.fire(clock(), false) })
	t.rt.Stop()
	return t
}

// C is the channel the timer fires on.
func (t *Timer) C() <-chan struct{} { return t.c }

// Reset arms the timer to fire d from now (at once when d ≤ 0), replacing
// any deadline it had; a tick it had sent and nobody received is dropped.
func (t *Timer) Reset(d time.Duration) {
	d = max(d, 0)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drain()
	t.when = clock() + int64(d)
	t.rt.Reset(d)
	svc.add(t, t.when)
}

// Stop disarms the timer; after it returns, C holds nothing and gets
// nothing until the next Reset.
func (t *Timer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.when = 0
	t.rt.Stop()
	svc.remove(t)
	t.drain()
}

func (t *Timer) drain() {
	select {
	case <-t.c:
	default:
	}
}

// fire sends the tick if the deadline has come by now; fromSvc says which
// of the two sources calls, so the other is disarmed.
func (t *Timer) fire(now int64, fromSvc bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.when == 0 || now < t.when {
		return // stopped, or reset to a later deadline since
	}
	t.when = 0
	select {
	case t.c <- struct{}{}:
	default:
	}
	if fromSvc {
		t.rt.Stop()
	} else {
		svc.remove(t)
	}
}

// Sleep pauses the calling goroutine for at least d, ending on time in an
// idle process too (see the package comment).
func Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := pool.Get().(*Timer)
	t.Reset(d)
	<-t.c
	pool.Put(t) // fired: idle, nothing left on C
}

var pool = sync.Pool{New: func() any { return New() }}

// Precise reports whether timers are armed on the timerfd too (false: Go
// timers only, see the package comment).
func Precise() bool {
	svc.once.Do(svc.start)
	return svc.f != nil
}

// clock is the service's time in nanoseconds: CLOCK_MONOTONIC, which the
// timerfd's absolute deadlines count in, read through Go's monotonic clock
// (the same clock, without a system call).
func clock() int64 { return mono0 + int64(time.Since(start)) }

// start and mono0 pair a reading of Go's clock with CLOCK_MONOTONIC: the
// Go reading is taken between two of the latter, and mono0 is the later
// one, so clock() is never behind CLOCK_MONOTONIC (the timerfd never fires
// before a deadline) and ahead by at most the bracket; a bracket over 2 µs
// (the thread was preempted) is taken again, up to 100 times.
var start, mono0 = func() (time.Time, int64) {
	var t time.Time
	var a, b unix.Timespec
	for range 100 {
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &a) != nil {
			return time.Now(), 0
		}
		t = time.Now()
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		if b.Nano()-a.Nano() < 2000 {
			break
		}
	}
	return t, b.Nano()
}()

// service is the process's timerfd, armed for the earliest deadline of the
// timers in its heap, and the goroutine that reads it.
type service struct {
	once sync.Once
	f    *os.File // nil: no timerfd
	fd   int

	mu    sync.Mutex
	h     timerHeap
	armed int64 // the timerfd's deadline; 0: disarmed
}

var svc service

func (s *service) start() {
	if mono0 == 0 {
		return
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return
	}
	s.fd = fd
	s.f = os.NewFile(uintptr(fd), "pause-timerfd") // non-blocking: read through the network poller
	go s.run()
}

func (s *service) add(t *Timer, when int64) {
	s.once.Do(s.start)
	if s.f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.hwhen = when
	if t.idx >= 0 {
		heap.Fix(&s.h, t.idx)
	} else {
		heap.Push(&s.h, t)
	}
	if s.armed == 0 || when < s.armed {
		s.arm(when)
	}
}

func (s *service) remove(t *Timer) {
	if s.f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.idx >= 0 {
		heap.Remove(&s.h, t.idx)
	}
	// The timerfd stays armed: when it expires, run finds nothing due and
	// arms it for what is left.
}

// arm sets the timerfd to when (0: disarm); under mu.
func (s *service) arm(when int64) {
	its := unix.ItimerSpec{}
	if when > 0 {
		its.Value = unix.NsecToTimespec(when)
	}
	if unix.TimerfdSettime(s.fd, unix.TFD_TIMER_ABSTIME, &its, nil) != nil {
		when = 0 // cannot happen with a valid descriptor; the Go timers still fire
	}
	s.armed = when
}

// run waits for the timerfd and fires what is due.
func (s *service) run() {
	var buf [8]byte
	var due []*Timer
	for {
		if _, err := s.f.Read(buf[:]); err != nil {
			return // the descriptor is never closed: nothing to do but rely on the Go timers
		}
		due = due[:0]
		s.mu.Lock()
		now := clock()
		for len(s.h) > 0 && s.h[0].hwhen <= now {
			due = append(due, heap.Pop(&s.h).(*Timer))
		}
		s.armed = 0
		if len(s.h) > 0 {
			s.arm(s.h[0].hwhen)
		}
		s.mu.Unlock()
		for i, t := range due {
			t.fire(now, true)
			due[i] = nil
		}
	}
}

// timerHeap orders timers by hwhen (container/heap).
type timerHeap []*Timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].hwhen < h[j].hwhen }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*Timer)
	t.idx = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.idx = -1
	return t
}
