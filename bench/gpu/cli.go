package benchgpu

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Config is a parsed `rgaps-bench gpu` command line.
type Config struct {
	Options Options
	JSON    string // -json: raw results
	OutDir  string // -out: DIR/bench-gpu.md
	Quiet   bool   // -q: no progress on stderr
}

// MarkdownFile is the name -out writes in its directory.
const MarkdownFile = "bench-gpu.md"

// ParseArgs reads the flags of `rgaps-bench gpu`. -h returns flag.ErrHelp
// after printing the usage on stderr.
func ParseArgs(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("rgaps-bench gpu", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "4M,64M,1G", "message sizes")
	subs := fs.String("subs", "1,2,4,8", "subscriber process counts of data path 3")
	iters := fs.Int("iters", DefaultIters, "timed messages per cell up to 16 MiB (up to 256 MiB: two fifths, at least 5; beyond: a tenth, at least 3)")
	warmup := fs.Int("warmup", DefaultWarmup, "untimed warm-up messages per cell (at least 1; above 256 MiB a third)")
	dps := fs.String("dp", "1,3", "data paths to run (1: device → host; 3: host → GPU of N subscribers)")
	domain := fs.Uint("domain", DefaultDomain, "ROS domain id of the run (its shared memory and GPU daemon are private to the run anyway)")
	device := fs.Int("device", 0, "CUDA device (0: RGAPS_GPU_DEVICE, or 0)")
	pool := fs.String("pool", "", "pool size of every benchmark topic (default: 2.5 × the largest message, at least 64 MiB)")
	schedule := fs.String("sub-schedule", "", "how subscriber processes wait for the GPU in synchronising calls (their CUDA context's CU_CTX_SCHED_*): auto, spin, yield or blocking (default: the driver's, auto)")
	busyPoll := fs.Duration("busy-poll", 0, "data path 3's subscribers spin in Wait up to this long before sleeping in the kernel, and messages go out without waiting for them to sleep (0: they sleep, and every message waits until all do)")
	fs.StringVar(&c.JSON, "json", "", "also write the raw results (every sample) to this file")
	fs.StringVar(&c.OutDir, "out", "", "also write the Markdown report to DIR/"+MarkdownFile)
	fs.BoolVar(&c.Quiet, "q", false, "no progress lines on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: rgaps-bench gpu [flags]

Reproduces the RGAPS thesis' GPU measurements on this host (Tables 4.2–4.5):
data path 1, device → host (Pinned-SHM against a bare pinned copy and the
Pageable-UDS baseline), and data path 3, host → GPU of N subscriber
processes (Pinned-Shared against the Pageable-Iceoryx baseline). Markdown
on stdout. Needs a CUDA GPU.

flags:`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return c, fmt.Errorf("%w: unexpected arguments %q", zerocopy.ErrInvalid, fs.Args())
	}
	o := Options{Iters: *iters, Warmup: *warmup, Device: *device, SubSchedule: *schedule, BusyPoll: *busyPoll}
	var err error
	if o.Sizes, err = benchutil.ParseSizes(*sizes); err != nil {
		return c, fmt.Errorf("%w: -sizes: %v", zerocopy.ErrInvalid, err)
	}
	if o.Subs, err = benchutil.ParseInts(*subs); err != nil {
		return c, fmt.Errorf("%w: -subs: %v", zerocopy.ErrInvalid, err)
	}
	if o.DataPaths, err = benchutil.ParseInts(*dps); err != nil {
		return c, fmt.Errorf("%w: -dp: %v", zerocopy.ErrInvalid, err)
	}
	if *iters <= 0 || *warmup < 0 {
		return c, fmt.Errorf("%w: -iters must be positive and -warmup not negative", zerocopy.ErrInvalid)
	}
	if *warmup == 0 {
		o.Warmup = -1 // "as few as possible" (one), apart from "default"
	}
	if *domain > 1<<32-1 {
		return c, fmt.Errorf("%w: -domain %d", zerocopy.ErrInvalid, *domain)
	}
	o.Domain = uint32(*domain)
	if *device < 0 {
		return c, fmt.Errorf("%w: -device %d", zerocopy.ErrInvalid, *device)
	}
	if *pool != "" {
		n, err := zerocopy.ParseSize(strings.TrimSuffix(*pool, "B"))
		if err != nil {
			n, err = zerocopy.ParseSize(*pool)
		}
		if err != nil || n == 0 {
			return c, fmt.Errorf("%w: -pool %q", zerocopy.ErrInvalid, *pool)
		}
		o.PoolSize = n
	}
	// Check the rest now rather than after starting processes.
	if _, err := o.withDefaults(); err != nil {
		return c, fmt.Errorf("%w: %v", zerocopy.ErrInvalid, err)
	}
	c.Options = o
	return c, nil
}

// Command is `rgaps-bench gpu`: it parses args, runs the benchmark (until
// ctx is cancelled), writes the Markdown report on stdout and, as asked,
// to -out DIR and the raw results to -json FILE.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := ParseArgs(args, stderr)
	if err != nil {
		return err
	}
	if !c.Quiet {
		c.Options.Progress = stderr
	}
	if testCommandOptions != nil {
		testCommandOptions(&c.Options)
	}
	// Fail on an unwritable output before the run, not after it.
	var jf *os.File
	if c.JSON != "" {
		if jf, err = os.Create(c.JSON); err != nil {
			return err
		}
		defer jf.Close()
	}
	if c.OutDir != "" {
		if err := os.MkdirAll(c.OutDir, 0o755); err != nil {
			return err
		}
	}
	res, err := Run(ctx, c.Options)
	if err != nil {
		if jf != nil {
			jf.Close()
			os.Remove(c.JSON)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; subscribers stopped, shared memory removed (%w)", err)
		}
		return err
	}
	var md strings.Builder
	res.WriteMarkdown(&md)
	if _, err := io.WriteString(stdout, md.String()); err != nil {
		return err
	}
	if c.OutDir != "" {
		p := filepath.Join(c.OutDir, MarkdownFile)
		if err := os.WriteFile(p, []byte(md.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", p)
	}
	if jf != nil {
		enc := json.NewEncoder(jf)
		enc.SetIndent("", " ")
		if err := enc.Encode(res); err != nil {
			return err
		}
		if err := jf.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "raw results written to %s\n", c.JSON)
	}
	return nil
}

// testCommandOptions, set only by this package's tests, adjusts the
// options Command runs with (the fake device, the test binary as child).
var testCommandOptions func(*Options)

// IsNoGPU reports whether err means the machine has no usable GPU.
func IsNoGPU(err error) bool { return errors.Is(err, zerocopy.ErrNotSupported) }
