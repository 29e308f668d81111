package ring

import (
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzReader feeds arbitrary immediates, tail values, resync positions and
// ring bytes to a Reader. It must never panic, its state must stay
// consistent (Check) and the records it returns must lie inside the ring,
// follow each other and be consumable in order.
//
// Input: byte 0 picks the size (256 + 64·(b%29)), byte 1 the mode (bit 0),
// watermark (bits 1–2), compact immediates (bit 3) and a small max chunk
// (bit 4); then Size bytes of ring memory; then operations of 9 bytes each
// (an opcode and a little-endian uint64 argument):
//
//	op%8 == 0: OnImmediate(arg)
//	op%8 == 1: OnImmediate of an immediate near the expected one
//	op%8 == 2: OnTail(arg)
//	op%8 == 3: OnTail(Received + 64·(arg%32))
//	op%8 == 4: Consume the oldest pending record (or a forged one if none)
//	op%8 == 5: Resync(Head − 64·(arg%8)), or Resync(arg) when arg's top bit is set
//	op%8 == 6: Flush
//	op%8 == 7: write the 8 bytes that follow the argument into the ring at
//	           arg%Size (an RDMA write landing; the seeds land headers so)
func FuzzReader(f *testing.F) {
	for _, seed := range readerSeeds(f) {
		f.Add(seed)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0})
	f.Fuzz(fuzzReader)
}

func fuzzReader(t *testing.T, data []byte) {
	{
		if len(data) < 2 {
			return
		}
		cfg := Config{
			Size:       256 + 64*uint64(data[0]%29),
			Mode:       Mode(data[1] & 1),
			Watermark:  Watermark(data[1] >> 1 & 3),
			CompactImm: data[1]&8 != 0,
		}
		if data[1]&16 != 0 {
			cfg.MaxChunk = min(100, cfg.MaxRecord()-HeaderSize)
		}
		data = data[2:]
		ring := make([]byte, cfg.Size)
		data = data[copy(ring, data):]
		r, err := NewReader(cfg, ring)
		if err != nil {
			t.Fatal(err)
		}
		size := cfg.Size
		var pending []Record
		var scratch []Record
		accept := func(recs ...Record) {
			for _, rec := range recs {
				start := rec.Pos - rec.Pad
				want := r.Head()
				if len(pending) > 0 {
					want = pending[len(pending)-1].End()
				}
				if rec.Pad > rec.Pos || start != want || rec.Off != rec.Pos%size || rec.Off+rec.Len > size ||
					rec.Len != RecordLen(rec.PayloadLen) || (rec.Pad != 0 && (rec.Off != 0 || rec.Pad >= rec.Len)) {
					t.Fatalf("record %+v does not follow %d", rec, want)
				}
				if p := r.Payload(&rec); uint64(len(p)) != rec.PayloadLen {
					t.Fatalf("payload of %+v: %d bytes", rec, len(p))
				}
				pending = append(pending, rec)
			}
			if len(pending) > 0 && pending[len(pending)-1].End() != r.Received() {
				t.Fatalf("records end at %d, received %d", pending[len(pending)-1].End(), r.Received())
			}
		}
		for ops := 0; len(data) > 0 && ops < 500; ops++ {
			op := data[0]
			var argb [8]byte
			data = data[1:]
			data = data[copy(argb[:], data):]
			arg := binary.LittleEndian.Uint64(argb[:])
			before := Snapshot(&Writer{cfg: cfg}, r)
			switch op % 8 {
			case 0, 1:
				imm := arg
				if op%8 == 1 {
					imm = MakeImm((r.Received()+(arg>>40)%3*Align)%size, (arg&0xff+1)*Align, arg&0x100 != 0)
					if cfg.CompactImm {
						imm &= 1<<32 - 1
					}
				}
				rec, err := r.OnImmediate(imm)
				if err == nil {
					accept(rec)
				} else if Snapshot(&Writer{cfg: cfg}, r) != before {
					t.Fatalf("failed OnImmediate changed the reader: %v", err)
				}
			case 2, 3:
				tail := arg
				if op%8 == 3 {
					tail = r.Received() + arg%32*Align
				}
				recs, err := r.OnTail(tail, scratch[:0])
				scratch = recs
				accept(recs...)
				if err == nil && r.Received() != tail {
					t.Fatalf("OnTail(%d) succeeded at %d", tail, r.Received())
				}
			case 4:
				if len(pending) > 0 {
					if _, err := r.Consume(&pending[0]); err != nil {
						t.Fatalf("consume of a received record: %v", err)
					}
					pending = pending[1:]
				} else {
					forged := Record{Pos: arg &^ 63, Len: arg >> 50 << 6, Pad: arg >> 58 << 6}
					if _, err := r.Consume(&forged); err == nil {
						t.Fatalf("consumed a record never received: %+v", forged)
					}
				}
			case 5:
				pos := r.Head() - arg%8*Align
				if arg>>63 != 0 {
					pos = arg
				}
				if err := r.Resync(pos); err == nil {
					pending = pending[:0]
				} else if !errors.Is(err, ErrProtocol) {
					t.Fatal(err)
				}
			case 6:
				r.Flush()
			case 7:
				n := copy(ring[arg%size:], data[:min(8, len(data))])
				data = data[n:]
			}
			if err := r.Check(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// readerSeeds records real writer traffic (with wraps, pads, chunks and a
// link failure) in FuzzReader's input format, for both modes.
func readerSeeds(tb testing.TB) [][]byte {
	var seeds [][]byte
	for _, mode := range []Mode{WriteImm, WriteTwice} {
		for _, sizeSel := range []byte{1, 12, 28} {
			cfg := Config{Size: 256 + 64*uint64(sizeSel), Mode: mode}
			p := newPair(tb, cfg)
			var ops []byte
			op := func(code byte, arg uint64) {
				ops = append(ops, code)
				ops = binary.LittleEndian.AppendUint64(ops, arg)
			}
			land := func(off uint64) { // the 64-byte header at off, 8 bytes per op
				for k := uint64(0); k < HeaderSize; k += 8 {
					op(7, off+k)
					ops = append(ops, p.ring[off+k:off+k+8]...)
				}
			}
			for i := range 14 {
				payload := pattern(int(20+i*37)%int(p.w.Config().MaxChunk), byte(i))
				s, err := p.write(Header{Topic: uint32(i % 2), Seq: uint64(i), Chunks: 1}, payload)
				if err != nil {
					break
				}
				if mode == WriteTwice && s.Pad > 0 {
					land(s.PadOffset)
				}
				land(s.Offset)
				if mode == WriteImm {
					op(0, s.Imm)
					rec, err := p.r.OnImmediate(s.Imm)
					if err != nil {
						tb.Fatal(err)
					}
					op(4, 0)
					p.consume(rec)
				} else {
					op(2, p.w.Tail())
					recs, err := p.r.OnTail(p.w.Tail(), nil)
					if err != nil {
						tb.Fatal(err)
					}
					for _, rec := range recs {
						op(4, 0)
						p.consume(rec)
					}
				}
			}
			op(5, 0)
			op(3, 3)
			op(1, 5)
			seed := append([]byte{sizeSel, byte(mode)}, make([]byte, cfg.Size)...)
			seeds = append(seeds, append(seed, ops...))
		}
	}
	return seeds
}

// TestReaderSeedsAreValid: the seeds replay real traffic, so every
// operation in them must succeed (otherwise the fuzzer starts from noise).
func TestReaderSeedsAreValid(t *testing.T) {
	for i, seed := range readerSeeds(t) {
		cfg := Config{Size: 256 + 64*uint64(seed[0]%29), Mode: Mode(seed[1] & 1)}
		ring := make([]byte, cfg.Size)
		data := seed[2+cfg.Size:]
		r, err := NewReader(cfg, ring)
		if err != nil {
			t.Fatal(err)
		}
		var pending []Record
		var wraps int
		for len(data) >= 9 {
			op, arg := data[0], binary.LittleEndian.Uint64(data[1:9])
			data = data[9:]
			switch op {
			case 0:
				rec, err := r.OnImmediate(arg)
				if err != nil {
					t.Fatalf("seed %d: %v", i, err)
				}
				pending = append(pending, rec)
			case 2:
				recs, err := r.OnTail(arg, nil)
				if err != nil {
					t.Fatalf("seed %d: %v", i, err)
				}
				pending = append(pending, recs...)
			case 4:
				if pending[0].Pad > 0 {
					wraps++
				}
				if _, err := r.Consume(&pending[0]); err != nil {
					t.Fatalf("seed %d: %v", i, err)
				}
				pending = pending[1:]
			case 7:
				copy(ring[arg%cfg.Size:], data[:8])
				data = data[8:]
			default:
				data = nil // the tail of the seed explores
			}
		}
		if r.Head() == 0 || wraps == 0 {
			t.Errorf("seed %d: head %d, %d wraps", i, r.Head(), wraps)
		}
	}
}
