package benchlocal

import (
	"context"
	"fmt"
	"os"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// peerTimeout bounds every blocking read or write on a socket to a child:
// a child that hangs fails the run instead of hanging it.
const peerTimeout = 60 * time.Second

// harness is the publisher side of a run.
type harness struct {
	o       Options
	ctx     context.Context
	private bool // o.Prefix was made up for this run: remove all of it
	procs   *benchutil.Procs

	rc        *rgaps.Context
	node      *rgaps.Node
	pub       *zerocopy.Publisher // the wakeup topic's
	topic     string
	poolSize  uint64
	udsBuf    []byte
	floor     *benchutil.Floor // PathFutex's segment
	floorName string
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
	rc, err := rgaps.NewContext(rgaps.Options{Domain: &dom, Engine: zerocopy.Config{
		Prefix: h.o.Prefix, PoolSize: h.poolSize, BusyPoll: -1,
	}})
	if err != nil {
		return err
	}
	h.rc = rc
	if h.node, err = rc.NewNode("bench_pub", "/rgaps_bench"); err != nil {
		return err
	}
	if h.pub, err = h.node.NewPublisher(h.topic, msgType, qos.Default()); err != nil {
		return err
	}
	h.floorName = benchutil.FloorName(h.o.Prefix)
	if h.floor, err = benchutil.CreateFloor(h.floorName); err != nil {
		return fmt.Errorf("the futex floor's segment: %w", err)
	}
	h.procs.Watch()
	return nil
}

// spawnAll starts n subscriber processes and has them join the domain. It
// returns the busy-poll setting their engine reports.
func (h *harness) spawnAll(n int) (time.Duration, error) {
	h.progress("starting %d subscriber processes", n)
	if err := h.procs.SpawnN(n); err != nil {
		return 0, err
	}
	bpReq := h.o.BusyPoll
	if bpReq == 0 {
		bpReq = -1 // explicitly off: Config.BusyPoll spins only when positive
	}
	kids := h.procs.Kids()
	for _, k := range kids {
		if err := h.procs.Send(k, request{Op: "init", Prefix: h.o.Prefix, Domain: h.o.Domain, PoolSize: h.poolSize, BusyPoll: bpReq, Index: k.I, Floor: h.floorName}); err != nil {
			return 0, err
		}
	}
	var bp time.Duration
	err := benchutil.Collect(h.procs, kids, func(_ int, _ *benchutil.Kid, rep *reply) error {
		bp = max(bp, rep.BusyPoll)
		return nil
	})
	return bp, err
}

// close ends the children (politely after a success, killed after a
// failure), reclaims what dead children left in the topic, closes the
// domain and, for a private prefix, removes every segment of it.
func (h *harness) close(failed bool) error {
	err := h.procs.Teardown(failed, 10*time.Second, h.rc, h.o.Prefix, h.private)
	h.floor.Close(true)
	return err
}

// cell runs one (path, size, subscriber count).
// pause (the futex path): see Cell.Pause.
func (h *harness) cell(path string, size, n, iters, warmup int, pause time.Duration) (Cell, error) {
	c := Cell{Path: path, Size: size, Subs: n, Iters: iters, Warmup: warmup, Pause: int64(pause)}
	kids := h.procs.Kids()[:n]
	count := iters + warmup
	if err := h.procs.SendAll(kids, request{Op: "cell", Path: path, Topic: h.topic, Size: size, Count: count, FloorBase: h.floor.Base()}); err != nil {
		return c, err
	}
	if err := benchutil.Collect[reply](h.procs, kids, nil); err != nil {
		return c, err
	}
	send := make([]int64, count)
	var queued, woken, idle []int64
	var err error
	switch path {
	case PathRgaps:
		queued, woken, idle = make([]int64, count), make([]int64, count), make([]int64, count)
		c.Unsettled, err = h.runRgaps(kids, size, send, queued, woken, idle)
	case PathUDS:
		err = h.runUDS(kids, size, send)
	case PathFutex:
		c.Unsettled, err = h.runFloor(kids, send, pause)
	}
	if err != nil {
		return c, err
	}
	c.Lat = make([][]int64, n)
	if path == PathRgaps {
		c.Wake = make([][]int64, n)
	}
	c.Received, c.Bad = make([]int, n), make([]int, n)
	err = benchutil.Collect(h.procs, kids, func(s int, k *benchutil.Kid, rep *reply) error {
		if len(rep.Lat) != count {
			return fmt.Errorf("subscriber %d reported %d latencies for %d messages", k.I, len(rep.Lat), count)
		}
		c.Lat[s] = rep.Lat[warmup:]
		if c.Wake != nil {
			if len(rep.Wake) != count {
				return fmt.Errorf("subscriber %d reported %d wake times for %d messages", k.I, len(rep.Wake), count)
			}
			c.Wake[s] = rep.Wake[warmup:]
		}
		c.Received[s] = len(rep.Lat)
		c.Bad[s] = rep.Bad
		if rep.Bad > 0 && c.FirstBad == "" {
			c.FirstBad = fmt.Sprintf("subscriber %d: %s", k.I, rep.FirstBad)
		}
		return nil
	})
	if err != nil {
		return c, err
	}
	c.Send = send[warmup:]
	if queued != nil {
		c.Queued, c.Woken, c.Idle = queued[warmup:], woken[warmup:], idle[warmup:]
	}
	c.Stats = cellStats(&c)
	return c, nil
}

// runRgaps: loan, fill (untimed), wait until every subscriber sleeps in
// Wait (untimed), stamp t0, Publish (traced: queued[i], woken[i]); then
// wait for every subscriber's acknowledgement before the next message.
// idle[i] is the time from the previous acknowledgements to t0.
func (h *harness) runRgaps(kids []*benchutil.Kid, size int, send, queued, woken, idle []int64) (unsettled int, err error) {
	if err := benchutil.WaitMatched(h.ctx, h.pub, len(kids), peerTimeout); err != nil {
		return 0, err
	}
	topic := h.pub.Topic()
	var tr zerocopy.PublishTrace
	acked := time.Now()
	for i := range send {
		if err := h.ctx.Err(); err != nil {
			return unsettled, err
		}
		loan, err := h.pub.Loan(size)
		if err != nil {
			return unsettled, err
		}
		b := loan.Bytes()
		fill(b, uint64(i))
		if !h.settle(len(kids), topic.Waiting) {
			unsettled++
		}
		t0 := time.Now()
		stamp(b, t0.UnixNano())
		if err := loan.PublishTraced(&tr); err != nil {
			return unsettled, err
		}
		send[i] = int64(time.Since(t0))
		queued[i], woken[i], idle[i] = int64(tr.Queued), int64(tr.Woken), int64(t0.Sub(acked))
		if err := h.acks(kids); err != nil {
			return unsettled, err
		}
		acked = time.Now()
	}
	return unsettled, nil
}

// runUDS: fill a private buffer (untimed), stamp t0, write the whole
// message to each subscriber's socket in turn; then wait for the
// acknowledgements.
func (h *harness) runUDS(kids []*benchutil.Kid, size int, send []int64) error {
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
			if _, err := k.Data.Write(b); err != nil {
				return h.procs.KidErr(k, fmt.Errorf("writing message %d: %w", i, err))
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
func (h *harness) acks(kids []*benchutil.Kid) error {
	if err := h.ack1(kids); err != nil {
		return err
	}
	for _, k := range kids {
		if _, err := k.Ctl.Write([]byte{'V'}); err != nil {
			return h.procs.KidErr(k, err)
		}
	}
	return h.ack1(kids)
}

// ack1 reads one acknowledgement from each subscriber.
func (h *harness) ack1(kids []*benchutil.Kid) error {
	var a [1]byte
	for _, k := range kids {
		if _, err := k.Ctl.Read(a[:]); err != nil {
			return h.procs.KidErr(k, err)
		}
		switch a[0] {
		case ackOK:
		case ackErr:
			var rep reply
			if err := benchutil.ReadFrame(k.Ctl, &rep, maxFrame); err != nil {
				return h.procs.KidErr(k, err)
			}
			return fmt.Errorf("subscriber %d: %s", k.I, rep.Err)
		default:
			return h.procs.KidErr(k, fmt.Errorf("protocol error: acknowledgement %q", a[0]))
		}
	}
	return nil
}
