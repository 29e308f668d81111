package main

import (
	"fmt"
	"os"

	benchgpu "github.com/rmw-rgaps/rmw_rgaps/bench/gpu"
)

func init() {
	register(benchgpu.ChildCommand, "(internal) subscriber process of `rgaps-bench gpu`", func(args []string) error {
		if len(args) != 0 {
			return errUsage
		}
		return benchgpu.ChildMain()
	})
}

// runBenchGPU is `rgaps-bench gpu [flags]`: the thesis' GPU data paths
// (Tables 4.2–4.5) measured on this host; Markdown on stdout. ^C stops it
// cleanly (subscriber processes ended, shared memory removed).
func runBenchGPU(args []string) error {
	ctx, stop := signalContext()
	defer stop()
	if err := benchgpu.Command(ctx, args, os.Stdout, os.Stderr); err != nil {
		if benchgpu.IsNoGPU(err) {
			return fmt.Errorf("gpu: %w", err)
		}
		return err
	}
	return nil
}
