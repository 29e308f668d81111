//go:build cgo && !nofabric

package fabric

// #include "rgfabric.h"
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// Gathered writes (transport.GatherWriter): a record's parts as one write
// with one immediate, where the provider would otherwise need a fence
// between them (Provider.gather).

// maxGather is the most local parts one gathered write takes (writev).
const maxGather = 4

// gathered is one transmit slot's arrays for a gathered write, in C
// memory until the write completes. Go writes the parts' addresses,
// lengths and descriptors as integers (none is Go memory, and a pointer
// store into C memory would have the garbage collector look at the old
// value); rg_writev fills iov from them.
type gathered struct {
	iov  [maxGather]C.struct_iovec
	base [maxGather]C.uintptr_t
	lens [maxGather]C.size_t
	desc [maxGather]uintptr
}

const gatherSize = int(unsafe.Sizeof(gathered{}))

var _ transport.GatherWriter = (*Endpoint)(nil)

// MaxGather implements transport.GatherWriter.
func (e *Endpoint) MaxGather() int { return e.p.gather() }

// WriteImmGather implements transport.GatherWriter.
func (e *Endpoint) WriteImmGather(srcs [][]byte, locals []transport.Region, remote transport.RemoteRegion, off uint64, imm uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c.writev(srcs, locals, remote, off, imm)
}

// writev posts srcs (srcs[k] inside locals[k]) as one write, with
// immediate imm, of their concatenation into the peer's region at off
// (Endpoint.WriteImmGather).
func (c *core) writev(srcs [][]byte, locals []transport.Region, remote transport.RemoteRegion, off uint64, imm uint64) error {
	n := len(srcs)
	if n == 0 || n != len(locals) || n > c.p.gather() {
		return fmt.Errorf("libfabric %s: a write gathering %d parts (%d regions), at most %d: %w", c.p.name, n, len(locals), c.p.gather(), transport.ErrNotSupported)
	}
	total := 0
	for _, s := range srcs {
		total += len(s)
	}
	if err := remote.CheckWrite(off, total); err != nil {
		return fmt.Errorf("libfabric %s: %w", c.p.name, err)
	}
	if err := c.usable(); err != nil {
		return err
	}
	deadline := time.Now().Add(c.p.opts.Timeout)
	if err := c.awaitFenced(deadline); err != nil {
		return err
	}
	i, err := c.slot(deadline, true)
	if err != nil {
		return err
	}
	g := (*gathered)(unsafe.Add(c.gatherMem, i*gatherSize))
	for k, s := range srcs {
		lr, ok := locals[k].(*Region)
		if !ok || lr == nil || lr.p != c.p {
			c.free = append(c.free, int32(i))
			return fmt.Errorf("libfabric %s: part %d's region is not registered with this provider", c.p.name, k)
		}
		buf, desc, err := lr.span(s)
		if err != nil {
			c.free = append(c.free, int32(i))
			return err
		}
		g.base[k], g.lens[k], g.desc[k] = C.uintptr_t(uintptr(buf)), C.size_t(len(s)), uintptr(desc)
	}
	addr := C.uint64_t(remote.Addr + off)
	key := C.uint64_t(remote.Key)
	return c.post(i, slotImm, c.peer, deadline, func(ctx unsafe.Pointer) C.ssize_t {
		return C.rg_writev(c.ep, &g.iov[0], &g.base[0], &g.lens[0], (*unsafe.Pointer)(unsafe.Pointer(&g.desc[0])), C.size_t(n), C.uint64_t(imm), c.peer, addr, key, ctx)
	})
}
