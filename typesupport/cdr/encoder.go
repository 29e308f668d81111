package cdr

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"
)

// Encoder appends classic CDR to a byte slice. Write methods never fail;
// the only possible error (a length that does not fit the uint32 prefix) is
// sticky and reported by Err.
type Encoder struct {
	buf    []byte
	origin int // index in buf of the first payload byte: alignment is relative to it
	big    bool
	err    error
}

// NewEncoder returns an Encoder that appends to dst a CDR_LE encapsulation
// header {0x00, 0x01, 0x00, 0x00} followed by the payload it is given.
func NewEncoder(dst []byte) *Encoder {
	return NewEncoderOrder(dst, LittleEndian)
}

// NewEncoderOrder is NewEncoder with a chosen byte order (BigEndian writes
// the CDR_BE header {0x00, 0x00, 0x00, 0x00}).
func NewEncoderOrder(dst []byte, o Order) *Encoder {
	dst = append(dst, 0x00, o.Kind(), 0x00, 0x00)
	return &Encoder{buf: dst, origin: len(dst), big: o == BigEndian}
}

// NewPayloadEncoder returns an Encoder that appends a bare payload (no
// header) to dst; alignment is relative to len(dst).
func NewPayloadEncoder(dst []byte, o Order) *Encoder {
	return &Encoder{buf: dst, origin: len(dst), big: o == BigEndian}
}

// Bytes returns everything appended so far, header included.
func (e *Encoder) Bytes() []byte { return e.buf }

// Offset returns the current payload offset: the number of payload bytes
// written, which is what alignment is computed from.
func (e *Encoder) Offset() int { return len(e.buf) - e.origin }

// Order returns the encoder's byte order.
func (e *Encoder) Order() Order {
	if e.big {
		return BigEndian
	}
	return LittleEndian
}

// Err returns the first error met, if any.
func (e *Encoder) Err() error { return e.err }

// Grow makes room for n more bytes without another allocation.
func (e *Encoder) Grow(n int) {
	if n > cap(e.buf)-len(e.buf) {
		nb := make([]byte, len(e.buf), len(e.buf)+n)
		copy(nb, e.buf)
		e.buf = nb
	}
}

// Align appends zero padding up to a multiple of n (1, 2, 4 or 8) of the
// payload offset.
func (e *Encoder) Align(n int) {
	for p := Pad(e.Offset(), n); p > 0; p-- {
		e.buf = append(e.buf, 0)
	}
}

// WriteBool appends a bool as one byte, 0 or 1.
func (e *Encoder) WriteBool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// WriteOctet appends one byte (IDL octet, ROS byte).
func (e *Encoder) WriteOctet(v byte) { e.buf = append(e.buf, v) }

// WriteUint8 appends one byte.
func (e *Encoder) WriteUint8(v uint8) { e.buf = append(e.buf, v) }

// WriteInt8 appends one byte.
func (e *Encoder) WriteInt8(v int8) { e.buf = append(e.buf, byte(v)) }

// WriteChar appends an IDL char (one byte).
func (e *Encoder) WriteChar(v byte) { e.buf = append(e.buf, v) }

// WriteWchar appends an IDL wchar: 2 bytes, aligned to 2.
func (e *Encoder) WriteWchar(v uint16) { e.WriteUint16(v) }

// WriteUint16 appends v aligned to 2.
func (e *Encoder) WriteUint16(v uint16) {
	e.Align(2)
	if e.big {
		e.buf = binary.BigEndian.AppendUint16(e.buf, v)
	} else {
		e.buf = binary.LittleEndian.AppendUint16(e.buf, v)
	}
}

// WriteInt16 appends v aligned to 2.
func (e *Encoder) WriteInt16(v int16) { e.WriteUint16(uint16(v)) }

// WriteUint32 appends v aligned to 4.
func (e *Encoder) WriteUint32(v uint32) {
	e.Align(4)
	if e.big {
		e.buf = binary.BigEndian.AppendUint32(e.buf, v)
	} else {
		e.buf = binary.LittleEndian.AppendUint32(e.buf, v)
	}
}

// WriteInt32 appends v aligned to 4.
func (e *Encoder) WriteInt32(v int32) { e.WriteUint32(uint32(v)) }

// WriteUint64 appends v aligned to 8.
func (e *Encoder) WriteUint64(v uint64) {
	e.Align(8)
	if e.big {
		e.buf = binary.BigEndian.AppendUint64(e.buf, v)
	} else {
		e.buf = binary.LittleEndian.AppendUint64(e.buf, v)
	}
}

// WriteInt64 appends v aligned to 8.
func (e *Encoder) WriteInt64(v int64) { e.WriteUint64(uint64(v)) }

// WriteFloat32 appends an IEEE 754 binary32 aligned to 4.
func (e *Encoder) WriteFloat32(v float32) { e.WriteUint32(math.Float32bits(v)) }

// WriteFloat64 appends an IEEE 754 binary64 aligned to 8.
func (e *Encoder) WriteFloat64(v float64) { e.WriteUint64(math.Float64bits(v)) }

// WriteLongDouble appends the 16 bytes of v aligned to 8 (reversed on a
// big-endian stream).
func (e *Encoder) WriteLongDouble(v LongDouble) {
	e.Align(8)
	if e.big {
		for i := len(v) - 1; i >= 0; i-- {
			e.buf = append(e.buf, v[i])
		}
		return
	}
	e.buf = append(e.buf, v[:]...)
}

// WriteLength appends a sequence element count (uint32, aligned to 4).
// A negative count or one above math.MaxUint32 sets Err.
func (e *Encoder) WriteLength(n int) {
	if n < 0 || uint64(n) > math.MaxUint32 {
		e.setErr(fmt.Errorf("%w: length %d does not fit in a uint32", ErrTooLong, n))
		n = 0
	}
	e.WriteUint32(uint32(n))
}

// WriteString appends a string: uint32 length including the terminating
// NUL, the bytes, then a NUL.
func (e *Encoder) WriteString(s string) {
	e.WriteLength(len(s) + 1)
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, 0)
}

// WriteWString appends a wstring given as UTF-16 code units: uint32 count
// of units, then every unit as a uint32 (ROS 2's wire form; see the package
// documentation).
func (e *Encoder) WriteWString(units []uint16) {
	e.WriteLength(len(units))
	for _, u := range units {
		if e.big {
			e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(u))
		} else {
			e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(u))
		}
	}
}

// WriteWStringFromString appends the UTF-8 string s as a wstring (encoded
// to UTF-16 first; invalid UTF-8 becomes U+FFFD).
func (e *Encoder) WriteWStringFromString(s string) {
	e.WriteWString(utf16.Encode([]rune(s)))
}

// WriteOctets appends raw bytes, without alignment: the elements of an
// octet/uint8/char/int8 array or sequence (write the count first for a
// sequence).
func (e *Encoder) WriteOctets(b []byte) { e.buf = append(e.buf, b...) }

// WriteBools appends bools as one byte each, without a count.
func (e *Encoder) WriteBools(v []bool) {
	for _, b := range v {
		e.WriteBool(b)
	}
}

func (e *Encoder) setErr(err error) {
	if e.err == nil {
		e.err = err
	}
}
