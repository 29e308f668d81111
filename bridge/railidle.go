package bridge

import (
	"errors"
	"runtime"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/internal/pause"
)

// Idle rails (§3.9 "Rails", "Idle links").
//
// Software providers move bytes only while polled, so a pump polls
// without sleeping while its writes are on the way and for railSpin after
// it last moved something, then, while it expects traffic (a reader, a
// writer's rail 0 with records awaiting their write-back), with a growing
// backoff. After railDoze of that it sleeps in the kernel on its
// endpoint's wait object (transport.Endpoint.Sleep: libfabric's
// completion-queue descriptor, the plain TCP socket), which the peer's
// bytes, a bye, or a kick (writes queued, another rail's traffic, the
// link closing) end. A pump that expects nothing (a writer's rail with
// nothing in flight) waits for a kick at once after railSpin: nothing
// comes from the reader unasked but the head write-backs of records in
// flight, which keep its rail 0 polling, and the peer's death is found
// by the control connection's heartbeats.
//
// An endpoint without a wait object (libfabric shm in 1.17) cannot sleep
// so. A reader's rail then asks its writer for a doorbell: after
// railDoorbell of polling it sends msgDoze with the count of immediates
// its endpoint received, and waits for a kick; the writer answers with
// msgWake at once if it handed that rail more immediates than that, or
// else with its next one (writerBell). The count closes the race between
// a doze and a record already on its way; the doze's number lets the
// writer ignore one overtaken by a newer (the two may travel on different
// control connections).
//
// No sleep lasts longer than railSafety: should a wake not come (none
// should), the pump finds the traffic then; such finds are counted
// (railSet.late, TestIdleLinkWakes checks there are none).
const (
	// railSpin is how long a rail that expects traffic keeps polling
	// without sleeping after it last moved something: a record's bytes
	// land over many polls before its completion says so, and a poller
	// that sleeps meanwhile lets the socket buffers fill and the peer
	// stall. A poll that took longer than pollMoving moved bytes (one that
	// finds nothing returns in a few microseconds), so the window stays
	// open while a record streams in.
	railSpin   = 500 * time.Microsecond
	pollMoving = 20 * time.Microsecond
	// railSpinMost bounds the spin a steady stream earns (railIdle.spin):
	// messages that come closer than this apart are waited for polling,
	// so each one does not begin with a pump's sleep and wake.
	railSpinMost = 5 * time.Millisecond
	// railDoze is how long a rail that expects traffic backs off before it
	// sleeps in the kernel; railDoorbell the same for a reader's rail that
	// needs a doorbell (two control messages per quiet spell).
	railDoze     = 10 * time.Millisecond
	railDoorbell = 20 * time.Millisecond
	// railSafety bounds every sleep of a pump.
	railSafety = time.Second
)

// railIdle is a pump's own state for its pauses.
type railIdle struct {
	// canSleep: the endpoint sleeps in the kernel (false once its Sleep
	// said transport.ErrNotSupported).
	canSleep bool
	// seq numbers the dozes announced (doorbell); dozing: the last one
	// holds (no kick and nothing moved since).
	seq    uint64
	dozing bool
	// timedOut: the last sleep ended by railSafety, not by a wake.
	timedOut bool
	// lastGot is when the peer's traffic last came (an immediate or a new
	// word), gap the moving average of the times between its arrivals
	// (those over railGapLeast apart: a striped message's records come
	// together), so spin can follow the stream.
	lastGot time.Time
	gap     time.Duration
}

// railGapLeast: arrivals closer together than this are one burst.
const railGapLeast = 50 * time.Microsecond

// got records an arrival of the peer's traffic at now.
func (i *railIdle) got(now time.Time) {
	if !i.lastGot.IsZero() {
		if d := now.Sub(i.lastGot); d >= railGapLeast {
			if i.gap == 0 {
				i.gap = d
			} else {
				i.gap = (3*i.gap + d) / 4
			}
		}
	}
	i.lastGot = now
}

// spin is how long the pump keeps polling after it last moved something:
// railSpin, or twice the stream's usual gap when its messages come closer
// than railSpinMost apart (at most that), so that a steady stream's next
// message finds the pump polling. A stream of a few messages a second
// (a camera's frames) keeps railSpin: its pumps would spin most of the
// time for nothing.
func (i *railIdle) spin() time.Duration {
	if i.gap == 0 || i.gap > railSpinMost {
		return railSpin
	}
	return min(max(2*i.gap, railSpin), railSpinMost)
}

// pause waits after a pass that moved nothing (see above). sending: the
// rail's writes are on the way; expect: traffic from the peer is
// expected. It reports whether a kick ended it.
func (r *rail) pause(spins int, sending, expect bool, timer *pause.Timer) bool {
	quiet := time.Since(r.active)
	if sending {
		// Writes on the way: a software provider moves their bytes only
		// while polled, so the pump keeps its thread (sched_yield here
		// cost a quarter of four shm rails' throughput at 64 MiB on the
		// 16-core GPU host).
		runtime.Gosched()
		return r.kicked()
	}
	if quiet < r.idle.spin() {
		pause.Yield()
		return r.kicked()
	}
	if expect {
		pp := r.poll
		if spins < pp.yields {
			pause.Yield()
			return r.kicked()
		}
		if quiet < r.dozeAfter() {
			return r.timed(min(time.Duration(spins-pp.yields+1)*pp.step, pp.most), timer)
		}
	}
	return r.sleep(expect, timer)
}

// dozeAfter is how long a rail that expects traffic backs off before it
// sleeps.
func (r *rail) dozeAfter() time.Duration {
	switch {
	case r.idle.canSleep:
		return railDoze
	case r.set.reader && r.set.doze != nil:
		return railDoorbell
	}
	return railSafety // no way to sleep: keep polling (see sleep)
}

// sleep is an idle pump's wait. A rail that expects traffic sleeps in the
// kernel where its endpoint can, else, a reader's, for a kick after
// announcing a doze (one with no doorbell keeps polling at its backoff's
// slowest pace). A rail that expects nothing waits for a kick alone: a
// channel receive costs no system call, where a sleep in the kernel costs
// a few at each end, and a writer's rail goes idle between the records of
// a stream.
func (r *rail) sleep(expect bool, timer *pause.Timer) bool {
	if r.kicked() {
		return true
	}
	if expect && r.idle.canSleep {
		r.asleep.Store(true)
		r.set.sleeps.Add(1)
		err := r.ep.Sleep(railSafety)
		r.asleep.Store(false)
		switch {
		case err == nil:
			return r.kicked()
		case errors.Is(err, transport.ErrTimeout):
			r.idle.timedOut = true
			return r.kicked()
		case errors.Is(err, transport.ErrNotSupported):
			r.idle.canSleep = false
		default:
			return false // closed or failed: the next poll reports it
		}
	}
	s := r.set
	switch {
	case expect && s.reader && s.doze != nil:
		if !r.idle.dozing {
			r.idle.seq++
			if !s.doze(r.i, r.idle.seq, r.ep.Stats().Imms) {
				return r.timed(idlePoll(r.poll), timer) // no doorbell now
			}
			r.idle.dozing = true
			s.dozed.Add(1)
		}
	case expect:
		return r.timed(idlePoll(r.poll), timer)
	}
	r.asleep.Store(true)
	k := r.timed(railSafety, timer)
	r.asleep.Store(false)
	r.idle.timedOut = !k
	return k
}

// idlePoll is the pause of a rail that expects traffic, cannot sleep and
// has no doorbell (a peer of an older release, a doze that could not be
// sent), once its backoff is over: at least a millisecond, so that
// polling for its whole idle life costs about a thousand wake-ups a second
// (pp.most's 200 µs, once Go's timers no longer stretched them, would be
// five thousand).
func idlePoll(pp pollPolicy) time.Duration { return max(pp.most, time.Millisecond) }

// kicked takes a pending kick, if any: the pump is active again.
func (r *rail) kicked() bool {
	select {
	case <-r.kick:
		r.woken()
		return true
	default:
		return false
	}
}

// timed waits d or for a kick; it reports whether a kick ended it.
func (r *rail) timed(d time.Duration, timer *pause.Timer) bool {
	timer.Reset(d)
	select {
	case <-r.kick:
		timer.Stop() // no stale tick after Stop or Reset
		r.woken()
		return true
	case <-timer.C():
		return false
	}
}

// woken: a kick came (writes queued, another rail's traffic, a doorbell,
// the link closing): the rail counts as active again, and a doze it
// announced is over (the next one is announced anew).
func (r *rail) woken() {
	r.active = time.Now()
	r.idle.dozing = false
}

// railBell is a link's doorbell hooks. A reader's doze announces that its
// rail stops polling (msgDoze; false: no doorbell now, keep polling); it
// runs on the rail's pump. A writer's ring tells a dozing reader's rail
// that more is written on it (msgWake); it runs on the link's goroutine.
type railBell struct {
	doze func(rail int, seq, imms uint64) bool
	ring func(rail int, seq uint64)
}

// writerBell is a writer's rail's doorbell state (the link goroutine's
// own): the immediates it handed the rail, and the reader's newest doze.
type writerBell struct {
	imms  uint64 // immediates handed to the endpoint, its hello included
	seq   uint64 // the newest doze of the reader's rail seen
	armed bool   // that doze holds: ring at the next immediate
}

// pushed counts an immediate handed to rail r and rings the doorbell if
// the reader's rail dozes.
func (b *writerBell) pushed(r *rail, ring func(rail int, seq uint64)) {
	b.imms++
	if b.armed && ring != nil {
		b.armed = false
		ring(r.i, b.seq)
		r.set.rung.Add(1)
	}
}

// dozes applies a reader's doze of rail i: number seq, after its
// endpoint received imms immediates. Called on the writer link's
// goroutine.
func (s *railSet) dozes(i int, seq, imms uint64) {
	if i < 0 || i >= len(s.rails) || s.ring == nil {
		return
	}
	b := &s.rails[i].bell
	if seq <= b.seq {
		return // overtaken by a newer doze
	}
	b.seq = seq
	if b.imms > imms {
		b.armed = false
		s.ring(i, seq) // more is on its way already
		s.rung.Add(1)
		return
	}
	b.armed = true
}
