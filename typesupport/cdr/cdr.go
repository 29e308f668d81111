package cdr

import (
	"errors"
	"fmt"
)

// HeaderSize is the size of the encapsulation header in front of every
// serialized message.
const HeaderSize = 4

// Encapsulation kinds (the second byte of the header; the first is 0).
const (
	KindCDRBE byte = 0x00 // classic CDR, big endian
	KindCDRLE byte = 0x01 // classic CDR, little endian
)

// Wire sizes of the primitive types.
const (
	SizeBool       = 1
	SizeOctet      = 1
	SizeChar       = 1
	SizeWchar      = 2
	SizeLongDouble = 16
	SizeLength     = 4 // the uint32 in front of strings, wstrings and sequences
	SizeWcharInStr = 4 // one UTF-16 code unit inside a wstring
)

// MaxAlign is the largest alignment classic CDR applies.
const MaxAlign = 8

// DefaultMaxLength is the default bound on any length prefix (string
// bytes, wstring units, sequence elements) a Decoder accepts: 1 GiB, the
// largest message size rmw_rgaps is designed for.
const DefaultMaxLength = 1 << 30

// Errors returned (wrapped in *Error) by the Decoder, and by the Encoder's
// Err.
var (
	ErrTruncated                = errors.New("cdr: input truncated")
	ErrTooLong                  = errors.New("cdr: length exceeds limit")
	ErrNotTerminated            = errors.New("cdr: string not NUL-terminated")
	ErrBadWchar                 = errors.New("cdr: wide character above 0xFFFF")
	ErrBadHeader                = errors.New("cdr: bad encapsulation header")
	ErrUnsupportedEncapsulation = errors.New("cdr: unsupported encapsulation (only classic CDR_LE/CDR_BE)")
)

// Error records where in the payload a decoding error happened.
type Error struct {
	Offset int    // payload offset (after the header) of the failing read
	Op     string // what was being read, e.g. "uint32" or "string"
	Err    error  // one of the Err* sentinels
	Detail string // optional extra information
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%v reading %s at payload offset %d", e.Err, e.Op, e.Offset)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Order is the byte order of a CDR stream.
type Order uint8

const (
	LittleEndian Order = iota
	BigEndian
)

func (o Order) String() string {
	if o == BigEndian {
		return "big-endian"
	}
	return "little-endian"
}

// Kind returns the encapsulation kind byte of the order.
func (o Order) Kind() byte {
	if o == BigEndian {
		return KindCDRBE
	}
	return KindCDRLE
}

// Pad returns the number of padding bytes needed to bring offset to a
// multiple of align (1, 2, 4 or 8).
func Pad(offset, align int) int {
	return (align - offset%align) % align
}

// Align returns offset rounded up to a multiple of align.
func Align(offset, align int) int {
	return offset + Pad(offset, align)
}

// ParseHeader checks a 4-byte encapsulation header and returns the byte
// order it announces.
func ParseHeader(h []byte) (Order, error) {
	if len(h) < HeaderSize {
		return 0, &Error{Offset: -HeaderSize, Op: "encapsulation header", Err: ErrTruncated}
	}
	if h[0] != 0 {
		return 0, &Error{Offset: -HeaderSize, Op: "encapsulation header", Err: ErrBadHeader,
			Detail: fmt.Sprintf("first byte 0x%02x, want 0x00", h[0])}
	}
	switch h[1] {
	case KindCDRLE:
		return LittleEndian, nil
	case KindCDRBE:
		return BigEndian, nil
	}
	return 0, &Error{Offset: -HeaderSize, Op: "encapsulation header", Err: ErrUnsupportedEncapsulation,
		Detail: fmt.Sprintf("kind 0x%02x%02x", h[0], h[1])}
}
