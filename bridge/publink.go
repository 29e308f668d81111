package bridge

import (
	"errors"
	"fmt"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Layout of a writer's registered memory (local): the DelayedHead word the
// reader writes back into, the rails' hello words (8 bytes each, §3.7
// "Rails"), then per in-flight record a header slot followed by the meta
// length word (a message's first record, when it carries meta: written
// with the header, §3.7), a pad header slot (write-twice) and a tail word
// (write-twice), 64 bytes each.
const (
	wHeadOff  = 0
	wHelloOff = 64
	wSlotsOff = 4096
	wPadOff   = 2 * ring.HeaderSize // in a slot
	wTailOff  = 3 * ring.HeaderSize // in a slot
	wSlotSize = 4 * ring.HeaderSize
	wLocalLen = wSlotsOff + maxInFlight*wSlotSize
)

// BridgeNode is the node name the bridge's endpoints carry.
const BridgeNode = "/_rgaps_bridge"

// writerLink is the writer role of a link (link.go): the publish manager
// of one ring. It takes samples from bridge subscriptions of the topics
// the remote host wants, and writes them into the remote ring one-sidedly
// (header and payload straight from the shared pool, no copy), keeping
// each sample until the remote Head has passed its last record. A GPU
// topic on a host with a GPU is read in its device form (the publisher
// makes no host copy for the bridge): the link stages each record's
// payload itself, with an asynchronous device-to-host copy into a pinned
// staging slot, and posts the record when its copy is done, while the
// copies of the next records proceed (linkstage.go). Its subscriptions are
// opened and retired as the wanted topics change in every state, so
// messages for a peer that is away keep queueing.
type writerLink struct {
	link

	// The link's goroutine owns everything below. w, local and stg are
	// made on first need and kept across links: a ring writer from the
	// first offer answered, the registered header slots and DelayedHead
	// word, the staging slots.
	epoch       uint64 // this writer's instance: a restarted daemon has another
	readerEpoch uint64
	cfg         ring.Config
	w           *ring.Writer
	ctl         *control.Conn // the connection the answered offer came on
	remote      transport.RemoteRegion
	tailOff     uint64
	local       transport.Region
	slotCtr     uint64
	topics      map[string]*outTopic
	byID        map[uint32]*outTopic
	order       []*outTopic // round robin
	rr          int
	nextID      uint32
	curWant     map[string]wantedTopic
	fl          []flight // committed (or to resend) records, oldest first
	fh          int      // first live flight
	ackTo       int      // flights before it are acknowledged (released from fh on, once their writes completed)
	rs          int      // first flight still to (re)send after a rewind
	ss          int      // first flight to resend not yet looked at for staging (≥ rs)
	cur         *message // message being written (nil: none)
	pend        []flight // staged chunks of cur not yet posted, in order
	stg         *staging // device payload staging
	acked       []ring.Record
	ws          []railWrite // a record's writes, reused
	copying     bool        // the last pass waited for a staging copy
	needCompl   bool        // the last pass waited for a rail's completions
}

// writerPoll: a writer with writes moving (software providers move bytes
// only while polled) or waiting for ring room polls closely.
var writerPoll = pollPolicy{yields: 256, step: 5 * time.Microsecond, most: 100 * time.Microsecond}

// outTopic is one topic a writer carries: its bridge subscription and the
// registration of its pool.
type outTopic struct {
	id        uint32
	name, typ string
	want      wantedTopic
	sub       *zerocopy.Subscription
	reg       transport.Region
	gpu       bool // the subscription reads the device form: payloads are staged
	seq       uint64
	announced bool // topic map sent to the current reader
	removing  bool
	// drain is how many more samples a removing topic may still forward:
	// what its queue can hold when it is retired, so that the messages a
	// publisher left behind (it closed, so the topic is no longer wanted)
	// still cross, while a topic whose publishers keep publishing into the
	// retired subscription (its QoS changed) is closed after that many.
	drain int
	refs  int // flights and the current message using it
}

// flight is one committed record: what it carries, so it can be written
// again after a link failure, and the sample to return once acknowledged.
type flight struct {
	ot      *outTopic
	smp     *zerocopy.Sample
	hdr     ring.Header
	off     uint64 // offset of the record's bytes in the message's byte stream
	prefix  uint64 // the message's meta prefix (ring.MetaPrefix): its payload starts there
	lastRec bool
	slot    int // staging slot + 1 holding the payload copy; 0: none (yet)
	// rail and posted: the rail the record's writes went on and its write
	// count after them (0: not posted on the current link).
	rail   int
	posted uint64
}

// message is a sample being written, chunk by chunk.
type message struct {
	ot     *outTopic
	smp    *zerocopy.Sample
	size   uint64 // its byte stream: meta prefix, then payload
	prefix uint64 // ring.MetaPrefix of the sample's meta
	chunks uint32
	next   uint32 // next chunk to post
	seq    uint64
	plan   ring.Chunking
	stage  bool   // its payload goes through staging slots
	staged uint32 // chunks whose staging copy was started (≥ next)
}

// newWriterLink creates the writer link of a ring the peer offers and
// starts its goroutine. Must hold b.mu.
func (b *Bridge) newWriterLocked(p *peer, id uint32, only string) *writerLink {
	l := &writerLink{epoch: randomEpoch(), topics: map[string]*outTopic{}, byID: map[uint32]*outTopic{}, nextID: 1}
	l.init(b, p, id, only, l, writerPoll)
	p.writers[id] = l
	b.wg.Add(1)
	go l.run()
	return l
}

// setWanted replaces the topics the link should carry. Called with b.mu
// held.
func (l *writerLink) setWanted(w map[string]wantedTopic) {
	l.mb.post(func(in *inbox) { in.want, in.wantSet = w, true })
}

// reannounce asks the link to send its topic maps again (peerDown: a
// control connection died while another keeps the peer up).
func (l *writerLink) reannounce() {
	l.mb.post(func(in *inbox) { in.reannounce = true })
}

// answer hands the link a reader's offer to answer.
func (l *writerLink) answer(o *ringOffer, cfg ring.Config, ctl *control.Conn) {
	l.mb.post(func(in *inbox) { in.answer = &pendingOffer{o: *o, cfg: cfg, ctl: ctl} })
}

func (l *writerLink) kind() string { return "writer" }

func (l *writerLink) control() *control.Conn { return l.ctl }

func (l *writerLink) start(*ringAccept) error {
	return errors.New("a writer takes no accept") // not routed here: only readers get them
}

// down: the rails are closed, so their writes are over: acknowledged
// records are released; what is still to send is sent again on the next
// link (open resets the staging slots).
func (l *writerLink) down(linkState) {
	l.release()
	for i := l.fh; i < len(l.fl); i++ {
		l.fl[i].posted = 0
	}
}

// onDoze hands the link a reader's doze (railidle.go); one about another
// link is dropped.
func (l *writerLink) onDoze(m *dozeMsg) {
	l.mb.postAbout(m.Offer, false, func(in *inbox) { in.addDoze(*m) })
}

// apply opens and retires bridge subscriptions as the wanted topics
// change, in every state, and applies the reader's dozes.
func (l *writerLink) apply(in *inbox) {
	if l.rails != nil {
		for _, d := range in.dozes {
			l.rails.dozes(d.Rail, d.Seq, d.Imms)
		}
	}
	if in.reannounce && l.state == linkUp {
		// Records of these topics may wait at the reader for a map that
		// was lost with the dead connection.
		for _, ot := range l.topics {
			if ot.announced {
				ot.announced = false
				if err := l.announce(ot); err != nil {
					l.fail(err, true, true)
					break
				}
			}
		}
	}
	if in.wantSet {
		l.curWant = in.want
		l.applyWanted()
	} else if l.collect() {
		l.applyWanted()
	}
}

// waitables: the subscriptions, when up and free to take a new sample.
func (l *writerLink) waitables(items []zerocopy.Waitable) []zerocopy.Waitable {
	if l.state == linkUp && l.cur == nil && l.rs == len(l.fl) {
		for _, ot := range l.order {
			if !ot.removing || ot.drain > 0 {
				items = append(items, ot.sub)
			}
		}
	}
	return items
}

func (l *writerLink) inFlight() int { return len(l.fl) - l.fh }

// open answers an offer: down → connected → up. A new reader (its epoch
// changed: the remote daemon restarted) or new ring parameters get a fresh
// ring writer and every unacknowledged record is written again from
// position 0; the same reader gets the records after its Head.
func (l *writerLink) open(in *inbox) error {
	p := in.answer
	// The old endpoint's writes are gone: every staging slot is free, and
	// what is still to send is staged again (the slots' contents may be
	// reused before it is).
	l.resetStaging()
	if l.stg != nil && l.stg.size < stageSlotSize(p.cfg) {
		l.dropStaging() // the new reader's records are larger
	}
	if l.local == nil {
		reg, err := l.b.prov.Alloc(wLocalLen)
		if err != nil {
			return fmt.Errorf("registering the writer's memory: %w", err)
		}
		l.local = reg
	}
	o := &p.o
	// The reader's Head counts another writer instance's stream: this
	// daemon restarted and the reader offered again before it took our
	// accept. It starts afresh on our next accept, and so does the writer.
	otherWriter := o.HeadWriter != 0 && o.HeadWriter != l.epoch
	if l.w == nil || o.ReaderEpoch != l.readerEpoch || p.cfg != l.cfg || otherWriter {
		switch {
		case l.w == nil:
		case otherWriter && o.ReaderEpoch == l.readerEpoch && p.cfg == l.cfg:
			l.b.log.Info("the reader has not taken this writer's accept yet: the ring starts again at 0",
				"peer", l.host, "ring", l.id, "unacknowledged", l.inFlight())
		default:
			l.b.log.Warn("remote reader restarted: unacknowledged messages are written again (the reader lost its duplicate state)",
				"peer", l.host, "ring", l.id, "unacknowledged", l.inFlight())
		}
		w, err := ring.NewWriter(p.cfg)
		if err != nil {
			return err
		}
		l.w, l.cfg, l.readerEpoch = w, p.cfg, o.ReaderEpoch
		l.restartMessage()
	} else {
		if o.Head != l.w.DelayedHead() {
			if err := l.w.OnHeadUpdate(o.Head); err != nil {
				return fmt.Errorf("%w: resync head: %v", ErrBadOffer, err)
			}
		}
		l.ack()
		l.w.Rewind(nil)
	}
	// Every topic's map goes again before its next record: one sent on a
	// control connection that died since may be lost.
	for _, ot := range l.topics {
		ot.announced = false
	}
	l.rs = l.fh // everything not acknowledged is written again
	l.ss = l.rs
	mem := l.local.Bytes()
	l.w.ResetHeadWord(mem[wHeadOff:])
	l.setOffer(o.Offer)
	l.ctl, l.remote, l.tailOff = p.ctl, o.Region.remote(), o.TailOff
	eps, err := dialRails(l.b.prov, o.Addr, p.cfg.Rails, l.local, mem[wHelloOff:wHelloOff+ring.MaxRails*ring.WordSize], l.remote, o.TailOff+ring.HelloOffset)
	if err != nil {
		return err
	}
	l.eps = eps
	l.enter(linkConnected)
	hr := toRegion(l.local.Desc())
	hr.Len = ring.WordSize
	if !l.b.send(l.ctl, msgRingAccept, ringAccept{Ring: l.id, ReaderEpoch: o.ReaderEpoch, WriterEpoch: l.epoch, HeadRegion: hr, Restart: l.w.Tail(), Offer: o.Offer}) {
		return errors.New("control connection lost while accepting the ring")
	}
	offer, ctl := l.offerNo, l.ctl
	l.startRails(false, mem[wHeadOff:wHeadOff+ring.WordSize], railBell{ring: func(rail int, seq uint64) {
		// On the peer's newest connection: the offer's may be gone while
		// another keeps the peer up (the wake names its link by offer).
		c := l.p.live.Load()
		if c == nil {
			c = ctl
		}
		l.b.send(c, msgWake, wakeMsg{Ring: l.id, Offer: offer, Rail: rail, Seq: seq})
	}})
	l.enter(linkUp)
	l.b.log.Info("data link up (writer)", "peer", l.host, "ring", l.id, "topic", l.only, "rails", len(eps), "restart", l.w.Tail(), "resend", len(l.fl)-l.rs)
	l.prepareStaging()
	return nil
}

// restartMessage makes a new reader's first record a message's first
// chunk: when the oldest unacknowledged record is a later chunk (the old
// reader acknowledged the first ones), the flights of the earlier chunks
// are put back in front of it. When every record is acknowledged but the
// current message has chunks posted (the old reader acknowledged them
// while the writer waited, for ring room or a staging copy), that message
// starts again at its first chunk.
func (l *writerLink) restartMessage() {
	if l.fh == len(l.fl) {
		if m := l.cur; m != nil && m.next > 0 {
			// open's resetStaging left nothing staged (l.pend is empty);
			// the chunks are staged again from the still-held sample,
			// and the message keeps its own reference to the topic.
			m.next, m.staged = 0, 0
		}
		return
	}
	first := l.fl[l.fh]
	if first.hdr.Chunk == 0 {
		return
	}
	var pre []flight
	for c := uint32(0); c < first.hdr.Chunk; c++ {
		// Chunk boundaries come from the message's own first chunk: every
		// chunk but the last carries the same payload length.
		n := first.off / uint64(first.hdr.Chunk)
		h := first.hdr
		h.Chunk, h.PayloadLen = c, n
		pre = append(pre, flight{ot: first.ot, smp: first.smp, hdr: h, off: uint64(c) * n, prefix: first.prefix})
		first.ot.refs++
	}
	rest := append([]flight(nil), l.fl[l.fh:]...)
	l.fl = append(pre, rest...)
	l.fh, l.rs, l.ackTo = 0, 0, 0
}

// applyWanted opens bridge subscriptions for wanted topics that have none
// and retires the ones no longer wanted (or whose QoS must change: the new
// subscription is opened once the old one has drained).
func (l *writerLink) applyWanted() {
	l.b.noteBurst()
	for name, ot := range l.topics {
		w, ok := l.curWant[name]
		removing := !ok || w != ot.want
		if removing && !ot.removing {
			ot.drain = drainBound(ot.want.subQoS)
		}
		ot.removing = removing
	}
	l.collect()
	for name, w := range l.curWant {
		if _, ok := l.topics[name]; ok {
			continue
		}
		spec := zerocopy.EndpointSpec{Topic: name, Type: w.typ, Node: BridgeNode, QoS: w.subQoS, Republish: true}
		gpu := l.devicePool(name)
		if gpu {
			spec.Memory = zerocopy.MemoryGPU
		}
		sub, err := l.b.dom.NewSubscription(spec)
		if err != nil && gpu {
			l.b.log.Warn("bridge subscription of a GPU topic in device form failed: reading host copies", "topic", name, "err", err)
			spec.Memory, gpu = zerocopy.MemoryHost, false
			sub, err = l.b.dom.NewSubscription(spec)
		}
		if err != nil {
			l.b.log.Warn("bridge subscription", "topic", name, "err", err)
			continue
		}
		gpu = (gpu && sub.Topic().PoolKind() == zerocopy.PoolGPU) || stageHook != nil
		var reg transport.Region
		if pool := sub.HostPool(); !gpu || len(pool) > 0 {
			// A device topic's host copies (made for local host readers)
			// are sent from where they lie, like a host topic's samples.
			if reg, err = l.b.prov.Register(pool); err != nil {
				sub.Close()
				l.b.log.Warn("registering the topic pool", "topic", name, "err", err)
				continue
			}
		}
		ot := &outTopic{id: l.nextID, name: name, typ: w.typ, want: w, sub: sub, reg: reg, gpu: gpu}
		l.nextID++
		l.topics[name] = ot
		l.byID[ot.id] = ot
		l.order = append(l.order, ot)
		l.b.log.Info("forwarding topic", "peer", l.host, "ring", l.id, "topic", name, "reliability", w.subQoS.Reliability.String(), "durability", w.subQoS.Durability.String(), "memory", spec.Memory.String())
		if gpu {
			l.prepareStaging()
		}
	}
}

// devicePool reports whether a topic has a GPU pool (its endpoints say
// so) and this host a GPU: then the bridge subscription reads the
// device form, so that the publisher makes no host copy for the bridge,
// and the link stages the payloads itself, overlapped with the transfer.
func (l *writerLink) devicePool(name string) bool {
	eps, err := l.b.dom.Endpoints(name)
	if err != nil {
		return false
	}
	pool := false
	for _, ep := range eps {
		if ep.Pool == zerocopy.PoolGPU {
			pool = true
			break
		}
	}
	if !pool {
		return false
	}
	_, err = l.b.dom.GPU()
	return err == nil
}

// drainBound is how many samples a bridge subscription of QoS q can hold
// queued.
func drainBound(q qos.Profile) int {
	if q.History == qos.HistoryKeepAll || q.Depth == 0 {
		return 1024 // the engine's default queue capacity
	}
	return int(q.Depth)
}

// collect closes retired topics nobody uses any more and with nothing left
// to drain; it reports whether it closed any (a wanted topic may then be
// opened again).
func (l *writerLink) collect() bool {
	closed := false
	for name, ot := range l.topics {
		if !ot.removing || ot.refs > 0 || (ot.drain > 0 && ot.sub.Ready()) {
			continue
		}
		if ot.reg != nil {
			ot.reg.Close()
		}
		ot.sub.Close()
		delete(l.topics, name)
		delete(l.byID, ot.id)
		for i, x := range l.order {
			if x == ot {
				l.order = append(l.order[:i], l.order[i+1:]...)
				break
			}
		}
		closed = true
	}
	return closed
}

// ack applies the head the reader wrote back: the records it passed are
// acknowledged, and released (release).
func (l *writerLink) ack() {
	l.acked = l.w.Acked(l.acked[:0])
	l.ackTo += len(l.acked)
	l.release()
}

// release is done with acknowledged records whose writes also completed
// here (the peer has the bytes, so they will; the wait makes the pump's
// last use of the sample happen before its return): a sample is returned
// with its last record. It reports whether it released any.
func (l *writerLink) release() bool {
	from := l.fh
	for l.fh < l.ackTo {
		f := &l.fl[l.fh]
		if f.posted != 0 && l.rails != nil && !l.rails.done(f.rail, f.posted) {
			l.needCompl = true // woken when it completes
			break
		}
		if f.lastRec {
			f.smp.Return()
			l.stats.Messages.Add(1)
		}
		f.ot.refs--
		if f.slot != 0 { // cannot happen: only committed records are acknowledged
			l.stg.slots[f.slot-1].state = slotFree
		}
		*f = flight{}
		l.fh++
		if l.rs < l.fh {
			l.rs = l.fh
		}
		if l.ss < l.fh {
			l.ss = l.fh
		}
	}
	released := l.fh != from
	if l.fh > 1024 && l.fh*2 > len(l.fl) {
		n := copy(l.fl, l.fl[l.fh:])
		l.rs -= l.fh
		l.ss -= l.fh
		l.ackTo -= l.fh
		l.fl = l.fl[:n]
		l.fh = 0
	}
	return released
}

// pump is one pass while up: after progress another pass at once; while
// a staging copy runs, close polling (the engine's completions wake
// nobody); otherwise a wait for a sample, a request or what the rails
// bring (a head write-back, completions the link waits for), which wake
// the link (rails.go): a short one while data waits for ring room or
// samples for their acknowledgement.
func (l *writerLink) pump() (pace, time.Duration, error) {
	progressed, blocked, err := l.move()
	switch {
	case err != nil:
		return 0, 0, err
	case progressed:
		return paceNow, 0, nil
	case blocked && l.copying:
		return pacePoll, 0, nil
	case blocked || l.inFlight() > 0:
		return paceWait, 10 * time.Millisecond, nil
	}
	return paceWait, linkIdle, nil
}

// move applies head updates, writes what can be written. progressed:
// something moved; blocked: data is waiting for ring space, in-flight room
// or a staging copy (copying).
func (l *writerLink) move() (progressed, blocked bool, err error) {
	if err := l.rails.err(); err != nil {
		return false, false, err
	}
	l.rails.begin()
	l.copying, l.needCompl = false, false
	if h := l.rails.value.Load(); h != l.w.DelayedHead() {
		if err := l.w.OnHeadUpdate(h); err != nil {
			return false, false, fmt.Errorf("head write-back: %w", err)
		}
		l.ack()
		if l.collect() {
			l.applyWanted()
		}
		progressed = true
	} else if l.fh < l.ackTo && l.release() {
		progressed = true
	}
	defer func() {
		l.rails.setBusy(l.inFlight() > 0)
		l.rails.wantCompl.Store(l.needCompl)
	}()
	// Records to write again after a link failure come first, in order.
	for l.rs < len(l.fl) {
		if err := l.announce(l.fl[l.rs].ot); err != nil {
			return progressed, false, err
		}
		// A staged payload is staged again (the slot may hold other
		// bytes by now) and posted once its copy is done.
		if err := l.stageAhead(); err != nil {
			return progressed, false, err
		}
		if ok, err := l.payloadReady(&l.fl[l.rs]); err != nil || !ok {
			l.copying = err == nil
			return progressed, err == nil, err
		}
		ok, err := l.post(&l.fl[l.rs])
		if err != nil || !ok {
			return progressed, !ok, err
		}
		l.stats.Resent.Add(1)
		l.rs++
		progressed = true
	}
	for budget := 64; budget > 0; budget-- {
		if l.cur == nil && !l.next() {
			return progressed, false, nil
		}
		ok, err := l.writeChunk()
		if err != nil {
			return progressed, false, err
		}
		if !ok {
			return progressed, true, nil
		}
		progressed = true
	}
	return progressed, false, nil
}

// next takes the next sample, round robin over the topics. It reports
// whether there is a current message.
func (l *writerLink) next() bool {
	for i := 0; i < len(l.order); i++ {
		ot := l.order[(l.rr+i)%len(l.order)]
		if ot.removing && ot.drain <= 0 {
			continue
		}
		smp, err := ot.sub.Take()
		if err != nil {
			continue // no data, or all our holds in use until acks come
		}
		if ot.removing {
			ot.drain--
		}
		l.rr = (l.rr + i + 1) % len(l.order)
		prefix := ring.MetaPrefix(len(smp.Meta()))
		size := prefix + uint64(smp.Size())
		plan, err := l.w.Split(size, l.cfg.Rails, minStripe)
		if err != nil {
			l.b.log.Error("message refused", "topic", ot.name, "size", size, "err", err)
			l.stats.Dropped.Add(1)
			smp.Return()
			continue
		}
		ot.seq++
		ot.refs++
		l.cur = &message{ot: ot, smp: smp, size: size, prefix: prefix, chunks: plan.Count, plan: plan, seq: ot.seq, stage: stages(ot, smp)}
		return true
	}
	return false
}

// announce tells the reader which topic an id stands for, once per
// reader, before the first record with that id.
func (l *writerLink) announce(ot *outTopic) error {
	if ot.announced {
		return nil
	}
	c := l.p.live.Load() // the newest connection; the map's order against the data does not matter
	if c == nil {
		c = l.ctl
	}
	if !l.b.send(c, msgTopicMap, topicMap{Ring: l.id, ReaderEpoch: l.readerEpoch, WriterEpoch: l.epoch, ID: ot.id, Topic: ot.name, Type: ot.typ, QoS: encodeQoS(ot.want.pubQoS)}) {
		return errors.New("control connection lost")
	}
	ot.announced = true
	return nil
}

// close returns every held sample and closes what the link owns (the
// endpoint is closed already).
func (l *writerLink) close(linkState) {
	if l.stg != nil {
		// Staging copies may still read held samples.
		if err := l.stg.cp.wait(); err != nil {
			l.b.log.Error("waiting for staging copies", "peer", l.host, "ring", l.id, "err", err)
		}
	}
	for i := l.fh; i < len(l.fl); i++ {
		if f := &l.fl[i]; f.lastRec {
			f.smp.Return()
		}
	}
	if l.cur != nil {
		l.cur.smp.Return() // no flight of it has lastRec yet
	}
	l.fl, l.fh, l.rs, l.ss, l.ackTo, l.cur, l.pend = nil, 0, 0, 0, 0, nil, nil
	for _, ot := range l.topics {
		ot.refs, ot.removing, ot.drain = 0, true, 0
	}
	l.collect()
	l.dropStaging()
	if l.local != nil {
		l.local.Close()
	}
}
