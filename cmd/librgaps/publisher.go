package main

/*
#include "capi.h"
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/cabi"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// maxMessage is the largest pool the engine makes (RGAPS_POOL_SIZE at most
// 1 TiB): anything larger cannot be published.
const maxMessage = 1 << 40

// pubState is the Go side of a publisher handle.
type pubState struct {
	endpoint
	pub *zerocopy.Publisher
}

//export rgapsgo_publisher_init
func rgapsgo_publisher_init(p *C.struct_rgaps_handle, topic *C.char, memory C.int) (rc C.int) {
	defer recoverTo(&rc)
	return pubs.open(p, topic, memory, func(e endpointSpec) (*pubState, error) {
		pub, err := e.node.NewPublisher(e.topic, msgType, e.qos, e.opts()...)
		if err != nil {
			return nil, err
		}
		return &pubState{pub: pub}, nil
	})
}

//export rgapsgo_publisher_push
func rgapsgo_publisher_push(p *C.struct_rgaps_handle, size C.size_t, src unsafe.Pointer) (rc C.int) {
	defer recoverTo(&rc)
	st, err := pubs.lookup(p)
	if err != nil {
		return report(err)
	}
	if size == 0 {
		return report(errorf(cabi.Invalid, "message_size is 0"))
	}
	if src == nil {
		return report(errorf(cabi.Invalid, "payload pointer is NULL"))
	}
	if uint64(size) > maxMessage {
		return report(errorf(cabi.TooLarge, "message of %d bytes (pools hold at most %d)", uint64(size), uint64(maxMessage)))
	}
	if err := st.life.enter(); err != nil {
		return report(err)
	}
	defer st.life.exit()
	n := int(size)
	if st.gpu {
		return report(st.pub.PublishFrom(zerocopy.DevicePtr(uintptr(src)), n))
	}
	if a := uintptr(src); a < 4096 || a+uintptr(n) < a {
		return report(errorf(cabi.Fault, "payload: cannot read %d bytes at %#x", n, a))
	}
	return report(pushHost(st.pub, src, n))
}

// pushHost copies n bytes at host address src into a loan and publishes
// it. The copy is guarded: an unreadable src is RGAPS_EFAULT, and the loan
// goes back to the pool.
func pushHost(pub *zerocopy.Publisher, src unsafe.Pointer, n int) error {
	l, err := pub.Loan(n)
	if err != nil {
		if errors.Is(err, zerocopy.ErrPoolExhausted) && pub.QoS().Reliability == qos.ReliabilityBestEffort {
			return nil // best effort: a full pool drops the message (counted)
		}
		return err
	}
	ok := false
	defer func() {
		if !ok {
			l.Discard()
		}
	}()
	cabi.Guarded("payload", func() {
		copy(l.Bytes(), unsafe.Slice((*byte)(src), n))
	})
	ok = true
	return l.Publish()
}

//export rgapsgo_publisher_matched
func rgapsgo_publisher_matched(p *C.struct_rgaps_handle) (rc C.int) {
	defer recoverTo(&rc)
	return pubs.matched(p, func(st *pubState) int { return st.pub.Matched() })
}

//export rgapsgo_publisher_memory
func rgapsgo_publisher_memory(p *C.struct_rgaps_handle) (rc C.int) {
	defer recoverTo(&rc)
	return pubs.memory(p)
}

//export rgapsgo_publisher_destroy
func rgapsgo_publisher_destroy(p *C.struct_rgaps_handle, removed *C.int) (rc C.int) {
	defer recoverTo(&rc)
	// Closing waits for the pushes in flight.
	return pubs.destroy(p, removed, func(st *pubState) error { return st.pub.Close() })
}
