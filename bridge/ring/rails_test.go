package ring

import (
	"errors"
	"testing"
)

// Rails are a configuration of write-imm rings with full immediates.
func TestRailsConfig(t *testing.T) {
	for _, bad := range []Config{
		{Size: 1024, Rails: -1},
		{Size: 1024, Rails: MaxRails + 1},
		{Size: 1024, Rails: 2, Mode: WriteTwice},
		{Size: 1024, Rails: 2, CompactImm: true},
	} {
		if _, err := bad.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	c, err := Config{Size: 1024}.Validate()
	if err != nil || c.Rails != 1 {
		t.Fatalf("default rails: %d %v", c.Rails, err)
	}
	if c, err := (Config{Size: 1024, Rails: MaxRails}).Validate(); err != nil || c.Rails != MaxRails {
		t.Fatalf("%d rails: %v", MaxRails, err)
	}
}

// The writer puts a record on rail 0 when nothing is unacknowledged, round
// robin otherwise, and a record after a gap on its predecessor's rail.
func TestRailChoice(t *testing.T) {
	p := newPair(t, Config{Size: 1024, Rails: 3})
	var slots []Slot
	write := func(n, payload int) []int {
		var got []int
		for range n {
			s := p.mustWrite(Header{Topic: 1, Seq: uint64(len(slots) + 1)}, make([]byte, payload))
			slots = append(slots, s)
			got = append(got, s.Rail)
		}
		return got
	}
	// Receive and consume everything written (every write-back applied at
	// once): nothing is unacknowledged afterwards.
	settle := func() {
		for _, s := range slots {
			for _, rec := range p.receive(s) {
				p.consume(rec)
			}
		}
		slots = slots[:0]
		p.w.Acked(nil)
	}
	if got := write(4, 64); got[0] != 0 || got[1] != 1 || got[2] != 2 || got[3] != 0 {
		t.Fatalf("rails %v, want 0 1 2 0", got)
	}
	settle()
	if got := write(2, 64); got[0] != 0 || got[1] != 1 {
		t.Fatalf("after the acknowledgement: rails %v, want 0 1", got)
	}
	settle()
	// Tail is at 768: two 64-byte records (rails 0, 1), then a 320-byte
	// one that does not fit before the end and wraps: on rail 1.
	if got := write(2, 0); got[0] != 0 || got[1] != 1 {
		t.Fatalf("rails %v, want 0 1", got)
	}
	if got := write(1, 256); got[0] != 1 || slots[2].Pad == 0 {
		t.Fatalf("wrapped record: %+v, want a gap and rail 1", slots[2])
	}
	settle()
}

// NextRail picks the rail whose first immediate is the expected record,
// waits while it has not landed, and refuses rails that broke the rules.
func TestNextRail(t *testing.T) {
	c := Config{Size: 1024, Rails: 3}
	r, err := NewReader(c, make([]byte, 1024))
	if err != nil {
		t.Fatal(err)
	}
	at := func(off, n uint64, wrap bool) uint64 { return MakeImm(off, n, wrap) }
	cases := []struct {
		name  string
		heads []uint64
		has   []bool
		want  int
		err   bool
	}{
		{"nothing landed", []uint64{0, 0, 0}, []bool{false, false, false}, -1, false},
		{"the next one on rail 2", []uint64{at(128, 64, false), 0, at(0, 128, false)}, []bool{true, false, true}, 2, false},
		{"a later one landed first", []uint64{at(128, 64, false), 0, 0}, []bool{true, false, false}, -1, false},
		{"a wrapped one is next", []uint64{0, at(0, 128, true), at(256, 64, false)}, []bool{false, true, true}, 1, false},
		{"every rail holds a later one", []uint64{at(128, 64, false), at(192, 64, false), at(256, 64, false)}, []bool{true, true, true}, -1, true},
		{"two announce the next", []uint64{at(0, 64, false), at(0, 128, true), 0}, []bool{true, true, false}, -1, true},
	}
	for _, tc := range cases {
		got, err := r.NextRail(tc.heads, tc.has)
		if got != tc.want || (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrProtocol)) {
			t.Errorf("%s: rail %d, err %v; want %d, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
	if _, err := r.NextRail(make([]uint64, 2), make([]bool, 3)); !errors.Is(err, ErrMisuse) {
		t.Errorf("mismatched slices: %v", err)
	}
	// One rail: its first immediate is the next, whatever it says
	// (OnImmediate validates it).
	one, _ := NewReader(Config{Size: 1024}, make([]byte, 1024))
	if got, err := one.NextRail([]uint64{at(512, 64, false)}, []bool{true}); got != 0 || err != nil {
		t.Errorf("one rail: %d %v", got, err)
	}
}

// A rail hello is an immediate no record has (length 0).
func TestRailHello(t *testing.T) {
	for _, rail := range []int{0, 1, MaxRails - 1} {
		imm := RailHello(rail)
		got, ok := ParseRailHello(imm)
		if !ok || got != rail || ImmLen(imm) != 0 || ImmWrap(imm) {
			t.Errorf("hello %d: %#x → %d %v", rail, imm, got, ok)
		}
		r, _ := NewReader(Config{Size: 1024}, make([]byte, 1024))
		if _, err := r.OnImmediate(imm); !errors.Is(err, ErrProtocol) {
			t.Errorf("hello %d taken as a record: %v", rail, err)
		}
	}
	if _, ok := ParseRailHello(MakeImm(0, 64, false)); ok {
		t.Error("a record's immediate parsed as a hello")
	}
}

// Split cuts a message into equal chunks within MaxChunk, at least
// stripes of them when each keeps minStripe bytes.
func TestSplit(t *testing.T) {
	w, err := NewWriter(Config{Size: 1 << 20, MaxChunk: 100 << 10})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		msg       uint64
		stripes   int
		minStripe uint64
		count     uint32
		chunk     uint64
	}{
		{10, 4, 1, 1, 10},                  // below 64 bytes a chunk: one
		{50 << 10, 1, 0, 1, 50 << 10},      // fits one record
		{50 << 10, 4, 16 << 10, 3, 17088},  // 50 KiB / 16 KiB: 3 stripes
		{250 << 10, 1, 0, 3, 85376},        // MaxChunk needs 3: equal ones
		{250 << 10, 4, 1 << 10, 4, 64000},  // 4 stripes
		{250 << 10, 2, 1 << 10, 3, 85376},  // MaxChunk needs more than 2
		{1 << 20, 16, 64 << 10, 16, 65536}, // 16 stripes of 64 KiB
	}
	for _, tc := range cases {
		c, err := w.Split(tc.msg, tc.stripes, tc.minStripe)
		if err != nil || c.Count != tc.count || c.Len != tc.chunk {
			t.Errorf("Split(%d, %d, %d) = %+v %v; want %d × %d", tc.msg, tc.stripes, tc.minStripe, c, err, tc.count, tc.chunk)
			continue
		}
		var sum uint64
		for i := range c.Count {
			off, n := c.Span(tc.msg, i)
			if off != sum || n == 0 || n > w.Config().MaxChunk || (i < c.Count-1 && n != c.Len) {
				t.Errorf("Split(%d): chunk %d at %d of %d bytes", tc.msg, i, off, n)
			}
			sum += n
		}
		if sum != tc.msg {
			t.Errorf("Split(%d): chunks cover %d bytes", tc.msg, sum)
		}
	}
	q, _ := NewWriter(Config{Size: 1 << 20, MaxChunk: 100, NoChunking: true})
	if c, err := q.Split(100, 4, 1); err != nil || c.Count != 1 {
		t.Errorf("no chunking: %+v %v", c, err)
	}
	if _, err := q.Split(101, 4, 1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("no chunking, too large: %v", err)
	}
}
