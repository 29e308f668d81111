package main

import (
	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	register("daemon", "run rgapsd: owns the host's GPU pools (started automatically when needed) and, with peers, bridges topics to other hosts", runDaemon)
}

func runDaemon(args []string) error {
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return err
	}
	return bridge.Main(args, cfg, zerocopy.LookupGroup)
}
