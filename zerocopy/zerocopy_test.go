package zerocopy

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func TestMain(m *testing.M) { testutil.Main(m) }

var testDomain uint32 = 7

func openDomain(t testing.TB, mod func(*Config)) *Domain {
	t.Helper()
	cfg := Config{Domain: testDomain, PoolSize: 16 << 20, JanitorPeriod: 20 * time.Millisecond, BlockTimeout: 200 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	d, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil && !errors.Is(err, ErrClosed) {
			t.Error(err)
		}
	})
	return d
}

func mustPub(t testing.TB, d *Domain, topic string, q qos.Profile) *Publisher {
	t.Helper()
	p, err := d.NewPublisher(EndpointSpec{Topic: topic, Type: "std_msgs/msg/String", Node: "/test", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func mustSub(t testing.TB, d *Domain, topic string, q qos.Profile) *Subscription {
	t.Helper()
	s, err := d.NewSubscription(EndpointSpec{Topic: topic, Type: "std_msgs/msg/String", Node: "/test", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPublishTakeInProcess(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/chatter", qos.Default())
	s1 := mustSub(t, d, "/chatter", qos.Default())
	s2 := mustSub(t, d, "/chatter", qos.Default())
	if got := p.Matched(); got != 2 {
		t.Fatalf("publisher matched %d, want 2", got)
	}
	for i := 0; i < 5; i++ {
		if err := p.Publish([]byte{byte(i), 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*Subscription{s1, s2} {
		var offs []uint64
		for i := 0; i < 5; i++ {
			smp, err := s.TakeWait(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(smp.Bytes(), []byte{byte(i), 1, 2, 3}) || smp.Info().Sequence != uint64(i+1) || smp.Info().Publisher != p.GID() {
				t.Fatalf("sample %d: %v %+v", i, smp.Bytes(), smp.Info())
			}
			offs = append(offs, smp.Info().Offset)
			if err := smp.Return(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Take(); !errors.Is(err, ErrNoData) {
			t.Fatalf("take on empty queue: %v", err)
		}
	}
	st := p.t.alloc.Stats()
	if st.UsedBlocks != 0 || st.FreeBytes != st.PoolSize {
		t.Fatalf("pool not back to full after all returns: %+v", st)
	}
}

func TestLoanZeroCopy(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/img", qos.Default())
	s := mustSub(t, d, "/img", qos.Default())
	l, err := p.Loan(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.Bytes() {
		l.Bytes()[i] = byte(i * 7)
	}
	off := l.Offset()
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Return()
	if smp.Info().Offset != off {
		t.Fatalf("subscriber reads offset %d, loan was at %d: a copy was made", smp.Info().Offset, off)
	}
	for i, b := range smp.Bytes() {
		if b != byte(i*7) {
			t.Fatalf("byte %d = %d", i, b)
		}
	}
	if err := l.Publish(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("second publish of a loan: %v", err)
	}
}

func TestKeepLastDropsOldest(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/kl", qos.Default())
	q := qos.Default()
	q.Depth = 3
	s := mustSub(t, d, "/kl", q)
	for i := 1; i <= 10; i++ {
		if err := p.Publish([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []byte
	for {
		smp, err := s.Take()
		if errors.Is(err, ErrNoData) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, smp.Bytes()[0])
		smp.Return()
	}
	if !bytes.Equal(got, []byte{8, 9, 10}) {
		t.Fatalf("KEEP_LAST(3) kept %v, want [8 9 10]", got)
	}
	if s.Lost() != 7 {
		t.Fatalf("lost %d, want 7", s.Lost())
	}
}

func TestTransientLocalLateJoiner(t *testing.T) {
	d := openDomain(t, nil)
	pq := qos.Default()
	pq.Durability = qos.DurabilityTransientLocal
	pq.Depth = 4
	p := mustPub(t, d, "/tl", pq)
	for i := 1; i <= 9; i++ {
		if err := p.Publish([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	sq := pq
	sq.Depth = 4
	s := mustSub(t, d, "/tl", sq)
	var got []byte
	for {
		smp, err := s.Take()
		if err != nil {
			break
		}
		got = append(got, smp.Bytes()[0])
		smp.Return()
	}
	if !bytes.Equal(got, []byte{6, 7, 8, 9}) {
		t.Fatalf("late joiner got %v, want [6 7 8 9]", got)
	}
	// A volatile late joiner gets nothing.
	v := mustSub(t, d, "/tl", qos.Default())
	if v.Ready() {
		t.Fatal("volatile late joiner received history")
	}
}

func TestIncompatibleQoS(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/be", qos.SensorData()) // best effort
	s := mustSub(t, d, "/be", qos.Default())    // reliable
	if p.Matched() != 0 || s.Matched() != 0 {
		t.Fatal("best-effort publisher matched a reliable subscription")
	}
	st := s.TakeStatus()
	if st.IncompatibleQoS != 1 || st.LastIncompatiblePolicy != qos.PolicyReliability {
		t.Fatalf("subscription status %+v, want one incompatible reliability", st)
	}
	if err := p.Publish([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if s.Ready() {
		t.Fatal("incompatible subscription received a sample")
	}
}

func TestPoolExhaustion(t *testing.T) {
	d := openDomain(t, func(c *Config) { c.PoolSize = 1 << 20; c.BlockTimeout = 100 * time.Millisecond })
	rel := mustPub(t, d, "/full", qos.Default())
	be := mustPub(t, d, "/full", qos.SensorData())
	l, err := rel.Loan(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Loan(1024); !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("reliable loan from a full pool: %v", err)
	}
	if _, err := be.Loan(1024); !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("best-effort loan from a full pool: %v", err)
	}
	mustSub(t, d, "/full", qos.SensorData())
	if err := be.Publish([]byte("dropped")); err != nil {
		t.Fatalf("best-effort publish into a full pool must drop, not fail: %v", err)
	}
	if be.Drops() != 2 {
		t.Fatalf("best-effort drops %d, want 2", be.Drops())
	}
	// A reliable loan blocked on a full pool proceeds when space frees.
	done := make(chan error, 1)
	go func() { time.Sleep(20 * time.Millisecond); done <- l.Discard() }()
	d.cfg.BlockTimeout = 5 * time.Second
	l2, err := rel.Loan(4096)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("reliable loan did not get the freed space: %v", err)
	}
	l2.Discard()
	if _, err := rel.Loan(2 << 20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized loan: %v", err)
	}
	if _, err := rel.Loan(0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero loan: %v", err)
	}
}

func TestWaitSet(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/ws", qos.Default())
	s := mustSub(t, d, "/ws", qos.Default())
	g := d.NewGuardCondition()
	defer g.Close()
	items := []Waitable{s, g}
	ready := make([]bool, 2)
	if err := Wait(items, ready, 10*time.Millisecond, 0); !errors.Is(err, ErrTimeout) {
		t.Fatalf("wait with nothing ready: %v", err)
	}
	done := make(chan error, 1)
	go func() { time.Sleep(10 * time.Millisecond); g.Trigger(); done <- nil }()
	if err := Wait(items, ready, 5*time.Second, 0); err != nil || !ready[1] || ready[0] {
		t.Fatalf("guard trigger: err %v ready %v", err, ready)
	}
	<-done
	g.Reset()
	go func() { time.Sleep(10 * time.Millisecond); done <- p.Publish([]byte("hi")) }()
	if err := Wait(items, ready, 5*time.Second, 0); err != nil || !ready[0] || ready[1] {
		t.Fatalf("publish: err %v ready %v", err, ready)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A process that mapped a topic just before its last user removed it must
// not join the unlinked segment: it opens the name again and meets the
// endpoints that come later.
func TestJoinAfterRemovalReopens(t *testing.T) {
	d1 := openDomain(t, nil)
	d2 := openDomain(t, nil)
	p1, err := d1.NewPublisher(EndpointSpec{Topic: "/gone", Type: "std_msgs/msg/String", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	stale, err := d2.acquireTopic("/gone", "std_msgs/msg/String", PoolHost)
	if err != nil {
		t.Fatal(err)
	}
	p1.Close() // the last endpoint: the segment is removed
	if topicState(stale.state.Load()) != topicRemoved {
		t.Fatal("segment not marked removed")
	}
	s := mustSub(t, d2, "/gone", qos.Default())
	d2.releaseTopic(stale)
	p := mustPub(t, d1, "/gone", qos.Default())
	if s.Matched() != 1 || p.Matched() != 1 {
		t.Fatalf("after reopening: subscription matched %d, publisher %d", s.Matched(), p.Matched())
	}
	if err := p.Publish([]byte("again")); err != nil {
		t.Fatal(err)
	}
	if smp, err := s.TakeWait(time.Second); err != nil || string(smp.Bytes()) != "again" {
		t.Fatalf("take: %v", err)
	} else {
		smp.Return()
	}
}

// Close of a subscription while another goroutine waits on it: the waiter
// returns ErrClosed (no fault on an unmapped segment), and a sample taken
// before Close cannot be returned into a reused slot.
func TestCloseWhileWaiting(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/closing", qos.Default())
	s, err := d.NewSubscription(EndpointSpec{Topic: "/closing", Type: "std_msgs/msg/String", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	p.Publish([]byte("held"))
	held, err := s.TakeWait(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- s.Wait(-1) }()
	g := d.NewGuardCondition()
	defer g.Close()
	go func() { done <- Wait([]Waitable{s, g}, make([]bool, 2), -1, 0) }()
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiter after Close: %v", err)
		}
	}
	s2 := mustSub(t, d, "/closing", qos.Default()) // may reuse the slot
	p.Publish([]byte("fresh"))
	if err := held.Return(); !errors.Is(err, ErrClosed) {
		t.Fatalf("returning a sample of a closed subscription: %v", err)
	}
	smp, err := s2.TakeWait(time.Second)
	if err != nil || string(smp.Bytes()) != "fresh" {
		t.Fatalf("the new subscription lost its sample: %v", err)
	}
	smp.Return()
}
