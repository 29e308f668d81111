// Package status is what a bridge daemon reports to local tools: its
// peers, their graphs (nodes and endpoints on other hosts) and its links,
// and the client that asks for it over the daemon's status socket. It has
// no cgo: the CLI and the rmw library import it without linking the
// transports.
package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Version is the version of the status socket's JSON (docs/ARCHITECTURE.md
// §3.11). It grows when a field changes meaning or type or is removed;
// fields added with omitempty-safe zero values keep it. Query refuses an
// answer of another version (ErrVersion).
const Version = 1

// Status is what the daemon's bridge knows: its peers, their graphs and
// the state of every data link; and what its DDS gateway knows of ROS 2
// nodes on DDS. `rgaps topic list/info`, `rgaps node list` and the rmw's
// graph queries show it.
type Status struct {
	// Version is the daemon's Version (0 from daemons older than the
	// field).
	Version  int          `json:"version"`
	Host     string       `json:"host"`
	Provider string       `json:"provider"` // the data path: fabric:tcp, fabric:shm, tcp, …
	Listen   string       `json:"listen"`
	Peers    []PeerStatus `json:"peers"`
	// DDS is the graph of ROS 2 nodes on DDS the daemon's DDS gateway
	// sees; absent without the gateway. A daemon that runs the gateway
	// but no bridge answers with this alone (Host, Provider and Listen
	// empty, no peers).
	DDS *DDSGraph `json:"dds,omitempty"`
}

// PeerStatus is one remote daemon.
type PeerStatus struct {
	Host      string           `json:"host"`
	Up        bool             `json:"up"`
	Since     time.Time        `json:"since"`
	Nodes     []RemoteNode     `json:"nodes"`
	Endpoints []RemoteEndpoint `json:"endpoints"`
	Links     []LinkStatus     `json:"links"`
	// Refused counts the peer's control messages refused as malformed or
	// over a limit (they are logged at a bounded rate).
	Refused uint64 `json:"refused"`
	// Duplicates counts connections refused because they came from a
	// daemon that a newer one with the same host id displaced: two live
	// daemons were given one id (both log it at Error).
	Duplicates uint64 `json:"duplicates,omitempty"`
}

// RemoteNode is a node on another host.
type RemoteNode struct {
	Host, Name, Namespace, Enclave string
}

// RemoteEndpoint is a publisher or subscription on another host, with the
// path its data takes to or from this host.
type RemoteEndpoint struct {
	Host     string      `json:"host"`
	Topic    string      `json:"topic"`
	Type     string      `json:"type"`
	TypeHash string      `json:"type_hash,omitempty"` // RIHS01_…; "" when unknown
	Kind     string      `json:"kind"`
	Node     string      `json:"node"`
	GID      string      `json:"gid"`
	QoS      qos.Profile `json:"qos"`
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

// PathName is how a provider is shown as an endpoint's path.
func PathName(provider string) string {
	if provider == "plaintcp" {
		return "tcp"
	}
	return provider
}

// Socket is the abstract Unix socket where the daemon's bridge answers
// status queries: @<prefix>-bridge-d<domain> (per network namespace).
func Socket(cfg zerocopy.Config) string {
	return fmt.Sprintf("@%s-bridge-d%d", cfg.Prefix, cfg.Domain)
}

// DDSSocket is the abstract Unix socket where the daemon's DDS gateway
// answers (a Status with Version and DDS alone):
// @<prefix>-dds-d<domain>. The gateway has its own, so that it and the
// bridge may run in one daemon or in two.
func DDSSocket(cfg zerocopy.Config) string {
	return fmt.Sprintf("@%s-dds-d%d", cfg.Prefix, cfg.Domain)
}

// ErrNoDaemon reports that no daemon with a bridge or a DDS gateway runs
// for the domain.
var ErrNoDaemon = errors.New("no bridge daemon runs for this domain")

// ErrVersion reports a daemon whose status is of another Version: the
// daemon and this program come from different releases.
var ErrVersion = errors.New("bridge daemon status of another version")

// Query asks the local daemon for its Status (one JSON object per
// connection; the daemon answers processes of its own user or root): the
// bridge's answer on Socket, with DDS from the gateway's on DDSSocket.
// Either may be missing (Provider is empty without a bridge, DDS nil
// without a gateway); ErrNoDaemon when both are. An answer of another
// Version is an error wrapping ErrVersion.
func Query(cfg zerocopy.Config) (Status, error) {
	st, err := queryOne(Socket(cfg))
	if err != nil && !errors.Is(err, ErrNoDaemon) {
		return Status{}, err
	}
	ds, derr := queryOne(DDSSocket(cfg))
	switch {
	case derr == nil:
		st.Version, st.DDS = ds.Version, ds.DDS
		return st, nil
	case !errors.Is(derr, ErrNoDaemon):
		return Status{}, derr
	}
	return st, err
}

// queryOne reads one answer from a status socket.
func queryOne(socket string) (Status, error) {
	var st Status
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return st, fmt.Errorf("%w (%v)", ErrNoDaemon, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	var raw json.RawMessage
	if err := json.NewDecoder(c).Decode(&raw); err != nil {
		return st, fmt.Errorf("reading the daemon's status: %w", err)
	}
	return Decode(raw)
}

// Decode parses a status answer, checking its version first: the rest of
// an answer of another version is not read, since its fields may mean
// something else.
func Decode(data []byte) (Status, error) {
	var st Status
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return st, fmt.Errorf("reading the daemon's status: %w", err)
	}
	if v.Version != Version {
		return st, fmt.Errorf("%w: the daemon answers version %d, this program reads version %d (run the rgaps daemon of the same release)", ErrVersion, v.Version, Version)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("reading the daemon's status: %w", err)
	}
	return st, nil
}
