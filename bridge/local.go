package bridge

import (
	"sort"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The status types live in package status, which local tools (the CLI,
// the rmw library) import without linking the transports.
type (
	Status         = status.Status
	PeerStatus     = status.PeerStatus
	RemoteNode     = status.RemoteNode
	RemoteEndpoint = status.RemoteEndpoint
	LinkStatus     = status.LinkStatus
)

// ErrNoDaemon reports that no bridge daemon runs for the domain.
var ErrNoDaemon = status.ErrNoDaemon

// QueryStatus asks the local daemon's bridge for its Status.
func QueryStatus(cfg zerocopy.Config) (Status, error) { return status.Query(cfg) }

// PathName is how a provider is shown as an endpoint's path.
func PathName(provider string) string { return status.PathName(provider) }

func (s *LinkStats) status(ring uint32, role, topic string) LinkStatus {
	return LinkStatus{Ring: ring, Role: role, Topic: topic, Messages: s.Messages.Load(), Bytes: s.Bytes.Load(),
		Records: s.Records.Load(), Resent: s.Resent.Load(), Dropped: s.Dropped.Load(), Dups: s.Dups.Load(),
		Failures: s.Failures.Load(), WriteBacks: s.WriteBack.Load()}
}

// Status reports the bridge's peers and links.
func (b *Bridge) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Status{Version: status.Version, Host: b.hostID, Provider: PathName(b.prov.Name()), Listen: b.ControlAddr()}
	for _, p := range b.peers {
		ps := PeerStatus{Host: p.host, Up: len(p.conns) > 0, Since: p.upSince, Refused: p.refused, Duplicates: p.duplicates}
		for _, n := range p.graph.Nodes {
			ps.Nodes = append(ps.Nodes, RemoteNode{Host: p.host, Name: n.Name, Namespace: n.Namespace, Enclave: n.Enclave})
		}
		for _, ep := range p.graph.Endpoints {
			q, _ := qos.Decode(ep.QoS)
			ps.Endpoints = append(ps.Endpoints, RemoteEndpoint{Host: p.host, Topic: ep.Topic, Type: ep.Type, TypeHash: ep.TypeHash, Kind: ep.Kind,
				Node: ep.Node, GID: ep.GID, QoS: q, Path: st.Provider, LocalPath: ep.Path})
		}
		for _, l := range p.writers {
			ps.Links = append(ps.Links, l.stats.status(l.id, "writer", l.only))
		}
		for _, l := range p.readers {
			ps.Links = append(ps.Links, l.stats.status(l.id, "reader", l.only))
		}
		sort.Slice(ps.Links, func(i, j int) bool {
			if ps.Links[i].Role != ps.Links[j].Role {
				return ps.Links[i].Role < ps.Links[j].Role
			}
			return ps.Links[i].Ring < ps.Links[j].Ring
		})
		st.Peers = append(st.Peers, ps)
	}
	sort.Slice(st.Peers, func(i, j int) bool { return st.Peers[i].Host < st.Peers[j].Host })
	return st
}

// serveStatus answers one JSON Status per connection, to processes of
// this user (or root).
func (b *Bridge) serveStatus() error {
	ln, err := status.Listen(status.Socket(b.dom.Config()))
	if err != nil {
		return err
	}
	b.statusLn = ln
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		status.Serve(ln, b.Status, b.log)
	}()
	return nil
}
