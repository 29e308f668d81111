package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/internal/bench"
	"github.com/rmw-rgaps/rmw_rgaps/internal/benchutil"
)

func init() {
	register("bench", "benchmarks: bench local|gpu|bridge|e2e [flags]", runBench)
	register(bench.ChildCommand, "(internal) subscriber process of `rgaps bench local`", func(args []string) error {
		if len(args) != 0 {
			return errUsage
		}
		return bench.ChildMain()
	})
}

func benchUsage() {
	fmt.Fprintln(os.Stderr, `usage: rgaps bench <benchmark> [flags]

  local    allocation cost, publish → wakeup of N subscriber processes, and the
           Unix-domain-socket baseline, on this host (Markdown on stdout)
  gpu      the thesis' data paths 1 and 3 on a GPU: D2H into the pinned pool vs
           pageable + Unix socket, and delivery to N GPU subscriber processes
           through the shared GPU pool vs each subscriber's own pageable copy
  bridge   throughput and latency through two bridges over loopback (libfabric
           tcp by default) against a bare fi_writedata loop and plain TCP
  e2e      a GPU message on host A to N GPU subscribers on host B (thesis
           Figure 4.6): ours, the thesis' baseline pipeline (Iceoryx) and the
           serial lower bound in one run; tables and PNG/SVG plots

run "rgaps bench <benchmark> -h" for its flags`)
}

func runBench(args []string) error {
	if len(args) == 0 {
		benchUsage()
		return errUsage
	}
	switch args[0] {
	case "local":
		return runBenchLocal(args[1:])
	case "gpu":
		return runBenchGPU(args[1:])
	case "e2e":
		return runBenchE2E(args[1:])
	case "bridge":
		return runBenchBridge(args[1:])
	case "-h", "-help", "--help", "help":
		benchUsage()
		return flag.ErrHelp
	}
	fmt.Fprintf(os.Stderr, "rgaps bench: unknown benchmark %q\n", args[0])
	benchUsage()
	return errUsage
}

func runBenchLocal(args []string) error {
	fs := flag.NewFlagSet("rgaps bench local", flag.ContinueOnError)
	sizes := fs.String("sizes", "64,4K,1M,4M,64M", "message sizes of the wakeup cells")
	subs := fs.String("subs", "1,2,4,8", "subscriber process counts")
	iters := fs.Int("iters", bench.DefaultIters, fmt.Sprintf("timed messages per cell (sizes above %s: a tenth, at least 10)", benchutil.FormatSize(bench.BigSize)))
	warmup := fs.Int("warmup", bench.DefaultWarmup, "untimed warm-up messages per cell (sizes above 16 MiB: a tenth, at least 2)")
	allocSamples := fs.Int("alloc-samples", bench.DefaultAllocSamples, "timed alloc/free and Loan/Discard pairs per size")
	busyPoll := fs.Duration("busy-poll", 0, "subscribers spin this long before sleeping in the kernel (0: never)")
	defDomain, derr := rgaps.DomainFromEnv()
	domain := fs.Uint("domain", uint(defDomain), "ROS domain id (default: ROS_DOMAIN_ID)")
	jsonFile := fs.String("json", "", "also write the raw results (every sample) to this file")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: rgaps bench local [flags]")
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
		return fmt.Errorf("%w: domain %d", rgaps.ErrInvalid, *domain)
	}
	o := bench.Options{Iters: *iters, Warmup: *warmup, AllocSamples: *allocSamples, BusyPoll: *busyPoll, Domain: uint32(*domain)}
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := bench.Run(ctx, o)
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
