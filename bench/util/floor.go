package benchutil

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// The futex floor of N subscriber processes (`rgaps-bench local`'s
// PathFutex, `rgaps-bench gpu`'s floor beside data path 3).
//
// A benchmark's subscriber processes block in futex(FUTEX_WAIT) on one
// word of a small shared segment; the parent stamps t0, bumps the word and
// wakes them all with one FUTEX_WAKE, as a publish does on a topic's word,
// and each records its wall clock when its wait returns. No engine is
// involved: this is what waking N sleeping processes costs on the
// machine, the floor under the engine's wake-up of N subscribers.

// Floor segment words.
const (
	floorSeq     = 0  // u32 futex word: +1 per message
	floorWaiters = 64 // u32 subscribers about to sleep on floorSeq
	floorStamp   = 128
	floorSize    = 4096
)

// Floor is a mapped floor segment.
type Floor struct {
	seg     *shm.Segment
	seq     *atomic.Uint32
	waiters *atomic.Uint32
}

// FloorName is the floor segment's name for a run with shared-memory
// prefix prefix (one per parent process).
func FloorName(prefix string) string {
	return fmt.Sprintf("%s_benchfloor%d", prefix, os.Getpid())
}

var floorAccess = shm.Access{Perm: 0o600, Group: -1}

func mapFloor(seg *shm.Segment) *Floor {
	return &Floor{seg: seg, seq: seg.Uint32(floorSeq), waiters: seg.Uint32(floorWaiters)}
}

// CreateFloor makes the parent's floor segment.
func CreateFloor(name string) (*Floor, error) {
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

// OpenFloor maps the parent's floor segment in a child.
func OpenFloor(name string) (*Floor, error) {
	seg, err := shm.Open(name, floorSize, floorAccess)
	if err != nil {
		return nil, err
	}
	return mapFloor(seg), nil
}

// Close unmaps the segment (and removes it with unlink); a nil Floor is
// fine.
func (f *Floor) Close(unlink bool) {
	if f == nil {
		return
	}
	name := f.seg.Name()
	f.seg.Close()
	if unlink {
		shm.Unlink(name)
	}
}

// Base is the word's value now: a cell's children sleep for messages
// counted from it (Sleep).
func (f *Floor) Base() uint32 { return f.seq.Load() }

// Sleepers is how many children are about to sleep or sleep on the word.
func (f *Floor) Sleepers() int { return int(f.waiters.Load()) }

// Wake waits until pause has passed since since (a spin: the waker's own
// sleep would add its wake-up), then stamps t0, bumps the word and wakes
// every sleeper; it returns t0.
func (f *Floor) Wake(since time.Time, pause time.Duration) time.Time {
	for time.Since(since) < pause {
	}
	t0 := time.Now()
	f.seg.Uint64(floorStamp).Store(uint64(t0.UnixNano()))
	f.seq.Add(1)
	shm.WakeAll(f.seq)
	return t0
}

// ErrParentGone is Sleep's error when the parent process exited.
var ErrParentGone = errors.New("the benchmark process exited")

// Sleep (a child): count itself as about to sleep, sleep on the word
// until the parent has bumped it for message i of a cell that began at
// base (Base), and return now − t0 in ns. It checks once a second that
// its parent, ppid, still runs.
func (f *Floor) Sleep(i int, base uint32, ppid int) (int64, error) {
	f.waiters.Add(1)
	defer f.waiters.Add(^uint32(0))
	for {
		v := f.seq.Load()
		if v-base > uint32(i) {
			break
		}
		if shm.Wait(f.seq, v, time.Second) == shm.ErrTimeout && os.Getppid() != ppid {
			return 0, ErrParentGone
		}
	}
	return time.Now().UnixNano() - int64(f.seg.Uint64(floorStamp).Load()), nil
}
