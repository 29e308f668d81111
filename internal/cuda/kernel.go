package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"
)

// Module is PTX (or a cubin) loaded into a device's context.
type Module struct {
	dev *Device
	mu  sync.Mutex // guards h
	h   uintptr    // CUmodule; 0 after Unload
}

// Function is a kernel of a loaded module.
type Function struct {
	mod  *Module
	name string
	h    uintptr // CUfunction
}

// LoadModule JIT-compiles PTX text for this device (cuModuleLoadDataEx). A
// PTX error comes back with the JIT compiler's log in the message.
func (d *Device) LoadModule(ptx string) (*Module, error) {
	var m *Module
	err := d.call(func(ctx uintptr) error {
		h, log, err := cuModuleLoadDataEx(ctx, ptx)
		if err != nil {
			if log != "" {
				return fmt.Errorf("loading PTX module: %w\n%s", err, log)
			}
			return fmt.Errorf("loading PTX module: %w", err)
		}
		track(resModule, 1)
		m = &Module{dev: d, h: h}
		return nil
	})
	return m, err
}

// Function looks up a kernel by its (unmangled) entry name.
func (m *Module) Function(name string) (*Function, error) {
	m.mu.Lock()
	mh := m.h
	m.mu.Unlock()
	if mh == 0 {
		return nil, ErrClosed
	}
	var f *Function
	err := m.dev.call(func(ctx uintptr) error {
		h, err := cuModuleGetFunction(ctx, mh, name)
		if err != nil {
			return fmt.Errorf("kernel %q: %w", name, err)
		}
		f = &Function{mod: m, name: name, h: h}
		return nil
	})
	return f, err
}

// Unload releases the module; its Functions become invalid. A second
// Unload does nothing.
func (m *Module) Unload() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.h == 0 {
		return nil
	}
	return m.dev.call(func(ctx uintptr) error {
		if err := cuModuleUnload(ctx, m.h); err != nil {
			return err
		}
		m.h = 0
		track(resModule, -1)
		return nil
	})
}

// maxKernelArgs bounds a launch's argument count (kernels here take a few).
const maxKernelArgs = 64

// packArgs turns kernel arguments into 8-byte parameter slots, 4-byte
// values in the low half. Accepted: DevicePtr, uint64, int64, uint32,
// int32, float32, float64.
func packArgs(args []any) ([]uint64, error) {
	if len(args) > maxKernelArgs {
		return nil, fmt.Errorf("%d kernel arguments: at most %d", len(args), maxKernelArgs)
	}
	vals := make([]uint64, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case DevicePtr:
			vals[i] = uint64(v)
		case uint64:
			vals[i] = v
		case int64:
			vals[i] = uint64(v)
		case uint32:
			vals[i] = uint64(v)
		case int32:
			vals[i] = uint64(uint32(v))
		case float32:
			vals[i] = uint64(math.Float32bits(v))
		case float64:
			vals[i] = math.Float64bits(v)
		default:
			return nil, fmt.Errorf("kernel argument %d has unsupported type %T (want DevicePtr, uint64, int64, uint32, int32, float32 or float64)", i, a)
		}
	}
	return vals, nil
}

// Launch queues the kernel on stream (nil: the legacy default stream) with
// the given grid and block sizes and dynamic shared memory. args must match
// the kernel's parameters in number and size; the parameter array is built
// in C memory and copied by the driver at launch.
func (f *Function) Launch(grid, block [3]uint32, sharedMem uint32, stream *Stream, args ...any) error {
	vals, err := packArgs(args)
	if err != nil {
		return fmt.Errorf("launching %s: %w", f.name, err)
	}
	return f.mod.dev.call(func(ctx uintptr) error {
		if err := cuLaunchKernel(ctx, f.h, grid, block, sharedMem, stream.handle(), vals); err != nil {
			return fmt.Errorf("launching %s: %w", f.name, err)
		}
		return nil
	})
}

// KernelsPTX holds the package's built-in kernels, hand-written PTX that
// any driver since CUDA 9 can JIT for any GPU from sm_52 on (PTX ISA 6.0 for
// shfl.sync).
//
// fill_pattern(u8 *p, u64 n, u32 seed): p[i] = low 8 bits of
// (i * 2654435761) ^ seed, in 64-bit arithmetic; grid-stride loop.
//
// checksum(const u8 *p, u64 n, u64 *out): *out += sum of p[i] * (i%251 + 1),
// each thread summing a grid-stride slice (tracking i%251 incrementally),
// then a warp shuffle reduction and one atom.global.add.u64 per warp. Its
// block size must be a multiple of 32 (full warps).
//
// hold(const volatile u32 *flag, u64 limit): one thread that spins until
// *flag is not zero or limit nanoseconds of %globaltimer passed (a safety
// bound, so that a test that fails to set the flag cannot wedge the GPU).
//
// FillPatternHost and ChecksumHost compute the same values on the CPU.
const KernelsPTX = `
.version 6.0
.target sm_52
.address_size 64

.visible .entry fill_pattern(
	.param .u64 fill_pattern_param_p,
	.param .u64 fill_pattern_param_n,
	.param .u32 fill_pattern_param_seed
)
{
	.reg .pred 	%p<2>;
	.reg .b16 	%rs<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<10>;

	ld.param.u64 	%rd1, [fill_pattern_param_p];
	ld.param.u64 	%rd2, [fill_pattern_param_n];
	ld.param.u32 	%r1, [fill_pattern_param_seed];
	cvta.to.global.u64 	%rd1, %rd1;
	cvt.u64.u32 	%rd3, %r1;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mov.u32 	%r5, %nctaid.x;
	mul.wide.u32 	%rd4, %r2, %r3;
	cvt.u64.u32 	%rd5, %r4;
	add.u64 	%rd4, %rd4, %rd5;
	mul.wide.u32 	%rd6, %r5, %r3;
FILL_LOOP:
	setp.ge.u64 	%p1, %rd4, %rd2;
	@%p1 bra 	FILL_DONE;
	mul.lo.u64 	%rd7, %rd4, 2654435761;
	xor.b64 	%rd7, %rd7, %rd3;
	cvt.u16.u64 	%rs1, %rd7;
	add.u64 	%rd8, %rd1, %rd4;
	st.global.u8 	[%rd8], %rs1;
	add.u64 	%rd4, %rd4, %rd6;
	bra.uni 	FILL_LOOP;
FILL_DONE:
	ret;
}

.visible .entry checksum(
	.param .u64 checksum_param_p,
	.param .u64 checksum_param_n,
	.param .u64 checksum_param_out
)
{
	.reg .pred 	%p<4>;
	.reg .b16 	%rs<2>;
	.reg .b32 	%r<12>;
	.reg .b64 	%rd<16>;

	ld.param.u64 	%rd1, [checksum_param_p];
	ld.param.u64 	%rd2, [checksum_param_n];
	ld.param.u64 	%rd3, [checksum_param_out];
	cvta.to.global.u64 	%rd1, %rd1;
	cvta.to.global.u64 	%rd3, %rd3;
	mov.u32 	%r1, %ctaid.x;
	mov.u32 	%r2, %ntid.x;
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %nctaid.x;
	mul.wide.u32 	%rd4, %r1, %r2;
	cvt.u64.u32 	%rd5, %r3;
	add.u64 	%rd4, %rd4, %rd5;
	mul.wide.u32 	%rd5, %r4, %r2;
	rem.u64 	%rd6, %rd4, 251;
	rem.u64 	%rd7, %rd5, 251;
	mov.u64 	%rd8, 0;
SUM_LOOP:
	setp.ge.u64 	%p1, %rd4, %rd2;
	@%p1 bra 	SUM_DONE;
	add.u64 	%rd9, %rd1, %rd4;
	ld.global.u8 	%rs1, [%rd9];
	cvt.u64.u16 	%rd10, %rs1;
	add.u64 	%rd11, %rd6, 1;
	mad.lo.u64 	%rd8, %rd10, %rd11, %rd8;
	add.u64 	%rd4, %rd4, %rd5;
	add.u64 	%rd6, %rd6, %rd7;
	setp.ge.u64 	%p2, %rd6, 251;
	@%p2 sub.u64 	%rd6, %rd6, 251;
	bra.uni 	SUM_LOOP;
SUM_DONE:
	mov.b64 	{%r5, %r6}, %rd8;
	shfl.sync.down.b32 	%r7, %r5, 16, 31, -1;
	shfl.sync.down.b32 	%r8, %r6, 16, 31, -1;
	mov.b64 	%rd12, {%r7, %r8};
	add.u64 	%rd8, %rd8, %rd12;
	mov.b64 	{%r5, %r6}, %rd8;
	shfl.sync.down.b32 	%r7, %r5, 8, 31, -1;
	shfl.sync.down.b32 	%r8, %r6, 8, 31, -1;
	mov.b64 	%rd12, {%r7, %r8};
	add.u64 	%rd8, %rd8, %rd12;
	mov.b64 	{%r5, %r6}, %rd8;
	shfl.sync.down.b32 	%r7, %r5, 4, 31, -1;
	shfl.sync.down.b32 	%r8, %r6, 4, 31, -1;
	mov.b64 	%rd12, {%r7, %r8};
	add.u64 	%rd8, %rd8, %rd12;
	mov.b64 	{%r5, %r6}, %rd8;
	shfl.sync.down.b32 	%r7, %r5, 2, 31, -1;
	shfl.sync.down.b32 	%r8, %r6, 2, 31, -1;
	mov.b64 	%rd12, {%r7, %r8};
	add.u64 	%rd8, %rd8, %rd12;
	mov.b64 	{%r5, %r6}, %rd8;
	shfl.sync.down.b32 	%r7, %r5, 1, 31, -1;
	shfl.sync.down.b32 	%r8, %r6, 1, 31, -1;
	mov.b64 	%rd12, {%r7, %r8};
	add.u64 	%rd8, %rd8, %rd12;
	mov.u32 	%r9, %laneid;
	setp.ne.u32 	%p3, %r9, 0;
	@%p3 bra 	SUM_END;
	atom.global.add.u64 	%rd13, [%rd3], %rd8;
SUM_END:
	ret;
}

.visible .entry hold(
	.param .u64 hold_param_flag,
	.param .u64 hold_param_limit
)
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [hold_param_flag];
	ld.param.u64 	%rd2, [hold_param_limit];
	cvta.to.global.u64 	%rd1, %rd1;
	mov.u64 	%rd3, %globaltimer;
	add.u64 	%rd3, %rd3, %rd2;
HOLD_LOOP:
	ld.volatile.global.u32 	%r1, [%rd1];
	setp.ne.u32 	%p1, %r1, 0;
	@%p1 bra 	HOLD_DONE;
	mov.u64 	%rd4, %globaltimer;
	setp.lt.u64 	%p2, %rd4, %rd3;
	@%p2 bra 	HOLD_LOOP;
HOLD_DONE:
	ret;
}
`

// FillPatternHost writes the fill_pattern kernel's values into b.
func FillPatternHost(b []byte, seed uint32) {
	for i := range b {
		b[i] = PatternByte(uint64(i), seed)
	}
}

// PatternByte is byte i of the fill_pattern kernel's output for seed (a
// reader spot-checks a large message with it).
func PatternByte(i uint64, seed uint32) byte { return byte(i*2654435761 ^ uint64(seed)) }

// ChecksumHost computes the checksum kernel's value for b.
func ChecksumHost(b []byte) uint64 {
	var sum uint64
	m := uint64(0) // i % 251
	for _, v := range b {
		sum += uint64(v) * (m + 1)
		if m++; m == 251 {
			m = 0
		}
	}
	return sum
}

// builtin holds a device's loaded built-in kernels.
type builtin struct {
	mod                  uintptr
	fill, checksum, hold *Function
}

const (
	builtinBlock   = 256  // threads per block: full warps, as checksum needs
	builtinMaxGrid = 4096 // blocks; beyond this the grid-stride loops take over
)

func gridFor(n uint64) [3]uint32 {
	g := (n + builtinBlock - 1) / builtinBlock
	if g > builtinMaxGrid {
		g = builtinMaxGrid
	}
	return [3]uint32{uint32(g), 1, 1}
}

// kernels loads the built-in kernels on first use. They live until Close.
// The caller must be inside enter/exit, so Close waits for it.
func (d *Device) kernels() (*builtin, error) {
	d.kmu.Lock()
	defer d.kmu.Unlock()
	if d.kern != nil {
		return d.kern, nil
	}
	m, err := d.LoadModule(KernelsPTX)
	if err != nil {
		return nil, fmt.Errorf("loading built-in kernels: %w", err)
	}
	k := &builtin{mod: m.h}
	if k.fill, err = m.Function("fill_pattern"); err == nil {
		if k.checksum, err = m.Function("checksum"); err == nil {
			if k.hold, err = m.Function("hold"); err == nil {
				// The module is owned by the Device from here on (Close unloads it).
				d.kern = k
				return d.kern, nil
			}
		}
	}
	m.Unload()
	return nil, fmt.Errorf("loading built-in kernels: %w", err)
}

// FillPattern queues the fill_pattern kernel over n bytes at p on s (nil:
// the legacy default stream). FillPatternHost computes the same bytes.
func (d *Device) FillPattern(p DevicePtr, n uint64, seed uint32, s *Stream) error {
	if n == 0 {
		return nil
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	k, err := d.kernels()
	if err != nil {
		return err
	}
	return k.fill.Launch(gridFor(n), [3]uint32{builtinBlock, 1, 1}, 0, s, p, n, seed)
}

// Hold queues the hold kernel on s (one thread): it runs until the 32-bit
// word at flag is not zero, or limit has passed (a safety bound), so that
// whatever is queued on s after it waits for the word. flag is mapped host
// memory (HostDevicePointer), which the host sets when the stream may go
// on. It is for tests that must hold a stream back without relying on
// timing: what they queue elsewhere must complete meanwhile. Nothing that
// synchronises the device (Free, CtxSynchronize, a synchronous copy on a
// blocking stream behind s) may wait for s before the word is set.
func (d *Device) Hold(flag DevicePtr, limit time.Duration, s *Stream) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.exit()
	k, err := d.kernels()
	if err != nil {
		return err
	}
	return k.hold.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, s, flag, uint64(limit))
}

// Checksum runs the checksum kernel over n bytes at p (device memory, or
// mapped host memory from HostDevicePointer) on the legacy default stream,
// after the work already queued on it and on blocking streams, and returns
// the result. ChecksumHost computes the same value.
func (d *Device) Checksum(p DevicePtr, n uint64) (uint64, error) {
	if n == 0 {
		return 0, nil
	}
	// Held across the whole call so that Close cannot free the scratch
	// word's list underneath it.
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.exit()
	k, err := d.kernels()
	if err != nil {
		return 0, err
	}
	out, err := d.getScratch()
	if err != nil {
		return 0, err
	}
	defer d.putScratch(out)
	if err := d.MemsetD8(out, 0, 8); err != nil {
		return 0, err
	}
	if err := k.checksum.Launch(gridFor(n), [3]uint32{builtinBlock, 1, 1}, 0, nil, p, n, out); err != nil {
		return 0, err
	}
	var b [8]byte
	if err := d.MemcpyDtoH(b[:], out); err != nil {
		return 0, fmt.Errorf("reading checksum: %w", err)
	}
	return binary.LittleEndian.Uint64(b[:]), nil
}

// getScratch hands out an 8-byte device word for a Checksum result; the
// words are kept for reuse (cuMemFree synchronises the device) until Close.
func (d *Device) getScratch() (DevicePtr, error) {
	d.kmu.Lock()
	if n := len(d.scratch); n > 0 {
		p := d.scratch[n-1]
		d.scratch = d.scratch[:n-1]
		d.kmu.Unlock()
		return p, nil
	}
	d.kmu.Unlock()
	return d.Alloc(8)
}

func (d *Device) putScratch(p DevicePtr) {
	d.kmu.Lock()
	d.scratch = append(d.scratch, p)
	d.kmu.Unlock()
}
