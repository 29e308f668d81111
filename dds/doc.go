// Package dds is the project's one owner of Cyclone DDS: participants,
// raw-CDR topics, writers and readers, and the built-in discovery topics,
// for a gateway between rgaps and ROS 2 nodes on DDS rmws
// (rmw_cyclonedds_cpp).
//
// # Loading
//
// libddsc is loaded at run time with dlopen ($RGAPS_DDSC_LIB, else
// libddsc.so.0debian, Debian's soname, else libddsc.so.0), not linked:
// binaries run on machines without Cyclone, and only the gateway needs it.
// The package compiles against Cyclone's headers (cyclonedds-dev 0.10.2,
// installed by scripts/setup.sh): the custom sertype fills Cyclone's own
// structs (ddsi_sertype, ddsi_serdata and their ops, the receive buffer's
// nn_rdata), whose layouts are the 0.10 ABI, and every resolved entry
// point has its header's type (__typeof__), so a mismatch is a compile
// error rather than a crash. A library without the 0.10 receive-buffer
// symbols is refused as another ABI. Built without cgo or with the nodds
// tag, every call returns an error wrapping ErrNotSupported.
//
// # Raw topics
//
// A Topic's samples are opaque serialized messages: XCDR1 with the 4-byte
// encapsulation header, the bytes ROS 2's DDS rmws put on the wire and
// rgaps' CDR payload layout (docs/ARCHITECTURE.md §3.10). The sertype is
// keyless and knows nothing but its type name (no XTypes type
// information, so Cyclone matches endpoints by type name, as with ROS's
// own rmw); a serdata is one malloc'd copy of the message. Writers copy
// the message once into a serdata; readers take serdata references
// (dds_takecdr) and copy the bytes once into Go memory. Messages of any
// size Cyclone's fragmentation carries (tested with 4 MiB) work.
//
// DDSI pads a sample to a multiple of 4 bytes. A writer records how many
// bytes it padded in the two low bits of the encapsulation header's
// options (as XTypes specifies and Cyclone's serializer does), and a
// reader drops that many bytes and clears the bits, so a message comes out
// as it went in. A fragmented sample arrives at the size the writer's
// serdata reports (ours: the exact length, not a multiple of 4 when it was
// padded), and is not cut then. A writer that records nothing (rmw_cyclonedds_cpp writes
// options 0) delivers its padding: up to 3 zero bytes after the message,
// which CDR decoders ignore.
//
// # Names and QoS
//
// Topic and TypeName follow ROS 2's DDS conventions (rt/, rq/...Request,
// rr/...Reply; pkg::msg::dds_::Type_); ROSName and ROSTypeName undo them
// for discovered endpoints. A zerocopy/qos.Profile maps to DDS QoS as
// rmw_cyclonedds_cpp maps rmw_qos_profile_t (Endpoint.QoS the other way),
// every endpoint with the XCDR1 data representation.
//
// This package is one of the owners of import "C" and unsafe
// (test/boundaries_test.go); nothing else of the project talks to DDS.
package dds
