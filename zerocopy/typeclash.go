package zerocopy

import (
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// Endpoints that name one topic with different message types live in
// different segments (segName) and never match, as in DDS. Each learns of
// the others through incompatible-type status: the janitor scans the
// domain's segment names whenever the graph generation moves, and for every
// topic this process has open that exists with other types it counts the
// endpoints of the other kind found there.

// checkTypeClashes runs from the janitor over the segments whose names
// start with prefix (segPrefix, computed once: the janitor does not read the
// config). gen is the graph generation it last scanned at; it returns the
// one it scanned now.
func (d *Domain) checkTypeClashes(prefix string, gen uint32) uint32 {
	now := d.graph.Load().generation()
	if now == gen {
		return gen
	}
	segs, err := shm.List(prefix)
	if err != nil {
		return gen
	}
	byTopic := map[string][]string{} // segment name up to '@' → segments
	for _, s := range segs {
		if i := strings.LastIndexByte(s, '@'); i > 0 && len(s) == i+1+typeTagLen {
			byTopic[s[:i+1]] = append(byTopic[s[:i+1]], s)
		}
	}
	alive := map[shm.Owner]bool{}
	for _, t := range d.holdTopics() {
		own := t.seg.Name()
		var foreign []EndpointInfo
		if i := strings.LastIndexByte(own, '@'); i > 0 {
			for _, s := range byTopic[own[:i+1]] {
				if s == own {
					continue
				}
				eps, _, err := d.inspectSegment(s, t.name, alive)
				if err != nil {
					continue
				}
				for _, ep := range eps {
					if !ep.Republish {
						foreign = append(foreign, ep)
					}
				}
			}
		}
		for _, e := range t.localEndpoints() {
			e.typeClash(foreign)
		}
		d.releaseTopic(t)
	}
	return now
}

// typeClash records the endpoints of the other kind that use this topic with
// another type; each new one counts once in IncompatibleType.
func (e *endpoint) typeClash(foreign []EndpointInfo) {
	e.mu.Lock()
	defer e.mu.Unlock()
	other := e.kind.other()
	seen := make(map[GID]bool, len(e.otherTypes))
	changed := false
	for _, ep := range foreign {
		if ep.Kind != other {
			continue
		}
		seen[ep.GID] = true
		if !e.otherTypes[ep.GID] {
			e.st.IncompatibleType++
			e.st.IncompatTypeChg++
			changed = true
			if lg := e.t.d.cfg.Logger; lg != nil {
				lg.Warn("incompatible type: endpoints do not match", "topic", e.t.name, "self", e.kind.String(), "type", e.t.typ, "peer type", ep.Type, "peer", ep.GID.String())
			}
		}
	}
	e.otherTypes = seen
	if changed {
		e.bumpEvent()
	}
}
