package benchlocal

import (
	"encoding/binary"
	"fmt"
)

// Message layout, the same on both paths:
//
//	[0:8)   t0: the publisher's wall clock (UnixNano) just before it sends
//	[8:16)  the message's index in its cell
//	[16:)   a pattern that depends on the index, so that a subscriber that
//	        reads a stale or torn message notices
//
// Filling and checking run outside the timed interval.
const (
	headerSize = 16
	// MinSize is the smallest message the benchmark sends (the header).
	MinSize = headerSize

	mulOff = 0x9E3779B97F4A7C15
	mulSeq = 0xC2B2AE3D27D4EB4F
)

func patternWord(off, seq uint64) uint64 { return off*mulOff ^ (seq+1)*mulSeq }

// fill writes the index and the pattern of message seq into b (not t0).
func fill(b []byte, seq uint64) {
	le := binary.LittleEndian
	le.PutUint64(b[8:16], seq)
	n := len(b)
	o := headerSize
	for ; o+8 <= n; o += 8 {
		le.PutUint64(b[o:], patternWord(uint64(o), seq))
	}
	for ; o < n; o++ {
		b[o] = byte(uint64(o) ^ seq)
	}
}

// stamp writes t0 into the first 8 bytes.
func stamp(b []byte, t0 int64) { binary.LittleEndian.PutUint64(b[0:8], uint64(t0)) }

// stampOf reads t0 back.
func stampOf(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b[0:8])) }

// check verifies that b is message seq of the given size; it returns a
// description of the first difference, or "".
func check(b []byte, seq uint64, size int) string {
	if len(b) != size {
		return fmt.Sprintf("message %d: %d bytes, want %d", seq, len(b), size)
	}
	le := binary.LittleEndian
	if got := le.Uint64(b[8:16]); got != seq {
		return fmt.Sprintf("message %d: carries index %d", seq, got)
	}
	o := headerSize
	for ; o+8 <= size; o += 8 {
		if le.Uint64(b[o:]) != patternWord(uint64(o), seq) {
			return fmt.Sprintf("message %d: wrong bytes at offset %d", seq, o)
		}
	}
	for ; o < size; o++ {
		if b[o] != byte(uint64(o)^seq) {
			return fmt.Sprintf("message %d: wrong byte at offset %d", seq, o)
		}
	}
	return ""
}
