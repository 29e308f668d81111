package main

import (
	"os"

	benchscale "github.com/rmw-rgaps/rmw_rgaps/bench/scale"
)

func init() {
	register("scale", "the bridge with many topics and subscriber processes between two network namespaces: set-up, discovery and first-message times, each daemon's RSS and idle CPU (needs root for the namespaces, or -loopback)", runBenchScale)
}

// runBenchScale is `rgaps-bench scale [flags]`: Markdown on stdout,
// progress lines on stderr. ^C stops it cleanly (processes stopped,
// namespaces and shared memory removed).
func runBenchScale(args []string) error {
	ctx, stop := signalContext()
	defer stop()
	return benchscale.Command(ctx, args, os.Stdout, os.Stderr)
}
