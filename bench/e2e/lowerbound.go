package benche2e

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// The serial lower bound: the three copies any design has to make, each
// bare and measured on its own, then summed. Host A: cuMemcpyDtoH of the
// message into pinned memory (mmap'd, cuMemHostRegister'ed, registered
// with libfabric); the same bytes written with fi_writedata (chunks of at
// most transport.MaxMessage, the last one's immediate awaited by host B)
// into host B's pinned, registered memory, over the run's provider (Wire);
// host B: cuMemcpyHtoD of it into device memory. No overlap, no
// bookkeeping, one copy to the device whatever N: what a bridge could
// reach if it added nothing (the sum, not a pipelined overlap, so a
// system that overlaps the stages may beat it for large messages).
//
// The transport stage is timed from the first post on A to the arrival
// of the last immediate on B (wall clock; one machine). B then writes an
// 8-byte acknowledgement back, so A keeps progressing until everything
// landed; that write-back is not timed.

// Stages of the lower bound.
const (
	StageD2HPinned = "D2H pinned"
	StageWrite     = "fi_writedata A→B"
	StageH2DPinned = "H2D pinned"
)

type (
	lbReq struct {
		Op      string `json:"op"` // "init", "round"
		GPU     bool   `json:"gpu"`
		Device  int    `json:"device"`
		Wire    string `json:"wire"`
		Node    string `json:"node"`
		MaxSize int64  `json:"max_size"`
		// A's init: B's listening address and region.
		Peer   string                 `json:"peer,omitempty"`
		Remote transport.RemoteRegion `json:"remote"`
		Size   int64                  `json:"size"`
		Seq    uint64                 `json:"seq"`
	}
	lbReply struct {
		Status
		Addr   string                 `json:"addr,omitempty"`
		Remote transport.RemoteRegion `json:"remote"`
		// A: D2H start and end, last post; B: last immediate, H2D time,
		// checksum of the device copy.
		T0, T1, TRecv int64
		H2D           int64
		Sum           uint64
	}
)

func init() {
	RegisterChild("e2e-lb", lbMain)
}

// LowerBound is the serial lower bound as a System.
type LowerBound struct {
	env     *Env
	a, b    *Child
	remoteA transport.RemoteRegion
	seq     uint64
	failed  bool // a round failed: Close kills instead of stopping
}

// NewLowerBound returns the lower-bound System.
func NewLowerBound() System { return &LowerBound{} }

func (s *LowerBound) Name() string { return "lower-bound" }

func (s *LowerBound) StageOrder() []string {
	return []string{StageD2HPinned, StageWrite, StageH2DPinned}
}

func (s *LowerBound) Start(env *Env) (err error) {
	defer func() {
		if err != nil {
			s.failed = true // Close kills what started
		}
	}()
	s.env = env
	if !fabric.Available {
		return fmt.Errorf("%w: this build has no libfabric", transport.ErrNotSupported)
	}
	max := env.Sizes[len(env.Sizes)-1]
	if s.b, err = StartChild(env, env.B, "lower bound B", "e2e-lb"); err != nil {
		return err
	}
	var rb lbReply
	if err := s.b.Call(lbReq{Op: "init", GPU: env.GPU, Device: env.DeviceB, Wire: env.Wire, Node: env.B.Addr, MaxSize: max}, &rb); err != nil {
		return err
	}
	if s.a, err = StartChild(env, env.A, "lower bound A", "e2e-lb"); err != nil {
		return err
	}
	// A dials while B accepts (B accepts after its init reply).
	var ra lbReply
	if err := s.a.Call(lbReq{Op: "init", GPU: env.GPU, Device: env.DeviceA, Wire: env.Wire, Node: env.A.Addr, MaxSize: max, Peer: rb.Addr, Remote: rb.Remote}, &ra); err != nil {
		return err
	}
	// B learns A's region (for its acknowledgement) with every round.
	s.remoteA = ra.Remote
	return nil
}

func (s *LowerBound) Round(size int64, n int) (r Round, err error) {
	defer func() {
		if err != nil {
			s.failed = true
		}
	}()
	s.seq++
	want := ExpectedChecksum(size, seedOf(s.seq)) // before anything is timed
	if err := s.b.Send(lbReq{Op: "round", Size: size, Seq: s.seq, Remote: s.remoteA}); err != nil {
		return Round{}, err
	}
	var ra, rb lbReply
	if err := s.a.Call(lbReq{Op: "round", Size: size, Seq: s.seq}, &ra); err != nil {
		return Round{}, s.withOthers(err)
	}
	if err := s.b.Recv(&rb); err != nil {
		return Round{}, s.withOthers(err)
	}
	if rb.Sum != want {
		return Round{}, fmt.Errorf("lower bound: checksum of B's device copy of message %d is %#x, want %#x", s.seq, rb.Sum, want)
	}
	d2h, wire, h2d := time.Duration(ra.T1-ra.T0), time.Duration(rb.TRecv-ra.T1), time.Duration(rb.H2D)
	total := d2h + wire + h2d
	r = Round{PerSub: make([]time.Duration, n), Stages: map[string]time.Duration{
		StageD2HPinned: d2h, StageWrite: wire, StageH2DPinned: h2d,
	}}
	for i := range r.PerSub {
		r.PerSub[i] = total
	}
	return r, nil
}

func (s *LowerBound) withOthers(err error) error {
	for _, p := range []*Child{s.a, s.b} {
		if p != nil {
			if out := p.Output(); out != "" {
				err = fmt.Errorf("%w; %s said: %s", err, p.Name(), out)
			}
		}
	}
	return err
}

func (s *LowerBound) Close() error {
	err := StopAll([]*Child{s.a, s.b}, 30*time.Second, s.failed)
	s.a, s.b = nil, nil
	return err
}

// ---- the child (either side) ----

type lbSide struct {
	dev    device
	prov   transport.Provider
	mem    []byte // mmap'd, pinned, registered
	pinned bool
	reg    transport.Region
	ln     transport.Listener
	ep     transport.Endpoint
	accept chan accepted          // B: the accepted endpoint's arrival
	remote transport.RemoteRegion // A: B's region
	size   int64
	bufs   [2]cuda.DevicePtr // A: the message per seed; B: [0] the device copy
}

type accepted struct {
	ep  transport.Endpoint
	err error
}

func lbMain(args []string) error {
	ctl, err := ChildControl()
	if err != nil {
		return err
	}
	s := &lbSide{}
	defer s.close()
	return Serve(ctl, func(req lbReq) any {
		switch req.Op {
		case "init":
			rep, err := s.init(req)
			if err != nil {
				return Fail(err)
			}
			return rep
		case "round":
			rep, err := s.round(req)
			if err != nil {
				return Fail(err)
			}
			return rep
		}
		return Fail(fmt.Errorf("unknown request %q", req.Op))
	})
}

func (s *lbSide) init(req lbReq) (lbReply, error) {
	var rep lbReply
	dev, err := openDevice(req.GPU, req.Device)
	if err != nil {
		return rep, err
	}
	s.dev = dev
	p, err := fabric.Open(req.Wire, fabric.Options{Node: req.Node, Timeout: time.Minute})
	if err != nil {
		return rep, err
	}
	s.prov = p
	if s.mem, err = transport.MapAnon(int(req.MaxSize)); err != nil {
		return rep, err
	}
	touch(s.mem)
	if err := s.dev.Pin(s.mem); err != nil {
		return rep, err
	}
	s.pinned = true
	if s.reg, err = p.Register(s.mem); err != nil {
		return rep, err
	}
	rep.Remote = s.reg.Desc()
	if req.Peer != "" { // A
		s.remote = req.Remote
		s.ep, err = p.Dial(req.Peer)
		return rep, err
	}
	addr := ""
	if req.Wire != "shm" {
		addr = net.JoinHostPort(req.Node, "0")
	}
	if s.ln, err = p.Listen(addr); err != nil {
		return rep, err
	}
	rep.Addr = s.ln.Addr()
	s.accept = make(chan accepted, 1)
	ln := s.ln
	go func() {
		ep, err := ln.Accept()
		s.accept <- accepted{ep, err}
	}()
	return rep, nil
}

func (s *lbSide) prepare(size int64, a bool) error {
	if s.size == size {
		return nil
	}
	for i, d := range s.bufs {
		if d != 0 {
			s.dev.Free(d)
			s.bufs[i] = 0
		}
	}
	s.size = 0
	for i := range s.bufs {
		if !a && i > 0 {
			break
		}
		d, err := s.dev.Alloc(size)
		if err != nil {
			return err
		}
		s.bufs[i] = d
		if a {
			if err := s.dev.Fill(d, size, seedOf(uint64(i))); err != nil {
				return err
			}
		}
	}
	s.size = size
	return nil
}

func (s *lbSide) round(req lbReq) (lbReply, error) {
	var rep lbReply
	if s.reg == nil {
		return rep, errors.New("not initialised")
	}
	if req.Size <= 0 || req.Size > int64(len(s.mem)) {
		return rep, fmt.Errorf("message of %d bytes, region of %d", req.Size, len(s.mem))
	}
	a := s.ln == nil
	if !a && s.accept != nil {
		select {
		case r := <-s.accept:
			s.accept = nil
			if r.err != nil {
				return rep, fmt.Errorf("accepting A: %w", r.err)
			}
			s.ep = r.ep
		case <-time.After(time.Minute):
			return rep, errors.New("A did not connect")
		}
	}
	if err := s.prepare(req.Size, a); err != nil {
		return rep, err
	}
	chunks := int((req.Size + transport.MaxMessage - 1) / transport.MaxMessage)
	imms := make([]uint64, 64)
	if a {
		msg := s.mem[:req.Size]
		rep.T0 = time.Now().UnixNano()
		if err := s.dev.DtoH(msg, s.bufs[req.Seq%2]); err != nil {
			return rep, err
		}
		rep.T1 = time.Now().UnixNano()
		for k := range chunks {
			off := int64(k) * transport.MaxMessage
			end := min(off+transport.MaxMessage, req.Size)
			if err := s.ep.WriteImm(msg[off:end], s.reg, s.remote, uint64(off), uint64(k)); err != nil {
				return rep, err
			}
		}
		// Progress until B's acknowledgement: everything landed.
		if _, err := spin(s.ep, imms, 1); err != nil {
			return rep, fmt.Errorf("waiting for B's acknowledgement: %w", err)
		}
		return rep, nil
	}
	if got, err := spin(s.ep, imms, chunks); err != nil {
		return rep, fmt.Errorf("%d of %d writes arrived: %w", got, chunks, err)
	}
	rep.TRecv = time.Now().UnixNano()
	t := time.Now()
	if err := s.dev.HtoD(s.bufs[0], s.mem[:req.Size]); err != nil {
		return rep, err
	}
	rep.H2D = int64(time.Since(t))
	// The acknowledgement: 8 bytes from our region into A's.
	if err := s.ep.WriteImm(s.mem[:8], s.reg, req.Remote, 0, 1<<62); err != nil {
		return rep, fmt.Errorf("acknowledging: %w", err)
	}
	var err error
	if rep.Sum, err = s.dev.Checksum(s.bufs[0], req.Size); err != nil {
		return rep, err
	}
	return rep, s.ep.Flush(time.Minute)
}

func (s *lbSide) close() {
	if s.ep != nil {
		s.ep.Close()
	}
	if s.ln != nil {
		s.ln.Close()
		if s.accept != nil {
			if r := <-s.accept; r.ep != nil {
				r.ep.Close()
			}
		}
	}
	if s.reg != nil {
		s.reg.Close()
	}
	if s.prov != nil {
		s.prov.Close()
	}
	if s.dev != nil {
		for _, d := range s.bufs {
			if d != 0 {
				s.dev.Free(d)
			}
		}
		if s.pinned {
			s.dev.Unpin(s.mem)
		}
		s.dev.Close()
	}
	if s.mem != nil {
		transport.Unmap(s.mem)
	}
}

// spin polls ep without pausing (a bare loop: the lower bound must not
// wait in a backoff) until want immediates came, for at most 5 minutes.
func spin(ep transport.Endpoint, imms []uint64, want int) (int, error) {
	got := 0
	deadline := time.Now().Add(5 * time.Minute)
	for i := 0; got < want; i++ {
		n, err := ep.Poll(imms)
		if err != nil {
			return got, err
		}
		got += n
		if i%4096 == 4095 && time.Now().After(deadline) {
			return got, errors.New("timed out")
		}
	}
	return got, nil
}
