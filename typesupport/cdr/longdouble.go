package cdr

import (
	"encoding/binary"
	"math"
)

// LongDouble holds the 16 bytes of an IDL long double as they sit in the
// memory of a little-endian writer (byte 0 first). What they mean depends on
// the writer's C long double: on x86-64 the low 10 bytes are an 80-bit x87
// extended-precision value and the top 6 are padding; on aarch64 the 16
// bytes are an IEEE 754 binary128. The codec moves the bytes unchanged
// (reversed for a big-endian stream, as Fast-CDR does).
type LongDouble [16]byte

// LongDoubleFromFloat64 returns f as an x86-64 long double (x87 80-bit
// extended precision, padding bytes zero). The conversion is exact.
func LongDoubleFromFloat64(f float64) LongDouble {
	bits := math.Float64bits(f)
	sign := uint16(bits >> 63)
	exp := int((bits >> 52) & 0x7FF)
	frac := bits & (1<<52 - 1)
	var ext uint16
	var mant uint64
	switch {
	case exp == 0 && frac == 0: // ±0
	case exp == 0x7FF: // ±Inf, NaN (payload kept in the top fraction bits)
		ext = 0x7FFF
		mant = 1<<63 | frac<<11
	case exp == 0: // subnormal double: normal in x87 format
		e := -1022
		for frac&(1<<52) == 0 {
			frac <<= 1
			e--
		}
		ext = uint16(e + 16383)
		mant = frac << 11
	default:
		ext = uint16(exp - 1023 + 16383)
		mant = 1<<63 | frac<<11
	}
	var ld LongDouble
	binary.LittleEndian.PutUint64(ld[0:8], mant)
	binary.LittleEndian.PutUint16(ld[8:10], ext|sign<<15)
	return ld
}

// Float64X87 interprets ld as an x86-64 long double (x87 80-bit extended
// precision) and returns the nearest float64 (values beyond float64's range
// become ±Inf or ±0).
func (ld LongDouble) Float64X87() float64 {
	mant := binary.LittleEndian.Uint64(ld[0:8])
	se := binary.LittleEndian.Uint16(ld[8:10])
	neg := se&0x8000 != 0
	exp := int(se & 0x7FFF)
	var f float64
	switch {
	case exp == 0x7FFF:
		if mant<<1 == 0 {
			f = math.Inf(1)
		} else {
			f = math.NaN()
		}
	case mant == 0:
		f = 0
	default:
		if exp == 0 {
			exp = 1 // x87 denormals use the minimum exponent
		}
		f = math.Ldexp(float64(mant), exp-16383-63)
	}
	if neg {
		f = math.Copysign(f, -1)
	}
	return f
}
