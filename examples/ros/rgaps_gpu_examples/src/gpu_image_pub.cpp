// gpu_image_pub [count=100] [bytes=4M] [rate=30] [subscribers=1]
//
// Publishes count sensor_msgs/Image frames (rgba8) on camera/image whose
// pixels are written by the fill kernel straight into device loans of the
// topic's GPU pool (host memory without a GPU), after waiting for the given
// number of matched subscriptions. Needs RMW_IMPLEMENTATION=rmw_rgaps.
#include <chrono>
#include <cstdio>
#include <thread>

#include <rgaps/gpu.hpp>

#include "rgaps_gpu_examples/cuda_lite.hpp"
#include "rgaps_gpu_examples/frames.hpp"

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  frames::Args args(argc, argv);
  const uint64_t count = args.at(0, 100), bytes = args.at(1, 4 << 20), rate = args.at(2, 30), want = args.at(3, 1);
  auto node = rclcpp::Node::make_shared("gpu_image_pub");
  auto pub = node->create_publisher<frames::Image>(frames::kTopic, frames::qos());
  while (rclcpp::ok() && pub->get_subscription_count() < want) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  rclcpp::WallRate r(static_cast<double>(rate ? rate : 1));
  bool on_device = false;
  uint64_t sent = 0;
  for (; sent < count && rclcpp::ok(); sent++) {
    rgaps::DeviceLoan loan = rgaps::borrow_device(*pub, bytes);
    on_device = loan.on_device();
    cuda_lite::CUstream stream = on_device ? cuda_lite::Driver::get(loan.device()).stream() : nullptr;
    cuda_lite::pattern_fill(loan.data(), bytes, static_cast<uint32_t>(sent), on_device, loan.device(), stream);
    frames::Image meta;
    frames::set_meta(meta, bytes, static_cast<uint32_t>(sent), node->now());
    // No synchronisation here: publish waits for the fill on that stream.
    rgaps::publish(*pub, meta, std::move(loan), stream);
    r.sleep();
  }
  std::printf("gpu_image_pub: frames=%llu bytes=%llu on_device=%d\n", (unsigned long long)sent,
    (unsigned long long)bytes, on_device);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let reliable subscribers take the last frames
  rclcpp::shutdown();
  return 0;
}
