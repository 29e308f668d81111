// Package typesupport is the root of rmw_rgaps' ROS 2 type support: how ROS
// messages are described and how they travel.
//
// It holds no code of its own; its sub-packages are:
//
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr]: the XCDR1 ("classic"
//     CDR) encoder and decoder, byte-compatible with what ROS 2's DDS-based
//     middlewares (rmw_fastrtps, rmw_cyclonedds) put on the wire and what
//     rmw_serialize produces.
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/schema]: a Go mirror of the
//     rosidl introspection tables (message members with the rosidl field type
//     ids), a dynamic value representation, and a schema-driven codec
//     (Encode, Decode, SerializedSize).
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/msgparse]: the parser for
//     ROS 2 .msg and .srv files producing schemas.
//   - [github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces]: a handful of
//     standard ROS 2 interface definitions embedded in the binary
//     (std_msgs, builtin_interfaces, geometry_msgs, sensor_msgs, ...), so
//     tools work without a ROS installation.
//
// The C and C++ introspection walkers of the rmw library are built on the
// same schema and cdr packages.
package typesupport
