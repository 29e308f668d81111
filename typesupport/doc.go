// Package typesupport is the root of rmw_rgaps' ROS 2 type support: how ROS
// messages are described, how they travel as bytes, and how people write
// and read them. It is the one home of type support: the rmw library's C
// and C++ walkers, the Go codec and the text forms of the command line all
// live below it.
//
// It holds no code of its own; its sub-packages are:
//
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/introspection]: the C and
//     C++ introspection walkers (C API rgaps_ts.h) that serialise messages
//     in rosidl C or C++ memory to and from XCDR1 for the rmw library,
//     which links them through a cgo import. They walk the rosidl
//     introspection tables in C, without entering Go.
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr]: the XCDR1 ("classic"
//     CDR) encoder and decoder in Go, byte-compatible with what ROS 2's
//     DDS-based middlewares (rmw_fastrtps, rmw_cyclonedds) put on the wire
//     and what rmw_serialize produces.
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/schema]: a Go mirror of the
//     rosidl introspection tables (message members with the rosidl field type
//     ids), a dynamic value representation, a schema-driven codec (Encode,
//     Decode, SerializedSize), and the text forms of values: the YAML flow
//     syntax `ros2 topic pub` takes (Parse) and the block YAML `ros2 topic
//     echo` prints (Format).
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/msgparse]: the parser for
//     ROS 2 .msg and .srv files producing schemas.
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces]: a handful of
//     standard ROS 2 interface definitions embedded in the binary
//     (std_msgs, builtin_interfaces, geometry_msgs, sensor_msgs, ...), so
//     tools work without a ROS installation, and the search for the
//     definitions of an installation (RGAPS_INTERFACE_PATH,
//     AMENT_PREFIX_PATH).
//
// The C walkers and the Go codec are two implementations of one wire
// format, not one built on the other: the rmw serialises C and C++ memory
// in C on its hot path, the command line and tests encode dynamic values in
// Go. The Go codec is the walkers' test oracle (test/ts_test.go): both must
// write the same bytes for the same values.
//
// Type support knows no shared memory and no network, and nothing of the
// rmw or the engine: it turns messages into bytes and back, in buffers its
// callers provide (test/boundaries_test.go checks the imports).
package typesupport
