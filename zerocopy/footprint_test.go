package zerocopy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
	"golang.org/x/sys/unix"
)

func topicUsage(t testing.TB, d *Domain, topic string) uint64 {
	t.Helper()
	segs, err := d.topicSegments(topic)
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments of %s: %v %v", topic, segs, err)
	}
	_, ti, err := d.inspectSegment(segs[0], topic, map[shm.Owner]bool{})
	if err != nil {
		t.Fatal(err)
	}
	return ti.ShmUsage
}

func roundTrip(t testing.TB, p *Publisher, s *Subscription, msg []byte) {
	t.Helper()
	if err := p.Publish(msg); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(smp.Bytes()) != string(msg) {
		t.Fatalf("took %d bytes, published %d", len(smp.Bytes()), len(msg))
	}
	if err := smp.Return(); err != nil {
		t.Fatal(err)
	}
}

// A topic commits what it uses, not its cap: a chatter topic with the
// default 256 MiB pool cap uses tens of KiB of /dev/shm for small messages,
// grows with a large one, and stays there when the large one is gone.
func TestFootprintGrowsWithUse(t *testing.T) {
	d := openDomain(t, func(c *Config) { c.PoolSize = defaultPoolSize })
	p := mustPub(t, d, "/footprint", qos.Default())
	s := mustSub(t, d, "/footprint", qos.Default())
	if u := topicUsage(t, d, "/footprint"); u > 32<<10 {
		t.Fatalf("a topic with two endpoints and no message uses %d bytes of /dev/shm", u)
	}
	for i := 0; i < 1000; i++ {
		roundTrip(t, p, s, fmt.Appendf(nil, "Hello World: %d", i))
	}
	small := topicUsage(t, d, "/footprint")
	t.Logf("after 1000 small messages: %d KiB of /dev/shm for a %d MiB pool cap", small>>10, defaultPoolSize>>20)
	if small > 64<<10 {
		t.Fatalf("a topic of small messages uses %d bytes of /dev/shm, want at most 64 KiB", small)
	}
	big := make([]byte, 4<<20)
	for i := 0; i < 10; i++ {
		big[i] = byte(i)
		roundTrip(t, p, s, big)
	}
	grown := topicUsage(t, d, "/footprint")
	t.Logf("after 4 MiB messages: %d KiB", grown>>10)
	if grown < small+4<<20 || grown > small+16<<20 {
		t.Fatalf("after 4 MiB messages the topic uses %d bytes, want 4 to 16 MiB more than %d", grown, small)
	}
	for i := 0; i < 100; i++ {
		roundTrip(t, p, s, big[:1+i*40000])
	}
	if u := topicUsage(t, d, "/footprint"); u != grown {
		t.Fatalf("messages no larger than before grew the topic from %d to %d bytes", grown, u)
	}
}

// Running out of /dev/shm is an error of the operation that needed the
// memory, naming /dev/shm and the topic, never a SIGBUS: in an 8 MiB
// /dev/shm a topic (cap 256 MiB) lends until the space is gone, then its
// loan fails with ErrNoSpace (an ErrPoolExhausted). Once /dev/shm is full,
// a topic made before keeps working, a new topic fails to open with
// ErrNoSpace, and the full topic works again, once its loans are back,
// for what fits in what it committed.
func TestShmFullIsAnError(t *testing.T) {
	if !testutil.InSmallShm(t, "8m") {
		return
	}
	d := openDomain(t, func(c *Config) { c.PoolSize = defaultPoolSize })
	reliable := qos.Default()
	other := mustPub(t, d, "/other", reliable)
	otherSub := mustSub(t, d, "/other", reliable)
	roundTrip(t, other, otherSub, []byte("before"))

	p := mustPub(t, d, "/big", reliable)
	s := mustSub(t, d, "/big", reliable)
	var loans []*Loan
	var err error
	for i := 0; i < 100; i++ {
		var l *Loan
		if l, err = p.Loan(1 << 20); err != nil {
			break
		}
		l.Bytes()[len(l.Bytes())-1] = 1 // every lent byte is usable
		loans = append(loans, l)
	}
	if err == nil {
		t.Fatal("100 loans of 1 MiB fitted in an 8 MiB /dev/shm")
	}
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, ErrPoolExhausted) || !errors.Is(err, unix.ENOSPC) ||
		!strings.Contains(err.Error(), "/dev/shm") || !strings.Contains(err.Error(), "/big") {
		t.Fatalf("loan in a full /dev/shm: %v; want ErrNoSpace and ErrPoolExhausted naming /dev/shm and the topic", err)
	}
	t.Logf("%d loans of 1 MiB, then: %v", len(loans), err)

	// What the 1 MiB loans could not use, a file takes: /dev/shm is full.
	fillShm(t)
	roundTrip(t, other, otherSub, []byte("after")) // committed already: unaffected
	if _, err := d.NewPublisher(EndpointSpec{Topic: "/new", Type: "std_msgs/msg/String", QoS: reliable}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("new topic in a full /dev/shm: %v, want ErrNoSpace", err)
	}
	for _, l := range loans {
		if err := l.Discard(); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip(t, p, s, make([]byte, 1<<20))
}

// fillShm takes what is left of /dev/shm with a file, removed at cleanup.
func fillShm(t *testing.T) {
	t.Helper()
	f, err := os.Create(filepath.Join(shm.Dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); os.Remove(f.Name()) })
	var off int64
	for step := int64(1 << 20); step >= 4096; {
		if err := unix.Fallocate(int(f.Fd()), 0, off, step); err != nil {
			step /= 2
			continue
		}
		off += step
	}
}
