// rgaps/gpu_core.hpp: the C++ layer of GPU-loaned messages over rmw handles
// (no ROS 2 headers needed): the entry points of librmw_rgaps.so
// (rgaps/gpu.h) found at run time, and DeviceLoan / DeviceView, which give
// their block back when they go out of scope. rgaps/gpu.hpp builds the
// rclcpp API on this; a program that holds rmw handles itself (rcl, a test
// harness) can use it directly.
//
// Header-only, C++17. Thread safe. Version: RGAPS_GPU_ABI_VERSION.
#ifndef RGAPS_GPU_CORE_HPP_
#define RGAPS_GPU_CORE_HPP_

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "rgaps/gpu.h"

namespace rgaps {

// Error is thrown by every call that fails: what() says why (the rmw's
// message), code() is the rmw_ret_t.
class Error : public std::runtime_error {
public:
  Error(const std::string & what, int32_t code) : std::runtime_error(what), code_(code) {}
  int32_t code() const noexcept { return code_; }

private:
  int32_t code_;
};

// Api is the set of entry points of the loaded librmw_rgaps.so.
struct Api {
  uint32_t (*abi_version)();
  int32_t (*borrow)(const void *, uint64_t, rgaps_gpu_loan_v1 *);
  int32_t (*publish)(const void *, const void *, const char *, rgaps_gpu_loan_v1 *, void *);
  int32_t (*discard)(const void *, rgaps_gpu_loan_v1 *);
  int32_t (*set_device)(const void *, const char *);
  int32_t (*claim_message)(const void *, void *, rgaps_gpu_view_v1 *);
  int32_t (*claim)(const void *, const uint8_t *, size_t, rgaps_gpu_view_v1 *);
  int32_t (*release)(const void *, rgaps_gpu_view_v1 *);
  const char * (*last_error)();

  // get finds the entry points once (the library must be loaded already:
  // RMW_IMPLEMENTATION=rmw_rgaps and a node created). Throws Error when
  // it is not loaded or too old.
  static const Api & get()
  {
    static const Api api = load();
    if (api.abi_version == nullptr) {
      throw Error(
              "rgaps: librmw_rgaps.so is not loaded in this process "
              "(run with RMW_IMPLEMENTATION=rmw_rgaps)", 3);
    }
    return api;
  }

  void check(int32_t rc, const char * what) const
  {
    if (rc != 0) {
      throw Error(std::string("rgaps: ") + what + ": " + last_error(), rc);
    }
  }

private:
  template<class F>
  static void sym(void * h, const char * name, F & f) {f = reinterpret_cast<F>(dlsym(h, name));}

  static Api load()
  {
    Api a{};
    void * h = dlopen("librmw_rgaps.so", RTLD_NOLOAD | RTLD_LAZY);
    if (h == nullptr) {
      return a;
    }
    sym(h, "rgaps_gpu_abi_version", a.abi_version);
    sym(h, "rgaps_gpu_publisher_borrow_v1", a.borrow);
    sym(h, "rgaps_gpu_publisher_publish_v1", a.publish);
    sym(h, "rgaps_gpu_publisher_discard_v1", a.discard);
    sym(h, "rgaps_gpu_subscription_set_device_v1", a.set_device);
    sym(h, "rgaps_gpu_subscription_claim_message_v1", a.claim_message);
    sym(h, "rgaps_gpu_subscription_claim_v1", a.claim);
    sym(h, "rgaps_gpu_subscription_release_v1", a.release);
    sym(h, "rgaps_gpu_last_error_v1", a.last_error);
    if (a.abi_version == nullptr || a.abi_version() < RGAPS_GPU_ABI_VERSION || !a.borrow || !a.publish ||
      !a.discard || !a.set_device || !a.claim_message || !a.claim || !a.release || !a.last_error)
    {
      a.abi_version = nullptr;
    }
    return a;  // the handle is kept: the rmw library is never unloaded
  }
};

// DeviceLoan is a block of a topic's pool lent to a publisher: device
// memory when the host has a GPU (on_device()), else host memory. Publish
// it with publish_loan (or rgaps::publish), or let it go out of scope to
// give it back.
class DeviceLoan {
public:
  DeviceLoan() = default;
  // keep (optional) is held as long as the loan: what keeps the rmw
  // publisher alive (gpu.hpp passes rclcpp's publisher handle).
  DeviceLoan(const void * rmw_publisher, uint64_t bytes, std::shared_ptr<const void> keep = nullptr)
  : pub_(rmw_publisher), keep_(std::move(keep))
  {
    const Api & api = Api::get();
    api.check(api.borrow(pub_, bytes, &loan_), "borrowing a device block");
  }
  DeviceLoan(DeviceLoan && o) noexcept : pub_(o.pub_), keep_(std::move(o.keep_)), loan_(o.loan_) {o.pub_ = nullptr;}
  DeviceLoan & operator=(DeviceLoan && o) noexcept
  {
    if (this != &o) {
      reset();
      pub_ = o.pub_;
      keep_ = std::move(o.keep_);
      loan_ = o.loan_;
      o.pub_ = nullptr;
    }
    return *this;
  }
  DeviceLoan(const DeviceLoan &) = delete;
  DeviceLoan & operator=(const DeviceLoan &) = delete;
  ~DeviceLoan() {reset();}

  void * data() const noexcept {return pub_ ? loan_.ptr : nullptr;}
  uint64_t size() const noexcept {return pub_ ? loan_.size : 0;}
  bool on_device() const noexcept {return pub_ && (loan_.flags & RGAPS_GPU_ON_DEVICE);}
  int device() const noexcept {return loan_.device;}
  explicit operator bool() const noexcept {return pub_ != nullptr;}

  // publish_loan publishes the loan with ros_message's other fields (see
  // rgaps_gpu_publisher_publish_v1); the loan is consumed.
  void publish_loan(const void * ros_message, void * stream, const char * field = nullptr)
  {
    if (pub_ == nullptr) {
      throw Error("rgaps: publishing an empty DeviceLoan", 11);
    }
    const void * p = pub_;
    pub_ = nullptr;
    std::shared_ptr<const void> keep = std::move(keep_);
    const Api & api = Api::get();
    api.check(api.publish(p, ros_message, field, &loan_, stream), "publishing");
  }

  void reset() noexcept
  {
    if (pub_ != nullptr) {
      Api::get().discard(pub_, &loan_);
      pub_ = nullptr;
    }
    keep_.reset();
  }

private:
  const void * pub_ = nullptr;
  std::shared_ptr<const void> keep_;
  rgaps_gpu_loan_v1 loan_{};
};

// DeviceView is a received block: read-only, valid until it goes out of
// scope (or reset()); it may be moved to keep the block past a callback.
// Kernels that read it must be done before it goes (synchronise their
// stream first): the block then returns to the pool for the next message.
class DeviceView {
public:
  DeviceView() = default;
  // Claims the view of a message a device subscription took (its device
  // field holds the ticket, emptied here). keep (optional) is held as long
  // as the view: what keeps the rmw subscription alive.
  DeviceView(const void * rmw_subscription, void * ros_message, std::shared_ptr<const void> keep = nullptr)
  : sub_(rmw_subscription), keep_(std::move(keep))
  {
    const Api & api = Api::get();
    int32_t rc = api.claim_message(sub_, ros_message, &view_);
    if (rc != 0) {
      sub_ = nullptr;
      api.check(rc, "claiming the message's device block");
    }
  }
  DeviceView(DeviceView && o) noexcept : sub_(o.sub_), keep_(std::move(o.keep_)), view_(o.view_) {o.sub_ = nullptr;}
  DeviceView & operator=(DeviceView && o) noexcept
  {
    if (this != &o) {
      reset();
      sub_ = o.sub_;
      keep_ = std::move(o.keep_);
      view_ = o.view_;
      o.sub_ = nullptr;
    }
    return *this;
  }
  DeviceView(const DeviceView &) = delete;
  DeviceView & operator=(const DeviceView &) = delete;
  ~DeviceView() {reset();}

  const void * ptr() const noexcept {return sub_ ? view_.ptr : nullptr;}
  uint64_t size() const noexcept {return sub_ ? view_.size : 0;}
  bool on_device() const noexcept {return sub_ && (view_.flags & RGAPS_GPU_ON_DEVICE);}
  int device() const noexcept {return view_.device;}
  explicit operator bool() const noexcept {return sub_ != nullptr;}

  void reset() noexcept
  {
    if (sub_ != nullptr) {
      Api::get().release(sub_, &view_);
      sub_ = nullptr;
    }
    keep_.reset();
  }

private:
  const void * sub_ = nullptr;
  std::shared_ptr<const void> keep_;
  rgaps_gpu_view_v1 view_{};
};

// make_device_subscription turns an rmw subscription into a device
// subscription (field: the device field, nullptr for the default).
inline void make_device_subscription(const void * rmw_subscription, const char * field = nullptr)
{
  const Api & api = Api::get();
  api.check(api.set_device(rmw_subscription, field), "making a device subscription");
}

}  // namespace rgaps

#endif  // RGAPS_GPU_CORE_HPP_
