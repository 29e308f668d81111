package zerocopy

import (
	"errors"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// pollFor sets aheadPollMost for one test.
func pollFor(t *testing.T, d time.Duration) {
	old := aheadPollMost
	aheadPollMost = d
	t.Cleanup(func() { aheadPollMost = old })
}

// polling waits until a waiter has begun a poll since polls0 and left the
// kernel (the topic counts no sleeper).
func polling(t *testing.T, tp *Topic, polls0 uint64) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, "the waiter polls", func() bool {
		return aheadPolls.Load() > polls0 && tp.Waiting() == 0
	})
}

// An announced loan wakes a sleeping subscriber, which polls, without
// returning, until the loan is published; the announcement ends with the
// publish.
func TestAnnounceWakesSleepingSubscriber(t *testing.T) {
	pollFor(t, time.Minute)
	d := openDomain(t, nil)
	p := mustPub(t, d, "/ahead", qos.Default())
	s := mustSub(t, d, "/ahead", qos.Default())
	tp := p.t
	for _, how := range []string{"Subscription.Wait", "Wait"} {
		t.Run(how, func(t *testing.T) {
			got := make(chan error, 1)
			go func() {
				if how == "Wait" {
					g := d.NewGuardCondition()
					defer g.Close()
					got <- Wait([]Waitable{g, s}, make([]bool, 2), time.Minute, 0)
					return
				}
				got <- s.Wait(time.Minute)
			}()
			testutil.Eventually(t, 10*time.Second, "the subscriber sleeps", func() bool { return tp.Waiting() == 1 })
			polls0 := aheadPolls.Load()
			l, err := p.Loan(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			l.Announce()
			if n := tp.coming.Load(); n != 1 {
				t.Fatalf("coming %d after Announce, want 1", n)
			}
			polling(t, tp, polls0)
			time.Sleep(20 * time.Millisecond)
			select {
			case err := <-got:
				t.Fatalf("the wait returned before the publish: %v", err)
			default:
			}
			copy(l.Bytes(), "ahead")
			if err := l.Publish(); err != nil {
				t.Fatal(err)
			}
			if err := <-got; err != nil {
				t.Fatal(err)
			}
			if n := tp.coming.Load(); n != 0 {
				t.Fatalf("coming %d after the publish, want 0", n)
			}
			smp, err := s.Take()
			if err != nil {
				t.Fatal(err)
			}
			if string(smp.Bytes()[:5]) != "ahead" {
				t.Fatalf("took %q", smp.Bytes()[:5])
			}
			smp.Return()
		})
	}
}

// A discarded announced loan ends the announcement: the polling
// subscriber goes back to sleep without a sample.
func TestAnnounceEndsWithDiscard(t *testing.T) {
	pollFor(t, time.Minute)
	d := openDomain(t, nil)
	p := mustPub(t, d, "/ahead_discard", qos.Default())
	s := mustSub(t, d, "/ahead_discard", qos.Default())
	tp := p.t
	got := make(chan error, 1)
	go func() { got <- s.Wait(time.Minute) }()
	testutil.Eventually(t, 10*time.Second, "the subscriber sleeps", func() bool { return tp.Waiting() == 1 })
	polls0 := aheadPolls.Load()
	l, err := p.Loan(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	l.Announce()
	l.Announce() // once per loan
	if n := tp.coming.Load(); n != 1 {
		t.Fatalf("coming %d after two Announces, want 1", n)
	}
	polling(t, tp, polls0)
	if err := l.Discard(); err != nil {
		t.Fatal(err)
	}
	if n := tp.coming.Load(); n != 0 {
		t.Fatalf("coming %d after Discard, want 0", n)
	}
	testutil.Eventually(t, 10*time.Second, "the subscriber sleeps again", func() bool { return tp.Waiting() == 1 })
	select {
	case err := <-got:
		t.Fatalf("the wait returned without a sample: %v", err)
	default:
	}
	if err := p.Publish([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// An announcement never ended (its publisher died during the copy) costs
// each waiter one bounded poll per announcement, not a spin: the waiter
// sleeps again, and a new announcement is polled for once more.
func TestStuckAnnouncementPolledOnce(t *testing.T) {
	pollFor(t, 20*time.Millisecond)
	d := openDomain(t, nil)
	p := mustPub(t, d, "/ahead_stuck", qos.Default())
	s := mustSub(t, d, "/ahead_stuck", qos.Default())
	tp := p.t
	got := make(chan error, 1)
	go func() { got <- s.Wait(time.Minute) }()
	for round := range 2 {
		testutil.Eventually(t, 10*time.Second, "the subscriber sleeps", func() bool { return tp.Waiting() == 1 })
		polls0 := aheadPolls.Load()
		if !tp.announce(1 << 20) { // and nobody ends it
			t.Fatal("a 1 MiB copy is not announced")
		}
		testutil.Eventually(t, 10*time.Second, "one poll, then sleep", func() bool {
			return aheadPolls.Load() > polls0 && tp.Waiting() == 1
		})
		if n := aheadPolls.Load() - polls0; n != 1 {
			t.Fatalf("round %d: %d polls for one announcement", round, n)
		}
		if s.expecting() {
			t.Fatalf("round %d: the announcement polled for is expected again", round)
		}
		tp.wakeSubscribers() // a wake for something else: no second poll
		time.Sleep(50 * time.Millisecond)
		testutil.Eventually(t, 10*time.Second, "asleep again", func() bool { return tp.Waiting() == 1 })
		if n := aheadPolls.Load() - polls0; n != 1 {
			t.Fatalf("round %d: %d polls after another wake", round, n)
		}
	}
	select {
	case err := <-got:
		t.Fatalf("the wait returned without a sample: %v", err)
	default:
	}
	if err := p.Publish([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// Copies too short or too long for a wake-ahead are not announced.
func TestAnnounceBounds(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/ahead_bounds", qos.Default())
	for _, size := range []int{4 << 10, wakeAheadLeast - 1, wakeAheadMost + 1} {
		l, err := p.Loan(size)
		if err != nil {
			t.Fatal(err)
		}
		l.Announce()
		if n := p.t.coming.Load(); n != 0 {
			t.Fatalf("%d bytes: coming %d, want 0", size, n)
		}
		if err := l.Discard(); err != nil {
			t.Fatal(err)
		}
	}
}

// The rmw's sleep (PrepareSleep) polls for an announced sample instead of
// preparing a sleep, and reports it ready once published.
func TestPrepareSleepPollsAhead(t *testing.T) {
	pollFor(t, time.Minute)
	d := openDomain(t, nil)
	p := mustPub(t, d, "/ahead_rmw", qos.Default())
	s := mustSub(t, d, "/ahead_rmw", qos.Default())
	g := d.NewGuardCondition()
	defer g.Close()
	l, err := p.Loan(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	polls0 := aheadPolls.Load()
	l.Announce()
	type result struct {
		sleep *Sleep
		ready []bool
		err   error
	}
	got := make(chan result, 1)
	go func() {
		ready := make([]bool, 2)
		sl, _, err := PrepareSleep([]Waitable{g, s}, ready, nil)
		got <- result{sl, ready, err}
	}()
	testutil.Eventually(t, 10*time.Second, "PrepareSleep polls", func() bool { return aheadPolls.Load() > polls0 })
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil || r.sleep != nil || r.ready[0] || !r.ready[1] {
		t.Fatalf("PrepareSleep: sleep %v, ready %v, err %v; want no sleep and the subscription ready", r.sleep, r.ready, r.err)
	}
}

// A host loan published to a GPU reader is announced before its
// host-to-device copy, and the announcement ends with the publish.
func TestGPUFormCopyAnnounced(t *testing.T) {
	d, err := gpuChildDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	requireGPU(t, d)
	pollFor(t, time.Minute)
	spec := EndpointSpec{Topic: "/ahead_gpu", Type: "t/msg/Tensor", Node: "/ahead", QoS: keepAll(), Memory: MemoryGPU}
	p, err := d.NewPublisher(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := d.NewSubscription(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp := p.t
	for _, size := range []int{4 << 10, 4 << 20} {
		got := make(chan error, 1)
		go func() { got <- s.Wait(time.Minute) }()
		testutil.Eventually(t, 10*time.Second, "the subscriber sleeps", func() bool { return tp.Waiting() == 1 })
		seq := tp.comingSeq.Load()
		l, err := p.Loan(size)
		if err != nil {
			t.Fatal(err)
		}
		copy(l.Bytes(), "gpu ahead")
		if err := l.Publish(); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		want := uint32(0)
		if size >= wakeAheadLeast {
			want = 1
		}
		if n := tp.comingSeq.Load() - seq; n != want {
			t.Fatalf("%d bytes: %d announcements, want %d", size, n, want)
		}
		if n := tp.coming.Load(); n != 0 {
			t.Fatalf("%d bytes: coming %d after the publish", size, n)
		}
		smp, err := s.Take()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := smp.DevicePtr(); err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		smp.Return()
	}
}

// RGAPS_WAKE_AHEAD=off (Config.NoWakeAhead) turns announcements off;
// other values than on and off are refused.
func TestWakeAheadOff(t *testing.T) {
	t.Setenv("RGAPS_WAKE_AHEAD", "sometimes")
	if _, err := Open(Config{Domain: testDomain, PoolSize: 16 << 20}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("RGAPS_WAKE_AHEAD=sometimes: %v, want ErrInvalid", err)
	}
	t.Setenv("RGAPS_WAKE_AHEAD", "off")
	d := openDomain(t, nil)
	p := mustPub(t, d, "/ahead_off", qos.Default())
	l, err := p.Loan(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	l.Announce()
	if n := p.t.coming.Load(); n != 0 {
		t.Fatalf("coming %d with RGAPS_WAKE_AHEAD=off", n)
	}
	if err := l.Discard(); err != nil {
		t.Fatal(err)
	}
}
