package ring

import "fmt"

// Align is the granule of the ring: record positions, record lengths, the
// ring size and head/tail values are all multiples of Align.
const Align = 64

// Limits imposed by the immediate-data layout (see format.go).
const (
	// MaxSize is the largest ring. The immediate carries (Base+offset)/64
	// in 32 bits, which allows 256 GiB of registered region; a single ring
	// is held to half of that so that its largest record (about half the
	// ring) needs 30 of the 31 length bits.
	MaxSize = 1 << 37 // 128 GiB
	// MaxRegion bounds Base + Size: the 32-bit offset field in units of 64.
	MaxRegion = 1 << 38 // 256 GiB
	// MinSize is the smallest ring: it must hold a 64-byte header with a
	// 64-byte payload under every watermark.
	MinSize = 256
	// MaxRails is the most rails (connections) one ring is written over.
	MaxRails = 16
	// maxLenUnits is the largest value of the 31-bit length field.
	maxLenUnits = 1<<31 - 1
)

// Mode selects how the reader learns that records have landed.
type Mode uint8

const (
	// WriteImm: each record is one RDMA write with 8 bytes of immediate
	// data (fi_writedata); the reader polls its completion queue and calls
	// Reader.OnImmediate. Nothing in the ring is ever zeroed (thesis §3.4).
	WriteImm Mode = iota
	// WriteTwice: each record (or batch) is written, then the new Tail is
	// written as 8 bytes into a tail slot in the reader's memory (RB2's
	// "write twice"); the reader polls the slot and calls Reader.OnTail,
	// which parses record headers from the ring.
	WriteTwice
)

func (m Mode) String() string {
	switch m {
	case WriteImm:
		return "write-imm"
	case WriteTwice:
		return "write-twice"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// Watermark is how much consumption the reader accumulates before it writes
// its Head back into the writer's DelayedHead (thesis §3.4, "watermark-based
// lazy synchronization").
type Watermark uint8

const (
	EveryRecord Watermark = iota // write back after every consumed record
	Eighth                       // after Size/8 bytes consumed since the last write-back
	Quarter                      // after Size/4 bytes
	Half                         // after Size/2 bytes
)

func (w Watermark) String() string {
	switch w {
	case EveryRecord:
		return "every-record"
	case Eighth:
		return "1/8"
	case Quarter:
		return "1/4"
	case Half:
		return "1/2"
	}
	return fmt.Sprintf("Watermark(%d)", uint8(w))
}

// Config describes one ring. Both sides must use the same values; they are
// exchanged when the link is set up (ring parameters, DESIGN.md §4).
type Config struct {
	// Size of the ring in bytes: a multiple of 64 (a power of two is not
	// required), MinSize ≤ Size ≤ MaxSize.
	Size uint64
	// Base is the ring's offset inside the registered region whose offsets
	// the immediates carry (a multiple of 64; Base+Size ≤ MaxRegion). With
	// several rings in one region and one completion queue, the receiver
	// finds the ring from ImmOffset(imm). Zero for a region of its own.
	Base uint64
	// MaxChunk is the largest payload of one record. Messages with more
	// payload are split into ceil(len/MaxChunk) records (chunks). Zero
	// means the largest allowed, MaxRecord()-64; larger values are refused.
	MaxChunk uint64
	// NoChunking refuses messages larger than MaxChunk with ErrTooLarge
	// instead of splitting them.
	NoChunking bool
	// Watermark for head write-backs.
	Watermark Watermark
	// Mode: WriteImm or WriteTwice.
	Mode Mode
	// CompactImm restricts immediates to their low 32 bits (length and wrap
	// flag; the offset bits are zero and not checked). Use it on transports
	// whose immediate data is 4 bytes (InfiniBand/RoCE verbs, EFA). Base
	// must be zero.
	CompactImm bool
	// Rails is the number of connections the ring is written over at once
	// (format.go, "Rails"): 1 … MaxRails, 0 meaning 1. More than one needs
	// WriteImm mode with full immediates (the reader finds the next record
	// by its offset).
	Rails int
}

// threshold returns the write-back threshold in bytes (0: every record).
func (c *Config) threshold() uint64 {
	switch c.Watermark {
	case Eighth:
		return c.Size / 8
	case Quarter:
		return c.Size / 4
	case Half:
		return c.Size / 2
	}
	return 0
}

// Threshold is the number of consumed bytes that makes a head write-back
// due; 0 means after every record.
func (c Config) Threshold() uint64 { return c.threshold() }

// MaxRecord is the longest record (header + payload + padding) the ring
// accepts. It is the largest length for which the writer can never wait
// forever:
//
// Suppose the reader has consumed everything it received and has no
// write-back due. Its unreported consumption Head − DelayedHead is then
// below the watermark, so at most T−64 where T = max(64, roundup64(threshold)),
// and the writer's Tail equals Head. A record of length L that does not fit
// before the end of the ring makes the writer skip a gap of at most L−64
// bytes to offset 0, and then needs (T−64) + (L−64) + L ≤ Size. Hence
// L ≤ (Size − T + 128)/2, rounded down to 64 (TestMaxRecordIsTight checks
// by brute force that this bound is safe and the largest safe one). With every-record write-backs
// this is about Size/2; with the 1/2 watermark about Size/4. A record longer
// than that could wait for a write-back the reader has no reason to send
// (the thesis' watermark and wrap-around together can deadlock).
func (c Config) MaxRecord() uint64 {
	w := roundUp64(c.threshold())
	if w < Align {
		w = Align
	}
	if c.Size+2*Align < w {
		return 0
	}
	return (c.Size + 2*Align - w) / 2 &^ (Align - 1)
}

// Validate checks the configuration against the wire-format limits and
// returns it with defaults filled in (MaxChunk).
func (c Config) Validate() (Config, error) {
	switch {
	case c.Size%Align != 0:
		return c, fmt.Errorf("%w: size %d is not a multiple of %d", ErrConfig, c.Size, Align)
	case c.Size < MinSize:
		return c, fmt.Errorf("%w: size %d is below the minimum %d", ErrConfig, c.Size, MinSize)
	case c.Size > MaxSize:
		return c, fmt.Errorf("%w: size %d exceeds the maximum %d (immediate offset field)", ErrConfig, c.Size, uint64(MaxSize))
	case c.Base%Align != 0:
		return c, fmt.Errorf("%w: base %d is not a multiple of %d", ErrConfig, c.Base, Align)
	case c.Base > MaxRegion-c.Size:
		return c, fmt.Errorf("%w: base %d + size %d exceeds the %d-byte region the immediate's 32-bit offset field addresses", ErrConfig, c.Base, c.Size, uint64(MaxRegion))
	case c.CompactImm && c.Base != 0:
		return c, fmt.Errorf("%w: compact immediates carry no offset, so base must be 0 (got %d)", ErrConfig, c.Base)
	case c.Watermark > Half:
		return c, fmt.Errorf("%w: unknown watermark %d", ErrConfig, c.Watermark)
	case c.Mode > WriteTwice:
		return c, fmt.Errorf("%w: unknown mode %d", ErrConfig, c.Mode)
	case c.Rails < 0 || c.Rails > MaxRails:
		return c, fmt.Errorf("%w: %d rails, at most %d", ErrConfig, c.Rails, MaxRails)
	case c.Rails > 1 && c.Mode != WriteImm:
		return c, fmt.Errorf("%w: %d rails need write-imm mode (a tail write would not be ordered after data on another rail)", ErrConfig, c.Rails)
	case c.Rails > 1 && c.CompactImm:
		return c, fmt.Errorf("%w: %d rails need full immediates (the reader orders the rails' records by the offset they carry)", ErrConfig, c.Rails)
	}
	if c.Rails == 0 {
		c.Rails = 1
	}
	mr := c.MaxRecord()
	if mr < 2*Align || mr/Align > maxLenUnits {
		return c, fmt.Errorf("%w: size %d with watermark %v leaves a largest record of %d bytes", ErrConfig, c.Size, c.Watermark, mr)
	}
	if c.MaxChunk == 0 {
		c.MaxChunk = mr - HeaderSize
	}
	if c.MaxChunk > mr-HeaderSize {
		return c, fmt.Errorf("%w: max chunk %d exceeds %d, the largest payload that size %d with watermark %v can always make progress with (see MaxRecord)",
			ErrConfig, c.MaxChunk, mr-HeaderSize, c.Size, c.Watermark)
	}
	return c, nil
}

func roundUp64(n uint64) uint64 { return (n + Align - 1) &^ (Align - 1) }

// RecordLen is the ring length of a record with the given payload: the
// 64-byte header plus the payload, rounded up to 64. It saturates instead
// of overflowing for absurd payloads (such a length is refused anyway).
func RecordLen(payload uint64) uint64 {
	if payload > 1<<62 {
		return 1 << 62
	}
	return roundUp64(HeaderSize + payload)
}
