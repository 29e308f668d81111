package benchutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// ChildSetup starts a subscriber process: it ignores SIGINT and SIGTERM
// (the parent runs it in its own process group, so a terminal's ^C reaches
// only the parent, which then stops it and cleans up) and returns the
// control and data sockets the parent passed on fds 3 and 4, made blocking.
// by names the command that runs such processes, for the error when they
// are not there.
func ChildSetup(by string) (ctl, data FD, err error) {
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	for _, fd := range []int{childControlFD, childDataFD} {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			return 0, 0, fmt.Errorf("fd %d is not a socket: this command is run by `%s` only", fd, by)
		}
		if err := syscall.SetNonblock(fd, false); err != nil {
			return 0, 0, err
		}
	}
	return FD(childControlFD), FD(childDataFD), nil
}

// Serve reads requests (frames of at most limit bytes) from ctl and hands
// each to handle. It returns nil when the parent closes ctl, and when
// handle returns an error or stop, that error.
func Serve[R any](ctl FD, limit uint32, handle func(req R) (stop bool, err error)) error {
	for {
		var req R
		if err := ReadFrame(ctl, &req, limit); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the parent is done with us
			}
			return fmt.Errorf("reading request: %w", err)
		}
		if stop, err := handle(req); stop || err != nil {
			return err
		}
	}
}

// TakeNext blocks in sub.Wait (a second at a time, giving up once the
// parent, ppid, is gone) until a sample is queued, and takes it. woke,
// unless nil, runs each time Wait returns, before Take.
func TakeNext(sub *zerocopy.Subscription, ppid int, woke func()) (*zerocopy.Sample, error) {
	for {
		err := sub.Wait(time.Second)
		if errors.Is(err, zerocopy.ErrTimeout) {
			if os.Getppid() != ppid {
				return nil, errors.New("the benchmark process exited")
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		if woke != nil {
			woke()
		}
		smp, err := sub.Take()
		if errors.Is(err, zerocopy.ErrNoData) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return smp, nil
	}
}
