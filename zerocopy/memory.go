package zerocopy

import (
	"fmt"
	"os"
)

// memFlags are the endpoint flags of the forms an endpoint of memory m
// reads (§3.2a).
func memFlags(m Memory) endpointFlags {
	switch m {
	case MemoryGPU:
		return flagWantsDevice
	case MemoryAny:
		return 0
	}
	return flagWantsHost
}

// checkMemory refuses a Memory that is none of the three, and MemoryAny
// for a publisher.
func checkMemory(m Memory, kind Kind) error {
	if m != MemoryHost && m != MemoryGPU && m != MemoryAny {
		return fmt.Errorf("%w: memory %d", ErrInvalid, m)
	}
	if m == MemoryAny && kind == KindPublisher {
		return fmt.Errorf("%w: memory %v is for subscriptions", ErrInvalid, m)
	}
	return nil
}

// SetMemory switches the form the subscription reads from now on: host
// bytes (MemoryHost), device memory (MemoryGPU), or whichever form a sample
// has (MemoryAny). Publishers see the
// change at their next publish (the topic's generation moves) and make
// the form for the samples they publish after it; samples already queued
// keep the forms they have (Sample.DevicePtr of a sample with only a host
// form is its host block's mapped address, Sample.Bytes of one with only a
// device form is nil). MemoryGPU maps the topic's pools in this process
// first; without a GPU it returns an error wrapping ErrNotSupported and
// nothing changes.
func (s *Subscription) SetMemory(m Memory) (err error) {
	if err := checkMemory(m, KindSubscription); err != nil {
		return err
	}
	if !s.enter() {
		return ErrClosed
	}
	defer s.exit()
	t := s.t
	if m == MemoryGPU {
		// Never under the topic lock: CUDA start-up and the daemon.
		if err := t.prepareGPU(); err != nil {
			return fmt.Errorf("topic %s: %w", t.name, err)
		}
	}
	defer t.unguard(guard(), &err)
	if err := t.lock(); err != nil {
		return err
	}
	w := t.u32(t.slotOff(s.slot) + eFlags)
	w.Store(uint32(endpointFlags(w.Load())&^(flagWantsHost|flagWantsDevice) | memFlags(m)))
	t.generation.Add(1)
	s.mem.Store(int64(m))
	t.unlock()
	t.notifyChange()
	return nil
}

// GPUPresent reports whether this host has an NVIDIA GPU (its control
// device node /dev/nvidiactl exists), without loading or initialising
// CUDA: for a front end deciding whether to create topics with GPU pools
// (EndpointSpec.GPUPool). The environment variable RGAPS_GPU_TOPICS
// overrides it: "on" (true), "off" (false), "auto" or unset (the device
// node decides).
func GPUPresent() bool {
	switch os.Getenv("RGAPS_GPU_TOPICS") {
	case "on":
		return true
	case "off":
		return false
	}
	_, err := os.Stat(nvidiaCtl)
	return err == nil
}

// nvidiaCtl is the NVIDIA driver's control device node (a variable for
// tests).
var nvidiaCtl = "/dev/nvidiactl"

// historyOnDevice reports whether a transient-local publisher's history on
// this GPU topic holds a sample with no host form: a host reader joining
// then needs host copies, so CUDA. It takes the topic lock; any error is
// false (the join finds it again).
func (t *Topic) historyOnDevice() bool {
	if t.lay.poolKind != PoolGPU || t.lock() != nil {
		return false
	}
	defer t.unlock()
	for ps := uint32(0); ps < t.slotCount(); ps++ {
		so := t.slotOff(ps)
		if slotState(t.u32(so+eState).Load()) != slotActive || Kind(t.u32(so+eKind).Load()) != KindPublisher {
			continue
		}
		head, tail, ok := t.ring(ps)
		if !ok {
			continue
		}
		for p := head; p < tail; p++ {
			if n := t.ringWord(ps, p).Load(); t.validSample(n) && t.u32(t.sampleOff(n)+sBlock).Load() == 0 {
				return true
			}
		}
	}
	return false
}
