package transport

import (
	"runtime"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/pause"
)

// Helpers every implementation's waits share.

// PollWait calls poll until it returns an immediate or an error, or
// timeout passes (then 0, nil): Endpoint.Wait for every implementation.
func PollWait(poll func([]uint64) (int, error), imms []uint64, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for spins := 0; ; spins++ {
		n, err := poll(imms)
		if n > 0 || err != nil {
			return n, err
		}
		if time.Now().After(deadline) {
			return 0, nil
		}
		Backoff(spins)
	}
}

// Backoff is the pause after the spins-th progress attempt that found
// nothing: a few yields, then sleeps growing to 320µs, so a waiting side
// still progresses transfers often without holding a core. The yields are
// to goroutines only (runtime.Gosched, not pause.Yield): the waits that
// use Backoff wait for the caller's own transfers (a fence, a full
// transmit queue, a flush), which a software provider moves only while
// polled.
func Backoff(spins int) {
	switch {
	case spins < 4096:
		runtime.Gosched()
	case spins < 4096+64:
		pause.Sleep(time.Duration(spins-4095) * 5 * time.Microsecond)
	default:
		pause.Sleep(320 * time.Microsecond)
	}
}
