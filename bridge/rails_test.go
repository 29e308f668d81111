package bridge

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// railsOf is the rails of br's links of a role, as their goroutines have
// them now.
func railsOf(br *Bridge, writer bool) []*railSet {
	br.mu.Lock()
	var ls []*link
	for _, p := range br.peers {
		if writer {
			for _, l := range p.writers {
				ls = append(ls, &l.link)
			}
		} else {
			for _, l := range p.readers {
				ls = append(ls, &l.link)
			}
		}
	}
	br.mu.Unlock()
	var out []*railSet
	for _, l := range ls {
		if r := l.railsNow.Load(); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// railMsg is message i: its index, then bytes that depend on it.
func railMsg(i, n int) []byte {
	b := make([]byte, n)
	for k := range b {
		b[k] = byte(i*7 + k*13 + k>>10)
	}
	binary.LittleEndian.PutUint32(b, uint32(i))
	return b
}

// One topic over three rails: messages striped over them (a 1 MiB message
// in chunks of 256 KiB on every rail, small ones between) arrive intact,
// in order and once each, while single rails fail, on the writer's side
// and on the reader's (closing one connection): the link goes down with
// every rail, the writer sends what was not acknowledged again over the
// new rails, and the reader drops what it had already delivered.
func TestRailFailure(t *testing.T) {
	a, b := pair(t, "tcp", func(o *Options) { o.Rails, o.MaxChunk = 3, 256<<10 })
	sub, pub := endpoints(t, a, b, "/rails", reliable())
	testutil.Eventually(t, 10*time.Second, "the rails are up", func() bool {
		return len(railsOf(a, true)) == 1 && len(railsOf(b, false)) == 1
	})
	sizes := []int{1 << 20, 3000, 1<<20 + 777, 64 << 10, 4, 600 << 10}
	const count = 200
	errc := make(chan error, 1)
	go func() {
		for i := range count {
			if err := pub.Publish(railMsg(i, sizes[i%len(sizes)])); err != nil {
				errc <- fmt.Errorf("publish %d: %w", i, err)
				return
			}
		}
		errc <- nil
	}()
	stop := make(chan struct{})
	broken := make(chan int, 1)
	go func() { // one rail's connection fails, now and then
		n := 0
		defer func() { broken <- n }()
		for k := range 8 {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			rs := railsOf(a, true)
			if k%2 == 1 {
				rs = railsOf(b, false)
			}
			for _, r := range rs {
				r.rails[(k/2)%len(r.rails)].ep.Close()
				n++
			}
		}
	}()
	for i := range count {
		smp, err := sub.TakeWait(20 * time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := railMsg(i, sizes[i%len(sizes)]); !bytes.Equal(smp.Bytes(), want) {
			got := -1
			if smp.Size() >= 4 {
				got = int(binary.LittleEndian.Uint32(smp.Bytes()))
			}
			t.Fatalf("message %d: got %d bytes (index %d), want %d bytes", i, smp.Size(), got, len(want))
		}
		smp.Return()
	}
	close(stop)
	n := <-broken
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if smp, err := sub.TakeWait(200 * time.Millisecond); err == nil {
		t.Fatalf("an extra message of %d bytes (a duplicate)", smp.Size())
	}
	var failures, resent, records uint64
	for _, p := range a.Status().Peers {
		for _, l := range p.Links {
			failures += l.Failures
			resent += l.Resent
			records += l.Records
		}
	}
	t.Logf("%d rails broken, %d link failures, %d records (%d resent)", n, failures, records, resent)
	if n == 0 || failures == 0 {
		t.Errorf("no rail failed (%d broken, %d failures): the test tested nothing", n, failures)
	}
}

// A large message is cut into chunks that go over every rail, and each
// rail carries records.
func TestRailsStripe(t *testing.T) {
	for _, prov := range []string{"tcp", "fabric:tcp"} {
		t.Run(prov, func(t *testing.T) {
			a, b := pair(t, prov, func(o *Options) { o.Rails = 4 })
			exchange(t, a, b, "/stripe", reliable(), []int{4 << 20, 100, 8 << 20})
			rs := railsOf(a, true)
			if len(rs) != 1 || len(rs[0].rails) != 4 {
				t.Fatalf("writer rails: %d sets", len(rs))
			}
			for i, r := range rs[0].rails {
				// The hello, then at least a record's header and payload.
				if w := r.ep.Stats().Writes; w < 3 {
					t.Errorf("rail %d posted %d writes: the message was not striped over it", i, w)
				}
			}
		})
	}
}

// A rail's spin follows a steady stream: arrivals 1 ms apart (a striped
// message's records together count once) earn twice that, a camera's
// 33 ms keep the short spin, and no stream keeps it too.
func TestRailSpinFollowsStream(t *testing.T) {
	var i railIdle
	if got := i.spin(); got != railSpin {
		t.Fatalf("no stream: spin %v, want %v", got, railSpin)
	}
	t0 := time.Unix(0, 0)
	for k := range 20 {
		at := t0.Add(time.Duration(k) * time.Millisecond)
		for r := range 4 { // a message striped over 4 rails: 4 arrivals at once
			i.got(at.Add(time.Duration(r) * time.Microsecond))
		}
	}
	if got := i.spin(); got < 1900*time.Microsecond || got > 2*time.Millisecond {
		t.Fatalf("1 ms stream: spin %v, want about 2ms", got)
	}
	var c railIdle
	for k := range 10 {
		c.got(t0.Add(time.Duration(k) * 33 * time.Millisecond))
	}
	if got := c.spin(); got != railSpin {
		t.Fatalf("33 ms stream: spin %v, want %v", got, railSpin)
	}
	var f railIdle
	for k := range 10 {
		f.got(t0.Add(time.Duration(k) * 100 * time.Microsecond))
	}
	if got := f.spin(); got != railSpin {
		t.Fatalf("100 µs stream: spin %v, want %v (never under railSpin)", got, railSpin)
	}
	var s railIdle
	for k := range 10 {
		s.got(t0.Add(time.Duration(k) * 4 * time.Millisecond))
	}
	if got := s.spin(); got != railSpinMost {
		t.Fatalf("4 ms stream: spin %v, want %v (at most railSpinMost)", got, railSpinMost)
	}
}
