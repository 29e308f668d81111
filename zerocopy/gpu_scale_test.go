package zerocopy

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

func init() {
	// gpufanout TOPIC N MSGS: N GPU subscriptions on TOPIC; print "ready";
	// take MSGS messages on each (message i: gpuFanoutSize(i) bytes of
	// FillPattern seed i), checking each on the device; print "ok".
	testutil.Role("gpufanout", func(a []string) error {
		d, err := gpuChildDomain()
		if err != nil {
			return err
		}
		defer d.Close()
		n, _ := strconv.Atoi(a[1])
		msgs, _ := strconv.Atoi(a[2])
		subs := make([]*Subscription, n)
		for i := range subs {
			if subs[i], err = d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/Tensor", Node: "/gpufanout", QoS: keepAll(), Memory: MemoryGPU}); err != nil {
				return fmt.Errorf("subscription %d: %w", i, err)
			}
		}
		dev, err := d.gpu()
		if err != nil {
			return err
		}
		fmt.Println("ready")
		for m := 1; m <= msgs; m++ {
			host := make([]byte, gpuFanoutSize(m))
			cuda.FillPatternHost(host, uint32(m))
			want := cuda.ChecksumHost(host)
			for i, s := range subs {
				smp, err := s.TakeWait(time.Minute)
				if err != nil {
					return fmt.Errorf("subscription %d, message %d: %w", i, m, err)
				}
				p, err := smp.DevicePtr()
				if err != nil {
					return err
				}
				sum, err := dev.Checksum(cuda.DevicePtr(p), uint64(smp.Size()))
				if err != nil {
					return err
				}
				if sum != want || smp.Size() != len(host) {
					return fmt.Errorf("subscription %d, message %d: %d bytes with checksum %#x, want %d and %#x", i, m, smp.Size(), sum, len(host), want)
				}
				smp.Return()
			}
		}
		fmt.Println("ok")
		return nil
	})
}

func gpuFanoutSize(m int) int { return 1<<20 + m*4097 }

// 256 GPU subscriptions on one GPU topic, spread over 8 processes, each
// get every device-loaned message, checked on the device: the pool
// daemon, the per-process device mappings and the publisher's device form
// serve them all.
func TestManyGPUSubscriberProcesses(t *testing.T) {
	const procs, per, msgs = 8, 32, 3
	_, dev, p, _ := gpuPubFixture(t, "/gpu_fanout", 0, 0, "0")
	var cs []*testutil.Child
	for range procs {
		cs = append(cs, testutil.Start(t, "gpufanout", "/gpu_fanout", strconv.Itoa(per), strconv.Itoa(msgs)))
	}
	for _, c := range cs {
		c.Expect(t, "ready", 2*time.Minute)
	}
	if m := p.Matched(); m != procs*per {
		t.Fatalf("publisher matched %d, want %d", m, procs*per)
	}
	for m := 1; m <= msgs; m++ {
		l, err := p.LoanDevice(gpuFanoutSize(m))
		if err != nil {
			t.Fatal(err)
		}
		ptr, _ := l.DevicePtr()
		if err := dev.FillPattern(cuda.DevicePtr(ptr), uint64(gpuFanoutSize(m)), uint32(m), nil); err != nil {
			t.Fatal(err)
		}
		if err := l.Publish(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cs {
		c.Expect(t, "ok", 2*time.Minute)
		if err := c.Wait(time.Minute); err != nil {
			t.Fatalf("subscriber process %d: %v; %s", i, err, c.Stderr())
		}
	}
}
