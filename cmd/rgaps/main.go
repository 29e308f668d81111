// Command rgaps is the CLI of rmw_rgaps and its per-host daemon: topic
// tools, the demo, the daemon (rgapsd, also auto-started for GPU pools) and
// doctor. The benchmarks are the separate binary rgaps-bench; `rgaps bench`
// runs it.
//
//	rgaps topic list|info|pub|echo|hz ...
//	rgaps demo
//	rgaps daemon [flags]
//	rgaps doctor
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
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
	fmt.Fprintln(os.Stderr, "usage: rgaps <command> [arguments]\n\ncommands:")
	for _, c := range commands {
		if strings.HasPrefix(c.summary, "(internal)") {
			continue
		}
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(os.Stderr, "\nenvironment: ROS_DOMAIN_ID, RGAPS_SHM_PREFIX, RGAPS_POOL_SIZE, RGAPS_BUSY_POLL")
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
				fmt.Fprintln(os.Stderr, "rgaps "+c.name+":", err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "rgaps: unknown command %q\n", os.Args[1])
	usage()
	os.Exit(2)
}
