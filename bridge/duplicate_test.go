package bridge

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	pub := matchedPublisher(t, older, "/twin")
	defer pub.Close()
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

// debugLogTo is a tune for restartable: the bridge logs to buf, Debug
// included.
func debugLogTo(buf *syncBuffer) func(*Options) {
	return func(o *Options) {
		o.Log = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// linesWith is how many lines of log contain every one of parts.
func linesWith(log string, parts ...string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if l != "" && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(l, p) }) {
			n++
		}
	}
	return n
}

// A third daemon is configured with two peers that are live daemons given
// one host id (a configuration error), and dials both: here its own
// handshake's admission check (Admit, as the dialer, after the acceptor's
// MAC verified) does what its listener does when twins dial it
// (TestTwoLiveDaemonsOneHostID). The twin whose connection came up last is
// the newer and keeps the id: c closes its connection to the older, and
// refuses the older at each of its redials to it (reject "duplicate", naming the
// holder's instance and address), logged at Error once for that instance
// and at Debug after, counted in its status; the older logs the reason it
// gets at Warn. The newer's connection stays, and messages cross with it
// both ways, each once. What the older publishes while refused waits at
// the older; when the newer goes, c's redial to the older gets in and it
// arrives, once, preceded at most by one redelivery of the older's message
// from before it was displaced (at least once across a displacement,
// ARCHITECTURE.md §3.9), and by nothing else.
func TestThirdDaemonDialsTwins(t *testing.T) {
	var cLog, olderLog syncBuffer
	twinID := func(o *Options) { o.Control.HostID = "host-twin" }
	older := restartable(t, time.Minute, twinID, debugLogTo(&olderLog))("twin1", "127.0.0.1:0", nil)
	newer := restartable(t, time.Minute, twinID)("twin2", "127.0.0.1:0", nil)
	if older.instance == 0 || newer.instance == 0 || older.instance == newer.instance {
		t.Fatalf("twin instances %016x and %016x, want two distinct ones", older.instance, newer.instance)
	}
	// c's second peer is a proxy that closes every connection until it
	// is given the newer twin's address: c connects to the older first.
	gate := newFreezer(t, "")
	peer := func(addr string) control.Peer { return control.Peer{Host: "127.0.0.1", Port: addr2port(t, addr)} }
	c := restartable(t, time.Minute, debugLogTo(&cLog))("c", "", []control.Peer{peer(older.ControlAddr()), peer(gate.ln.Addr().String())})
	sub, err := c.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/twins", Type: "std_msgs/msg/String", Node: "/l", QoS: reliable()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sendFrom(t, older, sub, 1, 1000)
	if inst, live, _ := peerState(c, "host-twin"); inst != older.instance || live == nil {
		t.Fatalf("c knows host-twin as instance %016x (live %v), want the older twin %016x", inst, live != nil, older.instance)
	}

	addr := newer.ControlAddr()
	gate.target.Store(&addr)
	testutil.Eventually(t, 20*time.Second, "c takes the newer twin for host-twin", func() bool {
		inst, live, _ := peerState(c, "host-twin")
		return inst == newer.instance && live != nil
	})
	_, live, _ := peerState(c, "host-twin")
	if got, want := live.RemoteAddr().String(), gate.ln.Addr().String(); got != want {
		t.Fatalf("c's connection for host-twin goes to %s, want the newer twin's (through %s)", got, want)
	}
	// The older's redials: the first one, then one at the longest
	// backoff, are both refused.
	testutil.Eventually(t, 20*time.Second, "c refuses its redials to the older twin", func() bool {
		_, _, d := peerState(c, "host-twin")
		return d >= 2
	})
	inst, live2, dups := peerState(c, "host-twin")
	if inst != newer.instance || live2 != live {
		t.Fatalf("after refusing the older twin c knows instance %016x on another connection (%v), want %016x on the same", inst, live2 != live, newer.instance)
	}
	if n := connsTo(c, "host-twin"); n != 1 {
		t.Errorf("c has %d control connections to host-twin, want 1 (the newer twin's)", n)
	}
	if n := connsTo(older, "host-c"); n != 0 {
		t.Errorf("the older twin has %d control connections to c, want none", n)
	}
	if n := connsTo(newer, "host-c"); n != 1 {
		t.Errorf("the newer twin has %d control connections to c, want 1", n)
	}
	if st := c.Status(); len(st.Peers) != 1 || st.Peers[0].Host != "host-twin" || !st.Peers[0].Up || st.Peers[0].Duplicates < dups {
		t.Errorf("c's status peers %+v, want host-twin up with at least %d duplicates", st.Peers, dups)
	}
	olderHex, newerHex := fmt.Sprintf("%016x", older.instance), fmt.Sprintf("%016x", newer.instance)
	const refused = `msg="peer refused: another live daemon holds its host id"`
	log := cLog.String()
	if n := linesWith(log, "level=WARN", `msg="peer restarted: its older control connections are closed"`, "old_instance="+olderHex, "instance="+newerHex); n != 1 {
		t.Errorf("c logged the newer twin displacing the older %d times, want once:\n%s", n, log)
	}
	if n := linesWith(log, "level=ERROR", refused, " instance="+olderHex, "holder_instance="+newerHex, "holder_addr="+gate.ln.Addr().String()); n != 1 {
		t.Errorf("c logged its refusal of the older twin at Error %d times, want once:\n%s", n, log)
	}
	if n := linesWith(log, refused, " instance="+newerHex); n != 0 {
		t.Errorf("c logged %d refusals of the newer twin, want none:\n%s", n, log)
	}
	// The later refusal is logged just after it is counted.
	testutil.Eventually(t, 20*time.Second, "c logs its later refusal of the older twin at Debug", func() bool {
		return linesWith(cLog.String(), "level=DEBUG", refused, " instance="+olderHex) >= 1
	})
	// The older is told who holds the id (the reject a dialer sends is
	// taken by the listener, at Warn).
	reason := fmt.Sprintf("is held by another live daemon (instance %s, at %s) that connected after this one (instance %s)", newerHex, gate.ln.Addr(), olderHex)
	testutil.Eventually(t, 20*time.Second, "the older twin logs the reason it is refused", func() bool {
		return linesWith(olderLog.String(), "level=WARN", `msg="control handshake failed"`, reason) >= 1
	})

	// The newer's messages cross, each once, and c's reach the newer.
	sendFrom(t, newer, sub, 10, 1000, 100000)
	down, err := newer.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/from_c", Type: "std_msgs/msg/String", Node: "/l", QoS: reliable()})
	if err != nil {
		t.Fatal(err)
	}
	sendFrom(t, c, down, 20, 1000, 100000)
	down.Close() // before its domain closes with newer

	// The older publishes while refused: it keeps c's interest
	// (PeerExpiry), so its message waits in its bridge subscription.
	pub := matchedPublisher(t, older, "/twins")
	defer pub.Close()
	waiting := stagedMsg(30, 1000)
	if err := pub.Publish(waiting); err != nil {
		t.Fatal(err)
	}
	sendFrom(t, newer, sub, 40, 1000) // had the older's message got through, it would be taken here

	newer.Close()
	testutil.Eventually(t, 20*time.Second, "c's redial to the older twin gets in", func() bool {
		inst, live, _ := peerState(c, "host-twin")
		return inst == older.instance && live != nil
	})
	take := func(what string) []byte {
		t.Helper()
		smp, err := sub.TakeWait(20 * time.Second)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		defer smp.Return()
		return bytes.Clone(smp.Bytes())
	}
	got := take("the older twin's message published while it was refused")
	if bytes.Equal(got, stagedMsg(1, 1000)) { // sent again: c had not acknowledged it to the older when displaced
		got = take("the older twin's message published while it was refused, after its first again")
	}
	if !bytes.Equal(got, waiting) {
		t.Fatalf("after the older twin got in, c delivered %d bytes that are neither its waiting message nor one redelivery of its first", len(got))
	}
	then := stagedMsg(31, 1000)
	if err := pub.Publish(then); err != nil {
		t.Fatal(err)
	}
	if got := take("the older twin's next message"); !bytes.Equal(got, then) {
		t.Fatalf("after the older twin's waiting message c delivered %d bytes, not its next message (a message delivered twice?)", len(got))
	}
}

// A daemon that announces no instance (older than 2026-11-28) is replaced
// by one that does (an upgrade) while b still takes the old one's
// connection for alive: another process, treated as a restart
// (ARCHITECTURE.md §3.9). b closes the old connection and admits the new
// daemon: no duplicate refusal (instance 0 is never kept as one a newer
// displaced), b knows it by its instance on the new connection, and its
// messages cross.
func TestUpgradeFromDaemonWithoutInstance(t *testing.T) {
	var bLog syncBuffer
	mk := restartable(t, time.Minute) // a dead connection is found out only after a minute
	b := restartable(t, time.Minute, debugLogTo(&bLog))("b", "127.0.0.1:0", nil)
	fz := newFreezer(t, b.ControlAddr())
	peer := func(addr string) control.Peer { return control.Peer{Host: "127.0.0.1", Port: addr2port(t, addr)} }
	newInstance = func() uint64 { return 0 }
	defer func() { newInstance = randomEpoch }()
	a := mk("a", "", []control.Peer{peer(fz.ln.Addr().String())})
	newInstance = randomEpoch
	if a.instance != 0 {
		t.Fatalf("the old daemon announces instance %016x, want none", a.instance)
	}
	sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/upgrade", Type: "std_msgs/msg/String", Node: "/l", QoS: reliable()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	sendFrom(t, a, sub, 1, 100000)
	inst, oldLive, _ := peerState(b, "host-a")
	if inst != 0 || oldLive == nil {
		t.Fatalf("b knows host-a as instance %016x (live %v), want none, connected", inst, oldLive != nil)
	}

	fz.frozen.Store(true)
	a.Close()
	a = mk("a", "", []control.Peer{peer(b.ControlAddr())})
	if a.instance == 0 {
		t.Fatal("the upgraded daemon announces no instance")
	}
	sendFrom(t, a, sub, 2, 10, 100000)
	testutil.Eventually(t, 20*time.Second, "b closes the old daemon's connection", fz.srvClosed.Load)
	inst, live, dups := peerState(b, "host-a")
	if inst != a.instance || live == nil || dups != 0 {
		t.Fatalf("b knows host-a as instance %016x (live %v, %d duplicates), want %016x, live, none", inst, live != nil, dups, a.instance)
	}
	if live == oldLive {
		t.Fatal("b's links still use the old daemon's connection")
	}
	if n := connsTo(b, "host-a"); n != 1 {
		t.Errorf("b has %d control connections to host-a, want 1 (the upgraded daemon's)", n)
	}
	b.mu.Lock()
	superseded := slices.Clone(b.peers["host-a"].superseded)
	b.mu.Unlock()
	if len(superseded) != 0 {
		t.Errorf("b keeps %x as displaced instances of host-a, want none (0 is never one)", superseded)
	}
	if st := b.Status(); len(st.Peers) != 1 || !st.Peers[0].Up || st.Peers[0].Duplicates != 0 {
		t.Errorf("b's status peers %+v, want host-a up without duplicates", st.Peers)
	}
	log := bLog.String()
	if n := linesWith(log, "peer refused"); n != 0 {
		t.Errorf("b refused %d connections of host-a:\n%s", n, log)
	}
	if n := linesWith(log, "level=WARN", `msg="peer restarted: its older control connections are closed"`, "old_instance=0000000000000000", fmt.Sprintf("instance=%016x", a.instance)); n != 1 {
		t.Errorf("b logged the upgrade as a restart %d times, want once:\n%s", n, log)
	}
	sendFrom(t, a, sub, 20, 1000)
}
