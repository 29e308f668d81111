package cuda

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// CopyKind is a copy direction and host-memory kind, for MeasureCopy.
type CopyKind int

const (
	CopyD2HPinned   CopyKind = iota + 1 // device → mmap'd host memory registered with HostRegister
	CopyD2HPageable                     // device → Go heap
	CopyH2DPinned                       // registered mmap'd host memory → device
	CopyH2DPageable                     // Go heap → device
	CopyD2D                             // device → device
)

// CopyKinds lists every CopyKind, in the order reports show them.
func CopyKinds() []CopyKind {
	return []CopyKind{CopyD2HPinned, CopyD2HPageable, CopyH2DPinned, CopyH2DPageable, CopyD2D}
}

func (k CopyKind) String() string {
	switch k {
	case CopyD2HPinned:
		return "d2h-pinned"
	case CopyD2HPageable:
		return "d2h-pageable"
	case CopyH2DPinned:
		return "h2d-pinned"
	case CopyH2DPageable:
		return "h2d-pageable"
	case CopyD2D:
		return "d2d"
	}
	return fmt.Sprintf("CopyKind(%d)", int(k))
}

// measureWarmup is the number of untimed copies before the timed ones.
const measureWarmup = 2

// MeasureCopy times iters copies of size bytes of the given kind and
// returns the median. Each timed copy is the synchronous copy followed by
// CtxSynchronize, measured with the wall clock: that is the time until the
// data is usable by anyone (a pageable H2D copy or a D2D copy can return
// before the DMA ends). Buffers are allocated, touched and registered
// before timing, after warm-up copies, and freed afterwards.
func MeasureCopy(dev *Device, kind CopyKind, size uint64, iters int) (median time.Duration, err error) {
	if iters < 1 {
		return 0, fmt.Errorf("measuring %v copies: iters %d < 1", kind, iters)
	}
	if size == 0 {
		return 0, fmt.Errorf("measuring %v copies: size 0", kind)
	}
	var cleanup []func() error
	defer func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			err = errors.Join(err, cleanup[i]())
		}
	}()

	dptr, err := dev.Alloc(size)
	if err != nil {
		return 0, err
	}
	cleanup = append(cleanup, func() error { return dev.Free(dptr) })
	if err := dev.MemsetD8(dptr, 0x5a, size); err != nil {
		return 0, err
	}

	var host []byte
	switch kind {
	case CopyD2HPinned, CopyH2DPinned:
		host, err = unix.Mmap(-1, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		if err != nil {
			return 0, fmt.Errorf("mapping %d bytes of host memory: %w", size, err)
		}
		cleanup = append(cleanup, func() error { return unix.Munmap(host) })
		touch(host)
		if err := dev.HostRegister(host, HostRegisterPortable); err != nil {
			return 0, err
		}
		cleanup = append(cleanup, func() error { return dev.HostUnregister(host) })
	case CopyD2HPageable, CopyH2DPageable:
		host = make([]byte, size)
		touch(host)
	}

	var copyOnce func() error
	switch kind {
	case CopyD2HPinned, CopyD2HPageable:
		copyOnce = func() error { return dev.MemcpyDtoH(host, dptr) }
	case CopyH2DPinned, CopyH2DPageable:
		copyOnce = func() error { return dev.MemcpyHtoD(dptr, host) }
	case CopyD2D:
		dst, err := dev.Alloc(size)
		if err != nil {
			return 0, err
		}
		cleanup = append(cleanup, func() error { return dev.Free(dst) })
		copyOnce = func() error { return dev.MemcpyDtoD(dst, dptr, size) }
	default:
		return 0, fmt.Errorf("measuring copies: unknown kind %v", kind)
	}
	timed := func() (time.Duration, error) {
		t0 := time.Now()
		if err := copyOnce(); err != nil {
			return 0, err
		}
		if err := dev.CtxSynchronize(); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}

	if err := dev.CtxSynchronize(); err != nil {
		return 0, err
	}
	for range measureWarmup {
		if _, err := timed(); err != nil {
			return 0, fmt.Errorf("measuring %v copies: %w", kind, err)
		}
	}
	times := make([]time.Duration, iters)
	for i := range times {
		if times[i], err = timed(); err != nil {
			return 0, fmt.Errorf("measuring %v copies: %w", kind, err)
		}
	}
	slices.Sort(times)
	return times[len(times)/2], nil
}

// touch writes every page of b so page faults are not timed.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
}
