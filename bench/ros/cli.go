// Package benchros is `rgaps-bench ros`: the thesis' end-to-end latency
// (Figure 4.6: from the publisher's publish call until each of N
// subscribers holds a device pointer to the complete data, averaged over
// the subscribers) measured through ROS 2 itself, with the ros_bench
// program of examples/ros/rgaps_gpu_examples, for
//
//	rgaps         rclcpp on rmw_rgaps, device loans and device subscriptions, one host
//	rgaps-2hosts  the same, publisher on host a and subscribers on host b (two
//	              rgaps daemons with their own RGAPS_SHM_PREFIX, bridged over loopback)
//	cyclone       rclcpp on rmw_cyclonedds_cpp, ordinary messages, each subscriber
//	              copying the data to its own device memory, one host
//	go-api        the Go API (zerocopy) on one host: `rgaps-bench e2e`'s rgaps
//	              publisher and subscriber processes on one shared-memory prefix
//
// in one run through the harness of bench/e2e (its rounds, warm-up and
// RoundsFor). It needs a sourced ROS 2 with rmw_rgaps and the examples
// package built; without a GPU it runs on host memory (a functional run).
package benchros

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Variants are the systems a run can measure, in report order.
var Variants = []string{"rgaps", "rgaps-2hosts", "cyclone", "go-api"}

// Config is a parsed `rgaps-bench ros` command line.
type Config struct {
	Options  benche2e.Options
	Variants []string
	Bin      string // ros_bench
	Timeout  time.Duration
	JSON     string
}

// ParseArgs reads the flags of `rgaps-bench ros`; it does not look for
// ros_bench (FindBin).
func ParseArgs(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("rgaps-bench ros", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "4MiB,64MiB,1GiB", "message sizes (multiples of 4 KiB)")
	ns := fs.String("ns", "1,2,4,8", "subscriber counts")
	variants := fs.String("variants", strings.Join(Variants, ","), "systems to measure")
	rounds := fs.Int("rounds", benche2e.DefaultRounds, "timed rounds per (size, N) up to 64 MiB (fewer beyond, as rgaps-bench e2e)")
	warmup := fs.Int("warmup", benche2e.DefaultWarmup, "untimed rounds per (size, N) before the timed ones")
	wire := fs.String("wire", "shm", "libfabric provider between the two emulated hosts of rgaps-2hosts: shm or tcp")
	host := fs.Bool("host", false, "use the host-memory fallback of the Go API even where a GPU exists")
	fs.StringVar(&c.Bin, "bin", "", "the ros_bench program (default: on PATH, else lib/rgaps_gpu_examples/ros_bench under AMENT_PREFIX_PATH)")
	fs.DurationVar(&c.Timeout, "timeout", 2*time.Minute, "longest wait for one answer of a ros_bench process")
	fs.StringVar(&c.JSON, "json", "", "also write the raw results (every sample) to this file")
	quiet := fs.Bool("q", false, "no progress bar on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rgaps-bench ros [flags]\n\nThe end-to-end latency of thesis Figure 4.6 through ROS 2 (rclcpp on rmw_rgaps on one\nand two emulated hosts, rclcpp on rmw_cyclonedds_cpp with per-subscriber copies, and the\nGo API) in one run; Markdown on stdout. Needs a sourced ROS 2 with rmw_rgaps and\nrgaps_gpu_examples (examples/ros).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := benchutil.ParseFlags(fs, args); err != nil {
		return c, err
	}
	sz, err := benchutil.ParseSizes(*sizes)
	if err != nil {
		return c, fmt.Errorf("-sizes: %w", err)
	}
	for _, s := range sz {
		if s%4096 != 0 {
			return c, fmt.Errorf("-sizes: %d is not a multiple of 4 KiB", s)
		}
		c.Options.Sizes = append(c.Options.Sizes, int64(s))
	}
	if c.Options.Ns, err = benchutil.ParseInts(*ns); err != nil {
		return c, fmt.Errorf("-ns: %w", err)
	}
	for _, v := range strings.Split(*variants, ",") {
		if !slices.Contains(Variants, v) {
			return c, fmt.Errorf("-variants: unknown %q (known: %s)", v, strings.Join(Variants, ", "))
		}
		if !slices.Contains(c.Variants, v) {
			c.Variants = append(c.Variants, v)
		}
	}
	if *rounds <= 0 || *warmup < 0 || c.Timeout <= 0 {
		return c, fmt.Errorf("-rounds and -timeout must be positive, -warmup not negative")
	}
	if *wire != "shm" && *wire != "tcp" {
		return c, fmt.Errorf("-wire %q: shm or tcp", *wire)
	}
	c.Options.Rounds, c.Options.Warmup, c.Options.Wire, c.Options.HostOnly = *rounds, *warmup, *wire, *host
	if *warmup == 0 {
		c.Options.Warmup = -1
	}
	if !*quiet {
		c.Options.Progress = stderr
	}
	return c, nil
}

// FindBin finds ros_bench: on PATH, else in lib/rgaps_gpu_examples of an
// AMENT_PREFIX_PATH entry.
func FindBin() (string, error) {
	if p, err := exec.LookPath("ros_bench"); err == nil {
		return p, nil
	}
	for _, dir := range filepath.SplitList(os.Getenv("AMENT_PREFIX_PATH")) {
		p := filepath.Join(dir, "lib", "rgaps_gpu_examples", "ros_bench")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("no ros_bench on PATH or under AMENT_PREFIX_PATH (%q): build examples/ros/rgaps_gpu_examples and source its workspace, or pass -bin", os.Getenv("AMENT_PREFIX_PATH"))
}

// systems makes the harness's systems for the chosen variants.
func (c Config) systems() []func() benche2e.System {
	var out []func() benche2e.System
	for _, v := range c.Variants {
		out = append(out, func() benche2e.System {
			switch v {
			case "rgaps":
				return &rosSystem{name: v, tag: "ros1", rmw: "rmw_rgaps", mode: "device", hosts: 1, bin: c.Bin, timeout: c.Timeout}
			case "rgaps-2hosts":
				return &rosSystem{name: v, tag: "ros2", rmw: "rmw_rgaps", mode: "device", hosts: 2, bin: c.Bin, timeout: c.Timeout}
			case "cyclone":
				return &rosSystem{name: v, tag: "rosc", rmw: "rmw_cyclonedds_cpp", mode: "copy", hosts: 1, bin: c.Bin, timeout: c.Timeout}
			}
			return &goSystem{}
		})
	}
	return out
}

// Command is `rgaps-bench ros`: it parses args, runs every variant (until
// ctx is cancelled) and writes the Markdown report on stdout.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := ParseArgs(args, stderr)
	if err != nil {
		return err
	}
	if c.Bin == "" {
		if c.Bin, err = FindBin(); err != nil {
			return err
		}
	}
	c.Options.Systems = c.systems()
	res, err := benche2e.Run(ctx, c.Options)
	if err != nil {
		return err
	}
	var md strings.Builder
	WriteMarkdown(&md, res)
	if err := benchutil.Output(stdout, md.String(), c.JSON, res); err != nil {
		return err
	}
	return res.Failed()
}
