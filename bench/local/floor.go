package benchlocal

import (
	"errors"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// The futex floor of N subscriber processes (PathFutex, benchutil.Floor):
// the same subscriber processes as the other paths, paced like them, and
// like them woken only once every subscriber sleeps. The two threads of
// machineInfo's floor are one waker and one sleeper in one process: a
// floor for N = 1 only.

// settle waits until n subscribers sleep (count reports how many do), so
// that a message is timed from sleep to wake-up; it gives up after
// settleLimit and reports false (the report counts those messages).
func (h *harness) settle(n int, count func() int) bool {
	if h.o.NoSettle || h.o.BusyPoll > 0 {
		return true
	}
	deadline := time.Now().Add(settleLimit)
	for count() < n {
		if time.Now().After(deadline) || h.ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Microsecond)
	}
	return true
}

// settleLimit bounds how long a message waits for every subscriber to
// sleep.
const settleLimit = time.Second

// runFloor: once every subscriber sleeps on the floor word and pause has
// passed since the previous acknowledgements (a spin: the waker's own
// sleep would add its wake-up), stamp t0, bump the word and wake them
// all; then wait for their acknowledgements.
func (h *harness) runFloor(kids []*benchutil.Kid, send []int64, pause time.Duration) (unsettled int, err error) {
	f := h.floor
	acked := time.Now()
	for i := range send {
		if err := h.ctx.Err(); err != nil {
			return unsettled, err
		}
		if !h.settle(len(kids), f.Sleepers) {
			unsettled++
		}
		t0 := f.Wake(acked, pause)
		send[i] = int64(time.Since(t0))
		if err := h.acks(kids); err != nil {
			return unsettled, err
		}
		acked = time.Now()
	}
	return unsettled, nil
}

// recvFloor (child): sleep on the floor word until the parent has bumped
// it for message i (from base, its value when the cell began), and record
// now − t0.
func (c *child) recvFloor(i int, base uint32) (int64, func() (string, error), error) {
	if c.floor == nil {
		return 0, nil, errors.New("no floor segment")
	}
	lat, err := c.floor.Sleep(i, base, c.ppid)
	if err != nil {
		return 0, nil, err
	}
	return lat, func() (string, error) { return "", nil }, nil
}
