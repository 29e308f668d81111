package main

/*
#include "rmw_impl.h"
*/
import "C"

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// The Go half of GPU-loaned messages (rgaps/gpu.h, rmw_gpu.c): device loans
// of publishers, and the views a device subscription keeps for the tickets
// it leaves in its messages (docs/ARCHITECTURE.md §3.12).

// unclaimedViews bounds the views a subscription keeps for tickets nobody
// claimed (a callback that ignores them, a message dropped by the
// executor): beyond it, or beyond the subscription's KEEP_LAST depth if
// smaller, the oldest is released, so unclaimed tickets never hold more
// blocks than the queue could.
const unclaimedViews = 64

// blockIDs names loans and views: unique in the process, so that an id
// handed to another endpoint than its own is refused, never another's.
var blockIDs atomic.Uint64

// ticketMagic starts a ticket (RGAPS_GPU_TICKET_SIZE bytes): magic, view
// id, size, id ^ the subscription's secret (a check that the bytes are a
// ticket of this subscription and not data that looks like one).
var ticketMagic = [8]byte{'R', 'G', 'A', 'P', 'S', 'T', 'K', '1'}

const ticketSize = 32

// loanFlags are the flags and device ordinal of a block: the device when
// it is device memory, -1 for host memory.
func loanFlags(d *zerocopy.Domain, onDevice bool) (C.uint32_t, C.int32_t) {
	if onDevice {
		return C.RGAPS_GPU_ON_DEVICE, C.int32_t(d.Config().Device)
	}
	return 0, -1
}

// ---- publishers ---------------------------------------------------------------

// deviceLoan lends size bytes the device can write: a block of the topic's
// GPU pool, or on a host topic a host block through its mapped device
// address; host memory (onDevice false) when this process has no GPU.
func (p *publisher) deviceLoan(size int) (l *zerocopy.Loan, ptr uintptr, onDevice bool, err error) {
	l, err = p.p.LoanDevice(size)
	if errors.Is(err, zerocopy.ErrNotSupported) {
		if l, err = p.p.Loan(size); err != nil {
			return nil, 0, false, err
		}
		return l, uintptr(unsafe.Pointer(&l.Bytes()[0])), false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	dp, err := l.DevicePtr()
	if err != nil {
		l.Discard()
		return nil, 0, false, fmt.Errorf("mapping the loan: %w", err)
	}
	return l, uintptr(dp), true, nil
}

func (p *publisher) putDevLoan(l *zerocopy.Loan) uint64 {
	id := blockIDs.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.devLoans[id] = l
	return id
}

// takeDevLoan takes device loan id out of publisher h's table: the loan,
// or nil and the code to return.
func takeDevLoan(h C.uintptr_t, id C.uint64_t) (*zerocopy.Loan, C.int) {
	p := get[*publisher](h)
	if p == nil {
		return nil, fail(retError, "publisher destroyed")
	}
	p.mu.Lock()
	l := p.devLoans[uint64(id)]
	delete(p.devLoans, uint64(id))
	p.mu.Unlock()
	if l == nil {
		return nil, fail(retInvalid, "not a loan of this publisher (published or discarded already?)")
	}
	return l, retOK
}

//export rgapsgo_gpu_borrow
func rgapsgo_gpu_borrow(h C.uintptr_t, size C.uint64_t, loan *C.rgaps_gpu_loan_v1) (rc C.int) {
	defer recoverTo(&rc)
	p := get[*publisher](h)
	if p == nil {
		return fail(retError, "publisher destroyed")
	}
	if size == 0 || uint64(size) > math.MaxInt64 {
		return fail(retInvalid, "a device loan of %d bytes", uint64(size))
	}
	l, ptr, onDevice, err := p.deviceLoan(int(size))
	if err != nil {
		if errors.Is(err, zerocopy.ErrPoolExhausted) || errors.Is(err, zerocopy.ErrTooLarge) {
			return fail(retBadAlloc, "loaning %d bytes on %s: %v", uint64(size), p.p.Topic().Name(), err)
		}
		return report("loaning device memory", err)
	}
	*(*uintptr)(unsafe.Pointer(&loan.ptr)) = ptr // a device address or shared memory, never Go memory
	loan.size = size
	loan.flags, loan.device = loanFlags(p.d, onDevice)
	loan.id = C.uint64_t(p.putDevLoan(l))
	return retOK
}

//export rgapsgo_gpu_publish
func rgapsgo_gpu_publish(h C.uintptr_t, id C.uint64_t, meta *C.uint8_t, metaLen C.size_t, stream C.uintptr_t, syncAll C.int) (rc C.int) {
	defer recoverTo(&rc)
	l, rc := takeDevLoan(h, id)
	if l == nil {
		return rc
	}
	if err := l.SetMeta(unsafe.Slice((*byte)(unsafe.Pointer(meta)), int(metaLen))); err != nil {
		l.Discard()
		return report("attaching the message's fields", err)
	}
	if syncAll == 0 {
		l.WritesOn(uintptr(stream))
	}
	return report("publishing", l.Publish())
}

//export rgapsgo_gpu_discard
func rgapsgo_gpu_discard(h C.uintptr_t, id C.uint64_t) (rc C.int) {
	defer recoverTo(&rc)
	l, rc := takeDevLoan(h, id)
	if l == nil {
		return rc
	}
	return report("returning the loan", l.Discard())
}

// ---- device subscriptions --------------------------------------------------------

// view is a taken sample a device subscription keeps for a ticket.
type view struct {
	smp     *zerocopy.Sample
	ptr     uintptr
	size    uint64
	dev     bool
	claimed bool
}

// views are a device subscription's kept samples, by id.
type views struct {
	mu        sync.Mutex
	secret    uint64
	most      int // unclaimed views kept at most
	m         map[uint64]*view
	unclaimed []uint64 // ids of unclaimed views in take order
}

// newViews makes the view table of a subscription with KEEP_LAST depth
// (0: KEEP_ALL).
func newViews(depth int) *views {
	var b [8]byte
	rand.Read(b[:])
	most := unclaimedViews
	if depth > 0 && depth < most {
		most = depth
	}
	return &views{secret: binary.LittleEndian.Uint64(b[:]), most: most, m: map[uint64]*view{}}
}

// keep holds smp for a view of size bytes at off in its payload and
// writes the ticket. The oldest unclaimed views beyond the table's bound
// (most) are released.
func (vs *views) keep(smp *zerocopy.Sample, off, size uint64, ticket []byte) (err error) {
	v := &view{smp: smp, size: size}
	if dp, derr := smp.DevicePtr(); derr == nil {
		v.ptr, v.dev = uintptr(dp)+uintptr(off), true
	} else if b := smp.Bytes(); off+size <= uint64(len(b)) && len(b) > 0 {
		v.ptr = uintptr(unsafe.Pointer(&b[0])) + uintptr(off)
	} else {
		return fmt.Errorf("the message's block is in device memory and this process has no GPU: %w", derr)
	}
	id := blockIDs.Add(1)
	vs.mu.Lock()
	vs.m[id] = v
	vs.unclaimed = append(vs.unclaimed, id)
	var expired []*zerocopy.Sample
	for len(vs.unclaimed) > vs.most {
		old := vs.unclaimed[0]
		vs.unclaimed = vs.unclaimed[1:]
		expired = append(expired, vs.m[old].smp)
		delete(vs.m, old)
	}
	vs.mu.Unlock()
	for _, s := range expired {
		s.Return()
	}
	copy(ticket[0:8], ticketMagic[:])
	binary.LittleEndian.PutUint64(ticket[8:], id)
	binary.LittleEndian.PutUint64(ticket[16:], size)
	binary.LittleEndian.PutUint64(ticket[24:], id^vs.secret)
	return nil
}

// claim marks the view of a ticket claimed.
func (vs *views) claim(ticket []byte) (uint64, *view, error) {
	if len(ticket) != ticketSize || [8]byte(ticket[0:8]) != ticketMagic {
		return 0, nil, fmt.Errorf("%w: not a ticket (%d bytes; a device subscription's message holds one in its device field)", zerocopy.ErrInvalid, len(ticket))
	}
	id := binary.LittleEndian.Uint64(ticket[8:])
	if binary.LittleEndian.Uint64(ticket[24:]) != id^vs.secret {
		return 0, nil, fmt.Errorf("%w: the ticket is not one of this subscription's", zerocopy.ErrInvalid)
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.m[id]
	switch {
	case v == nil:
		return 0, nil, fmt.Errorf("ticket %d expired: %d newer messages were taken and not claimed since, or its subscription was destroyed", id, vs.most)
	case v.claimed:
		return 0, nil, fmt.Errorf("%w: ticket %d was claimed already", zerocopy.ErrInvalid, id)
	}
	v.claimed = true
	vs.unclaimed = slices.DeleteFunc(vs.unclaimed, func(x uint64) bool { return x == id })
	return id, v, nil
}

// release gives a claimed view's sample back.
func (vs *views) release(id uint64) error {
	vs.mu.Lock()
	v := vs.m[id]
	if v != nil && v.claimed {
		delete(vs.m, id)
	}
	vs.mu.Unlock()
	if v == nil || !v.claimed {
		return fmt.Errorf("%w: view %d is not claimed by this subscription (released already?)", zerocopy.ErrInvalid, id)
	}
	return v.smp.Return()
}

// close releases every view (the subscription is being destroyed).
func (vs *views) close() {
	vs.mu.Lock()
	m := vs.m
	vs.m, vs.unclaimed = map[uint64]*view{}, nil
	vs.mu.Unlock()
	for _, v := range m {
		v.smp.Return()
	}
}

//export rgapsgo_sub_set_device
func rgapsgo_sub_set_device(h C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	s := get[*subscription](h)
	if s == nil {
		return fail(retError, "subscription destroyed")
	}
	if err := s.s.SetMemory(zerocopy.MemoryGPU); err != nil && !errors.Is(err, zerocopy.ErrNotSupported) {
		return report("making the subscription a device subscription", err)
	}
	return retOK
}

// rgapsgo_sub_keep_view holds the taken sample smp (rgapsgo_sub_take's
// handle, which it consumes) for a view of size bytes at off in its payload,
// and writes the ticket (ticketSize bytes).
//
//export rgapsgo_sub_keep_view
func rgapsgo_sub_keep_view(h, smph C.uintptr_t, off, size C.uint64_t, ticket *C.uint8_t) (rc C.int) {
	defer recoverTo(&rc)
	s := get[*subscription](h)
	smp := get[*zerocopy.Sample](smph)
	if s == nil || smp == nil {
		return fail(retError, "subscription destroyed or sample returned")
	}
	drop(smph)
	if err := s.views.keep(smp, uint64(off), uint64(size), unsafe.Slice((*byte)(unsafe.Pointer(ticket)), ticketSize)); err != nil {
		smp.Return()
		return report("keeping the message's block", err)
	}
	return retOK
}

//export rgapsgo_sub_claim
func rgapsgo_sub_claim(h C.uintptr_t, ticket *C.uint8_t, n C.size_t, out *C.rgaps_gpu_view_v1) (rc C.int) {
	defer recoverTo(&rc)
	s := get[*subscription](h)
	if s == nil {
		return fail(retError, "subscription destroyed")
	}
	id, v, err := s.views.claim(unsafe.Slice((*byte)(unsafe.Pointer(ticket)), int(n)))
	if err != nil {
		return report("claiming the view", err)
	}
	*(*uintptr)(unsafe.Pointer(&out.ptr)) = v.ptr // a device address or shared memory, never Go memory
	out.size = C.uint64_t(v.size)
	out.flags, out.device = loanFlags(s.d, v.dev)
	out.id = C.uint64_t(id)
	return retOK
}

//export rgapsgo_sub_release
func rgapsgo_sub_release(h C.uintptr_t, id C.uint64_t) (rc C.int) {
	defer recoverTo(&rc)
	s := get[*subscription](h)
	if s == nil {
		return fail(retError, "subscription destroyed")
	}
	return report("releasing the view", s.views.release(uint64(id)))
}
