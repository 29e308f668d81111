package zerocopy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Tests of the lock-free take (take.go): a take racing an eviction, a
// repair and a publisher, and takers killed at each of its steps.

func init() {
	// taker TOPIC STEP: subscribe (KEEP_ALL), print "ready", and stop at
	// STEP ("read", "claimed", "heldword", "held") of the first lock-free take,
	// printing "at STEP", until killed.
	testutil.Role("taker", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		q := qos.Default()
		q.History = qos.HistoryKeepAll
		s, err := d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/taker", QoS: q})
		if err != nil {
			return err
		}
		takeHook = func(step string) {
			if step == a[1] {
				fmt.Println("at " + step)
				time.Sleep(time.Hour)
			}
		}
		fmt.Println("ready")
		_, err = s.TakeWait(30 * time.Second)
		return err
	})
	// churner TOPIC: take and return as fast as messages come, until
	// killed; print "taking" once the first message was taken.
	testutil.Role("churner", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		q := qos.Default()
		q.Depth = 2
		s, err := d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/churner", QoS: q})
		if err != nil {
			return err
		}
		fmt.Println("ready")
		for i := 0; ; i++ {
			smp, err := s.TakeWait(30 * time.Second)
			if err != nil {
				return err
			}
			if i == 0 {
				fmt.Println("taking")
			}
			if err := smp.Return(); err != nil {
				return err
			}
		}
	})
}

// setTakeHook installs fn as the take hook for the test.
func setTakeHook(t *testing.T, fn func(step string)) {
	t.Helper()
	takeHook = fn
	t.Cleanup(func() { takeHook = nil })
}

func seqOf(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

func publishSeq(t testing.TB, p *Publisher, seq uint64) {
	t.Helper()
	b := make([]byte, 64)
	binary.LittleEndian.PutUint64(b, seq)
	if err := p.Publish(b); err != nil {
		t.Fatal(err)
	}
}

// drained checks that every sample went back: no record in use, no block
// lent, and the allocator consistent.
func drained(t *testing.T, tp *Topic) {
	t.Helper()
	if err := tp.alloc.Check(); err != nil {
		t.Fatal(err)
	}
	if !poolFull(tp) {
		t.Fatalf("%d samples and %d blocks still in use", tp.u32(hUsedSamples).Load(), tp.alloc.Stats().UsedBlocks)
	}
}

// A publisher that evicts the very entry a take has read (between steps 2
// and 3) wins it: the take goes on with the next entry, the evicted one is
// counted lost once, and no reference is lost or doubled.
func TestTakeRacesEviction(t *testing.T) {
	d := openDomain(t, nil)
	q := qos.Default()
	q.Depth = 2
	p := mustPub(t, d, "/evict_race", q)
	s := mustSub(t, d, "/evict_race", q)
	publishSeq(t, p, 1)
	publishSeq(t, p, 2)
	raced := false
	setTakeHook(t, func(step string) {
		if step == "read" && !raced {
			raced = true
			publishSeq(t, p, 3) // the ring is full: evicts 1, the entry being taken
		}
	})
	for _, want := range []uint64{2, 3} {
		smp, err := s.Take()
		if err != nil {
			t.Fatal(err)
		}
		if got := seqOf(smp.Bytes()); got != want {
			t.Fatalf("took %d, want %d", got, want)
		}
		if err := smp.Return(); err != nil {
			t.Fatal(err)
		}
	}
	if !raced {
		t.Fatal("the hook never ran")
	}
	if lost := s.Lost(); lost != 1 {
		t.Fatalf("lost %d, want 1", lost)
	}
	if _, err := s.Take(); !errors.Is(err, ErrNoData) {
		t.Fatalf("after the last: %v", err)
	}
	drained(t, s.t)
}

// A repair (what the next locker runs after a lock holder died) that runs
// while a take is at any of its steps counts the sample exactly once for
// the take: its reference count stays right, and everything is freed in
// the end.
func TestRepairDuringTake(t *testing.T) {
	for _, step := range []string{"read", "claimed", "heldword", "held"} {
		t.Run(step, func(t *testing.T) {
			d := openDomain(t, nil)
			topic := "/repair_take_" + step
			p := mustPub(t, d, topic, qos.Default())
			s := mustSub(t, d, topic, qos.Default())
			other := mustSub(t, d, topic, qos.Default()) // keeps its reference queued
			publishSeq(t, p, 7)
			tp := s.t
			n := uint32(0)
			var refs uint32
			setTakeHook(t, func(at string) {
				if at != step {
					return
				}
				if err := tp.lock(); err != nil {
					t.Error(err)
					return
				}
				if err := tp.repair(); err != nil {
					t.Error(err)
				}
				n = tp.u32(tp.slotOff(s.slot) + eTakeN).Load()
				refs = tp.u32(tp.sampleOff(n) + sRefs).Load()
				tp.unlock()
			})
			smp, err := s.Take()
			if err != nil {
				t.Fatal(err)
			}
			if refs != 2 {
				t.Fatalf("repair at %q counted %d references to sample %d, want 2 (the take's and the other queue's)", step, refs, n)
			}
			if got := seqOf(smp.Bytes()); got != 7 {
				t.Fatalf("took %d", got)
			}
			if err := smp.Return(); err != nil {
				t.Fatal(err)
			}
			osmp, err := other.Take()
			if err != nil {
				t.Fatal(err)
			}
			if err := osmp.Return(); err != nil {
				t.Fatal(err)
			}
			drained(t, tp)
		})
	}
}

// Takes without the lock racing a publisher that evicts (KEEP_LAST 4),
// a reliable KEEP_ALL subscription that holds the publisher back, and
// repairs run over and over: every subscription sees the messages in
// order, none twice, the KEEP_LAST ones lose what they lose (taken + lost
// = published), the KEEP_ALL one loses nothing, and the pool is whole at
// the end.
func TestLockFreeTakeStress(t *testing.T) {
	msgs := 20000
	if testing.Short() {
		msgs = 3000
	}
	d := openDomain(t, func(c *Config) { c.BlockTimeout = 10 * time.Second })
	keepLast := qos.Default()
	keepLast.Depth = 4
	keepAll := qos.Default()
	keepAll.History = qos.HistoryKeepAll
	p := mustPub(t, d, "/take_stress", qos.Default())
	subs := []*Subscription{
		mustSub(t, d, "/take_stress", keepLast),
		mustSub(t, d, "/take_stress", keepLast),
		mustSub(t, d, "/take_stress", keepAll),
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	taken := make([]atomic.Int64, len(subs))
	errs := make(chan error, len(subs)+2)
	for i, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := uint64(0)
			for {
				smp, err := s.TakeWait(50 * time.Millisecond)
				if errors.Is(err, ErrTimeout) {
					if stop.Load() {
						return
					}
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				seq := seqOf(smp.Bytes())
				if seq <= last {
					errs <- fmt.Errorf("subscription %d took %d after %d", i, seq, last)
				}
				last = seq
				taken[i].Add(1)
				if err := smp.Return(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // a repair now and then, as after a lock holder's death
		defer wg.Done()
		for !stop.Load() {
			if err := p.t.lock(); err != nil {
				errs <- err
				return
			}
			err := p.t.repair()
			p.t.unlock()
			if err != nil {
				errs <- err
				return
			}
			time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
		}
	}()
	for i := 1; i <= msgs; i++ {
		publishSeq(t, p, uint64(i))
	}
	testutil.Eventually(t, 30*time.Second, "every message taken or lost", func() bool {
		for i, s := range subs {
			if int(taken[i].Load())+int(s.Lost()) < msgs {
				return false
			}
		}
		return true
	})
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, s := range subs {
		if got := int(taken[i].Load()) + int(s.Lost()); got != msgs {
			t.Errorf("subscription %d: %d taken + %d lost, want %d", i, taken[i].Load(), s.Lost(), msgs)
		}
	}
	if lost := subs[2].Lost(); lost != 0 {
		t.Errorf("the reliable KEEP_ALL subscription lost %d", lost)
	}
	drained(t, p.t)
}

// A subscriber killed at each step of a lock-free take leaves nothing
// behind: its reclaim settles the take in flight, and, when a lock holder
// died too, the repair that runs before the reclaim counts that take's
// sample once. The other subscriber gets every message.
func TestTakerKilledMidTake(t *testing.T) {
	for _, step := range []string{"read", "claimed", "heldword", "held"} {
		for _, withRepair := range []bool{false, true} {
			name := step
			if withRepair {
				name += "+repair"
			}
			t.Run(name, func(t *testing.T) { takerKilled(t, step, withRepair) })
		}
	}
}

func takerKilled(t *testing.T, step string, withRepair bool) {
	topic := "/killed_taker_" + step
	if withRepair {
		topic += "_repair"
	}
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q := qos.Default()
	q.History = qos.HistoryKeepAll
	p, err := d.NewPublisher(EndpointSpec{Topic: topic, Type: "t/msg/T", Node: "/parent", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := d.NewSubscription(EndpointSpec{Topic: topic, Type: "t/msg/T", Node: "/parent", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := testutil.Start(t, "taker", topic, step)
	k.Expect(t, "ready", 30*time.Second)
	testutil.Eventually(t, 10*time.Second, "taker matched", func() bool { return p.Matched() == 2 })
	for i := 1; i <= 3; i++ {
		publishSeq(t, p, uint64(i))
	}
	k.Expect(t, "at "+step, 30*time.Second)
	var l *testutil.Child
	if withRepair {
		// A lock holder that dies too, holding the lock from before the
		// taker's death until after it: the next locker repairs while
		// the dead taker's slot is still there, and reclaims it after.
		l = testutil.Start(t, "locker", topic)
		l.Expect(t, "locked", 30*time.Second)
	}
	k.Cmd.Process.Kill()
	k.Wait(10 * time.Second)
	if l != nil {
		l.Cmd.Process.Kill()
		l.Wait(10 * time.Second)
	}
	for i := 1; i <= 3; i++ {
		smp, err := s.TakeWait(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqOf(smp.Bytes()); got != uint64(i) {
			t.Fatalf("took %d, want %d", got, i)
		}
		if err := smp.Return(); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 10*time.Second, "the taker reclaimed", func() bool { d.Reclaim(); return poolFull(p.t) })
	want := uint32(0)
	if withRepair {
		want = 1
	}
	if n := p.t.u32(hRepairs).Load(); n != want {
		t.Fatalf("%d repairs, want %d", n, want)
	}
	if err := p.t.alloc.Check(); err != nil {
		t.Fatal(err)
	}
}

// Subscriber processes taking and returning at full speed, SIGKILLed at
// random moments (mid-take among them) while the publisher goes on:
// nothing leaks, and the parent's own subscription loses nothing.
func TestKilledTakersLeakNothing(t *testing.T) {
	rounds := 30
	if testing.Short() {
		rounds = 6
	}
	const kids = 3
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q := qos.Default()
	q.Depth = 2
	p, err := d.NewPublisher(EndpointSpec{Topic: "/churn", Type: "t/msg/T", Node: "/parent", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	all := qos.Default()
	all.History = qos.HistoryKeepAll
	s, err := d.NewSubscription(EndpointSpec{Topic: "/churn", Type: "t/msg/T", Node: "/parent", QoS: all})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seq := uint64(0)
	next := uint64(1)
	drain := func() {
		for {
			smp, err := s.Take()
			if errors.Is(err, ErrNoData) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := seqOf(smp.Bytes()); got != next {
				t.Fatalf("parent took %d, want %d", got, next)
			}
			next++
			if err := smp.Return(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for r := 0; r < rounds; r++ {
		ks := make([]*testutil.Child, kids)
		for i := range ks {
			ks[i] = testutil.Start(t, "churner", "/churn")
		}
		for _, k := range ks {
			k.Expect(t, "ready", 30*time.Second)
		}
		testutil.Eventually(t, 10*time.Second, "churners matched", func() bool { return p.Matched() == kids+1 })
		for _, k := range ks {
			for deadline := time.Now().Add(30 * time.Second); !saw(k, "taking"); {
				if time.Now().After(deadline) {
					t.Fatalf("a churner took nothing; stderr:\n%s", k.Stderr())
				}
				seq++
				publishSeq(t, p, seq)
				drain()
			}
		}
		deadline := time.Now().Add(time.Duration(1+rand.IntN(20)) * time.Millisecond)
		for i := 0; time.Now().Before(deadline) || i < 50; i++ {
			seq++
			publishSeq(t, p, seq)
			drain()
		}
		for _, k := range ks {
			k.Cmd.Process.Kill()
		}
		for _, k := range ks {
			k.Wait(10 * time.Second)
		}
	}
	drain()
	if next != seq+1 {
		t.Fatalf("parent took up to %d of %d", next-1, seq)
	}
	testutil.Eventually(t, 10*time.Second, "dead churners reclaimed", func() bool { d.Reclaim(); return poolFull(p.t) })
	if err := p.t.alloc.Check(); err != nil {
		t.Fatal(err)
	}
	if dead := p.t.u32(hDeadSubs).Load(); dead != uint32(rounds*kids) {
		t.Fatalf("%d dead subscriptions reclaimed, want %d", dead, rounds*kids)
	}
}

// saw reports whether the child's next line, if it printed one, starts
// with want.
func saw(k *testutil.Child, want string) bool {
	select {
	case l := <-k.Lines:
		return strings.HasPrefix(l, want)
	default:
		return false
	}
}

// A late-joining transient-local subscription that reads the other form of
// a GPU topic's history sample makes that form under the lock while other
// subscriptions take the same sample without it (deliverHistory, addForm).
// Without a GPU every copy fails and the block is given back: a sample
// that never has a device form must never be taken with one. (Before
// addForm named a form's block only once it was filled, lock-free takes
// captured such transient forms within seconds.)
func TestTakeRacesLateJoinerForm(t *testing.T) {
	d := openDomain(t, nil)
	if _, err := d.gpu(); !errors.Is(err, ErrNotSupported) {
		t.Skip("needs a machine without a GPU: every device copy must fail")
	}
	const depth = 64
	tl := qos.Default()
	tl.Durability = qos.DurabilityTransientLocal
	tl.Depth = depth
	p, err := d.NewPublisher(EndpointSpec{Topic: "/late_form", Type: "t/msg/T", QoS: tl, Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.t.lay.poolKind != PoolGPU || p.t.dalloc == nil {
		t.Fatalf("a GPU topic without a GPU has no device allocator (pool kind %v)", p.t.lay.poolKind)
	}
	a, err := d.NewSubscription(EndpointSpec{Topic: "/late_form", Type: "t/msg/T", QoS: tl})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	late, err := d.NewSubscription(EndpointSpec{Topic: "/late_form", Type: "t/msg/T", QoS: tl})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	tp := p.t
	var stop, pause atomic.Bool
	var runs atomic.Int64
	done := make(chan error, 1)
	go func() { // the late joiner's history delivery, over and over
		for !stop.Load() {
			if pause.Load() {
				time.Sleep(10 * time.Microsecond)
				continue
			}
			if err := tp.lock(); err != nil {
				done <- err
				return
			}
			err := tp.deliverHistory(late.slot, tl, flagWantsDevice)
			tp.unlock()
			if err != nil {
				done <- err
				return
			}
			runs.Add(1)
		}
		done <- nil
	}()
	seq, takes := uint64(0), 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		pause.Store(true)
		for range depth {
			seq++
			publishSeq(t, p, seq)
		}
		pause.Store(false)
		time.Sleep(50 * time.Microsecond)
		for range depth {
			smp, err := a.Take()
			if err != nil {
				t.Fatal(err)
			}
			takes++
			if smp.hasDev {
				t.Fatalf("take %d: sample %d taken with a device form (at %d) it never kept", takes, smp.n, smp.devOff)
			}
			if got := seqOf(smp.Bytes()); got == 0 || got > seq {
				t.Fatalf("take %d: payload sequence %d, published 1 … %d", takes, got, seq)
			}
			if err := smp.Return(); err != nil {
				t.Fatal(err)
			}
		}
	}
	stop.Store(true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if runs.Load() == 0 {
		t.Fatal("the late joiner's history was never delivered during the takes")
	}
	if err := tp.alloc.Check(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d takes against %d history deliveries", takes, runs.Load())
}

// The same at the one moment that matters, deterministically: while a
// late joiner's history delivery makes the other form of a sample (the
// block allocated, its copy not made), a lock-free take of that sample by
// another subscription sees the sample without the form.
func TestTakeDuringFormCopy(t *testing.T) {
	d := openDomain(t, nil)
	tl := qos.Default()
	tl.Durability = qos.DurabilityTransientLocal
	p, err := d.NewPublisher(EndpointSpec{Topic: "/form_copy", Type: "t/msg/T", QoS: tl, Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.t.dalloc == nil {
		t.Skip("the topic has no device pool here")
	}
	sub := func() *Subscription {
		s, err := d.NewSubscription(EndpointSpec{Topic: "/form_copy", Type: "t/msg/T", QoS: tl})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, late := sub(), sub()
	for {
		smp, err := late.Take()
		if err != nil {
			break
		}
		smp.Return()
	}
	publishSeq(t, p, 1)
	tp := p.t
	hooked := 0
	var taken *Sample
	formHook = func(n uint32) {
		hooked++
		// The take runs in another goroutine: the hook holds the topic lock,
		// which a take that falls back to the locked path would wait for.
		// (Return takes the lock: the sample goes back after the hook.)
		got := make(chan error, 1)
		go func() {
			smp, err := a.Take()
			if err == nil {
				taken = smp
				if smp.n != n {
					err = fmt.Errorf("took sample %d, the form is made for %d", smp.n, n)
				} else if smp.hasDev {
					err = fmt.Errorf("sample %d taken with a device form while that form was being made", n)
				}
			}
			got <- err
		}()
		select {
		case err := <-got:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(2 * time.Second):
			t.Error("the take waited for the lock (it fell back to the locked path)")
		}
	}
	defer func() { formHook = nil }()
	if err := tp.lock(); err != nil {
		t.Fatal(err)
	}
	herr := tp.deliverHistory(late.slot, tl, flagWantsDevice)
	tp.unlock()
	if herr != nil {
		t.Fatal(herr)
	}
	if hooked == 0 {
		t.Fatal("the history delivery made no form")
	}
	if taken == nil {
		t.Fatal("nothing was taken")
	}
	if err := taken.Return(); err != nil {
		t.Fatal(err)
	}
}
