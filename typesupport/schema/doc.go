// Package schema describes ROS 2 message types the way rosidl's
// introspection type support does, holds message values dynamically, and
// serializes them to and from CDR driven by the description.
//
// # Description
//
// A [Message] mirrors rosidl_typesupport_introspection_c__MessageMembers
// (package, interface kind, name, members in wire order) and a [Field]
// mirrors one MessageMember: name, type id ([TypeID], the introspection
// numbers FLOAT 1 … MESSAGE 18), string_upper_bound, the nested members for
// TypeMessage, is_array, array_size and is_upper_bound. The C-memory parts
// of the introspection tables (offsets, sizes, accessor functions) are left
// to the rmw layer, which walks C or C++ messages with the same field list
// and writes them with the same [cdr.Encoder] calls this package makes, so
// both produce identical bytes. msgparse builds Messages from .msg and .srv
// files; they can also be built by hand (call [Message.Validate]).
//
// The three array forms follow introspection: T[N] is IsArray with
// ArraySize N (no count on the wire), T[] is IsArray with ArraySize 0, and
// T[<=N] is IsArray, IsUpperBound, ArraySize N (T[] and T[<=N] are
// sequences: a uint32 count precedes the elements).
//
// # Values
//
// A [Struct] holds one Go value per field (see Struct for the Go type of
// every TypeID). [New] builds a value with the definition's defaults;
// [Struct.Get] and [Struct.Set] address fields by dotted path; [Equal]
// compares; [Struct.Map] and [FromMap] convert to and from nested maps (for
// JSON/YAML tools); [Format] and [Struct.String] print the block YAML that
// `ros2 topic echo` prints, and [Parse] reads the YAML flow syntax that
// `ros2 topic pub` takes ("{header: {frame_id: cam}, data: [1, 2]}"): a
// small, strict subset of YAML whose errors name the field
// ([FieldError]) or the offset in the text ([SyntaxError]).
//
// # Codec
//
// [Encode] writes the 4-byte CDR_LE encapsulation header then the fields in
// order with the classic CDR rules of package cdr; [Decode] accepts CDR_LE
// and CDR_BE and ignores bytes after the last field. Values are checked
// against the schema while encoding (Go types, fixed array lengths,
// sequence and string bounds: a value Fast-DDS would refuse to serialize is
// refused here too), and the bounds are checked again while decoding.
// [SerializedSize] returns the exact length Encode produces;
// [MaxSerializedSize] and [FixedSize] describe the type as a whole (for
// preallocation and loans). Errors carry the field path ([FieldError]).
// [PlainSize] decides, as the rmw library's walkers do, whether a type is
// plain (its C memory layout is its CDR layout), which puts 4 reserved
// bytes before the CDR of its messages on rmw topics.
//
// # Split messages
//
// A message published with a device loan travels as its byte field's
// bytes and a meta block holding the rest (docs/ARCHITECTURE.md §3.12).
// [ByteField] picks the field by the rmw's rule, [AppendMetaHeader] and
// [ParseMeta] write and read the meta block's header, [Detach] cuts a
// whole message's CDR into the rest and the field's bytes, [Attach] and
// [Join] put them together again, byte for byte what [Encode] writes.
package schema
