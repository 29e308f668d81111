package zerocopy

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// A MemoryAny subscription reads host samples as a host one does, the
// graph reports it, and MemoryAny is refused for publishers and unknown
// memories everywhere.
func TestMemoryAny(t *testing.T) {
	d := openDomain(t, nil)
	spec := EndpointSpec{Topic: "/any_form", Type: "t/msg/T", Node: "/test", QoS: qos.Default(), GPUPool: true, Memory: MemoryAny}
	s, err := d.NewSubscription(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spec.Memory = MemoryAny
	if _, err := d.NewPublisher(spec); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a MemoryAny publisher: %v", err)
	}
	spec.Memory = Memory(9)
	if _, err := d.NewSubscription(spec); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a subscription of memory 9: %v", err)
	}
	if err := s.SetMemory(Memory(9)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("SetMemory(9): %v", err)
	}
	spec.Memory = MemoryHost
	p, err := d.NewPublisher(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if s.Memory() != MemoryAny || s.Topic().PoolKind() != PoolGPU {
		t.Fatalf("memory %v, pool %v", s.Memory(), s.Topic().PoolKind())
	}
	memOf := func() (Memory, string) {
		eps, err := d.Endpoints("/any_form")
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range eps {
			if ep.GID == s.GID() {
				return ep.Memory, ep.Path
			}
		}
		t.Fatal("the subscription is not in the graph")
		return 0, ""
	}
	if m, path := memOf(); m != MemoryAny || path != "gpu-pool-any-form" {
		t.Errorf("graph: memory %v, path %s", m, path)
	}
	if err := p.Publish([]byte("host bytes")); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(time.Second)
	if err != nil || string(smp.Bytes()) != "host bytes" {
		t.Fatalf("take: %v", err)
	}
	smp.Return()
	if err := s.SetMemory(MemoryHost); err != nil {
		t.Fatal(err)
	}
	if m, _ := memOf(); m != MemoryHost {
		t.Errorf("after SetMemory(MemoryHost): %v", m)
	}
	if err := s.SetMemory(MemoryAny); err != nil {
		t.Fatal(err)
	}
	if m, _ := memOf(); m != MemoryAny {
		t.Errorf("after SetMemory(MemoryAny): %v", m)
	}
}

// On a GPU, a MemoryAny subscription makes no publisher copy for it: a
// device loan arrives with its device form only (Bytes nil), which the
// reader stages out itself, and a host message with its host form only.
func TestGPUMemoryAny(t *testing.T) {
	d, err := gpuChildDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	requireGPU(t, d)
	spec := EndpointSpec{Topic: "/gpu_any_form", Type: "t/msg/T", Node: "/test", QoS: qos.Default(), Memory: MemoryAny, GPUPool: true}
	s, err := d.NewSubscription(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spec.Memory = MemoryHost
	p, err := d.NewPublisher(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := bytes.Repeat([]byte("device bytes "), 1<<16)
	l, err := p.LoanDevice(len(want))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CopyIn(0, want); err != nil {
		t.Fatal(err)
	}
	if err := l.Publish(); err != nil {
		t.Fatal(err)
	}
	smp, err := s.TakeWait(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if smp.Bytes() != nil || !smp.hasDev || smp.hasHost {
		t.Fatalf("a device loan reached a MemoryAny subscription with host %v, device %v", smp.hasHost, smp.hasDev)
	}
	c, err := d.NewCopier()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := pinnedBuffer(t, d, len(want))
	x, err := c.StageOut(got, smp, 0)
	if err == nil {
		err = x.Wait()
	}
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("staged out: %v (equal %v)", err, bytes.Equal(got, want))
	}
	smp.Return()
	if err := p.Publish([]byte("host bytes")); err != nil {
		t.Fatal(err)
	}
	if smp, err = s.TakeWait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if string(smp.Bytes()) != "host bytes" || smp.hasDev {
		t.Fatalf("a host message reached a MemoryAny subscription as %q, device form %v", smp.Bytes(), smp.hasDev)
	}
	smp.Return()
}
