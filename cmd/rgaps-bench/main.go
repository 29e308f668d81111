// Command rgaps-bench runs the benchmarks of rmw_rgaps. It is a binary of
// its own so that the daemon and the topic tools (`rgaps`) and the rmw
// library link none of the benchmark code, its plotting libraries or the
// Iceoryx loader.
//
//	rgaps-bench local|gpu|bridge|e2e [flags]
//
// Its hidden commands are what the benchmarks re-execute: the subscriber
// processes of local and gpu, the child roles of e2e, and `daemon` (the
// same rgapsd as `rgaps daemon`, package rgapsd) for the GPU pools and the
// bridges the benchmarks start.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// errUsage makes main print the usage and exit 2.
var errUsage = errors.New("usage")

type command struct {
	name, summary string
	run           func(args []string) error
}

var commands []command

func register(name, summary string, run func(args []string) error) {
	commands = append(commands, command{name, summary, run})
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: rgaps-bench <benchmark> [flags]\n\nbenchmarks:")
	for _, c := range commands {
		if strings.HasPrefix(c.summary, "(internal)") {
			continue
		}
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(os.Stderr, "\nrun \"rgaps-bench <benchmark> -h\" for its flags")
}

// signalContext is the context of a benchmark run: ^C or SIGTERM cancels
// it, and the benchmark then ends its processes and removes its shared
// memory before returning.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	for _, c := range commands {
		if c.name == os.Args[1] {
			err := c.run(os.Args[2:])
			switch {
			case err == nil:
			case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
				os.Exit(2)
			default:
				fmt.Fprintln(os.Stderr, "rgaps-bench "+c.name+":", err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "rgaps-bench: unknown benchmark %q\n", os.Args[1])
	usage()
	os.Exit(2)
}
