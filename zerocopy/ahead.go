package zerocopy

import (
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Samples announced ahead (ARCHITECTURE §4 "Wake-ahead").
//
// A publish that must first copy its sample into the form a reader needs
// (a host loan to GPU readers: one host-to-device copy, about 120 µs for
// 4 MiB) announces the sample before the copy: it raises the topic's
// coming count and its announcement number (hComing, hComingSeq) and wakes
// the sleeping subscribers, which then poll for the sample instead of
// sleeping again. The kernel's wake-up of N processes (tens of
// microseconds, more the more processes) then runs during the copy instead
// of after it, and every subscriber is on a processor when the sample is
// queued. A waiter polls once per announcement (endpoint.spunFor), until
// a sample is ready, nothing is announced any more, or aheadPollMost
// passed: a publisher that died during its copy leaves the count raised,
// which costs each waiter one bounded poll, not a spin. Copies longer than
// wakeAheadMost bytes are not announced: their subscribers' wake-up is a
// small part of them, and pollers would spin through all of it; copies
// under wakeAheadLeast bytes are over before a sleeper would be back, and
// a stream of small messages would pay the announcement's writes to the
// shared header on each. Processes
// that ignore the words (older builds of TopicVersion 4) only wake once
// more.

const (
	// wakeAheadLeast and wakeAheadMost bound the copies announced ahead.
	wakeAheadLeast = 256 << 10
	wakeAheadMost  = 8 << 20
)

// aheadPollMost bounds a waiter's poll for an announced sample (an 8 MiB
// copy takes about 0.3 ms at PCIe Gen4 speed); a variable for tests.
var aheadPollMost = 2 * time.Millisecond

// aheadPolls counts the polls begun in this process (tests).
var aheadPolls atomic.Uint64

// announce tells the topic's waiters that a sample of size bytes is on
// its way; it reports whether it did (then unannounce must follow, once
// the sample is queued or the publish failed).
func (t *Topic) announce(size uint64) bool {
	if size < wakeAheadLeast || size > wakeAheadMost || t.d.cfg.NoWakeAhead {
		return false
	}
	t.comingSeq.Add(1)
	t.coming.Add(1)
	t.wakeSubscribers()
	return true
}

// unannounce ends an announcement.
func (t *Topic) unannounce() { t.coming.Add(^uint32(0)) }

// expecting reports whether a sample announced ahead is on its way to s
// and s has not polled for this announcement yet; it marks it polled.
func (s *Subscription) expecting() bool {
	t := s.t
	if t.coming.Load() == 0 {
		return false
	}
	seq := t.comingSeq.Load()
	return s.spunFor.Swap(seq) != seq
}

// coming reports whether a sample announced ahead is still on its way.
func (s *Subscription) coming() bool { return s.t.coming.Load() != 0 }

// Other waitables are never announced ahead.
func (always) expecting() bool           { return false }
func (always) coming() bool              { return false }
func (*StatusCondition) expecting() bool { return false }
func (*StatusCondition) coming() bool    { return false }

// anyExpecting is expecting over items (each is asked, so each marks the
// announcement polled).
func anyExpecting(items []Waitable) bool {
	any := false
	for _, it := range items {
		if it.expecting() {
			any = true
		}
	}
	return any
}

// anyComing is coming over items.
func anyComing(items []Waitable) bool {
	for _, it := range items {
		if it.coming() {
			return true
		}
	}
	return false
}

// pollAhead polls ready until it reports true (then so does pollAhead),
// coming reports false, or aheadPollMost passed. It gives the processor
// up now and then: the publisher, or another poller, may be waiting for
// it.
func pollAhead(ready, coming func() bool) bool {
	aheadPolls.Add(1)
	end := time.Now().Add(aheadPollMost)
	for i := 1; ; i++ {
		if ready() {
			return true
		}
		if i%16 == 0 {
			if !coming() || time.Now().After(end) {
				return ready()
			}
			runtime.Gosched()
			if i%256 == 0 {
				unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0) //nolint:errcheck // sched_yield cannot fail
			}
		}
	}
}

// Announce tells the subscribers sleeping on the topic that this loan
// will be published soon, so that they wake now and poll for it instead
// of waking after Publish (see above): for a writer that fills the loan
// with a copy of its own (the bridge placing a message from another
// host), called when the copy starts. Loans under wakeAheadLeast or over
// wakeAheadMost bytes are not announced; nor is a loan twice. Publish or Discard ends the
// announcement.
func (l *Loan) Announce() {
	if l.done || l.ahead || !l.p.enter() {
		return
	}
	defer l.p.exit()
	l.ahead = l.p.t.announce(uint64(l.size))
}
