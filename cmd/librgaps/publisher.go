package main

/*
#include "capi.h"
*/
import "C"

import (
	"errors"
	"math"
	"runtime/cgo"
	"unsafe"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// maxMessage is the largest pool the engine makes (RGAPS_POOL_SIZE at most
// 1 TiB): anything larger cannot be published.
const maxMessage = 1 << 40

// pubState is the Go side of a publisher handle.
type pubState struct {
	life lifetime
	pub  *rgaps.Publisher
	gpu  bool
}

func pubKey(p *C.struct_rgaps_publisher) uintptr { return uintptr(unsafe.Pointer(p)) }

func lookupPub(p *C.struct_rgaps_publisher) (*pubState, error) {
	v, ok := pubs.lookup(pubKey(p), func() uintptr { return uintptr(p.handle) })
	if !ok {
		return nil, errorf(codeBadHandle, "%s", badHandle("publisher", pubKey(p)))
	}
	return v.(*pubState), nil
}

func badHandle(kind string, key uintptr) string {
	if key == 0 {
		return kind + " handle is NULL"
	}
	return kind + " handle is not a live " + kind + " (destroyed, or not from init)"
}

//export rgapsgo_publisher_init
func rgapsgo_publisher_init(p *C.struct_rgaps_publisher, topic *C.char, memory C.int) (rc C.int) {
	defer recoverTo(&rc)
	node, full, gpu, q, err := endpointSetup(topic, memory)
	if err != nil {
		return report(err)
	}
	var opts []rgaps.EndpointOption
	if gpu {
		opts = append(opts, rgaps.OnGPU())
	}
	pub, err := node.NewPublisher(full, msgType, q, opts...)
	if err != nil {
		release()
		return report(err)
	}
	p.handle = C.uintptr_t(cgo.NewHandle(&pubState{pub: pub, gpu: gpu}))
	p.memory = memHost
	if gpu {
		p.memory = memGPU
	}
	pubs.add(pubKey(p))
	return codeOK
}

//export rgapsgo_publisher_push
func rgapsgo_publisher_push(p *C.struct_rgaps_publisher, size C.size_t, src unsafe.Pointer) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupPub(p)
	if err != nil {
		return report(err)
	}
	if size == 0 {
		return report(errorf(codeInval, "message_size is 0"))
	}
	if src == nil {
		return report(errorf(codeInval, "payload pointer is NULL"))
	}
	if uint64(size) > maxMessage {
		return report(errorf(codeTooLarge, "message of %d bytes (pools hold at most %d)", uint64(size), uint64(maxMessage)))
	}
	if err := st.life.enter(); err != nil {
		return report(err)
	}
	defer st.life.exit()
	n := int(size)
	if st.gpu {
		return report(st.pub.PublishFrom(rgaps.DevicePtr(uintptr(src)), n))
	}
	if a := uintptr(src); a < 4096 || a+uintptr(n) < a {
		return report(errorf(codeFault, "payload: cannot read %d bytes at %#x", n, a))
	}
	return report(pushHost(st.pub, src, n))
}

// pushHost copies n bytes at host address src into a loan and publishes
// it. The copy is guarded: an unreadable src is RGAPS_EFAULT, and the loan
// goes back to the pool.
func pushHost(pub *rgaps.Publisher, src unsafe.Pointer, n int) error {
	l, err := pub.Loan(n)
	if err != nil {
		if errors.Is(err, rgaps.ErrPoolExhausted) && pub.QoS().Reliability == qos.ReliabilityBestEffort {
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
	guarded("payload", func() {
		copy(l.Bytes(), unsafe.Slice((*byte)(src), n))
	})
	ok = true
	return l.Publish()
}

//export rgapsgo_publisher_matched
func rgapsgo_publisher_matched(p *C.struct_rgaps_publisher) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupPub(p)
	if err != nil {
		return report(err)
	}
	if err := st.life.enter(); err != nil {
		return report(err)
	}
	defer st.life.exit()
	return C.int(min(st.pub.Matched(), math.MaxInt32))
}

//export rgapsgo_publisher_memory
func rgapsgo_publisher_memory(p *C.struct_rgaps_publisher) (rc C.int) {
	defer recoverTo(&rc)
	st, err := lookupPub(p)
	if err != nil {
		return report(err)
	}
	if st.gpu {
		return memGPU
	}
	return memHost
}

//export rgapsgo_publisher_destroy
func rgapsgo_publisher_destroy(p *C.struct_rgaps_publisher, removed *C.int) (rc C.int) {
	defer recoverTo(&rc)
	v, ok := pubs.remove(pubKey(p), func() uintptr { return uintptr(p.handle) })
	if !ok {
		return report(errorf(codeBadHandle, "%s", badHandle("publisher", pubKey(p))))
	}
	*removed = 1 // C frees the struct, whatever closing reports
	st := v.(*pubState)
	err := st.life.close(st.pub.Close) // after the pushes in flight
	if rerr := release(); err == nil {
		err = rerr
	}
	return report(err)
}
