package benchlocal

import (
	"fmt"
	"io"
	"os"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// ChildCommand is the rgaps command that runs ChildMain; the default
// launcher re-executes the running binary with it.
const ChildCommand = "bench-child"

// msgType is the message type of the benchmark topics.
const msgType = "rgaps_bench/msg/Blob"

// child is the state of a subscriber process.
type child struct {
	ctl, data benchutil.FD
	ppid      int
	ctx       *rgaps.Context
	node      *rgaps.Node
	buf       []byte           // receive buffer of the UDS baseline
	floor     *benchutil.Floor // the futex floor's words (PathFutex)
}

// ChildMain is a subscriber process of the local benchmark (`rgaps
// bench-child`). It finds its control socket on fd 3 and the baseline's data
// socket on fd 4, answers the parent's requests, and returns when the parent
// closes the control socket or asks it to exit.
func ChildMain() error {
	ctl, data, err := benchutil.ChildSetup("rgaps-bench local")
	if err != nil {
		return err
	}
	c := &child{ctl: ctl, data: data, ppid: os.Getppid()}
	defer c.close()
	return benchutil.Serve(c.ctl, maxFrame, func(req request) (bool, error) {
		switch req.Op {
		case "init":
			return false, c.init(req)
		case "cell":
			return false, c.cell(req)
		case "exit":
			c.close()
			return true, benchutil.WriteFrame(c.ctl, reply{})
		}
		return false, benchutil.WriteFrame(c.ctl, reply{Err: fmt.Sprintf("unknown request %q", req.Op)})
	})
}

func (c *child) close() {
	if c.ctx != nil {
		c.ctx.Close()
		c.ctx, c.node = nil, nil
	}
	c.floor.Close(false)
	c.floor = nil
}

// init joins the domain. A failure is answered, not fatal.
func (c *child) init(req request) error {
	dom := req.Domain
	ctx, err := rgaps.NewContext(rgaps.Options{Domain: &dom, Engine: zerocopy.Config{
		Prefix: req.Prefix, PoolSize: req.PoolSize, BusyPoll: req.BusyPoll,
	}})
	if err != nil {
		return benchutil.WriteFrame(c.ctl, reply{Err: err.Error()})
	}
	node, err := ctx.NewNode(fmt.Sprintf("bench_sub%d", req.Index), "/rgaps_bench")
	if err != nil {
		ctx.Close()
		return benchutil.WriteFrame(c.ctl, reply{Err: err.Error()})
	}
	c.ctx, c.node = ctx, node
	if req.Floor != "" {
		if c.floor, err = benchutil.OpenFloor(req.Floor); err != nil {
			return benchutil.WriteFrame(c.ctl, reply{Err: err.Error()})
		}
	}
	return benchutil.WriteFrame(c.ctl, reply{Pid: os.Getpid(), BusyPoll: ctx.Engine().Config().BusyPoll})
}

// cell receives req.Count messages on one path, acknowledging each, and
// answers with the latencies. Errors that end the cell early are sent as an
// ackErr and a frame; only a broken control socket is fatal.
func (c *child) cell(req request) error {
	if (req.Size < MinSize && req.Path != PathFutex) || req.Count <= 0 {
		return benchutil.WriteFrame(c.ctl, reply{Err: fmt.Sprintf("bad cell: size %d, count %d", req.Size, req.Count)})
	}
	// recv waits for message i and returns its latency and a function that,
	// untimed, checks its bytes and releases it. rgaps also notes when its
	// Wait returned (wakes).
	var recv func(i int) (lat int64, finish func() (bad string, err error), err error)
	var done func()
	var wakes []int64
	switch req.Path {
	case PathRgaps:
		if c.node == nil {
			return benchutil.WriteFrame(c.ctl, reply{Err: "not initialised"})
		}
		sub, err := c.node.NewSubscription(req.Topic, msgType, qos.Default())
		if err != nil {
			return benchutil.WriteFrame(c.ctl, reply{Err: err.Error()})
		}
		done = func() { sub.Close() }
		wakes = make([]int64, req.Count)
		recv = func(i int) (int64, func() (string, error), error) { return c.recvRgaps(sub, i, req.Size, &wakes[i]) }
	case PathUDS:
		if cap(c.buf) < req.Size {
			c.buf = nil
			c.buf = make([]byte, req.Size)
		}
		done = func() {}
		recv = func(i int) (int64, func() (string, error), error) { return c.recvUDS(i, req.Size) }
	case PathFutex:
		done = func() {}
		recv = func(i int) (int64, func() (string, error), error) { return c.recvFloor(i, req.FloorBase) }
	default:
		return benchutil.WriteFrame(c.ctl, reply{Err: fmt.Sprintf("unknown path %q", req.Path)})
	}
	defer func() { done() }()
	if err := benchutil.WriteFrame(c.ctl, reply{}); err != nil { // ready
		return err
	}
	fail := func(i int, err error) error {
		done()
		done = func() {}
		if _, werr := c.ctl.Write([]byte{ackErr}); werr != nil {
			return werr
		}
		return benchutil.WriteFrame(c.ctl, reply{Err: fmt.Sprintf("message %d: %v", i, err)})
	}
	rep := reply{Lat: make([]int64, req.Count)}
	var go1 [1]byte
	for i := range req.Count {
		// Phase 1, timed: wake up, take, record; acknowledge. Phase 2,
		// once the parent has heard from every subscriber (so that one
		// subscriber's checking never delays another's wakeup): check the
		// bytes, release the message, acknowledge again.
		lat, finish, err := recv(i)
		if err != nil {
			return fail(i, err)
		}
		rep.Lat[i] = lat
		if _, err := c.ctl.Write([]byte{ackOK}); err != nil {
			return err
		}
		if _, err := io.ReadFull(c.ctl, go1[:]); err != nil {
			return err
		}
		bad, err := finish()
		if err != nil {
			return fail(i, err)
		}
		if bad != "" {
			if rep.Bad == 0 {
				rep.FirstBad = bad
			}
			rep.Bad++
		}
		if _, err := c.ctl.Write([]byte{ackOK}); err != nil {
			return err
		}
	}
	done()
	done = func() {}
	rep.Wake = wakes
	return benchutil.WriteFrame(c.ctl, rep)
}

// recvRgaps blocks in Subscription.Wait (futex, or a spin first with
// BusyPoll), takes the sample and records now − t0 (and in *wake, when
// Wait returned − t0); finish checks the bytes in place and returns the
// sample.
func (c *child) recvRgaps(sub *zerocopy.Subscription, i, size int, wake *int64) (int64, func() (string, error), error) {
	var woke int64
	smp, err := benchutil.TakeNext(sub, c.ppid, func() { woke = time.Now().UnixNano() })
	if err != nil {
		return 0, nil, err
	}
	now := time.Now().UnixNano()
	t0 := stampOf(smp.Bytes())
	lat := now - t0
	*wake = woke - t0
	return lat, func() (string, error) {
		bad := check(smp.Bytes(), uint64(i), size)
		return bad, smp.Return()
	}, nil
}

// recvUDS blocks in read(2) until the whole message is in its own buffer
// and records now − t0; finish checks the bytes.
func (c *child) recvUDS(i, size int) (int64, func() (string, error), error) {
	b := c.buf[:size]
	if _, err := io.ReadFull(c.data, b); err != nil {
		return 0, nil, err
	}
	now := time.Now().UnixNano()
	return now - stampOf(b), func() (string, error) { return check(b, uint64(i), size), nil }, nil
}
