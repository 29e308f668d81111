package qos

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"
)

func sampleProfiles() []Profile {
	var ps []Profile
	for _, n := range Names() {
		p, _ := ByName(n)
		ps = append(ps, p, p.Resolve())
	}
	return append(ps,
		Profile{History: HistoryKeepAll, Depth: 1<<32 - 1, Reliability: ReliabilityBestEffort,
			Durability: DurabilityTransientLocal, Deadline: 1, Lifespan: time.Hour,
			Liveliness: LivelinessManualByTopic, LivelinessLease: 1<<63 - 1, AvoidROSNamespaceConventions: true},
		Profile{History: HistoryUnknown, Reliability: ReliabilityUnknown, Durability: DurabilityUnknown,
			Liveliness: LivelinessUnknown},
		Profile{Liveliness: 2}, // deprecated but a defined enumerator: storable
	)
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, p := range sampleProfiles() {
		b := make([]byte, EncodedSize)
		p.Encode(b)
		if b[0] != EncodingVersion {
			t.Fatalf("version byte = %d", b[0])
		}
		got, err := Decode(b)
		if err != nil {
			t.Errorf("Decode(Encode(%v)) error: %v", p, err)
			continue
		}
		if got != p {
			t.Errorf("round trip: got %+v, want %+v", got, p)
		}
		// Trailing bytes are ignored, so a slot may be larger.
		if got, err := Decode(append(b, 0xff, 0xff)); err != nil || got != p {
			t.Errorf("Decode with trailing bytes = %+v, %v", got, err)
		}
	}
}

func TestEncodeOverwritesAndIsDeterministic(t *testing.T) {
	a := bytes.Repeat([]byte{0xa5}, EncodedSize)
	b := make([]byte, EncodedSize)
	Rosout().Encode(a)
	Rosout().Encode(b)
	if !bytes.Equal(a, b) {
		t.Fatalf("Encode depends on previous buffer contents:\n%x\n%x", a, b)
	}
}

func TestEncodeShortBufferPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Encode into a short buffer did not panic")
		}
	}()
	// Enough capacity but short length must still panic.
	Default().Encode(make([]byte, EncodedSize-1, 2*EncodedSize))
}

// reseal recomputes the checksum so a test can reach the checks after it.
func reseal(b []byte) {
	binary.LittleEndian.PutUint32(b[offCRC:], crc32.ChecksumIEEE(b[:offCRC]))
}

func TestDecodeRejects(t *testing.T) {
	good := make([]byte, EncodedSize)
	Default().Encode(good)
	mod := func(f func(b []byte), sealed bool) []byte {
		b := bytes.Clone(good)
		f(b)
		if sealed {
			reseal(b)
		}
		return b
	}
	negative := func(off int) func([]byte) {
		return func(b []byte) { b[off+7] = 0x80 }
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"truncated", good[:EncodedSize-1]},
		{"one byte", good[:1]},
		{"zeros", make([]byte, EncodedSize)},
		{"ones", bytes.Repeat([]byte{0xff}, EncodedSize)},
		{"version 0", mod(func(b []byte) { b[0] = 0 }, true)},
		{"version 2", mod(func(b []byte) { b[0] = 2 }, true)},
		{"bad checksum", mod(func(b []byte) { b[offCRC] ^= 1 }, false)},
		{"flipped depth bit", mod(func(b []byte) { b[offDepth] ^= 1 }, false)},
		{"unknown flag", mod(func(b []byte) { b[offFlags] = 2 }, true)},
		{"reserved 6", mod(func(b []byte) { b[6] = 1 }, true)},
		{"reserved 7", mod(func(b []byte) { b[7] = 1 }, true)},
		{"reserved 12", mod(func(b []byte) { b[15] = 1 }, true)},
		{"reserved 40", mod(func(b []byte) { b[40] = 1 }, true)},
		{"history range", mod(func(b []byte) { b[offHistory] = 4 }, true)},
		{"reliability range", mod(func(b []byte) { b[offReliab] = 5 }, true)},
		{"durability range", mod(func(b []byte) { b[offDurab] = 5 }, true)},
		{"liveliness range", mod(func(b []byte) { b[offLiveli] = 6 }, true)},
		{"negative deadline", mod(negative(offDeadline), true)},
		{"negative lifespan", mod(negative(offLifespan), true)},
		{"negative lease", mod(negative(offLease), true)},
	}
	for _, tt := range tests {
		p, err := Decode(tt.in)
		if !errors.Is(err, ErrDecode) {
			t.Errorf("%s: Decode = %+v, %v; want ErrDecode", tt.name, p, err)
		}
		if p != (Profile{}) {
			t.Errorf("%s: Decode returned non-zero profile with error", tt.name)
		}
	}
}

// Every single-bit corruption of a valid encoding is detected.
func TestDecodeDetectsBitFlips(t *testing.T) {
	good := make([]byte, EncodedSize)
	Rosout().Encode(good)
	for i := range EncodedSize * 8 {
		b := bytes.Clone(good)
		b[i/8] ^= 1 << (i % 8)
		if _, err := Decode(b); err == nil {
			t.Errorf("bit %d flipped: Decode succeeded", i)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, p := range sampleProfiles() {
		b := make([]byte, EncodedSize)
		p.Encode(b)
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{EncodingVersion})
	f.Add(make([]byte, EncodedSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("error %v does not wrap ErrDecode", err)
			}
			return
		}
		// Whatever decodes re-encodes to the same bytes.
		out := make([]byte, EncodedSize)
		p.Encode(out)
		if !bytes.Equal(out, b[:EncodedSize]) {
			t.Fatalf("re-encode differs:\n in %x\nout %x", b[:EncodedSize], out)
		}
		// And the usual operations on it do not panic.
		_ = p.String()
		_ = p.Validate()
		_, _ = CheckCompatible(p, p.Resolve())
	})
}
