package ring

import (
	"errors"
	"testing"
)

// pair is a writer and a reader of one ring whose memory is a plain slice:
// writes "land" when the test copies them in.
type pair struct {
	t    testing.TB
	w    *Writer
	r    *Reader
	ring []byte
}

func newPair(t testing.TB, cfg Config) *pair {
	t.Helper()
	w, err := NewWriter(cfg)
	if err != nil {
		t.Fatalf("NewWriter(%+v): %v", cfg, err)
	}
	ring := make([]byte, cfg.Size)
	r, err := NewReader(cfg, ring)
	if err != nil {
		t.Fatalf("NewReader: %v", err)
	}
	return &pair{t: t, w: w, r: r, ring: ring}
}

// write reserves, lands and commits one record (and its pad header in
// WriteTwice mode). It returns the slot or the Reserve error.
func (p *pair) write(h Header, payload []byte) (Slot, error) {
	p.t.Helper()
	h.PayloadLen = uint64(len(payload))
	if h.Chunks == 0 {
		h.Chunks = 1
	}
	s, err := p.w.Reserve(RecordLen(h.PayloadLen))
	if err != nil {
		return s, err
	}
	if p.w.cfg.Mode == WriteTwice && s.Pad > 0 {
		if err := p.w.PutPad(p.ring[s.PadOffset:], s); err != nil {
			p.t.Fatalf("PutPad: %v", err)
		}
	}
	if err := p.w.PutHeader(p.ring[s.Offset:], s, &h); err != nil {
		p.t.Fatalf("PutHeader: %v", err)
	}
	copy(p.ring[s.Offset+HeaderSize:], payload)
	if err := p.w.Commit(s, &h); err != nil {
		p.t.Fatalf("Commit: %v", err)
	}
	return s, nil
}

func (p *pair) mustWrite(h Header, payload []byte) Slot {
	p.t.Helper()
	s, err := p.write(h, payload)
	if err != nil {
		p.t.Fatalf("write %+v (%d bytes): %v", h, len(payload), err)
	}
	return s
}

// receive hands the slot's notification to the reader: the immediate, or
// the writer's current tail.
func (p *pair) receive(s Slot) []Record {
	p.t.Helper()
	if p.w.cfg.Mode == WriteImm {
		rec, err := p.r.OnImmediate(s.Imm)
		if err != nil {
			p.t.Fatalf("OnImmediate(%#x): %v", s.Imm, err)
		}
		return []Record{rec}
	}
	recs, err := p.r.OnTail(p.w.Tail(), nil)
	if err != nil {
		p.t.Fatalf("OnTail(%d): %v", p.w.Tail(), err)
	}
	return recs
}

// consume consumes rec and, when a write-back is due, applies it to the
// writer at once. It returns whether one was due.
func (p *pair) consume(rec Record) bool {
	p.t.Helper()
	wb, err := p.r.Consume(&rec)
	if err != nil {
		p.t.Fatalf("Consume: %v", err)
	}
	if wb {
		if err := p.w.OnHeadUpdate(p.r.Head()); err != nil {
			p.t.Fatalf("OnHeadUpdate(%d): %v", p.r.Head(), err)
		}
	}
	p.check()
	return wb
}

func (p *pair) check() {
	p.t.Helper()
	if err := CheckInvariants(Snapshot(p.w, p.r)); err != nil {
		p.t.Fatal(err)
	}
	if err := p.w.Check(); err != nil {
		p.t.Fatal(err)
	}
	if err := p.r.Check(); err != nil {
		p.t.Fatal(err)
	}
}

func wantErr(t testing.TB, err, target error, what string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i>>8)
	}
	return b
}
