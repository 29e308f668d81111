package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	register("shm", "shared memory of the domain: shm list | shm clean (remove what crashed processes and damage left, say what is kept)", runShm)
}

func runShm(args []string) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "clean") {
		fmt.Fprintln(os.Stderr, "usage: rgaps shm list|clean [-domain N]")
		return errUsage
	}
	fs := flag.NewFlagSet("shm "+args[0], flag.ContinueOnError)
	domain := fs.Int("domain", -1, "ROS domain id (default ROS_DOMAIN_ID or 0)")
	if err := fs.Parse(args[1:]); err != nil {
		return errUsage
	}
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return err
	}
	if *domain >= 0 {
		cfg.Domain = uint32(*domain)
	}
	if args[0] == "list" {
		prefix := fmt.Sprintf("%s_d%d_", cfg.Prefix, cfg.Domain)
		names, err := shm.List(prefix)
		if err != nil {
			return err
		}
		for _, n := range names {
			st, err := os.Stat(filepath.Join(shm.Dir, n))
			if err != nil {
				continue
			}
			fmt.Printf("%-60s %s\n", n, human(uint64(st.Size())))
		}
		return nil
	}
	cfg.SkipStaleClean = true // clean below, and report it
	d, err := zerocopy.Open(cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	ents, err := d.Clean()
	if err != nil {
		return err
	}
	// Removed first, then what was kept and why (in use, damaged but
	// still mapped by a process, not this user's).
	n := 0
	for _, e := range ents {
		if e.Removed {
			fmt.Printf("removed %s: %s\n", e.Name, e.Reason)
			n++
		}
	}
	for _, e := range ents {
		if !e.Removed {
			fmt.Printf("kept %s: %s\n", e.Name, e.Reason)
		}
	}
	if n == 0 {
		fmt.Println("nothing to clean")
	}
	return nil
}
