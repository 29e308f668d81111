package bridge

import (
	"fmt"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Control messages between daemons, after the handshake (package control
// frames them; types 16 and up are ours). Every message is a full
// statement of state, so repeating one is harmless.
const (
	// msgInterest: the sender's topics with local subscriptions (replaces
	// the previous statement).
	msgInterest control.MsgType = 16
	// msgGraph: the sender's local graph (nodes and endpoints, bridge
	// endpoints excluded), for graph queries on the receiver.
	msgGraph control.MsgType = 17
	// msgRingOffer: reader → writer, a ring in the reader's memory and the
	// transport address to connect to it (also after a link failure, with
	// the reader's Head).
	msgRingOffer control.MsgType = 18
	// msgRingAccept: writer → reader, the writer connected; where to write
	// head write-backs, and the position it restarts at.
	msgRingAccept control.MsgType = 19
	// msgTopicMap: writer → reader, the topic behind a topic id of a ring,
	// sent before the first record with that id.
	msgTopicMap control.MsgType = 20
	// msgRingDown: either side, the data link of a ring failed; the
	// reader offers it again.
	msgRingDown control.MsgType = 21
	// msgDoze: reader → writer, one rail of the ring stops polling (its
	// endpoint cannot sleep in the kernel) after receiving a number of
	// immediates: ring its doorbell when you write more (railidle.go).
	// Sent only to a peer whose hello announced featureDoorbell.
	msgDoze control.MsgType = 23
	// msgWake: writer → reader, the doorbell: more is written on the rail
	// a doze named.
	msgWake control.MsgType = 24
)

// featureDoorbell in a control hello says the sender answers msgDoze with
// msgWake (this release). A reader's rail dozes only when its peer
// announced it; an older peer would refuse msgDoze as an unknown type,
// and its reader rails keep polling.
const featureDoorbell = "doorbell"

// topicInterest is what the subscriptions of one topic on the sender's
// host need, merged: the strongest reliability and durability any of
// them asks for and the deepest history.
type topicInterest struct {
	Topic          string `json:"topic"`
	Type           string `json:"type"`
	Reliable       bool   `json:"reliable"`
	TransientLocal bool   `json:"transient_local"`
	KeepAll        bool   `json:"keep_all"`
	Depth          uint32 `json:"depth"`
	GPU            bool   `json:"gpu"` // some subscription reads device memory
	Count          int    `json:"count"`
}

type interestMsg struct {
	Topics []topicInterest `json:"topics"`
}

type graphNode struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Enclave   string `json:"enclave"`
}

type graphEndpoint struct {
	Topic    string `json:"topic"`
	Type     string `json:"type"`
	TypeHash string `json:"type_hash,omitempty"` // zerocopy.TypeHash text form (RIHS01_…)
	Kind     string `json:"kind"`                // "publisher" or "subscription"
	Node     string `json:"node"`
	GID      string `json:"gid"`
	QoS      []byte `json:"qos"` // qos.Encode, 48 bytes
	Path     string `json:"path"`
}

type graphMsg struct {
	Host      string          `json:"host"`
	Nodes     []graphNode     `json:"nodes"`
	Endpoints []graphEndpoint `json:"endpoints"`
}

// region is transport.RemoteRegion on the wire.
type region struct {
	Addr uint64 `json:"addr"`
	Key  uint64 `json:"key"`
	Len  uint64 `json:"len"`
}

func toRegion(r transport.RemoteRegion) region { return region{r.Addr, r.Key, r.Len} }
func (r region) remote() transport.RemoteRegion {
	return transport.RemoteRegion{Addr: r.Addr, Key: r.Key, Len: r.Len}
}

type ringOffer struct {
	Ring        uint32 `json:"ring"`
	Topic       string `json:"topic,omitempty"` // per-topic ring; "" carries every topic
	ReaderEpoch uint64 `json:"reader_epoch"`
	Size        uint64 `json:"size"`
	Base        uint64 `json:"base"`
	MaxChunk    uint64 `json:"max_chunk"`
	Mode        uint8  `json:"mode"`
	Watermark   uint8  `json:"watermark"`
	CompactImm  bool   `json:"compact_imm"`
	Region      region `json:"region"`
	TailOff     uint64 `json:"tail_off"` // the 8-byte tail slot (write-twice), then the 8-byte hello word (§3.7 "Rails")
	Provider    string `json:"provider"`
	Addr        string `json:"addr"`
	Head        uint64 `json:"head"`
	// HeadWriter is the writer instance whose stream Head counts (the
	// writer epoch of the last accept the reader took; 0: none). A writer
	// of another instance (its daemon restarted, and the reader offered
	// again before it took the new writer's accept) starts afresh, as for
	// a new reader: Head is no position in its stream. Absent (a reader
	// that does not send it): Head is taken as the answering writer's.
	HeadWriter uint64 `json:"head_writer,omitempty"`
	// Offer numbers the reader's offers of this ring: the accept names
	// the one it answers, so a late answer to an older offer is ignored.
	Offer uint64 `json:"offer"`
	// RingVersion is the ring wire format the reader reads (ring.Version);
	// the writer refuses another (absent: a reader of version 1, which
	// knows no META records).
	RingVersion uint8 `json:"ring_version"`
	// Rails is how many connections the writer dials and writes the ring
	// over (ring version 3; 1 … ring.MaxRails).
	Rails int `json:"rails"`
}

// config is the ring configuration the offer describes.
func (o *ringOffer) config() ring.Config {
	return ring.Config{Size: o.Size, Base: o.Base, MaxChunk: o.MaxChunk, Mode: ring.Mode(o.Mode),
		Watermark: ring.Watermark(o.Watermark), CompactImm: o.CompactImm, Rails: o.Rails}
}

// validate checks an offer against the wire format and the region it
// names: a ring or tail slot outside the registered region is refused
// before anything is written.
func (o *ringOffer) validate() (ring.Config, error) {
	if o.RingVersion != ring.Version {
		return ring.Config{}, fmt.Errorf("%w: ring %d: the peer reads ring wire format version %d (0: version 1), this side writes version %d: run the same rgaps release on both hosts", ErrBadOffer, o.Ring, o.RingVersion, ring.Version)
	}
	c, err := o.config().Validate()
	if err != nil {
		return c, fmt.Errorf("ring %d: %w", o.Ring, err)
	}
	if c.MaxChunk < ring.MetaLenSize {
		return c, fmt.Errorf("%w: ring %d: max chunk %d cannot hold a message's meta length word (%d bytes)", ErrBadOffer, o.Ring, c.MaxChunk, ring.MetaLenSize)
	}
	if o.Region.Len < o.Base || o.Region.Len-o.Base < o.Size {
		return c, fmt.Errorf("%w: ring %d of %d bytes at base %d lies outside the %d-byte registered region", ErrBadOffer, o.Ring, o.Size, o.Base, o.Region.Len)
	}
	// The tail slot and the hello word every rail writes first.
	const words = ring.HelloOffset + ring.WordSize
	if o.Region.Len < words || o.TailOff > o.Region.Len-words || o.TailOff%8 != 0 ||
		(o.TailOff+words > o.Base && o.TailOff < o.Base+o.Size) {
		return c, fmt.Errorf("%w: ring %d: tail slot and hello word at %d are outside the %d-byte region, misaligned or inside the ring", ErrBadOffer, o.Ring, o.TailOff, o.Region.Len)
	}
	if o.Head%ring.Align != 0 {
		return c, fmt.Errorf("%w: ring %d: head %d is not a multiple of %d", ErrBadOffer, o.Ring, o.Head, ring.Align)
	}
	if o.Addr == "" {
		return c, fmt.Errorf("%w: ring %d: no transport address", ErrBadOffer, o.Ring)
	}
	if err := checkShort("transport address", o.Addr, maxAddr); err != nil {
		return c, fmt.Errorf("%w: ring %d: %v", ErrBadOffer, o.Ring, err)
	}
	if err := checkShort("provider", o.Provider, maxShort); err != nil {
		return c, fmt.Errorf("%w: ring %d: %v", ErrBadOffer, o.Ring, err)
	}
	if o.Topic != "" {
		if err := checkTopic(fmt.Sprintf("ring %d", o.Ring), o.Topic); err != nil {
			return c, fmt.Errorf("%w: %v", ErrBadOffer, err)
		}
	}
	return c, nil
}

type ringAccept struct {
	Ring        uint32 `json:"ring"`
	ReaderEpoch uint64 `json:"reader_epoch"`
	WriterEpoch uint64 `json:"writer_epoch"`
	HeadRegion  region `json:"head_region"` // 8-byte DelayedHead word at offset 0
	Restart     uint64 `json:"restart"`
	Offer       uint64 `json:"offer"`
}

type topicMap struct {
	Ring        uint32 `json:"ring"`
	ReaderEpoch uint64 `json:"reader_epoch"`
	// WriterEpoch: topic ids are the writer instance's; a restarted
	// writer numbers its topics afresh.
	WriterEpoch uint64 `json:"writer_epoch"`
	ID          uint32 `json:"id"`
	Topic       string `json:"topic"`
	Type        string `json:"type"`
	// QoS is what the writer's publishers of the topic offer, merged
	// (qos.Encode): the reader's bridge publisher offers the same.
	QoS []byte `json:"qos"`
}

type ringDown struct {
	Ring uint32 `json:"ring"`
	// FromReader: the sender is the ring's reader (the ring id is its);
	// otherwise the sender writes into the receiver's ring.
	FromReader bool   `json:"from_reader"`
	Reason     string `json:"reason"`
	// Offer is the offer number of the link that failed: a note about an
	// earlier link of the ring (it can arrive after a newer link is up)
	// is ignored.
	Offer uint64 `json:"offer"`
}

// dozeMsg is msgDoze: rail Rail of the link that offer Offer of ring Ring
// made stops polling; its endpoint had received Imms immediates (all
// since the connection opened, its rail hello included). Seq numbers the
// rail's dozes: a writer ignores one older than the newest it saw.
type dozeMsg struct {
	Ring  uint32 `json:"ring"`
	Offer uint64 `json:"offer"`
	Rail  int    `json:"rail"`
	Seq   uint64 `json:"seq"`
	Imms  uint64 `json:"imms"`
}

// wakeMsg is msgWake: the writer wrote more on the rail of doze Seq.
type wakeMsg struct {
	Ring  uint32 `json:"ring"`
	Offer uint64 `json:"offer"`
	Rail  int    `json:"rail"`
	Seq   uint64 `json:"seq"`
}

// checkRail validates a doze's or wake's rail index.
func checkRail(what string, rail int) error {
	if rail < 0 || rail >= ring.MaxRails {
		return fmt.Errorf("%w: %s of rail %d (at most %d rails)", control.ErrProtocol, what, rail, ring.MaxRails)
	}
	return nil
}

func encodeQoS(p qos.Profile) []byte {
	b := make([]byte, qos.EncodedSize)
	p.Encode(b)
	return b
}
