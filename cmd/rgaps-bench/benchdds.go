package main

import (
	"os"

	benchdds "github.com/rmw-rgaps/rmw_rgaps/bench/dds"
)

func init() {
	register(benchdds.ChildCommand, "(internal) a DDS endpoint process of `rgaps-bench dds`", benchdds.Child)
}

// runBenchDDS is `rgaps-bench dds [flags]`: the DDS gateway's latency and
// throughput against DDS, with the gateway and the DDS endpoints in
// processes of their own and in one process; Markdown on stdout. ^C stops
// it.
func runBenchDDS(args []string) error {
	ctx, stop := signalContext()
	defer stop()
	return benchdds.Command(ctx, args, os.Stdout, os.Stderr)
}
