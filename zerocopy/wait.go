package zerocopy

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// Waitable is anything a wait set can wait for: a subscription (a sample is
// queued), a guard condition (it was triggered), an endpoint status event
// or the graph. Ready must be cheap and must not block.
type Waitable interface {
	Ready() bool
	// word returns the futex word whose change may make Ready true, and a
	// counter of blocked waiters that the notifier reads (nil if it always
	// wakes).
	word() (w, waiters *atomic.Uint32)
	// hold keeps the item's mappings alive for the wait (false: closed);
	// release ends that; gone reports a Close since hold.
	hold() bool
	release()
	gone() bool
	readyHeld() bool // Ready, for a caller that holds the item
}

func (s *Subscription) readyHeld() bool    { return s.ready() }
func (g *GuardCondition) readyHeld() bool  { return g.Ready() }
func (g *GraphCondition) readyHeld() bool  { return g.Ready() }
func (c *StatusCondition) readyHeld() bool { return c.Ready() }

func (s *Subscription) word() (*atomic.Uint32, *atomic.Uint32) { return s.t.pubSeq, s.t.pubWaiters }
func (e *endpoint) hold() bool                                 { return e.enter() }
func (e *endpoint) release()                                   { e.exit() }
func (e *endpoint) gone() bool                                 { return e.closed.Load() }

// always is the hold/release/gone of process-local conditions.
type always struct{}

func (always) hold() bool { return true }
func (always) release()   {}
func (always) gone() bool { return false }

// GuardCondition is a flag another goroutine or a signal handler raises to
// wake a wait set. It belongs to one process.
type GuardCondition struct {
	always
	d       *Domain
	w       *atomic.Uint32
	trigger atomic.Bool
}

// NewGuardCondition creates an untriggered guard condition.
func (d *Domain) NewGuardCondition() *GuardCondition {
	return &GuardCondition{d: d, w: d.word()}
}

// Trigger raises the condition and wakes waiters.
func (g *GuardCondition) Trigger() {
	g.trigger.Store(true)
	g.w.Add(1)
	shm.WakeAll(g.w)
}

// Ready reports whether the condition is raised.
func (g *GuardCondition) Ready() bool { return g.trigger.Load() }

// Reset lowers the condition (rmw_wait does this for the guard conditions it
// reports ready).
func (g *GuardCondition) Reset() { g.trigger.Store(false) }

// Close gives the condition's word back.
func (g *GuardCondition) Close() {
	if g.w != nil {
		g.d.putWord(g.w)
		g.w = nil
	}
}

func (g *GuardCondition) word() (*atomic.Uint32, *atomic.Uint32) { return g.w, nil }

// GraphCondition is ready when the domain's graph changed since it was last
// Reset.
type GraphCondition struct {
	always
	d    *Domain
	seen atomic.Uint32
}

// NewGraphCondition creates a condition that fires on graph changes.
func (d *Domain) NewGraphCondition() *GraphCondition {
	g := &GraphCondition{d: d}
	g.seen.Store(d.graph.Load().generation())
	return g
}

// Ready reports a graph change since the last Reset.
func (g *GraphCondition) Ready() bool { return g.d.graph.Load().generation() != g.seen.Load() }

// Reset acknowledges the changes seen so far.
func (g *GraphCondition) Reset() { g.seen.Store(g.d.graph.Load().generation()) }

func (g *GraphCondition) word() (*atomic.Uint32, *atomic.Uint32) { return g.d.graph.Load().gen, nil }

// StatusCondition is ready when an endpoint's status changed since Reset.
type StatusCondition struct {
	e    *endpoint
	seen atomic.Uint32
}

// StatusCondition returns a condition that fires when the endpoint's status
// (matches, deadlines, liveliness, incompatible QoS) changes.
func (e *endpoint) StatusCondition() *StatusCondition {
	c := &StatusCondition{e: e}
	c.seen.Store(e.event.Load())
	return c
}

// Ready reports a status change since the last Reset.
func (c *StatusCondition) Ready() bool { return c.e.event.Load() != c.seen.Load() }

// Reset acknowledges the changes seen so far.
func (c *StatusCondition) Reset() { c.seen.Store(c.e.event.Load()) }

func (c *StatusCondition) word() (*atomic.Uint32, *atomic.Uint32) { return c.e.event, nil }
func (c *StatusCondition) hold() bool                             { return c.e.enter() }
func (c *StatusCondition) release()                               { c.e.exit() }
func (c *StatusCondition) gone() bool                             { return c.e.closed.Load() }

// Wait blocks until at least one item is ready or the timeout passes
// (negative: forever), and reports which are ready in ready (len(items)).
// It returns ErrTimeout when none is. One kernel wait covers every item
// (futex_waitv), wherever its word lives; with busyPoll > 0 it spins that
// long first.
// An item closed before or during the wait makes it return ErrClosed.
func Wait(items []Waitable, ready []bool, timeout, busyPoll time.Duration) error {
	for i, it := range items {
		if !it.hold() {
			for _, h := range items[:i] {
				h.release()
			}
			return ErrClosed
		}
	}
	defer func() {
		for _, it := range items {
			it.release()
		}
	}()
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	check := func() bool {
		any := false
		for i, it := range items {
			ready[i] = it.readyHeld()
			any = any || ready[i]
		}
		return any
	}
	closed := func() bool {
		for _, it := range items {
			if it.gone() {
				return true
			}
		}
		return false
	}
	if busyPoll > 0 {
		end := time.Now().Add(busyPoll)
		for i := 0; ; i++ {
			if check() {
				return nil
			}
			if i&15 == 15 {
				if time.Now().After(end) {
					break
				}
				runtime.Gosched()
			}
		}
	}
	ws := make([]shm.Waiter, 0, len(items))
	counters := make([]*atomic.Uint32, 0, len(items))
	var seen map[*atomic.Uint32]bool
	if len(items) > dedupScan {
		seen = make(map[*atomic.Uint32]bool, len(items))
	}
	for {
		fenced := shm.Fences() // before the check: a fence after it ends the wait
		ws, counters = ws[:0], counters[:0]
		clear(seen)
		for _, it := range items {
			w, c := it.word()
			if dup(ws, seen, w) { // subscriptions of one topic share a word
				continue
			}
			ws = append(ws, shm.Waiter{Word: w, Val: w.Load()})
			if c != nil {
				counters = append(counters, c)
			}
		}
		if closed() {
			return ErrClosed
		}
		if check() {
			return nil
		}
		// A subscription whose topic's file was truncated under this
		// process is found by the janitor, whose wake cannot reach a futex
		// on the lost pages: its fence wakes the wait instead (Ready then
		// reports it). No slices: an idle wait makes no wake-ups.
		left := time.Duration(-1)
		if timeout >= 0 {
			if left = time.Until(deadline); left <= 0 {
				return ErrTimeout
			}
		}
		for _, c := range counters {
			c.Add(1)
		}
		shm.WaitFenced(ws, fenced, left)
		for _, c := range counters {
			c.Add(^uint32(0))
		}
	}
}

// dedupScan is the most items whose words are told apart by a scan; more
// (a bridge link waiting on a thousand topics) use a map.
const dedupScan = 16

// dup reports whether w is among ws already (seen, when not nil, holds
// them all), and records it in seen.
func dup(ws []shm.Waiter, seen map[*atomic.Uint32]bool, w *atomic.Uint32) bool {
	if seen != nil {
		if seen[w] {
			return true
		}
		seen[w] = true
		return false
	}
	for _, x := range ws {
		if x.Word == w {
			return true
		}
	}
	return false
}

// WaitWord is a futex word and the value it held when a sleep was prepared:
// the sleeper waits while Word still holds Val.
type WaitWord struct {
	Word *atomic.Uint32
	Val  uint32
}

// Sleep is the blocking part of a Wait, done by its caller: the rmw library
// sleeps outside Go, on its caller's stack and with its signal mask.
type Sleep struct {
	items    []Waitable
	counters []*atomic.Uint32
}

// PrepareSleep holds items, reads their futex words (appended to words;
// items sharing a word give one), then reports in ready (len(items)) which
// items are ready. If one is, nothing is held and the Sleep is nil. If
// none is, the notifiers learn that a sleeper waits: the caller sleeps
// until a word differs from its value (futex_waitv, which checks that
// atomically, so a notification after PrepareSleep is not lost), a wake, a
// timeout or a signal, then calls Done and re-checks. A closed item makes
// it return ErrClosed.
func PrepareSleep(items []Waitable, ready []bool, words []WaitWord) (*Sleep, []WaitWord, error) {
	for i, it := range items {
		if !it.hold() {
			for _, h := range items[:i] {
				h.release()
			}
			return nil, words, ErrClosed
		}
	}
	s := &Sleep{items: items}
	first := len(words)
	var seen map[*atomic.Uint32]bool
	if len(items) > dedupScan {
		seen = make(map[*atomic.Uint32]bool, len(items))
	}
items:
	for _, it := range items {
		w, c := it.word()
		if seen != nil {
			if seen[w] {
				continue
			}
			seen[w] = true
		} else {
			for _, x := range words[first:] {
				if x.Word == w {
					continue items
				}
			}
		}
		words = append(words, WaitWord{Word: w, Val: w.Load()})
		if c != nil {
			s.counters = append(s.counters, c)
		}
	}
	any, closed := false, false
	for i, it := range items {
		ready[i] = it.readyHeld()
		any = any || ready[i]
		closed = closed || it.gone()
	}
	if closed || any {
		s.counters = nil
		s.Done()
		if closed {
			return nil, words[:first], ErrClosed
		}
		return nil, words[:first], nil
	}
	for _, c := range s.counters {
		c.Add(1)
	}
	return s, words, nil
}

// Done ends a sleep prepared by PrepareSleep: the notifiers no longer
// count the sleeper and the items are released.
func (s *Sleep) Done() {
	for _, c := range s.counters {
		c.Add(^uint32(0))
	}
	for _, it := range s.items {
		it.release()
	}
	s.items, s.counters = nil, nil
}
