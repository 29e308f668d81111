package bridge

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// readerLink is the reader role of a link (link.go): the subscribe
// manager of one ring this host owns. A peer writes records into the
// ring's registered memory; the link places each message once into the
// local topic pool (the GPU pool when the topic's local readers use the
// GPU), publishes it to every local subscription, and writes its Head back
// into the writer's DelayedHead when consumed bytes pass the watermark. It
// never zeroes ring memory: completions (or the tail slot) say what
// landed.
type readerLink struct {
	link

	epoch uint64 // this reader's instance

	// The link's goroutine owns everything below. The ring memory (mem:
	// the ring, then the 8-byte tail slot at cfg.Size), the write-back
	// buffer and the ring reader are made on first need (the first offer,
	// the first writer) and kept across links.
	cfg         ring.Config
	mem         transport.Region
	unpin       func() error
	wb          transport.Region   // staging of head write-backs
	offers      uint64             // offers made so far: the next one's number - 1
	ln          transport.Listener // held in state offered
	r           *ring.Reader
	asm         ring.Assembler
	writerEpoch uint64
	headRemote  transport.RemoteRegion
	topics      map[uint32]*inTopic // by topic id, for the current writer
	pubs        map[string]*inTopic // by topic name, kept across writers
	recs        []ring.Record
	railImms    [][]uint64 // per rail: immediates received; railPos[i] of them taken
	railPos     []int
	heads       []uint64 // scratch for NextRail
	has         []bool
	stallSince  time.Time
	wbPending   bool
	wbPosted    uint64 // transport writes posted when the last write-back went out
	placing     []placing
	cp          *zerocopy.Copier // asynchronous copies into device loans; made on first need
	workers     *copyWorkers     // copies into host loans (hostcopy.go); made on first need
	// populatedTo: the ring's bytes below it are faulted in or being
	// faulted in ahead of the records (populateAhead, by goroutines
	// populating waits for).
	populatedTo uint64
	populating  sync.WaitGroup
}

// readerPoll pauses a reader that found nothing: it polls hot for a
// little while (Options.BusyPoll, or 64 passes), then sleeps in steps
// growing to 200 µs, the added latency of the first message after a
// quiet period.
var readerPoll = pollPolicy{yields: 64, step: 10 * time.Microsecond, most: 200 * time.Microsecond, busy: true}

// inTopic is a topic this link delivers: the bridge publisher and the
// message being assembled.
type inTopic struct {
	name, typ string
	q         qos.Profile
	pub       *zerocopy.Publisher
	err       error // why the publisher could not be created (messages dropped)
	loan      *zerocopy.Loan
	dropping  bool // the current message is being dropped (no loan)
	// prefix and meta: the current message's meta prefix (§3.7; 0: none)
	// and the buffer its meta bytes are gathered in.
	prefix uint64
	meta   []byte
}

// newReaderLocked creates a reader link for a peer and returns the
// function that offers its ring (to call after unlocking). Must hold b.mu.
func (b *Bridge) newReaderLocked(p *peer, only string) func() {
	p.nextRing++
	l := &readerLink{epoch: randomEpoch(), topics: map[uint32]*inTopic{}, pubs: map[string]*inTopic{}}
	l.init(b, p, p.nextRing, only, l, readerPoll)
	l.mb.maps = map[uint32]topicMap{}
	p.readers[l.id] = l
	b.wg.Add(1)
	go l.run()
	return l.reoffer
}

// reoffer asks the link to offer its ring (again): the peer is up.
func (l *readerLink) reoffer() { l.mb.post(func(in *inbox) { in.reoffer = true }) }

// retryOffer asks the link to offer its ring again if its offer is
// pending (peerDown: a control connection died while another keeps the
// peer up; the offer or the writer's accept may have gone on it).
func (l *readerLink) retryOffer() { l.mb.post(func(in *inbox) { in.retryOffer = true }) }

func (l *readerLink) onAccept(a *ringAccept) error {
	if a.HeadRegion.Len < ring.WordSize {
		return fmt.Errorf("%w: ring %d: head region of %d bytes", ErrBadOffer, a.Ring, a.HeadRegion.Len)
	}
	if a.ReaderEpoch == l.epoch { // else it answers an earlier instance of this ring
		l.mb.postAbout(a.Offer, false, func(in *inbox) { in.accept = a })
	}
	return nil
}

func (l *readerLink) onTopicMap(m *topicMap) error {
	if m.ReaderEpoch != l.epoch {
		return nil
	}
	if m.ID == 0 {
		return fmt.Errorf("%w: topic map of ring %d with topic id 0", control.ErrProtocol, m.Ring)
	}
	if err := checkTopic("topic map", m.Topic); err != nil {
		return err
	}
	if err := checkType("topic map of "+m.Topic, m.Type); err != nil {
		return err
	}
	if l.only != "" && m.Topic != l.only {
		return fmt.Errorf("%w: topic map of ring %d for %s: the ring carries %s only", control.ErrProtocol, m.Ring, m.Topic, l.only)
	}
	if _, err := qos.Decode(m.QoS); err != nil {
		return fmt.Errorf("%w: topic map of %s: %v", control.ErrProtocol, m.Topic, err)
	}
	l.mb.mu.Lock()
	if _, ok := l.mb.maps[m.ID]; !ok && len(l.mb.maps) >= MaxTopicsPerPeer {
		// A writer numbers its topics afresh whenever it (re)opens one, so
		// a long-lived writer's ids grow: the oldest map goes (its records
		// were delivered long ago: its topic is known to the link by then).
		oldest := m.ID
		for id := range l.mb.maps {
			oldest = min(oldest, id)
		}
		if oldest == m.ID {
			// Older than every map kept: one the writer sends again (on a
			// new link, or after a control connection died) for a topic
			// the link knows by then. Nothing to keep.
			l.mb.mu.Unlock()
			return nil
		}
		delete(l.mb.maps, oldest)
	}
	l.mb.maps[m.ID] = *m
	l.mb.mu.Unlock()
	l.mb.post(func(*inbox) {}) // records may wait for it
	return nil
}

func (l *readerLink) kind() string { return "reader" }

// control is the peer's live control connection (nil: none).
func (l *readerLink) control() *control.Conn { return l.p.live.Load() }

func (l *readerLink) apply(*inbox) {}

func (l *readerLink) waitables(items []zerocopy.Waitable) []zerocopy.Waitable { return items }

// down finishes the records whose copies are running (the Assembler has
// taken them, so they must not come again; no head write-back goes out on
// the failed link: the next offer carries the Head) and stops listening.
func (l *readerLink) down(from linkState) {
	if from == linkOffered {
		l.ln.Close() // the accept goroutine's Accept returns; what it posts is dropped
	}
	if err := l.finish(true); err != nil {
		l.b.log.Error("finishing placements after a link failure", "peer", l.host, "ring", l.id, "err", err)
	}
}

// open allocates the ring memory (once), listens for the writer and sends
// the offer with the current Head: down → offered.
func (l *readerLink) open(*inbox) error {
	b := l.b
	if l.mem == nil {
		cfg, err := b.ringConfig().Validate()
		if err != nil {
			return err
		}
		// The ring, then its tail slot and hello word (§3.7).
		mem, err := b.prov.Alloc(int(cfg.Size) + ring.Align)
		if err != nil {
			return fmt.Errorf("registering the ring: %w", err)
		}
		wb, err := b.prov.Alloc(64)
		if err != nil {
			mem.Close()
			return fmt.Errorf("registering the write-back word: %w", err)
		}
		// The ring's pages are faulted in as records first land in them
		// (RSS grows with what has passed through the ring, up to its
		// size), and it is pinned for the GPU only when a topic is first
		// delivered to device memory (pinRing): a daemon whose readers use
		// no GPU never loads CUDA.
		l.cfg, l.mem, l.wb = cfg, mem, wb
	}
	c := l.p.live.Load()
	if c == nil {
		return errors.New("no control connection to the peer")
	}
	addr := netJoin(b.opts.DataHost)
	if b.prov.Name() == "fabric:shm" {
		addr = "" // shm endpoints are named, not addressed: a fresh name
	}
	ln, err := b.prov.Listen(addr)
	if err != nil {
		return fmt.Errorf("data listener: %w", err)
	}
	l.offers++
	l.setOffer(l.offers)
	l.ln = ln
	l.enter(linkOffered)
	b.wg.Add(1)
	go l.acceptAll(ln, l.offers, l.cfg.Rails)
	var head, headWriter uint64
	if l.r != nil {
		head, headWriter = l.r.Head(), l.writerEpoch
	}
	o := ringOffer{Ring: l.id, Topic: l.only, ReaderEpoch: l.epoch, Size: l.cfg.Size, MaxChunk: l.cfg.MaxChunk,
		Mode: uint8(l.cfg.Mode), Watermark: uint8(l.cfg.Watermark), CompactImm: l.cfg.CompactImm,
		Region: toRegion(l.mem.Desc()), TailOff: l.cfg.Size, Provider: b.prov.Name(), Addr: ln.Addr(), Head: head, HeadWriter: headWriter, Offer: l.offers,
		RingVersion: ring.Version, Rails: l.cfg.Rails}
	if !b.send(c, msgRingOffer, o) {
		return errors.New("no control connection to the peer")
	}
	return nil
}

// acceptAll takes the writer's k rails to the listener of an offer and
// posts them (start orders them); the link closes the listener earlier
// when it gives the offer up, and connections that come after are closed
// here.
func (l *readerLink) acceptAll(ln transport.Listener, offer uint64, k int) {
	defer l.b.wg.Done()
	eps, err := acceptRails(ln, k)
	ln.Close()
	if !l.mb.postAbout(offer, false, func(in *inbox) { in.conns, in.connErr = eps, err }) {
		closeAll(eps)
	}
}

func netJoin(host string) string {
	if host == "" {
		host = "127.0.0.1"
	}
	for _, ch := range host {
		if ch == ':' {
			return "[" + host + "]:0"
		}
	}
	return host + ":0"
}

// startHook, when set (tests only), runs first in every start; its error
// fails the link before the accept is applied.
var startHook func(*readerLink, *ringAccept) error

// start applies the writer's accept: a new writer instance starts a fresh
// reader at position 0; the same writer resumes at its restart position
// (records received but not consumed are dropped; consumed ones it sends
// again are flagged duplicates).
func (l *readerLink) start(a *ringAccept) error {
	if startHook != nil {
		if err := startHook(l, a); err != nil {
			return err
		}
	}
	if l.r == nil || a.WriterEpoch != l.writerEpoch {
		if a.Restart != 0 {
			return fmt.Errorf("%w: a new writer restarts at %d, not 0", control.ErrProtocol, a.Restart)
		}
		r, err := ring.NewReader(l.cfg, l.mem.Bytes()[:l.cfg.Size])
		if err != nil {
			return err
		}
		if l.r != nil {
			l.b.log.Warn("remote writer restarted: messages in assembly are dropped", "peer", l.host, "ring", l.id)
		}
		l.r, l.asm, l.writerEpoch = r, ring.Assembler{}, a.WriterEpoch
		l.mb.mu.Lock()
		for id, m := range l.mb.maps {
			if m.WriterEpoch != a.WriterEpoch {
				delete(l.mb.maps, id) // an earlier writer's numbering
			}
		}
		l.mb.mu.Unlock()
		for _, t := range l.pubs {
			if t.loan != nil {
				t.loan.Discard()
				t.loan = nil
			}
			t.dropping = false
		}
		l.topics = map[uint32]*inTopic{}
	} else if err := l.r.Resync(a.Restart); err != nil {
		return err
	}
	tail := l.mem.Bytes()[l.cfg.Size : l.cfg.Size+ring.WordSize]
	l.r.ResetTailSlot(tail) // at the restart position, before anything more lands
	// The rails in the order of their hellos: reading them lands what
	// the writer wrote after them (it writes once its accept is sent).
	eps, err := orderRails(l.eps, l.deadline, l.mb.stopping)
	if err != nil {
		return err
	}
	l.eps = eps
	l.recs = l.recs[:0]
	l.headRemote = a.HeadRegion.remote()
	l.wbPending, l.wbPosted = false, 0 // new endpoints count their writes from 0
	k := len(l.eps)
	l.railImms, l.railPos, l.heads, l.has = make([][]uint64, k), make([]int, k), make([]uint64, k), make([]bool, k)
	bell := railBell{doze: l.dozer(l.offerNo)}
	if l.cfg.Mode == ring.WriteTwice {
		l.startRails(true, tail, bell) // rail 0's pump reads the tail slot
	} else {
		l.startRails(true, nil, bell)
	}
	l.b.log.Info("data link up (reader)", "peer", l.host, "ring", l.id, "topic", l.only, "rails", k, "restart", a.Restart)
	return nil
}

// dozer is the doorbell's doze hook of the link of offer: it sends
// msgDoze on the peer's live control connection, if the peer answers
// dozes (railidle.go). It runs on a rail's pump.
func (l *readerLink) dozer(offer uint64) func(rail int, seq, imms uint64) bool {
	return func(rail int, seq, imms uint64) bool {
		c := l.p.live.Load()
		if c == nil || !l.p.doorbell.Load() {
			return false
		}
		return l.b.send(c, msgDoze, dozeMsg{Ring: l.id, Offer: offer, Rail: rail, Seq: seq, Imms: imms})
	}
}

// onWake is the writer's doorbell: the rail it names polls again. A wake
// about another link is dropped.
func (l *readerLink) onWake(m *wakeMsg) {
	l.mb.mu.Lock()
	cur := l.mb.current(m.Offer, false)
	l.mb.mu.Unlock()
	if rs := l.railsNow.Load(); cur && rs != nil && m.Rail < len(rs.rails) {
		rs.rails[m.Rail].kickPump()
	}
}

// pump receives what the rails landed, delivers it, and writes Head
// back. It waits for the rails (they wake it) when it found nothing,
// polls closely while device copies run (their completions wake nobody),
// and waits a little when records wait for their topic map (it travels on
// the control connection and may come after the data).
func (l *readerLink) pump() (pace, time.Duration, error) {
	if err := l.rails.err(); err != nil {
		return 0, 0, err
	}
	l.rails.begin()
	var n int
	var err error
	if l.cfg.Mode == ring.WriteImm {
		if n, err = l.receive(); err != nil {
			return 0, 0, err
		}
	} else {
		before := len(l.recs)
		if l.recs, err = l.r.OnTail(l.rails.value.Load(), l.recs); err != nil {
			return 0, 0, err
		}
		n = len(l.recs) - before
	}
	idle := n == 0 && len(l.recs) == 0 && len(l.placing) == 0
	placing := len(l.placing)
	done := 0
	for i := range l.recs {
		ok, err := l.deliver(&l.recs[i])
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		done++
	}
	if err := l.finish(false); err != nil {
		return 0, 0, err
	}
	stalled := false
	if done > 0 {
		l.recs = append(l.recs[:0], l.recs[done:]...)
		l.stallSince = time.Time{}
	} else if len(l.recs) > 0 {
		if l.stallSince.IsZero() {
			l.stallSince = time.Now()
		} else if time.Since(l.stallSince) > linkTimeout {
			return 0, 0, fmt.Errorf("%w: records of topic id %d and no topic map for %v", control.ErrProtocol, l.recs[0].Topic, linkTimeout)
		}
		stalled = true
	}
	l.populateAhead()
	if idle && l.r.Flush() {
		l.wbPending = true // idle: let the writer release what we consumed
	}
	if err := l.writeBack(); err != nil {
		return 0, 0, err
	}
	l.rails.wantCompl.Store(l.wbPending) // woken when the last write-back completed
	if l.wbPending && l.rails.done(0, l.wbPosted) {
		// The write-back in flight completed before the pumps were asked
		// to report it: no event will come, so write the head back now.
		return paceNow, 0, nil
	}
	finished := placing + done - len(l.placing)
	switch {
	case n > 0 || done > 0 || finished > 0:
		return paceNow, 0, nil
	case stalled:
		return paceWait, time.Millisecond, nil
	case len(l.placing) > 0 && l.placing[0].c != nil:
		return pacePoll, 0, nil // a device copy: its completion wakes nobody
	}
	return paceWait, linkIdle, nil // the rails and copy workers wake the link
}

// receive takes the records whose immediates the rails received, in ring
// order: each next from the rail that announces it (ring.Reader.NextRail;
// with one rail, as they come). It returns how many it took.
func (l *readerLink) receive() (int, error) {
	l.rails.drain(l.railImms)
	n := 0
	var err error
	for {
		for i, q := range l.railImms {
			if l.has[i] = l.railPos[i] < len(q); l.has[i] {
				l.heads[i] = q[l.railPos[i]]
			}
		}
		var i int
		if i, err = l.r.NextRail(l.heads, l.has); err != nil || i < 0 {
			break
		}
		imm := l.railImms[i][l.railPos[i]]
		l.railPos[i]++
		var rec ring.Record
		if rec, err = l.r.OnImmediate(imm); err != nil {
			break
		}
		l.recs = append(l.recs, rec)
		n++
	}
	for i, q := range l.railImms {
		l.railImms[i] = q[:copy(q, q[l.railPos[i]:])]
		l.railPos[i] = 0
	}
	return n, err
}

// writeBack sends the newest Head, keeping at most one write-back in
// flight (shm orders only send after send).
func (l *readerLink) writeBack() error {
	if !l.wbPending {
		return nil
	}
	if !l.rails.done(0, l.wbPosted) {
		return nil // the previous one is still in flight
	}
	buf := l.wb.Bytes()[:ring.WordSize]
	l.r.PutHead(buf)
	l.rails.fence()
	l.wbPosted = l.rails.push(0, railWrite{src: buf, reg: l.wb, remote: l.headRemote})
	l.wbPending = false
	l.stats.WriteBack.Add(1)
	return nil
}

// topic returns the delivery state of a mapped topic, creating its
// bridge publisher with the QoS the writer's publishers offer, on the GPU
// when local readers of the topic use the GPU and this host has one.
func (l *readerLink) topic(m *topicMap) *inTopic {
	q, _ := qos.Decode(m.QoS)
	if t := l.pubs[m.Topic]; t != nil && t.typ == m.Type && t.q == q {
		return t
	} else if t != nil {
		if t.loan != nil {
			t.loan.Discard()
		}
		if t.pub != nil {
			t.pub.Close()
		}
	}
	t := &inTopic{name: m.Topic, typ: m.Type, q: q}
	l.b.noteBurst()
	if _, ok := l.pubs[m.Topic]; !ok && len(l.pubs) >= MaxTopicsPerPeer {
		// Each topic is a publisher (a shared-memory segment) here.
		t.err = fmt.Errorf("%w: ring %d delivers %d topics already, at most %d", ErrLimit, l.id, len(l.pubs), MaxTopicsPerPeer)
		l.b.refusals.Log(slog.LevelWarn, "topic from another host refused: its messages are dropped", "peer", l.host, "topic", m.Topic, "err", t.err)
		return t
	}
	mem := zerocopy.MemoryHost
	if l.b.localInterest(m.Topic).GPU {
		if _, err := l.b.dom.GPU(); err == nil {
			mem = zerocopy.MemoryGPU
			l.pinRing()
		}
	}
	pub, err := l.b.dom.NewPublisher(zerocopy.EndpointSpec{Topic: m.Topic, Type: m.Type, Node: BridgeNode, QoS: q, Memory: mem, Republish: true})
	if err != nil {
		l.b.log.Error("cannot deliver a topic from another host: its messages are dropped", "topic", m.Topic, "type", m.Type, "err", err)
		t.err = err
	} else {
		t.pub = pub
		l.b.log.Info("delivering topic", "peer", l.host, "ring", l.id, "topic", m.Topic, "memory", mem.String())
	}
	l.pubs[m.Topic] = t
	return t
}

// populateStep is how far ahead of the records the ring is faulted in
// once a stream runs (populateAhead).
const populateStep = 4 << 20

// populateAhead faults the ring in ahead of the records, populateStep at a
// time and in goroutines of their own, once more than populateStep has
// gone through it, until it has wrapped once: its pages would otherwise be
// faulted in one at a time as records land in them, on the pumps' time (a
// page fault per 4 KiB cost the first pass of a 4 KiB stream several per
// cent of its throughput on the 2-core VM). Populating changes no byte
// (transport.Populate), so records may land meanwhile. A ring that has
// carried less than populateStep is as resident as it was written.
func (l *readerLink) populateAhead() {
	if l.populatedTo == 0 {
		l.populatedTo = populateStep // the first step is faulted in as written
	}
	if l.populatedTo >= l.cfg.Size || l.r.Head()+populateStep/2 < l.populatedTo || l.unpin != nil {
		return
	}
	from, to := l.populatedTo, min(l.populatedTo+populateStep, l.cfg.Size)
	l.populatedTo = to
	ring := l.mem.Bytes()[from:to]
	l.populating.Add(1)
	go func() {
		defer l.populating.Done()
		if err := transport.Populate(ring); err != nil {
			l.b.log.Debug("populating the ring", "peer", l.host, "ring", l.id, "err", err)
		}
	}()
}

// pinRing page-locks the ring for the GPU, once, before the first
// device loan is filled from it: copies out of pinned memory run at
// full DMA speed (an unpinned ring works, slower). It faults the whole
// ring in. Records may land meanwhile: pinning moves no page.
func (l *readerLink) pinRing() {
	if l.unpin != nil || l.mem == nil {
		return
	}
	unpin, err := l.b.dom.PinHost(l.mem.Bytes())
	if err != nil {
		l.b.log.Warn("pinning the ring for device copies (they run from pageable memory)", "peer", l.host, "ring", l.id, "err", err)
		return
	}
	l.unpin = unpin
}

func (l *readerLink) loan(t *inTopic, size uint64) (*zerocopy.Loan, error) {
	if t.pub.Topic().PoolKind() == zerocopy.PoolGPU && t.pub.Memory() == zerocopy.MemoryGPU {
		return t.pub.LoanDevice(int(size))
	}
	return t.pub.Loan(int(size))
}

// close gives up what is being placed and releases what the link owns
// (the endpoint is closed already).
func (l *readerLink) close(from linkState) {
	if from == linkOffered {
		l.ln.Close()
	}
	if l.cp != nil {
		// Every copy ends before the loans it writes go back (Discard
		// would wait for them one by one otherwise; the publishers' Close
		// would not).
		if err := l.cp.Close(); err != nil {
			l.b.log.Error("waiting for placement copies", "peer", l.host, "ring", l.id, "err", err)
		}
	}
	if l.workers != nil {
		l.workers.stop() // every copy ends before the loans it writes go back
	}
	for i := range l.placing {
		if p := &l.placing[i]; p.loan != nil {
			p.loan.Discard()
		}
	}
	for _, t := range l.pubs {
		if t.loan != nil {
			t.loan.Discard()
		}
		if t.pub != nil {
			t.pub.Close()
		}
	}
	if l.unpin != nil {
		l.unpin()
	}
	if l.wb != nil {
		l.wb.Close()
	}
	if l.mem != nil {
		l.populating.Wait() // before the ring is unmapped
		l.mem.Close()
	}
}
