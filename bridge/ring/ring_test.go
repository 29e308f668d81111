package ring

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestConfigLimits(t *testing.T) {
	bad := []Config{
		{Size: 0},
		{Size: 192},
		{Size: 1000},
		{Size: MaxSize + 64},
		{Size: 1024, Base: 32},
		{Size: MaxSize, Base: MaxRegion - MaxSize + 64},
		{Size: 1024, Base: 64, CompactImm: true},
		{Size: 1024, Watermark: Half + 1},
		{Size: 1024, Mode: WriteTwice + 1},
		{Size: 1024, MaxChunk: 1024/2 + 64},
		{Size: 1024, Watermark: Half, MaxChunk: 257},
	}
	for _, c := range bad {
		if _, err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrConfig", c, err)
		}
	}
	good := []Config{
		{Size: MinSize},
		{Size: 320, Watermark: Half},
		{Size: 1088},
		{Size: MaxSize},
		{Size: MaxSize, Base: MaxRegion - MaxSize},
		{Size: 1024, CompactImm: true},
		{Size: 1024, Watermark: Half, MaxChunk: 256},
	}
	for _, c := range good {
		v, err := c.Validate()
		if err != nil {
			t.Errorf("Validate(%+v): %v", c, err)
			continue
		}
		if v.MaxChunk == 0 || RecordLen(v.MaxChunk) > v.MaxRecord() || v.MaxChunk > v.Size/2 {
			t.Errorf("%+v: max chunk %d, max record %d", c, v.MaxChunk, v.MaxRecord())
		}
		if v.MaxRecord()/Align > maxLenUnits {
			t.Errorf("%+v: max record %d does not fit the immediate", c, v.MaxRecord())
		}
	}
	// MaxRecord: about Size/2 for every-record write-backs, less as the
	// watermark grows (the no-deadlock bound).
	for _, tc := range []struct {
		size uint64
		wm   Watermark
		want uint64
	}{
		{1024, EveryRecord, 512},
		{1088, EveryRecord, 576}, // 17 units: ceil(17/2) = 9
		{1024, Eighth, 512},
		{1024, Quarter, 448},
		{1024, Half, 320},
		{256, Half, 128},
		{MaxSize, EveryRecord, MaxSize / 2},
	} {
		if got := (Config{Size: tc.size, Watermark: tc.wm}).MaxRecord(); got != tc.want {
			t.Errorf("MaxRecord(size %d, %v) = %d, want %d", tc.size, tc.wm, got, tc.want)
		}
	}
	// The ring view must match the size.
	if _, err := NewReader(Config{Size: 1024}, make([]byte, 960)); !errors.Is(err, ErrConfig) {
		t.Errorf("NewReader with a short ring view: %v", err)
	}
}

// TestMaxRecordIsTight checks the no-deadlock bound both ways by brute
// force: for every writer offset and every unreported consumption below the
// watermark, a record of MaxRecord bytes fits once the reader has consumed
// everything, and one of MaxRecord+64 bytes does not always fit.
func TestMaxRecordIsTight(t *testing.T) {
	for _, size := range []uint64{256, 320, 1024, 1088, 4096} {
		for wm := EveryRecord; wm <= Half; wm++ {
			c := Config{Size: size, Watermark: wm}
			w := max(roundUp64(c.threshold()), Align)
			fits := func(l uint64) bool {
				for off := uint64(0); off < size; off += Align {
					for lag := uint64(0); lag+Align <= w; lag += Align { // Tail − DelayedHead < watermark
						gap := uint64(0)
						if l > size-off {
							gap = size - off
						}
						if lag+gap+l > size {
							return false
						}
					}
				}
				return true
			}
			mr := c.MaxRecord()
			if !fits(mr) {
				t.Errorf("size %d %v: MaxRecord %d can deadlock", size, wm, mr)
			}
			if fits(mr + Align) {
				t.Errorf("size %d %v: MaxRecord %d is not the largest safe length", size, wm, mr)
			}
		}
	}
}

func TestImmediateLayout(t *testing.T) {
	imm := MakeImm(0x1234*64, 0x7fff_ffff*64, true)
	if imm != 0x0000_1234_ffff_ffff {
		t.Fatalf("imm = %#x", imm)
	}
	if ImmOffset(imm) != 0x1234*64 || ImmLen(imm) != 0x7fff_ffff*64 || !ImmWrap(imm) {
		t.Fatalf("decode %#x: off %d len %d wrap %v", imm, ImmOffset(imm), ImmLen(imm), ImmWrap(imm))
	}
	imm = MakeImm((1<<32-1)*64, 64, false)
	if imm != 0xffff_ffff_0000_0001 || ImmWrap(imm) {
		t.Fatalf("imm = %#x", imm)
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Topic: 7, Chunk: 2, Chunks: 5, Seq: 1<<40 + 3, PayloadLen: 999, Timestamp: -12345, GID: [16]byte{1, 2, 3, 15: 16}}
	var b [HeaderSize]byte
	putHeader(b[:], &h, 0, 513)
	var got Header
	flags, lap, err := parseHeader(b[:], &got)
	if err != nil || got != h || flags != 0 || lap != 513 {
		t.Fatalf("parse: %+v flags %d lap %d err %v", got, flags, lap, err)
	}
	if string(b[offMagic:offMagic+4]) != "RGRB" || b[offVersion] != 3 {
		t.Fatalf("magic/version bytes % x", b[:5])
	}
	for i := range HeaderSize { // every single-bit flip is caught
		for bit := range 8 {
			c := b
			c[i] ^= 1 << bit
			if _, _, err := parseHeader(c[:], &Header{}); err == nil {
				t.Fatalf("flip of byte %d bit %d not detected", i, bit)
			}
		}
	}
	for _, v := range []byte{1, 2} { // before META, before rails: refused, not misread
		c := b
		c[offVersion] = v
		if _, _, err := parseHeader(c[:], &Header{}); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), fmt.Sprintf("record version %d, want 3", v)) {
			t.Fatalf("version %d: %v", v, err)
		}
	}
	m := h
	m.Meta = true
	c := b
	putHeader(c[:], &m, 0, 513)
	if flags, _, err := parseHeader(c[:], &got); err != nil || got != m || flags != flagMeta {
		t.Fatalf("meta header: %+v flags %d err %v", got, flags, err)
	}
	if _, _, err := parseHeader(b[:63], &Header{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("short header: %v", err)
	}
}

func TestReserveCommitConsume(t *testing.T) {
	for _, mode := range []Mode{WriteImm, WriteTwice} {
		t.Run(mode.String(), func(t *testing.T) {
			p := newPair(t, Config{Size: 1024, Mode: mode})
			var slots []Slot
			for i := range 3 {
				payload := pattern(100*i+1, byte(i))
				s := p.mustWrite(Header{Topic: 1, Seq: uint64(i + 1), Timestamp: int64(i)}, payload)
				if s.Pad != 0 || s.Pos != s.Offset || s.Len != RecordLen(uint64(len(payload))) {
					t.Fatalf("slot %d: %+v", i, s)
				}
				if ImmOffset(s.Imm) != s.Offset || ImmLen(s.Imm) != s.Len || ImmWrap(s.Imm) {
					t.Fatalf("slot %d imm %#x", i, s.Imm)
				}
				slots = append(slots, s)
			}
			if p.w.Tail() != 128+192+320 || p.w.InFlight() != 3 {
				t.Fatalf("tail %d in flight %d", p.w.Tail(), p.w.InFlight())
			}
			var recs []Record
			if mode == WriteImm {
				for _, s := range slots {
					recs = append(recs, p.receive(s)...)
				}
			} else {
				recs = p.receive(slots[2])
			}
			if len(recs) != 3 {
				t.Fatalf("%d records", len(recs))
			}
			for i, rec := range recs {
				if rec.Pos != slots[i].Pos || rec.Len != slots[i].Len || rec.Seq != uint64(i+1) || rec.Dup || rec.Timestamp != int64(i) {
					t.Fatalf("record %d: %+v", i, rec)
				}
				if !bytes.Equal(p.r.Payload(&rec), pattern(100*i+1, byte(i))) {
					t.Fatalf("record %d payload differs", i)
				}
			}
			p.check()
			// Out of order consumption is refused.
			if _, err := p.r.Consume(&recs[1]); !errors.Is(err, ErrMisuse) {
				t.Fatalf("consume out of order: %v", err)
			}
			for _, rec := range recs {
				if !p.consume(rec) {
					t.Fatal("every-record watermark: no write-back")
				}
			}
			if _, err := p.r.Consume(&recs[2]); !errors.Is(err, ErrMisuse) {
				t.Fatalf("consume twice: %v", err)
			}
			acked := p.w.Acked(nil)
			if len(acked) != 3 || p.w.InFlight() != 0 || acked[2].Seq != 3 {
				t.Fatalf("acked %d, in flight %d", len(acked), p.w.InFlight())
			}
			// Commit misuse.
			s, err := p.w.Reserve(128)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.w.Commit(s, &Header{Chunks: 1, PayloadLen: 65}); !errors.Is(err, ErrMisuse) {
				t.Fatalf("commit with the wrong payload: %v", err)
			}
			if err := p.w.Commit(s, &Header{Chunks: 1, Chunk: 1, PayloadLen: 64}); !errors.Is(err, ErrMisuse) {
				t.Fatalf("commit chunk 1 of 1: %v", err)
			}
			s2 := s
			s2.Pos += 64
			if err := p.w.Commit(s2, &Header{Chunks: 1, PayloadLen: 64}); !errors.Is(err, ErrMisuse) {
				t.Fatalf("commit of a forged slot: %v", err)
			}
			if err := p.w.Commit(s, &Header{Chunks: 1, PayloadLen: 64}); err != nil {
				t.Fatal(err)
			}
			if err := p.w.Commit(s, &Header{Chunks: 1, PayloadLen: 64}); !errors.Is(err, ErrMisuse) {
				t.Fatalf("second commit: %v", err)
			}
			if _, err := p.w.Reserve(100); !errors.Is(err, ErrMisuse) {
				t.Fatalf("reserve of an unaligned length: %v", err)
			}
			if _, err := p.w.Reserve(p.w.Config().MaxRecord() + 64); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("reserve beyond max record: %v", err)
			}
			// The wrong notification for the mode.
			if mode == WriteImm {
				_, err = p.r.OnTail(0, nil)
			} else {
				_, err = p.r.OnImmediate(s.Imm)
			}
			wantErr(t, err, ErrMisuse, "wrong mode")
		})
	}
}

// TestWatermarks counts head write-backs for a known sequence: 256 records
// of 128 bytes (32 KiB) through a 4 KiB ring.
func TestWatermarks(t *testing.T) {
	for _, tc := range []struct {
		wm   Watermark
		want int
	}{{EveryRecord, 256}, {Eighth, 64}, {Quarter, 32}, {Half, 16}} {
		for _, mode := range []Mode{WriteImm, WriteTwice} {
			p := newPair(t, Config{Size: 4096, Watermark: tc.wm, Mode: mode})
			n := 0
			for i := range 256 {
				s := p.mustWrite(Header{Topic: 3, Seq: uint64(i + 1)}, pattern(64, byte(i)))
				for _, rec := range p.receive(s) {
					if p.consume(rec) {
						n++
						if p.w.DelayedHead() != p.r.Head() {
							t.Fatalf("write-back value %d, head %d", p.w.DelayedHead(), p.r.Head())
						}
					}
				}
			}
			if n != tc.want {
				t.Errorf("%v %v: %d write-backs, want %d", tc.wm, mode, n, tc.want)
			}
			if p.r.Head() != 256*128 {
				t.Errorf("head %d", p.r.Head())
			}
		}
	}
}

// TestWrapAround: a record that does not fit before the end of the ring
// goes to offset 0; the gap is accounted as consumed with it.
func TestWrapAround(t *testing.T) {
	for _, mode := range []Mode{WriteImm, WriteTwice} {
		t.Run(mode.String(), func(t *testing.T) {
			p := newPair(t, Config{Size: 1024, Mode: mode})
			// Seven 128-byte records: tail at 896.
			for i := range 7 {
				s := p.mustWrite(Header{Topic: 1, Seq: uint64(i + 1)}, pattern(64, 1))
				for _, rec := range p.receive(s) {
					p.consume(rec)
				}
			}
			if p.w.Tail() != 896 {
				t.Fatalf("tail %d", p.w.Tail())
			}
			payload := pattern(200, 9) // 320-byte record: 128 bytes left, skip
			s := p.mustWrite(Header{Topic: 1, Seq: 8}, payload)
			if s.Pad != 128 || s.PadOffset != 896 || s.Offset != 0 || s.Pos != 1024 || !ImmWrap(s.Imm) || ImmOffset(s.Imm) != 0 {
				t.Fatalf("slot %+v imm %#x", s, s.Imm)
			}
			if p.w.Tail() != 1024+320 {
				t.Fatalf("tail %d", p.w.Tail())
			}
			recs := p.receive(s)
			if len(recs) != 1 || recs[0].Pad != 128 || recs[0].Pos != 1024 || recs[0].Off != 0 {
				t.Fatalf("records %+v", recs)
			}
			if !bytes.Equal(p.r.Payload(&recs[0]), payload) {
				t.Fatal("payload after the wrap differs")
			}
			if p.r.Received() != 1344 {
				t.Fatalf("received %d", p.r.Received())
			}
			p.consume(recs[0])
			if p.r.Head() != 1344 || p.w.DelayedHead() != 1344 {
				t.Fatalf("head %d delayed %d: the gap must be consumed with the record", p.r.Head(), p.w.DelayedHead())
			}
			// Records ending exactly at the end of the ring need no skip:
			// 704 bytes left = five 128-byte records and one of 64.
			for i := range 6 {
				payload := pattern(64, 1)
				if i == 5 {
					payload = nil
				}
				s := p.mustWrite(Header{Topic: 1, Seq: uint64(9 + i)}, payload)
				if s.Pad != 0 {
					t.Fatalf("record %d skipped", i)
				}
				for _, rec := range p.receive(s) {
					p.consume(rec)
				}
			}
			if p.w.Tail() != 2048 {
				t.Fatalf("tail %d", p.w.Tail())
			}
			s = p.mustWrite(Header{Topic: 1, Seq: 20}, pattern(64, 1))
			if s.Pad != 0 || s.Offset != 0 || ImmWrap(s.Imm) {
				t.Fatalf("slot at the lap boundary: %+v", s)
			}
			for _, rec := range p.receive(s) {
				p.consume(rec)
			}
		})
	}
}

// TestFull: Reserve refuses a record that would pass DelayedHead + Size,
// counting the gap of a skip; a head update frees space.
func TestFull(t *testing.T) {
	p := newPair(t, Config{Size: 1024, Watermark: Half})
	var slots []Slot
	for i := range 8 {
		slots = append(slots, p.mustWrite(Header{Topic: 1, Seq: uint64(i + 1)}, pattern(64, 1)))
	}
	if p.w.Free() != 0 {
		t.Fatalf("free %d", p.w.Free())
	}
	if _, err := p.write(Header{Topic: 1, Seq: 9}, nil); !errors.Is(err, ErrFull) {
		t.Fatalf("write into a full ring: %v", err)
	}
	var recs []Record
	for _, s := range slots {
		recs = append(recs, p.receive(s)...)
	}
	// Four records consumed (512 bytes = the 1/2 watermark): one write-back.
	for i, rec := range recs[:4] {
		if wb := p.consume(rec); wb != (i == 3) {
			t.Fatalf("record %d: write-back %v", i, wb)
		}
	}
	if p.w.DelayedHead() != 512 || p.w.Free() != 512 {
		t.Fatalf("delayed head %d free %d", p.w.DelayedHead(), p.w.Free())
	}
	// Tail is at 1024 (offset 0): 512 bytes fit, 576 do not.
	if _, err := p.w.Reserve(576); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("576 > MaxRecord 320: %v", err)
	}
	s := p.mustWrite(Header{Topic: 1, Seq: 9}, pattern(256, 2))  // 320 bytes at 1024
	s2 := p.mustWrite(Header{Topic: 1, Seq: 10}, pattern(64, 2)) // 128 bytes at 1344
	// 64 bytes free at offset 448; a 128-byte record would pass DelayedHead+Size.
	if _, err := p.write(Header{Topic: 1, Seq: 11}, pattern(64, 2)); !errors.Is(err, ErrFull) {
		t.Fatalf("write with 64 bytes free: %v", err)
	}
	s3 := p.mustWrite(Header{Topic: 1, Seq: 11}, nil) // a 64-byte record fits exactly
	if p.w.Free() != 0 {
		t.Fatalf("free %d", p.w.Free())
	}
	for _, rec := range recs[4:] {
		p.consume(rec)
	}
	for _, s := range []Slot{s, s2, s3} {
		for _, rec := range p.receive(s) {
			p.consume(rec)
		}
	}
	// Consumption reached 512 bytes twice: delayed head 1536 = tail.
	if p.r.Flush() || p.w.Free() != 1024 {
		t.Fatalf("free %d", p.w.Free())
	}
	for i := range 4 { // tail 1536 → 2048 (offsets 512 … 1023)
		p.mustWrite(Header{Topic: 1, Seq: uint64(12 + i)}, pattern(64, 2))
	}
	// free = 1536+1024-2048 = 512; at offset 0 a 320-byte record fits.
	s, err := p.write(Header{Topic: 1, Seq: 16}, pattern(256, 3))
	if err != nil || s.Pad != 0 {
		t.Fatalf("write at the lap boundary: %+v %v", s, err)
	}
	// free 192 at offset 320: a 192-byte record fits, then nothing.
	if _, err := p.write(Header{Topic: 1, Seq: 17}, pattern(128, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.w.Reserve(64); !errors.Is(err, ErrFull) {
		t.Fatalf("reserve in a full ring: %v", err)
	}
}

func TestFullWithGap(t *testing.T) {
	p := newPair(t, Config{Size: 1024})
	// Tail at 832 (offset 832), delayed head at 256: free 448 but a 256-byte
	// record needs a 192-byte gap plus 256 = 448: fits; 320 would not.
	for i := range 13 {
		p.mustWrite(Header{Topic: 1, Seq: uint64(i + 1)}, nil)
	}
	for i := range 13 {
		s := p.w.at(i)
		rec, err := p.r.OnImmediate(MakeImm(s.Off, s.Len, s.Pad != 0))
		if err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			p.consume(rec)
		}
	}
	if p.w.Tail() != 832 || p.w.DelayedHead() != 256 {
		t.Fatalf("tail %d delayed head %d", p.w.Tail(), p.w.DelayedHead())
	}
	if _, err := p.w.Reserve(320); !errors.Is(err, ErrFull) {
		t.Fatalf("reserve 320 with a 192-byte gap and 448 free: %v", err)
	}
	s, err := p.w.Reserve(256)
	if err != nil || s.Pad != 192 || s.Pos != 1024 {
		t.Fatalf("reserve 256: %+v %v", s, err)
	}
}

func TestChunking(t *testing.T) {
	p := newPair(t, Config{Size: 1024, MaxChunk: 200})
	msg := pattern(750, 5)
	n, err := p.w.Chunks(uint64(len(msg)))
	if err != nil || n != 4 {
		t.Fatalf("chunks %d %v", n, err)
	}
	if n, _ := p.w.Chunks(200); n != 1 {
		t.Fatalf("200 bytes: %d chunks", n)
	}
	if n, _ := p.w.Chunks(0); n != 1 {
		t.Fatalf("0 bytes: %d chunks", n)
	}
	var a Assembler
	out := make([]byte, 0)
	for i := range n {
		off, k := p.w.ChunkSpan(uint64(len(msg)), i)
		if off != uint64(i)*200 || (i < 3 && k != 200) || (i == 3 && k != 150) {
			t.Fatalf("chunk %d: %d+%d", i, off, k)
		}
		s := p.mustWrite(Header{Topic: 4, Seq: 1, Chunk: i, Chunks: n}, msg[off:off+k])
		for _, rec := range p.receive(s) {
			if i == 0 && SizeHint(&rec) != 800 {
				t.Fatalf("size hint %d", SizeHint(&rec))
			}
			moff, done, err := a.Add(&rec)
			if err != nil || moff != off || done != (i == n-1) {
				t.Fatalf("assemble chunk %d: %d %v %v", i, moff, done, err)
			}
			if uint64(len(out)) < moff+rec.PayloadLen {
				out = append(out, make([]byte, moff+rec.PayloadLen-uint64(len(out)))...)
			}
			copy(out[moff:], p.r.Payload(&rec))
			p.consume(rec)
		}
	}
	if !bytes.Equal(out, msg) {
		t.Fatal("reassembled message differs")
	}
	// Disabled chunking refuses, with a clear error.
	q := newPair(t, Config{Size: 1024, MaxChunk: 200, NoChunking: true})
	if _, err := q.w.Chunks(201); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("no chunking: %v", err)
	}
	if n, err := q.w.Chunks(200); err != nil || n != 1 {
		t.Fatalf("no chunking, 200 bytes: %d %v", n, err)
	}
	// The default max chunk: the largest payload that always makes progress.
	c, _ := Config{Size: 1 << 20, Watermark: Quarter}.Validate()
	if c.MaxChunk != c.MaxRecord()-HeaderSize {
		t.Fatalf("default max chunk %d", c.MaxChunk)
	}
}

func TestAssemblerErrors(t *testing.T) {
	var a Assembler
	rec := func(seq uint64, chunk, chunks uint32, n uint64) *Record {
		return &Record{Header: Header{Topic: 1, Seq: seq, Chunk: chunk, Chunks: chunks, PayloadLen: n}}
	}
	mustAdd := func(r *Record) {
		if _, _, err := a.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []*Record{rec(1, 1, 3, 10), rec(1, 0, 0, 10), rec(1, 3, 3, 10), rec(1, 0, 3, 0)} {
		if _, _, err := a.Add(bad); !errors.Is(err, ErrProtocol) {
			t.Fatalf("Add(%+v): %v", bad.Header, err)
		}
	}
	mustAdd(rec(1, 0, 3, 10))
	for _, bad := range []*Record{rec(2, 0, 1, 10), rec(2, 1, 3, 10), rec(1, 2, 3, 10), rec(1, 1, 4, 10), rec(1, 1, 3, 9)} {
		if _, _, err := a.Add(bad); !errors.Is(err, ErrProtocol) {
			t.Fatalf("Add(%+v) mid-message: %v", bad.Header, err)
		}
	}
	withMeta := rec(1, 1, 3, 10)
	withMeta.Meta = true
	if _, _, err := a.Add(withMeta); !errors.Is(err, ErrProtocol) {
		t.Fatal("a chunk with META in a message without it accepted")
	}
	mustAdd(rec(1, 1, 3, 10))
	if _, _, err := a.Add(rec(1, 2, 3, 11)); !errors.Is(err, ErrProtocol) {
		t.Fatal("last chunk longer than the chunk size accepted")
	}
	off, done, err := a.Add(rec(1, 2, 3, 4))
	if off != 20 || !done || err != nil {
		t.Fatalf("last chunk: %d %v %v", off, done, err)
	}
	// Other topics interleave freely.
	mustAdd(rec(1, 0, 2, 10))
	if _, done, err := a.Add(&Record{Header: Header{Topic: 2, Seq: 9, Chunks: 1}}); !done || err != nil {
		t.Fatal("topic 2 blocked by topic 1")
	}
}

func TestBadImmediates(t *testing.T) {
	p := newPair(t, Config{Size: 1024, Base: 4096})
	s1 := p.mustWrite(Header{Topic: 1, Seq: 1}, pattern(64, 1)) // 128 @ 0
	s2 := p.mustWrite(Header{Topic: 1, Seq: 2}, pattern(64, 1)) // 128 @ 128
	if ImmOffset(s1.Imm) != 4096 || ImmOffset(s2.Imm) != 4096+128 {
		t.Fatalf("base not in the immediate: %#x %#x", s1.Imm, s2.Imm)
	}
	bad := map[string]uint64{
		"zero length":          MakeImm(4096, 0, false),
		"longer than max":      MakeImm(4096, 576, false),
		"wrong offset":         MakeImm(4096+64, 128, false),
		"out of order":         s2.Imm,
		"without base":         MakeImm(0, 128, false),
		"wrap at offset 0":     MakeImm(4096, 128, true),
		"wrong length":         MakeImm(4096, 192, false),
		"beyond the ring":      MakeImm(4096+1024*5, 128, false),
		"all ones":             ^uint64(0),
		"length field garbage": 0x0000_0040_7fff_ffff,
	}
	for what, imm := range bad {
		before := Snapshot(p.w, p.r)
		if _, err := p.r.OnImmediate(imm); err == nil {
			t.Errorf("%s (%#x): accepted", what, imm)
		} else if !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", what, err)
		}
		if Snapshot(p.w, p.r) != before {
			t.Fatalf("%s changed the reader", what)
		}
	}
	r1, err := p.r.OnImmediate(s1.Imm)
	if err != nil || r1.Seq != 1 {
		t.Fatalf("valid immediate after bad ones: %v", err)
	}
	// A damaged header behind a valid immediate.
	p.ring[s2.Offset+offSeq]++
	if _, err := p.r.OnImmediate(s2.Imm); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("damaged header: %v", err)
	}
	p.ring[s2.Offset+offSeq]--
	if _, err := p.r.OnImmediate(s2.Imm); err != nil {
		t.Fatal(err)
	}
	// Past Head + Size: the reader consumed nothing, so an immediate for a
	// record beyond its unconsumed data would overwrite it.
	q := newPair(t, Config{Size: 1024})
	var last Slot
	for i := range 8 {
		last = q.mustWrite(Header{Topic: 1, Seq: uint64(i + 1)}, pattern(64, 1))
		q.receive(last)
	}
	h := Header{Topic: 1, Seq: 9, Chunks: 1, PayloadLen: 64}
	putHeader(q.ring[0:], &h, 0, 1)
	if _, err := q.r.OnImmediate(MakeImm(0, 128, false)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("immediate past head+size: %v", err)
	}
	// Wrap flag where the record fits, and a record crossing the end.
	r := newPair(t, Config{Size: 1024})
	for i := range 7 {
		s := r.mustWrite(Header{Topic: 1, Seq: uint64(i + 1)}, pattern(64, 1))
		for _, rec := range r.receive(s) {
			r.consume(rec)
		}
	}
	if _, err := r.r.OnImmediate(MakeImm(0, 128, true)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("wrap flag for a record that fits: %v", err)
	}
	if _, err := r.r.OnImmediate(MakeImm(896, 192, false)); !errors.Is(err, ErrProtocol) {
		t.Fatalf("record crossing the end: %v", err)
	}
	// A stale header (right everything, lap of the previous pass).
	h = Header{Topic: 1, Seq: 8, Chunks: 1, PayloadLen: 64}
	putHeader(r.ring[896:], &h, 0, 1)
	if _, err := r.r.OnImmediate(MakeImm(896, 128, false)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("stale lap: %v", err)
	}
	// A pad header where a record must be.
	putHeader(r.ring[896:], &Header{PayloadLen: 64}, flagPad, 0)
	if _, err := r.r.OnImmediate(MakeImm(896, 128, false)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("pad record in write-imm mode: %v", err)
	}
	if err := r.r.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestCompactImmediates(t *testing.T) {
	p := newPair(t, Config{Size: 1024, CompactImm: true})
	for i := range 20 {
		s := p.mustWrite(Header{Topic: 1, Seq: uint64(i + 1)}, pattern(100+i*10, 1))
		if s.Imm>>32 != 0 {
			t.Fatalf("compact immediate %#x has offset bits", s.Imm)
		}
		for _, rec := range p.receive(s) {
			p.consume(rec)
		}
	}
	s := p.mustWrite(Header{Topic: 1, Seq: 100}, nil)
	if _, err := p.r.OnImmediate(s.Imm | 1<<32); !errors.Is(err, ErrProtocol) {
		t.Fatalf("compact immediate with offset bits: %v", err)
	}
}

func TestBadHeadUpdates(t *testing.T) {
	p := newPair(t, Config{Size: 1024, Watermark: Half})
	var recs []Record
	for i := range 4 {
		s := p.mustWrite(Header{Topic: 1, Seq: uint64(i + 1)}, pattern(64, 1)) // 128 each
		recs = append(recs, p.receive(s)...)
	}
	for _, rec := range recs[:2] {
		p.consume(rec)
	}
	if err := p.w.OnHeadUpdate(256); err != nil {
		t.Fatal(err)
	}
	for what, h := range map[string]uint64{
		"backwards":        128,
		"to zero":          0,
		"beyond tail":      576,
		"far beyond":       1 << 60,
		"unaligned":        257,
		"inside a record":  320,
		"max":              ^uint64(0),
		"at tail + size":   512 + 1024,
		"unaligned beyond": 513,
	} {
		before := *p.w
		if err := p.w.OnHeadUpdate(h); !errors.Is(err, ErrProtocol) {
			t.Errorf("head update %s (%d): %v", what, h, err)
		}
		if p.w.dhead != before.dhead || p.w.tail != before.tail || p.w.qLen != before.qLen {
			t.Fatalf("head update %s changed the writer", what)
		}
	}
	if err := p.w.OnHeadUpdate(256); err != nil {
		t.Fatalf("repeated head: %v", err)
	}
	if err := p.w.OnHeadUpdate(512); err != nil {
		t.Fatalf("head at tail: %v", err)
	}
}

// TestWriteTwiceGarbage: the reader parses headers from ring memory, so
// every kind of garbage must be an error, never a panic, and must leave the
// reader covering exactly the records returned.
func TestWriteTwiceGarbage(t *testing.T) {
	cfg := Config{Size: 1024, Mode: WriteTwice, MaxChunk: 256}
	fresh := func() *pair {
		p := newPair(t, cfg)
		p.mustWrite(Header{Topic: 1, Seq: 1}, pattern(64, 1)) // 128 @ 0
		p.mustWrite(Header{Topic: 1, Seq: 2}, pattern(64, 1)) // 128 @ 128
		return p
	}
	type mutate func(p *pair) (tail uint64)
	cases := map[string]struct {
		f    mutate
		want error
		n    int // records returned before the error
	}{
		"tail unaligned":        {func(p *pair) uint64 { return 100 }, ErrProtocol, 0},
		"tail beyond head+size": {func(p *pair) uint64 { return 1088 }, ErrProtocol, 0},
		"tail huge":             {func(p *pair) uint64 { return ^uint64(0) &^ 63 }, ErrProtocol, 0},
		"bad magic":             {func(p *pair) uint64 { p.ring[128+offMagic]++; return 256 }, ErrCorrupt, 1},
		"bad crc":               {func(p *pair) uint64 { p.ring[128+offCRC]++; return 256 }, ErrCorrupt, 1},
		"bad version": {func(p *pair) uint64 {
			p.ring[128+offVersion] = 9
			le.PutUint32(p.ring[128+offCRC:], headerCRC(p.ring[128:]))
			return 256
		}, ErrVersion, 1},
		"random bytes": {func(p *pair) uint64 { copy(p.ring[128:], pattern(200, 77)); return 256 }, ErrCorrupt, 1},
		"zeros":        {func(p *pair) uint64 { clear(p.ring); return 256 }, ErrCorrupt, 0},
		"tail inside a record": {func(p *pair) uint64 {
			return 192
		}, ErrCorrupt, 1},
		"payload past max chunk": {func(p *pair) uint64 {
			putHeader(p.ring[128:], &Header{Topic: 1, Seq: 2, Chunks: 1, PayloadLen: 257}, 0, 0)
			return 1024
		}, ErrCorrupt, 1},
		"chunk index ≥ count": {func(p *pair) uint64 {
			putHeader(p.ring[128:], &Header{Topic: 1, Seq: 2, Chunk: 1, Chunks: 1}, 0, 0)
			return 256
		}, ErrCorrupt, 1},
		"unknown flag": {func(p *pair) uint64 {
			putHeader(p.ring[128:], &Header{Topic: 1, Seq: 2, Chunks: 1}, 0x80, 0)
			return 256
		}, ErrCorrupt, 1},
		"stale lap": {func(p *pair) uint64 {
			putHeader(p.ring[128:], &Header{Topic: 1, Seq: 2, Chunks: 1, PayloadLen: 64}, 0, 65535)
			return 256
		}, ErrCorrupt, 1},
		"pad at offset 0": {func(p *pair) uint64 {
			putHeader(p.ring[0:], &Header{PayloadLen: 1024 - 64}, flagPad, 0)
			return 256
		}, ErrCorrupt, 0},
		"pad short of the end": {func(p *pair) uint64 {
			putHeader(p.ring[128:], &Header{PayloadLen: 64}, flagPad, 0)
			return 256
		}, ErrCorrupt, 1},
		"pad with fields": {func(p *pair) uint64 {
			putHeader(p.ring[128:], &Header{PayloadLen: 1024 - 128 - 64, Seq: 1}, flagPad, 0)
			return 1024
		}, ErrCorrupt, 1},
		"tail ends at a pad": {func(p *pair) uint64 {
			putHeader(p.ring[128:], &Header{PayloadLen: 1024 - 128 - 64}, flagPad, 0)
			return 1024
		}, ErrProtocol, 1},
		"pad then garbage": {func(p *pair) uint64 {
			consumeFirst(t, p)
			putHeader(p.ring[128:], &Header{PayloadLen: 1024 - 128 - 64}, flagPad, 0)
			copy(p.ring[0:], pattern(64, 3))
			return 1024 + 64
		}, ErrCorrupt, 0},
		"pad then stale record": {func(p *pair) uint64 {
			consumeFirst(t, p)
			putHeader(p.ring[128:], &Header{PayloadLen: 1024 - 128 - 64}, flagPad, 0)
			return 1024 + 128 // the header at 0 is seq 1 of lap 0
		}, ErrCorrupt, 0},
	}
	for what, tc := range cases {
		p := fresh()
		tail := tc.f(p)
		before := p.r.Received()
		recs, err := p.r.OnTail(tail, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", what, err, tc.want)
			continue
		}
		if got := len(recs); got != tc.n {
			t.Errorf("%s: %d records before the error, want %d", what, got, tc.n)
		}
		var end uint64 = before
		if len(recs) > 0 {
			end = recs[len(recs)-1].End()
		}
		if p.r.Received() != end {
			t.Errorf("%s: received %d, records end at %d", what, p.r.Received(), end)
		}
		if err := p.r.Check(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	// Backwards tail.
	p := fresh()
	if _, err := p.r.OnTail(256, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.r.OnTail(128, nil); !errors.Is(err, ErrProtocol) {
		t.Fatalf("tail backwards: %v", err)
	}
	if recs, err := p.r.OnTail(256, nil); err != nil || len(recs) != 0 {
		t.Fatalf("same tail again: %d %v", len(recs), err)
	}
}

// consumeFirst receives and consumes the first record (seq 1 at 0), so that
// positions up to 1024+128 are in range for the reader.
func consumeFirst(t *testing.T, p *pair) {
	t.Helper()
	recs, err := p.r.OnTail(128, nil)
	if err != nil || len(recs) != 1 {
		t.Fatalf("setup: %d records, %v", len(recs), err)
	}
	if _, err := p.r.Consume(&recs[0]); err != nil {
		t.Fatal(err)
	}
}

// TestRewindAndDuplicates walks one link failure by hand: the reader has
// consumed three of five records, only the first write-back landed, the
// writer never hears the reader's head (so it resends records the reader
// already consumed) and the reader flags those as duplicates.
func TestRewindAndDuplicates(t *testing.T) {
	for _, mode := range []Mode{WriteImm, WriteTwice} {
		for _, tellHead := range []bool{false, true} {
			p := newPair(t, Config{Size: 1024, Mode: mode})
			var slots []Slot
			for i := range 5 {
				slots = append(slots, p.mustWrite(Header{Topic: uint32(1 + i%2), Seq: uint64(1 + i/2)}, pattern(64, byte(i))))
			}
			var recs []Record
			for _, s := range slots {
				if mode == WriteImm {
					recs = append(recs, p.receive(s)...)
				}
			}
			if mode == WriteTwice {
				recs = p.receive(slots[4])
			}
			var backs []uint64
			for _, rec := range recs[:3] {
				if wb, err := p.r.Consume(&rec); err != nil || !wb {
					t.Fatal(err)
				}
				backs = append(backs, p.r.Head())
			}
			if err := p.w.OnHeadUpdate(backs[0]); err != nil { // the others are lost
				t.Fatal(err)
			}
			if acked := p.w.Acked(nil); len(acked) != 1 {
				t.Fatalf("%d acked", len(acked))
			}
			// Link failure; handshake.
			if tellHead {
				if err := p.w.OnHeadUpdate(p.r.Head()); err != nil {
					t.Fatal(err)
				}
				if acked := p.w.Acked(nil); len(acked) != 2 {
					t.Fatalf("%d acked after the handshake", len(acked))
				}
			}
			retx := p.w.Rewind(nil)
			wantRetx := 4
			if tellHead {
				wantRetx = 2
			}
			if len(retx) != wantRetx || p.w.Tail() != p.w.DelayedHead() || p.w.InFlight() != 0 {
				t.Fatalf("rewind: %d records, tail %d delayed head %d in flight %d", len(retx), p.w.Tail(), p.w.DelayedHead(), p.w.InFlight())
			}
			if err := p.r.Resync(p.r.Head() + 64); !errors.Is(err, ErrProtocol) {
				t.Fatalf("resync past head: %v", err)
			}
			if err := p.r.Resync(p.w.Tail()); err != nil {
				t.Fatal(err)
			}
			p.check()
			var got []Record
			for i, rec := range retx {
				s := p.mustWrite(rec.Header, pattern(64, byte(5-len(retx)+i)))
				if s.Pos != rec.Pos {
					t.Fatalf("retransmission at %d, first sent at %d", s.Pos, rec.Pos)
				}
				if mode == WriteImm {
					got = append(got, p.receive(s)...)
				}
			}
			if mode == WriteTwice {
				got = p.receive(Slot{})
			}
			var dups int
			for _, rec := range got {
				if rec.Dup {
					dups++
				} else if !bytes.Equal(p.r.Payload(&rec), pattern(64, byte(2*(rec.Seq-1)+uint64(rec.Topic-1)))) {
					t.Fatalf("payload of %d/%d differs", rec.Topic, rec.Seq)
				}
				p.consume(rec)
			}
			wantDups := 2
			if tellHead {
				wantDups = 0
			}
			if dups != wantDups {
				t.Errorf("%v tellHead=%v: %d duplicates, want %d", mode, tellHead, dups, wantDups)
			}
			// New records after the retransmission are not duplicates.
			s := p.mustWrite(Header{Topic: 1, Seq: 4}, nil)
			for _, rec := range p.receive(s) {
				if rec.Dup {
					t.Fatal("new record flagged duplicate")
				}
				p.consume(rec)
			}
		}
	}
}

// TestResyncDropsUnconsumed: received-but-unconsumed records are dropped on
// Resync and are not duplicates when they come again.
func TestResyncDropsUnconsumed(t *testing.T) {
	p := newPair(t, Config{Size: 1024})
	s1 := p.mustWrite(Header{Topic: 1, Seq: 1}, nil)
	s2 := p.mustWrite(Header{Topic: 1, Seq: 2}, nil)
	r1 := p.receive(s1)[0]
	p.receive(s2)
	p.consume(r1)
	if err := p.w.OnHeadUpdate(p.r.Head()); err != nil {
		t.Fatal(err)
	}
	p.w.Acked(nil)
	retx := p.w.Rewind(nil)
	if len(retx) != 1 || retx[0].Seq != 2 {
		t.Fatalf("rewind %+v", retx)
	}
	if err := p.r.Resync(p.w.Tail()); err != nil {
		t.Fatal(err)
	}
	s := p.mustWrite(retx[0].Header, nil)
	rec := p.receive(s)[0]
	if rec.Dup || rec.Seq != 2 {
		t.Fatalf("re-received %+v", rec)
	}
	p.consume(rec)
	// Resync bounds.
	for _, bad := range []uint64{p.r.Head() + 64, 1, ^uint64(0)} {
		if err := p.r.Resync(bad); !errors.Is(err, ErrProtocol) {
			t.Errorf("Resync(%d): %v", bad, err)
		}
	}
}

func TestFlush(t *testing.T) {
	p := newPair(t, Config{Size: 1024, Watermark: Half})
	if p.r.Flush() {
		t.Fatal("flush of a fresh reader")
	}
	s := p.mustWrite(Header{Topic: 1, Seq: 1}, nil)
	for _, rec := range p.receive(s) {
		if p.consume(rec) {
			t.Fatal("write-back below the watermark")
		}
	}
	if !p.r.Flush() || p.r.Flush() {
		t.Fatal("flush: want one write-back")
	}
}

func TestCheckInvariants(t *testing.T) {
	ok := View{Size: 1024, DelayedHead: 64, Head: 128, Received: 192, Tail: 1024}
	if err := CheckInvariants(ok); err != nil {
		t.Fatal(err)
	}
	for what, v := range map[string]View{
		"delayed head leads": {Size: 1024, DelayedHead: 192, Head: 128, Received: 192, Tail: 256},
		"head passes recv":   {Size: 1024, DelayedHead: 0, Head: 256, Received: 192, Tail: 256},
		"recv passes tail":   {Size: 1024, DelayedHead: 0, Head: 0, Received: 320, Tail: 256},
		"tail passes dh+sz":  {Size: 1024, DelayedHead: 64, Head: 64, Received: 64, Tail: 1152},
		"unaligned":          {Size: 1024, DelayedHead: 1, Head: 64, Received: 64, Tail: 64},
		"zero size":          {},
	} {
		if err := CheckInvariants(v); err == nil {
			t.Errorf("%s: %+v accepted", what, v)
		}
	}
}

func TestPayloadBounds(t *testing.T) {
	p := newPair(t, Config{Size: 1024})
	for _, rec := range []Record{
		{Off: 1024, Header: Header{PayloadLen: 0}},
		{Off: 960, Header: Header{PayloadLen: 1}},
		{Off: 0, Header: Header{PayloadLen: ^uint64(0)}},
		{Off: ^uint64(0) - 10, Header: Header{PayloadLen: 20}},
	} {
		if b := p.r.Payload(&rec); b != nil {
			t.Errorf("Payload(off %d len %d) = %d bytes", rec.Off, rec.PayloadLen, len(b))
		}
	}
}
