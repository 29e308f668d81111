package benche2e

import (
	"errors"
	"fmt"
	"net"
	"sync"
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
// LowerBoundRails is the same over K endpoint pairs (K = the rails the
// bridge chooses on this machine, bridge.AutoRails): the message is cut
// into K equal parts (of at most transport.MaxMessage) written side by
// side, each endpoint polled by a goroutine of its own: the bound a design
// that stripes one message over K connections has to beat (issue 13).
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
		Rails   int    `json:"rails,omitempty"` // endpoint pairs (0: 1)
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
	rails   int // endpoint pairs of the wire stage
	env     *Env
	a, b    *Child
	remoteA transport.RemoteRegion
	seq     uint64
	failed  bool // a round failed: Close kills instead of stopping
}

// NewLowerBound returns the lower-bound System.
func NewLowerBound() System { return &LowerBound{rails: 1} }

// NewLowerBoundRails returns the lower bound whose wire stage runs over k
// endpoint pairs (NameLowerBoundRails).
func NewLowerBoundRails(k int) func() System {
	return func() System { return &LowerBound{rails: max(1, k)} }
}

func (s *LowerBound) Name() string {
	if s.rails > 1 {
		return NameLowerBoundRails
	}
	return NameLowerBound
}

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
	if err := s.b.Call(lbReq{Op: "init", GPU: env.GPU, Device: env.DeviceB, Wire: env.Wire, Node: env.B.Addr, MaxSize: max, Rails: s.rails}, &rb); err != nil {
		return err
	}
	if s.a, err = StartChild(env, env.A, "lower bound A", "e2e-lb"); err != nil {
		return err
	}
	// A dials while B accepts (B accepts after its init reply).
	var ra lbReply
	if err := s.a.Call(lbReq{Op: "init", GPU: env.GPU, Device: env.DeviceA, Wire: env.Wire, Node: env.A.Addr, MaxSize: max, Rails: s.rails, Peer: rb.Addr, Remote: rb.Remote}, &ra); err != nil {
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
	eps    []transport.Endpoint   // the endpoint pairs' ends, in A's dial order
	rails  int                    // len(eps) once connected
	accept chan accepted          // B: the accepted endpoints' arrivals
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
	s.rails = max(1, req.Rails)
	if req.Peer != "" { // A
		s.remote = req.Remote
		for range s.rails {
			ep, err := p.Dial(req.Peer)
			if err != nil {
				return rep, err
			}
			s.eps = append(s.eps, ep)
		}
		return rep, nil
	}
	addr := ""
	if req.Wire != "shm" {
		addr = net.JoinHostPort(req.Node, "0")
	}
	if s.ln, err = p.Listen(addr); err != nil {
		return rep, err
	}
	rep.Addr = s.ln.Addr()
	s.accept = make(chan accepted, s.rails)
	ln, k := s.ln, s.rails
	go func() {
		defer close(s.accept)
		for range k {
			ep, err := ln.Accept()
			s.accept <- accepted{ep, err}
			if err != nil {
				return
			}
		}
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
		for len(s.eps) < s.rails {
			select {
			case r := <-s.accept:
				if r.err != nil {
					return rep, fmt.Errorf("accepting A: %w", r.err)
				}
				s.eps = append(s.eps, r.ep)
			case <-time.After(time.Minute):
				return rep, fmt.Errorf("A connected %d of %d endpoints", len(s.eps), s.rails)
			}
		}
		s.accept = nil
	}
	if err := s.prepare(req.Size, a); err != nil {
		return rep, err
	}
	part := lbPart(req.Size, s.rails)
	chunks := int((req.Size + part - 1) / part)
	if a {
		msg := s.mem[:req.Size]
		rep.T0 = time.Now().UnixNano()
		if err := s.dev.DtoH(msg, s.bufs[req.Seq%2]); err != nil {
			return rep, err
		}
		rep.T1 = time.Now().UnixNano()
		// Each endpoint posts its parts and progresses until B's
		// acknowledgement (on endpoint 0) landed, or, on the others,
		// until its writes completed: everything landed.
		err := s.each(func(i int, ep transport.Endpoint, imms []uint64) error {
			for k := i; k < chunks; k += s.rails {
				off := int64(k) * part
				end := min(off+part, req.Size)
				if err := ep.WriteImm(msg[off:end], s.reg, s.remote, uint64(off), uint64(k)); err != nil {
					return err
				}
			}
			if i > 0 {
				return ep.Flush(time.Minute)
			}
			if _, err := spin(ep, imms, 1); err != nil {
				return fmt.Errorf("waiting for B's acknowledgement: %w", err)
			}
			return nil
		})
		return rep, err
	}
	if err := s.each(func(i int, ep transport.Endpoint, imms []uint64) error {
		want := (chunks - i + s.rails - 1) / s.rails // parts k ≡ i (mod rails)
		if got, err := spin(ep, imms, want); err != nil {
			return fmt.Errorf("endpoint %d: %d of %d writes arrived: %w", i, got, want, err)
		}
		return nil
	}); err != nil {
		return rep, err
	}
	rep.TRecv = time.Now().UnixNano()
	t := time.Now()
	if err := s.dev.HtoD(s.bufs[0], s.mem[:req.Size]); err != nil {
		return rep, err
	}
	rep.H2D = int64(time.Since(t))
	// The acknowledgement: 8 bytes from our region into A's.
	if err := s.eps[0].WriteImm(s.mem[:8], s.reg, req.Remote, 0, 1<<62); err != nil {
		return rep, fmt.Errorf("acknowledging: %w", err)
	}
	var err error
	if rep.Sum, err = s.dev.Checksum(s.bufs[0], req.Size); err != nil {
		return rep, err
	}
	return rep, s.eps[0].Flush(time.Minute)
}

// lbPart is the size of the parts a message is written in over k
// endpoints: equal parts, page-rounded, at most transport.MaxMessage.
func lbPart(size int64, k int) int64 {
	per := (size + int64(k) - 1) / int64(k)
	per = (per + 4095) &^ 4095
	n := (per + transport.MaxMessage - 1) / transport.MaxMessage // parts per endpoint
	return min(transport.MaxMessage, (per/n+4095)&^4095)
}

// each runs f for every endpoint, on goroutines of their own when there
// are several (software providers move an endpoint's bytes only while it
// is polled), and returns the first error.
func (s *lbSide) each(f func(i int, ep transport.Endpoint, imms []uint64) error) error {
	if len(s.eps) == 1 {
		return f(0, s.eps[0], make([]uint64, 64))
	}
	errs := make([]error, len(s.eps))
	var wg sync.WaitGroup
	for i, ep := range s.eps {
		wg.Go(func() { errs[i] = f(i, ep, make([]uint64, 64)) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *lbSide) close() {
	for _, ep := range s.eps {
		ep.Close()
	}
	if s.ln != nil {
		s.ln.Close()
		if s.accept != nil {
			// The accepting goroutine ends with the listener (and closes
			// the channel): close what it accepted that round never took.
			for r := range s.accept {
				if r.ep != nil {
					r.ep.Close()
				}
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
