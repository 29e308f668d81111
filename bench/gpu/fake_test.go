package benchgpu

import (
	"fmt"
	"os"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// fakeDevice is device memory simulated in the Go heap, with the built-in
// kernels replaced by their host references: enough to run the processes,
// the protocol, the checks and the report of every path except
// Pinned-SHM's registration and Pinned-Shared (which need the engine's real
// GPU pools) on a machine without a GPU.
type fakeDevice struct {
	mu   sync.Mutex
	mem  map[cuda.DevicePtr][]byte
	next cuda.DevicePtr
	// damage: the subscriber's data is wrong by one bit (its checksum is
	// what the check sees), from damageEnv in the subscriber's environment.
	damage bool
}

// damageEnv, set to 1 in a subscriber's environment, makes its fake
// device see damaged data (TestRunCatchesDamage).
const damageEnv = "RGAPS_BENCH_GPU_TEST_DAMAGE"

const fakeSpan = 1 << 40 // each allocation gets its own span of addresses

func newFakeDevice() device {
	return &fakeDevice{mem: map[cuda.DevicePtr][]byte{}, damage: os.Getenv(damageEnv) == "1"}
}

func (f *fakeDevice) Alloc(n uint64) (cuda.DevicePtr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next += fakeSpan
	f.mem[f.next] = make([]byte, n)
	return f.next, nil
}

func (f *fakeDevice) Free(p cuda.DevicePtr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.mem[p]; !ok {
		return fmt.Errorf("fake device: free of %#x, not allocated", p)
	}
	delete(f.mem, p)
	return nil
}

func (f *fakeDevice) slice(p cuda.DevicePtr, n uint64) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	base := p &^ (fakeSpan - 1)
	b, ok := f.mem[base]
	off := uint64(p - base)
	if !ok || off+n > uint64(len(b)) {
		return nil, fmt.Errorf("fake device: %d bytes at %#x are not allocated", n, p)
	}
	return b[off : off+n], nil
}

func (f *fakeDevice) FillPattern(p cuda.DevicePtr, n uint64, seed uint32, _ *cuda.Stream) error {
	b, err := f.slice(p, n)
	if err == nil {
		cuda.FillPatternHost(b, seed)
	}
	return err
}

func (f *fakeDevice) MemcpyDtoH(dst []byte, src cuda.DevicePtr) error {
	b, err := f.slice(src, uint64(len(dst)))
	if err == nil {
		copy(dst, b)
	}
	return err
}

func (f *fakeDevice) MemcpyHtoD(dst cuda.DevicePtr, src []byte) error {
	b, err := f.slice(dst, uint64(len(src)))
	if err == nil {
		copy(b, src)
	}
	return err
}

func (f *fakeDevice) CtxSynchronize() error { return nil }

func (f *fakeDevice) Checksum(p cuda.DevicePtr, n uint64) (uint64, error) {
	b, err := f.slice(p, n)
	if err != nil {
		return 0, err
	}
	sum := cuda.ChecksumHost(b)
	if f.damage {
		sum ^= 1
	}
	return sum, nil
}

func (f *fakeDevice) HostRegister(b []byte, _ cuda.HostRegisterFlags) error {
	if len(b) == 0 {
		return fmt.Errorf("fake device: registering an empty buffer")
	}
	return nil
}

func (f *fakeDevice) HostUnregister(b []byte) error { return nil }
