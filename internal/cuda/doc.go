// Package cuda binds the CUDA driver API, loaded at run time: building
// rmw_rgaps needs no CUDA toolkit or driver, only libc and libdl. It owns
// every call into libcuda and the unsafe code that goes with it; other
// packages see typed Go values (Device, DevicePtr, Stream, Allocation, ...)
// and never a C pointer.
//
// It covers what the middleware needs: device discovery and description;
// device memory, copies, streams and events; page-locking host memory that
// is already mapped (shared-memory segments); legacy IPC handles; VMM
// allocations exported and imported as POSIX file descriptors; PTX modules
// and kernel launches; built-in kernels (fill_pattern and checksum, with
// CPU reference implementations, and hold, which holds a stream back
// until a host word is set, for tests of stream independence);
// non-blocking streams; and copy-bandwidth measurement for
// `rgaps-bench gpu`. It must not know about topics, pools or formats.
//
// # Loading
//
// The package uses cgo with dlopen("libcuda.so.1", RTLD_NOW|RTLD_LOCAL),
// dlsym, and small static C trampolines in the cgo preamble that call
// through the resolved function pointers. Why cgo rather than purego: cgo
// is needed anyway for libfabric and the rmw C library; a C trampoline can
// pass the 64-byte CUipcMemHandle by value to cuIpcOpenMemHandle_v2, which
// purego cannot do on Linux; and it still needs nothing CUDA at build time.
// cuda.h is not included (it is not installed): the few types used are
// declared in the preamble and their sizes and offsets checked with
// _Static_assert against NVIDIA's layout.
//
// The library is loaded once per process, on the first call that needs it
// (sync.Once): dlopen, then every entry point in the symbol table, then
// cuInit. Where the driver has a versioned entry point the table names it
// (cuMemAlloc_v2, cuMemcpyHtoD_v2, cuIpcOpenMemHandle_v2,
// cuDevicePrimaryCtxRelease_v2, ...): the unversioned symbols still exist
// and silently give the old interface. cuEventElapsedTime is deliberately
// the unversioned one: its _v2 only exists from CUDA 12.8 on. dlopen and dlerror run inside one C
// call, which cannot change OS thread in between, so dlerror's per-thread
// state is read on the right thread without a Go-side thread lock.
//
// # Errors
//
// No libcuda.so.1, or a cuInit failure (no device, no kernel module, a
// driver/library mismatch), makes every call return an error wrapping
// ErrNotSupported: "GPU not supported: no CUDA driver: libcuda.so.1: ..." or
// "GPU not supported: no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE (100):
// ...". So do Open of an ordinal that does not exist, VMM calls on a device
// without VMM or POSIX-fd export, and any CUDA_ERROR_NOT_SUPPORTED. A
// library that opens but lacks one of the entry points is a different
// error, naming the symbol: it means a broken install or a bug here, and
// must not be skipped over. Every other failed call is an *Error with the
// CUresult, the driver's name and description for it, and the entry point.
//
// # Contexts and threads
//
// A CUDA context is current per OS thread, and goroutines move between
// threads. Every trampoline that needs a context takes it as an argument and
// makes it current (cuCtxGetCurrent, and cuCtxSetCurrent only if it
// differs) before the call, inside the same C call: a C call runs on one
// thread from start to end, so the call always sees its context, whatever
// thread the goroutine is on, and callers never think about threads. The
// check costs one thread-local read in the driver per call.
//
// A dedicated worker goroutine per Device, locked to its thread with the
// context set once, was the alternative. It was not taken: every call would
// pay a hand-off to a locked thread (a futex wake, microseconds, against
// nanoseconds for the check), and one blocking call (a large synchronous
// copy, a stream synchronisation) would hold up every other goroutine's
// calls on that device. Device.Do still exists, for code that calls another
// library which uses the calling thread's current context (libfabric's CUDA
// memory registration): it locks the goroutine to its thread and makes the
// context current for the duration of fn.
//
// Open retains the device's primary context (the one the CUDA runtime
// uses); Close releases it. Contexts, and so this package's device
// pointers, streams, events and modules, are per process: only IPC handles
// and exported VMM file descriptors cross processes.
//
// # Host memory
//
// Memory the driver keeps using after a call returns (registered host
// memory, the host side of asynchronous copies) must not be Go heap memory:
// the Go runtime may free it while the driver still uses it. It is meant to
// be mmap'd shared memory. Those addresses are passed to C as integers, so
// cgo's pointer checks do not apply to them and nothing verifies it; the
// synchronous copies accept any []byte.
//
// # Kernels
//
// Kernels are PTX text JIT-compiled by the driver (cuModuleLoadDataEx with
// an error-log buffer, so a PTX error returns the compiler's message): no
// nvcc at build time either. Kernel parameters are packed into C memory
// for the launch, never Go memory.
package cuda
