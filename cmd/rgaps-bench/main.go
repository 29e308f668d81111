// Command rgaps-bench runs the benchmarks of rmw_rgaps. It is a binary of
// its own so that the daemon and the topic tools (`rgaps`) and the rmw
// library link none of the benchmark code, its plotting libraries or the
// Iceoryx loader.
//
//	rgaps-bench local|gpu|bridge|e2e|ros|dds|scale [flags]
//
// Its hidden commands are what the benchmarks re-execute: the subscriber
// processes of local and gpu, the child roles of e2e, and `daemon` (the
// same rgapsd as `rgaps daemon`, package rgapsd) for the GPU pools and the
// bridges the benchmarks start.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/rmw-rgaps/rmw_rgaps/internal/subcmd"
)

// errUsage makes main print the usage and exit 2.
var errUsage = subcmd.ErrUsage

var commands = &subcmd.Set{Quiet: []error{flag.ErrHelp}, Prog: "rgaps-bench", Noun: "benchmark", Width: 8,
	Tail: `run "rgaps-bench <benchmark> -h" for its flags`}

func register(name, summary string, run func(args []string) error) {
	commands.Register(name, summary, run)
}

func usage() { commands.Usage(os.Stderr) }

// signalContext is the context of a benchmark run: ^C or SIGTERM cancels
// it, and the benchmark then ends its processes and removes its shared
// memory before returning.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// main runs a benchmark. With RGAPS_BENCH_CPUPROFILE=FILE it writes a Go
// CPU profile of the benchmark's own process (not of the child processes
// or daemons it starts) to FILE, for `go tool pprof`.
func main() {
	if f := os.Getenv("RGAPS_BENCH_CPUPROFILE"); f != "" {
		stop, err := cpuProfile(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rgaps-bench:", err)
			os.Exit(1)
		}
		commands.AtExit = stop
	}
	commands.Main(os.Args[1:])
}

func cpuProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
