package rgapsd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// roleDaemon is rgapsd (Main, as `rgaps daemon` runs it) in a process of
// its own: args shm prefix, domain, then the daemon's flags. It prints
// "ready <control address>" once its bridge answers status queries.
const roleDaemon = "rgapsd-daemon"

func init() { testutil.Role(roleDaemon, daemonRole) }

func daemonRole(args []string) error {
	domain, _ := strconv.Atoi(args[1])
	cfg := zerocopy.Config{Prefix: args[0], Domain: uint32(domain), PoolSize: 64 << 20, NoDaemonAutostart: true}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- Main(ctx, args[2:], cfg, os.Stderr) }()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
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
	}
	return <-errc
}

// TestTwoGateways: two hosts (daemons on loopback with their own shm
// prefixes, bridged to each other), each with the DDS gateway, in one DDS
// domain with a DDS writer and a DDS reader. A DDS message reaches the
// rgaps subscribers of each host exactly once (each host's gateway reads
// DDS; the bridges do not carry what a gateway brought in), and an rgaps
// publisher's message reaches the DDS reader exactly once and the other
// host's rgaps subscriber exactly once (by the bridge: the other host's
// gateway does not bring in what a gateway wrote).
func TestTwoGateways(t *testing.T) {
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	t.Setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
	domain := uint32(200 + os.Getpid()%32)
	secret := t.TempDir() + "/secret"
	if err := os.WriteFile(secret, []byte("0123456789abcdef-test-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	const in, out, typ = "/tg_in", "/tg_out", "std_msgs/msg/String"
	var prefix [2]string
	var daemons [2]*testutil.Child
	var ctl string
	for i, h := range []string{"b", "a"} { // b listens, a dials it
		k := 1 - i
		prefix[k] = testutil.Prefix() + h
		args := []string{prefix[k], strconv.Itoa(int(domain)), "-listen", "127.0.0.1:0", "-secret-file", secret, "-host-id", "host-" + h,
			"-provider", "tcp", "-dds", "-dds-topics", "/tg_*", "-dds-ledger", t.TempDir() + "/ledger"}
		if ctl != "" {
			args = append(args, "-peers", ctl)
		}
		daemons[k] = testutil.Start(t, roleDaemon, args...)
		ctl = strings.TrimPrefix(daemons[k].Expect(t, "ready", 60*time.Second), "ready ")
	}
	t.Cleanup(func() {
		for i, d := range daemons {
			d.Cmd.Process.Signal(syscall.SIGTERM)
			if err := d.Wait(30 * time.Second); err != nil || t.Failed() {
				t.Logf("daemon %d: %v; log:\n%s", i, err, d.Stderr())
			}
		}
	})

	q := qos.Profile{History: qos.HistoryKeepLast, Depth: 100, Reliability: qos.ReliabilityReliable, Liveliness: qos.LivelinessAutomatic}
	var doms [2]*zerocopy.Domain
	subsIn := make([]*zerocopy.Subscription, 2)
	for k := range doms {
		d, err := zerocopy.Open(zerocopy.Config{Prefix: prefix[k], Domain: domain, PoolSize: 64 << 20, NoDaemonAutostart: true})
		must(t, err)
		defer d.Close()
		doms[k] = d
		subsIn[k], err = d.NewSubscription(zerocopy.EndpointSpec{Topic: in, Type: typ, Node: "/tg_sub", QoS: q})
		must(t, err)
		defer subsIn[k].Close()
	}
	pub, err := doms[0].NewPublisher(zerocopy.EndpointSpec{Topic: out, Type: typ, Node: "/tg_pub", QoS: q})
	must(t, err)
	defer pub.Close()
	subOut, err := doms[1].NewSubscription(zerocopy.EndpointSpec{Topic: out, Type: typ, Node: "/tg_sub", QoS: q})
	must(t, err)
	defer subOut.Close()
	part, err := dds.Open(dds.Config{Domain: domain})
	must(t, err)
	defer part.Close()
	tin, err := part.Topic(in, typ)
	must(t, err)
	w, err := tin.NewWriter(dds.EndpointOptions{QoS: q})
	must(t, err)
	tout, err := part.Topic(out, typ)
	must(t, err)
	r, err := tout.NewReader(dds.EndpointOptions{QoS: q})
	must(t, err)

	var state string
	defer func() {
		if t.Failed() {
			t.Logf("last state: %s", state)
		}
	}()
	testutil.Eventually(t, 30*time.Second, "every mirror and the bridge", func() bool {
		nw, _ := w.Matched()
		nr, _ := r.Matched()
		state = fmt.Sprintf("DDS writer matched %d (want 2), DDS reader matched %d (want 1), host a's and b's subscriptions matched %d, %d (want 1 each), publisher matched %d (want 2)",
			nw, nr, subsIn[0].Matched(), subsIn[1].Matched(), pub.Matched())
		// pub: host a's gateway and bridge (host b's bridge publishes
		// once the first message came)
		return nw >= 2 && nr >= 1 && subsIn[0].Matched() >= 1 && subsIn[1].Matched() >= 1 && pub.Matched() >= 2
	})
	// Host b's gateway sees host a's DDS writer of /tg_out and says why it
	// leaves it alone.
	testutil.Eventually(t, 30*time.Second, "host b's gateway to pass over host a's", func() bool {
		return strings.Contains(daemons[1].Stderr(), "written by another rgaps gateway")
	})
	const n = 50
	for i := range n {
		must(t, w.Write(stringCDR(fmt.Sprint("dds ", i))))
		must(t, pub.Publish(stringCDR(fmt.Sprint("rgaps ", i))))
	}
	got := map[string]map[string]int{"host a from DDS": {}, "host b from DDS": {}, "DDS from host a": {}, "host b from host a": {}}
	takeRgaps := func(s *zerocopy.Subscription, into map[string]int) bool {
		smp, err := s.Take()
		if err != nil {
			return false
		}
		into[string(smp.Bytes()[8:])]++
		smp.Return()
		return true
	}
	// Until every message arrived, and 2 s more for any second copy.
	var done time.Time
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end) && (done.IsZero() || time.Since(done) < 2*time.Second); {
		took := takeRgaps(subsIn[0], got["host a from DDS"]) || takeRgaps(subsIn[1], got["host b from DDS"]) ||
			takeRgaps(subOut, got["host b from host a"])
		if smp, ok, _ := r.Take(); ok {
			got["DDS from host a"][string(smp.Data[8:])]++
			took = true
		}
		all := true
		for _, m := range got {
			all = all && len(m) >= n
		}
		if all && done.IsZero() {
			done = time.Now()
		}
		if !took {
			time.Sleep(5 * time.Millisecond)
		}
	}
	for what, m := range got {
		if len(m) != n {
			t.Errorf("%s: %d distinct messages, want %d", what, len(m), n)
		}
		for msg, k := range m {
			if k != 1 {
				t.Errorf("%s: %q arrived %d times", what, strings.TrimRight(msg, "\x00"), k)
			}
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// stringCDR is a std_msgs/msg/String's CDR (little endian).
func stringCDR(s string) []byte {
	b := []byte{0, 1, 0, 0, byte(len(s) + 1), 0, 0, 0}
	return append(append(b, s...), 0)
}
