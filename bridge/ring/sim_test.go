package ring

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// The simulation: a publish side (Writer, message queue, samples kept until
// acknowledged), a subscribe side (Reader, received records, per-topic
// reassembly, delivery check) and an in-memory wire between them: one
// queue per rail (format.go, "Rails"), each delivering in order, the rails
// in any order among themselves: RDMA writes (with their immediate, or
// followed by tail writes) one way, head write-backs the other. Landed
// immediates wait in their rail's queue until the reader takes the next
// record from the rail that announces it. A link failure (of one rail:
// every rail goes down with it) delivers a random prefix of what is in
// flight on each rail, drops the rest and runs the reconnect handshake
// (format.go, "Link failure").

// source supplies the simulation's choices: a PRNG, or fuzz bytes.
type source interface {
	intn(n int) int
	done() bool
}

type rngSource struct {
	r    *rand.Rand
	left int
}

func (s *rngSource) intn(n int) int {
	if n <= 1 {
		return 0
	}
	return s.r.IntN(n)
}
func (s *rngSource) done() bool { s.left--; return s.left < 0 }

type byteSource struct{ b []byte }

func (s *byteSource) intn(n int) int {
	if n <= 1 || len(s.b) == 0 {
		return 0
	}
	var v uint32
	k := 1
	if n > 256 {
		k = 3
	}
	for i := 0; i < k && len(s.b) > 0; i++ {
		v = v<<8 | uint32(s.b[0])
		s.b = s.b[1:]
	}
	return int(v % uint32(n))
}
func (s *byteSource) done() bool { return len(s.b) == 0 }

type simOpts struct {
	cfg         Config
	topics      int
	delayHeads  bool // head write-backs are held back for arbitrary times
	failures    bool // random link failures
	batchTail   bool // WriteTwice: the tail write may cover several records
	maxMsg      int  // largest message
	maxMessages int  // stop publishing after this many
	maxQueued   int  // records queued but not written, at most (bounds the drain)
}

type msgKey struct {
	topic uint32
	seq   uint64
}

type wireEv struct {
	off  uint64
	data []byte // nil for a tail write
	imm  uint64
	tail uint64
	hasI bool
}

type sim struct {
	t    testing.TB
	src  source
	o    simOpts
	w    *Writer
	r    *Reader
	ring []byte
	cfg  Config

	// publish side
	nextSeq   map[uint32]uint64
	all       map[msgKey][]byte   // every published message (the expected bytes)
	queue     []msgKey            // published, not started
	queuedRec int                 // records of the queued messages
	plans     map[msgKey]Chunking // how each message is cut (Writer.Split)
	cur       *msgKey             // message being written
	curChunk  uint32
	curChunks uint32
	retx      []Record // to retransmit after a rewind, in order
	kept      map[msgKey]bool
	tailSent  uint64 // WriteTwice: the last tail value put on the wire
	published int

	// wire: per rail, writes in flight and immediates landed but not
	// taken by the reader
	fwd  [][]wireEv
	imms [][]uint64
	back []uint64
	// scratch for NextRail
	heads []uint64
	has   []bool

	// subscribe side
	tailSlot  uint64
	recvQ     []Record
	asm       Assembler
	partial   map[uint32][]byte
	delivered map[uint32]uint64
	nDeliver  int

	acked   []Record
	scratch []Record
	stats   simStats
}

type simStats struct {
	ops, failures, dups, wrapped, fulls, writeBacks, records int
	// railWaits counts takes that found immediates on some rails but had
	// to wait for the next record's rail (the rails overtook each other).
	railWaits int
}

func newSim(t testing.TB, src source, o simOpts) *sim {
	w, err := NewWriter(o.cfg)
	if err != nil {
		t.Fatalf("NewWriter(%+v): %v", o.cfg, err)
	}
	ring := make([]byte, o.cfg.Size)
	for i := range ring { // not zeroed memory: the protocol must not rely on it
		ring[i] = byte(i*131 + 7)
	}
	r, err := NewReader(o.cfg, ring)
	if err != nil {
		t.Fatal(err)
	}
	k := w.Config().Rails
	return &sim{t: t, src: src, o: o, w: w, r: r, ring: ring, cfg: w.Config(),
		nextSeq: map[uint32]uint64{}, all: map[msgKey][]byte{}, kept: map[msgKey]bool{},
		partial: map[uint32][]byte{}, delivered: map[uint32]uint64{}, plans: map[msgKey]Chunking{},
		fwd: make([][]wireEv, k), imms: make([][]uint64, k), heads: make([]uint64, k), has: make([]bool, k)}
}

// inFlight is the number of writes on the wire, all rails.
func (s *sim) inFlight() int {
	n := 0
	for _, q := range s.fwd {
		n += len(q)
	}
	return n
}

// landed is the number of immediates landed and not taken, all rails.
func (s *sim) landed() int {
	n := 0
	for _, q := range s.imms {
		n += len(q)
	}
	return n
}

func (s *sim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s\nstate: %+v writer in flight %d, wire %d/%d, landed %d, recvQ %d, stats %+v",
		fmt.Sprintf(format, args...), Snapshot(s.w, s.r), s.w.InFlight(), s.inFlight(), len(s.back), s.landed(), len(s.recvQ), s.stats)
}

func (s *sim) check() {
	s.t.Helper()
	if err := CheckInvariants(Snapshot(s.w, s.r)); err != nil {
		s.fatalf("invariants: %v", err)
	}
	if err := s.w.Check(); err != nil {
		s.fatalf("%v", err)
	}
	if err := s.r.Check(); err != nil {
		s.fatalf("%v", err)
	}
}

// publish queues a new message of a random size (1 B … maxMsg, biased to
// small ones and to sizes around the chunk size).
func (s *sim) publish() {
	if s.published >= s.o.maxMessages {
		return
	}
	topic := uint32(1 + s.src.intn(s.o.topics))
	var n int
	switch s.src.intn(4) {
	case 0:
		n = 1 + s.src.intn(200)
	case 1:
		n = 1 + s.src.intn(int(s.cfg.MaxChunk)+64)
	default:
		n = 1 + s.src.intn(s.o.maxMsg)
	}
	// Striped over the rails (and sometimes more) with chunks of at
	// least minStripe bytes, as the bridge cuts messages.
	plan, err := s.w.Split(uint64(n), s.cfg.Rails+s.src.intn(3), uint64(1+s.src.intn(256)))
	if err != nil {
		if !errors.Is(err, ErrTooLarge) || !s.cfg.NoChunking || uint64(n) <= s.cfg.MaxChunk {
			s.fatalf("Split(%d): %v", n, err)
		}
		return // refused, as it must be without chunking
	}
	chunks := plan.Count
	if s.o.maxQueued > 0 && s.queuedRec+int(chunks) > s.o.maxQueued {
		return
	}
	s.queuedRec += int(chunks)
	s.nextSeq[topic]++
	k := msgKey{topic, s.nextSeq[topic]}
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(uint64(i)*2654435761>>7) ^ byte(k.seq) ^ byte(topic<<5)
	}
	s.all[k] = data
	s.plans[k] = plan
	s.kept[k] = true
	s.queue = append(s.queue, k)
	s.published++
}

// simMeta says which messages are sent as messages with meta (the META
// flag on every record): every third.
func simMeta(seq uint64) bool { return seq%3 == 0 }

func (s *sim) hasWork() bool { return len(s.retx) > 0 || s.cur != nil || len(s.queue) > 0 }

// writeOne writes the next record: a retransmission, the next chunk of the
// current message, or the first chunk of the next one. It reports false
// when the ring is full.
func (s *sim) writeOne() bool {
	var h Header
	var fromRetx bool
	switch {
	case len(s.retx) > 0:
		h = s.retx[0].Header
		fromRetx = true
	case s.cur != nil:
		h = Header{Topic: s.cur.topic, Seq: s.cur.seq, Chunk: s.curChunk, Chunks: s.curChunks}
	case len(s.queue) > 0:
		k := s.queue[0]
		n := s.plans[k].Count
		s.queue = s.queue[1:]
		s.queuedRec -= int(n)
		s.cur, s.curChunk, s.curChunks = &k, 0, n
		h = Header{Topic: k.topic, Seq: k.seq, Chunks: n}
	default:
		return false
	}
	data := s.all[msgKey{h.Topic, h.Seq}]
	off, n := s.plans[msgKey{h.Topic, h.Seq}].Span(uint64(len(data)), h.Chunk)
	h.PayloadLen = n
	h.Timestamp = int64(h.Seq) * 1000
	h.GID[0] = byte(h.Topic)
	h.Meta = simMeta(h.Seq)
	slot, err := s.w.Reserve(RecordLen(n))
	if errors.Is(err, ErrFull) {
		s.stats.fulls++
		return false
	}
	if err != nil {
		s.fatalf("Reserve(%d): %v", RecordLen(n), err)
	}
	if s.cfg.Mode == WriteTwice && slot.Pad > 0 {
		pad := make([]byte, HeaderSize)
		if err := s.w.PutPad(pad, slot); err != nil {
			s.fatalf("PutPad: %v", err)
		}
		s.fwd[0] = append(s.fwd[0], wireEv{off: slot.PadOffset, data: pad})
	}
	if slot.Rail < 0 || slot.Rail >= len(s.fwd) || (s.cfg.Mode == WriteTwice && slot.Rail != 0) {
		s.fatalf("slot on rail %d of %d", slot.Rail, len(s.fwd))
	}
	buf := make([]byte, HeaderSize+n)
	if err := s.w.PutHeader(buf, slot, &h); err != nil {
		s.fatalf("PutHeader: %v", err)
	}
	copy(buf[HeaderSize:], data[off:off+n])
	s.fwd[slot.Rail] = append(s.fwd[slot.Rail], wireEv{off: slot.Offset, data: buf, imm: slot.Imm, hasI: s.cfg.Mode == WriteImm})
	if err := s.w.Commit(slot, &h); err != nil {
		s.fatalf("Commit: %v", err)
	}
	if slot.Pad > 0 {
		s.stats.wrapped++
	}
	s.stats.records++
	if s.cfg.Mode == WriteTwice && (!s.o.batchTail || s.src.intn(3) == 0) {
		s.sendTail()
	}
	switch {
	case fromRetx:
		s.retx = s.retx[1:]
	default:
		s.curChunk++
		if s.curChunk == s.curChunks {
			s.cur = nil
		}
	}
	return true
}

func (s *sim) sendTail() {
	if s.cfg.Mode == WriteTwice && s.tailSent != s.w.Tail() {
		s.fwd[0] = append(s.fwd[0], wireEv{tail: s.w.Tail()})
		s.tailSent = s.w.Tail()
	}
}

// deliverFwd lands the oldest write of a random rail that has one on the
// subscribe side.
func (s *sim) deliverFwd() {
	r := s.src.intn(len(s.fwd))
	for len(s.fwd[r]) == 0 {
		r = (r + 1) % len(s.fwd)
	}
	s.deliverRail(r)
}

// deliverRail lands the oldest write of rail r; an immediate waits in the
// rail's queue.
func (s *sim) deliverRail(r int) {
	ev := s.fwd[r][0]
	s.fwd[r] = s.fwd[r][1:]
	if ev.data == nil {
		s.tailSlot = ev.tail
		return
	}
	copy(s.ring[ev.off:], ev.data)
	if ev.hasI {
		s.imms[r] = append(s.imms[r], ev.imm)
	}
}

// take receives the records whose immediates landed, in ring order, as
// far as the next one has landed.
func (s *sim) take() {
	for s.landed() > 0 {
		for i, q := range s.imms {
			s.has[i] = len(q) > 0
			if s.has[i] {
				s.heads[i] = q[0]
			}
		}
		i, err := s.r.NextRail(s.heads, s.has)
		if err != nil {
			s.fatalf("NextRail(%#x, %v): %v", s.heads, s.has, err)
		}
		if i < 0 {
			s.stats.railWaits++
			return
		}
		imm := s.imms[i][0]
		s.imms[i] = s.imms[i][1:]
		rec, err := s.r.OnImmediate(imm)
		if err != nil {
			s.fatalf("OnImmediate(%#x) from rail %d: %v", imm, i, err)
		}
		s.recvQ = append(s.recvQ, rec)
	}
}

// poll reads the tail slot (WriteTwice).
func (s *sim) poll() {
	recs, err := s.r.OnTail(s.tailSlot, s.scratch[:0])
	if err != nil {
		s.fatalf("OnTail(%d): %v", s.tailSlot, err)
	}
	s.recvQ = append(s.recvQ, recs...)
	s.scratch = recs
}

// consumeOne delivers (unless duplicate) and consumes the oldest received
// record, checking the bytes of every completed message.
func (s *sim) consumeOne() {
	rec := s.recvQ[0]
	s.recvQ = s.recvQ[1:]
	if rec.Dup {
		s.stats.dups++
	} else {
		payload := s.r.Payload(&rec)
		if payload == nil || uint64(len(payload)) != rec.PayloadLen {
			s.fatalf("payload of %+v", rec)
		}
		off, done, err := s.asm.Add(&rec)
		if err != nil {
			s.fatalf("assemble: %v", err)
		}
		if rec.Chunk == 0 {
			s.partial[rec.Topic] = make([]byte, 0, SizeHint(&rec))
		}
		buf := s.partial[rec.Topic]
		if uint64(len(buf)) != off {
			s.fatalf("topic %d seq %d chunk %d at %d, have %d bytes", rec.Topic, rec.Seq, rec.Chunk, off, len(buf))
		}
		buf = append(buf, payload...)
		s.partial[rec.Topic] = buf
		if rec.Timestamp != int64(rec.Seq)*1000 || rec.GID[0] != byte(rec.Topic) || rec.Meta != simMeta(rec.Seq) {
			s.fatalf("header fields of %+v", rec.Header)
		}
		if done {
			want := s.delivered[rec.Topic] + 1
			if rec.Seq != want {
				s.fatalf("topic %d: delivered seq %d, want %d (loss or duplicate)", rec.Topic, rec.Seq, want)
			}
			if !bytes.Equal(buf, s.all[msgKey{rec.Topic, rec.Seq}]) {
				s.fatalf("topic %d seq %d: %d bytes differ from the %d published", rec.Topic, rec.Seq, len(buf), len(s.all[msgKey{rec.Topic, rec.Seq}]))
			}
			s.delivered[rec.Topic] = rec.Seq
			s.partial[rec.Topic] = nil
			s.nDeliver++
		}
	}
	wb, err := s.r.Consume(&rec)
	if err != nil {
		s.fatalf("Consume: %v", err)
	}
	if wb {
		s.back = append(s.back, s.r.Head())
		s.stats.writeBacks++
	}
}

// deliverBack lands the oldest head write-back on the publish side.
func (s *sim) deliverBack() {
	h := s.back[0]
	s.back = s.back[1:]
	if err := s.w.OnHeadUpdate(h); err != nil {
		s.fatalf("OnHeadUpdate(%d): %v", h, err)
	}
	s.release()
}

func (s *sim) release() {
	s.acked = s.w.Acked(s.acked[:0])
	for _, rec := range s.acked {
		k := msgKey{rec.Topic, rec.Seq}
		if !s.kept[k] {
			s.fatalf("acknowledged record of a message not kept: %+v", rec.Header)
		}
		if rec.Chunk == rec.Chunks-1 {
			delete(s.kept, k)
		}
	}
}

// fail: a rail fails and the link drops with it. Some of what is in
// flight on each rail arrives first (the failed rail's share is often
// nothing, the others' often everything).
func (s *sim) fail() {
	s.stats.failures++
	failed := s.src.intn(len(s.fwd))
	for r := range s.fwd {
		n := s.src.intn(len(s.fwd[r]) + 1)
		if r != failed && s.src.intn(2) == 0 {
			n = len(s.fwd[r])
		}
		for ; n > 0; n-- {
			s.deliverRail(r)
		}
	}
	if s.src.intn(2) == 0 {
		s.take()
	}
	if s.cfg.Mode == WriteTwice && s.src.intn(2) == 0 {
		s.poll()
	}
	for n := s.src.intn(len(s.recvQ) + 1); n > 0; n-- {
		s.consumeOne()
	}
	for n := s.src.intn(len(s.back) + 1); n > 0; n-- {
		s.deliverBack()
	}
	for r := range s.fwd {
		s.fwd[r], s.imms[r] = nil, nil
	}
	s.back, s.recvQ = nil, nil
	s.check()
	// Handshake: the reader's head to the writer (not always: the
	// duplicate path must be exercised too).
	if s.src.intn(2) == 0 {
		if err := s.w.OnHeadUpdate(s.r.Head()); err != nil {
			s.fatalf("handshake head %d: %v", s.r.Head(), err)
		}
		s.release()
	}
	s.retx = append(s.w.Rewind(nil), s.retx...)
	if err := s.r.Resync(s.w.Tail()); err != nil {
		s.fatalf("Resync(%d): %v", s.w.Tail(), err)
	}
	s.tailSlot, s.tailSent = s.w.Tail(), s.w.Tail()
	// Partial messages survive in the reassembly state: retransmission
	// resumes after the last consumed chunk.
}

func (s *sim) step() {
	s.stats.ops++
	switch op := s.src.intn(20); {
	case op < 3:
		s.publish()
	case op < 7:
		if !s.writeOne() && s.cfg.Mode == WriteTwice {
			s.sendTail()
		}
	case op < 11:
		if s.inFlight() > 0 {
			s.deliverFwd()
		}
		if s.src.intn(2) == 0 {
			s.take()
		}
	case op < 12:
		if s.cfg.Mode == WriteTwice {
			s.poll()
		}
	case op < 16:
		for n := 1 + s.src.intn(4); n > 0 && len(s.recvQ) > 0; n-- {
			s.consumeOne()
		}
	case op < 19:
		if len(s.back) > 0 && (!s.o.delayHeads || s.src.intn(8) == 0) {
			s.deliverBack()
		}
	default:
		if s.o.failures && s.src.intn(8) == 0 {
			s.fail()
		} else if s.cfg.Mode == WriteTwice {
			s.sendTail()
		}
	}
	s.check()
}

// drain runs to completion without failures, always making the first
// possible move. A full writer with nothing in flight and an idle reader is
// a deadlock and fails the test: progress must not depend on Flush.
func (s *sim) drain() {
	for i := 0; ; i++ {
		if i > 10_000_000 {
			s.fatalf("drain did not finish")
		}
		switch {
		case s.inFlight() > 0:
			s.deliverFwd()
		case s.landed() > 0:
			if s.take(); s.landed() > 0 {
				s.fatalf("landed immediates the reader cannot take: %#x", s.imms)
			}
		case s.cfg.Mode == WriteTwice && s.tailSlot != s.r.Received():
			s.poll()
		case len(s.recvQ) > 0:
			s.consumeOne()
		case len(s.back) > 0:
			s.deliverBack()
		case s.cfg.Mode == WriteTwice && s.tailSent != s.w.Tail():
			s.sendTail()
		case s.hasWork():
			if !s.writeOne() {
				if s.cfg.Mode == WriteTwice && s.tailSent != s.w.Tail() {
					s.sendTail()
					break
				}
				s.fatalf("deadlock: the writer is full, nothing is in flight and the reader has consumed everything")
			}
		case s.r.Flush():
			s.back = append(s.back, s.r.Head())
		default:
			s.check()
			s.verify()
			return
		}
		s.check()
	}
}

func (s *sim) verify() {
	for topic, n := range s.nextSeq {
		if s.delivered[topic] != n {
			s.fatalf("topic %d: %d messages published, %d delivered", topic, n, s.delivered[topic])
		}
	}
	if len(s.kept) != 0 || s.w.InFlight() != 0 {
		s.fatalf("%d messages still kept, %d records in flight after everything was consumed", len(s.kept), s.w.InFlight())
	}
	if s.w.Tail() != s.r.Head() || s.w.DelayedHead() != s.r.Head() {
		s.fatalf("pointers do not meet at the end")
	}
}

func (s *sim) run() {
	for !s.src.done() {
		s.step()
	}
	s.drain()
}

// randomConfig picks a ring: sizes with and without powers of two,
// all watermarks and modes, random chunk sizes.
func randomConfig(src source) Config {
	sizes := []uint64{256, 320, 1024, 1088, 4096, 4160}
	c := Config{
		Size:       sizes[src.intn(len(sizes))],
		Watermark:  Watermark(src.intn(4)),
		Mode:       Mode(src.intn(2)),
		CompactImm: src.intn(4) == 0,
	}
	if c.Mode == WriteImm && !c.CompactImm {
		c.Rails = 1 + src.intn(4)
	}
	if !c.CompactImm && src.intn(3) == 0 {
		c.Base = uint64(src.intn(64)) * Align
	}
	mr := c.MaxRecord()
	if src.intn(2) == 0 {
		c.MaxChunk = uint64(1 + src.intn(int(mr-HeaderSize)))
	}
	c.NoChunking = src.intn(10) == 0
	return c
}

// TestProtocolRandom is the property test: invariants after every
// operation; every message delivered exactly once, in order per topic,
// byte-exact; nothing lost; no deadlock.
func TestProtocolRandom(t *testing.T) {
	runs := 60
	steps := 4000
	if testing.Short() {
		runs, steps = 12, 2000
	}
	for _, variant := range []struct {
		name       string
		delayHeads bool
	}{{"prompt-heads", false}, {"delayed-heads", true}} {
		t.Run(variant.name, func(t *testing.T) {
			var total simStats
			for seed := range runs {
				src := &rngSource{r: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), left: steps}
				cfg := randomConfig(src)
				s := newSim(t, src, simOpts{cfg: cfg, topics: 1 + src.intn(3), delayHeads: variant.delayHeads,
					failures: seed%4 != 3, batchTail: src.intn(2) == 0, maxMsg: 3 * int(cfg.Size), maxMessages: 1 << 30})
				s.run()
				total.ops += s.stats.ops
				total.failures += s.stats.failures
				total.dups += s.stats.dups
				total.wrapped += s.stats.wrapped
				total.fulls += s.stats.fulls
				total.records += s.stats.records
				total.writeBacks += s.stats.writeBacks
				total.railWaits += s.stats.railWaits
				if s.nDeliver == 0 {
					t.Errorf("seed %d: nothing delivered", seed)
				}
			}
			t.Logf("%+v", total)
			// The runs must have reached the interesting states.
			if total.failures == 0 || total.dups == 0 || total.wrapped == 0 || total.fulls == 0 || total.railWaits == 0 {
				t.Errorf("coverage: %+v", total)
			}
		})
	}
}

// FuzzProtocol drives the simulation from the fuzz input: the first bytes
// pick the configuration, the rest the operations; then it drains.
func FuzzProtocol(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 1, 0, 0, 1, 0, 0, 0, 0, 0, 3, 3, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	f.Add(bytes.Repeat([]byte{0, 5, 9, 13, 17, 19, 200, 3}, 40))
	r := rand.New(rand.NewPCG(7, 7))
	for range 6 {
		b := make([]byte, 600)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 3000 {
			data = data[:3000]
		}
		src := &byteSource{b: data}
		cfg := randomConfig(src)
		opts := simOpts{cfg: cfg, topics: 1 + src.intn(3), delayHeads: src.intn(2) == 0, failures: true,
			batchTail: src.intn(2) == 0, maxMsg: 3 * int(cfg.Size), maxMessages: 200, maxQueued: 1000}
		s := newSim(t, src, opts)
		s.run()
	})
}
