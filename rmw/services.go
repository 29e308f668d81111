package main

/*
#include "rmw_impl.h"
*/
import "C"

import (
	"errors"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// A service is a pair of topics (the engine has none): requests on
// reqPrefix+service, responses on respPrefix+service. Each payload starts
// with the request id, 16 bytes of the client's GID (its request
// publisher's) and the client's int64 sequence number; a client takes only
// the responses that carry its GID. rmw_service.c writes and reads the ids; this
// file creates and destroys the endpoint pairs.

// endpointPair is a client's or a service's publisher and subscription.
type endpointPair struct {
	pub *publisher
	sub *subscription
}

func (e *endpointPair) close() error {
	return errors.Join(e.pub.Close(), e.sub.Close())
}

func newPair(nd *node, service, reqType, respType string, pubTopic, subTopic string, pubType, subType string,
	pubHash, subHash zerocopy.TypeHash, pubQoS, subQoS *C.rmw_qos_profile_t) (*endpointPair, error) {
	pub, err := newPublisher(nd, pubTopic, pubType, pubHash, pubQoS, false)
	if err != nil {
		return nil, err
	}
	sub, err := newSubscription(nd, subTopic, subType, subHash, subQoS, false, false)
	if err != nil {
		pub.Close()
		return nil, err
	}
	return &endpointPair{pub: pub, sub: sub}, nil
}

// rgapsgo_service_pair creates a client's (client != 0) or a service's
// endpoints. reqQoS and respQoS both start as the QoS asked for and come
// back as the actual QoS of the request and response endpoints.
//
//export rgapsgo_service_pair
func rgapsgo_service_pair(nodeh C.uintptr_t, client C.int, service, reqType, respType *C.char, reqHash, respHash *C.uint8_t,
	reqQoS, respQoS *C.rmw_qos_profile_t, gid *C.uint8_t, out, pub, sub *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	nd := get[*node](nodeh)
	if nd == nil {
		return fail(retError, "node destroyed")
	}
	name := C.GoString(service)
	full, err := checkedName(name, bool(reqQoS.avoid_ros_namespace_conventions))
	if err != nil {
		return fail(retInvalid, "service name: %v", err)
	}
	rq, rs := C.GoString(reqType), C.GoString(respType)
	var p *endpointPair
	if client != 0 {
		p, err = newPair(nd, full, rq, rs, reqPrefix+full, respPrefix+full, rq, rs, typeHash(reqHash), typeHash(respHash), reqQoS, respQoS)
	} else {
		p, err = newPair(nd, full, rq, rs, respPrefix+full, reqPrefix+full, rs, rq, typeHash(respHash), typeHash(reqHash), respQoS, reqQoS)
	}
	if err != nil {
		return report("creating the service endpoints", err)
	}
	putGID(p.pub.p.GID(), gid)
	*out = put(p)
	*pub = put(p.pub)
	*sub = put(p.sub)
	return retOK
}

//export rgapsgo_service_pair_destroy
func rgapsgo_service_pair_destroy(h, pub, sub C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	p := get[*endpointPair](h)
	if p == nil {
		return fail(retError, "already destroyed")
	}
	drop(h)
	drop(pub)
	drop(sub)
	return report("destroying the service endpoints", p.close())
}

//export rgapsgo_service_available
func rgapsgo_service_available(h C.uintptr_t, out *C.bool) (rc C.int) {
	defer recoverTo(&rc)
	p := get[*endpointPair](h)
	if p == nil {
		return fail(retError, "client destroyed")
	}
	// Requests need a local taker now: the server, or the bridge's
	// subscription that carries them to the server's host (a request
	// published before it exists is lost). Replies need a server anywhere:
	// a remote server's replies come through a bridge publisher that this
	// host's daemon makes with the first one; a DDS server's through the
	// DDS gateway's publisher, a republishing one that is matched already.
	*out = C.bool(p.pub.p.Matched() > 0 && (p.sub.s.Matched() > 0 || matchedAcrossHosts(p.pub.nd.ctx.c, nil, p.sub.s) > 0))
	return retOK
}
