// rgaps/gpu.hpp: GPU-loaned messages from rclcpp nodes on rmw_rgaps.
//
//   auto pub = node->create_publisher<sensor_msgs::msg::Image>("camera/image", qos);
//   rgaps::DeviceLoan loan = rgaps::borrow_device(*pub, bytes);   // the topic's GPU pool
//   render<<<grid, block, 0, stream>>>(static_cast<uint8_t *>(loan.data()));
//   sensor_msgs::msg::Image meta;  meta.height = h;  ...             // every field but data
//   rgaps::publish(*pub, meta, std::move(loan), stream);              // the loan becomes `data`
//
//   auto sub = rgaps::create_device_subscription<sensor_msgs::msg::Image>(node, "camera/image", qos,
//     [](const sensor_msgs::msg::Image & meta, rgaps::DeviceView data) { infer(data.ptr(), data.size()); });
//
// The device field is the message's top-level uint8[] field named "data"
// (or its only one), unless a field name is given. CPU subscribers of the
// same topic receive ordinary messages with the field filled in. Without a
// GPU the same code runs on host memory (DeviceLoan::on_device() false).
// The C contract underneath: rgaps/gpu.h; docs/ARCHITECTURE.md §3.12.
//
// Header-only; needs rclcpp and RMW_IMPLEMENTATION=rmw_rgaps at run time
// (Error otherwise). Version: RGAPS_GPU_ABI_VERSION.
#ifndef RGAPS_GPU_HPP_
#define RGAPS_GPU_HPP_

#include <atomic>
#include <memory>
#include <string>
#include <utility>

#include <rcl/publisher.h>
#include <rcl/subscription.h>
#include <rclcpp/rclcpp.hpp>

#include "rgaps/gpu_core.hpp"

namespace rgaps {

namespace detail {
template<class H>
inline const void * ours(const H * h, const char * what)
{
  if (h == nullptr || h->implementation_identifier == nullptr ||
    std::strcmp(h->implementation_identifier, "rmw_rgaps") != 0)
  {
    throw Error(std::string("rgaps: the ") + what + " is not on rmw_rgaps (RMW_IMPLEMENTATION=rmw_rgaps)", 12);
  }
  return h;
}
}  // namespace detail

// The rmw handle under an rclcpp publisher or subscription.
template<class MsgT>
const void * rmw_handle(rclcpp::Publisher<MsgT> & pub)
{
  return detail::ours(rcl_publisher_get_rmw_handle(pub.get_publisher_handle().get()), "publisher");
}
inline const void * rmw_handle(rclcpp::SubscriptionBase & sub)
{
  return detail::ours(rcl_subscription_get_rmw_handle(sub.get_subscription_handle().get()), "subscription");
}

// borrow_device lends bytes of the publisher's topic pool.
template<class MsgT>
DeviceLoan borrow_device(rclcpp::Publisher<MsgT> & pub, uint64_t bytes)
{
  return DeviceLoan(rmw_handle(pub), bytes, pub.get_publisher_handle());
}

// publish publishes meta with its device field replaced by the loan. stream:
// the cudaStream_t / CUstream the writes into the loan were queued on
// (nullptr: the legacy default stream; RGAPS_GPU_SYNC_CONTEXT: all of the
// process's device work). Subscribers never see the message before those
// writes completed; the call returns once it is queued.
template<class MsgT>
void publish(
  rclcpp::Publisher<MsgT> & pub, const MsgT & meta, DeviceLoan && loan, void * stream = nullptr,
  const char * field = nullptr)
{
  DeviceLoan l(std::move(loan));
  (void)rmw_handle(pub);
  l.publish_loan(&meta, stream, field);
}

// create_device_subscription creates a subscription whose callback gets the
// message's other fields and a DeviceView of its device field (device
// memory of this host's GPU pool: one copy per host, none per subscriber).
// callback: void(const MsgT & meta, rgaps::DeviceView data); the view may
// be moved out to keep the block past the callback.
template<class MsgT, class NodeT, class CallbackT>
typename rclcpp::Subscription<MsgT>::SharedPtr create_device_subscription(
  NodeT && node, const std::string & topic, const rclcpp::QoS & qos, CallbackT && callback,
  const char * field = nullptr,
  const rclcpp::SubscriptionOptions & options = rclcpp::SubscriptionOptions())
{
  // The rmw handle, once the subscription is a device subscription, and
  // rcl's handle, which every view holds: a view kept past the
  // subscription keeps the rmw subscription alive until it is released.
  struct State {
    std::atomic<const void *> rmw{nullptr};
    std::shared_ptr<const void> rcl;
  };
  auto state = std::make_shared<State>();
  auto sub = node->template create_subscription<MsgT>(
    topic, qos,
    [state, cb = std::forward<CallbackT>(callback)](std::unique_ptr<MsgT> msg) {
      const void * h = state->rmw.load(std::memory_order_acquire);
      if (h == nullptr) {
        return;  // taken before it became a device subscription: not a ticket
      }
      DeviceView view(h, msg.get(), state->rcl);
      cb(static_cast<const MsgT &>(*msg), std::move(view));
    },
    options);
  const void * h = rmw_handle(*sub);
  make_device_subscription(h, field);
  state->rcl = sub->get_subscription_handle();
  state->rmw.store(h, std::memory_order_release);
  return sub;
}

}  // namespace rgaps

#endif  // RGAPS_GPU_HPP_
