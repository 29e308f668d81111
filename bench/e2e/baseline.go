package benche2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bench/iceoryx"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// The baseline pipeline, as the thesis built it (§3.3 Pageable-UDS, §3.5
// TCP/IP, §3.6 Pageable-Iceoryx), as real processes:
//
//	host A: publisher ── cuMemcpyDtoH into pageable Go memory, then the
//	        header and payload over a Unix domain socket ──► manager A
//	        manager A ── reads it whole into pageable memory, then TCP ──►
//	host B: manager B ── loans an iceoryx chunk, reads the payload from
//	        TCP straight into it, publishes it through RouDi ──► N
//	        subscriber processes, each of which takes the chunk (zero-copy,
//	        host shared memory that CUDA sees as pageable), copies it with
//	        cuMemcpyHtoD into its own cuMemAlloc buffer, synchronises and
//	        reports.
//
// Reading the TCP payload straight into the loaned chunk is the kindest
// use of iceoryx for the baseline: no copy between the socket buffer and
// the chunk (the thesis' Table 4.5 publish times of 6–12 µs imply the
// same).
//
// Every process stamps wall-clock times (UnixNano; the hosts are one
// machine, so one clock) into a 64-byte header that travels in front of
// the payload:
//
//	0 magic u32 "RGE2"   4 seed u32   8 seq u64   16 size u64
//	24 t0 publish call   32 t1 D2H done   40 t2 manager A has it all
//	48 t3 manager B has it all (in the chunk)   56 reserved
//
// Manager B reports t3 and t4 (its publish call returned) to the harness;
// subscribers report t5 (took the chunk) and t6 (their device copy
// complete).
const (
	hdrSize  = 64
	hdrMagic = 0x32454752 // "RGE2"
)

type header struct {
	Seed           uint32
	Seq, Size      uint64
	T0, T1, T2, T3 int64
}

func (h *header) put(b []byte) {
	binary.LittleEndian.PutUint32(b[0:], hdrMagic)
	binary.LittleEndian.PutUint32(b[4:], h.Seed)
	binary.LittleEndian.PutUint64(b[8:], h.Seq)
	binary.LittleEndian.PutUint64(b[16:], h.Size)
	for i, t := range []int64{h.T0, h.T1, h.T2, h.T3} {
		binary.LittleEndian.PutUint64(b[24+8*i:], uint64(t))
	}
	binary.LittleEndian.PutUint64(b[56:], 0)
}

func (h *header) get(b []byte) error {
	if len(b) < hdrSize {
		return fmt.Errorf("header of %d bytes", len(b))
	}
	if m := binary.LittleEndian.Uint32(b[0:]); m != hdrMagic {
		return fmt.Errorf("bad header magic %#x", m)
	}
	h.Seed = binary.LittleEndian.Uint32(b[4:])
	h.Seq = binary.LittleEndian.Uint64(b[8:])
	h.Size = binary.LittleEndian.Uint64(b[16:])
	for i, t := range []*int64{&h.T0, &h.T1, &h.T2, &h.T3} {
		*t = int64(binary.LittleEndian.Uint64(b[24+8*i:]))
	}
	return nil
}

// Stages of the baseline, in the report's order.
const (
	StageD2HPageable = "D2H pageable"
	StageUDS         = "UDS to manager"
	StageTCP         = "TCP A→B"
	// StageIceoryx runs from manager B having the whole message in its
	// chunk to a subscriber having taken it: publish and notification
	// together (the thesis' Table 4.5 T1). Apart, they are not
	// measurable on a machine with fewer cores than processes: a woken
	// subscriber may run before the publish call returns.
	StageIceoryx     = "iceoryx publish → take (avg)"
	StageH2DPageable = "H2D pageable (avg)"
)

var iceoryxService = iceoryx.ServiceName{Service: "rgaps_e2e", Instance: "baseline", Event: "payload"}

// Requests and replies of the baseline's processes. A request is blReq:
// Op "init" with blInit's fields, "round" with blRound's, or (a
// subscriber, once every subscriber answered the round) "check".
type (
	blReq struct {
		Op string `json:"op"`
		blInit
		blRound
	}
	blInit struct {
		GPU    bool   `json:"gpu"`
		Device int    `json:"device"`
		Sock   string `json:"sock,omitempty"`   // publisher, manager A: the UDS path
		Listen string `json:"listen,omitempty"` // manager B: host:0
		Peer   string `json:"peer,omitempty"`   // manager A: manager B's host:port
		Index  int    `json:"index,omitempty"`  // subscriber
	}
	blInitReply struct {
		Status
		Addr string `json:"addr,omitempty"` // manager B's listening address
	}
	blRound struct {
		Size int64  `json:"size"`
		Seq  uint64 `json:"seq"`
	}
	blPubReply struct {
		Status
		T0, T1 int64
	}
	blMgrFrame struct {
		Status
		Seq    uint64
		T3, T4 int64
	}
	blSubReply struct {
		Status
		Hdr    header
		T5, T6 int64
		Sum    uint64
	}
)

func init() {
	RegisterChild("e2e-bl-pub", blPublisherMain)
	RegisterChild("e2e-bl-mgr-a", blManagerAMain)
	RegisterChild("e2e-bl-mgr-b", blManagerBMain)
	RegisterChild("e2e-bl-sub", blSubscriberMain)
}

// Baseline is the thesis' baseline pipeline as a System.
type Baseline struct {
	env       *Env
	roudi     *iceoryx.RouDi
	pub, a, b *Child
	subs      []*Child
	seq       uint64
	failed    bool // a round failed: Close kills instead of stopping
}

// NewBaseline returns the baseline System.
func NewBaseline() System { return &Baseline{} }

func (s *Baseline) Name() string { return "baseline" }

func (s *Baseline) StageOrder() []string {
	return []string{StageD2HPageable, StageUDS, StageTCP, StageIceoryx, StageH2DPageable}
}

func (s *Baseline) Start(env *Env) (err error) {
	defer func() {
		if err != nil {
			s.failed = true // Close kills what started
		}
	}()
	s.env = env
	roudiExe := env.IoxRouDi
	if roudiExe == "" {
		var err error
		if roudiExe, err = iceoryx.FindRouDi(); err != nil {
			return err
		}
	}
	if err := iceoryx.Load(); err != nil {
		return err
	}
	maxN := env.Ns[len(env.Ns)-1]
	var pools []iceoryx.Mempool
	for _, sz := range env.Sizes {
		pools = append(pools, iceoryx.Mempool{Size: int(sz) + hdrSize, Count: maxN + 2})
	}
	r, err := iceoryx.StartRouDi(env.Ctx, iceoryx.RouDiOptions{
		Exe: roudiExe, LibDir: env.IoxLibDir, Dir: env.WorkDir, Mempools: pools, Wrap: env.Wrap(env.B),
	})
	if err != nil {
		return err
	}
	s.roudi = r
	var rep blInitReply
	if s.b, err = StartChild(env, env.B, "manager B", "e2e-bl-mgr-b"); err != nil {
		return err
	}
	if err := s.b.Call(blReq{Op: "init", blInit: blInit{Listen: net.JoinHostPort(env.B.Addr, "0")}}, &rep); err != nil {
		return err
	}
	sock := filepath.Join(env.WorkDir, "manager-a.sock")
	if s.a, err = StartChild(env, env.A, "manager A", "e2e-bl-mgr-a"); err != nil {
		return err
	}
	if err := s.a.Call(blReq{Op: "init", blInit: blInit{Sock: sock, Peer: rep.Addr}}, &blInitReply{}); err != nil {
		return err
	}
	if s.pub, err = StartChild(env, env.A, "publisher", "e2e-bl-pub"); err != nil {
		return err
	}
	return s.pub.Call(blReq{Op: "init", blInit: blInit{GPU: env.GPU, Device: env.DeviceA, Sock: sock}}, &blInitReply{})
}

// setSubs makes the subscriber processes exactly n, each subscribed.
func (s *Baseline) setSubs(n int) error {
	if len(s.subs) == n {
		return nil
	}
	err := StopAll(s.subs, 30*time.Second, false)
	s.subs = nil
	if err != nil {
		return err
	}
	for i := range n {
		p, err := StartChild(s.env, s.env.B, fmt.Sprintf("subscriber %d", i), "e2e-bl-sub")
		if err != nil {
			return err
		}
		s.subs = append(s.subs, p)
		if err := p.Send(blReq{Op: "init", blInit: blInit{GPU: s.env.GPU, Device: s.env.DeviceB, Index: i}}); err != nil {
			return err
		}
	}
	for _, p := range s.subs { // they start up concurrently
		if err := p.Recv(&blInitReply{}); err != nil {
			return err
		}
	}
	return nil
}

func (s *Baseline) Round(size int64, n int) (r Round, err error) {
	defer func() {
		if err != nil {
			s.failed = true
		}
	}()
	if err := s.setSubs(n); err != nil {
		return Round{}, err
	}
	s.seq++
	// Before anything is timed: the first call per (size, seed) fills
	// and checksums a host buffer of size bytes.
	want := ExpectedChecksum(size, seedOf(s.seq))
	req := blReq{Op: "round", blRound: blRound{Size: size, Seq: s.seq}}
	for _, p := range s.subs {
		if err := p.Send(req); err != nil {
			return Round{}, err
		}
	}
	var pr blPubReply
	if err := s.pub.Call(req, &pr); err != nil {
		return Round{}, s.withOthers(err)
	}
	var mf blMgrFrame
	if err := s.b.Recv(&mf); err != nil {
		return Round{}, s.withOthers(err)
	}
	if mf.Seq != s.seq {
		return Round{}, fmt.Errorf("manager B published message %d, want %d", mf.Seq, s.seq)
	}
	r = Round{PerSub: make([]time.Duration, n), Stages: map[string]time.Duration{
		StageD2HPageable: time.Duration(pr.T1 - pr.T0),
	}}
	var notify, h2d time.Duration
	var bad []error // every subscriber answers before the round fails
	for i, p := range s.subs {
		var sr blSubReply
		if err := p.Recv(&sr); err != nil {
			return Round{}, s.withOthers(err)
		}
		if sr.Hdr.Seq != s.seq || sr.Hdr.Size != uint64(size) {
			bad = append(bad, fmt.Errorf("subscriber %d got message %d of %d bytes, want %d of %d", i, sr.Hdr.Seq, sr.Hdr.Size, s.seq, size))
			continue
		}
		if i == 0 {
			r.Stages[StageUDS] = time.Duration(sr.Hdr.T2 - sr.Hdr.T1)
			r.Stages[StageTCP] = time.Duration(sr.Hdr.T3 - sr.Hdr.T2)
		}
		r.PerSub[i] = time.Duration(sr.T6 - pr.T0)
		notify += time.Duration(sr.T5 - mf.T3)
		h2d += time.Duration(sr.T6 - sr.T5)
	}
	if len(bad) > 0 {
		return Round{}, errors.Join(bad...)
	}
	// Every subscriber holds its device copy: now each checks it.
	for _, p := range s.subs {
		if err := p.Send(blReq{Op: "check"}); err != nil {
			return Round{}, err
		}
	}
	for i, p := range s.subs {
		var sr blSubReply
		if err := p.Recv(&sr); err != nil {
			return Round{}, s.withOthers(err)
		}
		if sr.Sum != want {
			bad = append(bad, fmt.Errorf("subscriber %d: checksum of its device copy of message %d is %#x, want %#x (wrong bytes delivered)", i, s.seq, sr.Sum, want))
		}
	}
	if len(bad) > 0 {
		return Round{}, errors.Join(bad...)
	}
	r.Stages[StageIceoryx] = notify / time.Duration(n)
	r.Stages[StageH2DPageable] = h2d / time.Duration(n)
	return r, nil
}

// withOthers adds what the pipeline's other processes printed: the one
// that failed first is often not the one a read failed on.
func (s *Baseline) withOthers(err error) error {
	for _, p := range append([]*Child{s.pub, s.a, s.b}, s.subs...) {
		if p == nil {
			continue
		}
		if out := p.Output(); out != "" {
			err = fmt.Errorf("%w; %s said: %s", err, p.Name(), out)
		}
	}
	if s.roudi != nil {
		err = fmt.Errorf("%w; RouDi: %s", err, s.roudi.Output())
	}
	return err
}

func (s *Baseline) Close() error {
	// Subscribers first (they leave RouDi), then the publisher, whose
	// socket closing ends manager A, whose TCP connection closing ends
	// manager B; RouDi last.
	errs := []error{StopAll(s.subs, 30*time.Second, s.failed)}
	errs = append(errs, StopAll([]*Child{s.pub}, 30*time.Second, s.failed))
	errs = append(errs, StopAll([]*Child{s.a, s.b}, 30*time.Second, s.failed))
	// What killed processes left of their iceoryx runtimes.
	for i, p := range s.subs {
		iceoryx.RemoveRuntimeFiles(subRuntimeName(i, p.Pid()))
	}
	if s.b != nil {
		iceoryx.RemoveRuntimeFiles(mgrRuntimeName(s.b.Pid()))
	}
	if s.roudi != nil {
		errs = append(errs, s.roudi.Stop())
	}
	s.subs, s.pub, s.a, s.b, s.roudi = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// ---- child processes ----

// The iceoryx runtime names of manager B and of subscriber i.
func mgrRuntimeName(pid int) string    { return fmt.Sprintf("rgaps_e2e_mgr_%d", pid) }
func subRuntimeName(i, pid int) string { return fmt.Sprintf("rgaps_e2e_sub%d_%d", i, pid) }

// blPublisher is the publisher process on host A.
type blPublisher struct {
	dev  device
	conn net.Conn
	size int64
	bufs [2]cuda.DevicePtr // the message in device memory, one per seed
	host []byte            // the pageable host buffer
	hdr  [hdrSize]byte
}

func blPublisherMain(args []string) error {
	ctl, err := ChildControl()
	if err != nil {
		return err
	}
	p := &blPublisher{}
	defer p.close()
	return Serve(ctl, func(req blReq) any {
		switch req.Op {
		case "init":
			return Fail(p.init(req.blInit))
		case "round":
			return p.round(req.blRound)
		}
		return Fail(fmt.Errorf("unknown request %q", req.Op))
	})
}

func (p *blPublisher) init(in blInit) error {
	dev, err := openDevice(in.GPU, in.Device)
	if err != nil {
		return err
	}
	p.dev = dev
	conn, err := net.DialTimeout("unix", in.Sock, 30*time.Second)
	if err != nil {
		return fmt.Errorf("connecting to manager A: %w", err)
	}
	p.conn = conn
	return nil
}

// prepare makes the device buffers and the host buffer of size (untimed).
func (p *blPublisher) prepare(size int64) error {
	if p.size == size {
		return nil
	}
	p.free()
	for i := range p.bufs {
		d, err := p.dev.Alloc(size)
		if err != nil {
			return err
		}
		p.bufs[i] = d
		if err := p.dev.Fill(d, size, seedOf(uint64(i))); err != nil {
			return err
		}
	}
	p.host = make([]byte, size)
	touch(p.host)
	p.size = size
	return nil
}

func (p *blPublisher) free() {
	for i, d := range p.bufs {
		if d != 0 {
			p.dev.Free(d)
			p.bufs[i] = 0
		}
	}
	p.host, p.size = nil, 0
}

func (p *blPublisher) close() {
	if p.conn != nil {
		p.conn.Close()
	}
	if p.dev != nil {
		p.free()
		p.dev.Close()
	}
}

// round is the thesis' Pageable-UDS publish: D2H into pageable memory,
// then the whole message over the Unix socket.
func (p *blPublisher) round(r blRound) any {
	if p.dev == nil {
		return Fail(errors.New("not initialised"))
	}
	if err := p.prepare(r.Size); err != nil {
		return Fail(err)
	}
	h := header{Seed: seedOf(r.Seq), Seq: r.Seq, Size: uint64(r.Size)}
	h.T0 = time.Now().UnixNano()
	if err := p.dev.DtoH(p.host, p.bufs[r.Seq%2]); err != nil {
		return Fail(err)
	}
	h.T1 = time.Now().UnixNano()
	h.put(p.hdr[:])
	bufs := net.Buffers{p.hdr[:], p.host}
	if _, err := bufs.WriteTo(p.conn); err != nil {
		return Fail(fmt.Errorf("UDS: %w", err))
	}
	return blPubReply{T0: h.T0, T1: h.T1}
}

// blManagerAMain is the publish-side manager: every message from the
// Unix socket is read whole into pageable memory and sent on over TCP.
func blManagerAMain(args []string) error {
	ctl, err := ChildControl()
	if err != nil {
		return err
	}
	var (
		ln   net.Listener
		tcp  net.Conn
		done = make(chan error, 1)
	)
	defer func() {
		if ln != nil {
			ln.Close()
		}
		if tcp != nil {
			tcp.Close()
		}
	}()
	err = Serve(ctl, func(req blReq) any {
		if req.Op != "init" || ln != nil {
			return Fail(fmt.Errorf("unexpected request %q", req.Op))
		}
		c, err := net.DialTimeout("tcp", req.Peer, 30*time.Second)
		if err != nil {
			return Fail(fmt.Errorf("connecting to manager B: %w", err))
		}
		tcp = c
		os.Remove(req.Sock)
		if ln, err = net.Listen("unix", req.Sock); err != nil {
			return Fail(err)
		}
		go func() { done <- forwardA(ln, tcp) }()
		return Status{}
	})
	if ln != nil {
		ln.Close()
		tcp.Close()
		if ferr := <-done; ferr != nil && err == nil {
			err = ferr
		}
	}
	return err
}

// forwardA accepts the publisher and forwards its messages until it
// closes the socket.
func forwardA(ln net.Listener, tcp net.Conn) error {
	c, err := ln.Accept()
	if err != nil {
		return nil // closed before the publisher came
	}
	defer c.Close()
	var hb [hdrSize]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(c, hb[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("manager A: UDS: %w", err)
		}
		var h header
		if err := h.get(hb[:]); err != nil {
			return fmt.Errorf("manager A: %w", err)
		}
		if uint64(cap(buf)) < h.Size {
			buf = make([]byte, h.Size)
			touch(buf)
		}
		buf = buf[:h.Size]
		if _, err := io.ReadFull(c, buf); err != nil {
			return fmt.Errorf("manager A: UDS payload: %w", err)
		}
		h.T2 = time.Now().UnixNano()
		h.put(hb[:])
		bufs := net.Buffers{hb[:], buf}
		if _, err := bufs.WriteTo(tcp); err != nil {
			return fmt.Errorf("manager A: TCP: %w", err)
		}
	}
}

// testCorrupt, set only by this package's tests (in the child processes
// they start), damages every payload manager B receives: the proof that
// the subscribers' checksums catch wrong bytes.
var testCorrupt func(payload []byte)

// blManagerBMain is the subscribe-side manager: it receives each message
// from TCP into a loaned iceoryx chunk and publishes it; for each it
// sends the harness a blMgrFrame.
func blManagerBMain(args []string) error {
	ctl, err := ChildControl()
	if err != nil {
		return err
	}
	var (
		ln   net.Listener
		pub  *iceoryx.Publisher
		done = make(chan error, 1)
		mu   sync.Mutex // serialises frames on ctl
	)
	err = Serve(ctl, func(req blReq) any {
		if req.Op != "init" || ln != nil {
			return Fail(fmt.Errorf("unexpected request %q", req.Op))
		}
		if err := iceoryx.InitRuntime(mgrRuntimeName(os.Getpid())); err != nil {
			return Fail(err)
		}
		p, err := iceoryx.NewPublisher(iceoryxService, 0)
		if err != nil {
			return Fail(err)
		}
		pub = p
		if ln, err = net.Listen("tcp", req.Listen); err != nil {
			return Fail(err)
		}
		go func() {
			err := forwardB(ln, pub, func(f blMgrFrame) error {
				mu.Lock()
				defer mu.Unlock()
				return benchutil.WriteFrame(ctl, f)
			})
			if err != nil {
				mu.Lock()
				benchutil.WriteFrame(ctl, blMgrFrame{Status: Fail(err)})
				mu.Unlock()
			}
			done <- err
		}()
		mu.Lock()
		defer mu.Unlock()
		benchutil.WriteFrame(ctl, blInitReply{Addr: ln.Addr().String()})
		return nil
	})
	if ln != nil {
		ln.Close()
		if ferr := <-done; ferr != nil && err == nil {
			err = ferr
		}
	}
	if pub != nil {
		pub.Close()
	}
	iceoryx.ShutdownRuntime()
	return err
}

// forwardB accepts manager A and publishes its messages until it closes
// the connection.
func forwardB(ln net.Listener, pub *iceoryx.Publisher, report func(blMgrFrame) error) error {
	c, err := ln.Accept()
	if err != nil {
		return nil
	}
	defer c.Close()
	var hb [hdrSize]byte
	for {
		if _, err := io.ReadFull(c, hb[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("manager B: TCP: %w", err)
		}
		var h header
		if err := h.get(hb[:]); err != nil {
			return fmt.Errorf("manager B: %w", err)
		}
		chunk, err := pub.Loan(hdrSize + int(h.Size))
		if err != nil {
			return fmt.Errorf("manager B: %w", err)
		}
		if _, err := io.ReadFull(c, chunk[hdrSize:]); err != nil {
			pub.Release(chunk)
			return fmt.Errorf("manager B: TCP payload: %w", err)
		}
		h.T3 = time.Now().UnixNano()
		if testCorrupt != nil {
			testCorrupt(chunk[hdrSize:])
		}
		h.put(chunk[:hdrSize])
		if err := pub.Publish(chunk); err != nil {
			return err
		}
		t4 := time.Now().UnixNano()
		if err := report(blMgrFrame{Seq: h.Seq, T3: h.T3, T4: t4}); err != nil {
			return err
		}
	}
}

// blSubscriberMain is one GPU subscriber on host B.
func blSubscriberMain(args []string) error {
	ctl, err := ChildControl()
	if err != nil {
		return err
	}
	var (
		dev     device
		sub     *iceoryx.Subscriber
		buf     cuda.DevicePtr
		size    int64
		toCheck int64 // bytes of the round's copy in buf still to check (0: none; sizes start at 64 B)
	)
	defer func() {
		if sub != nil {
			sub.Close()
		}
		iceoryx.ShutdownRuntime()
		if dev != nil {
			if buf != 0 {
				dev.Free(buf)
			}
			dev.Close()
		}
	}()
	return Serve(ctl, func(req blReq) any {
		switch req.Op {
		case "init":
			d, err := openDevice(req.GPU, req.Device)
			if err != nil {
				return Fail(err)
			}
			dev = d
			if err := iceoryx.InitRuntime(subRuntimeName(req.Index, os.Getpid())); err != nil {
				return Fail(err)
			}
			if sub, err = iceoryx.NewSubscriber(iceoryxService, 4); err != nil {
				return Fail(err)
			}
			return Fail(sub.WaitSubscribed(60 * time.Second))
		case "round":
			if sub == nil {
				return Fail(errors.New("not initialised"))
			}
			if size < req.Size { // untimed: before the message comes
				if buf != 0 {
					dev.Free(buf)
					buf = 0
				}
				p, err := dev.Alloc(req.Size)
				if err != nil {
					return Fail(err)
				}
				buf, size = p, req.Size
			}
			rep := blTake(dev, sub, buf, req.blRound)
			if r, ok := rep.(blSubReply); ok && r.Err == "" {
				toCheck = req.Size
			}
			return rep
		case "check":
			// Untimed: the checksum of the device copy, once every
			// subscriber holds its own (see blTake).
			if toCheck == 0 {
				return blSubReply{Status: Fail(errors.New("check without a round's copy"))}
			}
			sum, err := dev.Checksum(buf, toCheck)
			toCheck = 0
			if err != nil {
				return blSubReply{Status: Fail(err)}
			}
			return blSubReply{Sum: sum}
		}
		return Fail(fmt.Errorf("unknown request %q", req.Op))
	})
}

// blTake waits for the round's chunk and copies its payload to the device
// buffer (its own pageable H2D copy, synchronised). Its checksum waits for
// "check", sent once every subscriber answered: a checksum kernel run at
// once would keep this process's CPU (the CUDA driver spins while it waits)
// while the round's other subscribers are still being woken.
func blTake(dev device, sub *iceoryx.Subscriber, buf cuda.DevicePtr, r blRound) any {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		chunk, ok, err := sub.Take(hdrSize + int(r.Size))
		if err != nil {
			return Fail(err)
		}
		if !ok {
			if time.Now().After(deadline) {
				return Fail(fmt.Errorf("message %d did not come", r.Seq))
			}
			if _, err := sub.Wait(time.Second); err != nil {
				return Fail(err)
			}
			continue
		}
		t5 := time.Now().UnixNano()
		var rep blSubReply
		if err := rep.Hdr.get(chunk); err != nil {
			sub.Release(chunk)
			return Fail(err)
		}
		if rep.Hdr.Seq != r.Seq || rep.Hdr.Size != uint64(r.Size) {
			sub.Release(chunk)
			return rep // the harness names the mismatch
		}
		err = dev.HtoD(buf, chunk[hdrSize:])
		rep.T5, rep.T6 = t5, time.Now().UnixNano()
		sub.Release(chunk)
		if err != nil {
			return Fail(err)
		}
		return rep
	}
}
