package bridge

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Layout of a writer's registered memory (local): the DelayedHead word the
// reader writes back into, then per in-flight record a header slot, a pad
// header slot (write-twice) and a tail word (write-twice).
const (
	wHeadOff  = 0
	wSlotsOff = 4096
	wSlotSize = 3 * ring.HeaderSize
	wLocalLen = wSlotsOff + maxInFlight*wSlotSize
)

// BridgeNode is the node name the bridge's endpoints carry.
const BridgeNode = "/_rgaps_bridge"

// pubLink is the publish manager of one ring: it takes samples from
// bridge subscriptions of the topics the remote host wants, and writes
// them into the remote ring one-sidedly (header and payload straight from
// the shared pool, no copy), keeping each sample until the remote Head
// has passed its last record. A GPU topic on a host with a GPU is read in
// its device form (the publisher makes no host copy for the bridge): the
// link stages each record's payload itself, with an asynchronous
// device-to-host copy into a pinned staging slot, and posts the record
// when its copy is done, while the copies of the next records proceed
// (see staging). One goroutine (run) owns everything below "goroutine
// state"; other goroutines talk to it through mu and wake.
type pubLink struct {
	b    *Bridge
	host string
	id   uint32
	only string // per-topic ring: its topic

	wake *zerocopy.GuardCondition

	// mu guards the requests below.
	mu        sync.Mutex
	nextOffer *pendingOffer
	want      map[string]wantedTopic
	wantGen   uint64
	downNote  string
	downOffer uint64
	stopped   bool

	// goroutine state
	epoch       uint64 // this writer's instance: a restarted daemon has another
	readerEpoch uint64
	offerNum    uint64 // the reader's offer the current link answers
	cfg         ring.Config
	w           *ring.Writer
	ep          transport.Endpoint
	ctl         *control.Conn
	remote      transport.RemoteRegion
	tailOff     uint64
	local       transport.Region
	slotCtr     uint64
	topics      map[string]*outTopic
	byID        map[uint32]*outTopic
	order       []*outTopic // round robin
	rr          int
	nextID      uint32
	seenWant    uint64
	curWant     map[string]wantedTopic
	fl          []flight // committed (or to resend) records, oldest first
	fh          int      // first live flight
	rs          int      // first flight still to (re)send after a rewind
	ss          int      // first flight to resend not yet looked at for staging (≥ rs)
	cur         *message // message being written
	pend        []flight // staged chunks of cur not yet posted, in order
	stg         *staging // device payload staging, set up on first need
	acked       []ring.Record
	imms        [4]uint64
	spins       int // idle polls in a row

	stats LinkStats
}

// LinkStats are a link's counters.
type LinkStats struct {
	Messages  atomic.Uint64 // messages written (writer) or delivered (reader)
	Bytes     atomic.Uint64 // payload bytes
	Records   atomic.Uint64
	Resent    atomic.Uint64 // records written again after a link failure
	Dropped   atomic.Uint64 // BEST_EFFORT messages dropped at a full ring; refused messages
	Dups      atomic.Uint64 // duplicates suppressed (reader)
	Failures  atomic.Uint64 // data-link failures
	WriteBack atomic.Uint64 // head write-backs (reader)
}

type pendingOffer struct {
	o   ringOffer
	cfg ring.Config
	ctl *control.Conn
}

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
	refs      int // flights and the current message using it
}

// flight is one committed record: what it carries, so it can be written
// again after a link failure, and the sample to return once acknowledged.
type flight struct {
	ot      *outTopic
	smp     *zerocopy.Sample
	hdr     ring.Header
	off     uint64 // payload offset in the message
	lastRec bool
	slot    int // staging slot + 1 holding the payload copy; 0: none (yet)
}

// message is a sample being written, chunk by chunk.
type message struct {
	ot     *outTopic
	smp    *zerocopy.Sample
	chunks uint32
	next   uint32 // next chunk to post
	seq    uint64
	stage  bool   // its payload goes through staging slots
	staged uint32 // chunks whose staging copy was started (≥ next)
}

func newPubLink(b *Bridge, host string, id uint32, only string) *pubLink {
	return &pubLink{b: b, host: host, id: id, only: only, wake: b.dom.NewGuardCondition(), epoch: randomEpoch(),
		topics: map[string]*outTopic{}, byID: map[uint32]*outTopic{}, nextID: 1}
}

// setWanted replaces the topics the link should carry. Called with b.mu
// held; takes only l.mu.
func (l *pubLink) setWanted(w map[string]wantedTopic) {
	l.mu.Lock()
	l.want = w
	l.wantGen++
	l.mu.Unlock()
	l.wake.Trigger()
}

func (l *pubLink) offer(o *ringOffer, cfg ring.Config, ctl *control.Conn) {
	l.mu.Lock()
	l.nextOffer = &pendingOffer{o: *o, cfg: cfg, ctl: ctl}
	l.mu.Unlock()
	l.wake.Trigger()
}

// linkDown tears the data link down; offer, when not 0, names the link
// (its offer number): a note about an earlier link is ignored.
func (l *pubLink) linkDown(reason string, offer uint64) {
	l.mu.Lock()
	l.downNote, l.downOffer = reason, offer
	l.mu.Unlock()
	l.wake.Trigger()
}

func (l *pubLink) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.wake.Trigger()
}

func (l *pubLink) run() {
	defer l.b.wg.Done()
	defer l.shutdown()
	var items []zerocopy.Waitable
	var ready []bool
	for {
		l.mu.Lock()
		stopped, off, down, downOffer, want, gen := l.stopped, l.nextOffer, l.downNote, l.downOffer, l.want, l.wantGen
		l.nextOffer, l.downNote = nil, ""
		l.mu.Unlock()
		if stopped {
			return
		}
		l.wake.Reset()
		if down != "" && l.ep != nil && (downOffer == 0 || downOffer == l.offerNum) {
			l.fail(errors.New(down), false)
		}
		if off != nil {
			if err := l.connect(off); err != nil {
				l.b.log.Warn("data link not established", "peer", l.host, "ring", l.id, "err", err)
				l.fail(err, true)
			}
		}
		if gen != l.seenWant {
			l.seenWant, l.curWant = gen, want
			l.applyWanted()
		} else if l.collect() {
			l.applyWanted()
		}
		progressed, blocked := false, false
		if l.ep != nil {
			var err error
			progressed, blocked, err = l.pump()
			if err != nil {
				l.fail(err, true)
				continue
			}
		}
		if progressed {
			l.spins = 0
			continue
		}
		// Nothing more to do right now: wait for a sample, a request, or
		// (with records in flight) the next head write-back, which lands
		// only while this side polls the transport.
		timeout := 100 * time.Millisecond
		if l.ep != nil {
			if st := l.ep.Stats(); blocked || st.Writes > st.Completions {
				// Writes still moving (software providers move bytes only
				// while polled), or waiting for ring room: poll closely.
				l.spins++
				if l.spins < 256 {
					runtime.Gosched()
				} else {
					time.Sleep(min(time.Duration(l.spins-255)*5*time.Microsecond, 100*time.Microsecond))
				}
				continue
			}
			if l.inFlight() > 0 {
				timeout = time.Millisecond // head write-backs land only while we poll
			}
		}
		l.spins = 0
		items, ready = l.waitItems(items[:0], ready)
		zerocopy.Wait(items, ready, timeout, l.b.opts.BusyPoll)
	}
}

func (l *pubLink) waitItems(items []zerocopy.Waitable, ready []bool) ([]zerocopy.Waitable, []bool) {
	items = append(items, l.wake)
	if l.ep != nil && l.cur == nil && l.rs == len(l.fl) {
		for _, ot := range l.order {
			if !ot.removing {
				items = append(items, ot.sub)
			}
		}
	}
	if cap(ready) < len(items) {
		ready = make([]bool, len(items))
	}
	return items, ready[:len(items)]
}

func (l *pubLink) inFlight() int { return len(l.fl) - l.fh }

// connect (re)establishes the data link for an offer. A new reader (its
// epoch changed: the remote daemon restarted) or new ring parameters get
// a fresh writer and every unacknowledged record is written again from
// position 0; the same reader gets the records after its Head.
func (l *pubLink) connect(p *pendingOffer) error {
	if l.ep != nil {
		l.ep.Close()
		l.ep = nil
	}
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
	if l.w == nil || o.ReaderEpoch != l.readerEpoch || p.cfg != l.cfg {
		if l.w != nil {
			l.b.log.Warn("remote reader restarted: unacknowledged messages are written again (the reader lost its duplicate state)",
				"peer", l.host, "ring", l.id, "unacknowledged", l.inFlight())
		}
		w, err := ring.NewWriter(p.cfg)
		if err != nil {
			return err
		}
		l.w, l.cfg, l.readerEpoch = w, p.cfg, o.ReaderEpoch
		for _, ot := range l.topics {
			ot.announced = false
		}
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
	l.rs = l.fh // everything not acknowledged is written again
	l.ss = l.rs
	l.w.ResetHeadWord(l.local.Bytes()[wHeadOff:])
	ep, err := l.b.prov.Dial(o.Addr)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", o.Addr, err)
	}
	l.ep, l.ctl, l.remote, l.tailOff, l.offerNum = ep, p.ctl, o.Region.remote(), o.TailOff, o.Offer
	hr := toRegion(l.local.Desc())
	hr.Len = 8
	if !l.b.send(l.ctl, msgRingAccept, ringAccept{Ring: l.id, ReaderEpoch: o.ReaderEpoch, WriterEpoch: l.epoch, HeadRegion: hr, Restart: l.w.Tail(), Offer: o.Offer}) {
		return errors.New("control connection lost while accepting the ring")
	}
	l.b.log.Info("data link up (writer)", "peer", l.host, "ring", l.id, "topic", l.only, "restart", l.w.Tail(), "resend", len(l.fl)-l.rs)
	l.prepareStaging()
	return nil
}

// restartMessage makes a new reader's first record a message's first
// chunk: when the oldest unacknowledged record is a later chunk (the old
// reader acknowledged the first ones), the flights of the earlier chunks
// are put back in front of it.
func (l *pubLink) restartMessage() {
	if l.fh == len(l.fl) {
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
		pre = append(pre, flight{ot: first.ot, smp: first.smp, hdr: h, off: uint64(c) * n})
		first.ot.refs++
	}
	rest := append([]flight(nil), l.fl[l.fh:]...)
	l.fl = append(pre, rest...)
	l.fh, l.rs = 0, 0
}

// fail tears the data link down; records in flight stay for the next one.
func (l *pubLink) fail(err error, tell bool) {
	if l.ep == nil {
		return
	}
	l.stats.Failures.Add(1)
	l.b.log.Warn("data link down (writer)", "peer", l.host, "ring", l.id, "err", err)
	l.ep.Close()
	l.ep = nil
	if tell && l.ctl != nil {
		l.b.send(l.ctl, msgRingDown, ringDown{Ring: l.id, FromReader: false, Reason: err.Error(), Offer: l.offerNum})
	}
}

// applyWanted opens bridge subscriptions for wanted topics that have none
// and retires the ones no longer wanted (or whose QoS must change: the new
// subscription is opened once the old one has drained).
func (l *pubLink) applyWanted() {
	for name, ot := range l.topics {
		w, ok := l.curWant[name]
		ot.removing = !ok || w != ot.want
	}
	l.collect()
	for name, w := range l.curWant {
		if _, ok := l.topics[name]; ok {
			continue
		}
		spec := zerocopy.EndpointSpec{Topic: name, Type: w.typ, Node: BridgeNode, QoS: w.subQoS, Bridge: true}
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
func (l *pubLink) devicePool(name string) bool {
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

// collect closes retired topics nobody uses any more; it reports whether
// it closed any (a wanted topic may then be opened again).
func (l *pubLink) collect() bool {
	closed := false
	for name, ot := range l.topics {
		if !ot.removing || ot.refs > 0 {
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

// ack applies the head the reader wrote back: acknowledged records are
// done, and a sample is returned with its last record.
func (l *pubLink) ack() {
	l.acked = l.w.Acked(l.acked[:0])
	for range l.acked {
		f := &l.fl[l.fh]
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
	if l.fh > 1024 && l.fh*2 > len(l.fl) {
		n := copy(l.fl, l.fl[l.fh:])
		l.rs -= l.fh
		l.ss -= l.fh
		l.fl = l.fl[:n]
		l.fh = 0
	}
}

// pump polls the transport, applies head updates, writes what can be
// written. progressed: something moved; blocked: data is waiting for ring
// space or in-flight room.
func (l *pubLink) pump() (progressed, blocked bool, err error) {
	if _, err := l.ep.Poll(l.imms[:]); err != nil {
		return false, false, err
	}
	if moved, err := l.w.ApplyHeadWord(l.local.Bytes()[wHeadOff:]); err != nil {
		return false, false, fmt.Errorf("head write-back: %w", err)
	} else if moved {
		l.ack()
		if l.collect() {
			l.applyWanted()
		}
		progressed = true
	}
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
func (l *pubLink) next() bool {
	for i := 0; i < len(l.order); i++ {
		ot := l.order[(l.rr+i)%len(l.order)]
		if ot.removing {
			continue
		}
		smp, err := ot.sub.Take()
		if err != nil {
			continue // no data, or all our holds in use until acks come
		}
		l.rr = (l.rr + i + 1) % len(l.order)
		chunks, err := l.w.Chunks(uint64(smp.Size()))
		if err != nil {
			l.b.log.Error("message refused", "topic", ot.name, "size", smp.Size(), "err", err)
			l.stats.Dropped.Add(1)
			smp.Return()
			continue
		}
		ot.seq++
		ot.refs++
		l.cur = &message{ot: ot, smp: smp, chunks: chunks, seq: ot.seq, stage: stages(ot, smp)}
		return true
	}
	return false
}

// announce tells the reader which topic an id stands for, once per
// reader, before the first record with that id.
func (l *pubLink) announce(ot *outTopic) error {
	if ot.announced {
		return nil
	}
	if !l.b.send(l.ctl, msgTopicMap, topicMap{Ring: l.id, ReaderEpoch: l.readerEpoch, WriterEpoch: l.epoch, ID: ot.id, Topic: ot.name, Type: ot.typ, QoS: encodeQoS(ot.want.pubQoS)}) {
		return errors.New("control connection lost")
	}
	ot.announced = true
	return nil
}

// writeChunk writes the current message's next chunk. ok is false when
// the ring (or the in-flight limit) has no room: BEST_EFFORT messages are
// then dropped before their first chunk, RELIABLE ones wait.
func (l *pubLink) writeChunk() (ok bool, err error) {
	m := l.cur
	if err := l.announce(m.ot); err != nil {
		return false, err
	}
	var f flight
	if m.stage {
		// The copies of the next chunks run while this one is sent.
		if err := l.stageAhead(); err != nil {
			return false, err
		}
		if len(l.pend) == 0 {
			return false, nil // every slot busy: wait for their writes
		}
		f = l.pend[0]
		if ok, err := l.payloadReady(&f); err != nil || !ok {
			return false, err
		}
	} else {
		f = l.chunkFlight(m, m.next)
	}
	n := f.hdr.PayloadLen
	posted, err := l.post(&f)
	if err != nil {
		return false, err
	}
	if !posted {
		if m.next == 0 && m.ot.want.subQoS.Reliability == qos.ReliabilityBestEffort {
			l.unstage() // its copies read the sample: done before it is returned
			l.stats.Dropped.Add(1)
			m.smp.Return()
			m.ot.refs--
			l.cur = nil
			return true, nil
		}
		return false, nil
	}
	if m.stage {
		l.pend = append(l.pend[:0], l.pend[1:]...)
	}
	m.ot.refs++
	l.fl = append(l.fl, f)
	l.rs = len(l.fl)
	l.stats.Bytes.Add(n)
	m.next++
	if m.next == m.chunks {
		m.ot.refs--
		l.cur = nil
	}
	return true, nil
}

// chunkFlight is the flight of chunk c of m.
func (l *pubLink) chunkFlight(m *message, c uint32) flight {
	off, n := l.w.ChunkSpan(uint64(m.smp.Size()), c)
	info := m.smp.Info()
	return flight{ot: m.ot, smp: m.smp, off: off, lastRec: c == m.chunks-1,
		hdr: ring.Header{Topic: m.ot.id, Chunk: c, Chunks: m.chunks, Seq: m.seq, PayloadLen: n,
			Timestamp: info.SourceTimestamp.UnixNano(), GID: info.Publisher}}
}

// post reserves ring space for a record and writes it: the header (and in
// write-twice mode a pad header) from registered slots, the payload from
// the shared pool (or from its staging slot, which is then busy until the
// write completed locally), then commits. It returns false when there is
// no room.
func (l *pubLink) post(f *flight) (bool, error) {
	if l.w.InFlight() >= maxInFlight {
		return false, nil
	}
	s, err := l.w.Reserve(ring.RecordLen(f.hdr.PayloadLen))
	if errors.Is(err, ring.ErrFull) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	slot := wSlotsOff + (l.slotCtr%maxInFlight)*wSlotSize
	l.slotCtr++
	mem := l.local.Bytes()
	hb := mem[slot : slot+ring.HeaderSize]
	if err := l.w.PutHeader(hb, s, &f.hdr); err != nil {
		return false, err
	}
	base := l.cfg.Base
	twice := l.cfg.Mode == ring.WriteTwice
	if twice && s.Pad > 0 {
		pb := mem[slot+ring.HeaderSize : slot+2*ring.HeaderSize]
		if err := l.w.PutPad(pb, s); err != nil {
			return false, err
		}
		if err := l.ep.Write(pb, l.local, l.remote, base+s.PadOffset); err != nil {
			return false, err
		}
	}
	if err := l.ep.Write(hb, l.local, l.remote, base+s.Offset); err != nil {
		return false, err
	}
	var src []byte
	reg := f.ot.reg
	if f.slot != 0 {
		src, reg = l.stg.slots[f.slot-1].buf[:f.hdr.PayloadLen], l.stg.reg
	} else {
		payload := f.smp.Bytes()
		if payload == nil || f.off+f.hdr.PayloadLen > uint64(len(payload)) {
			return false, fmt.Errorf("topic %s: sample has no host bytes for chunk %d", f.ot.name, f.hdr.Chunk)
		}
		src = payload[f.off : f.off+f.hdr.PayloadLen]
	}
	dst := base + s.Offset + ring.HeaderSize
	if twice {
		err = l.ep.Write(src, reg, l.remote, dst)
	} else {
		err = l.ep.WriteImm(src, reg, l.remote, dst, s.Imm)
	}
	if err != nil {
		return false, err
	}
	if err := l.w.Commit(s, &f.hdr); err != nil {
		return false, err
	}
	if twice {
		tb := mem[slot+2*ring.HeaderSize : slot+2*ring.HeaderSize+ring.WordSize]
		l.w.PutTail(tb)
		if err := l.ep.Write(tb, l.local, l.remote, l.tailOff); err != nil {
			return false, err
		}
	}
	if f.slot != 0 {
		// Free once this endpoint completed every write posted so far.
		sl := &l.stg.slots[f.slot-1]
		sl.state, sl.doneAt = slotPosted, l.ep.Stats().Writes
		f.slot = 0
	}
	l.stats.Records.Add(1)
	return true, nil
}

// shutdown returns every held sample and closes what the link owns.
func (l *pubLink) shutdown() {
	if l.ep != nil {
		l.ep.Close()
		l.ep = nil
	}
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
	l.fl, l.fh, l.rs, l.ss, l.cur, l.pend = nil, 0, 0, 0, nil, nil
	for _, ot := range l.topics {
		ot.refs, ot.removing = 0, true
	}
	l.collect()
	l.dropStaging()
	if l.local != nil {
		l.local.Close()
	}
	// l.wake is closed by Bridge.Close once no one can trigger it.
}

// Staging of device payloads.
//
// A GPU topic's bridge subscription reads the device form, so the
// publisher returns without a host copy, and the link makes the copy
// itself, record by record: the payload of each record is copied from the
// sample's device memory (at the chunk's offset) into one of K slots of
// registered, pinned host memory with an asynchronous device-to-host copy
// on the link's stream, followed by the slot's event; the record is
// posted (header, then the payload from the slot) once that event is done,
// in ring order. So the copy of chunk k+1 runs while chunk k is on the
// wire (and the reader places chunk k−1). Slots are handed out in ring
// order; a slot is reused only after the write posted from it completed
// locally (the endpoint's completions reached its writes count at post
// time), and after a reconnect every slot is free and whatever is to be
// written again is staged again from the still-held sample.
//
// K: a slot holds one record's payload (Config.MaxChunk, page-rounded).
// K = 8 for chunks up to 8 MiB (16 MiB of pinned memory with the 2 MiB
// records of the benchmark): the device-to-host copy (≈ 50 GB/s) is
// several times faster than the wire, so the copies stay ahead and up
// to K−1 payload writes can be in flight while the next one is staged,
// which keeps a software provider (that moves bytes only while polled)
// and a NIC busy back to back. Larger records get fewer slots, at least
// 2 (one on the wire, one being staged), within stageBudget.
const (
	stageBudget = 64 << 20 // pinned bytes per link, at most (unless 2 slots need more)
	stageMax    = 8
	stageMin    = 2
)

// Staging slot states.
const (
	slotFree   = iota
	slotStaged // holding (or being copied) the payload of a record not yet posted
	slotPosted // its record was posted: free once doneAt writes completed
)

type stageSlot struct {
	buf    []byte
	state  int
	doneAt uint64 // slotPosted: the endpoint's Writes after posting from it
}

// staging is a link's staging memory: K slots in one registered region,
// pinned for the GPU, and the copier that fills them.
type staging struct {
	reg   transport.Region
	unpin func() error
	cp    stageCopier
	slots []stageSlot
	size  uint64 // bytes per slot
	next  int    // next slot to hand out: slots are used in ring order
}

// stageCopier queues copies of sample payload bytes into staging slots and
// reports when they are done: the GPU's (cudaCopier) or a test's.
type stageCopier interface {
	// start queues the copy of len(dst) bytes at offset off of smp's
	// payload into dst, slot i's memory, and marks slot i behind it.
	start(i int, dst []byte, smp *zerocopy.Sample, off uint64) error
	// done reports whether slot i's latest copy completed.
	done(i int) (bool, error)
	// wait waits for every copy queued.
	wait() error
	close()
}

// stageHook, when set (tests only), replaces the GPU copier and makes every
// topic's payloads go through staging.
var stageHook func(slots int) stageCopier

// stages reports whether a sample's payload is staged: the subscription
// reads the device form and the sample has no host copy to send from
// (local host readers made the engine stage one).
func stages(ot *outTopic, smp *zerocopy.Sample) bool {
	return ot.gpu && (smp.Bytes() == nil || ot.reg == nil || stageHook != nil)
}

func stageSlotSize(cfg ring.Config) uint64 {
	return max((cfg.MaxChunk+4095)&^4095, 4096)
}

// prepareStaging sets staging up ahead of the first device message, when
// the link is connected and carries a GPU topic.
func (l *pubLink) prepareStaging() {
	if l.stg != nil || l.w == nil {
		return
	}
	for _, ot := range l.topics {
		if ot.gpu {
			if err := l.ensureStaging(); err != nil {
				l.b.log.Warn("staging memory for device payloads", "peer", l.host, "ring", l.id, "err", err)
			}
			return
		}
	}
}

// ensureStaging allocates the staging slots for the current ring
// configuration.
func (l *pubLink) ensureStaging() error {
	if l.stg != nil {
		return nil
	}
	size := stageSlotSize(l.cfg)
	k := min(max(stageBudget/size, stageMin), stageMax)
	reg, err := l.b.prov.Alloc(int(k * size))
	if err != nil {
		return fmt.Errorf("registering staging memory: %w", err)
	}
	st := &staging{reg: reg, size: size, slots: make([]stageSlot, k)}
	mem := reg.Bytes()
	for i := range st.slots {
		st.slots[i].buf = mem[uint64(i)*size : uint64(i+1)*size : uint64(i+1)*size]
	}
	if stageHook != nil {
		st.cp = stageHook(int(k))
	} else {
		dev, err := l.b.dom.GPU()
		if err != nil {
			reg.Close()
			return err
		}
		if err := dev.HostRegister(mem[:k*size], cuda.HostRegisterPortable); err != nil {
			l.b.log.Warn("staging memory not pinned: device copies run at pageable speed", "peer", l.host, "ring", l.id, "err", err)
		} else {
			b := mem[:k*size]
			st.unpin = func() error { return dev.HostUnregister(b) }
		}
		cp, err := newCudaCopier(dev, int(k))
		if err != nil {
			if st.unpin != nil {
				st.unpin()
			}
			reg.Close()
			return err
		}
		st.cp = cp
	}
	l.stg = st
	l.b.log.Info("staging device payloads", "peer", l.host, "ring", l.id, "slots", k, "slot_bytes", size)
	return nil
}

// resetStaging frees every slot (the endpoint their writes were posted on
// is closed) and forgets what was staged: it is staged again.
func (l *pubLink) resetStaging() {
	for i := l.fh; i < len(l.fl); i++ {
		l.fl[i].slot = 0
	}
	l.pend = l.pend[:0]
	if l.cur != nil {
		l.cur.staged = l.cur.next
	}
	if l.stg != nil {
		for i := range l.stg.slots {
			l.stg.slots[i].state = slotFree
		}
		l.stg.next = 0
	}
}

// dropStaging releases the staging memory; no endpoint may use it.
func (l *pubLink) dropStaging() {
	st := l.stg
	if st == nil {
		return
	}
	l.resetStaging()
	st.cp.close()
	if st.unpin != nil {
		if err := st.unpin(); err != nil {
			l.b.log.Warn("unpinning staging memory", "peer", l.host, "ring", l.id, "err", err)
		}
	}
	st.reg.Close()
	l.stg = nil
}

// stage starts the copy of f's payload into the next slot; false: every
// slot is busy.
func (l *pubLink) stage(f *flight) (bool, error) {
	st := l.stg
	i := st.next
	s := &st.slots[i]
	switch s.state {
	case slotStaged:
		return false, nil
	case slotPosted:
		if l.ep.Stats().Completions < s.doneAt {
			return false, nil
		}
	}
	if err := st.cp.start(i, s.buf[:f.hdr.PayloadLen], f.smp, f.off); err != nil {
		return false, fmt.Errorf("topic %s: staging chunk %d: %w", f.ot.name, f.hdr.Chunk, err)
	}
	s.state = slotStaged
	st.next = (i + 1) % len(st.slots)
	f.slot = i + 1
	return true, nil
}

// stageAhead starts staging copies, in ring order, for the records to
// write again and then the current message's next chunks, as far as
// slots are free.
func (l *pubLink) stageAhead() error {
	if l.ss < l.rs {
		l.ss = l.rs
	}
	for ; l.ss < len(l.fl); l.ss++ {
		f := &l.fl[l.ss]
		if f.slot != 0 || !stages(f.ot, f.smp) {
			continue
		}
		if err := l.ensureStaging(); err != nil {
			return err
		}
		if ok, err := l.stage(f); err != nil || !ok {
			return err
		}
	}
	m := l.cur
	if m == nil || !m.stage {
		return nil
	}
	if err := l.ensureStaging(); err != nil {
		return err
	}
	for m.staged < m.chunks {
		f := l.chunkFlight(m, m.staged)
		if ok, err := l.stage(&f); err != nil || !ok {
			return err
		}
		l.pend = append(l.pend, f)
		m.staged++
	}
	return nil
}

// payloadReady reports whether f can be posted: its payload is in the
// pool, or staged and its copy done.
func (l *pubLink) payloadReady(f *flight) (bool, error) {
	if f.slot == 0 {
		return !stages(f.ot, f.smp), nil
	}
	return l.stg.cp.done(f.slot - 1)
}

// unstage gives back the slots of the current message's staged chunks (it
// is dropped), once their copies, which read its sample, are done.
func (l *pubLink) unstage() {
	if len(l.pend) > 0 {
		if err := l.stg.cp.wait(); err != nil {
			l.b.log.Error("waiting for staging copies", "peer", l.host, "ring", l.id, "err", err)
		}
		// They are the latest slots handed out: hand them out again next.
		l.stg.next = l.pend[0].slot - 1
		for _, f := range l.pend {
			l.stg.slots[f.slot-1].state = slotFree
		}
		l.pend = l.pend[:0]
	}
	if l.cur != nil {
		l.cur.staged = l.cur.next
	}
}

// cudaCopier copies device payloads to staging slots on its own stream,
// with an event per slot.
type cudaCopier struct {
	dev    *cuda.Device
	stream *cuda.Stream
	events []*cuda.Event
}

func newCudaCopier(dev *cuda.Device, slots int) (*cudaCopier, error) {
	s, err := dev.NewStream()
	if err != nil {
		return nil, err
	}
	c := &cudaCopier{dev: dev, stream: s}
	for range slots {
		ev, err := dev.NewEvent()
		if err != nil {
			c.close()
			return nil, err
		}
		c.events = append(c.events, ev)
	}
	return c, nil
}

func (c *cudaCopier) start(i int, dst []byte, smp *zerocopy.Sample, off uint64) error {
	if len(dst) > 0 {
		p, err := smp.DevicePtr()
		if err != nil {
			return err
		}
		if err := c.dev.MemcpyDtoHAsync(dst, p+zerocopy.DevicePtr(off), c.stream); err != nil {
			return err
		}
	}
	return c.events[i].Record(c.stream)
}

func (c *cudaCopier) done(i int) (bool, error) { return c.events[i].Done() }

func (c *cudaCopier) wait() error { return c.stream.Synchronize() }

func (c *cudaCopier) close() {
	c.stream.Synchronize()
	for _, ev := range c.events {
		ev.Destroy()
	}
	c.stream.Destroy()
}
