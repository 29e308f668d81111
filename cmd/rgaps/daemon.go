package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	register("daemon", "run rgapsd: owns the host's GPU pools (started automatically when needed) and, with peers, bridges topics to other hosts", runDaemon)
}

// runDaemon is `rgaps daemon [flags]`: SIGINT and SIGTERM stop it (pools
// freed, bridge closed); everything else is rgapsd.Main.
func runDaemon(args []string) error {
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return rgapsd.Main(ctx, args, cfg, os.Stderr)
}
