package bridge

import (
	"bytes"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// peerState is what br knows of host's daemon: its instance, the
// connection its links use, and the connections refused as a displaced
// instance's.
func peerState(br *Bridge, host string) (instance uint64, live *control.Conn, duplicates uint64) {
	br.mu.Lock()
	defer br.mu.Unlock()
	if p := br.peers[host]; p != nil {
		return p.instance, p.live.Load(), p.duplicates
	}
	return 0, nil, 0
}

// Two live daemons given one host id (a configuration error) both dial a
// third. The newer displaces the older, as a restart would; the older's
// redials are then refused in the handshake, with the reason, so the
// newer's connection and links stay up and the two do not displace each
// other at every reconnect. When the newer goes, the older gets in.
func TestTwoLiveDaemonsOneHostID(t *testing.T) {
	mk := restartable(t, time.Minute)
	twin := restartable(t, time.Minute, func(o *Options) { o.Control.HostID = "host-twin" })
	c := mk("c", "127.0.0.1:0", nil)
	toC := []control.Peer{{Host: "127.0.0.1", Port: addr2port(t, c.ControlAddr())}}
	sub, err := c.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/twin", Type: "std_msgs/msg/String", Node: "/l", QoS: reliable()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	older := twin("twin1", "", toC)
	sendFrom(t, older, sub, 1, 1000)
	newer := twin("twin2", "", toC)
	testutil.Eventually(t, 20*time.Second, "c refuses the older twin's redials", func() bool {
		_, _, d := peerState(c, "host-twin")
		return d >= 2
	})
	inst, live, dups := peerState(c, "host-twin")
	if inst != newer.instance || live == nil {
		t.Fatalf("c knows host-twin as instance %016x (live %v), want the newer %016x", inst, live != nil, newer.instance)
	}
	sendFrom(t, newer, sub, 10, 1000, 100000)
	// Two more refusals later the newer still holds the id on the same
	// connection: nothing displaced it again.
	testutil.Eventually(t, 20*time.Second, "two more refusals", func() bool {
		_, _, d := peerState(c, "host-twin")
		return d >= dups+2
	})
	if inst2, live2, _ := peerState(c, "host-twin"); inst2 != newer.instance || live2 != live {
		t.Fatalf("after more refusals c knows instance %016x on another connection (%v), want %016x on the same", inst2, live2 != live, newer.instance)
	}
	if n := connsTo(older, "host-c"); n != 0 {
		t.Errorf("the older twin has %d control connections to c, want none", n)
	}
	if st := c.Status(); len(st.Peers) != 1 || st.Peers[0].Duplicates < dups+2 {
		t.Errorf("status peers %+v, want host-twin with at least %d duplicates", st.Peers, dups+2)
	}
	sendFrom(t, newer, sub, 20, 1000)
	// Once the newer is gone, the older, alive after all, is let in. Its
	// first message may come again before its new one, if c's head
	// write-back for it had not reached the older when it was displaced
	// (at least once across a displacement, ARCHITECTURE.md §3.9); nothing
	// else may.
	newer.Close()
	testutil.Eventually(t, 20*time.Second, "the older twin is let in", func() bool {
		inst, live, _ := peerState(c, "host-twin")
		return inst == older.instance && live != nil
	})
	pub, err := older.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: "/twin", Type: "std_msgs/msg/String", Node: "/t", QoS: reliable()})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	testutil.Eventually(t, 20*time.Second, "the bridge subscription matches", func() bool { return pub.Matched() > 0 })
	want := stagedMsg(30, 1000)
	if err := pub.Publish(want); err != nil {
		t.Fatal(err)
	}
	for again := 0; ; again++ {
		smp, err := sub.TakeWait(20 * time.Second)
		if err != nil {
			t.Fatalf("the older twin's message after it was let in: %v", err)
		}
		got := bytes.Clone(smp.Bytes())
		smp.Return()
		if bytes.Equal(got, want) {
			break
		}
		if again > 0 || !bytes.Equal(got, stagedMsg(1, 1000)) {
			t.Fatalf("after the older twin was let in, c delivered %d bytes that are neither its new message nor one redelivery of its first", len(got))
		}
	}
}

// A daemon that announces no instance (older than 2026-11-28) coming back
// while the connection of one that did is still taken for alive is
// another process: the old connection is closed and the links are brought
// up anew, as for a restart, and messages flow again.
func TestDowngradeToDaemonWithoutInstance(t *testing.T) {
	b, a := restartBeforeFoundDead(t, func() uint64 { return 0 })
	if a.instance != 0 {
		t.Fatalf("the downgraded daemon announces instance %016x, want none", a.instance)
	}
	if inst, _, _ := peerState(b, "host-a"); inst != 0 {
		t.Errorf("b knows host-a as instance %016x, want none", inst)
	}
}

// Three or more live daemons on one host id take turns redialing: each
// refused instance is said at Error once, not each time its turn comes
// after another's; one let in and displaced again is said again.
func TestDuplicateRefusalSaidOncePerInstance(t *testing.T) {
	p := &peer{superseded: []uint64{0xa, 0xb, 0xc}}
	for i, c := range []struct {
		inst uint64
		want slog.Level
	}{{0xa, slog.LevelError}, {0xb, slog.LevelError}, {0xa, slog.LevelDebug}, {0xc, slog.LevelError}, {0xb, slog.LevelDebug}, {0xc, slog.LevelDebug}} {
		if got := p.dupLevelLocked(c.inst); got != c.want {
			t.Errorf("refusal %d (instance %x): level %v, want %v", i, c.inst, got, c.want)
		}
	}
	// 0xa was let in (peerUp drops it from both lists), then displaced again.
	p.superseded = []uint64{0xb, 0xc, 0xa}
	p.dupLogged = slices.DeleteFunc(p.dupLogged, func(i uint64) bool { return i == 0xa })
	if got := p.dupLevelLocked(0xa); got != slog.LevelError {
		t.Errorf("instance a displaced again: level %v, want Error", got)
	}
	if len(p.dupLogged) > maxSuperseded {
		t.Errorf("%d logged instances kept, at most %d", len(p.dupLogged), maxSuperseded)
	}
}
