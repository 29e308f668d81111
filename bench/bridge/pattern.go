package benchbridge

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
)

// shifts is the number of distinct payloads per size: message k carries
// the template from byte 64·(k mod shifts), so consecutive messages
// differ and a stale payload (a record or pool block from an earlier
// message) fails the check.
const shifts = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// pattern is the content of the messages of one size: bytes 0…7 the
// sequence number, 8…15 size<<8 | topic, the rest a slice of a
// pseudo-random template whose CRC-32C is known.
type pattern struct {
	size int
	tmpl []byte
	crcs [shifts]uint32
}

func newPattern(size int) *pattern {
	p := &pattern{size: size, tmpl: make([]byte, size+64*shifts)}
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(size))
	rand.NewChaCha8(seed).Read(p.tmpl)
	for k := range shifts {
		p.crcs[k] = crc32.Checksum(p.body(uint64(k)), castagnoli)
	}
	return p
}

func (p *pattern) body(seq uint64) []byte {
	k := int(seq % shifts)
	return p.tmpl[64*k+16 : 64*k+p.size]
}

func (p *pattern) stamp(seq uint64, topic int) uint64 { return uint64(p.size)<<8 | uint64(topic) }

// fill writes message seq of topic into dst (len(dst) == size).
func (p *pattern) fill(dst []byte, seq uint64, topic int) {
	k := int(seq % shifts)
	copy(dst, p.tmpl[64*k:64*k+p.size])
	binary.LittleEndian.PutUint64(dst[0:], seq)
	binary.LittleEndian.PutUint64(dst[8:], p.stamp(seq, topic))
}

// stampInto writes only the 16-byte stamp of message seq of topic into
// dst: the rest is whatever the pool block held (timed runs).
func (p *pattern) stampInto(dst []byte, seq uint64, topic int) {
	binary.LittleEndian.PutUint64(dst[0:], seq)
	binary.LittleEndian.PutUint64(dst[8:], p.stamp(seq, topic))
}

// verifyCount is how many messages per stream the untimed verification
// pass after a timed run sends: a quarter of the timed ones, at least 8.
func verifyCount(timed int) int { return max(timed/4, min(timed, 8)) }

// check verifies that b is message seq of topic; crc: the whole payload
// too, not only its stamps.
func (p *pattern) check(b []byte, seq uint64, topic int, crc bool) error {
	if len(b) != p.size {
		return fmt.Errorf("%d bytes, want %d", len(b), p.size)
	}
	if got := binary.LittleEndian.Uint64(b[0:]); got != seq {
		return fmt.Errorf("sequence %d, want %d (lost, duplicated or reordered)", got, seq)
	}
	if got := binary.LittleEndian.Uint64(b[8:]); got != p.stamp(seq, topic) {
		return fmt.Errorf("stamp %#x, want %#x (another topic's message?)", got, p.stamp(seq, topic))
	}
	if crc {
		if got, want := crc32.Checksum(b[16:], castagnoli), p.crcs[seq%shifts]; got != want {
			return fmt.Errorf("CRC-32C %#08x, want %#08x", got, want)
		}
	}
	return nil
}
