package cuda

/*
#cgo LDFLAGS: -ldl

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The CUDA driver API types this package uses, declared here because cuda.h
// is not installed at build time. Layouts follow NVIDIA's cuda.h and are
// checked below; handles are opaque pointers, passed to and from Go as
// uintptr_t so Go never holds a C pointer.
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUstream, *CUevent, *CUmodule, *CUfunction;
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { int type; int id; } CUmemLocation;
typedef struct {
	unsigned char compressionType;
	unsigned char gpuDirectRDMACapable;
	unsigned short usage;
	unsigned char reserved[4];
} CUmemAllocFlags;
typedef struct {
	int type;                  // CUmemAllocationType: PINNED = 1
	int requestedHandleTypes;  // CUmemAllocationHandleType: POSIX_FILE_DESCRIPTOR = 1
	CUmemLocation location;    // CUmemLocationType: DEVICE = 1; id = ordinal
	void *win32HandleMetaData;
	CUmemAllocFlags allocFlags;
} CUmemAllocationProp;
typedef struct {
	CUmemLocation location;
	int flags;                 // CUmemAccess_flags: READWRITE = 3
} CUmemAccessDesc;

_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8, "64-bit only");
_Static_assert(sizeof(CUdeviceptr) == 8, "CUdeviceptr is 64 bits");
_Static_assert(sizeof(CUipcMemHandle) == 64, "CUipcMemHandle is 64 bytes");
_Static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation is 8 bytes");
_Static_assert(sizeof(CUmemAllocFlags) == 8, "CUmemAllocFlags is 8 bytes");
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp is 32 bytes");
_Static_assert(offsetof(CUmemAllocationProp, type) == 0, "prop.type @0");
_Static_assert(offsetof(CUmemAllocationProp, requestedHandleTypes) == 4, "prop.requestedHandleTypes @4");
_Static_assert(offsetof(CUmemAllocationProp, location) == 8, "prop.location @8");
_Static_assert(offsetof(CUmemAllocationProp, win32HandleMetaData) == 16, "prop.win32HandleMetaData @16");
_Static_assert(offsetof(CUmemAllocationProp, allocFlags) == 24, "prop.allocFlags @24");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");
_Static_assert(offsetof(CUmemAccessDesc, flags) == 8, "accessDesc.flags @8");

enum {
	RG_MEM_ALLOCATION_TYPE_PINNED = 1,
	RG_MEM_HANDLE_TYPE_POSIX_FD = 1,
	RG_MEM_LOCATION_TYPE_DEVICE = 1,
	RG_MEM_ACCESS_READWRITE = 3,
	RG_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
	RG_JIT_ERROR_LOG_BUFFER = 5,
	RG_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
};

// rg_layout reports the checked sizes and offsets to Go, so a test can show
// them next to the numbers measured on the GPU machine.
static long rg_layout(int what) {
	switch (what) {
	case 0: return sizeof(CUipcMemHandle);
	case 1: return sizeof(CUmemAllocationProp);
	case 2: return offsetof(CUmemAllocationProp, requestedHandleTypes);
	case 3: return offsetof(CUmemAllocationProp, location);
	case 4: return offsetof(CUmemAllocationProp, win32HandleMetaData);
	case 5: return offsetof(CUmemAllocationProp, allocFlags);
	case 6: return sizeof(CUmemAccessDesc);
	case 7: return offsetof(CUmemAccessDesc, flags);
	}
	return -1;
}

// The symbol table: one row per entry point, with the versioned name where
// the driver has one (the unversioned names still exist and silently give
// the old interface).
#define RG_SYMBOLS(X) \
	X(cuInit, "cuInit") \
	X(cuDriverGetVersion, "cuDriverGetVersion") \
	X(cuGetErrorName, "cuGetErrorName") \
	X(cuGetErrorString, "cuGetErrorString") \
	X(cuDeviceGetCount, "cuDeviceGetCount") \
	X(cuDeviceGet, "cuDeviceGet") \
	X(cuDeviceGetName, "cuDeviceGetName") \
	X(cuDeviceTotalMem, "cuDeviceTotalMem_v2") \
	X(cuDeviceGetAttribute, "cuDeviceGetAttribute") \
	X(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId") \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") \
	X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") \
	X(cuDevicePrimaryCtxSetFlags, "cuDevicePrimaryCtxSetFlags_v2") \
	X(cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState") \
	X(cuCtxGetCurrent, "cuCtxGetCurrent") \
	X(cuCtxSetCurrent, "cuCtxSetCurrent") \
	X(cuCtxSynchronize, "cuCtxSynchronize") \
	X(cuMemGetInfo, "cuMemGetInfo_v2") \
	X(cuMemAlloc, "cuMemAlloc_v2") \
	X(cuMemFree, "cuMemFree_v2") \
	X(cuMemcpyHtoD, "cuMemcpyHtoD_v2") \
	X(cuMemcpyDtoH, "cuMemcpyDtoH_v2") \
	X(cuMemcpyDtoD, "cuMemcpyDtoD_v2") \
	X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2") \
	X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2") \
	X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2") \
	X(cuMemsetD8, "cuMemsetD8_v2") \
	X(cuMemHostRegister, "cuMemHostRegister_v2") \
	X(cuMemHostUnregister, "cuMemHostUnregister") \
	X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2") \
	X(cuIpcGetMemHandle, "cuIpcGetMemHandle") \
	X(cuIpcOpenMemHandle, "cuIpcOpenMemHandle_v2") \
	X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle") \
	X(cuStreamCreate, "cuStreamCreate") \
	X(cuStreamSynchronize, "cuStreamSynchronize") \
	X(cuStreamQuery, "cuStreamQuery") \
	X(cuStreamDestroy, "cuStreamDestroy_v2") \
	X(cuEventCreate, "cuEventCreate") \
	X(cuEventRecord, "cuEventRecord") \
	X(cuEventSynchronize, "cuEventSynchronize") \
	X(cuEventQuery, "cuEventQuery") \
	X(cuEventElapsedTime, "cuEventElapsedTime") \
	X(cuEventDestroy, "cuEventDestroy_v2") \
	X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity") \
	X(cuMemCreate, "cuMemCreate") \
	X(cuMemRelease, "cuMemRelease") \
	X(cuMemAddressReserve, "cuMemAddressReserve") \
	X(cuMemAddressFree, "cuMemAddressFree") \
	X(cuMemMap, "cuMemMap") \
	X(cuMemUnmap, "cuMemUnmap") \
	X(cuMemSetAccess, "cuMemSetAccess") \
	X(cuMemExportToShareableHandle, "cuMemExportToShareableHandle") \
	X(cuMemImportFromShareableHandle, "cuMemImportFromShareableHandle") \
	X(cuModuleLoadDataEx, "cuModuleLoadDataEx") \
	X(cuModuleUnload, "cuModuleUnload") \
	X(cuModuleGetFunction, "cuModuleGetFunction") \
	X(cuLaunchKernel, "cuLaunchKernel")

#define RG_ENUM(id, name) RG_##id,
enum { RG_SYMBOLS(RG_ENUM) RG_NSYM };
#define RG_NAME(id, name) name,
static const char *const rg_names[RG_NSYM] = { RG_SYMBOLS(RG_NAME) };

// rg_fn is written once, by rg_resolve under the Go side's sync.Once,
// before any trampoline can run; afterwards it is only read.
static void *rg_fn[RG_NSYM];

static int rg_nsym(void) { return RG_NSYM; }
static const char *rg_name(int i) { return i >= 0 && i < RG_NSYM ? rg_names[i] : "?"; }

// rg_open runs dlopen and dlerror in one C call: dlerror's state is per
// thread, and a C call never moves between OS threads, so this is the
// "lock the thread around dlerror" rule without a Go-side lock.
static uintptr_t rg_open(const char *path, char *err, size_t n) {
	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e != NULL ? e : "dlopen failed");
	}
	return (uintptr_t)h;
}

static void rg_close(uintptr_t h) { dlclose((void *)h); }

// rg_resolve looks up every symbol in h. It returns the index of the first
// one missing, or -1 when all are there; only then, and only with commit
// set, does it install them as the table the trampolines call through.
static int rg_resolve(uintptr_t h, int commit) {
	void *tab[RG_NSYM];
	for (int i = 0; i < RG_NSYM; i++) {
		tab[i] = dlsym((void *)h, rg_names[i]);
		if (tab[i] == NULL) return i;
	}
	if (commit) memcpy(rg_fn, tab, sizeof tab);
	return -1;
}

#define FN(id, args) ((CUresult(*) args) rg_fn[RG_##id])

// RG_BIND_FAILED marks a result that came from making the context current,
// not from the call itself (CUresult values are far below this bit).
#define RG_BIND_FAILED 0x40000000

// rg_bind makes ctx current on the calling thread unless it already is.
// Every trampoline that needs a context calls it first, inside the same C
// call, so the call runs with the right context whichever OS thread the
// goroutine happens to be on.
static CUresult rg_bind(uintptr_t ctx) {
	CUcontext cur = NULL;
	if (FN(cuCtxGetCurrent, (CUcontext *))(&cur) == 0 && cur == (CUcontext)ctx) return 0;
	CUresult r = FN(cuCtxSetCurrent, (CUcontext))((CUcontext)ctx);
	return r == 0 ? 0 : (r | RG_BIND_FAILED);
}

#define BIND(ctx) do { CUresult rb_ = rg_bind(ctx); if (rb_ != 0) return rb_; } while (0)

// Calls that need no context.

static CUresult rg_cuInit(void) { return FN(cuInit, (unsigned))(0); }
static CUresult rg_cuDriverGetVersion(int *v) { return FN(cuDriverGetVersion, (int *))(v); }

static const char *rg_cuGetErrorName(CUresult r) {
	const char *s = NULL;
	if (rg_fn[RG_cuGetErrorName] == NULL || FN(cuGetErrorName, (CUresult, const char **))(r, &s) != 0) return NULL;
	return s;
}

static const char *rg_cuGetErrorString(CUresult r) {
	const char *s = NULL;
	if (rg_fn[RG_cuGetErrorString] == NULL || FN(cuGetErrorString, (CUresult, const char **))(r, &s) != 0) return NULL;
	return s;
}

static CUresult rg_cuDeviceGetCount(int *n) { return FN(cuDeviceGetCount, (int *))(n); }
static CUresult rg_cuDeviceGet(CUdevice *d, int ordinal) { return FN(cuDeviceGet, (CUdevice *, int))(d, ordinal); }
static CUresult rg_cuDeviceGetName(char *s, int n, CUdevice d) { return FN(cuDeviceGetName, (char *, int, CUdevice))(s, n, d); }
static CUresult rg_cuDeviceTotalMem(size_t *n, CUdevice d) { return FN(cuDeviceTotalMem, (size_t *, CUdevice))(n, d); }
static CUresult rg_cuDeviceGetAttribute(int *v, int attr, CUdevice d) { return FN(cuDeviceGetAttribute, (int *, int, CUdevice))(v, attr, d); }
static CUresult rg_cuDeviceGetPCIBusId(char *s, int n, CUdevice d) { return FN(cuDeviceGetPCIBusId, (char *, int, CUdevice))(s, n, d); }

static CUresult rg_cuDevicePrimaryCtxRetain(uintptr_t *ctx, CUdevice d) {
	CUcontext c = NULL;
	CUresult r = FN(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))(&c, d);
	*ctx = (uintptr_t)c;
	return r;
}

static CUresult rg_cuDevicePrimaryCtxRelease(CUdevice d) { return FN(cuDevicePrimaryCtxRelease, (CUdevice))(d); }
static CUresult rg_cuDevicePrimaryCtxSetFlags(CUdevice d, unsigned int f) { return FN(cuDevicePrimaryCtxSetFlags, (CUdevice, unsigned int))(d, f); }
static CUresult rg_cuDevicePrimaryCtxGetState(CUdevice d, unsigned int *f, int *active) { return FN(cuDevicePrimaryCtxGetState, (CUdevice, unsigned int *, int *))(d, f, active); }

// Calls that run in a context.

static CUresult rg_cuCtxSynchronize(uintptr_t ctx) { BIND(ctx); return FN(cuCtxSynchronize, (void))(); }

static CUresult rg_cuMemGetInfo(uintptr_t ctx, size_t *free, size_t *total) {
	BIND(ctx);
	return FN(cuMemGetInfo, (size_t *, size_t *))(free, total);
}

static CUresult rg_cuMemAlloc(uintptr_t ctx, CUdeviceptr *p, size_t n) {
	BIND(ctx);
	return FN(cuMemAlloc, (CUdeviceptr *, size_t))(p, n);
}

static CUresult rg_cuMemFree(uintptr_t ctx, CUdeviceptr p) { BIND(ctx); return FN(cuMemFree, (CUdeviceptr))(p); }

static CUresult rg_cuMemcpyHtoD(uintptr_t ctx, CUdeviceptr dst, const void *src, size_t n) {
	BIND(ctx);
	return FN(cuMemcpyHtoD, (CUdeviceptr, const void *, size_t))(dst, src, n);
}

static CUresult rg_cuMemcpyDtoH(uintptr_t ctx, void *dst, CUdeviceptr src, size_t n) {
	BIND(ctx);
	return FN(cuMemcpyDtoH, (void *, CUdeviceptr, size_t))(dst, src, n);
}

static CUresult rg_cuMemcpyDtoD(uintptr_t ctx, CUdeviceptr dst, CUdeviceptr src, size_t n) {
	BIND(ctx);
	return FN(cuMemcpyDtoD, (CUdeviceptr, CUdeviceptr, size_t))(dst, src, n);
}

// The asynchronous copies take host addresses as integers: the driver keeps
// them past the call, so they must not be Go memory (see memory.go).
static CUresult rg_cuMemcpyHtoDAsync(uintptr_t ctx, CUdeviceptr dst, uintptr_t src, size_t n, uintptr_t s) {
	BIND(ctx);
	return FN(cuMemcpyHtoDAsync, (CUdeviceptr, const void *, size_t, CUstream))(dst, (const void *)src, n, (CUstream)s);
}

static CUresult rg_cuMemcpyDtoHAsync(uintptr_t ctx, uintptr_t dst, CUdeviceptr src, size_t n, uintptr_t s) {
	BIND(ctx);
	return FN(cuMemcpyDtoHAsync, (void *, CUdeviceptr, size_t, CUstream))((void *)dst, src, n, (CUstream)s);
}

static CUresult rg_cuMemcpyDtoDAsync(uintptr_t ctx, CUdeviceptr dst, CUdeviceptr src, size_t n, uintptr_t s) {
	BIND(ctx);
	return FN(cuMemcpyDtoDAsync, (CUdeviceptr, CUdeviceptr, size_t, CUstream))(dst, src, n, (CUstream)s);
}

static CUresult rg_cuMemsetD8(uintptr_t ctx, CUdeviceptr p, unsigned char v, size_t n) {
	BIND(ctx);
	return FN(cuMemsetD8, (CUdeviceptr, unsigned char, size_t))(p, v, n);
}

static CUresult rg_cuMemHostRegister(uintptr_t ctx, uintptr_t p, size_t n, unsigned flags) {
	BIND(ctx);
	return FN(cuMemHostRegister, (void *, size_t, unsigned))((void *)p, n, flags);
}

static CUresult rg_cuMemHostUnregister(uintptr_t ctx, uintptr_t p) {
	BIND(ctx);
	return FN(cuMemHostUnregister, (void *))((void *)p);
}

static CUresult rg_cuMemHostGetDevicePointer(uintptr_t ctx, CUdeviceptr *d, uintptr_t p) {
	BIND(ctx);
	return FN(cuMemHostGetDevicePointer, (CUdeviceptr *, void *, unsigned))(d, (void *)p, 0);
}

static CUresult rg_cuIpcGetMemHandle(uintptr_t ctx, void *h64, CUdeviceptr p) {
	BIND(ctx);
	CUipcMemHandle h;
	CUresult r = FN(cuIpcGetMemHandle, (CUipcMemHandle *, CUdeviceptr))(&h, p);
	memcpy(h64, &h, sizeof h);
	return r;
}

// The handle goes by value: the reason this package uses cgo, not purego.
static CUresult rg_cuIpcOpenMemHandle(uintptr_t ctx, CUdeviceptr *p, const void *h64, unsigned flags) {
	BIND(ctx);
	CUipcMemHandle h;
	memcpy(&h, h64, sizeof h);
	return FN(cuIpcOpenMemHandle, (CUdeviceptr *, CUipcMemHandle, unsigned))(p, h, flags);
}

static CUresult rg_cuIpcCloseMemHandle(uintptr_t ctx, CUdeviceptr p) {
	BIND(ctx);
	return FN(cuIpcCloseMemHandle, (CUdeviceptr))(p);
}

static CUresult rg_cuStreamCreate(uintptr_t ctx, uintptr_t *s, unsigned flags) {
	BIND(ctx);
	CUstream st = NULL;
	CUresult r = FN(cuStreamCreate, (CUstream *, unsigned))(&st, flags);
	*s = (uintptr_t)st;
	return r;
}

static CUresult rg_cuStreamSynchronize(uintptr_t ctx, uintptr_t s) { BIND(ctx); return FN(cuStreamSynchronize, (CUstream))((CUstream)s); }
static CUresult rg_cuStreamQuery(uintptr_t ctx, uintptr_t s) { BIND(ctx); return FN(cuStreamQuery, (CUstream))((CUstream)s); }
static CUresult rg_cuStreamDestroy(uintptr_t ctx, uintptr_t s) { BIND(ctx); return FN(cuStreamDestroy, (CUstream))((CUstream)s); }

static CUresult rg_cuEventCreate(uintptr_t ctx, uintptr_t *e, unsigned flags) {
	BIND(ctx);
	CUevent ev = NULL;
	CUresult r = FN(cuEventCreate, (CUevent *, unsigned))(&ev, flags);
	*e = (uintptr_t)ev;
	return r;
}

static CUresult rg_cuEventRecord(uintptr_t ctx, uintptr_t e, uintptr_t s) { BIND(ctx); return FN(cuEventRecord, (CUevent, CUstream))((CUevent)e, (CUstream)s); }
static CUresult rg_cuEventSynchronize(uintptr_t ctx, uintptr_t e) { BIND(ctx); return FN(cuEventSynchronize, (CUevent))((CUevent)e); }
static CUresult rg_cuEventQuery(uintptr_t ctx, uintptr_t e) { BIND(ctx); return FN(cuEventQuery, (CUevent))((CUevent)e); }
static CUresult rg_cuEventDestroy(uintptr_t ctx, uintptr_t e) { BIND(ctx); return FN(cuEventDestroy, (CUevent))((CUevent)e); }

static CUresult rg_cuEventElapsedTime(uintptr_t ctx, float *ms, uintptr_t a, uintptr_t b) {
	BIND(ctx);
	return FN(cuEventElapsedTime, (float *, CUevent, CUevent))(ms, (CUevent)a, (CUevent)b);
}

// rg_prop fills the allocation properties every VMM call here uses: pinned
// device memory on one GPU, exportable as a POSIX file descriptor.
static void rg_prop(CUmemAllocationProp *p, int ordinal) {
	memset(p, 0, sizeof *p);
	p->type = RG_MEM_ALLOCATION_TYPE_PINNED;
	p->requestedHandleTypes = RG_MEM_HANDLE_TYPE_POSIX_FD;
	p->location.type = RG_MEM_LOCATION_TYPE_DEVICE;
	p->location.id = ordinal;
}

static CUresult rg_cuMemGetAllocationGranularity(uintptr_t ctx, size_t *g, int ordinal) {
	BIND(ctx);
	CUmemAllocationProp prop;
	rg_prop(&prop, ordinal);
	return FN(cuMemGetAllocationGranularity, (size_t *, const CUmemAllocationProp *, int))(g, &prop, RG_MEM_ALLOC_GRANULARITY_MINIMUM);
}

static CUresult rg_cuMemCreate(uintptr_t ctx, CUmemGenericAllocationHandle *h, size_t n, int ordinal) {
	BIND(ctx);
	CUmemAllocationProp prop;
	rg_prop(&prop, ordinal);
	return FN(cuMemCreate, (CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long))(h, n, &prop, 0);
}

static CUresult rg_cuMemRelease(uintptr_t ctx, CUmemGenericAllocationHandle h) {
	BIND(ctx);
	return FN(cuMemRelease, (CUmemGenericAllocationHandle))(h);
}

static CUresult rg_cuMemAddressReserve(uintptr_t ctx, CUdeviceptr *p, size_t n) {
	BIND(ctx);
	return FN(cuMemAddressReserve, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long))(p, n, 0, 0, 0);
}

static CUresult rg_cuMemAddressFree(uintptr_t ctx, CUdeviceptr p, size_t n) {
	BIND(ctx);
	return FN(cuMemAddressFree, (CUdeviceptr, size_t))(p, n);
}

static CUresult rg_cuMemMap(uintptr_t ctx, CUdeviceptr p, size_t n, CUmemGenericAllocationHandle h) {
	BIND(ctx);
	return FN(cuMemMap, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))(p, n, 0, h, 0);
}

static CUresult rg_cuMemUnmap(uintptr_t ctx, CUdeviceptr p, size_t n) {
	BIND(ctx);
	return FN(cuMemUnmap, (CUdeviceptr, size_t))(p, n);
}

static CUresult rg_cuMemSetAccess(uintptr_t ctx, CUdeviceptr p, size_t n, int ordinal) {
	BIND(ctx);
	CUmemAccessDesc d;
	memset(&d, 0, sizeof d);
	d.location.type = RG_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = ordinal;
	d.flags = RG_MEM_ACCESS_READWRITE;
	return FN(cuMemSetAccess, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t))(p, n, &d, 1);
}

static CUresult rg_cuMemExportToShareableHandle(uintptr_t ctx, int *fd, CUmemGenericAllocationHandle h) {
	BIND(ctx);
	return FN(cuMemExportToShareableHandle, (void *, CUmemGenericAllocationHandle, int, unsigned long long))(fd, h, RG_MEM_HANDLE_TYPE_POSIX_FD, 0);
}

// For POSIX file descriptors the "OS handle" is the descriptor itself cast
// to a pointer-sized value, not a pointer to it.
static CUresult rg_cuMemImportFromShareableHandle(uintptr_t ctx, CUmemGenericAllocationHandle *h, int fd) {
	BIND(ctx);
	return FN(cuMemImportFromShareableHandle, (CUmemGenericAllocationHandle *, void *, int))(h, (void *)(uintptr_t)fd, RG_MEM_HANDLE_TYPE_POSIX_FD);
}

static CUresult rg_cuModuleLoadDataEx(uintptr_t ctx, uintptr_t *m, const char *image, char *log, size_t logSize) {
	BIND(ctx);
	int opts[2] = { RG_JIT_ERROR_LOG_BUFFER, RG_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[2] = { log, (void *)(uintptr_t)logSize };
	CUmodule mod = NULL;
	log[0] = 0;
	CUresult r = FN(cuModuleLoadDataEx, (CUmodule *, const void *, unsigned, int *, void **))(&mod, image, 2, opts, vals);
	log[logSize - 1] = 0;
	*m = (uintptr_t)mod;
	return r;
}

static CUresult rg_cuModuleUnload(uintptr_t ctx, uintptr_t m) { BIND(ctx); return FN(cuModuleUnload, (CUmodule))((CUmodule)m); }

static CUresult rg_cuModuleGetFunction(uintptr_t ctx, uintptr_t *f, uintptr_t m, const char *name) {
	BIND(ctx);
	CUfunction fn = NULL;
	CUresult r = FN(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))(&fn, (CUmodule)m, name);
	*f = (uintptr_t)fn;
	return r;
}

// rg_cuLaunchKernel builds the kernel-parameter array in C memory: one
// 8-byte slot per argument (4-byte arguments in the low half; the target is
// little-endian) and an array of pointers to the slots. The driver copies
// the values at launch, so both are freed on return.
static CUresult rg_cuLaunchKernel(uintptr_t ctx, uintptr_t f,
		unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		unsigned shmem, uintptr_t s, const uint64_t *vals, int n) {
	BIND(ctx);
	void **params = NULL;
	if (n > 0) {
		params = malloc((size_t)n * (sizeof(void *) + sizeof(uint64_t)));
		if (params == NULL) return 2; // CUDA_ERROR_OUT_OF_MEMORY
		uint64_t *slots = (uint64_t *)(params + n);
		for (int i = 0; i < n; i++) {
			slots[i] = vals[i];
			params[i] = &slots[i];
		}
	}
	CUresult r = FN(cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
		unsigned, CUstream, void **, void **))((CUfunction)f, gx, gy, gz, bx, by, bz, shmem, (CUstream)s, params, NULL);
	free(params);
	return r;
}
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// libraryName is the driver library: the ".1" soname every NVIDIA driver
// installs (the unversioned libcuda.so exists only with the toolkit).
const libraryName = "libcuda.so.1"

var driver struct {
	once   sync.Once
	err    error
	loaded atomic.Bool // the symbol table is installed (error names work)
}

// load opens the driver, resolves every entry point and runs cuInit, once
// per process. Every exported function calls it first and returns its error.
func load() error {
	driver.once.Do(func() { driver.err = loadDriver(libraryName) })
	return driver.err
}

func loadDriver(name string) error {
	h, err := openLibrary(name)
	if err != nil {
		return err
	}
	// The handle is never closed: the table points into the library for the
	// rest of the process.
	if i := C.rg_resolve(C.uintptr_t(h), 1); i >= 0 {
		return fmt.Errorf("CUDA driver %s lacks %s (driver too old?)", name, C.GoString(C.rg_name(i)))
	}
	driver.loaded.Store(true)
	if err := check(C.RG_cuInit, C.rg_cuInit()); err != nil {
		return fmt.Errorf("%w: no CUDA device: %w", ErrNotSupported, err)
	}
	return nil
}

// openLibrary dlopens name; failing to is the "no driver" case.
func openLibrary(name string) (uintptr, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var buf [512]C.char
	h := C.rg_open(cname, &buf[0], C.size_t(len(buf)))
	if h == 0 {
		return 0, fmt.Errorf("%w: no CUDA driver: %s", ErrNotSupported, C.GoString(&buf[0]))
	}
	return uintptr(h), nil
}

// probeLibrary opens name and checks that it has every entry point, without
// installing anything; tests use it on libraries that are not the driver.
func probeLibrary(name string) error {
	h, err := openLibrary(name)
	if err != nil {
		return err
	}
	defer C.rg_close(C.uintptr_t(h))
	if i := C.rg_resolve(C.uintptr_t(h), 0); i >= 0 {
		return fmt.Errorf("CUDA driver %s lacks %s (driver too old?)", name, C.GoString(C.rg_name(i)))
	}
	return nil
}

// symbolNames lists the entry points resolved at load, in table order.
func symbolNames() []string {
	n := int(C.rg_nsym())
	out := make([]string, n)
	for i := range out {
		out[i] = C.GoString(C.rg_name(C.int(i)))
	}
	return out
}

// structLayout reports the C struct sizes and offsets checked at compile time.
func structLayout() map[string]int {
	names := []string{
		"sizeof(CUipcMemHandle)",
		"sizeof(CUmemAllocationProp)",
		"offsetof(CUmemAllocationProp.requestedHandleTypes)",
		"offsetof(CUmemAllocationProp.location)",
		"offsetof(CUmemAllocationProp.win32HandleMetaData)",
		"offsetof(CUmemAllocationProp.allocFlags)",
		"sizeof(CUmemAccessDesc)",
		"offsetof(CUmemAccessDesc.flags)",
	}
	out := make(map[string]int, len(names))
	for i, n := range names {
		out[n] = int(C.rg_layout(C.int(i)))
	}
	return out
}

const bindFailed = C.RG_BIND_FAILED

// check turns a CUresult from the entry point sym into an error.
func check(sym C.int, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	op := C.GoString(C.rg_name(sym))
	code := int(r)
	if code&bindFailed != 0 {
		code &^= bindFailed
		op = "cuCtxSetCurrent (before " + op + ")"
	}
	return newError(op, code)
}

// errorText asks the driver for a code's name and description.
func errorText(code int) (name, desc string, ok bool) {
	if !driver.loaded.Load() {
		return "", "", false
	}
	n := C.rg_cuGetErrorName(C.CUresult(code))
	if n == nil {
		return "", "", false
	}
	name = C.GoString(n)
	if d := C.rg_cuGetErrorString(C.CUresult(code)); d != nil {
		desc = C.GoString(d)
	}
	return name, desc, true
}

// The raw calls. Each mirrors one driver entry point, takes the context it
// must run in (bound inside the same C call), and returns a Go error. They
// do no Device bookkeeping: device.go and friends do that.

func cuDriverGetVersion() (int, error) {
	var v C.int
	err := check(C.RG_cuDriverGetVersion, C.rg_cuDriverGetVersion(&v))
	return int(v), err
}

func cuDeviceGetCount() (int, error) {
	var n C.int
	err := check(C.RG_cuDeviceGetCount, C.rg_cuDeviceGetCount(&n))
	return int(n), err
}

func cuDeviceGet(ordinal int) (int32, error) {
	var d C.CUdevice
	err := check(C.RG_cuDeviceGet, C.rg_cuDeviceGet(&d, C.int(ordinal)))
	return int32(d), err
}

func cuDeviceGetName(dev int32) (string, error) {
	var buf [256]C.char
	if err := check(C.RG_cuDeviceGetName, C.rg_cuDeviceGetName(&buf[0], C.int(len(buf)), C.CUdevice(dev))); err != nil {
		return "", err
	}
	buf[len(buf)-1] = 0
	return C.GoString(&buf[0]), nil
}

func cuDeviceTotalMem(dev int32) (uint64, error) {
	var n C.size_t
	err := check(C.RG_cuDeviceTotalMem, C.rg_cuDeviceTotalMem(&n, C.CUdevice(dev)))
	return uint64(n), err
}

func cuDeviceGetAttribute(attr DeviceAttribute, dev int32) (int, error) {
	var v C.int
	err := check(C.RG_cuDeviceGetAttribute, C.rg_cuDeviceGetAttribute(&v, C.int(attr), C.CUdevice(dev)))
	return int(v), err
}

func cuDeviceGetPCIBusID(dev int32) (string, error) {
	var buf [64]C.char
	if err := check(C.RG_cuDeviceGetPCIBusId, C.rg_cuDeviceGetPCIBusId(&buf[0], C.int(len(buf)), C.CUdevice(dev))); err != nil {
		return "", err
	}
	buf[len(buf)-1] = 0
	return C.GoString(&buf[0]), nil
}

func cuDevicePrimaryCtxRetain(dev int32) (uintptr, error) {
	var ctx C.uintptr_t
	err := check(C.RG_cuDevicePrimaryCtxRetain, C.rg_cuDevicePrimaryCtxRetain(&ctx, C.CUdevice(dev)))
	return uintptr(ctx), err
}

func cuDevicePrimaryCtxGetState(dev int32) (flags uint32, active bool, err error) {
	var f C.uint
	var a C.int
	err = check(C.RG_cuDevicePrimaryCtxGetState, C.rg_cuDevicePrimaryCtxGetState(C.CUdevice(dev), &f, &a))
	return uint32(f), a != 0, err
}

func cuDevicePrimaryCtxSetFlags(dev int32, flags uint32) error {
	return check(C.RG_cuDevicePrimaryCtxSetFlags, C.rg_cuDevicePrimaryCtxSetFlags(C.CUdevice(dev), C.uint(flags)))
}

func cuDevicePrimaryCtxRelease(dev int32) error {
	return check(C.RG_cuDevicePrimaryCtxRelease, C.rg_cuDevicePrimaryCtxRelease(C.CUdevice(dev)))
}

// bind makes ctx current on the calling OS thread (for Device.Do, whose
// caller has locked the goroutine to its thread).
func bind(ctx uintptr) error {
	return check(C.RG_cuCtxSetCurrent, C.rg_bind(C.uintptr_t(ctx))&^bindFailed)
}

func cuCtxSynchronize(ctx uintptr) error {
	return check(C.RG_cuCtxSynchronize, C.rg_cuCtxSynchronize(C.uintptr_t(ctx)))
}

func cuMemGetInfo(ctx uintptr) (free, total uint64, err error) {
	var f, t C.size_t
	err = check(C.RG_cuMemGetInfo, C.rg_cuMemGetInfo(C.uintptr_t(ctx), &f, &t))
	return uint64(f), uint64(t), err
}

func cuMemAlloc(ctx uintptr, n uint64) (DevicePtr, error) {
	var p C.CUdeviceptr
	err := check(C.RG_cuMemAlloc, C.rg_cuMemAlloc(C.uintptr_t(ctx), &p, C.size_t(n)))
	return DevicePtr(p), err
}

func cuMemFree(ctx uintptr, p DevicePtr) error {
	return check(C.RG_cuMemFree, C.rg_cuMemFree(C.uintptr_t(ctx), C.CUdeviceptr(p)))
}

// cuMemcpyHtoD and cuMemcpyDtoH take Go-visible host memory for the
// duration of the call only (synchronous copies), so Go memory is allowed.
func cuMemcpyHtoD(ctx uintptr, dst DevicePtr, src unsafe.Pointer, n uint64) error {
	return check(C.RG_cuMemcpyHtoD, C.rg_cuMemcpyHtoD(C.uintptr_t(ctx), C.CUdeviceptr(dst), src, C.size_t(n)))
}

func cuMemcpyDtoH(ctx uintptr, dst unsafe.Pointer, src DevicePtr, n uint64) error {
	return check(C.RG_cuMemcpyDtoH, C.rg_cuMemcpyDtoH(C.uintptr_t(ctx), dst, C.CUdeviceptr(src), C.size_t(n)))
}

func cuMemcpyDtoD(ctx uintptr, dst, src DevicePtr, n uint64) error {
	return check(C.RG_cuMemcpyDtoD, C.rg_cuMemcpyDtoD(C.uintptr_t(ctx), C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n)))
}

func cuMemcpyHtoDAsync(ctx uintptr, dst DevicePtr, src uintptr, n uint64, s uintptr) error {
	return check(C.RG_cuMemcpyHtoDAsync, C.rg_cuMemcpyHtoDAsync(C.uintptr_t(ctx), C.CUdeviceptr(dst), C.uintptr_t(src), C.size_t(n), C.uintptr_t(s)))
}

func cuMemcpyDtoHAsync(ctx uintptr, dst uintptr, src DevicePtr, n uint64, s uintptr) error {
	return check(C.RG_cuMemcpyDtoHAsync, C.rg_cuMemcpyDtoHAsync(C.uintptr_t(ctx), C.uintptr_t(dst), C.CUdeviceptr(src), C.size_t(n), C.uintptr_t(s)))
}

func cuMemcpyDtoDAsync(ctx uintptr, dst, src DevicePtr, n uint64, s uintptr) error {
	return check(C.RG_cuMemcpyDtoDAsync, C.rg_cuMemcpyDtoDAsync(C.uintptr_t(ctx), C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), C.uintptr_t(s)))
}

func cuMemsetD8(ctx uintptr, p DevicePtr, v byte, n uint64) error {
	return check(C.RG_cuMemsetD8, C.rg_cuMemsetD8(C.uintptr_t(ctx), C.CUdeviceptr(p), C.uchar(v), C.size_t(n)))
}

func cuMemHostRegister(ctx uintptr, p uintptr, n uint64, flags HostRegisterFlags) error {
	return check(C.RG_cuMemHostRegister, C.rg_cuMemHostRegister(C.uintptr_t(ctx), C.uintptr_t(p), C.size_t(n), C.uint(flags)))
}

func cuMemHostUnregister(ctx uintptr, p uintptr) error {
	return check(C.RG_cuMemHostUnregister, C.rg_cuMemHostUnregister(C.uintptr_t(ctx), C.uintptr_t(p)))
}

func cuMemHostGetDevicePointer(ctx uintptr, p uintptr) (DevicePtr, error) {
	var d C.CUdeviceptr
	err := check(C.RG_cuMemHostGetDevicePointer, C.rg_cuMemHostGetDevicePointer(C.uintptr_t(ctx), &d, C.uintptr_t(p)))
	return DevicePtr(d), err
}

func cuIpcGetMemHandle(ctx uintptr, p DevicePtr) (IpcMemHandle, error) {
	var h IpcMemHandle
	err := check(C.RG_cuIpcGetMemHandle, C.rg_cuIpcGetMemHandle(C.uintptr_t(ctx), unsafe.Pointer(&h[0]), C.CUdeviceptr(p)))
	return h, err
}

func cuIpcOpenMemHandle(ctx uintptr, h IpcMemHandle, flags uint32) (DevicePtr, error) {
	var p C.CUdeviceptr
	err := check(C.RG_cuIpcOpenMemHandle, C.rg_cuIpcOpenMemHandle(C.uintptr_t(ctx), &p, unsafe.Pointer(&h[0]), C.uint(flags)))
	return DevicePtr(p), err
}

func cuIpcCloseMemHandle(ctx uintptr, p DevicePtr) error {
	return check(C.RG_cuIpcCloseMemHandle, C.rg_cuIpcCloseMemHandle(C.uintptr_t(ctx), C.CUdeviceptr(p)))
}

func cuStreamCreate(ctx uintptr, flags uint32) (uintptr, error) {
	var s C.uintptr_t
	err := check(C.RG_cuStreamCreate, C.rg_cuStreamCreate(C.uintptr_t(ctx), &s, C.uint(flags)))
	return uintptr(s), err
}

func cuStreamSynchronize(ctx, s uintptr) error {
	return check(C.RG_cuStreamSynchronize, C.rg_cuStreamSynchronize(C.uintptr_t(ctx), C.uintptr_t(s)))
}

func cuStreamQuery(ctx, s uintptr) error {
	return check(C.RG_cuStreamQuery, C.rg_cuStreamQuery(C.uintptr_t(ctx), C.uintptr_t(s)))
}

func cuStreamDestroy(ctx, s uintptr) error {
	return check(C.RG_cuStreamDestroy, C.rg_cuStreamDestroy(C.uintptr_t(ctx), C.uintptr_t(s)))
}

func cuEventCreate(ctx uintptr, flags uint32) (uintptr, error) {
	var e C.uintptr_t
	err := check(C.RG_cuEventCreate, C.rg_cuEventCreate(C.uintptr_t(ctx), &e, C.uint(flags)))
	return uintptr(e), err
}

func cuEventRecord(ctx, e, s uintptr) error {
	return check(C.RG_cuEventRecord, C.rg_cuEventRecord(C.uintptr_t(ctx), C.uintptr_t(e), C.uintptr_t(s)))
}

func cuEventSynchronize(ctx, e uintptr) error {
	return check(C.RG_cuEventSynchronize, C.rg_cuEventSynchronize(C.uintptr_t(ctx), C.uintptr_t(e)))
}

func cuEventQuery(ctx, e uintptr) error {
	return check(C.RG_cuEventQuery, C.rg_cuEventQuery(C.uintptr_t(ctx), C.uintptr_t(e)))
}

func cuEventDestroy(ctx, e uintptr) error {
	return check(C.RG_cuEventDestroy, C.rg_cuEventDestroy(C.uintptr_t(ctx), C.uintptr_t(e)))
}

func cuEventElapsedTime(ctx, start, end uintptr) (float32, error) {
	var ms C.float
	err := check(C.RG_cuEventElapsedTime, C.rg_cuEventElapsedTime(C.uintptr_t(ctx), &ms, C.uintptr_t(start), C.uintptr_t(end)))
	return float32(ms), err
}

func cuMemGetAllocationGranularity(ctx uintptr, ordinal int) (uint64, error) {
	var g C.size_t
	err := check(C.RG_cuMemGetAllocationGranularity, C.rg_cuMemGetAllocationGranularity(C.uintptr_t(ctx), &g, C.int(ordinal)))
	return uint64(g), err
}

func cuMemCreate(ctx uintptr, n uint64, ordinal int) (uint64, error) {
	var h C.CUmemGenericAllocationHandle
	err := check(C.RG_cuMemCreate, C.rg_cuMemCreate(C.uintptr_t(ctx), &h, C.size_t(n), C.int(ordinal)))
	return uint64(h), err
}

func cuMemRelease(ctx uintptr, h uint64) error {
	return check(C.RG_cuMemRelease, C.rg_cuMemRelease(C.uintptr_t(ctx), C.CUmemGenericAllocationHandle(h)))
}

func cuMemAddressReserve(ctx uintptr, n uint64) (DevicePtr, error) {
	var p C.CUdeviceptr
	err := check(C.RG_cuMemAddressReserve, C.rg_cuMemAddressReserve(C.uintptr_t(ctx), &p, C.size_t(n)))
	return DevicePtr(p), err
}

func cuMemAddressFree(ctx uintptr, p DevicePtr, n uint64) error {
	return check(C.RG_cuMemAddressFree, C.rg_cuMemAddressFree(C.uintptr_t(ctx), C.CUdeviceptr(p), C.size_t(n)))
}

func cuMemMap(ctx uintptr, p DevicePtr, n uint64, h uint64) error {
	return check(C.RG_cuMemMap, C.rg_cuMemMap(C.uintptr_t(ctx), C.CUdeviceptr(p), C.size_t(n), C.CUmemGenericAllocationHandle(h)))
}

func cuMemUnmap(ctx uintptr, p DevicePtr, n uint64) error {
	return check(C.RG_cuMemUnmap, C.rg_cuMemUnmap(C.uintptr_t(ctx), C.CUdeviceptr(p), C.size_t(n)))
}

func cuMemSetAccess(ctx uintptr, p DevicePtr, n uint64, ordinal int) error {
	return check(C.RG_cuMemSetAccess, C.rg_cuMemSetAccess(C.uintptr_t(ctx), C.CUdeviceptr(p), C.size_t(n), C.int(ordinal)))
}

func cuMemExportToShareableHandle(ctx uintptr, h uint64) (int, error) {
	fd := C.int(-1)
	err := check(C.RG_cuMemExportToShareableHandle, C.rg_cuMemExportToShareableHandle(C.uintptr_t(ctx), &fd, C.CUmemGenericAllocationHandle(h)))
	return int(fd), err
}

func cuMemImportFromShareableHandle(ctx uintptr, fd int) (uint64, error) {
	var h C.CUmemGenericAllocationHandle
	err := check(C.RG_cuMemImportFromShareableHandle, C.rg_cuMemImportFromShareableHandle(C.uintptr_t(ctx), &h, C.int(fd)))
	return uint64(h), err
}

// jitLogSize bounds the JIT error log kept from a failed module load.
const jitLogSize = 16 << 10

func cuModuleLoadDataEx(ctx uintptr, ptx string) (mod uintptr, log string, err error) {
	image := C.CString(ptx)
	defer C.free(unsafe.Pointer(image))
	buf := (*C.char)(C.malloc(jitLogSize))
	defer C.free(unsafe.Pointer(buf))
	var m C.uintptr_t
	err = check(C.RG_cuModuleLoadDataEx, C.rg_cuModuleLoadDataEx(C.uintptr_t(ctx), &m, image, buf, jitLogSize))
	return uintptr(m), C.GoString(buf), err
}

func cuModuleUnload(ctx, m uintptr) error {
	return check(C.RG_cuModuleUnload, C.rg_cuModuleUnload(C.uintptr_t(ctx), C.uintptr_t(m)))
}

func cuModuleGetFunction(ctx, m uintptr, name string) (uintptr, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.uintptr_t
	err := check(C.RG_cuModuleGetFunction, C.rg_cuModuleGetFunction(C.uintptr_t(ctx), &f, C.uintptr_t(m), cname))
	return uintptr(f), err
}

// cuLaunchKernel passes vals (one 8-byte slot per kernel argument) for the
// duration of the call; the C side copies them into C memory.
func cuLaunchKernel(ctx, f uintptr, grid, block [3]uint32, shmem uint32, s uintptr, vals []uint64) error {
	var p *C.uint64_t
	if len(vals) > 0 {
		p = (*C.uint64_t)(unsafe.Pointer(&vals[0]))
	}
	return check(C.RG_cuLaunchKernel, C.rg_cuLaunchKernel(C.uintptr_t(ctx), C.uintptr_t(f),
		C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]), C.uint(block[0]), C.uint(block[1]), C.uint(block[2]),
		C.uint(shmem), C.uintptr_t(s), p, C.int(len(vals))))
}
