package benche2e

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Config is a parsed `rgaps-bench e2e` command line.
type Config struct {
	Options Options
	Out     string // -out: path prefix of the report, plots and JSON
	Quiet   bool
}

// DefaultName is the file name -out uses inside a directory.
const DefaultName = "bench-e2e"

// ParseArgs reads the flags of `rgaps-bench e2e`.
func ParseArgs(args []string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("rgaps-bench e2e", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sizes := fs.String("sizes", "4MiB,64MiB,1GiB", "message sizes")
	ns := fs.String("n", "1,2,4,8", "subscriber counts")
	rounds := fs.Int("rounds", DefaultRounds, "timed rounds per (size, N) up to 64 MiB (up to 256 MiB a quarter, at least 5; beyond a tenth, at least 3)")
	warmup := fs.Int("warmup", DefaultWarmup, "untimed rounds per (size, N) before the timed ones")
	wire := fs.String("wire", "", "libfabric provider between the hosts: shm or tcp (default: shm on one host, tcp with -netns)")
	netns := fs.Bool("netns", false, "hosts A and B in two network namespaces joined by a veth pair (root); default: loopback")
	host := fs.Bool("host", false, "use the host-memory fallback even where a GPU exists")
	quick := fs.Bool("quick", false, "smoke run: 3 timed rounds after 1 warm-up; sizes 4MiB,64MiB and N 1,8 unless given")
	fs.StringVar(&c.Out, "out", "", "write the report to PATH.md, the raw numbers to PATH.json and plots to PATH-<size>.png/.svg (a directory: DIR/"+DefaultName+")")
	fs.BoolVar(&c.Quiet, "q", false, "no progress bar on stderr")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: rgaps-bench e2e [flags]

Reproduces the RGAPS thesis' end-to-end measurement (Figure 4.6, with stage
breakdowns like Tables 4.2–4.5): a publisher on host A publishes a
GPU-resident message to N GPU subscriber processes on host B; latency from
the publish call to each subscriber holding a device pointer to the data.
Runs, in one run, the thesis' baseline pipeline (pageable D2H, Unix socket,
TCP, iceoryx, per-subscriber pageable H2D), the serial lower bound (bare
pinned D2H + bare fi_writedata + bare pinned H2D) and, when built in, ours.
Without a GPU, device memory is host memory (a functional run only).
Markdown on stdout.

flags:`)
		fs.PrintDefaults()
	}
	if err := benchutil.ParseFlags(fs, args); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *quick {
		if !set["sizes"] {
			*sizes = "4MiB,64MiB"
		}
		if !set["n"] {
			*ns = "1,8"
		}
		if !set["rounds"] {
			*rounds = 3
		}
		if !set["warmup"] {
			*warmup = 1
		}
	}
	o := Options{Rounds: *rounds, Warmup: *warmup, Wire: *wire, Netns: *netns, HostOnly: *host}
	sz, err := benchutil.ParseSizes(*sizes)
	if err != nil {
		return c, fmt.Errorf("-sizes: %w", err)
	}
	for _, s := range sz {
		o.Sizes = append(o.Sizes, int64(s))
	}
	if o.Ns, err = benchutil.ParseInts(*ns); err != nil {
		return c, fmt.Errorf("-n: %w", err)
	}
	if *rounds <= 0 || *warmup < 0 {
		return c, fmt.Errorf("-rounds must be positive, -warmup not negative")
	}
	if *warmup == 0 {
		o.Warmup = -1
	}
	if _, err := o.withDefaults(); err != nil {
		return c, err
	}
	c.Options = o
	return c, nil
}

// Command is `rgaps-bench e2e`: it parses args, runs (until ctx is
// cancelled), writes the Markdown on stdout and, with -out, the report,
// the plots and the raw numbers. A system that stopped is reported (in
// the files too) and makes the command fail after writing them.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := ParseArgs(args, stderr)
	if err != nil {
		return err
	}
	if !c.Quiet {
		c.Options.Progress = stderr
	}
	prefix := c.Out
	if prefix != "" {
		if st, err := os.Stat(prefix); (err == nil && st.IsDir()) || strings.HasSuffix(prefix, "/") {
			prefix = filepath.Join(prefix, DefaultName)
		}
		prefix = strings.TrimSuffix(prefix, ".md")
		if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
			return err
		}
	}
	res, err := Run(ctx, c.Options)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted; child processes stopped (%w)", err)
		}
		return err
	}
	return res.Write(prefix, stdout, stderr)
}

// Write writes the report on stdout and, with a prefix, prefix.md,
// prefix.json and the plots; it returns Failed's error afterwards.
func (r *Result) Write(prefix string, stdout, stderr io.Writer) error {
	var plots map[int64][]string
	if prefix != "" {
		files, err := r.WritePlots(prefix)
		if err != nil {
			return err
		}
		plots = map[int64][]string{}
		for size, fs := range files {
			for _, f := range fs {
				plots[size] = append(plots[size], filepath.Base(f))
			}
		}
	}
	var md strings.Builder
	r.WriteMarkdown(&md, plots)
	if _, err := io.WriteString(stdout, md.String()); err != nil {
		return err
	}
	if prefix != "" {
		if err := os.WriteFile(prefix+".md", []byte(md.String()), 0o644); err != nil {
			return err
		}
		if err := benchutil.WriteJSON(prefix+".json", r); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "report: %s.md, raw numbers: %s.json, plots: %s-<size>.png/.svg\n", prefix, prefix, prefix)
	}
	return r.Failed()
}
