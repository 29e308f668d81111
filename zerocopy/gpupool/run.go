package gpupool

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// ErrRunning is returned by Run when a daemon for the domain runs already
// (its socket name is taken): the pools are served, by that daemon.
var ErrRunning = errors.New("a daemon for this domain runs already")

// Run is the GPU pool server of rgapsd: it listens for cfg's domain and
// serves until ctx is done or the server was idle for cfg.Idle, then frees
// every pool. It returns an error wrapping ErrRunning at once when a daemon
// for the domain runs already. It installs no signal handler and logs only
// through cfg.Logger (nil: silent); the daemon's command owns both.
func Run(ctx context.Context, cfg ServerConfig) error {
	srv, err := Listen(cfg)
	if errors.Is(err, unix.EADDRINUSE) {
		return fmt.Errorf("domain %d: %w", cfg.Domain, ErrRunning)
	}
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	select {
	case err = <-done: // idle, or a failure
		srv.Close()
	case <-ctx.Done():
		srv.Close()
		err = <-done
	}
	return err
}

// Flags are the pool server's command-line flags (`rgaps daemon`): -domain,
// -idle, -allow-group. The command defines them on its flag set (AddFlags),
// parses, and turns them into a ServerConfig (Config).
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
