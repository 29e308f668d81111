package ring

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Wire format, version 3. This comment is the reference; it is written so
// that it can be copied into docs/ARCHITECTURE.md as is.
//
// # Ring
//
// A ring is Size bytes (a multiple of 64, not necessarily a power of two;
// 256 B … 128 GiB) of the subscribe
// side's registered pinned memory, at offset Base of the registered region.
// Positions are monotonically increasing uint64 byte counts; offset =
// position mod Size. All lengths and positions are multiples of 64.
//
//	Tail         writer's next write position           (publish side)
//	Head         reader's consumed position              (subscribe side)
//	DelayedHead  the writer's copy of Head, written back  (publish side,
//	             by the reader with a one-sided write)    8 bytes LE)
//	invariant    DelayedHead ≤ Head ≤ Received ≤ Tail ≤ DelayedHead + Size
//
// Each message occupies one or more records; a record is contiguous in the
// ring, never split by the end of the ring:
//
//	| header (64 B) | payload (PayloadLen B) | padding to a multiple of 64 |
//
// Padding bytes are neither written nor read. When a record does not fit
// between the writer's offset and the end of the ring, the writer skips to
// offset 0; the skipped bytes (the "gap", 64 … len−64 bytes) count as
// consumed by the reader together with the record that follows. The writer
// tells the reader about the gap with the W bit of the immediate (WriteImm
// mode) or a pad record written at the start of the gap (WriteTwice mode).
// A record's length is at most MaxRecord = rounddown64((Size − T + 128)/2)
// where T = max(64, roundup64(watermark bytes)): the longest record that can
// always be placed once the reader has consumed everything and sends no
// write-back because it is below its watermark (no deadlock). That is Size/2
// (+32) for write-backs after every record and about Size/4 for the 1/2
// watermark; larger messages are chunked.
//
// # Record header (64 bytes, little-endian)
//
//	off len field
//	  0   4 header CRC  CRC-32C (Castagnoli) of bytes 8…63 (the magic is
//	                    checked for its exact value instead)
//	  4   4 magic       0x42524752 ("RGRB" in memory order)
//	  8   1 version     3 (version 1 had no META flag, version 2 no
//	                    rails; each side refuses the other's records, and
//	                    offers carry the version)
//	  9   1 flags       bit 0: PAD record (WriteTwice gap filler);
//	                    bit 1: META (below); others 0
//	 10   2 lap         (position / Size) mod 65536: rejects a stale header
//	                    left from an earlier pass over the ring
//	 12   4 topic id    the ring's topic number (control plane assigns)
//	 16   4 chunk index 0 … count−1
//	 20   4 chunk count ≥ 1 (1 = unchunked message)
//	 24   8 sequence    per (ring, topic), strictly increasing per message;
//	                    (sequence, chunk index) orders records of a topic,
//	                    and the reader drops a record that does not come
//	                    after the last one it received for its topic as a
//	                    duplicate (so a reused sequence is lost)
//	 32   8 payload     payload bytes in this record (≤ MaxChunk). All
//	                    chunks but the last carry the same payload length C,
//	                    so chunk i sits at message offset i·C and count·C is
//	                    an upper bound of the message size known at chunk 0
//	 40   8 timestamp   source timestamp, ns since the Unix epoch (signed)
//	 48  16 GID         publisher GID
//
// A PAD record has topic, chunk fields, sequence, timestamp and GID zero and
// payload = gap − 64, so that it ends exactly at the end of the ring; its
// META bit is 0.
//
// # Messages with meta (version 2)
//
// A message whose sample carries a meta block (zerocopy's Sample.Meta: a
// small side block, the rest of a ROS message whose large array is the
// payload) is sent as one byte stream, prefix then payload:
//
//	| meta length M (u32 LE, 1 … 65536) | M meta bytes | payload |
//
// chunked as any message (chunk i at stream offset i·C), with the META
// bit set in every record of it (the Assembler refuses a message whose
// records disagree). The receiver reads M from the first 4 bytes of chunk
// 0 (the bridge refuses offers with MaxChunk < 4, so they are there), sizes the payload as SizeHint −
// (4 + M), and splits each chunk at stream offset 4 + M: bytes before it
// are meta, bytes after it payload at stream offset − (4 + M). A message
// without meta has the bit clear and no prefix, as in version 1.
//
// # Immediate data (8 bytes, little-endian uint64), WriteImm mode
//
//	bits  0…30  L  record length / 64          (1 … 2^31−1)
//	bit   31    W  wrap: the writer skipped from the reader's expected
//	               offset to the end of the ring; the record is at offset 0
//	bits 32…63  O  (Base + record offset) / 64 (0 … 2^32−1)
//
// Limits: Base + Size ≤ 2^38 B (256 GiB region); Size ≤ 2^37 B (128 GiB);
// record length ≤ (2^31−1)·64 B (the ring limit keeps it ≤ 64 GiB). The low
// 32 bits alone are sufficient, because the reader knows where the next
// record must start; O is a redundant check and lets one completion queue
// serve several rings of one region. With Config.CompactImm the writer sends
// O = 0 and the reader ignores it, for transports whose immediate data is 4
// bytes (InfiniBand/RoCE verbs, EFA). L = 0 marks a rail hello (below),
// never a record.
//
// The reader validates every immediate: L ≠ 0 and within MaxRecord; without
// W the record starts at the reader's expected offset and fits before the end
// of the ring; with W the expected offset is not 0, the record does not fit
// there and starts at 0; the record ends no further than Head + Size; O
// matches; the header at the offset validates (magic, version, CRC, lap,
// flags, PayloadLen consistent with L, chunk index < count).
//
// # Rails (version 3)
//
// A ring may be written over K connections at once, its rails (Config.Rails,
// 1 … 16; more than one only in WriteImm mode with full immediates). Each
// rail is a connection with its own completion queue, driven by its own
// thread on both sides, so K transfers progress in parallel. The ring, its
// positions, Head, DelayedHead, the watermark and the records are one,
// whatever K is; only the path of each record differs.
//
//   - Hello: the first write on each rail, before any record, is 8 bytes
//     (the rail index, u64 LE) into the reader's hello word (the 8 bytes
//     after the tail slot) with the immediate L = 0, W = 0, O = rail index.
//     The reader knows each connection's rail from it; a rail index ≥ K
//     or given twice is refused. With one rail the hello is sent too.
//   - The writer posts all the writes of a record (header, meta, payload,
//     the immediate on the last) on one rail: rail 0 when the ring holds
//     nothing unacknowledged, else the next rail round robin, except that
//     a record after a gap (W) goes on the rail of the record before it.
//     Each rail delivers its writes and immediates in the order posted;
//     rails are not ordered among themselves.
//   - The reader keeps each rail's immediates in arrival order and takes
//     the next record from the rail whose oldest immediate announces it:
//     no W and O = Base + the expected offset, or W (the gap rule puts a
//     wrapped record behind its predecessor on one rail, so a W immediate
//     at the front of a rail is always the next record). Records not yet
//     received lie within [Received, Received + Size), so their offsets
//     differ and at most one front matches; every rail holding an
//     immediate and none matching is ErrProtocol. From there on records
//     are validated, consumed, acknowledged and deduplicated in ring order
//     exactly as with one rail.
//   - Head write-backs go on rail 0 (at most one in flight).
//   - Link failure: a failure of any rail takes the link down, every rail
//     with it; the procedure below runs once for the ring, and the writer
//     writes the records after the restart position again over the new
//     link's rails.
//
// # Tail slot, WriteTwice mode
//
// 8 bytes, little-endian uint64: the writer's Tail after the records it
// covers, written with a second RDMA write after the data write(s) (pad
// header, record); one tail write may cover several records. The tail write
// must not land before the data writes: use it where the provider orders
// RMA write after write (msg_order FI_ORDER_WAW: tcp, net, rxm), otherwise
// fence the tail write (FI_FENCE) or wait for the data write's delivery
// completion (shm). The reader parses headers from its expected position up
// to the slot value; ring memory is never zeroed, so it never reads beyond.
// After Resync the reader side sets the slot to the resync position before
// the writer resumes.
//
// # Head write-back
//
// 8 bytes, little-endian uint64: the reader's Head, written one-sidedly
// into the writer's DelayedHead word when the watermark is reached (and,
// optionally, when the reader goes idle: Reader.Flush). Head values are
// always record ends. Keep at most one write-back in flight
// (libfabric shm orders only send-after-send); when it completes, write the
// newest Head if it has moved: any later Head is valid.
//
// # Link failure
//
//  1. both sides stop; in-flight writes, immediates and write-backs are lost;
//  2. reader → writer (control connection): the reader's Head;
//  3. writer: OnHeadUpdate(Head) if it validates, Acked (release), then
//     Rewind: Tail = DelayedHead, returns the unacknowledged records;
//  4. writer → reader: the writer's Tail (restart position P);
//  5. reader: Resync(P) drops received-but-unconsumed records and restarts
//     at P (P ≤ Head; P < Head only when step 3 could not apply the head);
//  6. the writer retransmits the records from step 3 in order, then
//     continues. The reader flags records whose (sequence, chunk) is not
//     beyond the last one consumed for their topic as duplicates.

// Version is the wire-format version written in every record header.
const Version = 3

// HeaderSize is the size of a record header.
const HeaderSize = 64

const (
	magic = 0x42524752 // "RGRB" little-endian

	offCRC     = 0
	offMagic   = 4
	offVersion = 8
	offFlags   = 9
	offLap     = 10
	offTopic   = 12
	offChunk   = 16
	offChunks  = 20
	offSeq     = 24
	offPayload = 32
	offTime    = 40
	offGID     = 48

	flagPad  = 1 << 0
	flagMeta = 1 << 1

	immLenMask = 1<<31 - 1
	immWrap    = 1 << 31
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var le = binary.LittleEndian

// Header is the per-record metadata the caller provides (Writer) or gets
// back (Reader). Lap, flags, magic, version and CRC are the package's.
type Header struct {
	Topic      uint32   // topic id on this ring
	Chunk      uint32   // chunk index, 0 … Chunks−1
	Chunks     uint32   // chunk count, ≥ 1
	Seq        uint64   // per-topic sequence number, strictly increasing per message
	PayloadLen uint64   // payload bytes in this record
	Timestamp  int64    // source timestamp, ns since the Unix epoch
	GID        [16]byte // publisher GID
	// Meta: the message's byte stream begins with the meta prefix (u32
	// length, meta bytes) before its payload (flag bit 1).
	Meta bool
}

// MetaPrefix is the length of the meta prefix of a message with metaLen
// meta bytes: 0 without meta.
func MetaPrefix(metaLen int) uint64 {
	if metaLen == 0 {
		return 0
	}
	return MetaLenSize + uint64(metaLen)
}

// MetaLenSize is the size of the meta length word that begins the byte
// stream of a message with meta.
const MetaLenSize = 4

// MaxMeta is the largest meta block a message may carry (zerocopy.MaxMeta).
const MaxMeta = 64 << 10

// headerCRC covers bytes 8…63: one contiguous span (half the cost of two)
// of seven aligned 64-bit words, which putHeader stores whole, so that the
// CRC's 8-byte loads are forwarded from single stores.
func headerCRC(b []byte) uint32 { return crc32.Checksum(b[8:HeaderSize], castagnoli) }

// putHeader writes a header into b[:64].
func putHeader(b []byte, h *Header, flags uint8, lap uint16) {
	b = b[:HeaderSize]
	if h.Meta {
		flags |= flagMeta
	}
	// Whole 64-bit words (see headerCRC): version, flags, lap, topic at 8;
	// chunk index and count at 16.
	le.PutUint64(b[8:], Version|uint64(flags)<<8|uint64(lap)<<16|uint64(h.Topic)<<32)
	le.PutUint64(b[16:], uint64(h.Chunk)|uint64(h.Chunks)<<32)
	le.PutUint64(b[offSeq:], h.Seq)
	le.PutUint64(b[offPayload:], h.PayloadLen)
	le.PutUint64(b[offTime:], uint64(h.Timestamp))
	le.PutUint64(b[offGID:], le.Uint64(h.GID[:8]))
	le.PutUint64(b[offGID+8:], le.Uint64(h.GID[8:]))
	le.PutUint64(b[0:], uint64(headerCRC(b))|magic<<32)
}

// parseHeader validates magic, version, CRC and flags of b[:64] and decodes
// it into h (left unchanged on error). Length and position checks are the
// caller's.
func parseHeader(b []byte, h *Header) (flags uint8, lap uint16, err error) {
	if len(b) < HeaderSize {
		return 0, 0, fmt.Errorf("%w: %d bytes, need %d", ErrCorrupt, len(b), HeaderSize)
	}
	b = b[:HeaderSize]
	if m := le.Uint32(b[offMagic:]); m != magic {
		return 0, 0, fmt.Errorf("%w: magic %#x", ErrCorrupt, m)
	}
	if v := b[offVersion]; v != Version {
		return 0, 0, fmt.Errorf("%w: record version %d, want %d", ErrVersion, v, Version)
	}
	if got, want := le.Uint32(b[offCRC:]), headerCRC(b); got != want {
		return 0, 0, fmt.Errorf("%w: header CRC %#x, computed %#x", ErrCorrupt, got, want)
	}
	flags = b[offFlags]
	if flags&^(flagPad|flagMeta) != 0 {
		return 0, 0, fmt.Errorf("%w: unknown flags %#x", ErrCorrupt, flags)
	}
	h.Meta = flags&flagMeta != 0
	h.Topic = le.Uint32(b[offTopic:])
	h.Chunk = le.Uint32(b[offChunk:])
	h.Chunks = le.Uint32(b[offChunks:])
	h.Seq = le.Uint64(b[offSeq:])
	h.PayloadLen = le.Uint64(b[offPayload:])
	h.Timestamp = int64(le.Uint64(b[offTime:]))
	copy(h.GID[:], b[offGID:offGID+16])
	return flags, le.Uint16(b[offLap:]), nil
}

// MakeImm builds an immediate value: record length, wrap flag and the
// record's offset in the registered region (Base + ring offset). It does not
// check limits; Writer.Reserve produces checked values.
func MakeImm(regionOffset, recordLen uint64, wrap bool) uint64 {
	v := (recordLen/Align)&immLenMask | (regionOffset/Align)<<32
	if wrap {
		v |= immWrap
	}
	return v
}

// ImmLen is the record length an immediate announces.
func ImmLen(imm uint64) uint64 { return (imm & immLenMask) * Align }

// ImmWrap reports whether the writer skipped to offset 0 before the record.
func ImmWrap(imm uint64) bool { return imm&immWrap != 0 }

// ImmOffset is the record's offset in the registered region (Base + ring
// offset); 0 in compact immediates.
func ImmOffset(imm uint64) uint64 { return (imm >> 32) * Align }

// RailHello is the immediate of a rail's hello write.
func RailHello(rail int) uint64 { return uint64(uint32(rail)) << 32 }

// ParseRailHello reports whether imm is a rail hello and for which rail.
func ParseRailHello(imm uint64) (rail int, ok bool) {
	if imm&(1<<32-1) != 0 {
		return 0, false
	}
	return int(imm >> 32), true
}

// HelloOffset is where the hello word lies relative to the tail slot.
const HelloOffset = WordSize
