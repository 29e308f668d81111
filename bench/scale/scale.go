package benchscale

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	benchbridge "github.com/rmw-rgaps/rmw_rgaps/bench/bridge"
	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Defaults.
var (
	DefaultTopics = []int{100, 300, 1000}
	DefaultSubs   = []int{8}
)

const (
	DefaultPubs     = 4
	DefaultIdle     = 10 * time.Second
	DefaultTimeout  = 5 * time.Minute
	DefaultProvider = "fabric:tcp"
	// MaxTopics is the most topics a cell may have: a peer's interest
	// holds at most bridge.MaxTopicsPerPeer (4096) topics.
	MaxTopics = 4096
	// MaxSubs bounds the subscriber processes of a cell (each subscribes
	// to every topic).
	MaxSubs = 64
	// settle is the pause after the last first message before the idle
	// window: links drain their last write-backs.
	settle = 2 * time.Second
)

// Options configure Run. Zero values take the defaults.
type Options struct {
	// Topics are the topic counts of the cells (DefaultTopics); every
	// count is measured with every Subs.
	Topics []int
	// Subs are the subscriber process counts on host b (DefaultSubs);
	// each process subscribes to every topic.
	Subs []int
	// Pubs is the number of publisher processes on host a, which share
	// the topics (DefaultPubs; at most the topic count).
	Pubs int
	// Idle is how long each daemon's CPU time is measured with no traffic.
	Idle time.Duration
	// Timeout bounds every step of a cell (set-up, discovery, delivery).
	Timeout time.Duration
	// Provider is the bridges' data transport (fabric:tcp).
	Provider string
	// RingSize is the daemons' -ring-size (0: their default, 64 MiB): the
	// pages of its ring that records have landed in are part of each
	// daemon's RSS (all of it, once as much traffic has passed).
	RingSize uint64
	// Loopback runs both hosts in this network namespace over 127.0.0.1
	// (separate shared-memory prefixes) instead of two namespaces joined
	// by a veth pair (which need root).
	Loopback bool

	// Exe runs the daemons (`Exe daemon …`) and the children (`Exe
	// ChildArgs… role`); "" is this executable with benche2e.ChildCommand.
	Exe       string
	ChildArgs []string
	// ChildEnv is added to every child's environment, DaemonEnv to the
	// daemons'.
	ChildEnv, DaemonEnv []string
	// Prefix is the base of the cells' shared-memory prefixes; "" makes a
	// private one.
	Prefix string
	// Progress receives a line per step; nil is silent.
	Progress io.Writer

	ctx context.Context
}

func (o Options) withDefaults() (Options, error) {
	if len(o.Topics) == 0 {
		o.Topics = DefaultTopics
	}
	if len(o.Subs) == 0 {
		o.Subs = DefaultSubs
	}
	if o.Pubs == 0 {
		o.Pubs = DefaultPubs
	}
	if o.Idle == 0 {
		o.Idle = DefaultIdle
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Provider == "" {
		o.Provider = DefaultProvider
	}
	for _, t := range o.Topics {
		if t < 1 || t > MaxTopics {
			return o, fmt.Errorf("topic count %d outside [1, %d]", t, MaxTopics)
		}
		if o.Pubs > t {
			return o, fmt.Errorf("%d publisher processes for %d topics: at most one per topic", o.Pubs, t)
		}
	}
	for _, s := range o.Subs {
		if s < 1 || s > MaxSubs {
			return o, fmt.Errorf("subscriber process count %d outside [1, %d]", s, MaxSubs)
		}
	}
	if o.Pubs < 1 || o.Idle < 0 || o.Timeout < 0 {
		return o, errors.New("-pubs must be positive, -idle and -timeout not negative")
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, err
		}
		o.Exe = exe
		if o.ChildArgs == nil {
			o.ChildArgs = []string{benche2e.ChildCommand}
		}
	}
	return o, nil
}

// Run measures every cell (topic count × subscriber process count) on a
// fresh pair of daemons. It fails on the first error and when ctx is
// cancelled; processes, namespaces and shared memory are gone either way.
func Run(ctx context.Context, o Options) (res *Result, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	o.ctx = ctx
	if o.Prefix == "" {
		o.Prefix = benchutil.PrivatePrefix("sc")
	}
	h, err := newHosts(o)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, h.Close()) }()
	start := time.Now()
	res = &Result{Machine: benchbridge.MachineInfo(), Provider: o.Provider, RingSize: o.RingSize, Netns: h.Netns(), Pubs: o.Pubs, Idle: benchutil.Seconds(o.Idle)}
	pr := progress{w: o.Progress, total: len(o.Topics) * len(o.Subs), start: start}
	k := 0
	for _, t := range o.Topics {
		for _, s := range o.Subs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			k++
			pr.step(fmt.Sprintf("%d topics, %d subscriber processes", t, s))
			c, err := runCell(o, h, k, t, s, &pr)
			if err != nil {
				return nil, fmt.Errorf("%d topics × %d subscriber processes: %w", t, s, err)
			}
			res.Cells = append(res.Cells, c)
		}
	}
	res.Elapsed = benchutil.Seconds(time.Since(start))
	res.Machine.LoadEnd = benchutil.LoadAvg()
	return res, nil
}

// split is the topics [from, to) of process i of n over t topics.
func split(i, n, t int) (int, int) { return i * t / n, (i + 1) * t / n }

// runCell measures one cell on fresh daemons:
//
//  1. the subscriber processes on b open their subscriptions (all at
//     once); then host a's daemon must list every one of them
//     (discovery b → a);
//  2. the publisher processes on a open their publishers; host b's
//     daemon must list every one (discovery a → b); each publisher
//     publishes one message per topic once host a's bridge subscription
//     matched it, and every subscription must take its topic's message;
//  3. each daemon's RSS, then its CPU time over Idle with no traffic.
func runCell(o Options, h *hosts, cell, topics, subs int, pr *progress) (c Cell, err error) {
	c = Cell{Topics: topics, SubProcs: subs, PubProcs: o.Pubs, Subscriptions: topics * subs}
	ds, err := h.startDaemons(o, cell)
	if err != nil {
		return c, err
	}
	var kids []*benche2e.Child
	defer func() {
		err = ds.WithLogs(err)
		err = errors.Join(err, benche2e.StopAll(kids, 30*time.Second, err != nil), ds.Stop())
	}()
	start := func(i int, name, role string) (*benche2e.Child, error) {
		k, err := h.child(i, ds.Prefix[i], name, role)
		if err == nil {
			kids = append(kids, k)
		}
		return k, err
	}
	var watch [2]*benche2e.Child
	for i := range watch {
		if watch[i], err = start(i, fmt.Sprintf("status watcher on host %c", 'a'+i), roleWatch); err != nil {
			return c, err
		}
	}
	for i := range watch {
		if _, err := call(watch[i], req{Op: "wait", Kind: "peer", Count: 1, Timeout: o.Timeout}); err != nil {
			return c, fmt.Errorf("the daemons did not connect: %w", err)
		}
	}
	rssBase := [2]int64{}
	for i := range rssBase {
		rssBase[i], _ = readRSS(ds.Pid(i))
	}
	pr.detail("idle before any endpoint")
	baseIdle, err := idleCPU([]int{ds.Pid(0), ds.Pid(1)}, o.Idle)
	if err != nil {
		return c, err
	}
	var subKids, pubKids []*benche2e.Child
	for i := range subs {
		k, err := start(1, fmt.Sprintf("subscriber process %d", i), roleSub)
		if err != nil {
			return c, err
		}
		subKids = append(subKids, k)
	}
	for i := range o.Pubs {
		k, err := start(0, fmt.Sprintf("publisher process %d", i), rolePub)
		if err != nil {
			return c, err
		}
		pubKids = append(pubKids, k)
	}

	// 1. Subscriptions, and host a's view of them.
	pr.detail("subscriptions")
	t0 := time.Now()
	reps, err := callAll(subKids, func(int) req { return req{Op: "open", From: 0, To: topics} })
	if err != nil {
		return c, err
	}
	subsAt := latest(reps)
	c.SubSetUp = benchutil.Seconds(time.Duration(subsAt - t0.UnixNano()))
	pr.detail("discovery b → a")
	r, err := call(watch[0], req{Op: "wait", Kind: "subscription", Count: topics * subs, Timeout: o.Timeout})
	if err != nil {
		return c, fmt.Errorf("discovery of host b's subscriptions on host a: %w", err)
	}
	c.DiscoveryBA = benchutil.Seconds(time.Duration(r.At - subsAt))

	// 2. Publishers, host b's view of them, the first messages.
	pr.detail("publishers")
	t1 := time.Now()
	reps, err = callAll(pubKids, func(i int) req {
		from, to := split(i, o.Pubs, topics)
		return req{Op: "open", From: from, To: to}
	})
	if err != nil {
		return c, err
	}
	pubsAt := latest(reps)
	c.PubSetUp = benchutil.Seconds(time.Duration(pubsAt - t1.UnixNano()))
	pr.detail("discovery a → b, first messages")
	for _, k := range subKids {
		if err := k.Send(req{Op: "first", Timeout: o.Timeout}); err != nil {
			return c, err
		}
	}
	if r, err = call(watch[1], req{Op: "wait", Kind: "publisher", Count: topics, Timeout: o.Timeout}); err != nil {
		return c, fmt.Errorf("discovery of host a's publishers on host b: %w", err)
	}
	c.DiscoveryAB = benchutil.Seconds(time.Duration(r.At - pubsAt))
	if _, err := callAll(pubKids, func(int) req { return req{Op: "publish", Timeout: o.Timeout} }); err != nil {
		return c, err
	}
	var last int64
	for _, k := range subKids {
		var r reply
		if err := k.Recv(&r); err != nil {
			return c, err
		}
		last = max(last, r.At)
	}
	c.FirstMessage = benchutil.Seconds(time.Duration(last - t1.UnixNano()))

	// 3. Memory and idle CPU.
	pr.detail("idle")
	time.Sleep(settle)
	for i := range 2 {
		m, err := readMem(ds.Pid(i))
		if err != nil {
			return c, fmt.Errorf("daemon of host %c: %w", 'a'+i, err)
		}
		m.Base = rssBase[i]
		c.Daemons[i] = DaemonStats{Mem: m}
	}
	idle, err := idleCPU([]int{ds.Pid(0), ds.Pid(1)}, o.Idle)
	if err != nil {
		return c, err
	}
	for i := range 2 {
		c.Daemons[i].IdleCPU, c.Daemons[i].BaseIdleCPU = idle[i], baseIdle[i]
	}
	return c, nil
}

// call sends r and reads the reply.
func call(k *benche2e.Child, r req) (reply, error) {
	var rep reply
	err := k.Call(r, &rep)
	return rep, err
}

// callAll sends each child its request at once and collects the replies.
func callAll(kids []*benche2e.Child, mk func(i int) req) ([]reply, error) {
	for i, k := range kids {
		if err := k.Send(mk(i)); err != nil {
			return nil, err
		}
	}
	reps := make([]reply, len(kids))
	var errs []error
	for i, k := range kids {
		if err := k.Recv(&reps[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return reps, errors.Join(errs...)
}

func latest(reps []reply) int64 {
	var t int64
	for _, r := range reps {
		t = max(t, r.At)
	}
	return t
}

// progress writes a line per cell and step.
type progress struct {
	w     io.Writer
	total int
	k     int
	start time.Time
	mu    sync.Mutex
}

func (p *progress) step(what string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.k++
	fmt.Fprintf(p.w, "[%d/%d, %s] %s\n", p.k, p.total, time.Since(p.start).Round(time.Second), what)
}

func (p *progress) detail(what string) {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "  %s: %s\n", time.Since(p.start).Round(100*time.Millisecond), what)
}
