package bridge

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// allAsleep reports whether every rail of br's links of a role sleeps (in
// the kernel, or for a kick after a doze).
func allAsleep(br *Bridge, writer bool) bool {
	rs := railsOf(br, writer)
	if len(rs) == 0 {
		return false
	}
	for _, s := range rs {
		for _, r := range s.rails {
			if !r.asleep.Load() {
				return false
			}
		}
	}
	return true
}

// railCounts sums a counter over the rail sets of br's links of a role.
func railCounts(br *Bridge, writer bool, f func(*railSet) uint64) uint64 {
	var n uint64
	for _, s := range railsOf(br, writer) {
		n += f(s)
	}
	return n
}

// sender returns a function that publishes messages of the sizes given
// (railMsg, numbered on from the last call's) and checks that sub gets
// each, intact and in order.
func sender(t *testing.T, sub *zerocopy.Subscription, pub *zerocopy.Publisher) func(sizes ...int) {
	next := 0
	return func(sizes ...int) {
		t.Helper()
		first := next
		for _, n := range sizes {
			if err := pub.Publish(railMsg(next, n)); err != nil {
				t.Fatal(err)
			}
			next++
		}
		for i, n := range sizes {
			smp, err := sub.TakeWait(20 * time.Second)
			if err != nil {
				t.Fatalf("message %d: %v", first+i, err)
			}
			if !bytes.Equal(smp.Bytes(), railMsg(first+i, n)) {
				t.Fatalf("message %d: %d bytes, not the %d published", first+i, smp.Size(), n)
			}
			smp.Return()
		}
	}
}

// An idle link goes to sleep on both sides (every rail: in the kernel on
// its endpoint's wait object, or, where the endpoint has none, libfabric
// shm, after asking the writer for a doorbell), and still delivers: the
// next message after the quiet spell, one after a spell longer than the
// sleeps' safety timeout, and a burst of mixed sizes (striped over the
// rails), every byte checked, in order; no wake is missed (none is found
// by a safety timeout instead).
func TestIdleLinkWakes(t *testing.T) {
	for _, c := range []struct {
		prov  string
		rails int
	}{{"tcp", 1}, {"fabric:tcp", 1}, {"fabric:tcp", 3}, {"fabric:shm", 1}, {"fabric:shm", 3}} {
		t.Run(fmt.Sprintf("%s/%d-rails", c.prov, c.rails), func(t *testing.T) {
			a, b := pair(t, c.prov, func(o *Options) { o.Rails, o.MaxChunk = c.rails, 256<<10 })
			sub, pub := endpoints(t, a, b, "/idle", reliable())
			send := sender(t, sub, pub)
			asleep := func(what string) {
				t.Helper()
				testutil.Eventually(t, 20*time.Second, what+": every rail of both links sleeps", func() bool {
					return allAsleep(a, true) && allAsleep(b, false)
				})
			}
			send(64)
			asleep("after the first message")
			send(300 << 10)
			asleep("after a message")
			time.Sleep(railSafety + 300*time.Millisecond) // a spell longer than a sleep lasts
			send(5)
			asleep("after a long spell")
			var burst []int
			for i := 0; i < 200; i++ {
				burst = append(burst, []int{64, 4096, 1 << 20, 100 << 10, 4}[i%5])
			}
			send(burst...)
			if smp, err := sub.TakeWait(100 * time.Millisecond); err == nil {
				t.Fatalf("an extra message of %d bytes", smp.Size())
			}
			reader := func(f func(*railSet) uint64) uint64 { return railCounts(b, false, f) }
			writer := func(f func(*railSet) uint64) uint64 { return railCounts(a, true, f) }
			late := func(s *railSet) uint64 { return s.late.Load() }
			if n := reader(late) + writer(late); n != 0 {
				t.Errorf("%d sleeps ran into their safety timeout and found traffic: a wake was missed", n)
			}
			sleeps := reader(func(s *railSet) uint64 { return s.sleeps.Load() })
			dozed := reader(func(s *railSet) uint64 { return s.dozed.Load() })
			rung := writer(func(s *railSet) uint64 { return s.rung.Load() })
			t.Logf("reader: %d kernel sleeps, %d dozes; writer: %d doorbells", sleeps, dozed, rung)
			if c.prov == "fabric:shm" {
				if dozed == 0 || rung == 0 {
					t.Errorf("shm has no wait object: the reader's rails doze and the writer rings (%d dozes, %d doorbells)", dozed, rung)
				}
			} else if sleeps == 0 || dozed != 0 {
				t.Errorf("%s: the reader's rails sleep in the kernel (%d sleeps, %d dozes)", c.prov, sleeps, dozed)
			}
		})
	}
}

// An idle link waits for its wake, not for time: while nothing moves, its
// goroutine makes no passes (the writer's would wait on every topic's word
// again at each).
func TestIdleLinkMakesNoPasses(t *testing.T) {
	a, b := pair(t, "fabric:tcp", nil)
	var subs []*zerocopy.Subscription
	for k := 0; k < 20; k++ {
		sub, pub := endpoints(t, a, b, fmt.Sprintf("/quiet%d", k), reliable())
		if err := pub.Publish([]byte("x")); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, sub)
	}
	for _, sub := range subs {
		smp, err := sub.TakeWait(20 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		smp.Return()
	}
	testutil.Eventually(t, 20*time.Second, "every rail of both links sleeps", func() bool {
		return allAsleep(a, true) && allAsleep(b, false)
	})
	before := linkPasses(a) + linkPasses(b)
	time.Sleep(time.Second)
	if n := linkPasses(a) + linkPasses(b) - before; n != 0 {
		t.Errorf("idle links made %d passes within a second", n)
	}
}

// linkPasses sums the passes of br's links.
func linkPasses(br *Bridge) uint64 {
	br.mu.Lock()
	defer br.mu.Unlock()
	var n uint64
	for _, p := range br.peers {
		for _, l := range p.writers {
			n += l.passes.Load()
		}
		for _, l := range p.readers {
			n += l.passes.Load()
		}
	}
	return n
}

// A writer's rail 0 that waits for a kick alone (nothing was in flight)
// is kicked when records go out on another rail (a wrapped record goes on
// the previous record's rail, not on rail 0): the reader's head
// write-back comes on rail 0, and was found only by rail 0's safety
// timeout (1 s), the writer's ring held meanwhile.
func TestWriterRail0KickedWhenRecordsGoOut(t *testing.T) {
	a, b := pair(t, "tcp", func(o *Options) { o.Rails, o.MaxChunk, o.RingSize = 3, 256<<10, 1<<20 })
	sub, pub := endpoints(t, a, b, "/wrap", reliable())
	send := sender(t, sub, pub)
	asleep := func() {
		t.Helper()
		testutil.Eventually(t, 20*time.Second, "asleep", func() bool { return allAsleep(a, true) && allAsleep(b, false) })
	}
	late := func() uint64 { return railCounts(a, true, func(s *railSet) uint64 { return s.late.Load() }) }
	send(64)
	asleep()
	for it := 0; it < 4; it++ {
		send(150<<10, 150<<10, 150<<10) // a burst: round robin over the rails
		asleep()
		time.Sleep(20 * time.Millisecond)
		send(230 << 10) // lone: on rail 0, unless it wraps (then on the burst's last rail)
		time.Sleep(railSafety + 300*time.Millisecond)
		if n := late(); n != 0 {
			t.Fatalf("iteration %d: the writer's rails found %d head write-backs by their safety timeout (rail 0 was not kicked)", it, n)
		}
	}
}
