package bridge

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

// Main runs rgapsd (`rgaps daemon ...`): the owner of the host's GPU pools
// (package gpupool) and, when peers or a listen address are configured,
// the bridge to other hosts. ecfg is the engine configuration from the
// environment (prefix, domain). It returns when a signal (SIGINT, SIGTERM)
// stops it, or when the GPU-pool-only daemon was idle for -idle.
func Main(args []string, ecfg zerocopy.Config, lookupGroup func(string) (int, error)) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	pf := gpupool.AddFlags(fs, ecfg.Domain)
	config := fs.String("config", os.Getenv("RGAPS_BRIDGE_CONFIG"), "bridge config file (key = value lines; see docs/ARCHITECTURE.md)")
	listen := fs.String("listen", "", "bridge: control address to listen on (host:port; default from the config, or :"+fmt.Sprint(control.BasePort)+"+domain when peers are set)")
	peers := fs.String("peers", os.Getenv("ROS_STATIC_PEERS"), "bridge: peers to connect to, ';'-separated host[:port] (default $ROS_STATIC_PEERS)")
	secretFile := fs.String("secret-file", "", "bridge: file holding the cluster secret (or $RGAPS_CLUSTER_SECRET)")
	hostID := fs.String("host-id", "", "bridge: this host's id (default /etc/machine-id)")
	provider := fs.String("provider", "", "bridge: data transport: fabric:tcp (default), fabric:shm, fabric:verbs, tcp")
	dataHost := fs.String("data-host", "", "bridge: local address of data links (default: the listen host)")
	ringSize := fs.String("ring-size", "", "bridge: size of each ring this daemon offers (default 64MiB)")
	maxChunk := fs.String("max-chunk", "", "bridge: largest payload of one ring record (default: what the ring allows)")
	mode := fs.String("mode", "write-imm", "bridge: signalling: write-imm (RDMA write with immediate) or write-twice (data write, then tail write)")
	wm := fs.String("watermark", "0", "bridge: head write-back watermark: 0 (every record), 1/8, 1/4, 1/2")
	busyPoll := fs.Duration("busy-poll", 0, "bridge: how long idle links keep polling before they sleep (lower latency for CPU; default: a few yields, then sleeps up to 200µs)")
	noChunking := fs.Bool("no-chunking", false, "bridge: refuse (log and count) messages larger than one ring record instead of splitting them")
	perTopic := fs.Bool("per-topic", false, "bridge: one ring (and transfer goroutines) per topic instead of one per host pair")
	maxPeers := fs.Int("max-peers", DefaultMaxPeers, "bridge: most peer daemons (host ids) known at once; more are refused")
	maxRings := fs.Int("max-rings-per-peer", DefaultMaxRingsPerPeer, "bridge: most rings one peer may ask this daemon to write into; further offers are refused")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	dom := pf.Domain()
	if dom < 0 || dom > 232 {
		return fmt.Errorf("bad domain %d", dom)
	}
	ecfg.Domain = uint32(dom)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	// The bridge, when configured.
	var opts *Options
	if *config != "" || *listen != "" || *peers != "" {
		o := Options{Engine: ecfg, Log: log, PerTopic: *perTopic, BusyPoll: *busyPoll, NoChunking: *noChunking,
			MaxPeers: *maxPeers, MaxRingsPerPeer: *maxRings}
		if *config != "" {
			c, err := control.LoadConfig(*config, dom)
			if err != nil {
				return err
			}
			o.Control = c
			o.Provider = c.Provider
		}
		if *listen != "" {
			o.Control.Listen = *listen
		}
		if o.Control.Listen == "" {
			o.Control.Listen = fmt.Sprintf(":%d", control.DefaultPort(dom))
		}
		if *peers != "" {
			ps, err := control.ParsePeers(*peers, dom)
			if err != nil {
				return err
			}
			o.Control.Peers = append(o.Control.Peers, ps...)
		}
		if *secretFile != "" {
			b, err := readSecretFile(*secretFile)
			if err != nil {
				return err
			}
			o.Control.Secret = b
		}
		if len(o.Control.Secret) == 0 {
			o.Control.Secret = []byte(os.Getenv("RGAPS_CLUSTER_SECRET"))
		}
		if *hostID != "" {
			o.Control.HostID = *hostID
		}
		if o.Control.HostID == "" {
			h, err := control.DefaultHostID()
			if err != nil {
				return err
			}
			o.Control.HostID = h
		}
		if *provider != "" {
			o.Provider = *provider
		}
		o.DataHost = *dataHost
		var err error
		if o.RingSize, err = sizeFlag(*ringSize); err != nil {
			return fmt.Errorf("-ring-size: %w", err)
		}
		if o.MaxChunk, err = sizeFlag(*maxChunk); err != nil {
			return fmt.Errorf("-max-chunk: %w", err)
		}
		if o.Mode, err = ParseMode(*mode); err != nil {
			return err
		}
		if o.Watermark, err = ParseWatermark(*wm); err != nil {
			return err
		}
		opts = &o
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	var b *Bridge
	if opts != nil {
		var err error
		if b, err = New(*opts); err != nil {
			return err
		}
		defer b.Close()
		pf.SetIdle(0)
	}
	scfg, err := pf.Config(ecfg.Prefix, lookupGroup)
	if err != nil {
		return err
	}
	scfg.Logger = log
	srv, err := gpupool.Listen(scfg)
	if errors.Is(err, unix.EADDRINUSE) {
		if b == nil {
			fmt.Fprintf(os.Stderr, "rgaps daemon: a daemon for domain %d runs already\n", dom)
			return nil
		}
		// A GPU-pool daemon (auto-started) runs already: it keeps serving
		// the pools; this process is the bridge.
		log.Info("GPU pools are served by the daemon already running; this process runs the bridge")
		srv = nil
	} else if err != nil {
		return err
	}
	start := time.Now()
	done := make(chan error, 1)
	if srv != nil {
		go func() { done <- srv.Serve() }()
	}
	select {
	case <-sigs:
		err = nil
	case err = <-done:
		srv = nil
	}
	if srv != nil {
		srv.Close()
		<-done
	}
	log.Info("rgaps daemon stopped", "ran", time.Since(start).Round(time.Millisecond))
	return err
}

// ParseMode parses a signalling mode name ("write-imm", "write-twice").
func ParseMode(s string) (ring.Mode, error) {
	switch s {
	case "write-imm", "imm", "":
		return ring.WriteImm, nil
	case "write-twice", "twice":
		return ring.WriteTwice, nil
	}
	return 0, fmt.Errorf("%w: mode %q: want write-imm or write-twice", ErrConfig, s)
}

// ParseWatermark parses "0", "1/8", "1/4", "1/2".
func ParseWatermark(s string) (ring.Watermark, error) {
	switch strings.TrimSpace(s) {
	case "0", "", "every-record":
		return ring.EveryRecord, nil
	case "1/8":
		return ring.Eighth, nil
	case "1/4":
		return ring.Quarter, nil
	case "1/2":
		return ring.Half, nil
	}
	return 0, fmt.Errorf("%w: watermark %q: want 0, 1/8, 1/4 or 1/2", ErrConfig, s)
}

func sizeFlag(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	return zerocopy.ParseSize(s)
}

// readSecretFile reads a cluster secret; the file must not be readable by
// group or others (a leaked secret lets anyone on the network join).
func readSecretFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: secret file: %v", ErrConfig, err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: secret file %s has mode %v: it must not be readable by group or others (chmod 600)", ErrConfig, path, st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: secret file: %v", ErrConfig, err)
	}
	return []byte(strings.TrimRight(string(b), "\r\n")), nil
}
