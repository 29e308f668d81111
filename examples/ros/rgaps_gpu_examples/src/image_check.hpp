// image_check.hpp: the count-and-summary loop of gpu_image_sub and
// cpu_image_sub (one summary line, exit after count frames).
#ifndef IMAGE_CHECK_HPP_
#define IMAGE_CHECK_HPP_

#include <cstdio>

#include "rgaps_gpu_examples/frames.hpp"

struct ImageCheck {
  const char * name;
  uint64_t count;
  uint64_t frames = 0, bad = 0;
  bool on_device = false;

  // add records one frame's check (bytes missing from the size the meta
  // says count as bad); shuts ROS down after count frames.
  void add(const frames::Image & m, uint64_t size, uint64_t bad_bytes, bool dev)
  {
    uint64_t want = uint64_t(m.height) * m.step;
    bad += bad_bytes + (want > size ? want - size : size - want);
    on_device = on_device || dev;
    if (++frames >= count) {rclcpp::shutdown();}
  }
  int summary() const
  {
    std::printf("%s: frames=%llu bad_bytes=%llu on_device=%d\n", name, (unsigned long long)frames,
      (unsigned long long)bad, on_device);
    return bad == 0 && frames >= count ? 0 : 1;
  }
};

#endif  // IMAGE_CHECK_HPP_
