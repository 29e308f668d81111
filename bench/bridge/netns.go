package benchbridge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	benchhosts "github.com/rmw-rgaps/rmw_rgaps/bench/hosts"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// NetnsOptions are what `-netns` needs besides Options: how to run the
// daemons and the child processes. Zero values run this executable
// (`<exe> daemon`, `<exe> bench-e2e-child <role>`).
type NetnsOptions struct {
	Exe       string
	ChildArgs []string
	ChildEnv  []string // added to every child's and daemon's environment
}

// ErrNoNetns reports that the namespaces of -netns could not be made.
var ErrNoNetns = benchhosts.ErrNoNetns

// RunNetns is Run with the hosts in two network namespaces joined by a
// veth pair (root needed; otherwise an error wrapping ErrNoNetns): per
// cell two rgapsd processes (one per namespace, `-provider` and the
// variant's flags), a publisher process on host a and a subscriber
// process on host b; the bare fi_writedata loop between a sender process
// in host a's namespace and a receiver in host b's, in the same run. The
// transport WriteImm loop is not measured between namespaces. Same
// sizes, variants, repetitions and report as Run.
func RunNetns(ctx context.Context, o Options, n NetnsOptions) (res *Result, err error) {
	o, err = o.withDefaults()
	if err != nil {
		return nil, err
	}
	if o.Provider == "fabric:shm" {
		return nil, fmt.Errorf("-netns: provider %s carries data within one host only; use fabric:tcp or tcp", o.Provider)
	}
	for _, v := range o.variants() {
		if v.Provider == "fabric:shm" {
			return nil, fmt.Errorf("-netns: variant %s uses %s", v.Key, v.Provider)
		}
	}
	if n.Exe == "" {
		if n.Exe, err = os.Executable(); err != nil {
			return nil, err
		}
		if n.ChildArgs == nil {
			n.ChildArgs = []string{benche2e.ChildCommand}
		}
	}
	if o.Prefix == "" {
		o.Prefix = benchutil.PrivatePrefix("bb")
	}
	h, err := benchhosts.New("rgbb", false)
	if err != nil {
		return nil, err
	}
	defer func() {
		err = errors.Join(err, h.Close())
		if rerr := removeSegments(o.Prefix); err == nil && rerr != nil {
			err = rerr
		}
	}()
	w := &netnsRun{o: o, n: n, h: h, env: &benche2e.Env{Ctx: ctx, Exe: n.Exe, ChildArgs: n.ChildArgs, ChildEnv: n.ChildEnv,
		WorkDir: h.Dir, PeerTimeout: takeTimeout + time.Minute, Netns: true,
		A: benche2e.Host{Name: "A", Netns: h.NS[0], Addr: h.Addr[0]}, B: benche2e.Host{Name: "B", Netns: h.NS[1], Addr: h.Addr[1]}}}
	start := time.Now()
	vs := o.variants()
	res = &Result{Machine: machineInfo(), Provider: o.Provider, RingSize: o.RingSize, Verify: !o.NoVerify, Reps: o.Reps, GapNs: int64(o.Gap),
		Sizes: o.Sizes, Prefix: o.Prefix, Netns: true, Rails: o.resolveRails(vs)}
	pr := &progress{w: o.Progress, total: o.Reps * len(o.Sizes) * (1 + len(vs)), start: start}
	defer pr.finish()
	res.Bare = make([]Baseline, len(o.Sizes))
	res.Variants = make([]VariantResult, len(vs))
	for i, v := range vs {
		res.Variants[i] = VariantResult{Variant: v, ModeName: v.Mode.String(), WatermarkName: v.Watermark.String(),
			Cells: make([]Cell, len(o.Sizes))}
	}
	// As Run: every repetition measures everything once, size by size,
	// the baseline right before the bridge at the same size, the variants
	// in an order rotated by one each repetition.
	for rep := range o.Reps {
		for i, size := range o.Sizes {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			iters := o.messages(size)
			err := res.bareStep(pr, i, size, fmt.Sprintf("bare fi_writedata loop between the namespaces, %s × %d", benchutil.FormatSize(size), iters), func() (Baseline, error) {
				return w.bare(size, iters)
			})
			if err != nil {
				return nil, err
			}
			for k := range vs {
				vr := &res.Variants[(k+rep)%len(vs)]
				pr.step(fmt.Sprintf("%s, %s", vr.Name, benchutil.FormatSize(size)))
				if err := w.cell(vr, &vr.Cells[i], size, rep); err != nil {
					return nil, fmt.Errorf("%s, %s: %w", vr.Name, benchutil.FormatSize(size), err)
				}
			}
		}
	}
	res.finish(start)
	return res, nil
}

// finish completes a run's result: cells' medians and percentiles, the
// run time, the load at the end.
func (r *Result) finish(start time.Time) {
	if r.BareNote != "" {
		r.Bare = nil
	}
	for i := range r.Variants {
		for j := range r.Variants[i].Cells {
			r.Variants[i].Cells[j].finish()
		}
	}
	r.Elapsed = benchutil.Seconds(time.Since(start))
	r.Machine.LoadEnd = loadAvg()
}

// netnsRun is one -netns run: its options, hosts and child environment.
type netnsRun struct {
	o   Options
	n   NetnsOptions
	h   *benchhosts.Pair
	env *benche2e.Env
}

// child starts role on host i with prefix and the pool, passing files.
func (w *netnsRun) child(i int, name, role, prefix string, pool uint64, files ...*os.File) (*benche2e.Child, error) {
	env := *w.env
	env.ChildEnv = append(append([]string{}, w.env.ChildEnv...), "RGAPS_SHM_PREFIX="+prefix, "RGAPS_POOL_SIZE="+strconv.FormatUint(pool, 10))
	return benche2e.StartChildFiles(&env, []benche2e.Host{env.A, env.B}[i], name, role, files)
}

func ncall(k *benche2e.Child, r nreq) (nrep, error) {
	var rep nrep
	err := k.Call(r, &rep)
	return rep, err
}

// bare runs the bare fi_writedata loop between a receiver process on host
// b and a sender process on host a: iters writes of size bytes, timed
// from the sender's first post to the receiver's last immediate
// (CLOCK_MONOTONIC, one clock for both).
func (w *netnsRun) bare(size, iters int) (res Baseline, err error) {
	name, ok := strings.CutPrefix(w.o.Provider, "fabric:")
	if !ok {
		return res, fmt.Errorf("provider %s: %w: no bare fi_writedata loop without libfabric", w.o.Provider, transport.ErrNotSupported)
	}
	timeout := 30 * time.Second
	recv, err := w.child(1, "bare loop receiver", roleBareRecv, w.o.Prefix+"b", 1<<20)
	if err != nil {
		return res, err
	}
	send, err := w.child(0, "bare loop sender", roleBareSend, w.o.Prefix+"a", 1<<20)
	if err != nil {
		recv.Kill()
		return res, err
	}
	defer func() {
		err = errors.Join(err, benche2e.StopAll([]*benche2e.Child{send, recv}, 30*time.Second, err != nil))
	}()
	at, err := ncall(recv, nreq{Op: "listen", Provider: name, Node: w.h.Addr[1], Size: size, Timeout: timeout})
	if err != nil {
		return res, err
	}
	if err := recv.Send(nreq{Op: "recv", N: iters}); err != nil {
		return res, err
	}
	if err := send.Send(nreq{Op: "send", Provider: name, Node: w.h.Addr[0], Addr: at.Addr, Region: at.Region, Size: size, N: iters, Timeout: timeout}); err != nil {
		return res, err
	}
	// The sender answers once told to stop, or at once when it failed.
	sent := make(chan error, 1)
	var first nrep
	go func() { sent <- send.Recv(&first) }()
	var last nrep
	received := make(chan error, 1)
	go func() { received <- recv.Recv(&last) }()
	select {
	case err := <-received:
		if err != nil {
			send.Kill()
			<-sent
			return res, err
		}
	case err := <-sent:
		recv.Kill()
		<-received
		if err == nil {
			err = errors.New("the bare loop's sender stopped before the receiver had every write")
		}
		return res, err
	}
	if err := send.Send(nreq{Op: "stop"}); err != nil {
		return res, err
	}
	if err := <-sent; err != nil {
		return res, err
	}
	if last.At <= first.At {
		return res, fmt.Errorf("bare loop: last immediate at %d, first post at %d", last.At, first.At)
	}
	return Baseline{Size: size, Iters: iters, Elapsed: time.Duration(last.At - first.At)}, nil
}

// daemonFlags are the rgapsd flags of variant v.
func (w *netnsRun) daemonFlags(v Variant) []string {
	f := []string{"-provider", v.Provider, "-ring-size", strconv.FormatUint(w.o.RingSize, 10)}
	if v.Mode == ring.WriteTwice {
		f = append(f, "-mode", "write-twice")
	}
	if v.Watermark != ring.EveryRecord {
		f = append(f, "-watermark", v.Watermark.String())
	}
	if v.PerTopic {
		f = append(f, "-per-topic")
	}
	if v.Rails > 0 {
		f = append(f, "-rails", strconv.Itoa(v.Rails))
	}
	return f
}

// cell measures one repetition of a variant at a size into c: fresh
// daemons, a publisher process on host a and a subscriber process on host
// b; a throughput run and a share of the latency rounds.
func (w *netnsRun) cell(vr *VariantResult, c *Cell, size, rep int) (err error) {
	o, v := w.o, vr.Variant
	pool := poolSize(o, v, size)
	prefix := [2]string{o.Prefix + "a", o.Prefix + "b"}
	ds, err := w.h.StartDaemons(benchhosts.DaemonConfig{Exe: w.n.Exe, Prefix: prefix, Tag: "bb",
		Env: append(append([]string{}, w.n.ChildEnv...), "RGAPS_POOL_SIZE="+strconv.FormatUint(pool, 10)), Flags: w.daemonFlags(v)})
	if err != nil {
		return err
	}
	var kids []*benche2e.Child
	defer func() {
		err = ds.WithLogs(err)
		err = errors.Join(err, benche2e.StopAll(kids, 30*time.Second, err != nil), ds.Stop())
	}()
	for _, d := range ds.D {
		if err := d.WaitLog("peer up", setUpTimeout); err != nil {
			return err
		}
	}
	vr.ProviderName = v.Provider
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socketpair: %w", err)
	}
	pubEnd, subEnd := os.NewFile(uintptr(fds[0]), "credits-pub"), os.NewFile(uintptr(fds[1]), "credits-sub")
	sub, err := w.child(1, "subscriber", roleSub, prefix[1], pool, subEnd)
	if err == nil {
		kids = append(kids, sub)
	}
	subEnd.Close()
	if err != nil {
		pubEnd.Close()
		return err
	}
	pub, err := w.child(0, "publisher", rolePub, prefix[0], pool, pubEnd)
	pubEnd.Close()
	if err != nil {
		return err
	}
	kids = append(kids, pub)
	defer func() {
		// What each side counted, whatever happened.
		if r, cerr := ncall(pub, nreq{Op: "counters"}); cerr == nil {
			c.Sent += r.Done
		}
		if r, cerr := ncall(sub, nreq{Op: "counters"}); cerr == nil {
			c.Received += r.Done
		}
		if err == nil && c.Sent != c.Received {
			err = fmt.Errorf("%d messages published, %d received", c.Sent, c.Received)
		}
	}()
	if _, err := ncall(sub, nreq{Op: "open", Topics: v.Topics, Size: size, Verify: !o.NoVerify}); err != nil {
		return err
	}
	if _, err := ncall(pub, nreq{Op: "open", Topics: v.Topics, Size: size, Timeout: setUpTimeout}); err != nil {
		return err
	}
	both := func(pr, sr nreq) (nrep, nrep, error) {
		if err := sub.Send(sr); err != nil {
			return nrep{}, nrep{}, err
		}
		p, err := ncall(pub, pr)
		if err != nil {
			return p, nrep{}, err
		}
		var s nrep
		return p, s, sub.Recv(&s)
	}
	warm, _, err := both(nreq{Op: "warm", N: 2, Timeout: takeTimeout}, nreq{Op: "take", N: 2, Every: 1})
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	c.Size, c.Window = size, o.window(size, v.Topics)
	per := (o.messages(size) + v.Topics - 1) / v.Topics
	c.Messages = per * v.Topics
	// The untimed lap of runCell (harness.go).
	lap := warmLap(o, size, c.Window, per)
	warm, _, err = both(nreq{Op: "run", N: lap, Window: c.Window, Timeout: takeTimeout}, nreq{Op: "take", N: lap, Every: max(1, c.Window/4)})
	if err != nil {
		return fmt.Errorf("warm-up lap: %w", err)
	}
	before, err := w.counters(pub, sub, warm.Done)
	if err != nil {
		return err
	}
	p, s, err := both(nreq{Op: "run", N: per, Window: c.Window, Timeout: takeTimeout}, nreq{Op: "take", N: per, Every: max(1, c.Window/4)})
	if err != nil {
		return err
	}
	if s.At <= p.At {
		return fmt.Errorf("the last take at %d, the first publish at %d", s.At, p.At)
	}
	c.Runs = append(c.Runs, time.Duration(s.At-p.At))
	after, err := w.counters(pub, sub, p.Done)
	if err != nil {
		return err
	}
	d := after.minus(before)
	c.Links.add(d)
	if d.Dropped != 0 || d.Failures != 0 || d.Dups != 0 {
		return fmt.Errorf("the bridge dropped %d messages, suppressed %d duplicates and had %d link failures", d.Dropped, d.Dups, d.Failures)
	}
	if v.Latency {
		r := o.rounds(size)
		share := r / o.Reps
		if rep < r%o.Reps {
			share++
		}
		if share > 0 {
			if _, _, err := both(nreq{Op: "warm", N: 2, Timeout: takeTimeout}, nreq{Op: "take", N: 2, Every: 1}); err != nil {
				return fmt.Errorf("latency warm-up: %w", err)
			}
			_, s, err := both(nreq{Op: "latency", N: share, Timeout: takeTimeout, Gap: o.Gap}, nreq{Op: "latency", N: share})
			if err != nil {
				return fmt.Errorf("latency: %w", err)
			}
			c.lat = append(c.lat, s.Lat...)
		}
	}
	return nil
}

// counters sums host a's writer links and host b's reader links, once
// the writers saw sent messages acknowledged (or after a second).
func (w *netnsRun) counters(pub, sub *benche2e.Child, sent int) (counters, error) {
	deadline := time.Now().Add(time.Second)
	for {
		p, err := ncall(pub, nreq{Op: "counters"})
		if err != nil {
			return counters{}, err
		}
		if p.Counters.Acked >= uint64(sent) || time.Now().After(deadline) {
			s, err := ncall(sub, nreq{Op: "counters"})
			if err != nil {
				return counters{}, err
			}
			c := p.Counters
			c.WriteBacks, c.Dups = s.Counters.WriteBacks, s.Counters.Dups
			c.Dropped += s.Counters.Dropped
			c.Failures += s.Counters.Failures
			return c, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// hostsText opens the report: where the hosts were.
func (r *Result) hostsText() string {
	if r.Netns {
		return "Two hosts in two network namespaces joined by a veth pair, each with rgapsd as a process of its own " +
			"(separate shared-memory prefixes), a fresh pair per row and repetition: "
	}
	return "Two bridges (\"hosts\" a and b, separate shared-memory prefixes) in this process over 127.0.0.1: "
}

// baselinesText says what the baseline rows measured.
func (r *Result) baselinesText() string {
	if r.Netns {
		return "The bare loop is fi_writedata in C from a process in host a's namespace into one size-byte region of a " +
			"process in host b's (fabric.DialBare/ListenBare), timed from the first post to the last immediate on the " +
			"clock both share; it has no headers, head write-backs or pools. The transport loop is not measured between namespaces; " +
			"the publisher and the subscriber are processes, the window is kept by credits the subscriber returns over a socket pair. "
	}
	return "The bare loop is fi_writedata in C between two endpoints of this process " +
		"(fabric.MeasureBare, one size-byte region, which stays in the caches when small); the streaming bare loop is the same loop " +
		"from fresh memory into fresh memory (fabric.MeasureBareStream: the source cycles through the window's worth of messages, " +
		"the target through a ring-sized region, as the bridge's data does); the transport loop is WriteImm through the transport.Provider " +
		"API into a ring-sized region at consecutive offsets; neither has headers, head write-backs or pools. "
}

// latencyText says how latency was measured.
func (r *Result) latencyText() string {
	gap := " Each message is published as soon as the previous one was taken."
	if r.GapNs > 0 {
		gap = fmt.Sprintf(" Each message is published %v after the previous one was taken (-gap): the bridges are idle when it comes.", time.Duration(r.GapNs))
	}
	if r.Netns {
		return "One message at a time: from the sample's source timestamp (stamped in the publisher process's Publish, " +
			"message already written into its loan, kept by the bridges) until the subscriber process's Take returned it, " +
			"one machine's clock; µs." + gap
	}
	return "One message at a time: from the publish call (message already written into its loan) " +
		"until the subscriber's Take returned it, same process and clock; µs." + gap
}
