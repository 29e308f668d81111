package main

import (
	"os"

	benchbridge "github.com/rmw-rgaps/rmw_rgaps/bench/bridge"
)

// runBenchBridge is `rgaps-bench bridge [flags]`: throughput and latency
// through two in-process bridges over loopback, against a bare
// fi_writedata loop and the plain TCP transport in the same run; Markdown
// on stdout, progress lines on stderr. ^C stops it cleanly (bridges
// closed, shared memory removed).
func runBenchBridge(args []string) error {
	ctx, stop := signalContext()
	defer stop()
	return benchbridge.Command(ctx, args, os.Stdout, os.Stderr)
}
