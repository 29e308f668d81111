// Package ours is the rgaps system of `rgaps-bench e2e`: a GPU publisher
// on host A, rgapsd on each host bridging over libfabric, and N GPU
// subscribers on host B that read host B's shared GPU pool in place. It
// registers itself with benche2e.Ours; cmd/rgaps links it in.
package ours

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/daemonproc"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func init() {
	benche2e.Ours = func() benche2e.System { return &System{} }
	benche2e.RegisterChild("ours-pub", pubMain)
	benche2e.RegisterChild("ours-sub", subMain)
}

// Stages of a round.
const (
	StagePublish = "publish on A (incl. the D2H staging copy)"
	StageBridge  = "bridge A→B + notify (first subscriber)"
	StageNotify  = "other subscribers after the first (avg)"
)

const topic = "/rgaps_e2e/frames"

// ChunkSize is the ring record payload the benchmark's bridges use: small
// enough that even a 4 MiB message is two records (the subscribe side's
// asynchronous host-to-device copy of record k overlaps the transfer of
// record k+1), large enough that the per-record costs (two posts, a
// header, a completion, a copy launch: a few µs) stay small against a
// record's transfer time (about 400 µs at 5 GB/s).
const ChunkSize = 2 << 20

// BusyPoll is how long the benchmark's bridge links poll before sleeping:
// a round is a single message, so every message meets idle links.
const BusyPoll = 5 * time.Millisecond

type (
	req struct {
		Op     string `json:"op"`
		GPU    bool   `json:"gpu"`
		Device int    `json:"device"`
		Size   int64  `json:"size"`
		Seq    uint64 `json:"seq"`
		Want   int    `json:"want"` // publisher init: matched subscriptions to wait for
	}
	pubReply struct {
		benche2e.Status
		T0, T1 int64
	}
	// subReply answers "round" (Src, T2, Path) and "check" (Sum).
	subReply struct {
		benche2e.Status
		Src  int64 // the message's source timestamp (A's publish, kept by the bridge)
		T2   int64 // the subscriber holds the device pointer
		Sum  uint64
		Path string
	}
)

// System is ours.
type System struct {
	env     *benche2e.Env
	dir     string
	daemons [2]*daemonproc.Daemon
	pub     *benche2e.Child
	subs    []*benche2e.Child
	seq     uint64
	failed  bool
	poolEnv []string
}

func (s *System) Name() string { return "rgaps" }

func (s *System) StageOrder() []string { return []string{StagePublish, StageBridge, StageNotify} }

// prefix is host h's shared-memory prefix: the caller's (RGAPS_SHM_PREFIX,
// else rgaps) + e2e + the harness's pid + a or b.
func (s *System) prefix(h int) string {
	base := os.Getenv("RGAPS_SHM_PREFIX")
	if base == "" {
		base = "rgaps"
	}
	return fmt.Sprintf("%se2e%d%c", base, os.Getpid(), 'a'+h)
}

func (s *System) hostEnv(h int) []string {
	return append(append(os.Environ(), s.env.ChildEnv...), append(s.poolEnv, "RGAPS_SHM_PREFIX="+s.prefix(h))...)
}

// Start runs rgapsd on both hosts (b listens, a connects) and the
// publisher on A.
func (s *System) Start(env *benche2e.Env) (err error) {
	s.env = env
	defer func() {
		if err != nil {
			s.failed = true
		}
	}()
	maxSize := env.Sizes[len(env.Sizes)-1]
	// Pools: a few of the largest messages in flight on every host.
	pool := max(256<<20, 3*maxSize)
	s.poolEnv = []string{"RGAPS_POOL_SIZE=" + strconv.FormatInt(pool, 10), "RGAPS_DAEMON_IDLE=0"}
	if s.dir, err = os.MkdirTemp(env.WorkDir, "ours-"); err != nil {
		return err
	}
	sf, err := daemonproc.WriteSecret(s.dir)
	if err != nil {
		return err
	}
	port, err := freePort(env)
	if err != nil {
		return err
	}
	provider := "fabric:" + env.Wire
	hosts := [2]benche2e.Host{env.A, env.B}
	for _, h := range []int{1, 0} {
		args := []string{"daemon", "-listen", net.JoinHostPort(hosts[h].Addr, strconv.Itoa(port[h])),
			"-secret-file", sf, "-host-id", "e2e-" + hosts[h].Name, "-provider", provider,
			"-ring-size", "256MiB", "-max-chunk", strconv.Itoa(ChunkSize), "-busy-poll", BusyPoll.String()}
		if h == 0 {
			args = append(args, "-peers", net.JoinHostPort(hosts[1].Addr, strconv.Itoa(port[1])))
		}
		cmd := env.Wrap(hosts[h])(env.Exe, args...)
		cmd.Env = append(s.hostEnv(h), fmt.Sprintf("RGAPS_GPU_DEVICE=%d", []int{env.DeviceA, env.DeviceB}[h]))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		d, err := daemonproc.Start(fmt.Sprintf("rgapsd on host %s", hosts[h].Name), cmd, filepath.Join(s.dir, fmt.Sprintf("daemon-%s.log", hosts[h].Name)))
		if err != nil {
			return err
		}
		s.daemons[h] = d
		if err := d.WaitLog("bridge started", time.Minute); err != nil {
			return err
		}
	}
	return nil
}

// freePort picks the control ports: fixed in namespaces, free ones on
// loopback.
func freePort(env *benche2e.Env) ([2]int, error) {
	var p [2]int
	for i := range p {
		if env.Netns {
			p[i] = 7790
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return p, err
		}
		p[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	return p, nil
}

func (s *System) startChild(h int, name, role string) (*benche2e.Child, error) {
	env := *s.env
	env.ChildEnv = append(append(append([]string{}, s.env.ChildEnv...), s.poolEnv...), "RGAPS_SHM_PREFIX="+s.prefix(h),
		fmt.Sprintf("RGAPS_GPU_DEVICE=%d", []int{s.env.DeviceA, s.env.DeviceB}[h]))
	return benche2e.StartChild(&env, []benche2e.Host{s.env.A, s.env.B}[h], name, role)
}

// setSubs makes exactly n subscriber processes on B, then (re)starts the
// publisher on A once its bridge subscription matched.
func (s *System) setSubs(n int) error {
	if len(s.subs) == n {
		return nil
	}
	err := benche2e.StopAll(append(s.subs, s.pub), 30*time.Second, false)
	s.subs, s.pub = nil, nil
	if err != nil {
		return err
	}
	for i := range n {
		p, err := s.startChild(1, fmt.Sprintf("rgaps subscriber %d", i), "ours-sub")
		if err != nil {
			return err
		}
		s.subs = append(s.subs, p)
		if err := p.Send(req{Op: "init", GPU: s.env.GPU, Device: s.env.DeviceB}); err != nil {
			return err
		}
	}
	for _, p := range s.subs {
		if err := p.Recv(&subReply{}); err != nil {
			return s.withLogs(err)
		}
	}
	p, err := s.startChild(0, "rgaps publisher", "ours-pub")
	if err != nil {
		return err
	}
	s.pub = p
	return s.withLogs(p.Call(req{Op: "init", GPU: s.env.GPU, Device: s.env.DeviceA, Want: 1}, &pubReply{}))
}

func (s *System) Round(size int64, n int) (r benche2e.Round, err error) {
	defer func() {
		if err != nil {
			s.failed = true
			err = s.withLogs(err)
		}
	}()
	if err := s.setSubs(n); err != nil {
		return r, err
	}
	s.seq++
	want := benche2e.ExpectedChecksum(size, benche2e.SeedOf(s.seq))
	rq := req{Op: "round", Size: size, Seq: s.seq}
	for _, p := range s.subs {
		if err := p.Send(rq); err != nil {
			return r, err
		}
	}
	var pr pubReply
	if err := s.pub.Call(rq, &pr); err != nil {
		return r, err
	}
	r = benche2e.Round{PerSub: make([]time.Duration, n), Stages: map[string]time.Duration{StagePublish: time.Duration(pr.T1 - pr.T0)}}
	first := int64(0)
	var bad []error
	t2 := make([]int64, n)
	for i, p := range s.subs {
		var sr subReply
		if err := p.Recv(&sr); err != nil {
			return r, err
		}
		switch {
		case sr.Src < pr.T0 || sr.Src > pr.T1:
			bad = append(bad, fmt.Errorf("subscriber %d: source timestamp %d is not the publisher's (%d…%d)", i, sr.Src, pr.T0, pr.T1))
		case s.env.GPU && sr.Path != "gpu-pool":
			bad = append(bad, fmt.Errorf("subscriber %d reads through %s, not the GPU pool", i, sr.Path))
		}
		t2[i] = sr.T2
		r.PerSub[i] = time.Duration(sr.T2 - pr.T0)
		if first == 0 || sr.T2 < first {
			first = sr.T2
		}
	}
	// Every subscriber holds its sample: now each checks the bytes (none
	// runs its checksum while another is still being woken).
	for _, p := range s.subs {
		if err := p.Send(req{Op: "check"}); err != nil {
			return r, err
		}
	}
	for i, p := range s.subs {
		var sr subReply
		if err := p.Recv(&sr); err != nil {
			return r, err
		}
		if sr.Sum != want {
			bad = append(bad, fmt.Errorf("subscriber %d: checksum %#x of message %d, want %#x (wrong bytes)", i, sr.Sum, s.seq, want))
		}
	}
	if len(bad) > 0 {
		return r, errors.Join(bad...)
	}
	var spread time.Duration
	for _, t := range t2 {
		spread += time.Duration(t - first)
	}
	r.Stages[StageBridge] = time.Duration(first - pr.T1)
	r.Stages[StageNotify] = spread / time.Duration(n)
	return r, nil
}

func (s *System) withLogs(err error) error {
	if err == nil {
		return nil
	}
	for _, d := range s.daemons {
		if d != nil {
			err = fmt.Errorf("%w; %s: %s", err, d.Name, d.Tail())
		}
	}
	return err
}

func (s *System) Close() error {
	var errs []error
	kids := append([]*benche2e.Child{}, s.subs...)
	if s.pub != nil {
		kids = append(kids, s.pub)
	}
	if err := benche2e.StopAll(kids, 30*time.Second, s.failed); err != nil {
		errs = append(errs, err)
	}
	for _, d := range s.daemons {
		if d != nil {
			if err := d.Stop(15 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for h := range s.daemons {
		// What the daemons and children leave in /dev/shm under the run's
		// prefixes (nothing, after a clean stop).
		if d, err := zerocopy.Open(zerocopy.Config{Prefix: s.prefix(h), NoDaemonAutostart: true}); err == nil {
			d.CleanStale()
			d.Close()
		}
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
	return errors.Join(errs...)
}

// ---- child processes --------------------------------------------------------

func memory(gpu bool) zerocopy.Memory {
	if gpu {
		return zerocopy.MemoryGPU
	}
	return zerocopy.MemoryHost
}

func reliable() qos.Profile {
	return qos.Profile{History: qos.HistoryKeepLast, Depth: 4, Reliability: qos.ReliabilityReliable}
}

// openChild opens a child's domain (prefix, pool size and device from the
// environment the System gave it) and, with gpu, its device.
func openChild(gpu bool) (*zerocopy.Domain, *cuda.Device, error) {
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return nil, nil, err
	}
	d, err := zerocopy.Open(cfg)
	if err != nil || !gpu {
		return d, nil, err
	}
	// The process's own hold on the domain's device (the same primary
	// context, so the engine's device pointers are valid in it); closed
	// with the process.
	dev, err := cuda.Open(cfg.Device)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, dev, nil
}

// testCorrupt, set only by this package's tests (in the child processes
// they start), damages each host message after its fill, so that the
// subscribers' check must fail.
var testCorrupt func(payload []byte)

// pubMain is the publisher on A: per round it loans a block of A's pool
// (on the GPU), fills it with the round's pattern (untimed), then times
// the publish call.
func pubMain(args []string) error {
	ctl, err := benche2e.ChildControl()
	if err != nil {
		return err
	}
	var d *zerocopy.Domain
	var pub *zerocopy.Publisher
	var dev *cuda.Device
	defer func() {
		if pub != nil {
			pub.Close()
		}
		if dev != nil {
			dev.Close()
		}
		if d != nil {
			d.Close()
		}
	}()
	return benche2e.Serve(ctl, func(r req) any {
		switch r.Op {
		case "init":
			var err error
			if d, dev, err = openChild(r.GPU); err != nil {
				return pubReply{Status: benche2e.Fail(err)}
			}
			pub, err = d.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: "rgaps_e2e/msg/Blob", Node: "/e2e_pub", QoS: reliable(), Memory: memory(r.GPU)})
			if err != nil {
				return pubReply{Status: benche2e.Fail(err)}
			}
			for deadline := time.Now().Add(time.Minute); pub.Matched() < r.Want; {
				if time.Now().After(deadline) {
					return pubReply{Status: benche2e.Fail(fmt.Errorf("the bridge's subscription never matched (%d of %d)", pub.Matched(), r.Want))}
				}
				time.Sleep(5 * time.Millisecond)
			}
			return pubReply{}
		case "round":
			var l *zerocopy.Loan
			var err error
			if dev != nil {
				if l, err = pub.LoanDevice(int(r.Size)); err == nil {
					var p zerocopy.DevicePtr
					if p, err = l.DevicePtr(); err == nil {
						if err = dev.FillPattern(cuda.DevicePtr(p), uint64(r.Size), benche2e.SeedOf(r.Seq), nil); err == nil {
							err = dev.CtxSynchronize()
						}
					}
				}
			} else if l, err = pub.Loan(int(r.Size)); err == nil {
				cuda.FillPatternHost(l.Bytes(), benche2e.SeedOf(r.Seq))
				if testCorrupt != nil {
					testCorrupt(l.Bytes())
				}
			}
			if err != nil {
				if l != nil {
					l.Discard()
				}
				return pubReply{Status: benche2e.Fail(err)}
			}
			t0 := time.Now().UnixNano()
			err = l.Publish()
			return pubReply{Status: benche2e.Fail(err), T0: t0, T1: time.Now().UnixNano()}
		}
		return pubReply{Status: benche2e.Fail(fmt.Errorf("unknown op %q", r.Op))}
	})
}

// subMain is a subscriber on B: per round ("round") it waits for the
// message and notes when it holds the device pointer; then ("check") it
// checks the bytes there (GPU checksum kernel, untimed) and returns the
// sample.
func subMain(args []string) error {
	ctl, err := benche2e.ChildControl()
	if err != nil {
		return err
	}
	var d *zerocopy.Domain
	var sub *zerocopy.Subscription
	var dev *cuda.Device
	var held *zerocopy.Sample // the round's sample, until "check"
	path := ""
	defer func() {
		if held != nil {
			held.Return()
		}
		if sub != nil {
			sub.Close()
		}
		if dev != nil {
			dev.Close()
		}
		if d != nil {
			d.Close()
		}
	}()
	return benche2e.Serve(ctl, func(r req) any {
		switch r.Op {
		case "init":
			var err error
			if d, dev, err = openChild(r.GPU); err != nil {
				return subReply{Status: benche2e.Fail(err)}
			}
			sub, err = d.NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: "rgaps_e2e/msg/Blob", Node: "/e2e_sub", QoS: reliable(), Memory: memory(r.GPU)})
			if err != nil {
				return subReply{Status: benche2e.Fail(err)}
			}
			return subReply{}
		case "round":
			// Timed: the sample, then its device pointer. The checksum
			// waits for "check", which comes once every subscriber
			// answered: a checksum kernel run at once would keep this
			// process's CPU (the CUDA driver spins while it waits for the
			// kernel) while the other subscribers of the round are still
			// being woken, and one woken onto that CPU would wait for it.
			if held != nil { // a round that failed before its check
				held.Return()
				held = nil
			}
			smp, err := sub.TakeWait(5 * time.Minute)
			if err != nil {
				return subReply{Status: benche2e.Fail(err)}
			}
			var t2 int64
			if dev != nil {
				_, err := smp.DevicePtr()
				t2 = time.Now().UnixNano()
				if err != nil {
					smp.Return()
					return subReply{Status: benche2e.Fail(err)}
				}
			} else {
				t2 = time.Now().UnixNano()
			}
			held = smp
			if path == "" {
				if eps, err := d.Endpoints(topic); err == nil {
					for _, e := range eps {
						if e.GID == sub.GID() {
							path = e.Path
						}
					}
				}
			}
			// The source timestamp must be A's publish.
			return subReply{Src: smp.Info().SourceTimestamp.UnixNano(), T2: t2, Path: path}
		case "check":
			// The round's pattern (its seed alternates) is checked by the
			// checksum of the bytes the device pointer reaches.
			if held == nil {
				return subReply{Status: benche2e.Fail(errors.New("check without a round's sample"))}
			}
			smp := held
			held = nil
			defer smp.Return()
			var sum uint64
			if dev != nil {
				p, err := smp.DevicePtr()
				if err != nil {
					return subReply{Status: benche2e.Fail(err)}
				}
				if sum, err = dev.Checksum(cuda.DevicePtr(p), uint64(smp.Size())); err != nil {
					return subReply{Status: benche2e.Fail(err)}
				}
			} else {
				sum = cuda.ChecksumHost(smp.Bytes())
			}
			return subReply{Sum: sum}
		}
		return subReply{Status: benche2e.Fail(fmt.Errorf("unknown op %q", r.Op))}
	})
}
