// ros_bench: the processes of `rgaps-bench ros` (bench/ros), which drives
// them over stdin/stdout lines. Times are CLOCK_REALTIME ns.
//
//   ros_bench pub MODE SUBSCRIBERS [TOPIC]
//     prints "ready" once SUBSCRIBERS subscriptions matched; then per stdin
//     line "round SIZE SEQ" publishes one sensor_msgs/Image of SIZE bytes
//     with seq's pattern and prints "sent SEQ T0 T1 ON_DEVICE": T0 right
//     before the publish call, T1 right after it.
//       device: the pattern is written by the fill kernel into an
//         rgaps::borrow_device loan and synchronised (already there, as a
//         camera's frame would be); T0 is taken before rgaps::publish.
//       copy: the pattern is already in the message's host memory (an
//         ordinary message); T0 is taken before pub->publish(msg).
//   ros_bench sub MODE [TOPIC]
//     prints "ready", then per message "recv SEQ T2 BAD_BYTES ON_DEVICE":
//       device: rgaps::create_device_subscription; T2 is taken when the
//         callback holds the view (a device pointer to the whole data).
//       copy: an ordinary subscription; the callback copies the data to
//         this process's own device memory (cuMemcpyHtoD, synchronous: the
//         per-subscriber copy of the thesis' baseline; memcpy to its own
//         buffer without a GPU); T2 is taken after the copy.
//     The check (verify kernel or CPU) comes after T2. Exits at stdin's end.
// Errors: a line "error MESSAGE" on stdout, exit status 1.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <rclcpp/experimental/executors/events_executor/events_executor.hpp>
#include <rgaps/gpu.hpp>

#include "rgaps_gpu_examples/cuda_lite.hpp"
#include "rgaps_gpu_examples/frames.hpp"

namespace {

const char * kBenchTopic = "rgaps_bench/frames";

void say(const std::string & line)
{
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

int publisher(rclcpp::Node::SharedPtr node, bool device, uint64_t want, const std::string & topic)
{
  auto pub = node->create_publisher<frames::Image>(topic, frames::qos());
  while (rclcpp::ok() && pub->get_subscription_count() < want) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  say("ready");
  frames::Image msg;  // copy mode: reused, so the data is in host memory before T0
  std::string op;
  uint64_t size = 0;
  uint32_t seq = 0;
  while (std::cin >> op >> size >> seq && op == "round") {
    int64_t t0, t1;
    bool on_device = false;
    if (device) {
      rgaps::DeviceLoan loan = rgaps::borrow_device(*pub, size);
      on_device = loan.on_device();
      cuda_lite::CUstream s = nullptr;
      if (on_device) {
        auto & cu = cuda_lite::Driver::get(loan.device());
        s = cu.stream();
        cu.fill(loan.data(), size, seq, s);
        cu.sync(s);
      } else {
        cuda_lite::pattern_fill(loan.data(), size, seq, false);
      }
      frames::set_meta(msg, size, seq, node->now());
      t0 = frames::now_ns();
      rgaps::publish(*pub, msg, std::move(loan), s);
      t1 = frames::now_ns();
    } else {
      msg.data.resize(size);
      cuda_lite::pattern_fill(msg.data.data(), size, seq, false);
      frames::set_meta(msg, size, seq, node->now());
      t0 = frames::now_ns();
      pub->publish(msg);
      t1 = frames::now_ns();
    }
    say("sent " + std::to_string(seq) + " " + std::to_string(t0) + " " + std::to_string(t1) + " " +
      std::to_string(on_device));
  }
  return 0;
}

// Copier is a copy-mode subscriber's own device memory (host memory
// without a GPU), grown to the largest message.
struct Copier {
  cuda_lite::Driver & cu = cuda_lite::Driver::get();
  void * dev = nullptr;
  std::vector<uint8_t> host;
  uint64_t cap = 0;

  void * copy(const std::vector<uint8_t> & d)
  {
    if (!cu.ok()) {
      host.assign(d.begin(), d.end());
      return host.data();
    }
    if (d.size() > cap) {
      cu.free_device(dev);
      dev = cu.alloc(d.size());
      cap = d.size();
    }
    cu.copy_htod(dev, d.data(), d.size());
    return dev;
  }
};

// spin_node runs the node with the executor ROS_BENCH_EXECUTOR names:
// "events" (rclcpp's EventsExecutor, woken by the rmw's new-message
// callbacks), else the SingleThreadedExecutor of rclcpp::spin.
void spin_node(rclcpp::Node::SharedPtr node)
{
  const char * e = std::getenv("ROS_BENCH_EXECUTOR");
  if (e != nullptr && std::string(e) == "events") {
    rclcpp::experimental::executors::EventsExecutor ex;
    ex.add_node(node);
    ex.spin();
    return;
  }
  rclcpp::spin(node);
}

void report(uint32_t seq, int64_t t2, uint64_t bad, bool on_device)
{
  say("recv " + std::to_string(seq) + " " + std::to_string(t2) + " " + std::to_string(bad) + " " +
    std::to_string(on_device));
}

int subscriber(rclcpp::Node::SharedPtr node, bool device, const std::string & topic)
{
  rclcpp::SubscriptionBase::SharedPtr sub;
  Copier copier;
  if (device) {
    sub = rgaps::create_device_subscription<frames::Image>(
      node, topic, frames::qos(), [](const frames::Image & meta, rgaps::DeviceView v) {
        int64_t t2 = frames::now_ns();
        uint32_t seq = frames::seq_of(meta);
        report(seq, t2, cuda_lite::pattern_verify(v.ptr(), v.size(), seq, v.on_device(), v.device()), v.on_device());
      });
  } else {
    sub = node->create_subscription<frames::Image>(
      topic, frames::qos(), [&copier](const frames::Image & m) {
        void * p = copier.copy(m.data);
        int64_t t2 = frames::now_ns();
        uint32_t seq = frames::seq_of(m);
        report(seq, t2, cuda_lite::pattern_verify(p, m.data.size(), seq, copier.cu.ok()), copier.cu.ok());
      });
  }
  say("ready");
  std::thread([] {
    std::string line;
    while (std::getline(std::cin, line)) {}
    rclcpp::shutdown();
  }).detach();
  spin_node(node);
  return 0;
}

}  // namespace

int main(int argc, char ** argv)
{
  rclcpp::init(argc, argv);
  frames::Args args(argc, argv);
  const std::string role = args.str(0, ""), mode = args.str(1, "");
  if ((role != "pub" && role != "sub") || (mode != "device" && mode != "copy")) {
    std::fprintf(stderr, "usage: ros_bench pub device|copy SUBSCRIBERS [TOPIC] | ros_bench sub device|copy [TOPIC]\n");
    return 2;
  }
  int rc = 1;
  try {
    auto node = rclcpp::Node::make_shared("ros_bench_" + role);
    if (role == "pub") {
      rc = publisher(node, mode == "device", args.at(2, 1), args.str(3, kBenchTopic));
    } else {
      rc = subscriber(node, mode == "device", args.str(2, kBenchTopic));
    }
  } catch (const std::exception & e) {
    say(std::string("error ") + e.what());
  }
  if (rclcpp::ok()) {rclcpp::shutdown();}
  return rc;
}
