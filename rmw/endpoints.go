package main

/*
#include <string.h>
#include "rmw_impl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// ---- QoS ----------------------------------------------------------------------

// rmw's special durations (rmw/time.h, rmw/types.h).
const (
	infSec          = 9223372036
	infNsec         = 854775807
	bestAvailNsec   = 854775806
	nsPerSec        = int64(time.Second)
	maxDurationSecs = math.MaxInt64 / int64(time.Second)
)

// durFromC reads an rmw_time_t: unspecified and infinite are 0 (the
// engine's "none"), best-available is qos.DurationBestAvailable.
func durFromC(t C.rmw_time_t) time.Duration {
	sec, nsec := uint64(t.sec), uint64(t.nsec)
	switch {
	case sec == 0 && nsec == 0:
		return 0
	case sec == infSec && nsec == infNsec:
		return 0
	case sec == infSec && nsec == bestAvailNsec:
		return qos.DurationBestAvailable
	case sec >= uint64(maxDurationSecs):
		return 0
	}
	d := time.Duration(sec)*time.Second + time.Duration(nsec)
	if d < 0 {
		return 0
	}
	return d
}

// durToC writes a duration: 0 (none) is reported as infinite.
func durToC(d time.Duration) C.rmw_time_t {
	switch {
	case d == 0:
		return C.rmw_time_t{sec: infSec, nsec: infNsec}
	case d == qos.DurationBestAvailable:
		return C.rmw_time_t{sec: infSec, nsec: bestAvailNsec}
	}
	return C.rmw_time_t{sec: C.uint64_t(d / time.Second), nsec: C.uint64_t(d % time.Second)}
}

func qosFromC(q *C.rmw_qos_profile_t) qos.Profile {
	depth := uint64(q.depth)
	if depth > math.MaxUint32 {
		depth = math.MaxUint32
	}
	return qos.Profile{
		History:                      qos.History(q.history),
		Depth:                        uint32(depth),
		Reliability:                  qos.Reliability(q.reliability),
		Durability:                   qos.Durability(q.durability),
		Deadline:                     durFromC(q.deadline),
		Lifespan:                     durFromC(q.lifespan),
		Liveliness:                   qos.Liveliness(q.liveliness),
		LivelinessLease:              durFromC(q.liveliness_lease_duration),
		AvoidROSNamespaceConventions: bool(q.avoid_ros_namespace_conventions),
	}
}

func qosToC(p qos.Profile, q *C.rmw_qos_profile_t) {
	q.history = uint32(p.History)
	q.depth = C.size_t(p.Depth)
	q.reliability = uint32(p.Reliability)
	q.durability = uint32(p.Durability)
	q.deadline = durToC(p.Deadline)
	q.lifespan = durToC(p.Lifespan)
	q.liveliness = uint32(p.Liveliness)
	q.liveliness_lease_duration = durToC(p.LivelinessLease)
	q.avoid_ros_namespace_conventions = C.bool(p.AvoidROSNamespaceConventions)
}

// checkQoS refuses what the engine cannot honour.
func checkQoS(p qos.Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Liveliness == qos.Liveliness(C.RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_NODE) {
		return errors.New("liveliness manual_by_node is deprecated and not supported")
	}
	return nil
}

func putGID(g zerocopy.GID, out *C.uint8_t) {
	copy(unsafe.Slice((*byte)(unsafe.Pointer(out)), len(g)), g[:])
}

// ---- publishers -----------------------------------------------------------------

type publisher struct {
	nd *node
	p  *zerocopy.Publisher
	st *status

	d *zerocopy.Domain

	mu       sync.Mutex
	loans    map[uintptr]*zerocopy.Loan // by address of the loan's first byte
	devLoans map[uint64]*zerocopy.Loan  // device loans (gpu.go), by id
}

// newPublisher creates a publisher of typ on topic; q is read and then
// overwritten with the actual QoS.
func newPublisher(nd *node, topic, typ string, hash zerocopy.TypeHash, q *C.rmw_qos_profile_t, gpuPool bool) (*publisher, error) {
	p := qosFromC(q)
	if err := checkQoS(p); err != nil {
		return nil, err
	}
	spec, d, err := nd.spec(topic, typ, hash, p)
	if err != nil {
		return nil, err
	}
	spec.GPUPool = gpuPool && zerocopy.GPUPresent()
	if spec.Topic == "/rosout" && spec.QoS.Durability == qos.DurabilityTransientLocal && spec.QoS.Depth > rosoutDepth() {
		// Every node keeps its /rosout history in the topic's shared
		// sample table (4096 samples): rcl's 1000 per node would exhaust
		// it with a few nodes and block every log call. The actual QoS
		// reports the depth in force.
		spec.QoS.Depth = rosoutDepth()
	}
	pub, err := d.NewPublisher(spec)
	if err != nil {
		return nil, err
	}
	qosToC(pub.QoS(), q)
	nd.ctx.mu.Lock()
	nd.ctx.gids[pub.GID()] = true
	nd.ctx.mu.Unlock()
	pp := &publisher{nd: nd, p: pub, d: d, loans: map[uintptr]*zerocopy.Loan{}, devLoans: map[uint64]*zerocopy.Loan{}}
	pp.st = newStatus(pub, d)
	if err := nd.n.Track(pp); err != nil {
		return nil, err
	}
	return pp, nil
}

// rosoutDepth is the transient-local history a node keeps on /rosout
// (RGAPS_RMW_ROSOUT_DEPTH, default 100).
func rosoutDepth() uint32 {
	if v, err := strconv.ParseUint(os.Getenv("RGAPS_RMW_ROSOUT_DEPTH"), 10, 32); err == nil && v > 0 {
		return uint32(v)
	}
	return 100
}

// spec describes an endpoint of the node on topic and picks its domain:
// small pools for ROS's own topics.
func (nd *node) spec(topic, typ string, hash zerocopy.TypeHash, q qos.Profile) (zerocopy.EndpointSpec, *zerocopy.Domain, error) {
	full, err := checkedName(topic, q.AvoidROSNamespaceConventions)
	if err != nil {
		return zerocopy.EndpointSpec{}, nil, err
	}
	spec := zerocopy.EndpointSpec{Topic: full, Type: typ, TypeHash: hash, Node: nd.n.FullName(), QoS: q}
	if smallTopic(full, typ) {
		d, err := nd.ctx.smallDomain()
		return spec, d, err
	}
	return spec, nd.ctx.c.Engine(), nil
}

// checkedName checks a topic or service name as rcl hands it over: already
// expanded and remapped, so it must be a fully qualified ROS name (as the
// DDS-based rmws check it) unless the QoS asks to avoid ROS's namespace
// conventions, in which case a relative name is taken from the root.
func checkedName(name string, avoidConventions bool) (string, error) {
	if avoidConventions && !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	if err := names.ValidateFullTopicName(name); err != nil {
		return "", fmt.Errorf("%w: invalid name %q: %v", zerocopy.ErrInvalid, name, err)
	}
	return name, nil
}

// typeHash reads the RGAPS_TYPE_HASH_SIZE bytes C filled in from the type
// support.
func typeHash(p *C.uint8_t) zerocopy.TypeHash {
	var h zerocopy.TypeHash
	copy(h[:], unsafe.Slice((*byte)(unsafe.Pointer(p)), len(h)))
	return h
}

// Close destroys the publisher; its node calls it when closed first.
func (p *publisher) Close() error {
	p.nd.n.Untrack(p)
	p.st.stop()
	p.nd.ctx.mu.Lock()
	delete(p.nd.ctx.gids, p.p.GID())
	p.nd.ctx.mu.Unlock()
	err := p.p.Close()
	if errors.Is(err, zerocopy.ErrClosed) {
		err = nil // closed with its node
	}
	return err
}

//export rgapsgo_pub_create
func rgapsgo_pub_create(nodeh C.uintptr_t, topic, typ *C.char, hash *C.uint8_t, q *C.rmw_qos_profile_t, gpuPool C.int, gid *C.uint8_t, out *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	nd := get[*node](nodeh)
	if nd == nil {
		return fail(retError, "node destroyed")
	}
	p, err := newPublisher(nd, C.GoString(topic), C.GoString(typ), typeHash(hash), q, gpuPool != 0)
	if err != nil {
		return report("creating the publisher", err)
	}
	putGID(p.p.GID(), gid)
	*out = put(p)
	return retOK
}

//export rgapsgo_pub_destroy
func rgapsgo_pub_destroy(h C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	p := get[*publisher](h)
	if p == nil {
		return fail(retError, "publisher already destroyed")
	}
	drop(h)
	return report("destroying the publisher", p.Close())
}

// rgapsgo_pub_loan lends size bytes of the topic's pool at *out. Unless
// force != 0, *out is NULL (and the result OK) when the message need not
// be written: nobody
// matches and nothing is kept for late joiners (the engine counts the
// publication), or a best-effort publisher's pool is full (a drop).
//
//export rgapsgo_pub_loan
func rgapsgo_pub_loan(h C.uintptr_t, size C.size_t, force C.int, out **C.uint8_t) (rc C.int) {
	defer recoverTo(&rc)
	*out = nil
	p := get[*publisher](h)
	if p == nil {
		return fail(retError, "publisher destroyed")
	}
	if force == 0 && p.p.Matched() == 0 && p.p.QoS().Durability != qos.DurabilityTransientLocal {
		// One byte through the engine: sequence number and deadline
		// accounting as for a real message, no pool block, no copy.
		return report("publishing", p.p.Publish([]byte{0}))
	}
	if uint64(size) > math.MaxInt32*4 {
		return fail(retInvalid, "message of %d bytes is too large", uint64(size))
	}
	l, err := p.p.Loan(int(size))
	if err != nil {
		if force == 0 && errors.Is(err, zerocopy.ErrPoolExhausted) && p.p.QoS().Reliability == qos.ReliabilityBestEffort {
			return retOK
		}
		if errors.Is(err, zerocopy.ErrPoolExhausted) || errors.Is(err, zerocopy.ErrTooLarge) {
			return fail(retBadAlloc, "loaning %d bytes: %v", uint64(size), err)
		}
		return report("loaning", err)
	}
	b := l.Bytes()
	if len(b) == 0 {
		l.Discard()
		return fail(retUnsupported, "the topic's payloads are in GPU memory only")
	}
	ptr := unsafe.Pointer(&b[0])
	p.mu.Lock()
	p.loans[uintptr(ptr)] = l
	p.mu.Unlock()
	*out = (*C.uint8_t)(ptr)
	return retOK
}

func (p *publisher) takeLoan(ptr unsafe.Pointer) *zerocopy.Loan {
	p.mu.Lock()
	defer p.mu.Unlock()
	l := p.loans[uintptr(ptr)]
	delete(p.loans, uintptr(ptr))
	return l
}

//export rgapsgo_pub_publish
func rgapsgo_pub_publish(h C.uintptr_t, ptr *C.uint8_t) (rc C.int) {
	defer recoverTo(&rc)
	p := get[*publisher](h)
	if p == nil {
		return fail(retError, "publisher destroyed")
	}
	l := p.takeLoan(unsafe.Pointer(ptr))
	if l == nil {
		return fail(retInvalid, "not a message loaned by this publisher")
	}
	return report("publishing", l.Publish())
}

//export rgapsgo_pub_discard
func rgapsgo_pub_discard(h C.uintptr_t, ptr *C.uint8_t) (rc C.int) {
	defer recoverTo(&rc)
	p := get[*publisher](h)
	if p == nil {
		return fail(retError, "publisher destroyed")
	}
	l := p.takeLoan(unsafe.Pointer(ptr))
	if l == nil {
		return fail(retInvalid, "not a message loaned by this publisher")
	}
	return report("returning the loan", l.Discard())
}

//export rgapsgo_pub_matched
func rgapsgo_pub_matched(h C.uintptr_t, out *C.size_t) (rc C.int) {
	defer recoverTo(&rc)
	p := get[*publisher](h)
	if p == nil {
		return fail(retError, "publisher destroyed")
	}
	*out = C.size_t(matchedAcrossHosts(p.nd.ctx.c, p.p, nil))
	return retOK
}

// ---- subscriptions --------------------------------------------------------------

type subscription struct {
	nd          *node
	s           *zerocopy.Subscription
	st          *status
	d           *zerocopy.Domain
	views       *views // a device subscription's kept samples (gpu.go)
	ignoreLocal bool

	mu        sync.Mutex
	loans     map[uintptr]*zerocopy.Sample // taken loans, by address of their data
	received  uint64
	cb        *callback
	takeEvent chan struct{} // nudges the callback goroutine after a take
}

func newSubscription(nd *node, topic, typ string, hash zerocopy.TypeHash, q *C.rmw_qos_profile_t, ignoreLocal, gpuPool bool) (*subscription, error) {
	p := qosFromC(q)
	if err := checkQoS(p); err != nil {
		return nil, err
	}
	spec, d, err := nd.spec(topic, typ, hash, p)
	if err != nil {
		return nil, err
	}
	spec.GPUPool = gpuPool && zerocopy.GPUPresent()
	sub, err := d.NewSubscription(spec)
	if err != nil {
		return nil, err
	}
	qosToC(sub.QoS(), q)
	s := &subscription{nd: nd, s: sub, d: d, views: newViews(keepLastDepth(sub.QoS())), ignoreLocal: ignoreLocal, loans: map[uintptr]*zerocopy.Sample{},
		takeEvent: make(chan struct{}, 1)}
	s.st = newStatus(sub, d)
	if err := nd.n.Track(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Close destroys the subscription; its node calls it when closed first.
func (s *subscription) Close() error {
	s.nd.n.Untrack(s)
	s.setCallback(nil)
	s.st.stop()
	s.mu.Lock()
	for k, smp := range s.loans {
		smp.Return()
		delete(s.loans, k)
	}
	s.mu.Unlock()
	s.views.close()
	err := s.s.Close()
	if errors.Is(err, zerocopy.ErrClosed) {
		err = nil
	}
	return err
}

//export rgapsgo_sub_create
func rgapsgo_sub_create(nodeh C.uintptr_t, topic, typ *C.char, hash *C.uint8_t, q *C.rmw_qos_profile_t, ignoreLocal, gpuPool C.int, gid *C.uint8_t, out *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	nd := get[*node](nodeh)
	if nd == nil {
		return fail(retError, "node destroyed")
	}
	s, err := newSubscription(nd, C.GoString(topic), C.GoString(typ), typeHash(hash), q, ignoreLocal != 0, gpuPool != 0)
	if err != nil {
		return report("creating the subscription", err)
	}
	putGID(s.s.GID(), gid)
	*out = put(s)
	return retOK
}

//export rgapsgo_sub_destroy
func rgapsgo_sub_destroy(h C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	s := get[*subscription](h)
	if s == nil {
		return fail(retError, "subscription already destroyed")
	}
	drop(h)
	return report("destroying the subscription", s.Close())
}

//export rgapsgo_sub_matched
func rgapsgo_sub_matched(h C.uintptr_t, out *C.size_t) (rc C.int) {
	defer recoverTo(&rc)
	s := get[*subscription](h)
	if s == nil {
		return fail(retError, "subscription destroyed")
	}
	*out = C.size_t(matchedAcrossHosts(s.nd.ctx.c, nil, s.s))
	return retOK
}

// take removes the next sample that is for this subscription: samples of
// this context's publishers are skipped with ignore_local_publications,
// and samples shorter than min bytes (the placeholder of a publication
// nobody was matched for) are dropped.
// A sample whose fields travel in its meta block (a message published with
// a device loan, §3.12) has the device field's bytes as its payload: it is
// only for takes that can split (split), and min does not apply to it.
func (s *subscription) take(min int, split bool) (*zerocopy.Sample, error) {
	for {
		smp, err := s.s.Take()
		if err != nil {
			return nil, err
		}
		if smp.Meta() != nil && !split {
			smp.Return()
			s.malformed("a message with a device field on a topic of a type that has none")
			continue
		}
		if smp.Meta() == nil && len(smp.Bytes()) < min {
			smp.Return()
			s.malformed(fmt.Sprintf("%d bytes, shorter than the %d-byte prefix of this topic's payloads", len(smp.Bytes()), min))
			continue
		}
		if s.ignoreLocal && s.nd.ctx.local(smp.Info().Publisher) {
			smp.Return()
			continue
		}
		return smp, nil
	}
}

// malformed counts a message dropped because it does not decode (in shared
// memory, where `rgaps topic info` reads it) and logs the first one.
func (s *subscription) malformed(why string) {
	if n := s.s.DropMalformed(); n == 1 {
		fmt.Fprintf(os.Stderr, "rmw_rgaps: %s: dropped a malformed message (%s); further ones are counted (rgaps topic info -v) and not logged\n",
			s.s.Topic().Name(), why)
	}
}

//export rgapsgo_sub_malformed
func rgapsgo_sub_malformed(h C.uintptr_t, why *C.char) {
	defer recoverTo(new(C.int))
	if s := get[*subscription](h); s != nil {
		s.malformed(C.GoString(why))
	}
}

func (s *subscription) fillInfo(smp *zerocopy.Sample, info *C.rmw_message_info_t) {
	if info == nil {
		return
	}
	mi := smp.Info()
	info.source_timestamp = C.rmw_time_point_value_t(mi.SourceTimestamp.UnixNano())
	info.received_timestamp = C.rmw_time_point_value_t(time.Now().UnixNano())
	info.publication_sequence_number = C.uint64_t(mi.Sequence)
	s.mu.Lock()
	s.received++
	info.reception_sequence_number = C.uint64_t(s.received)
	s.mu.Unlock()
	putGID(mi.Publisher, &info.publisher_gid.data[0])
	info.from_intra_process = false
}

// rgapsgo_sub_take takes the next sample: its bytes at *data (read-only,
// in the pool; NULL when the sample has no host form) and *size, its meta
// block at *meta and *meta_len (NULL, 0: none), its info into *info (if not
// NULL). mode: 0 a copying take, 1 a loan, 2 a copying take that can
// split (the only one given samples with a meta block; the others drop them
// as malformed). Copying takes set *sample to the handle to give back with
// rgapsgo_sample_return; a loan stays with the subscription until
// rgapsgo_sub_return_loan(*data). *sample == 0: nothing to take.
//
//export rgapsgo_sub_take
func rgapsgo_sub_take(h C.uintptr_t, min C.size_t, data **C.uint8_t, size *C.size_t, meta **C.uint8_t, metaLen *C.size_t, info *C.rmw_message_info_t, mode C.int, sample *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	*sample = 0
	*data, *size, *meta, *metaLen = nil, 0, nil, 0
	s := get[*subscription](h)
	if s == nil {
		return fail(retError, "subscription destroyed")
	}
	smp, err := s.take(int(min), mode == 2)
	if errors.Is(err, zerocopy.ErrNoData) {
		return retOK
	}
	if err != nil {
		return report("taking", err)
	}
	select {
	case s.takeEvent <- struct{}{}:
	default:
	}
	var ptr unsafe.Pointer
	*size = C.size_t(smp.Size())
	if b := smp.Bytes(); len(b) > 0 {
		ptr = unsafe.Pointer(&b[0])
		*data = (*C.uint8_t)(ptr)
	}
	if m := smp.Meta(); len(m) > 0 {
		*meta = (*C.uint8_t)(unsafe.Pointer(&m[0]))
		*metaLen = C.size_t(len(m))
	}
	s.fillInfo(smp, info)
	if mode == 1 {
		s.mu.Lock()
		s.loans[uintptr(ptr)] = smp
		s.mu.Unlock()
		*sample = 1
		return retOK
	}
	*sample = put(smp)
	return retOK
}

//export rgapsgo_sample_return
func rgapsgo_sample_return(h C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	smp := get[*zerocopy.Sample](h)
	if smp == nil {
		return fail(retError, "sample already returned")
	}
	drop(h)
	return report("returning the sample", smp.Return())
}

//export rgapsgo_sub_return_loan
func rgapsgo_sub_return_loan(h C.uintptr_t, ptr *C.uint8_t) (rc C.int) {
	defer recoverTo(&rc)
	s := get[*subscription](h)
	if s == nil {
		return fail(retError, "subscription destroyed")
	}
	s.mu.Lock()
	smp := s.loans[uintptr(unsafe.Pointer(ptr))]
	delete(s.loans, uintptr(unsafe.Pointer(ptr)))
	s.mu.Unlock()
	if smp == nil {
		return fail(retError, "not a message loaned by this subscription")
	}
	return report("returning the loaned message", smp.Return())
}

// ---- QoS compatibility ------------------------------------------------------------

//export rgapsgo_qos_check
func rgapsgo_qos_check(pub, sub *C.rmw_qos_profile_t, compat *C.int, reason *C.char, n C.size_t) (rc C.int) {
	defer recoverTo(&rc)
	c, why := qos.CheckCompatible(qosFromC(pub), qosFromC(sub))
	*compat = C.int(c)
	if reason != nil && n > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(reason)), int(n))
		k := copy(b[:len(b)-1], why)
		b[k] = 0
	}
	return retOK
}

// keepLastDepth is a KEEP_LAST profile's depth, 0 for KEEP_ALL.
func keepLastDepth(q qos.Profile) int {
	if q.History == qos.HistoryKeepAll {
		return 0
	}
	return int(q.Depth)
}
