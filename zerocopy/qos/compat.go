package qos

import (
	"strconv"
	"strings"
)

// Compatibility is the outcome of CheckCompatible. Values equal
// rmw_qos_compatibility_type_e.
type Compatibility uint8

// Compatibility values.
const (
	// Ok: a publisher and a subscription with these profiles can communicate.
	Ok Compatibility = 0
	// Warning: they may fail to communicate, because at least one policy is
	// system_default or unknown and its actual value cannot be judged here.
	Warning Compatibility = 1
	// Error: they cannot communicate.
	Error Compatibility = 2
)

// String returns "ok", "warning" or "error".
func (c Compatibility) String() string {
	switch c {
	case Ok:
		return "ok"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return "Compatibility(" + strconv.Itoa(int(c)) + ")"
}

// Policy identifies one QoS policy, as reported in the incompatible-QoS
// events (last_policy_kind). Values equal rmw_qos_policy_kind_e; they are bit
// flags in ROS 2, hence a type wider than uint8.
type Policy uint32

// Policy values. PolicyNone is not a ROS 2 value: it is what
// FirstIncompatiblePolicy returns for compatible profiles.
const (
	PolicyNone                         Policy = 0
	PolicyInvalid                      Policy = 1 << 0
	PolicyDurability                   Policy = 1 << 1
	PolicyDeadline                     Policy = 1 << 2
	PolicyLiveliness                   Policy = 1 << 3
	PolicyReliability                  Policy = 1 << 4
	PolicyHistory                      Policy = 1 << 5
	PolicyLifespan                     Policy = 1 << 6
	PolicyDepth                        Policy = 1 << 7
	PolicyLivelinessLeaseDuration      Policy = 1 << 8
	PolicyAvoidROSNamespaceConventions Policy = 1 << 9
)

// String returns the name used by rmw_qos_policy_kind_to_str (e.g.
// "liveliness_lease_duration"), "invalid" for PolicyInvalid and "none" for
// PolicyNone.
func (p Policy) String() string {
	switch p {
	case PolicyNone:
		return "none"
	case PolicyInvalid:
		return "invalid"
	case PolicyDurability:
		return "durability"
	case PolicyDeadline:
		return "deadline"
	case PolicyLiveliness:
		return "liveliness"
	case PolicyReliability:
		return "reliability"
	case PolicyHistory:
		return "history"
	case PolicyLifespan:
		return "lifespan"
	case PolicyDepth:
		return "depth"
	case PolicyLivelinessLeaseDuration:
		return "liveliness_lease_duration"
	case PolicyAvoidROSNamespaceConventions:
		return "avoid_ros_namespace_conventions"
	}
	return "Policy(0x" + strconv.FormatUint(uint64(p), 16) + ")"
}

// finding is one error or warning produced by check.
type finding struct {
	level  Compatibility
	policy Policy
	msg    string
}

// check applies the rules of rmw_qos_profile_check_compatible (implemented in
// rmw_dds_common) in the same order, so that reasons come out in the same
// order as in ROS 2. Warnings are produced only when there is no error.
//
// Durations follow this package's convention, 0 = not set. ROS 2 compares
// against RMW_DURATION_UNSPECIFIED, which the C shim maps to 0, so the rules
// carry over unchanged.
func check(pub, sub Profile) []finding {
	var fs []finding
	add := func(level Compatibility, policy Policy, msg string) {
		fs = append(fs, finding{level, policy, msg})
	}

	if pub.Reliability == ReliabilityBestEffort && sub.Reliability == ReliabilityReliable {
		add(Error, PolicyReliability, "Best effort publisher and reliable subscription")
	}
	if pub.Durability == DurabilityVolatile && sub.Durability == DurabilityTransientLocal {
		add(Error, PolicyDurability, "Volatile publisher and transient local subscription")
	}
	if pub.Deadline == 0 && sub.Deadline != 0 {
		add(Error, PolicyDeadline, "Subscription has a deadline, but publisher does not")
	}
	if pub.Deadline != 0 && sub.Deadline != 0 && sub.Deadline < pub.Deadline {
		add(Error, PolicyDeadline, "Subscription deadline is less than publisher deadline")
	}
	if pub.Liveliness == LivelinessAutomatic && sub.Liveliness == LivelinessManualByTopic {
		add(Error, PolicyLiveliness, "Publisher's liveliness is automatic and subscription's is manual by topic")
	}
	if pub.LivelinessLease == 0 && sub.LivelinessLease != 0 {
		add(Error, PolicyLivelinessLeaseDuration, "Subscription has a liveliness lease duration, but publisher does not")
	}
	if pub.LivelinessLease != 0 && sub.LivelinessLease != 0 && sub.LivelinessLease < pub.LivelinessLease {
		add(Error, PolicyLivelinessLeaseDuration, "Subscription liveliness lease duration is less than publisher")
	}
	if len(fs) > 0 {
		return fs
	}

	// A policy is "unknown" here when its value is left to the system or not
	// known at all; best_available is deliberately not included, as in ROS 2,
	// because it is chosen to match. Out-of-range values count as unknown.
	pubRel, subRel := relUnknown(pub.Reliability), relUnknown(sub.Reliability)
	switch {
	case pubRel && subRel:
		add(Warning, PolicyReliability, "Publisher reliability is "+reasonName(pub.Reliability)+
			" and subscription reliability is "+reasonName(sub.Reliability))
	case pubRel && sub.Reliability == ReliabilityReliable:
		add(Warning, PolicyReliability, "Reliable subscription, but publisher is "+reasonName(pub.Reliability))
	case pub.Reliability == ReliabilityBestEffort && subRel:
		add(Warning, PolicyReliability, "Best effort publisher, but subscription is "+reasonName(sub.Reliability))
	}

	pubDur, subDur := durUnknown(pub.Durability), durUnknown(sub.Durability)
	switch {
	case pubDur && subDur:
		add(Warning, PolicyDurability, "Publisher durability is "+reasonName(pub.Durability)+
			" and subscription durability is "+reasonName(sub.Durability))
	case pubDur && sub.Durability == DurabilityTransientLocal:
		add(Warning, PolicyDurability, "Transient local subscription, but publisher is "+reasonName(pub.Durability))
	case pub.Durability == DurabilityVolatile && subDur:
		add(Warning, PolicyDurability, "Volatile publisher, but subscription is "+reasonName(sub.Durability))
	}

	pubLiv, subLiv := livUnknown(pub.Liveliness), livUnknown(sub.Liveliness)
	switch {
	case pubLiv && subLiv:
		add(Warning, PolicyLiveliness, "Publisher liveliness is "+reasonName(pub.Liveliness)+
			" and subscription liveliness is "+reasonName(sub.Liveliness))
	case pubLiv && sub.Liveliness == LivelinessManualByTopic:
		add(Warning, PolicyLiveliness, "Subscription's liveliness is manual by topic, but publisher's is "+
			reasonName(pub.Liveliness))
	case pub.Liveliness == LivelinessAutomatic && subLiv:
		add(Warning, PolicyLiveliness, "Publisher's liveliness is automatic, but subscription's is "+
			reasonName(sub.Liveliness))
	}
	return fs
}

func relUnknown(r Reliability) bool {
	return r == ReliabilitySystemDefault || r == ReliabilityUnknown || !r.valid()
}

func durUnknown(d Durability) bool {
	return d == DurabilitySystemDefault || d == DurabilityUnknown || !d.valid()
}

func livUnknown(l Liveliness) bool {
	return l == LivelinessSystemDefault || l == LivelinessUnknown || !l.valid()
}

// reasonName prints a policy value the way ROS 2 does in compatibility
// reasons: its name, or "unknown" for values without one.
func reasonName[T interface {
	~uint8
	String() string
	valid() bool
}](v T) string {
	if !v.valid() {
		return "unknown"
	}
	return v.String()
}

// CheckCompatible reports whether a publisher with profile pub and a
// subscription with profile sub can communicate, with the rules of ROS 2's
// rmw_qos_profile_check_compatible:
//
// Errors (in this order):
//   - best_effort publisher, reliable subscription;
//   - volatile publisher, transient_local subscription;
//   - subscription has a deadline and the publisher none, or a shorter
//     deadline than the publisher's;
//   - automatic publisher liveliness, manual_by_topic subscription;
//   - subscription has a liveliness lease and the publisher none, or a
//     shorter lease than the publisher's.
//
// Only when there is no error: warnings for reliability, durability and
// liveliness where one side is system_default or unknown and the other side
// is, or could be, the demanding value.
//
// The reason lists every error, or every warning, as "ERROR: ...;" or
// "WARNING: ...;" concatenated; it is empty for Ok. Callers that use the
// result for matching should pass profiles that went through
// BestAvailableFor* and Resolve, so that no warning is left.
func CheckCompatible(pub, sub Profile) (Compatibility, string) {
	fs := check(pub, sub)
	if len(fs) == 0 {
		return Ok, ""
	}
	var b strings.Builder
	for _, f := range fs {
		if f.level == Error {
			b.WriteString("ERROR: ")
		} else {
			b.WriteString("WARNING: ")
		}
		b.WriteString(f.msg)
		b.WriteByte(';')
	}
	return fs[0].level, b.String()
}

// FirstIncompatiblePolicy returns the policy behind the first error that
// CheckCompatible would report for pub and sub, for use as last_policy_kind
// in the requested/offered incompatible-QoS events. It returns PolicyNone
// when the profiles are compatible; warnings do not count.
func FirstIncompatiblePolicy(pub, sub Profile) Policy {
	fs := check(pub, sub)
	if len(fs) == 0 || fs[0].level != Error {
		return PolicyNone
	}
	return fs[0].policy
}
