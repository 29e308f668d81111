// Package cdr encodes and decodes classic CDR (XCDR version 1, "PLAIN_CDR"),
// the serialization ROS 2 messages have on the wire with the DDS-based
// middlewares and in rmw_serialized_message_t.
//
// # Wire format
//
// Every decision below was checked against the public sources of the ROS 2
// middlewares that define the de-facto format: rmw_cyclonedds
// (rmw_cyclonedds_cpp/src/Serialization.cpp, serdes.hpp, rolling 3.2.0),
// rosidl_typesupport_fastrtps (serialization_helpers.hpp and the
// msg__type_support_c.cpp.em template, jazzy and rolling branches) and
// eProsima Fast-CDR 2.x (src/cpp/Cdr.cpp), which rmw_fastrtps drives with
// CdrVersion::XCDRv1.
//
//   - Encapsulation header: 4 bytes, {0x00, 0x01, 0x00, 0x00} for CDR_LE
//     (what this package writes) and {0x00, 0x00, 0x00, 0x00} for CDR_BE
//     (accepted when decoding: a big-endian peer writes it). The last two
//     bytes are the encapsulation options; they are written as zero and
//     ignored when reading (some writers record trailing padding there).
//     Any other encapsulation kind (PL_CDR, XCDR2) is refused with
//     [ErrUnsupportedEncapsulation].
//   - Alignment: every primitive is aligned to its own size, at most 8
//     (int64, uint64, double and long double align to 8: XCDR1, unlike XCDR2
//     where the maximum is 4). Alignment is relative to the first byte after
//     the encapsulation header (Fast-CDR resets its alignment origin there;
//     rmw_cyclonedds rebases its cursor by 4). Padding bytes are written as
//     zero and not checked when reading.
//   - Structures have no alignment or header of their own: their members
//     follow one another. An empty structure does not occur in ROS: rosidl
//     gives it a uint8 member named structure_needs_at_least_one_member.
//   - bool, octet, char, int8, uint8: 1 byte. bool is written as 0 or 1;
//     when reading, any non-zero byte is true (as rmw_cyclonedds does;
//     Fast-CDR refuses values other than 0 and 1).
//   - wchar: 2 bytes, aligned to 2 (Fast-CDR 2 serializes wchar_t as a
//     uint16; rmw_cyclonedds gives WCHAR a CDR size of 2). Only IDL files
//     can declare wchar; .msg files cannot.
//   - long double: 16 bytes, aligned to 8 (Fast-CDR). The bytes are the C
//     long double of the writer's platform: x86-64 puts an 80-bit x87
//     extended value in the low 10 bytes, aarch64 an IEEE binary128.
//     rmw_cyclonedds does not support the type at all. This package moves
//     the 16 bytes as a [LongDouble] and offers x87 conversions; .msg files
//     cannot declare the type.
//   - string: uint32 length counting the terminating NUL, the bytes, then
//     the NUL; so "" is 01 00 00 00 00. When reading, a length of 0 is
//     accepted as "" (rmw_cyclonedds and Fast-CDR accept it) and a string
//     whose last byte is not NUL is an error ([ErrNotTerminated]), as in
//     rmw_cyclonedds (Fast-CDR would keep all the bytes instead; no
//     conforming writer sends such a string). Bytes inside the string,
//     NUL included, are kept as they are.
//   - wstring: uint32 count of UTF-16 code units (no terminator counted or
//     sent), then every code unit as a uint32 (4 bytes each). This is what
//     ROS 2 really does on Linux, and it is not what the XTypes 1.3 spec
//     says (a byte count followed by 2-byte units): rosidl_typesupport_fastrtps
//     writes each char16 as a uint32 "for interoperability with other
//     DDS-based implementations", and rmw_cyclonedds in CDR_Legacy mode
//     writes each unit as a 4-byte wchar_t. A unit above 0xFFFF is an error
//     when reading ([ErrBadWchar]), as in rosidl_typesupport_fastrtps.
//   - Sequences (T[] and T[<=N]): uint32 element count, aligned to 4, then
//     the elements. An empty sequence writes only its count: the element
//     alignment happens only when there is a first element (Fast-CDR's
//     serialize_array and rmw_cyclonedds' serialize_many both return early
//     on zero elements), so a following field may sit right after the
//     count.
//   - Arrays (T[N]): the N elements, no count.
//   - Trailing bytes after the last member (writers pad payloads to a
//     multiple of 4) are ignored by the schema-driven decoder.
//
// # Safety on input
//
// A [Decoder] never panics on truncated or hostile input: every read checks
// the remaining length and returns an error wrapping [ErrTruncated],
// [ErrTooLong], [ErrNotTerminated] or [ErrBadWchar]. Length prefixes are
// bounded twice before anything is allocated: by the decoder's maximum
// length (SetMaxLength, default [DefaultMaxLength]) and by the bytes left in
// the buffer divided by the minimum wire size of one element, so a forged
// count can never make the decoder allocate more than a small multiple of
// the input size.
package cdr
