package main

import (
	"os"

	benchros "github.com/rmw-rgaps/rmw_rgaps/bench/ros"
)

// runBenchROS is `rgaps-bench ros [flags]`: the end-to-end latency through
// ROS 2 (rclcpp on rmw_rgaps and rmw_cyclonedds_cpp, and the Go API);
// Markdown on stdout. ^C stops it cleanly.
func runBenchROS(args []string) error {
	ctx, stop := signalContext()
	defer stop()
	return benchros.Command(ctx, args, os.Stdout, os.Stderr)
}
