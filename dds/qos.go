//go:build cgo && !nodds

package dds

/*
#include "rgdds.h"
*/
import "C"

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// defaultMaxBlocking is how long a reliable writer may block on a full
// KEEP_ALL reader (Cyclone's own default).
const defaultMaxBlocking = 100 * time.Millisecond

// ddsDuration is d in DDS form: 0 (the Profile's "not set") is infinite.
func ddsDuration(d time.Duration) C.int64_t {
	if d <= 0 {
		return C.DDS_INFINITY
	}
	return C.int64_t(d)
}

// profileDuration is the inverse of ddsDuration.
func profileDuration(d C.int64_t) time.Duration {
	if d == C.DDS_INFINITY || d <= 0 || int64(d) == math.MaxInt64 {
		return 0
	}
	return time.Duration(d)
}

// specOf maps a ROS profile to DDS policies the way rmw_cyclonedds_cpp
// does: history and depth (a KEEP_LAST depth of 0 is 1), reliability,
// durability (TRANSIENT_LOCAL writers keep their history for late
// joiners), liveliness and its lease, deadline, lifespan. The profile is
// resolved first; what is still unknown or invalid is an error.
func specOf(p qos.Profile, writer bool) (C.struct_rgd_qos_spec, error) {
	p = p.Resolve()
	var s C.struct_rgd_qos_spec
	if err := p.Validate(); err != nil {
		return s, fmt.Errorf("dds: QoS %v: %w", p, err)
	}
	switch p.History {
	case qos.HistoryKeepLast:
		s.history = C.DDS_HISTORY_KEEP_LAST
		s.depth = C.int32_t(min(max(p.Depth, 1), math.MaxInt32))
	case qos.HistoryKeepAll:
		s.history, s.depth = C.DDS_HISTORY_KEEP_ALL, C.DDS_LENGTH_UNLIMITED
	default:
		return s, fmt.Errorf("dds: QoS history %v has no DDS form", p.History)
	}
	switch p.Reliability {
	case qos.ReliabilityReliable:
		s.reliability = C.DDS_RELIABILITY_RELIABLE
	case qos.ReliabilityBestEffort:
		s.reliability = C.DDS_RELIABILITY_BEST_EFFORT
	default:
		return s, fmt.Errorf("dds: QoS reliability %v has no DDS form", p.Reliability)
	}
	switch p.Durability {
	case qos.DurabilityVolatile:
		s.durability = C.DDS_DURABILITY_VOLATILE
	case qos.DurabilityTransientLocal:
		s.durability = C.DDS_DURABILITY_TRANSIENT_LOCAL
	default:
		return s, fmt.Errorf("dds: QoS durability %v has no DDS form", p.Durability)
	}
	switch p.Liveliness {
	case qos.LivelinessAutomatic:
		s.liveliness = C.DDS_LIVELINESS_AUTOMATIC
	case qos.LivelinessManualByTopic:
		s.liveliness = C.DDS_LIVELINESS_MANUAL_BY_TOPIC
	default:
		return s, fmt.Errorf("dds: QoS liveliness %v has no DDS form", p.Liveliness)
	}
	s.lease = ddsDuration(p.LivelinessLease)
	s.deadline = ddsDuration(p.Deadline)
	s.lifespan = ddsDuration(p.Lifespan)
	s.max_blocking = C.int64_t(defaultMaxBlocking)
	if writer {
		s.writer = 1
	}
	return s, nil
}

// newQos is the dds_qos_t of an endpoint with options o (for a writer,
// its late-joiner limit too); free it with C.rgd_qos_free.
func newQos(o EndpointOptions, writer bool) (*C.dds_qos_t, error) {
	s, err := specOf(o.QoS, writer)
	if err != nil {
		return nil, err
	}
	if writer && o.LateJoinerLimit > 0 {
		s.tl_depth = C.int32_t(min(o.LateJoinerLimit, math.MaxInt32))
	}
	if o.IgnoreLocal {
		s.ignore_local = 1
	}
	b, n := cbytes(o.UserData)
	return C.rgd_qos_new(&s, b, n), nil
}

// profileOf maps DDS policies back to a ROS profile. DDS kinds ROS lacks
// (TRANSIENT and PERSISTENT durability, MANUAL_BY_PARTICIPANT liveliness)
// read as the nearest ROS value: transient local, and unknown.
func profileOf(s *C.struct_rgd_qos_spec) qos.Profile {
	p := qos.Profile{
		Depth:           uint32(max(s.depth, 0)),
		LivelinessLease: profileDuration(s.lease),
		Deadline:        profileDuration(s.deadline),
		Lifespan:        profileDuration(s.lifespan),
	}
	p.History = qos.HistoryKeepLast
	if s.history == C.DDS_HISTORY_KEEP_ALL {
		p.History, p.Depth = qos.HistoryKeepAll, 0
	}
	p.Reliability = qos.ReliabilityBestEffort
	if s.reliability == C.DDS_RELIABILITY_RELIABLE {
		p.Reliability = qos.ReliabilityReliable
	}
	p.Durability = qos.DurabilityTransientLocal
	if s.durability == C.DDS_DURABILITY_VOLATILE {
		p.Durability = qos.DurabilityVolatile
	}
	switch s.liveliness {
	case C.DDS_LIVELINESS_AUTOMATIC:
		p.Liveliness = qos.LivelinessAutomatic
	case C.DDS_LIVELINESS_MANUAL_BY_TOPIC:
		p.Liveliness = qos.LivelinessManualByTopic
	default:
		p.Liveliness = qos.LivelinessUnknown
	}
	return p
}

// policyOf is the ROS policy of a DDS QoS policy id (DDS_*_QOS_POLICY_ID),
// qos.PolicyInvalid for those ROS has no name for.
func policyOf(id int32) qos.Policy {
	switch id {
	case 0:
		return qos.PolicyNone
	case C.DDS_DURABILITY_QOS_POLICY_ID:
		return qos.PolicyDurability
	case C.DDS_DEADLINE_QOS_POLICY_ID:
		return qos.PolicyDeadline
	case C.DDS_LIVELINESS_QOS_POLICY_ID:
		return qos.PolicyLiveliness
	case C.DDS_RELIABILITY_QOS_POLICY_ID:
		return qos.PolicyReliability
	case C.DDS_HISTORY_QOS_POLICY_ID:
		return qos.PolicyHistory
	case C.DDS_LIFESPAN_QOS_POLICY_ID:
		return qos.PolicyLifespan
	}
	return qos.PolicyInvalid
}

// actualQoS is the QoS entity e has, as a ROS profile, and its user data.
func actualQoS(e C.int32_t) (qos.Profile, []byte, error) {
	var s C.struct_rgd_qos_spec
	var ud unsafe.Pointer
	var n C.size_t
	if err := check("get QoS", C.rgd_qos_get(e, &s, &ud, &n)); err != nil {
		return qos.Profile{}, nil, err
	}
	return profileOf(&s), takeUserData(ud, n), nil
}
