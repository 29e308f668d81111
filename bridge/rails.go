package bridge

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/internal/pause"
)

// Rails (§3.7 "Rails", §3.9).
//
// A link's data connections are its rails, 1 … ring.MaxRails of them.
// Each rail has a goroutine of its own, its pump, which alone posts on
// and polls the rail's endpoint: software providers move bytes only
// inside the calls of whoever polls them, so one goroutine polling K
// endpoints would move them one after the other, and a link goroutine
// that also copies messages would stop the transfer while it copies. The
// link's goroutine keeps the ring state and the engine endpoints: it hands
// each rail the writes to post (railSet.push) and takes what the rails
// received (railSet.drain); it never touches an endpoint while the rails
// run.
//
// Shared between a pump and the link goroutine: the rail's queue of writes
// and its received immediates, under the rail's mutex; the watched word's
// value (the writer's DelayedHead word, the write-twice reader's tail
// slot), read by rail 0's pump after each poll and handed over through an
// atomic; the endpoint's counters (transport.Stats, safe to read at any
// time); the first error. A pump that got something the link waits for
// counts an event and, when the link sleeps, wakes it through the
// mailbox (the link checks the count before it sleeps, so no wake is
// lost).
//
// The race detector cannot see what orders a reader's consumption of ring
// bytes before the peer's next write over them (the head write-back
// travels through the peer); with more than one rail, race builds make it
// visible: the link waits for every poll in progress before it posts a
// head write-back (fence), and pumps poll under the read side of the same
// lock.

// railSet is a link's rails while it is up, and their pumps.
type railSet struct {
	rails []*rail
	wg    sync.WaitGroup
	poke  func() // wakes the link (its mailbox)

	// events counts what pumps got that the link may wait for (received
	// immediates, a new word value, completions it asked for); sleeping
	// is set while the link waits. seen is the link goroutine's own: the
	// count at the start of its pass.
	events   atomic.Uint64
	sleeping atomic.Bool
	seen     uint64

	// word is the 8-byte word rail 0's pump watches (nil: none) and value
	// its latest value.
	word  []byte
	value atomic.Uint64
	// wantCompl asks pumps to count completions as events (the link
	// defers something until writes complete); busy tells rail 0's pump
	// that something is in flight to which the peer will answer (records
	// awaiting a head write-back), so it keeps polling closely.
	wantCompl atomic.Bool
	busy      atomic.Bool

	reader bool
	landMu sync.RWMutex // race builds with several rails: see above
	fenced bool

	// doze and ring: the doorbell's hooks (railBell). Counters (tests,
	// railidle.go): sleeps in the kernel begun, dozes announced, doorbells
	// rung, and late: sleeps whose safety timeout found something a wake
	// should have announced.
	doze                      func(rail int, seq, imms uint64) bool
	ring                      func(rail int, seq uint64)
	sleeps, dozed, rung, late atomic.Uint64
	// moves counts the pumps' passes that moved something (the trimmer
	// waits for a spell without any, memtrim.go).
	moves atomic.Uint64
}

// rail is one connection of a link and its pump.
type rail struct {
	set  *railSet
	i    int
	ep   transport.Endpoint
	poll pollPolicy
	kick chan struct{} // capacity 1: writes were queued

	mu   sync.Mutex
	q    []railWrite
	imms []uint64
	err  error
	stop bool

	// active (the pump's own) is when the rail last moved something;
	// idle is the pump's state while it has nothing to do (railidle.go),
	// asleep tells tests that it sleeps (in the kernel, or for a kick).
	active time.Time
	idle   railIdle
	asleep atomic.Bool

	// bell (the link goroutine's own, writers): the reader's rail dozes
	// and waits for a doorbell (railidle.go).
	bell writerBell

	// queued (the link goroutine's own) counts the writes handed to this
	// rail, the hello included: the endpoint's Writes once all are posted,
	// so a write's completion is known when Completions reaches its count.
	queued uint64
}

// railWrite is one write a pump posts: src (in registered region reg) to
// the peer's region at off, with an immediate when withImm; or, when g is
// not nil, g's parts gathered into one write with the immediate
// (transport.GatherWriter).
type railWrite struct {
	src     []byte
	reg     transport.Region
	g       *gatherSet
	remote  transport.RemoteRegion
	off     uint64
	imm     uint64
	withImm bool
}

// gatherSet is the parts of one gathered write: parts[k] in regs[k], k < n
// (a record's header, meta and payload: at most 3).
type gatherSet struct {
	parts [4][]byte
	regs  [4]transport.Region
	n     int
}

// newRails starts a pump per endpoint. word (may be nil) is watched by
// rail 0's pump; reader says whether the link reads the ring (its pumps
// poll steadily: data comes unannounced).
func newRails(eps []transport.Endpoint, reader bool, poll pollPolicy, word []byte, poke func(), bell railBell) *railSet {
	s := &railSet{poke: poke, word: word, reader: reader, fenced: raceEnabled && len(eps) > 1, doze: bell.doze, ring: bell.ring}
	if word != nil {
		s.value.Store(binary.LittleEndian.Uint64(word))
	}
	for i, ep := range eps {
		r := &rail{set: s, i: i, ep: ep, poll: poll, kick: make(chan struct{}, 1), queued: ep.Stats().Writes, active: time.Now()}
		r.idle.canSleep = true
		r.bell.imms = ep.Stats().Writes // a writer's rail: its hello is its one write so far
		if reader && i > 0 {
			// Lone messages go on rail 0 (ring.Writer's rail choice): the
			// others carry bursts, and may sleep longer when idle.
			r.poll.most = max(r.poll.most, time.Millisecond)
		}
		s.rails = append(s.rails, r)
	}
	for _, r := range s.rails {
		s.wg.Add(1)
		go r.run()
	}
	return s
}

// close ends the pumps, closes the endpoints (which ends a post or poll
// in progress) and waits for the pumps. What was queued and not posted is
// dropped.
func (s *railSet) close() {
	for _, r := range s.rails {
		r.mu.Lock()
		r.stop = true
		r.mu.Unlock()
		r.kickPump()
	}
	for _, r := range s.rails {
		r.ep.Close()
	}
	s.wg.Wait()
}

// err is the first error of any rail.
func (s *railSet) err() error {
	for _, r := range s.rails {
		r.mu.Lock()
		err := r.err
		r.mu.Unlock()
		if err != nil {
			if len(s.rails) > 1 {
				return fmt.Errorf("rail %d: %w", r.i, err)
			}
			return err
		}
	}
	return nil
}

// begin marks the start of one of the link's passes: events counted from
// here on keep it from sleeping.
func (s *railSet) begin() { s.seen = s.events.Load() }

// sleep reports whether the link may sleep now (no event since begin)
// and, if so, marks it sleeping until awake.
func (s *railSet) sleep() bool {
	s.sleeping.Store(true)
	if s.events.Load() != s.seen {
		s.sleeping.Store(false)
		return false
	}
	return true
}

func (s *railSet) awake() { s.sleeping.Store(false) }

// event counts something the link may wait for and wakes it if it sleeps.
func (s *railSet) event() {
	s.events.Add(1)
	if s.sleeping.Load() {
		s.poke()
	}
}

// setBusy tells rail 0's pump whether records await the peer's head
// write-back. Turning busy kicks it: a pump that found nothing to expect
// waits for a kick alone, and records striped over the other rails kick
// only theirs, so the write-back would land unseen until its safety
// timeout (the writer's ring stays full meanwhile).
func (s *railSet) setBusy(busy bool) {
	if !busy {
		s.busy.Store(false)
	} else if !s.busy.Swap(true) {
		s.rails[0].kickPump()
	}
}

// push queues writes on rail i (in order; the last may carry the
// immediate) and returns the rail's write count after them.
func (s *railSet) push(i int, ws ...railWrite) uint64 {
	r := s.rails[i]
	r.mu.Lock()
	r.q = append(r.q, ws...)
	r.mu.Unlock()
	r.queued += uint64(len(ws))
	r.kickPump()
	if len(ws) > 0 && ws[len(ws)-1].withImm {
		r.bell.pushed(r, s.ring)
	}
	return r.queued
}

// gather is how many parts rail i writes as one write with an immediate
// (transport.GatherWriter); below 2, none.
func (s *railSet) gather(i int) int {
	if g, ok := s.rails[i].ep.(transport.GatherWriter); ok {
		return g.MaxGather()
	}
	return 0
}

// done reports whether rail i completed its writes up to count n (push's
// result) locally.
func (s *railSet) done(i int, n uint64) bool { return s.rails[i].ep.Stats().Completions >= n }

// drain appends each rail's received immediates to into[i], oldest first.
func (s *railSet) drain(into [][]uint64) {
	for i, r := range s.rails {
		r.mu.Lock()
		into[i] = append(into[i], r.imms...)
		r.imms = r.imms[:0]
		r.mu.Unlock()
	}
}

// fence makes, in race builds with several rails, every later landing of
// bytes happen after what the link did so far (see above); call it before
// posting a head write-back.
func (s *railSet) fence() {
	if s.fenced {
		s.landMu.Lock()
		s.landMu.Unlock() //nolint:staticcheck // an empty critical section: the ordering is the point
	}
}

// kickPump ends the pump's pause or sleep.
func (r *rail) kickPump() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
	r.ep.Wake() // two atomic operations unless it sleeps in the kernel
}

// fail records the rail's error and wakes the link.
func (r *rail) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.set.events.Add(1)
	r.set.poke()
}

// run is the pump: post what was queued, poll, hand over what came in,
// and pause as the rail's traffic allows.
func (r *rail) run() {
	s := r.set
	defer s.wg.Done()
	var batch []railWrite
	imms := make([]uint64, 256)
	timer := pause.New() // pauses of microseconds: Go's timers end them a millisecond late in an idle daemon
	defer timer.Stop()
	var compl uint64
	spins := 0
	for {
		r.mu.Lock()
		if r.stop {
			r.mu.Unlock()
			return
		}
		batch = append(batch[:0], r.q...)
		clear(r.q)
		r.q = r.q[:0]
		r.mu.Unlock()
		for i := range batch {
			w := &batch[i]
			var err error
			if g := w.g; g != nil {
				err = r.ep.(transport.GatherWriter).WriteImmGather(g.parts[:g.n], g.regs[:g.n], w.remote, w.off, w.imm)
			} else if w.withImm {
				err = r.ep.WriteImm(w.src, w.reg, w.remote, w.off, w.imm)
			} else {
				err = r.ep.Write(w.src, w.reg, w.remote, w.off)
			}
			if err != nil {
				r.fail(err)
				return
			}
		}
		clear(batch) // drop references to pool memory
		if s.fenced {
			s.landMu.RLock()
		}
		t0 := time.Now()
		n, err := r.ep.Poll(imms)
		if t1 := time.Now(); t1.Sub(t0) > pollMoving {
			r.active = t1 // bytes moved, whether or not a completion says so yet
		}
		if s.fenced {
			s.landMu.RUnlock()
		}
		if err != nil {
			r.fail(err)
			return
		}
		moved := len(batch) > 0
		got := n > 0 // the peer's traffic: an immediate or a new word
		if n > 0 {
			moved = true
			if s.reader {
				r.mu.Lock()
				r.imms = append(r.imms, imms[:n]...)
				r.mu.Unlock()
				s.event()
				s.kickOthers(r.i) // a burst (or a striped message) has begun: the other rails poll closely
			}
		}
		if r.i == 0 && s.word != nil {
			if v := binary.LittleEndian.Uint64(s.word); v != s.value.Load() {
				s.value.Store(v)
				s.event()
				moved, got = true, true
			}
		}
		st := r.ep.Stats()
		if st.Completions != compl {
			compl = st.Completions
			if s.wantCompl.Load() {
				s.event()
			}
			moved = true
		}
		if got {
			r.idle.got(time.Now())
		}
		if got && r.idle.timedOut {
			s.late.Add(1) // a sleep's safety timeout found what a wake should have announced
		}
		r.idle.timedOut = false
		if moved {
			s.moves.Add(1)
			r.idle.dozing = false
			spins = 0
			r.active = time.Now()
			continue
		}
		spins++
		if r.pause(spins, st.Writes > st.Completions, s.reader || (r.i == 0 && s.busy.Load()), timer) {
			spins = 0
		}
	}
}

// kickOthers ends the pauses of every rail but i.
func (s *railSet) kickOthers(i int) {
	for _, r := range s.rails {
		if r.i != i {
			r.kickPump()
		}
	}
}

// dialRails connects k rails to a reader's listener at addr, one after
// the other, and sends each its hello (§3.7 "Rails"): 8 bytes from hello
// (registered in local) to the reader's hello word at helloOff of remote.
func dialRails(prov transport.Provider, addr string, k int, local transport.Region, hello []byte, remote transport.RemoteRegion, helloOff uint64) ([]transport.Endpoint, error) {
	var eps []transport.Endpoint
	fail := func(err error) ([]transport.Endpoint, error) {
		for _, ep := range eps {
			ep.Close()
		}
		return nil, err
	}
	for i := range k {
		ep, err := prov.Dial(addr)
		if err != nil {
			return fail(fmt.Errorf("connecting rail %d to %s: %w", i, addr, err))
		}
		eps = append(eps, ep)
		h := hello[8*i : 8*i+ring.WordSize]
		binary.LittleEndian.PutUint64(h, uint64(i))
		if err := ep.WriteImm(h, local, remote, helloOff, ring.RailHello(i)); err != nil {
			return fail(fmt.Errorf("rail %d hello: %w", i, err))
		}
	}
	return eps, nil
}

// acceptRails accepts k connections from ln (their order is not the
// rails': orderRails reads their hellos).
func acceptRails(ln transport.Listener, k int) ([]transport.Endpoint, error) {
	var eps []transport.Endpoint
	for range k {
		ep, err := ln.Accept()
		if err != nil {
			closeAll(eps)
			return nil, err
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// orderRails orders a reader's accepted connections by their hellos, each
// awaited until deadline or until gone reports the link given up. Reading
// a hello lands what the writer wrote after it (the writer starts writing
// once its accept is sent), so the reader must be ready for records when
// it calls this: its position resynchronised, its tail slot reset.
func orderRails(conns []transport.Endpoint, deadline time.Time, gone func() bool) ([]transport.Endpoint, error) {
	k := len(conns)
	eps := make([]transport.Endpoint, k)
	var one [1]uint64
	for _, ep := range conns {
		var n int
		var err error
		for n == 0 && err == nil && time.Now().Before(deadline) && !gone() {
			n, err = ep.Wait(one[:], min(time.Until(deadline), 50*time.Millisecond))
		}
		if err == nil && n == 0 {
			err = fmt.Errorf("%w: no rail hello before the link's deadline", ring.ErrProtocol)
		}
		i, ok := ring.ParseRailHello(one[0])
		switch {
		case err != nil:
		case !ok:
			err = fmt.Errorf("%w: first immediate %#x of a rail is no hello", ring.ErrProtocol, one[0])
		case i >= k:
			err = fmt.Errorf("%w: hello of rail %d, the ring has %d", ring.ErrProtocol, i, k)
		case eps[i] != nil:
			err = fmt.Errorf("%w: two hellos of rail %d", ring.ErrProtocol, i)
		}
		if err != nil {
			return nil, err
		}
		eps[i] = ep
	}
	return eps, nil
}

// closeAll closes endpoints, ignoring nils.
func closeAll(eps []transport.Endpoint) {
	for _, ep := range eps {
		if ep != nil {
			ep.Close()
		}
	}
}
