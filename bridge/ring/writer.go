package ring

import (
	"fmt"
	"sort"
)

// Record is one record in the ring: its header fields and where it lies.
// The Writer keeps one per in-flight record; the Reader returns one per
// received record.
type Record struct {
	Header
	Pos uint64 // ring position of the record's header (monotonic)
	Off uint64 // Pos mod Size: the record's offset in the ring
	Len uint64 // record length: header + payload + padding, a multiple of 64
	Pad uint64 // gap skipped at the end of the ring just before this record (0 if none)
	// Dup (reader only) marks a retransmitted record already consumed
	// before a link failure: consume it, do not deliver it.
	Dup bool

	// tsi (reader only) is 1 + the index of the topic's duplicate-
	// suppression state; an index, not a pointer, keeps Record free of
	// pointers (no write barriers or GC scanning for the in-flight queue).
	tsi uint32
}

// End is the position just after the record: the Head once it is consumed.
func (r *Record) End() uint64 { return r.Pos + r.Len }

// Slot is a reservation returned by Writer.Reserve: where to write the
// record and what to tell the reader.
type Slot struct {
	Pos    uint64 // ring position of the record
	Offset uint64 // ring offset to write the record at (Pos mod Size)
	Len    uint64 // record length
	// Pad is the gap skipped at the end of the ring before the record (0 if
	// none). In WriteTwice mode a pad header (Writer.PutPad) must be written
	// at PadOffset before the tail write that covers this record.
	Pad       uint64
	PadOffset uint64
	// Imm is the immediate data to send with the record's write (WriteImm).
	Imm uint64
	// Rail is the rail to post every write of the record on (0 with one
	// rail; format.go, "Rails").
	Rail int

	lap uint64 // Pos / Size
}

// Writer is the publish side's half of one ring: Tail, DelayedHead, the
// Exceed check, and the records written but not yet consumed by the remote
// reader. It does no I/O and is not safe for concurrent use.
//
// Per record: Reserve → PutHeader (and PutPad in WriteTwice mode when
// Slot.Pad > 0) → post the write(s) → Commit. In WriteTwice mode, after the
// data write(s) write Tail() into the reader's tail slot.
type Writer struct {
	cfg       Config
	maxRecord uint64

	tail    uint64 // next write position
	tailOff uint64 // tail mod Size
	tailLap uint64 // tail / Size
	dhead   uint64 // DelayedHead: the last head the reader wrote back

	// The outstanding reservation (valid if reserved): its position,
	// length and gap. Kept as fields, not a Slot: copying and comparing
	// whole Slots was a measurable part of the per-record cost.
	resvPos, resvLen, resvPad uint64
	resvRail                  int
	reserved                  bool
	// lastRail is the rail of the last committed record: a record after a
	// gap goes on the same one.
	lastRail int

	// In-flight records in ring order, a circular queue: q[(qHead+i)%len(q)]
	// for i < qLen. Records with End ≤ dhead are acknowledged and wait for
	// Acked to hand them out.
	q     []Record
	qHead int
	qLen  int
}

// NewWriter returns a writer for an empty ring (all pointers 0).
func NewWriter(cfg Config) (*Writer, error) {
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	return &Writer{cfg: c, maxRecord: c.MaxRecord(), q: make([]Record, 16)}, nil
}

// Config returns the validated configuration (defaults filled in).
func (w *Writer) Config() Config { return w.cfg }

// Tail is the writer's next write position; in WriteTwice mode, the value
// to write into the reader's tail slot after the data.
func (w *Writer) Tail() uint64 { return w.tail }

// DelayedHead is the last head value the reader wrote back.
func (w *Writer) DelayedHead() uint64 { return w.dhead }

// Free is the number of bytes the writer may still fill (a record may also
// need a gap at the end of the ring).
func (w *Writer) Free() uint64 { return w.cfg.Size - (w.tail - w.dhead) }

// InFlight is the number of records committed and not yet handed out by
// Acked.
func (w *Writer) InFlight() int { return w.qLen }

// Chunks is the number of records a message of msgLen payload bytes needs:
// ceil(msgLen/MaxChunk), at least 1. With NoChunking, or when the count
// would not fit the 32-bit chunk fields, a message that needs more than one
// record is refused with ErrTooLarge.
func (w *Writer) Chunks(msgLen uint64) (uint32, error) {
	mc := w.cfg.MaxChunk
	if msgLen <= mc {
		return 1, nil
	}
	if w.cfg.NoChunking {
		return 0, fmt.Errorf("%w: message of %d bytes exceeds the %d-byte record payload limit and chunking is disabled", ErrTooLarge, msgLen, mc)
	}
	n := msgLen / mc
	if msgLen%mc != 0 {
		n++
	}
	if n > 1<<32-1 {
		return 0, fmt.Errorf("%w: message of %d bytes needs %d chunks of %d bytes, more than the 32-bit chunk count allows", ErrTooLarge, msgLen, n, mc)
	}
	return uint32(n), nil
}

// ChunkSpan is the part of a msgLen-byte message that chunk i carries:
// payload bytes [off, off+n). All chunks but the last carry MaxChunk bytes.
func (w *Writer) ChunkSpan(msgLen uint64, i uint32) (off, n uint64) {
	return Chunking{Len: w.cfg.MaxChunk}.Span(msgLen, i)
}

// Chunking is how a message is cut into records: Count chunks, each but
// the last of Len payload bytes (the header's rule: chunk i at message
// offset i·Len).
type Chunking struct {
	Count uint32
	Len   uint64
}

// Span is the part of a msgLen-byte message that chunk i carries: payload
// bytes [off, off+n).
func (c Chunking) Span(msgLen uint64, i uint32) (off, n uint64) {
	off = uint64(i) * c.Len
	if off >= msgLen {
		return msgLen, 0
	}
	return off, min(c.Len, msgLen-off)
}

// Split plans the chunks of a msgLen-byte message: as many as MaxChunk
// needs (Chunks), and at least stripes where each still carries minStripe
// bytes or more (so that one message spreads over that many rails), all of
// one length (rounded up to 64 bytes) but the last. With NoChunking, or
// one record's worth, it is one chunk.
func (w *Writer) Split(msgLen uint64, stripes int, minStripe uint64) (Chunking, error) {
	n, err := w.Chunks(msgLen)
	if err != nil {
		return Chunking{}, err
	}
	if stripes > 1 && !w.cfg.NoChunking && minStripe > 0 {
		n = max(n, uint32(min(uint64(stripes), msgLen/minStripe)))
	}
	if n <= 1 {
		return Chunking{Count: 1, Len: msgLen}, nil
	}
	c := min(roundUp64((msgLen+uint64(n)-1)/uint64(n)), w.cfg.MaxChunk)
	if c >= msgLen {
		return Chunking{Count: 1, Len: msgLen}, nil
	}
	return Chunking{Count: uint32((msgLen + c - 1) / c), Len: c}, nil
}

// Reserve finds room for a record of recordLen bytes (RecordLen(payload)):
// at Tail, or at offset 0 of the next pass when it does not fit before the
// end of the ring. It returns ErrFull when the record (with the gap) would
// pass DelayedHead + Size — the conservative Exceed check: the space up to
// DelayedHead + Size is known to be consumed — and ErrTooLarge for a record
// longer than MaxRecord. Reserve changes nothing but the outstanding
// reservation; calling it again replaces that.
func (w *Writer) Reserve(recordLen uint64) (Slot, error) {
	if recordLen == 0 || recordLen%Align != 0 {
		return Slot{}, fmt.Errorf("%w: record length %d is not a positive multiple of %d", ErrMisuse, recordLen, Align)
	}
	if recordLen > w.maxRecord {
		return Slot{}, fmt.Errorf("%w: record of %d bytes, ring of %d bytes takes at most %d", ErrTooLarge, recordLen, w.cfg.Size, w.maxRecord)
	}
	size := w.cfg.Size
	s := Slot{Pos: w.tail, Offset: w.tailOff, Len: recordLen, lap: w.tailLap}
	if recordLen > size-w.tailOff {
		s.Pad, s.PadOffset = size-w.tailOff, w.tailOff
		s.Pos += s.Pad
		s.Offset = 0
		s.lap++
	}
	if s.Pos+recordLen-w.dhead > size {
		w.reserved = false
		return Slot{}, ErrFull
	}
	s.Imm = MakeImm(w.cfg.Base+s.Offset, recordLen, s.Pad != 0)
	if w.cfg.CompactImm {
		s.Imm &= 1<<32 - 1
	}
	s.Rail = w.rail(s.Pad != 0)
	w.resvPos, w.resvLen, w.resvPad, w.resvRail, w.reserved = s.Pos, s.Len, s.Pad, s.Rail, true
	return s, nil
}

// rail chooses the rail of the next record: the previous record's after a
// gap (the reader relies on it, format.go "Rails"), rail 0 when the ring
// holds nothing unacknowledged (a lone message goes where the reader
// polls most), round robin otherwise.
func (w *Writer) rail(gap bool) int {
	switch k := w.cfg.Rails; {
	case k <= 1:
		return 0
	case gap:
		return w.lastRail
	case w.tail == w.dhead:
		return 0
	default:
		return (w.lastRail + 1) % k
	}
}

// PutHeader writes the record header for h into dst[:64], the first bytes
// of the record to write at s.Offset. h.PayloadLen must match s.Len.
func (w *Writer) PutHeader(dst []byte, s Slot, h *Header) error {
	if err := w.checkHeader(s, h); err != nil {
		return err
	}
	if len(dst) < HeaderSize {
		return fmt.Errorf("%w: header buffer of %d bytes", ErrMisuse, len(dst))
	}
	putHeader(dst, h, 0, uint16(s.lap))
	return nil
}

// PutPad writes the pad record header for a reservation with a gap
// (s.Pad > 0) into dst[:64], to be written at s.PadOffset. Needed in
// WriteTwice mode only; WriteImm signals the gap in the immediate.
func (w *Writer) PutPad(dst []byte, s Slot) error {
	if s.Pad < HeaderSize || s.PadOffset+s.Pad != w.cfg.Size || s.lap == 0 {
		return fmt.Errorf("%w: slot has no gap to pad", ErrMisuse)
	}
	if len(dst) < HeaderSize {
		return fmt.Errorf("%w: header buffer of %d bytes", ErrMisuse, len(dst))
	}
	putHeader(dst, &Header{PayloadLen: s.Pad - HeaderSize}, flagPad, uint16(s.lap-1))
	return nil
}

func (w *Writer) checkHeader(s Slot, h *Header) error {
	if h.Chunks == 0 || h.Chunk >= h.Chunks {
		return fmt.Errorf("%w: chunk %d of %d", ErrMisuse, h.Chunk, h.Chunks)
	}
	if h.PayloadLen > w.cfg.MaxChunk {
		return fmt.Errorf("%w: payload %d exceeds max chunk %d", ErrMisuse, h.PayloadLen, w.cfg.MaxChunk)
	}
	if RecordLen(h.PayloadLen) != s.Len {
		return fmt.Errorf("%w: payload %d needs a %d-byte record, slot has %d", ErrMisuse, h.PayloadLen, RecordLen(h.PayloadLen), s.Len)
	}
	return nil
}

// Commit records that the reserved record has been handed to the transport:
// Tail moves past it and it stays in flight until the remote Head passes
// it. s must be the outstanding reservation and h its header.
func (w *Writer) Commit(s Slot, h *Header) error {
	if !w.reserved || s.Pos != w.resvPos || s.Len != w.resvLen || s.Pad != w.resvPad || s.Rail != w.resvRail {
		return fmt.Errorf("%w: commit of a slot that is not the outstanding reservation", ErrMisuse)
	}
	if err := w.checkHeader(s, h); err != nil {
		return err
	}
	// Offset and lap follow from the writer's own state, not the caller's
	// copy of the slot.
	off, lap := w.tailOff, w.tailLap
	if s.Pad != 0 {
		off, lap = 0, lap+1
	}
	w.push(Record{Header: *h, Pos: s.Pos, Off: off, Len: s.Len, Pad: s.Pad})
	w.tail = s.Pos + s.Len
	w.tailOff, w.tailLap = off+s.Len, lap
	w.lastRail = s.Rail
	if w.tailOff == w.cfg.Size {
		w.tailOff = 0
		w.tailLap++
	}
	w.reserved = false
	return nil
}

func (w *Writer) push(r Record) {
	if w.qLen == len(w.q) {
		q := make([]Record, 2*len(w.q))
		for i := 0; i < w.qLen; i++ {
			q[i] = *w.at(i)
		}
		w.q, w.qHead = q, 0
	}
	i := w.qHead + w.qLen
	if i >= len(w.q) {
		i -= len(w.q)
	}
	w.q[i] = r
	w.qLen++
}

// at returns the i-th in-flight record, oldest first.
func (w *Writer) at(i int) *Record {
	i += w.qHead
	if i >= len(w.q) {
		i -= len(w.q)
	}
	return &w.q[i]
}

// drop forgets the oldest in-flight record. Record holds no pointers, so
// the slot need not be cleared.
func (w *Writer) drop() {
	w.qHead++
	if w.qHead == len(w.q) {
		w.qHead = 0
	}
	w.qLen--
}

// OnHeadUpdate applies a head value the reader wrote back into the
// DelayedHead word. A value that is not a multiple of 64, goes backwards,
// passes Tail or does not end a record is a protocol error: it returns
// ErrProtocol and changes nothing. Repeating the current value is allowed.
func (w *Writer) OnHeadUpdate(head uint64) error {
	if head == w.dhead {
		return nil
	}
	switch {
	case head%Align != 0:
		return fmt.Errorf("%w: head %d is not a multiple of %d", ErrProtocol, head, Align)
	case head < w.dhead:
		return fmt.Errorf("%w: head update %d goes backwards from %d", ErrProtocol, head, w.dhead)
	case head > w.tail:
		return fmt.Errorf("%w: head update %d passes tail %d", ErrProtocol, head, w.tail)
	}
	// Head values are record ends; in-flight records are in ring order.
	i := sort.Search(w.qLen, func(i int) bool { return w.at(i).End() >= head })
	if i == w.qLen || w.at(i).End() != head {
		return fmt.Errorf("%w: head update %d does not end a record", ErrProtocol, head)
	}
	w.dhead = head
	return nil
}

// Acked appends to dst, oldest first, the in-flight records the remote
// reader has consumed (End ≤ DelayedHead) and forgets them: the publish side
// may release their samples (RELIABLE keeps a sample until then). A
// message is fully acknowledged with the record of its last chunk.
func (w *Writer) Acked(dst []Record) []Record {
	for w.qLen > 0 && w.q[w.qHead].End() <= w.dhead {
		dst = append(dst, w.q[w.qHead])
		w.drop()
	}
	return dst
}

// Rewind is for a link that failed and has been re-established: writes,
// immediates and head write-backs in flight are lost. It appends to dst,
// in ring order, the records not yet acknowledged (End > DelayedHead),
// removes them, and moves Tail back to DelayedHead; the caller then
// retransmits them (Reserve/Commit again, which gives the same slots when it
// resends them in order) before anything new. Apply the reader's reported
// Head with OnHeadUpdate first, so that records the reader has already
// consumed are acknowledged, not resent; the reader must then Resync to the
// new Tail. Acknowledged records stay for Acked.
func (w *Writer) Rewind(dst []Record) []Record {
	keep := sort.Search(w.qLen, func(i int) bool { return w.at(i).End() > w.dhead })
	for i := keep; i < w.qLen; i++ {
		dst = append(dst, *w.at(i))
	}
	w.qLen = keep
	w.tail = w.dhead
	w.tailOff, w.tailLap = w.tail%w.cfg.Size, w.tail/w.cfg.Size
	w.reserved = false
	w.lastRail = 0
	return dst
}

// Check verifies the writer's own state: Tail within DelayedHead + Size,
// in-flight records contiguous in ring order, ending at Tail, each inside
// the ring. It is O(in-flight records), for tests and debugging.
func (w *Writer) Check() error {
	size := w.cfg.Size
	if w.tail < w.dhead || w.tail-w.dhead > size {
		return fmt.Errorf("writer: tail %d outside [delayed head %d, +size %d]", w.tail, w.dhead, size)
	}
	if w.tail%Align != 0 || w.dhead%Align != 0 || w.tailOff != w.tail%size || w.tailLap != w.tail/size {
		return fmt.Errorf("writer: tail %d (offset %d, lap %d) / delayed head %d inconsistent", w.tail, w.tailOff, w.tailLap, w.dhead)
	}
	if w.qLen == 0 {
		if w.tail != w.dhead {
			return fmt.Errorf("writer: no records in flight but tail %d ≠ delayed head %d", w.tail, w.dhead)
		}
		return nil
	}
	first := w.at(0)
	if first.Pad > first.Pos || first.Pos-first.Pad > w.dhead {
		return fmt.Errorf("writer: oldest in-flight record starts at %d, after delayed head %d", first.Pos-first.Pad, w.dhead)
	}
	var prev uint64
	for i := 0; i < w.qLen; i++ {
		r := w.at(i)
		if r.Len == 0 || r.Len%Align != 0 || r.Off != r.Pos%size || r.Off+r.Len > size || (r.Pad != 0 && r.Off != 0) {
			return fmt.Errorf("writer: in-flight record %d (pos %d off %d len %d pad %d) malformed", i, r.Pos, r.Off, r.Len, r.Pad)
		}
		if i > 0 && r.Pos-r.Pad != prev {
			return fmt.Errorf("writer: in-flight record %d starts at %d, previous ended at %d", i, r.Pos-r.Pad, prev)
		}
		prev = r.End()
	}
	if prev != w.tail {
		return fmt.Errorf("writer: last in-flight record ends at %d, tail is %d", prev, w.tail)
	}
	return nil
}
