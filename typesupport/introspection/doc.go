// Package introspection holds the C and C++ introspection walkers of
// rmw_rgaps' type support: ts_cdr.c and ts_cxx.cpp serialise ROS 2 messages
// that lie in C memory (rosidl_typesupport_introspection_c) or C++ memory
// (rosidl_typesupport_introspection_cpp) to and from XCDR1, walking the
// rosidl introspection tables of the message's type support. Their C API is
// rgaps_ts.h (rgaps_ts_resolve, rgaps_ts_serialize, rgaps_ts_deserialize,
// ...). ts_member.c adds the detached byte members: a top-level uint8,
// octet or char sequence (a sensor_msgs/Image's data) read and written in
// place, and (de)serialisation of the rest of the message with that member
// empty on the wire, its bytes located in the buffer rather than copied
// (rgaps_ts_byte_member, rgaps_ts_serialize_detached,
// rgaps_ts_deserialize_detached, ...). ts_internal.h is what the C files
// share. rgaps_rosidl_abi.h declares the parts of the rosidl ABI they read,
// so they build without a ROS 2 installation (with -DRGAPS_USE_ROS_HEADERS
// the real rosidl headers are included and the same static assertions check
// them).
//
// This is a cgo package with no Go API: cgo compiles the C and C++ files of
// the package that contains them, so the rmw library (rmw/) imports it for
// its side effect, and the objects it makes are linked into
// librmw_rgaps.so, where its C files call the rgaps_ts_* functions directly. The
// rmw's C files reach the headers through `#cgo CFLAGS: -I` of this
// directory.
//
// The walkers are not built on the Go packages
// [github.com/rmw-rgaps/rmw_rgaps/typesupport/schema] and
// [github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr]: they are a second,
// independent implementation of the same wire format, in C because they
// walk C and C++ memory on the rmw's hot path without entering Go. The Go
// codec is their test oracle: test/ts_test.go compiles these files with the
// test programs of testdata/ under AddressSanitizer,
// UndefinedBehaviorSanitizer and ThreadSanitizer and checks their bytes
// against what schema.Encode writes for the same values, both ways and in
// both byte orders.
//
// Like the rest of typesupport, this package knows nothing of the rmw,
// shared memory or the network: it turns message memory into bytes and
// back, into buffers its caller provides.
package introspection
