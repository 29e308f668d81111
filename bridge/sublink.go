package bridge

import (
	"errors"
	"fmt"
	"log/slog"
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
	imms        []uint64
	stallSince  time.Time
	wbPending   bool
	wbPosted    uint64 // transport writes posted when the last write-back went out
	placing     []placing
	cp          *zerocopy.Copier // asynchronous copies into device loans; made on first need
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
	l := &readerLink{epoch: randomEpoch(), topics: map[uint32]*inTopic{}, pubs: map[string]*inTopic{}, imms: make([]uint64, 256)}
	l.init(b, p, p.nextRing, only, l, readerPoll)
	l.mb.maps = map[uint32]topicMap{}
	p.readers[l.id] = l
	b.wg.Add(1)
	go l.run()
	return l.reoffer
}

// reoffer asks the link to offer its ring (again): the peer is up.
func (l *readerLink) reoffer() { l.mb.post(func(in *inbox) { in.reoffer = true }) }

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
			l.mb.mu.Unlock()
			return fmt.Errorf("%w: topic map of ring %d: id %d is older than the %d kept", ErrLimit, m.Ring, m.ID, MaxTopicsPerPeer)
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
		cfg, err := ring.Config{Size: b.opts.RingSize, MaxChunk: b.opts.MaxChunk, NoChunking: b.opts.NoChunking,
			Mode: b.opts.Mode, Watermark: b.opts.Watermark}.Validate()
		if err != nil {
			return err
		}
		mem, err := b.prov.Alloc(int(cfg.Size) + ring.Align)
		if err != nil {
			return fmt.Errorf("registering the ring: %w", err)
		}
		wb, err := b.prov.Alloc(64)
		if err != nil {
			mem.Close()
			return fmt.Errorf("registering the write-back word: %w", err)
		}
		l.cfg, l.mem, l.wb = cfg, mem, wb
		if unpin, err := b.dom.PinHost(mem.Bytes()); err == nil {
			l.unpin = unpin // GPU present: copies out of the ring run at pinned speed
		} else {
			// Fault the pages in once now rather than on the first pass
			// of the writer (this is set-up, not the protocol's zeroing).
			rb := mem.Bytes()
			for i := 0; i < len(rb); i += 4096 {
				rb[i] = 0
			}
		}
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
	go l.acceptOne(ln, l.offers)
	var head uint64
	if l.r != nil {
		head = l.r.Head()
	}
	o := ringOffer{Ring: l.id, Topic: l.only, ReaderEpoch: l.epoch, Size: l.cfg.Size, MaxChunk: l.cfg.MaxChunk,
		Mode: uint8(l.cfg.Mode), Watermark: uint8(l.cfg.Watermark), CompactImm: l.cfg.CompactImm,
		Region: toRegion(l.mem.Desc()), TailOff: l.cfg.Size, Provider: b.prov.Name(), Addr: ln.Addr(), Head: head, Offer: l.offers,
		RingVersion: ring.Version}
	if !b.send(c, msgRingOffer, o) {
		return errors.New("no control connection to the peer")
	}
	return nil
}

// acceptOne takes the writer's connection to the listener of an offer
// and posts it; the link closes the listener earlier when it gives the
// offer up, and a connection that comes after is closed here.
func (l *readerLink) acceptOne(ln transport.Listener, offer uint64) {
	defer l.b.wg.Done()
	ep, err := ln.Accept()
	ln.Close()
	if !l.mb.postAbout(offer, false, func(in *inbox) { in.conn, in.connErr = ep, err }) && ep != nil {
		ep.Close()
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

// start applies the writer's accept: a new writer instance starts a fresh
// reader at position 0; the same writer resumes at its restart position
// (records received but not consumed are dropped; consumed ones it sends
// again are flagged duplicates).
func (l *readerLink) start(a *ringAccept) error {
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
	l.r.ResetTailSlot(l.mem.Bytes()[l.cfg.Size:]) // at the restart position
	l.recs = l.recs[:0]
	l.headRemote = a.HeadRegion.remote()
	l.wbPending, l.wbPosted = false, 0 // a new endpoint counts its writes from 0
	l.b.log.Info("data link up (reader)", "peer", l.host, "ring", l.id, "topic", l.only, "restart", a.Restart)
	return nil
}

// pump receives what landed, delivers it, and writes Head back. It
// polls on (pacePoll) when it found nothing, and waits a little when
// records wait for their topic map (it travels on the control connection
// and may come after the data).
func (l *readerLink) pump() (pace, time.Duration, error) {
	var n int
	var err error
	if l.cfg.Mode == ring.WriteImm {
		if n, err = l.ep.Poll(l.imms); err != nil {
			return 0, 0, err
		}
		for _, imm := range l.imms[:n] {
			rec, err := l.r.OnImmediate(imm)
			if err != nil {
				return 0, 0, err
			}
			l.recs = append(l.recs, rec)
		}
	} else {
		if _, err := l.ep.Poll(l.imms); err != nil {
			return 0, 0, err
		}
		before := len(l.recs)
		if l.recs, err = l.r.ReadTailSlot(l.mem.Bytes()[l.cfg.Size:], l.recs); err != nil {
			return 0, 0, err
		}
		n = len(l.recs) - before
	}
	idle := n == 0 && len(l.recs) == 0 && len(l.placing) == 0
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
	if idle && l.r.Flush() {
		l.wbPending = true // idle: let the writer release what we consumed
	}
	if err := l.writeBack(); err != nil {
		return 0, 0, err
	}
	switch {
	case idle:
		return pacePoll, 0, nil
	case stalled:
		return paceWait, time.Millisecond, nil
	}
	return paceNow, 0, nil
}

// writeBack sends the newest Head, keeping at most one write-back in
// flight (shm orders only send after send).
func (l *readerLink) writeBack() error {
	if !l.wbPending {
		return nil
	}
	st := l.ep.Stats()
	if st.Completions < l.wbPosted {
		return nil // the previous one is still in flight
	}
	buf := l.wb.Bytes()[:ring.WordSize]
	l.r.PutHead(buf)
	if err := l.ep.Write(buf, l.wb, l.headRemote, 0); err != nil {
		return err
	}
	l.wbPosted = st.Writes + 1
	l.wbPending = false
	l.stats.WriteBack.Add(1)
	return nil
}

// placing is a record being placed into the local pool: consumed (Head
// passes it) only once its copy is done, in ring order.
type placing struct {
	rec  ring.Record
	dup  bool
	t    *inTopic
	c    *zerocopy.Completion // the asynchronous host-to-device copy; nil: none
	last bool                 // completes its message
	size uint64               // the message's size, when last
	loan *zerocopy.Loan
	meta []byte // the message's meta, when last (nil: none)
	drop bool   // the message is dropped (no loan)
}

// deliver starts placing one record: a host loan gets a plain copy, a
// device loan an asynchronous host-to-device copy on the link's engine
// copier, so the transport keeps moving the next records meanwhile (finish
// consumes them when their copies completed). It returns false (nothing
// started) when the record's topic is not known yet: the topic map travels
// on the control connection and may come after the data.
func (l *readerLink) deliver(rec *ring.Record) (bool, error) {
	if rec.Dup {
		l.stats.Dups.Add(1)
		l.placing = append(l.placing, placing{rec: *rec, dup: true})
		return true, nil
	}
	t := l.topics[rec.Topic]
	if t == nil {
		l.mb.mu.Lock()
		m, ok := l.mb.maps[rec.Topic]
		l.mb.mu.Unlock()
		if !ok || m.WriterEpoch != l.writerEpoch {
			return false, nil // the map of this writer's id is on its way
		}
		t = l.topic(&m)
		l.topics[rec.Topic] = t
	}
	off, done, err := l.asm.Add(rec)
	if err != nil {
		return false, err
	}
	if rec.Chunk == 0 {
		t.dropping, t.prefix, t.meta = false, 0, nil
		if t.loan != nil { // cannot happen with a valid stream: Assembler refuses it
			t.loan.Discard()
			t.loan = nil
		}
		size, err := l.startMeta(t, rec)
		switch {
		case err != nil:
			l.b.refusals.Log(slog.LevelWarn, "bad meta in a message from another host: dropped", "peer", l.host, "topic", t.name, "err", err)
			t.dropping = true
		case t.pub == nil:
			t.dropping = true
		default:
			if ln, err := l.loan(t, size); err != nil {
				l.b.log.Warn("no room for a message from another host: dropped", "topic", t.name, "size", size, "err", err)
				t.dropping = true
			} else {
				t.loan = ln
			}
		}
	}
	p := placing{rec: *rec, t: t, last: done, drop: t.dropping}
	if done && off+rec.PayloadLen > t.prefix {
		p.size = off + rec.PayloadLen - t.prefix
	}
	if !t.dropping {
		src := l.r.Payload(rec)
		t.gatherMeta(off, src)
		if doff, data := payloadPart(off, t.prefix, src); len(data) > 0 {
			if t.loan.OnDevice() {
				if err := l.copyAsync(t.loan, doff, data, &p); err != nil {
					return false, fmt.Errorf("topic %s: placing a message on the GPU: %w", t.name, err)
				}
			} else if err := t.loan.CopyIn(int(doff), data); err != nil {
				return false, fmt.Errorf("topic %s: placing a message: %w", t.name, err)
			}
		}
	}
	if done {
		p.loan, p.meta, t.loan, t.meta, t.dropping = t.loan, t.meta, nil, nil, false
	}
	l.placing = append(l.placing, p)
	return true, nil
}

// copyAsync queues the copy of src (ring memory, pinned when there is a
// GPU) to the device loan at off on the link's copier. The loan keeps the
// completion too: publishing it waits for its own copies, not for the
// other links'.
func (l *readerLink) copyAsync(ln *zerocopy.Loan, off uint64, src []byte, p *placing) error {
	if l.cp == nil {
		cp, err := l.b.dom.NewCopier()
		if err != nil {
			return err
		}
		l.cp = cp
	}
	c, err := l.cp.CopyIn(ln, int(off), src)
	if err != nil {
		return err
	}
	p.c = c
	return nil
}

// finish consumes, in ring order, the records whose copies completed, and
// publishes the messages they complete. The last record of a message is
// consumed only after the message is published: a daemon killed in
// between makes the writer send it again rather than lose it. wait: wait
// for copies still running (link failure, shutdown).
func (l *readerLink) finish(wait bool) error {
	k := 0
	for ; k < len(l.placing); k++ {
		p := &l.placing[k]
		if p.c != nil {
			if !p.c.Done() && !wait {
				break
			}
			if err := p.c.Wait(); err != nil {
				return err
			}
			p.c = nil
		}
		if p.last {
			l.publish(p)
		}
		if err := l.consume(&p.rec); err != nil {
			// Consumed (the error is the head write-back's, on a link
			// that failed): it must not be consumed again.
			l.placing = append(l.placing[:0], l.placing[k+1:]...)
			return err
		}
	}
	l.placing = append(l.placing[:0], l.placing[k:]...)
	return nil
}

// publish publishes a placed message (or counts it dropped).
func (l *readerLink) publish(p *placing) {
	if p.drop || p.loan == nil {
		l.stats.Dropped.Add(1)
		return
	}
	ln := p.loan
	p.loan = nil
	if err := ln.Shrink(int(p.size)); err != nil {
		ln.Discard()
		l.stats.Dropped.Add(1)
		l.b.log.Warn("placing a message from another host", "topic", p.t.name, "err", err)
		return
	}
	if p.meta != nil {
		if err := ln.SetMeta(p.meta); err != nil {
			ln.Discard()
			l.stats.Dropped.Add(1)
			l.b.refusals.Log(slog.LevelWarn, "placing the meta of a message from another host", "peer", l.host, "topic", p.t.name, "err", err)
			return
		}
	}
	if err := ln.PublishAs(zerocopy.Origin{Timestamp: time.Unix(0, p.rec.Timestamp), GID: zerocopy.GID(p.rec.GID)}); err != nil {
		l.stats.Dropped.Add(1)
		l.b.log.Warn("publishing a message from another host", "topic", p.t.name, "err", err)
		return
	}
	l.stats.Messages.Add(1)
	l.stats.Bytes.Add(p.size)
}

func (l *readerLink) consume(rec *ring.Record) error {
	wb, err := l.r.Consume(rec)
	if err != nil {
		return err
	}
	l.stats.Records.Add(1)
	if wb {
		l.wbPending = true
		if l.state == linkUp { // else the next offer carries the Head
			return l.writeBack()
		}
	}
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
		l.mem.Close()
	}
}
