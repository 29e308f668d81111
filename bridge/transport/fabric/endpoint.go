//go:build cgo && !nofabric

package fabric

// #include "rgfabric.h"
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// Control messages travel as ordinary messages (fi_send into the peer's
// posted receives): hello and welcome connect RDM endpoints; bye tells the
// peer an endpoint closes (RDM has no connection to notice that) and the
// peer answers bye-ack once it stopped posting to it. The closer frees its
// memory only after the ack (or a timeout): shm maps a peer in the same
// process by pointer, so an operation that reached a freed endpoint would
// crash, not fail.
// Layout: magic u32, type u32, payload length u32, 4 bytes zero, payload.
const (
	ctlSize    = 256
	ctlHdr     = 16
	ctlMagic   = 0x54434752 // "RGCT"
	ctlHello   = 1
	ctlWelcome = 2
	ctlBye     = 3
	ctlByeAck  = 4
	ctlTxBufs  = 3 // [0] hello or welcome, [1] bye, [2] bye-ack: each is sent at most once
	cqBatch    = 64
)

// Transmit slot kinds.
const (
	slotFree  = iota
	slotImm   // WriteImm
	slotWrite // Write, transmit complete
	slotFence // Write with FI_DELIVERY_COMPLETE, awaited by the next WriteImm
	slotCtl   // control message
)

type ctlMsg struct {
	typ     uint32
	payload string
}

// core is one libfabric endpoint with its completion queue, the contexts
// of its operations, and posted receives. Every method must be called with
// *mu held; C memory is freed only under it, so a method that released mu
// (to back off) checks closed before touching C again.
type core struct {
	p  *Provider
	mu *sync.Mutex

	ep *C.struct_fid_ep
	cq *C.struct_fid_cq
	// waitFD is the completion queue's wait object (FI_WAIT_FD), what an
	// idle owner sleeps on (sleep.go); -1 where the provider has none.
	waitFD int
	eq     *C.struct_fid_eq // MSG endpoints: connection events
	av     *C.struct_fid_av // RDM endpoints: the peer's address
	// peer is the destination of every write (FI_ADDR_UNSPEC when
	// connected).
	peer C.fi_addr_t
	name string // RDM: the endpoint's address (fi_getname)

	// Contexts: slots [0, txSlots) for transmits, [txSlots, txSlots+rxDepth)
	// for posted receives, in one C array of fi_context2.
	ctx     unsafe.Pointer
	txSlots int
	rxDepth int
	kind    []uint8 // transmit slot kinds
	free    []int32 // free transmit slots
	ents    unsafe.Pointer
	eqArgs  unsafe.Pointer // an eqArgs in C memory (pollEQ)
	ctlMem  unsafe.Pointer // rxDepth receive buffers, then ctlTxBufs send buffers
	ctlMR   *C.struct_fid_mr
	ctlDesc unsafe.Pointer
	// gatherMem holds, per transmit slot, the iovec and descriptor arrays
	// of a gathered write (writev), kept until it completes; nil when the
	// provider gathers no writes (Provider.gather).
	gatherMem unsafe.Pointer
	inflight  int // data writes posted and not completed
	idle      int // progress passes that found no completion (pollEQ's pace)
	fenced    int // slotFence writes not completed

	pending []uint64 // received immediates not yet returned
	head    int      // pending[head:] are unreturned
	ctlIn   []ctlMsg // hello/welcome messages not yet consumed
	err     error    // sticky failure
	byeIn   bool     // the peer said bye: it is closing, an ack is owed
	ackSent bool     // the bye-ack is posted
	ackIn   bool     // the peer acknowledged our bye
	closed  bool     // C objects are gone
	// holdLock makes pause keep mu (Close: no other caller may slip in).
	holdLock bool

	// inproc: an endpoint of this process is this one's peer, or names
	// it; C calls then hold shmPeers' read lock (inproc.go).
	inproc atomic.Bool
	// peerAddr is the RDM peer's address; zombie marks a closed endpoint
	// whose C objects wait for its in-process peer to close first
	// (guarded by shmPeers).
	peerAddr string
	zombie   bool
	gone     map[C.fi_addr_t]bool // peers that closed (guarded by shmPeers)
	// entries are the addresses in the address vector (guarded by
	// shmPeers).
	entries map[C.fi_addr_t]string
	// unposted are receive slots whose fi_recv met -FI_EAGAIN; progress
	// posts them again.
	unposted []int

	writes, completions, imms, retries, fences atomic.Uint64
	eagains                                    atomic.Uint64 // -FI_EAGAIN from the provider
}

// newCore creates, binds and enables an endpoint from info (for RDM,
// info's source address names it), and posts its receives.
func (p *Provider) newCore(mu *sync.Mutex, info *C.struct_fi_info, rxDepth int) (*core, error) {
	c := &core{p: p, mu: mu, peer: addrUnspec, rxDepth: rxDepth, waitFD: -1}
	// One context per operation the provider says it can queue. (tcp in
	// libfabric 1.17 takes more and never answers -FI_EAGAIN for a full
	// queue: its transfer pool grows without bound; the contexts bound it.)
	c.txSlots = max(p.txSize, 16)
	fail := func(err error) (*core, error) {
		c.destroy()
		return nil, err
	}
	if r := C.fi_endpoint(p.domain, info, &c.ep, nil); r != 0 {
		return fail(fiError("fi_endpoint", int(-r), ""))
	}
	live.endpoints.Add(1)
	if err := c.openCQ(); err != nil {
		return fail(err)
	}
	if p.epType == epMsg {
		if r := C.rg_eq_open(p.fabric, &c.eq); r != 0 {
			return fail(fiError("fi_eq_open", int(-r), ""))
		}
	} else {
		if r := C.rg_av_open(p.domain, &c.av); r != 0 {
			return fail(fiError("fi_av_open", int(-r), ""))
		}
	}
	if r := C.rg_ep_setup(c.ep, c.cq, c.eq, c.av); r != 0 {
		return fail(fiError("binding and enabling the endpoint", int(-r), ""))
	}
	n := c.txSlots + c.rxDepth
	c.ctx = C.calloc(C.size_t(n), ctxSize)
	c.ents = C.calloc(cqBatch, entSize)
	c.ctlMem = C.calloc(C.size_t(c.rxDepth+ctlTxBufs), ctlSize)
	c.eqArgs = C.calloc(1, C.size_t(unsafe.Sizeof(eqArgs{})))
	if c.ctx == nil || c.ents == nil || c.ctlMem == nil || c.eqArgs == nil {
		return fail(errors.New("libfabric: out of C memory for contexts"))
	}
	if p.gather() > 1 {
		if c.gatherMem = C.calloc(C.size_t(c.txSlots), C.size_t(gatherSize)); c.gatherMem == nil {
			return fail(errors.New("libfabric: out of C memory for gathered writes"))
		}
	}
	c.kind = make([]uint8, c.txSlots)
	c.free = make([]int32, 0, c.txSlots)
	for i := c.txSlots - 1; i >= 0; i-- {
		c.free = append(c.free, int32(i))
	}
	p.mu.Lock()
	mr, desc, _, err := p.regLocked(c.ctlMem, (c.rxDepth+ctlTxBufs)*ctlSize, accessCtl)
	p.mu.Unlock()
	if err != nil {
		return fail(fmt.Errorf("registering control buffers: %w", err))
	}
	c.ctlMR, c.ctlDesc = mr, desc
	if p.epType == epRdm {
		var buf [512]byte
		n := C.size_t(len(buf))
		if r := C.rg_getname(C.rg_ep_fid(c.ep), unsafe.Pointer(&buf[0]), &n); r != 0 {
			return fail(fiError("fi_getname", int(-r), ""))
		}
		c.name = C.GoString((*C.char)(unsafe.Pointer(&buf[0])))
		c.registerRDM()
	}
	for i := 0; i < c.rxDepth; i++ {
		if err := c.postRecv(c.txSlots + i); err != nil {
			return fail(err)
		}
	}
	return c, nil
}

func (c *core) ctxAt(i int) unsafe.Pointer { return unsafe.Add(c.ctx, i*ctxSize) }

// slotOf maps an operation context back to its slot; -1 when it is none of
// ours (NULL: the target side of a write with remote CQ data).
func (c *core) slotOf(ctx unsafe.Pointer) int {
	if ctx == nil || c.ctx == nil {
		return -1
	}
	d := uintptr(ctx) - uintptr(c.ctx)
	if uintptr(ctx) < uintptr(c.ctx) || d >= uintptr((c.txSlots+c.rxDepth)*ctxSize) {
		return -1
	}
	return int(d / ctxSize)
}

func (c *core) ctlBuf(i int) unsafe.Pointer { return unsafe.Add(c.ctlMem, i*ctlSize) }

func (c *core) ctlDescFor() unsafe.Pointer {
	if c.p.descs {
		return c.ctlDesc
	}
	return nil
}

// postRecv posts the receive of slot i (a control message, or what remote
// CQ data consumes under FI_RX_CQ_DATA); one that meets -FI_EAGAIN is
// posted again by the next progress.
func (c *core) postRecv(i int) error {
	r := C.rg_recv(c.ep, c.ctlBuf(i-c.txSlots), ctlSize, c.ctlDescFor(), c.ctxAt(i))
	switch r {
	case 0:
		return nil
	case -fiEAGAIN:
		c.unposted = append(c.unposted, i)
		return nil
	}
	return fiError("fi_recv", int(-r), "")
}

// fail records the endpoint's first failure.
func (c *core) fail(err error) {
	if c.err == nil {
		c.err = err
		c.p.log.Debug("libfabric endpoint failed", "provider", c.p.name, "err", err)
	}
}

// usable is why nothing may be posted now.
func (c *core) usable() error {
	if c.closed {
		return transport.ErrClosed
	}
	return c.err
}

// progress reads the completion queue (which is what makes software
// providers move data: FABRIC_NOTES pitfall 1) and, on connected
// endpoints, the event queue. It returns how many completions it handled.
func (c *core) progress() int {
	unlock := c.rlock()
	defer unlock()
	c.p.landMu.RLock()
	defer c.p.landMu.RUnlock()
	if len(c.unposted) > 0 {
		again := c.unposted
		c.unposted = nil
		for _, i := range again {
			if err := c.postRecv(i); err != nil {
				c.fail(err)
			}
		}
	}
	total := 0
	ents := unsafe.Slice((*C.struct_fi_cq_data_entry)(c.ents), cqBatch)
	for round := 0; round < 16; round++ {
		r := C.fi_cq_read(c.cq, c.ents, cqBatch)
		if r > 0 {
			for i := 0; i < int(r); i++ {
				c.handle(&ents[i])
			}
			total += int(r)
			if r < cqBatch {
				break
			}
			continue
		}
		if r == -fiEAGAIN {
			break
		}
		if r == -fiEAVAIL {
			c.readErr()
			continue
		}
		c.fail(fiError("fi_cq_read", int(-r), ""))
		break
	}
	// The event queue only reports the connection's end: it is read on
	// every 32nd pass that found no completion, not on each (a poller
	// spinning on a busy link would spend a fair part of its time there).
	if c.eq != nil && total == 0 {
		if c.idle++; c.idle%32 == 1 {
			c.pollEQ()
		}
	}
	if c.byeIn && !c.ackSent {
		c.sendAck()
	}
	return total
}

// sendAck tries once to post the bye-ack (progress calls it until it is
// posted); it bypasses the sticky error the bye set. It waits until every
// earlier operation completed: shm's progress looks at the peer's region
// when a completion comes back, so none may be outstanding once the peer
// frees it on receiving the ack.
func (c *core) sendAck() {
	if c.isGone(c.peer) {
		c.ackSent = true
		return
	}
	if len(c.free) < c.txSlots {
		return
	}
	p := c.fillCtl(2, ctlByeAck, "")
	i := int(c.free[len(c.free)-1])
	r := C.rg_send(c.ep, p, ctlHdr, c.ctlDescFor(), c.peer, c.ctxAt(i))
	switch {
	case r == 0:
		c.free = c.free[:len(c.free)-1]
		c.kind[i] = slotCtl
		c.ackSent = true
	case r != -fiEAGAIN:
		c.ackSent = true // the peer is gone; nothing to acknowledge to
	}
}

func (c *core) handle(e *C.struct_fi_cq_data_entry) {
	i := c.slotOf(e.op_context)
	flags := uint64(e.flags)
	switch {
	case flags&flagRemoteCQ != 0:
		// A write with an immediate landed. Under FI_RX_CQ_DATA it used
		// up one of our receives (op_context names it): post it again.
		c.pending = append(c.pending, uint64(e.data))
		c.imms.Add(1)
		if i >= c.txSlots {
			if err := c.postRecv(i); err != nil {
				c.fail(err)
			}
		}
	case i >= c.txSlots:
		if flags&flagRecv != 0 {
			c.onCtl(i-c.txSlots, int(e.len))
		}
		if err := c.postRecv(i); err != nil {
			c.fail(err)
		}
	case i >= 0:
		c.retire(i)
	}
}

// inUse is the number of transmit slots taken.
func (c *core) inUse() int { return c.txSlots - len(c.free) }

func (c *core) retire(i int) {
	switch c.kind[i] {
	case slotFree:
		return
	case slotFence:
		c.fenced--
		fallthrough
	case slotImm, slotWrite:
		c.inflight--
		c.completions.Add(1)
	}
	c.kind[i] = slotFree
	c.free = append(c.free, int32(i))
}

func (c *core) readErr() {
	var ctx unsafe.Pointer
	var flags C.uint64_t
	var msg [256]C.char
	code := int(C.rg_cq_readerr(c.cq, &ctx, &flags, &msg[0], C.size_t(len(msg))))
	i := c.slotOf(ctx)
	if i >= 0 && i < c.txSlots {
		c.retire(i)
	}
	if code == int(fiECANCELED) {
		return // a receive cancelled by closing
	}
	if i >= c.txSlots && c.err == nil && !c.closed {
		if err := c.postRecv(i); err != nil {
			c.fail(err)
		}
	}
	c.fail(fiError("completion", code, C.GoString(&msg[0])))
}

// eqArgs are pollEQ's out-arguments to rg_eq_read.
type eqArgs struct {
	info  *C.struct_fi_info
	fid   C.fid_t
	iserr C.int
	msg   [256]C.char
}

// pollEQ notices a connected endpoint's shutdown or error. Its C
// arguments live in C memory (eqArgs): Go values passed to C escape to
// the heap, and an idle endpoint polls its event queue now and then.
func (c *core) pollEQ() {
	a := (*eqArgs)(c.eqArgs)
	a.info = nil
	ev := C.rg_eq_read(c.eq, &a.info, &a.fid, &a.iserr, &a.msg[0], C.size_t(len(a.msg)))
	if a.info != nil {
		C.fi_freeinfo(a.info)
	}
	switch {
	case ev == -fiEAGAIN:
	case a.iserr != 0:
		c.fail(fiError("connection event", int(-ev), C.GoString(&a.msg[0])))
	case ev == evShutdown:
		c.fail(fmt.Errorf("libfabric %s: %w (FI_SHUTDOWN)", c.p.name, transport.ErrPeerClosed))
	}
}

func (c *core) onCtl(buf int, n int) {
	b := unsafe.Slice((*byte)(c.ctlBuf(buf)), ctlSize)
	if n < ctlHdr || n > ctlSize || binary.LittleEndian.Uint32(b) != ctlMagic {
		c.p.log.Debug("libfabric: ignoring a foreign message", "len", n)
		return
	}
	typ := binary.LittleEndian.Uint32(b[4:])
	plen := int(binary.LittleEndian.Uint32(b[8:]))
	if plen > n-ctlHdr {
		return
	}
	m := ctlMsg{typ: typ, payload: string(b[ctlHdr : ctlHdr+plen])}
	switch typ {
	case ctlBye:
		c.byeIn = true
		c.fail(fmt.Errorf("libfabric %s: %w", c.p.name, transport.ErrPeerClosed))
		return
	case ctlByeAck:
		c.ackIn = true
		return
	}
	c.ctlIn = append(c.ctlIn, m)
}

// takeCtl removes and returns the first received control message of typ.
func (c *core) takeCtl(typ uint32) (ctlMsg, bool) {
	for i, m := range c.ctlIn {
		if m.typ == typ {
			c.ctlIn = append(c.ctlIn[:i], c.ctlIn[i+1:]...)
			return m, true
		}
	}
	return ctlMsg{}, false
}

// pause releases mu for one backoff step; false when the endpoint was
// closed meanwhile (C memory is gone: touch nothing).
func (c *core) pause(spins int) bool {
	if c.holdLock {
		transport.Backoff(spins)
		return true
	}
	c.mu.Unlock()
	transport.Backoff(spins)
	c.mu.Lock()
	return !c.closed
}

// slot takes a free transmit slot, progressing while there is none (a
// full transmit queue, like -FI_EAGAIN: counted as a retry).
func (c *core) slot(deadline time.Time, data bool) (int, error) {
	if len(c.free) == 0 && data {
		c.retries.Add(1)
	}
	for spins := 0; len(c.free) == 0; spins++ {
		c.progress()
		if err := c.usable(); err != nil {
			return -1, err
		}
		if len(c.free) > 0 {
			break
		}
		if time.Now().After(deadline) {
			return -1, fmt.Errorf("libfabric %s: no transmit completion for %v: %w", c.p.name, c.p.opts.Timeout, transport.ErrTimeout)
		}
		if !c.pause(spins) {
			return -1, transport.ErrClosed
		}
	}
	i := int(c.free[len(c.free)-1])
	c.free = c.free[:len(c.free)-1]
	return i, nil
}

// post posts one transmit into slot i, retrying -FI_EAGAIN (a full
// transmit queue) while progressing, until deadline.
func (c *core) post(i int, kind uint8, dest C.fi_addr_t, deadline time.Time, op func(ctx unsafe.Pointer) C.ssize_t) error {
	counted := false
	for spins := 0; ; spins++ {
		unlock := c.rlock()
		if c.isGone(dest) {
			unlock()
			c.free = append(c.free, int32(i))
			return fmt.Errorf("libfabric %s: %w (its endpoint in this process closed)", c.p.name, transport.ErrPeerClosed)
		}
		r := op(c.ctxAt(i))
		unlock()
		if r == 0 {
			c.kind[i] = kind
			if kind != slotCtl {
				c.inflight++
				c.writes.Add(1)
			}
			if kind == slotFence {
				c.fenced++
			}
			return nil
		}
		if r != -fiEAGAIN {
			c.free = append(c.free, int32(i))
			return fiError("posting a transmit", int(-r), "")
		}
		if kind != slotCtl { // the counters are about data writes
			c.eagains.Add(1)
			if !counted {
				c.retries.Add(1)
				counted = true
			}
		}
		c.progress()
		if err := c.usable(); err != nil {
			if !c.closed {
				c.free = append(c.free, int32(i))
			}
			return err
		}
		if time.Now().After(deadline) {
			c.free = append(c.free, int32(i))
			return fmt.Errorf("libfabric %s: transmit queue full for %v: %w", c.p.name, c.p.opts.Timeout, transport.ErrTimeout)
		}
		if spins >= 8 && !c.pause(spins-8) {
			return transport.ErrClosed
		}
	}
}

// sendCtl sends control message typ from send buffer buf to dest.
func (c *core) sendCtl(buf int, dest C.fi_addr_t, typ uint32, payload string, deadline time.Time) error {
	if len(payload) > ctlSize-ctlHdr {
		return fmt.Errorf("libfabric: control payload of %d bytes", len(payload))
	}
	p := c.fillCtl(buf, typ, payload)
	i, err := c.slot(deadline, false)
	if err != nil {
		return err
	}
	n := C.size_t(ctlHdr + len(payload))
	desc := c.ctlDescFor()
	return c.post(i, slotCtl, dest, deadline, func(ctx unsafe.Pointer) C.ssize_t {
		return C.rg_send(c.ep, p, n, desc, dest, ctx)
	})
}

// fillCtl writes a control message into send buffer buf.
func (c *core) fillCtl(buf int, typ uint32, payload string) unsafe.Pointer {
	p := c.ctlBuf(c.rxDepth + buf)
	b := unsafe.Slice((*byte)(p), ctlSize)
	binary.LittleEndian.PutUint32(b, ctlMagic)
	binary.LittleEndian.PutUint32(b[4:], typ)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[12:], 0)
	copy(b[ctlHdr:], payload)
	return p
}

// write posts an RMA write of src (inside local) to remote at off.
func (c *core) write(src []byte, local transport.Region, remote transport.RemoteRegion, off uint64, imm uint64, withImm bool) error {
	if err := remote.CheckWrite(off, len(src)); err != nil {
		return fmt.Errorf("libfabric %s: %w", c.p.name, err)
	}
	lr, ok := local.(*Region)
	if !ok || lr == nil || lr.p != c.p {
		return fmt.Errorf("libfabric %s: the local region is not registered with this provider", c.p.name)
	}
	if err := c.usable(); err != nil {
		return err
	}
	buf, desc, err := lr.span(src)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(c.p.opts.Timeout)
	kind := uint8(slotWrite)
	var flags C.uint64_t
	switch {
	case withImm:
		kind = slotImm
		if err := c.awaitFenced(deadline); err != nil {
			return err
		}
	case c.p.fence:
		kind = slotFence
		flags = C.uint64_t(flagDelivery)
	}
	i, err := c.slot(deadline, true)
	if err != nil {
		return err
	}
	n := C.size_t(len(src))
	addr := C.uint64_t(remote.Addr + off)
	key := C.uint64_t(remote.Key)
	wd := C.int(0)
	if withImm {
		wd = 1
	}
	return c.post(i, kind, c.peer, deadline, func(ctx unsafe.Pointer) C.ssize_t {
		return C.rg_write(c.ep, buf, n, desc, C.uint64_t(imm), wd, c.peer, addr, key, ctx, flags)
	})
}

// awaitFenced waits until the fenced Writes posted so far were delivered:
// without write-after-write ordering, earlier Writes must be delivered
// before an immediate can vouch for them.
func (c *core) awaitFenced(deadline time.Time) error {
	if c.fenced == 0 {
		return nil
	}
	c.fences.Add(1)
	for spins := 0; c.fenced > 0; spins++ {
		c.progress()
		if err := c.usable(); err != nil {
			return err
		}
		if c.fenced == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("libfabric %s: fence: earlier writes not delivered within %v: %w", c.p.name, c.p.opts.Timeout, transport.ErrTimeout)
		}
		if !c.pause(spins) {
			return transport.ErrClosed
		}
	}
	return nil
}

// destroy closes the endpoint and its queues and frees its C memory.
func (c *core) destroy() error {
	if c.name != "" {
		shmPeers.Lock()
		defer shmPeers.Unlock()
		return c.destroyRDM()
	}
	return c.closeAll()
}

// closeAll closes the C objects (for RDM: under shmPeers' write lock).
func (c *core) closeAll() error {
	var errs []error
	closeFid := func(what string, f *C.struct_fid) {
		if r := C.rg_close(f); r != 0 {
			errs = append(errs, fiError("closing the "+what, int(-r), ""))
		}
	}
	if c.ep != nil {
		closeFid("endpoint", C.rg_ep_fid(c.ep))
		live.endpoints.Add(-1)
	}
	closeFid("completion queue", C.rg_cq_fid(c.cq))
	closeFid("event queue", C.rg_eq_fid(c.eq))
	closeFid("address vector", C.rg_av_fid(c.av))
	if c.ctlMR != nil {
		c.p.mu.Lock()
		closeFid("control buffer registration", C.rg_mr_fid(c.ctlMR))
		c.p.mu.Unlock()
		live.registrations.Add(-1)
	}
	C.free(c.ctx)
	C.free(c.ents)
	C.free(c.ctlMem)
	C.free(c.eqArgs)
	C.free(c.gatherMem)
	c.ep, c.cq, c.eq, c.av, c.ctlMR = nil, nil, nil, nil, nil
	c.ctx, c.ents, c.ctlMem, c.eqArgs, c.gatherMem = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}
