// Package subcmd is the command dispatch the project's binaries share
// (`rgaps <command>`, `rgaps-bench <benchmark>`): a table of named
// commands, the usage listing and the exit codes. It imports nothing of the
// project.
package subcmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrUsage makes Main print nothing more and exit 2 (the command printed
// its own usage).
var ErrUsage = errors.New("usage")

// Set is a binary's commands.
type Set struct {
	Prog  string // the binary's name, in messages
	Noun  string // what a command is called ("command", "benchmark")
	Width int    // width of the name column in the usage listing
	Tail  string // printed after the listing
	// Quiet are errors, besides ErrUsage, after which the command has said
	// all there is to say (flag.ErrHelp): exit 2 without a message.
	Quiet []error
	// AtExit, when set, runs right before Main exits (after the command).
	AtExit func()
	cmds   []command
}

type command struct {
	name, summary string
	run           func(args []string) error
}

// Register adds a command. A summary starting with "(internal)" keeps it
// out of the usage listing.
func (s *Set) Register(name, summary string, run func(args []string) error) {
	s.cmds = append(s.cmds, command{name, summary, run})
}

// Usage lists the commands on w.
func (s *Set) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <%s> [arguments]\n\n%ss:\n", s.Prog, s.Noun, s.Noun)
	for _, c := range s.cmds {
		if !strings.HasPrefix(c.summary, "(internal)") {
			fmt.Fprintf(w, "  %-*s %s\n", s.Width, c.name, c.summary)
		}
	}
	if s.Tail != "" {
		fmt.Fprintln(w, "\n"+s.Tail)
	}
}

// Main runs the command args[0] names with the rest of args and exits: 0
// on success, 2 on a usage error or an unknown command, 1 on any other
// error (printed with the binary's and the command's name).
func (s *Set) Main(args []string) {
	if len(args) < 1 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		s.Usage(os.Stderr)
		s.exit(2)
	}
	for _, c := range s.cmds {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:])
		switch {
		case err == nil:
			s.exit(0)
		case errors.Is(err, ErrUsage):
			s.exit(2)
		}
		for _, q := range s.Quiet {
			if errors.Is(err, q) {
				s.exit(2)
			}
		}
		fmt.Fprintf(os.Stderr, "%s %s: %v\n", s.Prog, c.name, err)
		s.exit(1)
	}
	fmt.Fprintf(os.Stderr, "%s: unknown %s %q\n", s.Prog, s.Noun, args[0])
	s.Usage(os.Stderr)
	s.exit(2)
}

func (s *Set) exit(code int) {
	if s.AtExit != nil {
		s.AtExit()
	}
	os.Exit(code)
}
