package benchgpu

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// child is the state of a subscriber process.
type child struct {
	ctl, data benchutil.FD
	ppid      int
	rc        *rgaps.Context
	node      *rgaps.Node
	dev       device
	fake      bool
	floor     *benchutil.Floor // data path 3's futex floor
}

// ChildMain is a subscriber process of the GPU benchmark (`rgaps
// bench-gpu-child`). It finds its control socket on fd 3 and the UDS
// baseline's data socket on fd 4, answers the parent's requests, and
// returns when the parent closes the control socket.
func ChildMain() error {
	ctl, data, err := benchutil.ChildSetup("rgaps-bench gpu")
	if err != nil {
		return err
	}
	c := &child{ctl: ctl, data: data, ppid: os.Getppid()}
	defer c.close()
	return benchutil.Serve(c.ctl, maxFrame, func(req request) (bool, error) {
		switch req.Op {
		case "init":
			return false, c.init(req)
		case "dp1":
			return false, c.dp1(req)
		case "dp3":
			return false, c.dp3(req)
		case "floor":
			return false, c.floorCell(req)
		}
		return false, benchutil.WriteFrame(c.ctl, reply{Err: fmt.Sprintf("unknown request %q", req.Op)})
	})
}

func (c *child) close() {
	c.floor.Close(false)
	c.floor = nil
	if d, ok := c.dev.(*cuda.Device); ok {
		d.Close()
		c.dev = nil
	}
	if c.rc != nil {
		c.rc.Close()
		c.rc, c.node = nil, nil
	}
}

// answer sends a failed request's error; only a broken control socket is
// fatal.
func (c *child) answer(err error) error { return benchutil.WriteFrame(c.ctl, reply{Err: err.Error()}) }

// init joins the domain and opens the CUDA context, loading the built-in
// kernels (JIT) with one checksum: the costs a subscriber pays once, before
// any message.
func (c *child) init(req request) error {
	t := time.Now()
	dom := req.Domain
	cfg := engineConfig(req.Prefix, req.PoolSize, req.Device)
	cfg.StagingSize = req.StagingSize
	if req.BusyPoll > 0 {
		cfg.BusyPoll = req.BusyPoll
	}
	rc, err := rgaps.NewContext(rgaps.Options{Domain: &dom, Engine: cfg})
	if err != nil {
		return c.answer(err)
	}
	c.rc = rc
	if c.node, err = rc.NewNode(fmt.Sprintf("bench_gpu_sub%d", req.Index), "/rgaps_bench_gpu"); err != nil {
		return c.answer(err)
	}
	c.fake = req.Fake
	if req.Floor != "" {
		if c.floor, err = benchutil.OpenFloor(req.Floor); err != nil {
			return c.answer(err)
		}
	}
	if req.Fake {
		if testDevice == nil {
			return c.answer(errors.New("fake device requested outside the package's tests"))
		}
		c.dev = testDevice()
	} else {
		ordinal := rc.Engine().Config().Device
		dev, err := cuda.Open(ordinal) // the engine's primary context
		if err != nil {
			return c.answer(needsGPU(err))
		}
		c.dev = dev
		if req.Schedule != "" {
			// The device the engine uses; before any kernel of this
			// process (SetSchedule also changes a context in use).
			if err := cuda.SetSchedule(ordinal, schedules[req.Schedule]); err != nil {
				return c.answer(err)
			}
		}
	}
	p, err := c.dev.Alloc(MinSize)
	if err != nil {
		return c.answer(err)
	}
	err = c.dev.FillPattern(p, MinSize, 1, nil)
	if err == nil {
		_, err = c.dev.Checksum(p, MinSize)
	}
	err = errors.Join(err, c.dev.Free(p))
	if err != nil {
		return c.answer(err)
	}
	return benchutil.WriteFrame(c.ctl, reply{Pid: os.Getpid(), InitNs: int64(time.Since(t)), BusyPoll: max(rc.Engine().Config().BusyPoll, 0)})
}

// waitSample blocks in Subscription.Wait until a sample is queued, notes
// the time it returned, and takes the sample.
func (c *child) waitSample(sub *zerocopy.Subscription) (*zerocopy.Sample, int64, error) {
	var wake int64
	smp, err := benchutil.TakeNext(sub, c.ppid, func() { wake = time.Now().UnixNano() })
	if err != nil {
		return nil, 0, err
	}
	return smp, wake, nil
}

// floorCell (FloorCell): per message, sleep on the floor word until the
// parent wakes it, and acknowledge with wake − t0 (ack.Wake).
func (c *child) floorCell(req request) error {
	if c.floor == nil {
		return c.answer(errors.New("no floor segment"))
	}
	if req.Count <= 0 {
		return c.answer(fmt.Errorf("bad floor cell: count %d", req.Count))
	}
	if err := benchutil.WriteFrame(c.ctl, reply{}); err != nil { // ready
		return err
	}
	for i := range req.Count {
		lat, err := c.floor.Sleep(i, req.FloorBase, c.ppid)
		if err != nil {
			return c.failCell(i, err)
		}
		if err := benchutil.WriteFrame(c.ctl, ack{Wake: lat}); err != nil {
			return err
		}
	}
	return benchutil.WriteFrame(c.ctl, reply{})
}

// failCell reports an error that ends a cell early, as the acknowledgement
// the parent waits for.
func (c *child) failCell(i int, err error) error {
	return benchutil.WriteFrame(c.ctl, ack{Err: fmt.Sprintf("message %d: %v", i, err)})
}

// dp1: per message, the Pinned-SHM sample (a host subscription: wake, take,
// check, return, acknowledge), then the UDS message (read it whole,
// acknowledge with one byte on the data socket, check, acknowledge on the
// control socket).
func (c *child) dp1(req request) error {
	if c.node == nil {
		return c.answer(errors.New("not initialised"))
	}
	if req.Size < MinSize || req.Count <= 0 {
		return c.answer(fmt.Errorf("bad cell: size %d, count %d", req.Size, req.Count))
	}
	sub, err := c.node.NewSubscription(req.Topic, msgType, qos.Default())
	if err != nil {
		return c.answer(err)
	}
	defer sub.Close()
	buf := make([]byte, req.Size)
	touch(buf)
	if err := benchutil.WriteFrame(c.ctl, reply{}); err != nil { // ready
		return err
	}
	for i := range req.Count {
		seed := req.Seed + uint32(i)
		smp, _, err := c.waitSample(sub)
		if err != nil {
			return c.failCell(i, err)
		}
		bad := ""
		if b := smp.Bytes(); len(b) != req.Size {
			bad = fmt.Sprintf("%d bytes, want %d", len(b), req.Size)
		} else {
			bad = checkPattern(b, seed)
		}
		if err := smp.Return(); err != nil {
			return c.failCell(i, err)
		}
		if err := benchutil.WriteFrame(c.ctl, ack{Bad: bad}); err != nil {
			return err
		}
		if _, err := io.ReadFull(c.data, buf); err != nil {
			return c.failCell(i, fmt.Errorf("UDS: %w", err))
		}
		if _, err := c.data.Write([]byte{'A'}); err != nil {
			return c.failCell(i, fmt.Errorf("UDS: %w", err))
		}
		if err := benchutil.WriteFrame(c.ctl, ack{Bad: checkPattern(buf, seed)}); err != nil {
			return err
		}
	}
	if err := sub.Close(); err != nil {
		return c.answer(err)
	}
	return benchutil.WriteFrame(c.ctl, reply{})
}

// dp3: per message, wake, take, get a device pointer to the complete data
// (Pinned-Shared: DevicePtr into the shared GPU pool; Pageable-Iceoryx: its
// own H2D copy of Bytes into private device memory, synchronised) and
// acknowledge with the times. Then, once the parent asks ("check", after
// every subscriber of the message answered), run the checksum kernel on
// it, return the sample and acknowledge with the checksum. Checking at
// once would let the first subscribers' kernels delay the later ones'
// wake-ups: the driver's default schedule spins on a CPU while a process
// waits for its kernel.
func (c *child) dp3(req request) error {
	if c.node == nil {
		return c.answer(errors.New("not initialised"))
	}
	if req.Size < MinSize || req.Count <= 0 {
		return c.answer(fmt.Errorf("bad cell: size %d, count %d", req.Size, req.Count))
	}
	var opts []rgaps.EndpointOption
	switch req.Path {
	case PathShared:
		if c.fake {
			return c.answer(errors.New("Pinned-Shared needs a real GPU"))
		}
		opts = append(opts, rgaps.OnGPU())
	case PathIceoryx:
	default:
		return c.answer(fmt.Errorf("unknown path %q", req.Path))
	}
	sub, err := c.node.NewSubscription(req.Topic, msgType, qos.Default(), opts...)
	if err != nil {
		return c.answer(err)
	}
	defer sub.Close()
	size := uint64(req.Size)
	var priv cuda.DevicePtr
	if req.Path == PathIceoryx {
		if priv, err = c.dev.Alloc(size); err != nil {
			return c.answer(err)
		}
		defer func() {
			if priv != 0 {
				c.dev.Free(priv)
			}
		}()
	}
	if err := benchutil.WriteFrame(c.ctl, reply{}); err != nil { // ready
		return err
	}
	for i := range req.Count {
		smp, wake, err := c.waitSample(sub)
		if err != nil {
			return c.failCell(i, err)
		}
		a := ack{Wake: wake, Taken: time.Now().UnixNano()}
		if smp.Size() != req.Size {
			smp.Return()
			return c.failCell(i, fmt.Errorf("%d bytes, want %d", smp.Size(), req.Size))
		}
		var p cuda.DevicePtr
		if req.Path == PathShared {
			var zp zerocopy.DevicePtr
			zp, err = smp.DevicePtr()
			p = cuda.DevicePtr(zp)
		} else {
			b := smp.Bytes()
			if len(b) != req.Size {
				smp.Return()
				return c.failCell(i, fmt.Errorf("host sample of %d bytes, want %d", len(b), req.Size))
			}
			a.CopyStart = time.Now().UnixNano()
			p = priv
			if err = c.dev.MemcpyHtoD(priv, b); err == nil {
				// A pageable H2D copy may return before the DMA ends.
				err = c.dev.CtxSynchronize()
			}
		}
		a.Ptr = time.Now().UnixNano()
		if err != nil {
			smp.Return()
			return c.failCell(i, err)
		}
		if err := benchutil.WriteFrame(c.ctl, a); err != nil {
			return err
		}
		sum, at, took, err := c.checkWhenAsked(p, size)
		if err != nil {
			smp.Return()
			return c.failCell(i, err)
		}
		if err := smp.Return(); err != nil {
			return c.failCell(i, err)
		}
		if err := benchutil.WriteFrame(c.ctl, ack{Sum: sum, CheckAt: at, Check: took}); err != nil {
			return err
		}
	}
	if err := sub.Close(); err != nil {
		return c.answer(err)
	}
	if priv != 0 {
		err := c.dev.Free(priv)
		priv = 0
		if err != nil {
			return c.answer(fmt.Errorf("freeing the private buffer: %w", err))
		}
	}
	return benchutil.WriteFrame(c.ctl, reply{})
}

// checkWhenAsked waits for the parent's "check" and runs the checksum
// kernel on p; it returns the sum, when it began (UnixNano) and how long
// the kernel took.
func (c *child) checkWhenAsked(p cuda.DevicePtr, size uint64) (sum uint64, at, took int64, err error) {
	var q request
	if err := benchutil.ReadFrame(c.ctl, &q, maxFrame); err != nil {
		return 0, 0, 0, fmt.Errorf("waiting for the check: %w", err)
	}
	if q.Op != "check" {
		return 0, 0, 0, fmt.Errorf("got %q while waiting for the check", q.Op)
	}
	t := time.Now()
	sum, err = c.dev.Checksum(p, size)
	return sum, t.UnixNano(), int64(time.Since(t)), err
}
