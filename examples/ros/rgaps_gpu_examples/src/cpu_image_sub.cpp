// cpu_image_sub [count=100]
//
// An ordinary subscription of camera/image (what any CPU tool sees): the
// whole message in host memory, checked on the CPU. Works on any rmw.
#include "image_check.hpp"
#include "rgaps_gpu_examples/cuda_lite.hpp"

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  ImageCheck check{"cpu_image_sub", frames::Args(argc, argv).at(0, 100)};
  auto node = rclcpp::Node::make_shared("cpu_image_sub");
  auto sub = node->create_subscription<frames::Image>(
    frames::kTopic, frames::qos(), [&check](const frames::Image & m) {
      check.add(m, m.data.size(), cuda_lite::pattern_verify(m.data.data(), m.data.size(), frames::seq_of(m), false), false);
    });
  rclcpp::spin(node);
  rclcpp::shutdown();
  return check.summary();
}
