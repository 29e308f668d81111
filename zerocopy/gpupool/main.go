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
	f := AddFlags(fs, domain)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := f.Config(prefix, lookupGroup)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg.Logger = log
	srv, err := Listen(cfg)
	if errors.Is(err, unix.EADDRINUSE) {
		fmt.Fprintf(os.Stderr, "rgaps daemon: a daemon for domain %d runs already\n", cfg.Domain)
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

// Flags are the pool server's command-line flags (`rgaps daemon`): -domain,
// -idle, -allow-group.
type Flags struct {
	domain *int
	idle   *time.Duration
	group  *string
}

// AddFlags defines the pool server's flags on fs.
func AddFlags(fs *flag.FlagSet, domain uint32) *Flags {
	return &Flags{
		domain: fs.Int("domain", int(domain), "ROS domain id"),
		idle:   fs.Duration("idle", 0, "exit after this long without GPU pools or clients (0: run until stopped)"),
		group:  fs.String("allow-group", "", "also serve processes of this group (name or gid)"),
	}
}

// Domain is the -domain value.
func (f *Flags) Domain() int { return *f.domain }

// SetIdle overrides -idle (a daemon that also bridges never idles out).
func (f *Flags) SetIdle(d time.Duration) { *f.idle = d }

// Config checks the parsed flags and makes the server configuration (no
// logger).
func (f *Flags) Config(prefix string, lookupGroup func(string) (int, error)) (ServerConfig, error) {
	if *f.domain < 0 || *f.domain > 232 {
		return ServerConfig{}, fmt.Errorf("bad domain %d", *f.domain)
	}
	gid := -1
	if *f.group != "" {
		g, err := lookupGroup(*f.group)
		if err != nil {
			return ServerConfig{}, err
		}
		gid = g
	}
	return ServerConfig{Prefix: prefix, Domain: uint32(*f.domain), AllowGroup: gid, Idle: *f.idle}, nil
}
