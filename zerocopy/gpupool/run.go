package gpupool

import (
	"context"
	"errors"
	"fmt"

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
