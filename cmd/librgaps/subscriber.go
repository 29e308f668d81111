package main

/*
#include "capi.h"
*/
import "C"

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/cabi"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// pollSlice bounds one kernel wait of a pull, so that a destroy from
// another thread is noticed promptly; a message wakes the wait at once.
const pollSlice = 100 * time.Millisecond

// subState is the Go side of a subscriber handle.
type subState struct {
	endpoint
	sub     *zerocopy.Subscription
	timeout atomic.Int64 // ms; < 0: for ever

	mu     sync.Mutex       // serialises pull, release and info (cur)
	cur    *zerocopy.Sample // the message held since the last pull, or nil
	curPtr uintptr          // its payload's address (host or device)
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
func (st *subState) holdLocked(smp *zerocopy.Sample) (uintptr, error) {
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
			return 0, errorf(cabi.Internal, "a host subscriber received a message without host bytes")
		}
		// The pool is a shared-memory mapping, not Go memory: C may keep
		// this address for as long as the sample is held.
		addr = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	}
	st.cur, st.curPtr = smp, addr
	return addr, nil
}

// pull is subscriber_pull, as a call in flight (see registry.call).
func (st *subState) pull() (uintptr, error) {
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
		if st.life.closing.Load() { // destroy has begun
			return 0, errorf(cabi.Closed, "subscriber destroyed during subscriber_pull")
		}
		smp, err := st.sub.Take()
		if err == nil {
			return st.holdLocked(smp)
		}
		if !errors.Is(err, zerocopy.ErrNoData) {
			return 0, err
		}
		wait := pollSlice
		switch {
		case timeout == 0:
			return 0, errorf(cabi.Timeout, "no message queued (timeout 0)")
		case timeout > 0:
			left := time.Until(deadline)
			if left <= 0 {
				return 0, errorf(cabi.Timeout, "no message within %d ms", timeout)
			}
			wait = min(wait, left)
		}
		if err := st.sub.Wait(wait); err != nil && !errors.Is(err, zerocopy.ErrTimeout) {
			return 0, err
		}
	}
}

//export rgapsgo_subscriber_init
func rgapsgo_subscriber_init(s *C.struct_rgaps_handle, topic *C.char, memory C.int) (rc C.int) {
	defer recoverTo(&rc)
	return subs.open(s, topic, memory, func(e endpointSpec) (*subState, error) {
		sub, err := e.node.NewSubscription(e.topic, msgType, e.qos, e.opts()...)
		if err != nil {
			return nil, err
		}
		st := &subState{sub: sub}
		st.timeout.Store(-1)
		return st, nil
	})
}

//export rgapsgo_subscriber_set_timeout
func rgapsgo_subscriber_set_timeout(s *C.struct_rgaps_handle, ms C.int64_t) (rc C.int) {
	defer recoverTo(&rc)
	st, err := subs.lookup(s)
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
func rgapsgo_subscriber_pull(s *C.struct_rgaps_handle, out *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	return subs.call(s, func(st *subState) C.int {
		addr, err := st.pull()
		if err != nil {
			return report(err)
		}
		*out = C.uintptr_t(addr)
		return codeOK
	})
}

// callHeld is subs.call for what needs the held message: fn runs under
// st.mu, and only when the subscriber holds one (else RGAPS_ENOMSG, with
// the message none).
func callHeld(s *C.struct_rgaps_handle, none string, fn func(st *subState) C.int) C.int {
	return subs.call(s, func(st *subState) C.int {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.cur == nil {
			return report(errorf(cabi.NoMessage, "%s", none))
		}
		return fn(st)
	})
}

//export rgapsgo_subscriber_info
func rgapsgo_subscriber_info(s *C.struct_rgaps_handle, info *C.rgaps_message_info_t) (rc C.int) {
	defer recoverTo(&rc)
	return callHeld(s, "the subscriber holds no message (pull first)", func(st *subState) C.int {
		mi := st.cur.Info()
		info.size = C.size_t(st.cur.Size())
		info.sequence = C.uint64_t(mi.Sequence)
		info.source_timestamp_ns = C.int64_t(mi.SourceTimestamp.UnixNano())
		info.received_timestamp_ns = C.int64_t(mi.ReceivedTimestamp.UnixNano())
		info.memory = st.memory()
		for i, b := range mi.Publisher {
			info.publisher_gid[i] = C.uint8_t(b)
		}
		return codeOK
	})
}

//export rgapsgo_subscriber_release
func rgapsgo_subscriber_release(s *C.struct_rgaps_handle) (rc C.int) {
	defer recoverTo(&rc)
	return callHeld(s, "the subscriber holds no message", func(st *subState) C.int {
		return report(st.dropLocked())
	})
}

//export rgapsgo_subscriber_matched
func rgapsgo_subscriber_matched(s *C.struct_rgaps_handle) (rc C.int) {
	defer recoverTo(&rc)
	return subs.matched(s, func(st *subState) int { return st.sub.Matched() })
}

//export rgapsgo_subscriber_memory
func rgapsgo_subscriber_memory(s *C.struct_rgaps_handle) (rc C.int) {
	defer recoverTo(&rc)
	return subs.memory(s)
}

//export rgapsgo_subscriber_destroy
func rgapsgo_subscriber_destroy(s *C.struct_rgaps_handle, removed *C.int) (rc C.int) {
	defer recoverTo(&rc)
	// A pull in another thread gives up within pollSlice (see
	// lifetime.closing), then closing drops the held message.
	return subs.destroy(s, removed, func(st *subState) error {
		st.mu.Lock()
		defer st.mu.Unlock()
		err := st.dropLocked()
		if cerr := st.sub.Close(); err == nil {
			err = cerr
		}
		return err
	})
}
