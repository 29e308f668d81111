package dds

import (
	"encoding/hex"
	"os"
	"strings"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// GUID is a DDSI GUID: 12-byte prefix (participant) and 4-byte entity id.
type GUID [16]byte

// String is the GUID in hex, prefix and entity id dot-separated, as
// Cyclone's traces show it.
func (g GUID) String() string {
	h := hex.EncodeToString(g[:])
	return h[0:8] + "." + h[8:16] + "." + h[16:24] + "." + h[24:32]
}

// Prefix is the participant part of g (the GUID of its participant has it
// too, with entity id 0x000001c1).
func (g GUID) Prefix() [12]byte { return [12]byte(g[:12]) }

// Discovery says how a participant finds others.
type Discovery uint8

const (
	// DiscoveryLocalhost finds participants on this machine only, by
	// unicast to localhost, multicast off: the configuration
	// rmw_cyclonedds_cpp makes for ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
	// (and ROS_LOCALHOST_ONLY=1), so it meets ROS nodes run that way.
	DiscoveryLocalhost Discovery = iota
	// DiscoveryDefault leaves discovery to Cyclone's defaults (multicast
	// on the chosen interface), what ROS nodes use with the range unset
	// or SUBNET.
	DiscoveryDefault
)

// Config says which domain a participant joins and how.
type Config struct {
	Domain    uint32 // the DDS domain id (ROS_DOMAIN_ID), 0 to 232
	Discovery Discovery
	// XML is Cyclone configuration appended to the one Discovery makes
	// (a fragment or file:// URI; Cyclone's CYCLONEDDS_URI syntax).
	// $CYCLONEDDS_URI is appended after it, as rmw_cyclonedds_cpp does.
	XML string
	// UserData is the participant's USER_DATA QoS.
	UserData []byte
}

// configXML is the configuration dds_create_domain gets for c: the
// discovery part, c.XML, then $CYCLONEDDS_URI, comma-separated (Cyclone
// merges them in order; empty parts are ignored).
func configXML(c Config) string {
	var parts []string
	if c.Discovery == DiscoveryLocalhost {
		parts = append(parts, "<CycloneDDS><Domain Id=\"any\">"+
			"<General><AllowMulticast>false</AllowMulticast></General>"+
			"<Discovery><ParticipantIndex>auto</ParticipantIndex>"+
			"<MaxAutoParticipantIndex>32</MaxAutoParticipantIndex>"+
			"<Peers><Peer address=\"localhost\"/></Peers></Discovery>"+
			"</Domain></CycloneDDS>")
	}
	if c.XML != "" {
		parts = append(parts, c.XML)
	}
	if env := os.Getenv("CYCLONEDDS_URI"); env != "" {
		parts = append(parts, env)
	}
	return strings.Join(parts, ",")
}

// EndpointOptions configure a writer or reader.
type EndpointOptions struct {
	// QoS is the ROS profile (resolved: system defaults and best-available
	// become ROS's defaults). Writers block up to 100 ms when a reliable
	// KEEP_ALL reader's window is full.
	QoS qos.Profile
	// UserData is the endpoint's USER_DATA QoS; ROS 2's rmws put
	// "typehash=RIHS01_<64 hex>;" there.
	UserData []byte
	// LateJoinerLimit bounds what a TRANSIENT_LOCAL KEEP_ALL writer keeps
	// for late joiners to its last LateJoinerLimit messages (DDS's
	// durability service history); 0 keeps every message it ever wrote,
	// as Cyclone does for rmw_cyclonedds_cpp. Other writers and readers
	// ignore it.
	LateJoinerLimit int
	// IgnoreLocal keeps the endpoint from matching endpoints of its own
	// participant (DDS_IGNORELOCAL_PARTICIPANT, what rmw_cyclonedds_cpp
	// uses for ignore_local_publications): they neither count as matched
	// nor exchange samples.
	IgnoreLocal bool
}

// Sample is one message taken from a reader.
type Sample struct {
	// Data is the serialized message, encapsulation header included, at
	// its exact length when the writer recorded its padding (see the
	// package doc); otherwise up to 3 zero bytes of DDSI padding follow.
	Data []byte
	// SourceTime is the writer's source timestamp.
	SourceTime time.Time
	// Writer is the GUID of the writer that wrote it (zero if the writer
	// was gone before the sample was taken).
	Writer GUID
	// Seq is the writer's sequence number of the sample (DDSI's writerSN:
	// 1, 2, … in the order written, the same when a transient-local
	// writer sends it again to a late joiner), read from the DATA
	// submessage it arrived in; 0 when it did not arrive over the wire (a
	// writer of this process: Cyclone hands those over in memory).
	Seq int64
}

// Incompatible is an endpoint's incompatible-QoS status: how many
// endpoints of the other kind it did not match because their QoS and its
// own are incompatible (a reader's requested, a writer's offered status),
// and the policy of the last one.
type Incompatible struct {
	Total      int
	LastPolicy qos.Policy
}

// Endpoint is a writer or reader seen through DDS discovery (local ones
// included).
type Endpoint struct {
	Writer      bool // a DCPSPublication; false: a DCPSSubscription
	GUID        GUID
	Participant GUID
	Topic       string // the DDS topic name (rt/chatter); see ROSName
	Type        string // the DDS type name; see ROSTypeName
	// QoS is the endpoint's QoS as a ROS profile: history and depth,
	// reliability, durability, liveliness, deadline, lifespan (0: none).
	QoS      qos.Profile
	UserData []byte
}
