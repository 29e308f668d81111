package main

// rgaps demo: the README's main job in one command. A publisher in this
// process loans blocks of a topic's shared pool, writes messages of mixed
// sizes (up to 4 MiB) straight into them and publishes; subscriber
// processes (this binary again, `rgaps demo _sub`) read every message in
// place, check every byte against the pattern its index determines, and
// report counts and latencies. The demo prints a summary and succeeds only
// if every message reached every subscriber intact.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/pattern"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

const (
	// demoSubRole is the hidden first argument that makes `rgaps demo` a
	// subscriber process of another demo.
	demoSubRole = "_sub"
	// demoHeader bytes start every message: its index, little-endian. The
	// counter pattern of that index follows.
	demoHeader = 8
	// demoMinSize keeps a few pattern words in the smallest messages.
	demoMinSize = 64
	// demoTimeout bounds every wait of the demo on another process; a
	// healthy run needs a small fraction of it.
	demoTimeout = 60 * time.Second
)

func init() {
	register("demo", "publisher + subscriber processes, large messages, every byte verified", runDemo)
}

// demoQoS is reliable KEEP_ALL on both sides: the publisher waits for a
// slow subscriber instead of overwriting its queue, so "every message
// arrives" is what the demo can promise and check.
func demoQoS() qos.Profile {
	q := qos.Default()
	q.History, q.Depth = qos.HistoryKeepAll, 0
	return q
}

// demoSize is the size of message i: mostly 1–64 KiB, every 5th between
// 1/16 and 1/4 of maxSize, every 10th maxSize. Every process computes the
// same, so subscribers check sizes too.
func demoSize(i uint64, maxSize int64) int {
	r := rand.New(rand.NewPCG(i, 0x72676170))
	var n int64
	switch {
	case i%10 == 9:
		n = maxSize
	case i%5 == 4:
		n = maxSize/16 + r.Int64N(maxSize/4-maxSize/16+1)
	default:
		n = 1<<10 + r.Int64N(63<<10+1)
	}
	return int(min(max(n, demoMinSize), maxSize))
}

// verifyDemo checks a received message; it returns its index and "" when
// every byte is right, or a description of the first problem.
func verifyDemo(b []byte, maxSize int64) (uint64, string) {
	if len(b) < demoHeader {
		return 0, fmt.Sprintf("only %d bytes", len(b))
	}
	idx := binary.LittleEndian.Uint64(b)
	if want := demoSize(idx, maxSize); len(b) != want {
		return idx, fmt.Sprintf("message %d has %d bytes, expected %d", idx, len(b), want)
	}
	if off := pattern.Check(b[demoHeader:], idx); off >= 0 {
		return idx, fmt.Sprintf("message %d: byte %d of %d is wrong", idx, demoHeader+off, len(b))
	}
	return idx, ""
}

type demoOpts struct {
	domain   domainFlag
	n        int
	size     int64
	subs     int // subscribers on host b (on the only host with -hosts 1)
	local    int // subscribers on host a (the publisher's) with -hosts 2
	hosts    int
	wire     string // auto, netns, loopback
	provider string
	rate     float64
	host     bool // stay on host memory even with a GPU
}

func parseDemo(args []string, out io.Writer) (demoOpts, error) {
	o := demoOpts{}
	size := sizeFlag(4 << 20)
	fs := newFlags("rgaps demo", "[-n N] [-size BYTES] [-subs K] [-local K] [-hosts 1|2] [-wire auto|netns|loopback] [-rate HZ] [-host]", out)
	fs.IntVar(&o.n, "n", 200, "messages to publish")
	fs.Var(&size, "size", "largest message `size`; sizes vary from 1 KiB up to it")
	fs.IntVar(&o.subs, "subs", 2, "subscriber processes on host b (on the publisher's host with -hosts 1)")
	fs.IntVar(&o.local, "local", 1, "with -hosts 2: subscriber processes on host a, the publisher's")
	fs.IntVar(&o.hosts, "hosts", 2, "emulated hosts: 2 (a daemon each, bridged) or 1 (shared memory only)")
	fs.StringVar(&o.wire, "wire", "auto", "how the two hosts are emulated: netns (needs root), loopback, or auto")
	fs.StringVar(&o.provider, "provider", "", "bridge transport: fabric:tcp (default with libfabric), tcp")
	fs.Float64Var(&o.rate, "rate", 100, "messages per second; 0 publishes as fast as the subscribers keep up")
	fs.BoolVar(&o.host, "host", false, "use host memory even when a GPU is available")
	if _, err := fs.parse(args, 0, 0); err != nil {
		return o, err
	}
	o.domain, o.size = fs.domain, int64(size)
	switch {
	case o.n < 1 || o.n > 10_000_000:
		return o, badUsage("-n %d: must be in [1, 10000000]", o.n)
	case o.size < demoMinSize || o.size > 1<<30:
		return o, badUsage("-size %s: must be in [%d, 1GiB]", formatSize(o.size), demoMinSize)
	case o.subs < 1 || o.subs > 32:
		return o, badUsage("-subs %d: must be in [1, 32]", o.subs)
	case o.local < 0 || o.local > 32:
		return o, badUsage("-local %d: must be in [0, 32]", o.local)
	case o.hosts != 1 && o.hosts != 2:
		return o, badUsage("-hosts %d: must be 1 or 2", o.hosts)
	case o.wire != "auto" && o.wire != "netns" && o.wire != "loopback":
		return o, badUsage("-wire %q: must be auto, netns or loopback", o.wire)
	case math.IsNaN(o.rate) || math.IsInf(o.rate, 0) || o.rate < 0:
		return o, badUsage("-rate %v: must be a number >= 0", o.rate)
	}
	return o, nil
}

func runDemo(args []string) error {
	if len(args) > 0 && args[0] == demoSubRole {
		return runDemoSub(args[1:])
	}
	o, err := parseDemo(args, os.Stderr)
	if err != nil {
		return reportUsage("rgaps demo", err)
	}
	return demo(o, os.Stdout)
}

// demoReport is what a subscriber process sends back, as one JSON line.
type demoReport struct {
	Pid      int    `json:"pid"`
	Received int    `json:"received"`
	Verified int    `json:"verified"`
	Bytes    int64  `json:"bytes"`
	Gaps     int    `json:"gaps"` // messages whose index did not follow the previous one's
	P50      int64  `json:"p50_ns"`
	P99      int64  `json:"p99_ns"`
	Max      int64  `json:"max_ns"`
	LastRecv int64  `json:"last_recv_unix_ns"`
	Problem  string `json:"problem,omitempty"` // the first verification failure
}

// percentile is the nearest-rank p-th percentile (0 < p <= 1) of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// runDemoSub is a subscriber process: it says "ready" once subscribed,
// takes and verifies messages until its stdin closes (the publisher is
// done, or gone) and the queue is empty, then prints "report <json>".
func runDemoSub(args []string) (err error) {
	var topic string
	var onGPU bool
	size := sizeFlag(4 << 20)
	fs := newFlags("rgaps demo "+demoSubRole, "-topic T -size BYTES [-gpu]", os.Stderr)
	fs.StringVar(&topic, "topic", "", "topic")
	fs.BoolVar(&onGPU, "gpu", false, "read device pointers (GPU subscription)")
	fs.Var(&size, "size", "largest message size")
	if _, err := fs.parse(args, 0, 0); err != nil {
		return err
	}
	s, err := openSession(fs.domain.options(zerocopy.Config{}), "rgaps_demo_sub")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close()) }()
	var opts []rgaps.EndpointOption
	var dev *cuda.Device
	var devBuf []byte
	if onGPU {
		opts = append(opts, rgaps.OnGPU())
		// A hold of its own on the domain's device (the same primary
		// context: the engine's device pointers are valid in it).
		if dev, err = cuda.Open(s.ctx.Engine().Config().Device); err != nil {
			return err
		}
		defer dev.Close()
	}
	sub, err := s.node.NewSubscription(topic, typeBytes, demoQoS(), opts...)
	if err != nil {
		return fmt.Errorf("subscribing: %w", err)
	}
	// finish is raised when stdin reaches EOF. The reader may outlive this
	// function (stdin stays open on an early return): mu keeps it from
	// raising a condition that was closed.
	finish := s.ctx.NewGuardCondition()
	var mu sync.Mutex
	closed := false
	defer func() {
		mu.Lock()
		closed = true
		finish.Close()
		mu.Unlock()
	}()
	// The publisher writes "done <published>" and closes stdin; messages
	// from another host may still be on their way then.
	var expect atomic.Int64
	expect.Store(-1)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "done "); ok {
				if v, err := strconv.ParseInt(n, 10, 64); err == nil {
					expect.Store(v)
				}
			}
		}
		mu.Lock()
		if !closed {
			finish.Trigger()
		}
		mu.Unlock()
	}()
	fmt.Println("ready")

	rep := demoReport{Pid: os.Getpid()}
	var lat []time.Duration
	next := uint64(0)
	var doneAt time.Time
	items, ready := []zerocopy.Waitable{sub, finish, s.stop}, make([]bool, 3)
	for {
		// Read the flag before taking: every message was queued before
		// stdin closed, so an empty queue seen after the flag is final.
		done := finish.Ready() || s.interrupted()
		smp, err := sub.Take()
		if errors.Is(err, zerocopy.ErrNoData) {
			if done && (s.interrupted() || int64(rep.Received) >= expect.Load()) {
				break
			}
			if done && doneAt.IsZero() {
				doneAt = time.Now()
			}
			if done && time.Since(doneAt) > demoTimeout {
				break // what is missing is reported as lost
			}
			if done {
				items = items[:1] // wait for the stragglers only
			}
			if err := s.ctx.Wait(items, ready, demoTimeout); errors.Is(err, zerocopy.ErrTimeout) {
				return fmt.Errorf("no message for %v", demoTimeout)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("taking message: %w", err)
		}
		info, b := smp.Info(), smp.Bytes()
		if onGPU {
			// The subscriber holds a device pointer to the shared GPU pool;
			// the demo copies it back only to check every byte.
			p, err := smp.DevicePtr()
			if err != nil {
				return fmt.Errorf("device pointer: %w", err)
			}
			if cap(devBuf) < smp.Size() {
				devBuf = make([]byte, smp.Size())
			}
			b = devBuf[:smp.Size()]
			if err := dev.MemcpyDtoH(b, cuda.DevicePtr(p)); err != nil {
				return fmt.Errorf("reading the device copy: %w", err)
			}
		}
		rep.Received++
		rep.Bytes += int64(len(b))
		rep.LastRecv = info.ReceivedTimestamp.UnixNano()
		lat = append(lat, info.ReceivedTimestamp.Sub(info.SourceTimestamp))
		idx, problem := verifyDemo(b, int64(size))
		if problem == "" {
			rep.Verified++
		} else if rep.Problem == "" {
			rep.Problem = problem
		}
		if idx != next {
			rep.Gaps++
		}
		next = idx + 1
		if err := smp.Return(); err != nil {
			return fmt.Errorf("returning message: %w", err)
		}
	}
	slices.Sort(lat)
	rep.P50, rep.P99 = int64(percentile(lat, 0.50)), int64(percentile(lat, 0.99))
	if len(lat) > 0 {
		rep.Max = int64(lat[len(lat)-1])
	}
	line, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Printf("report %s\n", line)
	return nil
}

// demoChild is a subscriber process seen from the publisher.
type demoChild struct {
	host    string // "a" or "b"; "" with one host
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string   // its stdout, closed at EOF
	exited  chan struct{} // closed once it has exited; then waitErr is set
	waitErr error
	report  *demoReport
}

func startDemoChild(cmd *exec.Cmd) (*demoChild, error) {
	cmd.Stderr = os.Stderr
	// Its own process group: a Ctrl-C in the terminal reaches only the
	// publisher, which then ends the subscribers in order (stdin EOF).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &demoChild{cmd: cmd, stdin: stdin, lines: make(chan string, 16), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 4096), 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.waitErr = cmd.Wait() // after the last read, as StdoutPipe requires
		close(c.exited)
	}()
	return c, nil
}

// next returns the child's next stdout line; ok is false when it exited or
// the timeout passed (err says which).
func (c *demoChild) next(timeout time.Duration) (line string, err error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case l, ok := <-c.lines:
		if ok {
			return l, nil
		}
		<-c.exited
		if c.waitErr != nil {
			return "", fmt.Errorf("exited: %w", c.waitErr)
		}
		return "", errors.New("exited")
	case <-t.C:
		return "", fmt.Errorf("silent for %v", timeout)
	}
}

// finish closes the child's stdin (the signal that publishing is over) and
// waits for it to exit, killing it if it does not.
func (c *demoChild) finish(timeout time.Duration) {
	c.stdin.Close()
	go func() {
		for range c.lines { // drain what the child still prints
		}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		c.cmd.Process.Kill()
		<-c.exited
	}
}

func demo(o demoOpts, w io.Writer) (err error) {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this program: %w", err)
	}
	// A pool for a few largest messages in flight per subscriber; a
	// reliable publisher waits for room when it is full.
	pool := max(64<<20, 8*o.size)
	cfg := zerocopy.Config{PoolSize: uint64(pool), BlockTimeout: demoTimeout / 4}
	s, err := openSession(o.domain.options(cfg), "rgaps_demo")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close()) }()
	topic := fmt.Sprintf("/rgaps_demo/p%d", os.Getpid())
	memory := "host shared memory"
	var opts []rgaps.EndpointOption
	if o.host {
		memory += " (-host)"
	} else if info, gerr := s.ctx.Engine().GPU(); gerr != nil {
		memory += fmt.Sprintf(" (no GPU here: %v)", gerr)
	} else {
		memory = fmt.Sprintf("shared GPU pool on %s: one host→device copy per message, read in place by every GPU subscriber", info.Name)
		opts = append(opts, rgaps.OnGPU())
	}
	pub, err := s.node.NewPublisher(topic, typeBytes, demoQoS(), opts...)
	if err != nil {
		return fmt.Errorf("creating publisher: %w", err)
	}
	domain := s.ctx.DomainID()
	var hosts *emuHosts
	nsubs := o.subs
	if o.hosts == 2 {
		nsubs += o.local
		fmt.Fprintf(w, "rgaps demo: host a: 1 publisher (pid %d) and %d subscriber processes; host b: %d subscriber processes; topic %s, domain %d\n",
			os.Getpid(), o.local, o.subs, topic, domain)
		if hosts, err = startHosts(exe, o, domain, s.ctx.Engine().Config().Prefix); err != nil {
			return fmt.Errorf("starting two emulated hosts: %w", err)
		}
		defer func() {
			if err != nil {
				for i := range hosts.daemons {
					fmt.Fprintf(os.Stderr, "--- daemon of host %c (log tail) ---\n%s\n", 'a'+i, hosts.logTail(i))
				}
			}
			err = errors.Join(err, hosts.stop())
		}()
		fmt.Fprintf(w, "hosts:     %s\n", hosts.describe())
	} else {
		fmt.Fprintf(w, "rgaps demo: 1 publisher (pid %d) and %d subscriber processes on %s, domain %d\n", os.Getpid(), o.subs, topic, domain)
	}

	children := make([]*demoChild, 0, nsubs)
	defer func() {
		for _, c := range children {
			c.finish(10 * time.Second)
		}
		// A subscriber that died keeps its slot until reclaimed; reclaim
		// now so that closing the publisher removes the topic's segment.
		s.ctx.Engine().Reclaim()
	}()
	args := []string{exe, "demo", demoSubRole, "-domain", strconv.FormatUint(uint64(domain), 10), "-topic", topic, "-size", strconv.FormatInt(o.size, 10)}
	if len(opts) > 0 {
		args = append(args, "-gpu")
	}
	for i := range nsubs {
		cmd, host := exec.Command(args[0], args[1:]...), ""
		if hosts != nil {
			h := 1
			if i < o.local {
				h = 0
			}
			cmd, host = hosts.command(h, args...), string(rune('a'+h))
		}
		c, err := startDemoChild(cmd)
		if err != nil {
			return fmt.Errorf("starting subscriber %d: %w", i+1, err)
		}
		c.host = host
		children = append(children, c)
	}
	for i, c := range children {
		if l, err := c.next(demoTimeout); err != nil || l != "ready" {
			return fmt.Errorf("subscriber %d (pid %d) did not start: %q %v", i+1, c.cmd.Process.Pid, l, err)
		}
	}
	// With two hosts the publisher matches the local subscriptions and
	// the bridge's subscription that stands for host b's.
	want := o.subs
	if hosts != nil {
		want = o.local + 1
	}
	for deadline := time.Now().Add(demoTimeout); pub.Matched() < want; {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d subscriptions matched", pub.Matched(), want)
		}
		if !s.sleep(2 * time.Millisecond) {
			return errors.New("interrupted")
		}
	}
	paths := map[string]int{}
	if eps, err := s.ctx.Endpoints(topic); err == nil {
		for _, e := range eps {
			if !e.Republish {
				paths[e.Path]++
			}
		}
	}
	if hosts == nil {
		fmt.Fprintf(w, "data path: %s\n", describePaths(paths))
	} else {
		fmt.Fprintf(w, "data path: host a: %s\n", describePaths(paths))
		fmt.Fprintf(w, "           a → b:  %s (one write per message into host b's ring; host b's daemon places it once for all its readers)\n", hosts.provider)
		fmt.Fprintf(w, "           host b: %s\n", describePaths(hosts.remotePaths(domain, topic)))
	}
	fmt.Fprintln(w, "memory:    "+memory)
	fmt.Fprintf(w, "pool:      %s per topic; QoS %s\n", humanBytes(pool), pub.QoS())
	fmt.Fprintf(w, "publishing %d messages of mixed sizes up to %s at %s...\n", o.n, humanBytes(o.size), rateString(o.rate))

	// Publish: each message is written once, in place, in the loaned block.
	var period time.Duration
	if o.rate > 0 {
		period = time.Duration(float64(time.Second) / o.rate)
	}
	published, pubBytes, smallest, largest := 0, int64(0), math.MaxInt, 0
	var pubErr error
	start := time.Now()
	next := start
	for i := range o.n {
		size := demoSize(uint64(i), o.size)
		loan, err := pub.Loan(size)
		if err != nil {
			pubErr = fmt.Errorf("loaning message %d (%d bytes): %w", i, size, err)
			break
		}
		b := loan.Bytes()
		if b == nil {
			loan.Discard()
			pubErr = errors.New("the topic's pool is not in host memory")
			break
		}
		binary.LittleEndian.PutUint64(b, uint64(i))
		pattern.Fill(b[demoHeader:], uint64(i))
		if err := loan.Publish(); err != nil {
			pubErr = fmt.Errorf("publishing message %d: %w", i, err)
			break
		}
		published++
		pubBytes += int64(size)
		smallest, largest = min(smallest, size), max(largest, size)
		next = next.Add(period)
		if !s.sleep(time.Until(next)) {
			pubErr = errors.New("interrupted")
			break
		}
	}
	pubTime := time.Since(start)

	// Tell the subscribers how many to expect, collect their reports.
	for _, c := range children {
		fmt.Fprintf(c.stdin, "done %d\n", published)
		c.stdin.Close()
	}
	var problems []string
	for i, c := range children {
		for c.report == nil {
			l, err := c.next(demoTimeout)
			if err != nil {
				problems = append(problems, fmt.Sprintf("subscriber %d sent no report: %v", i+1, err))
				break
			}
			if js, ok := strings.CutPrefix(l, "report "); ok {
				var r demoReport
				if err := json.Unmarshal([]byte(js), &r); err != nil {
					problems = append(problems, fmt.Sprintf("subscriber %d: bad report: %v", i+1, err))
					break
				}
				c.report = &r
			}
		}
	}

	fmt.Fprintf(w, "\npublished: %d messages", published)
	if published > 0 {
		fmt.Fprintf(w, ", %s to %s each, %s in %.2f s (%.0f msg/s, %.1f MiB/s)",
			humanBytes(smallest), humanBytes(largest), humanBytes(pubBytes), pubTime.Seconds(),
			float64(published)/pubTime.Seconds(), float64(pubBytes)/(1<<20)/pubTime.Seconds())
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "subscriber\thost\tpid\treceived\tverified\tlost\tp50 latency\tp99 latency\tmax latency\tthroughput\t")
	verified, delivered := 0, int64(0)
	for i, c := range children {
		r := c.report
		if r == nil {
			fmt.Fprintf(tw, "%d\t%s\t%d\t-\t-\t-\t-\t-\t-\t-\t\n", i+1, hostName(c.host), c.cmd.Process.Pid)
			continue
		}
		verified += r.Verified
		delivered += r.Bytes
		span := time.Unix(0, r.LastRecv).Sub(start)
		thr := "-"
		if r.Received > 0 && span > 0 {
			thr = fmt.Sprintf("%.1f MiB/s", float64(r.Bytes)/(1<<20)/span.Seconds())
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%v\t%v\t%v\t%s\t\n", i+1, hostName(c.host), r.Pid, r.Received, r.Verified, published-r.Received,
			roundLatency(r.P50), roundLatency(r.P99), roundLatency(r.Max), thr)
		switch {
		case r.Problem != "":
			problems = append(problems, fmt.Sprintf("subscriber %d: %s", i+1, r.Problem))
		case r.Received != published:
			problems = append(problems, fmt.Sprintf("subscriber %d received %d of %d messages", i+1, r.Received, published))
		case r.Gaps != 0:
			problems = append(problems, fmt.Sprintf("subscriber %d: %d messages out of order", i+1, r.Gaps))
		}
	}
	tw.Flush()
	if hosts == nil {
		fmt.Fprintf(w, "\nzero copy: each message was written once into shared memory and read in place by %d processes (%s delivered, %s written)\n",
			o.subs, humanBytes(delivered), humanBytes(pubBytes))
	} else {
		fmt.Fprintf(w, "\nzero copy: each message was written once on host a, read in place by %d process(es) there, sent once to host b and placed once there for %d process(es) (%s delivered, %s written)\n",
			o.local, o.subs, humanBytes(delivered), humanBytes(pubBytes))
	}
	if pubErr != nil {
		problems = append([]string{pubErr.Error()}, problems...)
	}
	if published != o.n && pubErr == nil {
		problems = append(problems, fmt.Sprintf("published %d of %d messages", published, o.n))
	}
	if len(problems) > 0 {
		fmt.Fprintf(w, "FAILED: %d of %d deliveries verified\n", verified, o.n*len(children))
		return fmt.Errorf("demo failed: %s", strings.Join(problems, "; "))
	}
	fmt.Fprintf(w, "OK: all %d deliveries (%d messages x %d subscribers) verified byte for byte\n", verified, published, len(children))
	return nil
}

func hostName(h string) string {
	if h == "" {
		return "-"
	}
	return h
}

func describePaths(paths map[string]int) string {
	if len(paths) == 0 {
		return "unknown (the graph lists no endpoint)"
	}
	var parts []string
	total := 0
	for p, n := range paths {
		parts = append(parts, p)
		total += n
	}
	slices.Sort(parts)
	if len(parts) == 1 {
		return fmt.Sprintf("%s (all %d endpoints)", parts[0], total)
	}
	for i, p := range parts {
		parts[i] = fmt.Sprintf("%s (%d endpoint%s)", p, paths[p], map[bool]string{true: "s"}[paths[p] != 1])
	}
	return strings.Join(parts, ", ")
}

func rateString(hz float64) string {
	if hz == 0 {
		return "full speed"
	}
	return strconv.FormatFloat(hz, 'f', -1, 64) + " msg/s"
}

// roundLatency keeps three significant digits or so.
func roundLatency(ns int64) time.Duration {
	d := time.Duration(ns)
	switch {
	case d < 10*time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	case d < 10*time.Millisecond:
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}
