package benchros

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	"github.com/rmw-rgaps/rmw_rgaps/bench/e2e/ours"
	"github.com/rmw-rgaps/rmw_rgaps/internal/daemonproc"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// rosSystem runs ros_bench processes: one publisher and N subscribers, on
// one emulated host or (hosts 2) the publisher on host a and the
// subscribers on host b, each host a rgaps daemon with its own
// RGAPS_SHM_PREFIX, bridged over loopback like `rgaps-bench e2e`.
type rosSystem struct {
	name, rmw, mode string // mode: ros_bench's device or copy
	tag             string // in the shared-memory prefixes
	hosts           int
	bin             string
	timeout         time.Duration

	env     *benche2e.Env
	dir     string
	daemons []*daemonproc.Daemon
	pub     *proc
	subs    []*proc
	seq     uint32
	failed  bool
}

func (s *rosSystem) Name() string { return s.name }

// stagePublish is how long the publisher's publish call took (the rest of
// a subscriber's time is delivery: waking, taking, the callback).
const stagePublish = "publish call"

// StageOrder names the stages a round reports.
func (s *rosSystem) StageOrder() []string { return []string{stagePublish} }

// prefix is host h's shared-memory prefix for the system tagged tag: the
// caller's RGAPS_SHM_PREFIX (else rgaps) + tag + the harness's pid + a or b.
func prefix(tag string, h int) string {
	base := os.Getenv("RGAPS_SHM_PREFIX")
	if base == "" {
		base = "rgaps"
	}
	return fmt.Sprintf("%s%s%d%c", base, tag, os.Getpid(), 'a'+h)
}

// poolEnv sizes the pools for a few of the largest messages in flight.
func poolEnv(env *benche2e.Env) []string {
	return []string{"RGAPS_POOL_SIZE=" + strconv.FormatInt(max(256<<20, 3*env.Sizes[len(env.Sizes)-1]), 10)}
}

// hostEnv is the environment of host h's processes.
func (s *rosSystem) hostEnv(h int) []string {
	e := append(append(os.Environ(), s.env.ChildEnv...), "RMW_IMPLEMENTATION="+s.rmw,
		"RGAPS_SHM_PREFIX="+prefix(s.tag, h), fmt.Sprintf("RGAPS_GPU_DEVICE=%d", []int{s.env.DeviceA, s.env.DeviceB}[h]))
	if s.rmw == "rmw_cyclonedds_cpp" {
		e = append(e, "ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST")
	}
	return append(e, poolEnv(s.env)...)
}

// Start starts, for two hosts, rgapsd on each (b listens, a connects to
// it over env.Wire); the ros_bench processes start in Round.
func (s *rosSystem) Start(env *benche2e.Env) (err error) {
	s.env = env
	if s.hosts < 2 {
		return nil
	}
	defer func() { s.failed = err != nil }()
	if s.dir, err = os.MkdirTemp(env.WorkDir, "ros-"); err != nil {
		return err
	}
	secret, err := daemonproc.WriteSecret(s.dir)
	if err != nil {
		return err
	}
	peer := ""
	for _, h := range []int{1, 0} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr := ln.Addr().String()
		ln.Close()
		cmd := exec.Command(env.Exe, "daemon", "-listen", addr, "-secret-file", secret,
			"-host-id", fmt.Sprintf("ros-%c", 'a'+h), "-provider", "fabric:"+env.Wire, "-ring-size", "256MiB",
			"-max-chunk", strconv.Itoa(ours.ChunkSize), "-busy-poll", ours.BusyPoll.String())
		if peer != "" {
			cmd.Args = append(cmd.Args, "-peers", peer)
		}
		peer = addr
		cmd.Env = append(s.hostEnv(h), "RGAPS_DAEMON_IDLE=0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		d, err := daemonproc.Start(fmt.Sprintf("rgapsd of host %c", 'a'+h), cmd, filepath.Join(s.dir, fmt.Sprintf("daemon-%c.log", 'a'+h)))
		if err != nil {
			return err
		}
		s.daemons = append(s.daemons, d)
		if err := d.WaitLog("bridge started", time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// setSubs makes exactly n subscribers (on the last host), then the
// publisher (on host a), which waits for its matched subscriptions: the
// n subscribers, or the bridge's one.
func (s *rosSystem) setSubs(n int) error {
	if len(s.subs) == n {
		return nil
	}
	err := stopAll(append(s.subs, s.pub), 30*time.Second, false)
	s.subs, s.pub = nil, nil
	if err != nil {
		return err
	}
	subEnv := s.hostEnv(s.hosts - 1)
	for i := range n {
		p, err := startProc(fmt.Sprintf("%s subscriber %d", s.name, i), s.bin, subEnv, "sub", s.mode)
		if err != nil {
			return err
		}
		s.subs = append(s.subs, p)
	}
	for _, p := range s.subs {
		if _, err := p.expect("ready", s.timeout); err != nil {
			return err
		}
	}
	// Across hosts the rmw counts the remote subscriptions once host a's
	// daemon carries the topic, so waiting for n loses no round.
	if s.pub, err = startProc(s.name+" publisher", s.bin, s.hostEnv(0), "pub", s.mode, strconv.Itoa(n)); err != nil {
		return err
	}
	_, err = s.pub.expect("ready", s.timeout)
	return err
}

// Round publishes one message and reads every subscriber's receive time;
// wrong bytes or another message's sequence number fail it.
func (s *rosSystem) Round(size int64, n int) (r benche2e.Round, err error) {
	defer func() { s.failed = s.failed || err != nil }()
	if err := s.setSubs(n); err != nil {
		return r, s.withLogs(err)
	}
	s.seq++
	if err := s.pub.send("round %d %d", size, s.seq); err != nil {
		return r, err
	}
	sent, err := s.pub.expect("sent", s.timeout)
	if err != nil {
		return r, s.withLogs(err)
	}
	t0, err := strconv.ParseInt(sent[1], 10, 64)
	if err != nil {
		return r, err
	}
	if t1, err := strconv.ParseInt(sent[2], 10, 64); err == nil {
		r.Stages = map[string]time.Duration{stagePublish: time.Duration(t1 - t0)}
	}
	var bad []error
	for i, p := range s.subs {
		f, err := p.expect("recv", s.timeout)
		if err != nil {
			return r, s.withLogs(err)
		}
		t2, _ := strconv.ParseInt(f[1], 10, 64)
		if f[0] != strconv.FormatUint(uint64(s.seq), 10) || f[2] != "0" {
			bad = append(bad, fmt.Errorf("subscriber %d: message %s with %s bad bytes, want message %d", i, f[0], f[2], s.seq))
		}
		if s.env.GPU && f[3] != "1" {
			bad = append(bad, fmt.Errorf("subscriber %d does not hold device memory", i))
		}
		r.PerSub = append(r.PerSub, time.Duration(t2-t0))
	}
	return r, errors.Join(bad...)
}

func (s *rosSystem) withLogs(err error) error {
	for _, d := range s.daemons {
		err = fmt.Errorf("%w; %s: %s", err, d.Name, d.Tail())
	}
	return err
}

// Close stops the processes and daemons and removes what they left in
// shared memory under the run's prefixes.
func (s *rosSystem) Close() error {
	errs := []error{stopAll(append(s.subs, s.pub), 30*time.Second, s.failed)}
	for _, d := range s.daemons {
		errs = append(errs, d.Stop(15*time.Second))
	}
	cleanPrefixes(s.tag, s.hosts)
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
	return errors.Join(errs...)
}

// cleanPrefixes removes what the processes left in shared memory under
// the first hosts' prefixes of tag (they have all stopped by then).
func cleanPrefixes(tag string, hosts int) {
	for h := range hosts {
		cfg, err := zerocopy.Config{}.FromEnv()
		if err != nil {
			continue
		}
		cfg.Prefix, cfg.NoDaemonAutostart = prefix(tag, h), true
		if d, err := zerocopy.Open(cfg); err == nil {
			d.CleanStale()
			d.Close()
		}
		left, _ := filepath.Glob("/dev/shm/" + cfg.Prefix + "_*")
		for _, f := range left {
			os.Remove(f)
		}
	}
}
