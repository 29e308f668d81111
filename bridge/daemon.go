package bridge

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

// DaemonOptions configure rgapsd (Run): the owner of the host's GPU pools
// (package gpupool) and, when Bridge is set, the bridge to other hosts.
type DaemonOptions struct {
	Pool   gpupool.ServerConfig
	Bridge *Options     // nil: the GPU pools only
	Log    *slog.Logger // the pool server's and the bridge's, where they have none; nil: silent
}

// Run runs rgapsd until ctx is done, or until the GPU-pool-only daemon was
// idle for o.Pool.Idle (a daemon that bridges never idles out). A daemon
// that only serves pools returns an error wrapping gpupool.ErrRunning when
// one runs already for the domain; a bridging daemon then leaves the pools
// to that one and runs the bridge alone. Run parses nothing, installs no
// signal handler and configures no logging: its command (package rgapsd)
// does.
func Run(ctx context.Context, o DaemonOptions) error {
	if o.Pool.Logger == nil {
		o.Pool.Logger = o.Log
	}
	if o.Bridge == nil {
		return gpupool.Run(ctx, o.Pool)
	}
	bo := *o.Bridge
	if bo.Log == nil {
		bo.Log = o.Log
	}
	b, err := New(bo)
	if err != nil {
		return err
	}
	defer b.Close()
	o.Pool.Idle = 0
	err = gpupool.Run(ctx, o.Pool)
	if errors.Is(err, gpupool.ErrRunning) {
		// A GPU-pool daemon (auto-started) runs already: it keeps serving
		// the pools; this process is the bridge.
		if o.Log != nil {
			o.Log.Info("GPU pools are served by the daemon already running; this process runs the bridge")
		}
		<-ctx.Done()
		return nil
	}
	return err
}

// DaemonFlags are rgapsd's command-line flags: the pool server's (-domain,
// -idle, -allow-group) and the bridge's. BindFlags defines them; after parsing,
// Options turns them into DaemonOptions.
type DaemonFlags struct {
	engine                                                        zerocopy.Config
	domain                                                        *int
	idle                                                          *time.Duration
	group                                                         *string
	config, listen, peers, secretFile, hostID, provider, dataHost *string
	ringSize, maxChunk, mode, watermark, rails                    *string
	busyPoll                                                      *time.Duration
	noChunking, perTopic                                          *bool
	maxPeers, maxRings                                            *int
}

// BindFlags defines rgapsd's flags on fs. engine is the engine
// configuration from the environment (prefix, domain, pool size): the
// defaults, and what the bridge's engine runs with.
func BindFlags(fs *flag.FlagSet, engine zerocopy.Config) *DaemonFlags {
	return &DaemonFlags{
		engine:     engine,
		domain:     fs.Int("domain", int(engine.Domain), "ROS domain id"),
		idle:       fs.Duration("idle", 0, "exit after this long without GPU pools or clients (0: run until stopped; a bridging daemon never idles out)"),
		group:      fs.String("allow-group", "", "also serve processes of this group (name or gid)"),
		config:     fs.String("config", os.Getenv("RGAPS_BRIDGE_CONFIG"), "bridge config file (key = value lines; see docs/ARCHITECTURE.md)"),
		listen:     fs.String("listen", "", "bridge: control address to listen on (host:port; default from the config, or :"+fmt.Sprint(control.BasePort)+"+domain when peers are set)"),
		peers:      fs.String("peers", os.Getenv("ROS_STATIC_PEERS"), "bridge: peers to connect to, ';'-separated host[:port] (default $ROS_STATIC_PEERS)"),
		secretFile: fs.String("secret-file", "", "bridge: file holding the cluster secret (or $RGAPS_CLUSTER_SECRET)"),
		hostID:     fs.String("host-id", "", "bridge: this host's id (default /etc/machine-id)"),
		provider:   fs.String("provider", "", "bridge: data transport: fabric:tcp (default), fabric:shm, fabric:verbs, tcp"),
		dataHost:   fs.String("data-host", "", "bridge: local address of data links (default: the listen host)"),
		ringSize:   fs.String("ring-size", "", "bridge: size of each ring this daemon offers (default 64MiB)"),
		maxChunk:   fs.String("max-chunk", "", "bridge: largest payload of one ring record (default 4MiB, or what the ring allows if less)"),
		mode:       fs.String("mode", "write-imm", "bridge: signalling: write-imm (RDMA write with immediate) or write-twice (data write, then tail write)"),
		watermark:  fs.String("watermark", "0", "bridge: head write-back watermark: 0 (every record), 1/8, 1/4, 1/2"),
		rails:      fs.String("rails", "", "bridge: connections each ring is written over at once, 1…16, or auto (default: the config's rails, else auto: one per 4 cores, at most 4, for TCP-based providers; 1 otherwise)"),
		busyPoll:   fs.Duration("busy-poll", 0, "bridge: how long idle links keep polling before they sleep (lower latency for CPU; default: a few yields, then sleeps up to 200µs, and in the kernel after 10ms without traffic)"),
		noChunking: fs.Bool("no-chunking", false, "bridge: refuse (log and count) messages larger than one ring record instead of splitting them"),
		perTopic:   fs.Bool("per-topic", false, "bridge: one ring (and transfer goroutines) per topic instead of one per host pair"),
		maxPeers:   fs.Int("max-peers", DefaultMaxPeers, "bridge: most peer daemons (host ids) known at once; more are refused"),
		maxRings:   fs.Int("max-rings-per-peer", DefaultMaxRingsPerPeer, "bridge: most rings one peer may ask this daemon to write into; further offers are refused"),
	}
}

// Options checks the parsed flags and makes the daemon's options (no
// logger): the bridge is configured when a config file, a listen address
// or peers are given. lookupGroup resolves -allow-group.
func (f *DaemonFlags) Options(lookupGroup func(string) (int, error)) (DaemonOptions, error) {
	dom := *f.domain
	if dom < 0 || dom > 232 {
		return DaemonOptions{}, fmt.Errorf("bad domain %d", dom)
	}
	ecfg := f.engine
	ecfg.Domain = uint32(dom)
	ecfg.JanitorPeriod = DaemonJanitorPeriod
	d := DaemonOptions{Pool: gpupool.ServerConfig{Prefix: ecfg.Prefix, Domain: ecfg.Domain, AllowGroup: -1, Idle: *f.idle}}
	if *f.group != "" {
		gid, err := lookupGroup(*f.group)
		if err != nil {
			return d, err
		}
		d.Pool.AllowGroup = gid
	}
	if *f.config == "" && *f.listen == "" && *f.peers == "" {
		return d, nil
	}
	o := Options{Engine: ecfg, PerTopic: *f.perTopic, BusyPoll: *f.busyPoll, NoChunking: *f.noChunking,
		MaxPeers: *f.maxPeers, MaxRingsPerPeer: *f.maxRings}
	var railsKey string // the config file's rails
	if *f.config != "" {
		c, err := control.LoadConfig(*f.config, dom)
		if err != nil {
			return d, err
		}
		o.Control = c
		o.Provider = c.Provider
		railsKey = c.Rails
	}
	if *f.listen != "" {
		o.Control.Listen = *f.listen
	}
	if o.Control.Listen == "" {
		o.Control.Listen = fmt.Sprintf(":%d", control.DefaultPort(dom))
	}
	if *f.peers != "" {
		ps, err := control.ParsePeers(*f.peers, dom)
		if err != nil {
			return d, err
		}
		o.Control.Peers = append(o.Control.Peers, ps...)
	}
	if *f.secretFile != "" {
		b, err := readSecretFile(*f.secretFile)
		if err != nil {
			return d, err
		}
		o.Control.Secret = b
	}
	if len(o.Control.Secret) == 0 {
		o.Control.Secret = []byte(os.Getenv("RGAPS_CLUSTER_SECRET"))
	}
	if *f.hostID != "" {
		o.Control.HostID = *f.hostID
	}
	if o.Control.HostID == "" {
		h, err := control.DefaultHostID()
		if err != nil {
			return d, err
		}
		o.Control.HostID = h
	}
	if *f.provider != "" {
		o.Provider = *f.provider
	}
	o.DataHost = *f.dataHost
	var err error
	if o.RingSize, err = sizeFlag(*f.ringSize); err != nil {
		return d, fmt.Errorf("-ring-size: %w", err)
	}
	if o.MaxChunk, err = sizeFlag(*f.maxChunk); err != nil {
		return d, fmt.Errorf("-max-chunk: %w", err)
	}
	if o.Mode, err = ParseMode(*f.mode); err != nil {
		return d, err
	}
	if o.Watermark, err = ParseWatermark(*f.watermark); err != nil {
		return d, err
	}
	rails := *f.rails
	if rails == "" {
		rails = railsKey
	}
	if o.Rails, err = ParseRails(rails); err != nil {
		return d, err
	}
	d.Bridge = &o
	return d, nil
}

// ParseRails parses a rail count: "auto" (or "", "0": AutoRails decides)
// or 1 … ring.MaxRails.
func ParseRails(s string) (int, error) {
	if s == "" || s == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > ring.MaxRails {
		return 0, fmt.Errorf("%w: rails %q: want auto or 1…%d", ErrConfig, s, ring.MaxRails)
	}
	return n, nil
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
