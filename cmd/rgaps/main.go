// Command rgaps is the CLI of rmw_rgaps and its per-host daemon: topic
// tools, the demo, the daemon (rgapsd, also auto-started for GPU pools) and
// doctor. The benchmarks are the separate binary rgaps-bench; `rgaps bench`
// runs it.
//
//	rgaps topic list|info|pub|echo|hz ...
//	rgaps node list
//	rgaps demo
//	rgaps daemon [flags]
//	rgaps doctor
package main

import (
	"flag"
	"os"

	"github.com/rmw-rgaps/rmw_rgaps/internal/subcmd"
)

// errUsage makes main print the usage and exit 2.
var errUsage = subcmd.ErrUsage

var commands = &subcmd.Set{Quiet: []error{flag.ErrHelp}, Prog: "rgaps", Noun: "command", Width: 12,
	Tail: "environment: ROS_DOMAIN_ID, RGAPS_SHM_PREFIX, RGAPS_POOL_SIZE, RGAPS_BUSY_POLL"}

func register(name, summary string, run func(args []string) error) {
	commands.Register(name, summary, run)
}

func usage() { commands.Usage(os.Stderr) }

func main() { commands.Main(os.Args[1:]) }
