package cuda

import (
	"fmt"
	"unsafe"
)

// Host memory and the driver.
//
// Synchronous copies (MemcpyHtoD, MemcpyDtoH) accept any []byte, Go heap
// included: the driver is done with the host buffer when they return.
//
// Everything the driver keeps using after a call returns must NOT be Go
// heap memory, because the Go runtime may free (or, for stacks, move) it
// while the driver still uses it: the host buffers of HostRegister and of
// the asynchronous copies. Use memory mapped with mmap (the engine's shared
// memory segments) or allocated in C. Nothing checks this: the package
// cannot tell, and it passes those addresses to C as integers, so cgo's
// pointer checks do not see them either.

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// Alloc allocates size bytes of device memory (cuMemAlloc), 256-byte
// aligned or better. Free it with Free.
func (d *Device) Alloc(size uint64) (p DevicePtr, err error) {
	err = d.call(func(ctx uintptr) error {
		if p, err = cuMemAlloc(ctx, size); err != nil {
			return fmt.Errorf("allocating %d bytes on CUDA device %d: %w", size, d.ordinal, err)
		}
		track(resDeviceMemory, 1)
		return nil
	})
	return p, err
}

// Free releases memory from Alloc. It synchronises with the device.
func (d *Device) Free(p DevicePtr) error {
	return d.call(func(ctx uintptr) error {
		if err := cuMemFree(ctx, p); err != nil {
			return err
		}
		track(resDeviceMemory, -1)
		return nil
	})
}

// MemcpyHtoD copies src to device memory at dst. From registered (pinned)
// memory it returns when the copy is done. From pageable memory it returns
// once src has been staged and may be reused, possibly before the DMA to the
// device has ended: work later queued in this context is ordered after it,
// but before telling another process the data is there, synchronise
// (CtxSynchronize, or an event).
func (d *Device) MemcpyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.call(func(ctx uintptr) error {
		return cuMemcpyHtoD(ctx, dst, unsafe.Pointer(&src[0]), uint64(len(src)))
	})
}

// MemcpyDtoH copies len(dst) bytes from device memory at src into dst and
// returns when they are there.
func (d *Device) MemcpyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.call(func(ctx uintptr) error {
		return cuMemcpyDtoH(ctx, unsafe.Pointer(&dst[0]), src, uint64(len(dst)))
	})
}

// MemcpyDtoD copies n bytes between device addresses. It is asynchronous
// with respect to the host (it may return before the copy ends).
func (d *Device) MemcpyDtoD(dst, src DevicePtr, n uint64) error {
	if n == 0 {
		return nil
	}
	return d.call(func(ctx uintptr) error { return cuMemcpyDtoD(ctx, dst, src, n) })
}

// MemsetD8 sets n bytes at p to v (asynchronous with respect to the host,
// like MemcpyDtoD).
func (d *Device) MemsetD8(p DevicePtr, v byte, n uint64) error {
	if n == 0 {
		return nil
	}
	return d.call(func(ctx uintptr) error { return cuMemsetD8(ctx, p, v, n) })
}

// MemcpyHtoDAsync queues a copy of src to dst on s (nil: the legacy default
// stream). src must not be Go heap memory and must stay mapped and unchanged
// until the copy is done (s.Synchronize, or an event recorded after it);
// only registered memory gives a truly asynchronous copy.
func (d *Device) MemcpyHtoDAsync(dst DevicePtr, src []byte, s *Stream) error {
	if len(src) == 0 {
		return nil
	}
	return d.call(func(ctx uintptr) error {
		return cuMemcpyHtoDAsync(ctx, dst, addr(src), uint64(len(src)), s.handle())
	})
}

// MemcpyDtoHAsync queues a copy of len(dst) bytes from src into dst on s.
// The same rules as for MemcpyHtoDAsync apply to dst.
func (d *Device) MemcpyDtoHAsync(dst []byte, src DevicePtr, s *Stream) error {
	if len(dst) == 0 {
		return nil
	}
	return d.call(func(ctx uintptr) error {
		return cuMemcpyDtoHAsync(ctx, addr(dst), src, uint64(len(dst)), s.handle())
	})
}

// MemcpyDtoDAsync queues a device-to-device copy of n bytes on s.
func (d *Device) MemcpyDtoDAsync(dst, src DevicePtr, n uint64, s *Stream) error {
	if n == 0 {
		return nil
	}
	return d.call(func(ctx uintptr) error { return cuMemcpyDtoDAsync(ctx, dst, src, n, s.handle()) })
}

// HostRegisterFlags are cuMemHostRegister flags.
type HostRegisterFlags uint32

const (
	// HostRegisterPortable makes the registration count in every context.
	HostRegisterPortable HostRegisterFlags = 1
	// HostRegisterDeviceMap maps the memory into the device address space
	// (see HostDevicePointer).
	HostRegisterDeviceMap HostRegisterFlags = 2
)

// HostRegister page-locks b and registers it with the driver, so copies to
// and from it run at full DMA speed and can be asynchronous. b must not be
// Go heap memory (it will be mmap'd shared memory); it must stay mapped
// until HostUnregister.
func (d *Device) HostRegister(b []byte, flags HostRegisterFlags) error {
	if len(b) == 0 {
		return fmt.Errorf("registering host memory: empty buffer")
	}
	return d.call(func(ctx uintptr) error {
		if err := cuMemHostRegister(ctx, addr(b), uint64(len(b)), flags); err != nil {
			return fmt.Errorf("registering %d bytes of host memory: %w", len(b), err)
		}
		track(resHostRegistration, 1)
		return nil
	})
}

// HostUnregister undoes HostRegister for the buffer that starts at &b[0].
func (d *Device) HostUnregister(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("unregistering host memory: empty buffer")
	}
	return d.call(func(ctx uintptr) error {
		if err := cuMemHostUnregister(ctx, addr(b)); err != nil {
			return err
		}
		track(resHostRegistration, -1)
		return nil
	})
}

// HostDevicePointer returns the device address of registered host memory
// (registered with HostRegisterDeviceMap, or on a unified-addressing device
// where it equals the host address): kernels can read and write b directly
// over PCIe, no copy.
func (d *Device) HostDevicePointer(b []byte) (p DevicePtr, err error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("device pointer of host memory: empty buffer")
	}
	err = d.call(func(ctx uintptr) error {
		p, err = cuMemHostGetDevicePointer(ctx, addr(b))
		return err
	})
	return p, err
}

// IpcMemHandle is a legacy CUDA IPC handle: 64 opaque bytes that another
// process opens with IpcOpenMemHandle. A [64]byte converts to it freely.
type IpcMemHandle [64]byte

// ipcLazyEnablePeerAccess is CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS.
const ipcLazyEnablePeerAccess = 1

// IpcGetMemHandle makes a handle for an allocation from Alloc (p must be
// its start). The handle is valid while the allocation lives.
func (d *Device) IpcGetMemHandle(p DevicePtr) (h IpcMemHandle, err error) {
	err = d.call(func(ctx uintptr) error {
		h, err = cuIpcGetMemHandle(ctx, p)
		return err
	})
	return h, err
}

// IpcOpenMemHandle maps another process's allocation into this context. It
// fails in the process that made the handle. Close it with
// IpcCloseMemHandle.
func (d *Device) IpcOpenMemHandle(h IpcMemHandle) (p DevicePtr, err error) {
	err = d.call(func(ctx uintptr) error {
		if p, err = cuIpcOpenMemHandle(ctx, h, ipcLazyEnablePeerAccess); err != nil {
			return fmt.Errorf("opening CUDA IPC handle: %w", err)
		}
		track(resIPCMapping, 1)
		return nil
	})
	return p, err
}

// IpcCloseMemHandle unmaps memory opened with IpcOpenMemHandle.
func (d *Device) IpcCloseMemHandle(p DevicePtr) error {
	return d.call(func(ctx uintptr) error {
		if err := cuIpcCloseMemHandle(ctx, p); err != nil {
			return err
		}
		track(resIPCMapping, -1)
		return nil
	})
}
