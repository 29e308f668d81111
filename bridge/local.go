package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Status is what the daemon's bridge knows: its peers, their graphs and
// the state of every data link. `rgaps topic list/info` show it.
type Status struct {
	Host     string       `json:"host"`
	Provider string       `json:"provider"` // the data path: fabric:tcp, fabric:shm, tcp, …
	Listen   string       `json:"listen"`
	Peers    []PeerStatus `json:"peers"`
}

// PeerStatus is one remote daemon.
type PeerStatus struct {
	Host      string           `json:"host"`
	Up        bool             `json:"up"`
	Since     time.Time        `json:"since"`
	Nodes     []RemoteNode     `json:"nodes"`
	Endpoints []RemoteEndpoint `json:"endpoints"`
	Links     []LinkStatus     `json:"links"`
}

// RemoteNode is a node on another host.
type RemoteNode struct {
	Host, Name, Namespace, Enclave string
}

// RemoteEndpoint is a publisher or subscription on another host, with the
// path its data takes to or from this host.
type RemoteEndpoint struct {
	Host  string      `json:"host"`
	Topic string      `json:"topic"`
	Type  string      `json:"type"`
	Kind  string      `json:"kind"`
	Node  string      `json:"node"`
	GID   string      `json:"gid"`
	QoS   qos.Profile `json:"qos"`
	// Path is the data path between the hosts (the bridge's provider:
	// fabric:tcp, fabric:shm, fabric:verbs, tcp); LocalPath the path on
	// the remote host itself (host-shm, gpu-pool, …).
	Path      string `json:"path"`
	LocalPath string `json:"local_path"`
}

// LinkStatus is one ring: this daemon writes it (writer) or owns it
// (reader).
type LinkStatus struct {
	Ring       uint32 `json:"ring"`
	Role       string `json:"role"`
	Topic      string `json:"topic,omitempty"`
	Messages   uint64 `json:"messages"`
	Bytes      uint64 `json:"bytes"`
	Records    uint64 `json:"records"`
	Resent     uint64 `json:"resent"`
	Dropped    uint64 `json:"dropped"`
	Dups       uint64 `json:"dups"`
	Failures   uint64 `json:"failures"`
	WriteBacks uint64 `json:"write_backs"`
}

func (s *LinkStats) status(ring uint32, role, topic string) LinkStatus {
	return LinkStatus{Ring: ring, Role: role, Topic: topic, Messages: s.Messages.Load(), Bytes: s.Bytes.Load(),
		Records: s.Records.Load(), Resent: s.Resent.Load(), Dropped: s.Dropped.Load(), Dups: s.Dups.Load(),
		Failures: s.Failures.Load(), WriteBacks: s.WriteBack.Load()}
}

// PathName is how a provider is shown as an endpoint's path.
func PathName(provider string) string {
	if provider == "plaintcp" {
		return "tcp"
	}
	return provider
}

// Status reports the bridge's peers and links.
func (b *Bridge) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := Status{Host: b.hostID, Provider: PathName(b.prov.Name()), Listen: b.ControlAddr()}
	for _, p := range b.peers {
		ps := PeerStatus{Host: p.host, Up: len(p.conns) > 0, Since: p.upSince}
		for _, n := range p.graph.Nodes {
			ps.Nodes = append(ps.Nodes, RemoteNode{Host: p.host, Name: n.Name, Namespace: n.Namespace, Enclave: n.Enclave})
		}
		for _, ep := range p.graph.Endpoints {
			q, _ := qos.Decode(ep.QoS)
			ps.Endpoints = append(ps.Endpoints, RemoteEndpoint{Host: p.host, Topic: ep.Topic, Type: ep.Type, Kind: ep.Kind,
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

// statusSocket is the abstract Unix socket where the daemon answers
// status queries from local tools.
func statusSocket(cfg zerocopy.Config) string {
	return fmt.Sprintf("@%s-bridge-d%d", cfg.Prefix, cfg.Domain)
}

// serveStatus answers one JSON Status per connection, to processes of
// this user (or root).
func (b *Bridge) serveStatus() error {
	cfg := b.dom.Config()
	ln, err := net.Listen("unix", statusSocket(cfg))
	if err != nil {
		return fmt.Errorf("status socket: %w", err)
	}
	b.statusLn = ln
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.answerStatus(c.(*net.UnixConn))
		}
	}()
	return nil
}

func (b *Bridge) answerStatus(c *net.UnixConn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	var cred *unix.Ucred
	raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if err != nil || cred == nil || (cred.Uid != 0 && int(cred.Uid) != os.Getuid()) {
		b.log.Warn("status query refused: other user", "uid", credUID(cred))
		return
	}
	json.NewEncoder(c).Encode(b.Status())
}

func credUID(c *unix.Ucred) int {
	if c == nil {
		return -1
	}
	return int(c.Uid)
}

// ErrNoDaemon reports that no bridge daemon runs for the domain.
var ErrNoDaemon = errors.New("no bridge daemon runs for this domain")

// QueryStatus asks the local daemon's bridge for its Status.
func QueryStatus(cfg zerocopy.Config) (Status, error) {
	var st Status
	c, err := net.DialTimeout("unix", statusSocket(cfg), time.Second)
	if err != nil {
		return st, fmt.Errorf("%w (%v)", ErrNoDaemon, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if err := json.NewDecoder(c).Decode(&st); err != nil {
		return st, fmt.Errorf("reading the daemon's status: %w", err)
	}
	return st, nil
}
