package cdr

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"
)

// Decoder reads classic CDR from a byte slice. It never panics: every read
// checks the bytes left and returns an *Error wrapping one of the Err*
// sentinels. A Decoder does not copy its input; only ReadOctetsView returns
// memory that aliases it.
type Decoder struct {
	data   []byte // the payload (after the header)
	pos    int
	big    bool
	maxLen uint32
}

// NewDecoder parses the 4-byte encapsulation header at the start of data
// (CDR_LE or CDR_BE) and returns a Decoder positioned on the payload.
func NewDecoder(data []byte) (*Decoder, error) {
	o, err := ParseHeader(data)
	if err != nil {
		return nil, err
	}
	return NewPayloadDecoder(data[HeaderSize:], o), nil
}

// NewPayloadDecoder returns a Decoder over a bare payload (no header) in
// byte order o; alignment is relative to payload[0].
func NewPayloadDecoder(payload []byte, o Order) *Decoder {
	return &Decoder{data: payload, big: o == BigEndian, maxLen: DefaultMaxLength}
}

// SetMaxLength bounds every length prefix (string bytes including the NUL,
// wstring units, sequence elements) the decoder accepts; longer ones fail
// with ErrTooLong before anything is allocated.
func (d *Decoder) SetMaxLength(n uint32) { d.maxLen = n }

// MaxLength returns the current bound on length prefixes.
func (d *Decoder) MaxLength() uint32 { return d.maxLen }

// Order returns the stream's byte order.
func (d *Decoder) Order() Order {
	if d.big {
		return BigEndian
	}
	return LittleEndian
}

// Offset returns the current payload offset.
func (d *Decoder) Offset() int { return d.pos }

// Remaining returns the number of unread payload bytes.
func (d *Decoder) Remaining() int { return len(d.data) - d.pos }

func (d *Decoder) fail(op string, err error, detail string) error {
	return &Error{Offset: d.pos, Op: op, Err: err, Detail: detail}
}

// take returns the next n bytes after aligning to align.
func (d *Decoder) take(op string, align, n int) ([]byte, error) {
	p := d.pos + Pad(d.pos, align)
	if p > len(d.data) || n > len(d.data)-p {
		return nil, d.fail(op, ErrTruncated, fmt.Sprintf("need %d bytes, %d left", p-d.pos+n, len(d.data)-d.pos))
	}
	d.pos = p + n
	return d.data[p:d.pos], nil
}

// Align skips padding up to a multiple of n of the payload offset.
func (d *Decoder) Align(n int) error {
	_, err := d.take("padding", n, 0)
	return err
}

// Skip advances n bytes without alignment.
func (d *Decoder) Skip(n int) error {
	if n < 0 {
		return d.fail("skip", ErrTooLong, "negative count")
	}
	_, err := d.take("skip", 1, n)
	return err
}

// ReadBool reads one byte; any non-zero value is true.
func (d *Decoder) ReadBool() (bool, error) {
	b, err := d.take("bool", 1, 1)
	if err != nil {
		return false, err
	}
	return b[0] != 0, nil
}

// ReadOctet reads one byte.
func (d *Decoder) ReadOctet() (byte, error) {
	b, err := d.take("octet", 1, 1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// ReadUint8 reads one byte.
func (d *Decoder) ReadUint8() (uint8, error) { return d.ReadOctet() }

// ReadChar reads an IDL char (one byte).
func (d *Decoder) ReadChar() (byte, error) { return d.ReadOctet() }

// ReadInt8 reads one byte as a signed integer.
func (d *Decoder) ReadInt8() (int8, error) {
	b, err := d.ReadOctet()
	return int8(b), err
}

// ReadUint16 reads a uint16 aligned to 2.
func (d *Decoder) ReadUint16() (uint16, error) {
	b, err := d.take("uint16", 2, 2)
	if err != nil {
		return 0, err
	}
	if d.big {
		return binary.BigEndian.Uint16(b), nil
	}
	return binary.LittleEndian.Uint16(b), nil
}

// ReadInt16 reads an int16 aligned to 2.
func (d *Decoder) ReadInt16() (int16, error) {
	v, err := d.ReadUint16()
	return int16(v), err
}

// ReadWchar reads an IDL wchar (2 bytes, aligned to 2).
func (d *Decoder) ReadWchar() (uint16, error) { return d.ReadUint16() }

// ReadUint32 reads a uint32 aligned to 4.
func (d *Decoder) ReadUint32() (uint32, error) {
	b, err := d.take("uint32", 4, 4)
	if err != nil {
		return 0, err
	}
	if d.big {
		return binary.BigEndian.Uint32(b), nil
	}
	return binary.LittleEndian.Uint32(b), nil
}

// ReadInt32 reads an int32 aligned to 4.
func (d *Decoder) ReadInt32() (int32, error) {
	v, err := d.ReadUint32()
	return int32(v), err
}

// ReadUint64 reads a uint64 aligned to 8.
func (d *Decoder) ReadUint64() (uint64, error) {
	b, err := d.take("uint64", 8, 8)
	if err != nil {
		return 0, err
	}
	if d.big {
		return binary.BigEndian.Uint64(b), nil
	}
	return binary.LittleEndian.Uint64(b), nil
}

// ReadInt64 reads an int64 aligned to 8.
func (d *Decoder) ReadInt64() (int64, error) {
	v, err := d.ReadUint64()
	return int64(v), err
}

// ReadFloat32 reads an IEEE 754 binary32 aligned to 4.
func (d *Decoder) ReadFloat32() (float32, error) {
	v, err := d.ReadUint32()
	return math.Float32frombits(v), err
}

// ReadFloat64 reads an IEEE 754 binary64 aligned to 8.
func (d *Decoder) ReadFloat64() (float64, error) {
	v, err := d.ReadUint64()
	return math.Float64frombits(v), err
}

// ReadLongDouble reads 16 bytes aligned to 8 (reversed from a big-endian
// stream, so the result is in little-endian memory order).
func (d *Decoder) ReadLongDouble() (LongDouble, error) {
	var v LongDouble
	b, err := d.take("long double", 8, 16)
	if err != nil {
		return v, err
	}
	if d.big {
		for i := range v {
			v[i] = b[len(b)-1-i]
		}
	} else {
		copy(v[:], b)
	}
	return v, nil
}

// ReadLength reads a sequence element count and checks it against the
// maximum length and against the bytes left, given the smallest wire size
// one element can have (at least 1). A count that passes can be allocated
// safely.
func (d *Decoder) ReadLength(minElemSize int) (int, error) {
	at := d.pos
	n, err := d.ReadUint32()
	if err != nil {
		return 0, err
	}
	if err := d.checkCount("sequence length", at, n, minElemSize); err != nil {
		return 0, err
	}
	return int(n), nil
}

func (d *Decoder) checkCount(op string, at int, n uint32, minElemSize int) error {
	if n > d.maxLen {
		return &Error{Offset: at, Op: op, Err: ErrTooLong, Detail: fmt.Sprintf("%d > limit %d", n, d.maxLen)}
	}
	if minElemSize < 1 {
		minElemSize = 1
	}
	if uint64(n)*uint64(minElemSize) > uint64(d.Remaining()) {
		return &Error{Offset: at, Op: op, Err: ErrTruncated,
			Detail: fmt.Sprintf("%d elements of at least %d bytes, %d bytes left", n, minElemSize, d.Remaining())}
	}
	return nil
}

// ReadString reads a string (uint32 length including the NUL, bytes, NUL).
// A length of 0 reads as "".
func (d *Decoder) ReadString() (string, error) {
	b, err := d.readStringBytes()
	return string(b), err
}

func (d *Decoder) readStringBytes() ([]byte, error) {
	at := d.pos
	n, err := d.ReadUint32()
	if err != nil {
		return nil, err
	}
	if err := d.checkCount("string length", at, n, 1); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	b := d.data[d.pos : d.pos+int(n)]
	if b[n-1] != 0 {
		return nil, &Error{Offset: at, Op: "string", Err: ErrNotTerminated,
			Detail: fmt.Sprintf("last of %d bytes is 0x%02x", n, b[n-1])}
	}
	d.pos += int(n)
	return b[:n-1], nil
}

// ReadWString reads a wstring (uint32 unit count, then a uint32 per UTF-16
// code unit) and returns its code units.
func (d *Decoder) ReadWString() ([]uint16, error) {
	at := d.pos
	n, err := d.ReadUint32()
	if err != nil {
		return nil, err
	}
	if err := d.checkCount("wstring length", at, n, SizeWcharInStr); err != nil {
		return nil, err
	}
	units := make([]uint16, n)
	for i := range units {
		v, err := d.ReadUint32()
		if err != nil {
			return nil, err
		}
		if v > 0xFFFF {
			return nil, &Error{Offset: d.pos - 4, Op: "wstring", Err: ErrBadWchar, Detail: fmt.Sprintf("unit %d is 0x%x", i, v)}
		}
		units[i] = uint16(v)
	}
	return units, nil
}

// ReadWStringAsString reads a wstring and returns it as UTF-8 (unpaired
// surrogates become U+FFFD).
func (d *Decoder) ReadWStringAsString() (string, error) {
	u, err := d.ReadWString()
	if err != nil {
		return "", err
	}
	return string(utf16.Decode(u)), nil
}

// ReadOctets reads n raw bytes (no alignment) into a new slice.
func (d *Decoder) ReadOctets(n int) ([]byte, error) {
	b, err := d.ReadOctetsView(n)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// ReadOctetsView reads n raw bytes (no alignment) and returns them without
// copying: the slice aliases the decoder's input.
func (d *Decoder) ReadOctetsView(n int) ([]byte, error) {
	if n < 0 {
		return nil, d.fail("octets", ErrTooLong, "negative count")
	}
	return d.take("octets", 1, n)
}
