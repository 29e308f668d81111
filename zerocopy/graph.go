package zerocopy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
	"sync/atomic"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Graph segment, version 1 ("<prefix>_d<domain>_graph"): the nodes of the
// domain on this host and a generation word that changes with every node or
// endpoint change. Endpoints themselves live in their topic segments.
//
//	@0    [8]byte magic "RGAPSGRF"
//	@8    u32 version
//	@12   u32 maxNodes
//	@16   u64 total size
//	@24   u32 CRC-32C of [0,32) with this field zero
//	@64   shm.Lock
//	@128  u32 generation (futex word)
//	@4096 maxNodes node slots of 1024 bytes:
//	      @0 u32 state, @4 u32 pid, @8 u64 start time, @16 [16]byte GID,
//	      @64 [256]byte name, @320 [256]byte namespace, @576 [256]byte enclave
const (
	GraphVersion   = 1
	graphMagic     = "RGAPSGRF"
	gMaxNodes      = 12
	gTotal         = 16
	gCRC           = 24
	gStaticEnd     = 32
	gLock          = 64
	gGeneration    = 128
	gNodesOff      = 4096
	nodeStride     = 1024
	nState, nPid   = 0, 4
	nStart, nGID   = 8, 16
	nName, nNS     = 64, 320
	nEnclave       = 576
	defaultNodeCap = 256
)

type graph struct {
	cfg      Config
	seg      *shm.Segment
	lk       shm.Lock
	gen      *atomic.Uint32
	maxNodes uint32
}

func graphName(cfg Config) string { return fmt.Sprintf("%s_d%d_graph", cfg.Prefix, cfg.Domain) }

func openGraph(cfg Config) (*graph, error) {
	name := graphName(cfg)
	for attempt := 0; attempt < 100; attempt++ {
		seg, err := shm.Open(name, gNodesOff, cfg.access())
		if errors.Is(err, shm.ErrTruncated) {
			if removeUnused(cfg, name, err) == nil {
				continue
			}
		}
		if errors.Is(err, shm.ErrNotExist) {
			size := int64(gNodesOff + defaultNodeCap*nodeStride)
			seg, err = shm.Create(name, size, cfg.Perm, cfg.Group)
			if err != nil {
				return nil, fmt.Errorf("creating graph segment: %w", err)
			}
			// One per domain and host, 260 KiB: committed whole, so that
			// no node registration can fault on a full /dev/shm.
			if err = seg.Commit(0, uint64(size)); err != nil {
				seg.Close()
				return nil, fmt.Errorf("creating graph segment: %w", err)
			}
			h := seg.Bytes(0, gStaticEnd)
			copy(h, graphMagic)
			binary.LittleEndian.PutUint32(h[8:], GraphVersion)
			binary.LittleEndian.PutUint32(h[gMaxNodes:], defaultNodeCap)
			binary.LittleEndian.PutUint64(h[gTotal:], uint64(size))
			binary.LittleEndian.PutUint32(h[gCRC:], crc32.Checksum(h, castagnoli))
			if err = seg.Publish(); errors.Is(err, shm.ErrExist) {
				seg.Close()
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("opening graph segment: %w", err)
		}
		g, err := attachGraph(cfg, seg)
		if err != nil {
			seg.Close()
			if errors.Is(err, ErrCorrupt) && removeUnused(cfg, name, err) == nil {
				continue // nobody used the damaged one: make a new one
			}
			return nil, err
		}
		return g, nil
	}
	return nil, fmt.Errorf("graph segment %s keeps disappearing", name)
}

func attachGraph(cfg Config, seg *shm.Segment) (*graph, error) {
	h := seg.Bytes(0, gStaticEnd)
	if string(h[:8]) != graphMagic {
		return nil, fmt.Errorf("%w: %s: bad magic", ErrCorrupt, seg.Name())
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != GraphVersion {
		return nil, fmt.Errorf("%w: %s has layout version %d, this build reads %d", ErrVersion, seg.Name(), v, GraphVersion)
	}
	var tmp [gStaticEnd]byte
	copy(tmp[:], h)
	clear(tmp[gCRC : gCRC+4])
	if crc32.Checksum(tmp[:], castagnoli) != binary.LittleEndian.Uint32(h[gCRC:]) {
		return nil, fmt.Errorf("%w: %s: header checksum mismatch", ErrCorrupt, seg.Name())
	}
	maxNodes := binary.LittleEndian.Uint32(h[gMaxNodes:])
	if maxNodes == 0 || maxNodes > 1<<16 || uint64(seg.Size()) != binary.LittleEndian.Uint64(h[gTotal:]) ||
		uint64(seg.Size()) != gNodesOff+uint64(maxNodes)*nodeStride {
		return nil, fmt.Errorf("%w: %s: sizes disagree (truncated?)", ErrCorrupt, seg.Name())
	}
	return &graph{cfg: cfg, seg: seg, lk: shm.LockAt(seg, gLock), gen: seg.Uint32(gGeneration), maxNodes: maxNodes}, nil
}

func (g *graph) close() { g.seg.Close() }

func (g *graph) changed() {
	g.gen.Add(1)
	shm.WakeAll(g.gen)
}

func (g *graph) slotOff(i uint32) uint64 { return gNodesOff + uint64(i)*nodeStride }

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// NodeInfo describes a node in the graph.
type NodeInfo struct {
	Name, Namespace, Enclave string
	GID                      GID
	Pid                      uint32
}

// FullName is namespace + "/" + name.
func (n NodeInfo) FullName() string {
	if n.Namespace == "/" {
		return "/" + n.Name
	}
	return n.Namespace + "/" + n.Name
}

// NodeHandle is a node registered in the domain graph.
type NodeHandle struct {
	d    *Domain
	slot uint32
	info NodeInfo
	done atomic.Bool
}

// RegisterNode adds a node to the domain graph. Names are validated with
// ROS 2's rules; two nodes may share a name (ROS 2 warns, it does not fail).
func (d *Domain) RegisterNode(name, namespace, enclave string) (*NodeHandle, error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	if err := names.ValidateNodeName(name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := names.ValidateNamespace(namespace); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(enclave) >= nameMax {
		return nil, fmt.Errorf("%w: enclave too long", ErrInvalid)
	}
	g := d.graph
	g.reclaimDead()
	g.lk.Lock() // a dead holder only ever left a half-written slot, which reclaimDead clears
	defer g.lk.Unlock()
	for i := uint32(0); i < g.maxNodes; i++ {
		so := g.slotOff(i)
		if g.seg.Uint32(so+nState).Load() != 0 {
			continue
		}
		me := shm.Self()
		clear(g.seg.Bytes(so, nodeStride))
		info := NodeInfo{Name: name, Namespace: namespace, Enclave: enclave, GID: newGID(), Pid: me.Pid}
		g.seg.Uint32(so + nPid).Store(me.Pid)
		g.seg.Uint64(so + nStart).Store(me.Start)
		copy(g.seg.Bytes(so+nGID, 16), info.GID[:])
		copy(g.seg.Bytes(so+nName, nameMax-1), name)
		copy(g.seg.Bytes(so+nNS, nameMax-1), namespace)
		copy(g.seg.Bytes(so+nEnclave, nameMax-1), enclave)
		g.seg.Uint32(so + nState).Store(1)
		g.changed()
		return &NodeHandle{d: d, slot: i, info: info}, nil
	}
	return nil, fmt.Errorf("domain %d: all %d node slots in use", d.cfg.Domain, g.maxNodes)
}

// Info describes the node.
func (n *NodeHandle) Info() NodeInfo { return n.info }

// Close removes the node from the graph.
func (n *NodeHandle) Close() error {
	if !n.done.CompareAndSwap(false, true) {
		return ErrClosed
	}
	g := n.d.graph
	g.lk.Lock()
	g.seg.Uint32(g.slotOff(n.slot) + nState).Store(0)
	g.lk.Unlock()
	g.changed()
	return nil
}

func (g *graph) reclaimDead() {
	var dead []uint32
	for i := uint32(0); i < g.maxNodes; i++ {
		so := g.slotOff(i)
		if g.seg.Uint32(so+nState).Load() == 0 {
			continue
		}
		if !shm.Alive(shm.Owner{Pid: g.seg.Uint32(so + nPid).Load(), Start: g.seg.Uint64(so + nStart).Load()}) {
			dead = append(dead, i)
		}
	}
	if len(dead) == 0 {
		return
	}
	g.lk.Lock()
	for _, i := range dead {
		so := g.slotOff(i)
		if !shm.Alive(shm.Owner{Pid: g.seg.Uint32(so + nPid).Load(), Start: g.seg.Uint64(so + nStart).Load()}) {
			g.seg.Uint32(so + nState).Store(0)
		}
	}
	g.lk.Unlock()
	g.changed()
}

// Nodes lists the live nodes of the domain on this host.
func (d *Domain) Nodes() []NodeInfo {
	g := d.graph
	var out []NodeInfo
	g.lk.Lock()
	defer g.lk.Unlock()
	for i := uint32(0); i < g.maxNodes; i++ {
		so := g.slotOff(i)
		if g.seg.Uint32(so+nState).Load() == 0 {
			continue
		}
		o := shm.Owner{Pid: g.seg.Uint32(so + nPid).Load(), Start: g.seg.Uint64(so + nStart).Load()}
		if !shm.Alive(o) {
			continue
		}
		n := NodeInfo{Name: cstr(g.seg.Bytes(so+nName, nameMax)), Namespace: cstr(g.seg.Bytes(so+nNS, nameMax)),
			Enclave: cstr(g.seg.Bytes(so+nEnclave, nameMax)), Pid: o.Pid}
		copy(n.GID[:], g.seg.Bytes(so+nGID, 16))
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FullName() < out[j].FullName() })
	return out
}

// EndpointInfo describes a publisher or subscription in the graph.
type EndpointInfo struct {
	Topic    string
	Type     string
	TypeHash TypeHash
	Kind     Kind
	Node     string // fully qualified node name
	GID      GID
	QoS      qos.Profile
	Path     string // the data path in use: host-shm, gpu-pool, ... (for display)
	// Pool is where the topic's payloads live and Memory what the endpoint
	// reads or writes: the typed facts Path is made of.
	Pool   PoolKind
	Memory Memory
	Pid    uint32
	// Malformed counts the messages a subscription dropped because its
	// front end could not decode them (Subscription.DropMalformed).
	Malformed uint64
	// Bridge marks the bridge daemon's endpoint (EndpointSpec.Bridge): it
	// stands for endpoints on other hosts, which the daemon reports.
	Bridge bool
}

// endpointPath names the data path an endpoint really uses (DESIGN.md §8):
// host-shm (host bytes in shared memory), host-shm-mapped (a GPU endpoint
// reading a host pool in place over PCIe), gpu-pool (device pointers into the
// shared GPU pool), gpu-pool+host-copy (a host endpoint of a GPU topic: one
// host copy per message, shared by all host readers).
func endpointPath(k PoolKind, f endpointFlags) string {
	switch {
	case k == PoolGPU && f&flagWantsDevice != 0:
		return "gpu-pool"
	case k == PoolGPU:
		return "gpu-pool+host-copy"
	case f&flagWantsDevice != 0:
		return "host-shm-mapped"
	}
	return "host-shm"
}

// TopicInfo is a topic and its endpoint counts on this host.
type TopicInfo struct {
	Name, Type                string
	Publishers, Subscriptions int // excluding the bridge daemon's endpoints
	Bridged                   int // the bridge daemon's endpoints
	PoolSize, PoolFree        uint64
	// ShmUsage is the /dev/shm memory the topic's segment uses now: what
	// it committed, however large its pool may grow (PoolSize).
	ShmUsage uint64
	Path     string
}

// Topics lists the topics of the domain that have live endpoints on this host.
func (d *Domain) Topics() ([]TopicInfo, error) {
	segs, err := shm.List(segPrefix(d.cfg))
	if err != nil {
		return nil, err
	}
	var out []TopicInfo
	for _, s := range segs {
		eps, ti, err := d.inspectSegment(s, "")
		if err != nil || len(eps) == 0 {
			continue
		}
		out = append(out, ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Endpoints lists the live endpoints of a topic on this host, of every type
// (none when the topic does not exist).
func (d *Domain) Endpoints(topic string) ([]EndpointInfo, error) {
	segs, err := d.topicSegments(topic)
	if err != nil {
		return nil, err
	}
	var out []EndpointInfo
	for _, s := range segs {
		eps, _, err := d.inspectSegment(s, topic)
		if errors.Is(err, shm.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, eps...)
	}
	return out, nil
}

// topicSegments lists the segments of every type of topic.
func (d *Domain) topicSegments(topic string) ([]string, error) {
	prefix, err := segTopicPrefix(d.cfg, topic)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	segs, err := shm.List(prefix)
	if err != nil {
		return nil, err
	}
	out := segs[:0]
	for _, s := range segs {
		if len(s) == len(prefix)+typeTagLen {
			out = append(out, s)
		}
	}
	return out, nil
}

// inspectSegment reads the endpoints of the topic in segment name (whose
// topic must be topic, unless that is ""), mapping it for the duration
// when this process does not have it open.
func (d *Domain) inspectSegment(name, topic string) (_ []EndpointInfo, ti TopicInfo, err error) {
	seg, err := shm.Open(name, headerSize, d.cfg.access())
	if err != nil {
		return nil, ti, err
	}
	defer seg.Close()
	t, err := attachTopic(d, seg, topic)
	if err != nil {
		return nil, ti, err
	}
	defer t.unguard(guard(), &err)
	if err := t.lock(); err != nil {
		return nil, ti, err
	}
	defer t.unlock()
	ti = TopicInfo{Name: t.name, Type: t.typ, Path: t.lay.poolKind.Path(), PoolSize: t.lay.poolSize, PoolFree: t.alloc.Stats().FreeBytes, ShmUsage: t.ShmUsage()}
	var out []EndpointInfo
	for s := uint32(0); s < t.slotCount(); s++ {
		so := t.slotOff(s)
		if slotState(t.u32(so+eState).Load()) != slotActive {
			continue
		}
		o := shm.Owner{Pid: t.u32(so + ePid).Load(), Start: t.u64(so + eStart).Load()}
		if !shm.Alive(o) {
			continue
		}
		q, _ := qos.Decode(t.seg.Bytes(so+eQoS, qos.EncodedSize))
		fl := endpointFlags(t.u32(so + eFlags).Load())
		ep := EndpointInfo{Topic: t.name, Type: t.typ, Kind: Kind(t.u32(so + eKind).Load()),
			Node: cstr(t.seg.Bytes(so+eNode, nameMax)), QoS: q, Pid: o.Pid,
			Path: endpointPath(t.lay.poolKind, fl), Pool: t.lay.poolKind, Bridge: fl&flagBridge != 0}
		if fl&flagWantsDevice != 0 {
			ep.Memory = MemoryGPU
		}
		copy(ep.GID[:], t.seg.Bytes(so+eGID, 16))
		copy(ep.TypeHash[:], t.seg.Bytes(so+eHash, uint64(len(ep.TypeHash))))
		ep.Malformed = t.u64(so + eMalformed).Load()
		if ep.Bridge {
			ti.Bridged++
		} else if ep.Kind == KindPublisher {
			ti.Publishers++
		} else {
			ti.Subscriptions++
		}
		out = append(out, ep)
	}
	return out, ti, nil
}
