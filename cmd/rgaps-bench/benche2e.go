package main

import (
	"os"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	_ "github.com/rmw-rgaps/rmw_rgaps/bench/e2e/ours" // the rgaps system of bench e2e
)

func init() {
	register(benche2e.ChildCommand, "(internal) child process of `rgaps-bench e2e`", benche2e.ChildMain)
}

// runBenchE2E is `rgaps-bench e2e [flags]`: the thesis' end-to-end
// measurement (Figure 4.6) with its baseline and the serial lower bound;
// Markdown on stdout, a progress bar on stderr. ^C stops it cleanly (child
// processes and RouDi ended, namespaces removed).
func runBenchE2E(args []string) error {
	ctx, stop := signalContext()
	defer stop()
	return benche2e.Command(ctx, args, os.Stdout, os.Stderr)
}
