package bridge

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Returning the heap a burst of control-plane work leaves free.
//
// Setting up many topics (statements of megabytes of JSON from a peer,
// the local graph read again, a thousand bridge endpoints opened) leaves
// the daemon's heap with megabytes it no longer uses, which the Go
// runtime's background scavenger hands back to the system only slowly,
// and only down to the next collection's goal (about 10 MiB of a daemon
// of a thousand topics were still resident half a minute later). So once
// the control plane has been quiet for trimQuiet after such work, the
// bridge returns the free heap at once (debug.FreeOSMemory: a collection,
// then a scavenge), provided trimMin bytes were allocated since it last
// did (so small, frequent changes cost no collection each). trimLoop reads
// trimMin when it starts. Nothing is
// periodic: an idle daemon that trimmed waits for the next burst.
const trimQuiet = time.Second

// trimMin is the heap allocated since the last trim that makes a quiet
// spell trim (a variable for tests).
var trimMin uint64 = 4 << 20

// noteBurst tells the trimmer that control-plane work allocated (a
// statement applied, the local graph read, topics opened or closed).
func (b *Bridge) noteBurst() {
	select {
	case b.burst <- struct{}{}:
	default:
	}
}

// trimLoop is the trimmer's goroutine.
func (b *Bridge) trimLoop() {
	defer b.wg.Done()
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	last, least := allocated(), trimMin
	for {
		select {
		case <-b.quit:
			quiet.Stop()
			return
		case <-b.burst:
			quiet.Reset(trimQuiet)
		case <-quiet.C:
			if a := allocated(); a-last >= least {
				debug.FreeOSMemory()
				last = a
				b.trims.Add(1)
			}
		}
	}
}

// allocated is the bytes the process has allocated on the heap so far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
