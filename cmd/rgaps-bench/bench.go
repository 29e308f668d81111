package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	benchlocal "github.com/rmw-rgaps/rmw_rgaps/bench/local"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	register("local", "allocation cost, publish → wakeup of N subscriber processes, and the Unix-domain-socket baseline, on this host", runBenchLocal)
	register("gpu", "the thesis' data paths 1 and 3 on a GPU: D2H into the pinned pool vs pageable + Unix socket, and delivery to N GPU subscriber processes through the shared GPU pool vs each subscriber's own pageable copy", runBenchGPU)
	register("bridge", "throughput and latency through two bridges over loopback (libfabric tcp by default) against a bare fi_writedata loop and plain TCP", runBenchBridge)
	register("e2e", "a GPU message on host A to N GPU subscribers on host B (thesis Figure 4.6): ours, the thesis' baseline pipeline (Iceoryx) and the serial lower bound in one run; tables and PNG/SVG plots", runBenchE2E)
	register("ros", "the end-to-end latency through ROS 2: rclcpp GPU loans on rmw_rgaps (one and two hosts), rmw_cyclonedds_cpp with per-subscriber copies, and the Go API, N subscribers, in one run (needs a sourced ROS 2 and examples/ros)", runBenchROS)
	register("dds", "the DDS gateway (in a daemon, DDS endpoints in processes of their own; and all in one process): rgaps→DDS and DDS→rgaps latency against DDS→DDS, and an rgaps stream's throughput with and without a DDS subscriber through the gateway (needs libddsc)", runBenchDDS)
	register(benchlocal.ChildCommand, "(internal) subscriber process of `rgaps-bench local`", func(args []string) error {
		if len(args) != 0 {
			return errUsage
		}
		return benchlocal.ChildMain()
	})
}

// runBenchLocal is `rgaps-bench local [flags]`: Markdown on stdout, the
// raw samples in a JSON file on request.
func runBenchLocal(args []string) error {
	fs := flag.NewFlagSet("rgaps-bench local", flag.ContinueOnError)
	sizes := fs.String("sizes", "64,4K,1M,4M,64M", "message sizes of the wakeup cells")
	subs := fs.String("subs", "1,2,4,8", "subscriber process counts")
	iters := fs.Int("iters", benchlocal.DefaultIters, fmt.Sprintf("timed messages per cell (sizes above %s: a tenth, at least 10)", benchutil.FormatSize(benchlocal.BigSize)))
	warmup := fs.Int("warmup", benchlocal.DefaultWarmup, "untimed warm-up messages per cell (sizes above 16 MiB: a tenth, at least 2)")
	allocSamples := fs.Int("alloc-samples", benchlocal.DefaultAllocSamples, "timed alloc/free and Loan/Discard pairs per size")
	busyPoll := fs.Duration("busy-poll", 0, "subscribers spin this long before sleeping in the kernel (0: never)")
	settle := fs.Bool("settle", true, "send each rgaps and futex-floor message only once every subscriber sleeps (false: right after the previous one's acknowledgements, as before 2026-11-28)")
	defDomain, derr := rgaps.DomainFromEnv()
	domain := fs.Uint("domain", uint(defDomain), "ROS domain id (default: ROS_DOMAIN_ID)")
	jsonFile := fs.String("json", "", "also write the raw results (every sample) to this file")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: rgaps-bench local [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	domainSet := false
	fs.Visit(func(f *flag.Flag) { domainSet = domainSet || f.Name == "domain" })
	if derr != nil && !domainSet {
		return derr
	}
	if *domain > 1<<32-1 {
		return fmt.Errorf("%w: domain %d", zerocopy.ErrInvalid, *domain)
	}
	o := benchlocal.Options{Iters: *iters, Warmup: *warmup, AllocSamples: *allocSamples, BusyPoll: *busyPoll, NoSettle: !*settle, Domain: uint32(*domain)}
	var err error
	if o.Sizes, err = benchutil.ParseSizes(*sizes); err != nil {
		return fmt.Errorf("-sizes: %w", err)
	}
	if o.Subs, err = benchutil.ParseInts(*subs); err != nil {
		return fmt.Errorf("-subs: %w", err)
	}
	if *iters <= 0 || *warmup < 0 || *allocSamples <= 0 {
		return fmt.Errorf("-iters and -alloc-samples must be positive, -warmup not negative")
	}
	if *warmup == 0 {
		o.Warmup = -1 // keep "none" apart from "default"
	}
	if !*quiet {
		o.Progress = os.Stderr
	}
	var f *os.File
	if *jsonFile != "" {
		if f, err = os.Create(*jsonFile); err != nil {
			return err
		}
		defer f.Close()
	}
	ctx, stop := signalContext()
	defer stop()
	res, err := benchlocal.Run(ctx, o)
	if err != nil {
		if f != nil {
			f.Close()
			os.Remove(*jsonFile)
		}
		if ctx.Err() != nil {
			return errors.New("interrupted; subscribers stopped and shared memory removed")
		}
		return err
	}
	var out strings.Builder
	res.WriteMarkdown(&out)
	fmt.Print(out.String())
	if f != nil {
		enc := json.NewEncoder(f)
		enc.SetIndent("", " ")
		if err := enc.Encode(res); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "raw results written to %s\n", *jsonFile)
	}
	return nil
}
