package benchbridge

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Config is a parsed `rgaps-bench bridge` command line.
type Config struct {
	Options Options
	Out     string // -out: the Markdown report, also written here
	JSON    string // -json: raw results
	Plot    string // -plot: prefix of the plot
	Quiet   bool   // -q: no progress on stderr
	Netns   bool   // -netns: RunNetns instead of Run
}

// Quick settings (-quick): tiny sizes and counts, for tests and a smoke
// run.
var (
	QuickSizes  = []int{4 << 10, 256 << 10}
	QuickN      = 8
	QuickRounds = 5
	QuickRing   = uint64(8 << 20)
)

// ParseArgs reads the flags of `rgaps-bench bridge`. -h returns
// flag.ErrHelp after printing the usage on stderr.
func ParseArgs(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("rgaps-bench bridge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "4K,1M,4M,64M", "message sizes")
	n := fs.Int("n", 0, "timed messages per size for throughput, all topics together (0: 1 GiB worth, at least 50, at most 10,000)")
	rounds := fs.Int("rounds", DefaultRounds, "latency samples per size (sizes above 16 MiB: a tenth, at least 10)")
	window := fs.Int("window", 0, "messages in flight in the throughput phase, split over the topics (0: 128 MiB worth, 2 … 128)")
	ringSize := fs.String("ring", "64M", "ring size")
	quick := fs.Bool("quick", false, "tiny sizes and counts (4K,256K; -n 8, -rounds 5, -ring 8M, -reps 1) unless given")
	provider := fs.String("provider", DefaultProvider, "the bridge's data transport: fabric:tcp, fabric:shm, tcp")
	variants := fs.String("variants", "", "comma-separated variants to run (default all): "+variantKeys())
	repsN := fs.Int("reps", 3, "runs of every throughput measurement (the median is reported)")
	noVerify := fs.Bool("no-verify", false, "skip the subscriber's CRC-32C of every payload (sequence and size are still checked)")
	fill := fs.Bool("fill", false, "the timed publisher writes whole payloads (as a CPU producer: data in the cache when the bridge sends it), not only each message's 16-byte stamp")
	rails := fs.Int("rails", 0, "K of the rails variant (one topic over K connections) and of its K-endpoint bare loop (0: what the bridge chooses on this machine)")
	gap := fs.Duration("gap", 0, "pause before each latency round (say 33ms, a camera's frame interval): the bridges are idle when the message comes")
	fs.StringVar(&c.Out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&c.JSON, "json", "", "also write the raw results to this file")
	fs.StringVar(&c.Plot, "plot", "", "also draw PREFIX-throughput.png/.svg: GB/s against the message size, a line per variant and per baseline loop")
	fs.BoolVar(&c.Quiet, "q", false, "no progress lines on stderr")
	fs.BoolVar(&c.Netns, "netns", false, "the hosts in two network namespaces joined by a veth pair: rgapsd, publisher and subscriber as processes in them, the bare loop between them (root)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: rgaps-bench bridge [flags]

Throughput and latency through the inter-host bridge: two bridges ("hosts"
a and b with separate shared-memory prefixes) in this process over
127.0.0.1, a publisher on a and a subscriber on b, against a bare
fi_writedata loop and a transport WriteImm loop over the same provider and
the bridge over plain TCP, all in the same run; and the variants
write-twice, watermark 1/4, 4 topics over one ring vs per-topic rings,
and one topic over K rails (-rails) against the bare loop over K endpoints.
Markdown on stdout.

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
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o := Options{N: *n, Rounds: *rounds, Window: *window, Provider: *provider, NoVerify: *noVerify, Reps: *repsN, Rails: *rails, Fill: *fill, Gap: *gap}
	var err error
	if o.Sizes, err = benchutil.ParseSizes(*sizes); err != nil {
		return c, fmt.Errorf("%w: -sizes: %v", zerocopy.ErrInvalid, err)
	}
	rs, err := zerocopy.ParseSize(strings.TrimSuffix(*ringSize, "B"))
	if err != nil {
		rs, err = zerocopy.ParseSize(*ringSize)
	}
	if err != nil || rs == 0 {
		return c, fmt.Errorf("%w: -ring %q", zerocopy.ErrInvalid, *ringSize)
	}
	o.RingSize = rs
	if *quick {
		if !set["sizes"] {
			o.Sizes = QuickSizes
		}
		if !set["n"] {
			o.N = QuickN
		}
		if !set["rounds"] {
			o.Rounds = QuickRounds
		}
		if !set["ring"] {
			o.RingSize = QuickRing
		}
		if !set["reps"] {
			o.Reps = 1
		}
	}
	if *variants != "" {
		for _, k := range strings.Split(*variants, ",") {
			if k = strings.TrimSpace(k); k != "" {
				o.Variants = append(o.Variants, k)
			}
		}
	}
	if o.Gap < 0 {
		return c, fmt.Errorf("%w: -gap %v: not negative", zerocopy.ErrInvalid, o.Gap)
	}
	if o.N < 0 || o.Rounds <= 0 || o.Window < 0 || o.Reps <= 0 {
		return c, fmt.Errorf("%w: -n and -window must not be negative, -rounds and -reps must be positive", zerocopy.ErrInvalid)
	}
	if o.Rails < 0 || o.Rails > ring.MaxRails {
		return c, fmt.Errorf("%w: -rails %d: 0 (auto) or 1…%d", zerocopy.ErrInvalid, o.Rails, ring.MaxRails)
	}
	if _, err := o.withDefaults(); err != nil {
		return c, fmt.Errorf("%w: %v", zerocopy.ErrInvalid, err)
	}
	c.Options = o
	return c, nil
}

func variantKeys() string {
	var ks []string
	for _, v := range Variants(DefaultProvider) {
		ks = append(ks, v.Key)
	}
	return strings.Join(ks, ", ")
}

// Command is `rgaps-bench bridge`: it parses args, runs the benchmark
// (until ctx is cancelled), writes the Markdown report on stdout and, as
// asked, to -out FILE, the raw results to -json FILE and a plot to
// -plot PREFIX.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := ParseArgs(args, stderr)
	if err != nil {
		return err
	}
	if !c.Quiet {
		c.Options.Progress = stderr
	}
	// Fail on an unwritable output before the run, not after it.
	for _, p := range []string{c.Out, c.JSON} {
		if p == "" {
			continue
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		f.Close()
	}
	run := Run
	if c.Netns {
		run = func(ctx context.Context, o Options) (*Result, error) { return RunNetns(ctx, o, NetnsOptions{}) }
	}
	res, err := run(ctx, c.Options)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; bridges closed, shared memory removed (%w)", err)
		}
		return err
	}
	res.Command = strings.Join(append([]string{"rgaps", "bench", "bridge"}, args...), " ")
	var md strings.Builder
	res.WriteMarkdown(&md)
	if _, err := io.WriteString(stdout, md.String()); err != nil {
		return err
	}
	if c.Out != "" {
		if err := os.WriteFile(c.Out, []byte(md.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report written to %s\n", c.Out)
	}
	if c.JSON != "" {
		b, err := json.MarshalIndent(res, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(c.JSON, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "raw results written to %s\n", c.JSON)
	}
	if c.Plot != "" {
		if _, err := res.WritePlots(c.Plot); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "plot written to %s-throughput.png/.svg\n", c.Plot)
	}
	return nil
}
