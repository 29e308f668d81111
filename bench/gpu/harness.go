package benchgpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// harness is the publisher side of a run.
type harness struct {
	o       Options
	ctx     context.Context
	res     *Result
	private bool // o.Prefix was made up for this run: remove all of it
	procs   *benchutil.Procs

	rc   *rgaps.Context
	node *rgaps.Node
	dev  device
	cdev *cuda.Device // nil with the fake device

	pub1      *zerocopy.Publisher // data path 1: host topic, pool registered
	pubShared *zerocopy.Publisher // data path 3, Pinned-Shared: GPU topic
	pubIce    *zerocopy.Publisher // data path 3, Pageable-Iceoryx: host topic, never registered
	topics    []string
	topic1    string
	topicSh   string
	topicIce  string

	floor *benchutil.Floor // data path 3's futex floor (FloorCell)
}

func (h *harness) progress(format string, args ...any) {
	if h.o.Progress != nil {
		fmt.Fprintf(h.o.Progress, format+"\n", args...)
	}
}

func engineConfig(prefix string, pool uint64, device int) zerocopy.Config {
	return zerocopy.Config{Prefix: prefix, PoolSize: pool, StagingSize: pool, Device: device, BusyPoll: -1}
}

// open joins the domain, opens the device, creates the publishers and pays
// the one-time costs (pool registration, GPU pool mapping) outside every
// timed interval.
func (h *harness) open() error {
	dom := h.o.Domain
	rc, err := rgaps.NewContext(rgaps.Options{Domain: &dom, Engine: engineConfig(h.o.Prefix, h.o.PoolSize, h.o.Device)})
	if err != nil {
		return err
	}
	h.rc = rc
	if h.node, err = rc.NewNode("bench_gpu_pub", "/rgaps_bench_gpu"); err != nil {
		return err
	}
	if h.o.fake {
		h.dev = testDevice()
	} else {
		cdev, err := cuda.Open(rc.Engine().Config().Device) // the engine's primary context
		if err != nil {
			if errors.Is(err, cuda.ErrNotSupported) {
				return needsGPU(err)
			}
			return err
		}
		h.cdev, h.dev = cdev, cdev
	}
	h.procs.Watch()
	base := fmt.Sprintf("/rgaps_bench_gpu/p%d", os.Getpid())
	q := qos.Default()
	if h.o.runs(1) {
		h.topic1 = base + "/dp1_pinned_shm"
		if h.pub1, err = h.node.NewPublisher(h.topic1, msgType, q); err != nil {
			return err
		}
		h.topics = append(h.topics, h.topic1)
		if !h.o.fake {
			// The engine registers the whole pool with CUDA on the first
			// DevicePtr of a host loan, once per process.
			t := time.Now()
			l, err := h.pub1.Loan(MinSize)
			if err != nil {
				return err
			}
			if _, err := l.DevicePtr(); err != nil {
				l.Discard()
				return fmt.Errorf("registering the data-path-1 pool: %w", err)
			}
			h.res.Setup.RegisterPool = int64(time.Since(t))
			if err := l.Discard(); err != nil {
				return err
			}
		}
	}
	if h.o.runs(3) {
		if !h.o.fake {
			h.topicSh = base + "/dp3_pinned_shared"
			// A GPU endpoint maps the topic's pools when it is created: the
			// GPU pool (from the daemon, which the engine starts) and the
			// registration of the host staging pool. The loans below make
			// sure of both, whatever the engine does at creation.
			t := time.Now()
			if h.pubShared, err = h.node.NewPublisher(h.topicSh, msgType, q, rgaps.OnGPU()); err != nil {
				return fmt.Errorf("creating the GPU topic: %w", err)
			}
			h.topics = append(h.topics, h.topicSh)
			l, err := h.pubShared.LoanDevice(MinSize)
			if err != nil {
				return fmt.Errorf("mapping the GPU pool: %w", err)
			}
			if err := l.Discard(); err != nil {
				return err
			}
			if l, err = h.pubShared.Loan(MinSize); err != nil {
				return err
			}
			if _, err := l.DevicePtr(); err != nil {
				l.Discard()
				return fmt.Errorf("registering the GPU topic's host pool: %w", err)
			}
			if err := l.Discard(); err != nil {
				return err
			}
			h.res.Setup.GPUTopic = int64(time.Since(t))
		}
		h.topicIce = base + "/dp3_pageable_iceoryx"
		if h.pubIce, err = h.node.NewPublisher(h.topicIce, msgType, q); err != nil {
			return err
		}
		h.topics = append(h.topics, h.topicIce)
	}
	return nil
}

// spawnAll starts the subscriber processes (one for data path 1 alone, the
// largest N otherwise); they open their CUDA context and load the kernels
// now, concurrently, before any message.
func (h *harness) spawnAll() error {
	n := 1
	if h.o.runs(3) {
		n = max(n, slices.Max(h.o.Subs))
	}
	floorName := ""
	if h.o.runs(3) {
		floorName = benchutil.FloorName(h.o.Prefix)
		f, err := benchutil.CreateFloor(floorName)
		if err != nil {
			return fmt.Errorf("the futex floor's segment: %w", err)
		}
		h.floor = f
	}
	h.progress("starting %d subscriber processes (CUDA start-up in each)", n)
	if err := h.procs.SpawnN(n); err != nil {
		return err
	}
	kids := h.procs.Kids()
	for _, k := range kids {
		req := request{Op: "init", Prefix: h.o.Prefix, Domain: h.o.Domain, PoolSize: h.o.PoolSize,
			StagingSize: h.o.PoolSize, Device: h.o.Device, Index: k.I, Fake: h.o.fake, Schedule: h.o.SubSchedule, Floor: floorName, BusyPoll: h.o.BusyPoll}
		if err := h.procs.Send(k, req); err != nil {
			return err
		}
	}
	err := benchutil.Collect(h.procs, kids, func(_ int, _ *benchutil.Kid, rep *reply) error {
		h.res.Setup.ChildInitMax = max(h.res.Setup.ChildInitMax, rep.InitNs)
		h.res.Settings.BusyPoll = max(h.res.Settings.BusyPoll, rep.BusyPoll)
		return nil
	})
	if err != nil {
		return err
	}
	h.res.Setup.Children = n
	return nil
}

// close ends the children (politely after a success, killed after a
// failure), closes the domain, removes every segment of a private prefix
// and stops the private prefix's GPU daemon.
func (h *harness) close(failed bool) error {
	err := h.procs.Teardown(failed, 15*time.Second, h.rc, h.o.Prefix, h.private)
	h.floor.Close(true)
	if h.cdev != nil {
		err = errors.Join(err, h.cdev.Close())
	}
	if h.private && h.o.runs(3) && !h.o.fake {
		stopDaemon(h.o.Prefix, h.o.Domain)
	}
	return err
}

// stopDaemon stops the GPU daemon of this run's private prefix (the engine
// started it; nothing else can use its socket). It would exit by itself
// RGAPS_DAEMON_IDLE after the run; this makes the end deterministic.
func stopDaemon(prefix string, domain uint32) {
	c, err := gpupool.Dial(prefix, domain, false)
	if err != nil {
		return
	}
	pid, err := c.Ping()
	c.Close()
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return
	}
	if syscall.Kill(pid, syscall.SIGTERM) != nil {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := gpupool.Dial(prefix, domain, false); err != nil {
			return // its socket is gone: it stopped
		} else {
			c.Close()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitMatched waits until pub has n matched subscriptions.
func (h *harness) waitMatched(pub *zerocopy.Publisher, n int) error {
	return benchutil.WaitMatched(h.ctx, pub, n, 30*time.Second)
}

// checkPaths verifies that the n subscriptions of topic use the data path
// the cell is about (as the engine reports it in the graph), and returns it.
func (h *harness) checkPaths(topic string, n int, want string) (string, error) {
	eps, err := h.rc.Endpoints(topic)
	if err != nil {
		return "", err
	}
	subs := 0
	for _, e := range eps {
		if e.Kind != zerocopy.KindSubscription {
			continue
		}
		subs++
		if e.Path != want {
			return e.Path, fmt.Errorf("subscription of %s (pid %d) uses data path %q, the cell measures %q", topic, e.Pid, e.Path, want)
		}
	}
	if subs != n {
		return "", fmt.Errorf("%s has %d subscriptions, want %d", topic, subs, n)
	}
	return want, nil
}

// startCell sends req to kids and waits for each to be ready.
func (h *harness) startCell(kids []*benchutil.Kid, req request) error {
	if err := h.procs.SendAll(kids, req); err != nil {
		return err
	}
	return h.replies(kids)
}

// replies reads one reply from each kid.
func (h *harness) replies(kids []*benchutil.Kid) error {
	return benchutil.Collect[reply](h.procs, kids, nil)
}

// readAck reads a kid's acknowledgement of message i.
func (h *harness) readAck(k *benchutil.Kid, i int) (ack, error) {
	var a ack
	if err := benchutil.ReadFrame(k.Ctl, &a, maxFrame); err != nil {
		return a, h.procs.KidErr(k, err)
	}
	if a.Err != "" {
		return a, fmt.Errorf("subscriber %d, message %d: %s", k.I, i, a.Err)
	}
	return a, nil
}

// size runs every cell of one message size.
func (h *harness) size(size int) (err error) {
	iters, warmup := ItersFor(size, h.o.Iters, h.o.Warmup)
	src, err := h.dev.Alloc(uint64(size))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, h.dev.Free(src)) }()
	if h.o.runs(1) {
		h.progress("data path 1, %s: %d timed + %d warm-up messages (Pinned-SHM, bare pinned copy, Pageable-UDS)", benchutil.FormatSize(size), iters, warmup)
		row, err := h.dp1(size, src, iters, warmup)
		if err != nil {
			return fmt.Errorf("data path 1: %w", err)
		}
		h.res.DP1 = append(h.res.DP1, row)
	}
	if !h.o.runs(3) {
		return nil
	}
	// The two host patterns of data path 3 and their checksums, each
	// cross-checked against the device kernel on the whole pattern.
	var pats [2][]byte
	var sums [2]uint64
	for k, seed := range dp3Seeds {
		if err := h.dev.FillPattern(src, uint64(size), seed, nil); err != nil {
			return err
		}
		pats[k] = make([]byte, size)
		if err := h.dev.MemcpyDtoH(pats[k], src); err != nil {
			return err
		}
		sums[k] = parallelChecksum(pats[k])
		dsum, err := h.dev.Checksum(src, uint64(size))
		if err != nil {
			return err
		}
		if dsum != sums[k] {
			return fmt.Errorf("checksum kernel %#x ≠ cuda.ChecksumHost %#x on the pattern of seed %d", dsum, sums[k], seed)
		}
		if s := checkPattern(pats[k], seed); s != "" {
			return fmt.Errorf("fill kernel: %s", s)
		}
		h.res.Checks.Patterns++
	}
	for _, n := range h.o.Subs {
		var pause time.Duration
		for _, path := range []string{PathShared, PathIceoryx} {
			if path == PathShared && h.o.fake {
				continue
			}
			h.progress("data path 3, %s N=%d %s: %d timed + %d warm-up messages", benchutil.FormatSize(size), n, path, iters, warmup)
			c, err := h.dp3(path, size, n, iters, warmup, pats, sums)
			if err != nil {
				return fmt.Errorf("data path 3 %s N=%d: %w", path, n, err)
			}
			h.res.DP3 = append(h.res.DP3, c)
			if pause == 0 { // Pinned-Shared's, where it runs
				pause = time.Duration(c.Stats.Idle.P50)
			}
		}
		if h.o.BusyPoll > 0 {
			continue // the floor is of sleeping processes (Options.BusyPoll)
		}
		h.progress("data path 3, %s N=%d: the futex floor after a pause of %v", benchutil.FormatSize(size), n, pause.Round(time.Microsecond))
		f, err := h.floorCell(size, n, iters, warmup, pause)
		if err != nil {
			return fmt.Errorf("data path 3 %s N=%d, the futex floor: %w", benchutil.FormatSize(size), n, err)
		}
		h.res.Floors = append(h.res.Floors, f)
	}
	return nil
}

// dp1 measures data path 1 for one size: per message, the bare pinned copy
// and Pinned-SHM (alternating which goes first), then Pageable-UDS.
func (h *harness) dp1(size int, src cuda.DevicePtr, iters, warmup int) (row DP1Row, err error) {
	row = DP1Row{Size: size, Iters: iters, Warmup: warmup}
	count := iters + warmup
	k := h.procs.Kids()[0]
	dev := h.dev

	bare, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return row, fmt.Errorf("mapping %d bytes: %w", size, err)
	}
	defer func() { err = errors.Join(err, unix.Munmap(bare)) }()
	touch(bare)
	// The engine registers pools with these flags (zerocopy/gpu.go).
	if err := dev.HostRegister(bare, cuda.HostRegisterPortable|cuda.HostRegisterDeviceMap); err != nil {
		return row, err
	}
	defer func() { err = errors.Join(err, dev.HostUnregister(bare)) }()
	page := make([]byte, size)
	touch(page)

	seed0 := uint32(size>>12)*7919 + 17
	if err := h.startCell([]*benchutil.Kid{k}, request{Op: "dp1", Topic: h.topic1, Size: size, Count: count, Seed: seed0}); err != nil {
		return row, err
	}
	if err := h.waitMatched(h.pub1, 1); err != nil {
		return row, err
	}
	if row.SubPath, err = h.checkPaths(h.topic1, 1, "host-shm"); err != nil {
		return row, err
	}
	row.Loan, row.Copy, row.Publish, row.Bare = make([]int64, iters), make([]int64, iters), make([]int64, iters), make([]int64, iters)
	row.PageCopy, row.PageUDS = make([]int64, iters), make([]int64, iters)
	var one [1]byte
	for i := range count {
		if err := h.ctx.Err(); err != nil {
			return row, err
		}
		j := i - warmup // timed index when >= 0
		if err := dev.FillPattern(src, uint64(size), seed0+uint32(i), nil); err != nil {
			return row, err
		}
		if err := dev.CtxSynchronize(); err != nil {
			return row, err
		}
		bareCopy := func() error {
			t := time.Now()
			if err := dev.MemcpyDtoH(bare, src); err != nil {
				return err
			}
			if d := int64(time.Since(t)); j >= 0 {
				row.Bare[j] = d
			}
			return nil
		}
		ours := func() error {
			t1 := time.Now()
			loan, err := h.pub1.Loan(size)
			t2 := time.Now()
			if err != nil {
				return err
			}
			if err := dev.MemcpyDtoH(loan.Bytes(), src); err != nil {
				loan.Discard()
				return err
			}
			t3 := time.Now()
			if err := loan.Publish(); err != nil {
				return err
			}
			t4 := time.Now()
			if j >= 0 {
				row.Loan[j], row.Copy[j], row.Publish[j] = int64(t2.Sub(t1)), int64(t3.Sub(t2)), int64(t4.Sub(t3))
			}
			a, err := h.readAck(k, i)
			if err != nil {
				return err
			}
			if a.Bad != "" {
				return fmt.Errorf("Pinned-SHM message %d: the subscriber read wrong bytes: %s", i, a.Bad)
			}
			return nil
		}
		first, second := bareCopy, ours
		if i%2 == 1 {
			first, second = ours, bareCopy
		}
		if err := first(); err != nil {
			return row, err
		}
		if err := second(); err != nil {
			return row, err
		}

		// Pageable-UDS.
		t1 := time.Now()
		if err := dev.MemcpyDtoH(page, src); err != nil {
			return row, err
		}
		t2 := time.Now()
		if _, err := k.Data.Write(page); err != nil {
			return row, h.procs.KidErr(k, fmt.Errorf("UDS message %d: %w", i, err))
		}
		if _, err := k.Data.Read(one[:]); err != nil {
			return row, h.procs.KidErr(k, fmt.Errorf("UDS message %d, acknowledgement: %w", i, err))
		}
		t3 := time.Now()
		if j >= 0 {
			row.PageCopy[j], row.PageUDS[j] = int64(t2.Sub(t1)), int64(t3.Sub(t2))
		}
		a, err := h.readAck(k, i)
		if err != nil {
			return row, err
		}
		if a.Bad != "" {
			return row, fmt.Errorf("Pageable-UDS message %d: the receiver read wrong bytes: %s", i, a.Bad)
		}
	}
	if err := h.replies([]*benchutil.Kid{k}); err != nil {
		return row, err
	}
	h.res.Checks.DP1Messages += count
	row.summarize()
	return row, nil
}

// dp3 measures one cell of data path 3.
func (h *harness) dp3(path string, size, n, iters, warmup int, pats [2][]byte, sums [2]uint64) (c DP3Cell, err error) {
	c = DP3Cell{Path: path, Size: size, Subs: n, Iters: iters, Warmup: warmup}
	pub, topic := h.pubIce, h.topicIce
	if path == PathShared {
		pub, topic = h.pubShared, h.topicSh
	}
	kids := h.procs.Kids()[:n]
	count := iters + warmup
	if err := h.startCell(kids, request{Op: "dp3", Path: path, Topic: topic, Size: size, Count: count}); err != nil {
		return c, err
	}
	if err := h.waitMatched(pub, n); err != nil {
		return c, err
	}
	want := "host-shm" // never registered with CUDA: pageable for the copies
	if path == PathShared {
		want = "gpu-pool"
	}
	if c.SubPath, err = h.checkPaths(topic, n, want); err != nil {
		return c, err
	}
	c.Loan, c.Publish = make([]int64, iters), make([]int64, iters)
	c.Forms, c.Queued, c.Woken = make([]int64, iters), make([]int64, iters), make([]int64, iters)
	rows := func() [][]int64 {
		r := make([][]int64, n)
		for s := range r {
			r[s] = make([]int64, iters)
		}
		return r
	}
	c.Wake, c.Taken, c.Ptr, c.CheckAt, c.Check = rows(), rows(), rows(), rows(), rows()
	c.Idle = make([]int64, iters)
	acked := time.Now()
	ptopic := pub.Topic()
	var tr zerocopy.PublishTrace
	if path == PathIceoryx {
		c.CopyStart = rows()
	}
	for i := range count {
		if err := h.ctx.Err(); err != nil {
			return c, err
		}
		j := i - warmup
		p := i % 2
		t1 := time.Now()
		loan, err := pub.Loan(size)
		loanNs := int64(time.Since(t1))
		if err != nil {
			return c, err
		}
		b := loan.Bytes()
		parallelCopy(b, pats[p])
		if h.o.BusyPoll == 0 && !settle(h.ctx, n, ptopic.Waiting) {
			c.Unsettled++ // counted in the report
		}
		t0 := time.Now().UnixNano()
		words := stampWords(t0, i)
		stamp(b, words)
		if err := loan.PublishTraced(&tr); err != nil {
			return c, err
		}
		pubNs := time.Now().UnixNano() - t0
		want := stampedChecksum(sums[p], pats[p], words)
		// Every subscriber's times first, then their checks (dp3 in
		// child.go says why).
		for s, k := range kids {
			a, err := h.readAck(k, i)
			if err != nil {
				return c, err
			}
			if j >= 0 {
				c.Wake[s][j], c.Taken[s][j], c.Ptr[s][j] = a.Wake-t0, a.Taken-t0, a.Ptr-t0
				if c.CopyStart != nil {
					c.CopyStart[s][j] = a.CopyStart - t0
				}
			}
		}
		if err := h.procs.SendAll(kids, request{Op: "check"}); err != nil {
			return c, err
		}
		for s, k := range kids {
			a, err := h.readAck(k, i)
			if err != nil {
				return c, err
			}
			if a.Sum != want {
				return c, fmt.Errorf("subscriber %d, message %d: checksum kernel on its device pointer gave %#x, cuda.ChecksumHost of the published bytes is %#x", k.I, i, a.Sum, want)
			}
			if j >= 0 {
				c.CheckAt[s][j], c.Check[s][j] = a.CheckAt-t0, a.Check
			}
		}
		if j >= 0 {
			c.Loan[j], c.Publish[j], c.Idle[j] = loanNs, pubNs, t0-acked.UnixNano()
			c.Forms[j], c.Queued[j], c.Woken[j] = int64(tr.Forms), int64(tr.Queued), int64(tr.Woken)
		}
		acked = time.Now()
		h.res.Checks.DP3Kernels += n
	}
	if err := h.replies(kids); err != nil {
		return c, err
	}
	c.summarize()
	return c, nil
}

// settle waits until n subscribers sleep in Wait (count: the topic's
// Waiting), so that a message is timed from sleep to wake-up, as the
// thesis' subscribers sleep; it gives up after a second and reports
// false.
func settle(ctx context.Context, n int, count func() int) bool {
	deadline := time.Now().Add(time.Second)
	for count() < n {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Microsecond)
	}
	return true
}
