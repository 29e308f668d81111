// frames.hpp: what the example programs share: sensor_msgs/Image frames of
// a given size whose frame_id carries the frame's sequence number (the
// cuda_lite pattern's seq), the topic's QoS, arguments and the wall clock.
#ifndef RGAPS_GPU_EXAMPLES__FRAMES_HPP_
#define RGAPS_GPU_EXAMPLES__FRAMES_HPP_

#include <time.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <rclcpp/rclcpp.hpp>
#include <sensor_msgs/msg/image.hpp>

namespace frames {

using Image = sensor_msgs::msg::Image;

// The examples' topic and QoS: reliable, keep last 4 (RGAPS_EXAMPLES_DEPTH
// sets another depth: a check that wants every frame uses the frame count).
inline const char * kTopic = "camera/image";
inline size_t depth()
{
  const char * d = std::getenv("RGAPS_EXAMPLES_DEPTH");
  return d && std::atoi(d) > 0 ? static_cast<size_t>(std::atoi(d)) : 4;
}
inline rclcpp::QoS qos() {return rclcpp::QoS(rclcpp::KeepLast(depth())).reliable();}

// set_meta sets every field of an rgba8 frame of bytes bytes (a multiple of
// 4) but data: 1024 pixels wide when bytes is a multiple of 4 KiB, else
// one row; frame_id is seq in decimal.
inline void set_meta(Image & m, uint64_t bytes, uint32_t seq, const rclcpp::Time & stamp)
{
  if (bytes == 0 || bytes % 4 != 0) {
    throw std::invalid_argument("frame size " + std::to_string(bytes) + " is not a positive multiple of 4");
  }
  m.header.stamp = stamp;
  m.header.frame_id = std::to_string(seq);
  m.encoding = "rgba8";
  m.is_bigendian = 0;
  m.width = bytes % 4096 == 0 ? 1024 : static_cast<uint32_t>(bytes / 4);
  m.step = 4 * m.width;
  m.height = static_cast<uint32_t>(bytes / m.step);
}

// seq_of is the frame's sequence number (its frame_id).
inline uint32_t seq_of(const Image & m) {return static_cast<uint32_t>(std::strtoul(m.header.frame_id.c_str(), nullptr, 10));}

// now_ns is CLOCK_REALTIME in ns: comparable between processes.
inline int64_t now_ns()
{
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Args are the program's non-ROS arguments; at(i, def) is the i-th as a
// number (suffixes K, M, G: binary), def when absent.
struct Args {
  std::vector<std::string> v;
  Args(int argc, char ** argv) : v(rclcpp::remove_ros_arguments(argc, argv)) {}
  uint64_t at(size_t i, uint64_t def) const
  {
    if (i + 1 >= v.size()) {return def;}
    char * end = nullptr;
    uint64_t n = std::strtoull(v[i + 1].c_str(), &end, 10);
    switch (*end) {
      case 'K': case 'k': return n << 10;
      case 'M': case 'm': return n << 20;
      case 'G': case 'g': return n << 30;
    }
    return n;
  }
  std::string str(size_t i, const std::string & def) const {return i + 1 < v.size() ? v[i + 1] : def;}
};

}  // namespace frames

#endif  // RGAPS_GPU_EXAMPLES__FRAMES_HPP_
