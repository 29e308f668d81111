// gpu_image_sub [count=100]
//
// A device subscription of camera/image: every frame's pixels arrive as a
// view of this host's GPU pool (host memory without a GPU) and are checked
// with the verify kernel against the pattern of the frame's frame_id. One
// summary line after count frames; exit status 1 on a bad byte.
#include <rgaps/gpu.hpp>

#include "image_check.hpp"
#include "rgaps_gpu_examples/cuda_lite.hpp"

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  ImageCheck check{"gpu_image_sub", frames::Args(argc, argv).at(0, 100)};
  auto node = rclcpp::Node::make_shared("gpu_image_sub");
  cuda_lite::Driver::get();  // CUDA and the kernels are set up before the first frame, not while frames queue
  auto sub = rgaps::create_device_subscription<frames::Image>(
    node, frames::kTopic, frames::qos(), [&check](const frames::Image & meta, rgaps::DeviceView v) {
      check.add(meta, v.size(), cuda_lite::pattern_verify(v.ptr(), v.size(), frames::seq_of(meta), v.on_device(), v.device()),
      v.on_device());
    });
  rclcpp::spin(node);
  rclcpp::shutdown();
  return check.summary();
}
