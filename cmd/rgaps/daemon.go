package main

import (
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

func init() {
	register("daemon", "run rgapsd, the per-host daemon that owns GPU pools (started automatically when needed)", runDaemon)
}

func runDaemon(args []string) error {
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return err
	}
	return gpupool.Main(args, cfg.Prefix, cfg.Domain, zerocopy.LookupGroup)
}
