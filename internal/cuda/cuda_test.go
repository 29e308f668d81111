package cuda

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// childEnv names the role a re-executed test binary plays (see runChild).
const childEnv = "RGAPS_CUDA_TEST_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	if shared.dev != nil {
		if err := shared.dev.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "closing the test device:", err)
			code = 1
		}
	}
	// Fail the run on leaked GPU resources (zero everywhere without a GPU).
	if leaks := liveResources(); code == 0 && len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "leak check: CUDA resources left open: %v\n", leaks)
		code = 1
	}
	os.Exit(code)
}

// shared is the device the tests share: opening one costs hundreds of
// milliseconds, and TestMain closes it before the leak check.
var shared struct {
	once sync.Once
	dev  *Device
	err  error
}

// requireGPU returns the shared device 0. Without a GPU (an error wrapping
// ErrNotSupported) it skips the test, except that RGAPS_REQUIRE_GPU=1 makes
// it fail, so a skip cannot hide a regression on the GPU machine. Any other
// error fails the test.
func requireGPU(t testing.TB) *Device {
	t.Helper()
	shared.once.Do(func() { shared.dev, shared.err = Open(0) })
	skipIfNotSupported(t, shared.err)
	if shared.err != nil {
		t.Fatalf("opening CUDA device 0: %v", shared.err)
	}
	return shared.dev
}

// skipIfNotSupported skips on an error wrapping ErrNotSupported (a missing
// capability), unless RGAPS_REQUIRE_GPU=1.
func skipIfNotSupported(t testing.TB, err error) {
	t.Helper()
	testutil.SkipWithoutGPU(t, err, ErrNotSupported)
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// --- Tests that run everywhere ---------------------------------------------

func TestMissingLibraryIsNotSupported(t *testing.T) {
	_, err := openLibrary("libcuda-does-not-exist.so.1")
	if !errors.Is(err, ErrNotSupported) {
		t.Fatalf("opening a missing library: got %v, want an error wrapping ErrNotSupported", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "GPU not supported: no CUDA driver: ") || !strings.Contains(msg, "libcuda-does-not-exist.so.1") {
		t.Fatalf("message %q should say no CUDA driver and name the library (dlerror)", msg)
	}
}

func TestMissingSymbolIsNamedAndNotASkip(t *testing.T) {
	// libc opens fine but is not the driver: the first symbol is missing.
	err := probeLibrary("libc.so.6")
	if err == nil {
		t.Fatal("libc.so.6 passed as a CUDA driver")
	}
	if errors.Is(err, ErrNotSupported) {
		t.Fatalf("a library without the entry points must not read as 'no GPU' (a test would skip): %v", err)
	}
	if !strings.Contains(err.Error(), "lacks cuInit") {
		t.Fatalf("error %q should name the missing symbol", err)
	}
}

// TestLoad asserts on whatever this machine is: without a driver or device,
// every entry point returns the same ErrNotSupported error; with one, the
// basics answer. RGAPS_REQUIRE_GPU=1 demands the latter.
func TestLoad(t *testing.T) {
	err := load()
	if err != nil {
		if testutil.GPURequired() {
			t.Fatalf("RGAPS_REQUIRE_GPU=1 but loading the driver failed: %v", err)
		}
		if !errors.Is(err, ErrNotSupported) {
			t.Fatalf("load: %v (want an error wrapping ErrNotSupported, or success)", err)
		}
		if !strings.Contains(err.Error(), "no CUDA driver: libcuda.so.1") && !strings.Contains(err.Error(), "no CUDA device") {
			t.Fatalf("load error %q says neither 'no CUDA driver: libcuda.so.1' nor 'no CUDA device'", err)
		}
		n, err2 := Count()
		if n != 0 || !errors.Is(err2, ErrNotSupported) || err2.Error() != err.Error() {
			t.Fatalf("Count() = %d, %v; want 0 and the load error %v", n, err2, err)
		}
		if _, err2 := DriverVersion(); err2 == nil || err2.Error() != err.Error() {
			t.Fatalf("DriverVersion error %v, want the load error", err2)
		}
		d, err2 := Open(0)
		if d != nil || !errors.Is(err2, ErrNotSupported) {
			t.Fatalf("Open(0) = %v, %v; want nil and an error wrapping ErrNotSupported", d, err2)
		}
		t.Logf("no GPU here, as expected by the checks above: %v", err)
		return
	}
	n, err := Count()
	must(t, err)
	if n < 1 {
		t.Fatalf("driver loaded but Count() = %d", n)
	}
	v, err := DriverVersion()
	must(t, err)
	if v < 10020 { // VMM arrived in CUDA 10.2
		t.Fatalf("driver version %d is older than CUDA 10.2", v)
	}
	if _, err := Open(n); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Open(%d) with %d devices: %v, want ErrNotSupported", n, n, err)
	}
	if _, err := Open(-1); err == nil || errors.Is(err, ErrNotSupported) {
		t.Fatalf("Open(-1): %v, want a plain error", err)
	}
	t.Logf("%d device(s), driver CUDA %d.%d", n, v/1000, v%1000/10)
}

func TestErrorType(t *testing.T) {
	e := &Error{Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Description: "out of memory", Op: "cuMemAlloc_v2"}
	if got, want := e.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if errors.Is(e, ErrNotSupported) {
		t.Fatal("out of memory must not read as not supported")
	}
	wrapped := fmt.Errorf("allocating: %w", &Error{Code: CodeNotSupported, Name: "CUDA_ERROR_NOT_SUPPORTED", Op: "cuMemCreate"})
	if !errors.Is(wrapped, ErrNotSupported) {
		t.Fatal("CUDA_ERROR_NOT_SUPPORTED must match ErrNotSupported")
	}
	var ce *Error
	if !errors.As(wrapped, &ce) || ce.Code != CodeNotSupported || ce.Op != "cuMemCreate" {
		t.Fatalf("errors.As: %#v", ce)
	}
	// Without the driver's names, the code still shows.
	if !driver.loaded.Load() {
		if got := newError("cuInit", 100).Error(); got != "cuInit: CUresult 100 (100)" {
			t.Fatalf("newError without a driver: %q", got)
		}
	} else if got := newError("cuInit", 100); got.Name != "CUDA_ERROR_NO_DEVICE" || got.Description == "" {
		t.Fatalf("newError with the driver: %#v", got)
	}
}

func TestStructLayout(t *testing.T) {
	// The _Static_asserts already stop the build on a mismatch; this shows
	// the numbers and guards against someone deleting them.
	want := map[string]int{
		"sizeof(CUipcMemHandle)":                             64,
		"sizeof(CUmemAllocationProp)":                        32,
		"offsetof(CUmemAllocationProp.requestedHandleTypes)": 4,
		"offsetof(CUmemAllocationProp.location)":             8,
		"offsetof(CUmemAllocationProp.win32HandleMetaData)":  16,
		"offsetof(CUmemAllocationProp.allocFlags)":           24,
		"sizeof(CUmemAccessDesc)":                            12,
		"offsetof(CUmemAccessDesc.flags)":                    8,
	}
	got := structLayout()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}

func TestSymbolTableUsesVersionedEntryPoints(t *testing.T) {
	syms := symbolNames()
	versioned := []string{
		"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2",
		"cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemcpyDtoDAsync_v2", "cuMemsetD8_v2",
		"cuMemHostRegister_v2", "cuMemHostGetDevicePointer_v2", "cuIpcOpenMemHandle_v2",
		"cuDevicePrimaryCtxRelease_v2", "cuDeviceTotalMem_v2", "cuStreamDestroy_v2", "cuEventDestroy_v2",
		"cuMemGetInfo_v2",
	}
	for _, v := range versioned {
		if !slices.Contains(syms, v) {
			t.Errorf("symbol table lacks %s", v)
		}
		if old := strings.TrimSuffix(v, "_v2"); slices.Contains(syms, old) {
			t.Errorf("symbol table has the unversioned %s", old)
		}
	}
	seen := map[string]bool{}
	for _, s := range syms {
		if seen[s] {
			t.Errorf("%s twice in the symbol table", s)
		}
		seen[s] = true
	}
}

func TestHostReferenceKnownValues(t *testing.T) {
	b := make([]byte, 4)
	FillPatternHost(b, 0)
	// i*2654435761 = 0, 0x9E3779B1, 0x13C6EF362, 0x1DAA66D13: low bytes.
	if want := []byte{0x00, 0xB1, 0x62, 0x13}; !bytes.Equal(b, want) {
		t.Fatalf("FillPatternHost(seed 0) = % x, want % x", b, want)
	}
	FillPatternHost(b, 0x1234_56FF)
	if want := []byte{0xFF, 0xB1 ^ 0xFF, 0x62 ^ 0xFF, 0x13 ^ 0xFF}; !bytes.Equal(b, want) {
		t.Fatalf("FillPatternHost(seed 0x123456FF) = % x, want % x", b, want)
	}

	if got := ChecksumHost([]byte{1, 2, 3}); got != 1*1+2*2+3*3 {
		t.Fatalf("ChecksumHost(1,2,3) = %d, want 14", got)
	}
	ones := bytes.Repeat([]byte{1}, 252) // weights 1..251, then 1 again
	if got, want := ChecksumHost(ones), uint64(251*252/2+1); got != want {
		t.Fatalf("ChecksumHost(252 ones) = %d, want %d", got, want)
	}
	// The incremental i%251 in ChecksumHost against the definition.
	r := make([]byte, 10_000)
	for i := range r {
		r[i] = byte(rand.Uint32())
	}
	var want uint64
	for i, v := range r {
		want += uint64(v) * uint64(i%251+1)
	}
	if got := ChecksumHost(r); got != want {
		t.Fatalf("ChecksumHost = %d, definition gives %d", got, want)
	}
}

func TestPackArgs(t *testing.T) {
	vals, err := packArgs([]any{DevicePtr(0x7f00_0000_1000), uint64(1 << 40), int64(-1), uint32(7), int32(-2), float32(1.5), float64(2)})
	must(t, err)
	want := []uint64{0x7f00_0000_1000, 1 << 40, 0xFFFF_FFFF_FFFF_FFFF, 7, 0xFFFF_FFFE, 0x3FC0_0000, 0x4000_0000_0000_0000}
	if !slices.Equal(vals, want) {
		t.Fatalf("packArgs = %x, want %x", vals, want)
	}
	if _, err := packArgs([]any{42}); err == nil || !strings.Contains(err.Error(), "unsupported type int") {
		t.Fatalf("packArgs(int): %v", err)
	}
	if _, err := packArgs(make([]any, maxKernelArgs+1)); err == nil {
		t.Fatal("packArgs accepted too many arguments")
	}
}

func TestPTXDeclaresTheKernels(t *testing.T) {
	for _, want := range []string{".version 6.0", ".target sm_52", ".address_size 64", ".entry fill_pattern(", ".entry checksum(", ".entry hold("} {
		if !strings.Contains(KernelsPTX, want) {
			t.Errorf("KernelsPTX lacks %q", want)
		}
	}
}

func TestClosedDeviceReturnsErrClosed(t *testing.T) {
	d := newDevice(0, 0, 0)
	d.closed = true
	if _, err := d.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Alloc after Close: %v", err)
	}
	if err := d.MemcpyHtoD(0, []byte{1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("MemcpyHtoD after Close: %v", err)
	}
	if err := d.Do(func() error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close: %v", err)
	}
	if _, err := d.Checksum(0, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Checksum after Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestLiveResourceAccounting(t *testing.T) {
	before := liveResources()
	track(resStream, 1)
	track(resVMMAllocation, 2)
	got := liveResources()
	track(resStream, -1)
	track(resVMMAllocation, -2)
	if got["stream"] != before["stream"]+1 || got["VMM allocation"] != before["VMM allocation"]+2 {
		t.Fatalf("liveResources after tracking = %v (before %v)", got, before)
	}
	if after := liveResources(); len(after) != len(before) {
		t.Fatalf("liveResources after releasing = %v, want %v", after, before)
	}
}

func TestCopyKindNames(t *testing.T) {
	var names []string
	for _, k := range CopyKinds() {
		names = append(names, k.String())
	}
	if got := strings.Join(names, ","); got != "d2h-pinned,d2h-pageable,h2d-pinned,h2d-pageable,d2d" {
		t.Fatalf("copy kinds: %s", got)
	}
}

// --- Tests that need a GPU -------------------------------------------------

func TestDeviceInfo(t *testing.T) {
	d := requireGPU(t)
	in, err := d.Info()
	must(t, err)
	t.Logf("%+v", in)
	if in.Name == "" || in.TotalMem == 0 || in.Multiprocessors == 0 {
		t.Fatalf("implausible device: %+v", in)
	}
	if !regexp.MustCompile(`^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$`).MatchString(in.PCIBusID) {
		t.Fatalf("PCI bus id %q", in.PCIBusID)
	}
	if in.Major < 5 || in.Minor < 0 {
		t.Fatalf("compute capability %d.%d: the built-in PTX needs sm_52", in.Major, in.Minor)
	}
	if !in.UnifiedAddressing || !in.CanMapHostMemory {
		t.Fatalf("64-bit Linux GPUs have unified addressing and can map host memory: %+v", in)
	}
	free, total, err := d.MemInfo()
	must(t, err)
	if total == 0 || free > total {
		t.Fatalf("MemInfo free %d total %d (TotalMem %d)", free, total, in.TotalMem)
	}
}

func TestAllocCopyRoundTrip(t *testing.T) {
	d := requireGPU(t)
	for _, n := range []int{1, 4097, 1<<20 + 3} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(rand.Uint32())
		}
		p, err := d.Alloc(uint64(n))
		must(t, err)
		must(t, d.MemcpyHtoD(p, src))
		dst := make([]byte, n)
		must(t, d.MemcpyDtoH(dst, p))
		must(t, d.Free(p))
		if !bytes.Equal(src, dst) {
			t.Fatalf("%d bytes: round trip differs", n)
		}
	}
}

func TestMemsetAndDtoD(t *testing.T) {
	d := requireGPU(t)
	const n = 1 << 20
	a, err := d.Alloc(n)
	must(t, err)
	defer d.Free(a)
	b, err := d.Alloc(n)
	must(t, err)
	defer d.Free(b)
	must(t, d.MemsetD8(a, 0xAB, n))
	must(t, d.MemsetD8(a+100, 0xCD, 10)) // pointer arithmetic on DevicePtr
	must(t, d.MemsetD8(b, 0, n))
	must(t, d.MemcpyDtoD(b, a, n))
	got := make([]byte, n)
	must(t, d.MemcpyDtoH(got, b))
	want := bytes.Repeat([]byte{0xAB}, n)
	copy(want[100:110], bytes.Repeat([]byte{0xCD}, 10))
	if !bytes.Equal(got, want) {
		t.Fatal("memset + DtoD gave the wrong bytes")
	}
}

// mmapShared maps anonymous shared memory, as the engine's shm segments are.
func mmapShared(t testing.TB, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	must(t, err)
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func TestHostRegisterMmap(t *testing.T) {
	d := requireGPU(t)
	const n = 4 << 20
	host := mmapShared(t, n)
	must(t, d.HostRegister(host, HostRegisterPortable|HostRegisterDeviceMap))
	defer func() { must(t, d.HostUnregister(host)) }()

	p, err := d.Alloc(n)
	must(t, err)
	defer d.Free(p)
	must(t, d.FillPattern(p, n, 7, nil))
	must(t, d.MemcpyDtoH(host, p)) // D2H into registered shm
	want := make([]byte, n)
	FillPatternHost(want, 7)
	if !bytes.Equal(host, want) {
		t.Fatal("D2H into registered mmap memory differs from FillPatternHost")
	}

	// Zero copy: a kernel reads the host memory through its device address.
	hp, err := d.HostDevicePointer(host)
	must(t, err)
	if hp == 0 {
		t.Fatal("HostDevicePointer returned 0")
	}
	FillPatternHost(host, 99)
	sum, err := d.Checksum(hp, n)
	must(t, err)
	if want := ChecksumHost(host); sum != want {
		t.Fatalf("checksum over mapped host memory = %d, want %d", sum, want)
	}
	// And writes through it.
	must(t, d.FillPattern(hp, n, 5, nil))
	must(t, d.CtxSynchronize())
	FillPatternHost(want, 5)
	if !bytes.Equal(host, want) {
		t.Fatal("kernel writes through HostDevicePointer did not reach host memory")
	}
}

func TestStreamEventTiming(t *testing.T) {
	d := requireGPU(t)
	const n = 16 << 20
	in, out := mmapShared(t, n), mmapShared(t, n)
	for _, b := range [][]byte{in, out} {
		must(t, d.HostRegister(b, HostRegisterPortable))
		defer func() { must(t, d.HostUnregister(b)) }()
	}
	FillPatternHost(in, 3)

	s, err := d.NewStream()
	must(t, err)
	defer func() { must(t, s.Destroy()); must(t, s.Destroy()) }()
	start, err := d.NewEvent()
	must(t, err)
	defer start.Destroy()
	end, err := d.NewEvent()
	must(t, err)
	defer end.Destroy()

	p, err := d.Alloc(n)
	must(t, err)
	defer d.Free(p)
	must(t, start.Record(s))
	must(t, d.MemcpyHtoDAsync(p, in, s))
	must(t, d.FillPattern(p+n/2, n/2, 11, s)) // overwrite the second half
	must(t, d.MemcpyDtoHAsync(out, p, s))
	must(t, end.Record(s))
	for deadline := time.Now().Add(10 * time.Second); ; {
		done, err := end.Done() // polled, as the bridge does
		must(t, err)
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("event never done")
		}
	}
	must(t, end.Synchronize())
	el, err := Elapsed(start, end)
	must(t, err)
	if el <= 0 { // the events bracket real work: some GPU time passed
		t.Fatalf("elapsed %v", el)
	}
	t.Logf("H2D %d MiB + fill + D2H on a stream: %v", n>>20, el)
	must(t, s.Synchronize())
	want := make([]byte, n)
	FillPatternHost(want, 3)
	second := make([]byte, n/2)
	FillPatternHost(second, 11)
	copy(want[n/2:], second)
	if !bytes.Equal(out, want) {
		t.Fatal("stream-ordered copies and kernel gave the wrong bytes")
	}

	must(t, d.MemcpyDtoDAsync(p, p+n/2, n/2, s))
	must(t, s.Synchronize())
	sum, err := d.Checksum(p, n/2)
	must(t, err)
	if want := ChecksumHost(second); sum != want {
		t.Fatalf("after DtoDAsync: checksum %d, want %d", sum, want)
	}
}

func TestKernelsMatchHost(t *testing.T) {
	d := requireGPU(t)
	for _, n := range []int{1, 4097, 64 << 20} {
		for _, seed := range []uint32{0, 0xDEADBEEF} {
			p, err := d.Alloc(uint64(n))
			must(t, err)
			must(t, d.FillPattern(p, uint64(n), seed, nil))
			got, err := d.Checksum(p, uint64(n))
			must(t, err)
			host := make([]byte, n)
			FillPatternHost(host, seed)
			if want := ChecksumHost(host); got != want {
				t.Errorf("n=%d seed=%#x: GPU checksum %d, host %d", n, seed, got, want)
			}
			if n <= 4097 {
				dev := make([]byte, n)
				must(t, d.MemcpyDtoH(dev, p))
				if !bytes.Equal(dev, host) {
					t.Errorf("n=%d seed=%#x: fill_pattern bytes differ from FillPatternHost", n, seed)
				}
			}
			must(t, d.Free(p))
		}
	}
}

func TestLoadModuleReportsPTXErrors(t *testing.T) {
	d := requireGPU(t)
	m, err := d.LoadModule(".version 6.0\n.target sm_52\n.address_size 64\n.visible .entry broken() { this is not ptx; }\n")
	if err == nil {
		m.Unload()
		t.Fatal("broken PTX loaded")
	}
	if errors.Is(err, ErrNotSupported) {
		t.Fatalf("a PTX error must not read as not supported: %v", err)
	}
	var ce *Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "\n") {
		t.Fatalf("want a *Error followed by the JIT log, got: %v", err)
	}
	t.Logf("%v", err)

	// A user module with its own kernel and mixed argument types.
	m, err = d.LoadModule(KernelsPTX)
	must(t, err)
	defer func() { must(t, m.Unload()); must(t, m.Unload()) }()
	if _, err := m.Function("no_such_kernel"); err == nil {
		t.Fatal("found a kernel that does not exist")
	}
	f, err := m.Function("fill_pattern")
	must(t, err)
	p, err := d.Alloc(1000)
	must(t, err)
	defer d.Free(p)
	must(t, f.Launch([3]uint32{2, 1, 1}, [3]uint32{64, 1, 1}, 0, nil, p, uint64(1000), uint32(42)))
	got := make([]byte, 1000)
	must(t, d.MemcpyDtoH(got, p))
	want := make([]byte, 1000)
	FillPatternHost(want, 42)
	if !bytes.Equal(got, want) {
		t.Fatal("Launch with a 2x64 grid-stride grid gave the wrong bytes")
	}
}

func TestVMMSameProcess(t *testing.T) {
	d := requireGPU(t)
	g, err := d.VMMGranularity()
	skipIfNotSupported(t, err)
	must(t, err)
	t.Logf("VMM granularity %d", g)
	a, err := d.CreateShareable(g + 1)
	must(t, err)
	defer func() { must(t, a.Close()); must(t, a.Close()) }()
	if a.Size() != 2*g {
		t.Fatalf("size %d, want %d (rounded up)", a.Size(), 2*g)
	}
	fd, err := a.ExportFD()
	must(t, err)
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("exported fd flags %d, %v: want close-on-exec", fl, err)
	}
	b, err := d.ImportFD(fd, a.Size())
	unix.Close(fd)
	must(t, err)
	defer func() { must(t, b.Close()) }()
	if a.Ptr() == b.Ptr() {
		t.Fatal("import mapped at the same address: not a second mapping")
	}
	n := a.Size()
	must(t, d.FillPattern(a.Ptr(), n, 77, nil))
	sum, err := d.Checksum(b.Ptr(), n)
	must(t, err)
	host := make([]byte, n)
	FillPatternHost(host, 77)
	if want := ChecksumHost(host); sum != want {
		t.Fatalf("written via one mapping, checksum via the other: %d, want %d", sum, want)
	}
	must(t, d.MemsetD8(b.Ptr()+5, 0xEE, 3))
	got := make([]byte, 16)
	must(t, d.MemcpyDtoH(got, a.Ptr()))
	if !bytes.Equal(got[5:8], []byte{0xEE, 0xEE, 0xEE}) || got[4] != host[4] || got[8] != host[8] {
		t.Fatalf("memset via the import not seen via the export: % x", got)
	}
}

// runChildProcess re-executes the test binary in a role and returns its
// stdout; extra files become descriptors 3, 4, ... in the child.
func runChildProcess(t *testing.T, role string, extra []*os.File, args ...string) string {
	t.Helper()
	exe, err := os.Executable()
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(append([]string{role}, args...), ","))
	cmd.ExtraFiles = extra
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child %s: %v\nstderr:\n%s", role, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// runChild is the child side: roles open memory another process exported
// and print "checksum N" of its first n bytes.
func runChild(spec string) int {
	parts := strings.Split(spec, ",")
	err := func() error {
		d, err := Open(0)
		if err != nil {
			return err
		}
		defer d.Close()
		switch parts[0] {
		case "ipc-open": // ipc-open,<hex handle>,<n>
			raw, err := hex.DecodeString(parts[1])
			if err != nil || len(raw) != 64 {
				return fmt.Errorf("bad handle %q", parts[1])
			}
			n, err := strconv.ParseUint(parts[2], 10, 64)
			if err != nil {
				return err
			}
			p, err := d.IpcOpenMemHandle(IpcMemHandle(raw))
			if err != nil {
				return err
			}
			sum, err := d.Checksum(p, n)
			if err != nil {
				return err
			}
			fmt.Printf("checksum %d\n", sum)
			return d.IpcCloseMemHandle(p)
		case "vmm-import": // vmm-import,<size>; the fd is descriptor 3
			size, err := strconv.ParseUint(parts[1], 10, 64)
			if err != nil {
				return err
			}
			a, err := d.ImportFD(3, size)
			if err != nil {
				return err
			}
			unix.Close(3)
			sum, err := d.Checksum(a.Ptr(), a.Size())
			if err != nil {
				return err
			}
			fmt.Printf("checksum %d\n", sum)
			return a.Close()
		}
		return fmt.Errorf("unknown role %q", parts[0])
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", parts[0], err)
		return 1
	}
	return 0
}

func TestIPCHandleInChildProcess(t *testing.T) {
	d := requireGPU(t)
	const n = 3<<20 + 17
	p, err := d.Alloc(n)
	must(t, err)
	defer d.Free(p)
	must(t, d.FillPattern(p, n, 1234, nil))
	must(t, d.CtxSynchronize()) // the data is complete before another process looks
	h, err := d.IpcGetMemHandle(p)
	must(t, err)
	var raw [64]byte = h // the documented conversion
	t0 := time.Now()
	out := runChildProcess(t, "ipc-open", nil, hex.EncodeToString(raw[:]), strconv.Itoa(n))
	host := make([]byte, n)
	FillPatternHost(host, 1234)
	if want := fmt.Sprintf("checksum %d", ChecksumHost(host)); out != want {
		t.Fatalf("child printed %q, want %q", out, want)
	}
	t.Logf("child process (start, cuInit, context, open, checksum): %v", time.Since(t0))
}

func TestVMMFDInChildProcess(t *testing.T) {
	d := requireGPU(t)
	g, err := d.VMMGranularity()
	skipIfNotSupported(t, err)
	must(t, err)
	a, err := d.CreateShareable(g)
	must(t, err)
	defer func() { must(t, a.Close()) }()
	must(t, d.FillPattern(a.Ptr(), a.Size(), 4321, nil))
	must(t, d.CtxSynchronize())
	fd, err := a.ExportFD()
	must(t, err)
	f := os.NewFile(uintptr(fd), "vmm-export")
	defer f.Close()
	out := runChildProcess(t, "vmm-import", []*os.File{f}, strconv.FormatUint(a.Size(), 10))
	host := make([]byte, a.Size())
	FillPatternHost(host, 4321)
	if want := fmt.Sprintf("checksum %d", ChecksumHost(host)); out != want {
		t.Fatalf("child printed %q, want %q", out, want)
	}
}

func TestDoAndConcurrentGoroutines(t *testing.T) {
	d := requireGPU(t)
	sentinel := errors.New("from fn")
	if err := d.Do(func() error {
		p, err := d.Alloc(64) // the package's methods work inside Do
		if err != nil {
			return err
		}
		if err := d.Free(p); err != nil {
			return err
		}
		return sentinel
	}); !errors.Is(err, sentinel) {
		t.Fatalf("Do returned %v, want fn's error", err)
	}

	// Many goroutines, on whatever threads the scheduler picks: each call
	// must find its context current.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				n := 1000 + g*10 + i
				src := bytes.Repeat([]byte{byte(g), byte(i)}, n)
				p, err := d.Alloc(uint64(len(src)))
				if err != nil {
					errs <- err
					return
				}
				err = d.MemcpyHtoD(p, src)
				dst := make([]byte, len(src))
				if err == nil {
					err = d.MemcpyDtoH(dst, p)
				}
				if ferr := d.Free(p); err == nil {
					err = ferr
				}
				if err == nil && !bytes.Equal(src, dst) {
					err = fmt.Errorf("goroutine %d: round trip %d differs", g, i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSecondDeviceHandleClose(t *testing.T) {
	requireGPU(t) // keeps the primary context alive past d2.Close
	d2, err := Open(0)
	must(t, err)
	p, err := d2.Alloc(1 << 10)
	must(t, err)
	must(t, d2.Free(p))
	_, err = d2.Checksum(p, 0) // n = 0: nothing to do
	must(t, err)
	must(t, d2.Close())
	must(t, d2.Close())
	if _, err := d2.Alloc(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Alloc after Close: %v", err)
	}
}

func TestMeasureCopy(t *testing.T) {
	d := requireGPU(t)
	for _, k := range CopyKinds() {
		med, err := MeasureCopy(d, k, 4<<20, 5)
		must(t, err)
		if med <= 0 {
			t.Fatalf("%v: median %v", k, med)
		}
		t.Logf("%-13v 4 MiB: %8v  %.1f GB/s", k, med, float64(4<<20)/med.Seconds()/1e9)
	}
	if _, err := MeasureCopy(d, CopyKind(99), 1, 1); err == nil {
		t.Fatal("unknown copy kind accepted")
	}
}

// --- Benchmarks ------------------------------------------------------------

// BenchmarkCallOverhead compares this package's way of running a driver
// call (context bound inside the C call, on the caller's thread) with the
// rejected alternative (hand the call to a worker goroutine locked to a
// thread with the context current). See doc.go.
func BenchmarkCallOverhead(b *testing.B) {
	d := requireGPU(b)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := d.CtxSynchronize(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("worker", func(b *testing.B) {
		work := make(chan func(), 1)
		done := make(chan error, 1)
		stop := make(chan struct{})
		go d.Do(func() error {
			for {
				select {
				case fn := <-work:
					fn()
				case <-stop:
					return nil
				}
			}
		})
		defer close(stop)
		for b.Loop() {
			work <- func() { done <- d.CtxSynchronize() }
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkChecksum64MiB(b *testing.B) {
	d := requireGPU(b)
	const n = 64 << 20
	p, err := d.Alloc(n)
	must(b, err)
	defer d.Free(p)
	must(b, d.FillPattern(p, n, 1, nil))
	b.SetBytes(n)
	for b.Loop() {
		if _, err := d.Checksum(p, n); err != nil {
			b.Fatal(err)
		}
	}
}

// holdFlag maps a host word the hold kernel reads, and returns it with
// its device address and the function that sets it (releasing the held
// stream); the release also runs at cleanup, before anything that would
// wait for the held stream.
func holdFlag(t *testing.T, d *Device) (DevicePtr, func()) {
	t.Helper()
	flag := mmapShared(t, 4096)
	must(t, d.HostRegister(flag, HostRegisterPortable|HostRegisterDeviceMap))
	t.Cleanup(func() { must(t, d.HostUnregister(flag)) })
	p, err := d.HostDevicePointer(flag)
	must(t, err)
	release := func() { flag[0] = 1 }
	t.Cleanup(func() {
		release()
		d.CtxSynchronize() // the kernel has seen the word before it is unregistered
	})
	return p, release
}

// A non-blocking stream's copies complete while the legacy default
// stream is held back by the hold kernel (a blocking stream's would wait
// behind it), and the copies give the right bytes.
func TestNonBlockingStream(t *testing.T) {
	d := requireGPU(t)
	const n = 1 << 20
	in, out := mmapShared(t, n), mmapShared(t, n)
	for _, b := range [][]byte{in, out} {
		must(t, d.HostRegister(b, HostRegisterPortable))
		t.Cleanup(func() { must(t, d.HostUnregister(b)) })
	}
	FillPatternHost(in, 9)
	p, err := d.Alloc(n)
	must(t, err)
	t.Cleanup(func() { must(t, d.Free(p)) })
	s, err := d.NewNonBlockingStream()
	must(t, err)
	t.Cleanup(func() { must(t, s.Destroy()) })
	held, err := d.NewEvent()
	must(t, err)
	t.Cleanup(func() { held.Destroy() })
	copied, err := d.NewEvent()
	must(t, err)
	t.Cleanup(func() { copied.Destroy() })
	if _, err := d.Checksum(p, 1); err != nil { // loads the kernels before anything is held
		t.Fatal(err)
	}
	flag, release := holdFlag(t, d)

	must(t, d.Hold(flag, time.Minute, nil))
	must(t, held.Record(nil))
	must(t, d.MemcpyHtoDAsync(p, in, s))
	must(t, d.MemcpyDtoHAsync(out, p, s))
	must(t, copied.Record(s))
	must(t, copied.Synchronize())
	if done, err := held.Done(); err != nil || done {
		t.Fatalf("the held legacy stream is done (%v, %v): the hold kernel did not hold", done, err)
	}
	release()
	must(t, held.Synchronize())
	if !bytes.Equal(in, out) {
		t.Fatal("copies on a non-blocking stream gave the wrong bytes")
	}
}

// SetSchedule refuses values that are no schedule, and on a GPU changes
// the primary context's wait (blocking here) while the context is in
// use, keeping its other flags, after which synchronising calls still
// work.
func TestSetSchedule(t *testing.T) {
	if err := SetSchedule(0, Schedule(3)); err == nil {
		t.Fatal("schedule 3 accepted")
	}
	d := requireGPU(t)
	old, err := ScheduleOf(0)
	must(t, err)
	dev, err := cuDeviceGet(0)
	must(t, err)
	before, _, err := cuDevicePrimaryCtxGetState(dev)
	must(t, err)
	must(t, SetSchedule(0, ScheduleBlocking))
	defer func() { must(t, SetSchedule(0, old)) }()
	after, active, err := cuDevicePrimaryCtxGetState(dev)
	must(t, err)
	if !active || after != before&^scheduleMask|uint32(ScheduleBlocking) {
		t.Fatalf("flags %#x (active %v) after SetSchedule(blocking), were %#x", after, active, before)
	}
	if s, err := ScheduleOf(0); err != nil || s != ScheduleBlocking {
		t.Fatalf("ScheduleOf: %v, %v", s, err)
	}
	p, err := d.Alloc(1 << 20)
	must(t, err)
	defer d.Free(p)
	must(t, d.FillPattern(p, 1<<20, 7, nil))
	must(t, d.CtxSynchronize())
}
