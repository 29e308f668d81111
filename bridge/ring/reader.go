package ring

import "fmt"

// topicState is the reader's duplicate-suppression state for one topic:
// the (sequence, chunk) of the last record received and of the last one
// consumed. Retransmissions after a link failure repeat records in order,
// so a record not beyond the last received one is a duplicate. Resync
// rolls "received" back to "consumed", because records received but not
// consumed are dropped and will come again.
type topicState struct {
	recvSeq, consSeq     uint64
	recvChunk, consChunk uint32
	recvValid, consValid bool
}

// after reports whether (seq, chunk) comes after (s, c).
func after(seq uint64, chunk uint32, s uint64, c uint32) bool {
	return seq > s || (seq == s && chunk > c)
}

// Reader is the subscribe side's half of one ring: Head, the position up
// to which records have been received, duplicate suppression per topic and
// the watermark for head write-backs. It reads record headers from a view
// of the ring memory and does no other I/O. It is not safe for concurrent
// use.
//
// Records are consumed in the order they were received, one at a time:
// Consume(rec) requires rec to start at Head. The caller may process
// (copy out) several received records before consuming them, but must not
// use a record's bytes after consuming it: the writer may overwrite them.
type Reader struct {
	cfg       Config
	ring      []byte
	maxRecord uint64
	thresh    uint64

	head    uint64 // consumed position
	synced  uint64 // the last Head a write-back was requested for
	recv    uint64 // position after the last received record
	recvOff uint64 // recv mod Size
	recvLap uint64 // recv / Size

	topics    map[uint32]uint32 // topic id → 1 + index in tstates
	tstates   []topicState
	lastTopic uint32 // one-entry cache in front of topics
	lastIdx   uint32 // 1 + index, 0 if the cache is empty
}

// NewReader returns a reader for an empty ring. ring is the reader's view
// of the ring memory, exactly cfg.Size bytes; the reader only reads it.
func NewReader(cfg Config, ring []byte) (*Reader, error) {
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	if uint64(len(ring)) != c.Size {
		return nil, fmt.Errorf("%w: ring view of %d bytes for a %d-byte ring", ErrConfig, len(ring), c.Size)
	}
	return &Reader{cfg: c, ring: ring, maxRecord: c.MaxRecord(), thresh: c.threshold(), topics: map[uint32]uint32{}}, nil
}

// Config returns the validated configuration (defaults filled in).
func (r *Reader) Config() Config { return r.cfg }

// Head is the consumed position: the value a head write-back carries.
func (r *Reader) Head() uint64 { return r.head }

// Received is the position after the last received record.
func (r *Reader) Received() uint64 { return r.recv }

// Pending is the number of bytes received and not consumed.
func (r *Reader) Pending() uint64 { return r.recv - r.head }

// topic returns 1 + the index of the topic's state, creating it.
func (r *Reader) topic(id uint32) uint32 {
	if r.lastIdx != 0 && r.lastTopic == id {
		return r.lastIdx
	}
	i := r.topics[id]
	if i == 0 {
		r.tstates = append(r.tstates, topicState{})
		i = uint32(len(r.tstates))
		r.topics[id] = i
	}
	r.lastTopic, r.lastIdx = id, i
	return i
}

// OnImmediate handles the immediate data of one write-with-immediate
// completion (WriteImm mode) and returns the record it announces, its
// header parsed and validated from the ring. Immediates must arrive in the
// order the writer committed the records. An immediate out of range or out
// of order returns ErrProtocol, a bad header ErrCorrupt or ErrVersion; the
// reader's state is then unchanged.
func (r *Reader) OnImmediate(imm uint64) (Record, error) {
	if r.cfg.Mode != WriteImm {
		return Record{}, fmt.Errorf("%w: OnImmediate on a %v reader", ErrMisuse, r.cfg.Mode)
	}
	size := r.cfg.Size
	n := ImmLen(imm)
	if n == 0 {
		return Record{}, fmt.Errorf("%w: immediate %#x has length 0 (a rail hello, not a record)", ErrProtocol, imm)
	}
	if n > r.maxRecord {
		return Record{}, fmt.Errorf("%w: immediate %#x announces a %d-byte record, at most %d", ErrProtocol, imm, n, r.maxRecord)
	}
	pos, off, lap, gap := r.recv, r.recvOff, r.recvLap, uint64(0)
	if ImmWrap(imm) {
		if off == 0 {
			return Record{}, fmt.Errorf("%w: immediate %#x skips to offset 0 from offset 0", ErrProtocol, imm)
		}
		if n <= size-off {
			return Record{}, fmt.Errorf("%w: immediate %#x skips to offset 0 but %d bytes fit at offset %d", ErrProtocol, imm, n, off)
		}
		gap = size - off
		pos, off, lap = pos+gap, 0, lap+1
	} else if n > size-off {
		return Record{}, fmt.Errorf("%w: immediate %#x: %d bytes at offset %d cross the end of the %d-byte ring", ErrProtocol, imm, n, off, size)
	}
	if !r.cfg.CompactImm {
		if got, want := ImmOffset(imm), r.cfg.Base+off; got != want {
			return Record{}, fmt.Errorf("%w: immediate %#x is for offset %d, expected %d (out of order?)", ErrProtocol, imm, got, want)
		}
	} else if imm>>32 != 0 {
		return Record{}, fmt.Errorf("%w: compact immediate %#x has offset bits", ErrProtocol, imm)
	}
	if pos+n-r.head > size {
		return Record{}, fmt.Errorf("%w: immediate %#x: record ending at %d passes head %d + size %d", ErrProtocol, imm, pos+n, r.head, size)
	}
	rec := Record{Pos: pos, Off: off, Len: n, Pad: gap}
	flags, hlap, err := parseHeader(r.ring[off:off+HeaderSize], &rec.Header)
	if err != nil {
		return Record{}, fmt.Errorf("record at position %d: %w", pos, err)
	}
	if err := r.checkRecord(&rec.Header, flags, hlap, lap, pos); err != nil {
		return Record{}, err
	}
	if RecordLen(rec.PayloadLen) != n {
		return Record{}, fmt.Errorf("%w: record at position %d has a %d-byte payload, the immediate says %d bytes", ErrCorrupt, pos, rec.PayloadLen, n)
	}
	r.accept(&rec)
	r.recv, r.recvOff, r.recvLap = pos+n, off+n, lap
	if r.recvOff == size {
		r.recvOff, r.recvLap = 0, lap+1
	}
	return rec, nil
}

// NextRail finds, among the oldest received immediates of the ring's rails
// (heads[i], valid where has[i]), the one that announces the record this
// reader expects next (format.go, "Rails"): an immediate for the expected
// offset, or one with the wrap flag. It returns -1 while that immediate
// has not come yet. Several candidates, or every rail holding an immediate
// and none a candidate, is ErrProtocol: the writer broke the rails' rules.
// Pass the chosen immediate to OnImmediate, which validates it.
func (r *Reader) NextRail(heads []uint64, has []bool) (int, error) {
	if len(heads) != len(has) {
		return -1, fmt.Errorf("%w: %d heads, %d flags", ErrMisuse, len(heads), len(has))
	}
	want := r.cfg.Base + r.recvOff
	found, waiting := -1, false
	for i, imm := range heads {
		if !has[i] {
			waiting = true
			continue
		}
		if len(heads) > 1 && !ImmWrap(imm) && ImmOffset(imm) != want {
			continue
		}
		if found >= 0 {
			return -1, fmt.Errorf("%w: rails %d and %d both announce the record at offset %d (%#x, %#x)", ErrProtocol, found, i, r.recvOff, heads[found], imm)
		}
		found = i
	}
	if found < 0 && !waiting {
		return -1, fmt.Errorf("%w: no rail announces the record at offset %d next (their first immediates: %#x)", ErrProtocol, r.recvOff, heads)
	}
	return found, nil
}

// checkRecord validates the fields of a non-pad record header.
func (r *Reader) checkRecord(h *Header, flags uint8, hlap uint16, lap, pos uint64) error {
	switch {
	case flags&flagPad != 0:
		return fmt.Errorf("%w: pad record where a record must start (position %d)", ErrCorrupt, pos)
	case hlap != uint16(lap):
		return fmt.Errorf("%w: record at position %d has lap %d, expected %d (stale data?)", ErrCorrupt, pos, hlap, uint16(lap))
	case h.Chunks == 0 || h.Chunk >= h.Chunks:
		return fmt.Errorf("%w: record at position %d is chunk %d of %d", ErrCorrupt, pos, h.Chunk, h.Chunks)
	case h.PayloadLen > r.cfg.MaxChunk:
		return fmt.Errorf("%w: record at position %d has a %d-byte payload, max chunk is %d", ErrCorrupt, pos, h.PayloadLen, r.cfg.MaxChunk)
	}
	return nil
}

// accept applies duplicate suppression to a validated record.
func (r *Reader) accept(rec *Record) {
	rec.tsi = r.topic(rec.Topic)
	ts := &r.tstates[rec.tsi-1]
	if ts.recvValid && !after(rec.Seq, rec.Chunk, ts.recvSeq, ts.recvChunk) {
		rec.Dup = true
		return
	}
	ts.recvSeq, ts.recvChunk, ts.recvValid = rec.Seq, rec.Chunk, true
}

// OnTail handles a value read from the tail slot (WriteTwice mode): it
// parses the records between the received position and tail from the ring
// and appends them to dst. A tail equal to the received position yields
// nothing. A tail that is not a multiple of 64, goes backwards or passes
// Head + Size returns ErrProtocol and changes nothing. A bad header returns
// the records before it (the reader's state covers exactly those) and
// ErrCorrupt, ErrVersion or ErrProtocol.
func (r *Reader) OnTail(tail uint64, dst []Record) ([]Record, error) {
	if r.cfg.Mode != WriteTwice {
		return dst, fmt.Errorf("%w: OnTail on a %v reader", ErrMisuse, r.cfg.Mode)
	}
	size := r.cfg.Size
	switch {
	case tail%Align != 0:
		return dst, fmt.Errorf("%w: tail %d is not a multiple of %d", ErrProtocol, tail, Align)
	case tail < r.recv:
		return dst, fmt.Errorf("%w: tail %d goes backwards from %d", ErrProtocol, tail, r.recv)
	case tail-r.head > size:
		return dst, fmt.Errorf("%w: tail %d passes head %d + size %d", ErrProtocol, tail, r.head, size)
	}
	for r.recv < tail {
		pos, off, lap := r.recv, r.recvOff, r.recvLap
		var h Header
		flags, hlap, err := parseHeader(r.ring[off:off+HeaderSize], &h)
		if err != nil {
			return dst, fmt.Errorf("record at position %d: %w", pos, err)
		}
		var gap uint64
		if flags&flagPad != 0 {
			gap = size - off
			switch {
			case off == 0:
				return dst, fmt.Errorf("%w: pad record at offset 0 (position %d)", ErrCorrupt, pos)
			case hlap != uint16(lap):
				return dst, fmt.Errorf("%w: pad record at position %d has lap %d, expected %d", ErrCorrupt, pos, hlap, uint16(lap))
			case h.PayloadLen != gap-HeaderSize || h != (Header{PayloadLen: h.PayloadLen}):
				return dst, fmt.Errorf("%w: pad record at position %d does not fill the %d bytes to the end of the ring", ErrCorrupt, pos, gap)
			case pos+gap >= tail:
				return dst, fmt.Errorf("%w: tail %d ends at a pad record (position %d)", ErrProtocol, tail, pos)
			}
			pos, off, lap = pos+gap, 0, lap+1
			h = Header{}
			flags, hlap, err = parseHeader(r.ring[:HeaderSize], &h)
			if err != nil {
				return dst, fmt.Errorf("record at position %d: %w", pos, err)
			}
		}
		if err := r.checkRecord(&h, flags, hlap, lap, pos); err != nil {
			return dst, err
		}
		n := RecordLen(h.PayloadLen) // PayloadLen ≤ MaxChunk: no overflow
		if n > size-off || n > tail-pos {
			return dst, fmt.Errorf("%w: %d-byte record at position %d passes the end of the ring or tail %d", ErrCorrupt, n, pos, tail)
		}
		rec := Record{Header: h, Pos: pos, Off: off, Len: n, Pad: gap}
		r.accept(&rec)
		dst = append(dst, rec)
		r.recv, r.recvOff, r.recvLap = pos+n, off+n, lap
		if r.recvOff == size {
			r.recvOff, r.recvLap = 0, lap+1
		}
	}
	return dst, nil
}

// Payload is the record's payload in the ring view (nil for a record that
// does not lie inside the ring). Valid until the record is consumed.
func (r *Reader) Payload(rec *Record) []byte {
	start := rec.Off + HeaderSize
	if rec.Off > r.cfg.Size || rec.PayloadLen > r.cfg.Size || start+rec.PayloadLen > r.cfg.Size {
		return nil
	}
	return r.ring[start : start+rec.PayloadLen : start+rec.PayloadLen]
}

// Consume marks the record consumed: Head moves past it (and past the gap
// before it). Records must be consumed in the order received: rec must
// start at Head, else ErrMisuse. Duplicates (rec.Dup) are consumed like the
// others, just not delivered. It reports whether a head write-back is due:
// the bytes consumed since the last one reached the watermark (always, for
// EveryRecord). The value to write back is Head(); a transport with a
// write-back still in flight sends the newest Head() when it completes.
func (r *Reader) Consume(rec *Record) (writeBack bool, err error) {
	if rec.Len == 0 || rec.Len%Align != 0 || rec.Pad > rec.Pos || rec.Pos-rec.Pad != r.head || rec.Len > r.recv-rec.Pos || rec.Pos > r.recv {
		return false, fmt.Errorf("%w: consume of the record at %d (len %d, pad %d); head %d, received %d: records are consumed in order", ErrMisuse, rec.Pos, rec.Len, rec.Pad, r.head, r.recv)
	}
	r.head = rec.Pos + rec.Len
	if !rec.Dup {
		i := rec.tsi
		if i == 0 || i > uint32(len(r.tstates)) {
			i = r.topic(rec.Topic)
		}
		ts := &r.tstates[i-1]
		ts.consSeq, ts.consChunk, ts.consValid = rec.Seq, rec.Chunk, true
	}
	if r.head-r.synced >= r.thresh {
		r.synced = r.head
		return true, nil
	}
	return false, nil
}

// Flush reports whether Head has moved since the last write-back and, if
// so, counts a write-back of Head() as due now. Call it when the reader is
// idle (everything received has been consumed) so that the writer releases
// RELIABLE samples at the end of a burst instead of waiting for the
// watermark. Progress never depends on it: MaxRecord is chosen so that the
// writer cannot wait forever on watermark write-backs alone.
func (r *Reader) Flush() bool {
	if r.head == r.synced {
		return false
	}
	r.synced = r.head
	return true
}

// Resync restarts the reader after a link failure at the writer's restart
// position pos (its Tail after Rewind). Records received but not consumed
// are dropped (they will be retransmitted; the caller must be done with
// them). pos must not be after Head nor more than Size before it (the
// writer's DelayedHead can lag Head by at most Size); otherwise ErrProtocol
// and nothing changes. When pos < Head the writer resends records already
// consumed, and the reader flags them Dup. In WriteTwice mode the caller
// sets the tail slot to pos before the writer resumes.
func (r *Reader) Resync(pos uint64) error {
	if pos%Align != 0 || pos > r.head || r.head-pos > r.cfg.Size {
		return fmt.Errorf("%w: resync to %d with head %d (size %d)", ErrProtocol, pos, r.head, r.cfg.Size)
	}
	r.head, r.synced, r.recv = pos, pos, pos
	r.recvOff, r.recvLap = pos%r.cfg.Size, pos/r.cfg.Size
	for i := range r.tstates {
		ts := &r.tstates[i]
		ts.recvSeq, ts.recvChunk, ts.recvValid = ts.consSeq, ts.consChunk, ts.consValid
	}
	return nil
}

// Check verifies the reader's own state, for tests and debugging.
func (r *Reader) Check() error {
	size := r.cfg.Size
	switch {
	case r.head%Align != 0 || r.recv%Align != 0 || r.synced%Align != 0:
		return fmt.Errorf("reader: head %d / received %d / synced %d not multiples of %d", r.head, r.recv, r.synced, Align)
	case r.synced > r.head || r.head > r.recv || r.recv-r.head > size:
		return fmt.Errorf("reader: want synced %d ≤ head %d ≤ received %d ≤ head + %d", r.synced, r.head, r.recv, size)
	case r.recvOff != r.recv%size || r.recvLap != r.recv/size:
		return fmt.Errorf("reader: received %d has offset %d lap %d", r.recv, r.recvOff, r.recvLap)
	}
	return nil
}
