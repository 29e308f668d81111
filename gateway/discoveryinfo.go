package gateway

import (
	"bytes"
	"fmt"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// ROS 2's DDS rmws tell each other which node owns which DDS endpoint on
// the topic ros_discovery_info (docs/ARCHITECTURE.md §3.13). The facts,
// from rmw_dds_common and rmw_cyclonedds_cpp of ROS 2 Jazzy:
//
//   - DDS topic name "ros_discovery_info", as it is (the rmw creates it
//     with avoid_ros_namespace_conventions: no rt/ prefix), type
//     rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_;
//   - its writer is RELIABLE, TRANSIENT_LOCAL, KEEP_LAST 1; its reader the
//     same with KEEP_ALL, ignoring its own participant's samples;
//   - every sample is a participant's whole state: ParticipantEntitiesInfo
//     {Gid gid; NodeEntitiesInfo[] node_entities_info_seq}, NodeEntitiesInfo
//     {string<=256 node_namespace; string<=256 node_name; Gid[]
//     reader_gid_seq; Gid[] writer_gid_seq}, Gid {char[16] data};
//   - a gid is the entity's DDS GUID (16 bytes): the participant's for gid,
//     the DDS readers' and writers' in the node lists.
const (
	infoTopic = "ros_discovery_info"
	infoType  = "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_"
	// infoTypeHash is ParticipantEntitiesInfo's type hash (Jazzy's
	// rmw_dds_common), in the USER_DATA of both endpoints as ROS 2's
	// rmws put it there (`ros2 topic info -v` shows it; without one
	// rmw_cyclonedds_cpp logs a warning at every graph query).
	infoTypeHash = "RIHS01_91a0593bacdcc50ea9bdcf849a938b128412cc1ea821245c663bcd26f83c295e"
	// gidSize is rmw_dds_common/msg/Gid's char[16] data.
	gidSize = 16
	// maxNameLen bounds node_namespace and node_name (string<=256).
	maxNameLen = 256
	// gatewayMark is in the USER_DATA of an rgaps gateway's
	// ros_discovery_info writer, so that another host's gateway knows
	// the nodes it lists are rgaps nodes, and of every other DDS
	// endpoint of a gateway (userData), so that gateways leave each
	// other's endpoints alone (version 1 of the mark).
	gatewayMark = "rgapsgateway=1;"
)

// infoWriterQoS and infoReaderQoS are the QoS rmw_cyclonedds_cpp gives
// its ros_discovery_info writer and reader.
var (
	infoWriterQoS = qos.Profile{History: qos.HistoryKeepLast, Depth: 1, Reliability: qos.ReliabilityReliable,
		Durability: qos.DurabilityTransientLocal, Liveliness: qos.LivelinessAutomatic}
	infoReaderQoS = qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable,
		Durability: qos.DurabilityTransientLocal, Liveliness: qos.LivelinessAutomatic}
)

// gid is an rmw_dds_common Gid: a DDS GUID.
type gid [gidSize]byte

// participantInfo is one ParticipantEntitiesInfo sample.
type participantInfo struct {
	gid   gid
	nodes []nodeEntities
}

// nodeEntities is one NodeEntitiesInfo: a node and the gids of the DDS
// readers and writers that are its subscriptions and publishers (and
// its services' and clients' request and reply endpoints).
type nodeEntities struct {
	namespace, name  string
	readers, writers []gid
}

// encode is p as XCDR1, little endian, with the encapsulation header.
func (p participantInfo) encode() []byte {
	e := cdr.NewEncoder(nil)
	e.WriteOctets(p.gid[:])
	e.WriteLength(len(p.nodes))
	for _, n := range p.nodes {
		e.WriteString(n.namespace)
		e.WriteString(n.name)
		for _, gs := range [][]gid{n.readers, n.writers} {
			e.WriteLength(len(gs))
			for _, g := range gs {
				e.WriteOctets(g[:])
			}
		}
	}
	return e.Bytes()
}

// decodeInfo reads a ParticipantEntitiesInfo sample: XCDR1 in either byte
// order with its encapsulation header (the up to 3 bytes of padding a
// DDS sample may have after the message are ignored). Every length is
// checked against the bytes left and the message's bounds; node names
// and namespaces must be valid ROS names. An error says what is wrong
// and where; nothing in b can make it panic or allocate more than b's
// size in gids.
func decodeInfo(b []byte) (participantInfo, error) {
	var p participantInfo
	d, err := cdr.NewDecoder(b)
	if err != nil {
		return p, err
	}
	raw, err := d.ReadOctetsView(gidSize)
	if err != nil {
		return p, fmt.Errorf("participant gid: %w", err)
	}
	p.gid = gid(raw)
	// A node is at least two empty strings and two empty sequences.
	n, err := d.ReadLength(16)
	if err != nil {
		return p, fmt.Errorf("node list: %w", err)
	}
	p.nodes = make([]nodeEntities, n)
	for i := range p.nodes {
		nd := &p.nodes[i]
		if nd.namespace, err = boundedString(d); err != nil {
			return p, fmt.Errorf("node %d namespace: %w", i, err)
		}
		if nd.name, err = boundedString(d); err != nil {
			return p, fmt.Errorf("node %d name: %w", i, err)
		}
		if err := names.ValidateNamespace(nd.namespace); err != nil {
			return p, fmt.Errorf("node %d: %w", i, err)
		}
		if err := names.ValidateNodeName(nd.name); err != nil {
			return p, fmt.Errorf("node %d: %w", i, err)
		}
		if nd.readers, err = gids(d); err != nil {
			return p, fmt.Errorf("node %s reader gids: %w", names.FullNodeName(nd.name, nd.namespace), err)
		}
		if nd.writers, err = gids(d); err != nil {
			return p, fmt.Errorf("node %s writer gids: %w", names.FullNodeName(nd.name, nd.namespace), err)
		}
	}
	if rest, _ := d.ReadOctetsView(d.Remaining()); len(rest) > 3 || !bytes.Equal(rest, make([]byte, len(rest))) {
		return p, fmt.Errorf("%d bytes after the message", len(rest))
	}
	return p, nil
}

// boundedString reads a string<=256.
func boundedString(d *cdr.Decoder) (string, error) {
	s, err := d.ReadString()
	if err == nil && len(s) > maxNameLen {
		err = fmt.Errorf("%d bytes, more than the bound %d", len(s), maxNameLen)
	}
	return s, err
}

// gids reads a Gid[].
func gids(d *cdr.Decoder) ([]gid, error) {
	n, err := d.ReadLength(gidSize)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]gid, n)
	for i := range out {
		raw, err := d.ReadOctetsView(gidSize)
		if err != nil {
			return nil, err
		}
		out[i] = gid(raw)
	}
	return out, nil
}
