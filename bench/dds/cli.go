package benchdds

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Config is a parsed `rgaps-bench dds` command line.
type Config struct {
	Options Options
	JSON    string
}

// ParseArgs reads the flags of `rgaps-bench dds`.
func ParseArgs(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("rgaps-bench dds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "64,4K,1M,8M", "message sizes (std_msgs/msg/String CDR, all included)")
	rounds := fs.Int("rounds", DefaultRounds, fmt.Sprintf("timed latency rounds per (path, size) (sizes above %s: a quarter, at least 10)", benchutil.FormatSize(BigSize)))
	warmup := fs.Int("warmup", DefaultWarmup, "untimed latency rounds before them")
	dur := fs.Duration("duration", DefaultDuration, "publishing time of each throughput cell")
	subs := fs.Int("subs", DefaultSubs, "engine subscriptions of the throughput cells")
	domain := fs.Uint("domain", DefaultDomain, "ROS domain id of the run (engine and DDS)")
	layouts := fs.String("layouts", "procs,one", "where the endpoints run: procs (the gateway in a daemon, each DDS endpoint in a process of its own), one (everything in this process)")
	fs.StringVar(&c.JSON, "json", "", "also write the raw results (every sample) to this file")
	quiet := fs.Bool("q", false, "no progress lines on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rgaps-bench dds [flags]\n\nThe DDS gateway's latency (rgaps→DDS, DDS→rgaps) against DDS→DDS, and an rgaps\nstream's throughput with and without a DDS subscriber through the gateway, with\nthe gateway and DDS endpoints in processes of their own and in one process;\nMarkdown on stdout. Needs libddsc (Cyclone DDS).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := benchutil.ParseFlags(fs, args); err != nil {
		return c, err
	}
	var err error
	if c.Options.Sizes, err = benchutil.ParseSizes(*sizes); err != nil {
		return c, fmt.Errorf("-sizes: %w", err)
	}
	for _, s := range c.Options.Sizes {
		if s < MinSize {
			return c, fmt.Errorf("-sizes: %d is below %d", s, MinSize)
		}
	}
	if *rounds <= 0 || *warmup < 0 || *dur <= 0 || *subs <= 0 {
		return c, errors.New("-rounds, -duration and -subs must be positive, -warmup not negative")
	}
	if *domain > 232 {
		return c, fmt.Errorf("-domain %d: above 232", *domain)
	}
	for _, l := range strings.Split(*layouts, ",") {
		switch strings.TrimSpace(l) {
		case "procs":
			c.Options.Layouts = append(c.Options.Layouts, LayoutProcs)
		case "one":
			c.Options.Layouts = append(c.Options.Layouts, LayoutOne)
		default:
			return c, fmt.Errorf("-layouts: %q is neither procs nor one", l)
		}
	}
	c.Options.Rounds, c.Options.Warmup, c.Options.Duration, c.Options.Subs, c.Options.Domain = *rounds, *warmup, *dur, *subs, uint32(*domain)
	if !*quiet {
		c.Options.Progress = stderr
	}
	return c, nil
}

// Command is `rgaps-bench dds`: it parses args, runs (until ctx is
// cancelled) and writes the Markdown report on stdout. Without libddsc it
// says so on stderr and returns nil (skipped).
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := ParseArgs(args, stderr)
	if err != nil {
		return err
	}
	res, err := Run(ctx, c.Options)
	if errors.Is(err, ErrNoDDS) {
		fmt.Fprintf(stderr, "rgaps-bench dds: skipped: %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	var md strings.Builder
	WriteMarkdown(&md, res)
	return benchutil.Output(stdout, md.String(), c.JSON, res)
}
