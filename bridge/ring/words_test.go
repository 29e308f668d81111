package ring

import (
	"encoding/binary"
	"testing"
)

// The word accessors move the tail slot and the head write-back the way the
// wire format says (8 bytes, little-endian), and the writer applies only
// what changed, refusing a bad head like OnHeadUpdate.
func TestWords(t *testing.T) {
	p := newPair(t, Config{Size: 4096, Mode: WriteTwice, Watermark: EveryRecord})
	slot := make([]byte, WordSize)
	p.r.ResetTailSlot(slot)
	if recs, err := p.r.ReadTailSlot(slot, nil); err != nil || len(recs) != 0 {
		t.Fatalf("fresh tail slot: %d records, %v", len(recs), err)
	}
	headWord := make([]byte, WordSize)
	p.w.ResetHeadWord(headWord)
	if moved, err := p.w.ApplyHeadWord(headWord); moved || err != nil {
		t.Fatalf("untouched head word: moved %v, %v", moved, err)
	}

	p.mustWrite(Header{Topic: 1, Seq: 1}, pattern(100, 1))
	p.w.PutTail(slot) // the tail write lands
	if got := binary.LittleEndian.Uint64(slot); got != p.w.Tail() {
		t.Fatalf("tail slot holds %d, tail is %d", got, p.w.Tail())
	}
	recs, err := p.r.ReadTailSlot(slot, nil)
	if err != nil || len(recs) != 1 {
		t.Fatalf("tail slot read: %d records, %v", len(recs), err)
	}
	if _, err := p.r.Consume(&recs[0]); err != nil {
		t.Fatal(err)
	}
	p.r.PutHead(headWord) // the head write-back lands
	if got := binary.LittleEndian.Uint64(headWord); got != p.r.Head() {
		t.Fatalf("head word holds %d, head is %d", got, p.r.Head())
	}
	if moved, err := p.w.ApplyHeadWord(headWord); !moved || err != nil || p.w.DelayedHead() != p.r.Head() {
		t.Fatalf("head write-back: moved %v, %v, delayed head %d, head %d", moved, err, p.w.DelayedHead(), p.r.Head())
	}
	p.check()

	binary.LittleEndian.PutUint64(headWord, p.r.Head()+8) // not a record end
	_, err = p.w.ApplyHeadWord(headWord)
	wantErr(t, err, ErrProtocol, "misaligned head word")
	if p.w.DelayedHead() != p.r.Head() {
		t.Fatal("a refused head word changed DelayedHead")
	}

	if err := p.r.Resync(p.r.Head()); err != nil {
		t.Fatal(err)
	}
	p.r.ResetTailSlot(slot)
	if got := binary.LittleEndian.Uint64(slot); got != p.r.Head() {
		t.Fatalf("tail slot after resync holds %d, want %d", got, p.r.Head())
	}
}
