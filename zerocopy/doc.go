// Package zerocopy is the engine of rmw_rgaps: ROS 2 publish/subscribe
// between the processes of one host through shared memory, without copying
// a message on its way from publisher to subscriber.
//
// It owns the formats of the shared segments and everything done to them
// (docs/ARCHITECTURE.md §3): the topic segment (header, endpoint slots,
// sample records, queues, the TLSF-managed payload pool, and for GPU topics
// the device pool of the GPU pool daemon and a host staging pool), the
// graph segment of a domain (nodes and endpoints), and their versions. On
// top of them it implements endpoints and their QoS (history, reliability,
// durability, deadlines, lifespans, liveliness), loans and taken samples,
// notification and wait sets, graph queries, type-clash detection, and the
// recovery of what a crashed process held: robust locks, reclamation of
// its endpoints and samples, repair or quarantine of damaged segments.
//
// It is the public engine API of rmw_rgaps (docs/ARCHITECTURE.md §1):
// the root package rgaps adds ROS contexts and nodes over it and re-exports
// none of its types, and its exported API names no type of an internal
// package (test/boundaries_test.go). Endpoints that relay messages between
// this host and somewhere else (the bridge, a gateway) are republishing
// endpoints (EndpointSpec.Republish), a general concept of the engine.
//
// A Domain (Open) is one process's view of one ROS domain; publishers,
// subscriptions, nodes, graph conditions and wait sets are made from it
// and fail with ErrClosed once closed. Failures are the exported sentinels
// of errors.go, wrapped with context; the C libraries map them to their
// codes through package cabi, so a new sentinel needs a class there.
//
// What it must not do: use unsafe (every access to mapped memory goes
// through internal/shm, which turns offsets into addresses); call CUDA
// except through internal/cuda; know the network, the bridge, the rmw ABI,
// type support or a command line (test/boundaries_test.go). It treats the
// contents of shared memory as untrusted input: every value read from a
// segment is checked before use, a fault on a mapping becomes ErrCorrupt
// (fault.go), and a segment another user could have written is refused
// (ErrUntrusted). It logs only through the slog.Logger of its Config.
package zerocopy
