package gpupool

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Main runs the daemon with command-line arguments (`rgaps daemon ...`):
// -domain N, -idle D, -allow-group GID. prefix is the resolved
// shared-memory prefix and domain the default domain. It returns when the
// daemon stops (a signal, or idleness), or nil at once when a daemon for the
// domain runs already.
func Main(args []string, prefix string, domain uint32, lookupGroup func(string) (int, error)) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	dom := fs.Int("domain", int(domain), "ROS domain id")
	idle := fs.Duration("idle", 0, "exit after this long without pools or clients (0: run until stopped)")
	group := fs.String("allow-group", "", "also serve processes of this group (name or gid)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dom < 0 {
		return fmt.Errorf("bad domain %d", *dom)
	}
	gid := -1
	if *group != "" {
		g, err := lookupGroup(*group)
		if err != nil {
			return err
		}
		gid = g
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	srv, err := Listen(ServerConfig{Prefix: prefix, Domain: uint32(*dom), AllowGroup: gid, Idle: *idle, Logger: log})
	if errors.Is(err, unix.EADDRINUSE) {
		fmt.Fprintf(os.Stderr, "rgaps daemon: a daemon for domain %d runs already\n", *dom)
		return nil
	}
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		if _, ok := <-sig; ok {
			srv.Close()
		}
	}()
	start := time.Now()
	err = srv.Serve()
	log.Info("rgaps daemon stopped", "ran", time.Since(start).Round(time.Millisecond))
	return err
}
