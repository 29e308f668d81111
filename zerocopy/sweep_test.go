package zerocopy

import (
	"encoding/binary"
	"errors"
	"fmt"
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

// The field-by-field corruption sweep (issue 12): every 4-byte word of
// every region of a topic segment (header with its lock, endpoint slots
// with their rings and held entries, sample records, allocator header and
// descriptors) is overwritten, in turn, in a live topic with messages
// queued, taken and loaned; then the topic is used by its endpoints, a new
// joiner and the janitor. For each word: no crash (the sweep runs in a child
// whose exit is checked), no hang (each case has a deadline), no wrong data
// (every message taken is one that was published), and every error is one
// the API documents, damage being ErrCorrupt; another topic keeps working.

const sweepDomain = 13

func sweepCfg() Config {
	cfg, _ := Config{Domain: sweepDomain, PoolSize: 1 << 20, MaxSamples: 64, MaxEndpoints: 8, QueueCap: 16, HeldCap: 8,
		JanitorPeriod: 10 * time.Millisecond, BlockTimeout: 50 * time.Millisecond, LockTimeout: 5 * time.Second}.withDefaults()
	return cfg
}

// sweepRegions lists the regions of a host topic of sweepCfg: name and
// [off, end) in the segment. Slots 0 and 1 are the publisher's and the
// subscription's (created in that order).
func sweepRegions() map[string][2]uint64 {
	l := layoutFor(sweepCfg(), PoolHost)
	slotLen := eRing + 4*uint64(l.queueCap) + 4*uint64(l.heldCap)
	return map[string][2]uint64{
		"header":  {0, hDevMetaCommitted + 8},
		"slots":   {l.endpointsOff, l.endpointsOff + l.endpointStride + slotLen},
		"samples": {l.samplesOff, l.samplesOff + 4*sampleStride},
		"tlsf":    {l.tlsfOff, l.tlsfOff + 8552 + 6*40},
	}
}

func init() {
	// sweep REGION STRIDE: run the sweep over one region, printing a line
	// per case and "done"; a wrong message or an unexpected error prints a
	// line starting with "BAD".
	testutil.Role("sweep", func(a []string) error {
		reg, ok := sweepRegions()[a[0]]
		if !ok {
			return fmt.Errorf("no region %q", a[0])
		}
		stride, _ := strconv.ParseUint(a[1], 10, 64)
		cfg := sweepCfg()
		d, err := Open(cfg)
		if err != nil {
			return err
		}
		defer d.Close()
		joiner, err := Open(cfg)
		if err != nil {
			return err
		}
		defer joiner.Close()
		op, err := d.NewPublisher(EndpointSpec{Topic: "/sweep_other", Type: "t/msg/T", QoS: qos.Default()})
		if err != nil {
			return err
		}
		defer op.Close()
		os_, err := d.NewSubscription(EndpointSpec{Topic: "/sweep_other", Type: "t/msg/T", QoS: qos.Default()})
		if err != nil {
			return err
		}
		defer os_.Close()
		name, _ := segName(cfg, "/sweep", "t/msg/T")
		path := filepath.Join(shm.Dir, name)
		for off, i := reg[0], 0; off < reg[1]; off, i = off+4*stride, i+1 {
			val := uint32(0xffffffff)
			if i%2 == 1 {
				val = 0x5a5a5a5a
			}
			res := make(chan string, 1)
			go func() { res <- sweepCase(d, joiner, path, off, val, i) }()
			select {
			case r := <-res:
				fmt.Printf("case %s @%d=%#x: %s\n", a[0], off-reg[0], val, r)
			case <-time.After(60 * time.Second):
				fmt.Printf("BAD case %s @%d=%#x: hang\n", a[0], off-reg[0], val)
				return errors.New("hang")
			}
			if err := op.Publish([]byte("other")); err != nil {
				fmt.Printf("BAD other topic after @%d: %v\n", off-reg[0], err)
			} else if smp, err := os_.TakeWait(10 * time.Second); err != nil || string(smp.Bytes()) != "other" {
				fmt.Printf("BAD other topic after @%d: %v\n", off-reg[0], err)
			} else {
				smp.Return()
			}
			// What the case left: removed if damaged and unused.
			d.Clean()
			if _, err := os.Stat(path); err == nil {
				fmt.Printf("BAD case @%d left its segment\n", off-reg[0])
				os.Remove(path)
			}
		}
		fmt.Println("done")
		return nil
	})
}

// sweepCase builds the topic, damages the word at off, uses the topic and
// reports the errors seen; "BAD ..." for a wrong message or an error the
// API does not document.
func sweepCase(d, joiner *Domain, path string, off uint64, val uint32, i int) string {
	var bad, seen []string
	note := func(what string, err error) {
		if err == nil {
			return
		}
		for _, ok := range []error{ErrCorrupt, ErrVersion, ErrNoData, ErrTimeout, ErrPoolExhausted, ErrQueueFull, ErrTooManyLoans, ErrClosed, shm.ErrLockTimeout} {
			if errors.Is(err, ok) {
				if errors.Is(err, ErrCorrupt) {
					seen = append(seen, what+": corrupt")
				}
				return
			}
		}
		if errors.Is(err, ErrInvalid) && strings.Contains(err.Error(), "not held") {
			return // a loan or sample the damage took away
		}
		bad = append(bad, fmt.Sprintf("%s: %v", what, err))
	}
	q := qos.Default()
	q.Depth = 8
	p, err := d.NewPublisher(EndpointSpec{Topic: "/sweep", Type: "t/msg/T", QoS: q})
	if err != nil {
		return "BAD setup: " + err.Error()
	}
	s, err := d.NewSubscription(EndpointSpec{Topic: "/sweep", Type: "t/msg/T", QoS: q})
	if err != nil {
		p.Close()
		return "BAD setup: " + err.Error()
	}
	published := map[string]bool{}
	pub := func(k int) {
		m := fmt.Sprintf("case %d message %d %s", i, k, strings.Repeat("x", 100*k))
		published[m] = true
		note("publish", p.Publish([]byte(m)))
	}
	take := func(what string) {
		smp, err := s.Take()
		note(what, err)
		if err == nil {
			if !published[string(smp.Bytes())] {
				bad = append(bad, fmt.Sprintf("%s delivered %d bytes nobody published: %.40q", what, len(smp.Bytes()), smp.Bytes()))
			}
			note("return", smp.Return())
		}
	}
	for k := 1; k <= 3; k++ {
		pub(k)
	}
	held, err := s.Take()
	if err != nil {
		return "BAD setup take: " + err.Error()
	}
	loan, err := p.Loan(100)
	if err != nil {
		return "BAD setup loan: " + err.Error()
	}
	patch(path, int64(off), binary.LittleEndian.AppendUint32(nil, val))

	for k := 0; k < 3; k++ {
		take("take")
	}
	note("return held", held.Return())
	note("discard", loan.Discard())
	pub(4)
	if smp, err := s.TakeWait(100 * time.Millisecond); err == nil {
		if !published[string(smp.Bytes())] {
			bad = append(bad, fmt.Sprintf("take-wait delivered %d bytes nobody published", len(smp.Bytes())))
		}
		note("return", smp.Return())
	} else {
		note("take-wait", err)
	}
	js, err := joiner.NewSubscription(EndpointSpec{Topic: "/sweep", Type: "t/msg/T", QoS: q})
	note("join", err)
	if err == nil {
		note("joiner close", js.Close())
	}
	d.Reclaim()
	note("close publisher", p.Close())
	note("close subscription", s.Close())
	if len(bad) > 0 {
		return "BAD " + strings.Join(bad, "; ")
	}
	if len(seen) > 0 {
		return "corrupt (" + strings.Join(seen, ", ") + ")"
	}
	return "ok"
}

func TestCorruptionSweep(t *testing.T) {
	for _, region := range []string{"header", "slots", "samples", "tlsf"} {
		t.Run(region, func(t *testing.T) {
			stride := "1"
			if testing.Short() {
				stride = "8"
			}
			k := testutil.Start(t, "sweep", region, stride)
			var lines []string
			for l := range k.Lines {
				lines = append(lines, l)
				if strings.HasPrefix(l, "BAD") || strings.Contains(l, ": BAD") {
					t.Error(l)
				}
			}
			err := k.Wait(time.Minute)
			if err != nil || len(lines) == 0 || lines[len(lines)-1] != "done" {
				last := ""
				if len(lines) > 0 {
					last = lines[len(lines)-1]
				}
				t.Fatalf("sweep child: %v after %q\n%s", err, last, k.Stderr())
			}
			corrupt := 0
			for _, l := range lines {
				if strings.Contains(l, ": corrupt") {
					corrupt++
				}
			}
			t.Logf("%d cases, %d found corrupt", len(lines)-1, corrupt)
		})
	}
}
