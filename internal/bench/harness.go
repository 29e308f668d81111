package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
)

// peerTimeout bounds every blocking read or write on a socket to a child:
// a child that hangs fails the run instead of hanging it.
const peerTimeout = 60 * time.Second

// harness is the publisher side of a run.
type harness struct {
	o       Options
	ctx     context.Context
	private bool // o.Prefix was made up for this run: remove all of it

	rc       *rgaps.Context
	node     *rgaps.Node
	pub      *rgaps.Publisher // the wakeup topic's
	topic    string
	poolSize uint64
	udsBuf   []byte

	mu       sync.Mutex // guards kids and killed against the cancel hook
	kids     []*kid
	killed   bool
	stopHook func() bool
}

// kid is one subscriber process.
type kid struct {
	i      int
	cmd    *exec.Cmd
	pid    int
	ctl    fdio // parent ends of the socket pairs
	data   fdio
	stderr *tailBuffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

func (h *harness) progress(format string, args ...any) {
	if h.o.Progress != nil {
		fmt.Fprintf(h.o.Progress, format+"\n", args...)
	}
}

// poolFor is the pool of the benchmark topics: two of the largest message
// (one in flight plus slack) and a margin.
func poolFor(o Options) uint64 {
	m := max(maxOf(o.Sizes), maxOf(o.AllocSizes))
	return max(16<<20, 2*uint64(m)+4<<20)
}

func maxOf(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

func (h *harness) open() error {
	h.poolSize = poolFor(h.o)
	h.topic = fmt.Sprintf("/rgaps_bench/p%d/wakeup", os.Getpid())
	dom := h.o.Domain
	rc, err := rgaps.NewContext(rgaps.Options{Domain: &dom, Engine: rgaps.EngineConfig{
		Prefix: h.o.Prefix, PoolSize: h.poolSize, BusyPoll: -1,
	}})
	if err != nil {
		return err
	}
	h.rc = rc
	if h.node, err = rc.NewNode("bench_pub", "/rgaps_bench"); err != nil {
		return err
	}
	if h.pub, err = h.node.NewPublisher(h.topic, msgType, rgaps.DefaultQoS()); err != nil {
		return err
	}
	h.stopHook = context.AfterFunc(h.ctx, h.killAll)
	return nil
}

// spawnAll starts n subscriber processes and has them join the domain. It
// returns the busy-poll setting their engine reports.
func (h *harness) spawnAll(n int) (time.Duration, error) {
	h.progress("starting %d subscriber processes", n)
	for i := range n {
		if err := h.ctx.Err(); err != nil {
			return 0, err
		}
		if _, err := h.spawn(i); err != nil {
			return 0, err
		}
	}
	var bp time.Duration
	bpReq := h.o.BusyPoll
	if bpReq == 0 {
		bpReq = -1 // explicitly off: Config.BusyPoll spins only when positive
	}
	for _, k := range h.kids {
		if err := writeFrame(k.ctl, request{Op: "init", Prefix: h.o.Prefix, Domain: h.o.Domain, PoolSize: h.poolSize, BusyPoll: bpReq, Index: k.i}); err != nil {
			return 0, h.kidErr(k, err)
		}
	}
	for _, k := range h.kids {
		var rep reply
		if err := readFrame(k.ctl, &rep); err != nil {
			return 0, h.kidErr(k, err)
		}
		if rep.Err != "" {
			return 0, fmt.Errorf("subscriber %d: %s", k.i, rep.Err)
		}
		bp = max(bp, rep.BusyPoll)
	}
	return bp, nil
}

func (h *harness) spawn(i int) (*kid, error) {
	var ctl, data [2]int
	var err error
	if ctl, err = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	if data, err = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0); err != nil {
		syscall.Close(ctl[0])
		syscall.Close(ctl[1])
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	ctlChild, dataChild := os.NewFile(uintptr(ctl[1]), "bench-control"), os.NewFile(uintptr(data[1]), "bench-data")
	defer ctlChild.Close()
	defer dataChild.Close()
	fail := func(err error) (*kid, error) {
		syscall.Close(ctl[0])
		syscall.Close(data[0])
		return nil, err
	}
	for _, fd := range []int{ctl[0], data[0]} {
		if err := setTimeouts(fd, peerTimeout); err != nil {
			return fail(fmt.Errorf("socket timeouts: %w", err))
		}
	}
	cmd := h.o.Child()
	cmd.ExtraFiles = []*os.File{ctlChild, dataChild} // fds 3 and 4
	cmd.Stdin, cmd.Stdout = nil, nil
	k := &kid{i: i, cmd: cmd, ctl: fdio(ctl[0]), data: fdio(data[0]), stderr: &tailBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = k.stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Own process group: a terminal's ^C goes to the parent alone, which
	// cleans up. Pdeathsig: a parent killed outright takes its children.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.killed {
		return fail(h.ctx.Err())
	}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("starting subscriber %d: %w", i, err))
	}
	k.pid = cmd.Process.Pid
	go func() {
		k.err = cmd.Wait()
		close(k.exited)
	}()
	h.kids = append(h.kids, k)
	return k, nil
}

// killAll kills every child at once (cancellation, or an error).
func (h *harness) killAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.killed = true
	for _, k := range h.kids {
		k.cmd.Process.Kill()
	}
}

// kidErr turns a failed exchange with a child into an error naming it and
// what it said on stderr.
func (h *harness) kidErr(k *kid, err error) error {
	if h.ctx.Err() != nil {
		return h.ctx.Err()
	}
	select {
	case <-k.exited:
	case <-time.After(200 * time.Millisecond):
	}
	msg := fmt.Sprintf("subscriber %d (pid %d): %v", k.i, k.pid, err)
	select {
	case <-k.exited:
		msg += fmt.Sprintf("; it exited (%v)", k.err)
	default:
	}
	if s := strings.TrimSpace(k.stderr.String()); s != "" {
		msg += "; its stderr: " + s
	}
	return errors.New(msg)
}

// close ends the children (politely after a success: closing the control
// socket makes them leave the domain and exit; after a failure: killed),
// reclaims what dead children left in the topic, closes the domain and, for
// a private prefix, removes every segment of it.
func (h *harness) close(failed bool) error {
	if h.stopHook != nil {
		h.stopHook()
	}
	if failed {
		h.killAll()
	}
	var errs []error
	for _, k := range h.kids {
		syscall.Close(int(k.ctl))
		syscall.Close(int(k.data))
	}
	for _, k := range h.kids {
		select {
		case <-k.exited:
		case <-time.After(10 * time.Second):
			k.cmd.Process.Kill()
			<-k.exited
			errs = append(errs, fmt.Errorf("subscriber %d did not exit; killed", k.i))
		}
		if !failed && k.err != nil {
			errs = append(errs, h.kidErr(k, fmt.Errorf("exit: %w", k.err)))
		}
	}
	if h.rc != nil {
		if failed {
			h.rc.Engine().Reclaim() // slots of killed children, so the topic can go
		}
		if err := h.rc.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if h.private {
		ents, _ := os.ReadDir("/dev/shm")
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), h.o.Prefix+"_") {
				if err := os.Remove(filepath.Join("/dev/shm", e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// cell runs one (path, size, subscriber count).
func (h *harness) cell(path string, size, n, iters, warmup int) (Cell, error) {
	c := Cell{Path: path, Size: size, Subs: n, Iters: iters, Warmup: warmup}
	kids := h.kids[:n]
	count := iters + warmup
	for _, k := range kids {
		if err := writeFrame(k.ctl, request{Op: "cell", Path: path, Topic: h.topic, Size: size, Count: count}); err != nil {
			return c, h.kidErr(k, err)
		}
	}
	for _, k := range kids {
		var rep reply
		if err := readFrame(k.ctl, &rep); err != nil {
			return c, h.kidErr(k, err)
		}
		if rep.Err != "" {
			return c, fmt.Errorf("subscriber %d: %s", k.i, rep.Err)
		}
	}
	send := make([]int64, count)
	var err error
	switch path {
	case PathRgaps:
		err = h.runRgaps(kids, size, send)
	case PathUDS:
		err = h.runUDS(kids, size, send)
	}
	if err != nil {
		return c, err
	}
	c.Lat = make([][]int64, n)
	c.Received, c.Bad = make([]int, n), make([]int, n)
	for s, k := range kids {
		var rep reply
		if err := readFrame(k.ctl, &rep); err != nil {
			return c, h.kidErr(k, err)
		}
		if rep.Err != "" {
			return c, fmt.Errorf("subscriber %d: %s", k.i, rep.Err)
		}
		if len(rep.Lat) != count {
			return c, fmt.Errorf("subscriber %d reported %d latencies for %d messages", k.i, len(rep.Lat), count)
		}
		c.Lat[s] = rep.Lat[warmup:]
		c.Received[s] = len(rep.Lat)
		c.Bad[s] = rep.Bad
		if rep.Bad > 0 && c.FirstBad == "" {
			c.FirstBad = fmt.Sprintf("subscriber %d: %s", k.i, rep.FirstBad)
		}
	}
	c.Send = send[warmup:]
	c.Stats = cellStats(c.Lat, c.Send)
	return c, nil
}

// runRgaps: loan, fill (untimed), stamp t0, Publish; then wait for every
// subscriber's acknowledgement before the next message.
func (h *harness) runRgaps(kids []*kid, size int, send []int64) error {
	deadline := time.Now().Add(peerTimeout)
	for h.pub.Matched() != len(kids) {
		if time.Now().After(deadline) {
			return fmt.Errorf("publisher matched %d subscriptions, want %d", h.pub.Matched(), len(kids))
		}
		if err := h.ctx.Err(); err != nil {
			return err
		}
		time.Sleep(100 * time.Microsecond)
	}
	for i := range send {
		if err := h.ctx.Err(); err != nil {
			return err
		}
		loan, err := h.pub.Loan(size)
		if err != nil {
			return err
		}
		b := loan.Bytes()
		fill(b, uint64(i))
		t0 := time.Now()
		stamp(b, t0.UnixNano())
		if err := loan.Publish(); err != nil {
			return err
		}
		send[i] = int64(time.Since(t0))
		if err := h.acks(kids); err != nil {
			return err
		}
	}
	return nil
}

// runUDS: fill a private buffer (untimed), stamp t0, write the whole
// message to each subscriber's socket in turn; then wait for the
// acknowledgements.
func (h *harness) runUDS(kids []*kid, size int, send []int64) error {
	if cap(h.udsBuf) < size {
		h.udsBuf = nil
		h.udsBuf = make([]byte, size)
	}
	b := h.udsBuf[:size]
	for i := range send {
		if err := h.ctx.Err(); err != nil {
			return err
		}
		fill(b, uint64(i))
		t0 := time.Now()
		stamp(b, t0.UnixNano())
		for _, k := range kids {
			if _, err := k.data.Write(b); err != nil {
				return h.kidErr(k, fmt.Errorf("writing message %d: %w", i, err))
			}
		}
		send[i] = int64(time.Since(t0))
		if err := h.acks(kids); err != nil {
			return err
		}
	}
	return nil
}

// acks waits for every subscriber to have recorded the message (phase 1),
// lets them all check it (phase 2) and waits for that.
func (h *harness) acks(kids []*kid) error {
	if err := h.ack1(kids); err != nil {
		return err
	}
	for _, k := range kids {
		if _, err := k.ctl.Write([]byte{'V'}); err != nil {
			return h.kidErr(k, err)
		}
	}
	return h.ack1(kids)
}

// ack1 reads one acknowledgement from each subscriber.
func (h *harness) ack1(kids []*kid) error {
	var a [1]byte
	for _, k := range kids {
		if _, err := k.ctl.Read(a[:]); err != nil {
			return h.kidErr(k, err)
		}
		switch a[0] {
		case ackOK:
		case ackErr:
			var rep reply
			if err := readFrame(k.ctl, &rep); err != nil {
				return h.kidErr(k, err)
			}
			return fmt.Errorf("subscriber %d: %s", k.i, rep.Err)
		default:
			return h.kidErr(k, fmt.Errorf("protocol error: acknowledgement %q", a[0]))
		}
	}
	return nil
}

// tailBuffer keeps the last 8 KiB written to it (a child's stderr).
type tailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if t.b.Len() > 8<<10 {
		t.b.Next(t.b.Len() - 8<<10)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
