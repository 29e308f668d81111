package qos

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// ErrDecode is returned (wrapped) by Decode for input that is not a profile
// written by Encode of this encoding version.
var ErrDecode = errors.New("qos: cannot decode profile")

// EncodedSize is the number of bytes Profile.Encode writes and Decode reads.
const EncodedSize = 48

// EncodingVersion is the value of the first encoded byte. It changes whenever
// the layout changes, so processes built from different versions refuse each
// other's slots instead of misreading them.
const EncodingVersion = 1

// Encoded layout, all integers little-endian:
//
//	offset size field
//	0      1    version (EncodingVersion)
//	1      1    history
//	2      1    reliability
//	3      1    durability
//	4      1    liveliness
//	5      1    flags: bit 0 = AvoidROSNamespaceConventions, others 0
//	6      2    reserved, 0
//	8      4    depth
//	12     4    reserved, 0
//	16     8    deadline, int64 nanoseconds
//	24     8    lifespan, int64 nanoseconds
//	32     8    liveliness lease, int64 nanoseconds
//	40     4    reserved, 0
//	44     4    CRC-32 (IEEE) of bytes 0..43
//
// The checksum lets a reader tell a completely written slot from a torn or
// foreign one; the reserved bytes leave room for a later version.
const (
	offVersion  = 0
	offHistory  = 1
	offReliab   = 2
	offDurab    = 3
	offLiveli   = 4
	offFlags    = 5
	offDepth    = 8
	offDeadline = 16
	offLifespan = 24
	offLease    = 32
	offCRC      = 44

	flagAvoidROSNamespaceConventions = 1 << 0
)

// Encode writes p into b[:EncodedSize]. Fields are stored as they are, with
// no validation; Decode accepts the result if every policy value is one ROS 2
// defines and no duration is negative (in particular for every profile that
// passes Validate). Encode panics if len(b) < EncodedSize, like the
// encoding/binary Put functions.
func (p Profile) Encode(b []byte) {
	_ = b[EncodedSize-1] // bounds check on len, not cap
	b = b[:EncodedSize]
	clear(b)
	b[offVersion] = EncodingVersion
	b[offHistory] = uint8(p.History)
	b[offReliab] = uint8(p.Reliability)
	b[offDurab] = uint8(p.Durability)
	b[offLiveli] = uint8(p.Liveliness)
	if p.AvoidROSNamespaceConventions {
		b[offFlags] = flagAvoidROSNamespaceConventions
	}
	binary.LittleEndian.PutUint32(b[offDepth:], p.Depth)
	binary.LittleEndian.PutUint64(b[offDeadline:], uint64(p.Deadline))
	binary.LittleEndian.PutUint64(b[offLifespan:], uint64(p.Lifespan))
	binary.LittleEndian.PutUint64(b[offLease:], uint64(p.LivelinessLease))
	binary.LittleEndian.PutUint32(b[offCRC:], crc32.ChecksumIEEE(b[:offCRC]))
}

// Decode reads a profile written by Encode from b[:EncodedSize]; bytes after
// that are ignored. It returns an error wrapping ErrDecode if b is short, the
// version is not EncodingVersion, the checksum does not match, a reserved bit
// is set, a policy value is outside the ROS 2 enumeration, or a duration is
// negative. It never panics. The profile is not otherwise validated: a
// stored system_default or unknown policy decodes as such.
func Decode(b []byte) (Profile, error) {
	if len(b) < EncodedSize {
		return Profile{}, fmt.Errorf("%w: %d bytes, need %d", ErrDecode, len(b), EncodedSize)
	}
	b = b[:EncodedSize]
	if b[offVersion] != EncodingVersion {
		return Profile{}, fmt.Errorf("%w: version %d, want %d", ErrDecode, b[offVersion], EncodingVersion)
	}
	if got, want := binary.LittleEndian.Uint32(b[offCRC:]), crc32.ChecksumIEEE(b[:offCRC]); got != want {
		return Profile{}, fmt.Errorf("%w: checksum %#08x, want %#08x", ErrDecode, got, want)
	}
	if b[offFlags]&^flagAvoidROSNamespaceConventions != 0 || b[6] != 0 || b[7] != 0 ||
		binary.LittleEndian.Uint32(b[12:]) != 0 || binary.LittleEndian.Uint32(b[40:]) != 0 {
		return Profile{}, fmt.Errorf("%w: reserved bits set", ErrDecode)
	}
	p := Profile{
		History:                      History(b[offHistory]),
		Depth:                        binary.LittleEndian.Uint32(b[offDepth:]),
		Reliability:                  Reliability(b[offReliab]),
		Durability:                   Durability(b[offDurab]),
		Deadline:                     time.Duration(binary.LittleEndian.Uint64(b[offDeadline:])),
		Lifespan:                     time.Duration(binary.LittleEndian.Uint64(b[offLifespan:])),
		Liveliness:                   Liveliness(b[offLiveli]),
		LivelinessLease:              time.Duration(binary.LittleEndian.Uint64(b[offLease:])),
		AvoidROSNamespaceConventions: b[offFlags]&flagAvoidROSNamespaceConventions != 0,
	}
	switch {
	case !p.History.valid():
		return Profile{}, fmt.Errorf("%w: history %s out of range", ErrDecode, p.History)
	case !p.Reliability.valid():
		return Profile{}, fmt.Errorf("%w: reliability %s out of range", ErrDecode, p.Reliability)
	case !p.Durability.valid():
		return Profile{}, fmt.Errorf("%w: durability %s out of range", ErrDecode, p.Durability)
	case !p.Liveliness.valid():
		return Profile{}, fmt.Errorf("%w: liveliness %s out of range", ErrDecode, p.Liveliness)
	case p.Deadline < 0 || p.Lifespan < 0 || p.LivelinessLease < 0:
		return Profile{}, fmt.Errorf("%w: negative duration", ErrDecode)
	}
	return p, nil
}
