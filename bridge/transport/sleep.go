package transport

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Sleeper is what an Endpoint's Sleep and Wake share in every
// implementation: an epoll instance that holds the endpoint's own
// descriptor (a libfabric wait object, a socket) and an eventfd that Wake
// signals. The epoll instance is registered with the Go runtime's network
// poller, so a sleeping goroutine holds no thread and no P: an idle
// daemon then makes no blocking system call, which would keep the
// runtime's monitor thread polling for up to 10 ms each time it began
// (that costs more CPU than the sleep saves when it is short).
//
// Wake costs two atomic operations unless a Sleep may be under way: the
// write to the eventfd (a system call) is made only then, so a caller may
// call Wake for every write it hands a sleeping poller.
type Sleeper struct {
	// sleeping is set while a Sleep is between its start and its end;
	// woken records a Wake, so one that comes just before a Sleep parks
	// still ends it (each side stores its flag, then loads the other's).
	sleeping atomic.Bool
	woken    atomic.Bool

	ep   *os.File // the epoll instance, in the runtime's poller
	epfd int      // its descriptor (ep.Fd would make it blocking)
	rc   syscall.RawConn

	mu      sync.Mutex // guards the fields below (Wake, Close, Sleep's set-up)
	efd     int        // the eventfd; -1 once closed
	watched int        // the descriptor added to ep (-1: none yet)
	events  uint32     // and its events
	closed  bool
}

// NewSleeper makes a Sleeper (an epoll instance and an eventfd).
func NewSleeper() (*Sleeper, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(efd)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	// Non-blocking, so that os.NewFile registers it with the poller.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(epfd)
		unix.Close(efd)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	s := &Sleeper{ep: os.NewFile(uintptr(epfd), "transport-sleeper"), epfd: epfd, efd: efd, watched: -1}
	if s.rc, err = s.ep.SyscallConn(); err != nil {
		s.ep.Close()
		unix.Close(efd)
		return nil, fmt.Errorf("epoll: %w", err)
	}
	return s, nil
}

// Sleep waits until fd is ready for events (unix.EPOLLIN, EPOLLOUT), Wake
// is called, or timeout passes (negative: no limit); then it returns
// ErrTimeout). A Wake since the last Sleep ended makes it return at once.
// fd must be the same descriptor every time, and stay open until Close
// returned (events may change). It returns ErrClosed after Close.
func (s *Sleeper) Sleep(fd int, events uint32, timeout time.Duration) error {
	s.sleeping.Store(true)
	defer s.sleeping.Store(false)
	if s.woken.Swap(false) {
		return nil
	}
	if err := s.watch(fd, events); err != nil {
		return err
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	if err := s.ep.SetReadDeadline(deadline); err != nil {
		return s.fail(err)
	}
	var evs [2]unix.EpollEvent
	err := s.rc.Read(func(epfd uintptr) bool {
		n, err := unix.EpollWait(int(epfd), evs[:], 0)
		if err != nil {
			return !errors.Is(err, unix.EINTR) // another error: let the caller poll
		}
		for _, ev := range evs[:n] {
			if ev.Fd != int32(fd) {
				s.drain()
			}
		}
		return n > 0
	})
	s.woken.Store(false) // this Sleep ended: the Wakes before now are served
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// isClosed reports whether Close was called.
func (s *Sleeper) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// watch adds fd to the epoll instance, or changes its events. Must not be
// called concurrently with itself (one goroutine sleeps).
func (s *Sleeper) watch(fd int, events uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.watched == fd && s.events == events {
		return nil
	}
	op := unix.EPOLL_CTL_ADD
	if s.watched == fd {
		op = unix.EPOLL_CTL_MOD
	} else if s.watched >= 0 {
		return fmt.Errorf("sleeper: watching descriptor %d, asked for %d", s.watched, fd)
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	if err := unix.EpollCtl(s.epfd, op, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl: %w", err)
	}
	s.watched, s.events = fd, events
	return nil
}

// drain resets the eventfd's counter.
func (s *Sleeper) drain() {
	s.mu.Lock()
	if s.efd >= 0 {
		var b [8]byte
		unix.Read(s.efd, b[:]) // EAGAIN if nothing is left: fine
	}
	s.mu.Unlock()
}

// fail maps the poller's errors.
func (s *Sleeper) fail(err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, os.ErrClosed) || s.isClosed():
		return ErrClosed
	}
	return fmt.Errorf("sleeper: %w", err)
}

// Wake ends a Sleep under way, or makes the next one return at once. It
// is safe from any goroutine, also after Close (then it does nothing).
func (s *Sleeper) Wake() {
	s.woken.Store(true)
	if !s.sleeping.Load() {
		return
	}
	s.mu.Lock()
	if !s.closed {
		var b [8]byte
		b[0] = 1
		unix.Write(s.efd, b[:]) // EAGAIN only at a counter near 2^64: still readable
	}
	s.mu.Unlock()
}

// Close ends a Sleep under way (it returns ErrClosed) and releases the
// epoll instance and the eventfd; later Sleeps return ErrClosed. The
// caller may close the descriptor it passed to Sleep afterwards.
func (s *Sleeper) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	unix.Close(s.efd)
	s.efd = -1
	s.mu.Unlock()
	s.ep.Close() // a parked Sleep returns; the epoll instance goes once it did
}
