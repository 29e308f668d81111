package main

import (
	"os"

	benchdds "github.com/rmw-rgaps/rmw_rgaps/bench/dds"
)

// runBenchDDS is `rgaps-bench dds [flags]`: the DDS gateway's latency and
// throughput against DDS in one process; Markdown on stdout. ^C stops it.
func runBenchDDS(args []string) error {
	ctx, stop := signalContext()
	defer stop()
	return benchdds.Command(ctx, args, os.Stdout, os.Stderr)
}
