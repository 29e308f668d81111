package bridge

import (
	"encoding/binary"
	"fmt"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
)

// Messages with meta (§3.7, ring format version 2): a sample's meta block
// (zerocopy.Sample.Meta) travels in front of its payload as one byte
// stream, | u32 meta length | meta | payload |, chunked as one message.
// The writer sends each record as up to three writes from registered
// memory, in ring order: the header (with the meta length word right
// after it in the same slot, for a message's first record), the meta
// bytes (from the topic's host pool, where the meta block lies), the
// payload bytes (from the pool, or from the staging slot a device payload
// was copied into). The reader (readerLink.deliver) splits each record at
// the prefix's end: meta into a buffer, payload into the loan.

// recordParts appends f's writes (source and region; the caller aims
// them) to ws after PutHeader filled the header slot (hs: the header then
// the meta length word, slot memory of l.local).
func (l *writerLink) recordParts(ws []railWrite, f *flight, hs []byte) ([]railWrite, error) {
	head := hs[:ring.HeaderSize]
	if f.prefix > 0 && f.off < ring.MetaLenSize {
		if f.off != 0 || f.hdr.PayloadLen < ring.MetaLenSize {
			return ws, fmt.Errorf("topic %s: chunk %d of %d bytes cannot start the meta prefix", f.ot.name, f.hdr.Chunk, f.hdr.PayloadLen)
		}
		binary.LittleEndian.PutUint32(hs[ring.HeaderSize:], uint32(f.prefix-ring.MetaLenSize))
		head = hs[:ring.HeaderSize+ring.MetaLenSize]
	}
	ws = append(ws, railWrite{src: head, reg: l.local})
	if off, n := f.metaSpan(); n > 0 {
		meta := f.smp.Meta()
		if f.ot.reg == nil || off+n > uint64(len(meta)) {
			return ws, fmt.Errorf("topic %s: sample has no registered meta for chunk %d", f.ot.name, f.hdr.Chunk)
		}
		ws = append(ws, railWrite{src: meta[off : off+n], reg: f.ot.reg})
	}
	off, n := f.dataSpan()
	switch {
	case n == 0:
	case f.slot != 0:
		ws = append(ws, railWrite{src: l.stg.slots[f.slot-1].buf[:n], reg: l.stg.reg})
	default:
		payload := f.smp.Bytes()
		if payload == nil || off+n > uint64(len(payload)) {
			return ws, fmt.Errorf("topic %s: sample has no host bytes for chunk %d", f.ot.name, f.hdr.Chunk)
		}
		ws = append(ws, railWrite{src: payload[off : off+n], reg: f.ot.reg})
	}
	return ws, nil
}

// needsStage reports whether f's payload bytes go through a staging slot:
// its message is staged and the record carries payload (not only meta).
func (f *flight) needsStage() bool {
	_, n := f.dataSpan()
	return n > 0 && stages(f.ot, f.smp)
}

// startMeta reads the meta prefix of a message from its first record, when
// it has one, into t (prefix, meta buffer) and returns the payload size to
// loan: SizeHint less the prefix.
func (l *readerLink) startMeta(t *inTopic, rec *ring.Record) (uint64, error) {
	hint := ring.SizeHint(rec)
	if !rec.Meta {
		return hint, nil
	}
	src := l.r.Payload(rec)
	if len(src) < ring.MetaLenSize {
		return 0, fmt.Errorf("%w: first chunk of %d bytes holds no meta length", ring.ErrProtocol, len(src))
	}
	n := uint64(binary.LittleEndian.Uint32(src))
	prefix := ring.MetaLenSize + n
	if n == 0 || n > ring.MaxMeta || prefix >= hint {
		return 0, fmt.Errorf("%w: %d meta bytes in a message of at most %d bytes", ring.ErrProtocol, n, hint)
	}
	t.prefix, t.meta = prefix, make([]byte, n)
	return hint - prefix, nil
}

// gatherMeta copies the meta bytes of the record at stream offset off
// (src: its payload in the ring) into the message's meta buffer.
func (t *inTopic) gatherMeta(off uint64, src []byte) {
	start, end := max(off, ring.MetaLenSize), min(off+uint64(len(src)), t.prefix)
	if t.prefix == 0 || end <= start {
		return
	}
	copy(t.meta[start-ring.MetaLenSize:end-ring.MetaLenSize], src[start-off:end-off])
}

// payloadPart is the part of a record at stream offset off (src: its
// bytes) that is payload, and its offset in the payload.
func payloadPart(off, prefix uint64, src []byte) (uint64, []byte) {
	start := max(off, prefix)
	if end := off + uint64(len(src)); end <= start {
		return 0, nil
	}
	return start - prefix, src[start-off:]
}
