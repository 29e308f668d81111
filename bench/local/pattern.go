package benchlocal

import (
	"encoding/binary"
	"fmt"

	"github.com/rmw-rgaps/rmw_rgaps/internal/pattern"
)

// Message layout, the same on both paths:
//
//	[0:8)   t0: the publisher's wall clock (UnixNano) just before it sends
//	[8:16)  the message's index in its cell
//	[16:)   the counter pattern of the index (package internal/pattern, as
//	        `rgaps topic pub -pattern`), so that a subscriber that reads a
//	        stale or torn message notices
//
// Filling and checking run outside the timed interval.
const (
	headerSize = 16
	// MinSize is the smallest message the benchmark sends (the header).
	MinSize = headerSize
)

// fill writes the index and the pattern of message seq into b (not t0).
func fill(b []byte, seq uint64) {
	binary.LittleEndian.PutUint64(b[8:16], seq)
	pattern.Fill(b[headerSize:], seq)
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
	if got := binary.LittleEndian.Uint64(b[8:16]); got != seq {
		return fmt.Sprintf("message %d: carries index %d", seq, got)
	}
	if off := pattern.Check(b[headerSize:], seq); off >= 0 {
		return fmt.Sprintf("message %d: wrong byte at offset %d", seq, headerSize+off)
	}
	return ""
}
