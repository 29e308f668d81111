package main

/*
#include "capi.h"
*/
import "C"

import (
	"errors"
	"math"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
)

// pollSlice bounds one kernel wait of a pull, so that a destroy from
// another thread is noticed promptly; a message wakes the wait at once.
const pollSlice = 100 * time.Millisecond

// subState is the Go side of a subscriber handle.
type subState struct {
	life    lifetime
	sub     *rgaps.Subscription
	gpu     bool
	timeout atomic.Int64 // ms; < 0: for ever
	closing atomic.Bool  // destroy has begun

	mu     sync.Mutex    // serialises pull, release and info (cur)
	cur    *rgaps.Sample // the message held since the last pull, or nil
	curPtr uintptr       // its payload's address (host or device)
}

func subKey(s *C.struct_rgaps_subscriber) uintptr { return uintptr(unsafe.Pointer(s)) }

func lookupSub(s *C.struct_rgaps_subscriber) (*subState, error) {
	v, ok := subs.lookup(subKey(s), func() uintptr { return uintptr(s.handle) })
	if !ok {
		return nil, errorf(codeBadHandle, "%s", badHandle("subscriber", subKey(s)))
	}
	return v.(*subState), nil
}

// dropLocked gives the held message back. Must hold st.mu.
func (st *subState) dropLocked() error {
	if st.cur == nil {
		return nil
	}
	err := st.cur.Return()
	st.cur, st.curPtr = nil, 0
	return err
}

// holdLocked makes smp the held message and returns its payload address.
func (st *subState) holdLocked(smp *rgaps.Sample) (uintptr, error) {
	var addr uintptr
	if st.gpu {
		p, err := smp.DevicePtr()
		if err != nil {
			smp.Return()
			return 0, err
		}
		addr = uintptr(p)
	} else {
		b := smp.Bytes()
		if len(b) == 0 {
			smp.Return()
			return 0, errorf(codeInternal, "a host subscriber received a message without host bytes")
		}
		// The pool is a shared-memory mapping, not Go memory: C may keep
		// this address for as long as the sample is held.
		addr = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	}
	st.cur, st.curPtr = smp, addr
	return addr, nil
}

func (st *subState) pull() (uintptr, error) {
	if err := st.life.enter(); err != nil {
		return 0, err
	}
	defer st.life.exit()
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.dropLocked(); err != nil {
		return 0, err
	}
	timeout := st.timeout.Load()
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	for {
		if st.closing.Load() {
			return 0, errorf(codeClosed, "subscriber destroyed during subscriber_pull")
		}
		smp, err := st.sub.Take()
		if err == nil {
			return st.holdLocked(smp)
		}
		if !errors.Is(err, rgaps.ErrNoData) {
			return 0, err
		}
		wait := pollSlice
		switch {
		case timeout == 0:
			return 0, errorf(codeTimedOut, "no message queued (timeout 0)")
		case timeout > 0:
			left := time.Until(deadline)
			if left <= 0 {
				return 0, errorf(codeTimedOut, "no message within %d ms", timeout)
			}
			wait = min(wait, left)
		}
		if err := st.sub.Wait(wait); err != nil && !errors.Is(err, rgaps.ErrTimeout) {
			return 0, err
		}
	}
}

//export rgapsgo_subscriber_init
func rgapsgo_subscriber_init(s *C.struct_rgaps_subscriber, topic *C.char, memory C.int) (rc C.int) {
	defer recoverTo(&rc)
	node, full, gpu, q, err := endpointSetup(topic, memory)
	if err != nil {
		return report(err)
	}
	var opts []rgaps.EndpointOption
	if gpu {
		opts = append(opts, rgaps.OnGPU())
	}
	sub, err := node.NewSubscription(full, msgType, q, opts...)
	if err != nil {
		release()
		return report(err)
	}
	st := &subState{sub: sub, gpu: gpu}
	st.timeout.Store(-1)
	s.handle = C.uintptr_t(cgo.NewHandle(st))
	s.memory = memHost
	if gpu {
		s.memory = memGPU
	}
	subs.add(subKey(s))
	return codeOK
}

//export rgapsgo_subscriber_set_timeout
func rgapsgo_subscriber_set_timeout(s *C.struct_rgaps_subscriber, ms C.int64_t) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupSub(s)
	if err != nil {
		return report(err)
	}
	v := int64(ms)
	if v < 0 {
		v = -1
	}
	st.timeout.Store(min(v, math.MaxInt64/int64(time.Millisecond)))
	return codeOK
}

//export rgapsgo_subscriber_pull
func rgapsgo_subscriber_pull(s *C.struct_rgaps_subscriber, out *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupSub(s)
	if err != nil {
		return report(err)
	}
	addr, err := st.pull()
	if err != nil {
		return report(err)
	}
	*out = C.uintptr_t(addr)
	return codeOK
}

//export rgapsgo_subscriber_info
func rgapsgo_subscriber_info(s *C.struct_rgaps_subscriber, info *C.rgaps_message_info_t) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupSub(s)
	if err != nil {
		return report(err)
	}
	if err := st.life.enter(); err != nil {
		return report(err)
	}
	defer st.life.exit()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.cur == nil {
		return report(errorf(codeNoMsg, "the subscriber holds no message (pull first)"))
	}
	mi := st.cur.Info()
	info.size = C.size_t(st.cur.Size())
	info.sequence = C.uint64_t(mi.Sequence)
	info.source_timestamp_ns = C.int64_t(mi.SourceTimestamp.UnixNano())
	info.received_timestamp_ns = C.int64_t(mi.ReceivedTimestamp.UnixNano())
	info.memory = memHost
	if st.gpu {
		info.memory = memGPU
	}
	for i, b := range mi.Publisher {
		info.publisher_gid[i] = C.uint8_t(b)
	}
	return codeOK
}

//export rgapsgo_subscriber_release
func rgapsgo_subscriber_release(s *C.struct_rgaps_subscriber) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupSub(s)
	if err != nil {
		return report(err)
	}
	if err := st.life.enter(); err != nil {
		return report(err)
	}
	defer st.life.exit()
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.cur == nil {
		return report(errorf(codeNoMsg, "the subscriber holds no message"))
	}
	return report(st.dropLocked())
}

//export rgapsgo_subscriber_matched
func rgapsgo_subscriber_matched(s *C.struct_rgaps_subscriber) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupSub(s)
	if err != nil {
		return report(err)
	}
	if err := st.life.enter(); err != nil {
		return report(err)
	}
	defer st.life.exit()
	return C.int(min(st.sub.Matched(), math.MaxInt32))
}

//export rgapsgo_subscriber_memory
func rgapsgo_subscriber_memory(s *C.struct_rgaps_subscriber) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupSub(s)
	if err != nil {
		return report(err)
	}
	if st.gpu {
		return memGPU
	}
	return memHost
}

//export rgapsgo_subscriber_destroy
func rgapsgo_subscriber_destroy(s *C.struct_rgaps_subscriber, removed *C.int) (rc C.int) {
	defer recoverTo(&rc)
	v, ok := subs.remove(subKey(s), func() uintptr { return uintptr(s.handle) })
	if !ok {
		return report(errorf(codeBadHandle, "%s", badHandle("subscriber", subKey(s))))
	}
	*removed = 1 // C frees the struct, whatever closing reports
	st := v.(*subState)
	st.closing.Store(true) // a pull in another thread gives up within pollSlice
	err := st.life.close(func() error {
		st.mu.Lock()
		defer st.mu.Unlock()
		err := st.dropLocked()
		if cerr := st.sub.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if rerr := release(); err == nil {
		err = rerr
	}
	return report(err)
}
