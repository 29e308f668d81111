package zerocopy

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// mmapBuffer maps n bytes of anonymous shared memory: a copier's host side
// must lie outside the Go heap.
func mmapBuffer(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

// pinnedBuffer is mmapBuffer pinned for d's GPU with PinHost, as the
// bridge pins its ring and staging memory.
func pinnedBuffer(t testing.TB, d *Domain, n int) []byte {
	t.Helper()
	b := mmapBuffer(t, n)
	unpin, err := d.PinHost(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unpin() })
	return b
}

// Without a GPU there is no copier: NewCopier says why with
// ErrNotSupported (every loan and sample is host memory then).
func TestCopierWithoutGPU(t *testing.T) {
	d := openDomain(t, nil)
	if _, err := d.gpu(); err == nil {
		t.Skip("this machine has a GPU: the no-GPU path is not what runs here")
	}
	c, err := d.NewCopier()
	if !errors.Is(err, ErrNotSupported) || c != nil {
		t.Fatalf("NewCopier without a GPU: %v, %v; want ErrNotSupported", c, err)
	}
	var nilc *Completion
	if !nilc.Done() || nilc.Wait() != nil {
		t.Error("a nil completion is not done")
	}
}

// Host loans and samples with no device form take plain copies, done when
// the call returns; arguments are checked; Close refuses later copies. A
// host-only copier (no device) runs these paths on any machine.
func TestCopierHostFallbacks(t *testing.T) {
	d := openDomain(t, nil)
	c := &Copier{d: d}
	defer c.Close()
	q := qos.Default()
	q.History, q.Depth = qos.HistoryKeepLast, 10
	sub := mustSub(t, d, "/copier", q)
	pub := mustPub(t, d, "/copier", q)
	src := mmapBuffer(t, 4096)
	copy(src, "hello world, and more")

	l, err := pub.Loan(1000)
	if err != nil {
		t.Fatal(err)
	}
	x, err := c.CopyIn(l, 0, src[:6])
	if err != nil || !x.Done() || x.Wait() != nil {
		t.Fatalf("host CopyIn: %v (done %v)", err, x.Done())
	}
	if _, err := c.CopyIn(l, 6, src[6:11]); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ off, n int }{{-1, 1}, {998, 3}, {1001, 0}} {
		if _, err := c.CopyIn(l, bad.off, src[:bad.n]); !errors.Is(err, ErrInvalid) {
			t.Errorf("CopyIn of %d bytes at %d of a 1000-byte loan: %v, want ErrInvalid", bad.n, bad.off, err)
		}
	}
	if err := l.Shrink(11); err != nil {
		t.Fatal(err)
	}
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyIn(l, 0, src[:1]); !errors.Is(err, ErrInvalid) {
		t.Errorf("CopyIn into a published loan: %v, want ErrInvalid", err)
	}

	smp, err := sub.TakeWait(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(smp.Bytes()) != "hello world" {
		t.Fatalf("published %q", smp.Bytes())
	}
	dst := mmapBuffer(t, 4096)
	x, err = c.StageOut(dst[:5], smp, 6)
	if err != nil || !x.Done() || x.Wait() != nil || string(dst[:5]) != "world" {
		t.Fatalf("host StageOut: %v, %q", err, dst[:5])
	}
	if x, err := c.StageOut(dst[:0], smp, 11); err != nil || !x.Done() {
		t.Errorf("empty StageOut at the end: %v", err)
	}
	for _, bad := range []struct{ off, n int }{{-1, 1}, {7, 5}, {12, 0}} {
		if _, err := c.StageOut(dst[:bad.n], smp, bad.off); !errors.Is(err, ErrInvalid) {
			t.Errorf("StageOut of %d bytes at %d of an 11-byte sample: %v, want ErrInvalid", bad.n, bad.off, err)
		}
	}
	if err := smp.Return(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StageOut(dst[:1], smp, 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("StageOut of a returned sample: %v, want ErrInvalid", err)
	}

	// Another domain's loan is refused.
	d2 := openDomain(t, nil)
	p2 := mustPub(t, d2, "/copier2", q)
	l2, err := p2.Loan(10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyIn(l2, 0, src[:1]); !errors.Is(err, ErrInvalid) {
		t.Errorf("CopyIn into another domain's loan: %v, want ErrInvalid", err)
	}
	l2.Discard()

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = pub.Loan(10)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Discard()
	if _, err := c.CopyIn(l, 0, src[:1]); !errors.Is(err, ErrClosed) {
		t.Errorf("CopyIn after Close: %v, want ErrClosed", err)
	}
}

// A GPU topic's host loan (the staging pool) takes plain copies too, and
// its host readers get the bytes.
func TestCopierHostLoanOfGPUTopic(t *testing.T) {
	useTestDaemon(t) // a GPU topic: where there is a GPU, it starts the daemon
	d := openDomain(t, nil)
	c := &Copier{d: d}
	defer c.Close()
	p, err := d.NewPublisher(EndpointSpec{Topic: "/copier_gpu", Type: "t/msg/T", QoS: qos.Default(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := d.NewSubscription(EndpointSpec{Topic: "/copier_gpu", Type: "t/msg/T", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	src := mmapBuffer(t, 4096)
	copy(src, "bytes for a host reader")
	l, err := p.Loan(23)
	if err != nil {
		t.Fatal(err)
	}
	if l.OnDevice() {
		t.Fatal("Loan gave a device block")
	}
	if _, err := c.CopyIn(l, 0, src[:23]); err != nil {
		t.Fatal(err)
	}
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Return()
	if string(smp.Bytes()) != "bytes for a host reader" {
		t.Fatalf("got %q", smp.Bytes())
	}
}

// holdFlag maps a host word for the hold kernel (cuda.Device.Hold) and
// returns its device address and the function that sets it, releasing
// what the kernel holds; cleanup releases too, and waits for the kernel to
// end before the word is unregistered.
func holdFlag(t *testing.T, dev *cuda.Device) (cuda.DevicePtr, func()) {
	t.Helper()
	flag := mmapBuffer(t, 4096)
	if err := dev.HostRegister(flag, cuda.HostRegisterPortable|cuda.HostRegisterDeviceMap); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.HostUnregister(flag) })
	p, err := dev.HostDevicePointer(flag)
	if err != nil {
		t.Fatal(err)
	}
	release := func() { flag[0] = 1 }
	t.Cleanup(func() {
		release()
		dev.CtxSynchronize()
	})
	return p, release
}

// holdLimit bounds a hold kernel: only a broken test lets it run out.
const holdLimit = 2 * time.Minute

// Two copiers do not wait for each other, nor for the process's other
// device work: with copier B's stream and the legacy default stream held
// by the hold kernel, B's large copy queued behind it, copier A's copy
// completes, and B's is still pending; released, B's completes with the
// right bytes.
func TestGPUCopiersIndependent(t *testing.T) {
	d, err := gpuChildDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dev := requireGPU(t, d)
	const big, small = 64 << 20, 1 << 20
	p, err := d.NewPublisher(EndpointSpec{Topic: "/copiers", Type: "t/msg/Tensor", Node: "/pub", QoS: keepAll(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ca, err := d.NewCopier()
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	cb, err := d.NewCopier()
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	srcA, srcB := pinnedBuffer(t, d, small), pinnedBuffer(t, d, big)
	cuda.FillPatternHost(srcA, 1)
	cuda.FillPatternHost(srcB, 2)
	la, err := p.LoanDevice(small)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Discard()
	lb, err := p.LoanDevice(big)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Discard()
	if _, err := dev.Checksum(cuda.DevicePtr(la.ptr), 1); err != nil { // loads the kernels before anything is held
		t.Fatal(err)
	}
	flag, release := holdFlag(t, dev)
	defer release() // before the deferred waits for held copies, on failure

	if err := dev.Hold(flag, holdLimit, cb.stream); err != nil {
		t.Fatal(err)
	}
	if err := dev.Hold(flag, holdLimit, nil); err != nil {
		t.Fatal(err)
	}
	xb, err := cb.CopyIn(lb, 0, srcB)
	if err != nil {
		t.Fatal(err)
	}
	xa, err := ca.CopyIn(la, 0, srcA)
	if err != nil {
		t.Fatal(err)
	}
	if err := xa.Wait(); err != nil {
		t.Fatal(err)
	}
	if !xa.Done() {
		t.Fatal("a completion is not done after Wait")
	}
	if xb.Done() {
		t.Fatal("copier B's copy behind the hold kernel is done: the hold did not hold, the test shows nothing")
	}
	release()
	if err := xb.Wait(); err != nil {
		t.Fatal(err)
	}
	out := pinnedBuffer(t, d, big)
	for _, c := range []struct {
		l    *Loan
		want []byte
	}{{la, srcA}, {lb, srcB}} {
		if err := dev.MemcpyDtoH(out[:len(c.want)], cuda.DevicePtr(c.l.ptr)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out[:len(c.want)], c.want) {
			t.Errorf("the %d-byte loan holds the wrong bytes", len(c.want))
		}
	}
}

// Copy-in and publish without synchronising the context: a device loan
// filled in pieces by copier A is published while copier B is held (a
// Publish that synchronised the context, or waited for B, would not
// return), and a GPU subscriber in another process checksums the right
// bytes on the GPU.
func TestGPUCopyInPublish(t *testing.T) {
	const msgs = 3
	d, dev, p, kids := gpuPubFixture(t, "/copyin", 1, msgs, "0")
	ca, err := d.NewCopier()
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	cb, err := d.NewCopier()
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	const most = 16<<20 + 3*4097
	src, srcB := pinnedBuffer(t, d, most), pinnedBuffer(t, d, 32<<20)
	lb, err := p.LoanDevice(len(srcB)) // maps the pool before anything is held
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Discard()
	if _, err := dev.Checksum(cuda.DevicePtr(lb.ptr), 1); err != nil { // loads the kernels
		t.Fatal(err)
	}
	flag, release := holdFlag(t, dev)
	defer release() // before the deferred waits for held copies, on failure
	if err := dev.Hold(flag, holdLimit, cb.stream); err != nil {
		t.Fatal(err)
	}
	xb, err := cb.CopyIn(lb, 0, srcB)
	if err != nil {
		t.Fatal(err)
	}

	want := map[uint64]uint64{}
	for i := 1; i <= msgs; i++ {
		size := 16<<20 + i*4097
		body := src[:size]
		cuda.FillPatternHost(body, uint32(20+i))
		want[uint64(i)] = cuda.ChecksumHost(body)
		l, err := p.LoanDevice(size)
		if err != nil {
			t.Fatal(err)
		}
		// Three pieces, as the bridge places the chunks of a message.
		cuts := []int{0, size / 3, size/3 + 4096, size}
		for k := 0; k+1 < len(cuts); k++ {
			if _, err := ca.CopyIn(l, cuts[k], body[cuts[k]:cuts[k+1]]); err != nil {
				t.Fatal(err)
			}
		}
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
			t.Fatal("Publish waited for copier B's held copy (the context was synchronised)")
		}
	}
	if xb.Done() {
		t.Fatal("copier B's held copy is done: the hold did not hold, the test shows nothing")
	}
	checkSums(t, kids, want, msgs)
	release()
	if err := xb.Wait(); err != nil {
		t.Fatal(err)
	}
}

// StageOut copies a device sample's payload, at any offset, into host
// memory; Return waits for the stage-outs of its sample, Discard for the
// copy-ins of its loan, and Close for everything queued.
func TestGPUStageOut(t *testing.T) {
	d, err := gpuChildDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dev := requireGPU(t, d)
	p, err := d.NewPublisher(EndpointSpec{Topic: "/stageout", Type: "t/msg/Tensor", Node: "/pub", QoS: keepAll(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := d.NewSubscription(EndpointSpec{Topic: "/stageout", Type: "t/msg/Tensor", Node: "/sub", QoS: keepAll(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := d.NewCopier()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const size = 24<<20 + 13
	want := make([]byte, size)
	cuda.FillPatternHost(want, 7)
	for range 2 {
		l, err := p.LoanDevice(size)
		if err != nil {
			t.Fatal(err)
		}
		ptr, err := l.DevicePtr()
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.FillPattern(cuda.DevicePtr(ptr), size, 7, nil); err != nil {
			t.Fatal(err)
		}
		if err := l.Publish(); err != nil {
			t.Fatal(err)
		}
	}
	dst := pinnedBuffer(t, d, size)
	smp, err := s.TakeWait(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if smp.Bytes() != nil {
		t.Fatal("the sample has a host form: nothing to stage")
	}
	// Odd pieces, in reverse order, into their places.
	cuts := []int{0, 1, 4097, 1 << 20, 8<<20 + 5, size}
	var last *Completion
	for k := len(cuts) - 2; k >= 0; k-- {
		if last, err = c.StageOut(dst[cuts[k]:cuts[k+1]], smp, cuts[k]); err != nil {
			t.Fatal(err)
		}
	}
	if err := last.Wait(); err != nil { // the last queued: the others completed before it
		t.Fatal(err)
	}
	if !bytes.Equal(dst, want) {
		t.Fatal("staged bytes differ from the sample's")
	}
	smp.Return()

	clear(dst)
	smp, err = s.TakeWait(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	x, err := c.StageOut(dst, smp, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := smp.Return(); err != nil {
		t.Fatal(err)
	}
	if !x.Done() || !bytes.Equal(dst, want) {
		t.Fatal("Return did not wait for the stage-out of its sample")
	}

	l, err := p.LoanDevice(size)
	if err != nil {
		t.Fatal(err)
	}
	x, err = c.CopyIn(l, 0, dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Discard(); err != nil {
		t.Fatal(err)
	}
	if !x.Done() {
		t.Fatal("Discard did not wait for the copy into its loan")
	}

	l, err = p.LoanDevice(size)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Discard()
	x, err = c.CopyIn(l, 0, dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !x.Done() || x.Wait() != nil {
		t.Fatal("Close did not wait for the copy queued")
	}
	if _, err := c.CopyIn(l, 0, dst[:1]); !errors.Is(err, ErrClosed) {
		t.Fatalf("CopyIn after Close: %v, want ErrClosed", err)
	}
}
