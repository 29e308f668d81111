//go:build cgo && !nodds

package dds

/*
#include "rgdds.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// domains are the Cyclone domains this process created, by id: Cyclone
// has one configuration per domain and process, so participants of one
// domain share it, and it is deleted with the last of them.
var domains struct {
	mu sync.Mutex
	m  map[uint32]*domainRef
}

type domainRef struct {
	handle C.int32_t
	xml    string
	refs   int
}

// maxDomain is the largest domain id DDSI's port mapping allows.
const maxDomain = 232

func acquireDomain(id uint32, xml string) error {
	domains.mu.Lock()
	defer domains.mu.Unlock()
	if d := domains.m[id]; d != nil {
		if d.xml != xml {
			return fmt.Errorf("dds: domain %d is open in this process with another configuration", id)
		}
		d.refs++
		return nil
	}
	cxml := C.CString(xml)
	defer C.free(unsafe.Pointer(cxml))
	h := C.rgd_create_domain(C.uint32_t(id), cxml)
	if err := check(fmt.Sprintf("create domain %d", id), h); err != nil {
		return err
	}
	if domains.m == nil {
		domains.m = map[uint32]*domainRef{}
	}
	domains.m[id] = &domainRef{handle: h, xml: xml, refs: 1}
	return nil
}

func releaseDomain(id uint32) error {
	domains.mu.Lock()
	defer domains.mu.Unlock()
	d := domains.m[id]
	if d == nil {
		return nil
	}
	if d.refs--; d.refs > 0 {
		return nil
	}
	delete(domains.m, id)
	return check(fmt.Sprintf("delete domain %d", id), C.rgd_delete(d.handle))
}

// Participant is a DDS domain participant: the owner of the topics,
// writers and readers made through it, and of the built-in readers that
// list what discovery found.
type Participant struct {
	domain uint32
	handle C.int32_t
	guid   GUID

	mu       sync.Mutex
	closed   bool
	topics   map[string]*Topic
	children map[closer]struct{}
	builtin  [2]C.int32_t // DCPSSubscription, DCPSPublication readers; 0 until used
}

// closer is a writer or reader, closed with its participant.
type closer interface {
	close(fromParticipant bool) error
}

// Open creates a participant on cfg.Domain, creating the domain with cfg's
// configuration if this process has none of that id yet.
func Open(cfg Config) (*Participant, error) {
	if err := Load(); err != nil {
		return nil, err
	}
	if cfg.Domain > maxDomain {
		return nil, fmt.Errorf("dds: domain id %d above %d", cfg.Domain, maxDomain)
	}
	if err := acquireDomain(cfg.Domain, configXML(cfg)); err != nil {
		return nil, err
	}
	ud, udlen := cbytes(cfg.UserData)
	h := C.rgd_create_participant(C.uint32_t(cfg.Domain), ud, udlen)
	if err := check(fmt.Sprintf("create participant on domain %d", cfg.Domain), h); err != nil {
		return nil, errors.Join(err, releaseDomain(cfg.Domain))
	}
	g, err := guidOf(h)
	if err != nil {
		C.rgd_delete(h)
		return nil, errors.Join(err, releaseDomain(cfg.Domain))
	}
	return &Participant{domain: cfg.Domain, handle: h, guid: g,
		topics: map[string]*Topic{}, children: map[closer]struct{}{}}, nil
}

// GUID is the participant's GUID.
func (p *Participant) GUID() GUID { return p.guid }

// Domain is the domain id.
func (p *Participant) Domain() uint32 { return p.domain }

// Close closes the participant's writers and readers, deletes it (and so
// its topics), and the domain with its last participant.
func (p *Participant) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.closed = true
	children := p.children
	p.children = nil
	p.mu.Unlock()
	var errs []error
	for c := range children {
		errs = append(errs, c.close(true))
	}
	errs = append(errs, check("delete participant", C.rgd_delete(p.handle)), releaseDomain(p.domain))
	return errors.Join(errs...)
}

// adopt registers a child to be closed with p; false if p is closed.
func (p *Participant) adopt(c closer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.children[c] = struct{}{}
	return true
}

// disown forgets a child closed on its own.
func (p *Participant) disown(c closer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.children, c)
}
