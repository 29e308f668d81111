// Package rgapsd is the daemon as a program: its command line, its log and
// its exit. `rgaps daemon` (the binary CMake installs, also auto-started
// for GPU pools), `rgaps-bench daemon` (for the pools and bridges the
// benchmarks start) and the test binaries that serve as the daemon all run
// Main, so tests exercise the daemon code production runs.
//
// The work is bridge.Run (and, inside it, gpupool.Run) and, with -dds,
// the DDS gateway (gateway.Run) beside it; this package only turns
// arguments into their options and writes the log. Signals are the
// caller's: it cancels ctx. It must not be imported by a library.
package rgapsd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/gateway"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

// Main runs rgapsd with the command-line arguments args (the flags of
// bridge.BindFlags) until ctx is done, or until the GPU-pool-only daemon
// was idle for -idle. engine is the engine configuration from the
// environment (zerocopy.Config.FromEnv in production). The log, in text
// form, goes to stderr. A GPU-pool-only daemon that finds one running
// already for its domain says so and returns nil.
func Main(ctx context.Context, args []string, engine zerocopy.Config, stderr io.Writer) error {
	fs := flag.NewFlagSet("rgaps daemon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := bridge.BindFlags(fs, engine)
	ddsOn := fs.Bool("dds", false, "run the DDS gateway: carry topics between rgaps and ROS 2 nodes on Cyclone DDS (needs libddsc)")
	ddsTopics := fs.String("dds-topics", "", "DDS gateway: comma-separated glob patterns of the topics carried (default: all but /rosout and /parameter_events)")
	ddsLedger := fs.String("dds-ledger", "", "DDS gateway: the file recording what it delivered, so a restart delivers nothing twice (default /dev/shm/<prefix>_d<domain>_gateway; \"none\": kept in memory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o, err := f.Options(zerocopy.LookupGroup)
	if err != nil {
		return err
	}
	if o.Bridge != nil {
		// The config file's gateway keys, where no flag says otherwise.
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		c := o.Bridge.Control
		if !set["dds"] && c.DDS != "" {
			*ddsOn = c.DDS == "on"
		}
		if !set["dds-topics"] && c.DDSTopics != "" {
			*ddsTopics = c.DDSTopics
		}
		if !set["dds-ledger"] && c.DDSLedger != "" {
			*ddsLedger = c.DDSLedger
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o.Log = log
	start := time.Now()
	if *ddsOn {
		return withGateway(ctx, o, engine, gateway.Options{Topics: patterns(*ddsTopics), Ledger: *ddsLedger}, log, start)
	}
	err = bridge.Run(ctx, o)
	if errors.Is(err, gpupool.ErrRunning) {
		fmt.Fprintf(stderr, "rgaps daemon: a daemon for domain %d runs already\n", o.Pool.Domain)
		return nil
	}
	log.Info("rgaps daemon stopped", "ran", time.Since(start).Round(time.Millisecond))
	return err
}

// withGateway runs the DDS gateway beside bridge.Run until ctx is done
// (or the pool server idled out). The gateway starts first, so a missing
// libddsc is an error at once; when a daemon for the domain serves the
// GPU pools already, this process runs the gateway alone. A status
// socket of the gateway's own reports its graph (graph.go).
func withGateway(ctx context.Context, o bridge.DaemonOptions, engine zerocopy.Config, gw gateway.Options, log *slog.Logger, start time.Time) error {
	engine.Prefix, engine.Domain = o.Pool.Prefix, o.Pool.Domain
	gw.Engine, gw.Discovery, gw.Log = engine, discovery(os.Getenv), log.With("part", "dds")
	switch gw.Ledger {
	case "":
		rc, err := engine.Resolve()
		if err != nil {
			return fmt.Errorf("DDS gateway: %w", err)
		}
		gw.Ledger = fmt.Sprintf("/dev/shm/%s_d%d_gateway", rc.Prefix, rc.Domain)
	case "none":
		gw.Ledger = ""
	}
	g, err := gateway.New(gw)
	if err != nil {
		return fmt.Errorf("DDS gateway: %w", err)
	}
	stopReport := reportGraph(engine, g, log)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	served := make(chan struct{})
	go func() {
		defer close(served)
		g.Serve(ctx)
	}()
	err = bridge.Run(ctx, o)
	if errors.Is(err, gpupool.ErrRunning) {
		log.Info("GPU pools are served by the daemon already running; this process runs the DDS gateway", "domain", o.Pool.Domain)
		<-ctx.Done()
		err = nil
	}
	cancel()
	<-served
	stopReport()
	if cerr := g.Close(); cerr != nil {
		log.Warn("closing the DDS gateway", "err", cerr)
	}
	log.Info("rgaps daemon stopped", "ran", time.Since(start).Round(time.Millisecond))
	return err
}

// discovery is the DDS discovery ROS 2's rmw_cyclonedds_cpp uses in this
// environment: localhost only with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
// or ROS_LOCALHOST_ONLY=1, else Cyclone's default (multicast), as for
// SUBNET or an unset range.
func discovery(getenv func(string) string) dds.Discovery {
	if getenv("ROS_AUTOMATIC_DISCOVERY_RANGE") == "LOCALHOST" || getenv("ROS_LOCALHOST_ONLY") == "1" {
		return dds.DiscoveryLocalhost
	}
	return dds.DiscoveryDefault
}

// patterns splits -dds-topics.
func patterns(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
