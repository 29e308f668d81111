package status

import (
	"encoding/hex"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// PathDDS is the Path of an endpoint of a ROS 2 node on DDS: its data
// reaches this host through the daemon's DDS gateway.
const PathDDS = "dds"

// DDSGraph is what the daemon's DDS gateway (rgaps daemon -dds) sees of
// ROS 2 nodes on DDS (docs/ARCHITECTURE.md §3.13): their nodes, from the
// ros_discovery_info samples of their participants, and the DDS endpoints
// those nodes claim on the topics and services the gateway carries. Nodes
// of this host's rgaps processes and of other hosts' gateways are not in
// it: the shared-memory graph and the bridge report those.
type DDSGraph struct {
	// Participant is the gateway's own DDS participant (its GUID in hex).
	Participant string    `json:"participant"`
	Nodes       []DDSNode `json:"nodes"`
	// Endpoints have Host set to their participant's GUID and Path to
	// PathDDS; a service's request and reply endpoints have the rmw's
	// topic names (/_rgaps_rq/s, /_rgaps_rr/s).
	Endpoints []RemoteEndpoint `json:"endpoints"`
	// Malformed counts ros_discovery_info samples the gateway dropped.
	Malformed uint64 `json:"malformed"`
}

// DDSNode is a ROS 2 node on DDS.
type DDSNode struct {
	Participant string `json:"participant"` // its participant's GUID in hex
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
}

// Graph is every node and endpoint the answer reports: other hosts' (from
// the bridge's peers) and ROS 2 nodes' on DDS (from the gateway), as the
// engine describes its own. None of them is on this host's shared-memory
// graph, so a caller adds them to that without duplicates.
func (s Status) Graph() (nodes []zerocopy.NodeInfo, eps []zerocopy.EndpointInfo) {
	for _, p := range s.Peers {
		for _, n := range p.Nodes {
			nodes = append(nodes, zerocopy.NodeInfo{Name: n.Name, Namespace: n.Namespace, Enclave: n.Enclave})
		}
		for _, e := range p.Endpoints {
			eps = append(eps, e.Info())
		}
	}
	if s.DDS != nil {
		for _, n := range s.DDS.Nodes {
			nodes = append(nodes, zerocopy.NodeInfo{Name: n.Name, Namespace: n.Namespace})
		}
		for _, e := range s.DDS.Endpoints {
			eps = append(eps, e.Info())
		}
	}
	return nodes, eps
}

// Info is e as the engine describes an endpoint. A malformed GID or type
// hash reads as zero (unknown).
func (e RemoteEndpoint) Info() zerocopy.EndpointInfo {
	ep := zerocopy.EndpointInfo{Topic: e.Topic, Type: e.Type, Kind: zerocopy.KindSubscription, Node: e.Node, QoS: e.QoS, Path: e.Path}
	if e.Kind == zerocopy.KindPublisher.String() {
		ep.Kind = zerocopy.KindPublisher
	}
	if g, err := hex.DecodeString(e.GID); err == nil && len(g) == len(ep.GID) {
		ep.GID = zerocopy.GID(g)
	}
	ep.TypeHash, _ = zerocopy.ParseTypeHash(e.TypeHash)
	return ep
}
