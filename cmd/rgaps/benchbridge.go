package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/rmw-rgaps/rmw_rgaps/internal/benchbridge"
)

// runBenchBridge is `rgaps bench bridge [flags]`: throughput and latency
// through two in-process bridges over loopback, against a bare
// fi_writedata loop and the plain TCP transport in the same run; Markdown
// on stdout, progress lines on stderr. ^C stops it cleanly (bridges
// closed, shared memory removed).
func runBenchBridge(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return benchbridge.Command(ctx, args, os.Stdout, os.Stderr)
}
