package main

import (
	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	register("daemon", "(internal) rgapsd, as `rgaps daemon`: the GPU pools and bridges the benchmarks start", func(args []string) error {
		cfg, err := zerocopy.Config{}.FromEnv()
		if err != nil {
			return err
		}
		return bridge.Main(args, cfg, zerocopy.LookupGroup)
	})
}
