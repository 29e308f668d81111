// Package gateway is rgapsd's DDS gateway (docs/ARCHITECTURE.md §3.13): it
// carries ROS 2 topics between the rgaps engine of this host and ROS 2
// nodes on a DDS rmw (rmw_cyclonedds_cpp) in the same ROS domain, both
// ways, through package dds.
//
// Run keeps mirrors in step with the two graphs, re-reading them every
// Options.Interval:
//
//   - rgaps → DDS: a topic with local rgaps publishers that are not
//     republishing endpoints gets a republishing rgaps subscription and a
//     DDS writer on rt/<topic>;
//   - DDS → rgaps: a topic with DDS writers (rt/ names) of participants
//     other than the gateway's own gets a DDS reader and a republishing
//     rgaps publisher.
//
// Payloads are carried as they are, but for types that the rmw lays out
// plain (§3.10; schema.PlainSize on the type's definition from
// typesupport/interfaces): their 4 reserved bytes are stripped on the way
// out and added on the way in. A type whose definition cannot be found is
// taken as CDR.
//
// Split messages (GPU loans: the byte field's bytes as the payload, the
// rest in a meta block, §3.12) are joined going out, written to DDS from
// three parts (the bytes before the field, the field's, the bytes after)
// without a joined copy, the device form copied out once by the mirror's
// engine copier when it is all there is; coming in, a message of a type
// with a device field is split for topics with a GPU pool or device
// readers, the field's bytes placed once into a block of the pool
// (split.go).
//
// Loops: the gateway's DDS readers drop samples whose writer belongs to
// the gateway's own participant, and its rgaps endpoints are republishing
// ones, which the engine never connects to each other, so nothing the
// gateway brings in is carried back out.
//
// Several gateways (hosts bridged to each other, one DDS domain): every
// DDS endpoint of a gateway carries "rgapsgateway=1;" in its USER_DATA,
// and gateways never carry in, nor serve services of, each other's
// endpoints: rgaps hosts exchange their messages through their bridges,
// so each message reaches each reader once.
//
// Restarts (ledger.go): the delivery ledger, a small file mapped shared,
// records per source (DDS writer GUID, rgaps publisher GID) the last
// message delivered, so a restarted gateway skips what a transient-local
// source sends its new mirrors again; a stopping mirror first forwards
// what it holds and, to DDS, waits for the readers' acknowledgements.
//
// Services (services.go): a DDS client (rq/<s>Request writer) with a local
// rgaps service (a subscription on /_rgaps_rq<s>), or a local rgaps client
// (a publisher on /_rgaps_rq<s>) with a DDS service (rq/<s>Request
// reader), get a mirror of four endpoints that maps rmw_cyclonedds_cpp's
// 16-byte request header (after the CDR header) to the rmw's 28-byte
// prefix and back. Service topics are never carried as topics.
//
// The graph both ways (graph.go, announce.go, discoveryinfo.go): the
// gateway reads ros_discovery_info, where ROS 2's DDS rmws say which node
// owns which DDS endpoint, and Graph reports the DDS nodes and their
// endpoints (rgapsd serves it on a status socket); it writes its own
// sample listing this host's rgaps nodes with the gids of its DDS
// endpoints standing for theirs, making a presence reader for a
// subscription no DDS writer feeds yet.
//
// The package has no cgo of its own, imports the engine, dds and type
// support, and is run by rgapsd only.
package gateway
