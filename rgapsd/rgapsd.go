// Package rgapsd is the daemon as a program: its command line, its log and
// its exit. `rgaps daemon` (the binary CMake installs, also auto-started
// for GPU pools), `rgaps-bench daemon` (for the pools and bridges the
// benchmarks start) and the test binaries that serve as the daemon all run
// Main, so tests exercise the daemon code production runs.
//
// The work is bridge.Run (and, inside it, gpupool.Run); this package only
// turns arguments into their options and writes the log. Signals are the
// caller's: it cancels ctx. It must not be imported by a library.
package rgapsd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge"
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
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o.Log = log
	start := time.Now()
	err = bridge.Run(ctx, o)
	if errors.Is(err, gpupool.ErrRunning) {
		fmt.Fprintf(stderr, "rgaps daemon: a daemon for domain %d runs already\n", o.Pool.Domain)
		return nil
	}
	log.Info("rgaps daemon stopped", "ran", time.Since(start).Round(time.Millisecond))
	return err
}
