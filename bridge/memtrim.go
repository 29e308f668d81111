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
// did (so small, frequent changes cost no collection each) and no link
// moved data during the spell: a stream would fault the heap in again
// (a trim in the middle of a 4 KiB stream cost it several per cent), so
// the trimmer then looks again each trimQuiet until a spell is quiet on
// both planes. trimLoop reads trimMin when it starts. An idle daemon that
// trimmed waits for the next burst: nothing is periodic.
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
	var moves uint64 // the data links' moves when the quiet spell began
	for {
		select {
		case <-b.quit:
			quiet.Stop()
			return
		case <-b.burst:
			moves = b.dataMoves()
			quiet.Reset(trimQuiet)
		case <-quiet.C:
			if m := b.dataMoves(); m != moves {
				// Data moved meanwhile: a collection and a scavenge now
				// would cost the stream (it would fault the heap in
				// again). Try again once the data path was quiet too.
				moves = m
				quiet.Reset(trimQuiet)
				continue
			}
			if a := allocated(); a-last >= least {
				debug.FreeOSMemory()
				last = a
				b.trims.Add(1)
			}
		}
	}
}

// dataMoves sums the passes in which the rails of every link moved
// something.
func (b *Bridge) dataMoves() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n uint64
	for _, p := range b.peers {
		for _, l := range p.writers {
			if rs := l.railsNow.Load(); rs != nil {
				n += rs.moves.Load()
			}
		}
		for _, l := range p.readers {
			if rs := l.railsNow.Load(); rs != nil {
				n += rs.moves.Load()
			}
		}
	}
	return n
}

// allocated is the bytes the process has allocated on the heap so far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
