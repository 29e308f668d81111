package cuda

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// Allocation is device memory made with CUDA's virtual memory management
// (VMM): a physical allocation, exportable as a POSIX file descriptor,
// mapped read-write for this device at Ptr. It is how a GPU pool is shared
// between processes: the owner calls CreateShareable and ExportFD, sends the
// descriptor over a Unix socket (SCM_RIGHTS), and each other process calls
// ImportFD; all of them then address the same memory.
type Allocation struct {
	dev    *Device
	size   uint64
	mu     sync.Mutex // guards handle and ptr
	handle uint64     // CUmemGenericAllocationHandle; 0 after Close
	ptr    DevicePtr
}

// VMMGranularity is the minimum allocation granularity for shareable device
// memory (2 MiB on the test machine); allocation sizes are multiples of it.
func (d *Device) VMMGranularity() (g uint64, err error) {
	if err := d.requireVMM(); err != nil {
		return 0, err
	}
	err = d.call(func(ctx uintptr) error {
		g, err = cuMemGetAllocationGranularity(ctx, d.ordinal)
		return err
	})
	if err == nil && g == 0 {
		err = fmt.Errorf("CUDA device %d reports a VMM granularity of 0", d.ordinal)
	}
	return g, err
}

// requireVMM returns an error wrapping ErrNotSupported unless the device
// can create VMM allocations and export them as file descriptors.
func (d *Device) requireVMM() error {
	vmm, err := d.VMMSupported()
	if err != nil {
		return err
	}
	if !vmm {
		return fmt.Errorf("%w: CUDA device %d has no virtual memory management", ErrNotSupported, d.ordinal)
	}
	fd, err := d.POSIXFDSupported()
	if err != nil {
		return err
	}
	if !fd {
		return fmt.Errorf("%w: CUDA device %d cannot export memory as file descriptors", ErrNotSupported, d.ordinal)
	}
	return nil
}

func roundUp(n, g uint64) uint64 { return (n + g - 1) / g * g }

// CreateShareable allocates at least size bytes of device memory (rounded
// up to VMMGranularity) that can be exported with ExportFD, and maps it for
// this device.
func (d *Device) CreateShareable(size uint64) (*Allocation, error) {
	if size == 0 {
		return nil, fmt.Errorf("creating shareable CUDA memory: size 0")
	}
	g, err := d.VMMGranularity()
	if err != nil {
		return nil, err
	}
	size = roundUp(size, g)
	var a *Allocation
	err = d.call(func(ctx uintptr) error {
		h, err := cuMemCreate(ctx, size, d.ordinal)
		if err != nil {
			return err
		}
		if a, err = d.mapHandle(ctx, h, size); err != nil {
			cuMemRelease(ctx, h)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating %d bytes of shareable memory on CUDA device %d: %w", size, d.ordinal, err)
	}
	return a, nil
}

// ImportFD maps memory another process exported with ExportFD. size is the
// exporter's Allocation.Size (it is rounded up to the granularity here too).
// The caller keeps ownership of fd and may close it once ImportFD returns.
func (d *Device) ImportFD(fd int, size uint64) (*Allocation, error) {
	if size == 0 {
		return nil, fmt.Errorf("importing shareable CUDA memory: size 0")
	}
	g, err := d.VMMGranularity()
	if err != nil {
		return nil, err
	}
	size = roundUp(size, g)
	var a *Allocation
	err = d.call(func(ctx uintptr) error {
		h, err := cuMemImportFromShareableHandle(ctx, fd)
		if err != nil {
			return err
		}
		if a, err = d.mapHandle(ctx, h, size); err != nil {
			cuMemRelease(ctx, h)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("importing %d bytes of shareable memory (fd %d) on CUDA device %d: %w", size, fd, d.ordinal, err)
	}
	return a, nil
}

// mapHandle reserves an address range for h, maps it and enables
// read-write access from this device; on failure it undoes what it did
// (but leaves h to the caller).
func (d *Device) mapHandle(ctx uintptr, h, size uint64) (*Allocation, error) {
	p, err := cuMemAddressReserve(ctx, size)
	if err != nil {
		return nil, err
	}
	if err := cuMemMap(ctx, p, size, h); err != nil {
		cuMemAddressFree(ctx, p, size)
		return nil, err
	}
	if err := cuMemSetAccess(ctx, p, size, d.ordinal); err != nil {
		cuMemUnmap(ctx, p, size)
		cuMemAddressFree(ctx, p, size)
		return nil, err
	}
	track(resVMMAllocation, 1)
	return &Allocation{dev: d, size: size, handle: h, ptr: p}, nil
}

// Ptr is the allocation's device address in this process.
func (a *Allocation) Ptr() DevicePtr { return a.ptr }

// Size is the allocation's size in bytes (a multiple of the granularity).
func (a *Allocation) Size() uint64 { return a.size }

// ExportFD returns a new file descriptor (close-on-exec) for the physical
// memory; the caller owns it and closes it once it has been sent. Each call
// returns a new descriptor.
func (a *Allocation) ExportFD() (int, error) {
	a.mu.Lock()
	h := a.handle
	a.mu.Unlock()
	if h == 0 {
		return -1, ErrClosed
	}
	fd := -1
	err := a.dev.call(func(ctx uintptr) error {
		var err error
		fd, err = cuMemExportToShareableHandle(ctx, h)
		return err
	})
	if err != nil {
		return -1, fmt.Errorf("exporting CUDA memory as a file descriptor: %w", err)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

// Close unmaps the memory and releases this process's reference to it; the
// physical memory is freed when no process maps it any longer. A second
// Close does nothing.
func (a *Allocation) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.handle == 0 {
		return nil
	}
	err := a.dev.call(func(ctx uintptr) error {
		err := errors.Join(
			cuMemUnmap(ctx, a.ptr, a.size),
			cuMemAddressFree(ctx, a.ptr, a.size),
			cuMemRelease(ctx, a.handle),
		)
		a.handle, a.ptr = 0, 0
		track(resVMMAllocation, -1)
		return err
	})
	if err != nil {
		return fmt.Errorf("releasing shareable CUDA memory: %w", err)
	}
	return nil
}
