package bridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// gateCopier is hostCopier with a gate: a copy of payload bytes from
// offset from on is reported done only once the gate is open, so the
// writer waits in the middle of a message with its first chunks posted.
type gateCopier struct {
	offs []uint64
	from uint64
	open *atomic.Bool
}

func (c *gateCopier) start(i int, dst []byte, smp *zerocopy.Sample, off uint64) error {
	src := smp.Bytes()
	if src == nil || off+uint64(len(dst)) > uint64(len(src)) {
		return fmt.Errorf("gateCopier: %d bytes at %d of a %d-byte sample", len(dst), off, len(src))
	}
	copy(dst, src[off:])
	c.offs[i] = off
	return nil
}

func (c *gateCopier) done(i int) (bool, error) { return c.open.Load() || c.offs[i] < c.from, nil }
func (c *gateCopier) wait() error              { return nil }
func (c *gateCopier) close()                   {}

// The remote reader restarts while the writer is in the middle of a
// multi-chunk message whose posted chunks were all acknowledged (the
// writer waits for a staging copy of the next chunk): the new reader
// must get the message from its first chunk. The writer used to send the
// next chunk first, which the new reader refuses, over and over.
func TestReaderRestartMidMessage(t *testing.T) {
	open := new(atomic.Bool)
	const chunk = 64 << 10
	stageHook = func(slots int) stageCopier {
		return &gateCopier{offs: make([]uint64, slots), from: 2 * chunk, open: open}
	}
	t.Cleanup(func() { stageHook = nil })
	mk := func(host, listen string, peers []control.Peer) *Bridge {
		br, err := New(Options{
			Engine:   zerocopy.Config{Prefix: testutil.Prefix() + host, PoolSize: 64 << 20, SkipStaleClean: true},
			Control:  control.Config{Listen: listen, Peers: peers, Secret: twoHostSecret, HostID: "host-" + host, Heartbeat: 100 * time.Millisecond, DeadAfter: time.Second},
			Provider: "tcp", RingSize: 1 << 20, MaxChunk: chunk, Log: testLog(t),
		})
		if err != nil {
			t.Fatal(err)
		}
		return br
	}
	// The publishing host a listens; the reading host b dials it, so b
	// can restart with nothing to reuse.
	a := mk("a", "127.0.0.1:0", nil)
	defer a.Close()
	peer := control.Peer{Host: "127.0.0.1", Port: a.listener.Addr().(*net.TCPAddr).Port}
	b := mk("b", "", []control.Peer{peer})
	q := reliable()
	subscribe := func(br *Bridge) *zerocopy.Subscription {
		sub, err := br.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/restart", Type: "std_msgs/msg/String", Node: "/l", QoS: q})
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}
	sub := subscribe(b)
	pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: "/restart", Type: "std_msgs/msg/String", Node: "/t", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	testutil.Eventually(t, 10*time.Second, "the bridge subscription matches", func() bool { return pub.Matched() > 0 })
	// Chunks 0 and 1 go and are acknowledged (the reader flushes its head
	// when idle); chunk 2's copy does not finish.
	msg := stagedMsg(1, 4*chunk+100)
	if err := pub.Publish(msg); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the first chunks are written and acknowledged", func() bool {
		var records uint64
		for _, p := range a.Status().Peers {
			for _, l := range p.Links {
				records += l.Records
			}
		}
		return records >= 2
	})
	time.Sleep(300 * time.Millisecond) // the idle reader's head write-back
	sub.Close()
	b.Close()
	b = mk("b", "", []control.Peer{peer})
	defer b.Close()
	sub = subscribe(b)
	defer sub.Close()
	testutil.Eventually(t, 10*time.Second, "the restarted reader's link is up", func() bool {
		return len(railsOf(a, true)) == 1 && len(railsOf(b, false)) == 1
	})
	time.Sleep(100 * time.Millisecond)
	open.Store(true)
	smp, err := sub.TakeWait(10 * time.Second)
	if err != nil {
		var failures uint64
		for _, p := range a.Status().Peers {
			for _, l := range p.Links {
				failures += l.Failures
			}
		}
		t.Fatalf("the message in flight across the reader's restart: %v (writer link failures %d)", err, failures)
	}
	if !bytes.Equal(smp.Bytes(), msg) {
		t.Fatalf("got %d bytes, want %d (intact)", smp.Size(), len(msg))
	}
	smp.Return()
	if err := pub.Publish(stagedMsg(2, 1000)); err != nil {
		t.Fatal(err)
	}
	smp, err = sub.TakeWait(10 * time.Second)
	if err != nil {
		t.Fatalf("the next message: %v", err)
	}
	if !bytes.Equal(smp.Bytes(), stagedMsg(2, 1000)) {
		t.Fatalf("the next message: %d bytes", smp.Size())
	}
	smp.Return()
}

// The publishing daemon restarts, and the reader offers its ring again
// before it took the new writer's accept: its Head still counts the old
// writer's stream. The new writer refused that Head ("head update passes
// tail") on every offer, and the link never came up again (seen once in
// about 100 runs of TestSlowlorisDuringPeerRestart on two loaded cores).
func TestWriterRestartBeforeReaderTookAccept(t *testing.T) {
	var fail atomic.Pointer[Bridge] // the bridge whose reader fails its next start
	startHook = func(l *readerLink, a *ringAccept) error {
		if fail.CompareAndSwap(l.b, nil) {
			return errors.New("test: the link fails before the accept is applied")
		}
		return nil
	}
	t.Cleanup(func() { startHook = nil }) // after the bridges' own cleanups
	mk := restartable(t, time.Second)
	b := mk("b", "127.0.0.1:0", nil)
	peer := control.Peer{Host: "127.0.0.1", Port: b.listener.Addr().(*net.TCPAddr).Port}
	a := mk("a", "", []control.Peer{peer})
	q := reliable()
	sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/restart", Type: "std_msgs/msg/String", Node: "/l", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sendFrom(t, a, sub, 1, 10, 100000) // b's reader now has a Head in a's stream
	a.Close()
	fail.Store(b)
	a = mk("a", "", []control.Peer{peer})
	sendFrom(t, a, sub, 3, 10, 100000)
	if fail.Load() != nil {
		t.Fatal("b's reader never took an accept from the restarted writer")
	}
}

// restartable returns a maker of loopback bridges for the restart tests
// (host ids "host-"+host, closed at the end of the test); deadAfter is how
// long a silent control connection is taken for alive; tune, if any,
// changes the options.
func restartable(t *testing.T, deadAfter time.Duration, tune ...func(*Options)) func(host, listen string, peers []control.Peer) *Bridge {
	return func(host, listen string, peers []control.Peer) *Bridge {
		o := Options{
			Engine:   zerocopy.Config{Prefix: testutil.Prefix() + host, PoolSize: 64 << 20, SkipStaleClean: true},
			Control:  control.Config{Listen: listen, Peers: peers, Secret: twoHostSecret, HostID: "host-" + host, Heartbeat: 100 * time.Millisecond, DeadAfter: deadAfter},
			Provider: "tcp", RingSize: 4 << 20, Log: testLog(t),
		}
		for _, f := range tune {
			f(&o)
		}
		br, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { br.Close() })
		return br
	}
}

// sendFrom publishes, from a publisher of its own on a (closed after),
// one message of each size on sub's topic once the bridge matched it, and
// checks that sub gets each intact; seed numbers the messages' contents.
// matchedPublisher opens a reliable publisher of topic in a's domain and
// waits until a's bridge subscription (a remote interest) matches it; the
// caller closes it.
func matchedPublisher(t *testing.T, a *Bridge, topic string) *zerocopy.Publisher {
	t.Helper()
	pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: "std_msgs/msg/String", Node: "/t", QoS: reliable()})
	if err != nil {
		t.Fatal(err)
	}
	matched := false
	defer func() {
		if !matched { // Eventually failed the test
			pub.Close()
		}
	}()
	testutil.Eventually(t, 20*time.Second, "the bridge subscription of "+topic+" matches", func() bool { return pub.Matched() > 0 })
	matched = true
	return pub
}

func sendFrom(t *testing.T, a *Bridge, sub *zerocopy.Subscription, seed int, sizes ...int) {
	t.Helper()
	pub := matchedPublisher(t, a, sub.Topic().Name())
	defer pub.Close()
	for i, n := range sizes {
		msg := stagedMsg(seed+i, n)
		if err := pub.Publish(msg); err != nil {
			t.Fatal(err)
		}
		smp, err := sub.TakeWait(20 * time.Second)
		if err != nil {
			t.Fatalf("message %d of writer %d: %v", i, seed, err)
		}
		if got := smp.Bytes(); !bytes.Equal(got, msg) {
			from := -1 // the seed the message carries (stagedMsg), when it has one
			if len(got) >= 4 {
				from = int(binary.LittleEndian.Uint32(got))
			}
			t.Fatalf("message %d of writer %d: %d bytes carrying seed %d, want %d bytes of seed %d (intact)", i, seed, smp.Size(), from, n, seed+i)
		}
		smp.Return()
	}
}
