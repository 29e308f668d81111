package zerocopy

import (
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// Without a GPU, WritesOn does nothing: a host loan publishes as always.
func TestWritesOnWithoutGPU(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/writes_on", keepAll())
	s := mustSub(t, d, "/writes_on", keepAll())
	l, err := p.Loan(4)
	if err != nil {
		t.Fatal(err)
	}
	copy(l.Bytes(), "host")
	l.WritesOn(0)
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(time.Second)
	if err != nil || string(smp.Bytes()) != "host" {
		t.Fatalf("take: %v", err)
	}
	smp.Return()
}

// A loan written by a kernel on the application's stream, declared with
// WritesOn, is published once that stream's work is done, and without
// waiting for the rest of the device: another stream, held by the hold
// kernel, stays held through the publishes. The subscriber (another
// process, reading device memory) sees the kernel's bytes.
func TestGPUWritesOn(t *testing.T) {
	const msgs = 3
	_, dev, p, kids := gpuPubFixture(t, "/writes_on_gpu", 1, msgs, "0")
	user, err := dev.NewNonBlockingStream()
	if err != nil {
		t.Fatal(err)
	}
	defer user.Destroy()
	other, err := dev.NewNonBlockingStream()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Destroy()
	first, err := p.LoanDevice(1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Checksum(cuda.DevicePtr(first.ptr), 1); err != nil { // loads the kernels before anything is held
		t.Fatal(err)
	}
	first.Discard()
	flag, release := holdFlag(t, dev)
	defer release()
	if err := dev.Hold(flag, holdLimit, other); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]uint64{}
	for i := 1; i <= msgs; i++ {
		size := uint64(8<<20 + i)
		l, err := p.LoanDevice(int(size))
		if err != nil {
			t.Fatal(err)
		}
		ptr, err := l.DevicePtr()
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.FillPattern(cuda.DevicePtr(ptr), size, uint32(30+i), user); err != nil {
			t.Fatal(err)
		}
		host := make([]byte, size)
		cuda.FillPatternHost(host, uint32(30+i))
		want[uint64(i)] = cuda.ChecksumHost(host)
		l.WritesOn(user.Handle())
		done := make(chan error, 1)
		go func() { done <- l.Publish() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(60 * time.Second):
			release()
			<-done
			t.Fatal("Publish with WritesOn waited for the held stream (the context was synchronised)")
		}
	}
	if done, err := streamDone(dev, other); err != nil || done {
		t.Fatalf("the held stream finished (%v): the hold did not hold, the test shows nothing", err)
	}
	checkSums(t, kids, want, msgs)
	release()
}

// streamDone reports whether the work queued on s so far is done, without
// waiting.
func streamDone(dev *cuda.Device, s *cuda.Stream) (bool, error) {
	ev, err := dev.NewSyncEvent()
	if err != nil {
		return false, err
	}
	defer ev.Destroy()
	if err := ev.Record(s); err != nil {
		return false, err
	}
	return ev.Done()
}
