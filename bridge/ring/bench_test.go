package ring

import (
	"testing"
)

// BenchmarkRecord measures the protocol's own cost per record, publish and
// subscribe side together, without the payload copy or any transport:
// Reserve + PutHeader + Commit + OnImmediate (header parse and CRC) or
// OnTail + Consume, plus OnHeadUpdate + Acked when a write-back is due.
// The header is put straight into the ring, as if the RDMA write had
// landed.
func BenchmarkRecord(b *testing.B) {
	for _, bc := range []struct {
		name string
		mode Mode
		wm   Watermark
	}{
		{"imm/every-record", WriteImm, EveryRecord},
		{"imm/quarter", WriteImm, Quarter},
		{"twice/every-record", WriteTwice, EveryRecord},
		{"twice/quarter", WriteTwice, Quarter},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := Config{Size: 1 << 20, Mode: bc.mode, Watermark: bc.wm}
			p := newPair(b, cfg)
			w, r := p.w, p.r
			h := Header{Topic: 1, Chunks: 1, PayloadLen: 64}
			n := RecordLen(h.PayloadLen)
			acked := make([]Record, 0, 1<<16)
			recs := make([]Record, 0, 4)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.Seq = uint64(i)
				s, err := w.Reserve(n)
				if err != nil {
					b.Fatal(err)
				}
				if bc.mode == WriteTwice && s.Pad > 0 {
					_ = w.PutPad(p.ring[s.PadOffset:], s)
				}
				if err := w.PutHeader(p.ring[s.Offset:], s, &h); err != nil {
					b.Fatal(err)
				}
				if err := w.Commit(s, &h); err != nil {
					b.Fatal(err)
				}
				var rec Record
				if bc.mode == WriteImm {
					rec, err = r.OnImmediate(s.Imm)
				} else {
					recs, err = r.OnTail(w.Tail(), recs[:0])
					if len(recs) == 1 {
						rec = recs[0]
					}
				}
				if err != nil {
					b.Fatal(err)
				}
				wb, err := r.Consume(&rec)
				if err != nil {
					b.Fatal(err)
				}
				if wb {
					if err := w.OnHeadUpdate(r.Head()); err != nil {
						b.Fatal(err)
					}
					acked = w.Acked(acked[:0])
				}
			}
		})
	}
}

// BenchmarkWriter is the publish side alone: Reserve + PutHeader + Commit
// per record, and a head update with Acked every quarter ring (2048
// records of 128 bytes in flight at most).
func BenchmarkWriter(b *testing.B) {
	w, err := NewWriter(Config{Size: 1 << 20, Watermark: Quarter})
	if err != nil {
		b.Fatal(err)
	}
	h := Header{Topic: 1, Chunks: 1, PayloadLen: 64}
	var hdr [HeaderSize]byte
	acked := make([]Record, 0, 1<<12)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.Seq = uint64(i)
		s, err := w.Reserve(128)
		if err != nil {
			b.Fatal(err)
		}
		if err := w.PutHeader(hdr[:], s, &h); err != nil {
			b.Fatal(err)
		}
		if err := w.Commit(s, &h); err != nil {
			b.Fatal(err)
		}
		if w.Tail()-w.DelayedHead() >= 1<<18 {
			if err := w.OnHeadUpdate(w.Tail()); err != nil {
				b.Fatal(err)
			}
			acked = w.Acked(acked[:0])
		}
	}
}

// BenchmarkHeaderCRC is the CRC-32C of one header, which both sides pay.
func BenchmarkHeaderCRC(b *testing.B) {
	var hdr [HeaderSize]byte
	var sum uint32
	for i := 0; i < b.N; i++ {
		hdr[8] = byte(i)
		sum += headerCRC(hdr[:])
	}
	_ = sum
}
