package benche2e

import (
	"errors"
	"fmt"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// device is what the baseline and the lower bound ask of a GPU. On a
// machine with the CUDA driver it is a *cuda.Device (gpuDevice); without
// one, hostDevice stands in: "device memory" is ordinary host memory and
// the copies to and from it are memcpy from and to a separate buffer.
// The fallback moves every byte through every process like the real
// thing (so the pipeline and its checksums are tested in CI), but its
// times say nothing about a GPU.
type device interface {
	Alloc(n int64) (cuda.DevicePtr, error)
	Free(p cuda.DevicePtr) error
	// Fill writes pattern seed (cuda.FillPatternHost) into n bytes at p.
	Fill(p cuda.DevicePtr, n int64, seed uint32) error
	// DtoH and HtoD are synchronous: the data is in place on return.
	DtoH(dst []byte, src cuda.DevicePtr) error
	HtoD(dst cuda.DevicePtr, src []byte) error
	Checksum(p cuda.DevicePtr, n int64) (uint64, error)
	// Pin page-locks b (mmap'd memory) for fast copies; Unpin undoes it.
	Pin(b []byte) error
	Unpin(b []byte) error
	Close() error
}

// openDevice opens CUDA device ordinal, or the host fallback when gpu is
// false.
func openDevice(gpu bool, ordinal int) (device, error) {
	if !gpu {
		return newHostDevice(), nil
	}
	d, err := cuda.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return gpuDevice{d}, nil
}

// haveGPUs reports how many CUDA devices there are (0 without the driver).
func haveGPUs() int {
	n, err := cuda.Count()
	if err != nil {
		return 0
	}
	return n
}

type gpuDevice struct{ d *cuda.Device }

func (g gpuDevice) Alloc(n int64) (cuda.DevicePtr, error) { return g.d.Alloc(uint64(n)) }
func (g gpuDevice) Free(p cuda.DevicePtr) error           { return g.d.Free(p) }
func (g gpuDevice) Fill(p cuda.DevicePtr, n int64, seed uint32) error {
	if err := g.d.FillPattern(p, uint64(n), seed, nil); err != nil {
		return err
	}
	return g.d.CtxSynchronize()
}
func (g gpuDevice) DtoH(dst []byte, src cuda.DevicePtr) error { return g.d.MemcpyDtoH(dst, src) }
func (g gpuDevice) HtoD(dst cuda.DevicePtr, src []byte) error {
	if err := g.d.MemcpyHtoD(dst, src); err != nil {
		return err
	}
	// A pageable H2D copy may return before the DMA ends (GPU_NOTES).
	return g.d.CtxSynchronize()
}
func (g gpuDevice) Checksum(p cuda.DevicePtr, n int64) (uint64, error) {
	return g.d.Checksum(p, uint64(n))
}
func (g gpuDevice) Pin(b []byte) error   { return g.d.HostRegister(b, cuda.HostRegisterPortable) }
func (g gpuDevice) Unpin(b []byte) error { return g.d.HostUnregister(b) }
func (g gpuDevice) Close() error         { return g.d.Close() }

// hostDevice is the fallback: allocations are Go byte slices named by
// made-up device pointers.
type hostDevice struct {
	mu   sync.Mutex
	next cuda.DevicePtr
	mem  map[cuda.DevicePtr][]byte
}

func newHostDevice() *hostDevice {
	return &hostDevice{next: 1 << 40, mem: map[cuda.DevicePtr][]byte{}}
}

func (h *hostDevice) buf(p cuda.DevicePtr) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.mem[p]
	if !ok {
		return nil, fmt.Errorf("host fallback: no allocation at %#x", uint64(p))
	}
	return b, nil
}

func (h *hostDevice) Alloc(n int64) (cuda.DevicePtr, error) {
	if n <= 0 {
		return 0, errors.New("host fallback: allocation of no bytes")
	}
	b := make([]byte, n)
	touch(b)
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.next
	h.next += cuda.DevicePtr((n + 1<<20) &^ (1<<20 - 1))
	h.mem[p] = b
	return p, nil
}

func (h *hostDevice) Free(p cuda.DevicePtr) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.mem[p]; !ok {
		return fmt.Errorf("host fallback: freeing %#x, not allocated", uint64(p))
	}
	delete(h.mem, p)
	return nil
}

func (h *hostDevice) Fill(p cuda.DevicePtr, n int64, seed uint32) error {
	b, err := h.buf(p)
	if err != nil {
		return err
	}
	cuda.FillPatternHost(b[:n], seed)
	return nil
}

func (h *hostDevice) DtoH(dst []byte, src cuda.DevicePtr) error {
	b, err := h.buf(src)
	if err != nil {
		return err
	}
	if len(dst) > len(b) {
		return fmt.Errorf("host fallback: copy of %d bytes from %d", len(dst), len(b))
	}
	copy(dst, b)
	return nil
}

func (h *hostDevice) HtoD(dst cuda.DevicePtr, src []byte) error {
	b, err := h.buf(dst)
	if err != nil {
		return err
	}
	if len(src) > len(b) {
		return fmt.Errorf("host fallback: copy of %d bytes into %d", len(src), len(b))
	}
	copy(b, src)
	return nil
}

func (h *hostDevice) Checksum(p cuda.DevicePtr, n int64) (uint64, error) {
	b, err := h.buf(p)
	if err != nil {
		return 0, err
	}
	return cuda.ChecksumHost(b[:n]), nil
}

func (h *hostDevice) Pin(b []byte) error   { return nil }
func (h *hostDevice) Unpin(b []byte) error { return nil }
func (h *hostDevice) Close() error         { return nil }

// touch writes every page of b, so page faults are not timed.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}

// SeedOf is the pattern seed of round seq (cuda.FillPattern and
// cuda.FillPatternHost): consecutive rounds differ in every byte (the low
// bytes of the seeds differ), so a subscriber that got the previous
// round's data fails its checksum. Systems may use it with
// ExpectedChecksum to check what their subscribers got (cuda's Checksum
// kernel computes the same function as cuda.ChecksumHost).
func SeedOf(seq uint64) uint32 { return [2]uint32{0xA5, 0x5A}[seq%2] }

func seedOf(seq uint64) uint32 { return SeedOf(seq) }

var expected sums

// ExpectedChecksum is cuda.ChecksumHost of size bytes of pattern seed,
// computed once per (size, seed) and cached.
func ExpectedChecksum(size int64, seed uint32) uint64 { return expected.get(size, seed) }

// sums caches the expected checksums per (size, seed).
type sums struct {
	mu sync.Mutex
	m  map[[2]int64]uint64
}

func (s *sums) get(size int64, seed uint32) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[2]int64]uint64{}
	}
	k := [2]int64{size, int64(seed)}
	if v, ok := s.m[k]; ok {
		return v
	}
	b := make([]byte, size)
	cuda.FillPatternHost(b, seed)
	v := cuda.ChecksumHost(b)
	s.m[k] = v
	return v
}
