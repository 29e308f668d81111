package main

import (
	"os"

	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	register("daemon", "(internal) rgapsd, as `rgaps daemon`: the GPU pools and bridges the benchmarks start", func(args []string) error {
		cfg, err := zerocopy.Config{}.FromEnv()
		if err != nil {
			return err
		}
		ctx, stop := signalContext()
		defer stop()
		return rgapsd.Main(ctx, args, cfg, os.Stderr)
	})
}
