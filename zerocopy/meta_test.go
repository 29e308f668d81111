package zerocopy

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func init() {
	// metaholder TOPIC N: subscribe, take N samples, check each has the
	// meta "meta <its first payload byte>", keep them, print "holding",
	// then wait to be killed.
	testutil.Role("metaholder", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(a[1])
		q := qos.Default()
		q.History = qos.HistoryKeepAll
		s, err := d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/metaholder", QoS: q})
		if err != nil {
			return err
		}
		fmt.Println("ready")
		for i := 0; i < n; i++ {
			smp, err := s.TakeWait(30 * time.Second)
			if err != nil {
				return err
			}
			if want := fmt.Sprintf("meta %d", smp.Bytes()[0]); string(smp.Meta()) != want {
				return fmt.Errorf("meta %q, want %q", smp.Meta(), want)
			}
		}
		fmt.Println("holding")
		time.Sleep(time.Hour)
		return nil
	})
}

// publishMeta loans len(data) bytes, fills them, attaches meta and
// publishes.
func publishMeta(t testing.TB, p *Publisher, data, meta []byte) {
	t.Helper()
	l, err := p.Loan(len(data))
	if err != nil {
		t.Fatal(err)
	}
	copy(l.Bytes(), data)
	if err := l.SetMeta(meta); err != nil {
		t.Fatal(err)
	}
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
}

// The meta block travels with the payload; SetMeta replaces and clears
// it; every block is back in the pool after the last Return.
func TestMetaRoundTrip(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/meta", keepAll())
	s1 := mustSub(t, d, "/meta", keepAll())
	s2 := mustSub(t, d, "/meta", keepAll())

	l, err := p.Loan(1000)
	if err != nil {
		t.Fatal(err)
	}
	copy(l.Bytes(), "payload")
	if err := l.SetMeta(bytes.Repeat([]byte{1}, 3000)); err != nil {
		t.Fatal(err)
	}
	if err := l.SetMeta(make([]byte, MaxMeta+1)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("meta of MaxMeta+1 bytes: %v, want ErrInvalid", err)
	}
	if err := l.SetMeta([]byte("header")); err != nil { // replaces
		t.Fatal(err)
	}
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	publishMeta(t, p, []byte("cleared"), []byte("x"))
	l, _ = p.Loan(10)
	l.SetMeta([]byte("gone"))
	l.SetMeta(nil) // clears
	copy(l.Bytes(), "none")
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	publishMeta(t, p, []byte("big"), bytes.Repeat([]byte("m"), MaxMeta))
	want := []struct{ data, meta string }{{"payload", "header"}, {"cleared", "x"}, {"none", ""}, {"big", string(bytes.Repeat([]byte("m"), MaxMeta))}}
	for _, s := range []*Subscription{s1, s2} {
		for i, w := range want {
			smp, err := s.TakeWait(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(smp.Bytes(), []byte(w.data)) || string(smp.Meta()) != w.meta {
				t.Fatalf("message %d: %.10q meta %.10q (%d bytes), want %q and %.10q", i, smp.Bytes(), smp.Meta(), len(smp.Meta()), w.data, w.meta)
			}
			if w.meta == "" && smp.Meta() != nil {
				t.Fatalf("message %d: meta %q, want nil", i, smp.Meta())
			}
			if err := smp.Return(); err != nil {
				t.Fatal(err)
			}
			if smp.Meta() != nil {
				t.Fatal("meta still readable after Return")
			}
		}
	}
	// A discarded loan gives its meta back too.
	l, _ = p.Loan(10)
	l.SetMeta([]byte("discarded"))
	if err := l.Discard(); err != nil {
		t.Fatal(err)
	}
	if !poolFull(p.t) {
		t.Fatalf("blocks left after every sample was returned: %+v", p.t.alloc.Stats())
	}
	if err := p.t.alloc.Check(); err != nil {
		t.Fatal(err)
	}
}

// A late-joining transient-local subscription gets the history with its
// meta.
func TestMetaTransientLocal(t *testing.T) {
	d := openDomain(t, nil)
	q := qos.Default()
	q.Durability = qos.DurabilityTransientLocal
	q.Depth = 2
	p := mustPub(t, d, "/meta_tl", q)
	for i := 1; i <= 3; i++ {
		publishMeta(t, p, []byte{byte(i)}, []byte(fmt.Sprintf("meta %d", i)))
	}
	s := mustSub(t, d, "/meta_tl", q)
	for i := 2; i <= 3; i++ {
		smp, err := s.Take()
		if err != nil {
			t.Fatal(err)
		}
		if smp.Bytes()[0] != byte(i) || string(smp.Meta()) != fmt.Sprintf("meta %d", i) {
			t.Fatalf("history %d: %v %q", i, smp.Bytes(), smp.Meta())
		}
		smp.Return()
	}
}

// A meta block that finds the host pool full: a BEST_EFFORT publisher
// counts a drop and gets ErrPoolExhausted at once, the loan keeps working.
func TestMetaPoolExhausted(t *testing.T) {
	d := openDomain(t, func(c *Config) { c.PoolSize = 64 << 10 })
	p := mustPub(t, d, "/meta_full", qos.SensorData())
	l, err := p.Loan(60 << 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetMeta(make([]byte, 8<<10)); !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("SetMeta in a full pool: %v, want ErrPoolExhausted", err)
	}
	if p.Drops() != 1 {
		t.Fatalf("%d drops, want 1", p.Drops())
	}
	if err := l.SetMeta([]byte("small")); err != nil {
		t.Fatal(err)
	}
	if err := l.Discard(); err != nil {
		t.Fatal(err)
	}
	if !poolFull(p.t) {
		t.Fatal("blocks left")
	}
}

// Damaged meta words are ErrCorrupt at the take, never a read outside
// the pool.
func TestMetaCorruptFields(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    uint64
		v    uint64
		wide bool
	}{{"size", sMetaSize, MaxMeta + 1, false}, {"offset", sMetaOffset, 1 << 40, true}, {"block", sMetaBlock, 9999, false}, {"stray size", sMetaSize, 5, false}} {
		t.Run(tc.name, func(t *testing.T) {
			d := openDomain(t, nil)
			t.Cleanup(func() { d.Clean() }) // removes the damaged segment once closed
			p := mustPub(t, d, "/meta_bad", keepAll())
			s := mustSub(t, d, "/meta_bad", keepAll())
			meta := []byte("meta")
			if tc.name == "stray size" {
				meta = nil
			}
			publishMeta(t, p, []byte("x"), meta)
			so := p.t.sampleOff(1)
			if tc.wide {
				p.t.u64(so + tc.f).Store(tc.v)
			} else {
				p.t.u32(so + tc.f).Store(uint32(tc.v))
			}
			if _, err := s.Take(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("take: %v, want ErrCorrupt", err)
			}
		})
	}
}

// SIGKILLed subscribers holding samples with meta are reclaimed: every
// payload and meta block goes back.
func TestMetaKilledHolderReclaimed(t *testing.T) {
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := d.NewPublisher(EndpointSpec{Topic: "/meta_held", Type: "t/msg/T", Node: "/parent", QoS: keepAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	kids := []*testutil.Child{testutil.Start(t, "metaholder", "/meta_held", "3"), testutil.Start(t, "metaholder", "/meta_held", "3")}
	for _, k := range kids {
		k.Expect(t, "ready", 30*time.Second)
	}
	testutil.Eventually(t, 10*time.Second, "holders matched", func() bool { return p.Matched() == len(kids) })
	for i := 1; i <= 3; i++ {
		publishMeta(t, p, bytes.Repeat([]byte{byte(i)}, 1000*i), []byte(fmt.Sprintf("meta %d", i)))
	}
	killHoldersAndReclaim(t, d, p, kids)
	if err := p.t.alloc.Check(); err != nil {
		t.Fatal(err)
	}
	if dead := p.t.u32(hDeadSubs).Load(); dead != uint32(len(kids)) {
		t.Fatalf("%d dead subscriptions reclaimed, want %d", dead, len(kids))
	}
	if dead := p.t.u32(hDeadSubs).Load(); dead != uint32(len(kids)) {
		t.Fatalf("%d dead subscriptions reclaimed, want %d", dead, len(kids))
	}
}

// A device loan's meta block lies in the staging pool: GPU and host
// readers both get it, and it goes back with the sample.
func TestGPUMetaDeviceLoan(t *testing.T) {
	d, err := gpuChildDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dev := requireGPU(t, d)
	p, err := d.NewPublisher(EndpointSpec{Topic: "/meta_gpu", Type: "t/msg/Tensor", QoS: keepAll(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var subs []*Subscription
	for _, m := range []Memory{MemoryGPU, MemoryHost} {
		s, err := d.NewSubscription(EndpointSpec{Topic: "/meta_gpu", Type: "t/msg/Tensor", QoS: keepAll(), Memory: m})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		subs = append(subs, s)
	}
	l, err := p.LoanDevice(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	ptr, _ := l.DevicePtr()
	if err := dev.FillPattern(cuda.DevicePtr(ptr), 1<<20, 5, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.SetMeta([]byte("image header")); err != nil {
		t.Fatal(err)
	}
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		smp, err := s.TakeWait(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(smp.Meta()) != "image header" {
			t.Fatalf("%v reader: meta %q", s.Memory(), smp.Meta())
		}
		smp.Return()
	}
	if st := p.t.alloc.Stats(); st.UsedBlocks != 0 {
		t.Fatalf("staging pool blocks left: %+v", st)
	}
}
