package main

/*
#include "rmw_impl.h"
*/
import "C"

import (
	"errors"
	"sort"
	"strings"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
)

// Services travel over a pair of hidden topics per service (the engine has
// no services): requests on reqPrefix+name, responses on respPrefix+name.
// Graph queries show these topics as services and hide them from topic
// lists.
const (
	reqPrefix  = "/_rgaps_rq"
	respPrefix = "/_rgaps_rr"
	reqSuffix  = "_Request"
)

func isServiceTopic(t string) bool {
	return strings.HasPrefix(t, reqPrefix+"/") || strings.HasPrefix(t, respPrefix+"/")
}

// cstr copies s into memory of allocator a; nil when the allocation failed.
func cstr(a *C.rcutils_allocator_t, s string) *C.char {
	if len(s) == 0 {
		return C.rgaps_strndup(a, nil, 0)
	}
	return C.rgaps_strndup(a, (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s)))
}

// fillStrings sets arr (zero-initialised) to ss, allocated with a.
func fillStrings(arr *C.rcutils_string_array_t, ss []string, a *C.rcutils_allocator_t) C.int {
	if rc := C.rgaps_string_array_init(arr, C.size_t(len(ss)), a); rc != C.RMW_RET_OK {
		return fail(C.int(rc), "allocating a string array")
	}
	if len(ss) == 0 {
		return retOK
	}
	data := unsafe.Slice(arr.data, len(ss))
	for i, s := range ss {
		if data[i] = cstr(a, s); data[i] == nil {
			C.rgaps_string_array_fini(arr)
			return fail(retBadAlloc, "allocating a string")
		}
	}
	return retOK
}

func nodeOf(h C.uintptr_t) *node {
	return get[*node](h)
}

//export rgapsgo_node_names
func rgapsgo_node_names(h C.uintptr_t, a *C.rcutils_allocator_t, nm, ns, enclaves *C.rcutils_string_array_t) (rc C.int) {
	defer recoverTo(&rc)
	nd := nodeOf(h)
	if nd == nil {
		return fail(retError, "node destroyed")
	}
	infos, err := graphNodes(nd.ctx.c)
	if err != nil {
		return fail(retError, "listing nodes: %v", err)
	}
	var n, s, e []string
	for _, in := range infos {
		n = append(n, in.Name)
		s = append(s, in.Namespace)
		e = append(e, in.Enclave)
	}
	if rc := fillStrings(nm, n, a); rc != retOK {
		return rc
	}
	if rc := fillStrings(ns, s, a); rc != retOK {
		C.rgaps_string_array_fini(nm)
		return rc
	}
	if enclaves != nil {
		if rc := fillStrings(enclaves, e, a); rc != retOK {
			C.rgaps_string_array_fini(nm)
			C.rgaps_string_array_fini(ns)
			return rc
		}
	}
	return retOK
}

// Queries of rgapsgo_names_and_types.
const (
	qTopics = iota
	qServices
	qPublishersByNode
	qSubscribersByNode
	qServicesByNode
	qClientsByNode
)

// namesAndTypes answers query q: a sorted map of names to their types.
func namesAndTypes(nd *node, q int, nodeFQ string) (map[string][]string, error) {
	topics, err := graphTopics(nd.ctx.c)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	add := func(name, typ string) {
		for _, t := range out[name] {
			if t == typ {
				return
			}
		}
		out[name] = append(out[name], typ)
	}
	for _, t := range topics {
		svc := strings.HasPrefix(t.Name, reqPrefix+"/")
		switch q {
		case qTopics:
			if !isServiceTopic(t.Name) {
				add(t.Name, t.Type)
			}
			continue
		case qServices:
			if svc {
				add(strings.TrimPrefix(t.Name, reqPrefix), strings.TrimSuffix(t.Type, reqSuffix))
			}
			continue
		}
		if svc != (q == qServicesByNode || q == qClientsByNode) || (!svc && isServiceTopic(t.Name)) {
			continue
		}
		eps, err := graphEndpoints(nd.ctx.c, t.Name)
		if err != nil {
			return nil, err
		}
		for _, ep := range eps {
			if ep.Node != nodeFQ {
				continue
			}
			switch {
			case q == qPublishersByNode && ep.Kind == zerocopy.KindPublisher,
				q == qSubscribersByNode && ep.Kind == zerocopy.KindSubscription:
				add(t.Name, t.Type)
			case q == qServicesByNode && ep.Kind == zerocopy.KindSubscription,
				q == qClientsByNode && ep.Kind == zerocopy.KindPublisher:
				add(strings.TrimPrefix(t.Name, reqPrefix), strings.TrimSuffix(t.Type, reqSuffix))
			}
		}
	}
	return out, nil
}

//export rgapsgo_names_and_types
func rgapsgo_names_and_types(h C.uintptr_t, a *C.rcutils_allocator_t, q C.int, nodeName, nodeNS *C.char, out *C.rmw_names_and_types_t) (rc C.int) {
	defer recoverTo(&rc)
	nd := nodeOf(h)
	if nd == nil {
		return fail(retError, "node destroyed")
	}
	var fq string
	if q >= qPublishersByNode {
		name, ns := C.GoString(nodeName), C.GoString(nodeNS)
		if err := names.ValidateNodeName(name); err != nil {
			return fail(retInvalid, "node name %q: %v", name, err)
		}
		if err := names.ValidateNamespace(ns); err != nil {
			return fail(retInvalid, "node namespace %q: %v", ns, err)
		}
		fq = names.FullNodeName(name, ns)
		infos, err := graphNodes(nd.ctx.c)
		if err != nil {
			return fail(retError, "listing nodes: %v", err)
		}
		found := false
		for _, in := range infos {
			if in.FullName() == fq {
				found = true
				break
			}
		}
		if !found {
			return fail(retNodeNotExist, "no node %s in the graph", fq)
		}
	}
	m, err := namesAndTypes(nd, int(q), fq)
	if err != nil {
		return report("reading the graph", err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if rc := fillStrings(&out.names, keys, a); rc != retOK {
		return rc
	}
	if len(keys) == 0 {
		return retOK
	}
	types := (*C.rcutils_string_array_t)(C.rgaps_alloc(a, C.size_t(len(keys))*C.size_t(unsafe.Sizeof(C.rcutils_string_array_t{}))))
	if types == nil {
		C.rgaps_string_array_fini(&out.names)
		return fail(retBadAlloc, "allocating the type lists")
	}
	out.types = types
	ts := unsafe.Slice(types, len(keys))
	for i, k := range keys {
		if rc := fillStrings(&ts[i], m[k], a); rc != retOK {
			for j := 0; j < i; j++ {
				C.rgaps_string_array_fini(&ts[j])
			}
			C.rgaps_free(a, unsafe.Pointer(types))
			out.types = nil
			C.rgaps_string_array_fini(&out.names)
			return rc
		}
	}
	return retOK
}

//export rgapsgo_endpoints_info
func rgapsgo_endpoints_info(h C.uintptr_t, a *C.rcutils_allocator_t, topic *C.char, kind C.int, out *C.rmw_topic_endpoint_info_array_t) (rc C.int) {
	defer recoverTo(&rc)
	nd := nodeOf(h)
	if nd == nil {
		return fail(retError, "node destroyed")
	}
	name := C.GoString(topic)
	if err := names.ValidateFullTopicName(name); err != nil {
		return fail(retInvalid, "topic name %q: %v", name, err)
	}
	eps, err := graphEndpoints(nd.ctx.c, name)
	if err != nil {
		return report("reading the graph", err)
	}
	var sel []zerocopy.EndpointInfo
	for _, ep := range eps {
		if ep.Kind == zerocopy.Kind(kind) {
			sel = append(sel, ep)
		}
	}
	if len(sel) == 0 {
		return retOK
	}
	arr := (*C.rmw_topic_endpoint_info_t)(C.rgaps_alloc(a, C.size_t(len(sel))*C.size_t(unsafe.Sizeof(C.rmw_topic_endpoint_info_t{}))))
	if arr == nil {
		return fail(retBadAlloc, "allocating endpoint information")
	}
	infos := unsafe.Slice(arr, len(sel))
	cleanup := func(n int) {
		for i := 0; i < n; i++ {
			C.rgaps_free(a, unsafe.Pointer(infos[i].node_name))
			C.rgaps_free(a, unsafe.Pointer(infos[i].node_namespace))
			C.rgaps_free(a, unsafe.Pointer(infos[i].topic_type))
		}
		C.rgaps_free(a, unsafe.Pointer(arr))
	}
	for i, ep := range sel {
		n, ns := names.SplitFullNodeName(ep.Node)
		in := &infos[i]
		in.node_name, in.node_namespace, in.topic_type = cstr(a, n), cstr(a, ns), cstr(a, ep.Type)
		if in.node_name == nil || in.node_namespace == nil || in.topic_type == nil {
			cleanup(i + 1)
			return fail(retBadAlloc, "allocating endpoint information")
		}
		if ep.Kind == zerocopy.KindPublisher {
			in.endpoint_type = C.RMW_ENDPOINT_PUBLISHER
		} else {
			in.endpoint_type = C.RMW_ENDPOINT_SUBSCRIPTION
		}
		putGID(ep.GID, &in.endpoint_gid[0])
		in.topic_type_hash.version = C.uint8_t(ep.TypeHash[0])
		for j := range 32 {
			in.topic_type_hash.value[j] = C.uint8_t(ep.TypeHash[1+j])
		}
		qosToC(ep.QoS, &in.qos_profile)
	}
	out.size = C.size_t(len(sel))
	out.info_array = arr
	return retOK
}

// Counts of rgapsgo_count.
const (
	cPublishers = iota
	cSubscribers
	cClients
	cServices
)

//export rgapsgo_count
func rgapsgo_count(h C.uintptr_t, what C.int, name *C.char, out *C.size_t) (rc C.int) {
	defer recoverTo(&rc)
	nd := nodeOf(h)
	if nd == nil {
		return fail(retError, "node destroyed")
	}
	topic := C.GoString(name)
	if err := names.ValidateFullTopicName(topic); err != nil {
		return fail(retInvalid, "name %q: %v", topic, err)
	}
	kind := zerocopy.KindPublisher
	switch what {
	case cSubscribers:
		kind = zerocopy.KindSubscription
	case cClients:
		topic = reqPrefix + topic
	case cServices:
		topic, kind = reqPrefix+topic, zerocopy.KindSubscription
	}
	eps, err := graphEndpoints(nd.ctx.c, topic)
	if err != nil && !errors.Is(err, zerocopy.ErrInvalid) {
		return report("reading the graph", err)
	}
	n := 0
	for _, ep := range eps {
		if ep.Kind == kind {
			n++
		}
	}
	*out = C.size_t(n)
	return retOK
}
