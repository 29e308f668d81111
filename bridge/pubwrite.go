package bridge

import (
	"errors"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Writing records (the writer role, publink.go): a message's chunks, each
// reserved in the ring and handed to its rail as up to three writes from
// registered memory (linkparts.go), gathered into one where the provider
// needs a fence between writes and can (gatherParts), then committed.

// minStripe is the smallest chunk a message is cut into to spread it over
// the ring's rails (ring.Writer.Split): smaller messages go whole, on one
// rail each, and rails carry several of them at once.
const minStripe = 256 << 10

// writeChunk writes the current message's next chunk. ok is false when
// the ring (or the in-flight limit) has no room: BEST_EFFORT messages are
// then dropped before their first chunk, RELIABLE ones wait.
func (l *writerLink) writeChunk() (ok bool, err error) {
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
			l.copying = err == nil
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
func (l *writerLink) chunkFlight(m *message, c uint32) flight {
	off, n := m.plan.Span(m.size, c)
	info := m.smp.Info()
	return flight{ot: m.ot, smp: m.smp, off: off, prefix: m.prefix, lastRec: c == m.chunks-1,
		hdr: ring.Header{Topic: m.ot.id, Chunk: c, Chunks: m.chunks, Seq: m.seq, PayloadLen: n,
			Timestamp: info.SourceTimestamp.UnixNano(), GID: info.Publisher, Meta: m.prefix > 0}}
}

// dataSpan is the part of f's record that is payload: its offset in the
// sample's payload and its length (0: the record carries meta only).
func (f *flight) dataSpan() (off, n uint64) {
	start, end := max(f.off, f.prefix), f.off+f.hdr.PayloadLen
	if end <= start {
		return 0, 0
	}
	return start - f.prefix, end - start
}

// metaSpan is the part of f's record that is meta bytes (after the length
// word): its offset in the sample's meta and its length.
func (f *flight) metaSpan() (off, n uint64) {
	start, end := max(f.off, ring.MetaLenSize), min(f.off+f.hdr.PayloadLen, f.prefix)
	if f.prefix == 0 || end <= start {
		return 0, 0
	}
	return start - ring.MetaLenSize, end - start
}

// gatherMost is the largest record written as one gathered write. On the
// single-GPU H200 host and the 2-core VM, over libfabric shm, gathering
// moved one rail's 4 KiB records 1.8-2× faster and its 1 MiB records
// 0-13% faster, but its 4 MiB records 10-12% slower (and four rails' 64
// MiB messages of 4 MiB records 15% slower): a large record amortises its
// fence.
const gatherMost = 1<<20 + 64<<10

// gatherParts makes the record's writes ws[n:] (header, meta, payload; the
// last with the immediate) one gathered write where rail takes that many
// parts and the record is at most gatherMost bytes: on a provider without
// write-after-write order, writes one by one cost a fence, a round trip
// through the reader's progress, per record.
func (l *writerLink) gatherParts(ws []railWrite, n, rail int) []railWrite {
	parts := ws[n:]
	if len(parts) < 2 || len(parts) > len(gatherSet{}.parts) || len(parts) > l.rails.gather(rail) {
		return ws
	}
	total := 0
	for _, w := range parts {
		total += len(w.src)
	}
	if total > gatherMost {
		return ws
	}
	g := &gatherSet{n: len(parts)} // one allocation per record
	for k, w := range parts {
		g.parts[k], g.regs[k] = w.src, w.reg
	}
	gw := railWrite{g: g, remote: parts[0].remote, off: parts[0].off, imm: parts[len(parts)-1].imm, withImm: true}
	clear(parts) // drop references to pool memory
	return append(ws[:n], gw)
}

// post reserves ring space for a record and hands its writes to the
// record's rail (rails.go): the header (and in write-twice mode a pad
// header) from registered slots, the payload from the shared pool (or
// from its staging slot, which is then busy until the write completed
// locally), then commits. It returns false when there is no room.
func (l *writerLink) post(f *flight) (bool, error) {
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
	ws := l.ws[:0]
	if twice && s.Pad > 0 {
		pb := mem[slot+wPadOff : slot+wPadOff+ring.HeaderSize]
		if err := l.w.PutPad(pb, s); err != nil {
			return false, err
		}
		ws = append(ws, railWrite{src: pb, reg: l.local, remote: l.remote, off: base + s.PadOffset})
	}
	n := len(ws)
	ws, err = l.recordParts(ws, f, mem[slot:slot+wPadOff])
	if err != nil {
		return false, err
	}
	// The record's writes in ring order; the last one carries the
	// immediate (write-imm), so the reader sees the record whole.
	dst := base + s.Offset
	for i := n; i < len(ws); i++ {
		ws[i].remote, ws[i].off = l.remote, dst
		dst += uint64(len(ws[i].src))
	}
	if !twice {
		ws[len(ws)-1].imm, ws[len(ws)-1].withImm = s.Imm, true
		ws = l.gatherParts(ws, n, s.Rail)
	}
	if err := l.w.Commit(s, &f.hdr); err != nil {
		return false, err
	}
	if twice {
		tb := mem[slot+wTailOff : slot+wTailOff+ring.WordSize]
		l.w.PutTail(tb)
		ws = append(ws, railWrite{src: tb, reg: l.local, remote: l.remote, off: l.tailOff})
	}
	f.rail, f.posted = s.Rail, l.rails.push(s.Rail, ws...)
	clear(ws) // drop references to pool memory
	l.ws = ws[:0]
	if f.slot != 0 {
		// Free once the rail completed every write posted so far.
		sl := &l.stg.slots[f.slot-1]
		sl.state, sl.rail, sl.doneAt = slotPosted, f.rail, f.posted
		f.slot = 0
	}
	l.stats.Records.Add(1)
	return true, nil
}
