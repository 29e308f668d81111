package benchscale

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Config is a parsed `rgaps-bench scale` command line.
type Config struct {
	Options Options
	JSON    string // -json: raw results
	Plot    string // -plot: prefix of the plots
	Quiet   bool   // -q: no progress on stderr
}

// Quick settings (-quick): a tiny cell, for tests and a smoke run.
var (
	QuickTopics = []int{10}
	QuickSubs   = []int{2}
	QuickPubs   = 1
	QuickIdle   = time.Second
)

// ParseArgs reads the flags of `rgaps-bench scale`. -h returns
// flag.ErrHelp after printing the usage on stderr.
func ParseArgs(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("rgaps-bench scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	topics := fs.String("topics", "100,300,1000", "topic counts")
	subs := fs.String("subs", "8", "subscriber process counts on host b (each subscribes to every topic)")
	pubs := fs.Int("pubs", DefaultPubs, "publisher processes on host a (they share the topics)")
	idle := fs.Duration("idle", DefaultIdle, "how long each daemon's idle CPU time is measured")
	timeout := fs.Duration("timeout", DefaultTimeout, "limit of every step (set-up, discovery, delivery)")
	provider := fs.String("provider", DefaultProvider, "the bridges' data transport: fabric:tcp or tcp")
	ring := fs.String("ring", "", "the daemons' -ring-size (default: theirs, 64MiB)")
	loopback := fs.Bool("loopback", false, "both hosts in this network namespace over 127.0.0.1 (no root needed)")
	quick := fs.Bool("quick", false, "one tiny cell (10 topics, 2 subscriber processes, 1 publisher process, -idle 1s) unless given")
	fs.StringVar(&c.JSON, "json", "", "also write the raw results to this file")
	fs.StringVar(&c.Plot, "plot", "", "also draw plots: PREFIX-setup.png/.svg (times against topics) and PREFIX-memory.png/.svg (daemon RSS and PSS against topics)")
	fs.BoolVar(&c.Quiet, "q", false, "no progress lines on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: rgaps-bench scale [flags]

How the bridge scales with topics and subscriber processes: two emulated
hosts (network namespaces joined by a veth pair; root), rgapsd on each,
publisher processes on host a, subscriber processes on host b that each
subscribe to every topic. Per cell: set-up time, discovery time each way
(until the other host's daemon lists every endpoint), time until every
subscription took a first message, each daemon's RSS and its CPU time
while idle. Markdown on stdout.

flags:`)
		fs.PrintDefaults()
	}
	if err := benchutil.ParseFlags(fs, args); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o := Options{Pubs: *pubs, Idle: *idle, Timeout: *timeout, Provider: *provider, Loopback: *loopback}
	var err error
	if *ring != "" {
		if o.RingSize, err = zerocopy.ParseSize(strings.TrimSuffix(*ring, "B")); err != nil {
			o.RingSize, err = zerocopy.ParseSize(*ring)
		}
		if err != nil || o.RingSize == 0 {
			return c, fmt.Errorf("%w: -ring %q", zerocopy.ErrInvalid, *ring)
		}
	}
	if o.Topics, err = benchutil.ParseInts(*topics); err != nil {
		return c, fmt.Errorf("%w: -topics: %v", zerocopy.ErrInvalid, err)
	}
	if o.Subs, err = benchutil.ParseInts(*subs); err != nil {
		return c, fmt.Errorf("%w: -subs: %v", zerocopy.ErrInvalid, err)
	}
	if *quick {
		if !set["topics"] {
			o.Topics = QuickTopics
		}
		if !set["subs"] {
			o.Subs = QuickSubs
		}
		if !set["pubs"] {
			o.Pubs = QuickPubs
		}
		if !set["idle"] {
			o.Idle = QuickIdle
		}
	}
	if *idle <= 0 || *timeout <= 0 {
		return c, fmt.Errorf("%w: -idle and -timeout must be positive", zerocopy.ErrInvalid)
	}
	if _, err := o.withDefaults(); err != nil {
		return c, fmt.Errorf("%w: %v", zerocopy.ErrInvalid, err)
	}
	c.Options = o
	return c, nil
}

// testHook, set by tests, adjusts the options Command runs with (the
// test binary as the daemons and children).
var testHook func(*Options)

// Command is `rgaps-bench scale`: it parses args, runs the benchmark
// (until ctx is cancelled), writes the Markdown report on stdout and, as
// asked, the raw results to -json FILE and plots to -plot PREFIX.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := ParseArgs(args, stderr)
	if err != nil {
		return err
	}
	if !c.Quiet {
		c.Options.Progress = stderr
	}
	if c.JSON != "" {
		// Fail on an unwritable output before the run, not after it.
		f, err := os.OpenFile(c.JSON, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		f.Close()
	}
	if testHook != nil {
		testHook(&c.Options)
	}
	res, err := Run(ctx, c.Options)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; processes stopped, namespaces and shared memory removed (%w)", err)
		}
		return err
	}
	res.Command = strings.Join(append([]string{"rgaps", "bench", "scale"}, args...), " ")
	var md strings.Builder
	res.WriteMarkdown(&md)
	if err := benchutil.Output(stdout, md.String(), c.JSON, res); err != nil {
		return err
	}
	if c.JSON != "" {
		fmt.Fprintf(stderr, "raw results written to %s\n", c.JSON)
	}
	if c.Plot != "" {
		if _, err := res.WritePlots(c.Plot); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "plots written to %s-setup.png/.svg and %s-memory.png/.svg\n", c.Plot, c.Plot)
	}
	return nil
}
