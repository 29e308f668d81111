package ring

import "fmt"

// Assembler checks the chunks of each topic's messages and says where each
// chunk's payload goes in its message. It owns no message buffers: the
// subscribe side places payloads (for example into a GPU pool allocation
// of SizeHint bytes made at chunk 0). Feed it consumed, non-duplicate
// records in order; chunks of different topics may interleave, chunks of
// one topic may not. Its state survives link failures: retransmission
// resumes with the first chunk not consumed. Not safe for concurrent use.
type Assembler struct {
	topics map[uint32]*asmState
}

type asmState struct {
	seq    uint64
	next   uint32 // next chunk index expected
	count  uint32
	chunk  uint64 // payload length of every chunk but the last
	meta   bool   // the message's records carry the META flag
	active bool
}

// SizeHint is an upper bound of a chunked message's size, known from its
// first chunk: Chunks × PayloadLen (exact for one chunk, within one chunk
// otherwise).
func SizeHint(rec *Record) uint64 { return uint64(rec.Chunks) * rec.PayloadLen }

// Add takes the next record of a topic and returns the offset of its
// payload in the message and whether it completes the message (then the
// message size is off + rec.PayloadLen). A chunk out of order, a new
// message before the previous one is complete, or chunk lengths that
// disagree return ErrProtocol and change nothing.
func (a *Assembler) Add(rec *Record) (off uint64, done bool, err error) {
	if a.topics == nil {
		a.topics = map[uint32]*asmState{}
	}
	st := a.topics[rec.Topic]
	if st == nil {
		st = &asmState{}
		a.topics[rec.Topic] = st
	}
	if rec.Chunks == 0 || rec.Chunk >= rec.Chunks {
		return 0, false, fmt.Errorf("%w: topic %d seq %d: chunk %d of %d", ErrProtocol, rec.Topic, rec.Seq, rec.Chunk, rec.Chunks)
	}
	if rec.Chunk == 0 {
		if st.active {
			return 0, false, fmt.Errorf("%w: topic %d: message %d starts before message %d is complete (%d of %d chunks)", ErrProtocol, rec.Topic, rec.Seq, st.seq, st.next, st.count)
		}
		if rec.Chunks == 1 {
			return 0, true, nil
		}
		if rec.PayloadLen == 0 {
			return 0, false, fmt.Errorf("%w: topic %d seq %d: empty first chunk of %d", ErrProtocol, rec.Topic, rec.Seq, rec.Chunks)
		}
		*st = asmState{seq: rec.Seq, next: 1, count: rec.Chunks, chunk: rec.PayloadLen, meta: rec.Meta, active: true}
		return 0, false, nil
	}
	if !st.active || rec.Seq != st.seq || rec.Chunk != st.next || rec.Chunks != st.count || rec.Meta != st.meta {
		return 0, false, fmt.Errorf("%w: topic %d: got seq %d chunk %d of %d (meta %v), expected seq %d chunk %d of %d (meta %v)", ErrProtocol, rec.Topic, rec.Seq, rec.Chunk, rec.Chunks, rec.Meta, st.seq, st.next, st.count, st.meta)
	}
	last := rec.Chunk == rec.Chunks-1
	if (!last && rec.PayloadLen != st.chunk) || (last && (rec.PayloadLen == 0 || rec.PayloadLen > st.chunk)) {
		return 0, false, fmt.Errorf("%w: topic %d seq %d chunk %d of %d carries %d bytes, chunk size is %d", ErrProtocol, rec.Topic, rec.Seq, rec.Chunk, rec.Chunks, rec.PayloadLen, st.chunk)
	}
	off = uint64(rec.Chunk) * st.chunk
	if last {
		st.active = false
		return off, true, nil
	}
	st.next++
	return off, false, nil
}
