package cdr

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func hexEq(t *testing.T, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("bytes differ\n got % x\nwant % x", got, want)
	}
}

func TestEncoderAlignment(t *testing.T) {
	e := NewEncoder(nil)
	e.WriteBool(true)      // payload 0: 01
	e.WriteUint16(0x0203)  // pad 1, payload 2: 03 02
	e.WriteInt8(-1)        // payload 4: ff
	e.WriteUint32(7)       // pad 3, payload 8: 07 00 00 00
	e.WriteOctet(0xaa)     // payload 12: aa
	e.WriteFloat64(1.5)    // pad 3, payload 16: 1.5 = 0x3ff8000000000000
	e.WriteChar('A')       // payload 24: 41
	e.WriteWchar(0x00e9)   // pad 1, payload 26: e9 00
	e.WriteInt64(-2)       // pad 4, payload 32: fe ff ff ff ff ff ff ff
	e.WriteFloat32(-0.5)   // payload 40: 0xbf000000
	e.WriteInt16(-3)       // payload 44: fd ff
	e.WriteUint64(1 << 56) // pad 2, payload 48: 00 00 00 00 00 00 00 01
	want := []byte{
		0x00, 0x01, 0x00, 0x00, // CDR_LE header, options 0
		0x01,       // bool true
		0x00,       // pad to 2
		0x03, 0x02, // uint16 0x0203 little endian
		0xff,             // int8 -1
		0x00, 0x00, 0x00, // pad to 8
		0x07, 0x00, 0x00, 0x00, // uint32 7
		0xaa,             // octet
		0x00, 0x00, 0x00, // pad to 16
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, // float64 1.5
		0x41,       // char 'A'
		0x00,       // pad to 26
		0xe9, 0x00, // wchar é
		0x00, 0x00, 0x00, 0x00, // pad to 32
		0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // int64 -2
		0x00, 0x00, 0x00, 0xbf, // float32 -0.5
		0xfd, 0xff, // int16 -3
		0x00, 0x00, // pad to 48
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // uint64 1<<56
	}
	hexEq(t, e.Bytes(), want)
	if e.Offset() != 56 || e.Err() != nil {
		t.Fatalf("offset %d err %v", e.Offset(), e.Err())
	}

	d, err := NewDecoder(want)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.ReadBool()
	u16, _ := d.ReadUint16()
	i8, _ := d.ReadInt8()
	u32, _ := d.ReadUint32()
	o, _ := d.ReadOctet()
	f64, _ := d.ReadFloat64()
	c, _ := d.ReadChar()
	w, _ := d.ReadWchar()
	i64, _ := d.ReadInt64()
	f32, _ := d.ReadFloat32()
	i16, _ := d.ReadInt16()
	u64, err := d.ReadUint64()
	if err != nil {
		t.Fatal(err)
	}
	if !b || u16 != 0x0203 || i8 != -1 || u32 != 7 || o != 0xaa || f64 != 1.5 || c != 'A' || w != 0xe9 ||
		i64 != -2 || f32 != -0.5 || i16 != -3 || u64 != 1<<56 {
		t.Fatalf("decoded %v %x %d %d %x %v %c %x %d %v %d %x", b, u16, i8, u32, o, f64, c, w, i64, f32, i16, u64)
	}
	if d.Remaining() != 0 {
		t.Fatalf("remaining %d", d.Remaining())
	}
}

func TestStrings(t *testing.T) {
	e := NewEncoder(nil)
	e.WriteString("hello")
	// std_msgs/String "hello": header, length 6 (5 bytes + NUL), bytes, NUL.
	hexEq(t, e.Bytes(), []byte{0x00, 0x01, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 'h', 'e', 'l', 'l', 'o', 0x00})

	e = NewPayloadEncoder(nil, LittleEndian)
	e.WriteString("")   // 01 00 00 00 00: the NUL alone
	e.WriteString("ab") // pad 3, 03 00 00 00 'a' 'b' 00
	hexEq(t, e.Bytes(), []byte{1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 0})

	d := NewPayloadDecoder(e.Bytes(), LittleEndian)
	s1, err1 := d.ReadString()
	s2, err2 := d.ReadString()
	if s1 != "" || s2 != "ab" || err1 != nil || err2 != nil {
		t.Fatalf("%q %v %q %v", s1, err1, s2, err2)
	}

	// a zero length reads as "" (Cyclone and Fast-CDR accept it)
	d = NewPayloadDecoder([]byte{0, 0, 0, 0}, LittleEndian)
	if s, err := d.ReadString(); s != "" || err != nil {
		t.Fatalf("zero length: %q %v", s, err)
	}
	// missing terminator
	d = NewPayloadDecoder([]byte{2, 0, 0, 0, 'a', 'b'}, LittleEndian)
	if _, err := d.ReadString(); !errors.Is(err, ErrNotTerminated) {
		t.Fatalf("want ErrNotTerminated, got %v", err)
	}
}

func TestWString(t *testing.T) {
	e := NewPayloadEncoder(nil, LittleEndian)
	e.WriteWStringFromString("hé😀") // UTF-16: 0068 00e9 d83d de00
	want := []byte{
		0x04, 0x00, 0x00, 0x00, // 4 code units, no terminator counted
		0x68, 0x00, 0x00, 0x00, // 'h' as a uint32
		0xe9, 0x00, 0x00, 0x00, // 'é'
		0x3d, 0xd8, 0x00, 0x00, // high surrogate
		0x00, 0xde, 0x00, 0x00, // low surrogate
	}
	hexEq(t, e.Bytes(), want)
	d := NewPayloadDecoder(want, LittleEndian)
	if s, err := d.ReadWStringAsString(); s != "hé😀" || err != nil {
		t.Fatalf("%q %v", s, err)
	}
	bad := []byte{1, 0, 0, 0, 0, 0, 1, 0} // unit 0x10000
	if _, err := NewPayloadDecoder(bad, LittleEndian).ReadWString(); !errors.Is(err, ErrBadWchar) {
		t.Fatalf("want ErrBadWchar, got %v", err)
	}
}

func TestEmptySequenceNoElementAlignment(t *testing.T) {
	// float64[] (empty) then uint8: the uint8 follows the count directly,
	// as Fast-CDR and rmw_cyclonedds write it.
	e := NewPayloadEncoder(nil, LittleEndian)
	e.WriteLength(0)
	e.WriteUint8(9)
	hexEq(t, e.Bytes(), []byte{0, 0, 0, 0, 9})
	// one element: count, pad 4, the double
	e = NewPayloadEncoder(nil, LittleEndian)
	e.WriteLength(1)
	e.WriteFloat64(2)
	hexEq(t, e.Bytes(), []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x40})
}

func TestBigEndian(t *testing.T) {
	data := []byte{
		0x00, 0x00, 0x00, 0x00, // CDR_BE
		0x00, 0x00, 0x00, 0x06, 'h', 'e', 'l', 'l', 'o', 0x00, // string "hello"
		0x12, 0x34, // uint16 at payload 10
		0x00, 0x00, 0x00, 0x00, // pad to 16
		0x3f, 0xf8, 0, 0, 0, 0, 0, 0, // float64 1.5
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x41, // wstring "A"
	}
	d, err := NewDecoder(data)
	if err != nil || d.Order() != BigEndian {
		t.Fatal(err, d.Order())
	}
	s, _ := d.ReadString()
	u, _ := d.ReadUint16()
	f, _ := d.ReadFloat64()
	w, err := d.ReadWStringAsString()
	if s != "hello" || u != 0x1234 || f != 1.5 || w != "A" || err != nil {
		t.Fatalf("%q %x %v %q %v", s, u, f, w, err)
	}
	// and the encoder writes the same bytes
	e := NewEncoderOrder(nil, BigEndian)
	e.WriteString("hello")
	e.WriteUint16(0x1234)
	e.WriteFloat64(1.5)
	e.WriteWStringFromString("A")
	hexEq(t, e.Bytes(), data)
}

func TestHeader(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want error
	}{
		{[]byte{0, 1, 0}, ErrTruncated},
		{[]byte{1, 1, 0, 0}, ErrBadHeader},
		{[]byte{0, 2, 0, 0}, ErrUnsupportedEncapsulation}, // PL_CDR_BE
		{[]byte{0, 7, 0, 0}, ErrUnsupportedEncapsulation}, // PLAIN_CDR2_LE
	} {
		if _, err := NewDecoder(tc.in); !errors.Is(err, tc.want) {
			t.Errorf("% x: got %v want %v", tc.in, err, tc.want)
		}
	}
	// options bytes are ignored
	d, err := NewDecoder([]byte{0, 1, 0, 3, 5})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := d.ReadUint8(); v != 5 {
		t.Fatal(v)
	}
}

func TestLengthGuards(t *testing.T) {
	// a count of 0xfffffff0 with 4 bytes behind it: refused before any allocation
	data := []byte{0xf0, 0xff, 0xff, 0xff, 1, 2, 3, 4}
	d := NewPayloadDecoder(data, LittleEndian)
	if _, err := d.ReadLength(1); !errors.Is(err, ErrTooLong) {
		t.Fatalf("above DefaultMaxLength: %v", err)
	}
	d = NewPayloadDecoder([]byte{5, 0, 0, 0, 1, 2, 3, 4}, LittleEndian)
	if _, err := d.ReadLength(1); !errors.Is(err, ErrTruncated) {
		t.Fatalf("5 elements in 4 bytes: %v", err)
	}
	d = NewPayloadDecoder([]byte{2, 0, 0, 0, 1, 2, 3, 4}, LittleEndian)
	if _, err := d.ReadLength(4); !errors.Is(err, ErrTruncated) {
		t.Fatalf("2 elements of 4 bytes in 4 bytes: %v", err)
	}
	d = NewPayloadDecoder([]byte{4, 0, 0, 0, 1, 2, 3, 4}, LittleEndian)
	d.SetMaxLength(3)
	if _, err := d.ReadLength(1); !errors.Is(err, ErrTooLong) {
		t.Fatalf("limit 3: %v", err)
	}
	d = NewPayloadDecoder([]byte{0xff, 0xff, 0xff, 0x0f, 'a', 0}, LittleEndian)
	if _, err := d.ReadString(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("long string: %v", err)
	}
	d = NewPayloadDecoder([]byte{0xff, 0xff, 0xff, 0x00, 'a', 0, 0, 0}, LittleEndian)
	if _, err := d.ReadWString(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("long wstring: %v", err)
	}
	var e *Error
	d = NewPayloadDecoder([]byte{1, 2, 3, 4, 5}, LittleEndian)
	_, _ = d.ReadUint8()
	if !errors.As(func() error { _, err := d.ReadUint64(); return err }(), &e) || e.Offset != 1 || e.Op != "uint64" {
		t.Fatalf("error offset: %+v", e)
	}
	enc := NewPayloadEncoder(nil, LittleEndian)
	enc.WriteLength(-1)
	if !errors.Is(enc.Err(), ErrTooLong) {
		t.Fatal(enc.Err())
	}
}

// TestTruncatedEverywhere cuts a stream holding every kind of item at each
// length: every read must fail cleanly, never panic, and the full stream
// must read back.
func TestTruncatedEverywhere(t *testing.T) {
	e := NewEncoder(nil)
	write := func(e *Encoder) {
		e.WriteBool(true)
		e.WriteInt64(-5)
		e.WriteString("frame")
		e.WriteWStringFromString("wide")
		e.WriteLongDouble(LongDoubleFromFloat64(3))
		e.WriteLength(3)
		e.WriteOctets([]byte{1, 2, 3})
		e.WriteFloat32(1)
		e.WriteUint16(2)
	}
	write(e)
	full := e.Bytes()
	read := func(d *Decoder) error {
		steps := []func() error{
			func() error { _, err := d.ReadBool(); return err },
			func() error { _, err := d.ReadInt64(); return err },
			func() error { _, err := d.ReadString(); return err },
			func() error { _, err := d.ReadWString(); return err },
			func() error { _, err := d.ReadLongDouble(); return err },
			func() error {
				n, err := d.ReadLength(1)
				if err != nil {
					return err
				}
				_, err = d.ReadOctets(n)
				return err
			},
			func() error { _, err := d.ReadFloat32(); return err },
			func() error { _, err := d.ReadUint16(); return err },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	}
	for n := 0; n < len(full); n++ {
		d, err := NewDecoder(full[:n])
		if err == nil {
			err = read(d)
		}
		if err == nil {
			t.Fatalf("prefix of %d/%d bytes decoded without error", n, len(full))
		}
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("prefix %d: error %v is not a *cdr.Error", n, err)
		}
	}
	d, _ := NewDecoder(full)
	if err := read(d); err != nil || d.Remaining() != 0 {
		t.Fatalf("full stream: %v, %d left", err, d.Remaining())
	}
}

func TestLongDouble(t *testing.T) {
	one := LongDoubleFromFloat64(1)
	// x87: mantissa 0x8000000000000000 (explicit integer bit), exponent 0x3fff
	hexEq(t, one[:], []byte{0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0x3f, 0, 0, 0, 0, 0, 0})
	m2 := LongDoubleFromFloat64(-2)
	hexEq(t, m2[:10], []byte{0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, 0xc0})

	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, math.MaxFloat64, math.SmallestNonzeroFloat64,
		2.2250738585072014e-308, 5e-324 * 12345, math.Inf(1), math.Inf(-1), 1e300, -3.75e-200}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		vals = append(vals, math.Float64frombits(r.Uint64()))
	}
	for _, v := range vals {
		got := LongDoubleFromFloat64(v).Float64X87()
		if math.IsNaN(v) {
			if !math.IsNaN(got) {
				t.Fatalf("NaN became %v", got)
			}
			continue
		}
		if math.Float64bits(got) != math.Float64bits(v) {
			t.Fatalf("%v (%x) became %v (%x)", v, math.Float64bits(v), got, math.Float64bits(got))
		}
	}

	// big-endian streams carry the 16 bytes reversed
	e := NewPayloadEncoder(nil, BigEndian)
	e.WriteLongDouble(one)
	hexEq(t, e.Bytes(), []byte{0, 0, 0, 0, 0, 0, 0x3f, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0})
	got, err := NewPayloadDecoder(e.Bytes(), BigEndian).ReadLongDouble()
	if err != nil || got != one {
		t.Fatalf("%x %v", got, err)
	}
}

func TestPadAlign(t *testing.T) {
	for _, c := range [][3]int{{0, 8, 0}, {1, 8, 7}, {5, 4, 3}, {6, 2, 0}, {7, 1, 0}, {9, 8, 7}} {
		if p := Pad(c[0], c[1]); p != c[2] {
			t.Errorf("Pad(%d,%d)=%d want %d", c[0], c[1], p, c[2])
		}
		if a := Align(c[0], c[1]); a != c[0]+c[2] {
			t.Errorf("Align(%d,%d)=%d", c[0], c[1], a)
		}
	}
}
