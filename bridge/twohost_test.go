package bridge_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Roles of the test binary: a daemon, a publisher and a subscriber, each
// a real process (in a network namespace when the test has two hosts).
const (
	roleDaemon = "bridge-daemon"
	rolePub    = "bridge-pub"
	roleSub    = "bridge-sub"
)

func init() {
	testutil.Role(roleDaemon, daemonRole)
	testutil.Role(rolePub, pubRole)
	testutil.Role(roleSub, subRole)
}

const testTopic = "/bridge/stream"

// daemonRole runs rgapsd (rgapsd.Main, as `rgaps daemon` does) with the
// shm prefix args[0] and the daemon flags args[1:]; it prints "ready
// <control address>" once the bridge answers status queries.
func daemonRole(args []string) error {
	cfg := zerocopy.Config{Prefix: args[0], PoolSize: 384 << 20, NoDaemonAutostart: true}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- rgapsd.Main(ctx, args[1:], cfg, os.Stderr) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-errc:
			return fmt.Errorf("daemon exited: %v", err)
		default:
		}
		if st, err := bridge.QueryStatus(cfg); err == nil {
			fmt.Println("ready", st.Listen)
			break
		}
		if time.Now().After(deadline) {
			return errors.New("daemon not ready after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return <-errc
}

// msgSize is the size schedule of the stream: mostly 1 KiB … 1 MiB, every
// 97th message 4 MiB, every 1000th 64 MiB (2 chunks and more on a 64 MiB
// ring), so that 20,000 messages stay a few GB.
func msgSize(i, max int) int {
	var n int
	switch {
	case i%1000 == 999:
		n = 64 << 20
	case i%97 == 50:
		n = 4 << 20
	default:
		n = []int{1 << 10, 3000, 16 << 10, 200 << 10, 1 << 20, 1 << 10, 64 << 10}[i%7]
	}
	return min(n, max)
}

// fill writes message i: [seq u64][size u64][crc of the body u32] then a
// body that depends on i (a 4 KiB block of i's bytes, repeated).
func fill(b []byte, i int) {
	binary.LittleEndian.PutUint64(b[0:], uint64(i))
	binary.LittleEndian.PutUint64(b[8:], uint64(len(b)))
	body := b[20:]
	var blk [4096]byte
	for k := range blk {
		blk[k] = byte(i*31 + k*7 + k>>8)
	}
	for k := 0; k < len(body); k += len(blk) {
		copy(body[k:], blk[:])
	}
	binary.LittleEndian.PutUint32(b[16:], crc32.ChecksumIEEE(body))
}

// check verifies message bytes and returns its sequence number.
func check(b []byte) (int, error) {
	if len(b) < 20 {
		return -1, fmt.Errorf("%d bytes", len(b))
	}
	i := int(binary.LittleEndian.Uint64(b[0:]))
	if n := binary.LittleEndian.Uint64(b[8:]); n != uint64(len(b)) {
		return i, fmt.Errorf("message %d: %d bytes, header says %d", i, len(b), n)
	}
	if crc32.ChecksumIEEE(b[20:]) != binary.LittleEndian.Uint32(b[16:]) {
		return i, fmt.Errorf("message %d: body corrupt", i)
	}
	if len(b) > 21 && b[20] != byte(i*31) {
		return i, fmt.Errorf("message %d: body of another message", i)
	}
	return i, nil
}

func streamQoS(kind string) qos.Profile {
	switch kind {
	case "tl":
		return qos.Profile{History: qos.HistoryKeepLast, Depth: 5, Reliability: qos.ReliabilityReliable, Durability: qos.DurabilityTransientLocal}
	case "be":
		return qos.Profile{History: qos.HistoryKeepLast, Depth: 50, Reliability: qos.ReliabilityBestEffort}
	}
	return qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable}
}

// pubRole: args prefix, count, matched subscriptions to wait for, max
// size, qos kind, pace (a pause between messages, for fault tests).
func pubRole(args []string) error {
	count, _ := strconv.Atoi(args[1])
	want, _ := strconv.Atoi(args[2])
	maxSize, _ := strconv.Atoi(args[3])
	pace, _ := time.ParseDuration(args[5])
	d, err := zerocopy.Open(zerocopy.Config{Prefix: args[0], PoolSize: 384 << 20, BlockTimeout: 5 * time.Minute})
	if err != nil {
		return err
	}
	defer d.Close()
	pub, err := d.NewPublisher(zerocopy.EndpointSpec{Topic: testTopic, Type: "rgaps_test/msg/Blob", Node: "/talker", QoS: streamQoS(args[4])})
	if err != nil {
		return err
	}
	defer pub.Close()
	deadline := time.Now().Add(60 * time.Second)
	for pub.Matched() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("matched %d subscriptions, want %d", pub.Matched(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("matched")
	for i := 0; i < count; i++ {
		l, err := pub.Loan(msgSize(i, maxSize))
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		fill(l.Bytes(), i)
		if err := l.Publish(); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		if pace > 0 {
			time.Sleep(pace)
		}
		if i%1000 == 999 {
			fmt.Println("progress", i+1)
		}
	}
	fmt.Println("published", count)
	// Stay until told (the parent kills us): transient-local history and
	// the samples in flight live in this process's topic.
	select {}
}

// subRole: args prefix, count, qos kind, allowDups ("dups" or ""). It
// prints "ready", then "ok <received> <dups>" when it received count
// distinct messages in order, every byte checked.
func subRole(args []string) error {
	count, _ := strconv.Atoi(args[1])
	d, err := zerocopy.Open(zerocopy.Config{Prefix: args[0], PoolSize: 384 << 20})
	if err != nil {
		return err
	}
	defer d.Close()
	sub, err := d.NewSubscription(zerocopy.EndpointSpec{Topic: testTopic, Type: "rgaps_test/msg/Blob", Node: "/listener", QoS: streamQoS(args[2])})
	if err != nil {
		return err
	}
	defer sub.Close()
	fmt.Println("ready")
	next, dups := -1, 0
	if args[2] == "tl" {
		next = count - 5 // a late joiner gets the last depth (5) messages
	} else {
		next = 0
	}
	for next < count {
		smp, err := sub.TakeWait(120 * time.Second)
		if err != nil {
			return fmt.Errorf("waiting for message %d: %w", next, err)
		}
		i, err := check(smp.Bytes())
		smp.Return()
		if err != nil {
			return err
		}
		switch {
		case i == next:
			next++
		case i < next && args[3] == "dups":
			dups++
		default:
			return fmt.Errorf("got message %d, expected %d (lost or out of order)", i, next)
		}
	}
	fmt.Println("ok", next, dups)
	// Keep the subscription until the parent is done (it kills us).
	select {}
}

// world is two emulated hosts (network namespaces, or loopback with
// separate shm prefixes when namespaces are not available) with a daemon
// on each.
type world struct {
	t        *testing.T
	hosts    *testutil.Hosts
	prefix   [2]string
	ns       [2]string
	ctl      [2]string // control addresses
	daemons  [2]*testutil.Child
	flags    []string
	provider string
	secret   string
}

func newWorld(t *testing.T, provider string, netns bool, flags ...string) *world {
	w := &world{t: t, provider: provider, flags: flags}
	for i, s := range []string{"a", "b"} {
		w.prefix[i] = testutil.Prefix() + s + strconv.Itoa(int(worldSeq.Add(1)))
	}
	host := [2]string{"127.0.0.1", "127.0.0.1"}
	if netns {
		w.hosts = testutil.NewHosts(t)
		w.ns = w.hosts.NS
		host = w.hosts.Addr
	}
	secret := t.TempDir() + "/secret"
	if err := os.WriteFile(secret, testSecret, 0o600); err != nil {
		t.Fatal(err)
	}
	w.secret = secret
	// Registered first, so it runs last: once every process of the world
	// was killed, what they left in /dev/shm is removed (as the next
	// process to open the domain would).
	t.Cleanup(func() {
		for _, p := range w.prefix {
			d, err := zerocopy.Open(zerocopy.Config{Prefix: p, NoDaemonAutostart: true})
			if err != nil {
				t.Error(err)
				continue
			}
			// A killed process may take a moment to be gone for good (its
			// endpoints then still look alive): clean until nothing of the
			// world is left, or say what stays and why.
			var kept []zerocopy.CleanEntry
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				ents, err := d.Clean()
				if err != nil {
					t.Error(err)
				}
				kept = slices.DeleteFunc(ents, func(e zerocopy.CleanEntry) bool { return e.Removed })
				if len(kept) == 0 || time.Now().After(deadline) {
					break
				}
			}
			for _, e := range kept {
				t.Logf("world cleanup: %+v kept", e)
			}
			d.Close()
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			for i, d := range w.daemons {
				if d != nil {
					e := d.Stderr()
					t.Logf("daemon %d log (tail):\n%s", i, e[max(0, len(e)-6000):])
				}
			}
		}
	})
	// b listens, a dials it.
	w.ctl[1] = w.startDaemon(1, host[1]+":0", "", secret)
	w.ctl[0] = w.startDaemon(0, host[0]+":0", w.ctl[1], secret)
	return w
}

func (w *world) startDaemon(i int, listen, peers, secret string) string {
	args := append([]string{w.prefix[i], "-listen", listen, "-secret-file", secret, "-host-id", "host" + strconv.Itoa(i),
		"-provider", w.provider}, w.flags...)
	if peers != "" {
		args = append(args, "-peers", peers)
	}
	c := testutil.StartIn(w.t, w.ns[i], roleDaemon, args...)
	w.daemons[i] = c
	line := c.Expect(w.t, "ready", 60*time.Second)
	return strings.TrimPrefix(line, "ready ")
}

func (w *world) start(host int, role string, args ...string) *testutil.Child {
	return testutil.StartIn(w.t, w.ns[host], role, append([]string{w.prefix[host]}, args...)...)
}

// run is a stream in progress: 1 publisher on host a, subscribers on a
// and b.
type run struct {
	t    *testing.T
	pub  *testutil.Child
	subs []*testutil.Child
}

// begin starts nb subscribers on b and na on a, then the publisher of
// count messages, and returns once the publisher matched them.
func (w *world) begin(count, na, nb, maxSize int, kind, dups string, pace time.Duration) *run {
	t := w.t
	r := &run{t: t}
	for h, n := range []int{na, nb} {
		for k := 0; k < n; k++ {
			s := w.start(h, roleSub, strconv.Itoa(count), kind, dups)
			s.Expect(t, "ready", 60*time.Second)
			r.subs = append(r.subs, s)
		}
	}
	// Matched: the local subscriptions plus the bridge's subscription.
	want := na
	if nb > 0 {
		want++
	}
	r.pub = w.start(0, rolePub, strconv.Itoa(count), strconv.Itoa(want), strconv.Itoa(maxSize), kind, pace.String())
	r.pub.Expect(t, "matched", 60*time.Second)
	return r
}

// progress waits until the publisher has published n messages.
func (r *run) progress(n int) {
	r.t.Helper()
	for {
		l := r.pub.Expect(r.t, "progress", 5*time.Minute)
		if k, _ := strconv.Atoi(strings.TrimPrefix(l, "progress ")); k >= n {
			return
		}
	}
}

// finish waits for every subscriber but the skipped ones to report ok.
func (r *run) finish(skip ...int) {
	for k, s := range r.subs {
		if slices.Contains(skip, k) {
			continue
		}
		line := s.Expect(r.t, "ok", 10*time.Minute)
		r.t.Logf("subscriber %d: %s", k, line)
	}
	r.pub.Cmd.Process.Kill()
	for _, s := range r.subs {
		s.Cmd.Process.Kill()
	}
}

var worldSeq atomic.Int32

var testSecret = []byte("0123456789abcdef-test-secret")

// TestTwoHosts is the acceptance stream: one publisher on host a,
// four subscribers on host b and two on a at the same time, 20,000
// messages of 1 KiB to 64 MiB, RELIABLE: every byte checked, order kept,
// none lost. Across network namespaces over libfabric tcp.
func TestTwoHosts(t *testing.T) {
	count := 20000
	if testing.Short() {
		count = 2000
	}
	w := newWorld(t, "fabric:tcp", true)
	w.begin(count, 2, 4, 64<<20, "rel", "", 0).finish()
}

// The link between the hosts goes down for longer than the control
// plane's dead-peer time and comes back mid-stream: RELIABLE loses
// nothing and duplicates nothing (the subscribers fail on either). The
// ring has two rails (§3.7 "Rails"): both fail, and come back.
func TestTwoHostsLinkFlap(t *testing.T) {
	w := newWorld(t, "fabric:tcp", true, "-rails", "2")
	r := w.begin(3000, 1, 2, 1<<20, "rel", "", time.Millisecond)
	r.progress(1000)
	if err := w.hosts.LinkDown(0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // > dead-after (3 s): sessions and data links fail
	if err := w.hosts.LinkUp(0); err != nil {
		t.Fatal(err)
	}
	r.finish()
}

// SIGKILL of the subscribing host's daemon mid-stream, then a restart:
// nothing is lost under RELIABLE (the publishing daemon keeps every
// message until the new reader has it). The restarted daemon has no
// memory of what its predecessor delivered, so the last few messages
// before the kill may arrive twice; the subscribers accept duplicates
// here but fail on any gap.
func TestTwoHostsDaemonKill(t *testing.T) {
	w := newWorld(t, "fabric:tcp", true)
	r := w.begin(3000, 1, 2, 1<<20, "rel", "dups", time.Millisecond)
	r.progress(1000)
	w.daemons[1].Cmd.Process.Kill()
	w.daemons[1].Wait(10 * time.Second)
	w.ctl[1] = w.startDaemon(1, w.ctl[1], "", w.secret)
	r.finish()
}

// SIGKILL of one subscriber on the remote host: the others receive
// everything, the publisher is not held up.
func TestTwoHostsSubscriberKill(t *testing.T) {
	w := newWorld(t, "fabric:tcp", true)
	r := w.begin(3000, 1, 3, 1<<20, "rel", "", 0)
	r.progress(500)
	r.subs[1].Cmd.Process.Kill()
	r.finish(1)
}
