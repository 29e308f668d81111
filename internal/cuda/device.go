package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
)

// DevicePtr is an address in a CUDA context's unified device address space.
// Arithmetic on it (p + offset) is ordinary integer arithmetic.
type DevicePtr uint64

// Count returns the number of CUDA devices.
func Count() (int, error) {
	if err := load(); err != nil {
		return 0, err
	}
	return cuDeviceGetCount()
}

// DriverVersion returns the driver's CUDA version as 1000*major + 10*minor
// (13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	if err := load(); err != nil {
		return 0, err
	}
	return cuDriverGetVersion()
}

// Device is one GPU and this process's hold on its primary context.
//
// Every method runs its driver calls with the context current: the C
// trampoline binds it in the same C call, so callers never think about OS
// threads. Methods are safe for concurrent use, and run concurrently (a
// long synchronous copy on one goroutine does not hold up another's calls).
type Device struct {
	ordinal int
	dev     int32   // CUdevice
	ctx     uintptr // the retained primary context (CUcontext)

	mu     sync.Mutex
	idle   sync.Cond // signalled when active drops to 0; L is &mu
	active int       // calls in flight; must hold mu
	closed bool      // must hold mu

	kmu     sync.Mutex  // guards kern and scratch
	kern    *builtin    // the built-in kernels, loaded on first use
	scratch []DevicePtr // free 8-byte device words for Checksum results
}

// Open retains device ordinal's primary context (the one the CUDA runtime
// also uses, so memory is shared with runtime-based libraries in the same
// process). Close releases it. With no driver or no such device it returns
// an error wrapping ErrNotSupported. Start-up costs are paid here: cuInit
// (once per process) and context creation (once per device per process),
// hundreds of milliseconds on the test machine.
func Open(ordinal int) (*Device, error) {
	if err := load(); err != nil {
		return nil, err
	}
	if ordinal < 0 {
		return nil, fmt.Errorf("opening CUDA device %d: negative ordinal", ordinal)
	}
	n, err := cuDeviceGetCount()
	if err != nil {
		return nil, err
	}
	if ordinal >= n {
		return nil, fmt.Errorf("%w: no CUDA device %d (%d present)", ErrNotSupported, ordinal, n)
	}
	dev, err := cuDeviceGet(ordinal)
	if err != nil {
		return nil, fmt.Errorf("opening CUDA device %d: %w", ordinal, err)
	}
	ctx, err := cuDevicePrimaryCtxRetain(dev)
	if err != nil {
		return nil, fmt.Errorf("opening CUDA device %d: %w", ordinal, err)
	}
	track(resDevice, 1)
	return newDevice(ordinal, dev, ctx), nil
}

func newDevice(ordinal int, dev int32, ctx uintptr) *Device {
	d := &Device{ordinal: ordinal, dev: dev, ctx: ctx}
	d.idle.L = &d.mu
	return d
}

// enter admits one call; every enter that returns nil is paired with exit.
func (d *Device) enter() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	d.active++
	return nil
}

func (d *Device) exit() {
	d.mu.Lock()
	d.active--
	if d.active == 0 && d.closed {
		d.idle.Broadcast()
	}
	d.mu.Unlock()
}

// call runs fn, which makes driver calls in d's context, unless d is closed.
func (d *Device) call(fn func(ctx uintptr) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	return fn(d.ctx)
}

// Close waits for calls in flight, frees what the package allocated for
// itself (built-in kernels, scratch words) and releases the primary context.
// The context, and every allocation, stream, event, module and mapping made
// in it, is destroyed when the last Device of this ordinal in the process
// is closed: free those first. Later calls return ErrClosed; Close itself is
// idempotent. It must not be called from inside Do on the same Device.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	for d.active > 0 {
		d.idle.Wait()
	}
	d.mu.Unlock()

	var errs []error
	d.kmu.Lock()
	for _, p := range d.scratch {
		errs = append(errs, cuMemFree(d.ctx, p))
		track(resDeviceMemory, -1)
	}
	d.scratch = nil
	if d.kern != nil {
		errs = append(errs, cuModuleUnload(d.ctx, d.kern.mod))
		track(resModule, -1)
		d.kern = nil
	}
	d.kmu.Unlock()
	if err := cuDevicePrimaryCtxRelease(d.dev); err != nil {
		errs = append(errs, err)
	}
	track(resDevice, -1)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing CUDA device %d: %w", d.ordinal, err)
	}
	return nil
}

// Do runs fn on a goroutine locked to its OS thread with d's context
// current on that thread. The package's own methods do not need it; it is
// for code that calls into another library that uses the current CUDA
// context of the calling thread (libfabric's CUDA memory registration, for
// one). fn may call d's methods.
func (d *Device) Do(fn func() error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := bind(d.ctx); err != nil {
		return err
	}
	return fn()
}

// Ordinal is the device number given to Open.
func (d *Device) Ordinal() int { return d.ordinal }

// CtxSynchronize waits until all work queued in the context has finished.
func (d *Device) CtxSynchronize() error {
	return d.call(func(ctx uintptr) error { return cuCtxSynchronize(ctx) })
}

// MemInfo returns the free and total device memory as the driver sees them.
func (d *Device) MemInfo() (free, total uint64, err error) {
	err = d.call(func(ctx uintptr) error {
		free, total, err = cuMemGetInfo(ctx)
		return err
	})
	return free, total, err
}

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int

// Attributes this package names; Attribute accepts any CUdevice_attribute.
const (
	AttrMultiprocessorCount        DeviceAttribute = 16
	AttrCanMapHostMemory           DeviceAttribute = 19
	AttrUnifiedAddressing          DeviceAttribute = 41
	AttrComputeCapabilityMajor     DeviceAttribute = 75
	AttrComputeCapabilityMinor     DeviceAttribute = 76
	AttrVirtualMemoryManagement    DeviceAttribute = 102 // cuMemCreate and friends
	AttrHandleTypePOSIXFDSupported DeviceAttribute = 103 // VMM export as a file descriptor
)

// Attribute queries one device attribute.
func (d *Device) Attribute(a DeviceAttribute) (v int, err error) {
	err = d.call(func(uintptr) error {
		v, err = cuDeviceGetAttribute(a, d.dev)
		return err
	})
	return v, err
}

func (d *Device) flag(a DeviceAttribute) (bool, error) {
	v, err := d.Attribute(a)
	return v != 0, err
}

// Name is the device's marketing name ("NVIDIA H100 80GB HBM3").
func (d *Device) Name() (s string, err error) {
	err = d.call(func(uintptr) error {
		s, err = cuDeviceGetName(d.dev)
		return err
	})
	return s, err
}

// TotalMem is the device memory size in bytes.
func (d *Device) TotalMem() (n uint64, err error) {
	err = d.call(func(uintptr) error {
		n, err = cuDeviceTotalMem(d.dev)
		return err
	})
	return n, err
}

// PCIBusID is the device's PCI address, "domain:bus:device.function".
func (d *Device) PCIBusID() (s string, err error) {
	err = d.call(func(uintptr) error {
		s, err = cuDeviceGetPCIBusID(d.dev)
		return err
	})
	return s, err
}

// ComputeCapability returns the SM version (9, 0 for an H100).
func (d *Device) ComputeCapability() (major, minor int, err error) {
	if major, err = d.Attribute(AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	minor, err = d.Attribute(AttrComputeCapabilityMinor)
	return major, minor, err
}

// VMMSupported reports CUDA virtual memory management (cuMemCreate, ...).
func (d *Device) VMMSupported() (bool, error) { return d.flag(AttrVirtualMemoryManagement) }

// POSIXFDSupported reports that VMM allocations can be exported as file
// descriptors (what CreateShareable needs).
func (d *Device) POSIXFDSupported() (bool, error) { return d.flag(AttrHandleTypePOSIXFDSupported) }

// UnifiedAddressing reports that host and device share one address space.
func (d *Device) UnifiedAddressing() (bool, error) { return d.flag(AttrUnifiedAddressing) }

// CanMapHostMemory reports that registered host memory can be mapped into
// the device's address space (HostDevicePointer).
func (d *Device) CanMapHostMemory() (bool, error) { return d.flag(AttrCanMapHostMemory) }

// Info is a device's description, all in one value (for reports).
type Info struct {
	Ordinal           int
	Name              string
	PCIBusID          string
	TotalMem          uint64
	Major, Minor      int // compute capability
	Multiprocessors   int
	DriverVersion     int
	UnifiedAddressing bool
	CanMapHostMemory  bool
	VMM               bool
	POSIXFD           bool
}

// Info gathers the device's description.
func (d *Device) Info() (Info, error) {
	in := Info{Ordinal: d.ordinal}
	var err error
	steps := []func() error{
		func() error { in.Name, err = d.Name(); return err },
		func() error { in.PCIBusID, err = d.PCIBusID(); return err },
		func() error { in.TotalMem, err = d.TotalMem(); return err },
		func() error { in.Major, in.Minor, err = d.ComputeCapability(); return err },
		func() error { in.Multiprocessors, err = d.Attribute(AttrMultiprocessorCount); return err },
		func() error { in.DriverVersion, err = cuDriverGetVersion(); return err },
		func() error { in.UnifiedAddressing, err = d.UnifiedAddressing(); return err },
		func() error { in.CanMapHostMemory, err = d.CanMapHostMemory(); return err },
		func() error { in.VMM, err = d.VMMSupported(); return err },
		func() error { in.POSIXFD, err = d.POSIXFDSupported(); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return in, fmt.Errorf("describing CUDA device %d: %w", d.ordinal, err)
		}
	}
	return in, nil
}

// Schedule is how a thread of this process waits for the device in a
// synchronising call (cuDevicePrimaryCtxSetFlags' CU_CTX_SCHED_* flags).
type Schedule uint32

const (
	ScheduleAuto     Schedule = 0 // the driver's choice: spin while contexts are fewer than processors
	ScheduleSpin     Schedule = 1 // spin
	ScheduleYield    Schedule = 2 // spin, yielding the processor
	ScheduleBlocking Schedule = 4 // sleep until the device interrupts
)

// scheduleMask is the CU_CTX_SCHED_* bits of a context's flags.
const scheduleMask = 7

// SetSchedule sets how this process's threads wait for device ordinal
// from now on: the schedule bits of its primary context's flags (the
// others are kept), also while the context is in use.
func SetSchedule(ordinal int, s Schedule) error {
	switch s {
	case ScheduleAuto, ScheduleSpin, ScheduleYield, ScheduleBlocking:
	default:
		return fmt.Errorf("CUDA schedule %d: not one of auto, spin, yield, blocking", s)
	}
	if err := load(); err != nil {
		return err
	}
	dev, err := cuDeviceGet(ordinal)
	if err != nil {
		return fmt.Errorf("CUDA device %d: %w", ordinal, err)
	}
	flags, _, err := cuDevicePrimaryCtxGetState(dev)
	if err != nil {
		return fmt.Errorf("CUDA device %d's context flags: %w", ordinal, err)
	}
	if err := cuDevicePrimaryCtxSetFlags(dev, flags&^scheduleMask|uint32(s)); err != nil {
		return fmt.Errorf("setting CUDA device %d's schedule: %w", ordinal, err)
	}
	return nil
}

// ScheduleOf is device ordinal's primary context's schedule now.
func ScheduleOf(ordinal int) (Schedule, error) {
	if err := load(); err != nil {
		return 0, err
	}
	dev, err := cuDeviceGet(ordinal)
	if err != nil {
		return 0, fmt.Errorf("CUDA device %d: %w", ordinal, err)
	}
	flags, _, err := cuDevicePrimaryCtxGetState(dev)
	if err != nil {
		return 0, fmt.Errorf("CUDA device %d's context flags: %w", ordinal, err)
	}
	return Schedule(flags & scheduleMask), nil
}
