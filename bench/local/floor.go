package benchlocal

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// The futex floor of N subscriber processes (PathFutex).
//
// The same subscriber processes as the other paths block in
// futex(FUTEX_WAIT) on one word of a small shared segment of their own; the
// publisher stamps t0, bumps the word and wakes them all with one
// FUTEX_WAKE, as a publish does on the topic's word, and each records its
// wall clock when its wait returns. No engine is involved: this is what
// waking N sleeping processes costs on this machine, the floor under the
// engine's wake-up of N subscribers (the two threads of machineInfo's
// floor are one waker and one sleeper in one process: a floor for N = 1
// only). Paced like the other paths, and like them it stamps t0 only once
// every subscriber sleeps.

// Floor segment words.
const (
	floorSeq     = 0  // u32 futex word: +1 per message
	floorWaiters = 64 // u32 subscribers about to sleep on floorSeq
	floorStamp   = 128
	floorSize    = 4096
)

// floorWords are the words of a mapped floor segment.
type floorWords struct {
	seg     *shm.Segment
	seq     *atomic.Uint32
	waiters *atomic.Uint32
}

func floorName(prefix string) string { return fmt.Sprintf("%s_benchfloor%d", prefix, os.Getpid()) }

var floorAccess = shm.Access{Perm: 0o600, Group: -1}

func mapFloor(seg *shm.Segment) *floorWords {
	return &floorWords{seg: seg, seq: seg.Uint32(floorSeq), waiters: seg.Uint32(floorWaiters)}
}

// createFloor makes the parent's floor segment.
func createFloor(name string) (*floorWords, error) {
	seg, err := shm.Create(name, floorSize, floorAccess.Perm, floorAccess.Group)
	if err != nil {
		return nil, err
	}
	if err := seg.Commit(0, floorSize); err != nil {
		seg.Close()
		return nil, err
	}
	if err := seg.Publish(); err != nil {
		seg.Close()
		return nil, err
	}
	return mapFloor(seg), nil
}

// openFloor maps the parent's floor segment in a child.
func openFloor(name string) (*floorWords, error) {
	seg, err := shm.Open(name, floorSize, floorAccess)
	if err != nil {
		return nil, err
	}
	return mapFloor(seg), nil
}

func (f *floorWords) setStamp(t int64) { f.seg.Uint64(floorStamp).Store(uint64(t)) }
func (f *floorWords) stampNow() int64  { return int64(f.seg.Uint64(floorStamp).Load()) }

func (f *floorWords) close(unlink bool) {
	if f == nil {
		return
	}
	name := f.seg.Name()
	f.seg.Close()
	if unlink {
		shm.Unlink(name)
	}
}

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
		if !h.settle(len(kids), func() int { return int(f.waiters.Load()) }) {
			unsettled++
		}
		for time.Since(acked) < pause {
		}
		t0 := time.Now()
		f.setStamp(t0.UnixNano())
		f.seq.Add(1)
		shm.WakeAll(f.seq)
		send[i] = int64(time.Since(t0))
		if err := h.acks(kids); err != nil {
			return unsettled, err
		}
		acked = time.Now()
	}
	return unsettled, nil
}

// recvFloor (child): count itself as about to sleep, sleep on the floor
// word until the parent has bumped it for message i (from base, its value
// when the cell began), and record now − t0.
func (c *child) recvFloor(i int, base uint32) (int64, func() (string, error), error) {
	f := c.floor
	if f == nil {
		return 0, nil, errors.New("no floor segment")
	}
	f.waiters.Add(1)
	for {
		v := f.seq.Load()
		if v-base > uint32(i) {
			break
		}
		if shm.Wait(f.seq, v, time.Second) == shm.ErrTimeout && os.Getppid() != c.ppid {
			f.waiters.Add(^uint32(0))
			return 0, nil, errors.New("the benchmark process exited")
		}
	}
	now := time.Now().UnixNano()
	f.waiters.Add(^uint32(0))
	return now - f.stampNow(), func() (string, error) { return "", nil }, nil
}
