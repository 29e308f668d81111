// Package pattern is the counter pattern that message payloads carry where
// a reader checks what it got: `rgaps topic pub -pattern` and `topic echo
// -check`, the demo, and the local benchmark. Message n's little-endian
// 64-bit word k is n·0x9E3779B97F4A7C15 + k, so every word of every message
// differs from its neighbours and from other messages': a shifted, stale,
// torn or mixed-up block fails Check. It imports nothing of the project.
package pattern

import "encoding/binary"

// mul spreads message numbers over the 64-bit space (the golden
// ratio constant): the patterns of two messages share no word.
const mul = 0x9E3779B97F4A7C15

// Fill writes the counter pattern of message base into b: the
// little-endian 64-bit word k is base*mul + k (a short tail holds
// the first bytes of the next word). Every word of every message differs
// from its neighbours and from other messages', so a shifted, stale or
// mixed-up block fails Check.
func Fill(b []byte, base uint64) {
	v := base * mul
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], v)
		v++
	}
	if i < len(b) {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], v)
		copy(b[i:], w[:])
	}
}

// Check returns the offset of the first byte of b that differs from
// Fill(b, base), or -1.
func Check(b []byte, base uint64) int {
	v := base * mul
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != v {
			break
		}
		v++
	}
	if i == len(b) {
		return -1
	}
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], v)
	for j := 0; j < 8 && i+j < len(b); j++ {
		if b[i+j] != w[j] {
			return i + j
		}
	}
	return -1 // a tail shorter than a word, and equal
}
