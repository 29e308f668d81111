//go:build cgo && !nofabric

package fabric

// #include "rgfabric.h"
import "C"

import (
	"errors"
	"sync"
)

// shmPeers makes shm endpoints of one process safe for each other.
//
// libfabric 1.17 shm maps a peer that lives in the same process by
// pointer to that peer's region (found in its list of the process's
// endpoints) instead of mapping its file. When that peer closes, the
// region is unmapped, and the other endpoint crashes on its next send
// to it, or when its address vector is closed: smr_map_del munmaps
// (again) the region of every peer no longer in the list, reading the
// freed region's size first. A peer in another process is mapped
// from its file and stays mapped, so none of this applies there.
//
// So the package tracks its own RDM endpoints by address, and which
// address vectors name each. An endpoint that closes first removes
// itself from every such address vector (fi_av_remove while it is still
// alive and listed, so nothing is unmapped) and marks the address gone
// there; a later post to it fails with ErrPeerClosed instead. The
// endpoints involved (flag inproc) hold the read lock around each C call,
// the closer the write lock, so no call runs on an address vector while
// an entry is removed from it.
//
// Removing an address is not enough when the peer still has operations
// whose completions (shm "responses") were written by the closed
// endpoint: processing them locks the closed endpoint's region. The
// bye/bye-ack exchange drains them when both sides keep polling; when the
// closer's wait for the ack times out (the peer stopped polling), its C
// objects are kept as a zombie until the peer closes too, and freed then.
var shmPeers struct {
	sync.RWMutex
	live    map[string]*core   // address → this process's RDM endpoint there
	refs    map[string][]avRef // address → the address-vector entries naming it
	zombies map[string][]*core // peer address → closed endpoints waiting for it
}

type avRef struct {
	c  *core
	fa C.fi_addr_t
}

// rlock read-locks shmPeers if c talks to (or is named by) an endpoint of
// this process; the returned function unlocks. Callers must not nest it.
func (c *core) rlock() func() {
	if !c.inproc.Load() {
		return func() {}
	}
	shmPeers.RLock()
	return shmPeers.RUnlock
}

// registerRDM lists c under its address.
func (c *core) registerRDM() {
	shmPeers.Lock()
	defer shmPeers.Unlock()
	if shmPeers.live == nil {
		shmPeers.live = map[string]*core{}
		shmPeers.refs = map[string][]avRef{}
		shmPeers.zombies = map[string][]*core{}
	}
	shmPeers.live[c.name] = c
}

// avInsert adds addr (an FI_ADDR_STR) to c's address vector.
func (c *core) avInsert(addr string) (C.fi_addr_t, error) {
	ca := cstr(addr)
	defer cfree(ptr(ca))
	shmPeers.Lock()
	defer shmPeers.Unlock()
	var fa C.fi_addr_t
	r := C.rg_av_insert1(c.av, ptr(ca), &fa)
	if r != 1 || fa == addrNotAvail {
		if r < 0 {
			return 0, fiError("fi_av_insert", int(-r), "")
		}
		return 0, errAddr(c, addr)
	}
	// The table may hand out the index of a removed entry again.
	delete(c.gone, fa)
	if c.entries == nil {
		c.entries = map[C.fi_addr_t]string{}
	}
	c.entries[fa] = addr
	if peer := shmPeers.live[addr]; peer != nil {
		c.inproc.Store(true)
		peer.inproc.Store(true)
		shmPeers.refs[addr] = append(shmPeers.refs[addr], avRef{c, fa})
	}
	return fa, nil
}

// avRemove removes fa (inserted for addr) from c's address vector.
func (c *core) avRemove(addr string, fa C.fi_addr_t) {
	shmPeers.Lock()
	defer shmPeers.Unlock()
	if c.entries[fa] != addr {
		return // its endpoint closed and removed it already
	}
	delete(c.entries, fa)
	C.rg_av_remove1(c.av, fa)
	refs := shmPeers.refs[addr]
	for i, r := range refs {
		if r.c == c && r.fa == fa {
			shmPeers.refs[addr] = append(refs[:i], refs[i+1:]...)
			break
		}
	}
}

// isGone reports whether fa's endpoint closed. Must hold c.rlock (or the
// write lock).
func (c *core) isGone(fa C.fi_addr_t) bool { return c.gone[fa] }

// unregisterRDM takes c out of every address vector of this process that
// names it, and forgets c's own entries. Must hold the write lock, and be
// called before c's endpoint and address vector are closed.
func (c *core) unregisterRDM() {
	if shmPeers.live == nil || shmPeers.live[c.name] != c {
		return
	}
	for _, r := range shmPeers.refs[c.name] {
		if r.c.gone == nil {
			r.c.gone = map[C.fi_addr_t]bool{}
		}
		C.rg_av_remove1(r.c.av, r.fa)
		r.c.gone[r.fa] = true
		delete(r.c.entries, r.fa)
	}
	delete(shmPeers.refs, c.name)
	for addr, refs := range shmPeers.refs {
		kept := refs[:0]
		for _, r := range refs {
			if r.c != c {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			delete(shmPeers.refs, addr)
		} else {
			shmPeers.refs[addr] = kept
		}
	}
	delete(shmPeers.live, c.name)
}

// release frees a closed endpoint's C objects, unless its peer is an
// endpoint of this process that is still open and did not acknowledge our
// bye: then it becomes a zombie the peer's destruction frees.
func (c *core) release() error {
	if c.name == "" {
		return c.closeAll()
	}
	shmPeers.Lock()
	defer shmPeers.Unlock()
	if peer := shmPeers.live[c.peerAddr]; peer != nil && peer != c && !peer.zombie && !c.ackIn {
		c.zombie = true
		shmPeers.zombies[c.peerAddr] = append(shmPeers.zombies[c.peerAddr], c)
		c.p.zombies.Add(1)
		c.p.log.Debug("libfabric shm: endpoint kept until its in-process peer closes", "endpoint", c.name, "peer", c.peerAddr)
		return nil
	}
	return c.destroyRDM()
}

// destroyRDM takes c out of this process's address vectors, closes it, and
// then frees the zombies that waited for it. Must hold the write lock.
func (c *core) destroyRDM() error {
	c.unregisterRDM()
	err := c.closeAll()
	if shmPeers.zombies != nil {
		waiting := shmPeers.zombies[c.name]
		delete(shmPeers.zombies, c.name)
		for _, z := range waiting {
			z.zombie = false
			err = errors.Join(err, z.destroyRDM())
			z.p.zombies.Add(-1)
		}
	}
	return err
}
