package bridge

import (
	"errors"
	"fmt"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
)

// ErrLimit reports a peer's message that would take this daemon past one
// of its per-peer limits (Options.MaxPeers, Options.MaxRingsPerPeer,
// MaxTopicsPerPeer, …). The message is refused and logged (rate-limited);
// the peer keeps its session and what it has within the limits.
var ErrLimit = errors.New("peer over a bridge limit")

// Limits on what one authenticated peer can make this daemon hold. A peer
// holds the cluster secret, so it is trusted with the cluster's data, but
// a broken or hostile one must not exhaust the daemon: every table a peer
// fills is bounded here, and every name it sends is checked before it is
// stored. Options.MaxPeers and Options.MaxRingsPerPeer are configurable.
const (
	// DefaultMaxPeers bounds the peer daemons (host ids) known at once,
	// connected or within PeerExpiry of their last connection. Each gets
	// a ring of RingSize from this daemon.
	DefaultMaxPeers = 64
	// MaxConnsPerPeer bounds the authenticated control connections of one
	// host id (normally one or two: each side may dial).
	MaxConnsPerPeer = 4
	// DefaultMaxRingsPerPeer bounds the rings one peer may ask this daemon
	// to write into (one per host pair, one per topic with -per-topic).
	// Each costs a goroutine, about 0.8 MiB of registered memory and, per
	// rail the peer's offer asks for (at most ring.MaxRails), a data
	// connection and a pump goroutine here, and a ring of the peer's
	// RingSize there.
	DefaultMaxRingsPerPeer = 128
	// MaxTopicsPerPeer bounds the topics of a peer's interest and the
	// topic ids of each ring it writes into.
	MaxTopicsPerPeer = 4096
	// MaxGraphNodes and MaxGraphEndpoints bound a peer's graph.
	MaxGraphNodes     = 4096
	MaxGraphEndpoints = 16384
	// MaxTypeName is the longest message type name (the engine's limit).
	MaxTypeName = 255
	// maxShort bounds informational strings (GIDs, paths, graph host),
	// maxAddr a transport address, maxReason a ring-down reason.
	maxShort  = 128
	maxAddr   = 256
	maxReason = 512
	// maxDepth bounds the history depth a peer may ask for.
	maxDepth = 1 << 20
)

// checkTopic validates a topic name from a peer with the ROS rules (the
// engine's own): absolute, only [A-Za-z0-9_/], no "//", at most
// names.MaxTopicNameLength bytes. So no NUL, no "..", no control bytes.
func checkTopic(what, name string) error {
	if len(name) > names.MaxTopicNameLength {
		return fmt.Errorf("%w: %s: topic name of %d bytes, at most %d", control.ErrProtocol, what, len(name), names.MaxTopicNameLength)
	}
	if err := names.ValidateFullTopicName(name); err != nil {
		return fmt.Errorf("%w: %s: %v", control.ErrProtocol, what, err)
	}
	return nil
}

// checkType validates a message type name: 1…MaxTypeName bytes of
// [A-Za-z0-9_/:] ("pkg/msg/Type", "pkg::msg::dds_::Type_"), no "..".
func checkType(what, typ string) error {
	if typ == "" || len(typ) > MaxTypeName {
		return fmt.Errorf("%w: %s: type name of %d bytes, want 1…%d", control.ErrProtocol, what, len(typ), MaxTypeName)
	}
	for i := 0; i < len(typ); i++ {
		c := typ[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '/' || c == ':') {
			return fmt.Errorf("%w: %s: type name %.64q has byte %#02x at %d", control.ErrProtocol, what, typ, c, i)
		}
	}
	return nil
}

// checkShort validates an informational string: at most max bytes of
// printable ASCII (it ends up in status output and logs).
func checkShort(what, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%w: %s of %d bytes, at most %d", control.ErrProtocol, what, len(s), max)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return fmt.Errorf("%w: %s %.64q has byte %#02x at %d", control.ErrProtocol, what, s, s[i], i)
		}
	}
	return nil
}

// validate checks an interest statement against the limits and the name
// rules.
func (m *interestMsg) validate() error {
	if len(m.Topics) > MaxTopicsPerPeer {
		return fmt.Errorf("%w: interest in %d topics, at most %d", ErrLimit, len(m.Topics), MaxTopicsPerPeer)
	}
	for _, ti := range m.Topics {
		if err := checkTopic("interest", ti.Topic); err != nil {
			return err
		}
		if err := checkType("interest in "+ti.Topic, ti.Type); err != nil {
			return err
		}
		if ti.Depth > maxDepth || ti.Count < 0 {
			return fmt.Errorf("%w: bad topic interest %+v", control.ErrProtocol, ti)
		}
	}
	return nil
}

// validate checks a graph statement against the limits and the name rules.
func (g *graphMsg) validate() error {
	if len(g.Nodes) > MaxGraphNodes || len(g.Endpoints) > MaxGraphEndpoints {
		return fmt.Errorf("%w: graph of %d nodes and %d endpoints, at most %d and %d", ErrLimit, len(g.Nodes), len(g.Endpoints), MaxGraphNodes, MaxGraphEndpoints)
	}
	if err := checkShort("graph host", g.Host, maxShort); err != nil {
		return err
	}
	for _, n := range g.Nodes {
		if err := names.ValidateNodeName(n.Name); err != nil {
			return fmt.Errorf("%w: graph node: %v", control.ErrProtocol, err)
		}
		if err := names.ValidateNamespace(n.Namespace); err != nil {
			return fmt.Errorf("%w: graph node %s: %v", control.ErrProtocol, n.Name, err)
		}
		if err := checkShort("enclave", n.Enclave, names.MaxTopicNameLength); err != nil {
			return err
		}
	}
	for _, ep := range g.Endpoints {
		if err := checkTopic("graph endpoint", ep.Topic); err != nil {
			return err
		}
		if err := checkType("graph endpoint of "+ep.Topic, ep.Type); err != nil {
			return err
		}
		if ep.Kind != "publisher" && ep.Kind != "subscription" {
			return fmt.Errorf("%w: graph endpoint of %s: kind %.32q", control.ErrProtocol, ep.Topic, ep.Kind)
		}
		for _, s := range []struct{ what, v string }{{"node", ep.Node}, {"gid", ep.GID}, {"path", ep.Path}} {
			if err := checkShort("graph endpoint "+s.what, s.v, max(maxShort, names.MaxTopicNameLength+names.MaxNodeNameLength+1)); err != nil {
				return err
			}
		}
	}
	return nil
}
