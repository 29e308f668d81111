package zerocopy

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Graph queries over the topic segments: the endpoints of a topic, of
// every topic, and the topics of the domain on this host. The graph
// segment (graph.go) holds nodes only; endpoints are read where they live.

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
	// Start is the owner's start time (clock ticks since boot, field 22
	// of /proc/PID/stat): Pid and Start name the process across pid
	// reuse (ProcessAlive).
	Start uint64
	// Malformed counts the messages a subscription dropped because its
	// front end could not decode them (Subscription.DropMalformed).
	Malformed uint64
	// Lost counts, for a subscription, samples lost to it (KEEP_LAST
	// overwrites, best-effort overflow); for a publisher, samples it
	// dropped.
	Lost uint64
	// Republish marks a republishing endpoint (EndpointSpec.Republish):
	// it stands for endpoints elsewhere (the bridge's: on other hosts,
	// which the bridge daemon reports).
	Republish bool
}

// endpointPath names the data path an endpoint really uses (DESIGN.md §8):
// host-shm (host bytes in shared memory), host-shm-mapped (a GPU endpoint
// reading a host pool in place over PCIe), gpu-pool (device pointers into the
// shared GPU pool), gpu-pool+host-copy (a host endpoint of a GPU topic: one
// host copy per message, shared by all host readers), gpu-pool-any-form (a
// MemoryAny subscription of a GPU topic: the form each sample has).
func endpointPath(k PoolKind, f endpointFlags) string {
	switch {
	case k == PoolGPU && f&flagWantsDevice != 0:
		return "gpu-pool"
	case k == PoolGPU && f&(flagWantsHost|flagWantsDevice) == 0:
		return "gpu-pool-any-form"
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
	Publishers, Subscriptions int // excluding republishing endpoints
	Republishing              int // republishing endpoints (EndpointSpec.Republish)
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
	alive := map[shm.Owner]bool{}
	for _, s := range segs {
		eps, ti, err := d.inspectSegment(s, "", alive)
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
	alive := map[shm.Owner]bool{}
	for _, s := range segs {
		eps, _, err := d.inspectSegment(s, topic, alive)
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

// AllEndpoints lists the live endpoints of every topic of the domain on
// this host, of every type, in one pass over /dev/shm (Endpoints lists it
// per topic): what a daemon that states the whole host's graph reads.
// Segments that vanish or are damaged while it reads are left out, as
// Topics leaves them out.
func (d *Domain) AllEndpoints() ([]EndpointInfo, error) {
	segs, err := shm.List(segPrefix(d.cfg))
	if err != nil {
		return nil, err
	}
	var out []EndpointInfo
	alive := map[shm.Owner]bool{} // each process is looked up once
	for _, s := range segs {
		if i := strings.LastIndexByte(s, '@'); i < 0 || len(s) != i+1+typeTagLen {
			continue // not a topic segment (a creation temp)
		}
		eps, _, err := d.inspectSegment(s, "", alive)
		if err != nil {
			continue
		}
		out = append(out, eps...)
	}
	return out, nil
}

// ProcessAlive reports whether the process pid, started at start (an
// EndpointInfo's Pid and Start), still runs; start 0 checks the pid only.
func ProcessAlive(pid uint32, start uint64) bool { return shm.Alive(shm.Owner{Pid: pid, Start: start}) }

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
// when this process does not have it open. alive caches which owners run
// (shared by the calls of one query).
func (d *Domain) inspectSegment(name, topic string, alive map[shm.Owner]bool) (_ []EndpointInfo, ti TopicInfo, err error) {
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
		if !aliveIn(alive, o) {
			continue
		}
		q, _ := qos.Decode(t.seg.Bytes(so+eQoS, qos.EncodedSize))
		fl := endpointFlags(t.u32(so + eFlags).Load())
		ep := EndpointInfo{Topic: t.name, Type: t.typ, Kind: Kind(t.u32(so + eKind).Load()),
			Node: cstr(t.seg.Bytes(so+eNode, nameMax)), QoS: q, Pid: o.Pid, Start: o.Start,
			Path: endpointPath(t.lay.poolKind, fl), Pool: t.lay.poolKind, Republish: fl&flagRepublish != 0}
		switch {
		case fl&flagWantsDevice != 0:
			ep.Memory = MemoryGPU
		case fl&flagWantsHost == 0 && ep.Kind == KindSubscription:
			ep.Memory = MemoryAny
		}
		copy(ep.GID[:], t.seg.Bytes(so+eGID, 16))
		copy(ep.TypeHash[:], t.seg.Bytes(so+eHash, uint64(len(ep.TypeHash))))
		ep.Malformed = t.u64(so + eMalformed).Load()
		ep.Lost = t.u64(so + eLost).Load()
		if ep.Republish {
			ti.Republishing++
		} else if ep.Kind == KindPublisher {
			ti.Publishers++
		} else {
			ti.Subscriptions++
		}
		out = append(out, ep)
	}
	return out, ti, nil
}
