package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// roleGateway is the gateway as a process of its own, as rgapsd runs it:
// args domain, ledger file, topic pattern. It prints "ready" once it
// runs, stops on SIGTERM (or SIGINT) and dies on SIGKILL.
const roleGateway = "gateway"

func init() { testutil.Role(roleGateway, gatewayRole) }

func gatewayRole(args []string) error {
	domain, _ := strconv.Atoi(args[0])
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	g, err := New(Options{
		Engine:   zerocopy.Config{Prefix: testutil.Prefix(), Domain: uint32(domain), PoolSize: 64 << 20, SkipStaleClean: true},
		Topics:   []string{args[2]},
		Ledger:   args[1],
		Interval: 50 * time.Millisecond,
		Log:      slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	g.Serve(ctx)
	return g.Close()
}

// restartEnv is the test's own engine domain and DDS participant, and a
// gateway process that the test kills, stops and starts again on one
// ledger.
type restartEnv struct {
	*env
	t      *testing.T
	ledger string
	topics string
	gw     *testutil.Child
}

func newRestartEnv(t *testing.T, topics string) *restartEnv {
	if err := dds.Load(); err != nil {
		t.Skip(err)
	}
	cfg := zerocopy.Config{Prefix: testutil.Prefix(), Domain: testDomain, PoolSize: 64 << 20, SkipStaleClean: true}
	dom, err := zerocopy.Open(cfg)
	must(t, err)
	part, err := dds.Open(dds.Config{Domain: testDomain})
	must(t, err)
	t.Cleanup(func() { part.Close(); dom.Close() })
	return &restartEnv{env: &env{dom: dom, part: part}, t: t, ledger: filepath.Join(t.TempDir(), "ledger"), topics: topics}
}

func (e *restartEnv) start() {
	e.t.Helper()
	e.gw = testutil.Start(e.t, roleGateway, strconv.Itoa(int(testDomain)), e.ledger, e.topics)
	e.gw.Expect(e.t, "ready", 30*time.Second)
}

// kill ends the gateway with SIGKILL: no chance to drain or record.
func (e *restartEnv) kill() {
	e.t.Helper()
	must(e.t, e.gw.Cmd.Process.Kill())
	e.gw.Wait(10 * time.Second)
}

// term stops the gateway with SIGTERM and waits for it to exit cleanly.
func (e *restartEnv) term() {
	e.t.Helper()
	must(e.t, e.gw.Cmd.Process.Signal(syscall.SIGTERM))
	if err := e.gw.Wait(30 * time.Second); err != nil {
		e.t.Fatalf("gateway after SIGTERM: %v\n%s", err, e.gw.Stderr())
	}
}

// recorded is what the ledger file holds for a source now (the gateway
// has it locked: read without the lock, checksums checked).
func (e *restartEnv) recorded(kind uint32, id [16]byte) uint64 {
	b, err := os.ReadFile(e.ledger)
	if err != nil || len(b) != ledgerSize {
		return 0
	}
	l := &ledger{mem: b, idx: map[ledgerKey]int{}}
	l.load()
	s, _ := l.last(kind, id)
	return s
}

// reliable, transient local, deep enough for every message of the test:
// what makes a restart lose nothing.
var restartQoS = qos.Profile{History: qos.HistoryKeepLast, Depth: 400, Reliability: qos.ReliabilityReliable,
	Durability: qos.DurabilityTransientLocal, Liveliness: qos.LivelinessAutomatic}

// counter collects numbered messages ("m<i>" as std_msgs/String CDR),
// counting how often each arrived.
type counter map[int]int

func (c counter) add(t *testing.T, b []byte) {
	var i int
	if _, err := fmt.Sscanf(string(b[8:]), "m%d", &i); err != nil {
		t.Fatalf("message %q: %v", b, err)
	}
	c[i]++
}

// check fails unless messages 0..n-1 each arrived exactly once.
func (c counter) check(t *testing.T, what string, n int) {
	t.Helper()
	var lost, dup []int
	for i := range n {
		switch c[i] {
		case 0:
			lost = append(lost, i)
		case 1:
		default:
			dup = append(dup, i)
		}
	}
	if len(lost) > 0 || len(dup) > 0 || len(c) != n {
		t.Fatalf("%s: %d distinct messages of %d; lost %v; more than once %v", what, len(c), n, lost, dup)
	}
}

func msg(i int) []byte { return stringCDR(fmt.Sprint("m", i)) }

// TestGatewayRestartFromDDS: a DDS writer → gateway process → rgaps
// subscription, RELIABLE TRANSIENT_LOCAL with history for every message.
// A graceful stop (SIGTERM) right after a burst the gateway's reader has
// (acknowledged) but may not have forwarded yet: nothing is lost, and the
// next gateway, whose reader gets the writer's whole history again,
// delivers none of it twice (the ledger says what was delivered). Then
// the gateway is killed (SIGKILL) while the writer goes on, and started
// again: every message arrives, and none twice.
func TestGatewayRestartFromDDS(t *testing.T) {
	const topic, typ = "/gw_restart_in", "std_msgs/msg/String"
	e := newRestartEnv(t, topic)
	tp, err := e.part.Topic(topic, typ)
	must(t, err)
	w, err := tp.NewWriter(dds.EndpointOptions{QoS: restartQoS})
	must(t, err)
	s, err := e.dom.NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: typ, Node: "/gw_test", QoS: restartQoS})
	must(t, err)
	defer s.Close()
	got := counter{}
	receive := func(n int) {
		t.Helper()
		for len(got) < n {
			smp, err := s.TakeWait(30 * time.Second)
			if err != nil {
				t.Fatalf("%d of %d messages: %v\n%s", len(got), n, err, e.gw.Stderr())
			}
			got.add(t, smp.Bytes())
			smp.Return()
		}
	}
	write := func(from, to int) {
		for i := from; i < to; i++ {
			must(t, w.Write(msg(i)))
		}
	}
	e.start()
	eventually(t, "the gateway's mirror", func() bool { n, _ := w.Matched(); return n >= 1 && s.Matched() >= 1 })
	write(0, 100)
	if ok, err := w.WaitForAcks(30 * time.Second); err != nil || !ok {
		t.Fatalf("the gateway's reader did not acknowledge the burst: %v %v", ok, err)
	}
	e.term()
	receive(100)
	e.start()
	write(100, 110)
	receive(110)
	// Anything of the history delivered again would have come before 109.
	got.check(t, "after SIGTERM and restart", 110)

	// The writer's 110th message is the last one delivered.
	eventually(t, "the ledger", func() bool { return e.recorded(srcDDS, w.GUID()) == 110 })
	e.kill()
	write(110, 150) // nobody reads these: the writer keeps them
	e.start()
	write(150, 200)
	receive(200)
	got.check(t, "after SIGKILL and restart", 200)
	e.term()
}

// TestGatewayRestartToDDS: an rgaps publisher → gateway process → DDS
// reader, RELIABLE TRANSIENT_LOCAL with history for every message. The
// gateway is killed (SIGKILL) while the publisher goes on, and started
// again: every message arrives, none twice (the new gateway's
// subscription gets the publisher's history; the ledger says which of it
// the DDS readers acknowledged). Then a burst and at once a graceful stop
// (SIGTERM): what the gateway had queued still reaches the reader, and
// the next gateway sends none of it again.
func TestGatewayRestartToDDS(t *testing.T) {
	const topic, typ = "/gw_restart_out", "std_msgs/msg/String"
	e := newRestartEnv(t, topic)
	p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typ, Node: "/gw_test", QoS: restartQoS})
	must(t, err)
	defer p.Close()
	tp, err := e.part.Topic(topic, typ)
	must(t, err)
	r, err := tp.NewReader(dds.EndpointOptions{QoS: restartQoS})
	must(t, err)
	got := counter{}
	receive := func(n int) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); len(got) < n; {
			smp, ok, err := r.Take()
			must(t, err)
			if ok {
				got.add(t, smp.Data)
				continue
			}
			if time.Now().After(end) {
				t.Fatalf("%d of %d messages\n%s", len(got), n, e.gw.Stderr())
			}
			r.Wait(100 * time.Millisecond)
		}
	}
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			must(t, p.Publish(msg(i)))
		}
	}
	e.start()
	eventually(t, "the gateway's mirror", func() bool { n, _ := r.Matched(); return n >= 1 && p.Matched() >= 1 })
	publish(0, 100)
	receive(100)
	eventually(t, "the ledger", func() bool { return e.recorded(srcRgaps, p.GID()) == p.SequenceNumber() })
	e.kill()
	publish(100, 150) // the publisher's history keeps these
	e.start()
	receive(150) // the new gateway's subscription got the history
	publish(150, 200)
	receive(200)
	got.check(t, "after SIGKILL and restart", 200)

	publish(200, 300)
	e.term()
	receive(300)
	e.start()
	eventually(t, "the third gateway's subscription", func() bool {
		return e.recorded(srcRgaps, p.GID()) == p.SequenceNumber() && p.Matched() >= 1
	})
	publish(300, 310)
	receive(310)
	got.check(t, "after SIGTERM and restart", 310)
	e.term()
}
