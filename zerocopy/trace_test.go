package zerocopy

import (
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// PublishTraced reports the stages in order, the readers reached, and
// whether a wake-up call was made; Topic.Waiting counts the blocked
// subscriber waits.
func TestPublishTraced(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/traced", qos.Default())
	s1 := mustSub(t, d, "/traced", qos.Default())
	s2 := mustSub(t, d, "/traced", qos.Default())
	publish := func() PublishTrace {
		t.Helper()
		l, err := p.Loan(64)
		if err != nil {
			t.Fatal(err)
		}
		var tr PublishTrace
		if err := l.PublishTraced(&tr); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	check := func(tr PublishTrace, slept bool) {
		t.Helper()
		st := []time.Duration{tr.Writes, tr.Forms, tr.Locked, tr.Queued, tr.Woken}
		for i := 1; i < len(st); i++ {
			if st[i] < st[i-1] {
				t.Fatalf("stages out of order: %+v", tr)
			}
		}
		if tr.Readers != 2 || tr.Slept != slept {
			t.Fatalf("trace %+v: want 2 readers, slept %v", tr, slept)
		}
	}
	if n := p.Topic().Waiting(); n != 0 {
		t.Fatalf("%d waiting before anyone waits", n)
	}
	check(publish(), false)
	for _, s := range []*Subscription{s1, s2} {
		smp, err := s.Take()
		if err != nil {
			t.Fatal(err)
		}
		smp.Return()
	}
	got := make(chan error, 2)
	for _, s := range []*Subscription{s1, s2} {
		go func() { got <- s.Wait(10 * time.Second) }()
	}
	testutil.Eventually(t, 10*time.Second, "both subscriptions blocked", func() bool { return p.Topic().Waiting() == 2 })
	check(publish(), true)
	for range 2 {
		if err := <-got; err != nil {
			t.Fatal(err)
		}
	}
}

// Publishers waiting for room are counted before they check again, and a
// free moves spaceSeq only while one is counted.
func TestSpaceWaitersCounted(t *testing.T) {
	d := openDomain(t, func(c *Config) { c.PoolSize = 1 << 20; c.BlockTimeout = 10 * time.Second })
	p := mustPub(t, d, "/room", qos.Default())
	tp := p.t
	seq := tp.spaceSeq.Load()
	for range 10 {
		l, err := p.Loan(1000)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Discard(); err != nil {
			t.Fatal(err)
		}
	}
	if now := tp.spaceSeq.Load(); now != seq {
		t.Fatalf("spaceSeq moved %d times with nobody waiting", now-seq)
	}
	big, err := p.Loan(700 << 10) // most of the pool
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := p.Loan(700 << 10) // waits for room
		if err == nil {
			err = l.Discard()
		}
		got <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the waiting publisher counted", func() bool { return tp.spaceWaiters.Load() == 1 })
	seq = tp.spaceSeq.Load()
	if err := big.Discard(); err != nil {
		t.Fatal(err)
	}
	if tp.spaceSeq.Load() == seq {
		t.Fatal("freeing room with a publisher waiting did not move spaceSeq")
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if n := tp.spaceWaiters.Load(); n != 0 {
		t.Fatalf("%d waiters counted after the wait", n)
	}
}

// Loan + Discard, and Loan + Publish + Take + Return of a caller that
// keeps neither, allocate nothing on the Go heap: no garbage collection
// ever lands in them because of the engine.
func TestHotPathsAllocateNothing(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/no_alloc", qos.Default())
	s := mustSub(t, d, "/no_alloc", qos.Default())
	loanDiscard := func() {
		l, err := p.Loan(256)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Discard(); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip := func() {
		l, err := p.Loan(256)
		if err != nil {
			t.Fatal(err)
		}
		l.Bytes()[0] = 1
		if err := l.Publish(); err != nil {
			t.Fatal(err)
		}
		smp, err := s.Take()
		if err != nil {
			t.Fatal(err)
		}
		if err := smp.Return(); err != nil {
			t.Fatal(err)
		}
	}
	for name, fn := range map[string]func(){"Loan+Discard": loanDiscard, "Loan+Publish+Take+Return": roundTrip} {
		fn()
		if n := testing.AllocsPerRun(1000, fn); n != 0 {
			t.Errorf("%s: %.2f allocations per run", name, n)
		}
	}
}
