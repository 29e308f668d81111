package zerocopy

import (
	"errors"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// A topic created with EndpointSpec.GPUPool has a GPU pool, and host
// endpoints use it (its staging pool) without touching CUDA or the pool
// daemon: no GPU reader is matched, so no device form is ever needed.
func TestGPUPoolTopicHostOnly(t *testing.T) {
	d := openDomain(t, func(c *Config) { c.NoDaemonAutostart = true })
	tl := qos.Default()
	tl.Durability = qos.DurabilityTransientLocal
	tl.History = qos.HistoryKeepAll
	p, err := d.NewPublisher(EndpointSpec{Topic: "/gpupool", Type: "t/msg/T", QoS: tl, GPUPool: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if k := p.Topic().PoolKind(); k != PoolGPU {
		t.Fatalf("pool kind %d, want %d", k, PoolGPU)
	}
	s, err := d.NewSubscription(EndpointSpec{Topic: "/gpupool", Type: "t/msg/T", QoS: keepAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	publishMeta(t, p, []byte("host data"), []byte("meta"))
	if err := p.Publish([]byte("plain")); err != nil {
		t.Fatal(err)
	}
	late, err := d.NewSubscription(EndpointSpec{Topic: "/gpupool", Type: "t/msg/T", QoS: tl})
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	for _, sub := range []*Subscription{s, late} {
		for _, want := range []string{"host data", "plain"} {
			smp, err := sub.TakeWait(time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if string(smp.Bytes()) != want {
				t.Fatalf("got %q, want %q", smp.Bytes(), want)
			}
			smp.Return()
		}
	}
	if d.gpuState.dev != nil || d.gpuState.err != nil || d.gpuState.client != nil {
		t.Fatalf("host endpoints of a GPU topic touched CUDA or the daemon (dev %v, err %v)", d.gpuState.dev, d.gpuState.err)
	}
	// An existing topic keeps its kind.
	h := mustPub(t, d, "/hostpool", qos.Default())
	p2, err := d.NewPublisher(EndpointSpec{Topic: "/hostpool", Type: "std_msgs/msg/String", QoS: qos.Default(), GPUPool: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if h.Topic().PoolKind() != PoolHost || p2.Topic().PoolKind() != PoolHost {
		t.Fatal("an existing host topic changed kind")
	}
}

func TestGPUPresentOverride(t *testing.T) {
	t.Setenv("RGAPS_GPU_TOPICS", "on")
	if !GPUPresent() {
		t.Fatal("on: false")
	}
	t.Setenv("RGAPS_GPU_TOPICS", "off")
	if GPUPresent() {
		t.Fatal("off: true")
	}
	t.Setenv("RGAPS_GPU_TOPICS", "auto")
	old := nvidiaCtl
	defer func() { nvidiaCtl = old }()
	nvidiaCtl = "/nonexistent/nvidiactl"
	if GPUPresent() {
		t.Fatal("auto without the device node: true")
	}
	nvidiaCtl = "/dev/null"
	if !GPUPresent() {
		t.Fatal("auto with the device node: false")
	}
}

// SetMemory(MemoryGPU) without a GPU fails with ErrNotSupported and leaves
// the subscription as it was; a GPU subscription can go back to host.
func TestSetMemoryWithoutGPU(t *testing.T) {
	d := openDomain(t, nil)
	if _, err := d.gpu(); err == nil {
		t.Skip("this machine has a GPU: TestGPUSetMemory covers it")
	}
	p := mustPub(t, d, "/setmem", keepAll())
	s := mustSub(t, d, "/setmem", keepAll())
	flags := func() endpointFlags { return endpointFlags(s.t.u32(s.t.slotOff(s.slot) + eFlags).Load()) }
	gen := s.t.generation.Load()
	if err := s.SetMemory(MemoryGPU); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("SetMemory(GPU) without a GPU: %v, want ErrNotSupported", err)
	}
	if s.Memory() != MemoryHost || flags() != flagWantsHost || s.t.generation.Load() != gen {
		t.Fatalf("a failed SetMemory changed the subscription: %v, flags %b", s.Memory(), flags())
	}
	if err := s.SetMemory(Memory(7)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetMemory(7): %v, want ErrInvalid", err)
	}
	if err := s.SetMemory(MemoryHost); err != nil {
		t.Fatal(err)
	}
	if s.t.generation.Load() == gen {
		t.Fatal("SetMemory did not move the generation")
	}
	if err := p.Publish([]byte("still host")); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(time.Second)
	if err != nil || string(smp.Bytes()) != "still host" {
		t.Fatalf("take: %v", err)
	}
	smp.Return()
	s.Close()
	if err := s.SetMemory(MemoryHost); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A host subscription of a GPU topic switched to GPU receives the device
// form of what is published after the switch (the publisher makes it);
// a sample queued before keeps its host form.
func TestGPUSetMemory(t *testing.T) {
	d, err := gpuChildDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dev := requireGPU(t, d)
	p, err := d.NewPublisher(EndpointSpec{Topic: "/setmem_gpu", Type: "t/msg/Tensor", QoS: keepAll(), GPUPool: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, err := d.NewSubscription(EndpointSpec{Topic: "/setmem_gpu", Type: "t/msg/Tensor", QoS: keepAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := p.Publish([]byte("before")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMemory(MemoryGPU); err != nil {
		t.Fatal(err)
	}
	if s.Memory() != MemoryGPU {
		t.Fatal("Memory() not updated")
	}
	if err := p.Publish([]byte("after")); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if smp.hasDev || string(smp.Bytes()) != "before" {
		t.Fatalf("queued sample: device form %v, bytes %q", smp.hasDev, smp.Bytes())
	}
	smp.Return()
	smp, err = s.TakeWait(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Return()
	if !smp.hasDev {
		t.Fatal("sample published after the switch has no device form")
	}
	ptr, err := smp.DevicePtr()
	if err != nil {
		t.Fatal(err)
	}
	got, err := dev.Checksum(cuda.DevicePtr(ptr), uint64(smp.Size()))
	if err != nil {
		t.Fatal(err)
	}
	if want := cuda.ChecksumHost([]byte("after")); got != want {
		t.Fatalf("device checksum %x, want %x", got, want)
	}
}
