package test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func TestMain(m *testing.M) { testutil.Main(m) }

const msgType = "rgaps_test/msg/Blob"

// pattern is the same pseudo-random bytes in every process: message i is a
// window of it, so a subscriber checks every byte without the publisher
// sending a checksum.
var pattern = sync.OnceValue(func() []byte {
	b := make([]byte, 64<<20+1<<20)
	r := rand.NewChaCha8([32]byte{'r', 'g', 'a', 'p', 's'})
	r.Read(b)
	return b
})

// msgSize gives the mixed sizes of the big test: 1 KB–16 KB mostly, every
// 10th 64 KB–1 MB, every 100th 4–16 MB, every 1000th 64 MB.
func msgSize(i int) int {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	switch {
	case i%1000 == 999:
		return 64 << 20
	case i%100 == 99:
		return 4<<20 + r.IntN(12<<20)
	case i%10 == 9:
		return 64<<10 + r.IntN(960<<10)
	}
	return 1<<10 + r.IntN(15<<10)
}

func msgBytes(i, size int) []byte {
	p := pattern()
	off := (i * 4099) % (len(p) - size + 1)
	return p[off : off+size]
}

func ctxFor(t testing.TB, domain uint32, mod func(*zerocopy.Config)) *rgaps.Context {
	cfg := zerocopy.Config{PoolSize: 256 << 20, BlockTimeout: 60 * time.Second, JanitorPeriod: 20 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	c, err := rgaps.NewContext(rgaps.Options{Domain: &domain, Engine: cfg})
	if err != nil {
		if t != nil {
			t.Fatal(err)
		}
		panic(err)
	}
	return c
}

func qosNamed(name string) qos.Profile {
	q := qos.Default()
	switch name {
	case "reliable-all":
		q.History = qos.HistoryKeepAll
	case "keep-last-5":
		q.Depth = 5
	case "sensor":
		q = qos.SensorData()
	}
	return q
}

func init() {
	// sub DOMAIN TOPIC COUNT QOS [DELAYUS]: take COUNT messages, check every
	// byte and the order, print "ok <count> <bytes> <lastseq>".
	testutil.Role("sub", func(a []string) error {
		dom, _ := strconv.Atoi(a[0])
		count, _ := strconv.Atoi(a[2])
		delay := 0
		if len(a) > 4 {
			delay, _ = strconv.Atoi(a[4])
		}
		c := ctxFor(nil, uint32(dom), nil)
		defer c.Close()
		n, err := c.NewNode("sub"+strconv.Itoa(syscall.Getpid()), "/")
		if err != nil {
			return err
		}
		s, err := n.NewSubscription(a[1], msgType, qosNamed(a[3]))
		if err != nil {
			return err
		}
		fmt.Println("ready")
		var total int64
		last := uint64(0)
		got := 0
		for got < count {
			smp, err := s.TakeWait(30 * time.Second)
			if err != nil {
				return fmt.Errorf("after %d messages (last seq %d): %w", got, last, err)
			}
			seq := smp.Info().Sequence
			if seq <= last {
				return fmt.Errorf("sequence %d after %d: order broken", seq, last)
			}
			if a[3] == "reliable-all" && seq != last+1 {
				return fmt.Errorf("sequence %d after %d: reliable keep-all lost messages", seq, last)
			}
			i := int(seq - 1)
			want := msgBytes(i, msgSize(i))
			if !bytes.Equal(smp.Bytes(), want) {
				return fmt.Errorf("message %d: %d bytes differ from the %d published", seq, len(smp.Bytes()), len(want))
			}
			total += int64(len(want))
			last = seq
			got++
			if err := smp.Return(); err != nil {
				return err
			}
			if delay > 0 {
				time.Sleep(time.Duration(delay) * time.Microsecond)
			}
			if a[3] != "reliable-all" && seq == uint64(count) {
				break
			}
		}
		fmt.Printf("ok %d %d %d\n", got, total, last)
		return nil
	})
	// pub DOMAIN TOPIC COUNT SUBS QOS: wait for SUBS matches, publish COUNT
	// messages through loans, print "done".
	testutil.Role("pub", func(a []string) error {
		dom, _ := strconv.Atoi(a[0])
		count, _ := strconv.Atoi(a[2])
		subs, _ := strconv.Atoi(a[3])
		c := ctxFor(nil, uint32(dom), nil)
		defer c.Close()
		n, err := c.NewNode("pub", "/")
		if err != nil {
			return err
		}
		p, err := n.NewPublisher(a[1], msgType, qosNamed(a[4]))
		if err != nil {
			return err
		}
		for deadline := time.Now().Add(30 * time.Second); p.Matched() < subs; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				return fmt.Errorf("only %d of %d subscriptions matched", p.Matched(), subs)
			}
		}
		for i := 0; i < count; i++ {
			size := msgSize(i)
			l, err := p.Loan(size)
			if err != nil {
				return fmt.Errorf("loan %d (%d bytes): %w", i, size, err)
			}
			copy(l.Bytes(), msgBytes(i, size))
			if err := l.Publish(); err != nil {
				return fmt.Errorf("publish %d: %w", i, err)
			}
		}
		fmt.Println("done")
		return nil
	})
}

func parseOK(t *testing.T, line string) (got int, total int64, last uint64) {
	t.Helper()
	if _, err := fmt.Sscanf(line, "ok %d %d %d", &got, &total, &last); err != nil {
		t.Fatalf("bad result line %q: %v", line, err)
	}
	return
}

// One publisher process and eight subscriber processes, 10,000 messages of
// 1 KB to 64 MB, RELIABLE/KEEP_ALL: every byte checked, order kept, none
// lost. A ninth, slow KEEP_LAST(5) subscriber loses only older messages.
func TestOnePublisherEightSubscriberProcesses(t *testing.T) {
	count := 10000
	if testing.Short() {
		count = 1000
	}
	const domain = 41
	subs := make([]*testutil.Child, 8)
	for i := range subs {
		subs[i] = testutil.Start(t, "sub", "41", "/big", strconv.Itoa(count), "reliable-all")
	}
	slow := testutil.Start(t, "sub", "41", "/big", strconv.Itoa(count), "keep-last-5", "200")
	for _, c := range append(subs, slow) {
		c.Expect(t, "ready", 30*time.Second)
	}
	pub := testutil.Start(t, "pub", "41", "/big", strconv.Itoa(count), "9", "reliable")
	pub.Expect(t, "done", 10*time.Minute)
	var want int64
	for i := 0; i < count; i++ {
		want += int64(msgSize(i))
	}
	for i, c := range subs {
		got, total, last := parseOK(t, c.Expect(t, "ok", 5*time.Minute))
		if got != count || total != want || last != uint64(count) {
			t.Errorf("subscriber %d: %d messages, %d bytes, last %d; want %d, %d, %d", i, got, total, last, count, want, count)
		}
	}
	got, _, last := parseOK(t, slow.Expect(t, "ok", 5*time.Minute))
	if last != uint64(count) || got > count {
		t.Errorf("keep-last subscriber: %d messages, last %d; want the newest (%d) delivered", got, last, count)
	}
	t.Logf("%d messages, %d MB to each of 8 reliable subscribers; slow KEEP_LAST(5) got %d", count, want>>20, got)
	for _, c := range append(subs, slow, pub) {
		if err := c.Wait(30 * time.Second); err != nil {
			t.Errorf("child: %v\n%s", err, c.Stderr())
		}
	}
	_ = errors.New
}
