// cuda_lite.hpp: the few CUDA driver calls the examples need, found at run
// time with dlopen("libcuda.so.1") (no CUDA headers, no nvcc, no link-time
// dependency), and two hand-written PTX kernels:
//
//   fill(u8 *p, u64 n, u32 seq)               p[i] = (i*7 + seq) & 255
//   verify(const u8 *p, u64 n, u32 seq, u64 *bad)   counts the bytes that differ
//
// pattern_fill / pattern_verify run them on the GPU when the memory is
// device memory, else the same loops on the CPU (the host-memory fallback
// of rmw_rgaps on a machine without a GPU). Header-only, C++17, no ROS.
#ifndef RGAPS_GPU_EXAMPLES__CUDA_LITE_HPP_
#define RGAPS_GPU_EXAMPLES__CUDA_LITE_HPP_

#include <dlfcn.h>

#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

namespace cuda_lite {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUstream = void *;

// The kernels (PTX ISA 7.0, sm_52 and later: the driver JIT-compiles them).
inline const char * kPtx = R"PTX(
.version 7.0
.target sm_52
.address_size 64

.visible .entry fill(.param .u64 fill_p, .param .u64 fill_n, .param .u32 fill_seq)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [fill_p];
  ld.param.u64 %rd2, [fill_n];
  ld.param.u32 %r1, [fill_seq];
  cvta.to.global.u64 %rd1, %rd1;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  cvt.u64.u32 %rd4, %r4;
  mad.wide.u32 %rd3, %r2, %r3, %rd4;
  mov.u32 %r5, %nctaid.x;
  mul.wide.u32 %rd5, %r5, %r3;
FILL_LOOP:
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra FILL_DONE;
  cvt.u32.u64 %r6, %rd3;
  mad.lo.u32 %r7, %r6, 7, %r1;
  add.u64 %rd6, %rd1, %rd3;
  st.global.u8 [%rd6], %r7;
  add.u64 %rd3, %rd3, %rd5;
  bra FILL_LOOP;
FILL_DONE:
  ret;
}

.visible .entry verify(.param .u64 ver_p, .param .u64 ver_n, .param .u32 ver_seq, .param .u64 ver_bad)
{
  .reg .pred %p<3>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [ver_p];
  ld.param.u64 %rd2, [ver_n];
  ld.param.u32 %r1, [ver_seq];
  ld.param.u64 %rd7, [ver_bad];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd7, %rd7;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  cvt.u64.u32 %rd4, %r4;
  mad.wide.u32 %rd3, %r2, %r3, %rd4;
  mov.u32 %r5, %nctaid.x;
  mul.wide.u32 %rd5, %r5, %r3;
  mov.u64 %rd8, 0;
VER_LOOP:
  setp.ge.u64 %p1, %rd3, %rd2;
  @%p1 bra VER_END;
  cvt.u32.u64 %r6, %rd3;
  mad.lo.u32 %r7, %r6, 7, %r1;
  and.b32 %r7, %r7, 255;
  add.u64 %rd6, %rd1, %rd3;
  ld.global.u8 %r8, [%rd6];
  setp.ne.u32 %p2, %r8, %r7;
  @%p2 add.u64 %rd8, %rd8, 1;
  add.u64 %rd3, %rd3, %rd5;
  bra VER_LOOP;
VER_END:
  setp.eq.u64 %p1, %rd8, 0;
  @%p1 bra VER_DONE;
  atom.global.add.u64 %rd9, [%rd7], %rd8;
VER_DONE:
  ret;
}
)PTX";

// Driver is the loaded libcuda.so.1 with device `device`'s primary context
// current on the calling thread (the context rmw_rgaps's pools live in).
class Driver {
public:
  // get loads the driver once; ok() says whether it worked, why() why not.
  static Driver & get(int device = 0)
  {
    static Driver d(device);
    d.make_current();
    return d;
  }
  bool ok() const {return ok_;}
  const std::string & why() const {return why_;}
  CUstream stream() const {return stream_;}

  void fill(void * p, uint64_t n, uint32_t seq, CUstream s)
  {
    CUdeviceptr dp = reinterpret_cast<CUdeviceptr>(p);
    void * args[] = {&dp, &n, &seq};
    launch(fill_, n, s, args);
  }
  uint64_t verify(const void * p, uint64_t n, uint32_t seq)
  {
    std::lock_guard<std::mutex> g(mu_);
    uint64_t zero = 0, bad = 0;
    check(memcpy_htod_(bad_, &zero, sizeof zero), "cuMemcpyHtoD");
    CUdeviceptr dp = reinterpret_cast<CUdeviceptr>(p);
    void * args[] = {&dp, &n, &seq, &bad_};
    launch(verify_, n, stream_, args);
    check(stream_sync_(stream_), "cuStreamSynchronize");
    check(memcpy_dtoh_(&bad, bad_, sizeof bad), "cuMemcpyDtoH");
    return bad;
  }
  void * alloc(uint64_t n)
  {
    CUdeviceptr p = 0;
    check(mem_alloc_(&p, n), "cuMemAlloc");
    return reinterpret_cast<void *>(p);
  }
  void free_device(void * p) {if (p) {mem_free_(reinterpret_cast<CUdeviceptr>(p));}}
  // copy_htod copies synchronously (what a subscriber of a CPU message does).
  void copy_htod(void * dst, const void * src, uint64_t n)
  {
    check(memcpy_htod_(reinterpret_cast<CUdeviceptr>(dst), src, n), "cuMemcpyHtoD");
  }
  void sync(CUstream s) {check(stream_sync_(s), "cuStreamSynchronize");}

private:
  template<class F>
  bool sym(F & f, const char * name)
  {
    f = reinterpret_cast<F>(dlsym(lib_, name));
    if (!f) {why_ = std::string("libcuda.so.1 has no ") + name;}
    return f != nullptr;
  }

  explicit Driver(int device)
  {
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      why_ = "no CUDA driver (libcuda.so.1)";
      return;
    }
    bool all = sym(init_, "cuInit") && sym(device_get_, "cuDeviceGet") &&
      sym(retain_, "cuDevicePrimaryCtxRetain") && sym(set_current_, "cuCtxSetCurrent") &&
      sym(module_load_, "cuModuleLoadData") && sym(get_function_, "cuModuleGetFunction") &&
      sym(launch_, "cuLaunchKernel") && sym(stream_create_, "cuStreamCreate") &&
      sym(stream_sync_, "cuStreamSynchronize") && sym(mem_alloc_, "cuMemAlloc_v2") &&
      sym(mem_free_, "cuMemFree_v2") && sym(memcpy_htod_, "cuMemcpyHtoD_v2") &&
      sym(memcpy_dtoh_, "cuMemcpyDtoH_v2") && sym(error_string_, "cuGetErrorString");
    if (!all) {return;}
    int dev = 0;
    void * module = nullptr;
    if (init_(0) != 0 || device_get_(&dev, device) != 0) {
      why_ = "no CUDA device " + std::to_string(device);
      return;
    }
    check(retain_(&ctx_, dev), "cuDevicePrimaryCtxRetain");
    make_current();
    check(module_load_(&module, kPtx), "cuModuleLoadData (the PTX kernels)");
    check(get_function_(&fill_, module, "fill"), "cuModuleGetFunction fill");
    check(get_function_(&verify_, module, "verify"), "cuModuleGetFunction verify");
    check(stream_create_(&stream_, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
    check(mem_alloc_(&bad_, sizeof(uint64_t)), "cuMemAlloc");
    ok_ = true;
  }
  void make_current() {if (ctx_) {set_current_(ctx_);}}

  void launch(void * f, uint64_t n, CUstream s, void ** args)
  {
    if (!ok_) {throw std::runtime_error("cuda_lite: " + why_);}
    unsigned threads = 256;
    uint64_t blocks = (n + threads - 1) / threads;
    unsigned grid = static_cast<unsigned>(blocks < 8192 ? (blocks ? blocks : 1) : 8192);
    check(launch_(f, grid, 1, 1, threads, 1, 1, 0, s, args, nullptr), "cuLaunchKernel");
  }
  void check(CUresult rc, const char * what)
  {
    if (rc == 0) {return;}
    const char * s = nullptr;
    if (error_string_) {error_string_(rc, &s);}
    throw std::runtime_error(std::string("cuda_lite: ") + what + ": " + (s ? s : std::to_string(rc)));
  }

  void * lib_ = nullptr;
  bool ok_ = false;
  std::string why_;
  std::mutex mu_;
  void * ctx_ = nullptr;
  void * fill_ = nullptr;
  void * verify_ = nullptr;
  CUstream stream_ = nullptr;
  CUdeviceptr bad_ = 0;
  CUresult (*init_)(unsigned) = nullptr;
  CUresult (*device_get_)(int *, int) = nullptr;
  CUresult (*retain_)(void **, int) = nullptr;
  CUresult (*set_current_)(void *) = nullptr;
  CUresult (*module_load_)(void **, const void *) = nullptr;
  CUresult (*get_function_)(void **, void *, const char *) = nullptr;
  CUresult (*launch_)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
    CUstream, void **, void **) = nullptr;
  CUresult (*stream_create_)(CUstream *, unsigned) = nullptr;
  CUresult (*stream_sync_)(CUstream) = nullptr;
  CUresult (*mem_alloc_)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*mem_free_)(CUdeviceptr) = nullptr;
  CUresult (*memcpy_htod_)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*memcpy_dtoh_)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*error_string_)(CUresult, const char **) = nullptr;
};

// pattern_fill writes the pattern of seq into n bytes at p: with the fill
// kernel on stream s when on_device (asynchronously), else on the CPU.
inline void pattern_fill(void * p, uint64_t n, uint32_t seq, bool on_device, int device = 0, CUstream s = nullptr)
{
  if (on_device) {
    Driver::get(device).fill(p, n, seq, s);
    return;
  }
  auto * b = static_cast<uint8_t *>(p);
  for (uint64_t i = 0; i < n; i++) {
    b[i] = static_cast<uint8_t>(i * 7 + seq);
  }
}

// pattern_verify counts the bytes of p that differ from seq's pattern:
// verify kernel when on_device (synchronous), else the CPU.
inline uint64_t pattern_verify(const void * p, uint64_t n, uint32_t seq, bool on_device, int device = 0)
{
  if (on_device) {
    return Driver::get(device).verify(p, n, seq);
  }
  auto * b = static_cast<const uint8_t *>(p);
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; i++) {
    bad += b[i] != static_cast<uint8_t>(i * 7 + seq);
  }
  return bad;
}

}  // namespace cuda_lite

#endif  // RGAPS_GPU_EXAMPLES__CUDA_LITE_HPP_
