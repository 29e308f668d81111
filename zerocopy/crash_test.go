package zerocopy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

const crashDomain = 9

func childDomain() (*Domain, error) {
	var lg *slog.Logger
	if os.Getenv("RGAPS_TEST_LOG") != "" {
		lg = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return Open(Config{Domain: crashDomain, PoolSize: 16 << 20, JanitorPeriod: 20 * time.Millisecond, Logger: lg})
}

func init() {
	// holder TOPIC N: subscribe, take N samples and a 4 KiB publisher loan,
	// keep them, print "holding", then wait to be killed.
	testutil.Role("holder", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(a[1])
		q := qos.Default()
		q.History = qos.HistoryKeepAll
		s, err := d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/holder", QoS: q})
		if err != nil {
			return err
		}
		p, err := d.NewPublisher(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/holder", QoS: qos.SensorData()})
		if err != nil {
			return err
		}
		if _, err := p.Loan(4096); err != nil {
			return err
		}
		fmt.Println("ready")
		for i := 0; i < n; i++ {
			if _, err := s.TakeWait(30 * time.Second); err != nil {
				return err
			}
		}
		fmt.Println("holding")
		time.Sleep(time.Hour)
		return nil
	})
	// scribbler TOPIC: take a sample and write into it; the read-only
	// mapping must fault.
	testutil.Role("scribbler", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		s, err := d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/scribbler", QoS: qos.Default()})
		if err != nil {
			return err
		}
		fmt.Println("ready")
		smp, err := s.TakeWait(30 * time.Second)
		if err != nil {
			return err
		}
		fmt.Println("writing")
		smp.Bytes()[0] = 'X'
		fmt.Println("wrote")
		return nil
	})
	// idle TOPIC: create a publisher offering a 20 ms deadline, print "ready", then
	// wait to be killed (liveliness is lost with the process).
	testutil.Role("idle", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		if _, err := d.RegisterNode("idle", "/", "/"); err != nil {
			return err
		}
		q := qos.Default()
		q.Deadline = 20 * time.Millisecond
		if _, err := d.NewPublisher(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/idle", QoS: q}); err != nil {
			return err
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return nil
	})
	// writer TOPIC: publish 3 whole messages of 1 MiB, then loan a 4th,
	// write half of it, print "mid-write" and wait to be killed.
	testutil.Role("writer", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		p, err := d.NewPublisher(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/writer", QoS: qos.Default()})
		if err != nil {
			return err
		}
		for deadline := time.Now().Add(10 * time.Second); p.Matched() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				return errors.New("no subscription matched")
			}
		}
		for i := 1; i <= 4; i++ {
			l, err := p.Loan(1 << 20)
			if err != nil {
				return err
			}
			half := len(l.Bytes())
			if i == 4 {
				half /= 2
			}
			for j := range l.Bytes()[:half] {
				l.Bytes()[j] = byte(i)
			}
			if i == 4 {
				fmt.Println("mid-write")
				time.Sleep(time.Hour)
			}
			if err := l.Publish(); err != nil {
				return err
			}
		}
		return nil
	})
	// locker TOPIC: take the topic lock, do the first half of returning a
	// loan (drop it from the held list, free its block, leave the sample
	// record), print "locked", and wait to be killed with the lock held:
	// what a death in the middle of freeSample leaves behind.
	testutil.Role("locker", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		p, err := d.NewPublisher(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/locker", QoS: qos.Default()})
		if err != nil {
			return err
		}
		l, err := p.Loan(8192)
		if err != nil {
			return err
		}
		t := p.t
		if err := t.lock(); err != nil {
			return err
		}
		t.dropHeld(p.slot, l.n)
		if err := t.alloc.Free(t.u32(t.sampleOff(l.n) + sBlock).Load()); err != nil {
			return err
		}
		fmt.Println("locked")
		time.Sleep(time.Hour)
		return nil
	})
}

func poolFull(t *Topic) bool {
	st := t.alloc.Stats()
	return st.UsedBlocks == 0 && st.FreeBytes == st.PoolSize && t.u32(hUsedSamples).Load() == 0
}

// SIGKILL of subscribers holding taken samples (and a publisher loan) gives
// the pool back whole; 1,000 such processes leak nothing.
func TestKilledHoldersLeakNothing(t *testing.T) {
	cycles := 1000
	if testing.Short() {
		cycles = 64
	}
	const batch = 8
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q := qos.Default()
	q.History = qos.HistoryKeepAll
	p, err := d.NewPublisher(EndpointSpec{Topic: "/held", Type: "t/msg/T", Node: "/parent", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for done := 0; done < cycles; done += batch {
		kids := make([]*testutil.Child, batch)
		for i := range kids {
			kids[i] = testutil.Start(t, "holder", "/held", "3")
		}
		for _, k := range kids {
			k.Expect(t, "ready", 30*time.Second)
		}
		testutil.Eventually(t, 10*time.Second, "all holders matched", func() bool { return p.Matched() == batch })
		for i := 0; i < 3; i++ {
			if err := p.Publish(make([]byte, 1000+i*50000)); err != nil {
				t.Fatal(err)
			}
		}
		killHoldersAndReclaim(t, d, p, kids)
	}
	if err := p.t.alloc.Check(); err != nil {
		t.Fatal(err)
	}
	if dead := p.t.u32(hDeadSubs).Load(); dead != uint32(cycles) {
		t.Fatalf("%d dead subscriptions reclaimed, want %d", dead, cycles)
	}
}

// A publisher killed in the middle of writing a loan never delivers it.
func TestPublisherKilledMidWrite(t *testing.T) {
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s, err := d.NewSubscription(EndpointSpec{Topic: "/torn", Type: "t/msg/T", Node: "/parent", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := testutil.Start(t, "writer", "/torn")
	w.Expect(t, "mid-write", 30*time.Second)
	w.Cmd.Process.Kill()
	w.Wait(10 * time.Second)
	for i := 1; i <= 3; i++ {
		smp, err := s.TakeWait(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for j, b := range smp.Bytes() {
			if b != byte(i) || len(smp.Bytes()) != 1<<20 {
				t.Fatalf("message %d byte %d = %d (len %d)", i, j, b, len(smp.Bytes()))
			}
		}
		smp.Return()
	}
	testutil.Eventually(t, 10*time.Second, "writer reclaimed", func() bool { d.Reclaim(); return poolFull(s.t) })
	if smp, err := s.Take(); !errors.Is(err, ErrNoData) {
		t.Fatalf("a message from the killed writer's unfinished loan was delivered: %v %v", smp, err)
	}
}

// A process killed while holding the topic lock, after damaging the
// allocator mid-update: the next locker takes over, repairs, and goes on.
func TestLockHolderKilledMidUpdate(t *testing.T) {
	k := testutil.Start(t, "locker", "/locked")
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	k.Expect(t, "locked", 30*time.Second)
	k.Cmd.Process.Kill()
	k.Wait(10 * time.Second)
	p, err := d.NewPublisher(EndpointSpec{Topic: "/locked", Type: "t/msg/T", Node: "/parent", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n := p.t.u32(hRepairs).Load(); n != 1 {
		t.Fatalf("%d repairs ran, want 1", n)
	}
	s, err := d.NewSubscription(EndpointSpec{Topic: "/locked", Type: "t/msg/T", Node: "/parent", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := p.Publish([]byte("after")); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(5 * time.Second)
	if err != nil || string(smp.Bytes()) != "after" {
		t.Fatalf("take after repair: %v", err)
	}
	smp.Return()
	if err := p.t.alloc.Check(); err != nil {
		t.Fatalf("allocator after repair: %v", err)
	}
	testutil.Eventually(t, 10*time.Second, "locker's loan reclaimed", func() bool { d.Reclaim(); return poolFull(p.t) })
}

// Segments that are truncated, damaged or of another version are refused
// with a clear error, never a crash.
func TestBadSegmentsRefused(t *testing.T) {
	cfg, _ := Config{Domain: crashDomain, PoolSize: 1 << 20}.withDefaults()
	d, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cases := []struct {
		name   string
		damage func(path string)
		want   error
		text   string
	}{
		{"truncated", func(p string) { os.Truncate(p, 8192) }, ErrCorrupt, "truncated"},
		{"tiny", func(p string) { os.Truncate(p, 100) }, nil, "smaller than"},
		{"bad-magic", func(p string) { patch(p, hMagic, []byte("XXXXXXXX")) }, ErrCorrupt, "bad magic"},
		// Another version's segment that nobody maps (an older build's, left
		// behind) is replaced; one still mapped is refused (version_test.go).
		// Version 2 has no meta block: its processes would leak ours.
		{"version", func(p string) { patch(p, hVersion, binary.LittleEndian.AppendUint32(nil, 99)) }, nil, ""},
		{"version-2", func(p string) { patch(p, hVersion, binary.LittleEndian.AppendUint32(nil, 2)) }, nil, ""},
		{"flipped", func(p string) { patch(p, hQueueCap, []byte{0xff}) }, ErrCorrupt, "checksum"},
		{"allocator", func(p string) { patch(p, int64(computeLayoutFor(cfg).tlsfOff)+3, []byte{0x55}) }, ErrCorrupt, "allocator"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic := "/bad_" + strings.ReplaceAll(c.name, "-", "_")
			name, _ := segName(cfg, topic, "t/msg/T")
			seg, err := createSegment(cfg, name, topic, "t/msg/T", PoolHost)
			if err != nil {
				t.Fatal(err)
			}
			seg.Close()
			defer shm.Unlink(name)
			c.damage(filepath.Join(shm.Dir, name))
			p, err := d.NewPublisher(EndpointSpec{Topic: topic, Type: "t/msg/T", QoS: qos.Default()})
			if c.text == "" { // replaced
				if err != nil {
					t.Fatalf("got %v, want the segment replaced", err)
				}
				p.Close()
				return
			}
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("got %v, want %v mentioning %q", err, c.want, c.text)
			}
		})
	}
}

func computeLayoutFor(cfg Config) layout { return layoutFor(cfg, PoolHost) }

func patch(path string, off int64, b []byte) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	f.WriteAt(b, off)
}

func TestBadNamesAndTypes(t *testing.T) {
	d := openDomain(t, nil)
	for _, topic := range []string{"", "chatter", "/a//b", "/1abc", "/a b", "/trailing/", "/" + strings.Repeat("x", 300)} {
		if _, err := d.NewPublisher(EndpointSpec{Topic: topic, Type: "t/msg/T", QoS: qos.Default()}); !errors.Is(err, ErrInvalid) {
			t.Errorf("topic %q: %v, want ErrInvalid", topic, err)
		}
	}
	mustPub(t, d, "/typed", qos.Default())
	bad := qos.Default()
	bad.Depth = 0
	if _, err := d.NewSubscription(EndpointSpec{Topic: "/typed", Type: "std_msgs/msg/String", QoS: bad}); !errors.Is(err, ErrInvalid) {
		t.Errorf("keep_last(0): %v", err)
	}
	bad.Depth = 1 << 20
	if _, err := d.NewSubscription(EndpointSpec{Topic: "/typed", Type: "std_msgs/msg/String", QoS: bad}); !errors.Is(err, ErrInvalid) {
		t.Errorf("depth beyond the queue: %v", err)
	}
}

// A subscriber that writes into a taken sample faults; the others keep
// reading the publisher's bytes.
func TestTakenSamplesAreReadOnly(t *testing.T) {
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p, err := d.NewPublisher(EndpointSpec{Topic: "/ro", Type: "t/msg/T", Node: "/parent", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := d.NewSubscription(EndpointSpec{Topic: "/ro", Type: "t/msg/T", Node: "/parent", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := testutil.Start(t, "scribbler", "/ro")
	k.Expect(t, "ready", 30*time.Second)
	testutil.Eventually(t, 10*time.Second, "scribbler matched", func() bool { return p.Matched() == 2 })
	if err := p.Publish([]byte("original")); err != nil {
		t.Fatal(err)
	}
	k.Expect(t, "writing", 30*time.Second)
	if err := k.Wait(30 * time.Second); err == nil || !strings.Contains(k.Stderr(), "fault") {
		t.Fatalf("writing into a taken sample did not fault: %v\n%s", err, k.Stderr())
	}
	smp, err := s.TakeWait(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(smp.Bytes()) != "original" {
		t.Fatalf("sample changed to %q", smp.Bytes())
	}
	smp.Return()
}

// When a publisher's process dies, its subscriptions see liveliness lost,
// the graph drops its node, and a missed deadline is counted.
func TestLivelinessAndDeadline(t *testing.T) {
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	q := qos.Default()
	q.Deadline = 30 * time.Millisecond
	s, err := d.NewSubscription(EndpointSpec{Topic: "/alive", Type: "t/msg/T", Node: "/parent", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := testutil.Start(t, "idle", "/alive")
	k.Expect(t, "ready", 30*time.Second)
	testutil.Eventually(t, 10*time.Second, "publisher alive", func() bool { return s.TakeStatus().AliveCount == 1 })
	hasNode := func() bool {
		nodes, err := d.Nodes()
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if n.Name == "idle" && n.Pid == uint32(k.Cmd.Process.Pid) {
				return true
			}
		}
		return false
	}
	if !hasNode() {
		t.Fatal("the child's node is not in the graph")
	}
	eps, err := d.Endpoints("/alive")
	if err != nil || len(eps) != 2 {
		t.Fatalf("endpoints of /alive: %v %v", eps, err)
	}
	k.Cmd.Process.Kill()
	k.Wait(10 * time.Second)
	var st Status
	testutil.Eventually(t, 10*time.Second, "liveliness lost", func() bool {
		x := s.TakeStatus()
		st.NotAliveCount, st.AliveCount = x.NotAliveCount, x.AliveCount
		st.DeadlineMissed = x.DeadlineMissed
		return x.NotAliveCount == 1 && x.AliveCount == 0
	})
	testutil.Eventually(t, 10*time.Second, "node gone from the graph", func() bool { return !hasNode() })
	testutil.Eventually(t, 10*time.Second, "deadline missed", func() bool { return s.TakeStatus().DeadlineMissed > 0 })
}

// What a SIGKILLed process leaves (its topic segment, its endpoints) is
// removed by the next process that opens the domain.
func TestCleanStaleAfterCrash(t *testing.T) {
	k := testutil.Start(t, "idle", "/crashed")
	k.Expect(t, "ready", 30*time.Second)
	k.Cmd.Process.Kill()
	k.Wait(10 * time.Second)
	cfg, _ := Config{Domain: crashDomain}.withDefaults()
	name, _ := segName(cfg, "/crashed", "t/msg/T")
	if _, err := os.Stat(filepath.Join(shm.Dir, name)); err != nil {
		t.Fatalf("the crashed process left no segment to clean: %v", err)
	}
	d, err := Open(Config{Domain: crashDomain, SkipStaleClean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	removed, err := d.CleanStale()
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0] != name {
		t.Fatalf("removed %v, want [%s]", removed, name)
	}
	if _, err := os.Stat(filepath.Join(shm.Dir, name)); !os.IsNotExist(err) {
		t.Fatalf("segment still there: %v", err)
	}
}

// killHoldersAndReclaim waits until every child holds its samples (the
// pool is not whole then), SIGKILLs them and waits until reclaiming their
// endpoints made p's pool whole again.
func killHoldersAndReclaim(t *testing.T, d *Domain, p *Publisher, kids []*testutil.Child) {
	t.Helper()
	for _, k := range kids {
		k.Expect(t, "holding", 30*time.Second)
	}
	if poolFull(p.t) {
		t.Fatal("pool full while samples are held")
	}
	for _, k := range kids {
		k.Cmd.Process.Kill()
		k.Wait(10 * time.Second)
	}
	testutil.Eventually(t, 10*time.Second, "dead holders reclaimed", func() bool {
		d.Reclaim()
		return poolFull(p.t)
	})
}
